// fuzz_rl — io::read_rl_scenario_text on raw bytes (`gpuplan rl --scenario FILE`): errors are
// one-line config_errors; an accepted RL scenario estimates without throwing, to finite
// figures (a rollout engine that holds no whole sequence excepted), and its written scenario
// reads back to the same estimate.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_common.hpp"
#include "gpuplan/io/rl_json.hpp"
#include "gpuplan/io/rl_report.hpp"

namespace {

using namespace gpuplan;

void check_estimate(const rl_estimate& e) {
  fuzz::expect(e.phase_count >= 1 && e.phase_count <= 4 && e.peak_phase >= 0 && e.peak_phase < e.phase_count, "rl: phase count");
  for (int i = 0; i < e.phase_count; ++i) {
    const rl_phase& p = e.phases[static_cast<std::size_t>(i)];
    fuzz::finite_nonneg(in_bytes(p.allocated), "rl.phase.allocated");
    fuzz::finite_nonneg(in_bytes(p.reserved), "rl.phase.reserved");
    fuzz::finite_nonneg(in_bytes(p.engine), "rl.phase.engine");
    fuzz::finite_nonneg(in_bytes(p.device), "rl.phase.device");
    fuzz::expect(in_bytes(p.device) <= in_bytes(e.device), "rl: a phase above the peak");
  }
  fuzz::expect(std::isfinite(in_bytes(e.headroom)), "rl: headroom not finite");
  fuzz::expect(e.fits == (in_bytes(e.headroom) >= 0 && e.rollout_fits), "rl: fits disagrees with the headroom");
  fuzz::check_memory(e.policy);
  fuzz::finite_nonneg(in_seconds(e.scoring_time), "rl.scoring_time");
  fuzz::finite_nonneg(in_seconds(e.training_time), "rl.training_time");
  fuzz::finite_nonneg(in_seconds(e.transfer_time), "rl.transfer_time");
  if (std::isfinite(in_seconds(e.rollout_time))) {
    fuzz::finite_nonneg(in_seconds(e.rollout_time), "rl.rollout_time");
    fuzz::finite_nonneg(in_seconds(e.step), "rl.step");
    fuzz::finite_nonneg(e.tokens_per_second_per_gpu, "rl.tokens_per_second_per_gpu");
  } else {
    fuzz::expect(e.rollout_concurrency == 0 && e.rollout != engine::hf, "rl: infinite rollout with an engine that runs");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::optional<io::rl_input> in;
  try {
    in = io::read_rl_scenario_text(text);
  } catch (const config_error& e) {
    fuzz::check_error(e);
    return 0;
  }
  rl_estimate e;
  nlohmann::json written;
  try {
    e = io::estimate_rl(*in);
    check_estimate(e);
    (void)io::rl_json(io::rl_answer{*in, e, {}});
    written = io::write_rl_scenario(*in);
  } catch (const std::exception& x) {
    fuzz::die("an accepted rl scenario failed to estimate or write", x.what());
  }
  try {
    const rl_estimate back = io::estimate_rl(io::read_rl_scenario(written));
    fuzz::expect(in_bytes(back.device) == in_bytes(e.device) && back.fits == e.fits, "rl: round trip changed the memory",
                 written.dump());
    fuzz::expect(in_seconds(back.step) == in_seconds(e.step) || (std::isnan(in_seconds(back.step)) && std::isnan(in_seconds(e.step))),
                 "rl: round trip changed the step", written.dump());
  } catch (const config_error& x) {
    fuzz::die("write_rl_scenario output rejected by read_rl_scenario", std::string(x.what()) + "\n" + written.dump());
  }
  return 0;
}
