// The tiny-llama fixture shared by the graph tests: its folder and its
// reference.json (read once).
#pragma once
#include <filesystem>
#include <fstream>
#include <string>

#include <algorithm>
#include <cmath>
#include <vector>

#include "models/hf_config.h"
#include "models/random_model.h"
#include "runtime/paged_generate.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace strata::fixture {

// The largest |got[j] - want[j]| over n values against recorded ones (a
// JSON array of as many numbers: a different count fails the test).
inline double maxAbsDiff(const float* got, int64_t n, const nlohmann::json& want) {
  EXPECT_EQ(n, (int64_t)want.size());
  double m = 0;
  for (int64_t j = 0; j < std::min<int64_t>(n, want.size()); ++j)
    m = std::max(m, std::fabs(got[j] - want[j].get<double>()));
  return m;
}

// How many leading tokens two generations share.
inline size_t commonPrefix(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t same = 0;
  while (same < a.size() && same < b.size() && a[same] == b[same]) ++same;
  return same;
}

inline std::string fixtureDir() { return STRATA_FIXTURE_DIR; }

inline const nlohmann::json& reference() {
  static nlohmann::json j = [] {
    std::ifstream f(fixtureDir() + "/reference.json");
    return nlohmann::json::parse(f);
  }();
  return j;
}

// A small Llama-family config of `model_type` (2 layers, 4 heads / 2 KV heads
// of 16, vocab 256) for self-built random-weight models.
inline nlohmann::json smallConfig(const char* modelType) {
  return {{"model_type", modelType}, {"hidden_size", 64}, {"intermediate_size", 96}, {"num_hidden_layers", 2},
          {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"vocab_size", 256}, {"max_position_embeddings", 128},
          {"rms_norm_eps", 1e-6}, {"rope_theta", 1000000.0}, {"bos_token_id", 1}, {"eos_token_id", 2}};
}

// Writes an HF checkpoint with random weights (seed 7) for `config` into a
// temp folder named after `name` and returns the folder.
inline std::string selfBuiltModel(const std::string& name, const nlohmann::json& config) {
  std::string d = (std::filesystem::temp_directory_path() / ("strata-test-" + name)).string();
  std::string cfg = d + ".config.json";
  std::ofstream(cfg) << config.dump();
  models::writeRandomCheckpoint(models::readLlamaConfig(cfg), d, 7);
  return d;
}

// Greedy decoding of several prompts in lockstep: one PagedModel step
// prefills all of them together, then each step decodes one token for every
// sequence. Returns prompt + `steps` tokens per sequence.
inline std::vector<std::vector<int64_t>> greedyLockstep(const runtime::GraphRunner& exec,
                                                        std::vector<std::vector<int64_t>> ids, int64_t blockSize,
                                                        int64_t numBlocks, int steps) {
  runtime::PagedKvCache cache(runtime::kvCacheShapeFor(exec, blockSize, numBlocks), exec.cacheDevice());
  runtime::PagedModel model(exec, cache);
  std::vector<runtime::PagedModel::SeqStep> step;
  for (size_t s = 0; s < ids.size(); ++s) {
    if (!cache.reserve((int64_t)s, (int64_t)ids[s].size())) fail("greedyLockstep: cache too small");
    step.push_back({(int64_t)s, ids[s]});
  }
  for (int t = 0; t < steps; ++t) {
    ops::Tensor logits = model.step(step);
    for (size_t s = 0; s < step.size(); ++s) {
      const float* row = logits.data<float>() + s * logits.dim(1);
      int64_t best = std::max_element(row, row + logits.dim(1)) - row;
      ids[s].push_back(best);
      if (!cache.reserve((int64_t)s, (int64_t)ids[s].size())) fail("greedyLockstep: cache too small");
      step[s].tokens = {best};
    }
  }
  return ids;
}

}  // namespace strata::fixture
