// csv_text.hpp — one CSV line splitter for every reader in src/ (the GPU catalog
// in catalog.cpp, price files in prices.cpp): comma-separated fields with RFC 4180
// quotes ("" inside quotes is a quote).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuplan/error.hpp"

namespace gpuplan::detail {

// Fields of one line; an unterminated quoted field is an error naming `where`.
inline std::vector<std::string> split_csv_line(std::string_view line, const std::string& where) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        cur += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (quoted) fail(where, "unterminated quoted field", error_kind::parse_error);
  out.push_back(std::move(cur));
  return out;
}

}  // namespace gpuplan::detail
