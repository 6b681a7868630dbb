#include "models/pretokenizer.h"

#include <algorithm>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <nlohmann/json.hpp>

#include "models/text_steps.h"
#include "ops/error.h"

namespace strata::models {

const char* const kGpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct RegexSplitter::Impl {
  pcre2_code* code = nullptr;
  ~Impl() { pcre2_code_free(code); }
};

RegexSplitter::RegexSplitter(const std::string& pattern) : impl_(std::make_unique<Impl>()) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP, &err,
                              &offset, nullptr);
  if (!impl_->code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    fail("pre-tokenizer regex: {} at offset {} in {}", reinterpret_cast<const char*>(msg), offset, pattern);
  }
  pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);  // optional speed-up; falls back to the interpreter
}

RegexSplitter::~RegexSplitter() = default;
RegexSplitter::RegexSplitter(RegexSplitter&&) noexcept = default;
RegexSplitter& RegexSplitter::operator=(RegexSplitter&&) noexcept = default;

std::vector<RegexSplitter::Segment> RegexSplitter::segments(std::string_view text) const {
  std::vector<Segment> pieces;
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
      pcre2_match_data_create_from_pattern(impl_->code, nullptr), &pcre2_match_data_free);
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0, gapStart = 0;
  // PCRE2 checks the whole subject's UTF-8 on every call unless told not
  // to, which made splitting quadratic (a 1 MB prompt took 45 s): the first
  // call checks it, the later ones start at character boundaries of text
  // known to be valid.
  uint32_t options = 0;
  while (pos < text.size()) {
    int rc = pcre2_match(impl_->code, subject, text.size(), pos, options, md.get(), nullptr);
    options = PCRE2_NO_UTF_CHECK;
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      fail("pre-tokenizer: {} (text byte {})", reinterpret_cast<const char*>(msg), pos);
    }
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    size_t start = ov[0], end = ov[1];
    if (end == start) {  // an empty match: step over one UTF-8 character
      ++pos;
      while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xc0) == 0x80) ++pos;
      continue;
    }
    if (start > gapStart) pieces.push_back({text.substr(gapStart, start - gapStart), false});
    pieces.push_back({text.substr(start, end - start), true});
    pos = gapStart = end;
  }
  if (gapStart < text.size()) pieces.push_back({text.substr(gapStart), false});
  return pieces;
}

std::vector<std::string_view> RegexSplitter::split(std::string_view text) const {
  return applySplitBehavior(segments(text), SplitBehavior::Isolated, false);
}

// Segments are adjacent views of one text: a merge extends the earlier one.
std::vector<std::string_view> applySplitBehavior(std::vector<RegexSplitter::Segment> segs, SplitBehavior behavior,
                                                 bool invert) {
  using Segment = RegexSplitter::Segment;
  if (invert)
    for (Segment& g : segs) g.match = !g.match;
  auto join = [](std::string_view a, std::string_view b) { return std::string_view(a.data(), a.size() + b.size()); };
  std::vector<Segment> out;
  switch (behavior) {
    case SplitBehavior::Removed:
      for (const Segment& g : segs)
        if (!g.match) out.push_back(g);
      break;
    case SplitBehavior::Isolated:
      out = segs;
      break;
    case SplitBehavior::MergedWithPrevious: {
      // A delimiter joins the piece before it unless that is a delimiter.
      bool previousMatch = false;
      for (const Segment& g : segs) {
        if (g.match && !previousMatch && !out.empty()) out.back().text = join(out.back().text, g.text);
        else out.push_back({g.text, false});
        previousMatch = g.match;
      }
      break;
    }
    case SplitBehavior::MergedWithNext: {
      // The mirror image: walked from the end, a delimiter joins the piece
      // after it unless that is a delimiter.
      bool previousMatch = false;
      for (auto it = segs.rbegin(); it != segs.rend(); ++it) {
        if (it->match && !previousMatch && !out.empty()) out.back().text = join(it->text, out.back().text);
        else out.push_back({it->text, false});
        previousMatch = it->match;
      }
      std::reverse(out.begin(), out.end());
      break;
    }
    case SplitBehavior::Contiguous: {
      // Runs of delimiters (and of the rest) become one piece each.
      bool previousMatch = false;
      for (const Segment& g : segs) {
        if (g.match == previousMatch && !out.empty()) out.back().text = join(out.back().text, g.text);
        else out.push_back({g.text, false});
        previousMatch = g.match;
      }
      break;
    }
  }
  std::vector<std::string_view> pieces;
  for (const Segment& g : out)
    if (!g.text.empty()) pieces.push_back(g.text);
  return pieces;
}


namespace {

SplitBehavior parseBehavior(const std::string& name, const std::string& path) {
  if (name == "Removed") return SplitBehavior::Removed;
  if (name == "Isolated") return SplitBehavior::Isolated;
  if (name == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (name == "Contiguous") return SplitBehavior::Contiguous;
  fail("{}: split behavior '{}' is unknown (Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)", path,
       name);
}

// A String pattern as a regex matching it literally.
std::string literalPattern(const std::string& text) {
  std::string re;
  for (char c : text) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) re += '\\';
    re += c;
  }
  return re;
}

// What tokenizers counts as punctuation (char::is_ascii_punctuation or a
// Unicode P category), one character a match; and as whitespace.
const char* const kPunctuation = R"([\p{P}\x21-\x2f\x3a-\x40\x5b-\x60\x7b-\x7e])";
const char* const kWhitespace = R"(\s)";

}  // namespace

struct PreTokenizer::Step {
  enum class Kind { Split, ByteLevel, Metaspace } kind = Kind::Split;
  // Split (Digits, Punctuation and WhitespaceSplit are splits too).
  std::shared_ptr<const RegexSplitter> splitter;
  SplitBehavior behavior = SplitBehavior::Isolated;
  bool invert = false;
  // ByteLevel: a space before every piece that lacks one; GPT-2's regex.
  bool addPrefixSpace = false;
  std::shared_ptr<const RegexSplitter> byteRegex;
  // Metaspace: spaces become `replacement`; it is put in front of a piece
  // (always, only the input's first, never) and, with `split`, starts a
  // new piece wherever it is.
  std::string replacement = "\u2581";
  enum class Prepend { Always, First, Never } prepend = Prepend::Always;
  bool split = true;
};

PreTokenizer::PreTokenizer(const nlohmann::json& config, const std::string& path) {
  if (!config.is_null()) add(config, path);
}

void PreTokenizer::add(const nlohmann::json& p, const std::string& path) {
  const std::string type = componentType(p, path, "pre_tokenizer");
  auto step = std::make_shared<Step>();
  auto splitBy = [&](const std::string& pattern, SplitBehavior b, bool invert) {
    step->splitter = std::make_shared<RegexSplitter>(pattern);
    step->behavior = b;
    step->invert = invert;
  };
  if (type == "Sequence") {
    const nlohmann::json& list = p.at("pretokenizers");
    if (!list.is_array()) fail("{}: pre_tokenizer Sequence: 'pretokenizers' must be a list", path);
    for (const nlohmann::json& q : list) add(q, path);
    return;
  } else if (type == "Split") {
    const nlohmann::json& pat = p.at("pattern");
    std::string re;
    if (pat.contains("Regex") && pat["Regex"].is_string()) re = pat["Regex"].get<std::string>();
    else if (pat.contains("String") && pat["String"].is_string()) re = literalPattern(pat["String"].get<std::string>());
    else fail("{}: Split pattern {} is not a Regex or String", path, pat.dump());
    splitBy(re, parseBehavior(p.value("behavior", "Isolated"), path), p.value("invert", false));
  } else if (type == "Digits") {
    splitBy(p.value("individual_digits", false) ? "\\p{N}" : "\\p{N}+", SplitBehavior::Isolated, false);
  } else if (type == "Punctuation") {
    splitBy(kPunctuation, parseBehavior(p.value("behavior", "Isolated"), path), false);
  } else if (type == "WhitespaceSplit") {
    splitBy(kWhitespace, SplitBehavior::Removed, false);
  } else if (type == "ByteLevel") {
    // trim_offsets only affects offsets, which strata does not report.
    step->kind = Step::Kind::ByteLevel;
    step->addPrefixSpace = p.value("add_prefix_space", false);
    if (p.value("use_regex", true)) step->byteRegex = std::make_shared<RegexSplitter>(kGpt2SplitPattern);
  } else if (type == "Metaspace") {
    step->kind = Step::Kind::Metaspace;
    step->replacement = p.value("replacement", "\u2581");
    if (step->replacement.empty()) fail("{}: Metaspace replacement is empty", path);
    std::string scheme = p.value("prepend_scheme", "always");
    if (!p.value("add_prefix_space", true)) scheme = "never";  // the older spelling
    if (scheme != "always" && scheme != "first" && scheme != "never")
      fail("{}: Metaspace prepend_scheme '{}' is unknown (always, first, never)", path, scheme);
    step->prepend = scheme == "always" ? Step::Prepend::Always : scheme == "first" ? Step::Prepend::First : Step::Prepend::Never;
    step->split = p.value("split", true);
  } else {
    fail("{}: pre_tokenizer '{}' is not supported (ByteLevel, Split, Digits, Punctuation, WhitespaceSplit, "
         "Metaspace and Sequences of them are)",
         path, type);
  }
  steps_.push_back(std::move(step));
}

bool PreTokenizer::byteLevel() const {
  for (const auto& s : steps_)
    if (s->kind == Step::Kind::ByteLevel) return true;
  return false;
}

std::vector<std::string> PreTokenizer::apply(const std::string& text, bool atStart) const {
  std::vector<std::string> pieces = {text};
  for (const auto& step : steps_) {
    std::vector<std::string> next;
    for (size_t i = 0; i < pieces.size(); ++i) {
      std::string& piece = pieces[i];
      switch (step->kind) {
        case Step::Kind::Split:
          for (std::string_view v : applySplitBehavior(step->splitter->segments(piece), step->behavior, step->invert))
            next.emplace_back(v);
          break;
        case Step::Kind::ByteLevel: {
          if (step->addPrefixSpace && (piece.empty() || piece[0] != ' ')) piece.insert(piece.begin(), ' ');
          std::vector<std::string_view> parts = step->byteRegex ? step->byteRegex->split(piece)
                                                                : std::vector<std::string_view>{piece};
          for (std::string_view part : parts) {
            std::string mapped;
            for (char c : part) mapped += byteLevelChar((unsigned char)c);
            next.push_back(std::move(mapped));
          }
          break;
        }
        case Step::Kind::Metaspace: {
          const std::string& r = step->replacement;
          std::string s;
          for (char c : piece) s += c == ' ' ? r : std::string(1, c);
          // Only the input's first piece starts at its offset 0.
          const bool first = atStart && i == 0;
          const bool prepend = step->prepend == Step::Prepend::Always || (step->prepend == Step::Prepend::First && first);
          if (prepend && s.compare(0, r.size(), r) != 0) s.insert(0, r);
          if (!step->split) {
            next.push_back(std::move(s));
            break;
          }
          size_t begin = 0;
          for (size_t at = s.find(r, 1); at != std::string::npos; at = s.find(r, at + 1)) {
            next.push_back(s.substr(begin, at - begin));
            begin = at;
          }
          next.push_back(s.substr(begin));
          break;
        }
      }
    }
    std::erase_if(next, [](const std::string& x) { return x.empty(); });
    pieces = std::move(next);
  }
  return pieces;
}

}  // namespace strata::models
