// llama.cpp as an oracle (built against its libllama, never part of
// strata): prints, as one JSON line, the logits after a prompt of token ids
// and the greedy continuation, each step the argmax of llama.cpp's own
// logits. One thread, no flash attention, so the run is reproducible.
//
//   c++ -std=c++17 llama_logits.cpp -I LLAMA_CPP/include -I LLAMA_CPP/ggml/include -L BUILD/bin -lllama -o llama_logits
//   llama_logits MODEL.gguf 0,53,308 STEPS
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL IDS STEPS\n", argv[0]);
    return 2;
  }
  std::vector<llama_token> ids;
  std::stringstream in(argv[2]);
  for (std::string t; std::getline(in, t, ',');) ids.push_back(std::atoi(t.c_str()));
  const int steps = std::atoi(argv[3]);
  llama_backend_init();
  llama_model* model = llama_model_load_from_file(argv[1], llama_model_default_params());
  if (!model) return 1;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 512;
  cp.n_batch = 512;
  cp.n_threads = cp.n_threads_batch = 1;
  cp.flash_attn = false;
  llama_context* ctx = llama_init_from_model(model, cp);
  const int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  if (llama_decode(ctx, llama_batch_get_one(ids.data(), (int32_t)ids.size()))) return 1;
  std::string logits = "[";
  const float* l = llama_get_logits_ith(ctx, -1);
  char num[32];
  for (int i = 0; i < vocab; ++i) {
    std::snprintf(num, sizeof num, "%s%.9g", i ? "," : "", l[i]);
    logits += num;
  }
  logits += "]";
  std::string greedy = "[";
  for (int s = 0; s < steps; ++s) {
    const float* row = llama_get_logits_ith(ctx, -1);
    llama_token best = 0;
    for (int i = 1; i < vocab; ++i)
      if (row[i] > row[best]) best = i;
    greedy += (s ? "," : "") + std::to_string(best);
    if (llama_decode(ctx, llama_batch_get_one(&best, 1))) return 1;
  }
  greedy += "]";
  std::printf("{\"logits\": %s, \"greedy\": %s}\n", logits.c_str(), greedy.c_str());
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
