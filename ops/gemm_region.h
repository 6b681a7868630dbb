// region.gemm's attributes and where its operands sit — x, w_0..w_{n-1},
// [b_0..b_{n-1}], [residual], [rows], [norm] — read once here for every executor of
// the region: the reference op (ops/kernel_table.cpp), the CPU launcher
// (runtime/region_kernels.cpp) and the GPU one (runtime/gpu_executor.cpp).
// Attributes: weights (n), bias, residual, rows (0 / 1), layout ("kn" |
// "nk"), epilogue ("none" | "swiglu" | "gelu": GELU's tanh form after the
// bias | "geglu": swiglu with that GELU for silu); ops::gemmRegion has the
// semantics. `swiglu` below means gated (two weights, one output), `gelu`
// that GELU is the activation. `norm` (attribute norm = 1, norm_eps): an
// RMSNorm prologue, x's rows (after `rows`) normalized by the 1-D weight
// operand `norm` before the product (graph-fuse-gemm-norm).
#pragma once
#include <cstddef>
#include <cstdint>

#include "ops/graph_def.h"

namespace strata::ops {

struct GemmRegionOperands {
  int64_t weights = 0;
  bool bias = false, residual = false, rows = false, swiglu = false, gelu = false, weightsNK = false, norm = false;
  float normEps = 0;

  // Reads n's attributes; throws strata::Error saying what does not fit:
  // an unknown layout or epilogue, fewer than one weight, SwiGLU without
  // exactly two weights, a residual on several outputs, or `operands`
  // other than the count the attributes give.
  static GemmRegionOperands of(const NodeDef& n, size_t operands);

  size_t count() const { return 1 + weights * (bias ? 2 : 1) + residual + rows + norm; }
  size_t weight(int64_t i) const { return 1 + i; }
  size_t biasOf(int64_t i) const { return 1 + weights + i; }
  size_t residualAt() const { return 1 + weights * (bias ? 2 : 1); }
  size_t rowsAt() const { return count() - 1 - norm; }
  size_t normAt() const { return count() - 1; }
  int64_t outputs() const { return swiglu ? 1 : weights; }
  // N of weight `i` (shape `w`) for inputs of K columns; throws when `w`
  // is not a [K, N] / [N, K] matrix as the layout says.
  int64_t width(const Shape& w, int64_t K, int64_t i) const;
  // x [1, .., 1, T, K] with only `count` rows kept (lm_head on each
  // sequence's last token): [1, .., 1, count, K].
  static Shape gatheredShape(const Shape& x, int64_t count);
};

}  // namespace strata::ops
