// rl_json.cpp — the RL scenario (docs/scenario.md § rl): a training scenario with an "rl"
// object <-> (policy scenario, rl_config). Every rejection names the JSON path and the value.
#include "gpuplan/io/rl_json.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "gpuplan/rl.hpp"
#include "gpuplan/run.hpp"
#include "json_fields.hpp"
#include "json_text.hpp"

namespace gpuplan::io {
namespace {

using json = nlohmann::json;
using detail::fail;
using namespace json_fields;

std::string rl_path(std::string_view key) { return "scenario.rl." + std::string(key); }

// The top-level keys an RL scenario refuses: the rl object sets them, or a step does not read them.
struct refused_key {
  std::string_view key;
  std::string_view reason;
};
constexpr refused_key kRefusedPolicyKeys[] = {
    {"micro_batch", "an rl run's micro-batch is rl.micro_batch"},
    {"seq_len", "an rl run's sequence is rl.prompt_len + rl.completion_len (dpo: rl.max_length)"},
    {"loss_tokens", "an rl run computes logits for the completion only (rl.completion_len)"},
    {"inference", "an rl run's generation is rl.rollout (rl.rollout_fraction, rl.rollout_tp)"},
    {"engine", "an rl run's rollout engine is rl.rollout"},
    {"tokens", "an rl estimate is one step; it trains no token count"},
    {"price_per_gpu_hour", "an rl estimate is one step; it prices no run"},
};

void refuse_policy_keys(const json& j) {
  for (const refused_key& r : kRefusedPolicyKeys) {
    const std::string key(r.key);
    if (j.contains(key)) fail("scenario." + key, std::string(r.reason) + " (got " + show(j[key]) + ")");
  }
  if (j.contains("workload") && get_enum(j["workload"], "scenario.workload", kWorkloadNames) != workload::train)
    fail("scenario.workload", "an rl run trains its policy: must be train (got " + show(j["workload"]) + ")");
}

// The engines an RL rollout runs (rl.hpp detail::rl::check): transformers generate and the paged engines.
bool rollout_engine(engine e) { return e == engine::hf || profile_of(e).paged_pool; }

engine read_rollout(const json& v) {
  const std::string path = rl_path("rollout");
  const engine e = get_enum(v, path, kEngineNames);
  if (!rollout_engine(e)) {
    std::string list;
    for (const auto& n : kEngineNames)
      if (rollout_engine(n.value)) list += (list.empty() ? "" : ", ") + std::string(n.name);
    fail(path, "must be one of " + list + " (got " + show(v) + ")");
  }
  return e;
}

// A key present that applies to nothing: one line naming it and what it would need.
void refuse_unless(const json& j, std::string_view key, bool applies, const std::string& needs) {
  if (j.contains(std::string(key)) && !applies) fail(rl_path(key), "only applies to " + needs);
}

// Which keys apply: to the algorithm, the (resolved) rollout engine and placement.
void check_applies(const json& j, const rl_config& c) {
  const std::string algo = std::string(to_string(c.algo));
  const bool dpo = c.algo == rl_algorithm::dpo;
  const std::string dpo_has_no = "grpo and ppo: dpo trains on given pairs and generates nothing (got algorithm dpo)";
  for (std::string_view key : {"generations", "completion_len", "mean_completion_len", "mean_prompt_len", "max_token_len", "rollout", "placement",
                               "rollout_fraction", "sleep_level", "cuda_graphs", "rollout_gpus", "rollout_tp", "train_batch", "offload_trainer",
                               "entropy_bonus"})
    refuse_unless(j, key, !dpo, dpo_has_no);
  if (j.contains("prompt_len") && dpo)
    fail(rl_path("prompt_len"), "dpo reads max_length, the length chosen and rejected are each cut to (got algorithm dpo)");
  refuse_unless(j, "max_length", dpo,
                "algorithm dpo (chosen and rejected are cut to it); " + algo + " reads prompt_len and completion_len (got algorithm " + algo + ")");
  refuse_unless(j, "generations", c.algo == rl_algorithm::grpo, "algorithm grpo (got algorithm " + algo + ")");
  refuse_unless(j, "reward_model", c.algo == rl_algorithm::ppo, "algorithm ppo (got algorithm " + algo + ")");
  const rl_profile& p = profile_of(c.fw);
  const engine eng = c.rollout.value_or(p.rollout);
  const std::string defaulted = c.rollout ? "" : ", " + std::string(to_string(c.fw)) + "'s default";
  const std::string engine_needs = "a vllm or sglang rollout (got rollout " + std::string(to_string(eng)) + defaulted + ")";
  for (std::string_view key : {"rollout_fraction", "sleep_level", "cuda_graphs", "rollout_tp"}) refuse_unless(j, key, eng != engine::hf, engine_needs);
  const rollout_placement place = c.placement.value_or(p.placement);
  refuse_unless(j, "rollout_gpus", place == rollout_placement::separate,
                "placement separate (got placement " + std::string(to_string(place)) + (c.placement ? "" : ", " + std::string(to_string(c.fw)) + "'s default") + ")");
}

// The lengths: prompt_len (DPO: max_length), completion_len, the data's means, max_token_len.
void read_lengths(const json& j, rl_config& c) {
  if (j.contains("prompt_len")) c.prompt_len = get_int(j["prompt_len"], rl_path("prompt_len"));
  if (j.contains("max_length")) c.prompt_len = get_int(j["max_length"], rl_path("max_length"));
  if (j.contains("completion_len")) c.completion_len = get_int(j["completion_len"], rl_path("completion_len"));
  if (j.contains("mean_completion_len")) c.mean_completion_len = get_int(j["mean_completion_len"], rl_path("mean_completion_len"));
  if (j.contains("mean_prompt_len")) c.mean_prompt_len = get_int(j["mean_prompt_len"], rl_path("mean_prompt_len"));
  if (j.contains("max_token_len")) c.max_token_len = get_int(j["max_token_len"], rl_path("max_token_len"));
}

// The rollout engine's keys and the models kept.
void read_engine_and_models(const json& j, rl_config& c) {
  if (j.contains("rollout_fraction")) c.rollout_fraction = get_number(j["rollout_fraction"], rl_path("rollout_fraction"));
  if (j.contains("sleep_level")) c.sleep_level = get_small_int(j["sleep_level"], rl_path("sleep_level"));
  if (j.contains("cuda_graphs")) c.cuda_graphs = get_bool(j["cuda_graphs"], rl_path("cuda_graphs"));
  if (j.contains("rollout_gpus")) c.rollout_gpus = get_small_int(j["rollout_gpus"], rl_path("rollout_gpus"));
  if (j.contains("rollout_tp")) c.rollout_tp = get_small_int(j["rollout_tp"], rl_path("rollout_tp"));
  if (j.contains("reference")) c.reference = get_bool(j["reference"], rl_path("reference"));
  if (j.contains("offload_trainer")) c.offload_trainer = get_bool(j["offload_trainer"], rl_path("offload_trainer"));
  if (j.contains("entropy_bonus")) c.entropy_bonus = get_bool(j["entropy_bonus"], rl_path("entropy_bonus"));
  if (j.contains("reward_model")) c.reward_model = get_bool(j["reward_model"], rl_path("reward_model"));
}

// Runs `f`; a config_error about a key the reader set itself is re-thrown naming the rl key
// that set it (seq_len is prompt_len + completion_len, micro_batch is rl.micro_batch).
template <class F>
auto naming_rl_keys(const rl_config& c, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const config_error& e) {
    const std::string& path = e.path();
    const std::string what = e.what();
    const std::string reason = what.size() > path.size() + 2 ? what.substr(path.size() + 2) : what;
    const bool dpo = c.algo == rl_algorithm::dpo;
    if (path == "scenario.seq_len")
      throw config_error(rl_path(dpo ? "max_length" : "completion_len"),
                         std::string(dpo ? "max_length" : "prompt_len + completion_len") + ": " + reason, e.kind());
    if (path == "scenario.micro_batch")
      throw config_error(rl_path("micro_batch"), (dpo ? "2 x micro_batch sequences (chosen, rejected): " : "") + reason, e.kind());
    if (path == "scenario.loss_tokens") throw config_error(rl_path("completion_len"), reason, e.kind());
    throw;
  }
}

// f(), its errors' "rl.<key>" paths under "scenario." as the reader's.
template <class F>
auto under_scenario(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const config_error& e) {
    if (e.path().rfind("rl.", 0) != 0) throw;
    throw config_error("scenario." + e.path(), std::string(e.what()).substr(e.path().size() + 2), e.kind());
  }
}

void check_rl(const scenario& s, const detail::rl::resolved& r) {
  under_scenario([&] { detail::rl::check(s, r); });
}

// Sequences one step trains and how many the engine generates at once: bounded by the batch
// limit (kMaxBatch), past which the time model's runs would be refused mid-estimate.
void check_step_size(const rl_input& in, const run& actor, const detail::rl::resolved& r) {
  const scenario& s = actor.settings();
  const std::int64_t per_prompt = in.config.algo == rl_algorithm::dpo ? 2 : r.G;
  const std::int64_t prompts = in.config.prompts_per_step.value_or(r.p->prompts_per_step);
  // prompts <= 2^24 and G <= 1024 (checked): no overflow; the trainer's batch in double (up to 2^68).
  const double seqs = prompts > 0 ? static_cast<double>(prompts * per_prompt)
                                  : static_cast<double>(s.micro_batch) * static_cast<double>(s.grad_accum) * s.dp();
  if (seqs > static_cast<double>(kMaxBatch)) {
    const std::string got = " (got " + detail::num(seqs) + ")";
    if (prompts > 0)
      fail(rl_path(in.config.prompts_per_step ? "prompts_per_step" : "generations"),
           "prompts_per_step x " + std::string(per_prompt == 2 ? "2 (chosen, rejected)" : "generations") +
               " must be at most " + std::to_string(kMaxBatch) + " sequences per step" + got);
    fail("scenario.grad_accum", "micro_batch x grad_accum x data-parallel GPUs must be at most " + std::to_string(kMaxBatch) +
                                    " sequences per step" + got);
  }
  const double generate_batch = static_cast<double>(s.micro_batch) * static_cast<double>(s.grad_accum);
  if (r.eng == engine::hf && in.config.algo != rl_algorithm::dpo && generate_batch > static_cast<double>(kMaxBatch))
    fail("scenario.grad_accum", "transformers generate runs micro_batch x grad_accum sequences at once: at most " +
                                    std::to_string(kMaxBatch) + " (got " + detail::num(generate_batch) + ")");
}

// The runs estimate_rl makes, made once here so their rules name the file's keys: the actor's
// training run and, for GRPO and PPO, the rollout engine's.
void check_runs(const rl_input& in, const detail::rl::resolved& r) {
  const scenario& policy = in.policy.settings;
  // The sizes first: actor_scenario pads the sequence to a multiple of tp x cp, which must be >= 1.
  naming_rl_keys(in.config, [&] { detail::validate_sizes(policy); });
  const run actor = naming_rl_keys(in.config, [&] { return run(in.policy.model, detail::rl::actor_scenario(policy, r, r.P, r.C)); });
  check_step_size(in, actor, r);
  if (in.config.algo == rl_algorithm::dpo) return;
  try {
    const run engine_run(in.policy.model, detail::rl::engine_scenario(actor.settings(), r, 1));
    (void)engine_run;
  } catch (const config_error& e) {
    // The engine serves prompt_len + completion_len tokens per sequence: its length rules name those keys.
    const std::string& path = e.path();
    const std::string key = path.rfind("scenario.inference.prompt_len", 0) == 0 ? "prompt_len"
                            : path.rfind("scenario.inference", 0) == 0          ? "completion_len"
                                                                                : "rollout";
    throw config_error(rl_path(key), "the rollout engine's run: " + std::string(e.what()), e.kind());
  }
}

}  // namespace

rl_config parse_rl(const json& j) {
  const std::string path = "scenario.rl";
  require_object(j, path);
  check_keys(j, path,
             {"algorithm", "framework", "rollout", "placement", "rollout_fraction", "sleep_level", "cuda_graphs", "reference", "generations",
              "prompt_len", "max_length", "completion_len", "mean_completion_len", "mean_prompt_len", "max_token_len",
              "micro_batch", "prompts_per_step",
              "rollout_gpus", "rollout_tp", "reward_model", "train_batch", "offload_trainer", "entropy_bonus"});
  rl_config c;
  if (j.contains("algorithm")) c.algo = get_enum(j["algorithm"], rl_path("algorithm"), kRlAlgorithmNames);
  if (j.contains("framework")) c.fw = get_enum(j["framework"], rl_path("framework"), kRlFrameworkNames);
  if (j.contains("rollout")) c.rollout = read_rollout(j["rollout"]);
  if (j.contains("placement")) c.placement = get_enum(j["placement"], rl_path("placement"), kRolloutPlacementNames);
  check_applies(j, c);
  if (j.contains("generations")) c.generations = get_int(j["generations"], rl_path("generations"));
  read_lengths(j, c);
  if (j.contains("micro_batch")) c.micro_batch = get_int(j["micro_batch"], rl_path("micro_batch"));
  if (j.contains("prompts_per_step")) c.prompts_per_step = get_int(j["prompts_per_step"], rl_path("prompts_per_step"));
  if (j.contains("train_batch")) c.train_batch = get_int(j["train_batch"], rl_path("train_batch"));
  read_engine_and_models(j, c);
  return c;
}

rl_input read_rl_recommend_scenario(json j, int max_gpus) {
  if (j.is_object()) j["num_gpus"] = std::bit_floor(static_cast<unsigned>(std::max(1, max_gpus)));
  return read_rl_scenario(j);
}

rl_input read_rl_scenario(const json& j) {
  require_object(j, "scenario");
  refuse_policy_keys(j);
  rl_input in;
  in.config = j.contains("rl") ? parse_rl(j["rl"]) : rl_config{};
  // The RL rules first (ranges, combinations): only num_gpus of the policy takes part.
  scenario probe;
  if (j.contains("num_gpus")) probe.num_gpus = get_small_int(j["num_gpus"], "scenario.num_gpus");
  const detail::rl::resolved r = detail::rl::resolve(in.config, probe.gpu);
  check_rl(probe, r);
  // The step's micro-batch and sequence, so the scenario's rules (global_batch, positions) see them.
  json policy = j;
  policy.erase("rl");
  policy["micro_batch"] = r.b;
  policy["seq_len"] = r.P + r.C;
  in.policy = naming_rl_keys(in.config, [&] { return parse_scenario(policy); });
  check_rl(in.policy.settings, r);
  check_runs(in, r);
  return in;
}

rl_input read_rl_scenario_text(const std::string& text) {
  return read_rl_scenario(detail::parse_json_text(text, "scenario"));
}

rl_input read_rl_scenario_file(const std::string& file) {
  return read_rl_scenario_text(read_text_file(file, "scenario"));
}

rl_estimate estimate_rl(const rl_input& in) { return gpuplan::estimate_rl(*in.policy.model, in.policy.settings, in.config); }

rl_max_batch set_largest_micro_batch(rl_input& in) {
  rl_max_batch b = under_scenario([&] { return largest_rl_micro_batch(*in.policy.model, in.policy.settings, in.config); });
  in.config.micro_batch = b.micro_batch.value_or(1);
  return b;
}

json write_rl(const rl_input& in) {
  const rl_config& c = in.config;
  const detail::rl::resolved r = detail::rl::resolve(c, in.policy.settings.gpu);
  json o;
  o["algorithm"] = to_string(c.algo);
  o["framework"] = to_string(c.fw);
  if (c.algo == rl_algorithm::dpo) {
    o["max_length"] = r.P;
  } else {
    o["rollout"] = to_string(r.eng);
    o["placement"] = to_string(r.place);
    if (r.eng != engine::hf) {
      o["rollout_fraction"] = r.fraction;
      o["sleep_level"] = r.sleep;
      o["cuda_graphs"] = r.graphs;
      o["rollout_tp"] = c.rollout_tp;
    }
    if (r.place == rollout_placement::separate) o["rollout_gpus"] = c.rollout_gpus;
    o["offload_trainer"] = r.offload;
    if (c.algo == rl_algorithm::grpo) o["generations"] = r.G;
    o["prompt_len"] = r.P;
    o["completion_len"] = r.C;
    o["mean_completion_len"] = r.C_mean;
    o["mean_prompt_len"] = r.P_mean;
    if (c.max_token_len) o["max_token_len"] = *c.max_token_len;
    if (c.entropy_bonus) o["entropy_bonus"] = true;
  }
  o["micro_batch"] = r.b;
  // Unset and 0 in the profile: the trainer's global batch (TRL), written as the policy's grad_accum.
  if (const std::int64_t prompts = c.prompts_per_step.value_or(r.p->prompts_per_step); prompts > 0) o["prompts_per_step"] = prompts;
  if (c.train_batch) o["train_batch"] = *c.train_batch;
  o["reference"] = r.ref;
  if (c.algo == rl_algorithm::ppo) o["reward_model"] = c.reward_model;
  return o;
}

resolved_run actor_run(const rl_input& in) {
  const detail::rl::resolved r = detail::rl::resolve(in.config, in.policy.settings.gpu);
  return resolved_run{run(in.policy.model, detail::rl::actor_scenario(in.policy.settings, r, r.P, r.C)), in.policy.model_spec};
}

json write_rl_scenario(const rl_input& in) {
  json j = write_scenario(actor_run(in));
  for (const refused_key& k : kRefusedPolicyKeys) j.erase(std::string(k.key));
  j["rl"] = write_rl(in);
  return j;
}

}  // namespace gpuplan::io
