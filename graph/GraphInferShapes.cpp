// graph-infer-shapes: refine every node's result type from its operands.
// Rules follow ONNX semantics; symbolic dims keep their names through
// broadcasting, reshapes and strata's ops. Unknown stays unranked / `?`.
#include <optional>
#include <set>

#include "graph/Passes.h"
#include "graph/ShapeOperands.h"
#include "graph/SymbolicDims.h"
#include "llvm/ADT/StringSet.h"
#include "mlir/IR/Builders.h"

namespace strata::graph {

#define GEN_PASS_DEF_GRAPHINFERSHAPES
#include "graph/Passes.h.inc"

using namespace mlir;
using ops::Dim;
using Dims = std::vector<Dim>;

namespace {

Dim mergeDim(const Dim& a, const Dim& b) {
  if (a.isStatic() && a.value == 1) return b;
  if (b.isStatic() && b.value == 1) return a;
  if (a == b) return a;
  if (a.isStatic()) return a;
  if (b.isStatic()) return b;
  return {-1, ""};
}

std::optional<Dims> broadcast(const std::vector<std::optional<Dims>>& all) {
  Dims out;
  for (const auto& d : all) {
    if (!d) return std::nullopt;
    Dims a = *d;
    if (a.size() > out.size()) out.insert(out.begin(), a.size() - out.size(), Dim{1, ""});
    size_t off = out.size() - a.size();
    for (size_t i = 0; i < a.size(); ++i) out[off + i] = mergeDim(out[off + i], a[i]);
  }
  return out;
}

// shapeOperandDims marks entries it cannot know with the symbol "?"; as a
// result dim they are simply unnamed.
void forgetUnknown(Dims& d) {
  for (auto& x : d)
    if (x.symbol == "?") x = Dim{-1, ""};
}

std::optional<int64_t> intAttr(Operation* op, StringRef name) {
  if (auto a = op->getAttrOfType<IntegerAttr>(name)) return a.getInt();
  return std::nullopt;
}

std::optional<std::vector<int64_t>> intsAttr(Operation* op, StringRef name) {
  if (auto a = op->getAttrOfType<DenseI64ArrayAttr>(name)) return std::vector<int64_t>(a.asArrayRef().begin(), a.asArrayRef().end());
  return std::nullopt;
}

// Axes from operand `i` (newer opsets) or attribute `axes`.
std::optional<std::vector<int64_t>> axesOf(Operation* op, unsigned i) {
  if (op->getNumOperands() > i && !isa<NoneType>(op->getOperand(i).getType())) return constantInts(op->getOperand(i));
  if (auto a = intsAttr(op, "axes")) return a;
  return std::vector<int64_t>{};
}

int64_t norm(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

Type eltOf(Value v) {
  if (auto st = dyn_cast<ShapedType>(v.getType())) return st.getElementType();
  return {};
}

struct Result {
  std::optional<Dims> dims;
  Type elt;
};

Result infer(Operation* op) {
  MLIRContext* ctx = op->getContext();
  Builder b(ctx);
  StringRef name = op->getName().stripDialect();
  auto dimsOf = [&](unsigned i) { return i < op->getNumOperands() ? getDims(op->getOperand(i).getType()) : std::nullopt; };
  Type elt0 = op->getNumOperands() ? eltOf(op->getOperand(0)) : Type();
  static const llvm::StringSet<llvm::MallocAllocator> binary = {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "And", "Or", "Xor"};
  static const llvm::StringSet<llvm::MallocAllocator> compare = {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"};
  static const llvm::StringSet<llvm::MallocAllocator> sameShape = {"Neg", "Abs", "Sqrt", "Reciprocal", "Exp", "Log", "Sigmoid", "Silu", "Tanh",
                                              "Erf", "Relu", "Cos", "Sin", "Floor", "Ceil", "Not", "Identity", "Softmax", "LogSoftmax",
                                              "CumSum", "Trilu", "RMSNorm", "SimplifiedLayerNormalization", "RMSNormalization",
                                              "LayerNormalization", "Gelu",
                                              "RotaryEmbedding", "com.microsoft.SkipSimplifiedLayerNormalization",
                                              "com.microsoft.RotaryEmbedding", "Rope", "region.rmsnorm", "region.layernorm", "region.rope",
                                              "region.kv_write", "region.paged_attention"};
  std::vector<std::optional<Dims>> all;
  for (unsigned i = 0; i < op->getNumOperands(); ++i) all.push_back(dimsOf(i));

  if (binary.contains(name)) return {broadcast(all), elt0};
  if (compare.contains(name)) return {broadcast(all), b.getI1Type()};
  if (name == "IsNaN" || name == "IsInf") return {dimsOf(0), b.getI1Type()};
  if (sameShape.contains(name)) return {dimsOf(0), elt0};
  if (name == "Where") return {broadcast(all), eltOf(op->getOperand(1))};
  if (name == "Cast") {
    auto to = op->getAttrOfType<StringAttr>("to");
    Type t = elt0;
    if (to) {
      try { t = elementTypeFor(ctx, ops::parseDType(to.str())); } catch (const Error&) {}
    }
    return {dimsOf(0), t};
  }
  if (name == "Shape") {
    auto d = dimsOf(0);
    if (!d) return {Dims{{-1, ""}}, b.getI64Type()};
    int64_t r = (int64_t)d->size(), s = intAttr(op, "start").value_or(0), e = intAttr(op, "end").value_or(r);
    s = std::clamp<int64_t>(norm(s, r), 0, r);
    e = std::clamp<int64_t>(norm(e, r), 0, r);
    return {Dims{{std::max<int64_t>(e - s, 0), ""}}, b.getI64Type()};
  }
  if (name == "MakeShape") {
    auto dims = op->getAttrOfType<ArrayAttr>("dims");
    bool scalar = op->hasAttr("scalar") && op->getAttrOfType<BoolAttr>("scalar").getValue();
    if (scalar) return {Dims{}, b.getI64Type()};
    return {Dims{{dims ? (int64_t)dims.size() : -1, ""}}, b.getI64Type()};
  }
  if (name == "Transpose") {
    auto d = dimsOf(0);
    if (!d) return {std::nullopt, elt0};
    auto perm = intsAttr(op, "perm");
    std::vector<int64_t> p = perm ? *perm : std::vector<int64_t>{};
    if (p.empty())
      for (int64_t i = (int64_t)d->size() - 1; i >= 0; --i) p.push_back(i);
    Dims out;
    for (int64_t i : p) {
      if (norm(i, d->size()) < 0 || norm(i, d->size()) >= (int64_t)d->size()) return {std::nullopt, elt0};
      out.push_back((*d)[norm(i, d->size())]);
    }
    return {out, elt0};
  }
  if (name == "Reshape") {
    auto target = shapeOperandDims(op->getOperand(1));
    auto in = dimsOf(0);
    if (!target) return {std::nullopt, elt0};
    bool allowzero = intAttr(op, "allowzero").value_or(0) != 0;
    Dims out = *target;
    int64_t infer = -1;
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i].isStatic() && out[i].value == 0 && !allowzero) out[i] = in && i < in->size() ? (*in)[i] : Dim{-1, ""};
      if (out[i].symbol.empty() && out[i].value == -1) infer = i;
    }
    forgetUnknown(out);
    if (infer >= 0 && in) {
      // -1 is the static part of the input over the static part of the
      // output, when both sides hold the same named symbolic dims.
      std::multiset<std::string> symIn, symOut;
      int64_t staticIn = 1, staticOut = 1;
      bool ok = true;
      for (const auto& d : *in) {
        if (d.isStatic()) staticIn *= d.value;
        else if (d.symbol.empty()) ok = false;
        else symIn.insert(d.symbol);
      }
      for (size_t i = 0; i < out.size(); ++i) {
        if ((int64_t)i == infer) continue;
        if (out[i].isStatic()) staticOut *= out[i].value;
        else if (out[i].symbol.empty()) ok = false;
        else symOut.insert(out[i].symbol);
      }
      bool exact = ok && symIn == symOut && staticOut > 0 && staticIn % staticOut == 0;
      out[infer] = exact ? Dim{staticIn / staticOut, ""} : Dim{-1, ""};
      // Or the one input symbol the output lacks, where the static parts
      // agree (Reshape(input_ids, [-1, sequence]) keeps the batch).
      std::multiset<std::string> rest = symIn;
      bool within = ok;
      for (const auto& sym : symOut) {
        auto it = rest.find(sym);
        if (it == rest.end()) within = false;
        else rest.erase(it);
      }
      if (!exact && within && rest.size() == 1 && staticIn == staticOut) out[infer] = Dim{-1, *rest.begin()};
    } else if (infer >= 0) {
      out[infer] = Dim{-1, ""};
    }
    return {out, elt0};
  }
  if (name == "Expand") {
    auto target = shapeOperandDims(op->getOperand(1));
    // A shape operand of static length n whose values are unknown: n dims,
    // each the input's where that is not 1 (broadcast), else unknown.
    auto st = dyn_cast<RankedTensorType>(op->getOperand(1).getType());
    if (!target && st && st.getRank() == 1 && !st.isDynamicDim(0)) target = Dims(st.getDimSize(0), Dim{-1, ""});
    if (!target) return {std::nullopt, elt0};
    forgetUnknown(*target);
    return {broadcast({dimsOf(0), target}), elt0};
  }
  if (name == "ConstantOfShape") {
    auto target = shapeOperandDims(op->getOperand(0));
    Type t = b.getF32Type();
    if (auto v = op->getAttrOfType<DenseElementsAttr>("value")) t = cast<ShapedType>(v.getType()).getElementType();
    if (target) forgetUnknown(*target);
    return {target, t};
  }
  if (name == "Range") {
    // Range(0, n, 1) has n elements: n's dim when n is a shape entry.
    auto start = constantInts(op->getOperand(0)), delta = constantInts(op->getOperand(2));
    auto n = shapeOperandDims(op->getOperand(1));
    if (start && delta && start->size() == 1 && delta->size() == 1 && (*start)[0] == 0 && (*delta)[0] == 1 && n &&
        n->size() == 1 && (*n)[0].symbol != "?" && ((*n)[0].isStatic() || !(*n)[0].symbol.empty()))
      return {Dims{(*n)[0]}, elt0};
    return {Dims{{-1, ""}}, elt0};
  }
  if (name == "Gather") {
    auto d = dimsOf(0), ix = dimsOf(1);
    if (!d || !ix) return {std::nullopt, elt0};
    int64_t a = norm(intAttr(op, "axis").value_or(0), d->size());
    if (a < 0 || a >= (int64_t)d->size()) return {std::nullopt, elt0};
    Dims out(d->begin(), d->begin() + a);
    out.insert(out.end(), ix->begin(), ix->end());
    out.insert(out.end(), d->begin() + a + 1, d->end());
    return {out, elt0};
  }
  if (name == "GatherND") {
    auto d = dimsOf(0), ix = dimsOf(1);
    if (!d || !ix || ix->empty() || !ix->back().isStatic()) return {std::nullopt, elt0};
    int64_t bd = intAttr(op, "batch_dims").value_or(0), k = ix->back().value;
    if (bd + k > (int64_t)d->size()) return {std::nullopt, elt0};
    Dims out(ix->begin(), ix->end() - 1);
    out.insert(out.end(), d->begin() + bd + k, d->end());
    return {out, elt0};
  }
  if (name == "Concat") {
    auto first = dimsOf(0);
    if (!first) return {std::nullopt, elt0};
    int64_t a = norm(intAttr(op, "axis").value_or(0), first->size());
    Dims out = *first;
    int64_t sum = 0;
    bool staticSum = true;
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      auto d = dimsOf(i);
      if (!d || d->size() != first->size() || a < 0 || a >= (int64_t)d->size()) return {std::nullopt, elt0};
      for (size_t k = 0; k < d->size(); ++k)
        if ((int64_t)k != a) out[k] = mergeDim(out[k], (*d)[k]);
      if ((*d)[a].isStatic()) sum += (*d)[a].value;
      else staticSum = false;
    }
    out[a] = staticSum ? Dim{sum, ""} : Dim{-1, ""};
    return {out, elt0};
  }
  if (name == "Flatten") {
    // [prod(d[:axis]), prod(d[axis:])]: a side of one non-1 dim keeps it
    // (and its symbol), of static dims their product, else dynamic.
    auto d = dimsOf(0);
    if (!d) return {std::nullopt, elt0};
    const int64_t r = (int64_t)d->size(), a = norm(intAttr(op, "axis").value_or(1), r);
    if (a < 0 || a > r) return {std::nullopt, elt0};
    auto side = [&](int64_t from, int64_t to) {
      Dim out{1, ""};
      int64_t product = 1, notOne = 0;
      bool allStatic = true;
      for (int64_t i = from; i < to; ++i) {
        const Dim& x = (*d)[i];
        if (x.isStatic() && x.value == 1) continue;
        ++notOne, out = x;
        if (x.isStatic()) product *= x.value;
        else allStatic = false;
      }
      if (notOne <= 1) return out;
      return allStatic ? Dim{product, ""} : Dim{-1, ""};
    };
    return {Dims{side(0, a), side(a, r)}, elt0};
  }
  if (name == "Unsqueeze" || name == "Squeeze") {
    auto d = dimsOf(0);
    auto axes = axesOf(op, 1);
    if (!d || !axes) return {std::nullopt, elt0};
    Dims out;
    if (name == "Unsqueeze") {
      int64_t r = (int64_t)(d->size() + axes->size());
      std::vector<bool> ins(r, false);
      for (int64_t a : *axes) {
        if (norm(a, r) < 0 || norm(a, r) >= r) return {std::nullopt, elt0};
        ins[norm(a, r)] = true;
      }
      size_t j = 0;
      for (int64_t i = 0; i < r; ++i) out.push_back(ins[i] ? Dim{1, ""} : (*d)[j++]);
    } else {
      int64_t r = (int64_t)d->size();
      for (int64_t i = 0; i < r; ++i) {
        bool listed = std::any_of(axes->begin(), axes->end(), [&](int64_t a) { return norm(a, r) == i; });
        bool drop = listed || (axes->empty() && (*d)[i].isStatic() && (*d)[i].value == 1);
        if (axes->empty() && !(*d)[i].isStatic()) return {std::nullopt, elt0};
        if (!drop) out.push_back((*d)[i]);
      }
    }
    return {out, elt0};
  }
  if (name == "Slice") {
    auto d = dimsOf(0);
    if (!d) return {std::nullopt, elt0};
    auto starts = constantInts(op->getOperand(1)), ends = constantInts(op->getOperand(2));
    std::optional<std::vector<int64_t>> axes = op->getNumOperands() > 3 && !isa<NoneType>(op->getOperand(3).getType())
                                                   ? constantInts(op->getOperand(3)) : std::optional<std::vector<int64_t>>();
    std::optional<std::vector<int64_t>> steps = op->getNumOperands() > 4 && !isa<NoneType>(op->getOperand(4).getType())
                                                    ? constantInts(op->getOperand(4)) : std::optional<std::vector<int64_t>>();
    Dims out = *d;
    int64_t r = (int64_t)d->size();
    if (!starts || !ends || (op->getNumOperands() > 3 && !axes && !isa<NoneType>(op->getOperand(3).getType()))) {
      for (auto& x : out) x = Dim{-1, ""};  // rank known, extents not
      return {out, elt0};
    }
    for (size_t i = 0; i < starts->size() && i < ends->size(); ++i) {
      int64_t a = axes && i < axes->size() ? norm((*axes)[i], r) : (int64_t)i;
      int64_t s = steps && i < steps->size() ? (*steps)[i] : 1;
      if (a < 0 || a >= r || s == 0) return {std::nullopt, elt0};
      int64_t lo = (*starts)[i], hi = (*ends)[i];
      Dim dim = (*d)[a];
      if (!dim.isStatic()) {  // the whole dim survives only a [0, big) unit-step slice
        out[a] = (s == 1 && lo == 0 && hi >= (int64_t)INT32_MAX) ? dim : Dim{-1, ""};
        continue;
      }
      int64_t n = dim.value;
      lo = lo < 0 ? lo + n : lo;
      hi = hi < 0 ? hi + n : hi;
      if (s > 0) {
        lo = std::clamp<int64_t>(lo, 0, n);
        hi = std::clamp<int64_t>(hi, 0, n);
        out[a] = Dim{hi > lo ? (hi - lo + s - 1) / s : 0, ""};
      } else {
        lo = std::clamp<int64_t>(lo, -1, n - 1);
        hi = std::clamp<int64_t>(hi, -1, n - 1);
        out[a] = Dim{lo > hi ? (lo - hi - s - 1) / -s : 0, ""};
      }
    }
    return {out, elt0};
  }
  if (name == "MatMul" || name == "com.microsoft.FusedMatMul") {
    auto a = dimsOf(0), c = dimsOf(1);
    if (!a || !c || a->size() < 2 || c->size() < 2) return {std::nullopt, elt0};
    if (intAttr(op, "transA").value_or(0)) std::swap((*a)[a->size() - 1], (*a)[a->size() - 2]);
    if (intAttr(op, "transB").value_or(0)) std::swap((*c)[c->size() - 1], (*c)[c->size() - 2]);
    auto batch = broadcast({Dims(a->begin(), a->end() - 2), Dims(c->begin(), c->end() - 2)});
    if (!batch) return {std::nullopt, elt0};
    batch->push_back((*a)[a->size() - 2]);
    batch->push_back(c->back());
    return {batch, elt0};
  }
  if (name == "Linear") {
    auto x = dimsOf(0), w = dimsOf(1);
    if (!x || !w || x->empty() || w->size() != 2) return {std::nullopt, elt0};
    Dims out = *x;
    out.back() = (*w)[0];
    return {out, elt0};
  }
  if (name == "Gemm") {
    auto a = dimsOf(0), c = dimsOf(1);
    if (!a || !c || a->size() != 2 || c->size() != 2) return {std::nullopt, elt0};
    bool ta = intAttr(op, "transA").value_or(0), tb = intAttr(op, "transB").value_or(0);
    return {Dims{(*a)[ta ? 1 : 0], (*c)[tb ? 0 : 1]}, elt0};
  }
  if (name.starts_with("Reduce")) {
    auto d = dimsOf(0);
    auto axes = axesOf(op, 1);
    if (!d || !axes) return {std::nullopt, elt0};
    bool keep = intAttr(op, "keepdims").value_or(1) != 0;
    int64_t r = (int64_t)d->size();
    Dims out;
    for (int64_t i = 0; i < r; ++i) {
      bool red = axes->empty() || std::any_of(axes->begin(), axes->end(), [&](int64_t a) { return norm(a, r) == i; });
      if (!red) out.push_back((*d)[i]);
      else if (keep) out.push_back(Dim{1, ""});
    }
    return {out, elt0};
  }
  if (name == "region.embedding") {
    auto t = dimsOf(0), ids = dimsOf(1);
    if (!t || !ids || t->size() != 2) return {std::nullopt, elt0};
    Dims out = *ids;
    out.push_back((*t)[1]);
    return {out, elt0};
  }
  if (name == "Attention") {
    auto q = dimsOf(0), v = dimsOf(2);
    if (!q || !v || q->size() != 4 || v->size() != 4) return {std::nullopt, elt0};
    return {Dims{(*q)[0], (*q)[1], (*q)[2], (*v)[3]}, elt0};
  }
  if (name == "onnx.Attention") {
    auto q = dimsOf(0), v = dimsOf(2);
    if (!q || !v || q->size() != v->size()) return {std::nullopt, elt0};
    if (q->size() == 4) return {Dims{(*q)[0], (*q)[1], (*q)[2], (*v)[3]}, elt0};
    auto hq = intAttr(op, "q_num_heads"), hk = intAttr(op, "kv_num_heads");
    if (q->size() != 3 || !hq || !hk || !v->back().isStatic() || *hk <= 0) return {std::nullopt, elt0};
    return {Dims{(*q)[0], (*q)[1], {*hq * (v->back().value / *hk), ""}}, elt0};
  }
  if (name == "com.microsoft.GroupQueryAttention" || name == "com.microsoft.MultiHeadAttention") return {dimsOf(0), elt0};
  if (name == "Tile") {
    auto d = dimsOf(0);
    auto reps = constantInts(op->getOperand(1));
    if (!d) return {std::nullopt, elt0};
    Dims out = *d;
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = reps && i < reps->size() && out[i].isStatic() ? Dim{out[i].value * (*reps)[i], ""}
               : reps && i < reps->size() && (*reps)[i] == 1 ? out[i] : Dim{-1, ""};
    return {out, elt0};
  }
  return {std::nullopt, elt0};
}

// Results after the first, for the ops that have more: present K/V of
// Attention-23 ([B, Hkv, ?, D]; K itself without past) and of
// GroupQueryAttention, SkipSimplifiedLayerNormalization's sum (#3).
SmallVector<std::pair<unsigned, Result>> inferMore(Operation* op) {
  StringRef name = op->getName().stripDialect();
  auto dimsOf = [&](unsigned i) {
    return i < op->getNumOperands() ? getDims(op->getOperand(i).getType()) : std::optional<Dims>();
  };
  auto given = [&](unsigned i) { return i < op->getNumOperands() && !isa<NoneType>(op->getOperand(i).getType()); };
  SmallVector<std::pair<unsigned, Result>> r;
  if (name == "onnx.Attention") {
    for (unsigned kv : {1u, 2u}) {
      auto d = dimsOf(kv);
      if (kv >= op->getNumResults() || !d || d->size() != 4) continue;
      if (given(kv + 3)) (*d)[2] = Dim{-1, ""};
      r.push_back({kv, {d, eltOf(op->getOperand(kv))}});
    }
  } else if (name == "com.microsoft.GroupQueryAttention") {
    auto q = dimsOf(0);
    auto hq = intAttr(op, "num_heads"), hk = intAttr(op, "kv_num_heads");
    if (q && q->size() == 3 && q->back().isStatic() && hq && hk && *hq > 0)
      for (unsigned kv : {1u, 2u})
        if (kv < op->getNumResults())
          r.push_back({kv, {Dims{(*q)[0], {*hk, ""}, {-1, ""}, {q->back().value / *hq, ""}}, eltOf(op->getOperand(0))}});
  } else if (name == "com.microsoft.SkipSimplifiedLayerNormalization" && op->getNumResults() > 3) {
    r.push_back({3, {broadcast({dimsOf(0), dimsOf(1)}), eltOf(op->getOperand(0))}});
  }
  return r;
}

struct GraphInferShapes : impl::GraphInferShapesBase<GraphInferShapes> {
  void runOnOperation() override {
    MLIRContext* ctx = &getContext();
    for (Operation& op : getOperation().getBody().front().without_terminator()) {
      if (isa<WeightOp, ConstantOp, NoneOp>(op) || op.getNumResults() == 0) continue;
      Result r = infer(&op);
      if (!r.elt) r.elt = Builder(ctx).getF32Type();
      Type t = r.dims ? Type(makeTensorType(ctx, *r.dims, r.elt)) : Type(UnrankedTensorType::get(r.elt));
      if (op.getName().stripDialect() == "Split") {
        // The input's dims with the split axis's extent: from the constant
        // `split` operand, or an equal split of a static extent (ONNX:
        // ceil(extent / outputs) each, the last takes the rest); else
        // unknown (the rank is known).
        auto d = getDims(op.getOperand(0).getType());
        const int64_t n = op.getNumResults();
        if (!d) {
          for (Value res : op.getResults()) res.setType(UnrankedTensorType::get(r.elt));
          continue;
        }
        const int64_t a = norm(intAttr(&op, "axis").value_or(0), d->size());
        std::optional<std::vector<int64_t>> sizes;
        if (op.getNumOperands() > 1 && !isa<NoneType>(op.getOperand(1).getType())) sizes = constantInts(op.getOperand(1));
        else if (a >= 0 && a < (int64_t)d->size() && (*d)[a].isStatic()) {
          const int64_t extent = (*d)[a].value, each = (extent + n - 1) / n;
          sizes = std::vector<int64_t>(n, each);
          sizes->back() = extent - each * (n - 1);
        }
        for (int64_t i = 0; i < n; ++i) {
          Dims o = *d;
          if (a >= 0 && a < (int64_t)o.size())
            o[a] = sizes && (int64_t)sizes->size() == n && (*sizes)[i] >= 0 ? Dim{(*sizes)[i], ""} : Dim{-1, ""};
          op.getResult(i).setType(makeTensorType(ctx, o, r.elt));
        }
        continue;
      }
      // No rule (region.gemm, whose builder sets its result types): keep
      // what is known rather than forget it.
      for (auto& [i, more] : inferMore(&op))
        if (more.dims) op.getResult(i).setType(makeTensorType(ctx, *more.dims, more.elt));
      if (!r.dims && isa<RankedTensorType>(op.getResult(0).getType())) continue;
      op.getResult(0).setType(t);
    }
  }
};

}  // namespace

}  // namespace strata::graph
