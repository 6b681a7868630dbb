// UTF-8 helpers the tokenizer steps share.
#pragma once
#include <cstdint>
#include <string>

namespace strata::models::utf8 {

// Decodes the code point at s[i], advancing i; an invalid sequence gives
// U+FFFD (callers that must reject invalid UTF-8 check with valid()).
inline uint32_t next(const std::string& s, size_t& i) {
  auto c = (uint8_t)s[i++];
  int extra = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
  if (c >= 0x80 && c < 0xc0) return 0xfffd;
  uint32_t cp = extra == 3 ? c & 0x07 : extra == 2 ? c & 0x0f : extra == 1 ? c & 0x1f : c;
  for (int k = 0; k < extra; ++k) {
    if (i >= s.size() || ((uint8_t)s[i] & 0xc0) != 0x80) return 0xfffd;
    cp = (cp << 6) | ((uint8_t)s[i++] & 0x3f);
  }
  return cp;
}

// Length in bytes of the UTF-8 sequence starting with byte c (1 for a stray byte).
inline size_t length(uint8_t c) { return c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1; }

inline void append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back((char)cp);
  } else if (cp < 0x800) {
    out.push_back((char)(0xc0 | (cp >> 6)));
    out.push_back((char)(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out.push_back((char)(0xe0 | (cp >> 12)));
    out.push_back((char)(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back((char)(0x80 | (cp & 0x3f)));
  } else {
    out.push_back((char)(0xf0 | (cp >> 18)));
    out.push_back((char)(0x80 | ((cp >> 12) & 0x3f)));
    out.push_back((char)(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back((char)(0x80 | (cp & 0x3f)));
  }
}

// True when s is well-formed UTF-8 (no overlongs, surrogates or values past U+10FFFF).
bool valid(const std::string& s);

}  // namespace strata::models::utf8
