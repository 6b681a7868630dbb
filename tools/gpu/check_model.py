"""A compiled Llama model on the GPU against HF transformers with the same
weights: each generated token's log-probability from `strata-gpu run
--logprobs`, against an f32 HF forward over the same tokens (teacher-forced),
beside HF's own forward in the artifact's storage type (bf16 or f16) as the
peer's error at the same precision.

    python3 tools/gpu/check_model.py --strata-gpu .gpu/strata-gpu \\
        --artifact .gpu/llama-3-8b --config models/configs/llama-3-8b.json --out $OUT

The artifact comes from `strata compile` of the shape-only checkpoint
(tools/gpu/shape_checkpoint.py); this script makes random weights with HF's
initialization (seeded), writes them in that checkpoint's layout (under
--weights-dir, not --out: 16 GB for Llama-3-8B) and runs the artifact with
`--weights`. The cases cover the kernel classes a model step takes: a
one-row decode (GEMV), decodes of 8 and 32 sequences (--samples), prompts
prefilled in one step and in chunks (--max-step-tokens), up to 7000 tokens
(cases past the model's context are skipped).

Per case it prints, over every generated token: the mean and max |logprob -
f32 logprob| of strata and of HF in the same type; how often the token is f32's
most likely one (greedy cases; in brackets the most f32 logprob a chosen
token was below f32's top one: near-ties when small); and the spread of
f32's logprobs over the vocabulary (the scale a wrong kernel would err by).
The check passes when strata's mean error is at most 1.5x HF's and its max
at most 2x HF's (a case's statistics over 8-384 tokens move between draws
of weights by about that much): strata computes in that type as HF does,
so it should err
no more than the peer at the same precision. `--perturb REGEX:SCALE`
is the negative control: strata's copy of some weights scaled, to see what
size of error the check detects."""
import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shape_checkpoint import layout  # noqa: E402

# (name, prompt tokens, new tokens, samples, max step tokens): samples > 1
# draw with temperature 1 (the decode then runs that many rows a step).
CASES = [
    ("decode 1 row", 16, 32, 1, 512),
    ("decode 8 rows", 128, 16, 8, 512),
    ("decode 32 rows", 300, 12, 32, 512),
    ("prompt 1100 in one step", 1100, 8, 1, 2048),
    ("prompt 2048 in chunks of 512", 2048, 8, 1, 512),
    ("decode 1 row after 7000 tokens", 7000, 16, 1, 2048),
    ("prompt 1100 in chunks of 256", 1100, 8, 1, 256),
    ("prompt 1100 in chunks of 64", 1100, 8, 1, 64),
    ("decode 1 row after 300 tokens", 300, 16, 1, 512),
]


def hf_model(config_path, seed):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = json.load(open(config_path))
    config = LlamaConfig(**{k: v for k, v in cfg.items() if k != "model_type"})
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = LlamaForCausalLM(config)
    torch.set_default_dtype(torch.float32)
    # RoPE's inverse frequencies, made in f32 (see in_precision).
    model.rope_f32 = {n: b.detach().clone() for n, b in model.named_buffers() if n.endswith("inv_freq")}
    if not model.rope_f32 or any(b.dtype != torch.float32 for b in model.rope_f32.values()):
        sys.exit("expected HF's Llama to make RoPE's inv_freq buffers in f32 (this transformers version does not)")
    return model.eval(), cfg


def in_precision(model, precision):
    """The model with its weights in `precision` ("bf16", "f16", "f32") and
    RoPE's inverse frequencies in f32 whatever the precision: `.to(dtype)`
    casts every float buffer, and inv_freq rounded to bf16 moves a rotation
    at position p by about p * 2^-9 radians (0.6 at 300 tokens), so a run
    in bf16 before the f32 one would leave the f32 reference rotating wrongly
    (and the peer erring for a reason strata does not share: HF computes
    the angles in f32 from an f32 inv_freq, as strata's tables do)."""
    model = model.to({"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[precision])
    for name, f32 in model.rope_f32.items():
        owner, _, leaf = name.rpartition(".")
        setattr(model.get_submodule(owner) if owner else model, leaf, f32.clone())
    return model


def write_weights(model, cfg, out, perturb=None):
    """The model's weights in shape_checkpoint's layout (byte for byte the
    header the artifact was compiled from); `perturb` (pattern, scale)
    scales the tensors whose names match the regular expression in strata's
    copy only (a negative control)."""
    os.makedirs(out, exist_ok=True)
    state = model.state_dict()
    head, entries = layout(cfg)
    path = os.path.join(out, "model.safetensors")
    with open(path, "wb") as f:
        f.write(head)
        for name, shape, offset, nbytes in entries:
            t = state[name].detach().to(torch.bfloat16).contiguous()
            assert list(t.shape) == shape, (name, t.shape, shape)
            if perturb and re.fullmatch(perturb[0], name):
                t = (t.float() * perturb[1]).to(torch.bfloat16)
            assert f.tell() == len(head) + offset, name
            f.write(t.view(torch.int16).cpu().numpy().tobytes())
    return path


def strata_case(args, weights, prompt, new, samples, step_tokens):
    cmd = [args.strata_gpu, "run", args.artifact, "--weights", weights, "--prompt-ids", ",".join(map(str, prompt)),
           "--max-new-tokens", str(new), "--ignore-eos", "--json", "--logprobs", "5",
           "--max-step-tokens", str(step_tokens)]
    if samples > 1:
        cmd += ["--samples", str(samples), "--temperature", "1.0", "--seed", "1"]
    cmd += getattr(args, "strata_flag", None) or []
    t = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"{' '.join(cmd[:3])} ... failed ({p.returncode}):\n{p.stderr[-4000:]}")
    outs = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    outs = [o for o in outs if "token_ids" in o]
    if len(outs) != samples:
        sys.exit(f"expected {samples} completions, got {len(outs)}:\n{p.stdout[-2000:]}")
    return outs, time.time() - t


@torch.inference_mode()
def teacher_forced(model, ids, new):
    """Log-softmax (f32) at the positions that chose the `new` last tokens,
    [rows, new, vocab]."""
    x = torch.tensor(ids, device="cuda")
    logits = model(x, logits_to_keep=new + 1).logits[:, :-1].float()
    return torch.log_softmax(logits, dim=-1)


def add_check_options(p):
    p.add_argument("--weights-dir", default="/tmp/strata-check-weights",
                   help="where the check's random weights go (16 GB for Llama-3-8B)")
    p.add_argument("--seed", type=int, default=1, help="the check's weights and prompts")
    p.add_argument("--cases", type=int, nargs="+", help="indices into the check's case list (default: all)")
    p.add_argument("--perturb", metavar="REGEX:SCALE",
                   help="negative control: strata's copy of the weights whose names match REGEX scaled by SCALE")
    p.add_argument("--strata-flag", action="append", metavar="FLAG",
                   help="pass FLAG to every strata-gpu run (e.g. --strata-flag=--no-graphs); repeatable")


def run(args):
    """The check on args.artifact / args.config (check.json under
    args.out when given); True when every case passes."""
    perturb = None
    if args.perturb:
        name, scale = args.perturb.rsplit(":", 1)
        perturb = (name, float(scale))

    plan = json.load(open(os.path.join(args.artifact, "plan.json")))
    dtype = plan["meta"]["kernels"]["dtype"]  # what strata stores and computes in
    t = time.time()
    model, cfg = hf_model(args.config, args.seed)
    if perturb and not any(re.fullmatch(perturb[0], n) for n in model.state_dict()):
        sys.exit(f"--perturb: no weight name matches {perturb[0]}")
    path = write_weights(model, cfg, args.weights_dir, perturb)
    # A digest of a few weights' first rows: tells two calls' draws apart.
    state = model.state_dict()
    digest = hashlib.sha1()
    for name in ("model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", "lm_head.weight"):
        if name in state:
            digest.update(state[name][:64].contiguous().view(torch.int16).cpu().numpy().tobytes())
    digest = digest.hexdigest()[:16]
    print(f"random weights (HF init, seed {args.seed}, digest {digest}) written to {path} in {time.time() - t:.0f} s",
          flush=True)

    gen = torch.Generator().manual_seed(args.seed)
    cases = [CASES[i] for i in args.cases] if args.cases else CASES
    context = cfg.get("max_position_embeddings", 0)
    skipped = [c[0] for c in cases if context and c[1] + c[2] > context]
    if skipped:
        print(f"skipped (past the model's context of {context}): {', '.join(skipped)}", flush=True)
    cases = [c for c in cases if c[0] not in skipped]
    runs = []
    for name, plen, new, samples, step_tokens in cases:
        prompt = torch.randint(3, cfg["vocab_size"], (plen,), generator=gen).tolist()
        outs, secs = strata_case(args, args.weights_dir, prompt, new, samples, step_tokens)
        runs.append((name, plen, new, samples, step_tokens, outs, secs))
        print(f"{name}: strata {secs:.1f} s", flush=True)

    # HF in the artifact's storage type (the weights are bf16 values, which
    # f16 holds exactly at this scale), then in f32 (the reference).
    ref = {}
    for precision in (dtype, "f32"):
        model = in_precision(model, precision)
        for name, plen, new, samples, step_tokens, outs, _ in runs:
            ids = [o["token_ids"] for o in outs]
            lp = torch.cat([teacher_forced(model, ids[i:i + 8], new) for i in range(0, len(ids), 8)])
            ref.setdefault(name, {})[precision] = lp
    del model
    torch.cuda.empty_cache()

    failed = False
    rows = []
    for name, plen, new, samples, step_tokens, outs, secs in runs:
        f32, peer = ref[name]["f32"], ref[name][dtype]
        # The scale an error compares with: the spread of f32's logprobs
        # over the vocabulary (a wrong kernel moves them by about this much).
        spread = f32.std(dim=-1).mean().item()
        s_err, h_err, gap, top1, n = [], [], [], 0, 0
        for r, o in enumerate(outs):
            gen_ids = o["token_ids"][plen:]
            assert len(gen_ids) == new and len(o["logprobs"]) == new, name
            for j, tok in enumerate(gen_ids):
                want = f32[r, j, tok].item()
                s_err.append(abs(o["logprobs"][j]["logprob"] - want))
                h_err.append(abs(peer[r, j, tok].item() - want))
                top1 += int(f32[r, j].argmax().item() == tok)
                gap.append(f32[r, j].max().item() - want)
                n += 1
        s_mean, s_max = sum(s_err) / n, max(s_err)
        h_mean, h_max = sum(h_err) / n, max(h_err)
        ok = s_mean <= 1.5 * h_mean and s_max <= 2 * h_max
        failed |= not ok
        row = {"case": name, "prompt_tokens": plen, "new_tokens": new, "sequences": samples,
               "max_step_tokens": step_tokens, "tokens": n, "strata_mean_abs": s_mean, "strata_max_abs": s_max,
               "hf_mean_abs": h_mean, "hf_max_abs": h_max,
               "f32_top1": top1 / n if samples == 1 else None,
               "f32_gap_max": max(gap) if samples == 1 else None, "f32_logprob_std": spread, "ok": ok, "strata_s": secs,
               "token_ids": [o["token_ids"][plen:] for o in outs]}
        rows.append(row)

    dev = torch.cuda.get_device_name()
    print(f"\n{dev}, {cfg['num_hidden_layers']} layers x hidden {cfg['hidden_size']}, vocab {cfg['vocab_size']}, "
          f"random weights (seed {args.seed}); |logprob - f32 HF logprob| of each generated token")
    print(f"| case | tokens | strata {dtype} mean / max | HF {dtype} mean / max | f32's top token (largest gap) "
          "| f32 logprob std | ok |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        top = "-" if r["f32_top1"] is None else f"{r['f32_top1']:.2f} ({r['f32_gap_max']:.3f})"
        print(f"| {r['case']} | {r['tokens']} | {r['strata_mean_abs']:.4f} / {r['strata_max_abs']:.4f} | "
              f"{r['hf_mean_abs']:.4f} / {r['hf_max_abs']:.4f} | {top} | {r['f32_logprob_std']:.2f} | "
              f"{'yes' if r['ok'] else 'NO'} |")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        json.dump({"device": dev, "config": cfg, "dtype": dtype, "seed": args.seed, "weights_digest": digest,
                   "perturb": args.perturb,
                   "strata_flags": getattr(args, "strata_flag", None) or [],
                   "cases": rows},
                  open(os.path.join(args.out, "check.json"), "w"), indent=1)
    return not failed


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--strata-gpu", required=True)
    p.add_argument("--artifact", required=True, help="from strata compile of the shape checkpoint")
    p.add_argument("--config", required=True, help="the HF config.json the artifact was compiled from")
    p.add_argument("--out", help="folder for check.json")
    add_check_options(p)
    sys.exit(0 if run(p.parse_args()) else 1)


if __name__ == "__main__":
    main()
