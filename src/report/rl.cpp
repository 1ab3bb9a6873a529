// report/rl.cpp — io/rl_report.hpp: an RL step's estimate as JSON, a phase table and the
// lines around it, and the changes that lower its peak when it does not fit.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common.hpp"
#include "gpuplan/io/rl_report.hpp"
#include "gpuplan/rl.hpp"

namespace gpuplan::io {

namespace rl_report_detail {

using json = nlohmann::json;

std::string gib_text(Bytes b) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f GiB", in_gib(b));
  return buf;
}

std::string gib_cell(Bytes b) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f", in_gib(b));
  return buf;
}

std::string upper(std::string_view s) {
  std::string u(s);
  for (char& c : u) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return u;
}

const rl_phase& peak_of(const rl_estimate& e) { return e.phases[static_cast<std::size_t>(e.peak_phase)]; }

// A change tried on the run: its text in scenario keys, why it lowers the peak, the edit.
struct candidate {
  std::string change;
  std::string description;
  std::function<void(rl_input&)> edit;
};

// The engine's memory share that would close the gap (a multiple of 0.05, at least 0.05).
double smaller_fraction(const rl_estimate& e, double fraction) {
  const double usable = in_bytes(e.capacity);
  const double shortfall = -in_bytes(e.headroom);
  const double f = std::floor((fraction - shortfall / usable) * 20.0 + 1e-9) / 20.0;
  return std::max(0.05, f);
}

// The engine's candidates: a smaller pool, sleep mode, GPUs of its own.
void engine_candidates(std::vector<candidate>& out, const rl_estimate& e, const detail::rl::resolved& r) {
  if (r.c.algo == rl_algorithm::dpo || r.eng == engine::hf) return;
  if (!std::isfinite(in_seconds(e.rollout_time))) {  // the engine holds no whole sequence beside its weights
    const int tp = 2 * r.c.rollout_tp;
    const bool more_gpus = r.place == rollout_placement::separate && e.rollout_gpus < tp;
    out.push_back({"rl.rollout_tp = " + std::to_string(tp) + (more_gpus ? ", rl.rollout_gpus = " + std::to_string(tp) : ""),
                   "the engine's weights split over twice the GPUs: room for its KV pool",
                   [tp, more_gpus](rl_input& in) {
                     in.config.rollout_tp = tp;
                     if (more_gpus) in.config.rollout_gpus = tp;
                   }});
  }
  if (r.place != rollout_placement::colocated) return;
  const bool rollout_peaks = peak_of(e).name == "rollout";
  if (rollout_peaks && !r.offload)
    out.push_back({"rl.offload_trainer = true",
                   "the trained models' weights and optimizer states on the CPU while the engine generates (verl param_offload + "
                   "optimizer_offload): the copies cost PCIe time each step",
                   [](rl_input& in) { in.config.offload_trainer = true; }});
  if (rollout_peaks || r.sleep == 0) {
    const double f = smaller_fraction(e, r.fraction);
    if (f < r.fraction)
      out.push_back({"rl.rollout_fraction = " + detail::num(f),
                     "a smaller engine pool (vLLM gpu_memory_utilization): fewer sequences decode at once",
                     [f](rl_input& in) { in.config.rollout_fraction = f; }});
  }
  if (r.sleep == 0)
    out.push_back({"rl.sleep_level = 1",
                   "sleep mode: the engine frees its KV pool and moves its weights to the CPU while the trainer trains (vLLM sleep level 1)",
                   [](rl_input& in) { in.config.sleep_level = 1; }});
  out.push_back({"rl.placement = separate", "the engine on GPUs of its own (as many as train): none of its memory on the training GPUs",
                 [](rl_input& in) { in.config.placement = rollout_placement::separate; }});
}

// The trained models' candidates: LoRA, ZeRO-3, more GPUs, no reference, micro-batch 1.
void trainer_candidates(std::vector<candidate>& out, const rl_input& in, const rl_estimate& e, const detail::rl::resolved& r) {
  const scenario actor = actor_run(in).run.settings();
  if (actor.meth == method::full)
    out.push_back({"method = lora",
                   "LoRA: no gradients or optimizer state for the frozen base; the reference is the base with the adapter disabled",
                   [](rl_input& x) { x.policy.settings.meth = method::lora; }});
  const int n = actor.num_gpus;
  if (n > 1 && actor.parallel.zero < 3)
    out.push_back({"parallel.zero = 3", "ZeRO-3 / FSDP full shard: the trained models' states split over the " + std::to_string(n) + " GPUs",
                   [](rl_input& x) { x.policy.settings.parallel.zero = 3; }});
  if (static_cast<std::int64_t>(n) * 2 <= kMaxGpus)
    out.push_back({"num_gpus = " + std::to_string(2 * n) + (actor.parallel.zero < 3 ? ", parallel.zero = 3" : ""),
                   "twice the GPUs, the trained models' states sharded over them",
                   [n](rl_input& x) {
                     x.policy.settings.num_gpus = 2 * n;
                     x.policy.settings.parallel.zero = 3;
                   }});
  if (in_bytes(e.reference_bytes) > 0)
    out.push_back({"rl.reference = false", "no KL term (beta 0): no reference copy on the GPU (the objective changes)",
                   [](rl_input& x) { x.config.reference = false; }});
  if (r.b > 1 && peak_of(e).name != "rollout")
    out.push_back({"rl.micro_batch = 1, grad_accum x " + std::to_string(r.b),
                   "one sequence per forward/backward, gradient accumulation keeping the step's batch",
                   [b = r.b](rl_input& x) {
                     x.config.micro_batch = 1;
                     x.policy.settings.grad_accum *= b;
                   }});
}

json suggestion_json(const rl_suggestion& s) {
  const rl_estimate& e = s.estimate;
  return {{"change", s.change},
          {"description", s.description},
          {"fits", e.fits},
          {"peak_phase", std::string(peak_of(e).name)},
          {"device_bytes", in_bytes(e.device)},
          {"headroom_bytes", in_bytes(e.headroom)},
          {"step_seconds", in_seconds(e.step)},
          {"scenario", write_rl_scenario(s.input)}};
}

json phases_json(const rl_estimate& e) {
  json a = json::array();
  for (int i = 0; i < e.phase_count; ++i) {
    const rl_phase& p = e.phases[static_cast<std::size_t>(i)];
    a.push_back({{"name", std::string(p.name)},
                 {"allocated_bytes", in_bytes(p.allocated)},
                 {"reserved_bytes", in_bytes(p.reserved)},
                 {"engine_bytes", in_bytes(p.engine)},
                 {"device_bytes", in_bytes(p.device)},
                 {"peak", i == e.peak_phase}});
  }
  return a;
}

// Seconds as JSON: null when not finite (an engine that holds no whole sequence).
json seconds_json(Seconds s) { return std::isfinite(in_seconds(s)) ? json(in_seconds(s)) : json(); }

// What the run is: its kind, lengths and batch.
void add_run_keys(json& j, const rl_answer& a) {
  const rl_estimate& e = a.estimate;
  j["algorithm"] = to_string(e.algo);
  j["framework"] = to_string(e.fw);
  j["trainer"] = to_string(actor_run(a.input).run.settings().fw);
  j["rollout"] = to_string(e.rollout);
  j["placement"] = to_string(e.placement);
  j["rollout_fraction"] = e.rollout_fraction;
  j["reference"] = e.reference;
  j["critic"] = e.critic;
  j["reward_model"] = e.reward_model;
  j["generations"] = e.generations;
  j["prompt_len"] = e.prompt_len;
  j["completion_len"] = e.completion_len;
  j["mean_completion_len"] = e.mean_completion_len;
  j["mean_prompt_len"] = e.mean_prompt_len;
  j["sequences_per_step"] = e.sequences_per_step;
}

}  // namespace rl_report_detail

rl_answer answer_rl(const rl_input& given, bool largest_micro_batch) {
  using namespace rl_report_detail;
  rl_input in = given;
  // The search's estimate at the micro-batch it found is the step's: no second estimate.
  std::optional<rl_max_batch> search;
  if (largest_micro_batch) search = set_largest_micro_batch(in);
  rl_answer a{in, search ? search->estimate : estimate_rl(in), {}, largest_micro_batch,
              search ? search->micro_batch : std::nullopt};
  if (a.estimate.fits) return a;
  const detail::rl::resolved r = detail::rl::resolve(in.config, in.policy.settings.gpu);
  std::vector<candidate> tries;
  engine_candidates(tries, a.estimate, r);
  trainer_candidates(tries, in, a.estimate, r);
  for (const candidate& c : tries) {
    rl_input changed = in;
    c.edit(changed);
    try {
      rl_estimate e = estimate_rl(changed);
      // A change that leaves the engine no room for a whole sequence is no fix.
      if (std::isfinite(in_seconds(a.estimate.rollout_time)) && !std::isfinite(in_seconds(e.rollout_time))) continue;
      a.suggestions.push_back({c.change, c.description, std::move(changed), e});
    } catch (const config_error&) {
      // A change the run cannot take (a trainer without ZeRO-3, too many GPUs for the batch): not offered.
    }
  }
  std::stable_sort(a.suggestions.begin(), a.suggestions.end(), [](const rl_suggestion& x, const rl_suggestion& y) {
    if (x.estimate.fits != y.estimate.fits) return x.estimate.fits;
    return in_bytes(x.estimate.device) < in_bytes(y.estimate.device);
  });
  return a;
}

nlohmann::json rl_json(const rl_answer& a) {
  using namespace rl_report_detail;
  const rl_estimate& e = a.estimate;
  const resolved_run actor = actor_run(a.input);
  json j;
  j["scenario"] = write_rl_scenario(a.input);
  j["model"] = {{"name", actor.model().name}, {"parameters", actor.run.parameters().total}};
  add_run_keys(j, a);
  j["phases"] = phases_json(e);
  j["peak_phase"] = std::string(peak_of(e).name);
  j["fits"] = e.fits;
  j["device_bytes"] = in_bytes(e.device);
  j["capacity_bytes"] = in_bytes(e.capacity);
  j["headroom_bytes"] = in_bytes(e.headroom);
  j["peak_reserved_bytes"] = in_bytes(e.peak_reserved);
  j["reference_bytes"] = in_bytes(e.reference_bytes);
  j["critic_bytes"] = in_bytes(e.critic_bytes);
  j["reward_bytes"] = in_bytes(e.reward_bytes);
  j["generation_gathered_bytes"] = in_bytes(e.generation_gathered_bytes);
  j["engine_budget_bytes"] = in_bytes(e.engine_budget);
  j["rollout_device_bytes"] = in_bytes(e.rollout_device);
  j["rollout_concurrency"] = e.rollout_concurrency;
  j["rollout_gpus"] = e.rollout_gpus;
  j["rollout_fits"] = e.rollout_fits;
  j["gpus"] = e.gpus;
  j["rollout_seconds"] = seconds_json(e.rollout_time);
  j["scoring_seconds"] = seconds_json(e.scoring_time);
  j["training_seconds"] = seconds_json(e.training_time);
  j["transfer_seconds"] = seconds_json(e.transfer_time);
  j["step_seconds"] = seconds_json(e.step);
  j["tokens_per_second_per_gpu"] = e.tokens_per_second_per_gpu;
  const resolved_run estimated{run(a.input.policy.model, e.policy_settings), actor.model_spec};
  if (a.searched) j["max_micro_batch"] = a.max_micro_batch ? json(*a.max_micro_batch) : json(nullptr);
  j["policy"] = {{"scenario", write_scenario(estimated)}, {"memory", memory_json(e.policy)}, {"time", time_json(e.policy_time)}};
  j["warnings"] = warning_messages(e.policy.warnings | e.policy_time.warnings);
  j["suggestions"] = json::array();
  for (const rl_suggestion& s : a.suggestions) j["suggestions"].push_back(suggestion_json(s));
  return j;
}

table rl_phase_table(const rl_estimate& e) {
  using namespace rl_report_detail;
  table t;
  t.title = "memory of a training GPU in each phase of the step";
  t.header = {"Phase", "Allocated (GiB)", "Reserved (GiB)", "Engine (GiB)", "Device (GiB)"};
  for (int i = 0; i < e.phase_count; ++i) {
    const rl_phase& p = e.phases[static_cast<std::size_t>(i)];
    t.rows.push_back({std::string(p.name) + (i == e.peak_phase ? " *" : ""), gib_cell(p.allocated), gib_cell(p.reserved),
                      gib_cell(p.engine), gib_cell(p.device)});
  }
  t.notes.push_back("* the peak. Allocated: the trainer's live tensors; reserved: its caching-allocator pool; engine: the "
                    "co-located rollout engine; device (nvidia-smi): CUDA context + reserved + engine.");
  return t;
}

namespace rl_report_detail {

// "rollout: ..." — how the step generates (GRPO, PPO) or what it trains on (DPO).
std::string rollout_line(const rl_answer& a) {
  const rl_estimate& e = a.estimate;
  const rl_config& c = a.input.config;
  if (e.algo == rl_algorithm::dpo)
    return "pairs: chosen and rejected of up to " + std::to_string(e.prompt_len) + " tokens each; " +
           std::to_string(e.sequences_per_step / 2) + " pairs (" + std::to_string(e.sequences_per_step) + " sequences) per step\n";
  std::string t = "rollout: " + std::to_string(e.generations) + (e.generations == 1 ? " completion" : " completions") +
                  " per prompt of up to " + std::to_string(e.prompt_len) + " prompt + " + std::to_string(e.completion_len) +
                  " completion tokens (mean " + std::to_string(e.mean_prompt_len) + " + " + std::to_string(e.mean_completion_len) + "), " +
                  std::to_string(e.sequences_per_step) + " sequences per step; ";
  if (e.rollout == engine::hf) {
    t += "transformers generate in the trainer";
  } else {
    const detail::rl::resolved r = detail::rl::resolve(c, a.input.policy.settings.gpu);
    t += std::string(to_string(e.rollout)) + " " + std::string(to_string(e.placement)) + " (tp " + std::to_string(c.rollout_tp);
    if (e.placement == rollout_placement::separate)
      t += ", on " + std::to_string(e.rollout_gpus) + " GPUs of its own";
    else
      t += ", gpu_memory_utilization " + detail::num(e.rollout_fraction) + ", sleep level " + std::to_string(r.sleep);
    if (!r.graphs) t += ", eager decode";
    t += ")";
  }
  if (e.rollout_concurrency > 0) t += ", " + std::to_string(e.rollout_concurrency) + " sequences at once per engine";
  return t + "\n";
}

// The verdict: which phase peaks, against the usable memory, with the headroom or the shortfall.
std::string verdict_text(const rl_estimate& e, const style& s) {
  if (!e.rollout_fits) {
    const bool trainer_fits = in_bytes(e.headroom) >= 0;
    return report_detail::fits_word(false, s) + ": the " + std::string(to_string(e.rollout)) + " engine on its " +
           std::to_string(e.rollout_gpus) + (e.rollout_gpus == 1 ? " rollout GPU" : " rollout GPUs") +
           " holds no whole sequence beside its weights; on a training GPU the " + std::string(peak_of(e).name) +
           " phase peaks at " + format_bytes(e.device) + " of " + format_bytes(e.capacity) + " usable; " +
           report_detail::room_text(trainer_fits, e.headroom) + "\n";
  }
  return report_detail::fits_word(e.fits, s) + ": the " + std::string(peak_of(e).name) + " phase peaks at " +
         format_bytes(e.device) + " of " + format_bytes(e.capacity) + " usable; " + report_detail::room_text(e.fits, e.headroom) + "\n";
}

// Where a model that is not on the training GPU is.
std::string elsewhere(const rl_input& in, bool peft_ref) {
  const rl_profile& p = profile_of(in.config.fw);
  if (peft_ref) return "the base with the adapter disabled (no copy)";
  if (!p.models_colocated) return "on GPUs of its own";
  if (p.reference_offloaded) return "on the CPU between uses";
  return "none";
}

// What each model holds on a training GPU.
std::string models_line(const rl_answer& a) {
  const rl_estimate& e = a.estimate;
  const bool peft = traits_of(actor_run(a.input).run.settings().meth).peft;
  std::string t = "on a training GPU: policy " + gib_text(e.policy.peak_allocated) + " at its update peak (largest term: " +
                  binding_component(e.policy) + ")";
  t += "; reference " + (!e.reference ? std::string("none (no KL term)")
                                      : in_bytes(e.reference_bytes) > 0 ? gib_text(e.reference_bytes) : elsewhere(a.input, peft));
  if (e.critic) t += "; critic " + (in_bytes(e.critic_bytes) > 0 ? gib_text(e.critic_bytes) + " of states" : elsewhere(a.input, false));
  if (e.algo == rl_algorithm::ppo)
    t += "; reward model " + (!e.reward_model ? std::string("none (a rule)")
                                              : in_bytes(e.reward_bytes) > 0 ? gib_text(e.reward_bytes) : elsewhere(a.input, false));
  if (e.algo != rl_algorithm::dpo) {
    if (e.rollout == engine::hf)
      t += "; engine none (transformers generate: the KV cache in the trainer's rollout phase" +
           (in_bytes(e.generation_gathered_bytes) > 0
                ? ", beside the trained models' weights gathered whole under ZeRO-3, " + gib_text(e.generation_gathered_bytes) + ")"
                : std::string(")"));
    else if (e.placement == rollout_placement::separate)
      t += "; engine on GPUs of its own (" + gib_text(e.rollout_device) + " per rollout GPU)";
    else
      t += "; engine " + gib_text(e.engine_budget) + " while generating, " +
           gib_text(e.phases[static_cast<std::size_t>(e.phase_count - 1)].engine) + " while training";
  }
  return t + "\n";
}

// The step: rollout + scoring + training + transfers, and tokens/s per GPU.
std::string time_line(const rl_answer& a) {
  const rl_estimate& e = a.estimate;
  if (!std::isfinite(in_seconds(e.rollout_time)))
    return "step: the rollout engine's KV pool holds no whole sequence of " + std::to_string(e.prompt_len + e.completion_len) +
           " tokens (scoring " + format_seconds(e.scoring_time) + ", training " + format_seconds(e.training_time) + ")\n";
  std::string t = "step " + format_seconds(e.step) + " = ";
  if (e.algo != rl_algorithm::dpo) t += "rollout " + format_seconds(e.rollout_time) + " + ";
  t += "scoring " + format_seconds(e.scoring_time) + " + training " + format_seconds(e.training_time);
  if (in_seconds(e.transfer_time) > 0) t += " + CPU transfers " + format_seconds(e.transfer_time);
  t += "; " +
       format_rate(e.tokens_per_second_per_gpu, "tokens") + " per GPU (prompt + completion tokens over " +
       std::to_string(e.gpus) + (e.gpus == 1 ? " GPU)" : " GPUs)");
  // docs/rl.md § Step time, "Not modelled": every published step the model was compared with ran longer.
  if (e.algo != rl_algorithm::dpo) t += "\nnot in the step: the weight sync into the engine, the reward functions, data processing (docs/rl.md)";
  return t + "\n";
}

table suggestions_table(const rl_answer& a) {
  table t;
  t.title = "What lowers the peak (each change estimated)";
  t.header = {"Change", "Device (GiB)", "Headroom (GiB)", "Peak phase", "Step", "Fits"};
  for (const rl_suggestion& s : a.suggestions) {
    const rl_estimate& e = s.estimate;
    t.rows.push_back({s.change, gib_cell(e.device), gib_cell(e.headroom), std::string(peak_of(e).name), format_seconds(e.step),
                      e.fits ? "yes" : "no"});
    t.notes.push_back(s.change + ": " + s.description);
  }
  return t;
}

}  // namespace rl_report_detail

std::string rl_summary(const rl_answer& a) {
  using namespace rl_report_detail;
  const resolved_run actor = actor_run(a.input);
  const scenario& s = actor.settings();
  const rl_estimate& e = a.estimate;
  std::string t;
  if (a.searched)
    t = a.max_micro_batch ? "largest micro-batch that fits: " + std::to_string(*a.max_micro_batch) +
                                " sequences per GPU per forward/backward (the step below is at it)\n"
                          : std::string("no micro-batch fits: not even one sequence (the step below is at one)\n");
  t += printable(actor.model().name) + " (" + format_params(actor.run.parameters().total) + " parameters): " +
                  upper(to_string(e.algo)) + " under " + std::string(to_string(e.fw)) + " on " + std::to_string(s.num_gpus) +
                  " × " + printable(s.gpu.name) + "\n";
  t += "actor: " + run_summary(e.policy_settings) + "; trainer " + std::string(to_string(s.fw)) + "\n";
  return t + rollout_line(a);
}

std::string rl_details(const rl_answer& a, const style& s) {
  using namespace rl_report_detail;
  std::string t = verdict_text(a.estimate, s) + models_line(a) + time_line(a);
  for (const auto& w : warning_messages(a.estimate.policy.warnings | a.estimate.policy_time.warnings)) t += "warning: " + w + "\n";
  if (!a.suggestions.empty()) t += "\n" + render(suggestions_table(a), s);
  return t;
}

std::string rl_report(const rl_answer& a, const style& s) {
  const bool md = s.format == report_format::markdown;
  const std::string summary = rl_summary(a);
  std::string out = md ? "```\n" + summary + "```\n\n" : summary + "\n";
  out += render(rl_phase_table(a.estimate), s) + "\n";
  return out + rl_details(a, s);
}

}  // namespace gpuplan::io
