#!/usr/bin/env python3
"""Records llama.cpp's logits and greedy tokens on the quantized models of
make_quant.py (tiny-q8_0.gguf ... tiny-q6_k.gguf) into
llama_cpp_logits.json, the oracle of strata's quantized path
(tests/unit/fixture_test.cpp), per file:

- "quantized": llama.cpp's own quantized run of the file (its dot products
  quantize activations to 8 bits, so it is near, not equal);
- "dequantized_f32": llama.cpp on an F32 GGUF of the file's values
  dequantized by gguf-py (the same model without quantized arithmetic:
  what strata's dequantized run must equal to f32 rounding).

llama_logits.cpp is built against the same llama.cpp (the llama-cpp-python
0.3.16 sdist's vendor/llama.cpp, CPU build); M is make_quant.py's model
folder (config.json, tokenizer.json):

    c++ -std=c++17 tests/data/gguf/llama_logits.cpp -I LLAMA/include -I LLAMA/ggml/include -L BUILD/bin -lllama -o llama_logits
    python3 tests/data/gguf/record_llama_cpp_logits.py ./llama_logits M
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import gguf
from gguf import quants

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tools", "gpu"))
import hf_to_gguf  # noqa: E402

PROMPT = [0, 53, 308, 425, 294, 271, 259, 294, 70, 407]
STEPS = 16
HF = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}
LAYER = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm", "attn_q": "self_attn.q_proj",
         "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
         "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}


def run(exe, model):
    r = subprocess.run([exe, model, ",".join(map(str, PROMPT)), str(STEPS)], capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def record(exe, model_dir, q):
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    heads, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    # The file's values in HF names and row order (hf_to_gguf permutes q / k again).
    tensors = {}
    for t in gguf.GGUFReader(q).tensors:
        v = quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        stem, kind = t.name.rsplit(".", 1)
        if stem.startswith("blk."):
            _, layer, part = stem.split(".", 2)
            name = f"model.layers.{layer}.{LAYER[part]}.{kind}"
            if part in ("attn_q", "attn_k"):
                h = heads if part == "attn_q" else kv
                v = v.reshape(h, v.shape[0] // h // 2, 2, *v.shape[1:]).swapaxes(1, 2).reshape(v.shape)
        else:
            name = f"{HF[stem]}.{kind}"
        tensors[name] = v
    hf_to_gguf.read_safetensors = lambda path: dict(tensors)
    with tempfile.TemporaryDirectory() as tmp:
        f32 = os.path.join(tmp, "dequantized-f32.gguf")
        hf_to_gguf.convert(model_dir, f32, "f32", "gpt-2")
        return {"quantized": run(exe, q), "dequantized_f32": run(exe, f32)}


def main():
    exe, model_dir = sys.argv[1], sys.argv[2]
    out = {"llama_cpp": "llama-cpp-python 0.3.16 sdist (vendor/llama.cpp), one thread", "prompt": PROMPT, "files": {}}
    for t in ["q8_0", "q4_0", "q4_1", "q4_k_m", "q5_k_m", "q6_k"]:
        name = f"tiny-{t}.gguf"
        r = out["files"][name] = record(exe, model_dir, os.path.join(HERE, name))
        print(name, "greedy", r["quantized"]["greedy"], "dequantized", r["dequantized_f32"]["greedy"])
    with open(os.path.join(HERE, "llama_cpp_logits.json"), "w") as o:
        json.dump(out, o)
        o.write("\n")


if __name__ == "__main__":
    main()
