// rl.cpp — `gpuplan rl`: RL post-training (DPO, GRPO, PPO) under TRL, verl, OpenRLHF or NeMo RL
// (rl.hpp): the memory of a training GPU in each phase of a step, the models it holds, the
// step time and, when it does not fit, what lowers the peak; printed through io/rl_report.hpp
// (the formatter Python's gp.rl shares); with --max-micro-batch, the largest micro-batch that
// fits; with --recommend, per GPU type the fewest GPUs whose every phase fits with the planning
// headroom (plan/rl_recommend.hpp), priced as `recommend` prices (hooks.hpp market_options).
// Here --framework is the RL framework; the policy's run flags are the shared ones
// (run_options.hpp). Exit 0 every phase fits, 1 one does not (--max-micro-batch: 0 some
// micro-batch fits, 1 none does; --recommend: 0 some GPU type fits, 1 none does).
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include "command.hpp"
#include "gpuplan/io/rl_json.hpp"
#include "gpuplan/io/rl_report.hpp"
#include "gpuplan/names.hpp"
#include "gpuplan/plan/recommend.hpp"
#include "gpuplan/rl.hpp"

namespace gpuplan::cli {
using nlohmann::json;

namespace {

// Run flags an RL step sets itself (micro-batch, sequence, logits), reads as RL flags (the
// framework, the rollout engine and its memory share) or does not read (serving, tokens, price).
const std::set<std::string> kSkippedRunFlags = {
    "--framework", "--seq", "--batch", "--loss-tokens", "--tokens", "--price", "--infer", "--infer-batch",
    "--prompt-len", "--gen-len", "--kv-dtype", "--engine", "--max-batched-tokens", "--gguf", "--gpu-layers",
    "--gpu-memory-utilization", "--enforce-eager"};

// A flag writing the rl object's `key` ("rl.<key>" of the scenario JSON).
template <class T>
void add_rl_key(CLI::App* sub, run_args& a, const std::string& flag, const std::string& key, const std::string& help) {
  add_key_flag<T>(sub, a, flag, "rl." + key, help)->group("RL");
}

void add_rl_switch(CLI::App* sub, run_args& a, const std::string& flag, const std::string& key, bool value, const std::string& help) {
  const std::string path = "rl." + key;
  if (a.flag_of.count(path) == 0) a.flag_of[path] = flag;
  sub->add_flag_function(flag, [&a, path, value](std::int64_t) { a.overrides.emplace_back(path, json(value)); }, help)->group("RL");
}

// Run flags a user may reach for that an RL step spells otherwise: one line saying which (hidden).
void add_misspelt_flags(CLI::App* sub) {
  const std::pair<const char*, const char*> flags[] = {
      {"--seq", "an rl run's sequence is --prompt-len + --completion-len (dpo: --max-length)"},
      {"--gen-len", "an rl run's completions are --completion-len (and --mean-completion-len)"},
      {"--engine", "an rl run's rollout engine is --rollout"}};
  for (const auto& [flag, reason] : flags)
    sub->add_option_function<std::string>(
           flag, [f = std::string(flag), r = std::string(reason)](const std::string& v) {
             throw config_error(f, r + " (got " + f + " " + v + ")");
           })
        ->group("");
}

void add_rl_options(CLI::App* sub, run_args& a) {
  using gpuplan::name_list;
  add_rl_key<std::string>(sub, a, "--algorithm", "algorithm", "RL algorithm: " + name_list<gpuplan::rl_algorithm>() + " (default grpo)");
  add_rl_key<std::string>(sub, a, "--framework", "framework",
                          "RL framework (its trainer, engine and defaults): " + name_list<gpuplan::rl_framework>() + " (default trl)");
  add_rl_key<std::string>(sub, a, "--rollout", "rollout", "Rollout engine: hf (transformers generate), vllm, sglang (default: the framework's)");
  add_rl_key<std::string>(sub, a, "--placement", "placement",
                          "Rollout engine on the training GPUs or its own: " + name_list<gpuplan::rollout_placement>());
  add_rl_key<double>(sub, a, "--gpu-memory-utilization,--rollout-fraction", "rollout_fraction",
                     "The co-located engine's share of GPU memory (vLLM gpu_memory_utilization)");
  add_rl_key<std::int64_t>(sub, a, "--sleep-level", "sleep_level", "Engine while the trainer trains: 0 awake, 1 weights to CPU, 2 discarded");
  add_rl_switch(sub, a, "--enforce-eager", "cuda_graphs", false,
                "The engine decodes eagerly: no CUDA graphs, no graph pool (vLLM enforce_eager; verl's default until 2025-08)");
  add_rl_switch(sub, a, "--reference", "reference", true, "Keep a reference model (KL term)");
  add_rl_switch(sub, a, "--no-reference", "reference", false, "No reference model (beta 0)");
  add_rl_switch(sub, a, "--offload-trainer", "offload_trainer", true,
                "The trained models' states on the CPU while the engine generates (verl param_offload + optimizer_offload)");
  add_rl_switch(sub, a, "--no-offload-trainer", "offload_trainer", false, "The trained models' states stay on the GPU");
  add_rl_switch(sub, a, "--entropy-bonus", "entropy_bonus", true, "verl: an entropy bonus in the actor's loss (entropy_coeff != 0)");
  add_rl_key<std::int64_t>(sub, a, "--generations", "generations", "GRPO: completions per prompt");
  add_rl_key<std::int64_t>(sub, a, "--prompt-len", "prompt_len", "Prompt tokens (GRPO, PPO)");
  add_rl_key<std::int64_t>(sub, a, "--max-length", "max_length", "DPO: tokens each of chosen and rejected is cut to");
  add_rl_key<std::int64_t>(sub, a, "--completion-len", "completion_len", "Most completion tokens (max_completion_length)");
  add_rl_key<std::int64_t>(sub, a, "--mean-completion-len", "mean_completion_len",
                           "The data's mean completion tokens (time; memory where padding is dropped)");
  add_rl_key<std::int64_t>(sub, a, "--mean-prompt-len", "mean_prompt_len", "The data's mean prompt tokens (time; memory where padding is dropped)");
  add_rl_key<std::int64_t>(sub, a, "--max-token-len", "max_token_len", "Tokens per micro-batch (verl use_dynamic_bsz ppo_max_token_len_per_gpu)");
  add_rl_key<std::int64_t>(sub, a, "--micro-batch,--batch,-b", "micro_batch", "Sequences (DPO: pairs) per GPU per forward/backward");
  add_rl_key<std::int64_t>(sub, a, "--prompts-per-step", "prompts_per_step", "Prompts of one rollout batch (default: the framework's)");
  add_rl_key<std::int64_t>(sub, a, "--train-batch", "train_batch", "Sequences per optimizer step (default: the framework's steps per rollout batch)");
  add_rl_key<std::int64_t>(sub, a, "--rollout-gpus", "rollout_gpus", "Placement separate: GPUs running the engine (default as many as train)");
  add_rl_key<std::int64_t>(sub, a, "--rollout-tp", "rollout_tp", "Tensor-parallel size of one rollout engine");
  add_rl_switch(sub, a, "--no-reward-model", "reward_model", false, "PPO: rewards from a rule, no reward model");
}

// The mode flags of `gpuplan rl` and --recommend's market (hooks.hpp recommend_request).
struct rl_state {
  CLI::App* sub = nullptr;
  run_args args;
  bool max_micro_batch = false;
  bool recommend = false;
  recommend_request market;
};

// The flags --recommend reads (recommend's, hooks.hpp): refused without it.
const char* const kRecommendFlags[] = {"--gpus-list", "--max-gpus", "--price", "--prices", "--spot"};

void add_recommend_options(CLI::App* sub, rl_state& s) {
  sub->add_flag("--recommend", s.recommend,
                "Per GPU type, the fewest GPUs (1, 2, 4, ...) whose every phase fits with the planning headroom "
                "(max of 5% and 1 GiB), with the step time and its cost")
      ->group("Recommend");
  sub->add_option("--gpus-list", s.market.gpus_list, "--recommend: candidate GPU ids (default: every GPU with a price)")
      ->group("Recommend");
  sub->add_option("--max-gpus", s.market.max_gpus, "--recommend: counts 1, 2, 4, ... up to this (default 64)")->group("Recommend");
  sub->add_option("--price", s.market.prices, "--recommend: your prices per GPU-hour (override the catalog's): h100-sxm=2.5")
      ->group("Recommend");
  sub->add_option("--prices", s.market.prices_file, "--recommend: your prices, a CSV or JSON file (src/data/PRICES.md)")
      ->group("Recommend");
  sub->add_flag("--spot", s.market.spot, "--recommend: spot prices where the catalog has them (default on-demand)")->group("Recommend");
}

// One mode at a time; recommend's flags only with --recommend, which picks the GPU and the count.
void check_modes(const rl_state& s) {
  if (!s.recommend) {
    for (const char* flag : kRecommendFlags)
      if (const CLI::Option* o = s.sub->get_option(flag); o->count() > 0)
        throw config_error(flag, "only applies with --recommend (got " +
                                     (o->get_expected_min() == 0 ? std::string(flag) : "'" + o->as<std::string>() + "'") + ")");
    return;
  }
  if (s.max_micro_batch) throw config_error("--recommend", "give one of --recommend or --max-micro-batch (got both)");
  if (!s.args.gpu.empty())
    throw config_error("--gpu", "rl --recommend ranks the GPUs of --gpus-list (got '" + s.args.gpu + "')");
  if (const CLI::Option* n = s.sub->get_option("--gpus"); n->count() > 0)
    throw config_error("--gpus", "rl --recommend picks the count, 1, 2, 4, ... up to --max-gpus (got " + n->as<std::string>() + ")");
}

// f(rl_input read from the flags by `read`), an error of the reader's keys ("scenario.rl.<key>")
// re-thrown naming the flag that set it.
template <class Read, class F>
auto with_rl_input(run_args& a, Read&& read, F&& f) -> decltype(f(std::declval<const io::rl_input&>())) {
  load_extra_gpus(a);
  const json j = build_scenario_json(a, nullptr);
  try {
    return f(read(j));
  } catch (const config_error& e) {
    rethrow_with_flag(e, a);
  }
}

int run_rl(run_args& a, const io::style& st, bool max_micro_batch) {
  const io::rl_answer answer = with_rl_input(a, [](const json& j) { return io::read_rl_scenario(j); },
                                             [&](const io::rl_input& in) { return io::answer_rl(in, max_micro_batch); });
  if (st.format == io::report_format::json) print_json(io::rl_json(answer));
  else print(io::rl_report(answer, st));
  const bool fits = answer.searched ? answer.max_micro_batch.has_value() : answer.estimate.fits;
  return fits ? kExitOk : kExitDoesNotFit;
}

// --recommend: the market first (its flags' errors), then the run, then one row per GPU type.
int run_rl_recommend(rl_state& s, const io::style& st) {
  const recommend_options market = market_options(s.market, 64);
  const io::rl_recommendation r =
      with_rl_input(s.args, [&](const json& j) { return io::read_rl_recommend_scenario(j, market.max_gpus); },
                    [&](const io::rl_input& in) { return io::recommend_rl(in, market); });
  if (st.format == io::report_format::json) {
    print_json(io::rl_recommend_json(r));
  } else {
    const bool md = st.format == io::report_format::markdown;
    print(std::string(md ? "### " : "") + io::rl_recommend_summary(r) + prices_source(s.market) + "\n\n" +
          io::render(io::rl_recommend_table(r), st));
  }
  return r.rows.empty() ? kExitDoesNotFit : kExitOk;
}

int run_rl_command(rl_state& s, const io::style& st) {
  check_modes(s);
  return s.recommend ? run_rl_recommend(s, st) : run_rl(s.args, st, s.max_micro_batch);
}

}  // namespace

command register_rl(CLI::App& app, context& ctx) {
  auto s = std::make_shared<rl_state>();
  auto* sub = app.add_subcommand("rl", "RL post-training (DPO, GRPO, PPO): memory per phase, the models kept, step time");
  s->sub = sub;
  add_run_options(sub, s->args, true, false, kSkippedRunFlags);
  sub->remove_option(sub->get_option("--profile"));  // a calibration applies to one run, not to the step's several
  add_rl_options(sub, s->args);
  add_misspelt_flags(sub);
  sub->add_flag("--max-micro-batch", s->max_micro_batch,
                "The largest micro-batch (sequences per GPU per forward/backward; DPO: pairs) at which every phase fits, "
                "the step reported at it")
      ->group("RL");
  add_recommend_options(sub, *s);
  add_output_options(sub, ctx.out);
  sub->footer(std::string("Examples:\n"
                          "  gpuplan rl qwen2.5-7b --algorithm grpo --framework trl --gpu h100-sxm --gpus 8\n"
                          "  gpuplan rl qwen2.5-7b --algorithm dpo --method lora --gpu rtx-4090 --max-length 1024\n"
                          "  gpuplan rl llama-3.1-8b --algorithm grpo --framework verl --gpu h100-sxm --gpus 8 --generations 8\n"
                          "  gpuplan rl --scenario grpo.json --json   # a scenario with an \"rl\" object (docs/scenario.md)\n"
                          "  gpuplan rl qwen2.5-14b --framework verl --method lora --gpu h100-sxm --gpus 2 --max-micro-batch\n"
                          "  gpuplan rl qwen2.5-7b --framework verl --generations 8 --recommend --gpus-list h100-sxm,a100-40gb\n"
                          "rl exits 0 when every phase of the step fits, 1 when one does not (--max-micro-batch: 0 when some\n"
                          "micro-batch fits, 1 when none does; --recommend: 0 when some GPU type fits, 1 when none does).\n") +
              kExitCodes);
  return {sub, [s, &ctx] { return run_rl_command(*s, make_style(ctx.out)); }};
}

}  // namespace gpuplan::cli
