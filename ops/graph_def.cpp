#include "ops/graph_def.h"

namespace strata::ops {

using nlohmann::json;

const ValueInfo* GraphDef::findInput(const std::string& name) const {
  for (const auto& v : inputs)
    if (v.name == name) return &v;
  return nullptr;
}

json tensorToJson(const Tensor& t) {
  json data = json::array();
  Tensor v = t.dtype() == DType::F16 || t.dtype() == DType::BF16 ? t.toF32() : t;
  for (int64_t i = 0; i < v.numel(); ++i) {
    switch (v.dtype()) {
      case DType::F32: data.push_back(v.data<float>()[i]); break;
      case DType::I64: data.push_back(v.data<int64_t>()[i]); break;
      case DType::I32: data.push_back(v.data<int32_t>()[i]); break;
      case DType::Bool: data.push_back((bool)v.data<uint8_t>()[i]); break;
      default: break;
    }
  }
  return {{"dtype", dtypeName(v.dtype())}, {"shape", v.shape()}, {"data", data}};
}

Tensor tensorFromJson(const json& j) {
  try {
    Tensor t(parseDType(j.at("dtype").get<std::string>()), j.at("shape").get<Shape>());
    const json& d = j.at("data");
    if ((int64_t)d.size() != t.numel()) fail("{} values for shape {}", d.size(), shapeStr(t.shape()));
    for (int64_t i = 0; i < t.numel(); ++i) {
      switch (t.dtype()) {
        case DType::F32: t.mut<float>()[i] = d[i].get<float>(); break;
        case DType::I64: t.mut<int64_t>()[i] = d[i].get<int64_t>(); break;
        case DType::I32: t.mut<int32_t>()[i] = d[i].get<int32_t>(); break;
        case DType::Bool: t.mut<uint8_t>()[i] = d[i].get<bool>(); break;
        default: fail("inline constants cannot be {}", dtypeName(t.dtype()));
      }
    }
    return t;
  } catch (const json::exception& e) {
    fail("malformed inline tensor: {}", e.what());
  }
}

namespace {
json dimsToJson(const std::vector<Dim>& dims) {
  json a = json::array();
  for (const Dim& d : dims) {
    if (d.isStatic()) a.push_back(d.value);
    else a.push_back(d.symbol.empty() ? "?" : d.symbol);
  }
  return a;
}

std::vector<Dim> dimsFromJson(const json& a) {
  std::vector<Dim> dims;
  for (const json& d : a) {
    if (d.is_number_integer()) dims.push_back({d.get<int64_t>(), ""});
    else dims.push_back({-1, d.get<std::string>() == "?" ? "" : d.get<std::string>()});
  }
  return dims;
}

json valueToJson(const ValueInfo& v) {
  json j = {{"name", v.name}, {"dtype", dtypeName(v.dtype)}};
  if (v.shapeKnown) j["shape"] = dimsToJson(v.shape);
  return j;
}

ValueInfo valueFromJson(const json& j) {
  ValueInfo v{j.at("name").get<std::string>(), parseDType(j.at("dtype").get<std::string>()), {}, j.contains("shape")};
  if (v.shapeKnown) v.shape = dimsFromJson(j.at("shape"));
  return v;
}
}  // namespace

json toJson(const GraphDef& g) {
  json j;
  j["source"] = g.source;
  j["meta"] = g.meta;
  for (const auto& v : g.inputs) j["inputs"].push_back(valueToJson(v));
  for (const auto& v : g.outputs) j["outputs"].push_back(valueToJson(v));
  j["weights"] = json::array();
  for (const auto& w : g.weights) {
    j["weights"].push_back({{"name", w.name}, {"dtype", dtypeName(w.dtype)}, {"shape", w.shape},
                            {"file", w.file}, {"offset", w.offset}, {"nbytes", w.nbytes}});
    if (w.interleavedRopeHeads) j["weights"].back()["interleaved_rope_heads"] = w.interleavedRopeHeads;
    if (!w.quant.empty()) j["weights"].back()["quant"] = w.quant;
  }
  j["constants"] = json::array();
  for (const auto& c : g.constants) {
    json t = tensorToJson(c.value);
    t["name"] = c.name;
    j["constants"].push_back(t);
  }
  j["nodes"] = json::array();
  for (const auto& n : g.nodes)
    j["nodes"].push_back({{"op", n.op}, {"name", n.name}, {"inputs", n.inputs}, {"outputs", n.outputs}, {"attrs", n.attrs}});
  if (!g.values.empty()) {
    j["values"] = json::array();
    for (const auto& [name, v] : g.values) j["values"].push_back(valueToJson(v));
  }
  return j;
}

GraphDef graphFromJson(const json& j) {
  try {
    GraphDef g;
    g.source = j.value("source", "");
    g.meta = j.value("meta", json::object());
    for (const auto& v : j.at("inputs")) g.inputs.push_back(valueFromJson(v));
    for (const auto& v : j.at("outputs")) g.outputs.push_back(valueFromJson(v));
    for (const auto& w : j.at("weights"))
      g.weights.push_back({w.at("name"), parseDType(w.at("dtype")), w.at("shape").get<Shape>(), w.at("file"),
                           w.at("offset"), w.at("nbytes"), w.value("interleaved_rope_heads", int64_t(0)),
                           w.value("quant", std::string())});
    for (const auto& c : j.at("constants")) g.constants.push_back({c.at("name"), tensorFromJson(c)});
    for (const auto& n : j.at("nodes"))
      g.nodes.push_back({n.at("op"), n.value("name", ""), n.at("inputs"), n.at("outputs"), n.value("attrs", json::object())});
    if (j.contains("values"))
      for (const auto& v : j.at("values")) {
        ValueInfo vi = valueFromJson(v);
        g.values[vi.name] = vi;
      }
    return g;
  } catch (const json::exception& e) {
    fail("malformed graph plan: {}", e.what());
  }
}

}  // namespace strata::ops
