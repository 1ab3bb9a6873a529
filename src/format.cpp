// format.cpp — number formatting and table rendering shared by the CLI and Python.
// Units are always explicit: GB = 10^9 bytes, GiB = 2^30 bytes (units.hpp).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>

#include "gpuplan/error.hpp"
#include "gpuplan/io/report.hpp"

namespace gpuplan::io {
namespace {

std::string printf_string(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// Display width of a UTF-8 string: code points (every glyph we print is one column).
std::size_t display_width(std::string_view s) {
  std::size_t n = 0;
  for (const char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0u) != 0x80u) ++n;
  return n;
}

bool looks_numeric(std::string_view s) {
  return !s.empty() && (std::isdigit(static_cast<unsigned char>(s.front())) != 0 ||
                        ((s.front() == '-' || s.front() == '+') && s.size() > 1));
}

std::string pad(std::string_view s, std::size_t width, bool right) {
  const std::size_t w = display_width(s);
  const std::string fill(width > w ? width - w : 0, ' ');
  return right ? fill + std::string(s) : std::string(s) + fill;
}

// One UTF-8 sequence at the start of `s`: its code point and length, or length 0 when
// malformed (a stray continuation byte, a truncated, overlong or surrogate sequence).
std::pair<char32_t, std::size_t> decode_utf8(std::string_view s) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  const std::size_t len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || len > s.size()) return {0, 0};
  char32_t cp = len == 1 ? b0 : b0 & (0x7Fu >> len);
  for (std::size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[k]);
    if ((b & 0xC0u) != 0x80u) return {0, 0};
    cp = (cp << 6) | (b & 0x3Fu);
  }
  constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};  // shortest form of each length
  if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0, 0};
  return {cp, len};
}

// Code points a terminal acts on instead of showing: C0, DEL, C1 (ECMA-48), and the
// bidirectional marks and overrides (Unicode TR9; "Trojan Source", CVE-2021-42574).
bool is_control(char32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

// Markdown cells cannot contain a raw pipe.
std::string md_cell(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '|') out += "\\|";
    else out += c;
  }
  return out;
}

}  // namespace

report_format parse_report_format(std::string_view s) {
  if (const auto f = value_of(kReportFormatNames, s)) return *f;
  if (const auto f = value_of(kReportFormatAliases, s)) return *f;
  throw config_error("--format", "must be one of " + join_names(kReportFormatNames) + " (got '" + std::string(s) + "')",
                     error_kind::unknown_name);
}

std::string format_bytes_short(Bytes b) { return printf_string("%.2f GB", in_gb(b)); }

std::string format_bytes(Bytes b) {
  const double v = in_bytes(b);
  if (!std::isfinite(v)) return "n/a";
  // + 0.0 turns -0.0 into 0.0 so a zero never prints as "-0.00".
  return printf_string("%.2f GB", in_gb(b) + 0.0) + printf_string(" (%.2f GiB)", in_gib(b) + 0.0);
}

std::string format_count(std::int64_t n) {
  const bool neg = n < 0;
  // Work on the unsigned magnitude so INT64_MIN does not overflow.
  std::uint64_t u = neg ? (~static_cast<std::uint64_t>(n) + 1u) : static_cast<std::uint64_t>(n);
  std::string digits = std::to_string(u);
  std::string out;
  const std::size_t len = digits.size();
  for (std::size_t i = 0; i < len; ++i) {
    if (i > 0 && (len - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return neg ? "-" + out : out;
}

std::string format_params(std::int64_t n) {
  const double v = static_cast<double>(n);
  const double a = std::fabs(v);
  if (a >= 1e12) return printf_string("%.2f T", v / 1e12);
  if (a >= 1e9) return printf_string("%.2f B", v / 1e9);
  if (a >= 1e6) return printf_string("%.1f M", v / 1e6);
  if (a >= 1e3) return printf_string("%.1f k", v / 1e3);
  return std::to_string(n);
}

std::string format_tokens(std::int64_t n) {
  // K = 1,024 tokens, M = 1,024 K: context lengths are quoted in powers of two ("32K" = 32,768).
  const double v = static_cast<double>(n);
  std::string unit;
  if (n >= 1024 * 1024) unit = printf_string("%.1f", v / (1024.0 * 1024.0)) + "M";
  else if (n >= 1024) unit = printf_string("%.1f", v / 1024.0) + "K";
  if (const auto dot = unit.find(".0"); dot != std::string::npos && dot + 3 == unit.size()) unit.erase(dot, 2);
  return format_count(n) + (n == 1 ? " token" : " tokens") + (unit.empty() ? "" : " (" + unit + ")");
}

std::string format_number(double v, int significant) {
  if (std::isnan(v)) return "n/a";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  const double a = std::fabs(v);
  if (a != 0 && (a >= 1e15 || a < 1e-3)) return printf_string("%.3g", v);
  if (a >= std::pow(10.0, significant)) return format_count(static_cast<std::int64_t>(std::llround(v)));
  // Enough decimals for `significant` digits, none beyond.
  // a in [1, 10^significant): decimals after the integer digits; a < 1: after the
  // leading zeros, so 0.00319 keeps three significant digits.
  const int magnitude = a == 0 ? 0 : static_cast<int>(std::floor(std::log10(a)));
  const int decimals = std::clamp(significant - 1 - magnitude, 0, 12);
  char fmt[16];
  std::snprintf(fmt, sizeof fmt, "%%.%df", decimals);
  return printf_string(fmt, v);
}

std::string format_rate(double per_second, std::string_view unit) {
  const double a = std::fabs(per_second);
  std::string num;
  if (a >= 1e9) num = format_number(per_second / 1e9) + " G ";
  else if (a >= 1e6) num = format_number(per_second / 1e6) + " M ";
  else if (a >= 1e4) num = format_number(per_second / 1e3) + " k ";
  else num = format_number(per_second) + " ";
  return num + std::string(unit) + "/s";
}

std::string format_seconds(Seconds s) {
  const double v = in_seconds(s);
  if (!std::isfinite(v)) return "n/a";
  const double a = std::fabs(v);
  if (a == 0) return "0 s";
  if (a < 1e-3) return format_number(v * 1e6) + " µs";
  if (a < 1) return format_number(v * 1e3) + " ms";
  if (a < 120) return format_number(v) + " s";
  if (a < 7200) return format_number(v / 60) + " min";
  if (a < 3 * 86400) return format_number(v / 3600) + " h";
  if (a < 730 * 86400) return format_number(v / 86400) + " days";
  return format_number(v / (365.25 * 86400)) + " years";
}

std::string printable(std::string_view s, bool keep_newlines) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto [cp, len] = decode_utf8(s.substr(i));
    if (len == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD for each malformed byte
      ++i;
      continue;
    }
    if (!is_control(cp) || (keep_newlines && cp == '\n')) out.append(s.substr(i, len));
    i += len;
  }
  return out;
}

std::string render(const table& raw, const style& s) {
  // Cells hold names users gave (models, GPUs, graphs): printed without their control characters.
  table t = raw;
  t.title = printable(t.title, true);
  for (auto& h : t.header) h = printable(h, true);
  for (auto& row : t.rows)
    for (auto& cell : row) cell = printable(cell, true);
  for (auto& n : t.notes) n = printable(n, true);
  const std::size_t ncol = t.header.size();
  auto right = [&](std::size_t c, std::string_view cell) {
    if (c < t.right_align.size()) return static_cast<bool>(t.right_align[c]);
    return c > 0 && (looks_numeric(cell) || cell.empty());
  };
  std::string out;
  if (s.format == report_format::markdown) {
    if (!t.title.empty()) out.append("**").append(md_cell(t.title)).append("**\n\n");
    out += "|";
    // (Appending piecewise: `" " + std::string&&` trips GCC 12's -Wrestrict false positive.)
    for (const auto& h : t.header) out.append(" ").append(md_cell(h)).append(" |");
    out += "\n|";
    for (std::size_t c = 0; c < ncol; ++c) out += (c > 0 && (c >= t.right_align.size() || t.right_align[c])) ? "---:|" : "---|";
    out += "\n";
    for (const auto& row : t.rows) {
      out += "|";
      for (std::size_t c = 0; c < ncol; ++c) out.append(" ").append(md_cell(c < row.size() ? row[c] : "")).append(" |");
      out += "\n";
    }
    if (!t.notes.empty()) {
      out += "\n";
      for (const auto& n : t.notes) out += n + "\n";
    }
    return out;
  }
  // Text: aligned columns, two spaces apart; a rule under the header.
  std::vector<std::size_t> width(ncol, 0);
  for (std::size_t c = 0; c < ncol; ++c) width[c] = display_width(t.header[c]);
  for (const auto& row : t.rows)
    for (std::size_t c = 0; c < ncol && c < row.size(); ++c) width[c] = std::max(width[c], display_width(row[c]));
  const char* bold = s.color ? "\033[1m" : "";
  const char* reset = s.color ? "\033[0m" : "";
  if (!t.title.empty()) out += std::string(bold) + t.title + reset + "\n";
  auto line = [&](const std::vector<std::string>& row, bool header) {
    std::string l;
    for (std::size_t c = 0; c < ncol; ++c) {
      const std::string cell = c < row.size() ? row[c] : "";
      if (c > 0) l += "  ";
      l += pad(cell, width[c], header ? (c > 0 && right(c, "0")) : right(c, cell));
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    return l + "\n";
  };
  std::string head = line(t.header, true);
  head.pop_back();
  out += std::string(bold) + head + reset + "\n";
  std::size_t total = 0;
  for (std::size_t c = 0; c < ncol; ++c) total += width[c] + (c > 0 ? 2 : 0);
  std::string rule;
  for (std::size_t i = 0; i < total; ++i) rule += "─";
  out += rule + "\n";
  for (const auto& row : t.rows) out += line(row, false);
  for (const auto& n : t.notes) out += n + "\n";
  return out;
}

}  // namespace gpuplan::io
