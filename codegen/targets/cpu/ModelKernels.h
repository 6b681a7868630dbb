// Turns a region graph (graph::formRegions output) into a kernel plan for the
// host CPU: every region node gets a "kernel" attribute naming the generated
// kernel(s) it launches and their blocking, and one tile IR module holds those
// kernels (identical kernels are emitted once). No MLIR in this header.
//
// The "kernel" attribute is the contract with the runtime's launchers
// (runtime/region_kernels.h reads it; that header lists its keys):
//   {"name", "block_m", "block_n"}  the kernel and its blocking (attention
//        and kv_write: block_n is the KV cache block size they were built for)
//   "decode": {...}                 the variant used when a launch has one
//        query per sequence (attention) or at most "max_rows" rows (gemm)
//   "gather": {...}                 gemm with rows: the row gather that picks
//        lm_head's rows first
//   "packed_b": width               gemm: the kernel reads its weights
//        panel-packed (abi::packPanels) with panels this wide
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/graph_def.h"

namespace strata::tile {

struct CpuPlanOptions {
  std::string target;      // "" = the host's (hostCpuTarget())
  int64_t blockSize = 16;  // KV cache block size the attention kernels are built for
};

struct KernelPlan {
  ops::GraphDef graph;               // the input graph, region nodes annotated
  std::string tileIr;                // one module with every kernel the graph launches
  std::vector<std::string> kernels;  // their names
};

// Throws strata::Error naming the node when a region cannot be compiled for
// the CPU (non-f32 weights or activations, a shape the kernels do not take,
// an op outside any region).
KernelPlan planCpuKernels(ops::GraphDef graph, const CpuPlanOptions& options);

}  // namespace strata::tile
