//===- GraphOps.td - the graph dialect -----------------------------------===//
//
// The graph level of strata: one op per ONNX operator that LLM exports use
// (mnemonic = ONNX op type, ONNX semantics, ONNX attributes by name), plus
// strata's high-level ops (RMSNorm, Rope, Attention, Linear, Silu,
// MakeShape), weights as references into their source files, and inline
// constants. Values are builtin ranked tensors; a dynamic dim may carry a
// symbol name in the tensor encoding: tensor<?x?xi64, ["batch", "sequence"]>
// (one string per dim, "" for static or unnamed dims).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_GRAPH_OPS
#define STRATA_GRAPH_OPS

include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Graph_Dialect : Dialect {
  let name = "graph";
  let cppNamespace = "::strata::graph";
  let summary = "Model graphs: ONNX-semantics ops, weights by reference, symbolic dims";
  let description = [{
    The form every model source (ONNX file, HF checkpoint) is imported into
    and normalized in. A model is one `graph.graph` op: its block arguments
    are the model inputs, `graph.output` names its outputs. Node results may
    start unranked (`tensor<*xf32>`) until graph-infer-shapes refines them.
  }];
}

class Graph_Op<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic, !listconcat(traits, [Pure])>;

def Graph_Tensor : AnyTypeOf<[AnyTensor, NoneType]>;

// A compute node. Operand and result counts are checked against
// [minIn, maxIn] (maxIn = -1: unbounded) and numOut (-1: one or more);
// attributes are the node's ONNX (or strata) attributes, by name.
class Graph_NodeOp<string mnemonic, int minIn, int maxIn, int numOut, string doc>
    : Graph_Op<mnemonic> {
  let summary = doc;
  let arguments = (ins Variadic<Graph_Tensor>:$inputs);
  let results = (outs Variadic<AnyTensor>:$outputs);
  let assemblyFormat = "`(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    static constexpr int kMinInputs = }] # minIn # [{;
    static constexpr int kMaxInputs = }] # maxIn # [{;
    static constexpr int kNumOutputs = }] # numOut # [{;
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::verify() {
      return verifyNodeOp(getOperation(), kMinInputs, kMaxInputs, kNumOutputs);
    }
  }];
}

class Graph_Unary<string m, string doc> : Graph_NodeOp<m, 1, 1, 1, doc>;
class Graph_Binary<string m, string doc> : Graph_NodeOp<m, 2, 2, 1, doc>;

// Elementwise arithmetic and logic (numpy broadcasting).
def Graph_AddOp : Graph_Binary<"Add", "a + b">;
def Graph_SubOp : Graph_Binary<"Sub", "a - b">;
def Graph_MulOp : Graph_Binary<"Mul", "a * b">;
def Graph_DivOp : Graph_Binary<"Div", "a / b">;
def Graph_PowOp : Graph_Binary<"Pow", "a ^ b">;
def Graph_ModOp : Graph_Binary<"Mod", "a mod b">;
def Graph_EqualOp : Graph_Binary<"Equal", "a == b">;
def Graph_LessOp : Graph_Binary<"Less", "a < b">;
def Graph_LessOrEqualOp : Graph_Binary<"LessOrEqual", "a <= b">;
def Graph_GreaterOp : Graph_Binary<"Greater", "a > b">;
def Graph_GreaterOrEqualOp : Graph_Binary<"GreaterOrEqual", "a >= b">;
def Graph_AndOp : Graph_Binary<"And", "logical and">;
def Graph_OrOp : Graph_Binary<"Or", "logical or">;
def Graph_XorOp : Graph_Binary<"Xor", "logical xor">;
def Graph_MaxOp : Graph_NodeOp<"Max", 1, -1, 1, "elementwise maximum of all inputs">;
def Graph_MinOp : Graph_NodeOp<"Min", 1, -1, 1, "elementwise minimum of all inputs">;
def Graph_WhereOp : Graph_NodeOp<"Where", 3, 3, 1, "cond ? x : y">;

def Graph_NegOp : Graph_Unary<"Neg", "-x">;
def Graph_AbsOp : Graph_Unary<"Abs", "|x|">;
def Graph_SqrtOp : Graph_Unary<"Sqrt", "square root">;
def Graph_ReciprocalOp : Graph_Unary<"Reciprocal", "1 / x">;
def Graph_ExpOp : Graph_Unary<"Exp", "e^x">;
def Graph_LogOp : Graph_Unary<"Log", "natural logarithm">;
def Graph_SigmoidOp : Graph_Unary<"Sigmoid", "1 / (1 + e^-x)">;
def Graph_SiluOp : Graph_Unary<"Silu", "x * sigmoid(x) (strata)">;
def Graph_TanhOp : Graph_Unary<"Tanh", "tanh">;
def Graph_ErfOp : Graph_Unary<"Erf", "error function">;
def Graph_ReluOp : Graph_Unary<"Relu", "max(x, 0)">;
def Graph_CosOp : Graph_Unary<"Cos", "cosine">;
def Graph_SinOp : Graph_Unary<"Sin", "sine">;
def Graph_FloorOp : Graph_Unary<"Floor", "floor">;
def Graph_CeilOp : Graph_Unary<"Ceil", "ceiling">;
def Graph_NotOp : Graph_Unary<"Not", "logical not">;
def Graph_IsNaNOp : Graph_Unary<"IsNaN", "x is NaN">;
def Graph_IsInfOp : Graph_Unary<"IsInf", "x is infinite">;
def Graph_IdentityOp : Graph_Unary<"Identity", "x">;
def Graph_CastOp : Graph_Unary<"Cast", "convert to the element type named by `to`">;

// Shapes and data movement.
def Graph_ShapeOp : Graph_Unary<"Shape", "the input's dims [start, end) as i64">;
def Graph_ReshapeOp : Graph_NodeOp<"Reshape", 2, 2, 1, "reshape to a shape operand (0 copies, -1 infers)">;
def Graph_TransposeOp : Graph_Unary<"Transpose", "permute dims by `perm`">;
def Graph_SliceOp : Graph_NodeOp<"Slice", 3, 5, 1, "slice by starts, ends, axes, steps operands">;
def Graph_ConcatOp : Graph_NodeOp<"Concat", 1, -1, 1, "concatenate along `axis`">;
def Graph_SplitOp : Graph_NodeOp<"Split", 1, 2, -1, "split along `axis`">;
def Graph_GatherOp : Graph_NodeOp<"Gather", 2, 2, 1, "take indices along `axis`">;
def Graph_GatherNDOp : Graph_NodeOp<"GatherND", 2, 2, 1, "gather by index tuples">;
def Graph_ExpandOp : Graph_NodeOp<"Expand", 2, 2, 1, "broadcast to a shape operand">;
def Graph_TileOp : Graph_NodeOp<"Tile", 2, 2, 1, "repeat along each dim">;
def Graph_UnsqueezeOp : Graph_NodeOp<"Unsqueeze", 1, 2, 1, "insert size-1 dims">;
def Graph_FlattenOp : Graph_Unary<"Flatten", "view as 2-D: the dims before `axis` times the dims from it">;
def Graph_SqueezeOp : Graph_NodeOp<"Squeeze", 1, 2, 1, "remove size-1 dims">;
def Graph_RangeOp : Graph_NodeOp<"Range", 3, 3, 1, "start, start + delta, ... below limit">;
def Graph_CumSumOp : Graph_NodeOp<"CumSum", 2, 2, 1, "cumulative sum along an axis operand">;
def Graph_ConstantOfShapeOp : Graph_NodeOp<"ConstantOfShape", 1, 1, 1, "a tensor of a shape operand filled with `value`">;
def Graph_TriluOp : Graph_NodeOp<"Trilu", 1, 2, 1, "upper/lower triangle">;

// Linear algebra and reductions.
def Graph_MatMulOp : Graph_NodeOp<"MatMul", 2, 2, 1, "numpy matmul">;
def Graph_GemmOp : Graph_NodeOp<"Gemm", 2, 3, 1, "alpha * A' B' + beta * C">;
def Graph_SoftmaxOp : Graph_Unary<"Softmax", "softmax along `axis`">;
def Graph_ReduceMeanOp : Graph_NodeOp<"ReduceMean", 1, 2, 1, "mean over axes">;
def Graph_ReduceSumOp : Graph_NodeOp<"ReduceSum", 1, 2, 1, "sum over axes">;
def Graph_ReduceMaxOp : Graph_NodeOp<"ReduceMax", 1, 2, 1, "max over axes">;
def Graph_ReduceMinOp : Graph_NodeOp<"ReduceMin", 1, 2, 1, "min over axes">;

// onnxruntime's fused RMSNorm (default domain; ORT-optimized graphs): Y =
// X / sqrt(mean(X^2 over axes >= axis) + epsilon) * scale.
def Graph_SimplifiedLayerNormalizationOp : Graph_NodeOp<"SimplifiedLayerNormalization", 2, 2, 1,
    "RMS normalization over the axes from `axis` on, times scale">;

// LayerNormalization (opset 17: mean and variance over the axes from
// `axis` on; the training outputs Mean / InvStdDev are refused at load) and
// Gelu (opset 20, `approximate` none | tanh).
def Graph_LayerNormalizationOp : Graph_NodeOp<"LayerNormalization", 2, 3, 1,
    "(x - mean) / sqrt(var + epsilon) * scale + bias over the axes from `axis` on">;
def Graph_GeluOp : Graph_Unary<"Gelu", "x Phi(x), erf form or tanh approximation">;

// ONNX opset 23's LLM ops (semantics in ops/reference.h; raised to strata's
// ops by graph-raise-llm-ops). "onnx.Attention" is ONNX's Attention, named
// apart from strata's own.
def Graph_RMSNormalizationOp : Graph_NodeOp<"RMSNormalization", 2, 2, 1,
    "RMS normalization over the axes from `axis` on, times scale (opset 23)">;
def Graph_RotaryEmbeddingOp : Graph_NodeOp<"RotaryEmbedding", 3, 4, 1,
    "rotary embedding of x from cos/sin tables, optionally indexed by position ids (opset 23)">;
def Graph_OnnxAttentionOp : Graph_NodeOp<"onnx.Attention", 3, 6, -1,
    "ONNX Attention (opset 23): Y, present_key, present_value from Q, K, V, mask, past K/V">;

// onnxruntime's contrib ops (domain com.microsoft, version 1) that ORT's
// fusions leave in LLM graphs.
def Graph_OrtGroupQueryAttentionOp : Graph_NodeOp<"com.microsoft.GroupQueryAttention", 7, 12, -1,
    "causal GQA over token-major q/k/v with a KV cache and optional rotary (onnxruntime)">;
def Graph_OrtSkipSimplifiedLayerNormalizationOp : Graph_NodeOp<"com.microsoft.SkipSimplifiedLayerNormalization", 3, 4, -1,
    "RMS-normalized input + skip (+ bias); output #3 is the sum (onnxruntime)">;
def Graph_OrtMultiHeadAttentionOp : Graph_NodeOp<"com.microsoft.MultiHeadAttention", 3, 10, -1,
    "attention over token-major q/k/v with an additive attention bias (onnxruntime)">;
def Graph_OrtRotaryEmbeddingOp : Graph_NodeOp<"com.microsoft.RotaryEmbedding", 4, 4, 1,
    "rotary embedding of token-major x at position_ids from cos/sin caches (onnxruntime)">;
def Graph_OrtFusedMatMulOp : Graph_NodeOp<"com.microsoft.FusedMatMul", 2, 2, 1,
    "alpha * op(A) @ op(B) with optional transposes of the last two dims (onnxruntime)">;

// strata high-level ops (semantics in ops/reference.h).
def Graph_RMSNormOp : Graph_NodeOp<"RMSNorm", 2, 2, 1, "x * rsqrt(mean(x^2) + eps) * weight">;
def Graph_RopeOp : Graph_NodeOp<"Rope", 2, 2, 1, "rotate-half rotary embedding of x [B,H,S,D] at positions [B,S]">;
def Graph_AttentionOp : Graph_NodeOp<"Attention", 3, 4, 1, "scaled dot-product attention with GQA, optionally causal"> {
  let description = [{
    q [B, Hq, S, D], k/v [B, Hkv, T, D] (optional 4th operand: the key
    padding mask [B, T], nonzero = keep). Attributes: `scale`, `causal`
    (query i sits at position T - S + i), and after raising from an export
    `mask` ("none" | "causal" | "padding" | "causal+padding"), `heads`,
    `kv_heads`, `head_dim`.
  }];
}
def Graph_LinearOp : Graph_NodeOp<"Linear", 2, 3, 1, "x @ W^T (+ bias), W as [out, in]">;
def Graph_MakeShapeOp : Graph_NodeOp<"MakeShape", 0, -1, 1,
    "an i64 shape vector from operand dims (folded exporter shape arithmetic)"> {
  let description = [{
    `dims` lists the entries: an integer, or {c = k, terms = [[operand, dim,
    coeff], ...]} meaning k + sum(coeff * dim(operand)). With `scalar` the
    single entry is a 0-d tensor.
  }];
}

// Regions: what region formation (graph-form-paged-attention,
// graph-form-regions) leaves; each becomes one generated kernel. Layout is
// token-major ([..., tokens, features]); semantics in ops/regions.h.
def Graph_RegionEmbeddingOp : Graph_NodeOp<"region.embedding", 2, 2, 1,
    "embedding gather: table [V, H], ids [...] -> [..., H]">;
def Graph_RegionRMSNormOp : Graph_NodeOp<"region.rmsnorm", 2, 2, 1,
    "x * rsqrt(mean(x^2) + eps) * weight over the last axis (attr eps)">;
def Graph_RegionLayerNormOp : Graph_NodeOp<"region.layernorm", 3, 3, 1,
    "(x - mean) * rsqrt(var + eps) * weight + bias over the last axis (attr epsilon)">;
def Graph_RegionRopeOp : Graph_NodeOp<"region.rope", 2, 2, 1,
    "rotate-half RoPE on token-major x [..., S, heads * head_dim] at positions (attrs head_dim, theta)">;
def Graph_RegionGemmOp : Graph_NodeOp<"region.gemm", 2, -1, -1,
    "GEMM with epilogue: x @ W_i (+ b_i), SwiGLU, + residual, optional row gather"> {
  let description = [{
    Operands: x, the n weights, optionally n biases, optionally the residual,
    optionally the rows to compute.
    Attributes: `weights` (n), `bias`, `residual`, `rows` (0/1), `layout`
    ("kn": W is [K, N] as ONNX MatMul stores it; "nk": [N, K] as HF Linear
    does), `epilogue` ("none": one result per weight; "swiglu": n = 2 and one
    result silu(x W_0) * (x W_1); "geglu": the same with GELU's tanh form for
    silu; "gelu": n = 1, GELU's tanh form of the product after the bias).
    Sibling projections that share x (q/k/v)
    are one region with several results, so weights stay where they are in
    the model file.
  }];
}
def Graph_RegionElementwiseOp : Graph_NodeOp<"region.elementwise", 0, -1, -1,
    "a fused chain of elementwise / reduction ops (what no other region took)"> {
  let description = [{
    `body`: the steps in order, each {op, inputs, attrs} with an ONNX op
    type, its attributes and input indices (0..n-1 are the region's
    operands, n + i is step i's result); `outputs`: the indices the region
    returns.
  }];
}
def Graph_RegionKvWriteOp : Graph_NodeOp<"region.kv_write", 4, 4, 1,
    "write new K/V [..., T, kv_heads * head_dim] into a paged cache at slot_mapping [T]"> {
  let description = [{
    Operands: cache [num_blocks, 2, kv_heads, block_size, head_dim], k, v,
    slot_mapping. The result is the updated cache; the runtime owns the
    cache, so the update happens in place.
  }];
}
def Graph_RegionRopeKvWriteOp : Graph_NodeOp<"region.rope_kv_write", 6, 6, 2,
    "q and k rotated (as region.rope), k' and v written into a paged cache (as region.kv_write)"> {
  let description = [{
    Operands: q [..., T, heads * head_dim], k, v [..., T, kv_heads *
    head_dim], position_ids, cache, slot_mapping. Results: q' (q rotated) and
    the updated cache (k rotated and v at their slots, in place).
    Attributes: region.rope's (head_dim, theta, rotary_dim) and the layer.
    graph-fuse-rope-kv-write forms it for targets that ask.
  }];
}
def Graph_RegionPagedAttentionOp : Graph_NodeOp<"region.paged_attention", 5, 5, 1,
    "causal GQA attention of token-major q over a paged KV cache through block tables"> {
  let description = [{
    Operands: q [..., T, heads * head_dim], cache, block_tables [N, max_blocks],
    seq_starts [N + 1], context_lens [N]. Attributes: heads, kv_heads,
    head_dim, scale, layer.
  }];
}

def Graph_WeightOp : Graph_Op<"weight"> {
  let summary = "a model weight, referenced in its source file (never copied)";
  let description = [{
    `interleaved_rope_heads` (optional): the rows are a RoPE projection's
    rows for that many heads in llama.cpp's interleaved pair order (GGUF
    attn_q / attn_k of architecture llama); loading reorders them to the
    rotate-half order (ops/graph_def.h WeightRef). `quant` (optional): the
    bytes are llama.cpp blocks of that format (ops/quant.h, "Q4_K"), the
    result type the f32 values they stand for.
  }];
  let arguments = (ins StrAttr:$name, StrAttr:$file, I64Attr:$offset, I64Attr:$nbytes,
                       OptionalAttr<I64Attr>:$interleaved_rope_heads, OptionalAttr<StrAttr>:$quant);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$name `at` $file `[` $offset `,` $nbytes `]` attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Graph_ConstantOp : Graph_Op<"constant"> {
  let summary = "a small inline constant (shape operands, scalars)";
  let arguments = (ins StrAttr:$name, ElementsAttr:$value);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "$name $value attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Graph_GraphOp : Op<Graph_Dialect, "graph", [IsolatedFromAbove, SingleBlock]> {
  let summary = "a whole model graph";
  let description = [{
    Block arguments are the model inputs, named by `input_names`; the block
    ends in `graph.output`. `source` says where the graph came from and
    `meta` carries model facts (bos/eos ids, vocab) as JSON text.
  }];
  let arguments = (ins StrArrayAttr:$input_names, StrAttr:$source, StrAttr:$meta);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

def Graph_OutputOp : Op<Graph_Dialect, "output", [Terminator, HasParent<"GraphOp">, Pure]> {
  let summary = "the model outputs, by name";
  let arguments = (ins Variadic<AnyTensor>:$values, StrArrayAttr:$names);
  let assemblyFormat = "$values attr-dict `:` type($values)";
  let hasVerifier = 1;
}

def Graph_NoneOp : Graph_Op<"none"> {
  let summary = "an omitted optional input";
  let results = (outs NoneType:$result);
  let assemblyFormat = "attr-dict";
}

#endif  // STRATA_GRAPH_OPS
