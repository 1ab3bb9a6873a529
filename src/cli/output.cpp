// output.cpp — output.hpp: the output flags, the style and printing.
#include "output.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace gpuplan::cli {

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  s = gpuplan::io::printable(s);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

namespace {

std::vector<std::string> report_format_words() {
  std::vector<std::string> words = gpuplan::names_of(io::kReportFormatNames);
  for (const auto& alias : gpuplan::names_of(io::kReportFormatAliases)) words.push_back(alias);
  return words;
}

}  // namespace

void add_output_options(CLI::App* sub, output_args& out) {
  sub->add_flag("--json", out.json, "Print JSON (same as --format json)")->group("Output");
  sub->add_option("--format", out.format, "Output format: " + gpuplan::join_names(io::kReportFormatNames))
      ->check(CLI::IsMember(report_format_words()))
      ->group("Output");
}

void add_margin_options(CLI::App* sub, margin_request& m) {
  sub->add_option("--confidence", m.confidence, "Plan on this quantile of the memory band: 0.5, 0.9 (default) or 0.99")
      ->group("Margin");
  sub->add_option("--headroom", m.headroom, "Memory kept free: 5%, 2GiB or 5%,1GiB (the larger; default)")->group("Margin");
}

io::style make_style(const output_args& out) {
  io::style s;
  s.format = out.json ? io::report_format::json : io::parse_report_format(out.format);
  // Colour only for a terminal, and never when NO_COLOR is set (https://no-color.org).
  const char* no_color = std::getenv("NO_COLOR");
  s.color = s.format == io::report_format::text && isatty(STDOUT_FILENO) == 1 &&
            (no_color == nullptr || no_color[0] == '\0');
  return s;
}

void print(const std::string& s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
}

void print_json(const nlohmann::json& j) {
  print(j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace gpuplan::cli
