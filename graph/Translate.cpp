#include "graph/Translate.h"

#include <map>

#include "graph/GraphDialect.h"
#include "graph/SymbolicDims.h"
#include "mlir/IR/Builders.h"

namespace strata::graph {

using namespace mlir;
using nlohmann::json;

namespace {

bool isTensorJson(const json& j) {
  return j.is_object() && j.size() == 3 && j.contains("dtype") && j.contains("shape") && j.contains("data");
}

DenseElementsAttr denseFor(MLIRContext* ctx, const ops::Tensor& t) {
  ops::Tensor v = t.dtype() == ops::DType::F16 || t.dtype() == ops::DType::BF16 ? t.toF32() : t;
  SmallVector<int64_t> shape(v.shape().begin(), v.shape().end());
  auto type = RankedTensorType::get(shape, elementTypeFor(ctx, v.dtype()));
  int64_t n = v.numel();
  switch (v.dtype()) {
    case ops::DType::F32: return DenseElementsAttr::get(type, ArrayRef<float>(v.data<float>(), n));
    case ops::DType::I64: return DenseElementsAttr::get(type, ArrayRef<int64_t>(v.data<int64_t>(), n));
    case ops::DType::I32: return DenseElementsAttr::get(type, ArrayRef<int32_t>(v.data<int32_t>(), n));
    case ops::DType::Bool: {
      SmallVector<bool> b(v.data<uint8_t>(), v.data<uint8_t>() + n);
      return DenseElementsAttr::get(type, ArrayRef<bool>(b));
    }
    default: break;
  }
  return {};
}

}  // namespace

ops::Tensor tensorFor(DenseElementsAttr a) {
  auto type = cast<ShapedType>(a.getType());
  ops::Tensor t(dtypeFor(type.getElementType()), ops::Shape(type.getShape().begin(), type.getShape().end()));
  int64_t i = 0;
  switch (t.dtype()) {
    case ops::DType::F32: for (float x : a.getValues<float>()) t.mut<float>()[i++] = x; break;
    case ops::DType::I64: for (int64_t x : a.getValues<int64_t>()) t.mut<int64_t>()[i++] = x; break;
    case ops::DType::I32: for (int32_t x : a.getValues<int32_t>()) t.mut<int32_t>()[i++] = x; break;
    case ops::DType::Bool: for (bool x : a.getValues<bool>()) t.mut<uint8_t>()[i++] = x; break;
    default: fail("constant of unsupported element type");
  }
  return t;
}

namespace {

Attribute attrFor(MLIRContext* ctx, const json& j) {
  Builder b(ctx);
  if (j.is_boolean()) return b.getBoolAttr(j.get<bool>());
  if (j.is_number_integer()) return b.getI64IntegerAttr(j.get<int64_t>());
  if (j.is_number_float()) return b.getF64FloatAttr(j.get<double>());
  if (j.is_string()) return b.getStringAttr(j.get<std::string>());
  if (j.is_array()) {
    bool ints = std::all_of(j.begin(), j.end(), [](const json& e) { return e.is_number_integer(); });
    if (ints) return b.getDenseI64ArrayAttr(j.get<std::vector<int64_t>>());
    SmallVector<Attribute> elems;
    for (const json& e : j) elems.push_back(attrFor(ctx, e));
    return b.getArrayAttr(elems);
  }
  if (isTensorJson(j)) return denseFor(ctx, ops::tensorFromJson(j));
  if (j.is_object()) {
    SmallVector<NamedAttribute> fields;
    for (const auto& [k, v] : j.items()) fields.push_back(b.getNamedAttr(k, attrFor(ctx, v)));
    return b.getDictionaryAttr(fields);
  }
  fail("attribute value {} cannot be represented", j.dump());
}

}  // namespace

json jsonFor(Attribute a) {
  if (auto x = dyn_cast<BoolAttr>(a)) return x.getValue();
  if (auto x = dyn_cast<IntegerAttr>(a)) return x.getInt();
  if (auto x = dyn_cast<FloatAttr>(a)) return x.getValueAsDouble();
  if (auto x = dyn_cast<StringAttr>(a)) return x.str();
  if (auto x = dyn_cast<DenseI64ArrayAttr>(a)) return std::vector<int64_t>(x.asArrayRef().begin(), x.asArrayRef().end());
  if (auto x = dyn_cast<ArrayAttr>(a)) {
    json r = json::array();
    for (Attribute e : x) r.push_back(jsonFor(e));
    return r;
  }
  if (auto x = dyn_cast<DenseElementsAttr>(a)) return ops::tensorToJson(tensorFor(x));
  if (auto x = dyn_cast<DictionaryAttr>(a)) {
    json r = json::object();
    for (NamedAttribute f : x) r[f.getName().str()] = jsonFor(f.getValue());
    return r;
  }
  std::string s;
  llvm::raw_string_ostream os(s);
  os << a;
  fail("attribute {} has no plan form", s);
}

namespace {

std::string nameOf(Location loc) {
  if (auto n = dyn_cast<NameLoc>(loc)) return n.getName().str();
  return "";
}

}  // namespace

OwningOpRef<ModuleOp> importGraph(MLIRContext& ctx, const ops::GraphDef& g) {
  ctx.getOrLoadDialect<GraphDialect>();
  OpBuilder b(&ctx);
  Location unknown = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(unknown);
  b.setInsertionPointToEnd(module->getBody());
  SmallVector<Attribute> inputNames;
  for (const auto& v : g.inputs) inputNames.push_back(b.getStringAttr(v.name));
  auto graphOp = GraphOp::create(b, NameLoc::get(b.getStringAttr(g.source)), b.getArrayAttr(inputNames),
                                   b.getStringAttr(g.source), b.getStringAttr(g.meta.dump()));
  Block* body = new Block();
  graphOp.getBody().push_back(body);
  b.setInsertionPointToEnd(body);
  std::map<std::string, Value> env;
  for (const auto& v : g.inputs) {
    Type elt = elementTypeFor(&ctx, v.dtype);
    Type t = v.shapeKnown ? Type(makeTensorType(&ctx, v.shape, elt)) : Type(UnrankedTensorType::get(elt));
    env[v.name] = body->addArgument(t, unknown);
  }
  auto loc = [&](const std::string& name) { return NameLoc::get(b.getStringAttr(name)); };
  for (const auto& w : g.weights) {
    std::vector<ops::Dim> dims;
    for (int64_t d : w.shape) dims.push_back({d, ""});
    auto op = WeightOp::create(b, loc(w.name), makeTensorType(&ctx, dims, elementTypeFor(&ctx, w.dtype)), w.name, w.file,
                               (int64_t)w.offset, (int64_t)w.nbytes,
                               w.interleavedRopeHeads ? b.getI64IntegerAttr(w.interleavedRopeHeads) : IntegerAttr(),
                               w.quant.empty() ? StringAttr() : b.getStringAttr(w.quant));
    env[w.name] = op;
  }
  for (const auto& c : g.constants) {
    DenseElementsAttr v = denseFor(&ctx, c.value);
    env[c.name] = ConstantOp::create(b, loc(c.name), v.getType(), c.name, v);
  }
  Value none;
  for (const auto& n : g.nodes) {
    std::string opName = "graph." + n.op;
    if (!RegisteredOperationName::lookup(opName, &ctx))
      fail("{}: node '{}': op '{}' has no graph dialect op", g.source, n.name, n.op);
    OperationState st(loc(n.name), opName);
    for (const auto& in : n.inputs) {
      if (in.empty()) {
        if (!none) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(body);
          none = NoneOp::create(b, unknown, b.getNoneType());
        }
        st.operands.push_back(none);
        continue;
      }
      auto it = env.find(in);
      if (it == env.end()) fail("{}: node '{}' ({}) reads '{}' before anything produces it", g.source, n.name, n.op, in);
      st.operands.push_back(it->second);
    }
    for (size_t i = 0; i < n.outputs.size(); ++i) st.types.push_back(UnrankedTensorType::get(b.getF32Type()));
    for (const auto& [k, v] : n.attrs.items()) st.addAttribute(k, attrFor(&ctx, v));
    Operation* op = b.create(st);
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (!n.outputs[i].empty()) env[n.outputs[i]] = op->getResult(i);
  }
  SmallVector<Value> outs;
  SmallVector<Attribute> outNames;
  for (const auto& o : g.outputs) {
    auto it = env.find(o.name);
    if (it == env.end()) fail("{}: graph output '{}' is never produced", g.source, o.name);
    outs.push_back(it->second);
    outNames.push_back(b.getStringAttr(o.name));
  }
  OutputOp::create(b, unknown, outs, b.getArrayAttr(outNames));
  return module;
}

GraphOp findGraph(ModuleOp m) {
  GraphOp found;
  int count = 0;
  m.walk([&](GraphOp g) { found = g; ++count; });
  if (count != 1) fail("expected exactly one graph.graph op, found {}", count);
  return found;
}

ops::GraphDef exportGraph(GraphOp graphOp) {
  ops::GraphDef g;
  g.source = graphOp.getSource().str();
  g.meta = json::parse(graphOp.getMeta().str(), nullptr, false);
  if (g.meta.is_discarded()) g.meta = json::object();
  Block& body = graphOp.getBody().front();
  llvm::DenseMap<Value, std::string> names;
  auto valueInfo = [](const std::string& name, Type t) {
    ops::ValueInfo v{name, ops::DType::F32, {}, false};
    if (auto st = dyn_cast<ShapedType>(t)) v.dtype = dtypeFor(st.getElementType());
    if (auto d = getDims(t)) { v.shape = *d; v.shapeKnown = true; }
    return v;
  };
  for (auto [arg, name] : llvm::zip(body.getArguments(), graphOp.getInputNames())) {
    std::string n = cast<StringAttr>(name).str();
    names[arg] = n;
    g.inputs.push_back(valueInfo(n, arg.getType()));
  }
  // Graph outputs keep their names: the value that produces one is named after it.
  auto out = cast<OutputOp>(body.getTerminator());
  std::set<std::string> taken;
  for (auto [v, name] : llvm::zip(out.getValues(), out.getNames())) {
    std::string n = cast<StringAttr>(name).str();
    if (!names.count(v) && !isa_and_nonnull<WeightOp, ConstantOp>(v.getDefiningOp())) names[v] = n, taken.insert(n);
  }
  std::set<std::string> used;
  auto unique = [&](std::string n) {
    std::string base = n;
    for (int i = 1; used.count(n) || taken.count(n); ++i) n = base + "#" + std::to_string(i);
    used.insert(n);
    return n;
  };
  for (Operation& op : body.without_terminator()) {
    if (auto w = dyn_cast<WeightOp>(op)) {
      auto t = cast<RankedTensorType>(w.getType());
      std::string n = unique(w.getName().str());
      names[w.getResult()] = n;
      g.weights.push_back({n, dtypeFor(t.getElementType()), ops::Shape(t.getShape().begin(), t.getShape().end()),
                           w.getFile().str(), (uint64_t)w.getOffset(), (uint64_t)w.getNbytes(),
                           (int64_t)w.getInterleavedRopeHeads().value_or(0), w.getQuant().value_or("").str()});
      continue;
    }
    if (auto c = dyn_cast<ConstantOp>(op)) {
      auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
      if (!dense) fail("constant '{}' is not dense", c.getName().str());
      std::string n = unique(c.getName().str());
      names[c.getResult()] = n;
      g.constants.push_back({n, tensorFor(dense)});
      continue;
    }
    if (isa<NoneOp>(op)) { names[op.getResult(0)] = ""; continue; }
    ops::NodeDef n;
    n.op = op.getName().stripDialect().str();
    n.name = unique(nameOf(op.getLoc()).empty() ? n.op : nameOf(op.getLoc()));
    for (Value v : op.getOperands()) n.inputs.push_back(names.lookup(v));
    for (auto [i, r] : llvm::enumerate(op.getResults())) {
      auto it = names.find(r);
      if (it == names.end()) it = names.try_emplace(r, unique(n.name + ":" + std::to_string(i))).first;
      else used.insert(it->second);
      n.outputs.push_back(it->second);
      if (isa<RankedTensorType>(r.getType())) g.values[it->second] = valueInfo(it->second, r.getType());
    }
    for (NamedAttribute a : op.getAttrs()) n.attrs[a.getName().str()] = jsonFor(a.getValue());
    g.nodes.push_back(std::move(n));
  }
  for (auto [v, name] : llvm::zip(out.getValues(), out.getNames())) {
    std::string want = cast<StringAttr>(name).str();
    if (names.lookup(v) != want)  // an input, weight or constant returned directly
      g.nodes.push_back({"Identity", want + ".identity", {names.lookup(v)}, {want}, json::object()});
    g.outputs.push_back(valueInfo(want, v.getType()));
  }
  return g;
}

}  // namespace strata::graph
