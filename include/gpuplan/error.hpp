// error.hpp — the one exception type gpuplan throws for bad input.
// Message shape (after nlohmann/json and CLI11): "<path>: <rule> (got <value>)",
// e.g. "scenario.parallel.tp: must divide num_attention_heads=40 (got 3)".
// kind() sorts errors for callers that react differently (Python raises one
// subclass of ConfigError per kind); the message does not depend on it.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "gpuplan/names.hpp"

namespace gpuplan {

enum class error_kind : std::uint8_t {
  invalid_input,  // a value out of range, of the wrong type, or an impossible layout
  unknown_name,   // a model, GPU, enum value or key that does not exist
  parse_error,    // malformed JSON, config.json or safetensors header
  io_error,       // a file that cannot be opened or read
  does_not_fit,   // a request no configuration can satisfy
};

inline constexpr std::array<enum_name<error_kind>, 5> kErrorKindNames{{
    {error_kind::invalid_input, "invalid_input"}, {error_kind::unknown_name, "unknown_name"},
    {error_kind::parse_error, "parse_error"}, {error_kind::io_error, "io_error"},
    {error_kind::does_not_fit, "does_not_fit"}}};
template <>
inline constexpr std::span<const enum_name<error_kind>> name_table<error_kind>{kErrorKindNames};
static_assert(names_are_unique(kErrorKindNames) && names_cover(kErrorKindNames, error_kind::does_not_fit));

class config_error : public std::invalid_argument {
 public:
  config_error(std::string path, const std::string& reason, error_kind kind = error_kind::invalid_input)
      : std::invalid_argument(path + ": " + reason), path_(std::move(path)), kind_(kind) {}
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] error_kind kind() const noexcept { return kind_; }

 private:
  std::string path_;
  error_kind kind_;
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
[[noreturn]] inline void fail(const std::string& path, const std::string& reason,
                              error_kind kind = error_kind::invalid_input) {
  throw config_error(path, reason, kind);
}
}  // namespace detail
}  // namespace gpuplan
