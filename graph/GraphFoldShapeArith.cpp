// graph-fold-shape-arith: evaluate exporter shape arithmetic symbolically.
//
// Each known integer value is a vector of affine entries c + sum(k * dim(x, d)).
// Sources: Shape(x), integer constants, MakeShape. Transfer functions cover
// the ops exporters chain (Gather, Concat, Unsqueeze, Squeeze, Reshape, Cast,
// Identity, Slice, Add, Sub, Mul, Div, Equal, Where). Dims named by the same
// symbol are canonicalized to the first graph input carrying it, so
// Shape(input_ids)[1] and Shape(position_ids)[1] are the same term. Known
// values read by ops outside the chain are replaced by a constant or a
// MakeShape; graph-dce then removes the chain.
#include <map>
#include <optional>

#include "graph/Passes.h"
#include "graph/ShapeOperands.h"
#include "graph/SymbolicDims.h"
#include "mlir/IR/Builders.h"

namespace strata::graph {

#define GEN_PASS_DEF_GRAPHFOLDSHAPEARITH
#include "graph/Passes.h.inc"

using namespace mlir;

namespace {

// dim(src, dim). `order` is src's position in the graph (arguments first,
// then results in op order), so terms sort the same way on every run.
struct Term {
  Value src;
  int64_t dim;
  int64_t order;
  bool operator==(const Term& o) const { return src == o.src && dim == o.dim; }
  bool operator<(const Term& o) const { return order != o.order ? order < o.order : dim < o.dim; }
};

// c + sum(coeff * dim(term)); dims are >= 0.
struct Aff {
  int64_t c = 0;
  std::map<Term, int64_t> terms;
  bool isConst() const { return terms.empty(); }
  bool operator==(const Aff& o) const { return c == o.c && terms == o.terms; }
};

struct Known {
  std::vector<Aff> v;
  bool scalar = false;
  bool isBool = false;
};

class Folder {
 public:
  explicit Folder(GraphOp g) : graph_(g) {
    Block& body = g.getBody().front();
    for (BlockArgument a : body.getArguments()) order_[a] = (int64_t)order_.size();
    for (Operation& op : body)
      for (Value r : op.getResults()) order_[r] = (int64_t)order_.size();
    for (BlockArgument a : body.getArguments())
      if (auto dims = getDims(a.getType()))
        for (size_t d = 0; d < dims->size(); ++d)
          if (!(*dims)[d].isStatic() && !(*dims)[d].symbol.empty())
            canonical_.try_emplace((*dims)[d].symbol, Term{a, (int64_t)d, order_[a]});
  }

  void run() {
    Block& body = graph_.getBody().front();
    for (Operation& op : body.without_terminator())
      if (op.getNumResults() == 1)
        if (auto k = evaluate(&op)) known_[op.getResult(0)] = *k;
    for (Operation& op : llvm::make_early_inc_range(body.without_terminator())) {
      if (op.getNumResults() == 1 && known_.count(op.getResult(0))) continue;  // inside a chain
      for (OpOperand& use : op.getOpOperands()) replace(use);
    }
  }

 private:
  Aff dimOf(Value x, int64_t d, const ops::Dim& dim) {
    Aff a;
    if (dim.isStatic()) { a.c = dim.value; return a; }
    Term t{x, d, order_.lookup(x)};
    if (!dim.symbol.empty())
      if (auto it = canonical_.find(dim.symbol); it != canonical_.end()) t = it->second;
    a.terms[t] = 1;
    return a;
  }

  const Known* get(Value v) {
    auto it = known_.find(v);
    return it == known_.end() ? nullptr : &it->second;
  }

  static std::optional<Aff> combine(const Aff& a, const Aff& b, StringRef op) {
    Aff r;
    if (op == "Add" || op == "Sub") {
      int64_t s = op == "Add" ? 1 : -1;
      r = a;
      r.c += s * b.c;
      for (const auto& [t, k] : b.terms)
        if ((r.terms[t] += s * k) == 0) r.terms.erase(t);
      return r;
    }
    if (op == "Mul") {
      if (!a.isConst() && !b.isConst()) return std::nullopt;
      const Aff& x = a.isConst() ? b : a;
      int64_t k = a.isConst() ? a.c : b.c;
      r.c = x.c * k;
      if (k != 0)
        for (const auto& [t, c] : x.terms) r.terms[t] = c * k;
      return r;
    }
    if (op == "Div" && a.isConst() && b.isConst() && b.c != 0) {
      r.c = a.c / b.c;
      return r;
    }
    return std::nullopt;
  }

  // Decides a == b where possible: identical, both constant, or a
  // non-negative expression against a negative constant.
  static std::optional<bool> equal(const Aff& a, const Aff& b) {
    if (a == b) return true;
    if (a.isConst() && b.isConst()) return a.c == b.c;
    auto nonneg = [](const Aff& x) {
      if (x.c < 0) return false;
      for (const auto& [t, k] : x.terms) if (k < 0) return false;
      return true;
    };
    if (b.isConst() && b.c < 0 && nonneg(a)) return false;
    if (a.isConst() && a.c < 0 && nonneg(b)) return false;
    return std::nullopt;
  }

  std::optional<Known> evaluate(Operation* op) {
    StringRef name = op->getName().getStringRef();
    auto intAttr = [&](StringRef k, int64_t d) {
      auto a = op->getAttrOfType<IntegerAttr>(k);
      return a ? a.getInt() : d;
    };
    Type resultType = op->getResult(0).getType();
    auto rt = dyn_cast<ShapedType>(resultType);
    if (!rt || !(rt.getElementType().isInteger(64) || rt.getElementType().isInteger(32) || rt.getElementType().isInteger(1)))
      return std::nullopt;
    if (auto c = dyn_cast<ConstantOp>(op)) {
      auto ty = cast<ShapedType>(c.getType());
      if (ty.getRank() > 1 || ty.getNumElements() > 64) return std::nullopt;
      auto ints = constantInts(c.getResult());
      if (!ints) {  // bool constants
        auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
        if (!dense || !dense.getElementType().isInteger(1)) return std::nullopt;
        Known k{{}, ty.getRank() == 0, true};
        for (bool x : dense.getValues<bool>()) k.v.push_back(Aff{x ? 1 : 0, {}});
        return k;
      }
      Known k{{}, ty.getRank() == 0, false};
      for (int64_t x : *ints) k.v.push_back(Aff{x, {}});
      return k;
    }
    if (name == "graph.Shape") {
      Value x = op->getOperand(0);
      auto dims = getDims(x.getType());
      if (!dims) return std::nullopt;
      int64_t r = (int64_t)dims->size(), s = intAttr("start", 0), e = intAttr("end", r);
      s = std::clamp<int64_t>(s < 0 ? s + r : s, 0, r);
      e = std::clamp<int64_t>(e < 0 ? e + r : e, 0, r);
      Known k;
      for (int64_t d = s; d < e; ++d) k.v.push_back(dimOf(x, d, (*dims)[d]));
      return k;
    }
    if (name == "graph.MakeShape") {
      auto entries = op->getAttrOfType<ArrayAttr>("dims");
      if (!entries) return std::nullopt;
      Known k;
      k.scalar = op->hasAttr("scalar");
      for (Attribute e : entries) {
        if (auto i = dyn_cast<IntegerAttr>(e)) { k.v.push_back(Aff{i.getInt(), {}}); continue; }
        auto dict = dyn_cast<DictionaryAttr>(e);
        if (!dict) return std::nullopt;
        Aff a;
        if (auto c = dict.getAs<IntegerAttr>("c")) a.c = c.getInt();
        auto terms = dict.getAs<ArrayAttr>("terms");
        if (!terms) return std::nullopt;
        for (Attribute t : terms) {
          auto arr = dyn_cast<DenseI64ArrayAttr>(t);
          if (!arr || arr.size() != 3 || arr[0] < 0 || arr[0] >= (int64_t)op->getNumOperands()) return std::nullopt;
          Value src = op->getOperand(arr[0]);
          auto dims = getDims(src.getType());
          if (!dims || arr[1] < 0 || arr[1] >= (int64_t)dims->size()) return std::nullopt;
          auto x = combine(a, *combine(dimOf(src, arr[1], (*dims)[arr[1]]), Aff{arr[2], {}}, "Mul"), "Add");
          a = *x;
        }
        k.v.push_back(a);
      }
      return k;
    }
    std::vector<const Known*> in;
    for (Value v : op->getOperands()) in.push_back(get(v));
    auto allKnown = [&](size_t n) {
      if (in.size() < n) return false;
      for (size_t i = 0; i < n; ++i) if (!in[i]) return false;
      return true;
    };
    if (name == "graph.Identity" || name == "graph.Cast") {
      if (!allKnown(1)) return std::nullopt;
      Known k = *in[0];
      if (name == "graph.Cast") k.isBool = rt.getElementType().isInteger(1);
      return k;
    }
    if (name == "graph.Gather") {
      if (!allKnown(2) || in[0]->scalar || intAttr("axis", 0) != 0) return std::nullopt;
      Known k{{}, in[1]->scalar, in[0]->isBool};
      int64_t n = (int64_t)in[0]->v.size();
      for (const Aff& i : in[1]->v) {
        if (!i.isConst()) return std::nullopt;
        int64_t j = i.c < 0 ? i.c + n : i.c;
        if (j < 0 || j >= n) return std::nullopt;
        k.v.push_back(in[0]->v[j]);
      }
      return k;
    }
    if (name == "graph.Concat") {
      if (!allKnown(in.size())) return std::nullopt;
      Known k;
      for (const Known* x : in) {
        if (x->scalar) return std::nullopt;
        k.isBool = x->isBool;
        k.v.insert(k.v.end(), x->v.begin(), x->v.end());
      }
      return k;
    }
    if (name == "graph.Unsqueeze" || name == "graph.Squeeze" || name == "graph.Reshape") {
      if (!in[0]) return std::nullopt;
      auto dims = getDims(resultType);
      if (!dims || dims->size() > 1 || (int64_t)in[0]->v.size() != (dims->empty() ? 1 : (*dims)[0].value)) return std::nullopt;
      Known k = *in[0];
      k.scalar = dims->empty();
      return k;
    }
    if (name == "graph.Slice") {
      if (!in[0] || in[0]->scalar) return std::nullopt;
      auto st = constantInts(op->getOperand(1)), en = constantInts(op->getOperand(2));
      if (!st || !en || st->size() != 1 || en->size() != 1) return std::nullopt;
      int64_t step = 1;
      if (op->getNumOperands() > 4) {
        auto s = constantInts(op->getOperand(4));
        if (!s || s->size() != 1) return std::nullopt;
        step = (*s)[0];
      }
      if (op->getNumOperands() > 3) {
        auto a = constantInts(op->getOperand(3));
        if (!a || a->size() != 1 || ((*a)[0] != 0 && (*a)[0] != -1)) return std::nullopt;
      }
      if (step != 1) return std::nullopt;
      int64_t n = (int64_t)in[0]->v.size(), lo = (*st)[0], hi = (*en)[0];
      lo = std::clamp<int64_t>(lo < 0 ? lo + n : lo, 0, n);
      hi = std::clamp<int64_t>(hi < 0 ? hi + n : hi, 0, n);
      Known k{{}, false, in[0]->isBool};
      for (int64_t i = lo; i < hi; ++i) k.v.push_back(in[0]->v[i]);
      return k;
    }
    bool arith = name == "graph.Add" || name == "graph.Sub" || name == "graph.Mul" || name == "graph.Div";
    if (arith || name == "graph.Equal") {
      if (!allKnown(2)) return std::nullopt;
      const Known &a = *in[0], &b = *in[1];
      size_t n = std::max(a.v.size(), b.v.size());
      if ((a.v.size() != n && a.v.size() != 1) || (b.v.size() != n && b.v.size() != 1)) return std::nullopt;
      Known k{{}, a.scalar && b.scalar, !arith};
      for (size_t i = 0; i < n; ++i) {
        const Aff& x = a.v[a.v.size() == 1 ? 0 : i];
        const Aff& y = b.v[b.v.size() == 1 ? 0 : i];
        if (arith) {
          auto r = combine(x, y, name.drop_front(6));
          if (!r) return std::nullopt;
          k.v.push_back(*r);
        } else {
          auto e = equal(x, y);
          if (!e) return std::nullopt;
          k.v.push_back(Aff{*e ? 1 : 0, {}});
        }
      }
      return k;
    }
    if (name == "graph.Where") {
      if (!allKnown(3)) return std::nullopt;
      size_t n = std::max({in[0]->v.size(), in[1]->v.size(), in[2]->v.size()});
      Known k{{}, in[0]->scalar && in[1]->scalar && in[2]->scalar, in[1]->isBool};
      for (size_t i = 0; i < n; ++i) {
        auto at = [&](const Known* x) -> const Aff* { return x->v.size() == 1 ? &x->v[0] : i < x->v.size() ? &x->v[i] : nullptr; };
        const Aff *c = at(in[0]), *x = at(in[1]), *y = at(in[2]);
        if (!c || !x || !y || !c->isConst()) return std::nullopt;
        k.v.push_back(c->c ? *x : *y);
      }
      return k;
    }
    return std::nullopt;
  }

  // Replaces a known integer operand with a constant or a MakeShape.
  void replace(OpOperand& use) {
    Value v = use.get();
    const Known* k = get(v);
    if (!k || k->isBool || isa_and_nonnull<ConstantOp>(v.getDefiningOp())) return;
    if (v.getDefiningOp() && v.getDefiningOp()->getName().getStringRef() == "graph.MakeShape") return;
    auto ty = cast<ShapedType>(v.getType());
    OpBuilder b(use.getOwner());
    Location loc = v.getLoc();
    bool allConst = std::all_of(k->v.begin(), k->v.end(), [](const Aff& a) { return a.isConst(); });
    SmallVector<int64_t> shape = k->scalar ? SmallVector<int64_t>{} : SmallVector<int64_t>{(int64_t)k->v.size()};
    if (allConst) {
      auto t = RankedTensorType::get(shape, ty.getElementType());
      SmallVector<APInt> vals;
      for (const Aff& a : k->v) vals.push_back(APInt(ty.getElementType().getIntOrFloatBitWidth(), a.c, true));
      auto c = ConstantOp::create(b, loc, t, b.getStringAttr("folded_shape"), DenseElementsAttr::get(t, vals));
      use.set(c);
      return;
    }
    if (!ty.getElementType().isInteger(64)) return;
    SmallVector<Value> srcs;
    SmallVector<Attribute> entries;
    for (const Aff& a : k->v) {
      if (a.isConst()) { entries.push_back(b.getI64IntegerAttr(a.c)); continue; }
      SmallVector<Attribute> terms;
      for (const auto& [t, coeff] : a.terms) {
        auto it = llvm::find(srcs, t.src);
        int64_t idx = it - srcs.begin();
        if (it == srcs.end()) srcs.push_back(t.src);
        terms.push_back(b.getDenseI64ArrayAttr({idx, t.dim, coeff}));
      }
      entries.push_back(b.getDictionaryAttr({b.getNamedAttr("c", b.getI64IntegerAttr(a.c)),
                                             b.getNamedAttr("terms", b.getArrayAttr(terms))}));
    }
    // Every source must be defined before the consumer: sources are block
    // arguments or values that dominate the chain, which dominates the use.
    OperationState st(loc, "graph.MakeShape");
    st.addOperands(srcs);
    st.addTypes(RankedTensorType::get(shape, b.getI64Type()));
    st.addAttribute("dims", b.getArrayAttr(entries));
    if (k->scalar) st.addAttribute("scalar", b.getBoolAttr(true));
    use.set(b.create(st)->getResult(0));
  }

  GraphOp graph_;
  std::map<std::string, Term> canonical_;
  llvm::DenseMap<Value, Known> known_;
  llvm::DenseMap<Value, int64_t> order_;
};

struct GraphFoldShapeArith : impl::GraphFoldShapeArithBase<GraphFoldShapeArith> {
  void runOnOperation() override { Folder(getOperation()).run(); }
};

}  // namespace

}  // namespace strata::graph
