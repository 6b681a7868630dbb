//===- Passes.td - graph normalization passes ----------------------------===//
#ifndef STRATA_GRAPH_PASSES
#define STRATA_GRAPH_PASSES

include "mlir/Pass/PassBase.td"

def GraphInferShapes : Pass<"graph-infer-shapes", "::strata::graph::GraphOp"> {
  let summary = "Infer result shapes (with symbolic dims) and element types";
  let description = [{
    Walks the graph in order and refines every node's result type from its
    operands: broadcasting, matmul, reshape/expand by a known shape operand,
    gathers, reductions and strata's own ops. Dims that are the same symbol
    keep their name (`sequence`); dims that cannot be known become `?`.
  }];
}

def GraphFoldShapeArith : Pass<"graph-fold-shape-arith", "::strata::graph::GraphOp"> {
  let summary = "Fold exporter shape arithmetic into constants and symbolic dims";
  let description = [{
    Exporters compute shapes at run time with Shape/Gather/Concat/Unsqueeze/
    Slice/Cast/Add/Mul/Equal/Where chains. This pass evaluates such chains
    symbolically (each entry an affine sum of input dims and a constant) and
    replaces every fully known shape operand with a `graph.constant` (all
    static) or one `graph.MakeShape` that reads the dims directly, so the
    chains become dead.
  }];
}

def GraphDCE : Pass<"graph-dce", "::strata::graph::GraphOp"> {
  let summary = "Remove nodes, weights and constants whose results are unused";
}

def GraphRaiseLlmOps : Pass<"graph-raise-llm-ops", "::strata::graph::GraphOp"> {
  let summary = "Raise exporter subgraphs to RMSNorm, Rope, Attention and Silu";
  let description = [{
    Rewrites the decomposed forms ONNX exporters write (both PyTorch
    exporters, with or without past KV) into strata's high-level ops, the
    form the HF builder emits directly, so region formation sees one form.
    Identity nodes and Casts to the operand's own type (TorchScript writes
    both around shared weights and norms) fold away first. Then:
    RMSNorm (Pow/ReduceMean/Add/Sqrt/Reciprocal|Div/Mul), Rope (rotate-half
    with Slice/Neg/Concat, cos/sin from positions; theta recovered by
    evaluating the angle table; on the first R head dims concatenated with
    the rest: partial rotary, rotary_dim R), Attention
    (MatMul/scale/mask/Softmax/MatMul, k^T also straight from a [B, T, H, D]
    head split, GQA repeat-kv; the mask classified by evaluation on probe inputs as
    causal, padding, both or none), Silu (x * Sigmoid(x)), Gelu's tanh form
    (x * 0.5 * (1 + Tanh(sqrt(2 / pi) (x + 0.044715 x^3)))), linear layers
    around ONNX's 2-D Gemm (Reshape to [-1, K], Gemm, Reshape back: GPT-2's
    Conv1D) as MatMul + bias or Linear on [B, S, K] rows; also ONNX opset
    23's RMSNormalization, RotaryEmbedding and Attention, and onnxruntime's
    SkipSimplifiedLayerNormalization (Add + RMSNorm), FusedMatMul
    (Transpose/MatMul/Mul) and GroupQueryAttention (head splits, Rope,
    causal Attention, head merge). Dead nodes are removed afterwards.
  }];
}

def GraphFormPagedAttention : Pass<"graph-form-paged-attention", "::strata::graph::GraphOp"> {
  let summary = "Turn attention over past+new K/V into a paged KV write and paged attention";
  let description = [{
    Gives the graph the runtime's prefill/decode form: tokens of all
    sequences of a step are flattened into one [1, T] batch; every causal
    Attention whose q/k/v come from token-major projections
    (Reshape + Transpose, Rope on q and k) becomes region.rope on q and k,
    region.kv_write into the layer's cache block and region.paged_attention
    reading K/V through block tables. Past K/V inputs, attention_mask and the
    present outputs disappear (the runtime's cache owns K/V); new inputs are
    position_ids (when the graph derived positions itself; a weight table
    gathered at 0..S-1, a learned position embedding, then reads it too),
    seq_starts,
    context_lens, block_tables, slot_mapping, logits_indices and
    kv_cache.<layer>. The logits are computed only at logits_indices rows.
    Graphs without past K/V get the same form, so one compiled graph serves
    prefill and decode.
  }];
}

def GraphFormRegions : Pass<"graph-form-regions", "::strata::graph::GraphOp"> {
  let summary = "Form embedding, rmsnorm, GEMM+epilogue and fused elementwise regions";
  let description = [{
    Gather from a weight table -> region.embedding; RMSNorm -> region.rmsnorm;
    LayerNormalization over the last axis with weight and bias ->
    region.layernorm;
    MatMul with a weight / Linear (+ bias Add) -> region.gemm, then epilogue
    fusions in order: SwiGLU (silu(x Wg) * (x Wu) -> one region; GeGLU with
    tanh GELU for silu), bias Add, tanh GELU of a single product, residual Add,
    row gather (lm_head at logits_indices), and sibling GEMMs that read the
    same input (q/k/v) -> one region with several results. Last, what is
    left of float elementwise / reduction chains -> region.elementwise, one
    per connected group that does not depend on itself.
  }];
}

def GraphFuseGemmNorm : Pass<"graph-fuse-gemm-norm", "::strata::graph::GraphOp"> {
  let summary = "Fold an RMSNorm region into the GEMM regions that read it as x";
  let description = [{
    A region.rmsnorm whose every use is the x of a region.gemm (the q / k / v
    region, the SwiGLU region, the lm_head) becomes those regions' prologue:
    they read the norm's input as x, the norm weight as their last operand,
    and carry `norm = 1` and `norm_eps`; the rmsnorm region is gone. Its
    semantics are the unfused pair's (ops/gemm_region.h): x's rows are
    normalized, then multiplied. A norm with any other use stays. The
    pipeline runs it for targets whose GEMM kernels take the prologue
    (graph::RegionOptions::normPrologue: CUDA); the CPU target does not.
  }];
}

def GraphFuseRopeKvWrite : Pass<"graph-fuse-rope-kv-write", "::strata::graph::GraphOp"> {
  let summary = "Fuse a layer's q and k RoPE and its paged KV write into one region";
  let description = [{
    A region.kv_write(cache, k', v, slot_mapping) whose k' is a region.rope
    read only there, and whose cache a region.paged_attention reads with a
    q' rotated by a region.rope at the same positions with the same
    attributes, becomes region.rope_kv_write(q, k, v, positions, cache,
    slot_mapping) -> (q', cache'), with the RoPE's attributes and the
    write's layer; the three regions are gone. Its semantics are the
    unfused three's (ops/regions.h): q and k rotated, k' and v written at
    their slots. Anything else stays as it is. The pipeline runs it for
    targets with a kernel that does all three in one launch
    (graph::RegionOptions::ropeKvWrite: CUDA); the CPU target does not.
  }];
}

#endif  // STRATA_GRAPH_PASSES
