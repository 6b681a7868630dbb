// RoPE angle tables, recognized by evaluation: exporters compute the angles
// E = positions * inv_freq in many ways (Mul, MatMul, Transpose, Concat of E
// with itself), so the pieces are walked loosely and the numbers decide.
// Shared by the rotate-half pattern (RaiseRope), RotaryEmbedding-23 and
// GroupQueryAttention's rotary caches.
#pragma once
#include <optional>

#include "graph/GraphDialect.h"

namespace strata::graph {

// Walks E back to the integer positions ([S] or [B, S]) it is computed from:
// through Cast/Transpose/Unsqueeze/Reshape/Expand, Concat(E, E), and Mul /
// MatMul by a constant; nullptr otherwise.
mlir::Value positionsOf(mlir::Value e);

// theta such that E == P * theta^(-2i/D) (i taken mod D/2: E may hold D or
// D/2 angles per position) with P set to probe positions; nullopt otherwise.
// Integer bases (1e4, 5e5, 1e6) are rounded to exactly.
std::optional<double> thetaOf(mlir::Value e, mlir::Value p, int64_t D);

// For a cache table E [rows, D/2] (rows indexed by position, as onnxruntime's
// cos/sin caches are): theta when E[r, i] == r * theta^(-2i/D) for every row,
// evaluated with the graph's probe inputs; nullopt otherwise.
std::optional<double> thetaOfPositionTable(GraphOp g, mlir::Value e, int64_t D);

}  // namespace strata::graph
