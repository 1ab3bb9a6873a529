// json_text.hpp — untrusted JSON at the edge, for every reader in src/
// (scenario_json.cpp, hf_config.cpp, safetensors.cpp, catalog.cpp):
//
//  * parse_json_text: bounded nesting (nlohmann parses and destroys
//    iteratively, but dump(), copy and == recurse, so a 10^5-deep value would
//    exhaust the stack the first time a message quotes it) and one-line parse
//    errors of valid UTF-8 (nlohmann's "last read: '...'" echoes raw bytes);
//  * quote_json / quote_text: user values inside messages — one line, valid
//    UTF-8 (invalid bytes replaced by U+FFFD, never throwing), at most
//    kMaxShown bytes, cut on a character boundary.
//
// Together they let every config_error be printed by the CLI, embedded in JSON
// output and decoded by Python (docs/robustness.md, "What is validated").
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "gpuplan/error.hpp"

namespace gpuplan::detail {

// Deepest [ / { nesting accepted in JSON text. Real inputs nest a few levels
// (config.json: 3; scenario: 3; safetensors header: 3); 256 leaves room and
// keeps recursive dump()/copy far from the stack limit.
inline constexpr int kMaxJsonDepth = 256;

// Longest quoted value in a message, in bytes (before "...").
inline constexpr std::size_t kMaxShown = 80;

// Deepest [ / { nesting outside strings. A scan of the text, run before the
// parser: malformed text that nests deeper is reported as too deep, which is
// as true as any other diagnosis of it.
inline int json_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

// Raw bytes made printable on one line: bytes >= 0x80, control characters and
// DEL become \xNN (upper-case hex), so the result is ASCII whatever the input.
inline std::string escape_bytes(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x80 || c < 0x20 || c == 0x7F) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0x0F];
    } else {
      out += ch;
    }
  }
  return out;
}

// nlohmann's "last read: '<token>'" quotes the whole token being read, which may be the whole
// input (700 tabs after a '{' read as 700 "<U+0009>"): its last kMaxShown bytes, after "...".
inline std::string shorten_last_read(std::string reason) {
  static constexpr std::string_view kLastRead = "last read: '";
  const std::size_t start = reason.find(kLastRead);
  if (start == std::string::npos) return reason;
  const std::size_t from = start + kLastRead.size();
  std::size_t end = reason.find("'; expected", from);
  if (end == std::string::npos) end = reason.rfind('\'');
  if (end == std::string::npos || end < from || end - from <= kMaxShown) return reason;
  std::size_t keep = end - kMaxShown;
  // Not inside an escape: a "<U+0009>" or "\xFF" is kept whole or not at all.
  if (const std::size_t open = reason.find_last_of("<\\", keep); open != std::string::npos && open >= from && open < keep) {
    const std::size_t close = reason[open] == '<' ? reason.find('>', open) : open + 3;
    if (close != std::string::npos && close >= keep && close < end) keep = close + 1;
  }
  return reason.replace(from, keep - from, "...");
}

// Parses untrusted JSON text (comments not allowed) or throws
// config_error(path, "<what>: <reason>") on one line of ASCII, where reason is
// "nested deeper than 256 levels" or nlohmann's parse error without its
// exception id, with raw bytes escaped and a long "last read" token cut
// ("parse error at line 1, column 32: syntax error while parsing object -
// invalid literal; last read: '20\xFF'; expected '}'").
inline nlohmann::json parse_json_text(std::string_view text, const std::string& path,
                                      const std::string& what = "malformed JSON") {
  if (json_depth(text) > kMaxJsonDepth)
    fail(path, what + ": nested deeper than " + std::to_string(kMaxJsonDepth) + " levels", error_kind::parse_error);
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    std::string_view reason = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, ...": the id is noise to a user.
    if (reason.rfind("[json.exception.", 0) == 0 && reason.find("] ") != std::string_view::npos)
      reason.remove_prefix(reason.find("] ") + 2);
    fail(path, what + ": " + shorten_last_read(escape_bytes(reason)), error_kind::parse_error);
  }
}

// A JSON value quoted for a message: compact JSON (strings in quotes, control
// characters escaped as JSON does), invalid UTF-8 replaced by U+FFFD, at most
// `limit` bytes, cut on a character boundary.
inline std::string quote_json(const nlohmann::json& v, std::size_t limit = kMaxShown) {
  // dump() writes NaN and infinity (from C++ or Python callers) as null: say what they are.
  if (v.is_number_float() && !std::isfinite(v.get<double>())) return num(v.get<double>());
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > limit) {
    std::size_t cut = limit > 3 ? limit - 3 : 0;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0u) == 0x80u) --cut;  // keep whole code points
    s = s.substr(0, cut) + "...";
  }
  return s;
}

// Free text (a name, an id, a key, a file name) without quotes, made safe as
// quote_json makes a string.
inline std::string quote_text(std::string_view text, std::size_t limit = kMaxShown) {
  std::string s = quote_json(nlohmann::json(std::string(text)), limit);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  if (s.size() > 4 && s.front() == '"' && s.compare(s.size() - 3, 3, "...") == 0) return s.substr(1);
  return s;
}

}  // namespace gpuplan::detail
