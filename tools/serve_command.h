// `strata serve`: the OpenAI-compatible server (runtime/server/) over a
// model loaded as `strata run` loads it.
#pragma once
#include <string>

namespace CLI {
class App;
}

namespace strata::tools {

struct ServeOpts {
  std::string model, backend = "cpu", host = "127.0.0.1", servedName, apiKey, chatTemplate, weightsDir;
  int port = 8000, threads = 2;
  int64_t maxSeqs = 64, maxStepTokens = 512, blockSize = 16, maxQueue = 1024, maxPromptTokens = 0, maxTokens = 0,
          maxBodyBytes = 8 << 20, maxN = 16;
  double cacheMiB = 0;
  bool blockSizeGiven = false, backendGiven = false, noPrefixCache = false;
};

void addServeOptions(CLI::App* cmd, ServeOpts& o);
int serveCommand(const ServeOpts& o);

}  // namespace strata::tools
