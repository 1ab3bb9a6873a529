// memory.hpp — the memory model: every byte on every GPU for training and serving.
// Derivations, sources and assumptions of every term: docs/memory-model.md.
// estimate_memory is allocation-free (a loop over pipeline stages in doubles).
// The phases live in detail/memory_*.hpp: states, activations, transients,
// phases, allocator (training); serving; the per-block activation terms in
// detail/memory_terms.hpp; every fixed number in detail/memory_constants.hpp.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "gpuplan/detail/memory_allocator.hpp"
#include "gpuplan/detail/memory_phases.hpp"
#include "gpuplan/detail/memory_serving.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/run.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/units.hpp"
#include "gpuplan/warnings.hpp"

namespace gpuplan {

// Per-GPU memory. Three peaks:
//   peak_allocated — live tensors (torch.cuda.max_memory_allocated)
//   peak_reserved  — the caching allocator's pool (torch.cuda.max_memory_reserved)
//   device         — what nvidia-smi shows: reserved + CUDA context + library workspaces
//                    + memory outside PyTorch's allocator (paged optimizer state)
// `fits` compares device with the GPU's usable capacity.
// The component fields describe the moment of the peak (the phase that sets
// peak_allocated) except `optimizer`, which also includes paged state that lives
// outside the allocator. Under ZeRO >= 1 the fp32 master copy is partitioned
// together with the optimizer state and reported in `optimizer` (DeepSpeed's
// accounting: K = 12 bytes/param of "optimizer states"); master_weights is then 0.
struct memory_breakdown {
  Bytes weights = bytes(0);         // (quantized) base and trainable weights in compute dtype
  Bytes master_weights = bytes(0);  // fp32 master copy (mixed precision)
  Bytes gradients = bytes(0);
  Bytes optimizer = bytes(0);       // optimizer state
  Bytes activations = bytes(0);     // saved for backward at the peak
  Bytes transient = bytes(0);       // largest working set alive at the peak
  Bytes overhead = bytes(0);        // CUDA context, cuBLAS/NCCL workspaces
  Bytes peak_allocated = bytes(0);
  Bytes peak_reserved = bytes(0);
  Bytes device = bytes(0);
  Bytes capacity = bytes(0);
  Bytes headroom = bytes(0);        // capacity - device (negative when it does not fit)
  bool fits = false;
  Bytes host = bytes(0);            // host (CPU) RAM for offloaded state, per node
  int stage = 0;                    // pipeline stage these figures describe
  // Serving only: KV cache and how many sequences of prompt_len+gen_len fit.
  Bytes kv_cache = bytes(0);
  std::int64_t max_concurrent_sequences = 0;
  // Paged engines (vLLM, SGLang, TGI): the pool's bytes the requested batch takes. The pool
  // itself is sized to the engine's budget, full by design (plan/margin.hpp elastic_pool).
  Bytes kv_needed = bytes(0);
  warning_set warnings = 0;
  // Which phase of the step sets peak_allocated.
  enum class phase : std::uint8_t { forward_loss, loss_backward, backward_start, backward_end, optimizer_step, inference };
  phase peak_phase = phase::forward_loss;
  // Training: the live bytes at each moment of the step, indexed by phase (forward_loss ..
  // optimizer_step; peak_allocated is their maximum). Serving: zeros.
  std::array<Bytes, 5> allocated_by_phase{};
  // Optimizer state in CUDA managed memory (bitsandbytes paged optimizers: cudaMallocManaged),
  // included in `optimizer` and, as far as it stays resident, in `device`. The driver
  // evicts it to host memory under pressure, so it never makes a run not fit: `fits`
  // compares device without it, and the part that does not fit is in `host`.
  Bytes paged = bytes(0);
};

// One breakdown per pipeline stage (size pp); estimate_memory reports the most loaded.
inline std::vector<memory_breakdown> estimate_memory_stages(const run& r);
inline memory_breakdown estimate_memory(const run& r);
// Convenience: validate (config_error on a broken rule), then estimate.
inline memory_breakdown estimate_memory(const architecture& model, const scenario& s) { return estimate_memory(run(model, s)); }
inline std::vector<memory_breakdown> estimate_memory_stages(const architecture& model, const scenario& s) {
  return estimate_memory_stages(run(model, s));
}

// Activations one transformer block saves for backward (no checkpointing), per
// GPU, for one micro-batch of micro_batch x seq_len (tp/sp/cp applied).
// For encoder-decoder models this is an encoder block. Exposed so the formula can
// be compared with what PyTorch autograd saves (tests/python/test_torch_ground_truth.py).
inline Bytes activation_bytes_per_layer(const run& r);

// KV cache per token of one sequence, per GPU: 2 (K and V) x layers x kv heads x
// head_dim x kv_cache_dtype bytes, kv heads split by tp (never below one head).
inline Bytes kv_cache_bytes_per_token(const run& r);

// Optimizer state bytes per trainable parameter (element-wise optimizers; for
// Adafactor the factored state divided by the parameter count of a full fine-tune).
inline double optimizer_bytes_per_parameter(const run& r);

inline Bytes activation_bytes_per_layer(const architecture& m, const scenario& s) { return activation_bytes_per_layer(run(m, s)); }
inline Bytes kv_cache_bytes_per_token(const architecture& m, const scenario& s) { return kv_cache_bytes_per_token(run(m, s)); }
inline double optimizer_bytes_per_parameter(const architecture& m, const scenario& s) { return optimizer_bytes_per_parameter(run(m, s)); }

namespace detail::mem {

// step_phase and memory_breakdown::phase name the same moments in the same order.
static_assert(static_cast<int>(step_phase::forward_loss) == static_cast<int>(memory_breakdown::phase::forward_loss));
static_assert(static_cast<int>(step_phase::loss_backward) == static_cast<int>(memory_breakdown::phase::loss_backward));
static_assert(static_cast<int>(step_phase::backward_start) == static_cast<int>(memory_breakdown::phase::backward_start));
static_assert(static_cast<int>(step_phase::backward_end) == static_cast<int>(memory_breakdown::phase::backward_end));
static_assert(static_cast<int>(step_phase::optimizer_step) == static_cast<int>(memory_breakdown::phase::optimizer_step));

// The training memory model of one pipeline stage, as five phases:
//   1 resident_states    weights, master, gradients, optimizer state (ZeRO, paging, offload)
//   2 stage_activations  saved activations (checkpointing, in-flight micro-batches, offload)
//   3 step_transients    loss, ZeRO gathers / buckets, backward of one block, optimizer temporaries
//   4 peak_over_phases   live bytes at five moments of the step; the peak is their maximum
//   5 allocator_and_context  reserved and device peaks
inline memory_breakdown train_stage(const architecture& a, const scenario& r, const facts& f, int stage,
                                    const memory_params& mp) {
  const stage_params sp = params_of_stage(a, f, r, stage);
  const stage_trainables t = trainables_of_stage(a, r, f, sp);
  const model_states states = resident_states(a, r, f, sp, t);
  const activation_plan acts = stage_activations(a, r, f, sp, stage);
  const transients trans = step_transients(a, r, f, sp, t);
  std::array<phase_terms, kStepPhases> phases = step_phases(states, acts, trans, gradients_by_phase(r, f, t, states));
  for (phase_terms& ph : phases) scale(ph, mp);
  const step_peak peak = peak_over_phases(phases);
  const device_peaks dev = allocator_and_context(peak.terms.total(), states.paged, r.num_gpus, mp, in_bytes(r.gpu.usable_memory));
  memory_breakdown m;
  m.peak_phase = static_cast<memory_breakdown::phase>(peak.phase);
  for (int i = 0; i < kStepPhases; ++i) m.allocated_by_phase[static_cast<std::size_t>(i)] = bytes(phases[static_cast<std::size_t>(i)].total());
  m.weights = bytes(peak.terms.weights);
  m.master_weights = bytes(peak.terms.master);
  m.gradients = bytes(peak.terms.grads);
  m.optimizer = bytes(peak.terms.optimizer + states.paged);
  m.activations = bytes(peak.terms.acts);
  m.transient = bytes(peak.terms.transient);
  m.peak_allocated = bytes(dev.allocated);
  m.peak_reserved = bytes(dev.reserved);
  m.overhead = bytes(dev.overhead);
  m.device = bytes(dev.device);
  m.host = bytes(states.host + acts.host);
  m.paged = bytes(states.paged);
  m.stage = stage;
  return m;
}

// The serving memory model of one pipeline stage: weights, KV cache of `batch`
// sequences of prompt + gen tokens, the prefill working set of the whole batch,
// then the allocator and context (phase 5 above).
inline memory_breakdown infer_stage(const architecture& a, const scenario& r, const facts& f, int stage, double per_token,
                                    const memory_params& mp) {
  const stage_params sp = params_of_stage(a, f, r, stage);
  const engine_profile& e = profile_of(r.inference.eng);
  if (e.paged_pool) {
    // vLLM / SGLang / TGI: the budget holds weights, the profiled step and the pool (engine.hpp).
    const kv_pool p = kv_pool_of(a, r, f, sp, per_token);
    memory_breakdown m;
    m.peak_phase = memory_breakdown::phase::inference;
    m.weights = bytes(p.weights);
    m.kv_cache = bytes(p.bytes);
    m.transient = bytes(p.activations);
    m.overhead = bytes(p.non_torch + p.cuda_graphs);
    m.peak_allocated = bytes(p.weights + p.bytes + p.activations);
    m.peak_reserved = m.peak_allocated;
    m.device = bytes(p.weights + p.bytes + p.activations + p.non_torch + p.cuda_graphs);
    const std::int64_t need = pool_tokens_per_request(r, p.block_tokens);
    m.max_concurrent_sequences = p.tokens / need;
    if (p.tokens > 0)
      m.kv_needed = bytes(static_cast<double>(r.inference.batch) * static_cast<double>(need) * p.bytes / static_cast<double>(p.tokens));
    m.stage = stage;
    return m;
  }
  if (e.gguf_weights) {
    // llama.cpp: GGUF weights and KV of the -ngl layers, the KV of every slot's context, one compute buffer.
    const double share = gpu_layer_share(a, r);
    const double W = serving_weights(a, r, f, sp) * share;
    const kv_cache kv = kv_cache_of_stage(a, r, sp, per_token * share);
    const double compute = llama_cpp_compute_buffer(a, f);
    memory_breakdown m;
    m.peak_phase = memory_breakdown::phase::inference;
    m.weights = bytes(W);
    m.kv_cache = bytes(kv.total);
    m.transient = bytes(compute);
    m.overhead = bytes(e.non_torch_bytes);
    m.peak_allocated = bytes(W + kv.total + compute);
    m.peak_reserved = m.peak_allocated;
    m.device = bytes(W + kv.total + compute + e.non_torch_bytes);
    const double free = in_bytes(r.gpu.usable_memory) - (W + compute + e.non_torch_bytes);
    m.max_concurrent_sequences = kv.per_sequence > 0 && free > 0 ? static_cast<std::int64_t>(std::floor(free / kv.per_sequence)) : 0;
    m.stage = stage;
    return m;
  }
  const double W = serving_weights(a, r, f, sp);
  const kv_cache kv = kv_cache_of_stage(a, r, sp, per_token);
  const double prefill = prefill_working_set(a, r, f, sp);
  const device_peaks dev = allocator_and_context(W + kv.total + prefill, 0.0, r.num_gpus, mp, in_bytes(r.gpu.usable_memory));
  memory_breakdown m;
  m.peak_phase = memory_breakdown::phase::inference;
  m.weights = bytes(W);
  m.kv_cache = bytes(kv.total);
  m.transient = bytes(prefill);
  m.peak_allocated = bytes(dev.allocated);
  m.peak_reserved = bytes(dev.reserved);
  m.overhead = bytes(dev.overhead);
  m.device = bytes(dev.device);
  // The sequences that fit beside one sequence's prefill: the same answer whatever batch was typed.
  scenario one = r;
  one.inference.batch = 1;
  m.max_concurrent_sequences = concurrent_sequences(r, dev, W, prefill_working_set(a, one, f, sp), kv.per_sequence);
  m.stage = stage;
  return m;
}

// Capacity, headroom, the verdict and the warnings of one stage.
inline void verdict(memory_breakdown& m, const scenario& r) {
  m.capacity = r.gpu.usable_memory;
  // Paged state resident only in what the rest leaves free; the remainder lives on the host.
  const double cap = in_bytes(m.capacity), paged = in_bytes(m.paged);
  const double required = in_bytes(m.device) - paged;
  const double resident = std::clamp(cap - required, 0.0, paged);
  m.device = bytes(required + resident);
  m.host = m.host + bytes(paged - resident);
  m.headroom = m.capacity - m.device;
  m.fits = required <= cap;
  // A paged engine starts only when its pool holds one whole request (vLLM: "max seq len ... is
  // larger than the maximum number of tokens that can be stored in KV cache").
  if (r.work == workload::infer && profile_of(r.inference.eng).paged_pool && m.max_concurrent_sequences < 1) m.fits = false;
  if (in_bytes(m.host) > in_bytes(r.cluster.host_memory_per_node)) m.warnings |= warn_host_memory;
  // FlashAttention-2 and SDPA's flash kernel need compute capability 8.0 or newer (Dao-AILab/flash-attention README).
  if (r.attn == attention::flash && r.gpu.cc_major > 0 && r.gpu.sm() < 80) m.warnings |= warn_flash_unsupported;
  m.warnings |= framework_layout_warnings(r);
}

inline memory_breakdown stage_estimate(const architecture& a, const scenario& r, const facts& f, int stage,
                                       const memory_params& mp) {
  memory_breakdown m = r.work == workload::infer ? infer_stage(a, r, f, stage, kv_per_token(a, r), mp)
                                                 : train_stage(a, r, f, stage, mp);
  verdict(m, r);
  return m;
}

// The middle pipeline stages (neither first nor last) of a training run already
// estimated, by their blocks and micro-batches in flight. Such stages differ only in
// those: their parameters, trainables and transients follow from the block counts (the
// block positions matter to method freeze alone), and in_flight_micro_batches is their
// only other use of the stage index. Device memory never decreases with the micro-batches
// in flight (stored activations scale with them; phases add, the peak takes the largest,
// the allocator is monotone: property P7, docs/planner.md), so a middle stage holding the
// same blocks as one already estimated, with no more micro-batches in flight, is no larger.
class middle_stages {
 public:
  middle_stages(const architecture& a, const scenario& s, const facts& f)
      : a_(a), s_(s), f_(f), on_(s.work == workload::train && s.meth != method::freeze) {}
  // Is stage `st` no larger than a middle stage already estimated? If not, it is recorded.
  bool dominated(int st) {
    if (!on_) return false;
    std::int64_t begin = 0, enc = 0, dec = 0;
    blocks_of_stage(a_, s_.parallel, st, begin, enc, dec);
    const double in_flight = in_flight_micro_batches(s_, f_, st);
    for (int i = 0; i < n_; ++i)
      if (seen_[i].enc == enc && seen_[i].dec == dec && seen_[i].in_flight >= in_flight) return true;
    if (n_ < kKept) seen_[n_++] = {enc, dec, in_flight};
    return false;
  }

 private:
  static constexpr int kKept = 4;  // the even split gives middle stages at most two block counts
  struct seen { std::int64_t enc = 0, dec = 0; double in_flight = 0; };
  const architecture& a_;
  const scenario& s_;
  const facts& f_;
  const bool on_;
  std::array<seen, kKept> seen_{};
  int n_ = 0;
};

// Whether `ok` holds for the estimate of every pipeline stage, stopping at the first
// stage where it does not: stage 0 (the embedding and the most micro-batches in flight)
// first, then the last (the head), then the middle ones a larger one does not cover
// (middle_stages). The planner's fit test: for an `ok` that is monotone in device memory
// and a run without paged state, it equals `ok` of estimate_memory (the stage of the
// largest device figure) at a fraction of the stages.
template <class Pred>
bool every_stage(const run& r, Pred&& ok) {
  require_valid(r);
  const architecture& model = r.model();
  const scenario& s = r.settings();
  const facts f = facts_with_acts(model, s, r.parameters());
  const memory_params& mp = r.memory_constants();
  auto holds = [&](int st) { return ok(stage_estimate(model, s, f, st, mp)); };
  if (!holds(0) || (f.pp > 1 && !holds(f.pp - 1))) return false;
  middle_stages middle(model, s, f);
  for (int st = 1; st < f.pp - 1; ++st)
    if (!middle.dominated(st) && !holds(st)) return false;
  return true;
}

}  // namespace detail::mem

inline memory_breakdown estimate_memory(const run& r) {
  detail::require_valid(r);
  const architecture& model = r.model();
  const scenario& s = r.settings();
  const detail::mem::facts f = detail::mem::facts_with_acts(model, s, r.parameters());
  const memory_params& mp = r.memory_constants();
  memory_breakdown worst = detail::mem::stage_estimate(model, s, f, 0, mp);
  for (int st = 1; st < f.pp; ++st) {
    const memory_breakdown m = detail::mem::stage_estimate(model, s, f, st, mp);
    if (in_bytes(m.device) > in_bytes(worst.device)) worst = m;
  }
  return worst;
}

inline std::vector<memory_breakdown> estimate_memory_stages(const run& r) {
  detail::require_valid(r);
  const detail::mem::facts f = detail::mem::facts_with_acts(r.model(), r.settings(), r.parameters());
  std::vector<memory_breakdown> out;
  out.reserve(static_cast<std::size_t>(f.pp));
  for (int st = 0; st < f.pp; ++st) out.push_back(detail::mem::stage_estimate(r.model(), r.settings(), f, st, r.memory_constants()));
  return out;
}

inline Bytes activation_bytes_per_layer(const run& r) {
  const detail::mem::facts f = detail::mem::facts_of(r.model(), r.settings(), r.parameters());
  return bytes(detail::mem::block_bytes(f, detail::mem::acts_for(r.model(), f, false, false)));
}

inline Bytes kv_cache_bytes_per_token(const run& r) { return bytes(detail::mem::kv_per_token(r.model(), r.settings())); }

inline double optimizer_bytes_per_parameter(const run& r) {
  const scenario& s = r.settings();
  const auto pb = detail::mem::bytes_of(precision_of(s));
  if (s.opt == optimizer::adafactor)
    return detail::mem::adafactor_state_elements(r.model()) * pb.state /
           std::max(1.0, static_cast<double>(r.parameters().total));
  return detail::mem::optimizer_bytes_per_param(s.opt, pb.state);
}

}  // namespace gpuplan
