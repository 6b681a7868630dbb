// What every attention raising pattern (decomposed exports, ONNX's
// Attention-23, onnxruntime's GroupQueryAttention) shares: classifying an
// in-graph mask by evaluation, peeling repeat-kv, and building strata's
// Attention op with its attributes.
#pragma once
#include <optional>

#include "graph/GraphDialect.h"
#include "mlir/IR/PatternMatch.h"

namespace strata::graph {

// Scores at or below this count as masked (exporters use finfo.min or -inf).
inline constexpr double kMaskedBelow = -1e30;

// The closed forms a mask is compared with: allowed[b, i, j] for query i
// (position past + i) and key j.
enum class MaskKind { CausalPadding, Causal, Padding, None };
const char* maskName(MaskKind k);

// How an evaluated mask tensor reads: bool "true = masked" (Where(c, -big,
// s)), bool "true = allowed" (Where(c, s, -big), Attention-23's bool mask) or
// additive float.
enum class MaskForm { MaskedIfTrue, AllowedIfTrue, Additive };

// Evaluates `mask` on probe inputs (several batch / new-token / cached-token
// sizes, one padded row) and returns the one closed form it equals on all of
// them; nullopt when none (or the slice cannot be evaluated).
std::optional<MaskKind> classifyMask(GraphOp g, mlir::Value mask, MaskForm form);

// Reshape(Expand|Tile(Unsqueeze(k, 2)), [B, Hkv * n, T, D]) -> k (each KV head
// repeated n times in a row: GQA grouping); otherwise v itself.
mlir::Value peelRepeatKv(mlir::Value v);

// Attention(q, k, v[, attention_mask]){scale, causal, mask, heads, kv_heads,
// head_dim} replacing nothing yet; q/k/v must be [B, H, S, D] with static H
// and D. The attention_mask graph input is added for the padding kinds.
mlir::Operation* createAttention(mlir::PatternRewriter& rw, mlir::Location loc, mlir::Type result, mlir::Value q,
                                 mlir::Value k, mlir::Value v, MaskKind kind, double scale);

// The softmax scale of an attention node: its `scale` attribute, or
// 1/sqrt(D) when absent or 0 (the default of ONNX's and onnxruntime's ops).
double attentionScale(mlir::Operation* op, int64_t headDim);

// [B, S, H * D] -> Reshape [B, S, H, D] -> Transpose [B, H, S, D]: the head
// split graph-form-paged-attention reads. x must be rank 3.
mlir::Value createHeadSplit(mlir::PatternRewriter& rw, mlir::Location loc, mlir::Value x, int64_t H, int64_t D);
// o [B, H, S, D] -> Transpose [B, S, H, D] -> Reshape to `result` ([B, S, H * D]).
mlir::Value createHeadMerge(mlir::PatternRewriter& rw, mlir::Location loc, mlir::Value o, mlir::Type result);

// Replaces `op` (a fused attention op whose result 0 is [B, S, H * D] and
// whose other results are unread) by Attention on the split heads qh, kh, vh
// ([B, H(kv), S|T, D]) with `op`'s scale (attentionScale), then the head merge.
void replaceWithHeadAttention(mlir::PatternRewriter& rw, mlir::Operation* op, mlir::Value qh, mlir::Value kh,
                              mlir::Value vh, MaskKind kind, int64_t headDim);

}  // namespace strata::graph
