#include "codegen/targets/cuda/Ptxas.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "ops/error.h"

namespace strata::tile {

namespace {

bool executable(const std::string& path) { return !path.empty() && access(path.c_str(), X_OK) == 0; }

// `s` as one word for /bin/sh.
std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

std::optional<std::string> findPtxas() {
  if (const char* env = std::getenv("STRATA_PTXAS")) {
    std::string v = env;
    if (v.empty() || v == "off") return std::nullopt;
    if (!executable(v)) fail("STRATA_PTXAS={}: not an executable (set it to off to write PTX only)", v);
    return v;
  }
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    for (std::string d; std::getline(dirs, d, ':');)
      if (executable(d + "/ptxas")) return d + "/ptxas";
  }
  if (executable("/usr/local/cuda/bin/ptxas")) return std::string("/usr/local/cuda/bin/ptxas");
  return std::nullopt;
}

void assembleCubin(const std::string& ptxas, const std::string& ptxFile, const std::string& chip,
                   const std::string& cubinFile) {
  const std::string cmd =
      quoted(ptxas) + " -arch=" + quoted(chip) + " " + quoted(ptxFile) + " -o " + quoted(cubinFile) + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) fail("cannot run {}", ptxas);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  if (status != 0)
    fail("{} -arch={} {} failed ({}): {}", ptxas, chip, ptxFile,
         WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status)) : std::string("killed"),
         out.size() > 4000 ? out.substr(0, 4000) + "..." : out);
}

}  // namespace strata::tile
