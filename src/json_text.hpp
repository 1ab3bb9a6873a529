// json_text.hpp — parsing and quoting JSON at the edge, safely: bounded nesting
// (nlohmann's recursive destructor and dump would exhaust the stack on 10^5
// levels), one-line parse errors, and quoting of user values that never throws
// on invalid UTF-8 and never splits a character.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "gpuplan/error.hpp"

namespace gpuplan::detail {

inline constexpr int kMaxJsonDepth = 256;

// Deepest [ / { nesting outside strings.
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

// Parses text (comments not allowed) or throws config_error(path, one line).
inline nlohmann::json parse_json_text(std::string_view text, const std::string& path) {
  if (json_depth(text) > kMaxJsonDepth)
    fail(path, "malformed JSON: nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    for (auto& c : what)
      if (c == '\n' || c == '\r') c = ' ';
    fail(path, "malformed JSON: " + what);
  }
}

// A JSON value quoted for an error message: invalid UTF-8 replaced, at most
// `limit` bytes, cut on a character boundary.
inline std::string quote_json(const nlohmann::json& v, std::size_t limit = 60) {
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > limit) {
    std::size_t cut = limit - 3;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    s = s.substr(0, cut) + "...";
  }
  return s;
}

}  // namespace gpuplan::detail
