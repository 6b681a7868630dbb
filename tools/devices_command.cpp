#include "tools/devices_command.h"

#include <cstdio>
#include <fstream>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "codegen/UArch.h"
#include "codegen/targets/cpu/Backend.h"
#include "ops/error.h"
#include "runtime/devices/registry.h"

namespace strata::tools {

std::string cpuModel() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

int devicesCommand(bool json) {
  nlohmann::json out;
  const std::string target = tile::hostCpuTarget();
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  out["cpu"] = {{"model", cpuModel()}, {"target", target}, {"threads", threads},
                {"kernels", tile::uarchFor(target).description}};
  // A GPU kind: its devices and the kernel target they run (the first of
  // `targets` the device takes, else null with why), or why it has none.
  // Opening the device is the check (the registry's message says what is
  // missing).
  auto gpu = [&](const char* kind, const std::string& openTarget, const std::vector<std::string>& targets) {
    try {
      auto d = runtime::openGpuDevice(openTarget);
      nlohmann::json runs = nullptr;
      std::string why;
      for (const std::string& t : targets)
        if (std::string w = d->cannotRun(t); w.empty()) {
          runs = t;
          break;
        } else if (why.empty()) {
          why = w;
        }
      out[kind] = {{"device", d->description()},
                   {"compute_units", d->computeUnits()},
                   {"memory_bytes", d->capacity()},
                   {"runs", runs},
                   {"note", runs.is_null() ? why : ""}};
    } catch (const Error& e) {
      out[kind] = {{"none", e.what()}};
    }
  };
  gpu("cuda", "cuda:sm_90", {"sm_90"});
  gpu("xe", "xe", {"xe:pvc", "xe:bmg"});
  if (json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("cpu:  %s, %u threads; kernels for %s (%s)\n", cpuModel().c_str(), threads, target.c_str(),
              out["cpu"]["kernels"].get<std::string>().c_str());
  for (const char* kind : {"cuda", "xe"}) {
    const nlohmann::json& k = out[kind];
    if (k.contains("none")) {
      std::printf("%-5s %s\n", (std::string(kind) + ":").c_str(), k["none"].get<std::string>().c_str());
      continue;
    }
    std::printf("%-5s %s, %d compute units, %.1f GiB%s\n", (std::string(kind) + ":").c_str(),
                k["device"].get<std::string>().c_str(), k["compute_units"].get<int>(),
                k["memory_bytes"].get<uint64_t>() / double(1ull << 30),
                k["runs"].is_null() ? fmt::format(" ({})", k["note"].get<std::string>()).c_str()
                                    : fmt::format("; runs {} kernels", k["runs"].get<std::string>()).c_str());
  }
  return 0;
}

}  // namespace strata::tools
