// Tile IR text for kernels whose buffers hold a storage type (f32, f16 or
// bf16) while the arithmetic is f32: every load of a 16-bit buffer is
// widened right after it and every store narrowed right before it (round to
// nearest even), so the rest of a kernel's text is the same for all three.
// Shared by the region kernel emitters; no MLIR here.
#pragma once

#include <string>

namespace strata::tile {

struct StorageText {
  std::string dtype = "f32";

  // Throws strata::Error unless dtype is f32, f16 or bf16 (`kernel` names
  // the emitter in the message).
  void check(const std::string& kernel) const;
  bool sixteenBit() const { return dtype != "f32"; }

  // "tensor<{shape}x{dtype}>", "!tile.block_ptr<tensor<...>>", "!tile.ptr<dtype>".
  std::string tensor(const std::string& shape) const;
  std::string blockPtr(const std::string& shape) const;
  std::string ptr() const;

  // Lines defining `%name` as the f32 tile [shape] loaded through block
  // pointer `ptr`; `attrs` (" {in_bounds}" or empty) go on the load.
  std::string load(const std::string& name, const std::string& ptr, const std::string& shape,
                   const std::string& attrs = "") const;
  // Lines storing the f32 tile `value` [shape] through `ptr`; `attrs` as
  // for load.
  std::string store(const std::string& ptr, const std::string& value, const std::string& shape,
                    const std::string& attrs = "") const;
  // `in` (a tile of this storage type, [shape]) in f32: appends the convert
  // defining `%name` to `text` and returns "%name"; f32 storage returns `in`.
  std::string widen(std::string& text, const std::string& name, const std::string& in,
                    const std::string& shape) const;
  // The reverse: `in` (an f32 tile, [shape]) in this storage type, through
  // a convert defining `%name` for 16-bit storage.
  std::string narrow(std::string& text, const std::string& name, const std::string& in,
                     const std::string& shape) const;
};

}  // namespace strata::tile
