// strata: the command-line entry point (run | inspect). Thin: parses flags,
// calls into models/ (loading), graph/ (normalization) and runtime/
// (execution), prints results. Every strata::Error becomes "error: ..." on
// stderr and exit status 1.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <filesystem>
#include <map>

#include "graph/Pipeline.h"
#include "tools/bench_decode.h"
#include "tools/bench_fallback.h"
#include "tools/bench_predict.h"
#include "tools/bench_kernels.h"
#include "tools/devices_command.h"
#include "tools/bench_serve.h"
#include "tools/bench_serve_plot.h"
#include "tools/flag_ranges.h"
#include "tools/cpu_model.h"
#include "tools/cuda_model.h"
#include "tools/run_command.h"
#include "tools/serve_command.h"
#include "graph/RegionReport.h"
#include "runtime/onednn_ops.h"
#include "models/model_source.h"
#include "models/random_model.h"
#include "models/tokenizer.h"
#include "codegen/targets/cpu/KernelSet.h"
#include "codegen/targets/cuda/KernelSet.h"
#include "runtime/artifact.h"
#include "runtime/executor.h"
#include "runtime/generate.h"
#include "runtime/paged_generate.h"

using namespace strata;
using nlohmann::json;

namespace {

// " N cubins (kernels.<unit>.cubin)," when ptxas assembled the set in `dir`,
// else "" (PTX only): for the summary line after a cuda compile.
std::string cubinsWritten(const std::string& dir) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string f = e.path().filename().string();
    n += f.starts_with("kernels.") && f.ends_with(".cubin");
  }
  return n ? fmt::format(" {} cubins (kernels.<unit>.cubin),", n) : "";
}

ops::GraphDef openGraph(const std::string& path) {
  ops::GraphDef g = models::loadModel(path);
  return graph::normalize(g);
}

void printRegions(const json& r) {
  std::printf("%-6s %-16s %-36s %-32s %14s %12s\n", "layer", "region", "detail", "output shape", "flops", "weights");
  for (const auto& x : r["regions"]) {
    std::string layer = x["layer"].is_null() ? x["stage"].get<std::string>() : std::to_string(x["layer"].get<int64_t>());
    std::string shape = x["outputs"].empty() ? "" : x["outputs"][0]["shape"].dump();
    std::string flops = fmt::format("{:.0f}", x["flops"].get<double>());
    std::printf("%-6s %-16s %-36s %-32s %14s %12s\n", layer.c_str(), x["kind"].get<std::string>().c_str(),
                x["detail"].get<std::string>().c_str(), shape.c_str(), flops.c_str(),
                fmt::format("{:.1f} KiB", x["weight_bytes"].get<int64_t>() / 1024.0).c_str());
  }
  std::printf("flops: per token; paged_attention per token per context token; lm_head per sequence\n");
  std::printf("layers: %lld; regions:", (long long)r["layers"].get<int64_t>());
  for (const auto& [k, n] : r["counts"].items()) std::printf(" %s %lld", k.c_str(), (long long)n.get<int64_t>());
  std::printf("\nfallback (not in any region): %s\n",
              r["fallback"].empty() ? "none" : "op, engine on --backend cpu (oneDNN for f32 tensors, else reference), node");
  for (const auto& f : r["fallback"])
    std::printf("  %-18s %-10s %s\n", f["op"].get<std::string>().c_str(), f["engine"].get<std::string>().c_str(),
                f["name"].get<std::string>().c_str());
}

int inspect(const std::string& model, bool asJson, bool asMlir, bool regions) {
  if (regions) {
    const ops::GraphDef g = graph::formRegions(models::loadModel(model));
    json r = graph::describeRegions(g);
    // Which engine runs each node outside the regions on --backend cpu.
    for (auto& f : r["fallback"]) {
      auto n = std::find_if(g.nodes.begin(), g.nodes.end(), [&](const ops::NodeDef& x) { return x.name == f["name"].get<std::string>(); });
      f["engine"] = n != g.nodes.end() && runtime::OneDnnOps::covers(*n) ? "oneDNN" : "reference";
    }
    if (asJson) std::cout << r.dump(2) << "\n";
    else printRegions(r);
    return 0;
  }
  ops::GraphDef g = openGraph(model);
  if (asMlir) {
    std::cout << graph::printMlir(g);
    return 0;
  }
  json j;
  j["source"] = g.source;
  std::map<std::string, int64_t> hist;
  for (const auto& n : g.nodes) ++hist[n.op];
  j["op_histogram"] = hist;
  j["nodes"] = g.nodes.size();
  int64_t params = 0, bytes = 0;
  for (const auto& w : g.weights) { params += ops::numel(w.shape); bytes += (int64_t)w.nbytes; }
  for (const auto& c : g.constants) { params += c.value.numel(); bytes += (int64_t)c.value.nbytes(); }
  j["parameters"] = params;
  j["parameter_bytes"] = bytes;
  j["weights"] = g.weights.size();
  auto values = [](const std::vector<ops::ValueInfo>& vs) {
    json a = json::array();
    for (const auto& v : vs) {
      json s = json::array();
      for (const auto& d : v.shape) s.push_back(d.isStatic() ? json(d.value) : json(d.str()));
      a.push_back({{"name", v.name}, {"dtype", ops::dtypeName(v.dtype)}, {"shape", v.shapeKnown ? s : json(nullptr)}});
    }
    return a;
  };
  j["inputs"] = values(g.inputs);
  j["outputs"] = values(g.outputs);
  std::set<std::string> syms;
  for (const auto* vs : {&g.inputs, &g.outputs})
    for (const auto& v : *vs)
      for (const auto& d : v.shape)
        if (!d.isStatic()) syms.insert(d.str());
  j["symbolic_dims"] = syms;
  j["meta"] = g.meta;
  if (asJson) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("model: %s\n", g.source.c_str());
  auto printValues = [](const char* what, const json& vs) {
    for (const auto& v : vs) std::printf("  %-6s %-28s %-5s %s\n", what, v["name"].get<std::string>().c_str(),
                                         v["dtype"].get<std::string>().c_str(), v["shape"].dump().c_str());
  };
  printValues("input", j["inputs"]);
  printValues("output", j["outputs"]);
  std::printf("symbolic dims: %s\n", j["symbolic_dims"].dump().c_str());
  std::printf("parameters: %lld (%.2f MiB in %zu weights + %zu constants)\n", (long long)params, bytes / 1048576.0,
              g.weights.size(), g.constants.size());
  std::printf("nodes: %zu\n", g.nodes.size());
  for (const auto& [op, n] : hist) std::printf("  %-18s %lld\n", op.c_str(), (long long)n);
  return 0;
}

struct CompileOpts {
  std::string model, target = "cpu", out, dtype = "bf16";
  int64_t blockSize = 16;
  tile::CudaModelTuning tuning;  // cuda tuning blockings (empty: the defaults)
};

int compile(const CompileOpts& o) {
  const std::string cuda = "cuda:";
  const bool gpu = o.target.rfind(cuda, 0) == 0;
  const bool xe = o.target == "xe:pvc" || o.target == "xe:bmg";
  if (o.target.rfind("xe", 0) == 0 && !xe)
    fail("--target {}: Intel Xe targets are xe:pvc (Data Center GPU Max) and xe:bmg (Arc B-series); xe:dg2 (Arc "
         "A-series, sub-group 8) has no lowering yet",
         o.target);
  if (o.target != "cpu" && o.target != cuda + "sm_90" && !xe)
    fail("--target {}: strata compiles for 'cpu' (the host CPU), 'cuda:sm_90' (NVIDIA Hopper) and 'xe:pvc' / "
         "'xe:bmg' (Intel GPUs)",
         o.target);
  if (runtime::isArtifact(o.model)) fail("{} is already a compiled artifact", o.model);
  tools::flagInRange<int64_t>("--block-size", o.blockSize, 1, tools::kMaxBlockSizeFlag);
  if (!gpu && (!o.tuning.gemvBlock.empty() || !o.tuning.decodeBlock.empty() || !o.tuning.mediumBlock.empty() ||
               !o.tuning.pagedDecodeBlock.empty() || o.tuning.unfusedNorms || o.tuning.unfusedRopeKvWrite))
    fail("--gemv-block, --decode-block, --medium-block, --paged-decode-block, --unfused-norms and "
         "--unfused-rope-kv-write tune the cuda kernels; --target {} has none",
         o.target);
  if (xe) {
    tools::writeXeModel(o.model, o.target, o.dtype, o.blockSize, o.out, /*verbose=*/true);
    std::fprintf(stderr, "wrote %s/plan.json, kernels.spv, kernels.json, kernels.mlir (weights stay in %s); strata run "
                 "runs it on an Intel GPU of that part (Level Zero)\n",
                 o.out.c_str(), o.model.c_str());
    return 0;
  }
  if (gpu) {
    tools::writeCudaModel(o.model, o.target.substr(cuda.size()), o.dtype, o.blockSize, o.tuning, o.out, /*verbose=*/true);
    std::fprintf(stderr, "wrote %s/plan.json, kernels.ptx,%s kernels.json, kernels.mlir (weights stay in %s)\n",
                 o.out.c_str(), cubinsWritten(o.out).c_str(), o.model.c_str());
    return 0;
  }
  ops::GraphDef g = graph::formRegions(models::loadModel(o.model));
  tile::KernelPlan plan = tile::planCpuKernels(std::move(g), {"", o.blockSize});
  std::fprintf(stderr, "compiling %zu kernels for %s (KV block size %lld) into %s...\n", plan.kernels.size(),
               plan.graph.meta["kernels"]["target"].get<std::string>().c_str(), (long long)o.blockSize, o.out.c_str());
  tile::writeCpuArtifact(plan, o.out, models::sourceNotes(o.model));
  std::fprintf(stderr, "wrote %s/plan.json, kernels.so, kernels.mlir (weights stay in %s)\n", o.out.c_str(),
               o.model.c_str());
  return 0;
}

// The GEMM kernel set for a GPU target (codegen/Artifact.h): what the GPU
// conformance tests and `strata-gpu bench` load on a machine without LLVM.
int compileKernels(const std::string& target, const std::string& out, const std::string& gemv,
                   const std::string& decode, const std::string& medium, const std::string& prefill,
                   const std::string& attention, const std::string& pagedDecode, const std::vector<std::string>& only) {
  const std::string prefix = "cuda:";
  if (target.rfind(prefix, 0) != 0) fail("--target {}: kernel sets are built for cuda:sm_90", target);
  tile::GemmBlocking v, d, m, p;
  if (!gemv.empty()) v = tile::parseGemmBlocking(gemv, "--gemv-block");
  if (!decode.empty()) d = tile::parseGemmBlocking(decode, "--decode-block");
  if (!medium.empty()) m = tile::parseGemmBlocking(medium, "--medium-block");
  if (!prefill.empty()) p = tile::parseGemmBlocking(prefill, "--prefill-block");
  tile::KernelSetSpec set{tile::cudaGemmKernelSet(d, m, p, v), tile::cudaRmsNormKernelSet(), tile::cudaRopeKernelSet(),
                              tile::cudaAttentionKernelSet(attention), tile::cudaPagedDecodeKernelSet(pagedDecode),
                              tile::cudaPagedPrefillKernelSet(), tile::cudaGatherRowsKernelSet(),
                              tile::cudaKvWriteKernelSet(),    tile::cudaArgmaxKernelSet(),
                              tile::cudaTopKKernelSet(),       tile::cudaRepetitionPenaltyKernelSet()};
  set.ropeKvWrites = tile::cudaRopeKvWriteKernelSet();
  if (!only.empty()) {
    // A partial set for tuning sweeps: the kinds not named are left out.
    auto named = [&](const char* kind) { return std::find(only.begin(), only.end(), kind) != only.end(); };
    auto keep = [&](const char* kind, auto& kernels) {
      if (!named(kind)) kernels.clear();
    };
    // "gemv" / "decode" / "medium" / "prefill" / "tall" / "large": the
    // GEMMs' GEMV kernels / the 16-bit row classes (each with its variants,
    // by the rows they end at) alone, any of them; "quant": the GEMMs over
    // block-quantized weights (their GEMVs and mma forms) alone ("gemm"
    // takes every GEMM).
    const bool gemvs = named("gemv"), decodes = named("decode"), mediums = named("medium"), prefills = named("prefill"),
               talls = named("tall"), larges = named("large"), quants = named("quant");
    if ((gemvs || decodes || mediums || prefills || talls || larges || quants) && !named("gemm"))
      std::erase_if(set.gemms, [&](const tile::GemmKernelSpec& s) {
        const bool rowClass = !s.gemv && !s.int8Blocks();
        const bool decodeClass = rowClass && s.maxRows == tile::kCudaDecodeRows;
        const bool mediumClass = rowClass && s.maxRows > tile::kCudaDecodeRows && s.maxRows <= tile::kCudaMediumRows;
        const bool prefillClass = rowClass && s.maxRows > tile::kCudaMediumRows && s.maxRows <= tile::kCudaPrefillRows;
        const bool tallClass = rowClass && s.maxRows > tile::kCudaPrefillRows && s.maxRows <= tile::kCudaTallRows;
        const bool largeClass = rowClass && (s.maxRows == 0 || s.maxRows > tile::kCudaTallRows);
        return !(gemvs && s.gemv && !s.int8Blocks()) && !(quants && s.int8Blocks()) && !(decodes && decodeClass) &&
               !(mediums && mediumClass) && !(prefills && prefillClass) && !(talls && tallClass) &&
               !(larges && largeClass);
      });
    else
      keep("gemm", set.gemms);
    keep("rms_norm", set.norms), keep("rope", set.ropes), keep("attention", set.attentions);
    keep("paged_decode", set.pagedDecodes), keep("paged_prefill", set.pagedPrefills);
    keep("gather_rows", set.gathers), keep("kv_write", set.kvWrites), keep("argmax", set.argmaxes);
    keep("rope_kv_write", set.ropeKvWrites);
    keep("top_k", set.topks), keep("repetition_penalty", set.penalties);
  }
  std::fprintf(stderr,
               "compiling %zu GEMM, %zu RMSNorm, %zu RoPE, %zu attention, %zu paged decode, %zu paged prefill, %zu "
               "row gather, %zu KV write, %zu RoPE + KV write, %zu argmax, %zu top-k and %zu repetition penalty kernels "
               "for %s into %s...\n",
               set.gemms.size(), set.norms.size(), set.ropes.size(), set.attentions.size(), set.pagedDecodes.size(),
               set.pagedPrefills.size(), set.gathers.size(), set.kvWrites.size(), set.ropeKvWrites.size(), set.argmaxes.size(), set.topks.size(),
               set.penalties.size(), target.c_str(),
               out.c_str());
  tile::writeCudaKernels(set, target.substr(prefix.size()), out);
  std::fprintf(stderr, "wrote %s/kernels.ptx,%s kernels.json, kernels.mlir\n", out.c_str(),
               cubinsWritten(out).c_str());
  return 0;
}

int makeModel(const std::string& config, const std::string& out, uint64_t seed) {
  models::LlamaConfig c = models::readLlamaConfig(config);
  int64_t params = models::writeRandomCheckpoint(c, out, seed);
  std::fprintf(stderr, "wrote %s/config.json and model.safetensors: %s, %lld parameters (%.1f MiB f32), seed %llu\n",
               out.c_str(), c.modelType.c_str(), (long long)params, params * 4 / 1048576.0, (unsigned long long)seed);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"strata: LLM inference with a fused-kernel compiler.\n"
               "MODEL is a Hugging Face Llama-family folder (config.json + safetensors), an .onnx file or a .gguf file (llama.cpp's format)."};
  app.require_subcommand(1);
  tools::RunOpts ro;
  auto* runCmd = app.add_subcommand("run", "Generate tokens from a prompt");
  tools::addRunOptions(runCmd, ro, /*text=*/true);

  tools::ServeOpts so;
  auto* serveCmd = app.add_subcommand(
      "serve", "Serve a model over HTTP with the OpenAI API (/v1/completions, /v1/chat/completions, /v1/models, /health, "
               "/metrics): continuous batching over the paged KV cache");
  tools::addServeOptions(serveCmd, so);

  CompileOpts co;
  auto* compileCmd = app.add_subcommand(
      "compile", "Compile a model into an artifact directory (plan.json and kernels) that `strata run DIR` (cpu) or "
                 "`strata-gpu run DIR` (cuda) runs");
  compileCmd->add_option("MODEL", co.model, "HF model folder, .onnx or .gguf file")->required();
  compileCmd->add_option("--target", co.target,
                         "Target to compile for: cpu (the host CPU), cuda:sm_90 (NVIDIA Hopper: plan.json and a "
                         "kernels.ptx that the runtime-only strata-gpu runs) or xe:pvc / xe:bmg (Intel GPUs: plan.json "
                         "and a SPIR-V kernel set, kernels.spv, that strata run takes to an Intel GPU of that part)")
      ->capture_default_str();
  compileCmd->add_option("--dtype", co.dtype, "cuda: storage type of weights, activations and the KV cache (bf16, f16)")
      ->capture_default_str();
  compileCmd->add_option("-o,--output", co.out, "Artifact directory to write")->required();
  compileCmd->add_option("--block-size", co.blockSize, "Tokens per KV cache block the kernels are built for")
      ->capture_default_str();
  compileCmd->add_option("--gemv-block", co.tuning.gemvBlock,
                         "cuda: the GEMV kernels' blocking MAxRxKxWv[:B], as for compile-kernels (for tuning)");
  compileCmd->add_option("--decode-block", co.tuning.decodeBlock,
                         "cuda: the decode GEMM class's blocking (up to 16 rows), as for compile-kernels (for tuning)");
  compileCmd->add_option("--medium-block", co.tuning.mediumBlock,
                         "cuda: the medium GEMM class's blocking, as for compile-kernels (for tuning)");
  compileCmd->add_option("--paged-decode-block", co.tuning.pagedDecodeBlock,
                         "cuda: the paged decode blocking NxS[xW], as for compile-kernels (for tuning)");
  compileCmd->add_flag("--unfused-norms", co.tuning.unfusedNorms,
                       "cuda: keep each RMSNorm its own kernel instead of the prologue of the GEMMs that read it (to "
                       "measure the fusion)");
  compileCmd->add_flag("--unfused-rope-kv-write", co.tuning.unfusedRopeKvWrite,
                       "cuda: keep each layer's q / k RoPE and KV write kernels apart instead of one fused kernel (to "
                       "measure the fusion)");

  std::string ckTarget = "cuda:sm_90", ckOut, ckGemv, ckDecode, ckMedium, ckPrefill, ckAttention, ckPagedDecode;
  std::vector<std::string> ckOnly;
  auto* compileKernelsCmd = app.add_subcommand(
      "compile-kernels", "Compile the GPU kernel set (GEMMs: bf16/f16, decode, medium and prefill blockings, bias, "
                         "residual, SwiGLU epilogues, and GEMVs and GEMMs over llama.cpp's block-quantized weights; RMSNorm: f32/bf16/f16; RoPE and RoPE + paged KV write: bf16/f16; FlashAttention-2: "
                         "bf16/f16, causal and not, head dim 64 and 128) for a GPU into a directory (kernels.ptx, kernels.json, kernels.mlir) that the "
                         "runtime-only strata-gpu and strata_cuda_tests load");
  compileKernelsCmd->add_option("--target", ckTarget, "GPU target: cuda:sm_90 (Hopper)")->capture_default_str();
  compileKernelsCmd->add_option("-o,--output", ckOut, "Directory to write")->required();
  compileKernelsCmd->add_option("--gemv-block", ckGemv,
                                "Block shape MAxRxKxWv[:B] of the GEMV kernels of [N, K] weights (no dots: MA rows of A "
                                "and R weight rows a program, K steps of K elements over W warps; meant for up to MA "
                                "rows; :B: room for B programs an SM, registers capped to fit) instead of the defaults " +
                                    std::string(tile::kCudaGemvBlocking) + " (SwiGLU " +
                                    tile::kCudaSwigluGemvBlocking + ") (for tuning)");
  compileKernelsCmd->add_option("--decode-block", ckDecode,
                                "Block shape MxNxKxW[s|g|gf|gc][@S][:B] (block M, N, K, warps; s: the warps split K; g: "
                                "warpgroup dots staged by TMA, gf: the same with each K step's dots left in flight, gc: "
                                "staged by cp.async, for [N, K] weights ([K, N] kernels keep their "
                                "defaults); @S: S buffers of "
                                "operands staged through shared memory, none without it; :B: room for B programs an SM, "
                                "registers capped to fit) of the decode kernels (up to "
                                "16 rows; one row with [N, K] weights takes the GEMV form, --gemv-block) instead of the default "
                                "16x32x128x4s@4 (@8 with [N, K] weights but SwiGLU) (for tuning)");
  compileKernelsCmd->add_option("--medium-block", ckMedium,
                                "Block shape of the kernels for 17..128 rows instead of the defaults 64x32x64x4gc@6 "
                                "([N, K] weights; SwiGLU up to 64 rows, built to split K) and 64x32x128x4s@3 ([K, N]), "
                                "leaving out the class's variants (split K up to 64 rows at N <= 4096, deep K at "
                                "N <= 4096, wide N, 64x64x64x4gf@5 at 65-128 rows and N <= 6144) (for tuning)");
  compileKernelsCmd->add_option("--prefill-block", ckPrefill,
                                "Block shape of the kernels for more than 128 rows instead of the defaults: [N, K] "
                                "weights 64x128x64x4gf@4 up to 256 rows, 128x128x64x8gf@5 up to 1024, 128x256x64x8gf@4 above (SwiGLU: "
                                "128x128x64x8gf@4, from 65 rows); [K, N] 64x128x64x4@3 (residual: 64x128x32x4@4) and 128x128x32x4@4 (SwiGLU: "
                                "128x64x32x4@4), leaving out the prefill class's variants (narrow and wide N, deep K) "
                                "(for tuning)");
  compileKernelsCmd->add_option("--attention-block", ckAttention,
                                "Blocking MxNxW@S[q|g] of the attention kernels (block M query rows, N keys per step, W "
                                "warps, S buffers; q: mma.sync with Q read from shared memory every step; g: warpgroup "
                                "dots, 16 rows per warp; neither: mma.sync with Q in registers; :B after it: room for B "
                                "blocks per SM) for every attention kernel instead of the defaults (128x64x8@2g:2, "
                                "head dim 64 64x64x4@2g:4, and a 64-row variant of each 128-row kernel for "
                                "small grids, 64x64x4@2g:2, which a given "
                                "blocking leaves out) (for tuning)");
  compileKernelsCmd->add_option("--paged-decode-block", ckPagedDecode,
                                "Blocking NxS[xW] of the paged decode kernels (N keys per step, whole pages of "
                                "16; S buffers, S - 1 steps copied ahead; W warps a program sharing each step's keys, "
                                "at least 16 keys each, default 1) instead of the default 32x3 (for tuning)");
  compileKernelsCmd
      ->add_option("--only", ckOnly,
                   "Compile only these kinds of kernels, comma-separated (a partial set, for tuning sweeps; decode / "
                   "medium / prefill / tall / large: the GEMMs' decode class (up to 16 rows) / medium class (17-128 "
                   "rows) / prefill class ([N, K] weights, 129-256 rows) / tall class (up to 1024 rows) / large "
                   "class (more rows) alone, each with its variants; gemv: the 16-bit GEMMs' GEMV kernels alone; quant: the "
                   "GEMMs over block-quantized weights alone, their GEMVs too)")
      ->delimiter(',')
      ->check(CLI::IsMember({"gemm", "decode", "medium", "prefill", "tall", "large", "gemv", "quant", "rms_norm", "rope", "attention", "paged_decode",
                             "paged_prefill", "gather_rows", "kv_write", "rope_kv_write", "argmax", "top_k",
                             "repetition_penalty"}));

  std::string inspectModel;
  bool inspectJson = false, inspectMlir = false, inspectRegions = false;
  bool devicesJson = false;
  auto* devicesCmd = app.add_subcommand(
      "devices", "List what this machine runs strata's kernels on: the CPU and its kernel target, CUDA GPUs, Intel GPUs "
                 "(Level Zero discovery), or why a kind has none");
  devicesCmd->add_flag("--json", devicesJson, "Print JSON instead of lines");
  auto* inspectCmd = app.add_subcommand("inspect", "Show a model's inputs, outputs, symbolic dims, ops and parameters");
  inspectCmd->add_option("MODEL", inspectModel, "HF model folder, .onnx or .gguf file")->required();
  inspectCmd->add_flag("--json", inspectJson, "Print JSON");
  inspectCmd->add_flag("--mlir", inspectMlir, "Print the normalized graph in the graph dialect (strata-opt input)");
  inspectCmd->add_flag("--regions", inspectRegions,
                       "List the fused regions per layer (kind, shapes, FLOPs per token, bytes) and fallback ops");

  std::string mmConfig, mmOut;
  uint64_t mmSeed = 0;
  auto* makeCmd = app.add_subcommand("make-model", "Write an HF checkpoint with random weights for a Llama/Mistral/Qwen2 config.json");
  makeCmd->add_option("--config", mmConfig, "HF config.json to take the architecture from")->required();
  makeCmd->add_option("-o,--output", mmOut, "Directory to write config.json and model.safetensors into")->required();
  makeCmd->add_option("--seed", mmSeed, "Random seed")->capture_default_str();

  std::string benchJson;
  double benchSeconds = 0.3;
  auto* benchCmd = app.add_subcommand("bench", "Benchmarks");
  benchCmd->require_subcommand(1);
  auto* benchKernelsCmd = benchCmd->add_subcommand(
      "kernels", "Generated CPU kernels in one run: GEMM f32 GFLOP/s vs oneDNN on Llama-shaped problems, paged attention GFLOP/s");
  benchKernelsCmd->add_option("--json", benchJson, "Also write the results to this JSON file");
  benchKernelsCmd->add_option("--seconds", benchSeconds, "Time spent per case and library")->capture_default_str();
  std::string benchOnly;
  benchKernelsCmd->add_option("--only", benchOnly, "Run one part: gemm or attention (default: both)")
      ->check(CLI::IsMember({"gemm", "attention"}));

  tools::BenchDecodeOpts bd;
  tools::BenchServeOpts bs;
  auto* benchServeCmd = benchCmd->add_subcommand(
      "serve", "Load an OpenAI-compatible server (--url, or `strata serve MODEL` started for the run) at each "
               "concurrency or request rate: TTFT, TPOT, ITL, latency, throughput, goodput; table, JSON, PNG");
  tools::addBenchServeOptions(benchServeCmd, bs);
  tools::BenchFallbackOpts bf;
  auto* benchFallbackCmd = benchCmd->add_subcommand(
      "fallback", "A model's nodes outside the regions through oneDNN (as --backend cpu runs them) against the "
                  "reference kernels: time per op type and the ratio (every node of the graph counts as outside)");
  benchFallbackCmd->add_option("--model", bf.model, "HF folder, .gguf or .onnx")->required();
  benchFallbackCmd->add_option("--tokens", bf.tokens, "Tokens of the one sequence run")->capture_default_str();
  benchFallbackCmd->add_option("--reps", bf.reps, "Timed runs per engine (after one warm-up)")->capture_default_str();
  benchFallbackCmd->add_option("--json", bf.jsonPath, "Also write the results to this JSON file");
  auto* benchDecodeCmd = benchCmd->add_subcommand(
      "decode", "Decode speed on the CPU through the generated kernels (tokens/s) against the memory roofline "
                "(weight bytes per step / copy bandwidth measured in the same run)");
  benchDecodeCmd->add_option("--model", bd.model, "HF folder, .gguf or .onnx (default: a random model from --config)");
  benchDecodeCmd->add_option("--config", bd.config,
                             "HF config.json of the random model (default: models/configs/llama-100m.json, ~124M parameters)");
  benchDecodeCmd->add_option("--batch", bd.batches, "Sequences decoded together (repeatable)")->capture_default_str();
  benchDecodeCmd->add_option("--prompt-tokens", bd.promptTokens, "Prompt length per sequence")->capture_default_str();
  benchDecodeCmd->add_option("--tokens", bd.decodeTokens, "Decode steps timed")->capture_default_str();
  benchDecodeCmd->add_option("--block-size", bd.blockSize, "KV cache block size")->capture_default_str();
  benchDecodeCmd->add_option("--json", bd.jsonPath, "Also write the results to this JSON file");
  benchDecodeCmd->add_flag("--profile", bd.profile,
                           "Then time each region kind alone in a prefill and in the decode steps of each batch");

  tools::BenchPredictOpts bp;
  auto* benchPredictCmd = benchCmd->add_subcommand(
      "predict", "A roofline model of a decode step on an Intel GPU: each kernel's bytes, DPAS operations and "
                 "predicted time, and the decode step and tokens/s at each batch, from the part's peak DPAS rate and "
                 "memory bandwidth (vendor data sheets; launches and caches not modeled)");
  benchPredictCmd->add_option("MODEL", bp.model, "HF folder, .onnx or .gguf (its shapes only)")->required();
  benchPredictCmd->add_option("--target", bp.target, "xe:pvc (Data Center GPU Max 1550), xe:bmg (Arc B580) or xe:dg2 (Arc A770)")
      ->capture_default_str();
  benchPredictCmd->add_option("--batches", bp.batches, "Sequences decoded together")->capture_default_str();
  benchPredictCmd->add_option("--context", bp.context, "Tokens in each sequence's KV cache")->capture_default_str();
  benchPredictCmd->add_option("--json", bp.jsonPath, "Also write the results to this JSON file");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    // Bad flags are errors like any other: one line, status 1 (README).
    std::fprintf(stderr, "error: %s\nRun with --help for more information.\n", e.what());
    return 1;
  }
  try {
    if (runCmd->parsed()) return tools::runCommand(ro);
    if (serveCmd->parsed()) return tools::serveCommand(so);
    if (makeCmd->parsed()) return makeModel(mmConfig, mmOut, mmSeed);
    if (compileCmd->parsed()) return compile(co);
    if (compileKernelsCmd->parsed()) return compileKernels(ckTarget, ckOut, ckGemv, ckDecode, ckMedium, ckPrefill, ckAttention, ckPagedDecode, ckOnly);
    if (devicesCmd->parsed()) return tools::devicesCommand(devicesJson);
    if (inspectCmd->parsed()) return inspect(inspectModel, inspectJson, inspectMlir, inspectRegions);
    if (benchKernelsCmd->parsed()) {
      tools::flagInRange("--seconds", benchSeconds, 0.001, 3600.0);
      return tools::benchKernels(benchJson, benchSeconds, benchOnly);
    }
    if (benchDecodeCmd->parsed()) return tools::benchDecode(bd);
    if (benchFallbackCmd->parsed()) return tools::benchFallback(bf);
    if (benchPredictCmd->parsed()) return tools::benchPredict(bp);
    if (benchServeCmd->parsed()) return tools::benchServe(bs, tools::writeServePlot);
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
