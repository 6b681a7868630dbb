// What every artifact and kernel set writer shares (DESIGN.md step 7): the
// artifact format version and the output folder rules. The writers are the
// targets' (codegen/targets/<target>/KernelSet.h). No MLIR in this header.
#pragma once
#include <filesystem>
#include <string>

namespace strata::tile {

inline constexpr int kArtifactFormat = 1;

// Writes `text` to `p` through a temporary file renamed into place, so a
// half-written file never has the final name; throws naming the file.
void writeText(const std::filesystem::path& p, const std::string& text);

// Creates `dir`, or reuses it when empty or holding a previous output:
// `marker`, or any other file the outputs write there (an artifact whose
// compile failed halfway has kernel files but no plan.json yet, and may be
// written again). Throws naming the path otherwise.
std::filesystem::path outputDir(const std::string& dir, const char* marker);

}  // namespace strata::tile
