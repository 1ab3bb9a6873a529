// rl.hpp — RL post-training (DPO, GRPO, PPO): which models a step keeps on the training
// GPUs, their memory in each phase of the step (rollout, scoring, training), and the step
// time as rollout + scoring + training. Every model that trains is estimated by the training
// model (memory.hpp, timing.hpp), the rollout engine by the serving model (serve.hpp); this
// header only places them. The frameworks' defaults are data (kRlProfiles); docs/rl.md gives
// each term's source.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "gpuplan/memory.hpp"
#include "gpuplan/names.hpp"
#include "gpuplan/run.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/serve.hpp"
#include "gpuplan/timing.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan {

// DPO: policy + frozen reference over chosen/rejected pairs, no generation. GRPO: G sampled
// completions per prompt scored by a rule or reward function, advantages within the group.
// PPO: actor, critic (value model), reward model and reference, advantages by GAE.
enum class rl_algorithm : std::uint8_t { dpo, grpo, ppo };
enum class rl_framework : std::uint8_t { trl, verl, openrlhf, nemo_rl };
// Where the rollout engine runs: on the training GPUs, taking turns with training (TRL
// vllm_mode colocate, verl's hybrid engine, OpenRLHF --colocate_all_models, NeMo RL colocated),
// or on GPUs of its own (TRL vllm_mode server, OpenRLHF's default vLLM engines).
enum class rollout_placement : std::uint8_t { colocated, separate };

inline constexpr std::array<enum_name<rl_algorithm>, 3> kRlAlgorithmNames{{
    {rl_algorithm::dpo, "dpo"}, {rl_algorithm::grpo, "grpo"}, {rl_algorithm::ppo, "ppo"}}};
inline constexpr std::array<enum_name<rl_framework>, 4> kRlFrameworkNames{{
    {rl_framework::trl, "trl"}, {rl_framework::verl, "verl"}, {rl_framework::openrlhf, "openrlhf"},
    {rl_framework::nemo_rl, "nemo-rl"}}};
inline constexpr std::array<enum_name<rollout_placement>, 2> kRolloutPlacementNames{{
    {rollout_placement::colocated, "colocated"}, {rollout_placement::separate, "separate"}}};
template <> inline constexpr std::span<const enum_name<rl_algorithm>> name_table<rl_algorithm>{kRlAlgorithmNames};
template <> inline constexpr std::span<const enum_name<rl_framework>> name_table<rl_framework>{kRlFrameworkNames};
template <> inline constexpr std::span<const enum_name<rollout_placement>> name_table<rollout_placement>{kRolloutPlacementNames};

// What an RL framework does by default: the training backend it drives, where and with
// which engine it generates, which models it keeps, and its config defaults.
struct rl_profile {
  rl_framework id;
  std::string_view summary;
  framework trainer;            // the training profile of its actor/critic workers (framework.hpp)
  int zero;                     // sharding of the trained models over the data-parallel GPUs (3: FSDP full shard)
  engine rollout;               // the default rollout engine (hf: transformers generate)
  rollout_placement placement;
  double rollout_fraction;      // the engine's gpu_memory_utilization (of total memory, vLLM >= 0.7)
  // 0: the engine keeps its weights and KV pool while the trainer trains; 1: weights go to the
  // CPU and the pool is freed (vLLM sleep level 1); 2: both are discarded (level 2).
  int sleep_level;
  bool reference;               // a reference model for the KL term by default
  bool reference_offloaded;     // its parameters wait on the CPU between uses
  bool reference_in_param_dtype;// loaded like the policy (fp32 under autocast) rather than in the compute dtype
  bool old_logprobs;            // a no-grad forward of the policy over the rollout for the old log-probs
  bool models_colocated;        // reference, critic and reward model share the actor's GPUs (else groups of their own)
  bool trainer_offloaded_in_rollout;  // the trained models' weights and optimizer go to the CPU while the engine generates
  std::int64_t generations;     // GRPO completions per prompt
  std::int64_t prompts_per_step;// prompts of one rollout batch (0: the trainer's global batch / G)
  std::int64_t prompt_len;      // max prompt tokens
  std::int64_t completion_len;  // max completion tokens
  std::int64_t micro_batch;     // sequences per GPU per forward/backward
  checkpointing ckpt;           // the recipes' activation checkpointing
  std::int64_t dpo_max_length;  // DPO: chosen and rejected are each cut to this many tokens
  int reference_copies;         // an offloaded reference: copies of its weights' size over PCIe per scoring pass
  int optimizer_steps;          // optimizer steps per rollout batch (its sequences / the train batch)
  bool packs_sequences;         // training micro-batches are bins of micro_batch x (prompt + completion) tokens
  bool removes_padding;         // a micro-batch holds its sequences' real tokens, no padding (verl use_remove_padding)
  // Log-probs of every position by flash-attn's Triton cross-entropy, the gradient written into
  // the 16-bit logits (verl torch_functional.py logprobs_from_logits); else the completion's
  // logits upcast to fp32 (TRL selective_log_softmax, OpenRLHF logits.float()).
  bool inplace_logprobs;
  // The actor loaded in fp32 and computed in bf16 (verl fsdp_workers.py: model_dtype unset is
  // float32 for the actor; FSDP MixedPrecision param_dtype bf16): a LoRA base stays fp32.
  bool actor_fp32;
  // Generation by transformers under ZeRO-3 gathers every parameter of the trained model for the
  // whole rollout (TRL unwrap_model_for_generation, ds3_gather_for_generation True by default).
  bool gathers_for_generation;
  // PPO trains the policy and the value model in one forward and one backward (TRL
  // PolicyAndValueWrapper) rather than as two updates.
  bool critic_trained_with_actor;
};

inline constexpr std::array<rl_profile, 4> kRlProfiles{{
    // TRL 0.19-1.9 GRPOConfig / DPOConfig (trl/trainer/grpo_config.py, dpo_config.py): beta 0.0
    // (no reference for GRPO), use_vllm False (generation by transformers generate in the trainer),
    // vllm_mode colocate at vllm_gpu_memory_utilization 0.3 when on, sleep mode off,
    // num_generations 8, max_prompt_length 512, max_completion_length 256, per-device batch 8
    // (transformers TrainingArguments), gradient_checkpointing True; the policy and reference
    // are loaded by from_pretrained without a dtype, i.e. fp32 under bf16 autocast
    // (trl/trainer/utils.py create_model_from_path). DPO: beta 0.1 with a reference, max_length 1024.
    // One optimizer step per generation batch (steps_per_generation = gradient_accumulation_steps).
    // Under ZeRO-3, generation gathers the trained model whole (ds3_gather_for_generation True).
    // PPO: policy and value model in one PolicyAndValueWrapper, one loss pg_loss + vf_coef * vf_loss.
    {rl_framework::trl, "TRL GRPOTrainer / DPOTrainer / PPOTrainer (transformers Trainer, one process per GPU)",
     framework::hf, 0, engine::hf, rollout_placement::colocated, 0.3, 0, false, false, true, false, true, false, 8, 0, 512, 256, 8,
     checkpointing::full, 1024, 0, 1, false, false, false, false, true, true},
    // verl trainer/config/ppo_trainer.yaml and its GRPO recipes (examples/grpo_trainer/*.sh):
    // FSDP actor (full shard), vLLM hybrid engine colocated at gpu_memory_utilization 0.5 whose
    // weights and KV are freed after generation (free_cache_engine, sleep level 2), reference
    // with use_kl_loss kept on the CPU (FSDP1 CPUOffload), old log-probs recomputed, rollout.n 5,
    // train_batch_size 1024 prompts, 512 + 512 tokens, gradient checkpointing on, micro-batch 4
    // (recipes' ppo_micro_batch_size_per_gpu); ppo_mini_batch_size 256 prompts: 4 optimizer steps
    // per batch of 1024; use_remove_padding True in every recipe (dp_actor.py unpads each
    // micro-batch to its real tokens), use_dynamic_bsz off (rl.max_token_len turns it on).
    {rl_framework::verl, "verl (FSDP workers, vLLM hybrid engine sleeping between rollouts)",
     framework::fsdp, 3, engine::vllm, rollout_placement::colocated, 0.5, 2, true, true, false, true, true, false, 5, 1024, 512, 512, 4,
     checkpointing::full, 1024, 1, 4, false, true, true, true, false, false},
    // OpenRLHF cli/train_ppo_ray.py: DeepSpeed ZeRO-2 actor; reference, critic, reward model and
    // vLLM engines each on GPUs of their own (no --colocate_all_models) with vLLM at
    // vllm_gpu_memory_utilization 0.95, reference (init_kl_coef 0.01) as a bf16 copy, prompt 1024 +
    // generate 1024, rollout batches of 1024 prompts and micro batches of 1 (examples/scripts
    // train_ppo_llama_ray.sh: --rollout_batch_size 1024), gradient checkpointing (examples),
    // train_batch_size 128: 8 optimizer steps per rollout batch, --packing_samples off.
    {rl_framework::openrlhf, "OpenRLHF (Ray; DeepSpeed actor/critic, vLLM engines on their own GPUs)",
     framework::deepspeed, 2, engine::vllm, rollout_placement::separate, 0.95, 0, true, false, false, true, false, false, 1, 1024, 1024, 1024, 1,
     checkpointing::full, 2048, 0, 8, false, false, false, false, false, false},
    // NeMo RL examples/configs/grpo_math_1B.yaml: Megatron/DTensor policy, vLLM colocated at
    // gpu_memory_utilization 0.6 and offloaded while training, the policy offloaded to the CPU
    // while vLLM generates (nemo_rl/algorithms/grpo.py refit_policy_generation:
    // offload_before_refit / offload_after_refit), reference kept (KL 0.01) as a CPU state dict
    // swapped into the policy's parameters for its pass (megatron_policy_worker.py
    // use_reference_model: the policy's weights out, the reference's in, the policy's back),
    // 32 prompts x 16 generations, logprobs recomputed, sequence 512 (recipes 4096),
    // train_micro_batch_size 4, Megatron's distributed optimizer (states sharded: ZeRO-1),
    // train_global_batch_size 512 = the rollout batch (one optimizer step), sequence packing on
    // (policy.sequence_packing: bins of max_total_sequence_length x train_micro_batch_size tokens).
    {rl_framework::nemo_rl, "NeMo RL (Megatron-core or DTensor policy, vLLM colocated and offloaded while training)",
     framework::megatron, 1, engine::vllm, rollout_placement::colocated, 0.6, 1, true, true, false, true, true, true, 16, 32, 512, 512, 4,
     checkpointing::full, 1024, 3, 1, true, false, false, false, false, false},
}};

constexpr const rl_profile& profile_of(rl_framework f) { return kRlProfiles[static_cast<std::size_t>(f)]; }

// The RL run. `policy` is the model's training scenario (method, precision, optimizer, GPU,
// GPU count, gradient accumulation, parallel layout); its micro_batch, seq_len and loss_tokens
// are set from the fields here. Unset fields take the framework's defaults (kRlProfiles).
struct rl_config {
  rl_algorithm algo = rl_algorithm::grpo;
  rl_framework fw = rl_framework::trl;
  std::optional<engine> rollout{};
  std::optional<rollout_placement> placement{};
  std::optional<double> rollout_fraction{};
  std::optional<int> sleep_level{};
  // The engine's decode as CUDA graphs (unset: the engine's default on the GPU, engine.hpp
  // decode_uses_cuda_graphs). false: vLLM enforce_eager, verl's rollout default until
  // 2025-08 (trainer/config/ppo_trainer.yaml enforce_eager: True): no graph pool, slower decode.
  std::optional<bool> cuda_graphs{};
  std::optional<bool> reference{};
  // The trained models' weights and optimizer states wait on the CPU while the engine generates
  // and come back for scoring and the update (verl actor param_offload + optimizer_offload,
  // fsdp_workers.py; NeMo RL's default). Not parallel.offload_*, which keep them on the CPU
  // through the update too.
  std::optional<bool> offload_trainer{};
  std::optional<std::int64_t> generations{};          // GRPO: completions per prompt (PPO, DPO: 1)
  std::optional<std::int64_t> prompt_len{}, completion_len{};
  std::optional<std::int64_t> mean_completion_len{};  // the data's mean completion (unset: completion_len)
  std::optional<std::int64_t> mean_prompt_len{};      // the data's mean prompt (unset: prompt_len)
  // Tokens per micro-batch (verl use_dynamic_bsz ppo_max_token_len_per_gpu): each optimizer
  // step's sequences on a GPU split into as few balanced micro-batches as hold them.
  std::optional<std::int64_t> max_token_len{};
  // An entropy bonus in the actor's loss (verl actor.entropy_coeff != 0; 0 by default since
  // verl 0.4.1; before verl #1100, 2025-04-17, the entropy was in the actor's graph at any
  // coefficient): the softmax of every logit and its gradients at the loss.
  bool entropy_bonus = false;
  std::optional<std::int64_t> micro_batch{};          // sequences (DPO: pairs) per GPU per forward/backward
  std::optional<std::int64_t> prompts_per_step{};     // unset: the sequences one optimizer step trains / G
  std::optional<std::int64_t> train_batch{};          // sequences per optimizer step (unset: the framework's steps per batch)
  int rollout_gpus = 0;                                // separate placement: GPUs running the engine (0: as many as train)
  int rollout_tp = 1;                                  // tensor parallel size of one engine
  bool reward_model = true;                            // PPO: a reward model of the policy's size (false: a rule)

  friend bool operator==(const rl_config&, const rl_config&) = default;
};

// Memory of one phase on a training GPU.
struct rl_phase {
  std::string_view name;       // "rollout", "scoring", "actor update", "critic update"
  Bytes allocated = bytes(0);  // the trainer's live tensors
  Bytes reserved = bytes(0);   // the trainer's caching-allocator pool (torch max_memory_reserved)
  Bytes engine = bytes(0);     // the co-located engine's memory (its own pool and weights)
  Bytes device = bytes(0);     // nvidia-smi: context + the trainer's reserved pool + the engine
};

struct rl_estimate {
  rl_algorithm algo = rl_algorithm::grpo;
  rl_framework fw = rl_framework::trl;
  rollout_placement placement = rollout_placement::colocated;
  engine rollout = engine::hf;
  double rollout_fraction = 0;
  bool reference = false, critic = false, reward_model = false;
  std::int64_t generations = 1, prompt_len = 0, completion_len = 0, mean_completion_len = 0, mean_prompt_len = 0;
  std::int64_t sequences_per_step = 0;   // sequences one optimizer step trains (all GPUs)
  std::array<rl_phase, 4> phases{};
  int phase_count = 0;
  int peak_phase = 0;
  Bytes device = bytes(0), capacity = bytes(0), headroom = bytes(0);
  Bytes peak_reserved = bytes(0);        // the largest trainer pool over the phases
  bool fits = false;                     // the peak phase fits, and under separate placement so does the engine
  bool rollout_fits = true;              // separate placement: the engine holds a whole sequence on its GPUs
  memory_breakdown policy{};             // the actor's training estimate at its peak
  // The actor's training run `policy` estimates: its micro-batch and sequence are the heaviest
  // micro-batch's real tokens where the framework drops padding (verl), else the caps.
  scenario policy_settings{};
  Bytes reference_bytes = bytes(0), critic_bytes = bytes(0), reward_bytes = bytes(0);
  // transformers generate under ZeRO-3 (TRL): the trained models' weights gathered whole for the
  // rollout, part of its phase.
  Bytes generation_gathered_bytes = bytes(0);
  Bytes engine_budget = bytes(0);        // the rollout engine's memory per GPU while it generates
  Bytes rollout_device = bytes(0);       // separate placement: device memory of a rollout GPU
  int rollout_gpus = 0;                  // separate placement: the GPUs the engines run on (else 0)
  int gpus = 0;                          // GPUs the run holds: the training GPUs + rollout_gpus
  std::int64_t rollout_concurrency = 0;  // sequences one engine decodes at once
  Seconds rollout_time = seconds(0), scoring_time = seconds(0), training_time = seconds(0), step = seconds(0);
  Seconds transfer_time = seconds(0);    // state moved between the CPU and a training GPU around generation and scoring
  double tokens_per_second_per_gpu = 0;  // prompt + completion tokens of a step / (step x GPUs), NeMo RL's definition
  time_estimate policy_time{};           // the actor's training time of one optimizer step
};

namespace detail::rl {

struct resolved {
  rl_config c;
  const rl_profile* p = nullptr;
  std::int64_t G = 1, P = 0, C = 0, C_mean = 0, P_mean = 0, b = 1;
  std::int64_t max_tokens = 0;  // token-bounded micro-batches (0: micro_batch sequences each)
  engine eng = engine::hf;
  rollout_placement place = rollout_placement::colocated;
  double fraction = 0;
  int sleep = 0;
  bool graphs = false;   // the engine's decode as CUDA graphs, beside a graph pool
  bool ref = false, critic = false, reward = false;
  bool offload = false;  // the trained models' states on the CPU while the engine generates
};

inline resolved resolve(const rl_config& c, const gpu_spec& gpu) {
  resolved r;
  r.c = c;
  r.p = &profile_of(c.fw);
  const rl_profile& p = *r.p;
  r.G = c.algo == rl_algorithm::grpo ? c.generations.value_or(p.generations) : 1;
  r.P = c.prompt_len.value_or(c.algo == rl_algorithm::dpo ? p.dpo_max_length : p.prompt_len);
  r.C = c.algo == rl_algorithm::dpo ? 0 : c.completion_len.value_or(p.completion_len);
  r.C_mean = c.algo == rl_algorithm::dpo ? 0 : c.mean_completion_len.value_or(r.C);
  r.P_mean = c.mean_prompt_len.value_or(r.P);
  r.max_tokens = c.max_token_len.value_or(0);
  r.b = c.micro_batch.value_or(p.micro_batch);
  r.eng = c.rollout.value_or(p.rollout);
  r.place = c.placement.value_or(p.placement);
  r.fraction = c.rollout_fraction.value_or(p.rollout_fraction);
  r.sleep = c.sleep_level.value_or(p.sleep_level);
  r.graphs = r.eng != engine::hf && c.cuda_graphs.value_or(gpu.sm() >= profile_of(r.eng).cuda_graphs_from_sm);
  // DPO always compares with a reference (TRL DPOTrainer precompute_ref_log_probs False keeps it loaded).
  r.ref = c.reference.value_or(c.algo == rl_algorithm::dpo || c.algo == rl_algorithm::ppo || p.reference);
  r.offload = c.offload_trainer.value_or(p.trainer_offloaded_in_rollout);
  r.critic = c.algo == rl_algorithm::ppo;
  r.reward = c.algo == rl_algorithm::ppo && c.reward_model;
  return r;
}

inline void check(const scenario& s, const resolved& r) {
  using detail::require_range;
  if (s.work != workload::train) fail("rl.policy.workload", "must be train (got infer)");
  require_range(r.G, 1, 1024, "rl.generations");
  require_range(r.b, 1, kMaxBatch, "rl.micro_batch");
  require_range(r.P, 1, kMaxSeq, r.c.algo == rl_algorithm::dpo ? "rl.max_length" : "rl.prompt_len");
  if (r.c.algo != rl_algorithm::dpo) {
    require_range(r.C, 1, kMaxSeq, "rl.completion_len");
    require_range(r.C_mean, 1, r.C, "rl.mean_completion_len");
  }
  require_range(r.P_mean, 1, r.P, "rl.mean_prompt_len");
  if (r.c.algo == rl_algorithm::dpo && r.c.mean_prompt_len)
    fail("rl.mean_prompt_len", "dpo's pairs are cut to max_length: give max_length (got dpo)");
  if (r.c.entropy_bonus && !r.p->inplace_logprobs)
    fail("rl.entropy_bonus", "the entropy bonus is verl's (actor.entropy_coeff) (got framework " + std::string(to_string(r.c.fw)) + ")");
  if (r.c.max_token_len) {
    // verl seqlen_balancing.py rearrange_micro_batches: max_token_len x cp (dp_actor.py) >= the longest sequence.
    const int cp = std::max(1, s.parallel.cp);
    require_range(r.max_tokens, (r.P + r.C + cp - 1) / cp, kMaxBatch * kMaxSeq, "rl.max_token_len");
    if (!r.p->removes_padding && !r.p->packs_sequences)
      fail("rl.max_token_len", std::string(to_string(r.c.fw)) + " pads its micro-batches: token-bounded micro-batches are verl's (use_dynamic_bsz) (got " +
                                   std::to_string(r.max_tokens) + ")");
  }
  detail::require_finite(r.fraction, 0.01, 1.0, "rl.rollout_fraction");
  require_range(r.sleep, 0, 2, "rl.sleep_level");
  require_range(r.c.rollout_tp, 1, kMaxGpus, "rl.rollout_tp");
  require_range(r.c.rollout_gpus, 0, kMaxGpus, "rl.rollout_gpus");
  if (r.c.prompts_per_step) require_range(*r.c.prompts_per_step, 1, kMaxBatch, "rl.prompts_per_step");
  if (r.c.train_batch) require_range(*r.c.train_batch, 1, kMaxBatch, "rl.train_batch");
  if (r.c.algo == rl_algorithm::dpo && r.c.train_batch)
    fail("rl.train_batch", "dpo steps once per batch of pairs: set the policy's grad_accum (got dpo)");
  if (r.c.algo == rl_algorithm::dpo && (r.c.generations || r.c.completion_len || r.c.rollout || r.c.placement))
    fail("rl.algorithm", "dpo trains on given pairs: generations, completion_len, rollout and placement do not apply (got dpo)");
  if (r.c.algo != rl_algorithm::grpo && r.c.generations && *r.c.generations != 1)
    fail("rl.generations", "only grpo samples several completions per prompt (got " + std::to_string(*r.c.generations) + ")");
  if (r.eng != engine::hf && !profile_of(r.eng).paged_pool)
    fail("rl.rollout", "must be hf, vllm or sglang (got " + std::string(to_string(r.eng)) + ")");
  if (r.place == rollout_placement::colocated && s.num_gpus % r.c.rollout_tp != 0)
    fail("rl.rollout_tp", "must divide the GPUs the engine shares (" + std::to_string(s.num_gpus) + " GPUs, got " +
                              std::to_string(r.c.rollout_tp) + ")");
  if (r.eng == engine::hf && r.place == rollout_placement::separate)
    fail("rl.placement", "separate needs a serving engine (vllm or sglang), not transformers generate");
}

// A sequence of `tokens` padded to a multiple of tp x 2 cp (Megatron's sequence parallelism splits
// it over tp, context parallelism in 2 cp load-balanced chunks; NeMo RL
// make_sequence_length_divisible_by = tp x cp x 2). The degrees count as at least 1 here:
// validation names a zero or negative degree when the run is made.
inline std::int64_t padded_sequence(const scenario& s, std::int64_t tokens) {
  const int cp = std::max(1, s.parallel.cp);
  const std::int64_t mult = std::max<std::int64_t>(1, s.parallel.tp.value_or(1)) * (cp > 1 ? 2 * cp : 1);
  return (tokens + mult - 1) / mult * mult;
}

// The actor's training scenario: the framework's trainer, sharding and checkpointing where
// the policy scenario leaves them, sequences of prompt + completion (DPO: chosen and rejected
// side by side, TRL concatenated_forward), logits for the completion only (TRL logits_to_keep).
inline scenario actor_scenario(scenario s, const resolved& r, std::int64_t prompt, std::int64_t completion) {
  if (s.fw == framework::hf) s.fw = r.p->trainer;
  if (s.parallel.zero == 0 && s.num_gpus > 1) s.parallel.zero = r.p->zero;
  if (!s.ckpt) s.ckpt = r.p->ckpt;
  if (r.c.algo == rl_algorithm::dpo) {
    s.seq_len = r.P;
    s.micro_batch = 2 * r.b;
    s.loss_tokens.reset();
  } else {
    s.micro_batch = r.b;
    s.seq_len = prompt + completion;
    s.loss_tokens = completion;
    // verl dp_actor.py: logits of every position (the prompt's too), log-probs gathered in place;
    // with model.use_fused_kernels (fused_linear_loss) a chunk of them at a time
    // (rl_estimate.hpp fused_logprob_chunk).
    if (r.p->inplace_logprobs) {
      s.loss_tokens.reset();
      s.inplace_loss = !s.fused_linear_loss;
    }
  }
  s.seq_len = padded_sequence(s, s.seq_len);
  return s;
}

// A value model: the policy's architecture with a one-output head (TRL PPO's value model,
// verl's critic: AutoModelForTokenClassification with num_labels 1).
inline architecture value_model(architecture a) {
  a.head = head_kind::classifier;
  a.num_labels = 1;
  a.name += " (value)";
  return a;
}

}  // namespace detail::rl

// The RL step on `policy` (a training scenario of `model`) under `cfg`.
inline rl_estimate estimate_rl(const architecture& model, const scenario& policy, const rl_config& cfg);

}  // namespace gpuplan

#include "gpuplan/detail/rl_estimate.hpp"
