// io_text.hpp — rendering user-supplied text inside error messages (readers in
// src/): one line, valid UTF-8, bounded length, so that every config_error can be
// printed by the CLI, embedded in JSON output and decoded by Python.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace gpuplan::io::detail_text {

inline constexpr std::size_t kMaxShown = 80;

// A JSON value as compact JSON (strings quoted), invalid UTF-8 replaced, cut.
inline std::string show(const nlohmann::json& v) {
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > kMaxShown) {
    std::size_t cut = kMaxShown - 3;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0u) == 0x80u) --cut;  // keep whole code points
    s = s.substr(0, cut) + "...";
  }
  return s;
}

// Free text (a name, an id, a key) without quotes: control characters escaped
// as JSON does, invalid UTF-8 replaced by U+FFFD, long text cut.
inline std::string clean(std::string_view text) {
  std::string s = show(nlohmann::json(std::string(text)));
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  if (s.size() > 4 && s.front() == '"' && s.compare(s.size() - 3, 3, "...") == 0) return s.substr(1);
  return s;
}

}  // namespace gpuplan::io::detail_text
