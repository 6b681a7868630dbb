#include "runtime/cuda_kernels.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <sstream>

#include "ops/abi.h"
#include "ops/error.h"
#include "ops/tensor.h"

namespace strata::runtime {

namespace {

// One launch of kernel k (its function, threads and dynamic shared memory)
// over `grid` with its argument slots.
template <typename Kernel>
void launchOne(const CudaDevice& device, const Kernel& k, std::array<unsigned, 3> grid, const abi::KernelArgs& args) {
  device.launch(k.function, grid, {unsigned(k.threads), 1, 1}, unsigned(k.sharedBytes),
                const_cast<void**>(args.slots().data()));
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read {} (make a kernel set with `strata compile-kernels --target cuda:sm_90 -o DIR`)", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The fields every kind of kernel has, from its manifest entry `k`.
template <typename Kernel>
Kernel named(const nlohmann::json& k, const CudaDevice::Module& module) {
  Kernel r;
  r.name = k.at("name");
  r.dtype = k.at("dtype");
  r.threads = k.at("threads");
  r.sharedBytes = k.value("shared_bytes", 0);
  r.function = module.function(r.name);
  return r;
}

// named<Kernel> plus the fields every attention kernel has.
template <typename Kernel>
Kernel namedAttention(const nlohmann::json& k, const CudaDevice::Module& module) {
  Kernel a = named<Kernel>(k, module);
  a.heads = k.at("heads");
  a.kvHeads = k.at("kv_heads");
  a.headDim = k.at("head_dim");
  a.scale = k.at("scale");
  return a;
}

// Throws unless `p` is a device buffer aligned to `align` bytes (`kernel`
// and `what` name the launch and the buffer).
void checkBuffer(const std::string& kernel, const void* p, const char* what, uintptr_t align) {
  if (!p) fail("{}: the kernel needs the {} buffer", kernel, what);
  if (reinterpret_cast<uintptr_t>(p) % align) fail("{}: the {} buffer must be {}-byte aligned", kernel, what, align);
}

}  // namespace

std::unique_ptr<CudaKernelSet> CudaKernelSet::load(const CudaDevice& device, const std::string& dir) {
  const std::string manifestPath = dir + "/kernels.json";
  nlohmann::json m;
  try {
    m = nlohmann::json::parse(readFile(manifestPath));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not valid JSON: {}", manifestPath, e.what());
  }
  std::unique_ptr<CudaKernelSet> set(new CudaKernelSet(device));
  try {
    set->target_ = m.at("target").get<std::string>();
    int cc = device.computeCapability();
    if (set->target_ != "sm_" + std::to_string(cc))
      fail("{}: kernels built for {} cannot run on {} (sm_{})", manifestPath, set->target_, device.deviceName(), cc);
    // The cubins ptxas assembled at compile time when there are (no JIT):
    // one per compile unit (cubin.files), or one for the whole set
    // (cubin.file: sets written before the per-unit cubins); the PTX when
    // there are none or this driver refuses one.
    bool perUnit = false;
    if (m.contains("cubin")) {
      const nlohmann::json& c = m["cubin"];
      perUnit = c.contains("files");
      const std::vector<std::string> files =
          perUnit ? c.at("files").get<std::vector<std::string>>() : std::vector<std::string>{c.at("file")};
      for (const std::string& f : files) {
        const std::string cubin = dir + "/" + f;
        try {
          set->modules_.push_back(device.loadModule(readFile(cubin)));
        } catch (const Error& e) {
          std::fprintf(stderr, "warning: %s: %s; JIT-compiling the PTX instead\n", cubin.c_str(), e.what());
          set->modules_.clear();
          perUnit = false;
          break;
        }
      }
    }
    if (set->modules_.empty()) set->modules_.push_back(device.loadModule(readFile(dir + "/kernels.ptx")));
    // The module that holds manifest entry k's kernel (and its combine).
    auto moduleOf = [&](const nlohmann::json& k) -> const CudaDevice::Module& {
      if (!perUnit) return *set->modules_[0];
      const size_t i = k.at("cubin").get<size_t>();
      if (i >= set->modules_.size())
        fail("{}: kernel '{}' names cubin {} of {}", manifestPath, k.value("name", "?"), i, set->modules_.size());
      return *set->modules_[i];
    };
    // Kernels compiled to wait for the previous grid at entry may be
    // launched while it runs (CudaDevice::allowProgrammaticLaunch).
    const bool waits = m.value("griddepcontrol_wait", false);
    for (const auto& k : m.at("kernels")) {
      const std::string kind = k.value("kind", "gemm");
      if (kind == "rms_norm") {
        auto r = named<CudaRmsNormKernel>(k, moduleOf(k));
        r.blockN = k.at("block_n");
        r.laneVector = k.value("lane_vector", 0);
        set->norms_.push_back(r);
        continue;
      }
      if (kind == "elementwise") {
        auto e = named<CudaElementwiseKernel>(k, moduleOf(k));
        e.blockN = k.at("block_n");
        e.cols = k.at("cols");
        set->elementwises_.push_back(e);
        continue;
      }
      if (kind == "rope") {
        auto r = named<CudaRopeKernel>(k, moduleOf(k));
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
        auto a = namedAttention<CudaAttentionKernel>(k, moduleOf(k));
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
        auto a = namedAttention<CudaPagedDecodeKernel>(k, moduleOf(k));
        a.pageSize = k.at("page_size");
        a.blockN = k.at("block_n");
        a.combine = moduleOf(k).function(k.at("combine").get<std::string>());
        a.combineThreads = k.at("combine_threads");
        a.combineSplitsPerStep = k.value("combine_splits_per_step", int64_t(0));
        set->pagedDecodes_.push_back(a);
        continue;
      }
      if (kind == "paged_prefill") {
        auto a = namedAttention<CudaPagedPrefillKernel>(k, moduleOf(k));
        a.pageSize = k.at("page_size");
        a.blockM = k.at("block_m");
        set->pagedPrefills_.push_back(a);
        continue;
      }
      if (kind == "gather_rows") {
        auto g = named<CudaGatherRowsKernel>(k, moduleOf(k));
        g.blockN = k.at("block_n");
        g.outDtype = k.value("out_dtype", g.dtype);
        set->gathers_.push_back(g);
        continue;
      }
      if (kind == "kv_write") {
        auto w = named<CudaKvWriteKernel>(k, moduleOf(k));
        w.kvHeads = k.at("kv_heads");
        w.headDim = k.at("head_dim");
        w.pageSize = k.at("page_size");
        set->kvWrites_.push_back(w);
        continue;
      }
      if (kind == "argmax") {
        auto a = named<CudaArgmaxKernel>(k, moduleOf(k));
        a.blockN = k.at("block_n");
        set->argmaxes_.push_back(a);
        continue;
      }
      if (kind == "topk") {
        auto t = named<CudaTopKKernel>(k, moduleOf(k));
        t.blockN = k.at("block_n");
        t.candidates = k.at("candidates");
        set->topks_.push_back(t);
        continue;
      }
      if (kind == "repetition_penalty") {
        set->penalties_.push_back(named<CudaRepetitionPenaltyKernel>(k, moduleOf(k)));
        continue;
      }
      if (kind == "attention_combine") continue;  // launched with its paged decode kernel
      if (kind != "gemm") fail("{}: kernel '{}' of unknown kind '{}'", manifestPath, k.value("name", "?"), kind);
      auto g = named<CudaGemmKernel>(k, moduleOf(k));
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
      if (g.splitKPrograms)
        g.residentPerSm = device.residentPrograms(g.function, unsigned(g.threads), unsigned(g.sharedBytes));
      set->gemms_.push_back(g);
    }
    if (waits)
      for (const auto& k : m.at("kernels")) device.allowProgrammaticLaunch(moduleOf(k).function(k.at("name")));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: malformed kernel manifest: {}", manifestPath, e.what());
  }
  return set;
}

namespace {

bool hasColumnBound(const CudaGemmKernel& g) { return g.minCols > 0 || g.maxCols > 0; }

// Whether `g` is a kernel for `dtype`, the weight layout and the epilogue,
// whose column and depth bounds hold N = `cols` and K = `depth` (a bound
// on an unknown value, 0, does not hold).
bool serves(const CudaGemmKernel& g, const std::string& dtype, bool weightsNK, const GemmEpilogue& e, int64_t cols,
            int64_t depth) {
  const bool colsHold =
      !hasColumnBound(g) || (cols > 0 && cols >= g.minCols && (g.maxCols == 0 || cols <= g.maxCols));
  return g.dtype == dtype && g.weightsNK == weightsNK && g.bias == e.bias && g.residual == e.residual &&
         g.swiglu == e.swiglu && colsHold && (g.minDepth == 0 || (depth > 0 && depth >= g.minDepth));
}

}  // namespace

const CudaGemmKernel* chooseGemm(const std::vector<CudaGemmKernel>& gemms, const std::string& dtype, bool weightsNK,
                                 int64_t rows, const GemmEpilogue& e, int64_t cols, int64_t depth) {
  const CudaGemmKernel* best = nullptr;
  auto bound = [](const CudaGemmKernel& g) { return g.maxRows > 0 ? g.maxRows : INT64_MAX; };
  // The rank of a variant's bounds: depth over columns over rows.
  auto bounds = [&](const CudaGemmKernel& g) {
    return (g.minDepth > 0 ? 4 : 0) + (hasColumnBound(g) ? 2 : 0) + (g.minRows > 0 ? 1 : 0);
  };
  auto better = [&](const CudaGemmKernel& g) {
    return !best || bound(g) < bound(*best) || (bound(g) == bound(*best) && bounds(g) > bounds(*best));
  };
  for (const CudaGemmKernel& g : gemms)
    if (serves(g, dtype, weightsNK, e, cols, depth) && bound(g) >= rows && rows >= g.minRows && better(g)) best = &g;
  return best;
}

const CudaGemmKernel& CudaKernelSet::gemmFor(const std::string& dtype, bool weightsNK, int64_t rows,
                                             const GemmEpilogue& e, int64_t cols, int64_t depth) const {
  const CudaGemmKernel* best = chooseGemm(gemms_, dtype, weightsNK, rows, e, cols, depth);
  if (!best)
    fail("no {} GEMM kernel with {} weights{}{}{} for {} rows in the kernel set", dtype,
         weightsNK ? "[N, K]" : "[K, N]", e.bias ? ", bias" : "", e.residual ? ", residual" : "",
         e.swiglu ? ", SwiGLU" : "", rows);
  return *best;
}

namespace {

// Of the kernels `same` accepts (one shape, differing in query block
// rows), the one for `rows` query rows a head on `heads` (x batch) heads:
// the largest block whose grid of ceil(rows / blockM) x heads programs
// reaches `enough`, else the smallest block. Null when none is the same.
template <class K, class Same>
const K* byQueryBlock(const std::vector<K>& kernels, Same same, int64_t rows, int64_t heads, int64_t enough) {
  auto fills = [&](const K* k) { return (rows + k->blockM - 1) / k->blockM * heads >= enough; };
  const K* best = nullptr;
  for (const K& a : kernels) {
    if (!same(a)) continue;
    const bool af = fills(&a), bf = best && fills(best);
    if (!best || (af != bf ? af : (af ? a.blockM > best->blockM : a.blockM < best->blockM))) best = &a;
  }
  return best;
}

}  // namespace

const CudaAttentionKernel& CudaKernelSet::attentionFor(const std::string& dtype, int64_t heads, int64_t kvHeads,
                                                       int64_t headDim, bool causal, int64_t batch, int64_t S) const {
  // H100, 2026-11-22 (docs/cuda.md): at 2048 tokens of GQA (512 programs
  // of 128 rows, 3.9 an SM) 64 rows won with the mask (244 / 217 TFLOP/s)
  // and lost without it (316 / 390).
  const int64_t enough = (causal ? 4 : 2) * device_.multiprocessors();
  auto same = [&](const CudaAttentionKernel& a) {
    return a.dtype == dtype && a.heads == heads && a.kvHeads == kvHeads && a.headDim == headDim && a.causal == causal;
  };
  if (const CudaAttentionKernel* best = byQueryBlock(attentions_, same, S, heads * batch, enough)) return *best;
  fail("no {} {} attention kernel for {} heads over {} KV heads of dim {} in the kernel set", causal ? "causal" : "full",
       dtype, heads, kvHeads, headDim);
}

const CudaPagedPrefillKernel& CudaKernelSet::pagedPrefillFor(const std::string& dtype, int64_t heads, int64_t kvHeads,
                                                             int64_t headDim, int64_t pageSize, float scale,
                                                             int64_t sequences, int64_t maxNew) const {
  // Causal: the contiguous causal kernels' rule. H100, 2026-11-24
  // (docs/cuda.md "Paged prefill of short prompts"): one prompt of 512 /
  // 2048 / 8192 tokens, 64 rows 119-123 / 247-250 / 354-357 TFLOP/s, 128
  // rows 91-92 / 252-253 / 427.
  auto same = [&](const CudaPagedPrefillKernel& a) {
    return a.dtype == dtype && a.heads == heads && a.kvHeads == kvHeads && a.headDim == headDim &&
           a.pageSize == pageSize && a.scale == scale;
  };
  if (const CudaPagedPrefillKernel* best =
          byQueryBlock(pagedPrefills_, same, maxNew, heads * sequences, 4 * device_.multiprocessors()))
    return *best;
  fail("the kernel set has no {} paged prefill kernel for {} heads over {} KV heads of dim {}, blocks of {}, scale {}",
       dtype, heads, kvHeads, headDim, pageSize, scale);
}

const CudaGemmKernel& CudaKernelSet::gemm(const std::string& name) const {
  for (const CudaGemmKernel& k : gemms_)
    if (k.name == name) return k;
  fail("no GEMM kernel '{}' in this kernel set ({})", name, target_);
}

int64_t gemmProgramCount(const CudaGemmKernel& k, int64_t M, int64_t N) {
  return ((M + k.blockM - 1) / k.blockM) * ((N + k.blockN - 1) / k.blockN);
}

int64_t gemmTmaRowsA(int64_t M, int64_t blockM, int64_t heldRows) {
  const int64_t whole = (M + blockM - 1) / blockM * blockM;
  return std::max(M, std::min(whole, heldRows));
}

int64_t gemmKSplitCount(const CudaGemmKernel& k, int64_t multiprocessors, int64_t M, int64_t N, int64_t K,
                        int64_t alongside) {
  if (!k.splitKPrograms || k.blockK <= 0) return 1;
  constexpr int64_t kMostSplits = 8, kLeastKBlocks = 16;
  const int64_t programs = gemmProgramCount(k, M, N) + alongside;
  const int64_t slots = multiprocessors * std::max<int64_t>(1, k.residentPerSm);
  const int64_t kBlocks = (K + k.blockK - 1) / k.blockK;
  int64_t s = 1;
  while (s < kMostSplits && programs * (s + 1) <= slots && kBlocks / (s + 1) >= kLeastKBlocks) ++s;
  return s;
}

int64_t CudaKernelSet::gemmKSplits(const CudaGemmKernel& k, int64_t M, int64_t N, int64_t K, int64_t alongside) const {
  return gemmKSplitCount(k, device_.multiprocessors(), M, N, K, alongside);
}

int64_t CudaKernelSet::gemmWorkspaceBytes(const CudaGemmKernel& k, int64_t M, int64_t N, int64_t kSplits) {
  return kSplits > 1 ? kSplits * (k.swiglu ? 2 : 1) * M * N * 4 : 0;
}

int64_t CudaKernelSet::gemmCounterBytes(const CudaGemmKernel& k, int64_t M, int64_t N) {
  return k.splitKPrograms ? gemmProgramCount(k, M, N) * 4 : 0;
}

size_t CudaKernelSet::prepareWeightMaps(const std::string& dtype, bool weightsNK, const GemmEpilogue& epilogue,
                                        const void* w, int64_t N, int64_t K) const {
  // Weights TMA cannot map (or a driver without tensor maps) fail at the
  // launch that would read them, as without this call.
  const cuda::Driver* d = cuda::driver();
  if (!weightsNK || K % 8 || N <= 0 || reinterpret_cast<uintptr_t>(w) % 16 || !d || !d->cuTensorMapEncodeTiled)
    return 0;
  const size_t before = tensorMaps_.size();
  for (const CudaGemmKernel& k : gemms_)
    if (k.tma && serves(k, dtype, weightsNK, epilogue, N, K)) operandMap(k, w, N, K, k.blockN, "B");
  return tensorMaps_.size() - before;
}

const void* CudaKernelSet::operandMap(const CudaGemmKernel& k, const void* p, int64_t rows, int64_t K, int64_t boxRows,
                                      const char* what) const {
  return tensorMaps_.get({p, k.dtype == "bf16", rows, K, boxRows}, fmt::format("gemm {} ({})", k.name, what).c_str(),
                         device_.launchStream());
}

void CudaKernelSet::launch(const CudaGemmKernel& k, const GemmBuffers& bufs, int64_t M, int64_t N, int64_t K,
                           int64_t kSplits) const {
  if (M <= 0 || N <= 0 || K <= 0) fail("gemm {}: M, N, K must be positive, got {}, {}, {}", k.name, M, N, K);
  if (kSplits < 1 || (kSplits > 1 && !k.splitKPrograms))
    fail("gemm {}: {} K splits (the kernel {} split K across programs)", k.name, kSplits,
         k.splitKPrograms ? "can" : "cannot");
  // The kernel's signature (codegen/GemmKernel.h): (a, b, [b_up], c, [bias,
  // [bias_up]], [residual], M, N, K); buffer sizes are element counts.
  abi::KernelArgs args;
  // Buffers are read in 4-byte pairs; staged kernels copy 16-byte runs of
  // the operands (A, B) with cp.async.
  auto buffer = [&](const void* p, int64_t elements, const char* what, uintptr_t align = 4) {
    if (!p) fail("gemm {}: the kernel needs the {} buffer", k.name, what);
    if (reinterpret_cast<uintptr_t>(p) % align)
      fail("gemm {}: the {} buffer must be {}-byte aligned", k.name, what, align);
    args.buffer(p, elements);
  };
  // Staged copies and the GEMV form's vector loads take 16-byte runs.
  const uintptr_t operand = k.stages || k.gemv ? 16 : 4;
  buffer(bufs.a, M * K, "A", operand);
  buffer(bufs.b, K * N, "B", operand);
  if (k.swiglu) buffer(bufs.bUp, K * N, "up-projection B", operand);
  buffer(bufs.c, M * N, "C");
  if (k.bias) buffer(bufs.bias, N, "bias");
  if (k.bias && k.swiglu) buffer(bufs.biasUp, N, "up-projection bias");
  if (k.residual) buffer(bufs.residual, M * N, "residual");
  args.index(M).index(N).index(K);
  if (k.tma) {
    // Tensor maps over A [M, K] and the [N, K] weights, boxes of the
    // block's rows; the kernel reads them only where K % 8 = 0 (its staged
    // path), so other shapes pass none.
    const bool bf16 = k.dtype == "bf16";
    auto map = [&](const void* p, int64_t rows, int64_t boxRows, const char* what) {
      if (K % 8) return args.buffer(nullptr, 0), void();
      args.buffer(operandMap(k, p, rows, K, boxRows, what), int64_t(sizeof(cuda::TensorMap)));
    };
    if (bufs.aRows && bufs.aRows < M) fail("gemm {}: A's buffer holds {} rows, fewer than M = {}", k.name, bufs.aRows, M);
    map(bufs.a, gemmTmaRowsA(M, k.blockM, bufs.aRows), k.blockM, "A");
    map(bufs.b, N, k.blockN, "B");
    if (k.swiglu) map(bufs.bUp, N, k.blockN, "up-projection B");
    // C [M, N] as a panel map in boxes of the block (codegen
    // storesCByTma), read where N % 8 = 0 too, by interior blocks only
    // (none below a block's columns).
    if (k.tmaStore) {
      if (K % 8 || N % 8 || N < k.blockN) {
        args.buffer(nullptr, 0);
      } else {
        checkBuffer("gemm " + k.name, bufs.c, "C (stored by TMA)", 16);
        args.buffer(tensorMaps_.get({bufs.c, bf16, M, N, k.blockM, 0, k.blockN / 64},
                                    fmt::format("gemm {} (C)", k.name).c_str(), device_.launchStream()),
                    int64_t(sizeof(cuda::TensorMap)));
      }
    }
  }
  // (..., kSplits, ws, counters): one split touches neither buffer.
  if (k.splitKPrograms) {
    args.index(kSplits);
    if (kSplits > 1) {
      buffer(bufs.workspace, gemmWorkspaceBytes(k, M, N, kSplits) / 4, "split-K workspace");
      buffer(bufs.counters, gemmCounterBytes(k, M, N) / 4, "split-K counters");
    } else {
      args.buffer(nullptr, 0).buffer(nullptr, 0);
    }
  }
  const unsigned rowBlocks = unsigned((M + k.blockM - 1) / k.blockM), colBlocks = unsigned((N + k.blockN - 1) / k.blockN);
  if (k.gemv && rowBlocks > 65535)
    fail("gemm {}: the GEMV form takes at most 65535 blocks of {} rows, got {} rows", k.name, k.blockM, M);
  std::array<unsigned, 3> grid = k.gemv ? std::array<unsigned, 3>{colBlocks, rowBlocks, 1}
                                        : std::array<unsigned, 3>{rowBlocks, colBlocks, unsigned(kSplits)};
  launchOne(device_, k, grid, args);
}

void CudaKernelSet::launch(const CudaAttentionKernel& k, const void* q, const void* kk, const void* v, void* o,
                           int64_t batch, int64_t S, int64_t T) const {
  if (batch <= 0 || S <= 0 || T <= 0)
    fail("attention {}: batch, S and T must be positive, got {}, {}, {}", k.name, batch, S, T);
  if (k.causal && S > T) fail("attention {}: causal attention needs S <= T (query i sits at T - S + i), got {} > {}", k.name, S, T);
  // (q, k, v, o, S, T): codegen/AttentionKernel.h, contiguous form.
  abi::KernelArgs args;
  auto buffer = [&](const void* p, int64_t elements, const char* what) {
    checkBuffer("attention " + k.name, p, what, 16);
    args.buffer(p, elements);
  };
  buffer(q, batch * k.heads * S * k.headDim, "q");
  buffer(kk, batch * k.kvHeads * T * k.headDim, "k");
  buffer(v, batch * k.kvHeads * T * k.headDim, "v");
  buffer(o, batch * k.heads * S * k.headDim, "o");
  args.index(S).index(T);
  if (k.tma) {
    // Tensor maps over q [batch heads, S, D] and k / v [batch kvHeads, T,
    // D]: one plane a head, so a box past its last row reads zeros.
    const bool bf16 = k.dtype == "bf16";
    auto map = [&](const void* p, int64_t planes, int64_t rows, int64_t boxRows, const char* what) {
      args.buffer(tensorMaps_.get({p, bf16, rows, k.headDim, boxRows, planes},
                                  fmt::format("attention {} ({})", k.name, what).c_str(), device_.launchStream()),
                  int64_t(sizeof(cuda::TensorMap)));
    };
    map(q, batch * k.heads, S, k.blockM, "q");
    map(kk, batch * k.kvHeads, T, k.blockN, "k");
    map(v, batch * k.kvHeads, T, k.blockN, "v");
  }
  launchOne(device_, k, {unsigned((S + k.blockM - 1) / k.blockM), unsigned(k.heads), unsigned(batch)}, args);
}

int64_t CudaKernelSet::pagedDecodeScratchBytes(const CudaPagedDecodeKernel& k, int64_t batch, int64_t splits) {
  // po [B H, S D], then pm and pl [B H, S], f32; each 256-byte aligned.
  auto round = [](int64_t bytes) { return (bytes + 255) / 256 * 256; };
  return round(batch * k.heads * splits * k.headDim * 4) + 2 * round(batch * k.heads * splits * 4);
}

int64_t pagedDecodeSplitCount(const CudaPagedDecodeKernel& k, int64_t multiprocessors, int64_t sharedPerSm,
                              int64_t batch, int64_t maxContext) {
  // Costs in keys. The fixed cost of a program (pipeline fill, partials)
  // was fitted to the H200 runs in docs/cuda.md; a block also takes 1 KiB
  // of shared memory the driver reserves. A wave is at most two programs
  // per SM: more fit by shared memory, but on the H100 (2026-11-22)
  // filling them with more splits was slower at every batch (batch 1, 4k
  // context: 66 splits 18.5 us, 33 splits 14.6, 16 splits 16.9;
  // docs/cuda.md "Paged decode attention on the GPU").
  // The combine, when there is one: each of its waits for partials (one
  // per combineSplitsPerStep splits) costs about kCombineStepCost, fitted
  // to batch 1 on the H100 (2026-11-23, steps replayed as graphs: 16
  // splits beat 32 at 1k tokens, 6.3 / 7.0 us; 32 beat 33 from 4k, 10.1 /
  // 10.5 us at 4k, 31.4 / 32.2 at 16k), and its launch about
  // kCombineLaunchCost: at 128 tokens one split (no combine) beat the four
  // the model chose without it, 4.8 / 5.3 us at batch 1 and 5.1 / 6.0 at
  // batch 8, while at 256 tokens splitting still won, 5.3 / 7.6 and 7.0 /
  // 7.8 (H100, 2026-11-23, graphs; the window this leaves is 48-144 keys).
  constexpr int64_t kProgramCost = 256, kReserved = 1024, kMostPerSm = 2, kCombineStepCost = 48,
                    kCombineLaunchCost = 96;
  const int64_t perSm = std::clamp<int64_t>(sharedPerSm / (k.sharedBytes + kReserved), 1, kMostPerSm);
  const int64_t slots = perSm * multiprocessors, programs = batch * k.kvHeads;
  const int64_t most = std::max<int64_t>(1, (maxContext + k.blockN - 1) / k.blockN);
  int64_t best = 1;
  double bestCost = INFINITY;
  for (int64_t s = 1; s <= most; ++s) {
    double waves = double((programs * s + slots - 1) / slots);
    double cost = waves * (double(maxContext) / double(s) + kProgramCost);
    // Sets from before 2026-11-23 (no combineSplitsPerStep) keep the model
    // their counts were tuned with.
    if (s > 1 && k.combineSplitsPerStep > 0)
      cost += double(kCombineLaunchCost +
                     kCombineStepCost * ((s + k.combineSplitsPerStep - 1) / k.combineSplitsPerStep));
    if (cost < bestCost) bestCost = cost, best = s;
  }
  return best;
}

int64_t CudaKernelSet::pagedDecodeSplits(const CudaPagedDecodeKernel& k, int64_t batch, int64_t maxContext) const {
  return pagedDecodeSplitCount(k, device_.multiprocessors(), device_.sharedMemoryPerMultiprocessor(), batch,
                               maxContext);
}

void CudaKernelSet::launch(const CudaPagedDecodeKernel& k, const PagedDecodeBuffers& b, int64_t batch,
                           int64_t maxBlocks, int64_t numBlocks, int64_t splits) const {
  if (batch <= 0 || maxBlocks <= 0 || numBlocks <= 0 || splits <= 0)
    fail("paged decode {}: batch, max blocks, cache blocks and splits must be positive, got {}, {}, {}, {}", k.name,
         batch, maxBlocks, numBlocks, splits);
  auto need = [&](const void* p, const char* what, uintptr_t align) { checkBuffer("paged decode " + k.name, p, what, align); };
  // q and the cache are copied in 16-byte runs; the partials are f32.
  need(b.q, "q", 16), need(b.cache, "cache", 16), need(b.tables, "block table", 8), need(b.contextLens, "context length", 8);
  need(b.o, "o", 4), need(b.scratch, "scratch", 256);
  const int64_t rows = batch * k.heads, cacheRows = numBlocks * 2 * k.kvHeads * k.pageSize;
  char* scratch = static_cast<char*>(b.scratch);
  auto round = [](int64_t bytes) { return (bytes + 255) / 256 * 256; };
  void* po = scratch;
  void* pm = scratch + round(rows * splits * k.headDim * 4);
  void* pl = static_cast<char*>(pm) + round(rows * splits * 4);
  // (q, cache, po, pm, pl, o, tables, lens, max_blocks, cache_rows, splits).
  abi::KernelArgs args;
  args.buffer(b.q, rows * k.headDim).buffer(b.cache, cacheRows * k.headDim);
  args.buffer(po, rows * splits * k.headDim).buffer(pm, rows * splits).buffer(pl, rows * splits);
  args.buffer(b.o, rows * k.headDim).buffer(b.tables, batch * maxBlocks).buffer(b.contextLens, batch);
  args.index(maxBlocks).index(cacheRows).index(splits);
  launchOne(device_, k, {unsigned(splits), unsigned(k.kvHeads), unsigned(batch)}, args);
  // The one program per head stored o.
  if (splits == 1) return;
  // (po, pm, pl, o, tokens, splits).
  abi::KernelArgs combine;
  combine.buffer(po, rows * splits * k.headDim).buffer(pm, rows * splits).buffer(pl, rows * splits);
  combine.buffer(b.o, rows * k.headDim).index(batch).index(splits);
  device_.launch(k.combine, {unsigned(batch), unsigned(k.heads), 1}, {unsigned(k.combineThreads), 1, 1}, 0,
                 const_cast<void**>(combine.slots().data()));
}

void CudaKernelSet::launch(const CudaPagedPrefillKernel& k, const PagedPrefillBuffers& b, int64_t sequences,
                           int64_t tokens, int64_t maxNew, int64_t maxBlocks, int64_t numBlocks) const {
  if (sequences <= 0 || tokens <= 0 || maxNew <= 0 || maxBlocks <= 0 || numBlocks <= 0)
    fail("paged prefill {}: sequences, tokens, max new tokens, max blocks and cache blocks must be positive, got {}, "
         "{}, {}, {}, {}",
         k.name, sequences, tokens, maxNew, maxBlocks, numBlocks);
  auto need = [&](const void* p, const char* what, uintptr_t align) { checkBuffer("paged prefill " + k.name, p, what, align); };
  need(b.q, "q", 16), need(b.cache, "cache", 16), need(b.tables, "block table", 8), need(b.starts, "sequence start", 8);
  need(b.contextLens, "context length", 8), need(b.o, "o", 4);
  const int64_t width = k.heads * k.headDim, cacheRows = numBlocks * 2 * k.kvHeads * k.pageSize;
  // (q, cache, o, tables, starts, lens, max_blocks, cache_rows).
  abi::KernelArgs args;
  args.buffer(b.q, tokens * width).buffer(b.cache, cacheRows * k.headDim).buffer(b.o, tokens * width);
  args.buffer(b.tables, sequences * maxBlocks).buffer(b.starts, sequences + 1).buffer(b.contextLens, sequences);
  args.index(maxBlocks).index(cacheRows);
  launchOne(device_, k, {unsigned((maxNew + k.blockM - 1) / k.blockM), unsigned(k.heads), unsigned(sequences)}, args);
}

void CudaKernelSet::launch(const CudaGatherRowsKernel& k, const void* table, void* out, const void* ids,
                           int64_t tokens, int64_t rows, int64_t width) const {
  if (tokens <= 0 || rows <= 0 || width <= 0)
    fail("gather_rows {}: tokens, rows and width must be positive, got {}, {}, {}", k.name, tokens, rows, width);
  const std::string what = "gather_rows " + k.name;
  checkBuffer(what, table, "table", 2), checkBuffer(what, out, "out", 2), checkBuffer(what, ids, "ids", 8);
  // (table, out, ids, tokens, rows, width): codegen/DataMovementKernels.h.
  abi::KernelArgs args;
  args.buffer(table, rows * width).buffer(out, tokens * width).buffer(ids, tokens).index(tokens).index(rows).index(width);
  launchOne(device_, k, {unsigned(tokens), unsigned((width + k.blockN - 1) / k.blockN), 1}, args);
}

void CudaKernelSet::launch(const CudaKvWriteKernel& k, void* cache, const void* kk, const void* v, const void* slots,
                           int64_t tokens, int64_t numBlocks) const {
  if (tokens <= 0 || numBlocks <= 0)
    fail("kv_write {}: tokens and cache blocks must be positive, got {}, {}", k.name, tokens, numBlocks);
  const std::string what = "kv_write " + k.name;
  checkBuffer(what, cache, "cache", 2), checkBuffer(what, kk, "k", 2), checkBuffer(what, v, "v", 2);
  checkBuffer(what, slots, "slots", 8);
  const int64_t width = k.kvHeads * k.headDim, cacheRows = numBlocks * 2 * k.kvHeads * k.pageSize;
  // (cache, k, v, slots, tokens, cache_rows).
  abi::KernelArgs args;
  args.buffer(cache, cacheRows * k.headDim).buffer(kk, tokens * width).buffer(v, tokens * width).buffer(slots, tokens);
  args.index(tokens).index(cacheRows);
  launchOne(device_, k, {unsigned(tokens), unsigned(k.kvHeads), 1}, args);
}

void CudaKernelSet::launch(const CudaArgmaxKernel& k, const void* x, void* max, void* index, int64_t rows, int64_t n,
                           int64_t chunk, int64_t splits) const {
  if (rows <= 0 || n <= 0 || splits <= 0 || chunk <= 0 || chunk % k.blockN || splits * chunk < n ||
      (splits - 1) * chunk >= n)
    fail("argmax {}: {} rows of {} in {} splits of {} (splits of whole {}-column blocks covering each row)", k.name,
         rows, n, splits, chunk, k.blockN);
  const std::string what = "argmax " + k.name;
  checkBuffer(what, x, "x", 2), checkBuffer(what, max, "max", 4), checkBuffer(what, index, "index", 4);
  // (x, max, index, rows, n, chunk, splits).
  abi::KernelArgs args;
  args.buffer(x, rows * n).buffer(max, rows * splits).buffer(index, rows * splits);
  args.index(rows).index(n).index(chunk).index(splits);
  launchOne(device_, k, {unsigned(splits), unsigned(rows), 1}, args);
}

std::pair<int64_t, int64_t> CudaKernelSet::argmaxSplits(const CudaArgmaxKernel& k, int64_t n) {
  constexpr int64_t kMaxSplits = 128;
  if (n <= 0) fail("argmax {}: rows of {} values", k.name, n);
  const int64_t blocks = (n + k.blockN - 1) / k.blockN;
  const int64_t chunk = k.blockN * ((blocks + kMaxSplits - 1) / kMaxSplits);
  return {chunk, (n + chunk - 1) / chunk};
}

std::vector<int64_t> CudaKernelSet::argmaxPick(const float* max, const float* index, int64_t rows, int64_t splits) {
  std::vector<int64_t> ids(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const float* v = max + r * splits;
    ids[r] = int64_t(index[r * splits + (std::max_element(v, v + splits) - v)]);
  }
  return ids;
}

void CudaKernelSet::launch(const CudaTopKKernel& k, const void* x, void* value, void* index, void* mass,
                           const void* scale, int64_t rows, int64_t n) const {
  if (rows <= 0 || n <= 0) fail("topk {}: {} rows of {} (both must be positive)", k.name, rows, n);
  const std::string what = "topk " + k.name;
  checkBuffer(what, x, "x", 2), checkBuffer(what, value, "value", 4), checkBuffer(what, index, "index", 4);
  checkBuffer(what, mass, "mass", 4), checkBuffer(what, scale, "scale", 4);
  const int64_t splits = k.splits(n);
  // (x, value, index, mass, scale, rows, n, splits).
  abi::KernelArgs args;
  args.buffer(x, rows * n).buffer(value, rows * splits * k.candidates).buffer(index, rows * splits * k.candidates);
  args.buffer(mass, rows * splits).buffer(scale, rows).index(rows).index(n).index(splits);
  launchOne(device_, k, {unsigned(splits), unsigned(rows), 1}, args);
}

void CudaKernelSet::launch(const CudaRepetitionPenaltyKernel& k, void* x, const void* entries, const void* penalty,
                           int64_t rows, int64_t n, int64_t count) const {
  if (rows <= 0 || n <= 0 || count <= 0)
    fail("repetition_penalty {}: {} rows of {} and {} entries (all must be positive)", k.name, rows, n, count);
  const std::string what = "repetition_penalty " + k.name;
  checkBuffer(what, x, "x", 4), checkBuffer(what, entries, "entries", 8), checkBuffer(what, penalty, "penalty", 4);
  // (x, entries, penalty, rows, n, count): codegen/PenaltyKernel.h.
  abi::KernelArgs args;
  args.buffer(x, rows * n).buffer(entries, 2 * count).buffer(penalty, rows).index(rows).index(n).index(count);
  launchOne(device_, k, {unsigned(count), 1, 1}, args);
}

const CudaElementwiseKernel& CudaKernelSet::elementwise(const std::string& name) const {
  for (const CudaElementwiseKernel& e : elementwises_)
    if (e.name == name) return e;
  fail("the kernel set has no elementwise kernel '{}'", name);
}

void CudaKernelSet::launch(const CudaElementwiseKernel& k, const std::vector<std::pair<const void*, int64_t>>& buffers,
                           int64_t rows) const {
  if (rows <= 0) fail("elementwise {}: {} rows (must be positive)", k.name, rows);
  // (operands..., outputs..., rows): codegen/ElementwiseKernel.h.
  abi::KernelArgs args;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (!buffers[i].first) fail("elementwise {}: buffer #{} is null", k.name, i);
    args.buffer(buffers[i].first, buffers[i].second);
  }
  args.index(rows);
  launchOne(device_, k, {unsigned(rows), 1, 1}, args);
}

void CudaKernelSet::launch(const CudaRmsNormKernel& k, const void* x, const void* w, void* y, int64_t rows,
                           int64_t hidden, float eps) const {
  if (rows <= 0 || hidden <= 0) fail("rms_norm {}: rows and hidden must be positive, got {}, {}", k.name, rows, hidden);
  if (!x || !w || !y) fail("rms_norm {}: x, w and y must be device buffers", k.name);
  if (k.laneVector > 1 && hidden % k.laneVector == 0) {
    const uintptr_t align = k.laneVector * ops::dtypeSize(ops::parseDType(k.dtype));
    for (auto [p, what] : {std::pair<const void*, const char*>{x, "x"}, {w, "w"}, {y, "y"}})
      if (reinterpret_cast<uintptr_t>(p) % align)
        fail("rms_norm {}: the {} buffer must be {}-byte aligned (rows of {} elements load as {}-element vectors)",
             k.name, what, align, hidden, k.laneVector);
  }
  // (x, w, y, rows, hidden, eps): codegen/NormRopeKernels.h.
  abi::KernelArgs args;
  args.buffer(x, rows * hidden).buffer(w, hidden).buffer(y, rows * hidden).index(rows).index(hidden).f32(eps);
  launchOne(device_, k, {unsigned(rows), 1, 1}, args);
}

void CudaKernelSet::launch(const CudaRopeKernel& k, const void* x, void* y, const void* cos, const void* sin,
                           const void* positions, int64_t tokens, int64_t tableRows, int64_t kAt) const {
  if (tokens <= 0 || tableRows <= 0)
    fail("rope {}: tokens and table rows must be positive, got {}, {}", k.name, tokens, tableRows);
  if (!x || !y || !cos || !sin || !positions) fail("rope {}: x, y, cos, sin and positions must be device buffers", k.name);
  if (kAt < 0) kAt = tokens * k.heads;
  if (k.kvHeads && kAt < tokens * k.heads)
    fail("rope {}: the k heads start at head row {}, inside the {} tokens' q heads", k.name, kAt, tokens);
  // (x, y, cos, sin, positions, tokens, table_rows[, k_at]): codegen/NormRopeKernels.h.
  const int64_t heads = k.heads + k.kvHeads, half = k.headDim / 2;
  const int64_t elements = (k.kvHeads ? kAt + tokens * k.kvHeads : tokens * k.heads) * k.headDim;
  abi::KernelArgs args;
  args.buffer(x, elements).buffer(y, elements).buffer(cos, tableRows * half).buffer(sin, tableRows * half);
  args.buffer(positions, tokens).index(tokens).index(tableRows);
  if (k.kvHeads) args.index(kAt);
  launchOne(device_, k, {unsigned(tokens), unsigned(heads / k.headsPerProgram), 1}, args);
}

}  // namespace strata::runtime
