// A GGUF file's model configuration: the Llama-family hyperparameters from
// its `{arch}.*` metadata (llama.cpp's key names), as models/hf_config.h's
// LlamaConfig, through the same domain checks as a config.json. The first
// piece of GGUF as a model source (the tokenizer and the weights are the
// next; until then `strata run` does not take a GGUF).
#pragma once
#include "models/gguf.h"
#include "models/hf_config.h"

namespace strata::models {

// general.architecture "llama" (Llama 1-3, Mistral, SmolLM) or "qwen2";
// {arch}.embedding_length, .feed_forward_length, .block_count,
// .attention.head_count (required), .attention.head_count_kv,
// .attention.key_length (else rope.dimension_count, else embedding /
// heads), .context_length, .attention.layer_norm_rms_epsilon (required),
// .rope.freq_base, .vocab_size (else the token list's length);
// tokenizer.ggml.bos_token_id / eos_token_id; tied embeddings when there
// is no output.weight tensor. RoPE scaling other than "none" is refused,
// as for config.json. Throws strata::Error naming the file and the key.
LlamaConfig llamaConfigFromGguf(const GgufFile& f);

}  // namespace strata::models
