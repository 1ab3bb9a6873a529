// timing.hpp — step time, throughput, time-to-train and cost.
// The model (docs/time-model.md): matmul time from FLOPs at a shape-dependent
// fraction of the dense peak; element-wise work, optimizer and decode from bytes
// over memory bandwidth; communication from ring collectives over the link each
// parallel group uses, with the overlap frameworks achieve; pipeline bubble;
// offload over PCIe. All defaults live in efficiency_params (one set for all GPUs).
// estimate_time_of() runs the phases, one header each under detail/:
//   timing_model.hpp     peaks, device rates, GEMM efficiency, collectives, links
//   timing_compute.hpp   per-block and per-micro-batch compute (compute_per_microbatch)
//   timing_comm.hpp      TP/EP/CP/PP, ZeRO-3 and DP communication (communication)
//   timing_pipeline.hpp  stage time and bubble (pipeline, pipeline_bubble)
//   timing_optimizer.hpp optimizer step, offload, paged optimizers (optimizer_and_offload)
//   timing_serving.hpp   prefill and decode (serving_time)
// and this header assembles them (assemble_step, assemble_serving).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "gpuplan/detail/timing_comm.hpp"
#include "gpuplan/detail/timing_compute.hpp"
#include "gpuplan/detail/timing_model.hpp"
#include "gpuplan/detail/timing_optimizer.hpp"
#include "gpuplan/detail/timing_params.hpp"
#include "gpuplan/detail/timing_pipeline.hpp"
#include "gpuplan/detail/timing_serving.hpp"
#include "gpuplan/flops.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/run.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/units.hpp"
#include "gpuplan/warnings.hpp"

namespace gpuplan {

struct time_breakdown {
  Seconds compute = seconds(0);
  Seconds communication = seconds(0);  // exposed (not overlapped) communication
  Seconds bubble = seconds(0);         // pipeline bubble
  Seconds optimizer = seconds(0);
  Seconds offload = seconds(0);
};

struct time_estimate {
  Seconds step = seconds(0);  // one optimizer step (all micro-batches)
  double tokens_per_second_per_gpu = 0;
  double tokens_per_second = 0;
  FlopCount model_flops_per_step = flops(0);     // excludes recompute
  FlopCount hardware_flops_per_step = flops(0);  // includes recompute
  double mfu = 0;
  double hfu = 0;
  Seconds total = seconds(0);  // time to train `tokens` (0 when tokens unset)
  double gpu_hours = 0;
  std::optional<double> cost;
  double energy_kwh = 0;
  time_breakdown breakdown{};
  // Serving (workload: infer).
  Seconds time_to_first_token = seconds(0);
  double decode_tokens_per_second_per_sequence = 0;
  double decode_tokens_per_second = 0;
  std::int64_t decode_compute_bound_batch = 0;
  warning_set warnings = 0;
  // Added by the time model (after the fixed fields).
  Seconds total_communication = seconds(0);  // all communication, overlapped or not
  double peak_flop_per_s = 0;                // dense peak MFU/HFU are measured against (per GPU)
};

// With the run's efficiency constants (its calibration profile's, else the defaults).
inline time_estimate estimate_time(const run& r);
// With explicit constants (calibrate.hpp fits them through this form).
inline time_estimate estimate_time(const run& r, const efficiency_params& eff);
// Convenience: validate (config_error on a broken rule), then estimate.
inline time_estimate estimate_time(const architecture& model, const scenario& s, const efficiency_params& eff = {}) {
  return estimate_time(run(model, s), eff);
}

namespace detail {

// Unit conversions of the totals.
inline constexpr double kSecondsPerHour = 3600.0;
inline constexpr double kWattHoursPerKilowattHour = 1000.0;

// Warnings that depend on the configuration rather than on the peaks (select_peaks adds those).
inline warning_set configuration_warnings(const architecture& a, const scenario& run) {
  warning_set w = 0;
  const gpu_spec& g = run.gpu;
  // FlashAttention-2 needs sm_80+ (Dao 2023); older GPUs get SDPA's memory-efficient kernel.
  if (run.attn == attention::flash && g.vendor == gpu_vendor::nvidia && g.sm() < 80) w |= warn_flash_unsupported;
  if (run.parallel.tp_size() > 1 && !(g.has_nvlink() && run.parallel.tp_size() <= g.link_group)) w |= warn_no_nvlink_tp;
  if (!g.confidence.empty() && g.confidence.find("unverified") != std::string::npos) w |= warn_unverified_gpu;
  if (a.max_positions > 0 && !a.is_vit() && run.seq_len > a.max_positions && a.positions == position_kind::learned)
    w |= warn_seq_beyond_positions;
  return w;
}

// Serving: step = prefill + gen_len decode steps; tokens/s over the dp replicas; FLOPs =
// the prefill forward + gen_len × the decode FLOPs of every GPU of a replica.
inline time_estimate assemble_serving(const architecture& a, const scenario& run, const device_rates& d,
                                      const serving_cost& c, warning_set w) {
  time_estimate out;
  out.peak_flop_per_s = d.mfu_peak;
  const int tp = run.parallel.tp_size(), pp = run.parallel.pp;
  const double B = static_cast<double>(run.inference.batch);
  const double gen = static_cast<double>(run.inference.gen_len);
  const double t_dec = c.decode_step;
  out.time_to_first_token = seconds(c.prefill.seconds);
  out.decode_tokens_per_second_per_sequence = 1.0 / t_dec;
  out.decode_tokens_per_second = B / t_dec;
  out.decode_compute_bound_batch = c.compute_bound_batch;
  const double total = c.prefill.seconds + gen * t_dec;
  out.step = seconds(total);
  out.breakdown.compute = seconds(total - c.prefill.stage_tp_comm * pp);
  out.breakdown.communication = seconds(c.prefill.stage_tp_comm * pp);
  const double replicas = static_cast<double>(std::max(1, run.dp()));
  out.tokens_per_second = replicas * B * gen / total;
  out.tokens_per_second_per_gpu = out.tokens_per_second / run.num_gpus;
  const FlopCount fl = inference_flops(a, run, B, run.inference.prompt_len) + flops(gen * c.decode.flop_per_seq * tp * pp * B);
  out.model_flops_per_step = fl * replicas;
  out.hardware_flops_per_step = fl * replicas;
  out.mfu = out.hfu = in_flops(fl) / (total * tp * pp * d.mfu_peak);
  out.warnings = w;
  return out;
}

// Time to train `tokens`, GPU-hours, cost, and energy = TDP × utilisation × GPU-hours with
// utilisation = idle_power_fraction + (1 − idle) × the busy share of the step (compute,
// optimizer); communication and bubble time draw idle power (an assumption, docs/time-model.md).
inline void add_totals(time_estimate& out, const scenario& run, double busy_seconds, const efficiency_params& e) {
  if (!run.tokens || *run.tokens <= 0) return;
  const double total = *run.tokens / out.tokens_per_second;
  out.total = seconds(total);
  out.gpu_hours = total * run.num_gpus / kSecondsPerHour;
  if (run.price_per_gpu_hour) out.cost = out.gpu_hours * *run.price_per_gpu_hour;
  const double busy = busy_seconds / in_seconds(out.step);
  const double util = e.idle_power_fraction + (1.0 - e.idle_power_fraction) * busy;
  out.energy_kwh = run.gpu.tdp_watts * util * out.gpu_hours / kWattHoursPerKilowattHour;
}

// Training step = grad_accum × micro-batch compute + exposed communication + bubble +
// optimizer + offload; tokens/s = global batch × seq / step; MFU/HFU = model/hardware FLOPs
// over step × GPUs × peak (Chowdhery et al. 2022, App. B).
inline time_estimate assemble_step(const scenario& run, const device_rates& d, const microbatch_shape& m,
                                   const flop_breakdown& F, const compute_cost& c, const comm_cost& k,
                                   const pipeline_cost& p, const optimizer_cost& o, const efficiency_params& e,
                                   warning_set w) {
  time_estimate out;
  out.peak_flop_per_s = d.mfu_peak;
  out.model_flops_per_step = F.model;
  out.hardware_flops_per_step = F.hardware;
  const double compute = static_cast<double>(run.grad_accum) * c.microbatch;
  const double step = compute + k.step_exposed + p.bubble + o.optimizer + o.offload;
  out.breakdown.compute = seconds(compute);
  out.breakdown.communication = seconds(k.step_exposed);
  out.breakdown.bubble = seconds(p.bubble);
  out.breakdown.optimizer = seconds(o.optimizer);
  out.breakdown.offload = seconds(o.offload);
  out.total_communication = seconds(k.total);
  out.step = seconds(step);
  out.tokens_per_second = static_cast<double>(run.global_batch()) * (m.seq - static_cast<double>(prompt_tokens(run))) / step;  // real tokens
  out.tokens_per_second_per_gpu = out.tokens_per_second / run.num_gpus;
  const double capacity = step * run.num_gpus * d.mfu_peak;
  out.mfu = in_flops(F.model) / capacity;
  out.hfu = in_flops(F.hardware) / capacity;
  add_totals(out, run, compute + o.optimizer, e);
  out.warnings = w;
  return out;
}

// The time model as a pipeline of phases, each a pure function over value types:
// device rates → (serving) prefill + decode, or (training) FLOPs → per-block costs →
// compute per micro-batch → communication → pipeline bubble → optimizer and offload → step.
// `P` is count_parameters(a) (a run holds it: run::parameters); `memo`, when given, keeps
// the block costs between calls on runs of one template (block_memo).
inline time_estimate estimate_time_of(const architecture& a, const scenario& run, const efficiency_params& e,
                                      const parameter_breakdown& P, block_memo* memo = nullptr) {
  warning_set w = 0;
  const device_rates d = device_rates_of(run.gpu, precision_of(run), e, w);
  w |= configuration_warnings(a, run);
  if (run.work == workload::infer) return assemble_serving(a, run, d, serving_time(a, run, d, P, e), w);

  const flop_breakdown F = training_flops(a, run);
  const microbatch_shape m = microbatch_of(a, run);
  const backward_scope sc = backward_scope_of(a, run);
  const stage_parameters sp = stage_parameters_of(run, P.total, trainable_parameters(a, run, P));
  // The slowest stage paces every micro-batch (1F1B: Narayanan et al. 2021 §2.2): of the
  // first stage, the last (blocks + head) and the fullest middle one (pp - 2: the remainder
  // goes to the last stages), the one with the most compute + exposed communication.
  const int pp = std::max(1, run.parallel.pp);
  stage_blocks blocks = stage_blocks_of(a, run, d, m, e, pp - 1, nullptr, memo);
  compute_cost c = compute_per_microbatch(a, run, d, m, blocks, sc, e, sp.trainable_params, true);
  comm_cost k = communication(a, run, m, blocks, sc, c, sp, d.peak.act_bytes, e);
  const int middle = pp - 2 > 0 ? pp - 2 : -1;  // pp 2: the first stage is the only other one
  for (const int st : {0, middle}) {
    if (st < 0 || st >= pp - 1) continue;
    const stage_blocks b = stage_blocks_of(a, run, d, m, e, st, &blocks);  // the same blocks, another count
    const compute_cost cs = compute_per_microbatch(a, run, d, m, b, sc, e, sp.trainable_params, false);
    const comm_cost ks = communication(a, run, m, b, sc, cs, sp, d.peak.act_bytes, e);
    if (cs.microbatch + ks.microbatch_exposed > c.microbatch + k.microbatch_exposed) {
      blocks = b;
      c = cs;
      k = ks;
    }
  }
  const pipeline_cost p = pipeline(run, c, k);
  const optimizer_cost o = optimizer_and_offload(a, run, d, sp, e);
  return assemble_step(run, d, m, F, c, k, p, o, e, w);
}
inline time_estimate estimate_time_of(const architecture& a, const scenario& run, const efficiency_params& e) {
  return estimate_time_of(a, run, e, count_parameters(a));
}

}  // namespace detail

inline time_estimate estimate_time(const run& r, const efficiency_params& e) {
  detail::require_valid(r);
  return detail::estimate_time_of(r.model(), r.settings(), e, r.parameters());
}

inline time_estimate estimate_time(const run& r) { return estimate_time(r, r.efficiency()); }

namespace detail {
// estimate_time(r) for a caller that estimates many runs of one template, edited only in
// their layout (the search): the same estimate, the block costs kept in `memo` between calls.
inline time_estimate estimate_time_reusing(const run& r, block_memo& memo) {
  require_valid(r);
  return estimate_time_of(r.model(), r.settings(), r.efficiency(), r.parameters(), &memo);
}
}  // namespace detail

}  // namespace gpuplan
