#include "runtime/gpu_executor_impl.h"

#include <algorithm>
#include <array>
#include <map>

namespace strata::runtime {

// The most rows at which several GEMM outputs (q / k / v) share one block
// (Impl::gemm).
constexpr int64_t kJointOutputRows = 64;

// region.gemm (ops/gemm_region.h has the operands and attributes;
// runtime/region_kernels.cpp is the CPU twin).
V GpuExecutor::Impl::gemm(const ops::NodeDef& n, const std::vector<const Val*>& in) const {
  const auto op = ops::GemmRegionOperands::of(n, in.size());
  Tensor x = devArg(in, 0, "x");
  const int64_t K = x.dim(x.rank() - 1);
  ops::Shape outBase = x.shape();
  if (op.rows) {
    const Tensor& rows = hostArg(in, op.rowsAt(), "rows");
    outBase = ops::GemmRegionOperands::gatheredShape(x.shape(), rows.numel());
    x = gatherRows(x.reshaped({x.numel() / K, K}), *in[op.rowsAt()]);
  }
  const int64_t M = x.numel() / K;
  // A block-quantized weight (its GPU form's integers, scales, offsets).
  auto quantOf = [&](int64_t wi) -> const QuantWeight* {
    auto it = quant.find(n.inputs[op.weight(wi)]);
    return it == quant.end() ? nullptr : &it->second;
  };
  auto widthOf = [&](int64_t wi) {
    if (const QuantWeight* q = quantOf(wi)) {
      if (q->cols != K) fail("quantized weight '{}' is [{}, {}], x's rows {}", n.inputs[op.weight(wi)], q->rows, q->cols, K);
      return q->rows;
    }
    return op.width(devArg(in, op.weight(wi), "weight").shape(), K, wi);
  };
  bool anyQuant = false;
  for (int64_t wi = 0; wi < op.weights; ++wi) anyQuant |= quantOf(wi) != nullptr;
  const Tensor* res = op.residual ? &devArg(in, op.residualAt(), "residual") : nullptr;
  V outs;
  if (M == 0) {
    for (int64_t wi = 0; wi < op.outputs(); ++wi) outs.push_back(pool.tensor(dt, withLast(outBase, widthOf(wi))));
    return outs;
  }
  const GemmEpilogue epilogue{op.bias, op.residual, op.swiglu};
  // The epilogue with weight wi's form (gate and up share one: abi::
  // gpuQuantWeightForms).
  auto epilogueOf = [&](int64_t wi) {
    GemmEpilogue e = epilogue;
    if (const QuantWeight* q = quantOf(wi)) e.quant = q->form;
    return e;
  };
  // Sibling weights placed back to back (joinSiblingWeights,
  // joinQuantSiblingWeights), at one row: one GEMM over the joined [sum N,
  // K] matrix writes q | k | v as one row, and the outputs are views of it
  // (with more rows they would interleave). Otherwise each output is a
  // launch of its own.
  struct Launch {
    int64_t first, count, N;  // outputs first .. first + count - 1, N columns in all
    const GpuGemmKernel* kern = nullptr;
    int64_t splits = 1, counterAt = 0;
  };
  std::vector<Launch> units;
  if (M == 1 && op.outputs() > 1 && !op.swiglu && !op.bias && !op.residual && op.weightsNK) {
    // Each part (integers, scales, offsets: one for a floating point
    // weight) of output wi starts where output wi - 1's ends.
    auto parts = [&](int64_t wi) -> std::array<const uint8_t*, 3> {
      if (const QuantWeight* q = quantOf(wi))
        return {static_cast<const uint8_t*>(q->values.raw()), static_cast<const uint8_t*>(q->scales.raw()),
                q->offsets.defined() ? static_cast<const uint8_t*>(q->offsets.raw()) : nullptr};
      return {static_cast<const uint8_t*>(in[op.weight(wi)]->dev.raw()), nullptr, nullptr};
    };
    bool adjacent = true;
    int64_t total = widthOf(0);
    const QuantWeight* q0 = quantOf(0);
    for (int64_t wi = 1; wi < op.outputs(); ++wi) {
      const QuantWeight* q = quantOf(wi);
      const std::array<const uint8_t*, 3> at = parts(wi), prev = parts(wi - 1);
      if ((q == nullptr) != (q0 == nullptr) || (q && !(q->form == q0->form))) {
        adjacent = false;
        break;
      }
      const std::array<size_t, 3> bytes =
          q ? quantFormBytes(q->form, widthOf(wi - 1), K)
            : std::array<size_t, 3>{size_t(widthOf(wi - 1) * K * ops::dtypeSize(dt)), 0, 0};
      for (size_t i = 0; i < 3; ++i) adjacent &= at[i] == (prev[i] ? prev[i] + bytes[i] : nullptr);
      total += widthOf(wi);
    }
    if (adjacent) units.push_back({0, op.outputs(), total});
  }
  if (units.empty())
    for (int64_t wi = 0; wi < op.outputs(); ++wi) units.push_back({wi, 1, widthOf(wi)});
  for (Launch& u : units) u.kern = &k.gemmFor(dtName, op.weightsNK, M, epilogueOf(u.first), u.N, K);
  // The RMSNorm prologue (graph-fuse-gemm-norm): when every launch is an
  // i8-activation GEMV, its quantize_rows kernel normalizes the rows as it
  // quantizes them (one launch for both); otherwise the RMSNorm kernel
  // normalizes them first and the GEMMs read the result.
  const Tensor* normWeight = nullptr;
  if (op.norm) {
    normWeight = &devArg(in, op.normAt(), "norm weight");
    bool quantizesNormed = anyQuant;
    for (const Launch& u : units) quantizesNormed &= u.kern->int8Activations && u.kern->normQuantizes;
    if (!quantizesNormed) {
      x = normRows(x, *normWeight, op.normEps);
      normWeight = nullptr;
    }
  }
  // The rows A's pool block holds (whole TMA row blocks: DevicePool).
  const int64_t held = int64_t(pool.bytesFrom(x.raw()) / (K * ops::dtypeSize(dt))), aRows = held >= M ? held : 0;
  // Several launches (q / k / v apart) are independent GEMMs of one input:
  // they run side by side (at decode, k and v alone fill a quarter of the
  // SMs). Kernels that split K across programs get a workspace each and
  // their own part of the arrival counters; a joined launch does not split
  // (the joined bf16 GEMV measured well unsplit).
  std::vector<std::function<void()>> launches;
  std::vector<Tensor> workspaces;
  int64_t counterTotal = 0, programs = 0;
  for (const Launch& u : units) programs += gemmProgramCount(*u.kern, M, u.N);
  for (Launch& u : units) {
    if (u.count > 1) continue;
    u.splits = k.gemmKSplits(*u.kern, M, u.N, K, programs - gemmProgramCount(*u.kern, M, u.N));
    u.counterAt = counterTotal;
    if (u.splits > 1) counterTotal += GpuKernelSet::gemmCounterBytes(*u.kern, M, u.N);
  }
  char* counters = counterTotal ? static_cast<char*>(arrivalCounters(counterTotal)) : nullptr;
  // A quantized to i8 once per block size for the integer-form GEMVs
  // (q / k / v share it), before they launch.
  std::map<int64_t, std::array<Tensor, 3>> quantizedA;
  for (const Launch& u : units) {
    if (!u.kern->int8Activations || quantizedA.count(u.kern->quant.block)) continue;
    const int64_t blocks = M * K / u.kern->quant.block;
    std::array<Tensor, 3> t{pool.tensor(ops::DType::F32, {(M * K + 3) / 4}), pool.tensor(ops::DType::F32, {blocks}),
                            pool.tensor(ops::DType::F32, {blocks})};
    k.quantizeRows(*u.kern, x.raw(), mut(t[0]), mut(t[1]), mut(t[2]), M, K, normWeight ? normWeight->raw() : nullptr,
                   op.normEps);
    quantizedA.emplace(u.kern->quant.block, std::move(t));
  }
  // Up to kJointOutputRows rows (decode steps), several outputs (q / k / v)
  // fill one block, each output's rows after the last one's, so that one
  // RoPE launch rotates q and k together (ropeJoined). C's rows past M are
  // never stored (masked, or clipped by its tensor map). At a 128-token
  // prefill one block measured 0.13-0.18 ms slower (not understood: its
  // 1.5 MB come from a slab, the outputs' own blocks partly not), which
  // the joined RoPE did not win back (H100, 2026-11-25, docs/cuda.md of bd79745
  // "q and k in one launch at every row count").
  Tensor joint;
  int64_t jointAt = 0;
  if (op.outputs() > 1 && !op.swiglu && M <= kJointOutputRows) {
    int64_t total = 0;
    for (int64_t wi = 0; wi < op.outputs(); ++wi) total += widthOf(wi);
    joint = pool.tensor(dt, {M, total});
  }
  for (const Launch& u : units) {
    const int64_t wi = u.first, N = u.N;
    if (op.swiglu && widthOf(1) != N) fail("gate and up weights differ in width");
    Tensor c = joint.defined() ? joint.view(jointAt, withLast(outBase, N)) : pool.tensor(dt, withLast(outBase, N));
    GemmBuffers b;
    b.a = x.raw();
    b.aRows = aRows;
    b.b = in[op.weight(wi)]->dev.raw();
    if (op.swiglu) b.bUp = in[op.weight(1)]->dev.raw();
    if (const QuantWeight* q = quantOf(wi)) {
      b.b = q->values.raw(), b.bScales = q->scales.raw(), b.bOffsets = q->offsets.raw();
      if (op.swiglu) {
        const QuantWeight* u = quantOf(1);
        b.bUp = u->values.raw(), b.bUpScales = u->scales.raw(), b.bUpOffsets = u->offsets.raw();
      }
    }
    b.c = mut(c);
    if (op.bias) {
      for (int64_t j = wi; j < (op.swiglu ? 2 : wi + 1); ++j)
        if (devArg(in, op.biasOf(j), "bias").numel() != N) fail("bias #{} has the wrong size for {} outputs", j, N);
      b.bias = in[op.biasOf(wi)]->dev.raw();
      if (op.swiglu) b.biasUp = in[op.biasOf(1)]->dev.raw();
    }
    if (res) {
      if (res->numel() != M * N) fail("residual {} does not match the output [{}, {}]", ops::shapeStr(res->shape()), M, N);
      b.residual = res->raw();
    }
    const GpuGemmKernel* kern = u.kern;
    const int64_t s = u.splits;
    if (kern->int8Activations) {
      const auto& qa = quantizedA.at(kern->quant.block);
      b.a = qa[0].raw(), b.aScales = qa[1].raw(), b.aSums = qa[2].raw();
    }
    if (s > 1) {
      workspaces.push_back(pool.tensor(ops::DType::F32, {GpuKernelSet::gemmWorkspaceBytes(*kern, M, N, s) / 4}));
      b.workspace = mut(workspaces.back());
      b.counters = counters + u.counterAt;
    }
    launches.push_back([this, kern, b, M, N, K, s] { k.launch(*kern, b, M, N, K, s); });
    // A joined launch's outputs are views of its one row.
    if (u.count == 1) outs.push_back(std::move(c));
    for (int64_t o = u.first, at = 0; u.count > 1 && o < u.first + u.count; at += widthOf(o++))
      outs.push_back(c.view(at, withLast(outBase, widthOf(o))));
    jointAt += M * N;
  }
  dev.concurrently(launches);
  return outs;
}

V GpuExecutor::Impl::rmsNorm(const ops::NodeDef& n, const std::vector<const Val*>& in) const {
  return {normRows(devArg(in, 0, "x"), devArg(in, 1, "weight"), n.attrs.at("eps").get<float>())};
}

Tensor GpuExecutor::Impl::normRows(const Tensor& x, const Tensor& w, float eps) const {
  const int64_t width = x.dim(x.rank() - 1), rows = x.numel() / width;
  if (w.numel() != width) fail("the norm weight has {} entries, x's rows {}", w.numel(), width);
  Tensor y = pool.tensor(dt, x.shape());
  const auto& kern = findKernel(k.rmsNorms(), [&](const auto& r) { return r.dtype == dtName; }, dtName + " RMSNorm");
  if (rows > 0) k.launch(kern, x.raw(), w.raw(), mut(y), rows, width, eps);
  return y;
}

V GpuExecutor::Impl::ropeNode(const ops::NodeDef& n, const std::vector<const Val*>& in) const {
  const Tensor& x = devArg(in, 0, "x");
  hostArg(in, 1, "positions");
  return {ropeRows(n, x, *in[1], x.dim(x.rank() - 1), x.shape())};
}

Tensor GpuExecutor::Impl::ropeRows(const ops::NodeDef& n, const Tensor& x, const Val& posVal, int64_t width,
                                    const ops::Shape& shape) const {
  const int64_t D = n.attrs.at("head_dim").get<int64_t>(), T = ops::numel(shape) / shape.back();
  if (D <= 0 || width % D) fail("rows of {} are not whole heads of {}", width, D);
  const int64_t heads = width / D;
  const auto& kern = findKernel(
      k.ropes(), [&](const auto& r) { return r.dtype == dtName && r.heads == heads && r.kvHeads == 0 && r.headDim == D; },
      fmt::format("{} RoPE kernel for {} heads of dim {}", dtName, heads, D));
  return ropeLaunch(n, kern, x, posVal, T, shape);
}

Tensor GpuExecutor::Impl::ropeLaunch(const ops::NodeDef& n, const GpuRopeKernel& kern, const Tensor& x,
                                      const Val& posVal, int64_t T, const ops::Shape& shape) const {
  const RopeTable& tab = ropeTableFor(n, kern.headDim, posVal, T);
  Tensor y = pool.tensor(dt, shape);
  if (T > 0) k.launch(kern, x.raw(), mut(y), tab.cos.raw(), tab.sin.raw(), posVal.dev.raw(), T, tab.rows);
  return y;
}

const GpuExecutor::Impl::RopeTable& GpuExecutor::Impl::ropeTableFor(const ops::NodeDef& n, int64_t D,
                                                                     const Val& posVal, int64_t T) const {
  if (const int64_t R = n.attrs.value("rotary_dim", D); R != D)
    fail("partial rotary ({} of {} head dims) has no CUDA kernel yet (--backend cpu runs it)", R, D);
  const float theta = n.attrs.at("theta").get<float>();
  const int64_t maxPos = maxPosition(posVal.host, T);
  const RopeTable& tab = ropeTable(D, theta, maxPos + 1);
  guard({&posVal}, fmt::format("rope {} {} {} {} {}", *posVal.input, T, D, theta, tab.cos.raw()),
        [this, T, key = std::pair{D, theta}, cos = tab.cos.raw(), name = posVal.input](const auto& step) {
    const int64_t last = maxPosition(step.at(*name), T);
    const RopeTable& now = rope.at(key);
    return now.cos.raw() == cos && last < now.rows;
  });
  return tab;
}

const GpuExecutor::Impl::RopeTable& GpuExecutor::Impl::ropeTable(int64_t D, float theta, int64_t rows) const {
  RopeTable& tab = rope[{D, theta}];
  if (tab.rows < rows) {
    rows = std::max<int64_t>({rows, 2 * tab.rows, 256});
    ops::RopeTables h = ops::ropeTables(rows, D, theta);
    tab = {deviceCopy(dev, h.cos), deviceCopy(dev, h.sin), rows};
  }
  return tab;
}

// The q / k / v GEMM writes k right after q in one block (at one row, q |
// k | v is one row), so one launch rotates both: a joined kernel (q heads,
// then k heads from a head row kAt), or at one row the kernel of heads +
// KV heads on the row q | k (kernel sets from before the joined kernels).
// A step saves one launch a layer.
std::optional<std::pair<Tensor, Tensor>> GpuExecutor::Impl::ropeJoined(const ops::NodeDef& q,
                                                                        const std::vector<const Val*>& in,
                                                                        const Val& kx) const {
  const Tensor& x = devArg(in, 0, "x");
  const Tensor& kt = kx.dev;
  const int64_t D = q.attrs.at("head_dim").get<int64_t>(), qw = x.dim(x.rank() - 1);
  if (D <= 0 || qw <= 0 || qw % D || x.numel() == 0 || kt.dtype() != dt ||
      kt.raw() != static_cast<const uint8_t*>(x.raw()) + x.nbytes())
    return std::nullopt;
  const int64_t T = x.numel() / qw, kw = kt.numel() / T;
  if (kw * T != kt.numel() || kw <= 0 || kw % D) return std::nullopt;
  const int64_t heads = qw / D, kvHeads = kw / D;
  auto joined = std::find_if(k.ropes().begin(), k.ropes().end(), [&](const auto& r) {
    return r.dtype == dtName && r.heads == heads && r.kvHeads == kvHeads && r.headDim == D;
  });
  auto row = std::find_if(k.ropes().begin(), k.ropes().end(), [&](const auto& r) {
    return r.dtype == dtName && r.heads == heads + kvHeads && r.kvHeads == 0 && r.headDim == D;
  });
  const GpuRopeKernel* kern = joined != k.ropes().end() ? &*joined : T == 1 && row != k.ropes().end() ? &*row : nullptr;
  if (!kern) return std::nullopt;
  hostArg(in, 1, "positions");
  Tensor y = ropeLaunch(q, *kern, x, *in[1], T, {T, qw + kw});
  return std::pair{y.view(0, x.shape()), y.view(x.numel(), kt.shape())};
}

// region.kv_write operands: cache, k, v, slot_mapping; returns the cache.
void GpuExecutor::Impl::checkKvWrite(const Tensor& cache, const Tensor& kk, const Tensor& v, const Val& slotsVal) const {
  const Tensor& slots = slotsVal.host;
  if (cache.rank() != 5) fail("cache {} is not [blocks, 2, KV heads, block size, head dim]", ops::shapeStr(cache.shape()));
  const int64_t Hk = cache.dim(2), P = cache.dim(3), D = cache.dim(4), T = slots.numel();
  if (kk.numel() != T * Hk * D || v.numel() != T * Hk * D)
    fail("k/v {} / {} are not {} tokens of {} x {}", ops::shapeStr(kk.shape()), ops::shapeStr(v.shape()), T, Hk, D);
  checkIndices(slots, cache.dim(0) * P, "cache slot");
  guard({&slotsVal}, fmt::format("slots {} {}", *slotsVal.input, cache.dim(0) * P),
        [limit = cache.dim(0) * P, name = slotsVal.input](const TensorMap& step) {
    checkIndices(step.at(*name), limit, "cache slot");
    return true;
  });
}

V GpuExecutor::Impl::kvWrite(const std::vector<const Val*>& in) const {
  const Tensor& cache = devArg(in, 0, "cache");
  const Tensor& kk = devArg(in, 1, "k");
  const Tensor& v = devArg(in, 2, "v");
  const Tensor& slots = hostArg(in, 3, "slot_mapping");
  checkKvWrite(cache, kk, v, *in[3]);
  const int64_t Hk = cache.dim(2), P = cache.dim(3), D = cache.dim(4), T = slots.numel();
  const auto& kern = findKernel(
      k.kvWrites(),
      [&](const auto& w) { return w.dtype == dtName && w.kvHeads == Hk && w.headDim == D && w.pageSize == P; },
      fmt::format("{} KV write for {} KV heads of dim {} in blocks of {}", dtName, Hk, D, P));
  if (T > 0) k.launch(kern, mut(cache), kk.raw(), v.raw(), in[3]->dev.raw(), T, cache.dim(0));
  return {cache};
}

// region.rope_kv_write operands: q, k, v, positions, cache, slot_mapping;
// returns q rotated and the cache (k rotated and v written at the slots).
V GpuExecutor::Impl::ropeKvWrite(const ops::NodeDef& n, const std::vector<const Val*>& in) const {
  const Tensor& q = devArg(in, 0, "q");
  const Tensor& kk = devArg(in, 1, "k");
  const Tensor& v = devArg(in, 2, "v");
  hostArg(in, 3, "positions");
  const Tensor& cache = devArg(in, 4, "cache");
  const Tensor& slots = hostArg(in, 5, "slot_mapping");
  checkKvWrite(cache, kk, v, *in[5]);
  const int64_t Hk = cache.dim(2), P = cache.dim(3), D = cache.dim(4), T = slots.numel();
  if (n.attrs.at("head_dim").get<int64_t>() != D)
    fail("head_dim {} is not the cache's {}", n.attrs.at("head_dim").get<int64_t>(), D);
  if (q.numel() % (std::max<int64_t>(T, 1) * D)) fail("q {} is not {} tokens of whole heads of {}", ops::shapeStr(q.shape()), T, D);
  const int64_t H = T ? q.numel() / (T * D) : 0;
  const auto& kern = findKernel(
      k.ropeKvWrites(),
      [&](const auto& w) {
        return w.dtype == dtName && w.heads == H && w.kvHeads == Hk && w.headDim == D && w.pageSize == P;
      },
      fmt::format("{} RoPE + KV write for {} heads and {} KV heads of dim {} in blocks of {}", dtName, H, Hk, D, P));
  const RopeTable& tab = ropeTableFor(n, D, *in[3], T);
  Tensor y = pool.tensor(dt, q.shape());
  if (T > 0) {
    GpuKernelSet::RopeKvWriteBuffers b;
    b.q = q.raw(), b.k = kk.raw(), b.v = v.raw(), b.y = mut(y), b.cache = mut(cache);
    b.cos = tab.cos.raw(), b.sin = tab.sin.raw(), b.positions = in[3]->dev.raw(), b.slots = in[5]->dev.raw();
    k.launch(kern, b, T, tab.rows, cache.dim(0));
  }
  return {y, cache};
}

// region.paged_attention operands: q, cache, block_tables, seq_starts,
// context_lens. One new token per sequence: the paged decode kernel with
// the split count GpuKernelSet::pagedDecodeSplits picks; otherwise, or
// where the set has no decode kernel (xe: its paged form serves every
// step), the paged prefill kernel (prefill, chunked prefill and decode
// rows mixed).
V GpuExecutor::Impl::pagedAttention(const ops::NodeDef& n, const std::vector<const Val*>& in) const {
  const Tensor& q = devArg(in, 0, "q");
  const Tensor& cache = devArg(in, 1, "cache");
  const Tensor& tables = hostArg(in, 2, "block_tables");
  const Tensor& starts = hostArg(in, 3, "seq_starts");
  const Tensor& lens = hostArg(in, 4, "context_lens");
  const int64_t heads = n.attrs.at("heads").get<int64_t>(), kvHeads = n.attrs.at("kv_heads").get<int64_t>(),
                D = n.attrs.at("head_dim").get<int64_t>();
  const float scale = n.attrs.at("scale").get<float>();
  if (cache.rank() != 5 || cache.dim(2) != kvHeads || cache.dim(4) != D)
    fail("cache {} is not [blocks, 2, {}, block size, {}]", ops::shapeStr(cache.shape()), kvHeads, D);
  const int64_t N = lens.numel(), P = cache.dim(3), maxBlocks = tables.rank() == 2 ? tables.dim(1) : 0;
  const int64_t T = q.numel() / (heads * D), blocks = cache.dim(0);
  const auto [maxNew, maxContext] = attentionSteps(tables, starts, lens, T, P, blocks);
  // The step graph's guards take the same inputs of a later step.
  const std::array names{in[2]->input, in[3]->input, in[4]->input};
  Tensor o = pool.tensor(dt, q.shape());
  if (N == 0) return {o};
  auto matches = [&](const auto& a) {
    return a.dtype == dtName && a.heads == heads && a.kvHeads == kvHeads && a.headDim == D && a.pageSize == P &&
           a.scale == scale;
  };
  const std::string shape = fmt::format("{} heads over {} KV heads of dim {}, blocks of {}, scale {}", heads, kvHeads,
                                        D, P, scale);
  if (maxNew == 1 && std::any_of(k.pagedDecodes().begin(), k.pagedDecodes().end(), matches)) {
    const auto& kern = findKernel(k.pagedDecodes(), matches, fmt::format("{} paged decode kernel for {}", dtName, shape));
    const int64_t splits = k.pagedDecodeSplits(kern, N, maxContext);
    guard({in[2], in[3], in[4]},
          fmt::format("decode {} {} {} {} {} {} {} {} {}", *names[0], *names[1], *names[2], kern.name, N, T, P, blocks,
                      splits),
          [this, &kern, N, T, P, blocks, splits, names](const TensorMap& step) {
      const auto [newTokens, context] =
          attentionSteps(step.at(*names[0]), step.at(*names[1]), step.at(*names[2]), T, P, blocks);
      return newTokens == 1 && k.pagedDecodeSplits(kern, N, context) == splits;
    });
    Tensor scratch = pool.tensor(ops::DType::F32, {GpuKernelSet::pagedDecodeScratchBytes(kern, N, splits) / 4 + 1});
    PagedDecodeBuffers b{q.raw(), cache.raw(), in[2]->dev.raw(), in[4]->dev.raw(), mut(o), mut(scratch)};
    k.launch(kern, b, N, maxBlocks, cache.dim(0), splits);
  } else {
    const auto& kern = k.pagedPrefillFor(dtName, heads, kvHeads, D, P, scale, N, maxNew);
    guard({in[2], in[3], in[4]},
          fmt::format("prefill {} {} {} {} {} {} {}", *names[0], *names[1], *names[2], T, P, blocks, maxNew),
          [T, P, blocks, maxNew, names](const TensorMap& step) {
      return attentionSteps(step.at(*names[0]), step.at(*names[1]), step.at(*names[2]), T, P, blocks).first == maxNew;
    });
    PagedPrefillBuffers b{q.raw(), cache.raw(), in[2]->dev.raw(), in[3]->dev.raw(), in[4]->dev.raw(), mut(o)};
    k.launch(kern, b, N, T, maxNew, maxBlocks, cache.dim(0));
  }
  return {o};
}

// region.elementwise: the operands in their planned row forms
// (ops/row_forms.h; the CPU twin is runtime/region_kernels.cpp).
V GpuExecutor::Impl::elementwise(const ops::NodeDef& n, const std::vector<const Val*>& in) const {
  const auto& [kern, launch] = elementwises.at(&n);
  std::vector<ops::Shape> shapes(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i]) shapes[i] = in[i]->dev.shape();
  std::vector<std::pair<const void*, int64_t>> buffers;
  for (auto [i, form] : launch.operands) {
    const Tensor& t = devArg(in, i, "operand");
    buffers.push_back({t.raw(), t.numel()});
  }
  const auto s = launch.shapes(shapes);
  V outs;
  for (const ops::Shape& o : s.outputs) {
    outs.push_back(pool.tensor(dt, o));
    buffers.push_back({outs.back().raw(), outs.back().numel()});
  }
  if (s.rows > 0) k.launch(*kern, buffers, s.rows);
  return outs;
}

V GpuExecutor::Impl::runNode(const ops::NodeDef& n, const std::vector<const Val*>& in) const {
  if (n.op == "region.gemm") return gemm(n, in);
  if (n.op == "region.elementwise") return elementwise(n, in);
  if (n.op == "region.rmsnorm") return rmsNorm(n, in);
  if (n.op == "region.rope") return ropeNode(n, in);
  if (n.op == "region.kv_write") return kvWrite(in);
  if (n.op == "region.rope_kv_write") return ropeKvWrite(n, in);
  if (n.op == "region.paged_attention") return pagedAttention(n, in);
  if (n.op == "region.embedding") {
    hostArg(in, 1, "token ids");
    ops::Shape s = in[1]->host.shape();
    if (const QuantWeight* q = packedTable(n)) {  // its integers (an i32 view), widened by the gather
      s.push_back(q->cols);
      return {gatherRows(*q, *in[1]).reshaped(s)};
    }
    const Tensor& table = devArg(in, 0, "embedding table");
    s.push_back(table.dim(table.rank() - 1));
    return {gatherRows(table, *in[1]).reshaped(s)};
  }
  fail("no GPU launcher for op '{}'", n.op);
}

// What can be checked before the first step: the op has a GPU launcher and
// the kernel set has the kernels its fixed shapes need (the rest, like the
// KV block size, is checked at the launch).
void GpuExecutor::Impl::prepare(const ops::NodeDef& n) {
  const nlohmann::json& a = n.attrs;
  if (n.op == "region.elementwise") {
    if (!a.contains("kernel")) fail("the node has no kernel attribute (compile it with `strata compile --target cuda:sm_90`)");
    const GpuElementwiseKernel& e = k.elementwise(a["kernel"].at("name").get<std::string>());
    if (e.dtype != dtName) fail("kernel {} stores {}; this executor computes on {}", e.name, e.dtype, dtName);
    elementwises[&n] = {&e, ops::ElementwiseLaunch::fromJson(a["kernel"])};
  } else if (n.op == "region.gemm") {
    const auto op = ops::GemmRegionOperands::of(n, n.inputs.size());
    if (op.gelu) fail("the GELU epilogue has no CUDA kernel yet (--backend cpu runs it)");
    GemmEpilogue e{op.bias, op.residual, op.swiglu};
    k.gemmFor(dtName, op.weightsNK, 1, e), k.gemmFor(dtName, op.weightsNK, int64_t(1) << 40, e);
    if (op.rows) gatherKernel();
    if (op.norm) findKernel(k.rmsNorms(), [&](const auto& r) { return r.dtype == dtName; }, dtName + " RMSNorm");
  } else if (n.op == "region.embedding") {
    if (!packedTable(n)) gatherKernel();
  } else if (n.op == "region.rmsnorm") {
    findKernel(k.rmsNorms(), [&](const auto& r) { return r.dtype == dtName; }, dtName + " RMSNorm");
  } else if (n.op == "region.paged_attention") {
    const int64_t h = a.at("heads").get<int64_t>(), kv = a.at("kv_heads").get<int64_t>(), d = a.at("head_dim").get<int64_t>();
    auto same = [&](const auto& x) { return x.dtype == dtName && x.heads == h && x.kvHeads == kv && x.headDim == d; };
    const std::string shape = fmt::format("{} heads over {} KV heads of dim {}", h, kv, d);
    // A decode kernel is optional: the prefill kernel runs decode steps
    // too where the set has none.
    findKernel(k.pagedPrefills(), same, fmt::format("{} paged prefill kernel for {}", dtName, shape));
  } else if (n.op == "region.rope_kv_write") {
    const int64_t d = a.at("head_dim").get<int64_t>();
    findKernel(k.ropeKvWrites(), [&](const auto& w) { return w.dtype == dtName && w.headDim == d; },
               fmt::format("{} RoPE + KV write kernel of head dim {}", dtName, d));
  } else if (n.op != "region.rope" && n.op != "region.kv_write") {
    fail("op '{}' has no GPU launcher (the GPU backend runs embedding, RMSNorm, GEMM, RoPE, KV write, paged "
         "attention and fused elementwise regions)",
         n.op);
  }
}

}  // namespace strata::runtime
