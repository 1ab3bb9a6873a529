// fuzz_scenario — io::read_scenario_text on raw bytes (the CLI's --scenario FILE).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::optional<gpuplan::io::resolved_run> r;
  try {
    r = gpuplan::io::read_scenario_text(text);
  } catch (const gpuplan::config_error& e) {
    gpuplan::fuzz::check_error(e);
    return 0;
  }
  gpuplan::fuzz::check_run(*r);
  return 0;
}
