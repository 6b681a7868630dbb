// ONNX model files -> GraphDef.
//
// Parses ModelProto with protobuf (not onnx's checker, which stops at IR v8).
// Accepts the default domain at opsets 17..23 (23's Attention is named
// "onnx.Attention": strata has an Attention op of its own) and, from
// onnxruntime's com.microsoft domain (version 1), GroupQueryAttention,
// MultiHeadAttention, RotaryEmbedding, SkipSimplifiedLayerNormalization and
// FusedMatMul, named
// "com.microsoft.<op>". Inline and external-data
// initializers, dynamic dims (dim_param). Large initializers become weight
// references (file + byte offset) into the .onnx file or its external data
// file; only small ones (shape operands, scalars) are copied inline.
#pragma once
#include <string>

#include "ops/graph_def.h"

namespace strata::models {

inline constexpr int64_t kMinOnnxOpset = 17, kMaxOnnxOpset = 23;
inline constexpr const char* kOrtDomain = "com.microsoft";

ops::GraphDef loadOnnx(const std::string& path);
// Same, from bytes already in memory; `path` names the file in messages and
// anchors external data. Used by the fuzzer.
ops::GraphDef loadOnnxFromBytes(const uint8_t* data, size_t size, const std::string& path);

}  // namespace strata::models
