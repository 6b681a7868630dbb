#!/usr/bin/env python3
"""A black-box sweep of `strata run` over mutated inputs (the hardening
issue's acceptance check), seeded and bounded: tokenizer.json, config.json,
model.safetensors, ONNX files (inline and with external data) and numeric
command-line flags.

Two kinds of case:
- invalid: a mutation that breaks the input's specification (a negative
  token id, eps <= 0, overlapping tensors, a header length off by one, a
  flag out of range, ...). strata must refuse it: exit status 1 and a last
  stderr line `error: ...` naming the file (or the flag) and the field,
  tensor or node.
- random: bytes flipped, values swapped, parts cut. strata may run or refuse,
  but must exit 0 or 1 (no signal, no abort), within the time bound, and a
  refusal must be an `error:` line naming the file or flag.

    python3 tests/e2e/mutation_sweep.py STRATA FIXTURE_DIR [--seed N] [--random N]

Exit status 0 when every case holds; each failure is printed with how to
reproduce it (its files stay in the work folder).
"""
import argparse
import copy
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

TIMEOUT = 60
PROMPT = ["--prompt-ids", "0,5,9", "--max-new-tokens", "2", "--backend", "reference"]


class Sweep:
    def __init__(self, strata, fixture, work):
        self.strata, self.fixture, self.work = strata, fixture, work
        self.cases = self.failures = 0
        self.counts = {}

    def model_dir(self, name, replace):
        """A copy of the HF fixture folder with files replaced: {file: bytes}."""
        d = os.path.join(self.work, f"{self.cases:04d}-{name}")
        os.makedirs(d)
        for f in ("config.json", "tokenizer.json", "model.safetensors", "generation_config.json"):
            if f in replace:
                with open(os.path.join(d, f), "wb") as out:
                    out.write(replace[f])
            else:
                os.symlink(os.path.join(self.fixture, f), os.path.join(d, f))
        return d

    def check(self, kind, name, args, invalid, names, field=None):
        """Runs strata with `args`; `names`: what a refusal must mention (any
        of them: the file or flag); `field`: what it must also mention (the
        field, tensor or rule)."""
        self.cases += 1
        self.counts[kind] = self.counts.get(kind, 0) + 1
        cmd = [self.strata, "run", *args]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            return self.fail(name, cmd, f"no answer in {TIMEOUT} s")
        # The refusal: from the first line starting "error: " to the end (a
        # name taken from a mutated file may hold a newline).
        at = p.stderr.find("error: ")
        message = p.stderr[at:].strip() if at == 0 or (at > 0 and p.stderr[at - 1] == "\n") else ""
        if p.returncode not in (0, 1):
            return self.fail(name, cmd, f"exit status {p.returncode}: {p.stderr.strip()[-300:]}")
        if invalid and p.returncode != 1:
            return self.fail(name, cmd, "an invalid input was accepted")
        if p.returncode == 1:
            if not message:
                return self.fail(name, cmd, f"the refusal is not an 'error:' line: {p.stderr.strip()[-300:]!r}")
            if not any(n in message for n in names):
                return self.fail(name, cmd, f"the error names none of {names}: {message[:300]!r}")
            if field and field not in message:
                return self.fail(name, cmd, f"the error does not name {field!r}: {message[:300]!r}")

    def fail(self, name, cmd, why):
        self.failures += 1
        print(f"FAIL {name}: {why}\n  {' '.join(cmd)}")


def safetensors_parts(data):
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def safetensors_bytes(header, body, pad=True):
    text = json.dumps(header).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + body


def invalid_cases(s, rng):
    fx = s.fixture
    tok = json.load(open(os.path.join(fx, "tokenizer.json")))
    cfg = json.load(open(os.path.join(fx, "config.json")))
    st = open(os.path.join(fx, "model.safetensors"), "rb").read()
    header, body = safetensors_parts(st)

    def run_tok(name, t, field):
        d = s.model_dir(name, {"tokenizer.json": json.dumps(t).encode()})
        s.check("tokenizer.json", name, [d, *PROMPT], True, ["tokenizer.json"], field)

    def run_cfg(name, c, field):
        d = s.model_dir(name, {"config.json": json.dumps(c).encode()})
        s.check("config.json", name, [d, *PROMPT], True, ["config.json"], field)

    def run_st(name, data, field=None):
        d = s.model_dir(name, {"model.safetensors": data})
        s.check("model.safetensors", name, [d, *PROMPT], True, ["model.safetensors"], field)

    # tokenizer.json: ids, added tokens, components, nesting.
    some = sorted(tok["model"]["vocab"])[:40]
    for bad in (-1, 1.5, 2 ** 40, "3", None):
        t = copy.deepcopy(tok)
        t["model"]["vocab"][rng.choice(some)] = bad
        run_tok(f"tok-vocab-id-{bad}", t, "model.vocab")
    t = copy.deepcopy(tok)
    a, b = rng.sample(some, 2)
    t["model"]["vocab"][a] = t["model"]["vocab"][b]
    run_tok("tok-duplicate-id", t, "model.vocab")
    for field, bad in (("id", -1), ("id", 2.5), ("id", 1 << 30), ("content", ""), ("content", 7)):
        t = copy.deepcopy(tok)
        t["added_tokens"][0][field] = bad
        run_tok(f"tok-added-{field}-{bad}", t, f"'{field}'")
    for comp in ("normalizer", "pre_tokenizer", "decoder", "post_processor"):
        t = copy.deepcopy(tok)
        t[comp] = {"no_type": True}
        run_tok(f"tok-{comp}-no-type", t, comp)
    # 5,000 nested Sequences (written as text: Python's own encoder recurses).
    t = copy.deepcopy(tok)
    t["normalizer"] = "DEEP"
    deep = '{"type": "Sequence", "normalizers": [' * 5000 + '{"type": "NFC"}' + "]}" * 5000
    d = s.model_dir("tok-deep-normalizer", {"tokenizer.json": json.dumps(t).replace('"DEEP"', deep).encode()})
    s.check("tokenizer.json", "tok-deep-normalizer", [d, *PROMPT], True, ["tokenizer.json"], "nested deeper")
    t = copy.deepcopy(tok)
    t["model"]["merges"].append(["nonexistent", "symbols"])
    run_tok("tok-bad-merge", t, "merge")

    # config.json: every field's domain.
    for field, bad in (("rms_norm_eps", 0), ("rms_norm_eps", -1e-5), ("rms_norm_eps", "small"), ("rope_theta", 0),
                       ("rope_theta", -1.0), ("bos_token_id", 512), ("bos_token_id", -1), ("eos_token_id", 100000),
                       ("eos_token_id", [1, 70000]), ("vocab_size", 0), ("hidden_size", -64), ("hidden_size", 1 << 40),
                       ("num_hidden_layers", 0), ("num_attention_heads", 3), ("num_key_value_heads", 3),
                       ("head_dim", 15), ("max_position_embeddings", -1), ("dtype", "float8_e4m3"),
                       ("torch_dtype", "int4"), ("architectures", ["BertModel"]), ("architectures", "LlamaForCausalLM"),
                       ("model_type", "gpt2"), ("rope_parameters", "default"), ("rope_parameters", {"rope_type": "yarn"}),
                       ("rope_scaling", {"type": "linear", "factor": 2}), ("hidden_act", "gelu"),
                       ("tie_word_embeddings", "yes"), ("vocab_size", 256)):
        c = copy.deepcopy(cfg)
        c[field] = bad
        if field == "rope_theta":
            c.pop("rope_parameters", None)
        # What the error names: the field, or what the value broke.
        named = {"architectures": "architecture", "rope_parameters": "rope", "vocab_size": "vocab_size",
                 "head_dim": "head_dim", "hidden_act": "hidden_act"}.get(field, field)
        if field == "vocab_size" and bad == 256:
            named = "model.embed_tokens.weight"  # a valid value the checkpoint contradicts
        if field == "num_key_value_heads":
            named = "num_key_value_heads"
        run_cfg(f"cfg-{field}-{bad}", c, named)
    for field in ("hidden_size", "vocab_size", "num_hidden_layers", "rms_norm_eps", "model_type"):
        c = copy.deepcopy(cfg)
        del c[field]
        run_cfg(f"cfg-no-{field}", c, field)

    # model.safetensors: the format's rules.
    names = sorted(header, key=lambda k: header[k]["data_offsets"][0] if k != "__metadata__" else -1)
    names = [n for n in names if n != "__metadata__"]
    n = struct.unpack("<Q", st[:8])[0]
    run_st("st-header-len-plus-1", struct.pack("<Q", n + 1) + st[8:])
    run_st("st-header-len-minus-1", struct.pack("<Q", n - 1) + st[8:])
    run_st("st-header-len-huge", struct.pack("<Q", 1 << 62) + st[8:])
    run_st("st-truncated", st[:len(st) - 4])
    run_st("st-trailing-bytes", st + b"\0" * 8, "cover")
    h = copy.deepcopy(header)
    h[names[1]]["data_offsets"] = list(h[names[0]]["data_offsets"])  # aliased
    h[names[1]]["shape"] = list(h[names[0]]["shape"])
    run_st("st-aliased", safetensors_bytes(h, body), "overlaps")
    h = copy.deepcopy(header)
    b0, e0 = h[names[1]]["data_offsets"]
    h[names[1]]["data_offsets"] = [b0 - 4, e0 - 4]  # overlaps the tensor before
    run_st("st-overlap", safetensors_bytes(h, body), "overlaps")
    h = copy.deepcopy(header)
    h[names[0]]["data_offsets"] = [float(x) for x in h[names[0]]["data_offsets"]]
    run_st("st-float-offsets", safetensors_bytes(h, body), "data_offsets")
    h = copy.deepcopy(header)
    h[names[0]]["data_offsets"] = [-8, h[names[0]]["data_offsets"][1]]
    run_st("st-negative-offset", safetensors_bytes(h, body), "data_offsets")
    h = copy.deepcopy(header)
    h["__metadata__"] = ["format", "pt"]
    run_st("st-metadata-list", safetensors_bytes(h, body), "__metadata__")
    h = copy.deepcopy(header)
    h["__metadata__"] = {"format": 1}
    run_st("st-metadata-number", safetensors_bytes(h, body), "__metadata__")
    h = copy.deepcopy(header)
    h[names[0]]["dtype"] = "F8_E4M3"
    run_st("st-dtype", safetensors_bytes(h, body), "F8_E4M3")
    h = copy.deepcopy(header)
    h[names[0]]["shape"] = [h[names[0]]["shape"][0] + 1] + h[names[0]]["shape"][1:]
    run_st("st-shape-size", safetensors_bytes(h, body), names[0])
    text = json.dumps(header)
    dup = text[:-1] + ", " + json.dumps(names[0]) + ": " + json.dumps(header[names[0]]) + "}"
    run_st("st-duplicate-key", struct.pack("<Q", len(dup)) + dup.encode() + body, "twice")
    # A hole: the last tensor moved 8 bytes on, the body grown to match.
    h = copy.deepcopy(header)
    b1, e1 = h[names[-1]]["data_offsets"]
    h[names[-1]]["data_offsets"] = [b1 + 8, e1 + 8]
    run_st("st-hole", safetensors_bytes(h, body[:b1] + b"\0" * 8 + body[b1:]), "no tensor")

    # Numeric flags out of range, named in the error.
    for flag, value in (("--block-size", "0"), ("--block-size", "100000000"), ("--cache-blocks", "-1"),
                        ("--cache-blocks", "1000000000000"), ("--cache-mb", "0"), ("--cache-mb", "nan"),
                        ("--cache-mb", "-5"), ("--seed", "-1"), ("--max-new-tokens", "-1"),
                        ("--max-new-tokens", "9223372036854775807"), ("--samples", "0"), ("--samples", "100000000"),
                        ("--max-seqs", "0"), ("--max-step-tokens", "0"), ("--temperature", "-1"),
                        ("--top-p", "2"), ("--top-k", "-3"), ("--repetition-penalty", "0"),
                        ("--presence-penalty", "3"), ("--frequency-penalty", "-2.5"), ("--logprobs", "99")):
        args = [fx, "--prompt-ids", "0,5", "--max-new-tokens", "2", "--backend", "reference", flag, value]
        if flag == "--max-new-tokens":
            args = [fx, "--prompt-ids", "0,5", "--backend", "reference", flag, value]
        if flag == "--logprobs":
            args.append("--json")
        s.check("flags", f"flag{flag}={value}", args, True, [flag], value if value not in ("nan",) else None)


def mutate_bytes(data, rng, header_end):
    """A copy of `data` with a few bytes flipped, mostly inside [0, header_end)."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(min(len(b), header_end)) if rng.random() < 0.9 else rng.randrange(len(b))
        b[at] = rng.randrange(256)
    if rng.random() < 0.2:
        b = b[:rng.randrange(len(b))]
    return bytes(b)


def mutate_json(value, rng):
    """A copy of a JSON document with one value changed, removed or retyped."""
    doc = copy.deepcopy(value)
    paths = []

    def walk(v, path, depth):
        if depth > 6:
            return
        if isinstance(v, dict):
            for k in list(v)[:60]:
                paths.append(path + [k])
                walk(v[k], path + [k], depth + 1)
        elif isinstance(v, list):
            for i in range(min(len(v), 8)):
                paths.append(path + [i])
                walk(v[i], path + [i], depth + 1)
    walk(doc, [], 0)
    if not paths:
        return doc
    path = rng.choice(paths)
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    replacement = rng.choice([None, -1, 0, 1, 2 ** 53, -2 ** 63, 1.5, "", "x" * 300, [], {}, True, [0, -1],
                              {"type": "Sequence"}, "\udcff".encode("utf-8", "surrogatepass").decode("latin-1")])
    if rng.random() < 0.3 and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = replacement
    return doc


def random_cases(s, rng, count):
    fx = s.fixture
    tok = json.load(open(os.path.join(fx, "tokenizer.json")))
    cfg = json.load(open(os.path.join(fx, "config.json")))
    st = open(os.path.join(fx, "model.safetensors"), "rb").read()
    st_header_end = 8 + struct.unpack("<Q", st[:8])[0]
    onnx = open(os.path.join(fx, "decoder_with_past.onnx"), "rb").read()
    ext = os.path.join(fx, "external")
    for i in range(count):
        kind = ["tokenizer.json", "config.json", "model.safetensors", "onnx", "onnx-external"][i % 5]
        name = f"random-{kind}-{i}"
        if kind == "tokenizer.json":
            d = s.model_dir(name, {kind: json.dumps(mutate_json(tok, rng)).encode()})
            s.check(kind, name, [d, *PROMPT], False, [kind])
        elif kind == "config.json":
            d = s.model_dir(name, {kind: json.dumps(mutate_json(cfg, rng)).encode()})
            s.check(kind, name, [d, *PROMPT], False, [kind, "model.safetensors", "tokenizer.json"])
        elif kind == "model.safetensors":
            d = s.model_dir(name, {kind: mutate_bytes(st, rng, st_header_end)})
            s.check(kind, name, [d, *PROMPT], False, [kind])
        elif kind == "onnx":
            d = os.path.join(s.work, f"{s.cases:04d}-{name}")
            os.makedirs(d)
            path = os.path.join(d, "decoder_with_past.onnx")
            open(path, "wb").write(mutate_bytes(onnx, rng, len(onnx)))
            shutil.copy(os.path.join(fx, "tokenizer.json"), d)
            s.check(kind, name, [path, *PROMPT], False, ["decoder_with_past.onnx"])
        else:  # the external-data file mutated (offsets past its end, bytes changed, cut)
            d = os.path.join(s.work, f"{s.cases:04d}-{name}")
            os.makedirs(d)
            for f in os.listdir(ext):
                src = os.path.join(ext, f)
                if f.endswith(".data"):
                    data = open(src, "rb").read()
                    open(os.path.join(d, f), "wb").write(mutate_bytes(data, rng, len(data)))
                elif f.endswith(".onnx"):
                    model = open(src, "rb").read()
                    open(os.path.join(d, f), "wb").write(mutate_bytes(model, rng, len(model)) if rng.random() < 0.5
                                                         else model)
                else:
                    shutil.copy(src, d)
            onnx_file = [f for f in os.listdir(d) if f.endswith(".onnx")][0]
            s.check(kind, name, [os.path.join(d, onnx_file), *PROMPT], False, [onnx_file, ".onnx.data"])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("strata")
    p.add_argument("fixture")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--random", type=int, default=300, help="random mutations (spread over the five input kinds)")
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="strata-sweep-")
    s = Sweep(a.strata, os.path.abspath(a.fixture), work)
    rng = random.Random(a.seed)
    invalid_cases(s, rng)
    random_cases(s, rng, a.random)
    print(f"{s.cases} cases ({', '.join(f'{k} {v}' for k, v in sorted(s.counts.items()))}), {s.failures} failed")
    if not a.keep and not s.failures:
        shutil.rmtree(work)
    elif s.failures:
        print(f"the failing cases' files are in {work}")
    sys.exit(1 if s.failures else 0)


if __name__ == "__main__":
    main()
