// numeric_options.cpp — strict reading of the CLI's numeric options (numeric_options.hpp).
#include "numeric_options.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "gpuplan/error.hpp"
#include "json_text.hpp"

namespace gpuplan::cli {
namespace {

[[noreturn]] void refuse(const std::string& flag, const std::string& rule, const std::string& typed) {
  throw config_error(flag, rule + " (got " + gpuplan::detail::quote_text(typed) + ")");
}

// Decimal digits with an optional sign, rewritten canonically ("010" -> "10", "+5" -> "5")
// so CLI11 (strtoll base 0) cannot read it as octal; anything else is refused here.
void check_integer(std::string& s, const std::string& flag, bool is_unsigned) {
  const std::string typed = s;
  std::string_view digits = s;
  if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
  if (is_unsigned && !digits.empty() && digits.front() == '-') refuse(flag, "must be a non-negative integer", typed);
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  // 64-bit signed: the range of every integer the scenario holds (checked int64 arithmetic).
  if (ec == std::errc::result_out_of_range)
    refuse(flag, "must be an integer from -9223372036854775808 to 9223372036854775807", typed);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty())
    refuse(flag, "must be an integer", typed);
  s = std::to_string(v);
}

// A decimal or scientific number that is finite: nan, inf and 1e400 (inf as a double) are refused.
void check_float(const std::string& s, const std::string& flag) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0') refuse(flag, "must be a number", s);
  if (!std::isfinite(v) || (errno == ERANGE && std::fabs(v) > 1.0)) refuse(flag, "must be a finite number", s);
}

void guard(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    const std::string type = opt->get_type_name();
    const bool is_int = type.rfind("INT", 0) == 0, is_uint = type.rfind("UINT", 0) == 0;
    const bool is_float = type.rfind("FLOAT", 0) == 0;
    if (!is_int && !is_uint && !is_float) continue;
    const std::string flag = opt->get_name();
    opt->transform(CLI::Validator(  // a transform: the canonical text replaces what was typed
        [flag, is_float, is_uint](std::string& s) -> std::string {
          if (is_float) check_float(s, flag);
          else check_integer(s, flag, is_uint);
          return {};
        },
        "", "strict number"));
  }
  for (CLI::App* sub : app.get_subcommands({})) guard(*sub);
}

}  // namespace

void guard_numeric_options(CLI::App& app) { guard(app); }

}  // namespace gpuplan::cli
