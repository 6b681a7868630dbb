// Tile IR text (no MLIR here) that widens llama.cpp's weight blocks in
// their GPU form (abi::gpuInt8Form: i8 integers, for 4-bit formats a pair
// of values a byte, value i low and value i + Q/2 high; one f16 scale a
// block, as the file holds it or the K formats' products rounded, or f32
// rows; offsets where the format has them) into f32 tiles. The quantized GEMV (GemvKernel.cpp) and the
// quantized row gather (DataMovementKernels.cpp) read blocks through it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::tile {

// A tile of `KB` block rows of one weight row: integers [KB, Wd] i8 (Wd =
// Q values, or Q / 2 bytes of pairs), scales and offsets [KB, 1].
struct QuantBlockText {
  int64_t Q = 32;
  bool nibbles = false, offsets = false;
  bool fileScales = false;  // f16 scales as the file holds them, else f32
  int64_t KB = 1;

  int64_t halves() const { return nibbles ? 2 : 1; }
  int64_t Wd() const { return Q / halves(); }
  std::string scaleDt() const { return fileScales ? "f16" : "f32"; }
  std::string xShape() const;                      // "<KB>x<Wd>"
  std::string intT() const;                        // the integers' tensor type
  std::string colT(const std::string& dt) const;   // a [KB, 1] column of `dt`
  // The constants widen() uses (nibble masks), defined once per function.
  std::string constants() const;
  // Appends to `body` the load of a [KB, 1] column of `dt` (scales,
  // offsets) through `ptr` with `attrs`, widened to f32 (%<name>l, or
  // %<name>f when widened); returns its name.
  std::string column(std::string& body, const std::string& name, const std::string& ptr, const std::string& dt,
                     const std::string& attrs) const;
  // The load alone (%<name>l, returned).
  std::string loadColumn(std::string& body, const std::string& name, const std::string& ptr, const std::string& dt,
                         const std::string& attrs) const;
  // The column `raw` of `dt` widened to f32 (%<name>f; `raw` itself for f32).
  std::string widenColumn(std::string& body, const std::string& name, const std::string& raw,
                          const std::string& dt) const;
  // A block tile as loaded: its integers (intT) and its scale and offset
  // columns (colT(scaleDt()); offsets empty without them), SSA names.
  struct Loaded {
    std::string ints, scales, offsets;
  };
  // Appends to `body` the loads through the block pointers `ints`, `scales`
  // and `offs` (empty without offsets); `id` makes the names unique;
  // `colAttrs` and `intAttrs` go on the column and integer loads.
  Loaded load(std::string& body, const std::string& id, const std::string& ints, const std::string& scales,
              const std::string& offs, const std::string& colAttrs, const std::string& intAttrs) const;
  // Appends to `body` the widening, scaling and offset of loaded blocks `l`;
  // returns the f32 [KB, Wd] tiles, one per half (values [0, Wd) of each
  // block, then [Wd, Q)). `id` makes the names unique (as load's).
  std::vector<std::string> widenLoaded(std::string& body, const std::string& id, const Loaded& l) const;
  // load, then widenLoaded.
  std::vector<std::string> widen(std::string& body, const std::string& id, const std::string& ints,
                                 const std::string& scales, const std::string& offs, const std::string& colAttrs,
                                 const std::string& intAttrs) const;
};

}  // namespace strata::tile
