// amount.hpp — numbers typed by people ("2e9", "300B", "1T"), shared by the
// scenario reader and the CLI so both accept exactly the same spellings.
#pragma once

#include <cmath>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

namespace gpuplan::detail {

// The whole text is one finite number; nullopt otherwise.
inline std::optional<double> parse_finite(std::string_view text) {
  const std::string digits(text);
  std::size_t used = 0;
  double d = 0;
  try {
    d = std::stod(digits, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used == 0 || used != digits.size() || !std::isfinite(d)) return std::nullopt;
  return d;
}

// A count with an optional suffix: K/k = 10^3, M = 10^6, B/G = 10^9, T = 10^12.
inline std::optional<double> parse_count(std::string_view text) {
  double scale = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K': case 'k': scale = 1e3; break;
      case 'M': scale = 1e6; break;
      case 'B': case 'G': scale = 1e9; break;
      case 'T': scale = 1e12; break;
      default: break;
    }
  }
  const auto d = parse_finite(scale != 1 ? text.substr(0, text.size() - 1) : text);
  if (!d) return std::nullopt;
  return *d * scale;
}

}  // namespace gpuplan::detail
