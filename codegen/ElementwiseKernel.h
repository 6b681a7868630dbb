// The generated kernel of a fused elementwise / reduction region
// (region.elementwise, graph/FormElementwiseRegions.cpp), emitted as
// workgroup-level tile IR text (no MLIR here).
//
// Row-wise form: the region's values live in a [rows, cols] space
// (ops/row_forms.h), cols static. One program per row walks the row in
// blocks of `blockN` columns plus a one-column tail loop (so any width
// works, and both loops are mask-free). Values that vary along the row are
// recomputed from the operands in every walk that needs them rather than
// stored; a reduction along the row is one walk, after which its per-row
// result is a register value the following walks broadcast. Softmax thus
// takes three walks (max, sum of exponentials, output), a mean one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ops/graph_def.h"
#include "ops/row_forms.h"

namespace strata::tile {

// One primitive step. Value ids number the kernel's operands first, then
// the steps in order. Ops: binary add sub mul div pow max min; unary neg
// abs sqrt recip exp log sigmoid silu tanh erf relu; "const" (`value`, one
// per program); reductions along the row "reduce_sum", "reduce_max".
struct ElementwiseStep {
  std::string op;
  std::vector<int64_t> inputs;
  float value = 0;
};

struct ElementwiseKernelSpec {
  std::string name = "elementwise";
  int64_t cols = 0, blockN = 64;
  // Storage type of every operand and output buffer (f32, bf16, f16); the
  // arithmetic is f32. A block of blockN columns is spread over numWarps
  // warps on a GPU (the CPU runs one).
  std::string dtype = "f32";
  int64_t numWarps = 1;
  std::vector<ops::RowForm> inputs;    // the operand buffers, in order
  std::vector<ElementwiseStep> steps;
  std::vector<int64_t> outputs;        // values stored; each full or col form
};

// Signature: (operand buffers..., output buffers..., rows: index), all of
// the storage type; a full output is [rows, cols], a col output [rows].
// Grid = rows.
std::string emitElementwiseKernel(const ElementwiseKernelSpec& spec);
// Equal for specs that emit the same kernel (the name aside).
std::string elementwiseKernelKey(const ElementwiseKernelSpec& spec);

// A region.elementwise operand as the planner sees it: its (possibly
// symbolic) shape, whether it is a float tensor, and the values of an
// integer constant (reduction axes).
struct ElementwiseOperand {
  std::vector<ops::Dim> shape;
  bool isFloat = true;
  std::optional<std::vector<int64_t>> ints;
};

struct ElementwiseRegionPlan {
  ElementwiseKernelSpec spec;
  std::vector<int64_t> operands;  // the region input feeding each kernel operand
  std::vector<bool> full;         // per output: full (else one value per row)
  std::vector<bool> keepLast;     // per output: per-row outputs keep a last dim of 1
};

// Translates the region's body (ONNX steps: Add Sub Mul Div Pow Max Min Neg
// Abs Sqrt Reciprocal Exp Log Sigmoid Silu Tanh Erf Relu, Cast to f32,
// Softmax and ReduceSum/Mean/Max/Min along the last axis) into primitive
// steps. Throws naming the node and the step for anything the row-wise form
// does not cover (Where, reductions along other axes, an operand broadcast
// along only some leading dims, a symbolic width, an output that does not
// vary along the rows).
ElementwiseRegionPlan planElementwiseRegion(const ops::NodeDef& n, const std::vector<ElementwiseOperand>& operands,
                                            int64_t blockN);

// The same for a node of graph `g`, its operands read from g (inputs,
// weights, constants, typed intermediates); errors name g's source too.
ElementwiseRegionPlan planElementwiseRegion(const ops::GraphDef& g, const ops::NodeDef& n, int64_t blockN);

// The node's launch contract for the runtime (both backends read it:
// ops/row_forms.h ElementwiseLaunch): {"cols", "operands": [{"input",
// "form"}], "outputs": [{"full", "keep_last"}]}.
nlohmann::json elementwiseLaunchContract(const ElementwiseRegionPlan& plan);

}  // namespace strata::tile
