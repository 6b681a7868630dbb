#include "ops/row_forms.h"

#include "ops/error.h"
#include "ops/reference.h"

namespace strata::ops {

namespace {
const Dim kOne{1, ""};
bool isOne(const Dim& d) { return d == kOne; }
}  // namespace

const char* rowFormName(RowForm f) {
  switch (f) {
    case RowForm::Full: return "full";
    case RowForm::Row: return "row";
    case RowForm::Col: return "col";
    case RowForm::Scalar: return "scalar";
  }
  return "?";
}

RowForm parseRowForm(const std::string& s) {
  for (RowForm f : {RowForm::Full, RowForm::Row, RowForm::Col, RowForm::Scalar})
    if (s == rowFormName(f)) return f;
  fail("unknown row form '{}' (expected full, row, col or scalar)", s);
}

std::vector<Dim> dimsOf(const Shape& s) {
  std::vector<Dim> d;
  for (int64_t v : s) d.push_back({v, ""});
  return d;
}

std::string dimsStr(const std::vector<Dim>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + d[i].str();
  return s + "]";
}

std::vector<Dim> broadcastDims(const std::vector<Dim>& a, const std::vector<Dim>& b) {
  size_t r = std::max(a.size(), b.size());
  std::vector<Dim> out(r);
  for (size_t i = 0; i < r; ++i) {
    const Dim& da = i < r - a.size() ? kOne : a[i - (r - a.size())];
    const Dim& db = i < r - b.size() ? kOne : b[i - (r - b.size())];
    if (!(da == db) && !isOne(da) && !isOne(db))
      fail("shapes {} and {} cannot be broadcast together", dimsStr(a), dimsStr(b));
    out[i] = isOne(da) ? db : da;
  }
  return out;
}

std::optional<RowForm> rowForm(const std::vector<Dim>& shape, const std::vector<Dim>& space) {
  if (space.empty()) return RowForm::Scalar;
  const size_t pad = space.size() - std::min(space.size(), shape.size());
  auto at = [&](size_t i) { return i < pad ? kOne : shape[i - pad]; };
  // A leading dim of the space that is 1 counts as both varied and broadcast.
  bool allVary = true, allBroadcast = true;
  for (size_t i = 0; i + 1 < space.size(); ++i) {
    allVary = allVary && at(i) == space[i];
    allBroadcast = allBroadcast && isOne(at(i));
  }
  bool lastVaries = at(space.size() - 1) == space.back();
  if (allVary) return lastVaries ? RowForm::Full : RowForm::Col;
  if (allBroadcast) return lastVaries ? RowForm::Row : RowForm::Scalar;
  return std::nullopt;
}

ElementwiseLaunch ElementwiseLaunch::fromJson(const nlohmann::json& a) {
  ElementwiseLaunch e;
  try {
    e.cols = a.at("cols").get<int64_t>();
    for (const auto& o : a.at("operands"))
      e.operands.emplace_back(o.at("input").get<size_t>(), parseRowForm(o.at("form").get<std::string>()));
    for (const auto& o : a.at("outputs")) e.outputs.emplace_back(o.at("full").get<bool>(), o.at("keep_last").get<bool>());
  } catch (const nlohmann::json::exception& x) {
    fail("elementwise kernel attribute {}: {}", a.dump(), x.what());
  }
  if (e.cols <= 0) fail("elementwise kernel attribute: {} columns", e.cols);
  return e;
}

ElementwiseLaunch::Shapes ElementwiseLaunch::shapes(const std::vector<Shape>& in) const {
  Shape space;
  for (auto [i, form] : operands) {
    if (i >= in.size()) fail("operand {} of {} inputs", i, in.size());
    space = broadcastShapes(space, in[i]);
  }
  if (space.empty() || space.back() != cols)
    fail("operands broadcast to {}; the kernel was built for rows of {}", shapeStr(space), cols);
  Shapes s;
  s.rows = numel(space) / cols;
  // Forms coincide along a dim of 1 (a [1, C] full operand is also a row).
  auto varyRows = [](RowForm f) { return f == RowForm::Full || f == RowForm::Col; };
  auto varyCols = [](RowForm f) { return f == RowForm::Full || f == RowForm::Row; };
  for (auto [i, planned] : operands) {
    std::optional<RowForm> f = rowForm(dimsOf(in[i]), dimsOf(space));
    if (!f || (s.rows > 1 && varyRows(*f) != varyRows(planned)) || (cols > 1 && varyCols(*f) != varyCols(planned)))
      fail("operand {} is {} in the space {}; the kernel was built for a {} operand", i, shapeStr(in[i]),
           shapeStr(space), rowFormName(planned));
  }
  for (auto [full, keepLast] : outputs) {
    Shape o = space;
    if (!full) {
      o.pop_back();
      if (keepLast) o.push_back(1);
    }
    s.outputs.push_back(o);
  }
  return s;
}

}  // namespace strata::ops
