// `strata run`: one prompt (streamed) or a batch file (continuous batching)
// through the scheduler, on generated CPU kernels, the reference ops or a
// compiled artifact (CPU or GPU).
#pragma once
#include "tools/run_loop.h"

namespace strata::tools {

int runCommand(const RunOpts& o);

}  // namespace strata::tools
