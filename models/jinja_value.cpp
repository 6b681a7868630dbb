// jinja::Value: Python's semantics for the values a chat template sees
// (truthiness, str(), repr(), ==, json.dumps).
#include <cmath>

#include <fmt/format.h>

#include "models/jinja.h"
#include "ops/error.h"

namespace strata::models::jinja {

Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}
Value::Value(bool b) : kind_(Kind::Bool), b_(b) {}
Value::Value(int64_t i) : kind_(Kind::Int), i_(i) {}
Value::Value(double f) : kind_(Kind::Float), f_(f) {}
Value::Value(std::string s) : kind_(Kind::String), s_(std::move(s)) {}
Value Value::list(List items) {
  Value v;
  v.kind_ = Kind::List;
  v.list_ = std::make_shared<List>(std::move(items));
  return v;
}
Value Value::dict(Dict items) {
  Value v;
  v.kind_ = Kind::Dict;
  v.dict_ = std::make_shared<Dict>(std::move(items));
  return v;
}

Value Value::fromJson(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      return u > (uint64_t)INT64_MAX ? Value((double)u) : Value((int64_t)u);
    }
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List items;
      for (const auto& e : j) items.push_back(fromJson(e));
      return list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict items;
      for (const auto& [k, e] : j.items()) items.emplace_back(k, fromJson(e));
      return dict(std::move(items));
    }
    default: return Value();
  }
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return b_;
    case Kind::Int: return i_ != 0;
    case Kind::Float: return f_ != 0;
    case Kind::String: return !s_.empty();
    case Kind::List: return !list_->empty();
    case Kind::Dict: return !dict_->empty();
  }
  return false;
}

const char* Value::kindName() const {
  switch (kind_) {
    case Kind::Undefined: return "undefined";
    case Kind::None: return "none";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "string";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
  }
  return "?";
}

namespace {

// Python's repr(float): the shortest text that reads back, with ".0" on
// integral values.
std::string floatText(double f, bool json) {
  if (std::isnan(f)) return json ? "NaN" : "nan";
  if (std::isinf(f)) return f > 0 ? (json ? "Infinity" : "inf") : (json ? "-Infinity" : "-inf");
  std::string s = fmt::format("{}", f);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string pyQuote(const std::string& s) {
  char q = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == (unsigned char)q) out += std::string("\\") + q;
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += (char)c;
  }
  return out + q;
}

void jsonString(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) out += fmt::format("\\u{:04x}", c);
        else out += (char)c;
    }
  }
  out += '"';
}

void dumpJson(std::string& out, const Value& v, int indent, int depth) {
  auto newline = [&](int d) {
    if (indent < 0) return;
    out += '\n';
    out.append((size_t)indent * d, ' ');
  };
  const char* comma = indent < 0 ? ", " : ",";
  switch (v.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None: out += "null"; return;
    case Value::Kind::Bool: out += v.boolean() ? "true" : "false"; return;
    case Value::Kind::Int: out += std::to_string(v.integer()); return;
    case Value::Kind::Float: out += floatText(v.number(), true); return;
    case Value::Kind::String: jsonString(out, v.str()); return;
    case Value::Kind::List: {
      if (v.items().empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i) out += comma;
        newline(depth + 1);
        dumpJson(out, v.items()[i], indent, depth + 1);
      }
      newline(depth);
      out += ']';
      return;
    }
    case Value::Kind::Dict: {
      if (v.entries().empty()) {
        out += "{}";
        return;
      }
      out += '{';
      bool first = true;
      for (const auto& [k, e] : v.entries()) {
        if (!first) out += comma;
        first = false;
        newline(depth + 1);
        jsonString(out, k);
        out += ": ";
        dumpJson(out, e, indent, depth + 1);
      }
      newline(depth);
      out += '}';
      return;
    }
  }
}

}  // namespace

std::string Value::repr() const {
  switch (kind_) {
    case Kind::String: return pyQuote(s_);
    case Kind::List: {
      std::string out = "[";
      for (size_t i = 0; i < list_->size(); ++i) out += (i ? ", " : "") + (*list_)[i].repr();
      return out + "]";
    }
    case Kind::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : *dict_) {
        out += (first ? "" : ", ") + pyQuote(k) + ": " + v.repr();
        first = false;
      }
      return out + "}";
    }
    default: return toString();
  }
}

std::string Value::toString() const {
  switch (kind_) {
    case Kind::Undefined: return "";
    case Kind::None: return "None";
    case Kind::Bool: return b_ ? "True" : "False";
    case Kind::Int: return std::to_string(i_);
    case Kind::Float: return floatText(f_, false);
    case Kind::String: return s_;
    default: return repr();
  }
}

bool Value::operator==(const Value& o) const {
  if (isNumber() && o.isNumber()) {
    if (kind_ == Kind::Int && o.kind_ == Kind::Int) return i_ == o.i_;
    return number() == o.number();
  }
  // Python: True == 1.
  if (kind_ == Kind::Bool && o.isNumber()) return Value((int64_t)b_) == o;
  if (o.kind_ == Kind::Bool && isNumber()) return *this == Value((int64_t)o.b_);
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return true;
    case Kind::Bool: return b_ == o.b_;
    case Kind::String: return s_ == o.s_;
    case Kind::List: return *list_ == *o.list_;
    case Kind::Dict: {
      if (dict_->size() != o.dict_->size()) return false;
      for (const auto& [k, v] : *dict_)
        if (!(o.get(k) == v) || o.get(k).isUndefined()) return false;
      return true;
    }
    default: return false;
  }
}

Value Value::get(const std::string& key) const {
  if (kind_ != Kind::Dict) return Value();
  for (const auto& [k, v] : *dict_)
    if (k == key) return v;
  return Value();
}

void Value::set(const std::string& key, Value v) {
  if (kind_ != Kind::Dict) fail("cannot set '{}' on a {}", key, kindName());
  for (auto& [k, e] : *dict_)
    if (k == key) {
      e = std::move(v);
      return;
    }
  dict_->emplace_back(key, std::move(v));
}

std::string Value::toJson(int indent) const {
  std::string out;
  dumpJson(out, *this, indent, 0);
  return out;
}

}  // namespace strata::models::jinja
