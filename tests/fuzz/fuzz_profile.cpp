// fuzz_profile — the calibration files (--profile FILE, --measurements FILE) as raw
// bytes: the first byte picks the reader (even: io::read_profile_text, odd:
// io::read_measurements_text). Bad input is a one-line config_error; an accepted
// profile has its constants in range and survives write -> read unchanged; accepted
// measurements (up to 8) calibrate into a profile that does the same.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_invariants.hpp"
#include "gpuplan/io/profile.hpp"

namespace {
void check_profile(const gpuplan::profile& p) {
  using gpuplan::fuzz::expect;
  using gpuplan::fuzz::finite_nonneg;
  finite_nonneg(p.memory.states_scale, "states_scale");
  finite_nonneg(p.memory.activation_scale, "activation_scale");
  finite_nonneg(p.memory.reserved_factor, "reserved_factor");
  finite_nonneg(p.memory.cuda_context, "cuda_context");
  finite_nonneg(p.time.matmul_scale, "matmul_scale");
  finite_nonneg(p.time.bandwidth_fraction, "bandwidth_fraction");
  finite_nonneg(p.time.comm_fraction, "comm_fraction");
  expect(p.memory.reserved_factor >= 1.0 && p.memory.reserved_factor <= 2.0, "reserved_factor out of [1, 2]");
  for (const auto& b : {p.memory_band, p.time_band})
    if (b) expect(b->q10 > 0 && b->q10 <= b->q50 && b->q50 <= b->q90 && std::isfinite(b->q90), "band not ordered");
  const gpuplan::profile back = gpuplan::io::read_profile_text(gpuplan::io::write_profile(p).dump());
  expect(back == p, "profile changed in a write/read round trip");
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if ((data[0] & 1) == 0) {
      check_profile(gpuplan::io::read_profile_text(text));
    } else {
      const std::vector<gpuplan::measurement> ms = gpuplan::io::read_measurements_text(text);
      gpuplan::fuzz::expect(!ms.empty(), "accepted an empty measurement list");
      if (ms.size() <= 8) check_profile(gpuplan::calibrate_profile(ms, "fuzz"));
    }
  } catch (const gpuplan::config_error& e) {
    gpuplan::fuzz::check_error(e);
  }
  return 0;
}
