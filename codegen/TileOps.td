//===- TileOps.td - tile dialect operations ------------------------------===//
#ifndef STRATA_TILE_OPS
#define STRATA_TILE_OPS

include "TileBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

class Tile_Op<string mnemonic, list<Trait> traits = []> : Op<Tile_Dialect, mnemonic, traits>;

def Tile_ProgramIdOp : Tile_Op<"program_id", [Pure]> {
  let summary = "Index of this workgroup along grid axis 0, 1 or 2";
  let arguments = (ins ConfinedAttr<I32Attr, [IntNonNegative, IntMaxValue<2>]>:$axis);
  let results = (outs Index:$result);
  let assemblyFormat = "$axis attr-dict";
}

def Tile_WarpIdOp : Tile_Op<"warp_id", [Pure]> {
  let summary = "Linear index of this warp in its workgroup (per-warp IR only)";
  let description = [{
    Introduced by `distribute-to-warps` (or written in warp-level kernels, the
    paper's section 3.2). On the CPU a warp is one register block and the
    workgroup's warps run one after another; on GPUs it is the hardware warp.
  }];
  let results = (outs Index:$result);
  let assemblyFormat = "attr-dict";
}

def Tile_MakeBlockPtrOp : Tile_Op<"make_block_ptr", [Pure, AttrSizedOperandSegments]> {
  let summary = "Block pointer into a strided array: base, shape, strides, offsets";
  let description = [{
    The block starts at `offsets` (element coordinates) and has the shape of
    the result's tile type. Elements outside [0, shape) are never touched:
    loads return zero there and stores skip them, so ragged edges need no
    masks in the kernel.
  }];
  let arguments = (ins Tile_PtrType:$base, Variadic<Index>:$shape, Variadic<Index>:$strides,
                       Variadic<Index>:$offsets);
  let results = (outs Tile_BlockPtrType:$result);
  let assemblyFormat = [{
    $base `,` `[` $shape `]` `,` `[` $strides `]` `,` `[` $offsets `]` attr-dict `:` type($base) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tile_AdvanceOp : Tile_Op<"advance", [Pure, AllTypesMatch<["ptr", "result"]>]> {
  let summary = "Moves a block pointer by element offsets";
  let arguments = (ins Tile_BlockPtrType:$ptr, Variadic<Index>:$offsets);
  let results = (outs Tile_BlockPtrType:$result);
  let assemblyFormat = "$ptr `,` `[` $offsets `]` attr-dict `:` type($ptr)";
  let hasVerifier = 1;
}

def Tile_LoadOp : Tile_Op<"load", [MemoryEffects<[MemRead]>,
    TypesMatchWith<"result is the block pointer's tile", "ptr", "result",
                   "::llvm::cast<BlockPtrType>($_self).getTileType()">]> {
  let summary = "Loads the block (zero outside the array's shape)";
  let description = [{
    With `in_bounds` the kernel guarantees the whole block lies inside the
    array (a full interior tile): the load needs no bounds checks or masks.
    Kernels use it on their mask-free fast path.

    `contiguous = d` (with `in_bounds`) is a further promise: dim d of the
    array has unit stride, and every element at a block coordinate along d
    that is a multiple of R starts an R-element run aligned to R times the
    element size (array base aligned, other strides and the block offset
    along d multiples of R), R = `run` (a power of two, 2 when absent).
    Targets may then load such runs as one wider access (the sm_90 lowering
    does for 16-bit mma fragments).

    Without `in_bounds`, `contiguous = d` promises the same runs and that
    each lies wholly inside or wholly outside the array, so a target may
    check one element a run and load or zero the run as one (the sm_90
    lowering does for lane vectors: a quantized GEMV's block rows past N or
    K). A store's `contiguous` needs `in_bounds`.
  }];
  let arguments = (ins Tile_BlockPtrType:$ptr, UnitAttr:$in_bounds, OptionalAttr<I64Attr>:$contiguous,
                       OptionalAttr<I64Attr>:$run);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$ptr attr-dict `:` type($ptr)";
  let hasVerifier = 1;
}

def Tile_StoreOp : Tile_Op<"store", [MemoryEffects<[MemWrite]>,
    TypesMatchWith<"value is the block pointer's tile", "ptr", "value",
                   "::llvm::cast<BlockPtrType>($_self).getTileType()">]> {
  let summary = "Stores the block (elements outside the array's shape are skipped)";
  let description = [{
    `in_bounds`: as for `tile.load`, the block is known to lie inside the
    array, so the store is unmasked. `contiguous` and `run` make the same
    promise as on `tile.load` (aligned runs along a unit-stride dim), so
    targets may store such runs as one wider access (the sm_90 lowering
    does for lane-linear tiles in vectors, tile.lane_vector).
  }];
  let arguments = (ins Tile_BlockPtrType:$ptr, Tile_Tile:$value, UnitAttr:$in_bounds,
                       OptionalAttr<I64Attr>:$contiguous, OptionalAttr<I64Attr>:$run);
  let assemblyFormat = "$ptr `,` $value attr-dict `:` type($ptr)";
  let hasVerifier = 1;
}

def Tile_PrefetchOp : Tile_Op<"prefetch", [MemoryEffects<[MemRead]>]> {
  let summary = "Hints that the block will be loaded soon";
  let description = [{
    A hint with no effect on results: the block may lie partly or wholly
    outside the array (a loop prefetching ahead runs past its end). The CPU
    backend brings every cache line of the block's rows into the caches that
    `locality` names (x86: 3 = all levels, prefetcht0; 2 = L2 and beyond,
    prefetcht1; 1 = the last level, prefetcht2; 0 = non-temporal); the
    NVIDIA backend drops it.
  }];
  let arguments = (ins Tile_BlockPtrType:$ptr, DefaultValuedAttr<ConfinedAttr<I64Attr, [IntMinValue<0>, IntMaxValue<3>]>, "3">:$locality);
  let assemblyFormat = "$ptr attr-dict `:` type($ptr)";
}

def Tile_DotOp : Tile_Op<"dot", [Pure, AllTypesMatch<["c", "result"]>]> {
  let summary = "c + a x b with f32 accumulation (a: MxK, b: KxN, c: MxN), or i32 for integer operands";
  let description = [{
    `tiling` ("horizontal", "vertical" or "square") is the user's hint for how
    `assign-layouts` splits the result between warps; it overrides the
    workload detector (paper, section 3.1). "split_k" splits K instead: each
    warp multiplies its slice of K into a partial result that every warp
    holds whole, and the partial results are summed across warps
    (`distribute-to-warps` does it once after a K loop).

    Integer dots (the CPU's block-quantized weights): a is i16, b i8 or i16,
    c and the result i32, and the sums are exact (the producer keeps them
    inside i32). Their B is given in K pairs (`b_pairs`, required): b is
    [K / 2, 2 N] with element (k, n) at (k / 2, 2 n + k % 2), the form
    x86's vpmaddwd / vpdpwssd multiply (and Xe's DPAS calls VNNI), so a
    weight panel stored that way loads as whole rows. An i32 b is [K / 2, N]
    with the pair of column n in one element: K step 2 (k / 2) in its low
    16 bits, the next in its high 16 (what 4-bit weights unpacked from
    bytes in registers give without an interleave).
  }];
  let extraClassDeclaration = [{
    // B's columns per column of the result: 2 for i8 / i16 pairs side by
    // side, 1 for i32 pairs, 1 for float dots.
    int64_t bColumnsPerN() {
      return getBPairs() && !::mlir::cast<::mlir::ShapedType>(getB().getType()).getElementType().isInteger(32) ? 2 : 1;
    }
  }];
  let arguments = (ins Tile_Tile:$a, Tile_Tile:$b, Tile_Tile:$c, OptionalAttr<StrAttr>:$tiling, UnitAttr:$b_pairs);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$a `,` $b `,` $c attr-dict `:` type($a) `*` type($b) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_SegmentDotOp : Tile_Op<"segment_dot", [Pure, AllTypesMatch<["c", "result"]>]> {
  let summary = "c + the dot products of a's and b's rows in segments of G consecutive i8 elements (i32 sums)";
  let description = [{
    a and b are i8 [R, C], c and the result i32 [R, C / G]: element (r, j)
    of the result is c(r, j) + sum over k < G of a(r, G j + k) b(r, G j + k),
    G a multiple of 4 (the four-way byte dot products of NVIDIA's dp4a and
    Intel's dp4a / DPAS). The bytes are signed unless `a_unsigned` /
    `b_unsigned` says they are not (4-bit weights unpacked from nibbles).
    The sums are exact: the producer keeps them inside i32. A quantized
    GEMV multiplies activations quantized to i8 by i8 weights this way, one
    segment a block, and scales each segment's sum once (ggml's q8_1 dot
    products do the same).
  }];
  let arguments = (ins Tile_Tile:$a, Tile_Tile:$b, Tile_Tile:$c, UnitAttr:$a_unsigned, UnitAttr:$b_unsigned);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$a `,` $b `,` $c attr-dict `:` type($a) `,` type($b) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_ReduceOp : Tile_Op<"reduce", [Pure]> {
  let summary = "max, sum or argmax along one axis (optionally across the workgroup's warps)";
  let description = [{
    Removes dim `axis`. `argmax` gives the index along `axis` of the largest
    element (the lowest index among equal ones; NaN never wins) as an f32
    (exact below 2^24); it stays within a warp (no `cross_warp`), and the sm_90
    lowering keeps its lane-linear tile whole (the CPU backend does not
    lower it). In warp-level IR, `cross_warp` also combines the
    partial results of all warps (through local scratch) and `dst_warps`
    limits which warps receive the result (paper, section 3.2: paged decode).
    Without `axis` (only with `cross_warp`) the tile keeps its shape and
    elements are combined across warps. `reassoc` lets a sum be taken in any
    order (the CPU then adds halves of the row as vectors, log2 n steps,
    where it otherwise adds the elements one after another).
  }];
  let arguments = (ins Tile_FloatTile:$src, StrAttr:$kind, OptionalAttr<I64Attr>:$axis, UnitAttr:$cross_warp,
                       OptionalAttr<DenseI64ArrayAttr>:$dst_warps, UnitAttr:$reassoc);
  let results = (outs Tile_FloatTile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_ExpandDimsOp : Tile_Op<"expand_dims", [Pure]> {
  let summary = "Inserts a dim of size 1 at `axis`";
  let arguments = (ins Tile_Tile:$src, I64Attr:$axis);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_BroadcastOp : Tile_Op<"broadcast", [Pure]> {
  let summary = "Repeats size-1 dims to the result's shape";
  let arguments = (ins Tile_Tile:$src);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_ReshapeOp : Tile_Op<"reshape", [Pure]> {
  let summary = "The same elements in row-major order, in another shape";
  let description = [{
    Element i of the source in row-major order is element i of the result.
    A quantized GEMV dequantizes its weights as [blocks, block] tiles (a
    block's scale broadcast along its row) and sums them as the [1, n] rows
    its reduction takes. `assign-layouts` keeps each warp's part one run of
    the row-major order on both sides (rows over warps on one side, a
    single row's columns over warps on the other), so on the GPU, where a
    kernel without dots holds every tile lane-linear, it moves no data.
    The CPU and Xe lowerings do not take it yet.
  }];
  let arguments = (ins Tile_Tile:$src);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_SplatOp : Tile_Op<"splat", [Pure]> {
  let summary = "A tile whose elements all equal a scalar";
  let arguments = (ins AnyTypeOf<[F16, BF16, F32, I32, Index]>:$value);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$value attr-dict `:` type($value) `->` type($result)";
}

def Tile_IotaOp : Tile_Op<"iota", [Pure]> {
  let summary = "A float tile whose elements are `base` plus their index along `axis`";
  let description = [{
    Element (i, j) of a 2-D tile is `base + j` for `axis` 1 (`base + i` for
    0), as a float (exact below 2^24, the same convention as `argmax`'s
    index), so a column picked by `argmax` can be compared against it:
    sampling's top-k rounds take each picked column out of the running tile
    that way. `distribute-to-warps` and `match-target-size` move `base` to
    each warp's and each piece's block, as they do a mask's bases.
  }];
  let arguments = (ins Index:$base, I64Attr:$axis);
  let results = (outs Tile_FloatTile:$result);
  let assemblyFormat = "$base attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tile_ConvertOp : Tile_Op<"convert", [Pure]> {
  let summary = "Element type conversion: float to float or f32 to i8 (round to nearest even), signed i8 or i32 to float";
  let description = [{
    f32 -> i8 rounds to the nearest integer (ties to even); the producer
    keeps the values inside [-128, 127] (a quantizer's scaled values),
    outside it the result is undefined. i32 -> float rounds to nearest
    even; i8 -> float is exact.
  }];
  let arguments = (ins Tile_ConvertibleTile:$src);
  let results = (outs Tile_ConvertedTile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_SiluOp : Tile_Op<"silu", [Pure, AllTypesMatch<["src", "result"]>]> {
  let summary = "x * sigmoid(x), elementwise";
  let arguments = (ins Tile_FloatTile:$src);
  let results = (outs Tile_FloatTile:$result);
  let assemblyFormat = "$src attr-dict `:` type($result)";
}

def Tile_ExtractOp : Tile_Op<"extract", [Pure]> {
  let summary = "Sub-block `index` (row-major over the grid of result-shaped blocks)";
  let description = [{
    Introduced by `match-target-size` where an op needs a smaller block than
    its operand's (a dot's 8x16 A block out of a 32x32 load). Lowered to
    register sub-views, never to copies through memory.
  }];
  let arguments = (ins Tile_Tile:$src, I64Attr:$index);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$src `[` $index `]` attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_ConcatOp : Tile_Op<"concat", [Pure]> {
  let summary = "Joins tiles of one type side by side along `axis` (the inverse of extract)";
  let description = [{
    Introduced by `match-target-size` where an op needs a larger block than
    the pieces its operand was split into: a dot's [16, 16] A block made of
    two [16, 8] accumulator pieces (attention's P in P V). The result's
    `axis` dim is the operands' times their count; the other dims are theirs.
    Lowered to registers (on sm_90, in the ISA's K order two accumulator
    fragments side by side are one A fragment), never through memory.
  }];
  let arguments = (ins Variadic<Tile_Tile>:$srcs, I64Attr:$axis);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$srcs attr-dict `:` type($srcs) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_MaskOp : Tile_Op<"mask", [Pure, AllTypesMatch<["src", "result"]>]> {
  let summary = "Sets masked elements of a 2-D score tile to -inf (causal and key-length masks)";
  let description = [{
    Element (i, j) of the tile sits at row `row_base + i` and column
    `col_base + j` of the score matrix. It keeps its value when its column is
    below `limit` and, with `causal`, when its column is at most its row (the
    row is the query's absolute position); otherwise it becomes -inf, so
    softmax gives it zero weight. Attention kernels apply it only to the
    blocks on the causal diagonal or the key boundary: fully visible blocks
    run a mask-free loop body.
  }];
  let arguments = (ins Tile_FloatTile:$src, Index:$row_base, Index:$col_base, Index:$limit, UnitAttr:$causal);
  let results = (outs Tile_FloatTile:$result);
  let assemblyFormat = [{
    $src `,` `[` $row_base `,` $col_base `]` `,` $limit attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Tile_BlockLookupOp : Tile_Op<"block_lookup", [MemoryEffects<[MemRead]>]> {
  let summary = "Reads entry `index` of a block table (the physical KV block of a logical block)";
  let description = [{
    Paged attention gathers K/V blocks through a block table: the entry read
    here scales the block offset of a `make_block_ptr` into the cache.
  }];
  let arguments = (ins Tile_PtrType:$table, Index:$index);
  let results = (outs Index:$result);
  let assemblyFormat = "$table `[` $index `]` attr-dict `:` type($table)";
  let hasVerifier = 1;
}

def Tile_ArriveOp : Tile_Op<"arrive", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "The workgroup arrives at counter `index`; true in the last of `count` to arrive";
  let description = [{
    A workgroup-level op every thread executes, with the same operands.
    Once every thread of the workgroup has issued its earlier global
    stores, the workgroup adds one to the i32 `counters[index]` (once),
    releasing those stores at device scope. The result, the same in every
    thread, is true in the workgroup whose arrival brings the count to
    `count`: that workgroup has acquired the stores every earlier arrival
    released (its later loads see them) and sets the counter back to zero.
    So counters must hold zero before a launch (allocated zeroed once), and
    a launch in which all `count` workgroups arrive leaves them zero again.

    This is how the last of the programs that split a reduction finds out
    that it is last and merges the others' partial results itself (a GEMM
    whose K is split across programs), without a second launch.
  }];
  let arguments = (ins Tile_PtrType:$counters, Index:$index, Index:$count);
  let results = (outs I1:$last);
  let assemblyFormat = "$counters `[` $index `]` `of` $count attr-dict `:` type($counters)";
  let hasVerifier = 1;
}

def Tile_AllocOp : Tile_Op<"alloc", [MemoryEffects<[MemAlloc]>]> {
  let summary = "Workgroup-local buffer of `size` elements shared by the workgroup's warps";
  let description = [{
    A buffer in the workgroup's local memory (shared memory on NVIDIA GPUs,
    SLM on Intel Xe), live for the whole kernel. It is addressed like any
    buffer, through `tile.make_block_ptr` views; staging copies fill it with
    `tile.async_copy` and `tile.barrier` makes their writes visible to every
    warp. The sm_90 lowering places it in `.shared` (16-byte aligned); the
    CPU backend has no workgroup-local memory and rejects it.

    `swizzle = 128` lays the buffer out for the sm_90 warpgroup MMA (wgmma)
    to read: it is viewed as rows of 128 bytes (64 16-bit elements, unit
    stride along the row), and the 16-byte chunk c of row r is stored at
    chunk c xor (r mod 8) (the 128-byte swizzle; the buffer starts on a
    1024-byte boundary). Such a buffer is filled by `tile.async_copy` and
    read only by dots, which match-target-size makes warpgroup dots reading
    their operands from it directly (the sm_90 lowering waits for a run of
    them where it ends, so they complete where the IR has them). It may
    also take a block through `tile.store` (in bounds, contiguous along its
    rows) for `tile.tma_store` to write out: a view of dense rows whose
    width is a multiple of 64 elements, starting on a 1024-byte boundary,
    is then read as consecutive 128-byte rows in the same swizzled order.
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntPositive]>:$size, OptionalAttr<I64Attr>:$swizzle);
  let results = (outs Tile_PtrType:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tile_AsyncCopyOp : Tile_Op<"async_copy", [MemoryEffects<[MemRead, MemWrite]>,
    AllTypesMatch<["dst", "src"]>]> {
  let summary = "The whole workgroup copies a block into workgroup-local memory, asynchronously";
  let description = [{
    Every thread of the workgroup takes part (a workgroup-level op: its
    block pointers carry no layout and are not split between warps). `dst`
    is a view of a `tile.alloc` buffer, `src` a view of a global array of the
    same block shape; elements of `src` outside its array are written as
    zeros. `contiguous = d` promises that dim d has unit stride in both views
    and that every run of 8 elements along d starting at a block coordinate
    that is a multiple of 8 is aligned to 8 elements (the copy moves such
    runs, 16 bytes of 16-bit elements at a time); the block's size along d
    is a multiple of 8. With `in_bounds` the whole block lies inside `src`'s
    array. The copies a thread issued between two `tile.async_commit`s form
    a group; `tile.async_wait` waits for groups, and a `tile.barrier` after
    it makes the copied block visible to every warp.
  }];
  let arguments = (ins Tile_BlockPtrType:$dst, Tile_BlockPtrType:$src, I64Attr:$contiguous, UnitAttr:$in_bounds);
  let assemblyFormat = "$dst `,` $src attr-dict `:` type($dst)";
  let hasVerifier = 1;
}

def Tile_AsyncCommitOp : Tile_Op<"async_commit"> {
  let summary = "Closes the group of async copies issued since the last commit";
  let assemblyFormat = "attr-dict";
}

def Tile_AsyncWaitOp : Tile_Op<"async_wait"> {
  let summary = "Waits until at most `pending` committed copy groups are still in flight";
  let description = [{
    Groups complete in commit order, so after `tile.async_wait {pending = n}`
    every group but the n most recently committed has landed (for this
    thread's copies; a `tile.barrier` then covers the whole workgroup's).
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$pending);
  let assemblyFormat = "attr-dict";
}

def Tile_MBarrierInitOp : Tile_Op<"mbarrier_init", [MemoryEffects<[MemWrite]>]> {
  let summary = "Initializes a local buffer of mbarriers (one per i64 element) for tile.tma_copy";
  let description = [{
    `barriers` is a `tile.alloc` buffer of i64: each element becomes an
    mbarrier (a split arrive / wait barrier with a transaction count) whose
    phase completes once `arrivals` arrivals and every byte those arrivals
    announced have landed. One thread initializes them; the op ends with a
    workgroup barrier, so every warp sees them initialized. Phases start at
    0 and alternate parity.
  }];
  let arguments = (ins Tile_PtrType:$barriers, ConfinedAttr<I64Attr, [IntPositive]>:$arrivals);
  let assemblyFormat = "$barriers attr-dict `:` type($barriers)";
  let hasVerifier = 1;
}

def Tile_TmaCopyOp : Tile_Op<"tma_copy", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "One thread copies a 2-D box into a swizzled local buffer through a tensor map (TMA)";
  let description = [{
    `map` points at a tensor map (a 128-byte CUtensorMap in global memory,
    made by the runtime) describing a 2-D global array of 16-bit elements
    with a box of 64 elements (128 bytes) along its contiguous dim and the
    128-byte swizzle, or a 3-D one whose third dim holds planes of such
    arrays (a box one plane deep). `coords` is the box's origin, contiguous
    dim first, then the row, then the plane when there is one; elements
    outside the array (or past a plane's last row) arrive as zeros. `dst` is a view of a
    swizzled `tile.alloc` buffer at a block's origin: the box's rows land
    there as consecutive swizzled 128-byte rows, which is the layout the
    view describes when its block has as many elements as the box. The copy
    is one arrival on mbarrier `barriers[slot]` announcing the block's bytes
    (the tensor-core path: sm_90 `cp.async.bulk.tensor`); waiting on that
    barrier's phase (tile.mbarrier_wait) makes the block visible to the
    waiting thread. A workgroup-level op: one thread issues it.
  }];
  let arguments = (ins Tile_BlockPtrType:$dst, Tile_PtrType:$map, Variadic<Index>:$coords, Tile_PtrType:$barriers,
                       Index:$slot);
  let assemblyFormat = [{
    $dst `,` $map `[` $coords `]` `,` $barriers `[` $slot `]` attr-dict `:` type($dst) `,` type($map) `,` type($barriers)
  }];
  let hasVerifier = 1;
}

def Tile_TmaStoreOp : Tile_Op<"tma_store", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "The workgroup writes a local block to global memory through a tensor map (TMA)";
  let description = [{
    `src` is a view of a swizzled `tile.alloc` buffer holding a dense block
    of R rows of C columns (C a multiple of 64, row-major, starting on a
    1024-byte boundary), as the workgroup's `tile.store`s before this op
    wrote it. `map` points at a tensor map (made by the runtime) of a 2-D
    global array of 16-bit elements viewed as 64-column panels: 3-D, dims
    (64, columns / 64, rows), a box of (64, C / 64, R) and the 128-byte
    swizzle, so the box's bytes are the local block's in order.
    `coords` are the block's origin in the array (column, a multiple of 64,
    then row). Elements of the box outside the array are not written.

    Every thread's earlier local writes are fenced for the async proxy and
    a workgroup barrier joins them; then one thread issues the store (sm_90
    `cp.async.bulk.tensor` shared -> global), commits it and waits until
    the TMA unit has read the buffer, so the buffer may be reused after the
    op. A run of consecutive `tile.tma_store`s shares one fence and barrier
    before it and one wait after it. A workgroup-level op: every thread
    reaches it.
  }];
  let arguments = (ins Tile_BlockPtrType:$src, Tile_PtrType:$map, Variadic<Index>:$coords);
  let assemblyFormat = [{
    $map `[` $coords `]` `,` $src attr-dict `:` type($map) `,` type($src)
  }];
  let hasVerifier = 1;
}

def Tile_MBarrierWaitOp : Tile_Op<"mbarrier_wait", [MemoryEffects<[MemRead]>]> {
  let summary = "Every thread waits until the phase of parity `parity` of mbarrier `barriers[slot]` completes";
  let description = [{
    `parity` is 0 or 1: a barrier's phase n has parity n mod 2, so a thread
    waiting on phase n must not be more than one phase behind. After the
    wait, the bytes of the phase's tile.tma_copy are visible to the thread.
  }];
  let arguments = (ins Tile_PtrType:$barriers, Index:$slot, Index:$parity);
  let assemblyFormat = "$barriers `[` $slot `]` `,` $parity attr-dict `:` type($barriers)";
  let hasVerifier = 1;
}

def Tile_GroupDotWaitOp : Tile_Op<"group_dot_wait"> {
  let summary = "Waits until at most `pending` committed warpgroup dot groups are still in flight";
  let description = [{
    A run of warpgroup dots (sm_90 `wgmma`) is committed as one group after
    its last dot, and by default each thread waits for it right there. When
    this op ends the run (the next op after its last dot, past the extracts
    and concats between chained dots), the run's own wait is left out and
    this op's wait takes its place: with `pending = 1` in a K loop, step i's
    dots run on while the loop issues step i + 1's, and step i - 1's group
    (and the local buffers it read) is done. The accumulators of a group
    still in flight may only feed further warpgroup dots; a wait with
    `pending = 0` must precede anything else that reads them (ptxas would
    inject a wait of its own). Groups complete in commit order.
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$pending);
  let assemblyFormat = "attr-dict";
}

def Tile_BarrierOp : Tile_Op<"barrier"> {
  let summary = "Waits until every warp of the workgroup reaches it";
  let assemblyFormat = "attr-dict";
}

#endif  // STRATA_TILE_OPS
