//===- Passes.td - tile IR passes ----------------------------------------===//
#ifndef STRATA_TILE_PASSES
#define STRATA_TILE_PASSES

include "mlir/Pass/PassBase.td"

def AssignLayouts : Pass<"assign-layouts", "::mlir::func::FuncOp"> {
  let summary = "Choose the root op's layout from the workload and propagate it in one step";
  let description = [{
    Detects the kernel's workload and picks the encoding of its root op
    (ML-Triton, section 2.1):
    - gemm (one dot): the dot result, square tiling (warps as close to a
      square grid as the shape allows, more warps on the larger dim);
    - attention (a dot whose A operand is computed from another dot, i.e.
      FlashAttention-2): the last dot's result, horizontal tiling (rows over
      warps, K/V read by every warp);
    - paged decode (K/V read through `tile.block_lookup`): the first dot
      (q k^T), vertical tiling, so each warp owns a slice of the KV blocks
      and reductions over them cross warps;
    - reduction (no dot): the reduced tile, rows over warps (a single row
      spreads its columns over the warps; the reduce then crosses warps);
    - elementwise (no dot): the stored tile, rows over warps.
    A `tiling` attribute on a dot (horizontal | vertical | square) overrides
    the detector; `split_k` lays the dot's A operand out with K over warps
    (vertical on A), so the result is held whole by every warp as a partial
    sum. The encoding then flows along def-use chains in both
    directions: dot operands get `dot_op` encodings of the result's, reduce
    results `slice`, everything else (loads, stores, block pointers,
    elementwise ops, loop-carried values) shares its neighbours' encoding.
    The warp count is the function's `tile.num_warps` attribute or the
    `num-warps` option.
  }];
  let options = [Option<"numWarps", "num-warps", "int64_t", "0",
                        "warps per workgroup (0: the function's tile.num_warps attribute)">];
  let dependentDialects = ["::strata::tile::TileDialect"];
}

def DistributeToWarps : Pass<"distribute-to-warps", "::mlir::func::FuncOp"> {
  let summary = "Turn workgroup-level tile IR into what one warp computes";
  let description = [{
    Every encoded tile becomes its per-warp block (the equivalent blocked
    layout's sizePerWarp on split dims). Block pointer offsets gain
    `coord(warp_id) * sizePerWarp` on split dims, where the warp's grid
    coordinate is its linear `tile.warp_id` in row-major order of
    warpsPerCTA. A reduce along a dim split over warps becomes a local reduce
    with `cross_warp`; a dot whose K dim is split over warps computes its
    partial product and adds the cross-warp sum of it (paged decode) — or,
    when it only accumulates a K loop's carried value (split_k GEMMs), keeps
    the warp's partial sum in the loop (started from zeros) and adds the
    cross-warp sum once after the loop to the loop's initial value.
    Splat constants shrink to the warp's block. Encodings stay on the types
    (ML-Triton, Listing 3).
  }];
  let dependentDialects = ["::strata::tile::TileDialect", "::mlir::arith::ArithDialect"];
}

def MatchTargetSize : Pass<"match-target-size", "::mlir::func::FuncOp"> {
  let summary = "Split per-warp tile ops to the target's intrinsic sizes";
  let description = [{
    Reads the target's uArch table (cpu-avx2, cpu-avx512, sm_90, xe:pvc, xe:bmg, xe:dg2) and
    splits loads, stores and block pointers to at most the max 2-D load,
    dots to the intrinsic dot shape, and the values in their def-use chains
    consistently (accumulators and everything computed from them in dot
    result pieces). Where a dot needs a smaller block than its operand was
    loaded in, `tile.extract` takes the sub-block (ML-Triton, Listing 4).
    Encodings are dropped: each tile is now one intrinsic's worth of data.
    On a GPU target (lanes > 1) a function without dots is left whole: its
    tiles are spread over the warp's lanes by the lowering, not split.
  }];
  let options = [
    Option<"target", "target", "std::string", "\"cpu-avx2\"", "uArch table: cpu-avx2, cpu-avx512, sm_90 or xe">,
    ListOption<"maxLoad", "max-load", "int64_t", "override the max 2-D load block (rows,cols)">,
    ListOption<"maxDot", "max-dot", "int64_t", "override the intrinsic dot shape (m,n,k)">,
  ];
  let dependentDialects = ["::strata::tile::TileDialect"];
}

def ConvertTileToVector : Pass<"convert-tile-to-vector", "::mlir::func::FuncOp"> {
  let summary = "CPU backend: intrinsic-sized tile IR -> vector, memref and scf";
  let description = [{
    The host CPU's lowering of per-warp, target-sized tile IR. Tiles become
    vectors; `!tile.ptr<T>` arguments become `memref<?xT>`; a block pointer
    becomes a strided view that starts at the block (sizes = what is left of
    the array, so out-of-range elements are masked by `vector.transfer_read`
    / `transfer_write`, which read zero and skip writes); a prefetch becomes
    one `memref.prefetch` per cache line of each block row (line size from
    the uArch row named by the function's `tile.target`); dots become
    `vector.contract` (f16/bf16 operands are widened to f32), integer dots
    (B in K pairs) x86's `pmaddwd` intrinsic per A row and K pair (`vnni`:
    `vpdpwssd`); extracts are
    register sub-vectors. Warps of a workgroup are one register block each
    and run one after another: the body is wrapped in a loop over
    `tile.warp_id`, and the function gains three trailing `index` arguments,
    the program ids. Cross-warp reductions need more than one warp in flight
    and are rejected (the CPU kernels split K/V across workgroups instead).
  }];
  let options = [
    Option<"vnni", "vnni", "bool", /*default=*/"false",
           "Integer dots accumulate through VNNI's vpdpwssd (AVX-512 VNNI / AVX-VNNI): one instruction for "
           "pmaddwd and its add, which LLVM does not fuse once it has reassociated the sums">,
  ];
  let dependentDialects = ["::mlir::vector::VectorDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect", "::mlir::math::MathDialect", "::mlir::scf::SCFDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def ConvertTileToXeVM : Pass<"convert-tile-to-xevm", "::mlir::ModuleOp"> {
  let summary = "Xe backend: DPAS-sized per-sub-group tile IR -> per-lane XeVM, vector and scf";
  let description = [{
    The Intel Xe lowering of per-sub-group tile IR after match-target-size
    with a sub-group-16 Xe row (xe:pvc, xe:bmg). Every tile is [R, 16 k]:
    lane l holds column l of each 16-column block, a vector of R k elements
    (block-major), which is what 2D block loads leave in registers and what
    DPAS takes (A [8, 16], B [16, 16], C [8, 16]). Loads and stores use
    `xevm.blockload2d` / `xevm.blockstore2d` (VNNI-transformed for a dot's
    B operand) when the array meets the 2D block rules, checked at run time,
    and per-lane accesses bounded by the array otherwise; dots become
    `xevm.mma`; extracts, concats and row broadcasts shuffle within the
    lane. `!tile.ptr<T>` arguments become `!llvm.ptr<1>`, block pointers
    `vector<8xi64>` (base, shape, strides, offsets, element bytes); program
    ids are work-group ids, the warp id the sub-group id; a 1-D [16 k] tile
    is one row. Column tiles ([R, 1], [1]) are held whole by every lane;
    a row reduction [1, 16 k] -> [1] (sum, max) combines the lane's
    elements, then the sub-group's through OpenCL's sub_group_reduce (the
    pass runs on the module: it declares that built-in); a block_lookup is
    one global load every lane makes. Reductions of
    several rows or across sub-groups, masks and workgroup-local memory are
    not lowered yet (an error says which op). `block-io=always` drops the run-time check and the per-lane
    path, `block-io=never` the block instructions (tests use them to prove
    each path alone).
  }];
  let options = [Option<"blockIo", "block-io", "std::string", "\"auto\"",
                        "auto: 2D block IO where the array meets its rules (checked at run time); always: never check; never: per-lane accesses only">];
  let dependentDialects = ["::mlir::xevm::XeVMDialect", "::mlir::LLVM::LLVMDialect", "::mlir::vector::VectorDialect",
                           "::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect", "::mlir::math::MathDialect"];
}

def ConvertTileToNVVM : Pass<"convert-tile-to-nvvm", "::mlir::ModuleOp"> {
  let summary = "sm_90 backend: mma-sized per-warp tile IR -> per-lane NVVM, memref and scf";
  let description = [{
    The NVIDIA lowering of per-warp tile IR after match-target-size with the
    sm_90 row. Every tile is an mma.sync m16n8k16 fragment held by the warp's
    32 lanes: A [16, 16] (8 elements per lane), B [16, 8] or an unsplit
    [16, 16] (4 or 8), C [16, 8] (4), and broadcast / expand_dims sources of
    those with the broadcast dimension at coordinate 0. The fragment of each
    tile follows from its uses (dot operands fix it; extracts, elementwise
    ops, scf loops and ifs and broadcasts carry it); a tile used as two
    different fragments, or shaped unlike its fragment, is an error.
    Tiles become per-lane vectors; `!tile.ptr<T>` arguments become
    `memref<?xT>` and block pointers strided views (as on the CPU); loads
    and stores address each lane element, guarded by the view's sizes unless
    `in_bounds`; dots become `nvvm.mma.sync` (f16 / bf16 operands, f32
    accumulators); program ids are `%ctaid`, the warp id `%tid.x / 32`. The
    function keeps `tile.num_warps` (a block runs 32 x num_warps threads);
    the backend marks the lowered `llvm.func` as an `nvvm.kernel` with it.

    A function without dots (row-wise kernels: RMSNorm, RoPE) holds every
    tile lane-linear instead: element i of lane l is the tile's linear index
    32 i + l (each of a warp's accesses contiguous), a single element is held
    by every lane; a round that does not fill the warp is guarded by the
    lane id. `tile.reduce` of a whole tile combines each lane's elements and
    then shuffles (five `shfl.sync.bfly` steps), leaving the result in every
    lane; a broadcast of a single element fills the lane's vector; a single
    element is stored by lane 0. `math.exp` becomes ex2 of x log2 e.

    In a function with dots, a `tile.reduce` along axis 1 or 0 of an
    accumulator fragment (softmax's row max and sum) combines the lane's
    own elements of each row (column), then the lanes of the row (4:
    shuffles by 1, 2) or column (8: by 4, 8, 16); the result is the
    accumulator fragment with that coordinate collapsed, which expand_dims
    and broadcast carry back unchanged.

    A cross-warp `tile.reduce` (no axis: every warp holds the whole tile,
    e.g. the partial sums of a split_k dot) goes through shared memory:
    every warp writes its lane elements to a scratch block (element i of
    lane l of warp w at (w n + i) 32 + l, n elements per lane: every warp
    holds the same fragment, so equal indices are equal coordinates, and a
    warp's accesses are contiguous), a barrier, each warp combines the
    values of all warps, a barrier (the scratch is reused). The scratch is
    one `memref.global` in address space 3 per kernel
    (`@<kernel>_scratch`), sized for its largest cross-warp reduction; this
    is why the pass runs on the module.
  }];
  let dependentDialects = ["::mlir::vector::VectorDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect", "::mlir::math::MathDialect", "::mlir::scf::SCFDialect",
                           "::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect"];
}

def LegalizeBf16Storage : Pass<"legalize-bf16-storage", "::mlir::ModuleOp"> {
  let summary = "CPU backend: carry bf16 values that only move (load, store, shuffle) as i16";
  let description = [{
    Runs on the LLVM dialect, after `arith-expand{include-bf16}` has turned
    every bf16 conversion into integer arithmetic (an extension is a shift
    of the 16 bits into an i32; a truncation rounds to nearest even in
    integers). What is left of bf16 only moves: loads, stores, masked and
    gathered accesses, vector shuffles, element inserts / extracts,
    aggregates, selects, constants and block arguments. The x86 code
    generator without AVX512-BF16 would still legalize such moves through
    f32 and call `__truncsfbf2`, which neither the JIT nor a kernel library
    has; carried as i16 they are plain 16-bit moves. Every bf16 value
    becomes i16 of the same shape (vectors and arrays of them too), a bf16
    constant keeps its bits, and the bitcasts between the two become
    no-ops and disappear. A bf16 value used by any other op (arithmetic the
    expansion did not remove) is an error naming the op.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif  // STRATA_TILE_PASSES
