// RL post-training (rl.hpp): each model placed on the training GPUs adds exactly its bytes to
// the phases it lives in, the engine's budget follows its fraction and sleep level, and the
// step is the sum of its parts. The published rows are scored in docs/accuracy.md.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/rl_json.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/plan/rl_max_batch.hpp"
#include "gpuplan/plan/rl_recommend.hpp"
#include "gpuplan/rl.hpp"
#include "gpuplan/serve.hpp"

using namespace gpuplan;

namespace {

scenario rl_policy(const char* gpu, int gpus) {
  scenario s;
  s.gpu = io::find_gpu(gpu);
  s.num_gpus = gpus;
  return s;
}

scenario lora_policy(const char* gpu, int gpus) {
  scenario s = rl_policy(gpu, gpus);
  s.meth = method::lora;
  return s;
}

rl_config verl_config() {
  rl_config c;
  c.fw = rl_framework::verl;
  return c;
}

double rl_phase_alloc(const rl_estimate& e, std::string_view name) {
  for (int i = 0; i < e.phase_count; ++i)
    if (e.phases[static_cast<std::size_t>(i)].name == name) return in_bytes(e.phases[static_cast<std::size_t>(i)].allocated);
  FAIL("no phase " << name);
  return 0;
}

}  // namespace

TEST_CASE("rl: a reference of a fully trained policy adds its parameters in the policy's load dtype to every phase") {
  const architecture& m = io::find_model("llama-3.2-1b");
  rl_config c;  // TRL GRPO: fp32 parameters under bf16 autocast, transformers generate
  c.reference = false;
  const rl_estimate without = estimate_rl(m, rl_policy("a100-80gb", 1), c);
  c.reference = true;
  const rl_estimate with = estimate_rl(m, rl_policy("a100-80gb", 1), c);
  // 4 bytes per parameter (trl/trainer/utils.py create_model_from_path: no dtype -> fp32).
  const double expected = static_cast<double>(count_parameters(m).total) * 4;
  CHECK(in_bytes(with.reference_bytes) == doctest::Approx(expected).epsilon(1e-12));
  for (const char* phase : {"rollout", "scoring", "actor update"})
    CHECK(rl_phase_alloc(with, phase) - rl_phase_alloc(without, phase) == doctest::Approx(expected).epsilon(1e-9));
}

TEST_CASE("rl: TRL under ZeRO-3 gathers the trained models whole for transformers' generate") {
  // trl/models/utils.py unwrap_model_for_generation: GatheredParameters(model.parameters()) for the
  // whole rollout (ds3_gather_for_generation True); DeepSpeed's bf16 module: 2 bytes per parameter.
  const architecture& m = io::find_model("llama-3.2-1b");
  scenario s = rl_policy("a100-80gb", 8);
  s.parallel.zero = 3;
  rl_config c;  // TRL GRPO, transformers generate
  const run actor(m, s);
  const double whole = 2.0 * static_cast<double>(count_parameters(m).total);
  CHECK(detail::rl::gathered_for_generation(m, actor.settings(), detail::rl::resolve(c, s.gpu)) == doctest::Approx(whole).epsilon(1e-12));
  const rl_estimate z3 = estimate_rl(m, s, c);
  CHECK(in_bytes(z3.generation_gathered_bytes) == doctest::Approx(whole).epsilon(1e-12));
  CHECK(rl_phase_alloc(z3, "rollout") > whole);
  // ZeRO-2 keeps whole 16-bit weights anyway; a vLLM rollout (verl) gathers nothing for generate.
  scenario z2 = s;
  z2.parallel.zero = 2;
  CHECK(detail::rl::gathered_for_generation(m, run(m, z2).settings(), detail::rl::resolve(c, s.gpu)) == 0);
  CHECK(detail::rl::gathered_for_generation(m, actor.settings(), detail::rl::resolve(verl_config(), s.gpu)) == 0);
  // PPO gathers its PolicyAndValueWrapper: the value model (a one-output head in place of the LM
  // head) with the policy.
  const architecture value = detail::rl::value_model(m);
  CHECK(detail::rl::gathered_for_generation(value, run(value, s).settings(), detail::rl::resolve(c, s.gpu)) ==
        doctest::Approx(2.0 * static_cast<double>(count_parameters(value).total)).epsilon(1e-12));
}

TEST_CASE("rl: with LoRA the reference is the base with the adapter disabled: no copy") {
  const architecture& m = io::find_model("llama-3.2-1b");
  scenario s = rl_policy("a100-80gb", 1);
  s.meth = method::lora;
  rl_config c;
  c.reference = true;
  CHECK(in_bytes(estimate_rl(m, s, c).reference_bytes) == 0);
}

TEST_CASE("rl: a co-located vLLM holds its fraction of the GPU while it generates, and only its CUDA graphs asleep") {
  const architecture& m = io::find_model("qwen2.5-7b");
  rl_config c;
  c.fw = rl_framework::verl;  // vLLM at 0.5, sleep level 2
  const scenario s = rl_policy("h100-sxm", 8);
  const rl_estimate e = estimate_rl(m, s, c);
  const double graphs = profile_of(engine::vllm).cuda_graph_bytes;
  CHECK(in_bytes(e.phases[0].engine) == doctest::Approx(0.5 * in_bytes(s.gpu.usable_memory) + graphs).epsilon(1e-12));
  CHECK(in_bytes(e.phases[2].engine) == doctest::Approx(graphs).epsilon(1e-12));
  // A tensor-parallel engine keeps its NCCL buffers asleep (outside vLLM's sleep-mode pool).
  c.rollout_tp = 2;
  CHECK(in_bytes(estimate_rl(m, s, c).phases[2].engine) == doctest::Approx(graphs + 1024.0 * kMiB).epsilon(1e-12));
  c.rollout_tp = 1;
  c.sleep_level = 0;  // no sleep: the pool stays through training
  const rl_estimate awake = estimate_rl(m, s, c);
  CHECK(in_bytes(awake.phases[2].engine) == doctest::Approx(in_bytes(awake.phases[0].engine)).epsilon(1e-12));
  // enforce_eager (verl's default until 2025-08): no graph pool awake or asleep, and a slower
  // decode (eager kernel launches instead of one graph replay per step).
  c.sleep_level.reset();
  c.cuda_graphs = false;
  const rl_estimate eager = estimate_rl(m, s, c);
  CHECK(in_bytes(eager.phases[0].engine) == doctest::Approx(0.5 * in_bytes(s.gpu.usable_memory)).epsilon(1e-12));
  CHECK(in_bytes(eager.phases[2].engine) == 0);
  CHECK(in_seconds(eager.rollout_time) > in_seconds(e.rollout_time));
  c.cuda_graphs.reset();
  // Device = the training estimate's overhead + reserved pool + the engine, phase by phase.
  for (int i = 0; i < e.phase_count; ++i) {
    const rl_phase& p = e.phases[static_cast<std::size_t>(i)];
    CHECK(in_bytes(p.device) == doctest::Approx(in_bytes(e.policy.device) - in_bytes(e.policy.peak_reserved) +
                                                in_bytes(p.reserved) + in_bytes(p.engine)).epsilon(1e-12));
  }
}

TEST_CASE("rl: SGLang's fraction is of the memory free when it starts, beside what the trainer holds") {
  const architecture& m = io::find_model("qwen2.5-7b");
  rl_config c;
  c.fw = rl_framework::verl;  // fraction 0.5
  c.rollout = engine::sglang;
  c.offload_trainer = false;  // the trained states stay on the GPU while the engine generates
  const scenario s = rl_policy("h100-sxm", 8);
  const rl_estimate e = estimate_rl(m, s, c);
  // model_runner.py: total_gpu_memory is the free memory before the weights load; the engine
  // holds mem_fraction_static of it: 0.5 x (usable - the trainer's context - its rollout holdings).
  const double context = in_bytes(e.policy.device) - in_bytes(e.policy.peak_reserved);
  const double held = in_bytes(e.phases[0].allocated);
  REQUIRE(held > 0);
  CHECK(in_bytes(e.engine_budget) == doctest::Approx(0.5 * (in_bytes(s.gpu.usable_memory) - context - held)).epsilon(1e-12));
  // vLLM >= 0.7 takes its fraction of the whole GPU, whatever the trainer holds.
  c.rollout = engine::vllm;
  const rl_estimate v = estimate_rl(m, s, c);
  CHECK(in_bytes(v.engine_budget) == doctest::Approx(0.5 * in_bytes(s.gpu.usable_memory) + profile_of(engine::vllm).cuda_graph_bytes).epsilon(1e-12));
}

TEST_CASE("rl: NeMo RL moves the policy to the CPU while vLLM generates and swaps the reference in from the CPU") {
  const architecture& m = io::find_model("llama-3.1-8b");
  scenario s = rl_policy("h100-sxm", 16);
  s.parallel.pp = 2;
  rl_config c;
  c.fw = rl_framework::nemo_rl;
  const rl_estimate e = estimate_rl(m, s, c);
  // Nothing of the trainer stays while vLLM generates; the reference is a CPU state dict.
  CHECK(rl_phase_alloc(e, "rollout") == 0);
  CHECK(in_bytes(e.reference_bytes) == 0);
  // Transfers over PCIe 5 x16 at 0.8 (51.2 GB/s): the trained states out and back, vLLM's
  // 16-bit weights out and back (sleep level 1), and the reference swap (the policy's bf16
  // weights out, the reference's in, the policy's back: 3 x 2 bytes x parameters / pp 2).
  const double P = static_cast<double>(count_parameters(m).total);
  const double states = in_bytes(e.policy.weights) + in_bytes(e.policy.master_weights) + in_bytes(e.policy.optimizer);
  const double moved = 2 * states + 2 * (2 * P) + 3 * (2 * P / 2);
  CHECK(in_seconds(e.transfer_time) == doctest::Approx(moved / (64e9 * 0.8)).epsilon(1e-9));
}

TEST_CASE("rl: DPO trains chosen and rejected side by side at the maximum length, with its reference") {
  const architecture& m = io::find_model("llama-3.2-1b");
  rl_config c;
  c.algo = rl_algorithm::dpo;
  c.micro_batch = 2;
  c.prompt_len = 1024;
  const rl_estimate e = estimate_rl(m, rl_policy("a100-80gb", 1), c);
  scenario same = rl_policy("a100-80gb", 1);
  same.micro_batch = 4;  // 2 pairs
  same.seq_len = 1024;
  same.ckpt = checkpointing::full;  // TRL's gradient_checkpointing default
  const memory_breakdown direct = estimate_memory(m, same);
  CHECK(in_bytes(e.policy.peak_allocated) == doctest::Approx(in_bytes(direct.peak_allocated)).epsilon(1e-12));
  CHECK(e.phase_count == 1);
  CHECK(e.reference);
  CHECK(in_seconds(e.rollout_time) == 0);
}

TEST_CASE("rl: the loss's logits cover the completion only (logits_to_keep)") {
  const architecture& m = io::find_model("llama-3.2-1b");
  scenario s = rl_policy("a100-80gb", 1);
  s.micro_batch = 4;
  s.seq_len = 2048;
  const run all(m, s);
  s.loss_tokens = 512;
  const run kept(m, s);
  const auto f_all = detail::mem::facts_of(m, all.settings(), all.parameters());
  const auto f_kept = detail::mem::facts_of(m, kept.settings(), kept.parameters());
  const auto l_all = detail::mem::loss_bytes(m, all.settings(), f_all);
  const auto l_kept = detail::mem::loss_bytes(m, kept.settings(), f_kept);
  CHECK(l_kept.forward == doctest::Approx(l_all.forward / 4).epsilon(1e-12));
  CHECK(l_kept.backward == doctest::Approx(l_all.backward / 4).epsilon(1e-12));
}

TEST_CASE("rl: the step is rollout + scoring + training + transfers; a shorter mean completion shortens the rollout") {
  const architecture& m = io::find_model("llama-3.1-8b");
  rl_config c;
  c.fw = rl_framework::verl;
  c.completion_len = 4096;
  const scenario s = rl_policy("h100-sxm", 8);
  const rl_estimate full = estimate_rl(m, s, c);
  CHECK(in_seconds(full.step) == doctest::Approx(in_seconds(full.rollout_time) + in_seconds(full.scoring_time) +
                                                 in_seconds(full.training_time) + in_seconds(full.transfer_time)).epsilon(1e-12));
  c.mean_completion_len = 1024;
  const rl_estimate skewed = estimate_rl(m, s, c);
  CHECK(in_seconds(skewed.rollout_time) < in_seconds(full.rollout_time));
  // Memory is set by the cap, not the mean.
  CHECK(in_bytes(skewed.device) == doctest::Approx(in_bytes(full.device)).epsilon(1e-12));
  // Scoring: reference + old log-probs, two forward passes of a third of the model FLOPs each.
  CHECK(in_seconds(full.scoring_time) > 0);
}

TEST_CASE("rl: the capped exponential's scale reproduces the requested mean") {
  for (const double mean : {100.0, 1019.0, 3000.0}) {
    const double cap = 4096, mu = detail::rl::length_scale(mean, cap);
    CHECK(mu * (1 - std::exp(-cap / mu)) == doctest::Approx(mean).epsilon(1e-9));
  }
}

TEST_CASE("rl: PPO keeps critic, reward model and reference on TRL's GPUs and trains the critic in a phase of its own") {
  const architecture& m = io::find_model("llama-3.2-1b");
  rl_config c;
  c.algo = rl_algorithm::ppo;
  const rl_estimate e = estimate_rl(m, rl_policy("a100-80gb", 1), c);
  CHECK(e.critic);
  CHECK(e.reward_model);
  CHECK(e.phase_count == 4);
  CHECK(in_bytes(e.reward_bytes) == doctest::Approx(2.0 * static_cast<double>(count_parameters(m).total)).epsilon(1e-12));
  CHECK(in_bytes(e.critic_bytes) > 0);
  c.fw = rl_framework::openrlhf;  // critic, reward and reference on GPUs of their own
  const rl_estimate apart = estimate_rl(m, rl_policy("a100-80gb", 1), c);
  CHECK(in_bytes(apart.critic_bytes) == 0);
  CHECK(in_bytes(apart.reward_bytes) == 0);
  CHECK(in_bytes(apart.reference_bytes) == 0);
}

TEST_CASE("rl: under verl's Ulysses a GPU holds 1/cp of the micro-batch's logits and max_token_len x cp tokens") {
  // verl dp_actor.py: the unpadded micro-batch is sliced over the sequence-parallel group before
  // the model, so each GPU's logits are "(total_nnz / sp) + pad" rows; dynamic micro-batches take
  // ppo_max_token_len_per_gpu x ulysses_sequence_parallel_size tokens.
  const architecture& m = io::find_model("qwen2.5-7b");
  rl_config c;
  c.fw = rl_framework::verl;
  c.micro_batch = 8;  // unset means: every sequence at verl's prompt + completion caps, 512 + 512
  scenario s = rl_policy("h100-sxm", 2);
  s.meth = method::lora;
  const rl_estimate whole = estimate_rl(m, s, c);
  s.parallel.cp = 2;
  const rl_estimate sliced = estimate_rl(m, s, c);
  // The scoring pass holds the states (the same shards: FSDP spans both GPUs either way) and the
  // in-place log-probs' 16-bit logits of every position: half of them per GPU under cp 2.
  const double logits = static_cast<double>(m.vocab) * 8 * (512 + 512) * 2;
  CHECK(rl_phase_alloc(whole, "scoring") - rl_phase_alloc(sliced, "scoring") == doctest::Approx(logits / 2).epsilon(1e-9));
  // A token bound below one whole sequence is verl's error at cp 1, a valid per-GPU bound at cp 2.
  c.max_token_len = 1000;
  CHECK_NOTHROW((void)estimate_rl(m, s, c));
  s.parallel.cp = 1;
  CHECK_THROWS_WITH((void)estimate_rl(m, s, c), "rl.max_token_len: must be at least 1024 (got 1000)");
}

TEST_CASE("rl: verl's entropy bonus adds two logit-sized gradients to the loss backward only") {
  // dp_actor.py: with entropy_coeff != 0 the log-probs' gradient is no longer written in place and
  // the entropy has its own, both beside the logits while the loss back-propagates; once the head's
  // backward is done they are gone, before the last block is recomputed.
  const architecture& m = io::find_model("qwen2.5-7b");
  rl_config c = verl_config();
  c.micro_batch = 16;
  const scenario s = lora_policy("h100-sxm", 1);
  const rl_estimate without = estimate_rl(m, s, c);
  c.entropy_bonus = true;
  const rl_estimate with = estimate_rl(m, s, c);
  const memory_breakdown& p = with.policy;
  const auto at = [&](memory_breakdown::phase ph) { return in_bytes(p.allocated_by_phase[static_cast<std::size_t>(ph)]); };
  CHECK(in_bytes(p.peak_allocated) == doctest::Approx(std::max({at(memory_breakdown::phase::forward_loss),
                                                                 at(memory_breakdown::phase::loss_backward),
                                                                 at(memory_breakdown::phase::backward_start),
                                                                 at(memory_breakdown::phase::backward_end),
                                                                 at(memory_breakdown::phase::optimizer_step)}))
                                          .epsilon(1e-12));
  // 2 x 2 B x vocab x micro-batch x sequence (the memory scenario's, verl's real tokens).
  const double two_e = 2.0 * 2 * static_cast<double>(m.vocab) * 16 * static_cast<double>(with.policy_settings.seq_len);
  const double update = std::max(in_bytes(p.peak_allocated), at(memory_breakdown::phase::loss_backward) + two_e);
  CHECK(rl_phase_alloc(with, "actor update") - rl_phase_alloc(without, "actor update") ==
        doctest::Approx(update - in_bytes(without.policy.peak_allocated)).epsilon(1e-9));
  CHECK(update < in_bytes(p.peak_allocated) + two_e);  // the loss backward is not the block recompute's peak
}

TEST_CASE("rl: verl's fused kernels hold one 512-token chunk of logits, not the micro-batch's") {
  // model.use_fused_kernels (the policy's fused_linear_loss): FusedLinearForPPO
  // (verl/utils/experimental/torch_functional.py) computes logits, log-probs and entropy 512 tokens
  // at a time. Llama-3.2-1B: vocab 128,256, hidden 2,048 (tied: the head is trained), bf16 (e = 2).
  const architecture& m = io::find_model("llama-3.2-1b");
  rl_config c = verl_config();
  c.micro_batch = 32;
  scenario s = rl_policy("h100-sxm", 1);
  const rl_estimate logits = estimate_rl(m, s, c);
  s.fused_linear_loss = true;
  const rl_estimate fused = estimate_rl(m, s, c);
  const double V = 128256, H = 2048, cV = 512 * V;
  const double T = 32.0 * static_cast<double>(fused.policy_settings.seq_len);
  REQUIRE(T > 512);
  // Scoring, no grad: the in-place path's 16-bit logits of every token against the chunk's fp32
  // logits, softmax, log_softmax and one temporary (4 x 4 B).
  CHECK(rl_phase_alloc(logits, "scoring") - rl_phase_alloc(fused, "scoring") == doctest::Approx(2 * V * T - 16 * cV).epsilon(1e-9));
  // The update: the chunk's forward beside the forward's tensors, its backward beside the loss
  // backward's: 5 fp32 logit-sized terms, or the chunk's head gradient (V x H x 2 B) beside three
  // of them and the 16-bit dlogits (3 x 4 + 2 B per logit), whichever is larger.
  const memory_breakdown& p = fused.policy;
  const auto at = [&](memory_breakdown::phase ph) { return in_bytes(p.allocated_by_phase[static_cast<std::size_t>(ph)]); };
  const double backward = std::max(20 * cV, V * H * 2 + 14 * cV);
  CHECK(backward == doctest::Approx(V * H * 2 + 14 * cV));  // 0.53 + 0.92 GB against 1.31 GB
  const double update = std::max({in_bytes(p.peak_allocated), at(memory_breakdown::phase::forward_loss) + 16 * cV,
                                  at(memory_breakdown::phase::loss_backward) + backward});
  CHECK(rl_phase_alloc(fused, "actor update") == doctest::Approx(update).epsilon(1e-9));
  // The logits' moment was this run's peak; the fused run peaks elsewhere, about 10% lower.
  CHECK(logits.policy.peak_phase == memory_breakdown::phase::loss_backward);
  CHECK(rl_phase_alloc(fused, "actor update") < 0.95 * rl_phase_alloc(logits, "actor update"));
  // With the entropy bonus the chunk's backward holds the entropy's terms too (7 x 4 B per
  // logit; the log_softmax stays beside the head gradient, 4 x 4 + 2 B), and no logit-sized
  // gradients beside it.
  c.entropy_bonus = true;
  const double with_entropy = std::max(28 * cV, V * H * 2 + 18 * cV);
  CHECK(with_entropy == doctest::Approx(28 * cV));  // 1.84 GB against 0.53 + 1.18 GB
  CHECK(rl_phase_alloc(estimate_rl(m, s, c), "actor update") ==
        doctest::Approx(std::max({in_bytes(p.peak_allocated), at(memory_breakdown::phase::forward_loss) + 16 * cV,
                                  at(memory_breakdown::phase::loss_backward) + with_entropy}))
            .epsilon(1e-9));
  // What users turn it on for: a LoRA policy's largest micro-batch grows once the logits go.
  c = verl_config();
  scenario lora = lora_policy("h100-sxm", 1);
  const rl_max_batch before = largest_rl_micro_batch(m, lora, c);
  lora.fused_linear_loss = true;
  const rl_max_batch after = largest_rl_micro_batch(m, lora, c);
  REQUIRE((before.micro_batch && after.micro_batch));
  MESSAGE("largest micro-batch, Llama-3.2-1B LoRA on one H100: " << *before.micro_batch << " with logits, " << *after.micro_batch
                                                                 << " fused");
  CHECK(*after.micro_batch > *before.micro_batch);
}

TEST_CASE("rl: bad settings are one-line errors naming the field") {
  const architecture& m = io::find_model("llama-3.2-1b");
  const scenario s = rl_policy("a100-80gb", 1);
  auto message = [&](rl_config c) {
    try {
      (void)estimate_rl(m, s, c);
    } catch (const config_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  rl_config c;
  c.rollout_fraction = std::nan("");
  CHECK(message(c) == "rl.rollout_fraction: must be a finite number (got nan)");
  // A fused head and loss beside an in-place loss is the scenario's own one-line error.
  c = {};
  scenario fused = s;
  fused.fused_linear_loss = true;
  fused.inplace_loss = true;
  CHECK_THROWS_WITH((void)estimate_rl(m, fused, c), doctest::Contains("scenario.fused_linear_loss: "));
  c = {};
  c.algo = rl_algorithm::dpo;
  c.generations = 4;
  CHECK(message(c) == "rl.algorithm: dpo trains on given pairs: generations, completion_len, rollout and placement do not apply (got dpo)");
  c = {};
  c.completion_len = 0;
  CHECK(message(c) == "rl.completion_len: must be at least 1 (got 0)");
  c = {};
  c.mean_completion_len = 600;  // above TRL's 256 cap
  CHECK(message(c) == "rl.mean_completion_len: must be at most 256 (got 600)");
  c = {};
  c.rollout = engine::llama_cpp;
  CHECK(message(c) == "rl.rollout: must be hf, vllm or sglang (got llama.cpp)");
}

TEST_CASE("serving: the scenario's memory fraction replaces the engine's budget") {
  const architecture& m = io::find_model("llama-3.1-8b");
  scenario s = rl_policy("h100-sxm", 1);
  s.work = workload::infer;
  s.inference.eng = engine::vllm;
  s.inference.memory_fraction = 0.3;
  const serve_result r = serve(m, s);
  CHECK(r.memory_fraction == doctest::Approx(0.3));
  s.inference.memory_fraction = 0.6;
  const serve_result more = serve(m, s);
  // 0.3 more of the GPU goes to the pool, in whole blocks.
  const double block = in_bytes(kv_cache_bytes_per_token(run(m, s))) * 16;
  CHECK(in_bytes(more.pool) - in_bytes(r.pool) == doctest::Approx(0.3 * in_bytes(s.gpu.usable_memory)).epsilon(block / in_bytes(r.pool)));
  s.inference.eng = engine::hf;
  CHECK_THROWS_WITH(serve(m, s), "scenario.inference.memory_fraction: only applies to an engine with a KV pool (vllm, sglang, tgi; got engine hf)");
}

// The headroom is the planner's (plan/margin.hpp): the larger of 5% of the usable memory and
// 1 GiB, so a 24 GiB card keeps 1.2 GiB and an 80 GiB one 4 GiB.
TEST_CASE("rl: the recommendation is each GPU's smallest count that fits with the planning headroom") {
  const architecture& m = io::find_model("qwen2.5-7b");
  rl_config c;
  c.fw = rl_framework::verl;
  c.generations = 8;
  rl_recommend_request req;
  req.gpus = {io::find_gpu("h100-sxm"), io::find_gpu("a100-40gb"), io::find_gpu("rtx-4090")};
  req.prices = {{"h100-sxm", 3.0}};
  const std::vector<rl_option> rows = recommend_rl(m, scenario{}, c, req);
  REQUIRE(!rows.empty());
  CHECK(rows.front().gpu.id == "h100-sxm");  // the only priced row comes first
  const auto keep = [](const rl_estimate& e) { return std::max(0.05 * in_bytes(e.capacity), in_bytes(gib(1))); };
  for (const rl_option& o : rows) {
    CAPTURE(o.gpu.id);
    CHECK(in_bytes(o.estimate.headroom) >= keep(o.estimate));
    CHECK(in_bytes(o.estimate.headroom) >= in_bytes(margin_headroom(plan_margin{}, o.estimate.capacity)));
    if (o.gpus > 1) {  // half as many GPUs does not fit with the headroom (or cannot be laid out)
      scenario fewer;
      fewer.gpu = o.gpu;
      fewer.num_gpus = o.gpus / 2;
      try {
        const rl_estimate e = estimate_rl(m, fewer, c);
        CHECK((in_bytes(e.headroom) < keep(e) || !std::isfinite(in_seconds(e.step))));
      } catch (const config_error&) {
      }
    }
  }
  CHECK(*rows.front().cost_per_step == doctest::Approx(3.0 * rows.front().gpus * in_seconds(rows.front().estimate.step) / 3600));
  // A floor beyond every card's memory leaves no row; a negative one is refused.
  req.headroom_min = gib(200);
  CHECK(recommend_rl(m, scenario{}, c, req).empty());
  req.headroom_min = gib(-1);
  CHECK_THROWS_WITH(recommend_rl(m, scenario{}, c, req), doctest::Contains("rl.recommend.headroom_min"));
}

// The published rows (tests/data/validation/rl.jsonl, sources and caveats in each row's note),
// read by the scenario reader. No constant was fitted to them: these are out-of-sample errors,
// listed with their figures in docs/rl.md. Bands: every memory row within 20%, every time row
// within 50% (the 70B NeMo RL rows miss by 34-47%, docs/rl.md), the median step-time error at
// most 20% and the median memory error at most 10%; of the 14 published fit/OOM verdicts, the 13
// the model gets right stay right (the miss, in docs/rl.md: verl's 72B MIN script on H800, at
// 100.3% of the card); each of verl's four LoRA batch searches (rl.max_micro_batch) finds its
// largest micro-batch within 50% of the interval [last that ran, first that failed) (now -10% to
// +49%: the three Ulysses searches late, by several GB per GPU the model does not explain; 32%
// until the entropy's moment lost the block FSDP prefetches only at the head's backward, which
// moved them 3-18 points later, docs/rl.md).
TEST_CASE("rl: the published RL rows, out of sample") {
  std::ifstream in(std::string(GPUPLAN_TEST_DATA_DIR) + "/validation/rl.jsonl");
  REQUIRE(in.good());
  std::string line;
  int rows = 0;
  std::vector<double> memory_errors, step_errors, boundary_errors;
  int verdicts = 0, verdicts_right = 0;
  while (std::getline(in, line)) {
    const nlohmann::json row = nlohmann::json::parse(line);
    const io::rl_input input = io::read_rl_scenario(row["scenario"]);
    const rl_estimate e = io::estimate_rl(input);
    const std::string metric = row["metric"];
    CAPTURE(row["id"].get<std::string>());
    ++rows;
    if (metric == "rl.max_micro_batch") {  // a batch search: the boundary lies in [expected, first_failed)
      const rl_max_batch b = largest_rl_micro_batch(*input.policy.model, input.policy.settings, input.config);
      REQUIRE(b.micro_batch.has_value());
      const auto ran = row["expected"].get<double>(), failed = row["first_failed"].get<double>();
      const auto found = static_cast<double>(*b.micro_batch);
      const double error = found < ran ? found / ran - 1 : found >= failed ? found / (failed - 1) - 1 : 0.0;
      boundary_errors.push_back(std::abs(error));
      MESSAGE(row["id"].get<std::string>() << " largest micro-batch: published " << ran << " ran, " << failed << " failed; estimate "
                                           << found << " (" << 100 * error << "%)");
      CHECK(std::abs(error) <= 0.50);
      continue;
    }
    if (metric == "rl.fits") {
      ++verdicts;
      verdicts_right += e.fits == row["expected"].get<bool>() ? 1 : 0;
      // The device figure stops at 100% while the pool squeezes into the card; the live tensors
      // and the engine of the fullest phase show how close the run is.
      double live = 0;
      for (int i = 0; i < e.phase_count; ++i)
        live = std::max(live, in_bytes(e.phases[static_cast<std::size_t>(i)].allocated) + in_bytes(e.phases[static_cast<std::size_t>(i)].engine));
      MESSAGE(row["id"].get<std::string>() << " verdict: published " << std::string(row["expected"].get<bool>() ? "fits" : "OOM")
                                           << ", estimate " << 100 * in_bytes(e.device) / in_bytes(e.capacity) << "% of the card (live tensors + engine "
                                           << 100 * live / in_bytes(e.capacity) << "%)");
      continue;
    }
    const double expected = row["expected"].get<double>();
    const double estimate = metric == "rl.device_bytes"          ? in_bytes(e.device)
                            : metric == "rl.peak_reserved_bytes" ? in_bytes(e.peak_reserved)
                            : metric == "rl.rollout_seconds"     ? in_seconds(e.rollout_time)
                            : metric == "rl.scoring_seconds"     ? in_seconds(e.scoring_time)
                            : metric == "rl.training_seconds"    ? in_seconds(e.training_time)
                                                                 : in_seconds(e.step);
    REQUIRE((metric.ends_with("_bytes") || metric.ends_with("_seconds")));
    const double band = metric.ends_with("_seconds") ? 0.50 : 0.20;
    const double error = std::abs(estimate - expected) / expected;
    if (metric.ends_with("_bytes")) memory_errors.push_back(error);
    if (metric == "rl.step_seconds") step_errors.push_back(error);
    MESSAGE(row["id"].get<std::string>() << " " << metric << ": published " << expected << ", estimate " << estimate << " ("
                                         << 100 * (estimate - expected) / expected << "%)");
    CHECK(std::abs(estimate - expected) <= band * expected);
  }
  CHECK(rows == 44);
  CHECK(verdicts == 14);
  CHECK(verdicts_right >= 13);
  REQUIRE(boundary_errors.size() == 4);
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  REQUIRE(memory_errors.size() == 6);
  REQUIRE(step_errors.size() == 8);
  CHECK(median(memory_errors) <= 0.10);
  CHECK(median(step_errors) <= 0.20);
}

TEST_CASE("rl: the largest micro-batch fits and one more sequence does not") {
  const architecture& m = io::find_model("qwen2.5-7b");
  const scenario s = lora_policy("a100-80gb", 1);
  rl_config c = verl_config();
  const rl_max_batch b = largest_rl_micro_batch(m, s, c);
  REQUIRE(b.micro_batch.has_value());
  CHECK(b.estimate.fits);
  c.micro_batch = *b.micro_batch;
  CHECK(in_bytes(estimate_rl(m, s, c).device) == doctest::Approx(in_bytes(b.estimate.device)).epsilon(1e-12));
  c.micro_batch = *b.micro_batch + 1;
  CHECK_FALSE(estimate_rl(m, s, c).fits);
  // Token-bounded micro-batches are sized by max_token_len: the sequence count is not the knob.
  c.max_token_len = 8192;
  CHECK_THROWS_WITH(largest_rl_micro_batch(m, s, c),
                    "rl.max_token_len: micro-batches are token-bounded, so their sequence count sets no memory (got 8192)");
  // A model that does not fit even one sequence: no micro-batch, the estimate at one says why.
  c.max_token_len.reset();
  const rl_max_batch none = largest_rl_micro_batch(io::find_model("qwen2.5-72b"), rl_policy("rtx-4090", 1), c);
  CHECK_FALSE(none.micro_batch.has_value());
  CHECK_FALSE(none.estimate.fits);
}

TEST_CASE("rl: the policy's settings are the run its memory was estimated at") {
  // verl drops padding: the actor's memory runs at the heaviest micro-batch's real tokens, not the caps.
  const architecture& m = io::find_model("qwen2.5-7b");
  const scenario s = lora_policy("h100-sxm", 8);
  rl_config c = verl_config();
  c.prompt_len = 1024;
  c.completion_len = 2048;
  c.mean_completion_len = 400;
  c.mean_prompt_len = 200;
  const rl_estimate e = estimate_rl(m, s, c);
  CHECK(e.policy_settings.seq_len < 1024 + 2048);
  CHECK(in_bytes(estimate_memory(m, e.policy_settings).peak_allocated) == doctest::Approx(in_bytes(e.policy.peak_allocated)).epsilon(1e-12));
}

TEST_CASE("rl: a zero parallel degree is the run's one-line error, not a crash") {
  scenario s = rl_policy("a100-80gb", 1);
  s.parallel.cp = 0;
  CHECK_THROWS_WITH(estimate_rl(io::find_model("llama-3.2-1b"), s, rl_config{}), "scenario.parallel.cp: must be at least 1 (got 0)");
}

TEST_CASE("rl: separate rollout GPUs count in the run's GPUs and its fit verdict") {
  const architecture& m = io::find_model("llama-3.1-8b");
  rl_config c;
  c.fw = rl_framework::openrlhf;  // vLLM on GPUs of its own
  const rl_estimate e = estimate_rl(m, rl_policy("h100-sxm", 8), c);
  CHECK(e.rollout_gpus == 8);  // unset: as many as train
  CHECK(e.gpus == 16);
  CHECK(e.tokens_per_second_per_gpu ==
        doctest::Approx(static_cast<double>(e.sequences_per_step) * static_cast<double>(e.prompt_len + e.mean_completion_len) /
                        in_seconds(e.step) / 16));
  CHECK(e.rollout_fits);
  c.rollout_gpus = 4;
  CHECK(estimate_rl(m, rl_policy("h100-sxm", 8), c).gpus == 12);
  // 16 GB of 16-bit weights cannot be served at vLLM's 0.95 of a 16 GB card: the run does not fit,
  // however much room the training GPUs have.
  scenario big = rl_policy("h100-sxm", 8);
  rl_config tiny = c;
  tiny.rollout_gpus = 1;
  const rl_estimate ok = estimate_rl(m, big, tiny);
  CHECK(ok.rollout_fits);
  big.gpu = io::find_gpu("t4");
  big.meth = method::lora;
  const rl_estimate no = estimate_rl(m, big, tiny);
  CHECK_FALSE(no.rollout_fits);
  CHECK_FALSE(no.fits);
}

TEST_CASE("rl: offload_trainer takes the trained states off the GPU while the engine generates, and costs their copies") {
  const architecture& m = io::find_model("qwen2.5-7b");
  rl_config c;
  c.fw = rl_framework::verl;
  const scenario s = rl_policy("h100-sxm", 8);
  const rl_estimate kept = estimate_rl(m, s, c);
  c.offload_trainer = true;  // verl's actor param_offload + optimizer_offload
  const rl_estimate off = estimate_rl(m, s, c);
  const double states = in_bytes(off.policy.weights) + in_bytes(off.policy.master_weights) + in_bytes(off.policy.optimizer);
  CHECK(rl_phase_alloc(kept, "rollout") - rl_phase_alloc(off, "rollout") == doctest::Approx(states).epsilon(1e-9));
  // The update phase keeps them: the same peak there.
  CHECK(rl_phase_alloc(off, "actor update") == doctest::Approx(rl_phase_alloc(kept, "actor update")).epsilon(1e-12));
  // Out and back over PCIe 5 x16 at 0.8 each step (verl's engine sleeps at level 2: no engine copies).
  CHECK(in_seconds(off.transfer_time) - in_seconds(kept.transfer_time) == doctest::Approx(2 * states / (64e9 * 0.8)).epsilon(1e-9));
}

TEST_CASE("rl: TRL trains policy and value model in one backward (PolicyAndValueWrapper)") {
  // trl/trainer/ppo_trainer.py: the wrapper runs the value model's backbone, then the policy, and
  // one loss pg_loss + vf_coef * vf_loss back-propagates through both: the policy's backward (its
  // nodes are the later ones) runs beside the value model's saved activations, the value model's
  // beside the policy's gradients.
  const architecture& m = io::find_model("llama-3.2-1b");
  const architecture value = detail::rl::value_model(m);
  rl_config c;  // TRL
  c.algo = rl_algorithm::ppo;
  const rl_estimate e = estimate_rl(m, rl_policy("a100-80gb", 1), c);
  const scenario& ps = e.policy_settings;
  scenario cs = ps;
  cs.loss_tokens.reset();
  const run actor(m, ps), critic(value, cs);
  const detail::rl::stage_parts policy = detail::rl::stage_parts_of(actor), vm = detail::rl::stage_parts_of(critic);
  // bf16 gradients of the 1,235,814,400 parameters; the value model's 16 block inputs of 8 x 768
  // tokens x 2048 (checkpointing) and its edges.
  CHECK(policy.gradients == doctest::Approx(2.0 * 1235814400).epsilon(1e-12));
  CHECK(vm.stored >= 16.0 * 8 * 768 * 2048 * 2);
  const memory_breakdown cm = estimate_memory(critic);
  const double others = in_bytes(e.reference_bytes) + in_bytes(e.reward_bytes);
  const double actor_states = detail::rl::resident_states(e.policy, ps), critic_states = detail::rl::resident_states(cm, cs);
  CHECK(rl_phase_alloc(e, "critic update") ==
        doctest::Approx(actor_states + policy.gradients + in_bytes(cm.peak_allocated) + others).epsilon(1e-12));
  CHECK(rl_phase_alloc(e, "actor update") ==
        doctest::Approx(in_bytes(e.policy.peak_allocated) + critic_states + vm.stored + others).epsilon(1e-12));
}
