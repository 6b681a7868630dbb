// Rendering a parsed Jinja template: scopes (a for loop's body has its own,
// as in jinja2, which is why templates keep counters in a namespace),
// expressions with Python's semantics, and the filters, tests, methods and
// globals chat templates call.
#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>

#include <fmt/format.h>

#include "models/jinja_ast.h"
#include "ops/error.h"

namespace strata::models::jinja {

namespace {

enum class Flow { Normal, Break, Continue };

// Code point boundaries of a UTF-8 string (Python indexes strings by code point).
std::vector<size_t> codePoints(const std::string& s) {
  std::vector<size_t> at;
  for (size_t i = 0; i < s.size(); ++i)
    if (((unsigned char)s[i] & 0xC0) != 0x80) at.push_back(i);
  return at;
}

std::string stripChars(const std::string& s, const std::string& chars, bool left, bool right) {
  auto isStrip = [&](char c) {
    return chars.empty() ? std::isspace((unsigned char)c) != 0 : chars.find(c) != std::string::npos;
  };
  size_t b = 0, e = s.size();
  if (left)
    while (b < e && isStrip(s[b])) ++b;
  if (right)
    while (e > b && isStrip(s[e - 1])) --e;
  return s.substr(b, e - b);
}

class Renderer {
 public:
  Renderer(const std::string& origin, const Value& context) : origin_(origin) {
    scopes_.emplace_back();
    if (context.isDict())
      for (const auto& [k, v] : context.entries()) scopes_.back()[k] = v;
  }

  std::string run(const Node& root) {
    exec(root);
    return std::move(out_);
  }

 private:
  [[noreturn]] void error(int line, const std::string& what) const {
    fail("{} line {}: {}", origin_, line, what);
  }

  // ---- statements ----

  Flow exec(const Node& n) {
    switch (n.kind) {
      case Node::Kind::Body:
        for (const auto& c : n.body)
          if (Flow f = exec(*c); f != Flow::Normal) return f;
        return Flow::Normal;
      case Node::Kind::Text: emit(n.text, n.line); return Flow::Normal;
      case Node::Kind::Output: emit(eval(*n.expr).toString(), n.line); return Flow::Normal;
      case Node::Kind::If:
        for (const auto& [cond, body] : n.branches)
          if (!cond || eval(*cond).truthy()) return exec(*body);
        return Flow::Normal;
      case Node::Kind::For: return execFor(n);
      case Node::Kind::Set: {
        Value v = eval(*n.expr);
        if (n.targets.size() == 1) {
          scopes_.back()[n.targets[0]] = std::move(v);
        } else {
          Value obj = lookup(n.targets[0]);
          if (!obj.isDict()) error(n.line, fmt::format("cannot set '{}.{}': '{}' is a {}, not a namespace",
                                                       n.targets[0], n.targets[1], n.targets[0], obj.kindName()));
          obj.set(n.targets[1], std::move(v));
        }
        return Flow::Normal;
      }
      case Node::Kind::SetBlock: {
        std::string saved = std::move(out_);
        out_.clear();
        for (const auto& c : n.body) exec(*c);
        std::string captured = std::move(out_);
        out_ = std::move(saved);
        scopes_.back()[n.targets[0]] = Value(std::move(captured));
        return Flow::Normal;
      }
      case Node::Kind::Break: return Flow::Break;
      case Node::Kind::Continue: return Flow::Continue;
    }
    return Flow::Normal;
  }

  Flow execFor(const Node& n) {
    Value seq = eval(*n.expr);
    std::vector<Value> items = iterate(seq, n.line);
    auto bind = [&](const Value& item) {
      auto& scope = scopes_.back();
      if (n.targets.size() == 1) {
        scope[n.targets[0]] = item;
        return;
      }
      if (!item.isList() || item.items().size() != n.targets.size())
        error(n.line, fmt::format("cannot unpack a {} into {} loop variables", item.kindName(), n.targets.size()));
      for (size_t k = 0; k < n.targets.size(); ++k) scope[n.targets[k]] = item.items()[k];
    };
    if (n.filter) {  // the filter sees each item, and loop.* counts what passes
      std::vector<Value> kept;
      for (const Value& item : items) {
        scopes_.emplace_back();
        bind(item);
        bool keep = eval(*n.filter).truthy();
        scopes_.pop_back();
        if (keep) kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      if (n.elseBody) exec(*n.elseBody);
      return Flow::Normal;
    }
    const int64_t len = (int64_t)items.size();
    for (int64_t i = 0; i < len; ++i) {
      if (++iterations_ > kMaxIterations) error(n.line, fmt::format("more than {} loop iterations", kMaxIterations));
      scopes_.emplace_back();
      bind(items[i]);
      scopes_.back()["loop"] = Value::dict({{"index", Value(i + 1)},
                                            {"index0", Value(i)},
                                            {"revindex", Value(len - i)},
                                            {"revindex0", Value(len - i - 1)},
                                            {"first", Value(i == 0)},
                                            {"last", Value(i == len - 1)},
                                            {"length", Value(len)},
                                            {"previtem", i > 0 ? items[i - 1] : Value()},
                                            {"nextitem", i + 1 < len ? items[i + 1] : Value()}});
      Flow f = Flow::Normal;
      for (const auto& c : n.body)
        if ((f = exec(*c)) != Flow::Normal) break;
      scopes_.pop_back();
      if (f == Flow::Break) break;
    }
    return Flow::Normal;
  }

  void emit(const std::string& s, int line) {
    if (out_.size() + s.size() > kMaxOutputBytes)
      error(line, fmt::format("the rendered text exceeds {} MiB", kMaxOutputBytes >> 20));
    out_ += s;
  }

  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (auto f = it->find(name); f != it->end()) return f->second;
    return Value();
  }

  std::vector<Value> iterate(const Value& v, int line) const {
    switch (v.kind()) {
      case Value::Kind::List: return v.items();
      case Value::Kind::Dict: {
        std::vector<Value> keys;
        for (const auto& [k, e] : v.entries()) keys.emplace_back(k);
        return keys;
      }
      case Value::Kind::String: {
        std::vector<Value> chars;
        std::vector<size_t> at = codePoints(v.str());
        for (size_t i = 0; i < at.size(); ++i)
          chars.emplace_back(v.str().substr(at[i], (i + 1 < at.size() ? at[i + 1] : v.str().size()) - at[i]));
        return chars;
      }
      case Value::Kind::Undefined: return {};
      default: error(line, fmt::format("a {} is not iterable", v.kindName()));
    }
  }

  // ---- expressions ----

  Value eval(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::Literal: return e.value;
      case Expr::Kind::Name: return lookup(e.name);
      case Expr::Kind::List: {
        Value::List items;
        for (const auto& a : e.args) items.push_back(eval(*a));
        return Value::list(std::move(items));
      }
      case Expr::Kind::Dict: {
        Value d = Value::dict();
        for (size_t i = 0; i < e.args.size(); ++i) {
          Value k = eval(*e.args[i]);
          if (!k.isString()) error(e.line, "dict keys must be strings");
          d.set(k.str(), eval(*e.kwargs[i].second));
        }
        return d;
      }
      case Expr::Kind::Attr: {
        Value obj = eval(*e.args[0]);
        if (obj.isUndefined()) error(e.line, fmt::format("an undefined value has no attribute '{}'", e.name));
        return obj.get(e.name);
      }
      case Expr::Kind::Index: return index(eval(*e.args[0]), eval(*e.args[1]), e.line);
      case Expr::Kind::Slice: return slice(e);
      case Expr::Kind::Call: return call(e);
      case Expr::Kind::Filter: return filter(e);
      case Expr::Kind::Test: {
        Value v = eval(*e.args[0]);
        std::vector<Value> args;
        for (size_t i = 1; i < e.args.size(); ++i) args.push_back(eval(*e.args[i]));
        return Value(test(e.name, v, args, e.line) != e.negated);
      }
      case Expr::Kind::Unary: {
        Value v = eval(*e.args[0]);
        if (e.name == "not") return Value(!v.truthy());
        if (v.kind() == Value::Kind::Int) return Value(e.name == "-" ? -v.integer() : v.integer());
        if (v.kind() == Value::Kind::Float) return Value(e.name == "-" ? -v.number() : v.number());
        error(e.line, fmt::format("unary '{}' needs a number, got a {}", e.name, v.kindName()));
      }
      case Expr::Kind::Binary: return binary(e);
      case Expr::Kind::Cond:
        if (eval(*e.args[1]).truthy()) return eval(*e.args[0]);
        return e.args[2] ? eval(*e.args[2]) : Value();
    }
    return Value();
  }

  Value index(const Value& obj, const Value& key, int line) const {
    if (obj.isDict()) return key.isString() ? obj.get(key.str()) : Value();
    if (obj.isList() || obj.isString()) {
      if (key.kind() != Value::Kind::Int) return Value();
      int64_t n = obj.isList() ? (int64_t)obj.items().size() : 0;
      std::vector<size_t> at;
      if (obj.isString()) n = (int64_t)(at = codePoints(obj.str())).size();
      int64_t i = key.integer() < 0 ? key.integer() + n : key.integer();
      if (i < 0 || i >= n) return Value();  // jinja2: an undefined, not an error
      if (obj.isList()) return obj.items()[i];
      size_t end = i + 1 < n ? at[i + 1] : obj.str().size();
      return Value(obj.str().substr(at[i], end - at[i]));
    }
    if (obj.isUndefined()) error(line, "an undefined value cannot be subscripted");
    return Value();
  }

  Value slice(const Expr& e) {
    Value obj = eval(*e.args[0]);
    std::optional<int64_t> part[3];
    for (int k = 0; k < 3; ++k) {
      if (!e.args[k + 1]) continue;
      Value v = eval(*e.args[k + 1]);
      if (v.isNone()) continue;
      if (v.kind() != Value::Kind::Int) error(e.line, "slice bounds must be integers");
      part[k] = v.integer();
    }
    int64_t step = part[2].value_or(1);
    if (step == 0) error(e.line, "a slice step cannot be zero");
    std::vector<size_t> at;
    int64_t n;
    if (obj.isList()) n = (int64_t)obj.items().size();
    else if (obj.isString()) n = (int64_t)(at = codePoints(obj.str())).size();
    else error(e.line, fmt::format("a {} cannot be sliced", obj.kindName()));
    auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
      if (!v) return dflt;
      int64_t x = *v < 0 ? *v + n : *v;
      return step > 0 ? std::clamp<int64_t>(x, 0, n) : std::clamp<int64_t>(x, -1, n - 1);
    };
    int64_t b = clamp(part[0], step > 0 ? 0 : n - 1), end = clamp(part[1], step > 0 ? n : -1);
    std::vector<int64_t> idx;
    for (int64_t i = b; step > 0 ? i < end : i > end; i += step) idx.push_back(i);
    if (obj.isList()) {
      Value::List items;
      for (int64_t i : idx) items.push_back(obj.items()[i]);
      return Value::list(std::move(items));
    }
    std::string s;
    for (int64_t i : idx) {
      size_t stop = i + 1 < n ? at[i + 1] : obj.str().size();
      s += obj.str().substr(at[i], stop - at[i]);
    }
    return Value(std::move(s));
  }

  Value binary(const Expr& e) {
    const std::string& op = e.name;
    if (op == "and") {
      Value a = eval(*e.args[0]);
      return a.truthy() ? eval(*e.args[1]) : a;
    }
    if (op == "or") {
      Value a = eval(*e.args[0]);
      return a.truthy() ? a : eval(*e.args[1]);
    }
    Value a = eval(*e.args[0]), b = eval(*e.args[1]);
    if (op == "==") return Value(a == b);
    if (op == "!=") return Value(!(a == b));
    if (op == "~") return Value(a.toString() + b.toString());
    if (op == "in" || op == "not in") return Value(contains(b, a, e.line) == (op == "in"));
    if (op == "<" || op == "<=" || op == ">" || op == ">=") {
      int c;
      if (a.isNumber() && b.isNumber()) c = a.number() < b.number() ? -1 : a.number() > b.number() ? 1 : 0;
      else if (a.isString() && b.isString()) c = a.str().compare(b.str());
      else error(e.line, fmt::format("cannot compare a {} with a {}", a.kindName(), b.kindName()));
      return Value(op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0);
    }
    if (op == "+") {
      if (a.isString() && b.isString()) return Value(a.str() + b.str());
      if (a.isList() && b.isList()) {
        Value::List items = a.items();
        items.insert(items.end(), b.items().begin(), b.items().end());
        return Value::list(std::move(items));
      }
    }
    if (op == "*" && ((a.isString() && b.kind() == Value::Kind::Int) || (b.isString() && a.kind() == Value::Kind::Int))) {
      const Value& s = a.isString() ? a : b;
      int64_t times = a.isString() ? b.integer() : a.integer();
      if (times > 0 && s.str().size() * (uint64_t)times > kMaxOutputBytes)
        error(e.line, "a repeated string exceeds the output limit");
      std::string out;
      for (int64_t i = 0; i < times; ++i) out += s.str();
      return Value(std::move(out));
    }
    if (!a.isNumber() || !b.isNumber() || a.kind() == Value::Kind::Bool)
      error(e.line, fmt::format("unsupported operand types for {}: {} and {}", op, a.kindName(), b.kindName()));
    bool ints = a.kind() == Value::Kind::Int && b.kind() == Value::Kind::Int;
    if (op == "/") {
      if (b.number() == 0) error(e.line, "division by zero");
      return Value(a.number() / b.number());
    }
    if (op == "//" || op == "%") {
      if (b.number() == 0) error(e.line, "division by zero");
      if (ints) {
        int64_t x = a.integer(), y = b.integer();
        int64_t q = x / y, r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) --q, r += y;  // Python floors
        return op == "//" ? Value(q) : Value(r);
      }
      double q = std::floor(a.number() / b.number());
      return op == "//" ? Value(q) : Value(a.number() - q * b.number());
    }
    if (op == "**") {
      if (ints && b.integer() >= 0) return Value((int64_t)std::llround(std::pow((double)a.integer(), (double)b.integer())));
      return Value(std::pow(a.number(), b.number()));
    }
    if (ints) {
      int64_t r;
      bool overflow = op == "+" ? __builtin_add_overflow(a.integer(), b.integer(), &r)
                      : op == "-" ? __builtin_sub_overflow(a.integer(), b.integer(), &r)
                                  : __builtin_mul_overflow(a.integer(), b.integer(), &r);
      if (overflow) error(e.line, "integer overflow");
      return Value(r);
    }
    double x = a.number(), y = b.number();
    return Value(op == "+" ? x + y : op == "-" ? x - y : x * y);
  }

  bool contains(const Value& container, const Value& item, int line) const {
    if (container.isString()) {
      if (!item.isString()) error(line, "'in <string>' needs a string on the left");
      return container.str().find(item.str()) != std::string::npos;
    }
    if (container.isList())
      return std::any_of(container.items().begin(), container.items().end(), [&](const Value& v) { return v == item; });
    if (container.isDict()) return item.isString() && !container.get(item.str()).isUndefined();
    if (container.isUndefined()) return false;
    error(line, fmt::format("'in' needs a string, list or dict, got a {}", container.kindName()));
  }

  // Positional and keyword arguments of a call, filter or test.
  struct Args {
    std::vector<Value> pos;
    std::map<std::string, Value> kw;
    Value at(size_t i, const char* name, Value dflt = Value()) const {
      if (i < pos.size()) return pos[i];
      if (auto f = kw.find(name); f != kw.end()) return f->second;
      return dflt;
    }
  };
  Args args(const Expr& e, size_t from) {
    Args a;
    for (size_t i = from; i < e.args.size(); ++i) a.pos.push_back(eval(*e.args[i]));
    for (const auto& [k, v] : e.kwargs) a.kw[k] = eval(*v);
    return a;
  }

  Value call(const Expr& e) {
    const Expr& callee = *e.args[0];
    Args a = args(e, 1);
    if (callee.kind == Expr::Kind::Name) {
      const std::string& f = callee.name;
      if (f == "raise_exception") fail("{}: {}", origin_, a.at(0, "message").toString());
      if (f == "range") {
        std::vector<int64_t> r;
        for (const Value& v : a.pos)
          if (v.kind() != Value::Kind::Int) error(e.line, "range() takes integers");
        if (a.pos.empty() || a.pos.size() > 3) error(e.line, "range() takes 1 to 3 arguments");
        int64_t start = a.pos.size() > 1 ? a.pos[0].integer() : 0;
        int64_t stop = a.pos.size() > 1 ? a.pos[1].integer() : a.pos[0].integer();
        int64_t step = a.pos.size() > 2 ? a.pos[2].integer() : 1;
        if (step == 0) error(e.line, "range() step cannot be zero");
        Value::List items;
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
          if ((int64_t)items.size() >= kMaxIterations) error(e.line, "range() is too long");
          items.emplace_back(i);
        }
        return Value::list(std::move(items));
      }
      if (f == "namespace" || f == "dict") {
        Value d = Value::dict();
        for (const Value& p : a.pos)
          if (p.isDict())
            for (const auto& [k, v] : p.entries()) d.set(k, v);
        for (const auto& [k, v] : e.kwargs) d.set(k, eval(*v));
        return d;
      }
      if (f == "strftime_now") {
        std::time_t now = std::time(nullptr);
        std::tm tm{};
        localtime_r(&now, &tm);
        char buf[256];
        size_t n = std::strftime(buf, sizeof buf, a.at(0, "format").toString().c_str(), &tm);
        return Value(std::string(buf, n));
      }
      error(e.line, fmt::format("'{}' is not a function here", f));
    }
    if (callee.kind != Expr::Kind::Attr) error(e.line, "only functions and methods can be called");
    return method(eval(*callee.args[0]), callee.name, a, e.line);
  }

  Value method(const Value& obj, const std::string& m, const Args& a, int line) {
    if (obj.isString()) {
      const std::string& s = obj.str();
      std::string chars = a.at(0, "chars").isString() ? a.at(0, "chars").str() : "";
      if (m == "strip") return Value(stripChars(s, chars, true, true));
      if (m == "lstrip") return Value(stripChars(s, chars, true, false));
      if (m == "rstrip") return Value(stripChars(s, chars, false, true));
      if (m == "upper" || m == "lower") {
        std::string r = s;
        for (char& c : r) c = m == "upper" ? (char)std::toupper((unsigned char)c) : (char)std::tolower((unsigned char)c);
        return Value(r);
      }
      if (m == "title" || m == "capitalize") return filterText(m, obj);
      if (m == "startswith" || m == "endswith") {
        std::string x = a.at(0, "prefix").toString();
        bool r = x.size() <= s.size() &&
                 (m == "startswith" ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0);
        return Value(r);
      }
      if (m == "replace") return Value(replaceAll(s, a.at(0, "old").toString(), a.at(1, "new").toString()));
      if (m == "find") {
        size_t p = s.find(a.at(0, "sub").toString());
        return Value(p == std::string::npos ? (int64_t)-1 : (int64_t)p);
      }
      if (m == "split") {
        Value::List parts;
        Value sep = a.at(0, "sep");
        if (sep.isUndefined() || sep.isNone()) {
          size_t i = 0;
          while (i < s.size()) {
            while (i < s.size() && std::isspace((unsigned char)s[i])) ++i;
            size_t j = i;
            while (j < s.size() && !std::isspace((unsigned char)s[j])) ++j;
            if (j > i) parts.emplace_back(s.substr(i, j - i));
            i = j;
          }
        } else {
          std::string d = sep.toString();
          if (d.empty()) error(line, "split() with an empty separator");
          size_t i = 0, j;
          while ((j = s.find(d, i)) != std::string::npos) parts.emplace_back(s.substr(i, j - i)), i = j + d.size();
          parts.emplace_back(s.substr(i));
        }
        return Value::list(std::move(parts));
      }
    }
    if (obj.isDict()) {
      if (m == "items" || m == "keys" || m == "values") {
        Value::List out;
        for (const auto& [k, v] : obj.entries()) {
          if (m == "items") out.push_back(Value::list({Value(k), v}));
          else out.push_back(m == "keys" ? Value(k) : v);
        }
        return Value::list(std::move(out));
      }
      if (m == "get") {
        Value v = obj.get(a.at(0, "key").toString());
        return v.isUndefined() ? a.at(1, "default", Value::none()) : v;
      }
    }
    error(line, fmt::format("a {} has no method '{}'", obj.kindName(), m));
  }

  static std::string replaceAll(std::string s, const std::string& from, const std::string& to) {
    if (from.empty()) return s;
    std::string out;
    size_t i = 0, j;
    while ((j = s.find(from, i)) != std::string::npos) out += s.substr(i, j - i) + to, i = j + from.size();
    return out + s.substr(i);
  }

  Value filterText(const std::string& f, const Value& v) const {
    std::string s = v.toString();
    if (f == "title") {
      bool start = true;
      for (char& c : s) {
        if (std::isalpha((unsigned char)c)) {
          c = start ? (char)std::toupper((unsigned char)c) : (char)std::tolower((unsigned char)c);
          start = false;
        } else {
          start = true;
        }
      }
    } else {  // capitalize
      for (size_t i = 0; i < s.size(); ++i)
        s[i] = i == 0 ? (char)std::toupper((unsigned char)s[i]) : (char)std::tolower((unsigned char)s[i]);
    }
    return Value(s);
  }

  // select / reject / selectattr / rejectattr: items for which the test
  // (truthiness when none is named) holds, or does not.
  Value selectItems(const std::string& f, const Value& seq, const Args& a, int line) {
    bool attr = f == "selectattr" || f == "rejectattr";
    bool want = f == "select" || f == "selectattr";
    size_t testAt = attr ? 1 : 0;
    Value::List out;
    for (const Value& item : iterate(seq, line)) {
      Value subject = attr ? item.get(a.at(0, "attribute").toString()) : item;
      bool ok;
      if (a.pos.size() <= testAt) {
        ok = subject.truthy();
      } else {
        std::string t = a.pos[testAt].toString();
        if (!isKnownTest(t)) error(line, fmt::format("unknown test '{}'", t));
        ok = test(t, subject, std::vector<Value>(a.pos.begin() + testAt + 1, a.pos.end()), line);
      }
      if (ok == want) out.push_back(item);
    }
    return Value::list(std::move(out));
  }

  Value filter(const Expr& e) {
    Value v = eval(*e.args[0]);
    Args a = args(e, 1);
    const std::string& f = e.name;
    if (f == "safe") return v;
    if (f == "trim") return Value(stripChars(v.toString(), a.at(0, "chars").isString() ? a.at(0, "chars").str() : "", true, true));
    if (f == "upper" || f == "lower") return method(Value(v.toString()), f, {}, e.line);
    if (f == "title" || f == "capitalize") return filterText(f, v);
    if (f == "length" || f == "count") {
      if (v.isString()) return Value((int64_t)codePoints(v.str()).size());
      if (v.isList()) return Value((int64_t)v.items().size());
      if (v.isDict()) return Value((int64_t)v.entries().size());
      if (v.isUndefined()) return Value((int64_t)0);
      error(e.line, fmt::format("a {} has no length", v.kindName()));
    }
    if (f == "string") return Value(v.toString());
    if (f == "tojson") {
      Value ind = a.at(0, "indent");
      return Value(v.toJson(ind.kind() == Value::Kind::Int ? (int)std::clamp<int64_t>(ind.integer(), 0, 64) : -1));
    }
    if (f == "join") {
      std::string sep = a.at(0, "d", Value("")).toString(), out;
      Value attr = a.at(1, "attribute");
      bool first = true;
      for (const Value& item : iterate(v, e.line)) {
        out += (first ? "" : sep) + (attr.isUndefined() ? item : item.get(attr.toString())).toString();
        first = false;
        if (out.size() > kMaxOutputBytes) error(e.line, "a joined string exceeds the output limit");
      }
      return Value(out);
    }
    if (f == "replace") return Value(replaceAll(v.toString(), a.at(0, "old").toString(), a.at(1, "new").toString()));
    if (f == "first" || f == "last") {
      std::vector<Value> items = iterate(v, e.line);
      if (items.empty()) return Value();
      return f == "first" ? items.front() : items.back();
    }
    if (f == "list") return Value::list(iterate(v, e.line));
    if (f == "reverse") {
      if (v.isString()) {
        std::vector<Value> cs = iterate(v, e.line);
        std::string s;
        for (auto it = cs.rbegin(); it != cs.rend(); ++it) s += it->str();
        return Value(s);
      }
      std::vector<Value> items = iterate(v, e.line);
      std::reverse(items.begin(), items.end());
      return Value::list(std::move(items));
    }
    if (f == "items") return v.isUndefined() ? Value::list() : method(v, "items", {}, e.line);
    if (f == "dictsort") {
      Value items = method(v, "items", {}, e.line);
      std::stable_sort(items.items().begin(), items.items().end(),
                       [](const Value& x, const Value& y) { return x.items()[0].str() < y.items()[0].str(); });
      return items;
    }
    if (f == "default" || f == "d") {
      bool boolean = a.at(1, "boolean", Value(false)).truthy();
      bool missing = boolean ? !v.truthy() : v.isUndefined();
      return missing ? a.at(0, "default_value", Value("")) : v;
    }
    if (f == "int" || f == "float") {
      double d = 0;
      if (v.isNumber()) d = v.number();
      else if (v.kind() == Value::Kind::Bool) d = v.boolean();
      else if (v.isString()) {
        try {
          size_t used = 0;
          d = std::stod(v.str(), &used);
        } catch (const std::exception&) {
          return a.at(0, "default", f == "int" ? Value((int64_t)0) : Value(0.0));
        }
      }
      if (f == "float") return Value(d);
      if (!std::isfinite(d) || std::fabs(d) > 9.2e18) error(e.line, "int(): value out of range");
      return Value((int64_t)d);
    }
    if (f == "abs") {
      if (v.kind() == Value::Kind::Int) return Value(v.integer() < 0 ? -v.integer() : v.integer());
      if (v.isNumber()) return Value(std::fabs(v.number()));
      error(e.line, fmt::format("abs() of a {}", v.kindName()));
    }
    if (f == "round") {
      if (!v.isNumber()) error(e.line, fmt::format("round() of a {}", v.kindName()));
      int64_t prec = a.at(0, "precision", Value((int64_t)0)).integer();
      double scale = std::pow(10.0, (double)std::clamp<int64_t>(prec, 0, 15));
      return Value(std::nearbyint(v.number() * scale) / scale);
    }
    if (f == "select" || f == "reject" || f == "selectattr" || f == "rejectattr") return selectItems(f, v, a, e.line);
    if (f == "map") {
      Value attr = a.at(99, "attribute");
      Value::List out;
      for (const Value& item : iterate(v, e.line)) {
        if (!attr.isUndefined()) {
          Value got = item.get(attr.toString());
          out.push_back(got.isUndefined() && a.kw.count("default") ? a.kw.at("default") : got);
        } else if (!a.pos.empty() && a.pos[0].isString()) {
          std::string name = a.pos[0].str();
          if (name == "string") out.emplace_back(item.toString());
          else if (name == "trim") out.emplace_back(stripChars(item.toString(), "", true, true));
          else if (name == "upper" || name == "lower") out.push_back(method(Value(item.toString()), name, {}, e.line));
          else if (name == "length") out.emplace_back((int64_t)iterate(item, e.line).size());
          else if (name == "tojson") out.emplace_back(item.toJson());
          else error(e.line, fmt::format("map() with filter '{}' is not supported", name));
        } else {
          error(e.line, "map() needs attribute= or a filter name");
        }
      }
      return Value::list(std::move(out));
    }
    if (f == "unique") {
      Value::List out;
      for (const Value& item : iterate(v, e.line))
        if (std::none_of(out.begin(), out.end(), [&](const Value& o) { return o == item; })) out.push_back(item);
      return Value::list(std::move(out));
    }
    if (f == "sort" || f == "min" || f == "max" || f == "sum") {
      std::vector<Value> items = iterate(v, e.line);
      Value attr = a.kw.count("attribute") ? a.kw.at("attribute") : Value();
      auto key = [&](const Value& x) { return attr.isUndefined() ? x : x.get(attr.toString()); };
      auto less = [&](const Value& x, const Value& y) {
        Value kx = key(x), ky = key(y);
        if (kx.isNumber() && ky.isNumber()) return kx.number() < ky.number();
        if (kx.isString() && ky.isString()) return kx.str() < ky.str();
        error(e.line, fmt::format("cannot order a {} and a {}", kx.kindName(), ky.kindName()));
      };
      if (f == "sum") {
        Value total((int64_t)0);
        for (const Value& x : items) {
          Value k = key(x);
          if (!k.isNumber()) error(e.line, fmt::format("sum() of a {}", k.kindName()));
          total = total.kind() == Value::Kind::Int && k.kind() == Value::Kind::Int ? Value(total.integer() + k.integer())
                                                                                   : Value(total.number() + k.number());
        }
        return total;
      }
      if (items.empty()) return f == "sort" ? Value::list() : Value();
      if (f == "min") return *std::min_element(items.begin(), items.end(), less);
      if (f == "max") return *std::max_element(items.begin(), items.end(), less);
      std::stable_sort(items.begin(), items.end(), less);
      if (a.at(0, "reverse", Value(false)).truthy()) std::reverse(items.begin(), items.end());
      return Value::list(std::move(items));
    }
    if (f == "indent") {
      int64_t width = a.at(0, "width", Value((int64_t)4)).kind() == Value::Kind::Int ? a.at(0, "width").integer() : 4;
      bool first = a.at(1, "first", Value(false)).truthy();
      std::string pad((size_t)std::clamp<int64_t>(width, 0, 256), ' '), s = v.toString(), out;
      for (size_t i = 0; i < s.size(); ++i) {
        if ((i == 0 && first) || (i > 0 && s[i - 1] == '\n' && s[i] != '\n')) out += pad;
        out += s[i];
      }
      return Value(out);
    }
    if (f == "wordcount") return Value((int64_t)method(Value(v.toString()), "split", {}, e.line).items().size());
    error(e.line, fmt::format("unknown filter '{}'", f));
  }

  bool test(const std::string& t, const Value& v, const std::vector<Value>& args, int line) {
    auto arg = [&](size_t i) -> const Value& {
      if (i >= args.size()) error(line, fmt::format("test '{}' needs an argument", t));
      return args[i];
    };
    if (t == "defined") return !v.isUndefined();
    if (t == "undefined") return v.isUndefined();
    if (t == "none") return v.isNone();
    if (t == "string") return v.isString();
    if (t == "number") return v.isNumber();
    if (t == "integer") return v.kind() == Value::Kind::Int;
    if (t == "float") return v.kind() == Value::Kind::Float;
    if (t == "boolean") return v.kind() == Value::Kind::Bool;
    if (t == "true") return v.kind() == Value::Kind::Bool && v.boolean();
    if (t == "false") return v.kind() == Value::Kind::Bool && !v.boolean();
    if (t == "mapping") return v.isDict();
    if (t == "iterable") return v.isList() || v.isDict() || v.isString();
    if (t == "sequence") return v.isList() || v.isString() || v.isDict();
    if (t == "lower" || t == "upper") {
      std::string s = v.toString();
      return std::none_of(s.begin(), s.end(), [&](char c) {
        return t == "lower" ? std::isupper((unsigned char)c) != 0 : std::islower((unsigned char)c) != 0;
      });
    }
    if (t == "odd" || t == "even") {
      if (v.kind() != Value::Kind::Int) error(line, fmt::format("test '{}' needs an integer", t));
      return (v.integer() % 2 != 0) == (t == "odd");
    }
    if (t == "divisibleby") {
      const Value& d = arg(0);
      if (v.kind() != Value::Kind::Int || d.kind() != Value::Kind::Int || d.integer() == 0)
        error(line, "test 'divisibleby' needs a nonzero integer");
      return v.integer() % d.integer() == 0;
    }
    if (t == "equalto" || t == "eq" || t == "==" || t == "sameas") return v == arg(0);
    if (t == "ne" || t == "!=") return !(v == arg(0));
    if (t == "in") return contains(arg(0), v, line);
    if (t == "lt" || t == "<" || t == "gt" || t == ">" || t == "le" || t == "<=" || t == "ge" || t == ">=") {
      const Value& o = arg(0);
      if (!v.isNumber() || !o.isNumber()) error(line, fmt::format("test '{}' needs numbers", t));
      double x = v.number(), y = o.number();
      if (t == "lt" || t == "<") return x < y;
      if (t == "gt" || t == ">") return x > y;
      if (t == "le" || t == "<=") return x <= y;
      return x >= y;
    }
    error(line, fmt::format("unknown test '{}'", t));
  }

  const std::string& origin_;
  std::vector<std::map<std::string, Value>> scopes_;
  std::string out_;
  int64_t iterations_ = 0;
};

}  // namespace

Template::Template(std::string_view source, std::string origin)
    : origin_(std::move(origin)), root_(parseTemplate(source, origin_)) {}
Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

std::string Template::render(const Value& context) const { return Renderer(origin_, context).run(*root_); }

}  // namespace strata::models::jinja
