// Compiles tile IR test kernels (tests/gpu/*.mlir) for sm_90 into one PTX
// file that strata_cuda_tests loads on the GPU machine (which has no LLVM):
//   strata_compile_test_kernels OUT.ptx IN.mlir...
// Each input is one module of workgroup-level tile IR; kernels keep their
// function names. Exits non-zero with the compiler's diagnostics on error.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "codegen/targets/cuda/Backend.h"
#include "ops/error.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT.ptx IN.mlir...\n", argv[0]);
    return 2;
  }
  std::string ir;
  for (int i = 2; i < argc; ++i) {
    std::ifstream in(argv[i]);
    if (!in) {
      std::fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[i]);
      return 1;
    }
    std::stringstream s;
    s << in.rdbuf();
    ir += s.str() + "\n";
  }
  try {
    strata::tile::CudaModule m = strata::tile::compileCuda(ir, "sm_90");
    std::ofstream(argv[1]) << m.ptx;
  } catch (const strata::Error& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
  return 0;
}
