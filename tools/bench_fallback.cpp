#include "tools/bench_fallback.h"

#include <cstdio>
#include <fstream>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "graph/Pipeline.h"
#include "models/model_source.h"
#include "ops/error.h"
#include "runtime/executor.h"
#include "runtime/onednn_ops.h"

namespace strata::tools {

using nlohmann::json;

int benchFallback(const BenchFallbackOpts& o) {
  if (o.tokens < 1 || o.reps < 1) fail("bench fallback: --tokens and --reps must be at least 1");
  // The whole graph outside any region: every node is a fallback node, so
  // the op mix is the model's own (the regions of a Llama-style model leave
  // none; a GPT-2 export's LayerNorm, GELU, attention math and Conv1D Gemms
  // are what a model oneDNN has to carry looks like).
  const ops::GraphDef g = graph::normalize(models::loadModel(o.model));
  ops::GraphDef fb = g;
  for (auto& n : fb.nodes) n.attrs["kernel"] = json{{"engine", "fallback"}};
  runtime::Executor ref(g);
  runtime::Executor dnn(fb, [](const std::string& name) -> abi::PackedKernel {
    fail("bench fallback: no generated kernels here (asked for '{}')", name);
  });
  const int64_t vocab = g.meta.value("vocab_size", int64_t(2));
  std::mt19937 rng(1);
  runtime::TensorMap in;
  for (const auto& v : g.inputs) {
    if (v.dtype != ops::DType::I64 || v.shape.size() != 2)
      fail("bench fallback: {} has input '{}' ({}); only [batch, sequence] token ids are filled in", o.model, v.name,
           ops::dtypeName(v.dtype));
    ops::Tensor t(ops::DType::I64, {1, o.tokens});
    for (int64_t i = 0; i < o.tokens; ++i)
      t.mut<int64_t>()[i] = v.name.find("position") != std::string::npos ? i : int64_t(rng() % vocab);
    in[v.name] = t;
  }
  auto time = [&](const runtime::Executor& e) {
    runtime::TensorMap out = e.run(in);  // warm-up: primitives built, pages touched
    e.setProfiling(true);
    for (int64_t r = 0; r < o.reps; ++r) out = e.run(in);
    e.setProfiling(false);
    return std::make_pair(e.takeProfile(), out);
  };
  auto [refProfile, refOut] = time(ref);
  auto [dnnProfile, dnnOut] = time(dnn);
  double maxErr = 0;
  for (const auto& [name, t] : refOut) {
    const ops::Tensor& d = dnnOut.at(name);
    if (t.dtype() != ops::DType::F32) continue;
    double scale = 1e-30;
    for (int64_t i = 0; i < t.numel(); ++i) scale = std::max(scale, (double)std::fabs(t.data<float>()[i]));
    for (int64_t i = 0; i < t.numel(); ++i)
      maxErr = std::max(maxErr, std::fabs(t.data<float>()[i] - d.data<float>()[i]) / scale);
  }
  // Which op types oneDNN covers (by their nodes).
  std::map<std::string, bool> covered;
  for (const auto& n : g.nodes) covered[n.op] = covered[n.op] || runtime::OneDnnOps::covers(n);
  json rows = json::array();
  double refCovered = 0, dnnCovered = 0, refAll = 0, dnnAll = 0;
  std::printf("model: %s, one sequence of %lld tokens, %lld timed runs per engine\n", o.model.c_str(),
              (long long)o.tokens, (long long)o.reps);
  std::printf("%-20s %7s %14s %14s %8s\n", "op", "nodes", "reference ms", "oneDNN ms", "ratio");
  for (const auto& [op, row] : refProfile) {
    auto it = dnnProfile.find(op);
    const double r = row.ms / o.reps, d = it == dnnProfile.end() ? 0 : it->second.ms / o.reps;
    const bool c = covered.count(op) && covered[op];
    refAll += r, dnnAll += d;
    if (c) refCovered += r, dnnCovered += d;
    if (c)
      std::printf("%-20s %7lld %14.3f %14.3f %7.1fx\n", op.c_str(), (long long)(row.calls / o.reps), r, d,
                  d > 0 ? r / d : 0.0);
    else
      std::printf("%-20s %7lld %14.3f %14s %8s\n", op.c_str(), (long long)(row.calls / o.reps), r, "reference", "");
    rows.push_back({{"op", op}, {"nodes", row.calls / o.reps}, {"reference_ms", r}, {"engine_ms", d},
                    {"onednn", c}});
  }
  std::printf("%-20s %7s %14.3f %14.3f %7.1fx\n", "ops oneDNN covers", "", refCovered, dnnCovered,
              dnnCovered > 0 ? refCovered / dnnCovered : 0.0);
  std::printf("%-20s %7s %14.3f %14.3f %7.1fx\n", "every node", "", refAll, dnnAll, dnnAll > 0 ? refAll / dnnAll : 0.0);
  std::printf("outputs: max relative difference %.2e (oneDNN engine against the reference)\n", maxErr);
  if (!o.jsonPath.empty()) {
    std::ofstream f(o.jsonPath);
    f << json{{"model", o.model}, {"tokens", o.tokens}, {"reps", o.reps}, {"rows", rows},
              {"covered_reference_ms", refCovered}, {"covered_onednn_ms", dnnCovered}, {"all_reference_ms", refAll},
              {"all_engine_ms", dnnAll}, {"max_rel_diff", maxErr}}
             .dump(1);
    if (!f) fail("bench fallback: cannot write {}", o.jsonPath);
  }
  return 0;
}

}  // namespace strata::tools
