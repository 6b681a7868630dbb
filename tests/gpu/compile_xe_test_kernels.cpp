// Compiles the Xe tests' kernels (tests/unit/xe_test_kernels.h) for
// xe:pvc at build time, so that strata_xe_tests runs them on Intel's CPU
// OpenCL runtime without strata's MLIR in its process (that header says
// why):
//   strata_compile_xe_test_kernels OUT_DIR
// writes OUT_DIR/<module>.spv for each module and OUT_DIR/manifest.txt, a
// line "<module> <kernel> <work-group size>" each. Exits non-zero with the
// compiler's diagnostics on error.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "codegen/ElementwiseKernel.h"
#include "codegen/targets/xe/Backend.h"
#include "graph/Pipeline.h"
#include "ops/error.h"
#include "tests/unit/elementwise_chains.h"
#include "tests/unit/xe_test_kernels.h"

using namespace strata;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::ofstream manifest(dir + "/manifest.txt");
  auto emit = [&](const std::string& module, const std::string& tileIr, const std::string& blockIo) {
    tile::XeModule m = tile::compileXe(tileIr, "xe:pvc", blockIo);
    std::ofstream(dir + "/" + module + ".spv", std::ios::binary).write(m.spirv.data(), std::streamsize(m.spirv.size()));
    for (const tile::XeKernelInfo& k : m.kernels) manifest << module << ' ' << k.name << ' ' << k.workGroupSize << '\n';
  };
  try {
    using namespace xetest;
    for (const GemmCase& c : gemmCases()) emit(gemmModule(c, "auto"), tile::emitGemmKernel(gemmSpec(c)), "auto");
    for (const GemmCase& c : gemmBlockCases()) emit(gemmModule(c, "always"), tile::emitGemmKernel(gemmSpec(c)), "always");
    for (const GemmCase& c : gemmOclocCases())
      for (const char* mode : {"never", "auto"}) emit(gemmModule(c, mode), tile::emitGemmKernel(gemmSpec(c)), mode);
    for (ops::DType dt : rmsNormTypes()) emit(rmsNormModule(dt), tile::emitRmsNormKernel(rmsNormSpec(dt)), "auto");
    emit(rmsNormModule(ops::DType::BF16, "never"), tile::emitRmsNormKernel(rmsNormSpec(ops::DType::BF16)), "never");
    for (ops::DType dt : ropeTypes())
      for (int64_t d : ropeHeadDims()) emit(ropeModule(dt, d), tile::emitRopeKernel(ropeSpec(dt, d)), "auto");
    for (ops::DType dt : elementwiseTypes()) {
      const ops::GraphDef g = graph::formRegions(tests::allChains(elementwiseWidths()));
      std::string ir;
      nlohmann::json launches = nlohmann::json::array();
      for (const ops::NodeDef& n : g.nodes) {
        if (n.op != "region.elementwise") fail("{}: node '{}' is {}, not a fused elementwise region", g.source, n.name, n.op);
        tile::ElementwiseRegionPlan p = tile::planElementwiseRegion(g, n, kElementwiseBlockN);
        p.spec.dtype = ops::dtypeName(dt);
        p.spec.name = fmt::format("elementwise_{}", launches.size());
        ir += tile::emitElementwiseKernel(p.spec);
        nlohmann::json k = tile::elementwiseLaunchContract(p);
        k["name"] = p.spec.name, k["node_inputs"] = n.inputs, k["node_outputs"] = n.outputs;
        for (const ops::Constant& c : g.constants)
          if (std::ranges::find(n.inputs, c.name) != n.inputs.end()) k["constants"][c.name] = ops::tensorToJson(c.value);
        launches.push_back(k);
      }
      emit(elementwiseModule(dt), ir, "auto");
      std::ofstream(dir + "/" + elementwiseModule(dt) + ".json") << launches.dump(1);
    }
    for (ops::DType dt : rowTypes()) emit(argmaxModule(dt), tile::emitArgmaxKernel(argmaxSpec(dt)), "auto");
    for (ops::DType dt : rowTypes()) emit(topKModule(dt), tile::emitTopKKernel(topKSpec(dt)), "auto");
    for (const AttentionCase& c : attentionCases())
      emit(attentionModule(c), tile::emitAttentionKernel(attentionSpec(c)), "auto");
    for (const AttentionCase& c : attentionOclocCases())
      emit(attentionModule(c, "never"), tile::emitAttentionKernel(attentionSpec(c)), "never");
    for (ops::DType dt : rowTypes()) {
      emit(gatherRowsModule(dt), tile::emitGatherRowsKernel(gatherRowsSpec(dt)), "auto");
      emit(kvWriteModule(dt), tile::emitKvWriteKernel(kvWriteSpec(dt)), "auto");
      for (int64_t d : ropeKvWriteHeadDims())
        emit(ropeKvWriteModule(dt, d), tile::emitRopeKvWriteKernel(ropeKvWriteSpec(dt, d)), "auto");
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
  if (!manifest.flush()) {
    std::fprintf(stderr, "%s: cannot write %s/manifest.txt\n", argv[0], dir.c_str());
    return 1;
  }
  return 0;
}
