// error.hpp — the one exception type gpuplan throws for bad input.
// Message shape (after nlohmann/json and CLI11): "<path>: <rule> (got <value>)",
// e.g. "scenario.parallel.tp: must divide num_attention_heads=40 (got 3)".
#pragma once

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>

namespace gpuplan {

class config_error : public std::invalid_argument {
 public:
  config_error(std::string path, const std::string& reason)
      : std::invalid_argument(path + ": " + reason), path_(std::move(path)) {}
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

namespace detail {
// Formats a number for messages without locale or trailing zeros.
inline std::string num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::fabs(v) < 1e18 && v == std::trunc(v))
    return std::to_string(static_cast<long long>(v));
  if (std::fabs(v) >= 1e18 || (v != 0 && std::fabs(v) < 1e-6)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
  }
  std::string s = std::to_string(v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}
[[noreturn]] inline void fail(const std::string& path, const std::string& reason) {
  throw config_error(path, reason);
}
}  // namespace detail
}  // namespace gpuplan
