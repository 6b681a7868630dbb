#!/usr/bin/env python3
"""A Llama checkpoint with the right tensor names, shapes and dtype whose
data is all zeros, written as a sparse file (no disk blocks, instant).

`strata compile` needs a checkpoint to build a plan from (it reads the
safetensors header, never the data); the GPU benchmark then makes random
weights on the GPU machine (`strata-gpu bench-model --random-weights`), so
the 16 GB of a Llama-3-8B never exist on either machine.

    python3 tools/gpu/shape_checkpoint.py models/configs/llama-3-8b.json /tmp/llama-3-8b
    strata compile /tmp/llama-3-8b --target cuda:sm_90 -o .gpu/llama-3-8b
"""
import json
import os
import shutil
import struct
import sys


def tensors(c):
    h, i, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    heads, kv = c["num_attention_heads"], c.get("num_key_value_heads", c["num_attention_heads"])
    d = c.get("head_dim", h // heads)
    yield "model.embed_tokens.weight", [v, h]
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        yield p + "input_layernorm.weight", [h]
        yield p + "self_attn.q_proj.weight", [heads * d, h]
        yield p + "self_attn.k_proj.weight", [kv * d, h]
        yield p + "self_attn.v_proj.weight", [kv * d, h]
        yield p + "self_attn.o_proj.weight", [h, heads * d]
        yield p + "post_attention_layernorm.weight", [h]
        yield p + "mlp.gate_proj.weight", [i, h]
        yield p + "mlp.up_proj.weight", [i, h]
        yield p + "mlp.down_proj.weight", [h, i]
    yield "model.norm.weight", [h]
    if not c.get("tie_word_embeddings", False):
        yield "lm_head.weight", [v, h]


def layout(c):
    """The safetensors header (bytes, padded to 8) and (name, shape, offset,
    bytes) of every tensor, in file order: the one layout shape_checkpoint
    writes, so an artifact compiled from it can read weights written with it
    by check_model.py."""
    header, entries, offset = {}, [], 0
    for name, shape in tensors(c):
        n = 2
        for s in shape:
            n *= s
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + n]}
        entries.append((name, shape, offset, n))
        offset += n
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text, entries


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    config, out = sys.argv[1], sys.argv[2]
    c = json.load(open(config))
    head, entries = layout(c)
    size = sum(e[3] for e in entries)
    os.makedirs(out, exist_ok=True)
    shutil.copy(config, os.path.join(out, "config.json"))
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(head)
        f.truncate(len(head) + size)
    print(f"{out}: {len(entries)} tensors, {size / 1e9:.2f} GB of bf16 (sparse)")


if __name__ == "__main__":
    main()
