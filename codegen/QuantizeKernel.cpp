#include "codegen/QuantizeKernel.h"

#include <fmt/format.h>

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
  // the fast path's promises (whole blocks in bounds, aligned runs of Q).
  auto path = [&](const char* p, const std::string& attrs) {
    std::string t = st.load(fmt::format("{}x", p), "%px", X, attrs);
    t += fmt::format(R"(    %{p}ab = math.absf %{p}x : {F}
    %{p}mx = tile.reduce %{p}ab {{kind = "max", axis = 1 : i64}} : {F} -> tensor<{R}xf32>
    %{p}m = tile.expand_dims %{p}mx {{axis = 1 : i64}} : tensor<{R}xf32> -> {C}
    %{p}d = arith.divf %{p}m, %c127 : {C}
    %{p}mt = arith.maximumf %{p}m, %tiny : {C}
    %{p}iv = arith.divf %c127, %{p}mt : {C}
    %{p}ivb = tile.broadcast %{p}iv : {C} -> {F}
    %{p}xs = arith.mulf %{p}x, %{p}ivb : {F}
    %{p}r = math.roundeven %{p}xs : {F}
    %{p}q = tile.convert %{p}r : {F} -> tensor<{X}xi8>
    %{p}sm = tile.reduce %{p}r {{kind = "sum", axis = 1 : i64}} : {F} -> tensor<{R}xf32>
    %{p}se = tile.expand_dims %{p}sm {{axis = 1 : i64}} : tensor<{R}xf32> -> {C}
    %{p}s = arith.mulf %{p}se, %{p}d : {C}
    tile.store %pq, %{p}q{attrs} : !tile.block_ptr<tensor<{X}xi8>>
    tile.store %pd, %{p}d{ib} : !tile.block_ptr<{C}>
    tile.store %ps, %{p}s{ib} : !tile.block_ptr<{C}>
)",
                     fmt::arg("p", p), fmt::arg("F", F), fmt::arg("R", R), fmt::arg("C", C), fmt::arg("X", X),
                     fmt::arg("attrs", attrs), fmt::arg("ib", attrs.empty() ? "" : " {in_bounds}"));
    return t;
  };
  // Block row b of row m is row m kbt + b of the [M K / Q, Q] view; the
  // view of row m ends with its last block, so a program past it reads
  // zeros and stores nothing.
  return fmt::format(R"(func.func @{name}(%x: {P}, %q: !tile.ptr<i8>, %qs: !tile.ptr<f32>, %qsum: !tile.ptr<f32>, %M: index, %K: index) attributes {{tile.num_warps = {W} : i64, tile.lane_vector = {Q} : i64}} {{
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
  scf.if %fast {{
{fastPath}  }} else {{
{edgePath}  }}
  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("P", st.ptr()), fmt::arg("W", s.numWarps), fmt::arg("Q", Q),
                     fmt::arg("R", R), fmt::arg("C", C), fmt::arg("X", X), fmt::arg("BP", st.blockPtr(X)),
                     fmt::arg("fastPath", path("f", fmt::format(" {{in_bounds, contiguous = 1 : i64, run = {} : i64}}", Q))),
                     fmt::arg("edgePath", path("e", "")));
}

}  // namespace strata::tile
