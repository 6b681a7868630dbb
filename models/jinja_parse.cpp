// Jinja source -> syntax tree: the template is cut into text and tags with
// jinja2's whitespace rules as apply_chat_template sets them (trim_blocks:
// the newline after a block or comment tag goes; lstrip_blocks: spaces and
// tabs before one on its line go; `-` strips all whitespace on its side,
// `+` keeps the line's indent), then each tag's expression is parsed by
// recursive descent with jinja2's precedence.
#include <cctype>
#include <set>

#include <fmt/format.h>

#include "models/jinja_ast.h"
#include "ops/error.h"

namespace strata::models::jinja {

namespace {

struct Tag {
  char kind;  // '{' expression, '%' statement, '#' comment
  size_t begin, end;          // the whole tag in the source
  size_t bodyBegin, bodyEnd;  // inside the delimiters and modifiers
  bool stripLeft = false, stripRight = false, keepIndent = false;
  int line;
};

int lineAt(std::string_view s, size_t pos) {
  int line = 1;
  for (size_t i = 0; i < pos && i < s.size(); ++i) line += s[i] == '\n';
  return line;
}

std::vector<Tag> findTags(std::string_view src, const std::string& origin) {
  std::vector<Tag> tags;
  size_t pos = 0;
  while (true) {
    size_t open = src.find('{', pos);
    while (open != std::string_view::npos && open + 1 < src.size() && !std::strchr("{%#", src[open + 1]))
      open = src.find('{', open + 1);
    if (open == std::string_view::npos || open + 1 >= src.size()) break;
    Tag t;
    t.kind = src[open + 1];
    t.begin = open;
    t.line = lineAt(src, open);
    size_t b = open + 2;
    if (b < src.size() && src[b] == '-') t.stripLeft = true, ++b;
    else if (b < src.size() && src[b] == '+') t.keepIndent = true, ++b;
    const std::string closer = t.kind == '{' ? "}}" : t.kind == '%' ? "%}" : "#}";
    size_t close = std::string_view::npos;
    if (t.kind == '#') {
      close = src.find(closer, b);
    } else {
      char quote = 0;
      for (size_t i = b; i + 1 < src.size(); ++i) {
        char c = src[i];
        if (quote) {
          if (c == '\\') ++i;
          else if (c == quote) quote = 0;
        } else if (c == '\'' || c == '"') {
          quote = c;
        } else if (src.compare(i, 2, closer) == 0) {
          close = i;
          break;
        }
      }
    }
    if (close == std::string_view::npos)
      fail("{} line {}: '{{{}' is never closed by '{}'", origin, t.line, t.kind, closer);
    size_t e = close;
    if (e > b && src[e - 1] == '-') t.stripRight = true, --e;
    t.bodyBegin = b;
    t.bodyEnd = e;
    t.end = close + 2;
    tags.push_back(t);
    pos = t.end;
  }
  return tags;
}

bool isBlockTag(const Tag& t) { return t.kind == '%' || t.kind == '#'; }

// The text between two tags (either may be absent) after the whitespace rules.
std::string textBetween(std::string_view src, size_t from, size_t to, const Tag* prev, const Tag* next) {
  std::string_view text = src.substr(from, to - from);
  if (prev && prev->stripRight) {
    size_t i = 0;
    while (i < text.size() && std::isspace((unsigned char)text[i])) ++i;
    text.remove_prefix(i);
  } else if (prev && isBlockTag(*prev)) {
    if (text.substr(0, 1) == "\n") text.remove_prefix(1);
    else if (text.substr(0, 2) == "\r\n") text.remove_prefix(2);
  }
  if (next && next->stripLeft) {
    size_t n = text.size();
    while (n > 0 && std::isspace((unsigned char)text[n - 1])) --n;
    text = text.substr(0, n);
  } else if (next && isBlockTag(*next) && !next->keepIndent) {
    // Only spaces and tabs between the line's start and the tag.
    size_t n = text.size();
    while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\t')) --n;
    size_t at = (size_t)(text.data() - src.data()) + n;  // where the blanks start in the source
    bool lineStart = at == 0 || src[at - 1] == '\n';
    if (lineStart) text = text.substr(0, n);
  }
  return std::string(text);
}

// ---- expression tokens ----

struct Tok {
  enum Kind { Name, Int, Float, String, Op, End } kind;
  std::string text;
  Value value;
};

std::vector<Tok> tokenize(std::string_view s, const std::string& where) {
  std::vector<Tok> out;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (std::isspace((unsigned char)c)) {
      ++i;
    } else if (std::isalpha((unsigned char)c) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum((unsigned char)s[j]) || s[j] == '_')) ++j;
      out.push_back({Tok::Name, std::string(s.substr(i, j - i)), {}});
      i = j;
    } else if (std::isdigit((unsigned char)c)) {
      size_t j = i;
      bool isFloat = false;
      while (j < s.size() && (std::isdigit((unsigned char)s[j]) || s[j] == '_')) ++j;
      if (j + 1 < s.size() && s[j] == '.' && std::isdigit((unsigned char)s[j + 1])) {
        isFloat = true;
        ++j;
        while (j < s.size() && std::isdigit((unsigned char)s[j])) ++j;
      }
      if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        size_t k = j + 1;
        if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
        if (k < s.size() && std::isdigit((unsigned char)s[k])) {
          isFloat = true;
          j = k;
          while (j < s.size() && std::isdigit((unsigned char)s[j])) ++j;
        }
      }
      std::string text;
      for (char d : s.substr(i, j - i))
        if (d != '_') text += d;
      Tok t{isFloat ? Tok::Float : Tok::Int, text, {}};
      try {
        t.value = isFloat ? Value(std::stod(text)) : Value((int64_t)std::stoll(text));
      } catch (const std::exception&) {
        fail("{}: the number {} is out of range", where, text);
      }
      out.push_back(std::move(t));
      i = j;
    } else if (c == '\'' || c == '"') {
      std::string v;
      size_t j = i + 1;
      for (; j < s.size() && s[j] != c; ++j) {
        if (s[j] != '\\' || j + 1 >= s.size()) {
          v += s[j];
          continue;
        }
        char e = s[++j];
        switch (e) {
          case 'n': v += '\n'; break;
          case 't': v += '\t'; break;
          case 'r': v += '\r'; break;
          case '0': v += '\0'; break;
          case '\\': v += '\\'; break;
          case '\'': v += '\''; break;
          case '"': v += '"'; break;
          case '\n': break;  // a line continuation
          case 'x':
          case 'u':
          case 'U': {
            size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            if (j + digits >= s.size() + 0 && j + digits > s.size() - 1)
              fail("{}: a truncated \\{} escape in a string", where, e);
            uint32_t cp = 0;
            for (size_t k = 1; k <= digits; ++k) {
              char h = s[j + k];
              if (!std::isxdigit((unsigned char)h)) fail("{}: a bad \\{} escape in a string", where, e);
              cp = cp * 16 + (uint32_t)(std::isdigit((unsigned char)h) ? h - '0' : std::tolower(h) - 'a' + 10);
            }
            j += digits;
            if (cp > 0x10FFFF) fail("{}: the escape \\{} is not a code point", where, e);
            if (cp < 0x80) {
              v += (char)cp;
            } else if (cp < 0x800) {
              v += (char)(0xC0 | (cp >> 6));
              v += (char)(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
              v += (char)(0xE0 | (cp >> 12));
              v += (char)(0x80 | ((cp >> 6) & 0x3F));
              v += (char)(0x80 | (cp & 0x3F));
            } else {
              v += (char)(0xF0 | (cp >> 18));
              v += (char)(0x80 | ((cp >> 12) & 0x3F));
              v += (char)(0x80 | ((cp >> 6) & 0x3F));
              v += (char)(0x80 | (cp & 0x3F));
            }
            break;
          }
          default: v += '\\', v += e;  // Python keeps unknown escapes
        }
      }
      if (j >= s.size()) fail("{}: a string is never closed", where);
      out.push_back({Tok::String, std::string(s.substr(i, j + 1 - i)), Value(std::move(v))});
      i = j + 1;
    } else {
      static const char* ops[] = {"//", "**", "==", "!=", "<=", ">=", "(", ")", "[", "]", "{", "}", ",", ".",
                                  ":",  "|",  "~",  "+",  "-",  "*",  "/", "%", "<", ">", "="};
      bool found = false;
      for (const char* op : ops) {
        size_t n = std::strlen(op);
        if (s.compare(i, n, op) == 0) {
          out.push_back({Tok::Op, op, {}});
          i += n;
          found = true;
          break;
        }
      }
      if (!found) fail("{}: unexpected character '{}'", where, c);
    }
  }
  out.push_back({Tok::End, "", {}});
  return out;
}

const std::set<std::string>& knownFilters() {
  static const std::set<std::string> f = {
      "abs",  "capitalize", "count", "d",        "default", "dictsort", "first",      "float",  "int",
      "items", "join",      "last",  "length",   "list",    "lower",    "map",        "max",    "min",
      "reject", "rejectattr", "replace", "reverse", "round", "safe",   "select",     "selectattr", "sort",
      "string", "sum",       "title", "tojson",   "trim",    "unique",   "upper",      "indent", "wordcount"};
  return f;
}

class ExprParser {
 public:
  ExprParser(std::vector<Tok> toks, std::string where, int line)
      : t_(std::move(toks)), where_(std::move(where)), line_(line) {}

  std::unique_ptr<Expr> expression() {
    Depth d(*this);
    auto e = orExpr();
    if (isName("if")) {
      next();
      auto c = make(Expr::Kind::Cond);
      c->args.push_back(std::move(e));
      c->args.push_back(orExpr());
      if (isName("else")) {
        next();
        c->args.push_back(expression());
      } else {
        c->args.push_back(nullptr);
      }
      return c;
    }
    return e;
  }
  // For `for` statements: a target list up to `in`.
  std::vector<std::string> names() {
    std::vector<std::string> out;
    bool paren = isOp("(");
    if (paren) next();
    do {
      if (cur().kind != Tok::Name) error("expected a loop variable name");
      out.push_back(next().text);
    } while (isOp(",") && (next(), true));
    if (paren) expect(")");
    return out;
  }
  bool isName(const char* n) const { return cur().kind == Tok::Name && cur().text == n; }
  bool isOp(const char* o) const { return cur().kind == Tok::Op && cur().text == o; }
  bool atEnd() const { return cur().kind == Tok::End; }
  const Tok& cur() const { return t_[p_]; }
  const Tok& next() { return t_[p_ < t_.size() - 1 ? p_++ : p_]; }
  void expect(const char* op) {
    if (!isOp(op)) error(fmt::format("expected '{}'", op));
    next();
  }
  void expectEnd() {
    if (!atEnd()) error(fmt::format("unexpected '{}'", cur().text));
  }
  [[noreturn]] void error(const std::string& what) const { fail("{}: {}", where_, what); }

 private:
  struct Depth {
    explicit Depth(ExprParser& p) : p(p) {
      if (++p.depth_ > kMaxNesting) p.error(fmt::format("expressions nested deeper than {}", kMaxNesting));
    }
    ~Depth() { --p.depth_; }
    ExprParser& p;
  };
  std::unique_ptr<Expr> make(Expr::Kind k) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = line_;
    return e;
  }
  std::unique_ptr<Expr> binary(std::string op, std::unique_ptr<Expr> a, std::unique_ptr<Expr> b) {
    auto e = make(Expr::Kind::Binary);
    e->name = std::move(op);
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }
  std::unique_ptr<Expr> orExpr() {
    auto e = andExpr();
    while (isName("or")) next(), e = binary("or", std::move(e), andExpr());
    return e;
  }
  std::unique_ptr<Expr> andExpr() {
    auto e = notExpr();
    while (isName("and")) next(), e = binary("and", std::move(e), notExpr());
    return e;
  }
  std::unique_ptr<Expr> notExpr() {
    Depth d(*this);
    if (isName("not")) {
      next();
      auto e = make(Expr::Kind::Unary);
      e->name = "not";
      e->args.push_back(notExpr());
      return e;
    }
    return compare();
  }
  std::unique_ptr<Expr> compare() {
    auto e = math1();
    while (true) {
      static const char* ops[] = {"==", "!=", "<", "<=", ">", ">="};
      bool done = true;
      for (const char* op : ops)
        if (isOp(op)) {
          next();
          e = binary(op, std::move(e), math1());
          done = false;
          break;
        }
      if (!done) continue;
      if (isName("in")) {
        next();
        e = binary("in", std::move(e), math1());
      } else if (isName("not") && t_[p_ + 1].kind == Tok::Name && t_[p_ + 1].text == "in") {
        next(), next();
        e = binary("not in", std::move(e), math1());
      } else {
        return e;
      }
    }
  }
  std::unique_ptr<Expr> math1() {
    auto e = concat();
    while (isOp("+") || isOp("-")) {
      std::string op = next().text;
      e = binary(op, std::move(e), concat());
    }
    return e;
  }
  std::unique_ptr<Expr> concat() {
    auto e = math2();
    while (isOp("~")) next(), e = binary("~", std::move(e), math2());
    return e;
  }
  std::unique_ptr<Expr> math2() {
    auto e = pow();
    while (isOp("*") || isOp("/") || isOp("//") || isOp("%")) {
      std::string op = next().text;
      e = binary(op, std::move(e), pow());
    }
    return e;
  }
  std::unique_ptr<Expr> pow() {
    auto e = unary();
    while (isOp("**")) next(), e = binary("**", std::move(e), unary());
    return e;
  }
  std::unique_ptr<Expr> unary() {
    Depth d(*this);
    if (isOp("-") || isOp("+")) {
      auto e = make(Expr::Kind::Unary);
      e->name = next().text;
      e->args.push_back(unaryNoFilter());
      return filters(std::move(e));
    }
    return filters(postfix(primary()));
  }
  std::unique_ptr<Expr> unaryNoFilter() {
    Depth d(*this);
    if (isOp("-") || isOp("+")) {
      auto e = make(Expr::Kind::Unary);
      e->name = next().text;
      e->args.push_back(unaryNoFilter());
      return e;
    }
    return postfix(primary());
  }
  std::unique_ptr<Expr> primary() {
    const Tok& t = cur();
    if (t.kind == Tok::String) {
      // Adjacent string literals concatenate, as in Python.
      std::string s;
      while (cur().kind == Tok::String) s += next().value.str();
      auto e = make(Expr::Kind::Literal);
      e->value = Value(s);
      return e;
    }
    if (t.kind == Tok::Int || t.kind == Tok::Float) {
      auto e = make(Expr::Kind::Literal);
      e->value = next().value;
      return e;
    }
    if (t.kind == Tok::Name) {
      std::string n = next().text;
      auto e = make(Expr::Kind::Literal);
      if (n == "true" || n == "True") e->value = Value(true);
      else if (n == "false" || n == "False") e->value = Value(false);
      else if (n == "none" || n == "None") e->value = Value::none();
      else {
        e->kind = Expr::Kind::Name;
        e->name = n;
      }
      return e;
    }
    if (isOp("(")) {
      next();
      if (isOp(")")) error("empty tuples are not supported");
      auto e = expression();
      if (isOp(",")) {  // a tuple: a list here
        auto l = make(Expr::Kind::List);
        l->args.push_back(std::move(e));
        while (isOp(",")) {
          next();
          if (isOp(")")) break;
          l->args.push_back(expression());
        }
        e = std::move(l);
      }
      expect(")");
      return e;
    }
    if (isOp("[")) {
      next();
      auto l = make(Expr::Kind::List);
      while (!isOp("]")) {
        l->args.push_back(expression());
        if (!isOp(",")) break;
        next();
      }
      expect("]");
      return l;
    }
    if (isOp("{")) {
      next();
      auto d = make(Expr::Kind::Dict);
      while (!isOp("}")) {
        d->args.push_back(expression());
        expect(":");
        d->kwargs.emplace_back("", expression());
        if (!isOp(",")) break;
        next();
      }
      expect("}");
      return d;
    }
    if (atEnd()) error("the expression ends too early");
    error(fmt::format("unexpected '{}'", t.text));
  }
  void callArgs(Expr& e) {
    expect("(");
    while (!isOp(")")) {
      if (cur().kind == Tok::Name && t_[p_ + 1].kind == Tok::Op && t_[p_ + 1].text == "=") {
        std::string k = next().text;
        next();
        e.kwargs.emplace_back(k, expression());
      } else {
        e.args.push_back(expression());
      }
      if (!isOp(",")) break;
      next();
    }
    expect(")");
  }
  std::unique_ptr<Expr> postfix(std::unique_ptr<Expr> e) {
    while (true) {
      if (isOp(".")) {
        next();
        if (cur().kind == Tok::Int) {  // x.0 is x[0]
          auto i = make(Expr::Kind::Index);
          i->args.push_back(std::move(e));
          auto lit = make(Expr::Kind::Literal);
          lit->value = next().value;
          i->args.push_back(std::move(lit));
          e = std::move(i);
          continue;
        }
        if (cur().kind != Tok::Name) error("expected an attribute name after '.'");
        auto a = make(Expr::Kind::Attr);
        a->name = next().text;
        a->args.push_back(std::move(e));
        e = std::move(a);
      } else if (isOp("[")) {
        next();
        std::unique_ptr<Expr> parts[3];
        int colons = 0;
        while (true) {
          if (isOp(":")) {
            if (++colons > 2) error("a slice has at most two ':'");
            next();
            continue;
          }
          if (isOp("]")) break;
          if (parts[colons]) error("expected ':' or ']'");
          parts[colons] = expression();
        }
        next();
        if (colons == 0) {
          if (!parts[0]) error("an empty subscript");
          auto i = make(Expr::Kind::Index);
          i->args.push_back(std::move(e));
          i->args.push_back(std::move(parts[0]));
          e = std::move(i);
        } else {
          auto s = make(Expr::Kind::Slice);
          s->args.push_back(std::move(e));
          for (auto& p : parts) s->args.push_back(std::move(p));
          e = std::move(s);
        }
      } else if (isOp("(")) {
        auto c = make(Expr::Kind::Call);
        c->args.push_back(std::move(e));
        callArgs(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }
  std::unique_ptr<Expr> filters(std::unique_ptr<Expr> e) {
    while (true) {
      if (isOp("|")) {
        next();
        if (cur().kind != Tok::Name) error("expected a filter name after '|'");
        auto f = make(Expr::Kind::Filter);
        f->name = next().text;
        if (!knownFilters().count(f->name)) error(fmt::format("unknown filter '{}'", f->name));
        f->args.push_back(std::move(e));
        if (isOp("(")) callArgs(*f);
        e = std::move(f);
      } else if (isName("is")) {
        next();
        auto t = make(Expr::Kind::Test);
        if (isName("not")) next(), t->negated = true;
        if (cur().kind == Tok::Name || (cur().kind == Tok::Op && isKnownTest(cur().text))) {
          t->name = next().text;
        } else {
          error("expected a test name after 'is'");
        }
        if (!isKnownTest(t->name)) error(fmt::format("unknown test '{}'", t->name));
        t->args.push_back(std::move(e));
        if (isOp("(")) {
          callArgs(*t);
        } else if (cur().kind == Tok::String || cur().kind == Tok::Int || cur().kind == Tok::Float ||
                   (cur().kind == Tok::Name && !isName("and") && !isName("or") && !isName("else") &&
                    !isName("if") && !isName("in") && !isName("is") && !isName("not"))) {
          t->args.push_back(postfix(primary()));  // `is divisibleby 3`, `is sameas none`
        }
        e = std::move(t);
      } else {
        return e;
      }
    }
  }

  std::vector<Tok> t_;
  size_t p_ = 0;
  std::string where_;
  int line_;
  int depth_ = 0;
};

class StatementParser {
 public:
  StatementParser(std::string_view src, std::string origin) : src_(src), origin_(std::move(origin)) {
    tags_ = findTags(src_, origin_);
  }

  std::unique_ptr<Node> parse() {
    auto root = std::make_unique<Node>();
    root->kind = Node::Kind::Body;
    std::string end = block(*root, {});
    if (!end.empty()) fail("{}: unexpected '{{% {} %}}'", origin_, end);
    return root;
  }

 private:
  // Parses nodes into `body` until a statement whose keyword is in `stops`;
  // returns that keyword ("" at the end of the source), leaving its
  // parser in cur_.
  std::string block(Node& body, const std::set<std::string>& stops) {
    if (++depth_ > kMaxNesting) fail("{}: blocks nested deeper than {}", origin_, kMaxNesting);
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{depth_};
    while (true) {
      size_t from = next_ == 0 ? 0 : tags_[next_ - 1].end;
      const Tag* prev = next_ == 0 ? nullptr : &tags_[next_ - 1];
      if (next_ == tags_.size()) {
        addText(body, textBetween(src_, from, src_.size(), prev, nullptr), prev ? prev->line : 1);
        if (!stops.empty()) fail("{}: the template ends inside a block (expected {})", origin_, *stops.begin());
        return "";
      }
      const Tag& t = tags_[next_++];
      addText(body, textBetween(src_, from, t.begin, prev, &t), t.line);
      if (t.kind == '#') continue;
      std::string where = fmt::format("{} line {}", origin_, t.line);
      std::string_view inner = src_.substr(t.bodyBegin, t.bodyEnd - t.bodyBegin);
      if (t.kind == '{') {
        ExprParser p(tokenize(inner, where), where, t.line);
        auto n = node(Node::Kind::Output, t.line);
        n->expr = p.expression();
        p.expectEnd();
        body.body.push_back(std::move(n));
        continue;
      }
      cur_ = std::make_unique<ExprParser>(tokenize(inner, where), where, t.line);
      if (cur_->cur().kind != Tok::Name) cur_->error("expected a statement name");
      std::string kw = cur_->next().text;
      if (stops.count(kw)) return kw;
      statement(body, kw, t.line);
    }
  }

  void statement(Node& body, const std::string& kw, int line) {
    ExprParser& p = *cur_;
    if (kw == "if") {
      auto n = node(Node::Kind::If, line);
      auto cond = p.expression();
      p.expectEnd();
      while (true) {
        auto branch = node(Node::Kind::Body, line);
        std::string end = block(*branch, {"elif", "else", "endif"});
        n->branches.emplace_back(std::move(cond), std::move(branch));
        if (end == "endif") break;
        if (end == "elif") {
          cond = cur_->expression();
          cur_->expectEnd();
          continue;
        }
        cur_->expectEnd();  // else
        auto last = node(Node::Kind::Body, line);
        std::string e2 = block(*last, {"endif"});
        (void)e2;
        n->branches.emplace_back(nullptr, std::move(last));
        break;
      }
      cur_->expectEnd();
      body.body.push_back(std::move(n));
    } else if (kw == "for") {
      auto n = node(Node::Kind::For, line);
      n->targets = p.names();
      if (!p.isName("in")) p.error("expected 'in' in a for statement");
      p.next();
      n->expr = p.expression();  // `for x in xs if cond` parses as a conditional without else
      if (n->expr->kind == Expr::Kind::Cond && !n->expr->args[2]) {
        n->filter = std::move(n->expr->args[1]);
        n->expr = std::move(n->expr->args[0]);
      }
      if (p.isName("recursive")) p.error("recursive loops are not supported");
      p.expectEnd();
      std::string end = block(*n, {"else", "endfor"});
      if (end == "else") {
        cur_->expectEnd();
        n->elseBody = node(Node::Kind::Body, line);
        block(*n->elseBody, {"endfor"});
      }
      cur_->expectEnd();
      body.body.push_back(std::move(n));
    } else if (kw == "set") {
      if (p.cur().kind != Tok::Name) p.error("expected a variable name after 'set'");
      std::vector<std::string> target{p.next().text};
      if (p.isOp(".")) {
        p.next();
        if (p.cur().kind != Tok::Name) p.error("expected an attribute name");
        target.push_back(p.next().text);
      }
      if (p.isOp(",")) p.error("tuple assignment in set is not supported");
      if (p.atEnd()) {  // {% set x %}...{% endset %}
        if (target.size() != 1) p.error("a block set takes a plain name");
        auto n = node(Node::Kind::SetBlock, line);
        n->targets = target;
        block(*n, {"endset"});
        cur_->expectEnd();
        body.body.push_back(std::move(n));
        return;
      }
      p.expect("=");
      auto n = node(Node::Kind::Set, line);
      n->targets = target;
      n->expr = p.expression();
      p.expectEnd();
      body.body.push_back(std::move(n));
    } else if (kw == "break" || kw == "continue") {
      p.expectEnd();
      body.body.push_back(node(kw == "break" ? Node::Kind::Break : Node::Kind::Continue, line));
    } else if (kw == "generation") {
      // transformers' marker of the assistant's tokens: renders its body.
      p.expectEnd();
      auto n = node(Node::Kind::Body, line);
      block(*n, {"endgeneration"});
      cur_->expectEnd();
      body.body.push_back(std::move(n));
    } else if (kw == "endif" || kw == "endfor" || kw == "elif" || kw == "else" || kw == "endset" ||
               kw == "endgeneration") {
      p.error(fmt::format("unexpected '{{% {} %}}'", kw));
    } else {
      p.error(fmt::format("'{{% {} %}}' is not supported by strata's chat template interpreter", kw));
    }
  }

  std::unique_ptr<Node> node(Node::Kind k, int line) {
    auto n = std::make_unique<Node>();
    n->kind = k;
    n->line = line;
    return n;
  }
  void addText(Node& body, std::string text, int line) {
    if (text.empty()) return;
    auto n = node(Node::Kind::Text, line);
    n->text = std::move(text);
    body.body.push_back(std::move(n));
  }

  std::string_view src_;
  std::string origin_;
  std::vector<Tag> tags_;
  size_t next_ = 0;
  int depth_ = 0;
  std::unique_ptr<ExprParser> cur_;
};

}  // namespace

bool isKnownTest(const std::string& name) {
  static const std::set<std::string> t = {
      "boolean", "defined", "divisibleby", "eq",      "equalto", "even",     "false",  "float", "ge",
      "gt",      "in",      "integer",     "iterable", "le",     "lower",    "lt",     "mapping", "ne",
      "none",    "number",  "odd",         "sameas",  "sequence", "string",  "true",   "undefined", "upper",
      "==",      "!=",      "<",           ">",       "<=",      ">="};
  return t.count(name) != 0;
}

std::unique_ptr<Node> parseTemplate(std::string_view source, const std::string& origin) {
  return StatementParser(source, origin).parse();
}

}  // namespace strata::models::jinja
