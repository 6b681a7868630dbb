#include "runtime/gpu_kernels.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <sstream>

#include "ops/error.h"

namespace strata::runtime {

namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read {} (make a kernel set with `strata compile-kernels --target cuda:sm_90 -o DIR`)", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A kernel's block-quantized GPU form (kernels.json quant_*; block 0: a
// plain kernel), checked against what the GPU forms are (abi::gpuInt8Form):
// blocks of 16 or 32 values with f16 scales per block (quant_super = the
// block) or f32 ones.
abi::Int8BlockForm quantForm(const nlohmann::json& k, const std::string& what) {
  const int64_t block = k.value("quant_block", int64_t(0));
  if (!block) return abi::Int8BlockForm{0};
  abi::Int8BlockForm f{block, k.value("quant_offsets", false), k.value("quant_nibbles", false),
                       k.value("quant_super", int64_t(0)), false};
  if ((block != 16 && block != 32) || (f.superBlock && f.superBlock != block))
    fail("{}: quantized blocks of 16 or 32 values with f16 (quant_super = the block) or f32 scales (got quant_block {}, "
         "quant_super {})",
         what, block, f.superBlock);
  return f;
}

// The fields every kind of kernel has, from its manifest entry `k`.
template <typename Kernel>
Kernel named(const nlohmann::json& k, const Executable& module) {
  Kernel r;
  r.name = k.at("name");
  r.dtype = k.at("dtype");
  r.threads = k.at("threads");
  r.sharedBytes = k.value("shared_bytes", 0);
  r.function = module.kernel(r.name);
  return r;
}

// named<Kernel> plus the fields every attention kernel has.
template <typename Kernel>
Kernel namedAttention(const nlohmann::json& k, const Executable& module) {
  Kernel a = named<Kernel>(k, module);
  a.heads = k.at("heads");
  a.kvHeads = k.at("kv_heads");
  a.headDim = k.at("head_dim");
  a.scale = k.at("scale");
  return a;
}

nlohmann::json readManifest(const std::string& path) {
  try {
    return nlohmann::json::parse(readFile(path));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not valid JSON: {}", path, e.what());
  }
}

}  // namespace

std::string GpuKernelSet::manifestTarget(const std::string& dir) {
  const std::string path = dir + "/kernels.json";
  const nlohmann::json m = readManifest(path);
  if (!m.contains("target") || !m["target"].is_string()) fail("{}: no \"target\" string", path);
  return m["target"].get<std::string>();
}

std::unique_ptr<GpuKernelSet> GpuKernelSet::load(const Device& device, const std::string& dir) {
  const std::string manifestPath = dir + "/kernels.json";
  const nlohmann::json m = readManifest(manifestPath);
  std::unique_ptr<GpuKernelSet> set(new GpuKernelSet(device));
  try {
    set->target_ = m.at("target").get<std::string>();
    if (std::string why = device.cannotRun(set->target_); !why.empty()) fail("{}: {}", manifestPath, why);
    // The cubins ptxas assembled at compile time when there are (no JIT):
    // one per compile unit (cubin.files), or one for the whole set
    // (cubin.file: sets written before the per-unit cubins); the PTX when
    // there are none or this driver refuses one.
    bool perUnit = false;
    if (m.contains("spirv")) {
      // An xe set: one SPIR-V module of every kernel (a Level Zero or the
      // OpenCL test device builds it at load).
      set->modules_.push_back(device.loadExecutable(readFile(dir + "/" + m["spirv"].get<std::string>())));
    } else if (m.contains("cubin")) {
      const nlohmann::json& c = m["cubin"];
      perUnit = c.contains("files");
      const std::vector<std::string> files =
          perUnit ? c.at("files").get<std::vector<std::string>>() : std::vector<std::string>{c.at("file")};
      for (const std::string& f : files) {
        const std::string cubin = dir + "/" + f;
        try {
          set->modules_.push_back(device.loadExecutable(readFile(cubin)));
        } catch (const Error& e) {
          std::fprintf(stderr, "warning: %s: %s; JIT-compiling the PTX instead\n", cubin.c_str(), e.what());
          set->modules_.clear();
          perUnit = false;
          break;
        }
      }
    }
    if (set->modules_.empty()) set->modules_.push_back(device.loadExecutable(readFile(dir + "/kernels.ptx")));
    // The module that holds manifest entry k's kernel (and its combine).
    auto moduleOf = [&](const nlohmann::json& k) -> const Executable& {
      if (!perUnit) return *set->modules_[0];
      const size_t i = k.at("cubin").get<size_t>();
      if (i >= set->modules_.size())
        fail("{}: kernel '{}' names cubin {} of {}", manifestPath, k.value("name", "?"), i, set->modules_.size());
      return *set->modules_[i];
    };
    // Kernels compiled to wait for the previous grid at entry may be
    // launched while it runs (Device::allowEarlyLaunch).
    const bool waits = m.value("griddepcontrol_wait", false);
    // A GEMV's quantize_rows kernels: in their own entry's module, or (sets
    // compiled before 2026-12-01) in the GEMV's.
    std::map<std::string, const nlohmann::json*> quantizeEntries;
    for (const auto& k : m.at("kernels"))
      if (k.value("kind", "") == "quantize_rows") quantizeEntries[k.at("name").get<std::string>()] = &k;
    for (const auto& k : m.at("kernels")) {
      const std::string kind = k.value("kind", "gemm");
      if (kind == "quantize_rows") continue;  // launched with its GEMVs
      if (kind == "rms_norm") {
        auto r = named<GpuRmsNormKernel>(k, moduleOf(k));
        r.blockN = k.at("block_n");
        r.laneVector = k.value("lane_vector", 0);
        set->norms_.push_back(r);
        continue;
      }
      if (kind == "elementwise") {
        auto e = named<GpuElementwiseKernel>(k, moduleOf(k));
        e.blockN = k.at("block_n");
        e.cols = k.at("cols");
        set->elementwises_.push_back(e);
        continue;
      }
      if (kind == "rope") {
        auto r = named<GpuRopeKernel>(k, moduleOf(k));
        r.heads = k.at("heads");
        r.kvHeads = k.value("kv_heads", 0);
        r.headDim = k.at("head_dim");
        r.headsPerProgram = k.value("heads_per_program", 1);
        if (r.headsPerProgram <= 0 || r.heads % r.headsPerProgram || r.kvHeads < 0 || r.kvHeads % r.headsPerProgram)
          fail("{}: rope kernel '{}' takes {} heads a program, which must divide its {} heads and {} KV heads",
               manifestPath, r.name, r.headsPerProgram, r.heads, r.kvHeads);
        set->ropes_.push_back(r);
        continue;
      }
      if (kind == "attention") {
        auto a = namedAttention<GpuAttentionKernel>(k, moduleOf(k));
        a.causal = k.at("causal");
        a.blockM = k.at("block_m");
        a.blockN = k.at("block_n");
        a.tma = k.value("tma", false);
        set->attentions_.push_back(a);
        continue;
      }
      if (kind == "paged_decode") {
        // Since 2026-11-22 the kernel takes o and stores it itself at one
        // split; an older kernel's signature lacks o.
        if (!k.value("stores_one_split", false))
          fail("kernel set {}: paged decode kernel {} comes from an older strata (no o argument); compile the set "
               "again",
               dir, k.at("name").get<std::string>());
        auto a = namedAttention<GpuPagedDecodeKernel>(k, moduleOf(k));
        a.pageSize = k.at("page_size");
        a.blockN = k.at("block_n");
        a.combine = moduleOf(k).kernel(k.at("combine").get<std::string>());
        a.combineThreads = k.at("combine_threads");
        a.combineSplitsPerStep = k.value("combine_splits_per_step", int64_t(0));
        set->pagedDecodes_.push_back(a);
        continue;
      }
      if (kind == "paged_prefill") {
        auto a = namedAttention<GpuPagedPrefillKernel>(k, moduleOf(k));
        a.pageSize = k.at("page_size");
        a.blockM = k.at("block_m");
        set->pagedPrefills_.push_back(a);
        continue;
      }
      if (kind == "gather_rows") {
        auto g = named<GpuGatherRowsKernel>(k, moduleOf(k));
        g.blockN = k.at("block_n");
        g.outDtype = k.value("out_dtype", g.dtype);
        g.quant = quantForm(k, fmt::format("{}: gather_rows {}", manifestPath, g.name));
        if (g.quant.block && (g.dtype != "i8" || g.blockN % g.quant.block))
          fail("{}: gather_rows {}: a quantized gather reads i8 blocks, block_n whole blocks (got dtype {}, block_n {})",
               manifestPath, g.name, g.dtype, g.blockN);
        set->gathers_.push_back(g);
        continue;
      }
      if (kind == "kv_write") {
        auto w = named<GpuKvWriteKernel>(k, moduleOf(k));
        w.kvHeads = k.at("kv_heads");
        w.headDim = k.at("head_dim");
        w.pageSize = k.at("page_size");
        set->kvWrites_.push_back(w);
        continue;
      }
      if (kind == "rope_kv_write") {
        auto w = named<GpuRopeKvWriteKernel>(k, moduleOf(k));
        w.heads = k.at("heads");
        w.kvHeads = k.at("kv_heads");
        w.headDim = k.at("head_dim");
        w.pageSize = k.at("page_size");
        w.headsPerProgram = k.at("heads_per_program");
        if (w.headsPerProgram <= 0 || w.heads % w.headsPerProgram || w.kvHeads % w.headsPerProgram)
          fail("{}: rope_kv_write kernel '{}' takes {} heads a program, which must divide its {} heads and {} KV heads",
               manifestPath, w.name, w.headsPerProgram, w.heads, w.kvHeads);
        set->ropeKvWrites_.push_back(w);
        continue;
      }
      if (kind == "argmax") {
        auto a = named<GpuArgmaxKernel>(k, moduleOf(k));
        a.blockN = k.at("block_n");
        set->argmaxes_.push_back(a);
        continue;
      }
      if (kind == "topk") {
        auto t = named<GpuTopKKernel>(k, moduleOf(k));
        t.blockN = k.at("block_n");
        t.candidates = k.at("candidates");
        set->topks_.push_back(t);
        continue;
      }
      if (kind == "repetition_penalty") {
        set->penalties_.push_back(named<GpuRepetitionPenaltyKernel>(k, moduleOf(k)));
        continue;
      }
      if (kind == "attention_combine") continue;  // launched with its paged decode kernel
      if (kind != "gemm") fail("{}: kernel '{}' of unknown kind '{}'", manifestPath, k.value("name", "?"), kind);
      auto g = named<GpuGemmKernel>(k, moduleOf(k));
      g.weightsNK = k.at("weights") == "nk";
      g.bias = k.at("bias");
      g.residual = k.at("residual");
      g.swiglu = k.at("swiglu");
      g.blockM = k.at("block_m");
      g.blockN = k.at("block_n");
      g.blockK = k.at("block_k");
      g.maxRows = k.value("max_rows", 0);
      g.minCols = k.value("min_cols", 0);
      g.maxCols = k.value("max_cols", 0);
      g.minDepth = k.value("min_depth", 0);
      g.minRows = k.value("min_rows", 0);
      g.stages = k.value("stages", 0);
      g.tma = k.value("tma", false);
      g.tmaStore = k.value("tma_store", false);
      g.splitKPrograms = k.value("split_k_programs", false);
      g.gemv = k.value("gemv", false);
      g.quant = quantForm(k, fmt::format("{}: gemm {}", manifestPath, g.name));
      if (g.quantized() && (!(g.gemv || g.stages) || !g.weightsNK || g.tma || g.splitKPrograms))
        fail("{}: gemm {}: quantized weights are [N, K] under a GEMV or a staged mma kernel (no TMA, no K split)",
             manifestPath, g.name);
      g.int8Activations = k.value("int8_activations", false);
      if (g.int8Activations) {
        if (!g.quantized()) fail("{}: gemm {}: i8 activations go with quantized weights", manifestPath, g.name);
        auto quantizeKernel = [&](const std::string& name) {
          auto e = quantizeEntries.find(name);
          KernelHandle h = (e == quantizeEntries.end() ? moduleOf(k) : moduleOf(*e->second)).kernel(name);
          if (waits) device.allowEarlyLaunch(h);
          return h;
        };
        g.quantize = quantizeKernel(k.at("quantize").get<std::string>());
        if (k.contains("norm_quantize")) {
          g.normQuantize = quantizeKernel(k.at("norm_quantize").get<std::string>());
          g.normQuantizes = true;
        }
        g.quantizeThreads = k.at("quantize_threads");
        g.quantizeBlocks = k.at("quantize_blocks");
        if (g.quantizeThreads <= 0 || g.quantizeBlocks <= 0)
          fail("{}: gemm {}: quantize_threads and quantize_blocks must be positive", manifestPath, g.name);
      }
      if (g.splitKPrograms)
        g.residentPerSm = device.residentPrograms(g.function, unsigned(g.threads), unsigned(g.sharedBytes));
      set->gemms_.push_back(g);
    }
    if (waits)
      for (const auto& k : m.at("kernels"))
        device.allowEarlyLaunch(moduleOf(k).kernel(k.at("name").get<std::string>()));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: malformed kernel manifest: {}", manifestPath, e.what());
  }
  return set;
}

}  // namespace strata::runtime
