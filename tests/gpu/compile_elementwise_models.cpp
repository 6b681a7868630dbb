// Builds the GPU artifacts of the fused elementwise conformance test: every
// chain of tests/unit/elementwise_chains.h at every width below as one
// graph, formed into region.elementwise nodes and compiled for sm_90 in
// bf16 and in f16 (OUT/elementwise-<dtype>, an artifact like `strata
// compile --target cuda:sm_90` writes; meta "widths" lists the widths):
//   strata_compile_elementwise_models OUT
// strata_cuda_tests runs them on the GPU machine (which has no LLVM).
#include <cstdio>

#include "codegen/targets/cpu/KernelSet.h"
#include "codegen/targets/cuda/KernelSet.h"
#include "graph/Pipeline.h"
#include "ops/error.h"
#include "tests/unit/elementwise_chains.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT\n", argv[0]);
    return 2;
  }
  // A lone tail column, tails only, one-warp blocks with and without a
  // tail, 8-warp blocks of 8 and of 1 column a lane (Llama's hidden,
  // intermediate and vocabulary widths).
  const std::vector<int64_t> widths = {1, 7, 37, 96, 1000, 4096, 14336, 128256};
  try {
    for (const char* dtype : {"bf16", "f16"}) {
      strata::ops::GraphDef g = strata::graph::formRegions(strata::tests::allChains(widths));
      strata::tile::KernelSetSpec set = strata::tile::cudaModelKernelSet(g, dtype, 16);
      strata::tile::writeCudaArtifact(g, set, "sm_90", dtype, 16, std::string(argv[1]) + "/elementwise-" + dtype,
                                      {{"widths", widths}});
    }
  } catch (const strata::Error& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
  return 0;
}
