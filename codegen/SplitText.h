// Tile IR text shared by kernels that split a loop across programs (the
// paged decode form's key splits, a GEMM's K split); no MLIR here.
#pragma once

#include <string>

namespace strata::tile {

// Lines defining %{p}lo and %{p}hi, the share of split `split` (of
// `splits`) of the range [0, end) in whole units of `unit`, where `blocks`
// = ceil(end / unit): ceil(blocks / splits) units a split, in split order;
// the last shares are shorter or empty (lo = hi = end). Also defines
// %{p}perSplit (units a split) and %{p}chunk (elements a split). Operands
// are index SSA names; %c1 must be defined.
std::string splitShare(const std::string& p, const std::string& blocks, const std::string& splits,
                       const std::string& split, const std::string& unit, const std::string& end);

}  // namespace strata::tile
