// output.hpp — what every `gpuplan` subcommand shares to print: exit codes, --json and
// --format, the planning margin flags, the output style and the one-line error text.
#pragma once

#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "gpuplan/io/report.hpp"
#include "hooks.hpp"

namespace gpuplan::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitDoesNotFit = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitTight = 3;  // fit: the median estimate fits, its P90 does not (bands.hpp)

// The exit codes in words: the last paragraph of every subcommand's help.
inline constexpr const char* kExitCodes =
    "Exit codes: 0 ok (fit: the P90 of the estimate plus the headroom, 5% or 1 GiB, fits; see --confidence, "
    "--headroom); 1 the run does not fit (fit only); 2 usage or input error (one line on stderr: "
    "'gpuplan: <path>: <reason>'); 3 tight: the median estimate fits, its P90 plus the headroom does not (fit only).";

// A message on one line of printable text: a name quoted raw in it cannot move the cursor.
std::string one_line(std::string s);

struct output_args {
  bool json = false;
  std::string format = "text";
};
// --json and --format, in the "Output" help group.
void add_output_options(CLI::App* sub, output_args& out);
// The planning margin of fit, search/plan and recommend (plan/margin.hpp).
void add_margin_options(CLI::App* sub, margin_request& m);
io::style make_style(const output_args& out);

void print(const std::string& s);
// Invalid UTF-8 (a model path or name taken from the user) is replaced, not thrown.
void print_json(const nlohmann::json& j);

}  // namespace gpuplan::cli
