// io/rl_report.hpp — the formatter of an RL step's estimate (rl.hpp): `gpuplan rl` (text,
// markdown and --json) and Python's gp.rl print through these functions, so both read the same;
// likewise `gpuplan rl --recommend` and gp.rl_recommend (src/report/rl_recommend.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "gpuplan/io/report.hpp"
#include "gpuplan/io/rl_json.hpp"
#include "gpuplan/plan/rl_recommend.hpp"
#include "gpuplan/rl.hpp"

namespace gpuplan {
struct recommend_options;  // plan/recommend.hpp
}

namespace gpuplan::io {

// One change that lowers the step's peak, estimated: `change` in scenario keys
// ("rl.sleep_level = 1"), why it lowers the peak, and the changed run with its estimate.
struct rl_suggestion {
  std::string change;
  std::string description;
  rl_input input;
  rl_estimate estimate;
};

// What `gpuplan rl` prints: the run, its estimate and, when it does not fit, the changes
// tried on it (the engine's share, sleep mode, LoRA, ZeRO-3, more GPUs, no reference, a
// smaller micro-batch, a separate rollout placement), those that fit first.
// With largest_micro_batch (`gpuplan rl --max-micro-batch`): the run at the largest micro-batch
// that fits (io/rl_json.hpp set_largest_micro_batch; at one sequence when none does).
struct rl_answer {
  rl_input input;
  rl_estimate estimate;
  std::vector<rl_suggestion> suggestions;
  bool searched = false;                         // asked for the largest micro-batch
  std::optional<std::int64_t> max_micro_batch;  // that micro-batch; nullopt: not even one sequence fits
};
rl_answer answer_rl(const rl_input& in, bool largest_micro_batch = false);

// `gpuplan rl --json`: {"scenario" (io/rl_json.hpp write_rl_scenario), "model", "algorithm",
// "framework", "trainer", "rollout", "placement", "rollout_fraction", "reference", "critic",
// "reward_model", "generations", "prompt_len", "completion_len", "mean_completion_len", "mean_prompt_len",
// "sequences_per_step", "phases": [{"name", "allocated_bytes", "reserved_bytes", "engine_bytes",
// "device_bytes", "peak"}...], "peak_phase", "fits", "device_bytes", "capacity_bytes",
// "headroom_bytes", "peak_reserved_bytes", "reference_bytes", "critic_bytes", "reward_bytes",
// "engine_budget_bytes", "rollout_device_bytes", "rollout_concurrency", "rollout_gpus",
// "rollout_fits", "gpus", "rollout_seconds", "scoring_seconds", "training_seconds",
// "transfer_seconds", "step_seconds", "tokens_per_second_per_gpu",
// "max_micro_batch" (searched answers only: the largest micro-batch, or null),
// "policy": {"scenario" (the actor's training run memory_json estimated: rl_estimate::policy_settings),
// "memory" (memory_json), "time" (time_json of one optimizer step)},
// "warnings", "suggestions": [{"change", "description", "fits", "peak_phase", "device_bytes",
// "headroom_bytes", "step_seconds", "scenario"}...]}. A rollout whose engine holds no whole
// sequence has null rollout_seconds and step_seconds.
nlohmann::json rl_json(const rl_answer& a);
// The phases on a training GPU in GiB (allocated, reserved, engine, device), the peak marked.
table rl_phase_table(const rl_estimate& e);
// The lines above the table: model, algorithm and framework, the actor's run, the rollout.
std::string rl_summary(const rl_answer& a);
// The lines under it: the verdict with its headroom, what each model holds, the step time
// split into rollout, scoring and training, tokens/s per GPU, warnings, and what lowers the peak.
std::string rl_details(const rl_answer& a, const style& s);
// rl_summary, the table and rl_details: the whole text or markdown report.
std::string rl_report(const rl_answer& a, const style& s);

// Which GPU and how many (`gpuplan rl --recommend`, gp.rl_recommend): the run of `input` on
// each candidate of a market (io::market_options: the GPUs named, else every GPU one can
// rent) at the fewest GPUs, 1, 2, 4, ... up to its max_gpus, whose every phase fits with its
// margin's headroom (plan/rl_recommend.hpp), priced at io::hourly_prices (the cheapest
// published offer per GPU-hour, the user's prices over it). Rows in recommend_rl's order.
struct rl_recommendation {
  rl_input input;
  rl_recommend_request request;
  std::vector<rl_option> rows;
};
rl_recommendation recommend_rl(const rl_input& in, const recommend_options& market);
// {"model", "algorithm", "framework", "max_gpus", "headroom_fraction", "headroom_min_bytes",
// "candidates": [GPU ids], "not_fitting": [GPU ids with no count that fits], "recommendations":
// [{"gpu", "gpus" (training GPUs), "rollout_gpus" (placement separate, else 0), "peak_phase",
// "device_bytes", "capacity_bytes", "headroom_bytes", "headroom_kept_bytes", "step_seconds",
// "tokens_per_second_per_gpu", "price_per_gpu_hour", "cost_per_step", "cost_per_million_tokens"
// (the last three null without a price)}...]}.
nlohmann::json rl_recommend_json(const rl_recommendation& r);
// One row per GPU type that fits: GPU, GPUs, peak phase, device, headroom, step, tokens/s per
// GPU, $/GPU-hour, $/step, $ per million tokens.
table rl_recommend_table(const rl_recommendation& r);
// The line above the table: the model, algorithm, framework and the criterion.
std::string rl_recommend_summary(const rl_recommendation& r);

}  // namespace gpuplan::io
