#include "codegen/UArch.h"

#include "ops/error.h"

namespace strata::tile {

const std::vector<UArch>& allUArchs() {
  static const std::vector<UArch> table = [] {
    std::vector<UArch> t;
    for (auto rows : {cpuUArchs(), cudaUArchs(), xeUArchs()}) t.insert(t.end(), rows.begin(), rows.end());
    return t;
  }();
  return table;
}

const UArch& uarchFor(std::string_view target) {
  std::string known;
  for (const UArch& u : allUArchs()) {
    if (u.name == target) return u;
    known += (known.empty() ? "" : ", ") + u.name;
  }
  fail("unknown target '{}' (known: {})", target, known);
}

}  // namespace strata::tile
