// utf8.hpp — strict UTF-8 check shared by the hostile-input tests and the fuzzers:
// every error message gpuplan prints must pass it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gpuplan::test {

// Strict UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
inline bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) { ++i; continue; }
    if (c >= 0xC2 && c <= 0xDF) { n = 1; cp = c & 0x1Fu; }
    else if (c >= 0xE0 && c <= 0xEF) { n = 2; cp = c & 0x0Fu; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 3; cp = c & 0x07u; }
    else return false;
    if (i + n >= s.size()) return false;  // truncated sequence
    for (std::size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0u) != 0x80u) return false;
      cp = (cp << 6) | (d & 0x3Fu);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += n + 1;
  }
  return true;
}

}  // namespace gpuplan::test
