// fuzz_hf_config — a config.json as raw bytes: nlohmann parse, then
// io::read_hf_config. Accepted models must count consistently.
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_common.hpp"
#include "gpuplan/io/hf_config.hpp"
#include "gpuplan/model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  gpuplan::architecture a;
  try {
    a = gpuplan::io::read_hf_config(j, "model");
  } catch (const gpuplan::config_error& e) {
    gpuplan::fuzz::check_error(e);
    return 0;
  }
  gpuplan::fuzz::check_model(a);
  return 0;
}
