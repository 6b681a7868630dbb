// GraphDef: the portable, MLIR-free description of a model graph.
//
// It is the one format that crosses layer boundaries: models/ produces it from
// ONNX files and HF checkpoints, graph/ imports it into the graph dialect and
// exports the normalized module back, runtime/ executes it, and it is what an
// artifact's plan.json holds. Weights are references into their source files
// (file, byte offset, length), never copies; only small constants (shape
// operands, scalars) are stored inline.
//
// Op names are ONNX op types for standard ops ("MatMul") and strata's own
// high-level ops otherwise ("RMSNorm", "Rope", "Attention", "Linear", "Silu",
// "MakeShape"); docs/graph-and-regions.md lists them with their semantics.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ops/tensor.h"

namespace strata::ops {

// One dimension: static (value >= 0, no symbol) or symbolic (named, value -1).
struct Dim {
  int64_t value = -1;
  std::string symbol;
  bool isStatic() const { return symbol.empty() && value >= 0; }
  std::string str() const { return isStatic() ? std::to_string(value) : (symbol.empty() ? "?" : symbol); }
  bool operator==(const Dim&) const = default;
};

struct ValueInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<Dim> shape;
  bool shapeKnown = true;  // false: rank unknown
};

struct WeightRef {
  std::string name;
  DType dtype = DType::F32;  // storage dtype in the file
  Shape shape;
  std::string file;  // absolute path
  uint64_t offset = 0;
  uint64_t nbytes = 0;
  // Nonzero: the rows (dimension 0) are a RoPE projection's rows for this
  // many heads in llama.cpp's interleaved pair order (each head's rows
  // 2j, 2j + 1 are its rotate-half rows j, j + head_dim / 2: how GGUF files
  // of architecture llama store attn_q / attn_k); loading puts them back in
  // the rotate-half order the model's Rope expects (a copy of these rows).
  int64_t interleavedRopeHeads = 0;
  // Non-empty: the bytes are rows of llama.cpp blocks in this format
  // (ops/quant.h, ggml's name: "Q4_K"); dtype is then F32, the type the
  // values dequantize to, and nbytes the blocks' size.
  std::string quant;
};

struct Constant {
  std::string name;
  Tensor value;
};

struct NodeDef {
  std::string op;
  std::string name;
  std::vector<std::string> inputs;  // "" marks an omitted optional input
  std::vector<std::string> outputs;
  nlohmann::json attrs = nlohmann::json::object();
};

struct GraphDef {
  std::string source;  // where it came from, for messages
  std::vector<ValueInfo> inputs, outputs;
  std::vector<WeightRef> weights;
  std::vector<Constant> constants;
  std::vector<NodeDef> nodes;
  // Types of intermediate values where the graph compiler knows them (for
  // reports; executors never need them).
  std::map<std::string, ValueInfo> values;
  // Model facts the runtime needs around the graph: bos/eos ids, vocab, ...
  nlohmann::json meta = nlohmann::json::object();

  const ValueInfo* findInput(const std::string& name) const;
};

nlohmann::json toJson(const GraphDef& g);
GraphDef graphFromJson(const nlohmann::json& j);

// Inline constants are stored as {"dtype", "shape", "data": [...]}.
nlohmann::json tensorToJson(const Tensor& t);
Tensor tensorFromJson(const nlohmann::json& j);

}  // namespace strata::ops
