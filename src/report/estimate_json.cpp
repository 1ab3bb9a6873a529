// report/estimate_json.cpp — an estimate as JSON: memory, time, their bands, the allocator
// replay and the calibration profile. JSON keys are a contract with scripts and the Python
// package (docs/cli.md lists them).
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common.hpp"
#include "gpuplan/io/profile.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/replay.hpp"

namespace gpuplan::io {
using nlohmann::json;

namespace {

std::string_view phase_name(memory_breakdown::phase p) {
  switch (p) {
    case memory_breakdown::phase::forward_loss: return "forward_loss";
    case memory_breakdown::phase::loss_backward: return "loss_backward";
    case memory_breakdown::phase::backward_start: return "backward_start";
    case memory_breakdown::phase::backward_end: return "backward_end";
    case memory_breakdown::phase::optimizer_step: return "optimizer_step";
    case memory_breakdown::phase::inference: return "inference";
  }
  return "?";
}

// Seconds as JSON; null when the figure was not computed (tokens unset).
json seconds_or_null(Seconds s, bool known) { return known ? json(in_seconds(s)) : json(nullptr); }

json band_source_json(const band_source& s) {
  auto any = [](int v) { return v < 0 ? json(nullptr) : json(v == 1); };
  return {{"peft", any(s.peft)}, {"multi_gpu", any(s.multi_gpu)}, {"cases", s.cases}, {"validated", s.validated},
          {"calibrated", s.calibrated}, {"covered", s.covered}};
}

}  // namespace

std::vector<std::string> warning_messages(warning_set w) {
  std::vector<std::string> out;
  for (std::uint32_t bit = 1; bit != 0; bit <<= 1) {
    if ((w & bit) == 0) continue;
    const std::string_view msg = warning_message(static_cast<warning>(bit));
    out.emplace_back(msg.empty() ? "warning bit " + std::to_string(bit) : std::string(msg));
  }
  return out;
}

// --------------------------------------------------------------------------- JSON

json memory_json(const memory_breakdown& m) { return memory_json(m, workload::train); }

json memory_json(const memory_breakdown& m, workload work) {
  json j = {
      {"weights_bytes", in_bytes(m.weights)},
      {"master_weights_bytes", in_bytes(m.master_weights)},
      {"gradients_bytes", in_bytes(m.gradients)},
      {"optimizer_bytes", in_bytes(m.optimizer)},
      {"activations_bytes", in_bytes(m.activations)},
      {"transient_bytes", in_bytes(m.transient)},
      {"overhead_bytes", in_bytes(m.overhead)},
      {"peak_allocated_bytes", in_bytes(m.peak_allocated)},
      {"peak_reserved_bytes", in_bytes(m.peak_reserved)},
      {"device_bytes", in_bytes(m.device)},
      {"capacity_bytes", in_bytes(m.capacity)},
      {"headroom_bytes", in_bytes(m.headroom)},
      {"fits", m.fits},
      {"host_bytes", in_bytes(m.host)},
      {"stage", m.stage},
      {"peak_phase", phase_name(m.peak_phase)},
  };
  if (work == workload::infer) {
    j["kv_cache_bytes"] = in_bytes(m.kv_cache);
    j["max_concurrent_sequences"] = m.max_concurrent_sequences;
  }
  return j;
}

json time_json(const time_estimate& t) { return time_json(t, workload::train); }

json time_json(const time_estimate& t, workload work) {
  // total_seconds is 0 exactly when no token count was given (timing.hpp): then the
  // time-to-train figures do not exist and print as null rather than as 0.
  const bool trained = in_seconds(t.total) > 0;
  json j = {
      {"step_seconds", in_seconds(t.step)},
      {"tokens_per_second_per_gpu", t.tokens_per_second_per_gpu},
      {"tokens_per_second", t.tokens_per_second},
      {"model_flops_per_step", in_flops(t.model_flops_per_step)},
      {"hardware_flops_per_step", in_flops(t.hardware_flops_per_step)},
      {"mfu", t.mfu},
      {"hfu", t.hfu},
      {"total_seconds", seconds_or_null(t.total, trained)},
      {"gpu_hours", trained ? json(t.gpu_hours) : json(nullptr)},
      {"cost", t.cost ? json(*t.cost) : json(nullptr)},
      {"energy_kwh", trained ? json(t.energy_kwh) : json(nullptr)},
      {"breakdown",
       {{"compute_seconds", in_seconds(t.breakdown.compute)},
        {"communication_seconds", in_seconds(t.breakdown.communication)},
        {"bubble_seconds", in_seconds(t.breakdown.bubble)},
        {"optimizer_seconds", in_seconds(t.breakdown.optimizer)},
        {"offload_seconds", in_seconds(t.breakdown.offload)}}},
      {"total_communication_seconds", in_seconds(t.total_communication)},
      {"peak_flops_per_second", t.peak_flop_per_s},
  };
  if (work == workload::infer) {
    j["time_to_first_token_seconds"] = in_seconds(t.time_to_first_token);
    j["decode_tokens_per_second_per_sequence"] = t.decode_tokens_per_second_per_sequence;
    j["decode_tokens_per_second"] = t.decode_tokens_per_second;
    j["decode_compute_bound_batch"] = t.decode_compute_bound_batch;
  }
  return j;
}

json replay_json(const allocator_replay& rp, const memory_breakdown& m) {
  return {{"peak_allocated_bytes", rp.peak_allocated},
          {"peak_reserved_bytes", rp.peak_reserved},
          {"reserved_over_allocated", rp.ratio},
          {"fast_path_reserved_over_allocated", fast_path_ratio(m)},
          {"tensors", rp.tensors},
          {"segments", rp.segments}};
}

json estimate_json(const resolved_run& r) {
  const architecture& a = r.model();
  const scenario& run = r.settings();
  const parameter_breakdown p = count_parameters(a);
  const std::vector<memory_breakdown> stages = estimate_memory_stages(r.run);
  const memory_breakdown mem = estimate_memory(r.run);
  const time_estimate t = estimate_time(r.run);

  json j;
  j["model"] = {{"name", a.name},
                {"spec", r.model_spec},
                {"family", a.family},
                {"parameters", p.total},
                {"trainable_parameters", trainable_parameters(r.run)},
                {"components", report_detail::components_json(p)},
                {"largest_layer_parameters", p.largest_layer}};
  j["scenario"] = write_scenario(r);
  if (r.run.calibration() != nullptr) j["profile"] = calibration_json(r.run);
  j["memory"] = memory_json(mem, run.work);
  json st = json::array();
  warning_set w = mem.warnings | t.warnings;
  for (const auto& s : stages) {
    st.push_back(memory_json(s, run.work));
    w |= s.warnings;
  }
  j["memory"]["stages"] = std::move(st);
  const memory_bands mb = bands_of(r.run, mem);
  j["memory"]["bands"] = memory_bands_json(mb);
  // The default planning margin (plan/margin.hpp); fits is the verdict's, here and per stage.
  const fit_answer answer = answer_of(mem, mb);
  j["memory"]["verdict"] = to_string(answer.state);
  j["memory"]["fits"] = answer.fits;
  for (std::size_t i = 0; i < stages.size(); ++i)
    j["memory"]["stages"][i]["fits"] = answer_of(stages[i], bands_of(r.run, stages[i])).fits;
  if (const allocator_replay rp = replay_allocator(r.run); rp.replayed) j["memory"]["allocator_replay"] = replay_json(rp, mem);
  j["time"] = time_json(t, run.work);
  j["time"]["bands"] = time_bands_json(bands_of(r.run, t));
  j["warnings"] = warning_messages(w);
  return j;
}

json band_json(const band& b) { return {{"p10", b.p10}, {"p50", b.p50}, {"p90", b.p90}}; }

json memory_bands_json(const memory_bands& b) {
  return {{"peak_allocated_bytes", band_json(b.peak_allocated)},
          {"peak_reserved_bytes", band_json(b.peak_reserved)},
          {"device_bytes", band_json(b.device)},
          {"regime", band_source_json(b.source)}};
}

json time_bands_json(const time_bands& b) {
  return {{"step_seconds", band_json(b.step_seconds)},
          {"tokens_per_second_per_gpu", band_json(b.tokens_per_second_per_gpu)},
          {"regime", band_source_json(b.source)}};
}

json calibration_json(const run& r) {
  const profile* p = r.calibration();
  if (p == nullptr) return nullptr;
  json j = write_profile(*p);
  j.erase("gpuplan_profile");
  return j;
}

}  // namespace gpuplan::io
