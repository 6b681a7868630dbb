#include "codegen/SplitText.h"

#include <fmt/format.h>

namespace strata::tile {

std::string splitShare(const std::string& p, const std::string& blocks, const std::string& splits,
                       const std::string& split, const std::string& unit, const std::string& end) {
  return fmt::format(R"(  %{p}perSplit0 = arith.addi {blocks}, {splits} : index
  %{p}perSplit1 = arith.subi %{p}perSplit0, %c1 : index
  %{p}perSplit = arith.divui %{p}perSplit1, {splits} : index
  %{p}chunk = arith.muli %{p}perSplit, {unit} : index
  %{p}lo0 = arith.muli {split}, %{p}chunk : index
  %{p}lo = arith.minsi %{p}lo0, {end} : index
  %{p}hi0 = arith.addi %{p}lo, %{p}chunk : index
  %{p}hi = arith.minsi %{p}hi0, {end} : index
)",
                     fmt::arg("p", p), fmt::arg("blocks", blocks), fmt::arg("splits", splits),
                     fmt::arg("split", split), fmt::arg("unit", unit), fmt::arg("end", end));
}

}  // namespace strata::tile
