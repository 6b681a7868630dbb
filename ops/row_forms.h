// Operand forms of a row-wise fused region (region.elementwise's generated
// kernel): the region's values live in a [rows, cols] space, the broadcast
// of its operands' shapes with cols its last dim and rows the product of the
// others. Each operand either varies along both (Full), along cols only
// (Row: the same row for every row, e.g. a weight vector), along rows only
// (Col: one value per row, e.g. a keepdims reduction) or along neither
// (Scalar). Shared by codegen (planning, on symbolic shapes) and the runtime
// (checking a launch, on concrete ones), so both decide alike.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ops/graph_def.h"

namespace strata::ops {

enum class RowForm { Full, Row, Col, Scalar };
const char* rowFormName(RowForm f);
RowForm parseRowForm(const std::string& s);  // throws on an unknown name

std::vector<Dim> dimsOf(const Shape& s);
std::string dimsStr(const std::vector<Dim>& d);

// Numpy broadcast of two shapes whose dims may be symbolic: equal dims (same
// value or same symbol) stay, a static 1 takes the other side. Throws when
// neither holds (a symbol against a different symbol or value included:
// their equality is unknown).
std::vector<Dim> broadcastDims(const std::vector<Dim>& a, const std::vector<Dim>& b);

// The form of an operand of shape `shape` in `space` (right-aligned, missing
// leading dims are 1); nullopt when it varies along some of the leading dims
// and is broadcast along others, which no row-wise form covers. `shape` must
// broadcast to `space`.
std::optional<RowForm> rowForm(const std::vector<Dim>& shape, const std::vector<Dim>& space);

// region.elementwise's launch contract: the "cols", "operands" ([{"input",
// "form"}]) and "outputs" ([{"full", "keep_last"}]) keys codegen writes into
// the node's kernel attribute (codegen/ElementwiseKernel.h), read by the CPU
// and GPU launchers alike.
struct ElementwiseLaunch {
  int64_t cols = 0;
  std::vector<std::pair<size_t, RowForm>> operands;  // input index, planned form
  std::vector<std::pair<bool, bool>> outputs;        // full, keep_last
  // Throws on missing or malformed keys.
  static ElementwiseLaunch fromJson(const nlohmann::json& kernel);
  // A launch on inputs of these shapes (the node's inputs, in order): the
  // rows of its [rows, cols] space and each output's shape (full: the
  // space; per row: the space without its last dim, or with a last dim of
  // 1). Throws when the operands do not broadcast to rows of `cols` or one
  // is not in its planned form.
  struct Shapes {
    int64_t rows = 0;
    std::vector<Shape> outputs;
  };
  Shapes shapes(const std::vector<Shape>& inputs) const;
};

}  // namespace strata::ops
