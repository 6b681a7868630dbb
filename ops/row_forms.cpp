#include "ops/row_forms.h"

#include "ops/error.h"

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

}  // namespace strata::ops
