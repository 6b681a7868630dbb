#include "tools/serve_command.h"

#include "tools/load_model.h"

namespace strata::tools {

int serveCommand(const ServeOpts& o) {
  checkServeOpts(o);
  RunOpts ro;
  ro.model = o.model;
  ro.backend = o.backend;
  ro.blockSize = o.blockSize;
  ro.blockSizeGiven = o.blockSizeGiven;
  ro.backendGiven = o.backendGiven;
  ro.weightsDir = o.weightsDir;
  LoadedModel l = loadForRun(ro);
  if (!l.tok) fail("strata serve needs the model's tokenizer.json (beside {})", o.model);
  return serveLoaded(o, *l.exec, l.blockSize, *l.tok, l.tokenizerPath);
}

}  // namespace strata::tools
