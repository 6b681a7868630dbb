#!/usr/bin/env python3
"""An HF Llama checkpoint (config.json, model.safetensors in f32 / bf16 /
f16, tokenizer.json) written as a GGUF file that llama.cpp reads, through
gguf-py (PyPI's `gguf`, llama.cpp's own writer): for the CPU serving
comparison and strata's GGUF tests on a machine where llama.cpp's
convert_hf_to_gguf.py cannot run (it imports PyTorch, which PyPI has for
Linux only with CUDA's libraries). The GPU comparison uses
convert_hf_to_gguf.py itself.

What it writes is what that converter writes for such a folder: the llama
architecture's hyperparameters, the vocabulary, and the tensors under
GGUF's names with Q and K rows permuted into llama.cpp's RoPE pairing (each
head's rows [0, d/2) and [d/2, d) interleaved). The vocabulary: a Llama 2
form tokenizer.json (bench_tokenizer.py's) through gguf's LlamaHfVocab
(tokenizer model "llama"); a byte-level BPE one as tokens, types and merges
(model "gpt2") with the pre-tokenizer name --pre (the converter finds it by
hashing the tokenizer's output). --outtype f16 / bf16 stores matrices in
that type and keeps norms in f32, as the converter does.

    python3 tools/gpu/hf_to_gguf.py MODEL_DIR OUT.gguf [--outtype f32|f16|bf16] [--pre NAME]
"""
import argparse
import json
import struct
import sys
from pathlib import Path

import numpy as np
import gguf

DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16}


def read_safetensors(path):
    """name -> f32 array, from one safetensors file (bf16 widened)."""
    data = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        raw = np.frombuffer(data, dtype=DTYPES[info["dtype"]], count=(hi - lo) // np.dtype(DTYPES[info["dtype"]]).itemsize,
                            offset=base + lo)
        a = (raw.astype(np.uint32) << 16).view(np.float32) if info["dtype"] == "BF16" else raw.astype(np.float32)
        out[name] = a.reshape(info["shape"])
    return out


def rope_pairs(w, heads):
    """llama.cpp pairs rotary dimensions (2i, 2i+1) where HF pairs (i, i + d/2)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def add_bpe_vocab(w, t, pre):
    """A byte-level BPE tokenizer.json as tokenizer model "gpt2"."""
    vocab = dict(t["model"]["vocab"])
    special = {a["id"]: a for a in t.get("added_tokens", [])}
    for i, a in special.items():
        vocab[a["content"]] = i
    tokens = [""] * (max(vocab.values()) + 1)
    for tok, i in vocab.items():
        tokens[i] = tok
    types = [(gguf.TokenType.CONTROL if special[i].get("special") else gguf.TokenType.USER_DEFINED)
             if i in special else gguf.TokenType.NORMAL for i in range(len(tokens))]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in t["model"]["merges"]])
    # HF adds bos through the post-processor's template; GGUF says it in a flag.
    post = t.get("post_processor") or {}
    single = post.get("single", []) if post.get("type") == "TemplateProcessing" else []
    if single and "SpecialToken" in single[0]:
        w.add_add_bos_token(True)
    return tokens


def convert(d, out, outtype="f32", pre="gpt-2"):
    d = Path(d)
    c = json.loads((d / "config.json").read_text())
    if c.get("model_type") != "llama":
        sys.exit(f"hf_to_gguf: {d}/config.json: model_type {c.get('model_type')!r}; this writes llama only")
    heads, kv = c["num_attention_heads"], c.get("num_key_value_heads", c["num_attention_heads"])
    head_dim = c.get("head_dim", c["hidden_size"] // heads)
    w = gguf.GGUFWriter(str(out), "llama")
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(c["hidden_size"])
    w.add_block_count(c["num_hidden_layers"])
    w.add_feed_forward_length(c["intermediate_size"])
    w.add_rope_dimension_count(head_dim)
    w.add_head_count(heads)
    w.add_head_count_kv(kv)
    w.add_layer_norm_rms_eps(c["rms_norm_eps"])
    w.add_rope_freq_base(c.get("rope_theta", c.get("rope_parameters", {}).get("rope_theta", 10000.0)))
    w.add_vocab_size(c["vocab_size"])
    w.add_file_type({"f32": gguf.LlamaFileType.ALL_F32, "f16": gguf.LlamaFileType.MOSTLY_F16,
                     "bf16": gguf.LlamaFileType.MOSTLY_BF16}[outtype])

    tj = json.loads((d / "tokenizer.json").read_text())
    if tj["model"]["type"] == "BPE" and not tj["model"].get("byte_fallback"):
        tokens = add_bpe_vocab(w, tj, pre)
    else:
        vocab = gguf.LlamaHfVocab(d)
        tokens, scores, types = zip(*vocab.all_tokens())
        w.add_tokenizer_model("llama")
        w.add_tokenizer_pre("default")
        w.add_token_list(list(tokens))
        w.add_token_scores(list(scores))
        w.add_token_types(list(types))
    if len(tokens) != c["vocab_size"]:
        sys.exit(f"hf_to_gguf: the tokenizer has {len(tokens)} tokens, config.json's vocab_size is {c['vocab_size']}")
    gguf.SpecialVocab(d, n_vocab=len(tokens), load_merges=False).add_to_gguf(w)

    t = read_safetensors(d / "model.safetensors")
    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    per_layer = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
                 "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output", "post_attention_layernorm": "ffn_norm",
                 "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    for l in range(c["num_hidden_layers"]):
        for hf, gg in per_layer.items():
            names[f"model.layers.{l}.{hf}.weight"] = f"blk.{l}.{gg}.weight"
    if "lm_head.weight" not in t:
        del names["lm_head.weight"]  # tied: llama.cpp reuses token_embd
    for hf, gg in names.items():
        x = t.pop(hf)
        if hf.endswith("q_proj.weight"):
            x = rope_pairs(x, heads)
        elif hf.endswith("k_proj.weight"):
            x = rope_pairs(x, kv)
        if outtype == "f16" and x.ndim == 2:
            x = x.astype(np.float16)
        if outtype == "bf16" and x.ndim == 2:
            # round to nearest even, as gguf-py's quants.py and torch do
            u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
            x = ((u + (0x7FFF + ((u >> 16) & 1))) >> 16).astype(np.uint16)
            w.add_tensor(gg, x, raw_dtype=gguf.GGMLQuantizationType.BF16)
            continue
        w.add_tensor(gg, np.ascontiguousarray(x))
    if t:
        sys.exit(f"hf_to_gguf: tensors this writer does not place: {sorted(t)[:5]}")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{out}: {len(names)} tensors, {outtype}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--outtype", choices=["f32", "f16", "bf16"], default="f32")
    ap.add_argument("--pre", default="gpt-2", help="tokenizer.ggml.pre of a byte-level BPE vocabulary")
    a = ap.parse_args()
    convert(a.model, a.out, a.outtype, a.pre)


if __name__ == "__main__":
    main()
