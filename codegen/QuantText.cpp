#include "codegen/QuantText.h"

#include <fmt/format.h>

namespace strata::tile {

std::string QuantBlockText::xShape() const { return fmt::format("{}x{}", KB, Wd()); }
std::string QuantBlockText::intT() const { return fmt::format("tensor<{}xi8>", xShape()); }
std::string QuantBlockText::colT(const std::string& dt) const { return fmt::format("tensor<{}x1x{}>", KB, dt); }

std::string QuantBlockText::constants() const {
  return nibbles ? fmt::format("  %c15b = arith.constant dense<15> : {0}\n  %c4b = arith.constant dense<4> : {0}\n", intT())
                 : "";
}

std::string QuantBlockText::loadColumn(std::string& body, const std::string& name, const std::string& ptr,
                                       const std::string& dt, const std::string& attrs) const {
  body += fmt::format("    %{n}l = tile.load {p}{a} : !tile.block_ptr<{T}>\n", fmt::arg("n", name), fmt::arg("p", ptr),
                      fmt::arg("a", attrs), fmt::arg("T", colT(dt)));
  return "%" + name + "l";
}

std::string QuantBlockText::column(std::string& body, const std::string& name, const std::string& ptr,
                                   const std::string& dt, const std::string& attrs) const {
  return widenColumn(body, name, loadColumn(body, name, ptr, dt, attrs), dt);
}

std::string QuantBlockText::widenColumn(std::string& body, const std::string& name, const std::string& raw,
                                        const std::string& dt) const {
  if (dt == "f32") return raw;
  body += fmt::format("    %{n}f = tile.convert {r} : {T} -> {F}\n", fmt::arg("n", name), fmt::arg("r", raw),
                      fmt::arg("T", colT(dt)), fmt::arg("F", colT("f32")));
  return "%" + name + "f";
}

QuantBlockText::Loaded QuantBlockText::load(std::string& body, const std::string& id, const std::string& ints,
                                            const std::string& scales, const std::string& offs,
                                            const std::string& colAttrs, const std::string& intAttrs) const {
  Loaded l;
  l.scales = loadColumn(body, "sc" + id, scales, scaleDt(), colAttrs);
  if (offsets) l.offsets = loadColumn(body, "of" + id, offs, scaleDt(), colAttrs);
  body += fmt::format("    %q{id} = tile.load {p}{a} : !tile.block_ptr<{B}>\n", fmt::arg("id", id), fmt::arg("p", ints),
                      fmt::arg("a", intAttrs), fmt::arg("B", intT()));
  l.ints = "%q" + id;
  return l;
}

std::vector<std::string> QuantBlockText::widenLoaded(std::string& body, const std::string& id, const Loaded& l) const {
  const std::string F = fmt::format("tensor<{}xf32>", xShape());
  // A column of scales or offsets, in f32, broadcast along its block rows.
  auto column = [&](const std::string& name, const std::string& raw) {
    const std::string v = widenColumn(body, name, raw, scaleDt());
    body += fmt::format("    %{n} = tile.broadcast {v} : {C} -> {F}\n", fmt::arg("n", name), fmt::arg("v", v),
                        fmt::arg("C", colT("f32")), fmt::arg("F", F));
    return "%" + name;
  };
  const std::string scale = column("sc" + id, l.scales);
  const std::string off = offsets ? column("of" + id, l.offsets) : "";
  std::vector<std::string> halvesOf;
  if (nibbles) {
    body += fmt::format("    %lo{id} = arith.andi {q}, %c15b : {B}\n    %hi{id} = arith.shrui {q}, %c4b : {B}\n",
                        fmt::arg("id", id), fmt::arg("q", l.ints), fmt::arg("B", intT()));
    halvesOf = {"%lo" + id, "%hi" + id};
  } else {
    halvesOf = {l.ints};
  }
  std::vector<std::string> out;
  for (size_t h = 0; h < halvesOf.size(); ++h) {
    const std::string v = fmt::format("{}_{}", id, h);
    body += fmt::format("    %wi{v} = tile.convert {i} : {B} -> {F}\n    %ws{v} = arith.mulf %wi{v}, {sc} : {F}\n",
                        fmt::arg("v", v), fmt::arg("i", halvesOf[h]), fmt::arg("B", intT()), fmt::arg("F", F),
                        fmt::arg("sc", scale));
    std::string wv = "%ws" + v;
    if (!off.empty()) {
      body += fmt::format("    %wo{v} = arith.addf {w}, {o} : {F}\n", fmt::arg("v", v), fmt::arg("w", wv), fmt::arg("o", off),
                          fmt::arg("F", F));
      wv = "%wo" + v;
    }
    out.push_back(wv);
  }
  return out;
}

std::vector<std::string> QuantBlockText::widen(std::string& body, const std::string& id, const std::string& ints,
                                               const std::string& scales, const std::string& offs,
                                               const std::string& colAttrs, const std::string& intAttrs) const {
  return widenLoaded(body, id, load(body, id, ints, scales, offs, colAttrs, intAttrs));
}

}  // namespace strata::tile
