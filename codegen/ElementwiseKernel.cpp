#include "codegen/ElementwiseKernel.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <limits>
#include <map>
#include <set>

#include "codegen/StorageText.h"
#include "ops/error.h"

namespace strata::tile {

using ops::RowForm;

namespace {

const std::set<std::string> kBinary = {"add", "sub", "mul", "div", "pow", "max", "min"};
const std::set<std::string> kUnary = {"neg", "abs", "sqrt", "recip", "exp", "log", "sigmoid", "silu", "tanh", "erf", "relu"};

bool alongRow(RowForm f) { return f == RowForm::Full || f == RowForm::Row; }

// The form of an elementwise result: it varies along whatever any input does.
RowForm join(RowForm a, RowForm b) {
  bool rows = !(a == RowForm::Row || a == RowForm::Scalar) || !(b == RowForm::Row || b == RowForm::Scalar);
  bool cols = alongRow(a) || alongRow(b);
  return rows ? (cols ? RowForm::Full : RowForm::Col) : (cols ? RowForm::Row : RowForm::Scalar);
}

// Forms of every value (operands, then steps); throws on a malformed spec.
std::vector<RowForm> valueForms(const ElementwiseKernelSpec& s) {
  std::vector<RowForm> f(s.inputs);
  for (const auto& st : s.steps) {
    for (int64_t i : st.inputs)
      if (i < 0 || i >= (int64_t)f.size()) fail("elementwise kernel: step '{}' reads value {} of {}", st.op, i, f.size());
    size_t arity = kBinary.count(st.op) ? 2 : st.op == "const" ? 0 : 1;
    if (!kBinary.count(st.op) && !kUnary.count(st.op) && st.op != "const" && st.op != "reduce_sum" && st.op != "reduce_max")
      fail("elementwise kernel: unknown step '{}'", st.op);
    if (st.inputs.size() != arity) fail("elementwise kernel: step '{}' takes {} inputs, got {}", st.op, arity, st.inputs.size());
    if (st.op == "const") f.push_back(RowForm::Scalar);
    else if (st.op.rfind("reduce_", 0) == 0) {
      RowForm in = f[st.inputs[0]];
      f.push_back(in == RowForm::Full ? RowForm::Col : in == RowForm::Row ? RowForm::Scalar : in);
    } else f.push_back(arity == 2 ? join(f[st.inputs[0]], f[st.inputs[1]]) : f[st.inputs[0]]);
  }
  return f;
}

// Writes the kernel text. Values that do not vary along the row are
// tensor<1x1xf32> SSA values at function level (`%s<id>`); values that do
// are evaluated on demand inside each walk, memoized per walk.
class Emitter {
 public:
  explicit Emitter(const ElementwiseKernelSpec& s)
      : s(s), st{s.dtype}, forms(valueForms(s)), perRow(forms.size()) {}

  std::string run() {
    if (s.cols <= 0 || s.blockN <= 0 || s.numWarps <= 0)
      fail("elementwise kernel: {} columns in blocks of {} over {} warps", s.cols, s.blockN, s.numWarps);
    st.check("elementwise");
    mainEnd = s.cols / s.blockN * s.blockN;
    std::string sig;
    for (size_t i = 0; i < s.inputs.size(); ++i) sig += fmt::format("%in{}: {}, ", i, st.ptr());
    for (size_t i = 0; i < s.outputs.size(); ++i) {
      RowForm f = forms.at(s.outputs[i]);
      if (f != RowForm::Full && f != RowForm::Col)
        fail("elementwise kernel: output {} (value {}) is {}: outputs must vary along the rows", i, s.outputs[i],
             ops::rowFormName(f));
      sig += fmt::format("%out{}: {}, ", i, st.ptr());
    }
    line("func.func @{}({}%R: index) attributes {{tile.num_warps = {} : i64}} {{", s.name, sig, s.numWarps);
    line("  %c0 = arith.constant 0 : index");
    line("  %c1 = arith.constant 1 : index");
    line("  %cC = arith.constant {} : index", s.cols);
    line("  %cB = arith.constant {} : index", s.blockN);
    line("  %cM = arith.constant {} : index", mainEnd);
    line("  %row = tile.program_id 0");
    for (size_t id = 0; id < s.inputs.size(); ++id)
      if (!alongRow(forms[id])) {
        bool col = forms[id] == RowForm::Col;
        std::string p = ptr(fmt::format("%in{}", id), col ? "%R" : "%c1", "%c1", col ? "%row" : "%c0", "%c0", 1);
        perRow[id] = load(p, 1);
      }
    for (size_t k = 0; k < s.steps.size(); ++k) {
      int64_t id = (int64_t)(s.inputs.size() + k);
      if (!alongRow(forms[id])) perRow[id] = rowValue(s.steps[k], id);
    }
    // The full outputs' walks first: the first store is the layout root of
    // a kernel without reductions (codegen/Workload.h), and a row block is
    // what spreads over the warps.
    std::vector<size_t> full;
    for (size_t i = 0; i < s.outputs.size(); ++i)
      if (forms[s.outputs[i]] == RowForm::Full) full.push_back(i);
    if (!full.empty()) {
      walk(full, "%c0", "%cM", mainEnd > 0, s.blockN);
      walk(full, "%cM", "%cC", mainEnd < s.cols, 1);
    }
    for (size_t i = 0; i < s.outputs.size(); ++i)
      if (forms[s.outputs[i]] != RowForm::Full) {
        std::string p = ptr(fmt::format("%out{}", i), "%R", "%c1", "%row", "%c0", 1);
        store(p, perRow[s.outputs[i]], 1);
      }
    line("  return");
    line("}}");
    return out;
  }

 private:
  const ElementwiseKernelSpec& s;
  const StorageText st;
  std::vector<RowForm> forms;
  std::vector<std::string> perRow;  // SSA names of the per-row values
  int64_t mainEnd = 0;
  std::string out;
  int counter = 0;
  // The walk being emitted: its width, column variable and memo.
  int64_t width = 0;
  std::string col;
  std::map<int64_t, std::string> memo;
  std::map<std::string, std::string> consts;

  template <typename... A>
  void line(fmt::format_string<A...> f, A&&... a) {
    out += fmt::format(f, std::forward<A>(a)...) + "\n";
  }
  std::string fresh(const char* p) { return fmt::format("%{}{}", p, counter++); }
  static std::string ty(int64_t w) { return fmt::format("tensor<1x{}xf32>", w); }
  // A block pointer over a [rows, cols] view of buffer `base` at (r, c),
  // `w` wide.
  std::string ptr(const std::string& base, const char* rows, const char* cols, const std::string& r,
                  const std::string& c, int64_t w) {
    std::string p = fresh("p");
    line("  {} = tile.make_block_ptr {}, [{}, {}], [{}, %c1], [{}, {}] : {} -> {}", p, base, rows, cols, cols, r, c,
         st.ptr(), st.blockPtr(fmt::format("1x{}", w)));
    return p;
  }
  // The f32 tile (1 x w) loaded through `p`, and a store of one.
  std::string load(const std::string& p, int64_t w) {
    std::string v = fresh("v");
    out += st.load(v.substr(1), p, fmt::format("1x{}", w), " {in_bounds}");
    return v;
  }
  void store(const std::string& p, const std::string& v, int64_t w) {
    out += st.store(p, v, fmt::format("1x{}", w), " {in_bounds}");
  }
  std::string constant(float v, int64_t w) {
    auto key = fmt::format("{}|{:a}", w, v);
    auto it = consts.find(key);
    if (it != consts.end()) return it->second;
    std::string c = fresh("k");
    line("  {} = arith.constant dense<{:#x}> : {}", c, std::bit_cast<uint32_t>(v), ty(w));
    return consts[key] = c;
  }

  // The op of step `st` on operand names (all of type ty(w)).
  std::string apply(const ElementwiseStep& st, const std::vector<std::string>& a, int64_t w) {
    static const std::map<std::string, std::string> direct = {
        {"add", "arith.addf"}, {"sub", "arith.subf"}, {"mul", "arith.mulf"}, {"div", "arith.divf"},
        {"pow", "math.powf"}, {"max", "arith.maximumf"}, {"min", "arith.minimumf"}, {"neg", "arith.negf"},
        {"abs", "math.absf"}, {"sqrt", "math.sqrt"}, {"exp", "math.exp"}, {"log", "math.log"},
        {"tanh", "math.tanh"}, {"erf", "math.erf"}, {"silu", "tile.silu"}};
    std::string r = fresh("v"), t = ty(w);
    if (st.op == "const") {
      // A per-program constant: materialized once, as its own value.
      line("  {} = arith.constant dense<{:#x}> : {}", r, std::bit_cast<uint32_t>(st.value), t);
    } else if (st.op == "recip") {
      line("  {} = arith.divf {}, {} : {}", r, constant(1.f, w), a[0], t);
    } else if (st.op == "relu") {
      line("  {} = arith.maximumf {}, {} : {}", r, a[0], constant(0.f, w), t);
    } else if (st.op == "sigmoid") {  // 1 / (1 + exp(-x)), as ops::unary
      std::string n = fresh("v"), e = fresh("v"), d = fresh("v");
      line("  {} = arith.negf {} : {}", n, a[0], t);
      line("  {} = math.exp {} : {}", e, n, t);
      line("  {} = arith.addf {}, {} : {}", d, constant(1.f, w), e, t);
      line("  {} = arith.divf {}, {} : {}", r, constant(1.f, w), d, t);
    } else if (st.inputs.size() == 2) {
      line("  {} = {} {}, {} : {}", r, direct.at(st.op), a[0], a[1], t);
    } else {
      line("  {} = {} {} : {}", r, direct.at(st.op), a[0], t);
    }
    return r;
  }

  // A per-row value: an elementwise step on per-row inputs, or a reduction
  // walk over a value that varies along the row.
  std::string rowValue(const ElementwiseStep& st, int64_t id) {
    if (st.op.rfind("reduce_", 0) != 0) {
      std::vector<std::string> a;
      for (int64_t i : st.inputs) a.push_back(perRow[i]);
      return apply(st, a, 1);
    }
    int64_t src = st.inputs[0];
    if (!alongRow(forms[src])) return perRow[src];  // along a dim of 1
    bool isMax = st.op == "reduce_max";
    const char* combine = isMax ? "arith.maximumf" : "arith.addf";
    const float init = isMax ? -std::numeric_limits<float>::infinity() : 0.f;
    std::string acc;
    if (mainEnd > 0) {
      std::string r = fresh("r"), a = fresh("a");
      line("  {} = scf.for %col{} = %c0 to %cM step %cB iter_args({} = {}) -> ({}) {{", r, id, a,
           constant(init, s.blockN), ty(s.blockN));
      begin(s.blockN, fmt::format("%col{}", id));
      std::string v = eval(src), n = fresh("v");
      line("  {} = {} {}, {} : {}", n, combine, a, v, ty(s.blockN));
      line("  scf.yield {} : {}", n, ty(s.blockN));
      end();
      std::string red = fresh("v");
      acc = fresh("v");
      line("  {} = tile.reduce {} {{kind = \"{}\", axis = 1 : i64}} : {} -> tensor<1xf32>", red, r,
           isMax ? "max" : "sum", ty(s.blockN));
      line("  {} = tile.expand_dims {} {{axis = 1 : i64}} : tensor<1xf32> -> {}", acc, red, ty(1));
    }
    if (mainEnd < s.cols) {
      std::string r = fresh("r"), a = fresh("a");
      if (acc.empty()) acc = constant(init, 1);
      line("  {} = scf.for %tcol{} = %cM to %cC step %c1 iter_args({} = {}) -> ({}) {{", r, id, a, acc, ty(1));
      begin(1, fmt::format("%tcol{}", id));
      std::string v = eval(src), n = fresh("v");
      line("  {} = {} {}, {} : {}", n, combine, a, v, ty(1));
      line("  scf.yield {} : {}", n, ty(1));
      end();
      acc = r;
    }
    return acc;
  }

  // One walk storing the full outputs `outs` over columns [lo, hi).
  void walk(const std::vector<size_t>& outs, const char* lo, const char* hi, bool emit, int64_t w) {
    if (!emit) return;
    std::string c = fresh("col");
    line("  scf.for {} = {} to {} step {} {{", c, lo, hi, w == 1 ? "%c1" : "%cB");
    begin(w, c);
    for (size_t i : outs) {
      std::string v = eval(s.outputs[i]);
      std::string p = ptr(fmt::format("%out{}", i), "%R", "%cC", "%row", col, w);
      store(p, v, w);
    }
    end();
  }

  void begin(int64_t w, std::string c) {
    width = w;
    col = std::move(c);
    memo.clear();
    consts.clear();
  }
  void end() {
    line("  }}");
    memo.clear();
    consts.clear();
  }

  // Value `id` across the current walk's block (1 x width).
  std::string eval(int64_t id) {
    auto it = memo.find(id);
    if (it != memo.end()) return it->second;
    std::string r;
    if (!alongRow(forms[id])) {
      if (width == 1) return perRow[id];
      r = fresh("v");
      line("  {} = tile.broadcast {} : {} -> {}", r, perRow[id], ty(1), ty(width));
    } else if (id < (int64_t)s.inputs.size()) {
      bool full = forms[id] == RowForm::Full;
      std::string p = ptr(fmt::format("%in{}", id), full ? "%R" : "%c1", "%cC", full ? "%row" : "%c0", col, width);
      r = load(p, width);
    } else {
      const ElementwiseStep& st = s.steps[id - s.inputs.size()];
      std::vector<std::string> a;
      for (int64_t i : st.inputs) a.push_back(eval(i));
      r = apply(st, a, width);
    }
    return memo[id] = r;
  }
};

}  // namespace

std::string emitElementwiseKernel(const ElementwiseKernelSpec& spec) { return Emitter(spec).run(); }

std::string elementwiseKernelKey(const ElementwiseKernelSpec& s) {
  std::string k = fmt::format("{}x{}x{}w|{}|", s.cols, s.blockN, s.numWarps, s.dtype);
  for (RowForm f : s.inputs) k += fmt::format("{},", ops::rowFormName(f));
  for (const auto& st : s.steps) k += fmt::format("|{}({}){:a}", st.op, fmt::join(st.inputs, ","), st.value);
  return k + fmt::format("|{}", fmt::join(s.outputs, ","));
}

ElementwiseRegionPlan planElementwiseRegion(const ops::NodeDef& n, const std::vector<ElementwiseOperand>& operands,
                                            int64_t blockN) {
  using nlohmann::json;
  const json& body = n.attrs.at("body");
  auto where = [&](size_t k) { return fmt::format("node '{}' (region.elementwise) step #{} ({})", n.name, k,
                                                  body[k].at("op").get<std::string>()); };
  // Axes operands (integer constants) are read here; every other operand
  // is data and must be a float tensor.
  const size_t nIn = operands.size();
  std::vector<bool> isData(nIn, false);
  for (size_t k = 0; k < body.size(); ++k) {
    std::string op = body[k].at("op");
    std::vector<int64_t> in = body[k].at("inputs").get<std::vector<int64_t>>();
    for (size_t j = 0; j < in.size(); ++j)
      if (in[j] >= 0 && in[j] < (int64_t)nIn && !(op.rfind("Reduce", 0) == 0 && j == 1)) isData[in[j]] = true;
  }
  ElementwiseRegionPlan plan;
  ElementwiseKernelSpec& s = plan.spec;
  s.blockN = blockN;
  std::vector<ops::Dim> space;
  for (size_t i = 0; i < nIn; ++i) {
    if (!isData[i]) continue;
    if (!operands[i].isFloat) fail("node '{}' (region.elementwise): operand #{} is not a float tensor", n.name, i);
    space = ops::broadcastDims(space, operands[i].shape);
  }
  if (space.empty() || !space.back().isStatic())
    fail("node '{}' (region.elementwise): the row width of {} is not static", n.name, ops::dimsStr(space));
  s.cols = space.back().value;

  // Region value index -> kernel value id (-1: not a kernel value), its rank,
  // and whether a keepdims=0 reduction dropped its last dim.
  std::vector<int64_t> id(nIn + body.size(), -1), rank(nIn + body.size(), 0);
  std::vector<bool> dropped(nIn + body.size(), false);
  for (size_t i = 0; i < nIn; ++i) {
    if (!isData[i]) continue;
    auto f = ops::rowForm(operands[i].shape, space);
    if (!f)
      fail("node '{}' (region.elementwise): operand #{} {} is broadcast along some leading dims of {} but not all",
           n.name, i, ops::dimsStr(operands[i].shape), ops::dimsStr(space));
    id[i] = (int64_t)s.inputs.size();
    rank[i] = (int64_t)operands[i].shape.size();
    s.inputs.push_back(*f);
    plan.operands.push_back((int64_t)i);
  }
  auto add = [&](std::string op, std::vector<int64_t> in, float value = 0) {
    s.steps.push_back({std::move(op), std::move(in), value});
    return (int64_t)(s.inputs.size() + s.steps.size() - 1);
  };
  static const std::map<std::string, std::string> simple = {
      {"Add", "add"}, {"Sub", "sub"}, {"Mul", "mul"}, {"Div", "div"}, {"Pow", "pow"}, {"Max", "max"},
      {"Min", "min"}, {"Neg", "neg"}, {"Abs", "abs"}, {"Sqrt", "sqrt"}, {"Reciprocal", "recip"}, {"Exp", "exp"},
      {"Log", "log"}, {"Sigmoid", "sigmoid"}, {"Silu", "silu"}, {"Tanh", "tanh"}, {"Erf", "erf"}, {"Relu", "relu"}};
  for (size_t k = 0; k < body.size(); ++k) {
    const json& step = body[k];
    std::string op = step.at("op");
    json attrs = step.value("attrs", json::object());
    std::vector<int64_t> in = step.at("inputs").get<std::vector<int64_t>>();
    std::vector<int64_t> data;  // kernel ids of the data inputs
    int64_t r = 0;
    for (size_t j = 0; j < in.size(); ++j) {
      if (op.rfind("Reduce", 0) == 0 && j == 1) continue;
      if (in[j] < 0 || in[j] >= (int64_t)(nIn + k) || id[in[j]] < 0) fail("{}: reads value #{}", where(k), in[j]);
      if (dropped[in[j]])
        fail("{}: reads the result of a reduction with keepdims=0, which the row-wise kernel only stores", where(k));
      data.push_back(id[in[j]]);
      r = std::max(r, rank[in[j]]);
    }
    const size_t at = nIn + k;
    rank[at] = r;
    auto lastAxisOnly = [&](std::vector<int64_t> axes) {
      for (int64_t& a : axes) a = a < 0 ? a + r : a;
      if (axes != std::vector<int64_t>{r - 1})
        fail("{}: reduces over axes {} of a rank-{} value; the CPU kernel reduces along the last axis only", where(k),
             json(axes).dump(), r);
    };
    if (auto it = simple.find(op); it != simple.end()) {
      size_t arity = kBinary.count(it->second) ? 2 : 1;
      if (data.size() != arity) fail("{}: {} inputs, expected {}", where(k), data.size(), arity);
      id[at] = add(it->second, data);
    } else if (op == "Cast") {
      std::string to = attrs.value("to", "");
      if (data.size() != 1 || ops::parseDType(to) != ops::DType::F32)
        fail("{}: casts to {}; the CPU kernel computes in f32 and casts to f32 only", where(k), to);
      id[at] = data[0];
    } else if (op == "Softmax") {
      if (data.size() != 1) fail("{}: {} inputs, expected 1", where(k), data.size());
      lastAxisOnly({attrs.value("axis", (int64_t)-1)});
      // max, exp(x - max), sum, divide: ops::softmax's arithmetic.
      int64_t m = add("reduce_max", {data[0]});
      int64_t e = add("exp", {add("sub", {data[0], m})});
      id[at] = add("div", {e, add("reduce_sum", {e})});
    } else if (op == "ReduceSum" || op == "ReduceMean" || op == "ReduceMax" || op == "ReduceMin") {
      if (data.size() != 1) fail("{}: {} data inputs, expected 1", where(k), data.size());
      std::vector<int64_t> axes;
      if (attrs.contains("axes")) axes = attrs.at("axes").get<std::vector<int64_t>>();
      else if (in.size() > 1) {
        if (in[1] >= (int64_t)nIn || !operands[in[1]].ints)
          fail("{}: its axes are not a constant the planner can read", where(k));
        axes = *operands[in[1]].ints;
      }
      if (axes.empty() && (attrs.value("noop_with_empty_axes", (int64_t)0) != 0 || r != 1))
        fail("{}: reduces over every axis of a rank-{} value; the CPU kernel reduces along the last axis only", where(k), r);
      if (!axes.empty()) lastAxisOnly(axes);
      if (op == "ReduceSum") id[at] = add("reduce_sum", data);
      if (op == "ReduceMean") id[at] = add("div", {add("reduce_sum", data), add("const", {}, (float)s.cols)});
      if (op == "ReduceMax") id[at] = add("reduce_max", data);
      if (op == "ReduceMin") id[at] = add("neg", {add("reduce_max", {add("neg", data)})});  // min x = -max(-x)
      if (attrs.value("keepdims", (int64_t)1) == 0) dropped[at] = true, rank[at] = r - 1;
    } else {
      fail("{}: no CPU kernel form for this op (run the graph with --backend reference)", where(k));
    }
  }
  std::vector<RowForm> forms = valueForms(s);
  for (int64_t o : n.attrs.at("outputs").get<std::vector<int64_t>>()) {
    if (o < (int64_t)nIn || o >= (int64_t)id.size())
      fail("node '{}' (region.elementwise): output value #{} is not a step", n.name, o);
    RowForm f = forms.at(id[o]);
    if (f != RowForm::Full && f != RowForm::Col)
      fail("node '{}' (region.elementwise): output value #{} is {} form (it does not vary along the rows); the CPU "
           "kernel stores full and per-row outputs only",
           n.name, o, ops::rowFormName(f));
    s.outputs.push_back(id[o]);
    plan.full.push_back(f == RowForm::Full);
    plan.keepLast.push_back(!dropped[o]);
  }
  return plan;
}

ElementwiseRegionPlan planElementwiseRegion(const ops::GraphDef& g, const ops::NodeDef& n, int64_t blockN) {
  // What is known of each operand: graph input, weight, constant or an
  // intermediate the graph compiler typed.
  auto operand = [&](const std::string& value) -> ElementwiseOperand {
    if (const ops::ValueInfo* v = g.findInput(value)) return {v->shape, ops::isFloat(v->dtype), std::nullopt};
    for (const auto& w : g.weights)
      if (w.name == value) return {ops::dimsOf(w.shape), ops::isFloat(w.dtype), std::nullopt};
    for (const auto& c : g.constants)
      if (c.name == value) {
        ElementwiseOperand o{ops::dimsOf(c.value.shape()), ops::isFloat(c.value.dtype()), std::nullopt};
        if (c.value.dtype() == ops::DType::I64)
          o.ints = std::vector<int64_t>(c.value.data<int64_t>(), c.value.data<int64_t>() + c.value.numel());
        return o;
      }
    auto it = g.values.find(value);
    if (it == g.values.end() || !it->second.shapeKnown)
      fail("{}: node '{}' ({}): the shape of '{}' is not known", g.source, n.name, n.op, value);
    return {it->second.shape, ops::isFloat(it->second.dtype), std::nullopt};
  };
  std::vector<ElementwiseOperand> operands;
  for (const auto& in : n.inputs) operands.push_back(operand(in));
  try {
    return planElementwiseRegion(n, operands, blockN);
  } catch (const Error& e) {
    fail("{}: {}", g.source, e.what());
  }
}

nlohmann::json elementwiseLaunchContract(const ElementwiseRegionPlan& p) {
  nlohmann::json k = {{"cols", p.spec.cols}, {"operands", nlohmann::json::array()}, {"outputs", nlohmann::json::array()}};
  for (size_t i = 0; i < p.operands.size(); ++i)
    k["operands"].push_back({{"input", p.operands[i]}, {"form", ops::rowFormName(p.spec.inputs[i])}});
  for (size_t i = 0; i < p.keepLast.size(); ++i)
    k["outputs"].push_back({{"full", p.full[i]}, {"keep_last", p.keepLast[i]}});
  return k;
}

}  // namespace strata::tile
