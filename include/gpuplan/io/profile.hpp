// io/profile.hpp — the calibration files: measurements of the user's own run in
// (JSON), a calibration profile out and back in (JSON). docs/calibration.md has
// both formats; every reader rejects unknown keys and out-of-range numbers with a
// one-line config_error naming the path and the value.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "gpuplan/calibrate.hpp"
#include "gpuplan/profile.hpp"

namespace gpuplan::io {

// The profile file: {"gpuplan_profile": 1, "name", "measured": {model, gpu, framework},
// "memory": {states_scale, activation_scale, reserved_factor, cuda_context_bytes, points, band},
// "time": {matmul_scale, bandwidth_fraction, comm_fraction, points, band}}.
// read(write(p)) == p for every profile calibrate_profile() makes.
nlohmann::json write_profile(const profile& p);
profile read_profile(const nlohmann::json& j);
profile read_profile_text(const std::string& text);
profile read_profile_file(const std::string& file);
// Writes `file` only if the profile reads back unchanged (read_profile(write_profile(p))
// == p, also from the written bytes), through a temporary file renamed into place, and
// never over an existing file unless `replace`; config_error otherwise, nothing written.
void save_profile_file(const profile& p, const std::string& file, bool replace);

// Measurements: a JSON array (or {"measurements": [...]}) of objects, each a
// "scenario" (as in a scenario file) and any of step_seconds,
// tokens_per_second_per_gpu, peak_allocated_bytes, peak_reserved_bytes,
// device_bytes (or the same sizes in GiB: peak_allocated_gib, ...).
std::vector<measurement> read_measurements(const nlohmann::json& j);
std::vector<measurement> read_measurements_text(const std::string& text);
std::vector<measurement> read_measurements_file(const std::string& file);

}  // namespace gpuplan::io
