#include "codegen/QuantizeKernel.h"

#include <fmt/format.h>

#include "codegen/NormRopeKernels.h"
#include "codegen/StorageText.h"
#include "ops/error.h"

namespace strata::tile {

std::string emitQuantizeRowsKernel(const QuantizeRowsKernelSpec& s) {
  StorageText st{s.dtype};
  st.check("quantize_rows");
  if ((s.block != 16 && s.block != 32) || s.numWarps < 1)
    fail("quantize_rows '{}': blocks of 16 or 32 values and at least one warp, got {} and {}", s.name, s.block,
         s.numWarps);
  const int64_t R = s.blocksPerProgram(), Q = s.block;
  const std::string X = fmt::format("{}x{}", R, Q), F = fmt::format("tensor<{}xf32>", X),
                    C = fmt::format("tensor<{}x1xf32>", R);
  // One path: the blocks' loads, scales, integers and stores; `attrs` are
  // the stores' promises (the fast path's: whole blocks in bounds, aligned
  // runs of Q), `loads` the loads' (on the edge path too, runs of Q that
  // lie wholly inside or outside the views, which end with a block).
  const std::string runs = fmt::format("contiguous = 1 : i64, run = {} : i64", Q);
  auto path = [&](const char* p, const std::string& attrs, const std::string& loads) {
    std::string t = st.load(fmt::format("{}x", p), "%px", X, loads);
    // With the norm: x / rms(row) * w in f32 (%ibl from the prologue), in
    // ops::rmsNorm's order.
    std::string v = fmt::format("%{}x", p);
    if (s.norm) {
      t += st.load(fmt::format("{}w", p), "%pw", X, loads);
      t += fmt::format("    %{p}xi = arith.mulf %{p}x, %ibl : {F}\n    %{p}n = arith.mulf %{p}xi, %{p}w : {F}\n",
                       fmt::arg("p", p), fmt::arg("F", F));
      v = fmt::format("%{}n", p);
    }
    t += fmt::format(R"(    %{p}ab = math.absf {v} : {F}
    %{p}mx = tile.reduce %{p}ab {{kind = "max", axis = 1 : i64}} : {F} -> tensor<{R}xf32>
    %{p}m = tile.expand_dims %{p}mx {{axis = 1 : i64}} : tensor<{R}xf32> -> {C}
    %{p}d = arith.divf %{p}m, %c127 : {C}
    %{p}mt = arith.maximumf %{p}m, %tiny : {C}
    %{p}iv = arith.divf %c127, %{p}mt : {C}
    %{p}ivb = tile.broadcast %{p}iv : {C} -> {F}
    %{p}xs = arith.mulf {v}, %{p}ivb : {F}
    %{p}r = math.roundeven %{p}xs : {F}
    %{p}q = tile.convert %{p}r : {F} -> tensor<{X}xi8>
    %{p}sm = tile.reduce %{p}r {{kind = "sum", axis = 1 : i64}} : {F} -> tensor<{R}xf32>
    %{p}se = tile.expand_dims %{p}sm {{axis = 1 : i64}} : tensor<{R}xf32> -> {C}
    %{p}s = arith.mulf %{p}se, %{p}d : {C}
    tile.store %pq, %{p}q{attrs} : !tile.block_ptr<tensor<{X}xi8>>
    tile.store %pd, %{p}d{ib} : !tile.block_ptr<{C}>
    tile.store %ps, %{p}s{ib} : !tile.block_ptr<{C}>
)",
                     fmt::arg("p", p), fmt::arg("v", v), fmt::arg("F", F), fmt::arg("R", R), fmt::arg("C", C), fmt::arg("X", X),
                     fmt::arg("attrs", attrs), fmt::arg("ib", attrs.empty() ? "" : " {in_bounds}"));
    return t;
  };
  // The norm's prologue: the row's sum of squares, R blocks a step from
  // the row's first (masked runs: the view ends with the row), summed as
  // one [1, R Q] row (tile.reshape: each warp's part one run on both
  // sides, no data moves), then %ibl = 1 / rms over a program's blocks,
  // and the weight's view ([K / Q, Q], the program's blocks from b0).
  std::string prologue;
  if (s.norm) {
    prologue = fmt::format(R"(  %pr = tile.make_block_ptr %x, [%rowEnd, %cq], [%cq, %c1], [%rowStart, %c0] : {P} -> {BP}
  %zsq = arith.constant dense<0.0> : {F}
  %sq:2 = scf.for %c = %rowStart to %rowEnd step %cr iter_args(%acc = %zsq, %p = %pr) -> ({F}, {BP}) {{
{loadV}    %v2 = arith.mulf %v, %v : {F}
    %a = arith.addf %acc, %v2 : {F}
    %pn = tile.advance %p, [%cr, %c0] : {BP}
    scf.yield %a, %pn : {F}, {BP}
  }}
  %sqf = tile.reshape %sq#0 : {F} -> {L}
  %ss = tile.reduce %sqf {{kind = "sum", axis = 1 : i64}} : {L} -> tensor<1xf32>
  %ki = arith.index_cast %K : index to i64
  %kf = arith.sitofp %ki : i64 to f32
  %kt = tile.splat %kf : f32 -> tensor<1xf32>
  %mean = arith.divf %ss, %kt : tensor<1xf32>
{invStd}  %ibl = tile.reshape %ib : {L} -> {F}
  %pw = tile.make_block_ptr %w, [%kbt, %cq], [%cq, %c1], [%b0, %c0] : {P} -> {BP}
)",
                           fmt::arg("P", st.ptr()), fmt::arg("BP", st.blockPtr(X)), fmt::arg("F", F), fmt::arg("R", R),
                           fmt::arg("loadV", st.load("v", "%p", X, fmt::format(" {{{}}}", runs))),
                           fmt::arg("L", fmt::format("tensor<1x{}xf32>", R * Q)),
                           fmt::arg("invStd", invStdText("mean", fmt::format("1x{}", R * Q))));
  }
  // Block row b of row m is row m kbt + b of the [M K / Q, Q] view; the
  // view of row m ends with its last block, so a program past it reads
  // zeros and stores nothing.
  return fmt::format(R"(func.func @{name}(%x: {P}, {w}%q: !tile.ptr<i8>, %qs: !tile.ptr<f32>, %qsum: !tile.ptr<f32>, %M: index, %K: index{eps}) attributes {{tile.num_warps = {W} : i64, tile.lane_vector = {Q} : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cq = arith.constant {Q} : index
  %cr = arith.constant {R} : index
  %c127 = arith.constant dense<127.0> : {C}
  %tiny = arith.constant dense<1.0e-30> : {C}
  %pb = tile.program_id 0
  %pm = tile.program_id 1
  %kbt = arith.divui %K, %cq : index
  %rowStart = arith.muli %pm, %kbt : index
  %pm1 = arith.addi %pm, %c1 : index
  %rowEnd = arith.muli %pm1, %kbt : index
  %b0 = arith.muli %pb, %cr : index
  %r0 = arith.addi %rowStart, %b0 : index
  %b1 = arith.addi %b0, %cr : index
  %fast = arith.cmpi sle, %b1, %kbt : index
  %px = tile.make_block_ptr %x, [%rowEnd, %cq], [%cq, %c1], [%r0, %c0] : {P} -> {BP}
  %pq = tile.make_block_ptr %q, [%rowEnd, %cq], [%cq, %c1], [%r0, %c0] : !tile.ptr<i8> -> !tile.block_ptr<tensor<{X}xi8>>
  %pd = tile.make_block_ptr %qs, [%rowEnd, %c1], [%c1, %c1], [%r0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<{C}>
  %ps = tile.make_block_ptr %qsum, [%rowEnd, %c1], [%c1, %c1], [%r0, %c0] : !tile.ptr<f32> -> !tile.block_ptr<{C}>
{prologue}  scf.if %fast {{
{fastPath}  }} else {{
{edgePath}  }}
  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("P", st.ptr()), fmt::arg("W", s.numWarps), fmt::arg("Q", Q),
                     fmt::arg("R", R), fmt::arg("C", C), fmt::arg("X", X), fmt::arg("BP", st.blockPtr(X)),
                     fmt::arg("w", s.norm ? fmt::format("%w: {}, ", st.ptr()) : ""),
                     fmt::arg("eps", s.norm ? ", %eps: f32" : ""), fmt::arg("prologue", prologue),
                     fmt::arg("fastPath", path("f", fmt::format(" {{in_bounds, {}}}", runs), fmt::format(" {{in_bounds, {}}}", runs))),
                     fmt::arg("edgePath", path("e", "", fmt::format(" {{{}}}", runs))));
}

}  // namespace strata::tile
