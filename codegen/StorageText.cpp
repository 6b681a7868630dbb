#include "codegen/StorageText.h"

#include <fmt/format.h>

#include "ops/error.h"

namespace strata::tile {

void StorageText::check(const std::string& kernel) const {
  if (dtype != "f32" && dtype != "f16" && dtype != "bf16")
    fail("{} kernel: storage type '{}' (expected f32, f16 or bf16)", kernel, dtype);
}

std::string StorageText::tensor(const std::string& shape) const { return fmt::format("tensor<{}x{}>", shape, dtype); }
std::string StorageText::blockPtr(const std::string& shape) const {
  return fmt::format("!tile.block_ptr<{}>", tensor(shape));
}
std::string StorageText::ptr() const { return fmt::format("!tile.ptr<{}>", dtype); }

std::string StorageText::widen(std::string& text, const std::string& name, const std::string& in,
                               const std::string& shape) const {
  if (!sixteenBit()) return in;
  text += fmt::format("    %{} = tile.convert {} : {} -> tensor<{}xf32>\n", name, in, tensor(shape), shape);
  return "%" + name;
}

std::string StorageText::load(const std::string& name, const std::string& ptr, const std::string& shape,
                              const std::string& attrs) const {
  const std::string raw = sixteenBit() ? name + "_s" : name;
  std::string text = fmt::format("    %{} = tile.load {}{} : {}\n", raw, ptr, attrs, blockPtr(shape));
  widen(text, name, "%" + raw, shape);
  return text;
}

std::string StorageText::narrow(std::string& text, const std::string& name, const std::string& in,
                                const std::string& shape) const {
  if (!sixteenBit()) return in;
  text += fmt::format("    %{} = tile.convert {} : tensor<{}xf32> -> {}\n", name, in, shape, tensor(shape));
  return "%" + name;
}

std::string StorageText::store(const std::string& ptr, const std::string& value, const std::string& shape,
                               const std::string& attrs) const {
  std::string text;
  // Named after the pointer: value may be a result group member (%r#0).
  const std::string v = narrow(text, ptr.substr(1) + "_val", value, shape);
  return text + fmt::format("    tile.store {}, {}{} : {}\n", ptr, v, attrs, blockPtr(shape));
}

}  // namespace strata::tile
