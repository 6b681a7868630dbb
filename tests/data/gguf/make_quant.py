#!/usr/bin/env python3
"""Quantized test data from llama.cpp itself (its llama-quantize, built from
the llama-cpp-python 0.3.16 sdist) and gguf-py's dequantization (gguf
0.17.1, the reference ops/quant.h must equal):

- quant-tensors.gguf: blk.0.attn_k.weight ([128, 256], GGUF's interleaved
  RoPE row order) as llama-quantize wrote it in Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
  Q4_K, Q5_K and Q6_K, one tensor per format, the bytes copied as they are;
- tiny-{q8_0,q4_0,q4_1,q4_k_m,q5_k_m,q6_k}.gguf: the whole model in each
  of llama-quantize's types (the K mixes: Q4_K / Q5_K with Q6_K);
- quant_expect.json: gguf-py's dequantized values in the file's row order:
  their sum and sum of squares per tensor of every file, and every 61st
  value (the first 200) of quant-tensors.gguf's.

The model: `strata make-model` of a 1-layer Llama (hidden 256,
intermediate 256, GQA 4 / 2, head dim 64, vocab 512, seed 3) with the
tiny-llama fixture's tokenizer, written to F32 GGUF by
tools/gpu/hf_to_gguf.py, then quantized:

    strata make-model --config CFG -o M --seed 3 && cp models/testdata/tiny-llama/tokenizer.json M/
    python3 tools/gpu/hf_to_gguf.py M M/f32.gguf
    python3 tests/data/gguf/make_quant.py LLAMA_QUANTIZE M/f32.gguf
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
TYPES = {"Q8_0": "Q8_0", "Q4_0": "Q4_0", "Q4_1": "Q4_1", "Q5_0": "Q5_0", "Q5_1": "Q5_1", "Q4_K_M": "Q4_K",
         "Q5_K_M": "Q5_K", "Q6_K": "Q6_K"}
MODELS = ["Q8_0", "Q4_0", "Q4_1", "Q4_K_M", "Q5_K_M", "Q6_K"]


def expect(tensor, samples):
    values = quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float64).reshape(-1)
    e = {"type": tensor.tensor_type.name, "sum": float(values.sum()), "sum_sq": float((values * values).sum())}
    if samples:
        e["every_61st"] = [float(v) for v in values[::61][:200]]
    return e


def main():
    quantize, f32 = sys.argv[1], sys.argv[2]
    out = {}
    w = gguf.GGUFWriter(os.path.join(HERE, "quant-tensors.gguf"), "llama")
    with tempfile.TemporaryDirectory() as tmp:
        for ftype, qtype in TYPES.items():
            path = os.path.join(tmp, f"{ftype}.gguf")
            subprocess.run([quantize, f32, path, ftype, "1"], check=True, capture_output=True)
            if ftype in MODELS:
                subprocess.run(["cp", path, os.path.join(HERE, f"tiny-{ftype.lower()}.gguf")], check=True)
            r = gguf.GGUFReader(path)
            t = next(t for t in r.tensors if t.name == "blk.0.attn_k.weight")
            assert t.tensor_type.name == qtype, (ftype, t.tensor_type.name)
            rows = int(t.shape[1])
            w.add_tensor(qtype.lower(), np.ascontiguousarray(t.data).reshape(rows, -1), raw_dtype=t.tensor_type)
            out[f"quant-tensors.gguf:{qtype.lower()}"] = expect(t, True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    for ftype in MODELS:
        name = f"tiny-{ftype.lower()}.gguf"
        for t in gguf.GGUFReader(os.path.join(HERE, name)).tensors:
            out[f"{name}:{t.name}"] = expect(t, False)
    with open(os.path.join(HERE, "quant_expect.json"), "w") as f:
        json.dump(out, f, indent=0)
        f.write("\n")
    print(f"{len(out)} tensors")


if __name__ == "__main__":
    main()
