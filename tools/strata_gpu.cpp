// strata-gpu: the runtime-only GPU tool (links no LLVM; it runs on the GPU
// machine next to an artifact from `strata compile --target cuda:sm_90` or
// a kernel set from `strata compile-kernels`).
//   strata-gpu run DIR --prompt-ids 0,53,308 [strata run's options]
// generates on the GPU (token ids in and out);
//   strata-gpu bench-model DIR [--random-weights SEED] [--sampling] [--json FILE]
// times the whole model: time to first token and decode ms/step;
//   strata-gpu bench-gemm --kernels DIR [--rows M...] [--epilogue-rows M...] [--json FILE]
// times the generated bf16 GEMM kernels on Llama-3-8B projection shapes
// (weights [N, K] as HF Linear stores them; M = 1, 16, 64, 256, 2048 by
// default), the SwiGLU kernel on the MLP's gate / up projection and the
// residual projections (M = 256, 2048 by default) with CUDA events;
//   strata-gpu bench-rmsnorm --kernels DIR [--json FILE]
// the generated RMSNorm kernels at hidden 4096 (Llama-3-8B) for 1..4096 rows;
//   strata-gpu bench-rope --kernels DIR [--json FILE]
// the generated RoPE kernels on Llama-3-8B's q and k rows for 1..4096 tokens;
//   strata-gpu bench-attention --kernels DIR [--json FILE]
// the FlashAttention-2 kernels at 16k tokens per launch (batch x seq, seq
// 1k..16k), head dim 64 and 128, causal and not, Llama-3-8B's GQA
// prefill (seq 128..8k, batch 1) and its paged prefill (512..8k);
//   strata-gpu bench-paged-decode --kernels DIR [--batches B...] [--contexts T...] [--json FILE]
// the paged decode kernels on Llama-3-8B's attention (32 / 8 heads, dim
// 128, pages of 16), by default at batch 1..64 and context 1k..32k;
//   strata-gpu bench-elementwise --kernels ARTIFACT [--json FILE]
// the fused elementwise kernels of a compiled graph at rows 1..4096;
//   strata-gpu bench-all --kernels DIR --out DIR [--artifact DIR --config FILE [--check]]
// every table of docs/benchmarks.md against its peers in one call (through
// tools/gpu/bench_all.py: the peers are PyTorch, Triton and transformers).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include "ops/error.h"
#include "ops/tensor.h"
#include "ops/row_forms.h"
#include "runtime/artifact.h"
#include "runtime/devices/registry.h"
#include "runtime/gpu_executor.h"
#include "runtime/gpu_kernels.h"
#include "runtime/model_bench.h"
#include "tools/gpu_kernel_bench.h"
#include "tools/run_loop.h"
#include "tools/bench_serve.h"
#include "tools/flag_ranges.h"
#include "tools/serve_command.h"

using namespace strata;

namespace {

using namespace tools;

// What `strata-gpu run` adds to `strata run`'s options: debugging aids.
struct GpuRunOpts {
  bool noGraphs = false;
  std::string dumpDir, dumpMatch;
};

// `strata-gpu run DIR`: `strata run` on an artifact compiled for the GPU,
// with token ids in and out (this tool links no tokenizer).
int runModel(const tools::RunOpts& o, const GpuRunOpts& g) {
  tools::checkRunOpts(o);
  runtime::Artifact a = runtime::loadArtifact(o.model, {o.weightsDir});
  tools::checkArtifactRun(o, a);
  const int64_t blockSize = a.blockSize;
  runtime::GpuModel m = runtime::loadGpuModel(
      std::move(a), {.verbose = !o.json, .graphs = !g.noGraphs, .dumpDir = g.dumpDir, .dumpMatch = g.dumpMatch});
  return tools::runPrompts(*m.exec, blockSize, o, {{o.promptIds, tools::parsePromptIds(o.promptIds)}}, {});
}

struct BenchModelOpts {
  std::string dir, weightsDir, json;
  std::optional<uint64_t> randomWeights;
  std::vector<int64_t> prompts = {128, 2048}, batches = {1, 8, 32};
  int64_t context = 128, steps = 32;
  bool profile = false, noGraphs = false, sampling = false;
};


// End to end on the GPU: time to first token (one prefill step of a
// batch-1 prompt, logits on the host) and decode ms per step at each
// batch, next to the HBM roofline (weight bytes a step reads / a device
// copy's bandwidth, bytes read + written, measured here).
int benchModel(const BenchModelOpts& o) {
  for (int64_t p : o.prompts) tools::flagInRange<int64_t>("--prompts", p, 1, tools::kMaxTokensFlag);
  for (int64_t b : o.batches) tools::flagInRange<int64_t>("--batches", b, 1, tools::kMaxSeqsFlag);
  tools::flagInRange<int64_t>("--context", o.context, 1, tools::kMaxTokensFlag);
  tools::flagInRange<int64_t>("--steps", o.steps, 1, tools::kMaxTokensFlag);
  runtime::Artifact a = runtime::loadArtifact(o.dir, {o.weightsDir, !o.randomWeights});
  if (!a.gpu()) fail("{} is compiled for {}, not for a GPU", o.dir, a.target);
  const int64_t bs = a.blockSize;
  runtime::GpuModel m =
      runtime::loadGpuModel(std::move(a), {.randomWeights = o.randomWeights, .verbose = true, .graphs = !o.noGraphs});
  const runtime::GpuExecutor& exec = *m.exec;
  runtime::Device& dev = *m.device;
  const size_t copyBytes = size_t(1) << 30;
  void* src = dev.allocate(copyBytes);
  void* dst = dev.allocate(copyBytes);
  dev.copy(dst, src, copyBytes);
  float copyMs = 1e30f;
  for (int r = 0; r < 5; ++r) copyMs = std::min(copyMs, dev.timeMs([&] { dev.copy(dst, src, copyBytes); }));
  dev.release(src, copyBytes);
  dev.release(dst, copyBytes);
  const double bw = 2.0 * copyBytes / (copyMs * 1e-3);
  const ops::GraphDef& g = exec.graph();
  // Block-quantized weights are on the GPU in their GPU form, the rest in
  // the storage type.
  std::string quantized;
  for (const auto& w : g.weights)
    if (!w.quant.empty() && quantized.find(w.quant) == std::string::npos) quantized += (quantized.empty() ? "" : "/") + w.quant;
  std::printf("device: %s; model %s, %.2f GB of weights on the GPU (%s%s%s)%s; KV blocks of %lld; copy %.0f GB/s\n",
              dev.description().c_str(), g.source.c_str(), exec.weightBytes() / 1e9, quantized.c_str(),
              quantized.empty() ? "" : " blocks, the rest ", ops::dtypeName(exec.cacheDType()),
              o.randomWeights ? " (random)" : "", (long long)bs, bw / 1e9);
  runtime::timePagedModel(exec, 1, 16, 2, bs, 0);  // warm-up: first launches, the pool's blocks
  nlohmann::json ttft = nlohmann::json::array(), decode = nlohmann::json::array();
  // Best of 3, and the first of them apart: the first prompt of a length
  // also pays what the runtime does once per shape (tensor maps over its
  // activations, buffers).
  std::printf("%-28s %10s %10s\n", "time to first token", "ms", "first ms");
  for (int64_t p : o.prompts) {
    double best = 1e30, first = 0;
    for (int r = 0; r < 3; ++r) {
      const double ms = runtime::timePagedModel(exec, 1, p, 0, bs, r).prefillMs;
      if (r == 0) first = ms;
      best = std::min(best, ms);
    }
    std::printf("  prompt %-19lld %10.2f %10.2f\n", (long long)p, best, first);
    ttft.push_back({{"prompt_tokens", p}, {"ttft_ms", best}, {"first_ttft_ms", first}});
  }
  std::printf("%-8s %-10s %12s %12s %12s %10s\n", "batch", "context", "ms/step", "tokens/s", "roofline ms", "fraction");
  for (int64_t b : o.batches) {
    runtime::ModelTiming t = runtime::timePagedModel(exec, b, o.context, o.steps, bs, 1);
    const double roof =
        runtime::weightBytesPerStep(g, b, ops::dtypeSize(exec.cacheDType())) / bw * 1e3;
    std::printf("%-8lld %-10lld %12.2f %12.1f %12.2f %10.2f\n", (long long)b, (long long)o.context, t.msPerStep,
                b * 1e3 / t.msPerStep, roof, roof / t.msPerStep);
    decode.push_back({{"batch", b}, {"context", o.context}, {"steps", o.steps}, {"ms_per_step", t.msPerStep},
                      {"tokens_per_s", b * 1e3 / t.msPerStep}, {"roofline_ms", roof}});
  }
  std::printf("roofline: weight bytes one decode step reads / copy bandwidth; fraction = roofline / measured\n");
  nlohmann::json sampled = nlohmann::json::array();
  if (o.sampling) {
    // Two common settings; random weights give flat logits, so top-p's
    // nucleus is most of the vocabulary and every draw takes its whole
    // row (the worst case), while top-k settles on the candidates.
    // A repetition penalty over the prompt and the tokens so far is a
    // third, on greedy draws.
    runtime::SamplingParams topK, topP, penalty;
    topK.greedy = topP.greedy = false;
    topK.temperature = topP.temperature = 0.8f;
    topK.topK = 50;
    topP.topP = 0.95f;
    penalty.repetitionPenalty = 1.2f;
    std::printf("%-8s %-32s %12s\n", "batch", "sampling", "ms/step");
    for (int64_t b : o.batches)
      for (const auto& [label, p] : {std::pair{"temperature 0.8, top-k 50", topK}, std::pair{"temperature 0.8, top-p 0.95", topP},
                                     std::pair{"greedy, repetition penalty 1.2", penalty}}) {
        runtime::ModelTiming t = runtime::timePagedModel(exec, b, o.context, o.steps, bs, 1, {}, p);
        std::printf("%-8lld %-32s %12.2f\n", (long long)b, label, t.msPerStep);
        sampled.push_back({{"batch", b}, {"context", o.context}, {"steps", o.steps}, {"sampling", label},
                           {"ms_per_step", t.msPerStep}});
      }
  }
  nlohmann::json profiles = nlohmann::json::array();
  if (o.profile) {
    for (int64_t p : o.prompts)
      profiles.push_back(runtime::profilePagedModel(exec, fmt::format("prefill of {} tokens", p), 1, p, 0, bs));
    for (int64_t b : o.batches)
      profiles.push_back(runtime::profilePagedModel(exec, fmt::format("decode at batch {}", b), b, o.context, 4, bs));
  }
  writeResults(o.json, {{"profiles", profiles}, {"device", dev.description()}, {"model", g.source}, {"dtype", ops::dtypeName(exec.cacheDType())},
                        {"weight_bytes", exec.weightBytes()}, {"random_weights", o.randomWeights.has_value()},
                        {"graphs", !o.noGraphs},
                        {"block_size", bs}, {"copy_gbs", bw / 1e9}, {"ttft", ttft}, {"decode", decode},
                        {"decode_sampled", sampled}});
  return 0;
}

struct BenchAllOpts {
  std::string kernels, out, dtype = "bf16", artifact, config, scripts;
  int reps = 0;
  bool check = false;
};

// Every GPU table against its peers in one call. The peers (cuBLAS and
// Triton through PyTorch, SDPA, HF transformers) are Python libraries, so
// the driver is tools/gpu/bench_all.py, run with this binary as strata's
// side; the process becomes the script (its output and exit status are
// the call's). The scripts are the repository's tools/gpu: --scripts, or
// the nearest folder above this binary that has them (build/bin, .gpu/x).
int benchAll(const BenchAllOpts& o) {
  namespace fs = std::filesystem;
  const fs::path self = fs::read_symlink("/proc/self/exe");
  const fs::path inRepo = fs::path("tools") / "gpu" / "bench_all.py";
  fs::path script = o.scripts.empty() ? fs::path() : fs::path(o.scripts) / "bench_all.py";
  for (fs::path d = self.parent_path(); script.empty() && d.has_relative_path(); d = d.parent_path())
    if (fs::is_regular_file(d / inRepo)) script = d / inRepo;
  if (script.empty() || !fs::is_regular_file(script))
    throw Error(fmt::format("bench-all: no {} (pass --scripts with the repository's tools/gpu folder)",
                            script.empty() ? inRepo.string() + " in a folder above " + self.string() : script.string()));
  if (o.artifact.empty() != o.config.empty())
    throw Error("bench-all: --artifact and --config go together (the compiled model and the HF config it came from)");
  if (o.check && o.artifact.empty()) throw Error("bench-all: --check needs --artifact and --config (the model to check)");
  std::vector<std::string> args{"python3", script.string(), "--strata-gpu", self.string(), "--kernels", o.kernels,
                                "--out", o.out, "--dtype", o.dtype};
  if (o.reps > 0) args.insert(args.end(), {"--reps", std::to_string(o.reps)});
  if (!o.artifact.empty()) args.insert(args.end(), {"--artifact", o.artifact, "--config", o.config});
  if (o.check) args.push_back("--check");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  execvp("python3", argv.data());
  throw Error(fmt::format("bench-all: could not run python3 {}: {}", script.string(), std::strerror(errno)));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"strata-gpu: run models compiled for the GPU and time strata's generated GPU kernels (runtime only, no LLVM)"};
  app.require_subcommand(1);
  std::string dir, json, dtype = "bf16";
  int reps = 20;
  // Every bench subcommand takes the same options.
  auto benchCommand = [&](const char* name, const char* what, const char* dtypes) {
    CLI::App* c = app.add_subcommand(name, what);
    c->add_option("--kernels", dir, "Kernel set directory from `strata compile-kernels`")->required();
    c->add_option("--json", json, "Also write the results to this JSON file");
    c->add_option("--dtype", dtype, dtypes)->capture_default_str();
    c->add_option("--reps", reps, "Timed launches per case")->capture_default_str();
    return c;
  };
  auto* bench = benchCommand("bench-gemm",
                             "Time the generated GEMM kernels on Llama-3-8B projection shapes (decode M = 1..256, "
                             "prefill M = 2048) and the SwiGLU kernel on the gate / up projection",
                             "bf16 or f16");
  std::vector<int64_t> gemmRows{1, 16, 64, 256, 2048}, gemmEpilogueRows{256, 2048};
  bench->add_option("--rows", gemmRows, "M of the plain GEMMs")->capture_default_str();
  bench->add_option("--epilogue-rows", gemmEpilogueRows, "M of the SwiGLU and residual GEMMs")->capture_default_str();
  int64_t gemmKSplits = 0;
  bench->add_option("--k-splits", gemmKSplits,
                    "Split K across this many programs in kernels that can (compiled with a +k blocking) instead "
                    "of the runtime's choice (for tuning)");
  bool coldWeights = false;
  bench->add_flag("--cold-weights", coldWeights,
                  "Cycle each case's launches through copies of its weights (256 MiB in all at least), so they are "
                  "read from HBM as in a model's decode step, not from the L2 where one copy fits");
  bool tightA = false;
  bench->add_flag("--tight-a", tightA,
                  "Give each case an A buffer of just M rows, so that TMA kernels zero-fill the rows of their last "
                  "row block past M (by default A holds whole row blocks, as the model's activations do)");
  auto* norm = benchCommand("bench-rmsnorm", "Time the generated RMSNorm kernels at hidden 4096 (1..4096 rows)",
                            "f32, bf16 or f16");
  auto* rope = benchCommand("bench-rope", "Time the generated RoPE kernels on Llama-3-8B q and k rows (1..4096 tokens)",
                            "bf16 or f16");
  auto* attn = benchCommand("bench-attention",
                            "Time the generated FlashAttention-2 kernels (head dim 64 / 128, seq 1k..16k, causal and "
                            "not; Llama-3-8B GQA prefill, contiguous and from a paged cache)",
                            "bf16 or f16");
  bool everyKernel = false;
  attn->add_flag("--every-kernel", everyKernel,
                 "Time every attention and paged prefill kernel of the set on its shapes, not only the one the "
                 "runtime picks for each case (for tuning)");
  double splitScale = 1;
  auto* paged = benchCommand("bench-paged-decode",
                             "Time the generated paged decode attention kernels (Llama-3-8B: 32 / 8 heads, dim 128, "
                             "pages of 16) at batch 1..64, context 1k..32k",
                             "bf16 or f16");
  paged->add_option("--split-scale", splitScale, "Multiply the runtime's KV split count by this (for tuning)")
      ->capture_default_str();
  std::vector<int64_t> pagedBatches{1, 8, 32, 64}, pagedContexts{1024, 4096, 16384, 32768};
  paged->add_option("--batches", pagedBatches, "Sequences per step")->capture_default_str();
  paged->add_option("--contexts", pagedContexts, "Tokens of context per sequence (whole pages)")->capture_default_str();
  int64_t minCols = 4096;
  auto* elementwise = benchCommand("bench-elementwise",
                                   "Time the fused elementwise kernels of a compiled graph (--kernels: its artifact "
                                   "directory) at rows 1..4096",
                                   "ignored: the artifact's storage type");
  elementwise->add_option("--min-cols", minCols, "Only rows at least this wide")->capture_default_str();
  BenchAllOpts ba;
  auto* all = app.add_subcommand(
      "bench-all", "Every GPU table against its peers in one call (GEMM vs cuBLAS and Triton, RMSNorm vs PyTorch, RoPE "
                   "vs HF eager, attention vs SDPA FlashAttention-2 and cuDNN, paged decode vs the copy bandwidth and "
                   "SDPA; with --artifact and --config the model end to end vs HF eager): runs "
                   "tools/gpu/bench_all.py, which needs python3 with torch, triton and transformers");
  all->add_option("--kernels", ba.kernels, "Kernel set directory from `strata compile-kernels`")->required();
  all->add_option("--out", ba.out, "Directory for each table's JSON")->required();
  all->add_option("--dtype", ba.dtype, "bf16 or f16")->capture_default_str();
  all->add_option("--reps", ba.reps, "Timed launches per case (default: each table's own)");
  all->add_option("--artifact", ba.artifact, "A model from `strata compile MODEL --target cuda:sm_90`: also time it end to end");
  all->add_option("--config", ba.config, "The HF config.json the artifact was compiled from (for HF eager)");
  all->add_flag("--check", ba.check,
                "With --artifact: also check the model's log-probabilities against HF in f32 with the same random "
                "weights, beside HF's bf16 (tools/gpu/check_model.py; writes the weights under "
                "/tmp/strata-check-weights, 16 GB for Llama-3-8B)");
  all->add_option("--scripts", ba.scripts,
                  "The repository's tools/gpu folder (default: the nearest folder above this binary that has it)");
  tools::RunOpts ro;
  ro.backend = "cuda";
  auto* run = app.add_subcommand("run", "Generate tokens on the GPU from a model compiled with `strata compile MODEL "
                                        "--target cuda:sm_90 -o DIR` (token ids in and out)");
  tools::addRunOptions(run, ro, /*text=*/false);
  GpuRunOpts gro;
  run->add_flag("--no-graphs", gro.noGraphs, "Run every step node by node (no CUDA graph replays of repeated steps)");
  run->add_option("--dump-values", gro.dumpDir,
                  "Debugging: write the node outputs of every step as f32 under DIR/step-<n>/ with an index.json of "
                  "their shapes (steps then run without graphs)");
  run->add_option("--dump-match", gro.dumpMatch,
                  "With --dump-values: only the outputs whose names match this regular expression (default: all; "
                  "e.g. 'mlp\\.residual' for each layer's output)");
  BenchModelOpts bm;
  tools::ServeOpts so;
  auto* serveCmd = app.add_subcommand(
      "serve", "Serve an artifact from `strata compile` (cuda or cpu) with the OpenAI API, the runtime alone: the "
               "flags of `strata serve`");
  tools::addServeOptions(serveCmd, so);
  tools::BenchServeOpts bso;
  auto* benchServeCmd = app.add_subcommand(
      "bench-serve", "`strata bench serve` (load on an OpenAI-compatible server: TTFT, TPOT, ITL, throughput; table and "
                     "JSON): --url URL, or ARTIFACT served by `strata-gpu serve` for the run. No --plot here (no cairo): "
                     "draw the JSON with `strata bench serve --compare FILE --plot PNG`");
  tools::addBenchServeOptions(benchServeCmd, bso);
  auto* benchModelCmd = app.add_subcommand(
      "bench-model", "End to end on the GPU: time to first token and decode ms/step of a compiled model against the "
                     "HBM roofline");
  benchModelCmd->add_option("DIR", bm.dir, "Artifact directory from strata compile --target cuda:sm_90")->required();
  benchModelCmd->add_option("--weights", bm.weightsDir, "The model's weight files are now in this folder");
  benchModelCmd->add_option("--random-weights", bm.randomWeights,
                            "Make the weights on the host with this seed instead of reading the files (which then "
                            "need not exist)");
  benchModelCmd->add_option("--prompts", bm.prompts, "Prompt lengths for time to first token")->capture_default_str();
  benchModelCmd->add_option("--batches", bm.batches, "Batch sizes for decode")->capture_default_str();
  benchModelCmd->add_option("--context", bm.context, "Prompt tokens of each sequence before decode")
      ->capture_default_str();
  benchModelCmd->add_option("--steps", bm.steps, "Timed decode steps")->capture_default_str();
  benchModelCmd->add_option("--json", bm.json, "Also write the results to this JSON file");
  benchModelCmd->add_flag("--no-graphs", bm.noGraphs,
                          "Launch every kernel of every step instead of replaying repeated steps as CUDA graphs");
  benchModelCmd->add_flag("--sampling", bm.sampling,
                          "Also time decode with sampling (temperature 0.8 with top-k 50, and with top-p 0.95; greedy with a "
                          "repetition penalty of 1.2) at "
                          "each batch");
  benchModelCmd->add_flag("--profile", bm.profile,
                          "Also time every region on the GPU (one prefill per prompt length, decode steps per batch)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  try {
    if (run->parsed()) return runModel(ro, gro);
    if (serveCmd->parsed()) return tools::serveArtifact(so);
    if (benchServeCmd->parsed()) return tools::benchServe(bso, nullptr);
    if (benchModelCmd->parsed()) return benchModel(bm);
    tools::flagInRange("--reps", reps, 1, 1000000);
    if (bench->parsed()) return benchGemm(dir, json, dtype, reps, gemmRows, gemmEpilogueRows, gemmKSplits, coldWeights, tightA);
    if (norm->parsed()) return benchRmsNorm(dir, json, dtype, reps);
    if (rope->parsed()) return benchRope(dir, json, dtype, reps);
    if (attn->parsed()) return benchAttention(dir, json, dtype, reps, everyKernel);
    if (paged->parsed()) return benchPagedDecode(dir, json, dtype, reps, splitScale, pagedBatches, pagedContexts);
    if (elementwise->parsed()) return benchElementwise(dir, json, reps, minCols);
    if (all->parsed()) return benchAll(ba);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
