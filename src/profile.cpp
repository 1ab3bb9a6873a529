// profile.cpp — the calibration files (io/profile.hpp, docs/calibration.md).
#include "gpuplan/io/profile.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <system_error>
#include <utility>

#include <nlohmann/json.hpp>

#include "gpuplan/io/scenario_json.hpp"
#include "json_fields.hpp"
#include "json_text.hpp"

namespace gpuplan::io {
namespace {

using json = nlohmann::json;
using detail::fail;
using namespace json_fields;

constexpr int kProfileVersion = 1;
// More measurements than anyone takes of one job; bounds the work of a hostile file.
constexpr std::size_t kMaxMeasurements = 10000;

// A number in [lo, hi], or config_error naming `path` and the value.
double get_in(const json& obj, const char* key, const std::string& path, double lo, double hi) {
  const std::string p = path + "." + key;
  const double v = get_number(obj.at(key), p);
  if (!(v >= lo && v <= hi)) fail(p, "must be between " + detail::num(lo) + " and " + detail::num(hi) + " (got " + show(obj.at(key)) + ")");
  return v;
}

json write_band(const detail::band_factors& f) { return json::array({f.q10, f.q50, f.q90}); }

detail::band_factors read_band(const json& v, const std::string& path) {
  if (!v.is_array() || v.size() != 3) fail(path, "must be [p10, p50, p90] (got " + show(v) + ")");
  detail::band_factors f{get_number(v[0], path + "[0]"), get_number(v[1], path + "[1]"), get_number(v[2], path + "[2]")};
  if (!(f.q10 > 0 && f.q10 <= f.q50 && f.q50 <= f.q90 && f.q90 < 100))
    fail(path, "must be ratios with 0 < p10 <= p50 <= p90 < 100 (got " + show(v) + ")");
  return f;
}

std::string get_string(const json& v, const std::string& path) {
  if (!v.is_string() || v.get_ref<const std::string&>().empty() || v.get_ref<const std::string&>().size() > 200)
    fail(path, "must be a non-empty string of at most 200 characters (got " + show(v) + ")");
  return v.get<std::string>();
}

int get_points(const json& obj, const std::string& path) {
  const std::int64_t n = get_int(obj.at("points"), path + ".points");
  if (n < 1 || n > static_cast<std::int64_t>(kMaxMeasurements)) fail(path + ".points", "must be between 1 and 10000 (got " + show(obj.at("points")) + ")");
  return static_cast<int>(n);
}

// A size in bytes under `key_bytes` or in GiB under `key_gib` (not both); `name` becomes
// the path of the key given, for the checks that follow.
std::optional<Bytes> get_size(const json& m, const std::string& path, const char* key_bytes, const char* key_gib,
                              std::string& name) {
  const bool b = m.contains(key_bytes), g = m.contains(key_gib);
  if (b && g) fail(path + "." + key_gib, std::string("give either ") + key_bytes + " or " + key_gib + ", not both");
  if (!b && !g) return std::nullopt;
  const char* key = b ? key_bytes : key_gib;
  name = path + "." + key;
  const double v = get_number(m.at(key), path + "." + key);
  const double scale = b ? 1.0 : kGiB;
  // Positive and below 64 TiB: larger than any device or host memory a run reports.
  if (!(v > 0 && v * scale < 64.0 * 1024 * kGiB)) fail(path + "." + key, "must be a positive size below 64 TiB (got " + show(m.at(key)) + ")");
  return bytes(v * scale);
}

}  // namespace

json write_profile(const profile& p) {
  json j;
  j["gpuplan_profile"] = kProfileVersion;
  j["name"] = p.name;
  j["measured"] = {{"model", p.model}, {"gpu", p.gpu}, {"framework", p.framework}};
  if (p.memory_points > 0) {
    json m = {{"states_scale", p.memory.states_scale}, {"activation_scale", p.memory.activation_scale},
              {"reserved_factor", p.memory.reserved_factor}, {"cuda_context_bytes", p.memory.cuda_context},
              {"points", p.memory_points}};
    if (p.memory_band) m["band"] = write_band(*p.memory_band);
    j["memory"] = std::move(m);
  }
  if (p.time_points > 0) {
    json t = {{"matmul_scale", p.time.matmul_scale}, {"bandwidth_fraction", p.time.bandwidth_fraction},
              {"comm_fraction", p.time.comm_fraction}, {"points", p.time_points}};
    if (p.time_band) t["band"] = write_band(*p.time_band);
    j["time"] = std::move(t);
  }
  return j;
}

profile read_profile(const json& j) {
  const std::string path = "profile";
  require_object(j, path);
  check_keys(j, path, {"gpuplan_profile", "name", "measured", "memory", "time"});
  if (!j.contains("gpuplan_profile")) fail(path + ".gpuplan_profile", "is required (1): this is not a gpuplan profile file");
  if (get_int(j["gpuplan_profile"], path + ".gpuplan_profile") != kProfileVersion)
    fail(path + ".gpuplan_profile", "must be 1 (got " + show(j["gpuplan_profile"]) + ")");
  profile p;
  if (!j.contains("name")) fail(path + ".name", "is required");
  p.name = get_string(j["name"], path + ".name");
  if (j.contains("measured")) {
    const json& m = j["measured"];
    require_object(m, path + ".measured");
    check_keys(m, path + ".measured", {"model", "gpu", "framework"});
    if (m.contains("model")) p.model = get_string(m["model"], path + ".measured.model");
    if (m.contains("gpu")) p.gpu = get_string(m["gpu"], path + ".measured.gpu");
    if (m.contains("framework")) p.framework = get_string(m["framework"], path + ".measured.framework");
  }
  if (j.contains("memory")) {
    const json& m = j["memory"];
    const std::string mp = path + ".memory";
    require_object(m, mp);
    check_keys(m, mp, {"states_scale", "activation_scale", "reserved_factor", "cuda_context_bytes", "points", "band"});
    for (const char* k : {"states_scale", "activation_scale", "reserved_factor", "cuda_context_bytes", "points"})
      if (!m.contains(k)) fail(mp + "." + k, "is required");
    // The ranges calibrate_memory() clamps to.
    p.memory.states_scale = get_in(m, "states_scale", mp, gpuplan::detail::kStatesScaleMin, gpuplan::detail::kStatesScaleMax);
    p.memory.activation_scale = get_in(m, "activation_scale", mp, gpuplan::detail::kActivationScaleMin, gpuplan::detail::kActivationScaleMax);
    p.memory.reserved_factor = get_in(m, "reserved_factor", mp, gpuplan::detail::kReservedFactorMin, gpuplan::detail::kReservedFactorMax);
    p.memory.cuda_context = get_in(m, "cuda_context_bytes", mp, 0.0, gpuplan::detail::kCudaContextMax);
    p.memory_points = get_points(m, mp);
    if (m.contains("band")) p.memory_band = read_band(m["band"], mp + ".band");
  }
  if (j.contains("time")) {
    const json& t = j["time"];
    const std::string tp = path + ".time";
    require_object(t, tp);
    check_keys(t, tp, {"matmul_scale", "bandwidth_fraction", "comm_fraction", "points", "band"});
    for (const char* k : {"matmul_scale", "bandwidth_fraction", "comm_fraction", "points"})
      if (!t.contains(k)) fail(tp + "." + k, "is required");
    // The bounds calibrate() fits within.
    p.time.matmul_scale = get_in(t, "matmul_scale", tp, gpuplan::detail::kEfficiencyMin, gpuplan::detail::kEfficiencyMax);
    p.time.bandwidth_fraction = get_in(t, "bandwidth_fraction", tp, gpuplan::detail::kEfficiencyMin, gpuplan::detail::kEfficiencyMax);
    p.time.comm_fraction = get_in(t, "comm_fraction", tp, gpuplan::detail::kEfficiencyMin, gpuplan::detail::kEfficiencyMax);
    p.time_points = get_points(t, tp);
    if (t.contains("band")) p.time_band = read_band(t["band"], tp + ".band");
  }
  return p;
}

profile read_profile_text(const std::string& text) { return read_profile(detail::parse_json_text(text, "profile")); }

profile read_profile_file(const std::string& file) { return read_profile_text(read_text_file(file, "profile")); }

namespace {

// The profile read back from `text` equals `p`, or config_error (nothing is written then).
void require_round_trip(const profile& p, const std::string& text, const std::string& from) {
  profile back;
  try {
    back = read_profile_text(text);
  } catch (const config_error& e) {
    fail("profile", "would not read back" + from + " (" + e.what() + "); not written");
  }
  if (!(back == p)) fail("profile", "changes in a write/read round trip" + from + "; not written");
}

// Moves the finished temporary file `tmp` to `file`. Without `replace`, a hard link
// claims the name only if it is free (no window in which another file is replaced);
// where links are not supported, an existence check and a rename do.
void publish(const std::filesystem::path& tmp, const std::string& file, bool replace, const std::string& shown) {
  namespace fs = std::filesystem;
  std::error_code ec, ignored;
  const auto exists = [&] {
    fs::remove(tmp, ignored);
    fail("profile", "file " + shown + " exists; not replaced", error_kind::io_error);
  };
  if (!replace) {
    fs::create_hard_link(tmp, file, ec);
    if (ec == std::errc::file_exists) exists();
    if (!ec) {
      fs::remove(tmp, ignored);
      return;
    }
    if (fs::exists(file, ignored)) exists();
    ec.clear();
  }
  fs::rename(tmp, file, ec);
  if (ec) {
    fs::remove(tmp, ignored);
    fail("profile", "cannot write file " + shown + " (" + ec.message() + ")", error_kind::io_error);
  }
}

}  // namespace

void save_profile_file(const profile& p, const std::string& file, bool replace) {
  namespace fs = std::filesystem;
  const std::string shown = "'" + detail::quote_text(file) + "'";
  const std::string text = write_profile(p).dump(2) + "\n";
  require_round_trip(p, text, "");  // only a profile the reader gives back unchanged is written
  std::error_code ignored;
  if (!replace && fs::exists(file, ignored)) fail("profile", "file " + shown + " exists; not replaced", error_kind::io_error);
  // Written beside the target under a fresh name, checked, then renamed: a failure
  // anywhere leaves no partial or unchecked profile under `file`.
  fs::path tmp;
  std::random_device rd;
  do tmp = fs::path(file + ".tmp-" + std::to_string(rd()));
  while (fs::exists(tmp, ignored));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      fs::remove(tmp, ignored);
      fail("profile", "cannot write file " + shown, error_kind::io_error);
    }
  }
  try {
    require_round_trip(p, read_text_file(tmp.string(), "profile"), " from the file");
  } catch (const config_error&) {
    fs::remove(tmp, ignored);
    throw;
  }
  publish(tmp, file, replace, shown);
}

std::vector<measurement> read_measurements(const json& j) {
  const json* list = &j;
  std::string base = "measurements";
  if (j.is_object()) {
    check_keys(j, base, {"measurements"});
    if (!j.contains("measurements")) fail(base, "is required (an array of measured runs)");
    list = &j["measurements"];
  }
  if (!list->is_array()) fail(base, "must be an array of measured runs (got " + show(*list) + ")");
  if (list->empty()) fail(base, "must not be empty");
  if (list->size() > kMaxMeasurements) fail(base, "more than 10000 measurements (got " + std::to_string(list->size()) + ")");
  std::vector<measurement> out;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& m = (*list)[i];
    const std::string path = base + "[" + std::to_string(i) + "]";
    require_object(m, path);
    check_keys(m, path, {"scenario", "step_seconds", "tokens_per_second_per_gpu", "peak_allocated_bytes", "peak_reserved_bytes",
                         "device_bytes", "peak_allocated_gib", "peak_reserved_gib", "device_gib", "note"});
    if (!m.contains("scenario")) fail(path + ".scenario", "is required (the run that was measured, as in a scenario file)");
    resolved_run r = [&] {
      try {
        return read_scenario(m["scenario"]);
      } catch (const config_error& e) {
        throw config_error(path + "." + e.path(), std::string(e.what()).substr(e.path().size() + 2), e.kind());
      }
    }();
    measurement x;
    x.model = r.model();
    x.run = r.settings();
    if (m.contains("step_seconds")) {
      const double v = get_number(m["step_seconds"], path + ".step_seconds");
      if (!(v > 0 && v < 1e7)) fail(path + ".step_seconds", "must be positive and below 10^7 s (got " + show(m["step_seconds"]) + ")");
      x.step = seconds(v);
    }
    if (m.contains("tokens_per_second_per_gpu")) {
      const double v = get_number(m["tokens_per_second_per_gpu"], path + ".tokens_per_second_per_gpu");
      if (!(v > 0 && v < 1e9)) fail(path + ".tokens_per_second_per_gpu", "must be positive and below 10^9 (got " + show(m["tokens_per_second_per_gpu"]) + ")");
      x.tokens_per_second_per_gpu = v;
    }
    if (x.step && x.tokens_per_second_per_gpu) fail(path, "give step_seconds or tokens_per_second_per_gpu, not both");
    measurement_names& n = x.names;
    n.point = path;
    n.step = path + ".step_seconds";
    n.tokens_per_second = path + ".tokens_per_second_per_gpu";
    x.peak_allocated = get_size(m, path, "peak_allocated_bytes", "peak_allocated_gib", n.allocated);
    x.peak_reserved = get_size(m, path, "peak_reserved_bytes", "peak_reserved_gib", n.reserved);
    x.device = get_size(m, path, "device_bytes", "device_gib", n.device);
    if (!x.has_time() && !x.has_memory())
      fail(path, "gives nothing measured (step_seconds, tokens_per_second_per_gpu, peak_allocated_bytes, peak_reserved_bytes or device_bytes)");
    check_measurement(x, i);  // physics: time in range, figures nested, within the card, above the weights
    out.push_back(std::move(x));
  }
  return out;
}

std::vector<measurement> read_measurements_text(const std::string& text) {
  return read_measurements(detail::parse_json_text(text, "measurements"));
}

std::vector<measurement> read_measurements_file(const std::string& file) {
  return read_measurements_text(read_text_file(file, "measurements"));
}

}  // namespace gpuplan::io
