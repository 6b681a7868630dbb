// CK(call): the CUDA runtime call, and on an error its file, line, text
// and message on stderr, then exit(1). Shared by the stand-in harnesses in
// this folder (bench_merge_floor.cu, bench_mma_gemv.cu), which nvcc builds
// one file at a time.
#pragma once
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)
