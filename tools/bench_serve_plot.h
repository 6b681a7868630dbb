// The PNG of `strata bench serve --plot` (cairo): TTFT and TPOT p50 against
// output tokens/s, one line per series, a labelled point per load level.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata::tools {

// `series`: bench serve JSON documents ({"label", "runs": [...]}).
void writeServePlot(const std::string& path, const std::vector<nlohmann::json>& series);

}  // namespace strata::tools
