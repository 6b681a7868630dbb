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

std::string emitAttentionKernel(const AttentionKernelSpec& s) {
  if (s.heads <= 0 || s.kvHeads <= 0 || s.headDim <= 0 || s.heads % s.kvHeads || s.blockM <= 0 || s.blockN <= 0)
    fail("attention kernel: heads {} / kv heads {} / head dim {} / blocks {}x{} invalid", s.heads, s.kvHeads, s.headDim,
         s.blockM, s.blockN);
  if (s.kvSplits < 1 || (s.kvSplits > 1 && (!s.paged || s.keyMask)))
    fail("attention kernel: {} KV splits (splits > 1 need the paged form)", s.kvSplits);
  if (s.paged && (s.keyMask || !s.causal))
    fail("attention kernel: the paged form is causal over the context and takes no key mask");
  if (s.groupHeads && (!s.paged || gpuForm(s) || s.kvSplits != 1 || s.blockM != s.heads / s.kvHeads))
    fail("attention kernel '{}': grouped heads are the CPU paged decode form, one program a KV head with its {} "
         "query heads as rows (block M {}), without KV splits",
         s.name, s.heads / s.kvHeads, s.blockM);
  const StorageText st{s.dtype};
  st.check("attention");
  const int64_t M = s.blockM, N = s.blockN, D = s.headDim;
  if (s.storageDots && (gpuForm(s) || !st.sixteenBit() || s.groupHeads || N % 16 || D % 16))
    fail("attention kernel '{}': the unstaged form (dots on the storage type, no staging) takes f16 or bf16, no "
         "stages, no grouped heads, and key blocks and a head dim of multiples of 16 (got {} and {})",
         s.name, N, D);
  if (gpuForm(s)) {
    if (!st.sixteenBit() || s.stages < 2 || s.keyMask || s.kvSplits != 1)
      fail("attention kernel '{}': the staged GPU form takes f16 or bf16, at least 2 stages, no key mask and no "
           "compiled-in KV splits (its decode form takes the split count at launch)",
           s.name);
    if (s.paged && (s.pageSize <= 0 || N % s.pageSize))
      fail("attention kernel '{}': the GPU paged forms copy whole pages (keys per step {}, page {})", s.name, N,
           s.pageSize);
    if (s.decode && (s.numWarps <= 0 || M != 16 || s.heads / s.kvHeads > M || N % (16 * s.numWarps)))
      fail("attention kernel '{}': the GPU decode form packs a KV head's {} query heads into 16 rows and splits a "
           "step's keys over its warps, 16 or more each (block M {}, {} keys per step on {} warps)",
           s.name, s.heads / s.kvHeads, M, N, s.numWarps);
    if (s.groupDots && (s.decode || M != 16 * s.numWarps || s.numWarps % 4 || D % 64 || N % 16 || N > 256))
      fail("attention kernel '{}': warpgroup dots need 16 query rows per warp on whole warpgroups (block M {} on {} "
           "warps), a head dim of 64-column panels (got {}), keys per step a multiple of 16 up to 256 (got {}) and "
           "not the decode form",
           s.name, M, s.numWarps, D, N);
    if (s.tma && (!s.groupDots || s.paged))
      fail("attention kernel '{}': TMA copies serve the contiguous warpgroup-dot form only", s.name);
    if (s.numWarps <= 0 || (!s.decode && M % (16 * s.numWarps)) || N % 16 || D % 16)
      fail("attention kernel '{}': the GPU form needs a multiple of 16 query rows per warp (block M {} on {} warps) and key block "
           "and head dim multiples of 16 (got {} and {})",
           s.name, M, s.numWarps, N, D);
  }
  const std::string P = st.ptr(), qo = fmt::format("{}x{}", M, D);
  std::string args, prologue;
  KvRows kvRows;
  if (gpuDecode(s)) {
    args = fmt::format("%q: {0}, %cache: {0}, ", P) +
           "%po: !tile.ptr<f32>, %pm: !tile.ptr<f32>, %pl: !tile.ptr<f32>, %o: " + P + ", %tables: !tile.ptr<i64>, "
           "%lens: !tile.ptr<i64>, %maxBlocks: index, %cacheRows: index, %splits: index";
    // Sequence n's one token is row n of q / o [B, heads * D]; viewed as
    // [B heads, D], KV head kh's query heads are rows [n H + kh G, + G): the
    // program's rows past them read as zero and are never stored.
    prologue = fmt::format(R"(  %n = tile.program_id 2
  %ctx = tile.block_lookup %lens[%n] : !tile.ptr<i64>
  %qLen = arith.addi %c1, %c0 : index
  %nH = arith.muli %n, %cH : index
  %khG = arith.muli %kh, %cG : index
  %qRow = arith.addi %nH, %khG : index
  %qEnd = arith.addi %qRow, %cG : index
  %qp = tile.make_block_ptr %q, [%qEnd, %cD], [%cD, %c1], [%qRow, %c0] : {P} -> {BP}
  %tableRow = arith.muli %n, %maxBlocks : index
)",
                           fmt::arg("P", P), fmt::arg("BP", st.blockPtr(qo)));
  } else if (s.paged) {
    // The program's rows: query tokens of head h from s0 + r0, or (grouped
    // heads) KV head kh's query heads of token s0, rows of q / o viewed as
    // [T heads, D], the view ending with the sequence's tokens (a sequence
    // without a new token stores nothing).
    const std::string tokenRows =
        fmt::format(R"(  %qRow = arith.addi %s0, %r0 : index
  %qCol = arith.muli %h, %cD : index
  %qColEnd = arith.addi %qCol, %cD : index
{qPtr}{oPtr})",
                    fmt::arg("qPtr", s.groupDots || pieceForm(s) ? std::string() : fmt::format("  %qp = tile.make_block_ptr %q, [%s1, %qColEnd], [%cF, %c1], [%qRow, %qCol] : {} -> {}\n", P, st.blockPtr(qo))),
                    fmt::arg("oPtr", s.kvSplits > 1 || s.groupDots || pieceForm(s) ? std::string()
                                                                    : fmt::format("  %op = tile.make_block_ptr %o, [%s1, %qColEnd], [%cF, %c1], [%qRow, %qCol] : {} -> {}\n", P, st.blockPtr(qo))));
    const std::string groupedRows = fmt::format(R"(  %tH = arith.muli %s0, %cH : index
  %khG = arith.muli %kh, %cG : index
  %qRow = arith.addi %tH, %khG : index
  %qEnd0 = arith.addi %qRow, %cG : index
  %s1H = arith.muli %s1, %cH : index
  %qEnd = arith.minsi %qEnd0, %s1H : index
{ioPtrs})",
                                                fmt::arg("ioPtrs", pieceForm(s) ? std::string() : fmt::format(R"(  %qp = tile.make_block_ptr %q, [%qEnd, %cD], [%cD, %c1], [%qRow, %c0] : {P} -> {BP}
  %op = tile.make_block_ptr %o, [%qEnd, %cD], [%cD, %c1], [%qRow, %c0] : {P} -> {BP}
)", fmt::arg("P", P), fmt::arg("BP", st.blockPtr(qo)))));
    args = fmt::format("%q: {0}, %cache: {0}, ", P) +
           (s.kvSplits > 1 ? "%po: !tile.ptr<f32>, %pm: !tile.ptr<f32>, %pl: !tile.ptr<f32>, " : "%o: " + P + ", ") +
           "%tables: !tile.ptr<i64>, %starts: !tile.ptr<i64>, %lens: !tile.ptr<i64>, %maxBlocks: index, %cacheRows: index";
    // Sequence n's tokens are rows [s0, s1) of q/o; its context is ctx.
    prologue = fmt::format(R"(  %n = tile.program_id 2
  %n1 = arith.addi %n, %c1 : index
  %s0 = tile.block_lookup %starts[%n] : !tile.ptr<i64>
  %s1 = tile.block_lookup %starts[%n1] : !tile.ptr<i64>
  %ctx = tile.block_lookup %lens[%n] : !tile.ptr<i64>
  %qLen = arith.subi %s1, %s0 : index
{rows}  %tableRow = arith.muli %n, %maxBlocks : index
)",
                           fmt::arg("rows", s.groupHeads ? groupedRows : tokenRows));
    // Cache rows of (physical block, kv head): K at ((blk * 2) * Hk + kh) * N,
    // V Hk * N rows further.
    kvRows = [&s](const std::string& p, const std::string& j, const std::string&) {
      return pagedRows(p, j) + kvPointers(s, "%cache", "%cache", "%cacheRows", p, j);
    };
  } else {
    args = fmt::format("%q: {0}, %k: {0}, %v: {0}, ", P) + (s.keyMask ? "%mask: !tile.ptr<f32>, " : "") + "%o: " + P +
           ", %S: index, %T: index" + (s.tma ? ", %qmap: !tile.ptr<i8>, %kmap: !tile.ptr<i8>, %vmap: !tile.ptr<i8>" : "");
    prologue = fmt::format(R"(  %b = tile.program_id 2
  %B = arith.addi %b, %c1 : index
  %qLen = arith.addi %S, %c0 : index
  %ctx = arith.addi %T, %c0 : index
  %bh = arith.muli %b, %cH : index
  %bhq = arith.addi %bh, %h : index
  %qBase = arith.muli %bhq, %S : index
  %qRow = arith.addi %qBase, %r0 : index
  %qEnd = arith.addi %qBase, %S : index
{ioPtrs}  %bk = arith.muli %b, %cHk : index
  %bkh = arith.addi %bk, %kh : index
  %kvBase = arith.muli %bkh, %T : index
)",
                           fmt::arg("P", P), fmt::arg("ioPtrs", s.groupDots ? std::string() : fmt::format(R"(  %qp = tile.make_block_ptr %q, [%qEnd, %cD], [%cD, %c1], [%qRow, %c0] : {P} -> {BP}
  %op = tile.make_block_ptr %o, [%qEnd, %cD], [%cD, %c1], [%qRow, %c0] : {P} -> {BP}
)", fmt::arg("P", P), fmt::arg("BP", st.blockPtr(qo)))));
    kvRows = [&s](const std::string& p, const std::string& j, const std::string&) {
      return fmt::format(R"(    %{p}krow = arith.addi %kvBase, {j} : index
    %{p}vrow = arith.addi %kvBase, {j} : index
)",
                         fmt::arg("p", p), fmt::arg("j", j)) +
             kvPointers(s, "%k", "%v", "", p, j);
    };
  }

  if (gpuPaged(s)) {
    // The GPU forms copy page by page: page j / page of the sequence
    // (clamped to its last page, page 0 without a context: a step's pages
    // past the context copy nothing but must not read past the table row,
    // and the loops look pages up a step ahead); K at ((blk * 2) * Hk +
    // kh) * page, V Hk * page rows on.
    prologue += fmt::format(R"(  %cPg = arith.constant {page} : index
  %cPgHk = arith.constant {pageHk} : index
  %lastPage0 = arith.subi %ctx, %c1 : index
  %lastPage1 = arith.divui %lastPage0, %cPg : index
  %hasCtx = arith.cmpi sgt, %ctx, %c0 : index
  %lastPage = arith.select %hasCtx, %lastPage1, %c0 : index
)",
                            fmt::arg("page", s.pageSize), fmt::arg("pageHk", s.pageSize * s.kvHeads));
    for (int64_t pg = 1; pg < N / s.pageSize; ++pg)
      prologue += fmt::format("  %c{0} = arith.constant {0} : index\n", pg * s.pageSize);
    kvRows = [&s](const std::string& p, const std::string& j, const std::string& blk) {
      return (blk.empty() ? pageLookup(p, j) : "") + fmt::format(R"(    %{p}b2 = arith.muli {blk}, %c2Hk : index
    %{p}b3 = arith.addi %{p}b2, %kh : index
    %{p}krow = arith.muli %{p}b3, %cPg : index
    %{p}vrow = arith.addi %{p}krow, %cPgHk : index
)",
                         fmt::arg("p", p), fmt::arg("blk", blk.empty() ? "%" + p + "blk" : blk)) +
             kvPointers(s, "%cache", "%cache", "%cacheRows", p, j, "%cPg", s.pageSize);
    };
  }

  // Keys [0, fullEnd) are visible to every row of the block (mask-free
  // loop); [fullEnd, kvEnd) need masks. Rows past q_len only exist to fill
  // the tile: they are never stored, and an idle program (no rows) runs no
  // key block at all.
  std::string bounds;
  if (causalMask(s))
    bounds = R"(  %kvEnd0 = arith.addi %pos0, %active : index
  %pos1 = arith.addi %pos0, %c1 : index
  %fullBlocks = arith.divui %pos1, %cN : index
)";
  else
    bounds = R"(  %kvEnd0 = arith.addi %ctx, %c0 : index
  %fullBlocks = arith.divui %ctx, %cN : index
)";
  // A key mask can hide any key: every block is masked then.
  std::string fullEnd = s.keyMask ? "  %fullEnd = arith.addi %c0, %c0 : index\n"
                                  : "  %fullEnd0 = arith.muli %fullBlocks, %cN : index\n"
                                    "  %fullEnd = arith.minsi %fullEnd0, %kvEnd : index\n";
  // A [M, PW] block pointer `name` over head-dim panel i of q or o (`buf`)
  // in the form's token layout: the warpgroup-dot form copies Q and stores
  // O panel by panel.
  auto ioPanel = [&](const std::string& buf, const std::string& name, int64_t i) {
    const std::string bp = st.blockPtr(fmt::format("{}x{}", M, panelWidth(s)));
    if (!s.paged)
      return fmt::format("  {} = tile.make_block_ptr {}, [%qEnd, %cD], [%cD, %c1], [%qRow, {}] : {} -> {}\n", name, buf,
                         panelOffset(i), P, bp);
    return fmt::format("  {n}_c = arith.addi %qCol, {off} : index\n"
                       "  {n} = tile.make_block_ptr {b}, [%s1, %qColEnd], [%cF, %c1], [%qRow, {n}_c] : {P} -> {bp}\n",
                       fmt::arg("n", name), fmt::arg("b", buf), fmt::arg("off", panelOffset(i)), fmt::arg("P", P),
                       fmt::arg("bp", bp));
  };
  // Without splits: O = acc / l (with a key mask, rows that saw no key give
  // 0), one store. With splits: the unnormalized partial results.
  // Stores of a split's running max m and sum l (the values `m`, `l`, each
  // [M]) as [M, 1] through block pointers of bounds / row stride / offsets
  // `ml*`.
  auto mlStores = [&](const std::string& mlBounds, const std::string& mlStride, const std::string& mlAt,
                      const std::string& m, const std::string& l) {
    return fmt::format(R"(  %me2 = tile.expand_dims {m} {{axis = 1 : i64}} : tensor<{M}xf32> -> tensor<{M}x1xf32>
  %pmp = tile.make_block_ptr %pm, [{mb}], [{ms}, %c1], [{ma}] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{M}x1xf32>>
  tile.store %pmp, %me2 : !tile.block_ptr<tensor<{M}x1xf32>>
  %le2 = tile.expand_dims {l} {{axis = 1 : i64}} : tensor<{M}xf32> -> tensor<{M}x1xf32>
  %plp = tile.make_block_ptr %pl, [{mb}], [{ms}, %c1], [{ma}] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{M}x1xf32>>
  tile.store %plp, %le2 : !tile.block_ptr<tensor<{M}x1xf32>>
)",
                       fmt::arg("mb", mlBounds), fmt::arg("ms", mlStride), fmt::arg("ma", mlAt), fmt::arg("m", m),
                       fmt::arg("l", l), fmt::arg("M", M));
  };
  // Stores of a split's partial result: acc [M, D] through a block pointer
  // of bounds / row stride / offsets `acc*`, then m and l (mlStores).
  auto partialStores = [&](const std::string& accBounds, const std::string& accStride, const std::string& accAt,
                           const std::string& mlBounds, const std::string& mlStride, const std::string& mlAt) {
    return fmt::format(R"(  %pop = tile.make_block_ptr %po, [{ab}], [{as}, %c1], [{aa}] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{M}x{D}xf32>>
  tile.store %pop, %r2#0 : !tile.block_ptr<tensor<{M}x{D}xf32>>
)",
                       fmt::arg("ab", accBounds), fmt::arg("as", accStride), fmt::arg("aa", accAt), fmt::arg("M", M),
                       fmt::arg("D", D)) +
           mlStores(mlBounds, mlStride, mlAt, "%r2#1", "%r2#2");
  };
  // O = acc x (1 / l): one division per row, then multiplies. Dividing
  // every element compiled to an IEEE division subroutine per element
  // (branches included): 64 a lane in the paged decode's one-split store,
  // 9 % of its instructions (Nsight Compute, H100, 2026-11-23).
  auto inverseL = [&](const std::string& l, const std::string& width) {
    return fmt::format(R"(  %lone = arith.constant dense<1.0> : tensor<{M}xf32>
  %linv = arith.divf %lone, {l} : tensor<{M}xf32>
  %le = tile.expand_dims %linv {{axis = 1 : i64}} : tensor<{M}xf32> -> tensor<{M}x1xf32>
  %lb = tile.broadcast %le : tensor<{M}x1xf32> -> tensor<{M}x{W}xf32>
)",
                       fmt::arg("M", M), fmt::arg("l", l), fmt::arg("W", width));
  };
  // Split partials: this (query block, head, split)'s columns of po
  // ([T, heads kvSplits headDim]) and of pm / pl ([T, heads kvSplits]).
  const std::string splitCols = fmt::format(R"(  %poCol0 = arith.muli %h, %cS : index
  %poCol = arith.addi %poCol0, %sid : index
  %poColEnd = arith.addi %poCol, %c1 : index
  %poD = arith.muli %poCol, %cD : index
  %poDEnd = arith.addi %poD, %cD : index
  %cHSD = arith.constant {HSD} : index
  %cHS = arith.constant {HS} : index
)",
                                            fmt::arg("HSD", s.heads * s.kvSplits * D), fmt::arg("HS", s.heads * s.kvSplits));
  std::string epilogue;
  if (pieceForm(s) && s.kvSplits > 1) {
    // The unnormalized accumulator is in po already: m and l.
    epilogue = mlStores("%s1, %poColEnd", "%cHS", "%qRow, %poCol", "%r2#0", "%r2#1");
  } else if (pieceForm(s)) {
    // O = acc / l, piece by piece in place.
    epilogue = inverseL("%r2#1", std::to_string(s.headPiece)) +
               fmt::format(R"(  scf.for %f = %c0 to %cD step %cW {{
{ptr}    %fa = tile.load %fp : !tile.block_ptr<tensor<{M}x{W}xf32>>
    %fo = arith.mulf %fa, %lb : tensor<{M}x{W}xf32>
    tile.store %fp, %fo : !tile.block_ptr<tensor<{M}x{W}xf32>>
  }}
)",
                           fmt::arg("M", M), fmt::arg("W", s.headPiece), fmt::arg("ptr", pieceRows(s, "%o", "%fp", "%f")));
  } else if (gpuDecode(s))
    // One split: the program saw every key (at least the token's own, so
    // l > 0) and stores O = acc / l into o viewed as [B heads, D] itself;
    // the runtime then launches no combine. Otherwise the partials of
    // [B heads, S D] (po) and [B heads, S] (pm, pl): row n H + h, split
    // sid; the program's G rows from qRow.
    epilogue = fmt::format(R"(  %oneSplit = arith.cmpi eq, %cS, %c1 : index
  scf.if %oneSplit {{
{inverse}    %out = arith.mulf %r2#0, %lb : tensor<{M}x{D}xf32>
    %op = tile.make_block_ptr %o, [%qEnd, %cD], [%cD, %c1], [%qRow, %c0] : {P} -> {BP}
  {store}  }} else {{
    %sidD = arith.muli %sid, %cD : index
    %sidDEnd = arith.addi %sidD, %cD : index
    %sid1 = arith.addi %sid, %c1 : index
    %cSD = arith.muli %cS, %cD : index
{partials}  }}
)",
                           fmt::arg("M", M), fmt::arg("D", D), fmt::arg("P", P), fmt::arg("BP", st.blockPtr(qo)),
                           fmt::arg("inverse", inverseL("%r2#2", std::to_string(D))),
                           fmt::arg("store", st.store("%op", "%out", qo)),
                           fmt::arg("partials", partialStores("%qEnd, %sidDEnd", "%cSD", "%qRow, %sidD",
                                                              "%qEnd, %sid1", "%cS", "%qRow, %sid")));
  else if (s.kvSplits > 1)
    // acc [BM, D], m and l [BM, 1] of this split.
    epilogue = splitCols + partialStores("%s1, %poDEnd", "%cHSD", "%qRow, %poD", "%s1, %poColEnd", "%cHS", "%qRow, %poCol");
  else if (s.keyMask)
    epilogue = fmt::format(R"(  %seen = arith.cmpf ogt, %r2#2, %zm : tensor<{M}xf32>
  %one = arith.constant dense<1.0> : tensor<{M}xf32>
  %linv0 = arith.divf %one, %r2#2 : tensor<{M}xf32>
  %linv = arith.select %seen, %linv0, %zm : tensor<{M}xi1>, tensor<{M}xf32>
  %le = tile.expand_dims %linv {{axis = 1 : i64}} : tensor<{M}xf32> -> tensor<{M}x1xf32>
  %lb = tile.broadcast %le : tensor<{M}x1xf32> -> tensor<{M}x{D}xf32>
  %out = arith.mulf %r2#0, %lb : tensor<{M}x{D}xf32>
)",
                           fmt::arg("M", M), fmt::arg("D", D));
  else if (!s.groupDots)
    epilogue = inverseL("%r2#2", std::to_string(D)) +
               fmt::format("  %out = arith.mulf %r2#0, %lb : tensor<{}x{}xf32>\n", M, D);
  if (s.kvSplits == 1 && !gpuDecode(s) && !s.groupDots && !pieceForm(s)) epilogue += st.store("%op", "%out", qo);
  if (s.groupDots) {
    // Each accumulator panel divided by l and stored at its columns.
    const int64_t np = panels(s), PW = panelWidth(s);
    const std::string po = fmt::format("{}x{}", M, PW);
    epilogue = inverseL(fmt::format("%r2#{}", np + 1), std::to_string(PW));
    for (int64_t i = 0; i < np; ++i)
      epilogue += fmt::format("  %out{i} = arith.mulf %r2#{i}, %lb : tensor<{M}x{PW}xf32>\n", fmt::arg("i", i),
                              fmt::arg("M", M), fmt::arg("PW", PW)) +
                  ioPanel("%o", "%op" + std::to_string(i), i) + st.store("%op" + std::to_string(i), "%out" + std::to_string(i), po);
  }

  // Constants only the guarded forms use (an unused tile would get no layout).
  std::string maskConsts;
  if (s.keyMask) maskConsts += fmt::format("  %ninfs = arith.constant dense<0xFF800000> : tensor<{}x{}xf32>\n", M, N);
  if (rowsMaySeeNothing(s))
    maskConsts += fmt::format("  %ninfm = arith.constant dense<0xFF800000> : tensor<{0}xf32>\n"
                              "  %zm = arith.constant dense<0.0> : tensor<{0}xf32>\n",
                              M);
  // This program's share of the keys: whole blocks, split `kvSplits` ways
  // (flash-decoding); [lo, fe) needs no mask, [fe, hi) does.
  std::string range = R"(  %kvBlocks0 = arith.addi %kvEnd, %cN : index
  %kvBlocks1 = arith.subi %kvBlocks0, %c1 : index
  %kvBlocks = arith.divui %kvBlocks1, %cN : index
)" + splitShare("", "%kvBlocks", "%cS", "%sid", "%cN", "%kvEnd") +
                      R"(  %fe0 = arith.minsi %fullEnd, %hi : index
  %fe = arith.maxsi %lo, %fe0 : index
)";
  // The loops carry the accumulator panels, m and l.
  std::vector<std::string> fullInits(panels(s), "%accz"), maskedInits;
  fullInits.insert(fullInits.end(), {"%m0", "%l0"});
  for (int64_t i = 0; i < panels(s) + 2; ++i) maskedInits.push_back(fmt::format("%r1#{}", i));
  const double log2e = 1.4426950408889634;
  // This program's query block. The GPU form takes them last first: with
  // the causal mask the last blocks see the most keys, and the blocks the
  // GPU starts first should be the longest (the short ones fill in at the
  // end instead of leaving SMs idle).
  std::string queryBlock = gpuForm(s) && !s.paged ? R"(  %nqb0 = arith.addi %S, %cM : index
  %nqb1 = arith.subi %nqb0, %c1 : index
  %nqb = arith.divui %nqb1, %cM : index
  %lastQb = arith.subi %nqb, %c1 : index
  %qb = arith.subi %lastQb, %pid0 : index
)"
                                      : "  %qb = arith.divui %pid0, %cS : index\n";
  // The decode form's one warp would wait out Q's round trip before its
  // first K / V copies go out: it waits for Q after them instead (the copy
  // groups complete in order, so `stages - 1` groups left pending is Q's).
  // qReady: that wait and Q's fragments.
  const bool qAfterCopies = gpuDecode(s);
  std::string loadQ, qReady;
  if (gpuForm(s) && s.groupDots) {
    // Buffers per head-dim panel x: Q [M, 64], K and V `stages` x [N, 64],
    // 128-byte swizzled rows (no padding: %cPD is the panel width). Q is
    // copied once and lands before the key loops start their copies.
    loadQ = fmt::format(R"(  %cPw = arith.constant {PW} : index
  %cPD = arith.constant {PW} : index
  %cSN = arith.constant {SN} : index
  %cST = arith.constant {ST} : index
  %cST1 = arith.constant {ST1} : index
  %cAhead = arith.constant {ahead} : index
)",
                        fmt::arg("PW", panelWidth(s)), fmt::arg("SN", s.stages * N), fmt::arg("ST", s.stages),
                        fmt::arg("ST1", s.stages - 1), fmt::arg("ahead", (s.stages - 1) * N));
    const std::string QB = st.blockPtr(fmt::format("{}x{}", M, panelWidth(s)));
    for (int64_t i = 1; i < panels(s); ++i)
      loadQ += fmt::format("  %cPo{} = arith.constant {} : index\n", i, i * panelWidth(s));
    for (int64_t i = 0; i < panels(s); ++i)
      loadQ += fmt::format(R"(  %lq{x} = tile.alloc {{size = {qSize} : i64, swizzle = 128 : i64}} : {P}
  %lk{x} = tile.alloc {{size = {kvSize} : i64, swizzle = 128 : i64}} : {P}
  %lv{x} = tile.alloc {{size = {kvSize} : i64, swizzle = 128 : i64}} : {P}
)",
                           fmt::arg("x", panel(s, i)), fmt::arg("qSize", M * panelWidth(s)),
                           fmt::arg("kvSize", s.stages * N * panelWidth(s)), fmt::arg("P", P));
    if (s.tma) {
      // Stage st's K and V panels complete phases of %bars[st]; Q's panels
      // one phase of %qbar, waited for after the first copies ahead went
      // out (qReady).
      loadQ += fmt::format(R"(  %bars = tile.alloc {{size = {ST} : i64}} : !tile.ptr<i64>
  %qbar = tile.alloc {{size = 1 : i64}} : !tile.ptr<i64>
  %c2 = arith.constant 2 : index
  tile.mbarrier_init %bars {{arrivals = {kv} : i64}} : !tile.ptr<i64>
  tile.mbarrier_init %qbar {{arrivals = {np} : i64}} : !tile.ptr<i64>
)",
                           fmt::arg("ST", s.stages), fmt::arg("kv", 2 * panels(s)), fmt::arg("np", panels(s)));
      for (int64_t i = 0; i < panels(s); ++i)
        loadQ += fmt::format(R"(  %ql{x} = tile.make_block_ptr %lq{x}, [%cM, %cPw], [%cPw, %c1], [%c0, %c0] : {P} -> {QB}
  tile.tma_copy %ql{x}, %qmap[{off}, %r0, %bhq], %qbar[%c0] : {QB}, !tile.ptr<i8>, !tile.ptr<i64>
)",
                             fmt::arg("x", panel(s, i)), fmt::arg("off", panelOffset(i)), fmt::arg("P", P),
                             fmt::arg("QB", QB));
      qReady = "  tile.mbarrier_wait %qbar[%c0], %c0 : !tile.ptr<i64>\n";
    } else {
      for (int64_t i = 0; i < panels(s); ++i)
        loadQ += ioPanel("%q", fmt::format("%qp{}", i), i) +
                 fmt::format(R"(  %ql{x} = tile.make_block_ptr %lq{x}, [%cM, %cPw], [%cPw, %c1], [%c0, %c0] : {P} -> {QB}
  tile.async_copy %ql{x}, %qp{i} {{contiguous = 1 : i64}} : {QB}
)",
                             fmt::arg("x", panel(s, i)), fmt::arg("i", i), fmt::arg("P", P), fmt::arg("QB", QB));
      loadQ += R"(  tile.async_commit
  tile.async_wait {pending = 0 : i64}
  tile.barrier
)";
    }
    loadQ += fmt::format(R"(  %ssc = arith.constant dense<{sscale:.9e}> : tensor<{M}x{N}xf32>
  %msc = arith.constant dense<{sscale:.9e}> : tensor<{M}xf32>
)",
                         fmt::arg("sscale", s.scale * log2e), fmt::arg("M", M), fmt::arg("N", N));
  } else if (gpuForm(s)) {
    // Buffers: Q [M, D], K and V `stages` x [N, D], rows padded by 8
    // elements (16 bytes) so an ldmatrix's 8 rows fall in distinct banks.
    // Q is copied once (and its fragments read once, or in every step
    // without qInRegisters); its copy goes out first and is waited for
    // before the key loops start theirs, or in the decode form
    // (qAfterCopies) after the first loop's copies ahead.
    const int64_t PD = D + 8;
    const std::string qBlock = st.blockPtr(qo);
    qReady = fmt::format(R"(  tile.async_wait {{pending = {left} : i64}}
  tile.barrier
  %qu = tile.make_block_ptr %lq, [%cM, %cD], [%cPD, %c1], [%c0, %c0] : {P} -> {QB}
{qLoad})",
                         fmt::arg("left", qAfterCopies ? s.stages - 1 : 0), fmt::arg("P", P), fmt::arg("QB", qBlock),
                         fmt::arg("qLoad", s.qInRegisters ? qFragments(s) : std::string()));
    loadQ = fmt::format(R"(  %cPD = arith.constant {PD} : index
  %cSN = arith.constant {SN} : index
  %cST = arith.constant {ST} : index
  %cST1 = arith.constant {ST1} : index
  %cAhead = arith.constant {ahead} : index
  %lq = tile.alloc {{size = {qSize} : i64}} : {P}
  %lk = tile.alloc {{size = {kvSize} : i64}} : {P}
  %lv = tile.alloc {{size = {kvSize} : i64}} : {P}
  %ql = tile.make_block_ptr %lq, [%cM, %cD], [%cPD, %c1], [%c0, %c0] : {P} -> {QB}
  tile.async_copy %ql, %qp {{contiguous = 1 : i64}} : {QB}
  tile.async_commit
{qReady}  %ssc = arith.constant dense<{sscale:.9e}> : tensor<{M}x{N}xf32>
  %msc = arith.constant dense<{sscale:.9e}> : tensor<{M}xf32>
)",
                        fmt::arg("PD", PD), fmt::arg("SN", s.stages * N), fmt::arg("ST", s.stages),
                        fmt::arg("ST1", s.stages - 1), fmt::arg("ahead", (s.stages - 1) * N), fmt::arg("qSize", M * PD),
                        fmt::arg("kvSize", s.stages * N * PD), fmt::arg("P", P), fmt::arg("QB", qBlock),
                        fmt::arg("sscale", s.scale * log2e), fmt::arg("M", M), fmt::arg("N", N),
                        fmt::arg("qReady", qAfterCopies ? std::string() : qReady));
  } else if (pieceForm(s)) {
    // The accumulator rows start at zero (rows past the sequence's tokens
    // fall outside the view and are not written); the scale applies to the
    // raw scores.
    loadQ = fmt::format(R"(  %cW = arith.constant {W} : index
{splitCols}  %pz = arith.constant dense<0.0> : tensor<{M}x{W}xf32>
  scf.for %z = %c0 to %cD step %cW {{
{ptr}    tile.store %zp, %pz : !tile.block_ptr<tensor<{M}x{W}xf32>>
  }}
  %ssc = arith.constant dense<{sscale:.9e}> : tensor<{M}x{N}xf32>
)",
                        fmt::arg("W", s.headPiece), fmt::arg("M", M), fmt::arg("N", N),
                        fmt::arg("splitCols", s.kvSplits > 1 ? splitCols : std::string()),
                        fmt::arg("ptr", pieceRows(s, s.kvSplits > 1 ? "%po" : "%o", "%zp", "%z")),
                        fmt::arg("sscale", s.scale * log2e));
  } else if (s.storageDots) {
    // Q once, in the storage type (rows past the block's tokens read as
    // zero); the scale goes on the raw scores' max and exponent.
    loadQ = fmt::format(R"(  %qt = tile.load %qp : {QB}
  %ssc = arith.constant dense<{sscale:.9e}> : tensor<{M}x{N}xf32>
  %msc = arith.constant dense<{sscale:.9e}> : tensor<{M}xf32>
)",
                        fmt::arg("QB", st.blockPtr(qo)), fmt::arg("sscale", s.scale * log2e), fmt::arg("M", M),
                        fmt::arg("N", N));
  } else {
    loadQ = st.load("qt", "%qp", qo) + fmt::format(R"(  %qsc = arith.constant dense<{qscale:.9e}> : tensor<{M}x{D}xf32>
  %qs = arith.mulf %qt, %qsc : tensor<{M}x{D}xf32>
)",
                                                   fmt::arg("qscale", s.scale * log2e), fmt::arg("M", M), fmt::arg("D", D));
  }
  // The TMA form's stages keep one phase count over both loops: one
  // pipeline from the program's first key to its last. The cp.async forms
  // drain it at the masked loop and refill it there (one pipeline over both
  // was no faster: 1.002x over bench-attention's cases, and the decode form
  // 0.2-0.5 us slower a step; H100, 2026-11-24).
  const KeyPipeline fullPipe = s.tma ? KeyPipeline{"%lo", "%hi"} : KeyPipeline{"%lo", "%fe"},
                    maskedPipe = s.tma ? KeyPipeline{"%lo", "%hi", "%r1"} : KeyPipeline{"%fe", "%hi"};
  std::string occupancy =
      gpuForm(s) && s.minBlocksPerSM > 0 ? fmt::format(", tile.min_blocks_per_sm = {} : i64", s.minBlocksPerSM) : "";
  return fmt::format(R"(func.func @{name}({args}) attributes {{tile.num_warps = {W} : i64{occ}}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cM = arith.constant {M} : index
  %cN = arith.constant {N} : index
  %cD = arith.constant {D} : index
  %cF = arith.constant {F} : index
  %cG = arith.constant {G} : index
  %cH = arith.constant {H} : index
  %cHk = arith.constant {Hk} : index
  %c2Hk = arith.constant {Hk2} : index
  %cHkN = arith.constant {HkN} : index
  %pid0 = tile.program_id 0
{splitCount}{queryBlock}  %sid = arith.remui %pid0, %cS : index
  %h = tile.program_id 1
  %r0 = arith.muli %qb, %cM : index
{khLine}
{prologue}  %left = arith.subi %qLen, %r0 : index
  %left0 = arith.maxsi %left, %c0 : index
  %active = arith.minsi %left0, %cM : index
  %hasRows = arith.cmpi sgt, %active, %c0 : index
  %past = arith.subi %ctx, %qLen : index
  %pos0 = arith.addi %past, %r0 : index
{bounds}  %kvEnd = arith.select %hasRows, %kvEnd0, %c0 : index
{fullEnd}{range}{loadQ}  %zs = arith.constant dense<0.0> : tensor<{M}x{N}xf32>
{maskConsts}{accz}  %m0 = arith.constant dense<0xFF800000> : tensor<{M}xf32>
  %l0 = arith.constant dense<0.0> : tensor<{M}xf32>
{fullLoop}{maskedLoop}{epilogue}
  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("args", args), fmt::arg("M", M), fmt::arg("N", N),
                     fmt::arg("D", D), fmt::arg("PW", panelWidth(s)), fmt::arg("F", s.heads * D), fmt::arg("G", s.heads / s.kvHeads),
                     fmt::arg("H", s.heads), fmt::arg("Hk", s.kvHeads), fmt::arg("Hk2", 2 * s.kvHeads),
                     fmt::arg("HkN", s.kvHeads * N), fmt::arg("prologue", prologue), fmt::arg("bounds", bounds),
                     fmt::arg("fullEnd", fullEnd),
                     fmt::arg("fullLoop", loop(s, kvRows, false, "%lo", "%fe", fullPipe, fullInits, "%r1",
                                               qAfterCopies || s.tma ? qReady : std::string())),
                     fmt::arg("maskedLoop", loop(s, kvRows, true, "%fe", "%hi", maskedPipe, maskedInits, "%r2")),
                     fmt::arg("epilogue", epilogue), fmt::arg("maskConsts", maskConsts),
                     fmt::arg("accz", pieceForm(s) ? std::string() : fmt::format("  %accz = arith.constant dense<0.0> : tensor<{}x{}xf32>\n", M, panelWidth(s))),
                     fmt::arg("range", range), fmt::arg("loadQ", loadQ), fmt::arg("queryBlock", queryBlock),
                     fmt::arg("splitCount", gpuDecode(s) ? std::string("  %cS = arith.addi %splits, %c0 : index\n")
                                                         : fmt::format("  %cS = arith.constant {} : index\n", s.kvSplits)),
                     fmt::arg("occ", occupancy), fmt::arg("khLine", gpuDecode(s) || s.groupHeads ? "  %kh = arith.addi %h, %c0 : index\n"
                                                     : "  %kh = arith.divui %h, %cG : index\n"), fmt::arg("W", std::max<int64_t>(1, s.numWarps)));
}


}  // namespace strata::tile
