// The GPU decode form's combine kernel (codegen/AttentionKernel.h).
#include "codegen/AttentionKernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <vector>

#include "codegen/SplitText.h"
#include "codegen/StorageText.h"
#include "ops/error.h"
#include "codegen/AttentionText.h"

namespace strata::tile {

using namespace attention;

namespace {

// The GPU decode form's combine: the split count is an argument, so the
// pass over the splits is a loop of single values (every lane holds them)
// and [1, D] rows, merged online like the attention loop: per step of U
// splits, M' = max(M, m_s...), acc' = 2^(M - M') acc + sum_s 2^(m_s - M')
// acc_s, l' likewise. Split 0 always saw a key (its range starts at key 0
// of a context >= 1), so M is finite from the first step on and splits
// that saw none (m_s = -inf) weigh 0. A step's loads come first and are
// independent: the warp waits for the partials (just written, in L2) once
// per step. One pass of kCombineSplitsPerStep splits a step, ceil(splits /
// U) steps: the last step's indices past the last split read the last
// split again (clamped) with weight 0, and a repeated split cannot change
// the max. At batch 1's 33 splits, 3 waits instead of the 10 of a max pass
// and a sum pass of 8 (H100, 2026-11-23: the combine took 10 us of a
// 16k-token step under Nsight Compute); a remainder loop one split at a
// time before it cost 15 waits at 31 splits (10.8 us against 7.0 at 32).
// O = acc x (1 / L): one IEEE division a row, as in the attention
// epilogues, not one per element. A lane holds 4 contiguous columns of a
// row (tile.lane_vector 4: one 16-byte load a split row), and the weighted
// sums contract to fused multiply-adds.

std::string gpuCombineKernel(const AttentionKernelSpec& s) {
  const StorageText st{s.dtype};
  const int64_t D = s.headDim;
  const std::string row = fmt::format("1x{}", D);
  // Lines loading split `idx`'s m, l and acc row (suffix u). `idx` is
  // clamped to the last split, so no load needs a bounds check (checked,
  // each [1, 1] load was a branch and some 35 instructions: about 0.2 us a
  // combine on the H100).
  auto loads = [&](const std::string& idx, const std::string& u) {
    return fmt::format(R"(    %msp{u} = tile.make_block_ptr %pm, [%TH, %splits], [%splits, %c1], [%th, {i}] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x1xf32>>
    %ms{u} = tile.load %msp{u} {{in_bounds}} : !tile.block_ptr<tensor<1x1xf32>>
    %lsp{u} = tile.make_block_ptr %pl, [%TH, %splits], [%splits, %c1], [%th, {i}] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x1xf32>>
    %ls{u} = tile.load %lsp{u} {{in_bounds}} : !tile.block_ptr<tensor<1x1xf32>>
    %arow{u} = arith.addi %rowS, {i} : index
    %asp{u} = tile.make_block_ptr %po, [%THS, %cD], [%cD, %c1], [%arow{u}, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x{D}xf32>>
    %as{u} = tile.load %asp{u} {{in_bounds, contiguous = 1 : i64, run = 4 : i64}} : !tile.block_ptr<tensor<1x{D}xf32>>
)",
                       fmt::arg("u", u), fmt::arg("i", idx), fmt::arg("D", D));
  };
  // The merge of splits [from, to) in steps of `U` into the carried (m,
  // acc, l) from `init` (three values), results `res`.
  auto mergeLoop = [&](const std::string& res, const std::string& from, const std::string& to, int64_t U,
                       const std::string& init) {
    std::string body, mx = "%m";
    for (int64_t u = 0; u < U; ++u) {
      // Split s + u, clamped to the last; %okt{u} weighs it 1 or 0.
      body += fmt::format(R"(    %su{u} = arith.addi %s, %c{u} : index
    %sc{u} = arith.minui %su{u}, %lastSplit : index
    %ok{u} = arith.cmpi ult, %su{u}, %splits : index
    %okf{u} = arith.select %ok{u}, %f1, %f0 : f32
    %okt{u} = tile.splat %okf{u} : f32 -> tensor<1x1xf32>
)",
                          fmt::arg("u", u)) +
              loads("%sc" + std::to_string(u), std::to_string(u));
    }
    for (int64_t u = 0; u < U; ++u) {
      body += fmt::format("    %mn{0} = arith.maximumf {1}, %ms{0} : tensor<1x1xf32>\n", u, mx);
      mx = "%mn" + std::to_string(u);
    }
    body += fmt::format(R"(    %dm = arith.subf %m, {mx} : tensor<1x1xf32>
    %alpha = math.exp2 %dm : tensor<1x1xf32>
    %la = arith.mulf %l, %alpha fastmath<contract> : tensor<1x1xf32>
    %alphab = tile.broadcast %alpha : tensor<1x1xf32> -> tensor<1x{D}xf32>
    %aa = arith.mulf %acc, %alphab fastmath<contract> : tensor<1x{D}xf32>
)",
                        fmt::arg("mx", mx), fmt::arg("D", D));
    std::string acc = "%aa", l = "%la";
    for (int64_t u = 0; u < U; ++u) {
      body += fmt::format(R"(    %dms{u} = arith.subf %ms{u}, {mx} : tensor<1x1xf32>
    %wsx{u} = math.exp2 %dms{u} : tensor<1x1xf32>
    %ws{u} = arith.mulf %wsx{u}, %okt{u} : tensor<1x1xf32>
    %wl{u} = arith.mulf %ws{u}, %ls{u} fastmath<contract> : tensor<1x1xf32>
    %ln{u} = arith.addf {l}, %wl{u} fastmath<contract> : tensor<1x1xf32>
    %wsb{u} = tile.broadcast %ws{u} : tensor<1x1xf32> -> tensor<1x{D}xf32>
    %wa{u} = arith.mulf %wsb{u}, %as{u} fastmath<contract> : tensor<1x{D}xf32>
    %accn{u} = arith.addf {acc}, %wa{u} fastmath<contract> : tensor<1x{D}xf32>
)",
                          fmt::arg("u", u), fmt::arg("D", D), fmt::arg("mx", mx), fmt::arg("l", l), fmt::arg("acc", acc));
      acc = "%accn" + std::to_string(u), l = "%ln" + std::to_string(u);
    }
    return fmt::format("  {res}:3 = scf.for %s = {from} to {to} step %c{U} iter_args({init}) -> "
                       "(tensor<1x1xf32>, tensor<1x{D}xf32>, tensor<1x1xf32>) {{\n{body}    scf.yield {mx}, {acc}, {l} : "
                       "tensor<1x1xf32>, tensor<1x{D}xf32>, tensor<1x1xf32>\n  }}\n",
                       fmt::arg("res", res), fmt::arg("from", from), fmt::arg("to", to), fmt::arg("U", U),
                       fmt::arg("init", init), fmt::arg("D", D), fmt::arg("body", body), fmt::arg("mx", mx),
                       fmt::arg("acc", acc), fmt::arg("l", l));
  };
  std::string consts;  // %c2 .. %c<kCombineSplitsPerStep> (%c0 and %c1 come first)
  for (int64_t u = 2; u <= kCombineSplitsPerStep; ++u) consts += fmt::format("  %c{0} = arith.constant {0} : index\n", u);
  return fmt::format(R"(func.func @{name}_combine(%po: !tile.ptr<f32>, %pm: !tile.ptr<f32>, %pl: !tile.ptr<f32>, %o: {P}, %T: index, %splits: index) attributes {{tile.num_warps = 1 : i64, tile.lane_vector = 4 : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
{consts}  %cD = arith.constant {D} : index
  %cH = arith.constant {H} : index
  %cF = arith.constant {F} : index
  %t = tile.program_id 0
  %h = tile.program_id 1
  %th0 = arith.muli %t, %cH : index
  %th = arith.addi %th0, %h : index
  %TH = arith.muli %T, %cH : index
  %THS = arith.muli %TH, %splits : index
  %rowS = arith.muli %th, %splits : index
  %lastSplit = arith.subi %splits, %c1 : index
  %stepsUp = arith.addi %splits, %c{Um1} : index
  %steps = arith.divui %stepsUp, %c{U} : index
  %end = arith.muli %steps, %c{U} : index
  %f0 = arith.constant 0.0 : f32
  %f1 = arith.constant 1.0 : f32
  %ninf = arith.constant dense<0xFF800000> : tensor<1x1xf32>
  %z = arith.constant dense<0.0> : tensor<1x{D}xf32>
  %z1 = arith.constant dense<0.0> : tensor<1x1xf32>
{merge}  %lone = arith.constant dense<1.0> : tensor<1x1xf32>
  %linv = arith.divf %lone, %r#2 : tensor<1x1xf32>
  %lb = tile.broadcast %linv : tensor<1x1xf32> -> tensor<1x{D}xf32>
  %out = arith.mulf %r#1, %lb : tensor<1x{D}xf32>
  %col = arith.muli %h, %cD : index
  %colEnd = arith.addi %col, %cD : index
  %op = tile.make_block_ptr %o, [%T, %colEnd], [%cF, %c1], [%t, %col] : {P} -> {BP}
{store}  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("D", D), fmt::arg("H", s.heads), fmt::arg("F", s.heads * D),
                     fmt::arg("U", kCombineSplitsPerStep), fmt::arg("consts", consts), fmt::arg("Um1", kCombineSplitsPerStep - 1),
                     fmt::arg("merge", mergeLoop("%r", "%c0", "%end", kCombineSplitsPerStep, "%m = %ninf, %acc = %z, %l = %z1")),
                     fmt::arg("P", st.ptr()), fmt::arg("BP", st.blockPtr(row)), fmt::arg("store", st.store("%op", "%out", row)));
}

}  // namespace

std::string emitAttentionCombineKernel(const AttentionKernelSpec& s) {
  const StorageText st{s.dtype};
  st.check("attention combine");
  if (gpuDecode(s) && s.heads > 0 && s.headDim > 0) return gpuCombineKernel(s);
  if (s.kvSplits < 2 || s.heads <= 0 || s.headDim <= 0) fail("attention combine kernel: needs >= 2 KV splits");
  const int64_t S = s.kvSplits, D = s.headDim;
  const std::string row = fmt::format("1x{}", D);
  return fmt::format(R"(func.func @{name}_combine(%po: !tile.ptr<f32>, %pm: !tile.ptr<f32>, %pl: !tile.ptr<f32>, %o: {P}, %T: index) attributes {{tile.num_warps = 1 : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cS = arith.constant {S} : index
  %cD = arith.constant {D} : index
  %cH = arith.constant {H} : index
  %cF = arith.constant {F} : index
  %t = tile.program_id 0
  %h = tile.program_id 1
  %th0 = arith.muli %t, %cH : index
  %th = arith.addi %th0, %h : index
  %TH = arith.muli %T, %cH : index
  %THS = arith.muli %TH, %cS : index
  %rowS = arith.muli %th, %cS : index
  %pmp = tile.make_block_ptr %pm, [%TH, %cS], [%cS, %c1], [%th, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x{S}xf32>>
  %plp = tile.make_block_ptr %pl, [%TH, %cS], [%cS, %c1], [%th, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<1x{S}xf32>>
  %pop = tile.make_block_ptr %po, [%THS, %cD], [%cD, %c1], [%rowS, %c0] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{S}x{D}xf32>>
  %m = tile.load %pmp : !tile.block_ptr<tensor<1x{S}xf32>>
  %l = tile.load %plp : !tile.block_ptr<tensor<1x{S}xf32>>
  %acc = tile.load %pop : !tile.block_ptr<tensor<{S}x{D}xf32>>
  %mx = tile.reduce %m {{kind = "max", axis = 1 : i64}} : tensor<1x{S}xf32> -> tensor<1xf32>
  %mxe = tile.expand_dims %mx {{axis = 1 : i64}} : tensor<1xf32> -> tensor<1x1xf32>
  %mxb = tile.broadcast %mxe : tensor<1x1xf32> -> tensor<1x{S}xf32>
  %d = arith.subf %m, %mxb : tensor<1x{S}xf32>
  %w = math.exp2 %d : tensor<1x{S}xf32>
  %wl = arith.mulf %w, %l : tensor<1x{S}xf32>
  %lsum = tile.reduce %wl {{kind = "sum", axis = 1 : i64}} : tensor<1x{S}xf32> -> tensor<1xf32>
  %z = arith.constant dense<0.0> : tensor<1x{D}xf32>
  %out0 = tile.dot %w, %acc, %z : tensor<1x{S}xf32> * tensor<{S}x{D}xf32> -> tensor<1x{D}xf32>
  %le = tile.expand_dims %lsum {{axis = 1 : i64}} : tensor<1xf32> -> tensor<1x1xf32>
  %lb = tile.broadcast %le : tensor<1x1xf32> -> tensor<1x{D}xf32>
  %out = arith.divf %out0, %lb : tensor<1x{D}xf32>
  %col = arith.muli %h, %cD : index
  %colEnd = arith.addi %col, %cD : index
  %op = tile.make_block_ptr %o, [%T, %colEnd], [%cF, %c1], [%t, %col] : {P} -> {BP}
{store}  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("S", S), fmt::arg("D", D), fmt::arg("H", s.heads),
                     fmt::arg("F", s.heads * D), fmt::arg("P", st.ptr()), fmt::arg("BP", st.blockPtr(row)),
                     fmt::arg("store", st.store("%op", "%out", row)));
}

}  // namespace strata::tile
