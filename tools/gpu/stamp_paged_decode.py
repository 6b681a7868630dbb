#!/usr/bin/env python3
"""Instrument a paged decode kernel set with per-program clock stamps.

An experiment's tool (docs/cuda.md, "Where a batch-1 split program's time
goes"): it rewrites the PTX of the bf16 paged decode split kernel that
`strata compile-kernels --only paged_decode` wrote, so that thread 0 of
every program records %clock64 at its phases and %globaltimer at its entry
and end, and writes them (16 u64 a program) right after the partials in
the scratch buffer: at pl + pl's size in bytes rounded up to 256, which is
`CudaKernelSet::pagedDecodeScratchBytes`. ptxas assembles the result;
`strata-gpu bench-paged-decode --kernels OUT --stamps` reads the stamps
back and prints each phase's cycles. The stamps cost about 0.1-0.3 us a
step, so time the uninstrumented set for figures.

Slots: 0 globaltimer at entry, 1 clock at entry, 2 after the grid wait,
3 once the context length is known, 4 Q ready (its copy waited), 5 the
first key block landed, 6 the last key block landed, 7 before the partial
stores, 8 clock at the end, 9 key-block waits, 10 globaltimer at the end.

  python3 tools/gpu/stamp_paged_decode.py SET_DIR OUT_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

KERNEL = 'paged_decode_bf16_h32_kv8_d128_p16'


def fail(msg):
    sys.exit(f'stamp_paged_decode: {msg}')


def instrument(lines, name):
    """The kernel's PTX lines with stamps; fails where the kernel's shape is not the expected one."""
    param = lambda i: f'[{name}_param_{i}]'
    # (q, cache, po, pm, pl, o, tables, lens: 5 params each; max_blocks,
    # cache_rows, splits): pl's aligned pointer is param 21, its size 23.
    pl_ptr = pl_reg = None
    out, seen = [], set()
    for i, l in enumerate(lines):
        s = l.strip()
        m = re.match(r'ld\.param\.b64\s+(%rd\d+), ' + re.escape(param(21)), s)
        if m:
            pl_ptr = m.group(1)
        m = re.match(r'cvta\.to\.global\.u64\s+(%rd\d+), (%rd\d+);', s)
        if m and m.group(2) == pl_ptr:
            pl_reg = m.group(1)
        if s.startswith('.reg .b64') and '%rd<' in s and 'regs' not in seen:
            out += [l, '\t.reg .b64 %st<12>;', '\t.reg .pred %sq<2>;', '\t.reg .b32 %sx<4>;', '\t.reg .b64 %sa<4>;',
                    '\tmov.u64 %st0, %globaltimer;', '\tmov.u64 %st1, %clock64;']
            out += [f'\tmov.u64 %st{k}, 0;' for k in range(2, 12)]
            seen.add('regs')
            continue
        if s == 'griddepcontrol.wait;' and 'wait' not in seen:
            out += [l, '\tmov.u64 %st2, %clock64;']
            seen.add('wait')
            continue
        # The length: its two 32-bit halves joined.
        if 'wait' in seen and 'len' not in seen and re.match(r'or\.b64\s+%rd\d+, %rd\d+, %rd\d+;', s):
            out += [l, '\tmov.u64 %st3, %clock64;']
            seen.add('len')
            continue
        if s.startswith('bar.sync') and lines[i - 1].strip().startswith('cp.async.wait_group'):
            out.append(l)
            if 'q' not in seen:
                out.append('\tmov.u64 %st4, %clock64;')
                seen.add('q')
            else:
                out += ['\tsetp.eq.u64 %sq0, %st5, 0;', '\t@%sq0 mov.u64 %st5, %clock64;', '\tmov.u64 %st6, %clock64;',
                        '\tadd.u64 %st9, %st9, 1;']
            continue
        # The epilogue's branch on the split count (one split stores o).
        if re.match(r'setp\.ne\.b64\s+%p\d+, %rd\d+, 1;', s) and 'q' in seen and 'epilogue' not in seen:
            out += ['\tmov.u64 %st7, %clock64;', l]
            seen.add('epilogue')
            continue
        if s == 'griddepcontrol.launch_dependents;':
            if pl_reg is None:
                fail('no pl pointer (param 21) in the kernel')
            out += ['\tmov.u64 %st8, %clock64;', '\tmov.u64 %st10, %globaltimer;',
                    '\tmov.u32 %sx0, %tid.x;', '\tsetp.ne.u32 %sq1, %sx0, 0;', '\t@%sq1 bra $L__STAMP_DONE;',
                    '\tmov.u32 %sx1, %ctaid.x;', '\tmov.u32 %sx2, %ctaid.y;', '\tmov.u32 %sx3, %nctaid.x;',
                    '\tmad.lo.u32 %sx1, %sx2, %sx3, %sx1;', '\tmov.u32 %sx2, %ctaid.z;', '\tmov.u32 %sx0, %nctaid.y;',
                    '\tmul.lo.u32 %sx3, %sx3, %sx0;', '\tmad.lo.u32 %sx1, %sx2, %sx3, %sx1;',
                    f'\tld.param.b64 %sa3, {param(23)};', '\tshl.b64 %sa3, %sa3, 2;', '\tadd.u64 %sa3, %sa3, 255;',
                    '\tand.b64 %sa3, %sa3, -256;', '\tmul.wide.u32 %sa0, %sx1, 128;',
                    f'\tadd.u64 %sa1, {pl_reg}, %sa3;', '\tadd.u64 %sa2, %sa1, %sa0;']
            out += [f'\tst.global.u64 [%sa2+{8 * k}], %st{k};' for k in range(12)]
            out += ['$L__STAMP_DONE:', l]
            seen.add('end')
            continue
        out.append(l)
    missing = {'regs', 'wait', 'len', 'q', 'epilogue', 'end'} - seen
    if missing:
        fail(f'{name}: found no place for {sorted(missing)} (the kernel changed shape: update this tool)')
    return out


def main():
    if len(sys.argv) != 3:
        fail('usage: stamp_paged_decode.py SET_DIR OUT_DIR')
    src, dst = sys.argv[1:]
    ptx_path = os.path.join(src, 'kernels.ptx')
    if not os.path.exists(ptx_path):
        fail(f'{ptx_path}: no such file (compile with `strata compile-kernels --only paged_decode -o {src}`)')
    lines = open(ptx_path).read().split('\n')
    starts = [i for i, l in enumerate(lines) if l.startswith('.visible .entry')]
    begin = next((i for i in starts if lines[i].startswith(f'.visible .entry {KERNEL}(')), None)
    if begin is None:
        fail(f'{ptx_path}: no kernel {KERNEL}')
    end = next((i for i in starts if i > begin), len(lines))
    lines[begin:end] = instrument(lines[begin:end], KERNEL)
    os.makedirs(dst, exist_ok=True)
    open(os.path.join(dst, 'kernels.ptx'), 'w').write('\n'.join(lines))
    manifest = json.load(open(os.path.join(src, 'kernels.json')))
    ptxas = shutil.which('ptxas') or '/usr/local/cuda/bin/ptxas'
    chip = manifest.get('cubin', {}).get('chip', 'sm_90a')
    subprocess.run([ptxas, f'-arch={chip}', '-O3', os.path.join(dst, 'kernels.ptx'), '-o',
                    os.path.join(dst, 'kernels.cubin')], check=True)
    manifest['cubin'] = {'chip': chip, 'file': 'kernels.cubin'}
    json.dump(manifest, open(os.path.join(dst, 'kernels.json'), 'w'), indent=1)
    print(f'wrote {dst}: {KERNEL} with clock stamps')


if __name__ == '__main__':
    main()
