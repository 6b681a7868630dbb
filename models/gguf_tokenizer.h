// A GGUF file's tokenizer (its `tokenizer.ggml.*` metadata) as strata's
// Tokenizer: the vocabulary becomes the tokenizer.json document the same
// tokenizer has on Hugging Face, which Tokenizer::fromJson then checks and
// loads like any other.
#pragma once
#include "models/gguf.h"
#include "models/tokenizer.h"

namespace strata::models {

// tokenizer.ggml.model "gpt2" (byte-level BPE: tokens, merges, token types)
// with the pre-tokenizer tokenizer.ggml.pre names, split as llama.cpp
// splits: "llama-bpe" (Llama 3's split regex, merges ignored for
// whole-vocabulary words), "qwen2" (digits one by one), "gpt-2" (GPT-2's
// regex), "smollm" (digits one by one, then GPT-2's), "default"
// (llama.cpp's four regexes for a BPE vocabulary it does not know). Control tokens are
// special added tokens, user-defined ones plain added tokens;
// tokenizer.ggml.add_bos_token puts bos in front. Other models ("llama":
// SentencePiece with scores) and pre-tokenizers are errors naming them.
Tokenizer tokenizerFromGguf(const GgufFile& f);

}  // namespace strata::models
