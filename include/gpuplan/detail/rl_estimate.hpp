// detail/rl_estimate.hpp — estimate_rl (rl.hpp): the phases of an RL step on a training GPU
// and its time. Each model's figures come from the training or serving estimator; the
// placement and the phase sums are here. docs/rl.md § Memory and § Time.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>

#include "gpuplan/memory.hpp"
#include "gpuplan/rl.hpp"
#include "gpuplan/serve.hpp"
#include "gpuplan/timing.hpp"

namespace gpuplan {
namespace detail::rl {

using mem::bytes_of;
using mem::kFp32Bytes;
using mem::precision_bytes;

// Parameters kept between steps: weights, fp32 master copy, optimizer state (gradients are
// freed by zero_grad(set_to_none=True), the default since PyTorch 2.0, unless kept).
inline double resident_states(const memory_breakdown& m, const scenario& s) {
  return in_bytes(m.weights) + in_bytes(m.master_weights) + in_bytes(m.optimizer) - in_bytes(m.paged) +
         (s.keep_gradients ? in_bytes(m.gradients) : 0.0);
}

// A frozen copy of the model (reference, reward model) on one GPU: the policy's parameters
// split over tp x pp, and over the data-parallel GPUs under ZeRO-3 / FSDP full shard
// (DeepSpeed prepare_deepspeed keeps stage 3 for the reference, trl/models/utils.py).
inline double frozen_copy_bytes(const run& actor, double bytes_per_param) {
  const scenario& s = actor.settings();
  const double shard = s.parallel.zero >= 3 ? std::max(1, s.dp()) : 1;
  return static_cast<double>(actor.parameters().total) * bytes_per_param / (s.model_parallel() * shard);
}

// The reference's bytes on the GPU: none with PEFT (the adapter is disabled for the reference
// pass, trl GRPOTrainer/DPOTrainer `use_peft`), none when it waits on the CPU (verl's FSDP
// reference), else the policy's parameters in the dtype the framework loads them in.
inline double reference_bytes(const run& actor, const resolved& r) {
  const scenario& s = actor.settings();
  if (!r.ref || traits_of(s.meth).peft || r.p->reference_offloaded || !r.p->models_colocated) return 0;
  const precision_bytes pb = bytes_of(precision_of(s));
  const double per_param = r.p->reference_in_param_dtype ? std::max(pb.weight, pb.master) : pb.act;
  return frozen_copy_bytes(actor, per_param);
}

// Logits of one micro-batch over `positions` per sequence held on one GPU: the vocabulary split
// over tp (Megatron vocab-parallel head), the sequence over cp (verl dp_actor.py: under Ulysses the
// logits are "(total_nnz / sp) + pad" rows, log-probs gathered after; Megatron CP shards the sequence).
inline double logits_per_gpu(const architecture& a, const scenario& s, std::int64_t positions) {
  return static_cast<double>(a.vocab) / s.parallel.tp_size() * static_cast<double>(s.micro_batch) *
         static_cast<double>(positions) / std::max(1, s.parallel.cp);
}

// verl's fused head and log-probs (model.use_fused_kernels, written as the policy scenario's
// fused_linear_loss): FusedLinearForPPO (verl/utils/experimental/torch_functional.py, the torch
// backend, chunk_size 512) takes the logits of 512 tokens at a time, so no logits tensor exists;
// log-probs and entropy come out per token. Its chunk working set, in bytes per chunk logit:
//   forward  (_fused_linear_for_ppo_fwd): the fp32 logits, softmax, log_softmax and logsumexp's
//            or the entropy product's temporary, 4 x 4;
//   backward (_fused_linear_for_ppo_bwd): the fp32 logits, softmax, one-hot, the log-prob term's
//            temporary and its product, 5 x 4; with the entropy's gradient (rl.entropy_bonus) its
//            log_softmax and two temporaries more, 7 x 4; then, with a trained head, the chunk's
//            head gradient (dlogits.t() @ hidden, vocab x hidden x e) beside the fp32 logits,
//            softmax, one-hot (and log_softmax), 3 (4) x 4, and the e-dlogits, before it joins
//            the accumulated one (the head's gradient, counted by the training estimate).
// The head's input gradient (zeros_like(hidden_states)) is the fused loss's per-token term.
inline constexpr double kVerlFusedChunkTokens = 512;
inline bool verl_fused_logprobs(const scenario& s, const resolved& r) { return s.fused_linear_loss && r.p->inplace_logprobs; }
struct fused_chunk { double forward = 0, backward = 0; };
inline fused_chunk fused_logprob_chunk(const architecture& a, const run& actor, const resolved& r) {
  const scenario& s = actor.settings();
  if (!verl_fused_logprobs(s, r) || a.head != head_kind::lm) return {};
  const double e = bytes_of(precision_of(s)).act;
  const double V = static_cast<double>(a.vocab) / s.parallel.tp_size();
  const double cV = std::min(kVerlFusedChunkTokens * V, logits_per_gpu(a, s, s.seq_len));
  const double fp32_terms = r.c.entropy_bonus ? 7 : 5, beside_head_grad = r.c.entropy_bonus ? 4 : 3;
  const bool head_trained = !traits_of(s.meth).peft;
  const double head_grad = head_trained ? V * static_cast<double>(a.hidden) * e + (beside_head_grad * kFp32Bytes + e) * cV : 0.0;
  return {4 * kFp32Bytes * cV, std::max(fp32_terms * kFp32Bytes * cV, head_grad)};
}

// No-grad log-prob forward of one micro-batch: the e-logits of the completion, their fp32
// copy and log_softmax's fp32 output (trl selective_log_softmax after accelerate's fp32
// conversion; OpenRLHF models/actor.py logits.float()). In-place log-probs (verl): the
// e-logits of every position; the old-log-prob pass's entropy (fsdp_workers.py
// compute_log_prob) runs torch.compile'd (dp_actor.py, use_torch_compile true by default), a
// fused reduction over those logits that keeps no softmax. verl's fused kernels: one chunk's
// forward (fused_logprob_chunk).
inline double logprob_working_set(const architecture& a, const run& actor, const resolved& r) {
  if (a.head != head_kind::lm) return 0;
  const scenario& s = actor.settings();
  const double e = bytes_of(precision_of(s)).act;
  if (verl_fused_logprobs(s, r)) return fused_logprob_chunk(a, actor, r).forward;
  if (r.p->inplace_logprobs) return logits_per_gpu(a, s, s.seq_len) * e;
  return logits_per_gpu(a, s, s.loss_tokens.value_or(r.C)) * (e + 2 * kFp32Bytes);
}

// A LoRA base the framework keeps in fp32 (rl_profile actor_fp32): its bytes beyond the weight
// dtype the training estimate counted (a full fine-tune's fp32 shard is its master copy, counted).
inline double fp32_base_extra(const run& actor, const resolved& r) {
  const scenario& s = actor.settings();
  const double weight = bytes_of(precision_of(s)).weight;
  if (!r.p->actor_fp32 || !traits_of(s.meth).peft || s.quant || traits_of(s.meth).quantized_base || weight >= kFp32Bytes) return 0;
  return frozen_copy_bytes(actor, kFp32Bytes - weight);
}

// The entropy bonus at the loss (verl dp_actor.py calculate_entropy; entropy_from_logits,
// logsumexp(logits) - sum(softmax(logits) * logits), under torch.compile, use_torch_compile
// true by default: fused, no softmax kept): the backward holds, besides the e-logits, the
// entropy's e-gradient and the log-probs' own, no longer written in place: 2 e per logit.
// Under verl's fused kernels the entropy's gradient is part of the chunk's backward (fused_chunk).
inline double entropy_extra(const architecture& a, const run& actor, const resolved& r) {
  const scenario& s = actor.settings();
  if (!r.c.entropy_bonus || a.head != head_kind::lm || s.fused_linear_loss) return 0;
  return 2 * bytes_of(precision_of(s)).act * logits_per_gpu(a, s, s.seq_len);
}

// The rollout engine's scenario: the model served at prompt + completion tokens. A paged
// engine serves merged 16-bit weights at the RL budget; transformers generate runs the
// trainer's own model (its method and quantization).
inline scenario engine_scenario(const scenario& actor, const resolved& r, std::int64_t batch) {
  scenario e = actor;
  serve_instead(e);
  e.inference.eng = r.eng;
  e.inference.batch = std::max<std::int64_t>(1, batch);
  e.inference.prompt_len = r.P;
  e.inference.gen_len = r.C;
  e.num_gpus = r.c.rollout_tp;
  e.parallel = {};
  e.loss_tokens.reset();
  e.ckpt.reset();
  if (r.eng != engine::hf) {
    e.meth = method::full;
    e.quant.reset();
    e.inference.memory_fraction = r.fraction;
    e.inference.cuda_graphs = r.graphs;
  }
  return e;
}

// Completion lengths: all at completion_len unless a smaller mean is given; then exponential
// with that mean, capped at completion_len (the scale mu solves mu (1 - exp(-cap / mu)) = mean,
// the capped distribution's mean). RL completions are right-skewed with a long tail (NeMo RL's
// performance summary: mean 1,019 of 4,096 allowed), so a batch decodes ever fewer sequences.
inline double length_scale(double mean, double cap) {
  double mu = mean;
  for (int i = 0; i < 60 && mean < cap; ++i) mu = mean / (1.0 - std::exp(-cap / mu));
  return mu;
}

// Variance of one completion's length under that distribution: E[min(X, c)^2] - mean^2 with
// E[min(X, c)^2] = 2 mu^2 (1 - e^(-c/mu) (1 + c/mu)); none when every completion reaches the cap.
inline double completion_variance(double mean, double cap) {
  if (mean >= cap) return 0.0;
  const double mu = length_scale(mean, cap), x = cap / mu;
  return std::max(0.0, 2 * mu * mu * (1 - std::exp(-x) * (1 + x)) - mean * mean);
}

// Real tokens of the heaviest micro-batch of `n` sequences when the framework drops padding:
// n (mean prompt + mean completion) + z sd, z = 3.09 (one micro-batch in 1,000 holds more; the
// normal approximation of a sum of n independent lengths), at most n (prompt_len + completion_len).
inline double heaviest_tokens(const resolved& r, std::int64_t n) {
  const auto N = static_cast<double>(n);
  const double mean = N * static_cast<double>(r.P_mean + r.C_mean);
  const double sd = std::sqrt(N * completion_variance(static_cast<double>(r.C_mean), static_cast<double>(r.C)));
  return std::min(N * static_cast<double>(r.P + r.C), mean + 3.09 * sd);
}

// Tokens one token-bounded micro-batch holds: rl.max_token_len per GPU times cp, the GPUs that
// share its sequences (verl dp_actor.py: ppo_max_token_len_per_gpu x ulysses_sequence_parallel_size;
// megatron_actor.py: x context_parallel_size).
inline std::int64_t micro_batch_tokens(const resolved& r, const scenario& s) {
  return r.max_tokens * std::max(1, s.parallel.cp);
}

// Whether a micro-batch's memory follows its real tokens rather than the caps.
inline bool sizes_by_real_tokens(const resolved& r) {
  return r.c.algo != rl_algorithm::dpo && (r.p->removes_padding || r.max_tokens > 0);
}

// The actor's memory scenario: `caps` (actor_scenario at the length caps), unless the framework
// drops padding (verl use_remove_padding: dp_actor.py runs the micro-batch's real tokens) or bounds
// micro-batches by tokens (rl.max_token_len: verl seqlen_balancing.py rearrange_micro_batches
// splits a GPU's `step_sequences` into ceil(tokens / max_token_len) balanced micro-batches). Then
// the heaviest micro-batch, written as sequences of equal length: the prompts at their mean, the
// rest completion.
inline scenario memory_scenario(const scenario& caps, const resolved& r, std::int64_t step_sequences) {
  scenario s = caps;
  if (!sizes_by_real_tokens(r)) return s;
  std::int64_t n = r.max_tokens > 0 ? std::max<std::int64_t>(1, step_sequences) : r.b;
  double tokens = heaviest_tokens(r, n);
  if (r.max_tokens > 0) {
    const double parts = std::ceil(tokens / static_cast<double>(micro_batch_tokens(r, s)));
    tokens /= parts;
    n = static_cast<std::int64_t>(std::ceil(static_cast<double>(n) / parts));
  }
  s.micro_batch = n;
  s.seq_len = padded_sequence(s, static_cast<std::int64_t>(std::ceil(tokens / static_cast<double>(n))));
  if (s.loss_tokens) s.loss_tokens = std::clamp<std::int64_t>(s.seq_len - r.P_mean, 1, r.C);
  return s;
}

struct phase_parts {
  double states = 0;  // actor, critic, reference and reward model bytes alive in every phase
  double engine_on = 0, engine_off = 0;
};

// A phase's trainer pool in the room the engine leaves: the engine's memory is its own
// (vLLM CuMemAllocator, outside PyTorch's pool), so the caching allocator squeezes into
// the card less the engine (memory_allocator.hpp allocator_and_context).
inline void add_phase(rl_estimate& out, const run& actor, std::string_view name, double allocated, double engine) {
  const scenario& s = actor.settings();
  const double room = std::max(1.0, in_bytes(s.gpu.usable_memory) - engine);
  const mem::device_peaks d =
      mem::allocator_and_context(allocated, in_bytes(out.policy.paged), s.num_gpus, actor.memory_constants(), room);
  rl_phase& ph = out.phases[static_cast<std::size_t>(out.phase_count++)];
  ph.name = name;
  ph.allocated = bytes(allocated);
  ph.reserved = bytes(d.reserved);
  ph.engine = bytes(engine);
  ph.device = bytes(d.device + engine);
}

// A trained model's weights gathered whole for generation: TRL generates with transformers
// inside unwrap_model_for_generation, which under ZeRO-3 gathers every parameter of the trained
// model for the whole rollout (trl/models/utils.py, gather_deepspeed3_params =
// ds3_gather_for_generation, True by default; PPO passes its PolicyAndValueWrapper, so the value
// model is gathered with the policy): the weights the same run holds without ZeRO-3, beside its
// shards.
inline double gathered_for_generation(const architecture& a, const scenario& s, const resolved& r) {
  if (r.eng != engine::hf || s.parallel.zero < 3 || !r.p->gathers_for_generation) return 0;
  scenario whole = s;
  whole.parallel.zero = 0;
  whole.parallel.offload_params = offload::none;
  whole.parallel.offload_optimizer = offload::none;
  return in_bytes(estimate_memory(run(a, whole)).weights);
}

// Stage 0's gradients and stored activations of a trained model (memory_states.hpp,
// memory_activations.hpp), bytes per GPU.
struct stage_parts {
  double gradients = 0, stored = 0;
};
inline stage_parts stage_parts_of(const run& x) {
  const architecture& a = x.model();
  const scenario& s = x.settings();
  const mem::facts f = mem::facts_with_acts(a, s, x.parameters());
  const mem::stage_params sp = mem::params_of_stage(a, f, s, 0);
  const mem::stage_trainables t = mem::trainables_of_stage(a, s, f, sp);
  return {mem::resident_states(a, s, f, sp, t).gradients, mem::stage_activations(a, s, f, sp, 0).stored};
}

// Memory of every phase on an actor GPU, and the peak (`value`: PPO's value model, else null).
inline void estimate_phases(rl_estimate& out, const architecture& a, const run& actor, const resolved& r,
                            const std::shared_ptr<const architecture>& value) {
  const scenario& s = actor.settings();
  const memory_breakdown& m = out.policy;
  phase_parts p;
  const double fp32_base = fp32_base_extra(actor, r);
  const double actor_states = resident_states(m, s) + fp32_base;
  double critic_peak = 0, critic_states = 0, critic_stored = 0, gathered = gathered_for_generation(a, s, r);
  if (value && r.p->models_colocated) {
    const run critic(value, [&] {
      scenario c = s;
      c.loss_tokens.reset();
      return c;
    }());
    const memory_breakdown cm = estimate_memory(critic);
    critic_peak = in_bytes(cm.peak_allocated);
    critic_states = resident_states(cm, critic.settings());
    critic_stored = stage_parts_of(critic).stored;
    gathered += gathered_for_generation(*value, critic.settings(), r);
  }
  out.critic_bytes = bytes(critic_states);
  out.generation_gathered_bytes = bytes(gathered);
  out.reference_bytes = bytes(reference_bytes(actor, r));
  out.reward_bytes = bytes(r.reward && r.p->models_colocated ? frozen_copy_bytes(actor, bytes_of(precision_of(s)).act) : 0.0);
  const double others = in_bytes(out.reference_bytes) + in_bytes(out.reward_bytes);
  p.states = actor_states + critic_states + others;
  // What the trainer holds while the engine generates, as when the engine started (the
  // frameworks build the trained models, and offload them, before the engine).
  const double held = (r.offload ? 0.0 : actor_states + critic_states) + others;
  if (r.place == rollout_placement::colocated && r.eng != engine::hf) {
    const engine_profile& ep = profile_of(r.eng);
    const double graphs = r.graphs ? ep.cuda_graph_bytes : 0.0;  // none under enforce_eager
    // SGLang's fraction is of the memory then free: the card less the trainer's context and holdings.
    const double context = in_bytes(m.device) - in_bytes(m.peak_reserved);
    const double base = ep.fraction_of_free ? std::max(0.0, in_bytes(s.gpu.usable_memory) - context - held) : in_bytes(s.gpu.usable_memory);
    p.engine_on = r.fraction * base + graphs;
    // Asleep, the engine keeps its CUDA graph pool and, under tensor parallelism, its NCCL buffers.
    const double comm = r.c.rollout_tp > 1 ? memory_defaults::engine_nccl_buffers : 0.0;
    p.engine_off = r.sleep == 0 ? p.engine_on : graphs + comm;
  }
  out.engine_budget = bytes(p.engine_on);
  if (r.c.algo != rl_algorithm::dpo) {
    double generation = 0;
    if (r.eng == engine::hf) {  // transformers generate in the trainer: its KV cache and working set
      const std::int64_t batch = s.micro_batch * s.grad_accum;
      const memory_breakdown g = estimate_memory(run(a, engine_scenario(s, r, batch)));
      generation = in_bytes(g.kv_cache) + in_bytes(g.activations) + in_bytes(g.transient);
    }
    add_phase(out, actor, "rollout", held + generation + gathered, p.engine_on);
    add_phase(out, actor, "scoring", p.states + logprob_working_set(a, actor, r), p.engine_off);
  }
  // The entropy's gradients live in the loss's own backward only, beside the logits
  // (entropy_extra), before the head's backward adds its gradient and FSDP prefetches a block
  // (memory_phases.hpp step_phases): with the log-probs in place (inplace_logprobs, which the
  // bonus requires) that moment holds what the loss's forward did, the logits alone.
  const auto at = [&](memory_breakdown::phase ph) { return in_bytes(m.allocated_by_phase[static_cast<std::size_t>(ph)]); };
  const fused_chunk chunk = fused_logprob_chunk(a, actor, r);
  const double trained = std::max({in_bytes(m.peak_allocated), at(memory_breakdown::phase::forward_loss) + entropy_extra(a, actor, r),
                                   at(memory_breakdown::phase::forward_loss) + chunk.forward,
                                   at(memory_breakdown::phase::loss_backward) + chunk.backward});
  // TRL's PPOTrainer trains policy and value model in one forward and one backward
  // (ppo_trainer.py PolicyAndValueWrapper: the value model's backbone, then the policy; one loss
  // pg_loss + vf_coef * vf_loss): the policy, run last, back-propagates first beside the value
  // model's saved activations, then the value model beside the policy's gradients.
  const bool joint = critic_peak > 0 && r.p->critic_trained_with_actor;
  add_phase(out, actor, "actor update", trained + fp32_base + critic_states + others + (joint ? critic_stored : 0.0), p.engine_off);
  if (critic_peak > 0)
    add_phase(out, actor, "critic update", actor_states + (joint ? stage_parts_of(actor).gradients : 0.0) + critic_peak + others,
              p.engine_off);
  for (int i = 0; i < out.phase_count; ++i)
    if (in_bytes(out.phases[static_cast<std::size_t>(i)].device) > in_bytes(out.phases[static_cast<std::size_t>(out.peak_phase)].device))
      out.peak_phase = i;
  out.device = out.phases[static_cast<std::size_t>(out.peak_phase)].device;
  for (int i = 0; i < out.phase_count; ++i)
    out.peak_reserved = bytes(std::max(in_bytes(out.peak_reserved), in_bytes(out.phases[static_cast<std::size_t>(i)].reserved)));
  out.capacity = s.gpu.usable_memory;
  out.headroom = bytes(in_bytes(out.capacity) - in_bytes(out.device));
  out.fits = in_bytes(out.headroom) >= 0;
}

// Seconds of one no-grad forward over the step's sequences: the training step's time scaled by
// forward model FLOPs (1/3 of forward + backward, Kaplan et al. 2020) over the hardware FLOPs
// it ran (which include the recompute).
inline double forward_seconds(const time_estimate& t) {
  const double hw = in_flops(t.hardware_flops_per_step);
  return hw > 0 ? in_seconds(t.step) * in_flops(t.model_flops_per_step) / 3.0 / hw : 0.0;
}

// Sequences a vLLM-style engine schedules per step (max_num_seqs): 256, 1024 on GPUs of 70 GiB
// or more other than the A100 (vllm/engine/arg_utils.py get_batch_defaults, LLM class).
inline std::int64_t max_num_seqs(const scenario& s, engine eng) {
  const std::int64_t base = profile_of(eng).max_seqs;
  const bool large = in_gib(s.gpu.usable_memory) >= 70 && s.gpu.id.find("a100") == std::string::npos;
  return large ? 4 * base : base;
}

// Seconds for one engine to decode `n` sequences started together: the prompts' time to first
// token, then decode steps whose batch is the sequences still running, n exp(-t / mu), until the
// longest of the `waited` sequences the step collects at once ends (about mu (ln waited +
// 0.577), the expected maximum of that many exponentials, or the cap): the trainer gathers
// every engine's completions before it scores them (verl, OpenRLHF, NeMo RL generate then
// train; TRL gathers across processes), so the step waits for the slowest engine.
inline double wave_seconds(const run& engine_run, std::int64_t n, std::int64_t waited, double mean, double cap) {
  const efficiency_params& e = engine_run.efficiency();
  const serve_point full = serve_at(engine_run, n, e);
  if (mean >= cap) return in_seconds(full.time_to_first_token) + cap * in_seconds(full.inter_token_latency);
  const double mu = length_scale(mean, cap), N = static_cast<double>(n);
  const double end = std::min(cap, mu * (std::log(static_cast<double>(std::max(n, waited))) + 0.5772));
  constexpr int kSlices = 24;
  double t = in_seconds(full.time_to_first_token);
  for (int k = 0; k < kSlices; ++k) {
    const double mid = end * (k + 0.5) / kSlices;
    const auto active = static_cast<std::int64_t>(std::max(1.0, std::round(N * std::exp(-mid / mu))));
    t += end / kSlices * in_seconds(serve_at(engine_run, active, e).inter_token_latency);
  }
  return t;
}

// Rollout seconds: each engine decodes its share of the step's sequences, as many at once as its
// KV pool holds (transformers generate: the trainer's generation batch). Beyond one batch the
// pool stays full (continuous batching refills it) for the sequences before the last batch.
inline double rollout_seconds(rl_estimate& out, const architecture& a, const scenario& s, const resolved& r) {
  const int engine_gpus = r.place == rollout_placement::separate ? out.rollout_gpus : s.num_gpus;
  const std::int64_t replicas = std::max(1, engine_gpus / r.c.rollout_tp);
  const std::int64_t share = (out.sequences_per_step + replicas - 1) / replicas;
  std::int64_t batch = r.eng == engine::hf ? std::min(share, s.micro_batch * s.grad_accum) : share;
  const run engine_run(a, engine_scenario(s, r, batch));
  if (r.eng != engine::hf) {
    const serve_result sr = serve(engine_run);
    if (r.place == rollout_placement::separate) out.rollout_device = sr.memory.device;
    if (sr.max_concurrency <= 0) return std::numeric_limits<double>::infinity();
    // The pool admits sequences while blocks are free: prompt + the mean completion each.
    const auto by_pool = static_cast<std::int64_t>(sr.pool_tokens / std::max<std::int64_t>(1, r.P_mean + r.C_mean));
    batch = std::min({share, std::max(sr.max_concurrency, by_pool), max_num_seqs(s, r.eng)});
  }
  out.rollout_concurrency = batch;
  const double mean = static_cast<double>(r.C_mean), cap = static_cast<double>(r.C);
  const double before_last = std::ceil(static_cast<double>(share) / static_cast<double>(batch)) - 1;
  const serve_point steady = serve_at(engine_run, batch, engine_run.efficiency());
  const std::int64_t waited = batch * replicas;
  const double refill = r.eng == engine::hf ? wave_seconds(engine_run, batch, waited, mean, cap)
                                            : in_seconds(steady.time_to_first_token) + mean * in_seconds(steady.inter_token_latency);
  return before_last * refill + wave_seconds(engine_run, batch, waited, mean, cap);
}

// Seconds per step moving state over one training GPU's PCIe link, at the rate the offload
// model uses (timing_optimizer.hpp: the x16 figure x pcie_fraction; pageable copies, measured
// refits show, run slower): the trained models' weights and optimizer states out and back when
// the framework offloads them while the engine generates (NeMo RL offload_before_refit /
// offload_after_refit, megatron_policy_worker.py; gradients are freed, not copied); the
// engine's 16-bit weights out and back around training under sleep level 1 (vLLM
// CuMemAllocator keeps a CPU copy; level 2 discards them and the refit refills them device to
// device); a reference kept on the CPU copied in per scoring pass (verl FSDP CPUOffload: once;
// NeMo RL use_reference_model: the policy's weights out, the reference's in, the policy's back).
inline double transfer_seconds(const rl_estimate& out, const run& actor, const resolved& r) {
  const scenario& s = actor.settings();
  const double link = host_copy_rate(s.gpu, actor.efficiency());
  double moved = 0;
  if (r.c.algo != rl_algorithm::dpo && r.place == rollout_placement::colocated && r.eng != engine::hf) {
    if (r.offload) moved += 2 * (resident_states(out.policy, s) + in_bytes(out.critic_bytes));
    const double engine_weights = static_cast<double>(actor.parameters().total) * 2.0 / r.c.rollout_tp;
    if (r.sleep == 1) moved += 2 * engine_weights;
  }
  if (r.ref && r.p->reference_offloaded && !traits_of(s.meth).peft)
    moved += r.p->reference_copies * frozen_copy_bytes(actor, bytes_of(precision_of(s)).act);
  return link > 0 ? moved / link : 0.0;
}

// The optimizer steps one rollout batch trains in, and the actor's time scenario for one of
// them: sequences of prompt + mean completion; a packing framework fills each micro-batch with
// as many as a bin of micro_batch x (prompt + completion) tokens holds (NeMo RL
// sequence_packing), so a pipeline runs fewer, fuller micro-batches per step (its bubble
// (pp - 1) / (m + pp - 1) is paid once per optimizer step), and under pipeline parallelism
// every bin is padded to the full bin (megatron_policy_worker.py train: pad_full_seq_to, the
// pipeline's fixed shapes): its sequences are then counted at bin / count tokens each.
inline std::int64_t optimizer_steps(const rl_estimate& out, const resolved& r) {
  const std::int64_t seqs = std::max<std::int64_t>(1, out.sequences_per_step);
  if (r.c.algo == rl_algorithm::dpo) return 1;
  const std::int64_t steps = r.c.train_batch ? (seqs + *r.c.train_batch - 1) / *r.c.train_batch : r.p->optimizer_steps;
  return std::clamp<std::int64_t>(steps, 1, seqs);
}

inline scenario step_scenario(const scenario& policy, const resolved& r, std::int64_t sequences) {
  scenario ts = actor_scenario(policy, r, r.P_mean, r.C_mean);
  if ((r.p->packs_sequences || r.max_tokens > 0) && r.c.algo != rl_algorithm::dpo) {
    const std::int64_t bin = r.max_tokens > 0 ? micro_batch_tokens(r, ts) : r.b * (r.P + r.C);
    ts.micro_batch = std::max<std::int64_t>(1, bin / std::max<std::int64_t>(1, r.P_mean + r.C_mean));
    if (ts.parallel.pp > 1) {
      ts.seq_len = padded_sequence(ts, bin / ts.micro_batch);
      ts.loss_tokens = std::min(*ts.loss_tokens, ts.seq_len);
    }
  }
  const std::int64_t per_pass = ts.micro_batch * std::max(1, ts.dp());
  ts.grad_accum = std::max<std::int64_t>(1, (sequences + per_pass - 1) / per_pass);
  return ts;
}

// `steps` optimizer steps of `per_update` sequences each train the rollout batch.
inline void estimate_step_time(rl_estimate& out, const architecture& a, const run& actor, const resolved& r,
                               const std::shared_ptr<const architecture>& value, std::int64_t steps, std::int64_t per_update) {
  const scenario& policy = actor.settings();
  const std::int64_t seqs = out.sequences_per_step;
  const scenario ts = step_scenario(policy, r, per_update);
  const run tr(a, ts);
  out.policy_time = estimate_time(tr);
  const auto n = static_cast<double>(steps);
  const double fwd = n * forward_seconds(out.policy_time);
  double train = n * in_seconds(out.policy_time.step), passes = r.ref ? 1 : 0;
  if (r.c.algo != rl_algorithm::dpo && r.p->old_logprobs) passes += 1;
  if (value) {
    scenario cs = ts;
    cs.loss_tokens.reset();
    const time_estimate ct = estimate_time(run(value, cs));
    train += n * in_seconds(ct.step);
    passes += 1 + (r.reward ? 1 : 0);  // values, rewards
  }
  out.training_time = seconds(train);
  out.scoring_time = seconds(passes * fwd);
  out.rollout_time = seconds(r.c.algo == rl_algorithm::dpo ? 0.0 : rollout_seconds(out, a, policy, r));
  out.transfer_time = seconds(transfer_seconds(out, actor, r));
  out.step = seconds(in_seconds(out.rollout_time) + in_seconds(out.scoring_time) + train + in_seconds(out.transfer_time));
  const double tokens = static_cast<double>(seqs) * static_cast<double>(r.P_mean + r.C_mean);
  out.tokens_per_second_per_gpu = tokens / in_seconds(out.step) / out.gpus;
}

}  // namespace detail::rl

inline rl_estimate estimate_rl(const architecture& model, const scenario& policy, const rl_config& cfg) {
  using namespace detail::rl;
  const resolved r = resolve(cfg, policy.gpu);
  check(policy, r);
  const run caps(model, actor_scenario(policy, r, r.P, r.C));  // the run's rules (layout, lengths) first
  rl_estimate out;
  // TRL: the generation batch is per_device_train_batch_size x steps_per_generation x processes,
  // G completions of each prompt (grpo_trainer.py _generate_and_score_completions).
  // DPO: two sequences (chosen, rejected) per pair.
  const std::int64_t per_prompt = cfg.algo == rl_algorithm::dpo ? 2 : r.G;
  const std::int64_t prompts = cfg.prompts_per_step.value_or(r.p->prompts_per_step);
  out.sequences_per_step = prompts > 0 ? prompts * per_prompt : caps.settings().global_batch();
  const std::int64_t steps = optimizer_steps(out, r);
  const std::int64_t per_update = (out.sequences_per_step + steps - 1) / steps;
  const int dp = std::max(1, caps.settings().dp());
  const run actor = sizes_by_real_tokens(r) ? run(model, memory_scenario(caps.settings(), r, (per_update + dp - 1) / dp)) : caps;
  const scenario& s = actor.settings();
  out.algo = cfg.algo;
  out.fw = cfg.fw;
  out.placement = r.place;
  out.rollout = r.eng;
  out.rollout_fraction = r.eng == engine::hf ? 0.0 : r.fraction;
  out.reference = r.ref;
  out.critic = r.critic;
  out.reward_model = r.reward;
  out.generations = r.G;
  out.prompt_len = r.P;
  out.completion_len = r.C;
  out.mean_completion_len = r.C_mean;
  out.mean_prompt_len = r.P_mean;
  // Separate placement: rollout_gpus of their own, as many as train when unset.
  out.rollout_gpus = r.place != rollout_placement::separate ? 0 : r.c.rollout_gpus > 0 ? r.c.rollout_gpus : s.num_gpus;
  out.gpus = s.num_gpus + out.rollout_gpus;
  out.policy = estimate_memory(actor);
  out.policy_settings = s;
  // PPO's value model (the critic), built once for its memory and its time.
  const auto value = r.critic ? std::make_shared<const architecture>(value_model(model)) : nullptr;
  estimate_phases(out, model, actor, r, value);
  estimate_step_time(out, model, actor, r, value, steps, per_update);
  // Separate placement: the engines' GPUs must hold the weights and at least one whole sequence.
  out.rollout_fits = out.rollout_gpus == 0 || std::isfinite(in_seconds(out.rollout_time));
  out.fits = out.fits && out.rollout_fits;
  return out;
}

}  // namespace gpuplan
