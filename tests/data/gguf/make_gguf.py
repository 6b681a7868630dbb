#!/usr/bin/env python3
"""Writes the GGUF test files with gguf-py (PyPI `gguf` 0.17.1, llama.cpp's
own writer), the oracle of strata's GGUF reader (models/gguf.h):

- types.gguf: metadata of every value type (u8 .. f64, bool, string, arrays
  of strings, ints and arrays) and tensors of several ggml types (F32 [5, 3],
  F16 [4], BF16 [2, 2], Q8_0 [64, 2], Q4_K [256, 1]); the values are
  tests/unit/gguf_test.cpp's expectations.
- aligned64.gguf: general.alignment = 64 and two F32 tensors.
- tok-llama3.gguf, tok-gpt2.gguf: byte-level BPE vocabularies (below);
  tok-llama3.gguf with Llama 3's chat template; tok-smollm.gguf,
  tok-qwen2.gguf, tok-default.gguf: tok-gpt2's vocabulary under the other
  pre-tokenizers llama.cpp names.
- tok-spm.gguf: a SentencePiece BPE model (sentencepiece 0.2.0, trained
  here on the tokenizer golden corpus with Llama 2's options) as llama.cpp's
  converter writes one: pieces, scores, types (tokenizer model "llama").
Every tok-*.gguf also carries the llama hyperparameters llama.cpp needs to
open a vocabulary-only file (record_llama_cpp.py runs llama-tokenize on
them).
- tiny-llama-{f32,f16,bf16}.gguf: the tiny-llama fixture (models/testdata)
  as tools/gpu/hf_to_gguf.py writes it (what llama.cpp's converter writes:
  Q / K rows in llama.cpp's RoPE order, matrices in the type, norms f32).

    python3 tests/data/gguf/make_gguf.py tests/data/gguf
"""
import io
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



def vocab_only_hparams(w, n_vocab):
    # What llama.cpp reads of a llama model before its vocabulary.
    w.add_context_length(256)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(4)
    w.add_head_count_kv(4)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(n_vocab)


# Tokenizers: a GGUF's vocabulary (tokenizer.ggml.*) from two tokenizer.json
# forms, as llama.cpp's converter writes it for a byte-level BPE model:
# tok-llama3.gguf (pre llama-bpe, from tests/data/tokenizers/llama3_style.json)
# and tok-gpt2.gguf (pre gpt-2, from the tiny-llama fixture's tokenizer).
import json

here = os.path.dirname(os.path.abspath(__file__))
fixture_tok = os.path.join(here, "..", "..", "..", "models", "testdata", "tiny-llama", "tokenizer.json")
for name, src, pre in (("tok-llama3.gguf", os.path.join(here, "..", "tokenizers", "llama3_style.json"), "llama-bpe"),
                       ("tok-gpt2.gguf", fixture_tok, "gpt-2"), ("tok-smollm.gguf", fixture_tok, "smollm"),
                       ("tok-qwen2.gguf", fixture_tok, "qwen2"), ("tok-default.gguf", fixture_tok, "default")):
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
    vocab_only_hparams(w, n)
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

# A SentencePiece BPE model with Llama 2's trainer options, as llama.cpp's
# convert_hf_to_gguf.py (_create_vocab_sentencepiece) writes its vocabulary.
import sentencepiece as spm

sys.path.insert(0, os.path.join(here, "..", "tokenizers"))
from make_golden import CORPUS  # noqa: E402

model = io.BytesIO()
spm.SentencePieceTrainer.train(sentence_iterator=iter(CORPUS), model_writer=model, vocab_size=420, model_type="bpe",
                               byte_fallback=True, split_digits=True, allow_whitespace_only_pieces=True,
                               remove_extra_whitespaces=False, normalization_rule_name="identity",
                               character_coverage=1.0, unk_id=0, bos_id=1, eos_id=2, num_threads=1,
                               user_defined_symbols=["<|im_start|>"], minloglevel=2)
sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
tokens, scores, types = [], [], []
for i in range(sp.vocab_size()):
    tokens.append(sp.id_to_piece(i))
    scores.append(sp.get_score(i))
    types.append(gguf.TokenType.UNKNOWN if sp.is_unknown(i) else gguf.TokenType.CONTROL if sp.is_control(i)
                 else gguf.TokenType.UNUSED if sp.is_unused(i) else gguf.TokenType.BYTE if sp.is_byte(i)
                 else gguf.TokenType.USER_DEFINED if tokens[-1] == "<|im_start|>" else gguf.TokenType.NORMAL)
w = gguf.GGUFWriter(os.path.join(out, "tok-spm.gguf"), "llama")
vocab_only_hparams(w, len(tokens))
w.add_tokenizer_model("llama")
w.add_tokenizer_pre("default")
w.add_token_list(tokens)
w.add_token_scores(scores)
w.add_token_types(types)
w.add_bos_token_id(1)
w.add_eos_token_id(2)
w.add_unk_token_id(0)
w.add_add_bos_token(True)
w.add_add_space_prefix(True)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print(f"wrote {out}/tok-spm.gguf: {len(tokens)} pieces")

sys.path.insert(0, os.path.join(here, "..", "..", "..", "tools", "gpu"))
import hf_to_gguf

for t in ("f32", "f16", "bf16"):
    hf_to_gguf.convert(os.path.join(here, "..", "..", "..", "models", "testdata", "tiny-llama"),
                       os.path.join(out, f"tiny-llama-{t}.gguf"), t, "gpt-2")
