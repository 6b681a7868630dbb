// The dispatch table from GraphDef op names to reference kernels.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ops/graph_def.h"

namespace strata::ops {

// Inputs in node order (an omitted optional input is an undefined Tensor).
using KernelFn = std::function<std::vector<ops::Tensor>(const ops::NodeDef&, const std::vector<ops::Tensor>&)>;

// Returns nullptr for an unknown op.
const KernelFn* findKernel(const std::string& op);
std::vector<std::string> kernelNames();
// strata's own high-level ops (RMSNorm, Rope, Attention, Linear, Silu,
// MakeShape): in the table, but never accepted from an ONNX file.
bool isStrataOp(const std::string& op);

}  // namespace strata::ops
