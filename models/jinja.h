// A Jinja interpreter for the subset that published chat templates use
// (tokenizer_config.json's `chat_template`, GGUF's `tokenizer.chat_template`),
// rendering as Hugging Face's apply_chat_template does: jinja2 with
// trim_blocks and lstrip_blocks, the loop-control extension, and the
// globals raise_exception, strftime_now and namespace.
//
// Statements: if / elif / else, for (with `if` filter, tuple unpacking,
// else, loop.index / index0 / first / last / length / revindex, break and
// continue), set (to a name, a namespace attribute, or a block), the
// transformers extension `generation` (rendered as its body), comments and
// whitespace control (`{%-`, `-%}`, `{{-`, `-}}`, `{%+`). Expressions:
// literals, lists, dicts, names, attributes, subscripts and slices, calls of
// the globals and of the string and dict methods templates call (strip,
// split, startswith, items, get, ...), filters, tests, arithmetic, `~`,
// comparisons, `in`, `and` / `or` / `not`, and `a if c else b`.
//
// Anything else (macros, includes, extends, unknown filters or tests) is
// an error when the template is parsed, naming the line, so a model whose
// template strata cannot render fails at load, not at its first request.
// Values follow Python: reference semantics for lists and dicts, Python's
// truthiness, str() and repr() when printed, json.dumps for tojson.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata::models::jinja {

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict };
  using List = std::vector<Value>;
  using Dict = std::vector<std::pair<std::string, Value>>;  // insertion order, as Python's dict

  Value() = default;  // undefined
  static Value none();
  Value(bool b);
  Value(int64_t i);
  Value(int i) : Value((int64_t)i) {}
  Value(double f);
  Value(std::string s);
  Value(const char* s) : Value(std::string(s)) {}
  static Value list(List items = {});
  static Value dict(Dict items = {});
  static Value fromJson(const nlohmann::ordered_json& j);

  Kind kind() const { return kind_; }
  bool isUndefined() const { return kind_ == Kind::Undefined; }
  bool isNone() const { return kind_ == Kind::None; }
  bool isString() const { return kind_ == Kind::String; }
  bool isNumber() const { return kind_ == Kind::Int || kind_ == Kind::Float; }
  bool isList() const { return kind_ == Kind::List; }
  bool isDict() const { return kind_ == Kind::Dict; }
  bool boolean() const { return b_; }
  int64_t integer() const { return i_; }
  double number() const { return kind_ == Kind::Int ? (double)i_ : f_; }
  const std::string& str() const { return s_; }
  List& items() const { return *list_; }
  Dict& entries() const { return *dict_; }

  // Python's bool(), str() and repr(), and ==.
  bool truthy() const;
  std::string toString() const;
  std::string repr() const;
  bool operator==(const Value& o) const;
  // A dict's value for `key` (undefined when absent).
  Value get(const std::string& key) const;
  void set(const std::string& key, Value v);
  // json.dumps(value, ensure_ascii=False, indent=indent) (indent < 0: none).
  std::string toJson(int indent = -1) const;
  // A short name of the kind for messages ("string", "list", ...).
  const char* kindName() const;

 private:
  Kind kind_ = Kind::Undefined;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;
  std::shared_ptr<List> list_;
  std::shared_ptr<Dict> dict_;
};

struct Node;

class Template {
 public:
  // Parses `source`; throws strata::Error naming `origin` and the line on a
  // syntax error or a construct this interpreter does not have.
  Template(std::string_view source, std::string origin);
  ~Template();
  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;
  // Renders with the variables of `context` (a dict). Throws strata::Error
  // on a template error (raise_exception's message, a type error, an
  // undefined value used as one) naming the origin.
  std::string render(const Value& context) const;
  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
  std::unique_ptr<Node> root_;
};

}  // namespace strata::models::jinja
