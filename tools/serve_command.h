// `strata serve`: the OpenAI-compatible server (runtime/server/) over a
// model loaded as `strata run` loads it (serve_command.cpp, with the
// compiler), or over an artifact by the runtime alone (`strata-gpu serve`:
// serveArtifact). serve_model.cpp is the runtime-only part both share.
#pragma once
#include <string>

namespace CLI {
class App;
}

namespace strata::runtime {
class GraphRunner;
}
namespace strata::models {
class Tokenizer;
}

namespace strata::tools {

struct ServeOpts {
  std::string model, backend = "cpu", host = "127.0.0.1", servedName, apiKey, chatTemplate, weightsDir;
  int port = 8000, threads = 2;
  int64_t maxSeqs = 64, maxStepTokens = 512, blockSize = 16, maxQueue = 1024, maxPromptTokens = 0, maxTokens = 0,
          maxBodyBytes = 8 << 20, maxN = 16;
  double cacheMiB = 0;
  bool blockSizeGiven = false, backendGiven = false, cacheMiBGiven = false, noPrefixCache = false, noWarmup = false;
};

void addServeOptions(CLI::App* cmd, ServeOpts& o);
// Checks the numeric flags against their ranges (before anything loads).
void checkServeOpts(const ServeOpts& o);
// Serves `exec` (KV blocks of blockSize) with `tok`, read from `tokenizerPath` (the chat template goes with it).
int serveLoaded(const ServeOpts& o, const runtime::GraphRunner& exec, int64_t blockSize, const models::Tokenizer& tok,
                const std::string& tokenizerPath);
// `strata serve MODEL`: compiles or loads o.model for o.backend, then serves it.
int serveCommand(const ServeOpts& o);
// `strata-gpu serve ARTIFACT`: the runtime alone (no compiler).
int serveArtifact(const ServeOpts& o);

}  // namespace strata::tools
