"""Where a compiled Llama model parts from HF transformers: each layer's
output (the residual stream) and attention output, strata's against HF's in
f32 with the same weights, beside HF's own in the artifact's storage type.

    python3 tools/gpu/compare_layers.py --strata-gpu .gpu/strata-gpu \\
        --artifact .gpu/llama-3-8b --config models/configs/llama-3-8b.json \\
        --prompt-tokens 300 --out $OUT/layers

strata runs the random prompt (one prefill step of --prompt-tokens, then
--decode-steps decode steps) with `--dump-values`, which writes the node
outputs of each step; HF runs the prompt and strata's generated tokens
teacher-forced, with hooks on each decoder layer and each o_proj input. Per
layer and step kind (prefill rows, each decode row) it prints the relative
error ||x - f32|| / ||f32|| of strata and of HF in the same type. A kernel
that is wrong shows as the first layer where strata's error jumps past the
peer's. The weights come from check_model.py (same seed, same layout).

--detail-layer N then checks that layer's steps from strata's own values:
q / k / v against HF's projections, RoPE against numpy's rotation of
strata's q and k, and attention against numpy's softmax(q k^T) v over the
keys and values strata computed for every token so far (the prefill's and
each decode step's): a mismatch there is in the RoPE, KV write or attention
kernels, not upstream."""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_model import hf_model, in_precision, strata_case, write_weights  # noqa: E402

# strata's value names (plan.json) for what the hooks capture.
LAYER_OUT = "layers.{}.mlp.residual:0"  # the decoder layer's output
ATTN_OUT = "layers.{}.attention#3:0"  # paged attention's output = o_proj's input


def dump_match(detail):
    """The values to dump: every layer's output and attention output, and
    with --detail-layer N that layer's q / k / v and RoPE outputs (never a
    kv_write's output: the whole cache)."""
    pattern = r"mlp\.residual:0$|attention#3:0$"
    if detail is not None:
        pattern += rf"|^embed:0$|^layers\.{detail}\.(input_norm:0|q_proj:[012]|attention:0|attention#1:0)$"
    return pattern


def strata_dump(args, prompt, dump):
    """strata's run of `prompt` with the dumps (check_model.strata_case):
    the generated ids and their log-probabilities."""
    run = argparse.Namespace(strata_gpu=args.strata_gpu, artifact=args.artifact,
                             strata_flag=["--dump-values", dump, "--dump-match", dump_match(args.detail_layer)]
                             + (args.strata_flag or []))
    outs, _ = strata_case(run, args.weights_dir, prompt, args.decode_steps + 1, 1,
                          args.max_step_tokens or max(len(prompt), 16))
    ids = outs[0]["token_ids"]  # the prompt's, then the generated ones
    assert ids[:len(prompt)] == prompt, "strata's ids do not start with the prompt"
    return ids[len(prompt):], [e["logprob"] for e in outs[0]["logprobs"]]


def load_step(dump, step):
    folder = os.path.join(dump, f"step-{step}")
    index = json.load(open(os.path.join(folder, "index.json")))
    return {name: np.fromfile(os.path.join(folder, e["file"]), dtype=np.float32).reshape(-1, e["shape"][-1])
            for name, e in index.items()}


def rope(x, positions, head_dim, theta):
    """Llama's rotation (rotate-half form) of x [tokens, heads * head_dim]."""
    t = x.reshape(len(positions), -1, head_dim).astype(np.float64)
    inv = theta ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    ang = np.asarray(positions, dtype=np.float64)[:, None] * inv[None, :]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    a, b = t[..., :head_dim // 2], t[..., head_dim // 2:]
    return np.concatenate([a * cos - b * sin, b * cos + a * sin], -1).reshape(x.shape)


def attention(q, k, v, heads, kv_heads, head_dim, first):
    """Causal attention of q [new, heads * D] at positions first.. over k, v
    [first + new, kv_heads * D] (f64 numpy)."""
    new = q.shape[0]
    q = q.reshape(new, heads, head_dim).astype(np.float64)
    k = k.reshape(-1, kv_heads, head_dim).astype(np.float64)
    v = v.reshape(-1, kv_heads, head_dim).astype(np.float64)
    g = heads // kv_heads
    out = np.zeros_like(q)
    for h in range(heads):
        s = q[:, h] @ k[:, h // g].T / np.sqrt(head_dim)
        s[np.arange(k.shape[0])[None, :] > (first + np.arange(new))[:, None]] = -np.inf
        p = np.exp(s - s.max(-1, keepdims=True))
        out[:, h] = (p / p.sum(-1, keepdims=True)) @ v[:, h // g]
    return out.reshape(new, -1)


def detail(steps, spans, hf, cfg, layer, ids, table):
    """Layer `layer` of each step from strata's own inputs (see --detail-layer);
    first the token rows strata embedded: the ids whose rows of `table` (the
    embedding, torch on the GPU) they are, against the ids HF ran."""
    for s, (a, b) in enumerate(spans):
        rows = torch.tensor(steps[s]["embed:0"], device=table.device)
        fed = torch.cdist(rows, table).argmin(-1).tolist()
        wrong = [(a + i, f, ids[a + i]) for i, f in enumerate(fed) if f != ids[a + i]]
        print(f"{'prefill' if s == 0 else f'decode {s}'}: embedded {len(fed)} tokens, "
              f"{len(wrong)} not HF's (position, strata's id, HF's id): {wrong[:8]}")
    H, Hk = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = cfg["hidden_size"] // H
    theta = cfg.get("rope_theta", 10000.0)
    name = f"layers.{layer}."
    print(f"\nlayer {layer} from strata's own values: relative error of")
    print("| step | embedding against HF | q / k / v against HF f32 | RoPE q / k against numpy | attention against numpy |")
    print("| --- | --- | --- | --- | --- |")
    ks, vs, out = [], [], []
    for s, (a, b) in enumerate(spans):
        st = steps[s]
        proj = [rel(st[name + f"q_proj:{i}"], hf[name + p][a:b]) for i, p in enumerate(("q", "k", "v"))]
        pos = list(range(a, b))
        rq = rel(st[name + "attention:0"], rope(st[name + "q_proj:0"], pos, D, theta))
        rk = rel(st[name + "attention#1:0"], rope(st[name + "q_proj:1"], pos, D, theta))
        ks.append(st[name + "attention#1:0"])
        vs.append(st[name + "q_proj:2"])
        want = attention(st[name + "attention:0"], np.concatenate(ks), np.concatenate(vs), H, Hk, D, a)
        att = rel(st[name + "attention#3:0"], want)
        emb = rel(st["embed:0"], hf["embed:0"][a:b])
        row = {"step": s, "embed": emb, "qkv": proj, "rope": [rq, rk], "attention": att}
        out.append(row)
        print(f"| {'prefill' if s == 0 else f'decode {s}'} | {emb:.4f} | {proj[0]:.4f} / {proj[1]:.4f} / {proj[2]:.4f} | "
              f"{rq:.4f} / {rk:.4f} | {att:.4f} |", flush=True)
    return out


@torch.inference_mode()
def hf_values(model, ids, layers, keep, detail_layer=None):
    """{strata value name: [tokens, width] f32 numpy} from one teacher-forced
    forward over `ids`."""
    got = {}
    hooks = []
    if detail_layer is not None:
        def embed_hook(mod, inp, out):
            got["embed:0"] = out.float().reshape(-1, out.shape[-1]).cpu().numpy()
        hooks.append(model.model.embed_tokens.register_forward_hook(embed_hook))
    for i, layer in enumerate(model.model.layers):
        def out_hook(mod, inp, out, i=i):
            o = out[0] if isinstance(out, tuple) else out
            got[LAYER_OUT.format(i)] = o.float().reshape(-1, o.shape[-1]).cpu().numpy()

        def attn_hook(mod, inp, i=i):
            x = inp[0]
            got[ATTN_OUT.format(i)] = x.float().reshape(-1, x.shape[-1]).cpu().numpy()
        hooks.append(layer.register_forward_hook(out_hook))
        hooks.append(layer.self_attn.o_proj.register_forward_pre_hook(attn_hook))
        if i == detail_layer:
            for p in ("q", "k", "v"):
                def proj_hook(mod, inp, out, key=f"layers.{i}.{p}"):
                    got[key] = out.float().reshape(-1, out.shape[-1]).cpu().numpy()
                hooks.append(getattr(layer.self_attn, p + "_proj").register_forward_hook(proj_hook))
    try:
        # The rows that chose the generated tokens: the prompt's last, then
        # each decode step's.
        logits = model(torch.tensor([ids], device="cuda"), logits_to_keep=keep).logits[0].float()
        got["logprobs"] = torch.log_softmax(logits, -1).cpu()
    finally:
        for h in hooks:
            h.remove()
    return got


def rel(x, ref):
    return float(np.linalg.norm(x - ref) / max(np.linalg.norm(ref), 1e-30))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--strata-gpu", required=True)
    p.add_argument("--artifact", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--prompt-tokens", type=int, default=300)
    p.add_argument("--decode-steps", type=int, default=2, help="decode steps after the prefill to compare")
    p.add_argument("--weights-dir", default="/tmp/strata-check-weights")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--detail-layer", type=int, help="also check this layer's steps from strata's own values")
    p.add_argument("--strata-flag", action="append", metavar="FLAG",
                   help="pass FLAG to strata-gpu run (e.g. --strata-flag=--cache-blocks=64); repeatable")
    p.add_argument("--max-step-tokens", type=int, help="strata's step budget (default: the prompt in one step)")
    p.add_argument("--out", required=True, help="folder for the dumps and layers.json")
    args = p.parse_args()

    dtype = json.load(open(os.path.join(args.artifact, "plan.json")))["meta"]["kernels"]["dtype"]
    t = time.time()
    model, cfg = hf_model(args.config, args.seed)
    write_weights(model, cfg, args.weights_dir)
    print(f"weights written in {time.time() - t:.0f} s", flush=True)
    gen = torch.Generator().manual_seed(args.seed)
    prompt = torch.randint(3, cfg["vocab_size"], (args.prompt_tokens,), generator=gen).tolist()
    dump = os.path.join(args.out, "dump")
    new, logprobs = strata_dump(args, prompt, dump)
    ids = prompt + new[:args.decode_steps]
    steps = [load_step(dump, s) for s in range(args.decode_steps + 1)]
    # Step s's rows: the prompt's for the prefill, token L + s - 1 for decode s.
    spans = [(0, len(prompt))] + [(len(prompt) + s, len(prompt) + s + 1) for s in range(args.decode_steps)]

    layers = cfg["num_hidden_layers"]
    ref = {}
    for precision in ("f32", dtype):
        model = in_precision(model, precision)
        ref[precision] = hf_values(model, ids, layers, len(spans), args.detail_layer)
    table = model.model.embed_tokens.weight.float()
    del model

    rows = []
    print(f"\nrelative error against HF f32, prompt of {len(prompt)} tokens ({dtype}); strata / HF {dtype}")
    head = ["layer"] + [f"{'prefill' if s == 0 else f'decode {s}'} {what}" for s in range(len(spans))
                        for what in ("out", "attn")]
    print("| " + " | ".join(head) + " |\n|" + " --- |" * len(head))
    for i in range(layers):
        cells, row = [str(i)], {"layer": i}
        for s, (a, b) in enumerate(spans):
            for what, name in (("out", LAYER_OUT.format(i)), ("attn", ATTN_OUT.format(i))):
                f32 = ref["f32"][name][a:b]
                mine = rel(steps[s][name], f32)
                peer = rel(ref[dtype][name][a:b], f32)
                row[f"step{s}_{what}"] = [mine, peer]
                cells.append(f"{mine:.4f} / {peer:.4f}")
        rows.append(row)
        print("| " + " | ".join(cells) + " |", flush=True)
    print("\nthe generated tokens: strata's logprob, HF f32's and HF " + dtype + "'s, and whether it is f32's top")
    tokens = []
    for j in range(len(spans)):
        f32, peer = ref["f32"]["logprobs"][j], ref[dtype]["logprobs"][j]
        t = new[j]
        tokens.append({"token": t, "strata": logprobs[j], "f32": f32[t].item(), "peer": peer[t].item(),
                       "f32_top": int(f32.argmax()), "f32_top_logprob": f32.max().item()})
        print(f"  {t}: {logprobs[j]:.4f} / {f32[t].item():.4f} / {peer[t].item():.4f}, f32's top "
              f"{int(f32.argmax())} ({f32.max().item():.4f})")
    details = None if args.detail_layer is None else detail(steps, spans, ref["f32"], cfg, args.detail_layer, ids, table)
    json.dump({"prompt_tokens": len(prompt), "dtype": dtype, "generated": new, "layers": rows, "detail": details, "tokens": tokens},
              open(os.path.join(args.out, "layers.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
