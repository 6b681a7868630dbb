#include "models/onnx_loader.h"

#include <algorithm>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>

#include <climits>
#include <filesystem>
#include <cstring>
#include <map>
#include <set>

#include "ops/kernel_table.h"
#include "runtime/mapped_file.h"

namespace strata::models {

namespace fs = std::filesystem;
using nlohmann::json;
using ops::DType;

namespace {

struct ByteRange { uint64_t offset, length; };

// Finds where each initializer's raw_data lies in the file, so weights can be
// referenced in place: ModelProto.graph (7) -> GraphProto.initializer (5) ->
// TensorProto.name (8) / raw_data (9). Protobuf's parser copies bytes fields,
// so the offsets come from this walk of the wire format.
class RawDataLocator {
 public:
  RawDataLocator(const uint8_t* data, size_t size) : in_(data, (int)std::min<size_t>(size, INT_MAX)) {
    in_.SetTotalBytesLimit(INT_MAX);
    walk(0);
  }
  std::map<std::string, ByteRange> found;

 private:
  using WFL = google::protobuf::internal::WireFormatLite;
  // depth 0: ModelProto, 1: GraphProto, 2: TensorProto
  void walk(int depth) {
    std::string name;
    ByteRange raw{0, 0};
    bool hasRaw = false;
    while (uint32_t tag = in_.ReadTag()) {
      uint32_t field = tag >> 3;
      bool delimited = WFL::GetTagWireType(tag) == WFL::WIRETYPE_LENGTH_DELIMITED;
      bool descend = delimited && ((depth == 0 && field == 7) || (depth == 1 && field == 5));
      bool leaf = delimited && depth == 2 && (field == 8 || field == 9);
      if (!descend && !leaf) {
        if (!WFL::SkipField(&in_, tag)) return;
        continue;
      }
      uint32_t len;
      if (!in_.ReadVarint32(&len)) return;
      if (descend) {
        auto limit = in_.PushLimit((int)len);
        walk(depth + 1);
        in_.PopLimit(limit);
      } else if (field == 8) {
        if (!in_.ReadString(&name, (int)len)) return;
      } else {
        raw = {(uint64_t)in_.CurrentPosition(), len};
        hasRaw = true;
        if (!in_.Skip((int)len)) return;
      }
    }
    if (depth == 2 && hasRaw) found[name] = raw;
  }
  google::protobuf::io::CodedInputStream in_;
};

struct Ctx {
  std::string path;  // the .onnx file
  fs::path dir;
  std::map<std::string, ByteRange> rawRanges;
  ops::GraphDef g;
};

DType dtypeOf(int onnxType, const std::string& what, const Ctx& c) {
  switch (onnxType) {
    case onnx::TensorProto_DataType_FLOAT: return DType::F32;
    case onnx::TensorProto_DataType_FLOAT16: return DType::F16;
    case onnx::TensorProto_DataType_BFLOAT16: return DType::BF16;
    case onnx::TensorProto_DataType_INT64: return DType::I64;
    case onnx::TensorProto_DataType_INT32: return DType::I32;
    case onnx::TensorProto_DataType_BOOL: return DType::Bool;
    default: break;
  }
  std::string tn = onnx::TensorProto_DataType_IsValid(onnxType)
                       ? onnx::TensorProto_DataType_Name((onnx::TensorProto_DataType)onnxType) : std::to_string(onnxType);
  fail("{}: {} has element type {}, which strata does not support (float, float16, bfloat16, int64, int32, bool)",
       c.path, what, tn);
}

// The tensor's dims, validated (no negative dims, no overflowing count).
ops::Shape dimsOf(const onnx::TensorProto& t, const Ctx& c) {
  ops::Shape s(t.dims().begin(), t.dims().end());
  ops::checkedNumel(s, c.path + ": tensor '" + t.name() + "'");
  return s;
}

// A tensor whose values are stored in typed fields or raw bytes, copied.
// The stored data is checked against the shape before anything is allocated,
// so a corrupt shape cannot turn into a huge allocation.
ops::Tensor inlineTensor(const onnx::TensorProto& t, const Ctx& c, const std::string& what) {
  ops::Shape shape = dimsOf(t, c);
  int64_t n = ops::numel(shape);
  bool isDouble = t.data_type() == onnx::TensorProto_DataType_DOUBLE;  // narrowed: only small constants use it
  DType dt = isDouble ? DType::F32 : dtypeOf(t.data_type(), what, c);
  if (t.has_raw_data()) {
    uint64_t need = (uint64_t)n * (isDouble ? 8 : ops::dtypeSize(dt));
    if (t.raw_data().size() != need)
      fail("{}: {}: raw data has {} bytes, shape {} needs {}", c.path, what, t.raw_data().size(), ops::shapeStr(shape), need);
  } else {
    int64_t have = isDouble ? t.double_data_size() : dt == DType::F32 ? t.float_data_size()
                   : dt == DType::I64 ? t.int64_data_size() : t.int32_data_size();
    if (have != n) fail("{}: {}: {} values stored but shape {} has {}", c.path, what, have, ops::shapeStr(shape), n);
  }
  ops::Tensor r(dt, shape);
  if (isDouble) {
    for (int64_t i = 0; i < n; ++i) {
      double v = t.has_raw_data() ? 0 : t.double_data(i);
      if (t.has_raw_data()) std::memcpy(&v, t.raw_data().data() + 8 * i, 8);
      r.mut<float>()[i] = (float)v;
    }
    return r;
  }
  if (t.has_raw_data()) {
    std::memcpy(r.mut<uint8_t>(), t.raw_data().data(), r.nbytes());
    return r;
  }
  switch (dt) {
    case DType::F32: std::copy(t.float_data().begin(), t.float_data().end(), r.mut<float>()); break;
    case DType::I64: std::copy(t.int64_data().begin(), t.int64_data().end(), r.mut<int64_t>()); break;
    case DType::I32: std::copy(t.int32_data().begin(), t.int32_data().end(), r.mut<int32_t>()); break;
    case DType::Bool: for (int64_t i = 0; i < n; ++i) r.mut<uint8_t>()[i] = t.int32_data(i) != 0; break;
    case DType::F16: case DType::BF16: for (int64_t i = 0; i < n; ++i) r.mut<uint16_t>()[i] = (uint16_t)t.int32_data(i); break;
  }
  return r;
}

void addInitializer(const onnx::TensorProto& t, Ctx& c) {
  std::string what = "initializer '" + t.name() + "'";
  if (t.name().empty()) fail("{}: an initializer has no name", c.path);
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    std::string location;
    uint64_t offset = 0, length = 0;
    bool hasLength = false;
    // offset / length: up to 19 decimal digits (stoull alone would take
    // "-8" as 2^64 - 8); the range checks below bound them further.
    auto number = [&](const onnx::StringStringEntryProto& kv) {
      const std::string& v = kv.value();
      if (v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos)
        fail("{}: {}: external data '{}' must be a non-negative integer, got '{}'", c.path, what, kv.key(), v);
      return std::stoull(v);
    };
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = number(kv);
      else if (kv.key() == "length") length = number(kv), hasLength = true;
    }
    if (location.empty()) fail("{}: {}: external data has no location", c.path, what);
    if (location.find('\0') != std::string::npos)
      fail("{}: {}: external data location '{}' holds a NUL byte (a file name cannot)", c.path, what,
           location.substr(0, location.find('\0')) + "\\0...");
    fs::path rel(location);
    if (rel.is_absolute() || rel.lexically_normal().string().rfind("..", 0) == 0)
      fail("{}: {}: external data location '{}' must be a path inside the model's folder", c.path, what, location);
    fs::path file = c.dir / rel;
    struct stat st {};
    if (stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      fail("{}: {}: external data file '{}' is missing", c.path, what, file.string());
    ops::WeightRef w{t.name(), dtypeOf(t.data_type(), what, c), dimsOf(t, c), fs::absolute(file).lexically_normal().string(), offset, 0};
    uint64_t need = (uint64_t)ops::numel(w.shape) * ops::dtypeSize(w.dtype);
    if (hasLength && length != need)
      fail("{}: {}: external data length {} does not match {} {} ({} bytes)", c.path, what, length, ops::dtypeName(w.dtype),
           ops::shapeStr(w.shape), need);
    if (offset > (uint64_t)st.st_size || need > (uint64_t)st.st_size - offset)
      fail("{}: {}: bytes [{}, {}) lie outside '{}' ({} bytes)", c.path, what, offset, offset + need, file.string(), st.st_size);
    w.nbytes = need;
    c.g.weights.push_back(w);
    return;
  }
  bool bigFloat = (t.data_type() == onnx::TensorProto_DataType_FLOAT || t.data_type() == onnx::TensorProto_DataType_FLOAT16 ||
                   t.data_type() == onnx::TensorProto_DataType_BFLOAT16) && t.has_raw_data() && t.raw_data().size() > 64;
  auto it = c.rawRanges.find(t.name());
  if (bigFloat && it != c.rawRanges.end() && it->second.length == t.raw_data().size()) {
    ops::WeightRef w{t.name(), dtypeOf(t.data_type(), what, c), dimsOf(t, c), fs::absolute(c.path).lexically_normal().string(),
                     it->second.offset, it->second.length};
    if ((uint64_t)ops::numel(w.shape) * ops::dtypeSize(w.dtype) != w.nbytes)
      fail("{}: {}: raw data has {} bytes, which does not match its shape {}", c.path, what, w.nbytes, ops::shapeStr(w.shape));
    c.g.weights.push_back(w);
    return;
  }
  c.g.constants.push_back({t.name(), inlineTensor(t, c, what)});
}

ops::ValueInfo valueInfo(const onnx::ValueInfoProto& v, const Ctx& c) {
  if (!v.type().has_tensor_type()) fail("{}: graph value '{}' is not a tensor", c.path, v.name());
  const auto& tt = v.type().tensor_type();
  ops::ValueInfo r{v.name(), dtypeOf(tt.elem_type(), "graph value '" + v.name() + "'", c), {}, tt.has_shape()};
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value()) r.shape.push_back({d.dim_value(), ""});
    else r.shape.push_back({-1, d.dim_param()});
  }
  return r;
}

json attrValue(const onnx::AttributeProto& a, const onnx::NodeProto& n, const Ctx& c) {
  switch (a.type()) {
    case onnx::AttributeProto_AttributeType_INT: return a.i();
    case onnx::AttributeProto_AttributeType_FLOAT: return a.f();
    case onnx::AttributeProto_AttributeType_STRING: return a.s();
    case onnx::AttributeProto_AttributeType_INTS: return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case onnx::AttributeProto_AttributeType_FLOATS: return std::vector<float>(a.floats().begin(), a.floats().end());
    case onnx::AttributeProto_AttributeType_TENSOR:
      return ops::tensorToJson(inlineTensor(a.t(), c, "attribute '" + a.name() + "' of node '" + n.name() + "'"));
    default: break;
  }
  fail("{}: node '{}' ({}): attribute '{}' has a type strata does not read (graphs, sparse tensors, type protos)", c.path,
       n.name(), n.op_type(), a.name());
}

void addConstantNode(const onnx::NodeProto& n, Ctx& c) {
  if (n.output_size() != 1) fail("{}: Constant node '{}' must have one output", c.path, n.name());
  for (const auto& a : n.attribute()) {
    std::string what = "Constant node '" + n.name() + "'";
    ops::Tensor v;
    if (a.name() == "value") v = inlineTensor(a.t(), c, what);
    else if (a.name() == "value_float") v = ops::Tensor::scalarF32(a.f());
    else if (a.name() == "value_floats") v = ops::Tensor::fromF32({a.floats().begin(), a.floats().end()}, {a.floats_size()});
    else if (a.name() == "value_int") v = ops::Tensor::fromI64({a.i()}, {});
    else if (a.name() == "value_ints") v = ops::Tensor::fromI64({a.ints().begin(), a.ints().end()});
    else fail("{}: {}: attribute '{}' is not supported", c.path, what, a.name());
    c.g.constants.push_back({n.output(0), v});
    return;
  }
  fail("{}: Constant node '{}' has no value", c.path, n.name());
}

// The op name a node gets in strata: the ONNX op type for the default domain,
// "onnx.<type>" where strata has an op of the same name (Attention-23),
// "com.microsoft.<type>" for onnxruntime's contrib ops strata reads.
std::string strataOpName(const onnx::NodeProto& n, const std::string& name, const Ctx& c) {
  const std::string& dom = n.domain();
  if (dom == kOrtDomain) {
    std::string op = std::string(kOrtDomain) + "." + n.op_type();
    if (!ops::findKernel(op))
      fail("{}: node '{}': op '{}' of domain '{}' is not supported (strata reads {} from it)", c.path, name, n.op_type(), dom,
           "GroupQueryAttention, MultiHeadAttention, RotaryEmbedding, SkipSimplifiedLayerNormalization, FusedMatMul");
    return op;
  }
  if (!dom.empty() && dom != "ai.onnx")
    fail("{}: node '{}': op '{}' of domain '{}' is not supported", c.path, name, n.op_type(), dom);
  if (ops::findKernel("onnx." + n.op_type())) return "onnx." + n.op_type();
  if (!ops::findKernel(n.op_type()) || ops::isStrataOp(n.op_type()))
    fail("{}: node '{}': op '{}' is not supported", c.path, name, n.op_type());
  return n.op_type();
}

void addNode(const onnx::NodeProto& n, Ctx& c) {
  std::string name = n.name().empty() ? n.op_type() + "_" + std::to_string(c.g.nodes.size()) : n.name();
  if (n.op_type() == "Constant" && (n.domain().empty() || n.domain() == "ai.onnx")) return addConstantNode(n, c);
  ops::NodeDef d{strataOpName(n, name, c), name, {n.input().begin(), n.input().end()}, {n.output().begin(), n.output().end()},
                 json::object()};
  for (const auto& a : n.attribute()) {
    if (!a.ref_attr_name().empty()) fail("{}: node '{}': attribute references (functions) are not supported", c.path, name);
    d.attrs[a.name()] = attrValue(a, n, c);
  }
  if (n.op_type() == "SimplifiedLayerNormalization" && n.output_size() > 1 && !n.output(1).empty())
    fail("{}: node '{}': SimplifiedLayerNormalization's inv_std_var output (training) is not supported", c.path, name);
  if (n.op_type() == "LayerNormalization" && n.output_size() > 1 &&
      std::any_of(n.output().begin() + 1, n.output().end(), [](const std::string& o) { return !o.empty(); }))
    fail("{}: node '{}': LayerNormalization's Mean / InvStdDev outputs (training) are not supported", c.path, name);
  if (n.op_type() == "Cast") {
    if (!d.attrs.contains("to")) fail("{}: node '{}': Cast has no 'to' attribute", c.path, name);
    d.attrs["to"] = ops::dtypeName(dtypeOf((int)d.attrs["to"].get<int64_t>(), "Cast node '" + name + "' target", c));
  }
  c.g.nodes.push_back(std::move(d));
}

// Outputs strata's kernels do not produce (training statistics, the raw QK
// product) must not be read by anything.
void checkUnreadOutputs(const Ctx& c) {
  static const std::map<std::string, std::vector<size_t>> unproduced = {
      {"com.microsoft.SkipSimplifiedLayerNormalization", {1, 2}}, {"onnx.Attention", {3}}};
  std::set<std::string> read;
  for (const auto& n : c.g.nodes) read.insert(n.inputs.begin(), n.inputs.end());
  for (const auto& o : c.g.outputs) read.insert(o.name);
  for (const auto& n : c.g.nodes) {
    auto it = unproduced.find(n.op);
    if (it == unproduced.end()) continue;
    for (size_t i : it->second)
      if (i < n.outputs.size() && !n.outputs[i].empty() && read.count(n.outputs[i]))
        fail("{}: node '{}' ({}): output #{} ('{}') is read, and strata does not compute it", c.path, n.name, n.op, i,
             n.outputs[i]);
  }
}

}  // namespace

ops::GraphDef loadOnnxFromBytes(const uint8_t* data, size_t size, const std::string& path) {
  if (size > INT_MAX) fail("{}: {} bytes is over protobuf's 2 GiB limit; store the weights as external data", path, size);
  onnx::ModelProto m;
  if (!m.ParseFromArray(data, (int)size))
    fail("{}: not a valid ONNX model (the protobuf could not be parsed: truncated or corrupt file?)", path);
  if (!m.has_graph()) fail("{}: the ONNX model has no graph", path);
  int64_t opset = -1;
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  if (opset < 0) fail("{}: the model imports no opset of the default ONNX domain", path);
  for (const auto& o : m.opset_import())
    if (o.domain() == kOrtDomain && o.version() != 1)
      fail("{}: version {} of domain '{}' is not supported (strata reads version 1)", path, o.version(), kOrtDomain);
  if (opset < kMinOnnxOpset || opset > kMaxOnnxOpset)
    fail("{}: opset {} of the default ONNX domain is not supported (strata reads opsets {} to {})", path, opset,
         kMinOnnxOpset, kMaxOnnxOpset);
  Ctx c{path, fs::path(path).parent_path(), RawDataLocator(data, size).found, {}};
  c.g.source = path;
  c.g.meta["onnx_opset"] = opset;
  c.g.meta["onnx_ir_version"] = m.ir_version();
  c.g.meta["producer"] = m.producer_name() + " " + m.producer_version();
  const auto& graph = m.graph();
  std::set<std::string> inits;
  for (const auto& t : graph.initializer()) {
    addInitializer(t, c);
    inits.insert(t.name());
  }
  if (graph.sparse_initializer_size()) fail("{}: sparse initializers are not supported", path);
  for (const auto& v : graph.input())
    if (!inits.count(v.name())) c.g.inputs.push_back(valueInfo(v, c));
  for (const auto& v : graph.output()) c.g.outputs.push_back(valueInfo(v, c));
  for (const auto& n : graph.node()) addNode(n, c);
  checkUnreadOutputs(c);
  return c.g;
}

ops::GraphDef loadOnnx(const std::string& path) {
  auto f = runtime::MappedFile::open(path);
  return loadOnnxFromBytes(f->data(), f->size(), path);
}

}  // namespace strata::models
