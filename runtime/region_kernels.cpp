#include "runtime/region_kernels.h"

#include <algorithm>

#include "ops/gemm_region.h"
#include "ops/kernel_table.h"
#include "ops/reference.h"

namespace strata::runtime {

using ops::Tensor;
using V = std::vector<Tensor>;

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

const Tensor& arg(const V& in, size_t i, const char* what) {
  if (in.size() <= i || !in[i].defined()) fail("missing {} (input #{})", what, i);
  return in[i];
}
const Tensor& f32(const V& in, size_t i, const char* what) {
  const Tensor& t = arg(in, i, what);
  if (t.dtype() != ops::DType::F32) fail("{} must be f32, got {}", what, ops::dtypeName(t.dtype()));
  return t;
}
// A weight matrix the kernels read in its stored type (f32, or f16 / bf16
// under f32 arithmetic: GemmKernelSpec::weightDtype, the gather's table).
const Tensor& matrix(const V& in, size_t i, const char* what) {
  const Tensor& t = arg(in, i, what);
  if (t.dtype() != ops::DType::F32 && t.dtype() != ops::DType::F16 && t.dtype() != ops::DType::BF16)
    fail("{} must be f32, f16 or bf16, got {}", what, ops::dtypeName(t.dtype()));
  return t;
}
const Tensor& i64(const V& in, size_t i, const char* what) {
  const Tensor& t = arg(in, i, what);
  if (t.dtype() != ops::DType::I64) fail("{} must be i64, got {}", what, ops::dtypeName(t.dtype()));
  return t;
}
void checkIndices(const Tensor& ids, int64_t limit, const char* what) {
  const int64_t* p = ids.data<int64_t>();
  for (int64_t i = 0; i < ids.numel(); ++i)
    if (p[i] < 0 || p[i] >= limit) fail("{} {} at #{} is outside [0, {})", what, p[i], i, limit);
}
// The layer cache [blocks, 2, KV heads, blockSize, D] a kernel built for
// `blockSize` can read.
void checkCache(const Tensor& cache, int64_t blockSize) {
  if (cache.rank() != 5 || cache.dim(3) != blockSize)
    fail("cache {} does not have the block size {} the kernel was built for", ops::shapeStr(cache.shape()), blockSize);
}

// Shape of x with its last dim replaced by n.
ops::Shape withLast(ops::Shape s, int64_t n) {
  s.back() = n;
  return s;
}

}  // namespace

RegionKernels::RegionKernels(abi::KernelLookup lookup, int threads) : lookup_(std::move(lookup)), threads_(threads) {}

RegionKernels::Launch RegionKernels::resolve(const ops::NodeDef& n, const nlohmann::json& a) const {
  if (!a.is_object() || !a.contains("name"))
    fail("node '{}' ({}): malformed kernel attribute {}", n.name, n.op, a.dump());
  Launch l;
  l.fn = lookup_(a.at("name").get<std::string>());
  l.blockM = a.value("block_m", (int64_t)1);
  l.blockN = a.value("block_n", (int64_t)1);
  l.maxRows = a.value("max_rows", (int64_t)1);
  l.packedWidth = a.value("packed_b", (int64_t)0);
  l.groupHeads = a.value("group_heads", false);
  if (a.contains("int8_blocks")) {
    const auto& f = a.at("int8_blocks");
    if (!f.is_object() || !f.value("block", nlohmann::json()).is_number_integer() || !f.value("offsets", nlohmann::json()).is_boolean() ||
        !f.value("nibbles", nlohmann::json(false)).is_boolean() ||
        !f.value("super_block", nlohmann::json(0)).is_number_integer() ||
        !f.value("sub_scales", nlohmann::json(false)).is_boolean() || f.at("block").get<int64_t>() <= 0 ||
        f.value("super_block", int64_t(0)) < 0)
      fail("node '{}' ({}): malformed int8_blocks {}", n.name, n.op, f.dump());
    l.int8Form = abi::Int8BlockForm{f.at("block").get<int64_t>(), f.at("offsets").get<bool>(), f.value("nibbles", false),
                                    f.value("super_block", int64_t(0)), f.value("sub_scales", false)};
  }
  if (l.blockM <= 0 || l.blockN <= 0 || (l.packedWidth && l.packedWidth != l.blockN)) fail("node '{}' ({}): kernel blocking {}", n.name, n.op, a.dump());
  return l;
}

void RegionKernels::prepare(const ops::NodeDef& n) {
  const auto& a = n.attrs.at("kernel");
  Resolved r;
  if (a.is_object() && a.value("engine", "") == "fallback") {
    // A node outside the regions (planCpuKernels): oneDNN runs what it
    // covers, the reference kernel the rest.
    if (!ops::findKernel(n.op)) fail("node '{}': op '{}' is not supported", n.name, n.op);
    if (OneDnnOps::covers(n) && !onednn_) onednn_ = std::make_unique<OneDnnOps>();
    r.fallback = true;
    nodes_[&n] = r;
    return;
  }
  if (n.op == "region.embedding" && a.is_object() && a.value("dequantize_rows", false)) {
    if (n.inputs.empty() || !quant_.count(n.inputs[0]))
      fail("node '{}' (region.embedding): planned to dequantize rows, but its table is not a quantized weight", n.name);
    r.dequantizeRows = true;
    nodes_[&n] = r;
    return;
  }
  r.main = resolve(n, a);
  if (a.contains("decode")) r.decode = resolve(n, a["decode"]);
  if (a.contains("small")) r.small = resolve(n, a["small"]);
  if (a.contains("gather")) r.gather = resolve(n, a["gather"]);
  if (n.op == "region.elementwise") r.elementwise = ops::ElementwiseLaunch::fromJson(a);
  nodes_[&n] = r;
}

void RegionKernels::launch(const Launch& l, const abi::KernelArgs& args, int64_t gx, int64_t gy, int64_t gz) const {
  abi::launch(l.fn, args, gx, gy, gz, threads_);
}

ops::RopeTables RegionKernels::ropeTables(int64_t headDim, float theta, int64_t positions) {
  std::lock_guard<std::mutex> lock(ropeMutex_);
  auto it = rope_.find({headDim, theta});
  if (it == rope_.end() || it->second.cos.dim(0) < positions) {
    // Grow geometrically so a long generation rebuilds the table O(log n) times.
    int64_t have = it == rope_.end() ? 0 : it->second.cos.dim(0);
    int64_t rows = std::max<int64_t>({positions, 2 * have, 256});
    it = rope_.insert_or_assign({headDim, theta}, ops::ropeTables(rows, headDim, theta)).first;
  }
  return it->second;
}

Tensor RegionKernels::gatherRows(const Launch& l, const Tensor& table, const Tensor& ids) {
  int64_t rows = table.dim(0), width = table.numel() / rows, T = ids.numel();
  checkIndices(ids, rows, "row index");
  Tensor out(ops::DType::F32, {T, width});
  abi::KernelArgs a;
  a.buffer(table.raw(), table.numel()).buffer(out.data<float>(), out.numel());
  a.buffer(ids.data<int64_t>(), T).index(T).index(rows).index(width);
  launch(l, a, T, ceilDiv(width, l.blockN));
  return out;
}

void RegionKernels::addQuantWeight(const std::string& name, QuantWeight w) {
  if (!w.format || w.rows <= 0 || w.cols % w.format->blockElems || !w.data)
    fail("quantized weight '{}': [{}, {}] is not rows of whole {} blocks", name, w.rows, w.cols,
         w.format ? w.format->name : "?");
  quant_[name] = w;
}

const RegionKernels::QuantWeight* RegionKernels::quantInput(const ops::NodeDef& n, int64_t i) const {
  if (i < 0 || i >= (int64_t)n.inputs.size()) return nullptr;
  auto it = quant_.find(n.inputs[i]);
  return it == quant_.end() ? nullptr : &it->second;
}

const abi::Int8BlockPanels& RegionKernels::int8Panels(const QuantWeight& w, int64_t width, abi::Int8BlockForm form) {
  std::lock_guard<std::mutex> lock(packMutex_);
  auto key = std::make_tuple(static_cast<const void*>(w.data), width, form.block, form.offsets, form.nibbles,
                             form.superBlock, form.subScales);
  auto it = int8Packed_.find(key);
  if (it == int8Packed_.end())
    it = int8Packed_.emplace(key, abi::packInt8BlockPanels(w.data, w.cols, w.rows, width, *w.format, form)).first;
  return it->second;
}

Tensor RegionKernels::dequantizedRows(const QuantWeight& w, const Tensor& ids) const {
  checkIndices(ids, w.rows, "row index");
  const int64_t T = ids.numel(), rowBytes = w.cols / w.format->blockElems * w.format->blockBytes;
  Tensor out(ops::DType::F32, {T, w.cols});
  for (int64_t t = 0; t < T; ++t) {
    const uint8_t* row = w.data + ids.data<int64_t>()[t] * rowBytes;
    float* o = out.mut<float>() + t * w.cols;
    for (int64_t b = 0; b < w.cols / w.format->blockElems; ++b)
      w.format->dequantizeBlock(row + b * w.format->blockBytes, o + b * w.format->blockElems);
  }
  return out;
}

const Tensor& RegionKernels::packedWeight(const Tensor& w, bool nk, int64_t width) {
  const int64_t K = w.dim(nk ? 1 : 0), N = w.dim(nk ? 0 : 1);
  std::lock_guard<std::mutex> lock(packMutex_);
  auto key = std::make_tuple(w.raw(), nk, width, K, N);
  auto it = packed_.find(key);
  if (it == packed_.end()) it = packed_.emplace(key, std::make_pair(w, abi::packPanels(w, nk, width))).first;
  return it->second.second;
}

// region.gemm (ops/gemm_region.h has the operands and attributes).
V RegionKernels::gemm(const ops::NodeDef& n, const Resolved& r, const V& in) {
  const auto g = ops::GemmRegionOperands::of(n, in.size());
  if (g.norm) fail("the RMSNorm prologue (a CUDA target's fusion) has no CPU kernel");
  Tensor x = f32(in, 0, "x");
  const int64_t K = x.dim(x.rank() - 1);
  ops::Shape outBase = x.shape();
  if (g.rows) {
    if (!r.gather) fail("the kernel attribute has no row gather");
    const Tensor& rows = i64(in, g.rowsAt(), "rows");
    outBase = ops::GemmRegionOperands::gatheredShape(x.shape(), rows.numel());
    x = gatherRows(*r.gather, x.reshaped({x.numel() / K, K}), rows);
  }
  const int64_t M = x.numel() / K;
  const Launch& l = r.decode && M <= r.decode->maxRows ? *r.decode
                    : r.small && M <= r.small->maxRows  ? *r.small
                                                        : r.main;
  // Quantized weights come by name (addQuantWeight), [N, K] rows of blocks.
  auto quant = [&](int64_t wi) { return quantInput(n, g.weight(wi)); };
  auto widthOf = [&](int64_t wi) {
    if (const QuantWeight* q = quant(wi)) {
      if (!g.weightsNK) fail("quantized weight '{}' must be read [N, K] (layout nk)", n.inputs[g.weight(wi)]);
      return g.width({q->rows, q->cols}, K, wi);
    }
    return g.width(matrix(in, g.weight(wi), "weight").shape(), K, wi);
  };
  const Tensor* res = g.residual ? &f32(in, g.residualAt(), "residual") : nullptr;
  V outs;
  for (int64_t wi = 0; wi < g.outputs(); ++wi) {
    int64_t N = widthOf(wi);
    if (g.swiglu && widthOf(1) != N) fail("gate and up weights differ in width");
    Tensor c(ops::DType::F32, withLast(outBase, N));
    abi::KernelArgs a;
    a.buffer(x.data<float>(), x.numel());
    for (int64_t j = wi; j < (g.swiglu ? 2 : wi + 1); ++j) {
      if (const QuantWeight* q = quant(j)) {
        if (!l.packedWidth || !l.int8Form)
          fail("quantized weight '{}' needs a panel-packed kernel for i8 blocks", n.inputs[g.weight(j)]);
        const abi::Int8BlockPanels& p = int8Panels(*q, l.packedWidth, *l.int8Form);
        a.buffer(p.values.data(), (int64_t)p.values.size());
        abi::int8ScaleBuffers(p, *l.int8Form, [&](const void* d, int64_t n) { a.buffer(d, n); });
        continue;
      }
      const Tensor& w = l.packedWidth ? packedWeight(in[g.weight(j)], g.weightsNK, l.packedWidth) : in[g.weight(j)];
      a.buffer(w.raw(), w.numel());
    }
    a.buffer(c.data<float>(), c.numel());
    if (g.bias)
      for (int64_t j = wi; j < (g.swiglu ? 2 : wi + 1); ++j) {
        const Tensor& b = f32(in, g.biasOf(j), "bias");
        if (b.numel() != N) fail("bias #{} has {} entries, the output {}", j, b.numel(), N);
        a.buffer(b.data<float>(), b.numel());
      }
    if (res) {
      if (res->numel() != M * N) fail("residual {} does not match the output [{}, {}]", ops::shapeStr(res->shape()), M, N);
      a.buffer(res->data<float>(), res->numel());
    }
    a.index(M).index(N).index(K);
    launch(l, a, ceilDiv(M, l.blockM), ceilDiv(N, l.blockN));
    outs.push_back(std::move(c));
  }
  return outs;
}

// region.elementwise: the kernel reads some of the inputs (the others are
// reduction axes it was built for), each in its planned row form
// (ops/row_forms.h); outputs are the full [rows, cols] space or one value
// per row.
V RegionKernels::elementwise(const Resolved& r, const V& in) {
  const ops::ElementwiseLaunch& k = *r.elementwise;
  std::vector<ops::Shape> shapes;
  for (const Tensor& t : in) shapes.push_back(t.shape());
  for (auto [i, form] : k.operands) f32(in, i, "operand");
  const auto s = k.shapes(shapes);
  abi::KernelArgs a;
  for (auto [i, form] : k.operands) a.buffer(in[i].data<float>(), in[i].numel());
  V outs;
  for (const ops::Shape& o : s.outputs) {
    outs.emplace_back(ops::DType::F32, o);
    a.buffer(outs.back().data<float>(), outs.back().numel());
  }
  a.index(s.rows);
  if (s.rows > 0) launch(r.main, a, s.rows);
  return outs;
}

// region.paged_attention operands: q, cache, block_tables, seq_starts, context_lens.
V RegionKernels::pagedAttention(const Resolved& r, const V& in) {
  const Tensor& q = f32(in, 0, "q");
  const Tensor& cache = f32(in, 1, "cache");
  const Tensor& tables = i64(in, 2, "block_tables");
  const Tensor& starts = i64(in, 3, "seq_starts");
  const Tensor& lens = i64(in, 4, "context_lens");
  checkCache(cache, r.main.blockN);
  const int64_t N = lens.numel(), D = cache.dim(4);
  if (starts.numel() != N + 1 || tables.rank() != 2 || tables.dim(0) != N)
    fail("seq_starts ({}) / block_tables {} do not match {} sequences", starts.numel(), ops::shapeStr(tables.shape()), N);
  const int64_t* st = starts.data<int64_t>();
  int64_t maxQ = 0;
  for (int64_t i = 0; i < N; ++i) maxQ = std::max(maxQ, st[i + 1] - st[i]);
  // Entries past a sequence's context are padding (-1) that the kernel
  // never reads; the ones it reads must name cache blocks.
  const int64_t* len = lens.data<int64_t>();
  const int64_t* tab = tables.data<int64_t>();
  const int64_t bs = cache.dim(3), maxBlocks = tables.dim(1);
  for (int64_t i = 0; i < N; ++i) {
    if (len[i] < st[i + 1] - st[i] || len[i] > maxBlocks * bs)
      fail("sequence {}: context length {} for {} new tokens and {} table entries of {}", i, len[i], st[i + 1] - st[i],
           maxBlocks, bs);
    for (int64_t b = 0; b < ceilDiv(len[i], bs); ++b)
      if (tab[i * maxBlocks + b] < 0 || tab[i * maxBlocks + b] >= cache.dim(0))
        fail("sequence {}: block table entry {} = {} is outside [0, {})", i, b, tab[i * maxBlocks + b], cache.dim(0));
  }
  const Launch& l = maxQ == 1 && r.decode ? *r.decode : r.main;
  Tensor o(ops::DType::F32, q.shape());
  int64_t heads = q.dim(q.rank() - 1) / D;
  if (l.groupHeads && heads % cache.dim(2))
    fail("{} query heads do not group over the cache's {} KV heads", heads, cache.dim(2));
  abi::KernelArgs a;
  a.buffer(q.data<float>(), q.numel()).buffer(cache.data<float>(), cache.numel()).buffer(o.data<float>(), o.numel());
  a.buffer(tables.data<int64_t>(), tables.numel()).buffer(st, starts.numel()).buffer(lens.data<int64_t>(), N);
  a.index(tables.dim(1)).index(cache.numel() / D);
  if (l.groupHeads)
    launch(l, a, 1, cache.dim(2), N);
  else
    launch(l, a, ceilDiv(maxQ, l.blockM), heads, N);
  return {o};
}

V RegionKernels::run(const ops::NodeDef& n, const V& in) {
  auto it = nodes_.find(&n);
  if (it == nodes_.end()) fail("node '{}' ({}) was not prepared", n.name, n.op);
  const Resolved& r = it->second;
  if (r.fallback) {
    if (onednn_)
      if (auto out = onednn_->run(n, in)) return *out;
    return (*ops::findKernel(n.op))(n, in);
  }
  const Launch& l = r.main;
  if (n.op == "region.gemm") return gemm(n, r, in);
  if (n.op == "region.paged_attention") return pagedAttention(r, in);
  if (n.op == "region.elementwise") return elementwise(r, in);
  if (n.op == "region.embedding" && r.dequantizeRows) {
    const Tensor& ids = i64(in, 1, "token ids");
    const QuantWeight& q = *quantInput(n, 0);
    ops::Shape s = ids.shape();
    s.push_back(q.cols);
    return {dequantizedRows(q, ids).reshaped(s)};
  }
  if (n.op == "region.embedding") {
    const Tensor& table = matrix(in, 0, "embedding table");
    const Tensor& ids = i64(in, 1, "token ids");
    ops::Shape s = ids.shape();
    s.push_back(table.dim(table.rank() - 1));
    return {gatherRows(l, table, ids).reshaped(s)};
  }
  if (n.op == "region.rmsnorm") {
    const Tensor& x = f32(in, 0, "x");
    const Tensor& w = f32(in, 1, "weight");
    int64_t width = x.dim(x.rank() - 1), rows = x.numel() / width;
    if (w.numel() != width) fail("weight has {} entries, x's rows {}", w.numel(), width);
    Tensor y(ops::DType::F32, x.shape());
    abi::KernelArgs a;
    a.buffer(x.data<float>(), x.numel()).buffer(w.data<float>(), width).buffer(y.data<float>(), y.numel());
    a.index(rows).index(width).f32(n.attrs.at("eps").get<float>());
    launch(l, a, rows);
    return {y};
  }
  if (n.op == "region.layernorm") {
    const Tensor& x = f32(in, 0, "x");
    const Tensor& w = f32(in, 1, "weight");
    const Tensor& b = f32(in, 2, "bias");
    int64_t width = x.dim(x.rank() - 1), rows = x.numel() / width;
    if (w.numel() != width || b.numel() != width)
      fail("weight / bias have {} / {} entries, x's rows {}", w.numel(), b.numel(), width);
    Tensor y(ops::DType::F32, x.shape());
    abi::KernelArgs a;
    a.buffer(x.data<float>(), x.numel()).buffer(w.data<float>(), width).buffer(b.data<float>(), width);
    a.buffer(y.data<float>(), y.numel()).index(rows).index(width).f32(n.attrs.value("epsilon", 1e-5f));
    launch(l, a, rows);
    return {y};
  }
  if (n.op == "region.rope") {
    const Tensor& x = f32(in, 0, "x");
    const Tensor& pos = i64(in, 1, "positions");
    int64_t D = n.attrs.at("head_dim").get<int64_t>(), width = x.dim(x.rank() - 1), T = x.numel() / width;
    if (pos.numel() != T) fail("{} positions for {} tokens", pos.numel(), T);
    const int64_t* p = pos.data<int64_t>();
    int64_t maxPos = 0;
    for (int64_t i = 0; i < T; ++i) {
      if (p[i] < 0) fail("negative position {} at token {}", p[i], i);
      maxPos = std::max(maxPos, p[i]);
    }
    const int64_t R = n.attrs.value("rotary_dim", (int64_t)0);
    ops::RopeTables tab = ropeTables(R ? R : D, n.attrs.at("theta").get<float>(), maxPos + 1);
    Tensor y(ops::DType::F32, x.shape());
    abi::KernelArgs a;
    a.buffer(x.data<float>(), x.numel()).buffer(y.data<float>(), y.numel());
    a.buffer(tab.cos.data<float>(), tab.cos.numel()).buffer(tab.sin.data<float>(), tab.sin.numel());
    a.buffer(p, T).index(T).index(tab.cos.dim(0));
    launch(l, a, T, width / D);
    return {y};
  }
  if (n.op == "region.kv_write") {
    Tensor cache = f32(in, 0, "cache");
    const Tensor& k = f32(in, 1, "k");
    const Tensor& v = f32(in, 2, "v");
    const Tensor& slots = i64(in, 3, "slot_mapping");
    checkCache(cache, l.blockN);
    int64_t Hk = cache.dim(2), D = cache.dim(4), T = slots.numel();
    if (k.numel() != T * Hk * D || v.numel() != T * Hk * D)
      fail("k/v {} / {} are not {} tokens of {} x {}", ops::shapeStr(k.shape()), ops::shapeStr(v.shape()), T, Hk, D);
    checkIndices(slots, cache.dim(0) * cache.dim(3), "cache slot");
    abi::KernelArgs a;
    a.buffer(cache.data<float>(), cache.numel()).buffer(k.data<float>(), k.numel()).buffer(v.data<float>(), v.numel());
    a.buffer(slots.data<int64_t>(), T).index(T).index(cache.numel() / D);
    launch(l, a, T, Hk);
    return {cache};
  }
  fail("no CPU launcher for op '{}'", n.op);
}

}  // namespace strata::runtime
