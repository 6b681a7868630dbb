"""End to end on the GPU: strata's compiled Llama model against HF
transformers eager, in the same run, with random bf16 weights made on this
machine (no weights can be downloaded here).

    python3 tools/gpu/bench_model.py --strata-gpu .gpu/strata-gpu \
        --artifact .gpu/llama-3-8b --config models/configs/llama-3-8b.json --out $OUT

strata: `strata-gpu bench-model ARTIFACT --random-weights 1` (time to first
token of a batch-1 prompt, decode ms/step at each batch after a prompt of
--context tokens, the HBM roofline from a device copy). HF: the same config
as LlamaForCausalLM (bf16, attn_implementation="eager", random init on the
GPU), prefill with logits_to_keep=1 (what generate computes) and greedy
decode steps through its KV cache, timed with CUDA synchronization like
strata's (each step ends with the next tokens known)."""
import argparse
import json
import os
import subprocess
import time

import torch


def hf_model(config_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = json.load(open(config_path))
    config = LlamaConfig(**{k: v for k, v in cfg.items() if k != "model_type"})
    config._attn_implementation = "eager"
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = LlamaForCausalLM(config)
    torch.set_default_dtype(torch.float32)
    return model.eval(), cfg["vocab_size"]


@torch.inference_mode()
def hf_times(model, vocab, prompts, batches, context, steps):
    gen = torch.Generator(device="cuda").manual_seed(1)

    def ids(b, n):
        return torch.randint(3, vocab, (b, n), device="cuda", generator=gen)

    def timed(fn):
        torch.cuda.synchronize()
        t = time.perf_counter()
        out = fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - t) * 1e3, out

    model(ids(1, 16), logits_to_keep=1)  # warm-up
    ttft = []
    for p in prompts:
        x = ids(1, p)
        best = min(timed(lambda: model(x, logits_to_keep=1, use_cache=True))[0] for _ in range(3))
        ttft.append({"prompt_tokens": p, "ttft_ms": best})
    decode = []
    for b in batches:
        _, out = timed(lambda: model(ids(b, context), logits_to_keep=1, use_cache=True))
        past, nxt = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
        total = 0.0
        for _ in range(steps):
            ms, out = timed(lambda: model(nxt, past_key_values=past, use_cache=True))
            past, nxt = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
            total += ms
        decode.append({"batch": b, "context": context, "ms_per_step": total / steps})
        del past, out
        torch.cuda.empty_cache()
    return ttft, decode


def add_model_options(p, required=True):
    p.add_argument("--artifact", required=required, help="from strata compile --target cuda:sm_90")
    p.add_argument("--config", required=required, help="the HF config.json the artifact was compiled from")
    p.add_argument("--prompts", type=int, nargs="+", default=[128, 2048])
    p.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32])
    p.add_argument("--context", type=int, default=128)
    p.add_argument("--steps", type=int, default=32)
    p.add_argument("--skip-hf", action="store_true", help="strata alone")
    p.add_argument("--profile", action="store_true", help="also strata's GPU time per region kind")


def main():
    p = argparse.ArgumentParser(description="strata vs HF transformers eager, end to end")
    p.add_argument("--strata-gpu", required=True)
    p.add_argument("--out", required=True)
    add_model_options(p)
    run(p.parse_args())


def run(a):
    """Both sides and the tables; `a` has add_model_options' fields, strata_gpu and out."""
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "model_strata.json")
    subprocess.run([a.strata_gpu, "bench-model", a.artifact, "--random-weights", "1", "--prompts",
                    *map(str, a.prompts), "--batches", *map(str, a.batches), "--context", str(a.context),
                    "--steps", str(a.steps), "--json", path] + (["--profile"] if a.profile else []), check=True)
    s = json.load(open(path))
    hf_ttft, hf_decode = [None] * len(a.prompts), [None] * len(a.batches)
    if not a.skip_hf:
        model, vocab = hf_model(a.config)
        hf_ttft, hf_decode = hf_times(model, vocab, a.prompts, a.batches, a.context, a.steps)
        json.dump({"ttft": hf_ttft, "decode": hf_decode}, open(os.path.join(a.out, "model_hf.json"), "w"), indent=1)
    print(f"\ndevice: {s['device']}; {s['weight_bytes'] / 1e9:.2f} GB of bf16 weights; copy {s['copy_gbs']:.0f} GB/s\n")
    print("| prompt tokens | strata TTFT ms | HF eager TTFT ms |")
    print("| --- | --- | --- |")
    for st, hf in zip(s["ttft"], hf_ttft):
        print(f"| {st['prompt_tokens']} | {st['ttft_ms']:.1f} | {hf['ttft_ms']:.1f} |" if hf else
              f"| {st['prompt_tokens']} | {st['ttft_ms']:.1f} | - |")
    print("\n| batch | strata ms/token | HF eager ms/token | roofline ms | strata / roofline |")
    print("| --- | --- | --- | --- | --- |")
    for st, hf in zip(s["decode"], hf_decode):
        hfs = f"{hf['ms_per_step']:.1f}" if hf else "-"
        print(f"| {st['batch']} | {st['ms_per_step']:.2f} | {hfs} | {st['roofline_ms']:.2f} | "
              f"{st['roofline_ms'] / st['ms_per_step']:.2f} |")


if __name__ == "__main__":
    main()
