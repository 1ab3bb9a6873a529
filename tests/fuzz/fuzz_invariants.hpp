// fuzz_invariants.hpp — what every gpuplan fuzz target asserts of errors and figures:
//  * bad input is rejected with gpuplan::config_error only — any other exception
//    escapes LLVMFuzzerTestOneInput and libFuzzer reports it as a crash;
//  * the message is one non-empty line of valid UTF-8 that starts with its path
//    (the CLI prints it, JSON output embeds it, Python decodes it as str);
//  * accepted input yields finite, non-negative figures.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "gpuplan/error.hpp"
#include "support/utf8.hpp"

namespace gpuplan::fuzz {

[[noreturn]] inline void die(const char* what, std::string_view detail = {}) {
  std::fprintf(stderr, "\n*** gpuplan fuzz invariant violated: %s\n%.*s\n", what, static_cast<int>(detail.size()),
               detail.data());
  std::abort();
}
inline void expect(bool ok, const char* what, std::string_view detail = {}) {
  if (!ok) die(what, detail);
}

// GPUPLAN_FUZZ_PRINT=1: print each structured input (to replay a crash artifact readably).
inline void print_input(const std::string& what) {
  static const bool on = std::getenv("GPUPLAN_FUZZ_PRINT") != nullptr;
  if (on) std::fprintf(stderr, "input: %s\n", what.c_str());
}

inline void check_error(const config_error& e) {
  const std::string_view msg = e.what();
  expect(!msg.empty(), "empty error message");
  expect(msg.find('\n') == std::string_view::npos && msg.find('\r') == std::string_view::npos,
         "error message spans several lines", msg);
  expect(test::valid_utf8(msg), "error message is not valid UTF-8", msg);
  expect(!e.path().empty() && msg.substr(0, e.path().size()) == e.path(), "error message does not start with its path", msg);
  expect(msg.size() < 4096, "error message longer than 4 KiB", msg.substr(0, 200));
}

inline void finite_nonneg(double v, const char* what) {
  if (!std::isfinite(v) || v < 0) die(what, std::to_string(v));
}

}  // namespace gpuplan::fuzz
