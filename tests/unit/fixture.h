// The tiny-llama fixture shared by the graph tests: its folder and its
// reference.json (read once).
#pragma once
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace strata::fixture {

inline std::string fixtureDir() { return STRATA_FIXTURE_DIR; }

inline const nlohmann::json& reference() {
  static nlohmann::json j = [] {
    std::ifstream f(fixtureDir() + "/reference.json");
    return nlohmann::json::parse(f);
  }();
  return j;
}

}  // namespace strata::fixture
