// The syntax tree of a parsed Jinja template (private to models/jinja*.cpp).
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/jinja.h"

namespace strata::models::jinja {

struct Expr {
  enum class Kind {
    Literal,  // value
    Name,     // name
    List,     // args
    Dict,     // kwargs (keys are expressions' text: args holds key expressions, kwargs values)
    Attr,     // args[0] . name
    Index,    // args[0] [ args[1] ]
    Slice,    // args[0] [ args[1] : args[2] : args[3] ] (null parts absent)
    Call,     // args[0] ( args[1..], kwargs )
    Filter,   // args[0] | name ( args[1..], kwargs )
    Test,     // args[0] is [not] name ( args[1..] ); negated
    Unary,    // name = "not" | "-" | "+"
    Binary,   // args[0] name args[1]
    Cond,     // args[0] if args[1] else args[2] (args[2] may be null)
  };
  Kind kind;
  int line = 0;
  std::string name;
  Value value;
  bool negated = false;
  std::vector<std::unique_ptr<Expr>> args;
  std::vector<std::pair<std::string, std::unique_ptr<Expr>>> kwargs;
};

struct Node {
  enum class Kind { Body, Text, Output, If, For, Set, SetBlock, Break, Continue };
  Kind kind;
  int line = 0;
  std::string text;                    // Text
  std::unique_ptr<Expr> expr;          // Output, Set (value), For (iterable)
  std::vector<std::unique_ptr<Node>> body;  // Body, For, SetBlock
  // If: (condition, body) pairs; the else branch has a null condition.
  std::vector<std::pair<std::unique_ptr<Expr>, std::unique_ptr<Node>>> branches;
  std::vector<std::string> targets;    // For: loop variables; Set: name (and attribute)
  std::unique_ptr<Expr> filter;        // For: `if` condition
  std::unique_ptr<Node> elseBody;      // For
};

// Limits that keep a hostile template bounded.
constexpr int kMaxNesting = 128;                  // parse depth (statements and expressions)
constexpr int64_t kMaxIterations = 1'000'000;     // loop iterations per render (and range() length)
constexpr size_t kMaxOutputBytes = 64u << 20;     // rendered text

// Whether `name` is a test the interpreter has (`x is name`, select('name')).
bool isKnownTest(const std::string& name);

std::unique_ptr<Node> parseTemplate(std::string_view source, const std::string& origin);

}  // namespace strata::models::jinja
