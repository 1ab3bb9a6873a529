// amount.hpp — numbers typed by people: counts ("2e9", "300B", "1T") and durations
// ("3600", "90m", "24h", "2d"). The one reader of these spellings, used by the
// scenario file ("tokens"), the CLI (--dataset-tokens, --deadline) and Python
// (gp.recommend's dataset_tokens and deadline, through gpuplan._core).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "gpuplan/error.hpp"

namespace gpuplan::io {

// A unit suffix and its factor.
struct amount_suffix {
  char suffix;
  double scale;
};
// Counts: K/k = 10^3, M = 10^6, B/G = 10^9, T = 10^12 (SI prefixes; B as in "7B parameters").
inline constexpr std::array<amount_suffix, 6> kCountSuffixes{{{'K', 1e3}, {'k', 1e3}, {'M', 1e6}, {'B', 1e9}, {'G', 1e9}, {'T', 1e12}}};
// Durations: s, m (minutes), h, d (24 h).
inline constexpr std::array<amount_suffix, 4> kDurationSuffixes{{{'s', 1.0}, {'m', 60.0}, {'h', 3600.0}, {'d', 86400.0}}};

// The whole text is one finite number (std::stod: leading blanks allowed, nothing
// after the number); nullopt otherwise.
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

// A finite number with an optional last-character suffix from `suffixes`.
template <std::size_t N>
std::optional<double> parse_suffixed(std::string_view text, const std::array<amount_suffix, N>& suffixes) {
  double scale = 1;
  if (!text.empty())
    for (const auto& s : suffixes)
      if (text.back() == s.suffix) {
        scale = s.scale;
        text.remove_suffix(1);
        break;
      }
  const auto d = parse_finite(text);
  if (!d) return std::nullopt;
  return *d * scale;
}

inline std::optional<double> parse_count(std::string_view text) { return parse_suffixed(text, kCountSuffixes); }
inline std::optional<double> parse_seconds(std::string_view text) { return parse_suffixed(text, kDurationSuffixes); }

// A positive count ("2B" -> 2e9); config_error naming `path` otherwise.
inline double parse_amount(std::string_view text, const std::string& path) {
  const auto v = parse_count(text);
  const std::string got = " (got '" + std::string(text) + "')";
  if (!v) gpuplan::detail::fail(path, "must be a number such as 2e9, 300B or 1T" + got);
  if (!(*v > 0)) gpuplan::detail::fail(path, "must be positive" + got);
  return *v;
}

// The durations a plan takes, from a measured step to a deadline: 1 µs (below one GPU
// kernel launch) to 100 years (beyond any run); 1e-300 s or 1e300 s is a slip, not a plan.
inline constexpr double kMinSeconds = 1e-6;
inline constexpr double kMaxSeconds = 100 * 365.25 * 86400;

// A positive duration in seconds ("24h" -> 86400), for a caller that bounds it more
// tightly itself (a measured step: calibrate.hpp); config_error naming `path` otherwise.
inline double parse_positive_seconds(std::string_view text, const std::string& path) {
  const auto v = parse_seconds(text);
  const std::string got = " (got '" + std::string(text) + "')";
  if (!v) gpuplan::detail::fail(path, "must be a duration such as 3600, 90m, 24h or 2d" + got);
  if (!(*v > 0)) gpuplan::detail::fail(path, "must be positive" + got);
  return *v;
}

// A positive duration in seconds ("24h" -> 86400) in [kMinSeconds, kMaxSeconds]; config_error naming `path` otherwise.
inline double parse_duration(std::string_view text, const std::string& path) {
  const double v = parse_positive_seconds(text, path);
  if (v < kMinSeconds || v > kMaxSeconds)
    gpuplan::detail::fail(path, "must be between 1e-6 s and 100 years (got '" + std::string(text) + "')");
  return v;
}

// The same bounds for a duration given as a number of seconds (Python callers).
inline double checked_seconds(double v, const std::string& path) {
  const std::string got = " (got " + gpuplan::detail::num(v) + ")";
  if (!std::isfinite(v)) gpuplan::detail::fail(path, "must be a finite number" + got);
  if (!(v > 0)) gpuplan::detail::fail(path, "must be positive" + got);
  if (v < kMinSeconds || v > kMaxSeconds) gpuplan::detail::fail(path, "must be between 1e-6 s and 100 years" + got);
  return v;
}

// Sizes: GiB/MiB are 2^30/2^20 bytes, GB/MB 10^9/10^6 (IEC 80000-13); a bare number is bytes.
inline constexpr std::array<std::pair<std::string_view, double>, 5> kSizeUnits{
    {{"GiB", 1073741824.0}, {"MiB", 1048576.0}, {"GB", 1e9}, {"MB", 1e6}, {"B", 1.0}}};

// A positive size below 64 TiB ("21.5GiB", "23000MB", "2.1e10") in bytes; config_error naming `path` otherwise.
inline double parse_size(std::string_view text, const std::string& path) {
  const std::string got = " (got '" + std::string(text) + "')";
  std::string_view number = text;
  double scale = 1.0;
  for (const auto& [unit, factor] : kSizeUnits)
    if (number.size() > unit.size() && number.substr(number.size() - unit.size()) == unit) {
      scale = factor;
      number.remove_suffix(unit.size());
      break;
    }
  const auto v = parse_finite(number);
  if (!v) gpuplan::detail::fail(path, "must be a size such as 21.5GiB, 23000MB or 2.1e10 (bytes)" + got);
  const double b = *v * scale;
  if (!(b > 0 && b < 64.0 * 1099511627776.0)) gpuplan::detail::fail(path, "must be a positive size below 64 TiB" + got);
  return b;
}

// A measured memory figure ("21.3GiB", "21800MiB", "22.9GB", "22870687744B"): as
// parse_size, but a bare number is an error that names the unit to add, since a
// measurement read off nvidia-smi (MiB) or torch (bytes) or typed in GiB is
// ambiguous without one.
inline double parse_measured_size(std::string_view text, const std::string& path) {
  bool has_unit = false;
  for (const auto& [unit, factor] : kSizeUnits)
    has_unit = has_unit || (text.size() > unit.size() && text.substr(text.size() - unit.size()) == unit);
  const auto bare = has_unit ? std::nullopt : parse_finite(text);
  if (bare && *bare > 0) {
    const std::string got = " (got " + std::string(text) + ")";
    // A bare figure of a MiB or more reads as bytes (what torch reports); else as GiB.
    if (*bare >= 1048576.0)
      gpuplan::detail::fail(path, "needs a unit: " + std::string(text) + "B for bytes, or " +
                                      gpuplan::detail::num(std::round(*bare / 1073741824.0 * 100) / 100) + "GiB" + got);
    // The MiB spelling of the same figure, to three significant digits (21.3 GiB = 21800 MiB).
    const double mib = *bare * 1024, step = std::pow(10.0, std::floor(std::log10(mib)) - 2);
    gpuplan::detail::fail(path, "needs a unit: " + std::string(text) + "GiB, " + std::string(text) + "GB or " +
                                    gpuplan::detail::num(std::round(mib / step) * step) + "MiB" + got);
  }
  return parse_size(text, path);
}

// The same rules for a value that is already a number (Python callers): finite and positive.
inline double positive_amount(double value, const std::string& path) {
  if (!std::isfinite(value)) gpuplan::detail::fail(path, "must be a finite number (got " + gpuplan::detail::num(value) + ")");
  if (!(value > 0)) gpuplan::detail::fail(path, "must be positive (got " + gpuplan::detail::num(value) + ")");
  return value;
}

// A headroom kept free on a GPU: "5%", "2GiB", "1.5GB", "512MiB", "0", or a comma
// list of them ("5%,1GiB": the larger of the two, plan/margin.hpp). Returns the
// fraction of capacity (0 without a "%" item) and the bytes (0 without a size
// item); config_error naming `path` and the text otherwise. GiB/MiB are 2^30/2^20
// bytes, GB/MB 10^9/10^6 (IEC 80000-13).
struct headroom_amount {
  double fraction = 0;
  double bytes = 0;
};
inline headroom_amount parse_headroom(std::string_view text, const std::string& path) {
  const std::string got = " (got '" + std::string(text) + "')";
  const std::string usage = "must be a percentage of the GPU's memory or a size, e.g. 5%, 2GiB, 1.5GB or 5%,1GiB";
  headroom_amount out;
  std::string_view rest = text;
  if (rest.empty()) gpuplan::detail::fail(path, usage + got);
  while (true) {
    const std::size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty() && item.back() == '%') {
      const auto v = parse_finite(item.substr(0, item.size() - 1));
      if (!v) gpuplan::detail::fail(path, usage + got);
      if (!(*v >= 0 && *v <= 50)) gpuplan::detail::fail(path, "a percentage must be between 0% and 50%" + got);
      out.fraction = std::max(out.fraction, *v / 100);
    } else {
      double scale = 0;
      for (const auto& [unit, factor] : kSizeUnits)
        if (item.size() > unit.size() && item.substr(item.size() - unit.size()) == unit) {
          scale = factor;
          item.remove_suffix(unit.size());
          break;
        }
      const auto v = parse_finite(item);
      if (!v || (scale == 0 && *v != 0)) gpuplan::detail::fail(path, usage + got);
      const double b = *v * scale;
      if (!(b >= 0 && b <= 1099511627776.0)) gpuplan::detail::fail(path, "a size must be between 0 and 1 TiB" + got);
      out.bytes = std::max(out.bytes, b);
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

// A planning confidence: 0.5, 0.9 or 0.99 (the P50, P90 or P99 of the memory band).
inline double parse_confidence(std::string_view text, const std::string& path) {
  const auto v = parse_finite(text);
  if (!v || !(*v == 0.5 || *v == 0.9 || *v == 0.99))
    gpuplan::detail::fail(path, "must be 0.5, 0.9 or 0.99 (got '" + std::string(text) + "')");
  return *v;
}

}  // namespace gpuplan::io
