// io/rl_json.hpp — the RL scenario (docs/scenario.md § rl): a training scenario whose "rl"
// object describes the post-training step (rl.hpp), read into the policy's scenario and an
// rl_config, and written back. `gpuplan rl --scenario FILE` and Python's gp.rl read it here.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "gpuplan/io/scenario_json.hpp"
#include "gpuplan/plan/rl_max_batch.hpp"
#include "gpuplan/rl.hpp"

namespace gpuplan::io {

// An RL run as the file wrote it. `policy` is the scenario without its "rl" object, parsed
// only (io::parse_scenario): its unset fields stay unset, so estimate_rl fills them from the
// RL framework's profile (trainer, ZeRO stage, checkpointing) before run.hpp resolves the rest.
// Its micro_batch and seq_len are the step's: rl.micro_batch and prompt_len + completion_len
// (DPO: max_length), as the reader sets them before the scenario's rules run.
struct rl_input {
  scenario_input policy;
  rl_config config;
};

// The "rl" object alone: types, names, ranges and which keys apply to the algorithm, the
// rollout engine and the placement; errors name "scenario.rl.<key>". DPO's "max_length" is
// rl_config::prompt_len (the length each of chosen and rejected is cut to).
rl_config parse_rl(const nlohmann::json& rl);

// A scenario object with an optional "rl" object (absent: GRPO under TRL's defaults). The
// policy's keys are the training scenario's, except those the rl object sets or an RL step
// does not read (micro_batch, seq_len, loss_tokens, inference, engine, tokens,
// price_per_gpu_hour, workload other than train). Validates the RL rules (rl.hpp) and the
// actor's and the rollout engine's runs; every error names its path
// ("scenario.rl.generations: must be between 1 and 1024 (got -1)").
rl_input read_rl_scenario(const nlohmann::json& j);
rl_input read_rl_scenario_text(const std::string& text);
rl_input read_rl_scenario_file(const std::string& file);
// The run a recommendation sizes (`gpuplan rl --recommend`, gp.rl_recommend), which picks the
// GPU count itself: read at the largest count it tries (the largest power of two up to
// max_gpus), so that a layout needing several GPUs (a rollout or tensor-parallel size) reads.
rl_input read_rl_recommend_scenario(nlohmann::json j, int max_gpus);

// The step's estimate (estimate_rl over what was read).
rl_estimate estimate_rl(const rl_input& in);
// The largest micro-batch that fits and the step at it (plan/rl_max_batch.hpp), the micro-batch
// written into `in` (one sequence when none fits); its errors named as the reader's ("scenario.rl.<key>").
rl_max_batch set_largest_micro_batch(rl_input& in);

// The rl object with every key the step reads, the framework's defaults filled in.
nlohmann::json write_rl(const rl_input& in);
// The whole RL scenario: the actor's training keys (the framework's trainer, ZeRO stage and
// checkpointing written out, without the keys the rl object sets) and write_rl. Reading it
// back gives the same estimate.
nlohmann::json write_rl_scenario(const rl_input& in);
// The actor's own training run (io::write_scenario of what estimate_rl trains: micro_batch,
// seq_len and loss_tokens of the step), readable by io::read_scenario.
resolved_run actor_run(const rl_input& in);

}  // namespace gpuplan::io
