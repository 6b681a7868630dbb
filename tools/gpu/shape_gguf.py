#!/usr/bin/env python3
"""A Llama GGUF file with llama.cpp's tensor names, shapes and block types
whose tensor data is all zeros, written as a sparse file (no disk blocks,
instant): the GGUF twin of shape_checkpoint.py, for benchmarking quantized
weights at a real model's shape.

`strata compile` reads the file's metadata and tensor infos, never the
data; the GPU benchmark then makes random blocks on the GPU machine
(`strata-gpu bench-model --random-weights`), so the 4.9-8.5 GB of a
quantized Llama-3-8B never exist on either machine. The vocabulary is a
SentencePiece one of the config's size (byte pieces and fillers), enough
for a plan and for random token ids.

--type picks llama.cpp's type of each tensor as llama-quantize's presets
do for a Llama model: Q8_0 (every matrix Q8_0), Q4_0, Q4_K_M (Q4_K, with
Q6_K for the output, and for attn_v and ffn_down in the first and last
eighth of the layers and every third layer between: llama.cpp's
use_more_bits rule), Q6_K. Norms stay F32.

    python3 tools/gpu/shape_gguf.py models/configs/llama-3-8b.json /tmp/llama-3-8b-q4km.gguf --type Q4_K_M
    strata compile /tmp/llama-3-8b-q4km.gguf --target cuda:sm_90 -o .gpu/llama-3-8b-q4km
"""
import argparse
import json

import gguf
import numpy as np

Q = gguf.GGMLQuantizationType


def more_bits(layer, layers):
    # llama.cpp's use_more_bits (llama-quant.cpp): the first and last
    # eighth of the layers and every third one between.
    return layer < layers // 8 or layer >= 7 * layers // 8 or (layer - layers // 8) % 3 == 2


def tensor_types(c, kind):
    """(GGUF name, [rows, cols], GGML type) of every tensor."""
    h, i, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    heads, kv = c["num_attention_heads"], c.get("num_key_value_heads", c["num_attention_heads"])
    d = c.get("head_dim", h // heads)
    layers = c["num_hidden_layers"]
    base = {"Q8_0": Q.Q8_0, "Q4_0": Q.Q4_0, "Q4_K_M": Q.Q4_K, "Q6_K": Q.Q6_K}[kind]
    k_m = kind == "Q4_K_M"
    yield "token_embd.weight", [v, h], base
    for l in range(layers):
        p = f"blk.{l}."
        big = Q.Q6_K if k_m and more_bits(l, layers) else base
        yield p + "attn_norm.weight", [h], Q.F32
        yield p + "attn_q.weight", [heads * d, h], base
        yield p + "attn_k.weight", [kv * d, h], base
        yield p + "attn_v.weight", [kv * d, h], big
        yield p + "attn_output.weight", [h, heads * d], base
        yield p + "ffn_norm.weight", [h], Q.F32
        yield p + "ffn_gate.weight", [i, h], base
        yield p + "ffn_up.weight", [i, h], base
        yield p + "ffn_down.weight", [h, i], big
    yield "output_norm.weight", [h], Q.F32
    if not c.get("tie_word_embeddings", False):
        yield "output.weight", [v, h], Q.Q6_K if k_m else base


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("config")
    ap.add_argument("out")
    ap.add_argument("--type", choices=["Q8_0", "Q4_0", "Q4_K_M", "Q6_K"], default="Q8_0")
    a = ap.parse_args()
    c = json.load(open(a.config))
    heads, kv = c["num_attention_heads"], c.get("num_key_value_heads", c["num_attention_heads"])
    w = gguf.GGUFWriter(a.out, "llama")
    w.add_name(f"shape of {a.config} ({a.type}, zeros)")
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(c["hidden_size"])
    w.add_block_count(c["num_hidden_layers"])
    w.add_feed_forward_length(c["intermediate_size"])
    w.add_rope_dimension_count(c.get("head_dim", c["hidden_size"] // heads))
    w.add_head_count(heads)
    w.add_head_count_kv(kv)
    w.add_layer_norm_rms_eps(c["rms_norm_eps"])
    w.add_rope_freq_base(c.get("rope_theta", 10000.0))
    w.add_vocab_size(c["vocab_size"])
    # SentencePiece: <unk>, <s>, </s>, the 256 byte pieces, fillers.
    v = c["vocab_size"]
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256
    tokens += [f"\u2581t{j}" for j in range(v - len(tokens))]
    types += [gguf.TokenType.NORMAL] * (v - len(types))
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores([-float(j) for j in range(v)])
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    for name, shape, t in tensor_types(c, a.type):
        block, size = gguf.GGML_QUANT_SIZES[t]
        nbytes = int(np.prod(shape)) // block * size
        w.add_tensor_info(name, shape, np.dtype(np.float32 if t == Q.F32 else np.float16), nbytes, raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    # The data: zeros after the header's alignment padding, as a hole.
    f = w.fout[0]
    f.flush()
    end = f.tell()
    end += (-end) % w.data_alignment
    for ti in w.tensors[0].values():
        end += ti.nbytes + (-ti.nbytes) % w.data_alignment
    f.truncate(end)
    w.close()
    print(f"{a.out}: {end / 2**30:.2f} GiB ({a.type}), sparse")


if __name__ == "__main__":
    main()
