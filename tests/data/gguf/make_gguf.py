#!/usr/bin/env python3
"""Writes the GGUF test files with gguf-py (PyPI `gguf` 0.17.1, llama.cpp's
own writer), the oracle of strata's GGUF reader (models/gguf.h):

- types.gguf: metadata of every value type (u8 .. f64, bool, string, arrays
  of strings, ints and arrays) and tensors of several ggml types (F32 [5, 3],
  F16 [4], BF16 [2, 2], Q8_0 [64, 2], Q4_K [256, 1]); the values are
  tests/unit/gguf_test.cpp's expectations.
- aligned64.gguf: general.alignment = 64 and two F32 tensors.
- tok-llama3.gguf, tok-gpt2.gguf: byte-level BPE vocabularies (below);
  tok-llama3.gguf with Llama 3's chat template.
- tiny-llama-{f32,f16,bf16}.gguf: the tiny-llama fixture (models/testdata)
  as tools/gpu/hf_to_gguf.py writes it (what llama.cpp's converter writes:
  Q / K rows in llama.cpp's RoPE order, matrices in the type, norms f32).

    python3 tests/data/gguf/make_gguf.py tests/data/gguf
"""
import os
import sys

import numpy as np
import gguf

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))

w = gguf.GGUFWriter(os.path.join(out, "types.gguf"), "llama")
w.add_uint8("t.u8", 200)
w.add_int8("t.i8", -100)
w.add_uint16("t.u16", 60000)
w.add_int16("t.i16", -30000)
w.add_uint32("t.u32", 4000000000)
w.add_int32("t.i32", -2000000000)
w.add_float32("t.f32", 1.5)
w.add_bool("t.bool", True)
w.add_string("t.str", "héllo")
w.add_uint64("t.u64", 2 ** 63 + 5)
w.add_int64("t.i64", -(2 ** 62))
w.add_float64("t.f64", -0.25)
w.add_array("t.strs", ["a", "", "ünï"])
w.add_array("t.ints", [1, -2, 3])
w.add_array("t.nested", [[1, 2], [3]])
w.add_tensor("f32", np.arange(15, dtype=np.float32).reshape(3, 5))
w.add_tensor("f16", np.array([1, 2, 3, 4], dtype=np.float16))
w.add_tensor("bf16", np.array([[0x3f80, 0x4000], [0x4040, 0x4080]], dtype=np.uint16), raw_dtype=gguf.GGMLQuantizationType.BF16)
w.add_tensor("q8_0", np.arange(2 * 2 * 34, dtype=np.uint8).reshape(2, 2 * 34), raw_dtype=gguf.GGMLQuantizationType.Q8_0)
w.add_tensor("q4_k", np.zeros((1, 144), dtype=np.uint8), raw_dtype=gguf.GGMLQuantizationType.Q4_K)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()

w = gguf.GGUFWriter(os.path.join(out, "aligned64.gguf"), "llama")
w.add_custom_alignment(64)
w.add_tensor("a", np.ones(3, dtype=np.float32))
w.add_tensor("b", np.full((2, 7), 2.0, dtype=np.float32))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print(f"wrote {out}/types.gguf and {out}/aligned64.gguf")

# Tokenizers: a GGUF's vocabulary (tokenizer.ggml.*) from two tokenizer.json
# forms, as llama.cpp's converter writes it for a byte-level BPE model:
# tok-llama3.gguf (pre llama-bpe, from tests/data/tokenizers/llama3_style.json)
# and tok-gpt2.gguf (pre gpt-2, from the tiny-llama fixture's tokenizer).
import json

here = os.path.dirname(os.path.abspath(__file__))
for name, src, pre in (("tok-llama3.gguf", os.path.join(here, "..", "tokenizers", "llama3_style.json"), "llama-bpe"),
                       ("tok-gpt2.gguf", os.path.join(here, "..", "..", "..", "models", "testdata", "tiny-llama",
                                                      "tokenizer.json"), "gpt-2")):
    t = json.load(open(src))
    vocab = dict(t["model"]["vocab"])
    special = {a["id"]: a["content"] for a in t.get("added_tokens", [])}
    for i, content in special.items():
        vocab[content] = i
    n = max(vocab.values()) + 1
    tokens = [""] * n
    for tok, i in vocab.items():
        tokens[i] = tok
    types = [gguf.TokenType.CONTROL if i in special else gguf.TokenType.NORMAL for i in range(n)]
    merges = [m if isinstance(m, str) else " ".join(m) for m in t["model"]["merges"]]
    bos = next(i for i, c in special.items() if "begin" in c)
    w = gguf.GGUFWriter(os.path.join(out, name), "llama")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(bos)
    w.add_add_bos_token(True)
    if name == "tok-llama3.gguf":  # with a chat template, as instruct models' GGUFs carry it
        w.add_eos_token_id(next(i for i, c in special.items() if c == "<|eot_id|>"))
        w.add_chat_template(open(os.path.join(here, "..", "chat_templates", "llama-3.jinja")).read())
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {out}/{name}: {n} tokens, {len(merges)} merges, pre {pre}")

sys.path.insert(0, os.path.join(here, "..", "..", "..", "tools", "gpu"))
import hf_to_gguf

for t in ("f32", "f16", "bf16"):
    hf_to_gguf.convert(os.path.join(here, "..", "..", "..", "models", "testdata", "tiny-llama"),
                       os.path.join(out, f"tiny-llama-{t}.gguf"), t, "gpt-2")
