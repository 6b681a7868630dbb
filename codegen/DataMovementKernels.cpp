#include "codegen/DataMovementKernels.h"

#include <fmt/format.h>

#include "codegen/StorageText.h"
#include "codegen/UArch.h"
#include "ops/error.h"

namespace strata::tile {

GatherRowsKernelSpec cpuGatherRowsSpec(const std::string& target) {
  GatherRowsKernelSpec s;
  s.blockN = 4 * uarchFor(target).vectorBytes / 4;  // four vector registers per program
  return s;
}

std::string emitGatherRowsKernel(const GatherRowsKernelSpec& s) {
  if (s.blockN <= 0) fail("gather_rows kernel: block of {} columns", s.blockN);
  const StorageText in{s.dtype}, out{s.out()};
  in.check("gather_rows");
  out.check("gather_rows");
  const std::string row = fmt::format("1x{}", s.blockN);
  // A copy moves the stored bits; a conversion goes through f32.
  const std::string move = s.dtype == s.out()
                               ? fmt::format("  %v = tile.load %src : {0}\n  tile.store %dst, %v : {0}\n", in.blockPtr(row))
                               : in.load("v", "%src", row) + out.store("%dst", "%v", row);
  return fmt::format(R"(func.func @{name}(%table: {P}, %out: {OP}, %ids: !tile.ptr<i64>, %T: index, %R: index, %F: index) attributes {{tile.num_warps = 1 : i64}} {{
  %c1 = arith.constant 1 : index
  %cB = arith.constant {B} : index
  %t = tile.program_id 0
  %pc = tile.program_id 1
  %col = arith.muli %pc, %cB : index
  %row = tile.block_lookup %ids[%t] : !tile.ptr<i64>
  %src = tile.make_block_ptr %table, [%R, %F], [%F, %c1], [%row, %col] : {P} -> {BP}
  %dst = tile.make_block_ptr %out, [%T, %F], [%F, %c1], [%t, %col] : {OP} -> {OBP}
{move}  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("B", s.blockN), fmt::arg("P", in.ptr()),
                     fmt::arg("OP", out.ptr()), fmt::arg("BP", in.blockPtr(row)), fmt::arg("OBP", out.blockPtr(row)),
                     fmt::arg("move", move));
}

std::string emitKvWriteKernel(const KvWriteKernelSpec& s) {
  if (s.kvHeads <= 0 || s.headDim <= 0 || s.blockSize <= 0)
    fail("kv_write kernel: {} kv heads of dim {}, block size {}", s.kvHeads, s.headDim, s.blockSize);
  StorageText{s.dtype}.check("kv_write");
  // Cache row of (block, kv = 0|1, head, offset) in the [cache_rows, D] view:
  // ((block * 2 + kv) * Hk + head) * BS + offset.
  return fmt::format(R"(func.func @{name}(%cache: !tile.ptr<{T}>, %k: !tile.ptr<{T}>, %v: !tile.ptr<{T}>, %slots: !tile.ptr<i64>, %T: index, %CR: index) attributes {{tile.num_warps = 1 : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %cD = arith.constant {D} : index
  %cHk = arith.constant {Hk} : index
  %cBS = arith.constant {BS} : index
  %cF = arith.constant {F} : index
  %t = tile.program_id 0
  %h = tile.program_id 1
  %slot = tile.block_lookup %slots[%t] : !tile.ptr<i64>
  %block = arith.divui %slot, %cBS : index
  %off = arith.remui %slot, %cBS : index
  %b2 = arith.muli %block, %c2 : index
  %kb = arith.muli %b2, %cHk : index
  %kbh = arith.addi %kb, %h : index
  %kbase = arith.muli %kbh, %cBS : index
  %krow = arith.addi %kbase, %off : index
  %hbs = arith.muli %cHk, %cBS : index
  %vrow = arith.addi %krow, %hbs : index
  %col = arith.muli %h, %cD : index
  %kp = tile.make_block_ptr %k, [%T, %cF], [%cF, %c1], [%t, %col] : !tile.ptr<{T}> -> !tile.block_ptr<tensor<1x{D}x{T}>>
  %vp = tile.make_block_ptr %v, [%T, %cF], [%cF, %c1], [%t, %col] : !tile.ptr<{T}> -> !tile.block_ptr<tensor<1x{D}x{T}>>
  %ck = tile.make_block_ptr %cache, [%CR, %cD], [%cD, %c1], [%krow, %c0] : !tile.ptr<{T}> -> !tile.block_ptr<tensor<1x{D}x{T}>>
  %cv = tile.make_block_ptr %cache, [%CR, %cD], [%cD, %c1], [%vrow, %c0] : !tile.ptr<{T}> -> !tile.block_ptr<tensor<1x{D}x{T}>>
  %kx = tile.load %kp : !tile.block_ptr<tensor<1x{D}x{T}>>
  %vx = tile.load %vp : !tile.block_ptr<tensor<1x{D}x{T}>>
  tile.store %ck, %kx : !tile.block_ptr<tensor<1x{D}x{T}>>
  tile.store %cv, %vx : !tile.block_ptr<tensor<1x{D}x{T}>>
  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("D", s.headDim), fmt::arg("Hk", s.kvHeads),
                     fmt::arg("BS", s.blockSize), fmt::arg("F", s.kvHeads * s.headDim), fmt::arg("T", s.dtype));
}

}  // namespace strata::tile
