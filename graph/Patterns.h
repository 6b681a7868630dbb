// Rewrite patterns of the graph compiler, one family per .cpp (named after
// it), collected by the passes in Passes.td:
//  - graph-raise-llm-ops: exporter subgraphs -> strata's high-level ops
//    (RMSNorm, Rope, Attention, Silu), the form the HF builder emits directly;
//  - graph-form-regions: high-level ops -> region ops (ops/regions.h).
#pragma once
#include "mlir/IR/PatternMatch.h"

namespace strata::graph {

// Identity, and Cast to the operand's own element type -> the operand.
void populateFoldNoOpPatterns(mlir::RewritePatternSet& patterns);
// Pow/ReduceMean/Add/Sqrt/(Reciprocal|Div)/Mul chains -> RMSNorm.
void populateRaiseRMSNormPatterns(mlir::RewritePatternSet& patterns);
// x * cos + rotate_half(x) * sin with cos/sin from positions -> Rope.
void populateRaiseRopePatterns(mlir::RewritePatternSet& patterns);
// MatMul/scale/mask/Softmax/MatMul with repeat-kv -> Attention (mask classified).
void populateRaiseAttentionPatterns(mlir::RewritePatternSet& patterns);
// x * Sigmoid(x) -> Silu.
void populateRaiseSiluPatterns(mlir::RewritePatternSet& patterns);
void populateRaiseFlatGemmPatterns(mlir::RewritePatternSet& patterns);
void populateRaiseGeluPatterns(mlir::RewritePatternSet& patterns);
// ONNX opset 23: RotaryEmbedding -> Rope, Attention -> Attention
// (RMSNormalization is in the RMSNorm family).
void populateRaiseRotaryEmbeddingPatterns(mlir::RewritePatternSet& patterns);
void populateRaiseOnnxAttentionPatterns(mlir::RewritePatternSet& patterns);
// onnxruntime's contrib ops: SkipSimplifiedLayerNormalization -> Add + RMSNorm,
// FusedMatMul -> Transpose/MatMul/Mul; GroupQueryAttention -> head splits,
// Rope, Attention, head merge.
void populateRaiseOrtContribPatterns(mlir::RewritePatternSet& patterns);
void populateRaiseGroupQueryAttentionPatterns(mlir::RewritePatternSet& patterns);
// MultiHeadAttention (+ the RotaryEmbedding on its q and k) -> head splits,
// Rope, Attention, head merge.
void populateRaiseMultiHeadAttentionPatterns(mlir::RewritePatternSet& patterns);

// Gather(table, ids) -> region.embedding; RMSNorm -> region.rmsnorm (and
// LayerNormalization over the last axis with weight and bias ->
// region.layernorm).
void populateFormEmbeddingPatterns(mlir::RewritePatternSet& patterns);
void populateFormRMSNormPatterns(mlir::RewritePatternSet& patterns);
// MatMul(x, W) / Linear(x, W, b) (+ bias Add) -> region.gemm.
void populateFormGemmPatterns(mlir::RewritePatternSet& patterns);
// Epilogue fusions on region.gemm: SwiGLU, residual add, row gather (lm_head),
// and sibling GEMMs on one input (q/k/v) into one multi-result region.
void populateFuseGemmSwiGLUPatterns(mlir::RewritePatternSet& patterns);
void populateFuseGemmEpiloguePatterns(mlir::RewritePatternSet& patterns);
void populateFuseSiblingGemmPatterns(mlir::RewritePatternSet& patterns);
// region.rmsnorm read only as GEMM regions' x -> their norm prologue
// (graph-fuse-gemm-norm, a target's choice).
void populateFuseGemmNormPatterns(mlir::RewritePatternSet& patterns);
// region.rope of q and of k and their region.kv_write -> one
// region.rope_kv_write (graph-fuse-rope-kv-write, a target's choice).
void populateFuseRopeKvWritePatterns(mlir::RewritePatternSet& patterns);
// Last: what is left of float elementwise / reduction chains -> one
// region.elementwise per connected (convex) group.
void populateFormElementwisePatterns(mlir::RewritePatternSet& patterns);

}  // namespace strata::graph
