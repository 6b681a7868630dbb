// Opens whatever MODEL names on the command line as a GraphDef:
//  - a folder with config.json: a Hugging Face Llama-family checkpoint;
//  - a file ending in .onnx: an ONNX model (config.json beside it, when
//    present, supplies bos/eos ids);
//  - a file ending in .gguf: llama.cpp's format (models/gguf_model.h);
// and finds the tokenizer that goes with it.
#pragma once
#include <optional>
#include <string>

#include "ops/graph_def.h"

namespace strata::models {

ops::GraphDef loadModel(const std::string& path);
// tokenizer.json in the model folder or beside the .onnx file, if any; a
// .gguf file is its own tokenizer (Tokenizer::load reads either).
std::optional<std::string> findTokenizer(const std::string& modelPath);
// What an artifact compiled from `modelPath` records of its source (the
// plan's meta): "source_model", its absolute path, and "tokenizer", the
// absolute path of findTokenizer's file when there is one.
nlohmann::json sourceNotes(const std::string& modelPath);

}  // namespace strata::models
