// numeric_options.hpp — every integer and floating-point option of the CLI read strictly
// (numeric_options.cpp): CLI11 alone saturates integers past 64 bits (strtoll), wraps a
// negative into an unsigned option, reads "010" as octal 8 and accepts nan and inf.
#pragma once

#include <CLI/CLI.hpp>

namespace gpuplan::cli {

// Adds the strict check to every INT, UINT and FLOAT option of `app` and its subcommands
// (call once, after every option is added). A refusal is config_error("--flag", ...):
// "must be an integer from -9223372036854775808 to 9223372036854775807 (got 1e30)",
// "must be a non-negative integer (got -1)", "must be a finite number (got nan)".
void guard_numeric_options(CLI::App& app);

}  // namespace gpuplan::cli
