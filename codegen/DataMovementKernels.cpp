#include "codegen/DataMovementKernels.h"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/QuantText.h"
#include "codegen/StorageText.h"
#include "codegen/UArch.h"
#include "ops/error.h"

namespace strata::tile {

GatherRowsKernelSpec cpuGatherRowsSpec(const std::string& target) {
  GatherRowsKernelSpec s;
  s.blockN = 4 * uarchFor(target).vectorBytes / 4;  // four vector registers per program
  return s;
}

namespace {

// The quantized table's gather: one program widens blockN / Q block rows of
// token t's table row (one warp, a run of integers a lane) and stores them
// in place in its output row, viewed as [T F / Q, Q].
std::string emitQuantGatherRowsKernel(const GatherRowsKernelSpec& s) {
  const int64_t Q = s.quantBlock;
  const QuantBlockText qb{Q, s.quantNibbles, s.quantOffsets, s.quantSuper != 0, s.blockN / std::max<int64_t>(Q, 1)};
  if (!(Q == 16 || Q == 32) || s.dtype != "i8" || s.blockN % Q || (s.quantSuper && s.quantSuper != Q) ||
      (qb.KB * qb.Wd()) % 32)
    fail("gather_rows kernel '{}': a quantized table is i8 blocks of 16 or 32 values (f16 scales: quant_super = block), "
         "blockN whole blocks of 32 lanes' bytes (got dtype {}, block {}, blockN {})",
         s.name, s.dtype, Q, s.blockN);
  const StorageText out{s.out()};
  out.check("gather_rows");
  const std::string S = "!tile.ptr<" + qb.scaleDt() + ">", col = "!tile.block_ptr<" + qb.colT(qb.scaleDt()) + ">";
  // The program's block rows, widened and stored; inside the row
  // (`inBounds`: every block row of the program is the row's), the integers
  // come as runs of 8 bytes a lane and the values go out as runs of 8.
  auto move = [&](const std::string& id, bool inBounds) {
    const std::string run = inBounds ? " {in_bounds, contiguous = 1 : i64, run = 8 : i64}" : "";
    std::string text;
    const std::vector<std::string> values =
        qb.widen(text, id, "%pq", "%ps", s.quantOffsets ? "%po" : "", inBounds ? " {in_bounds}" : "", run);
    for (size_t h = 0; h < values.size(); ++h) {
      const std::string d = fmt::format("%d{}{}", id, h);
      text += fmt::format("    {d} = tile.make_block_ptr %out, [%obe, %cq], [%cq, %c1], [%ob, %ch{h}] : {OP} -> {OBP}\n",
                          fmt::arg("d", d), fmt::arg("h", h), fmt::arg("OP", out.ptr()),
                          fmt::arg("OBP", out.blockPtr(qb.xShape())));
      text += out.store(d, values[h], qb.xShape(), run);
    }
    return text;
  };
  return fmt::format(R"(func.func @{name}(%table: !tile.ptr<i8>, %out: {OP}, %ids: !tile.ptr<i64>, %T: index, %R: index, %F: index, %sc: {S}{off}) attributes {{tile.num_warps = 1 : i64, tile.lane_vector = 8 : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cq = arith.constant {Q} : index
  %cc = arith.constant {C} : index
  %ckb = arith.constant {KB} : index
  %ch0 = arith.constant 0 : index
  %ch1 = arith.constant {Wd} : index
{constants}  %t = tile.program_id 0
  %pc = tile.program_id 1
  %kb0 = arith.muli %pc, %ckb : index
  %kbt = arith.divui %F, %cq : index
  %row = tile.block_lookup %ids[%t] : !tile.ptr<i64>
  %rb0 = arith.muli %row, %kbt : index
  %row1 = arith.addi %row, %c1 : index
  %rbe = arith.muli %row1, %kbt : index
  %rb = arith.addi %rb0, %kb0 : index
  %pq = tile.make_block_ptr %table, [%rbe, %cc], [%cc, %c1], [%rb, %c0] : !tile.ptr<i8> -> !tile.block_ptr<{IT}>
  %ps = tile.make_block_ptr %sc, [%rbe, %c1], [%c1, %c1], [%rb, %c0] : {S} -> {COL}
{offPtr}  %ob0 = arith.muli %t, %kbt : index
  %t1 = arith.addi %t, %c1 : index
  %obe = arith.muli %t1, %kbt : index
  %ob = arith.addi %ob0, %kb0 : index
  %kbEnd = arith.addi %kb0, %ckb : index
  %fast = arith.cmpi sle, %kbEnd, %kbt : index
  scf.if %fast {{
{fast}  }} else {{
{edge}  }}
  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("OP", out.ptr()), fmt::arg("S", S),
                     fmt::arg("off", s.quantOffsets ? ", %of: " + S : ""), fmt::arg("Q", Q),
                     fmt::arg("C", qb.Wd()), fmt::arg("KB", qb.KB), fmt::arg("Wd", qb.Wd()),
                     fmt::arg("constants", qb.constants()), fmt::arg("IT", qb.intT()), fmt::arg("COL", col),
                     fmt::arg("offPtr", s.quantOffsets ? fmt::format("  %po = tile.make_block_ptr %of, [%rbe, %c1], [%c1, %c1], [%rb, %c0] : {} -> {}\n", S, col) : ""),
                     fmt::arg("fast", move("f", true)), fmt::arg("edge", move("e", false)));
}

}  // namespace

std::string emitGatherRowsKernel(const GatherRowsKernelSpec& s) {
  if (s.quantBlock) return emitQuantGatherRowsKernel(s);
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
