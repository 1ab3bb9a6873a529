// memory.hpp — the memory model: every byte on every GPU for training and serving.
// Derivations, sources and assumptions of every term: docs/memory-model.md.
// estimate_memory is allocation-free (a loop over pipeline stages in doubles).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "gpuplan/detail/memory_terms.hpp"
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
  warning_set warnings = 0;
  // Added by the memory model: which phase of the step sets peak_allocated.
  enum class phase : std::uint8_t { forward_loss, loss_backward, backward_start, backward_end, optimizer_step, inference };
  phase peak_phase = phase::forward_loss;
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

// ---------------------------------------------------------------------------
// Documented defaults (docs/memory-model.md § Overheads).
namespace memory_defaults {
// CUDA context + PyTorch's kernels resident on the GPU before the first tensor:
// 1343 MiB measured by the Hugging Face model-memory-anatomy guide (V100, eager
// module loading). Lazy loading (CUDA >= 11.7) lowers it; we keep the measured
// figure as the conservative default.
inline constexpr double cuda_context = 1343.0 * kMiB;
// cuBLAS workspace(s), allocated through PyTorch's caching allocator:
// CUBLAS_WORKSPACE_CONFIG default ":4096:8" (8 x 4 MiB), Hopper 32 MiB x ... ;
// we take 32 MiB everywhere.
inline constexpr double cublas_workspace = 32.0 * kMiB;
// NCCL communicator buffers per process when any collective runs
// (NCCL_BUFFSIZE 4 MiB x channels x peers; ~0.5 GiB measured on 8-GPU nodes).
inline constexpr double nccl_buffers = 512.0 * kMiB;
// Caching-allocator pool over live tensors: block rounding (2 MiB for tensors
// > 1 MiB) and fragmentation of split segments. 10% is the middle of the
// 5–15% reserved/allocated gap PyTorch users report for transformer training.
inline constexpr double reserved_factor = 1.10;
// DeepSpeed ZeRO-1/2 reduce bucket (reduce_bucket_size default 5e8 elements).
inline constexpr double zero_reduce_bucket_elems = 5e8;
// torchtune CEWithChunkedOutputLoss num_output_chunks.
inline constexpr double loss_chunks = 8;
}  // namespace memory_defaults

namespace detail::mem {

inline double d(std::int64_t v) { return static_cast<double>(v); }

constexpr bool targeted(const scenario& r, linear_id id) {
  return (r.lora.targets & (1u << static_cast<unsigned>(id))) != 0;
}
constexpr bool is_lora(const scenario& r) { return r.meth == method::lora || r.meth == method::qlora; }

// LoRA per block: parameters r*(in+out), saved r-wide outputs, dropout copies.
struct lora_block { double params = 0, rank_elems = 0, drop_elems = 0, adafactor = 0, largest = 0; };
inline lora_block lora_of_block(const architecture& a, const scenario& r, bool dec) {
  lora_block b;
  if (!is_lora(r)) return b;
  const double rank = d(r.lora.rank);
  for (int i = 0; i < kLinearKinds; ++i) {
    const auto id = static_cast<linear_id>(i);
    const linear_shape s = linear_of(a, id, dec);
    if (s.count <= 0 || !targeted(r, id)) continue;
    const double n = d(s.count);
    b.params += n * rank * d(s.in + s.out);  // PEFT LoraLayer: A (r x in) + B (out x r)
    b.rank_elems += n * rank;
    if (r.lora.dropout > 0) b.drop_elems += n * d(s.in);
    b.adafactor += n * (rank + d(s.in) + d(s.out) + rank);
    b.largest = std::max(b.largest, rank * d(std::max(s.in, s.out)));
  }
  return b;
}

// Everything about the run that does not depend on the stage.
struct facts {
  parameter_breakdown p;
  precision_bytes pb;
  act_context ctx;
  int tp = 1, pp = 1, cp = 1;
  double shard = 1;      // ZeRO / FSDP sharding degree (data-parallel ranks)
  double T = 0;          // tokens per micro-batch per GPU (after cp)
  double s = 0;          // sequence length (keys per query) for eager scores
  double seq_div = 1;    // division of non-tp activation terms (sp)
  bool quantized = false;
  quantization q;
  lora_block lora_enc, lora_dec;
  block_linears lin_enc, lin_dec;
  layer_act full_enc, full_dec, sel_enc, sel_dec;  // per-block activations (filled by facts_of)
};

inline facts facts_of(const architecture& a, const scenario& r) {
  facts f;
  f.p = count_parameters(a);
  f.pb = bytes_of(r.prec);
  f.tp = std::max(1, r.parallel.tp);
  f.pp = std::max(1, r.parallel.pp);
  f.cp = std::max(1, r.parallel.cp);
  f.shard = r.parallel.zero > 0 ? std::max(1.0, static_cast<double>(r.num_gpus) / (f.tp * f.pp)) : 1.0;
  f.s = d(a.is_vit() ? a.vit_tokens() : r.seq_len);
  f.T = d(r.micro_batch) * f.s / f.cp;
  f.seq_div = r.parallel.sp ? f.tp : 1;
  f.q = base_quantization(r);
  f.quantized = is_quantized(f.q.weights);
  f.lora_enc = lora_of_block(a, r, false);
  f.lora_dec = lora_of_block(a, r, true);
  f.ctx.e = f.pb.act;
  f.ctx.mixed = f.pb.mixed;
  f.ctx.compiled = r.compile;
  f.ctx.drop = a.dropout > 0;
  f.ctx.flash = r.attn == attention::flash;
  f.lin_enc = linears_of_block(a, false);
  f.lin_dec = a.kind == model_kind::encoder_decoder ? linears_of_block(a, true) : f.lin_enc;
  return f;
}

inline stage_params params_of_stage(const architecture& a, const facts& f, const scenario& r, int stage) {
  return params_of_stage(a, f.p, f.lin_enc, f.lin_dec, r, stage);
}

// Bytes for one block's saved activations, one micro-batch, per GPU.
inline double block_bytes(const facts& f, const layer_act& l) {
  return f.T * (l.tp / f.tp + l.seq / f.seq_div + l.lse / f.tp) + f.T * f.s / f.cp * l.s2 / f.tp;
}

inline layer_act acts_for(const architecture& a, const facts& f, bool dec, bool selective) {
  act_context c = f.ctx;
  const lora_block& lb = dec ? f.lora_dec : f.lora_enc;
  c.lora_rank_elems = lb.rank_elems;
  c.lora_drop_elems = lb.drop_elems;
  return selective ? block_activations_selective(a, c, dec) : block_activations(a, c, dec);
}

// facts plus the per-block activation figures (computed once per estimate).
inline facts facts_with_acts(const architecture& a, const scenario& r) {
  facts f = facts_of(a, r);
  f.full_enc = acts_for(a, f, false, false);
  f.sel_enc = acts_for(a, f, false, true);
  if (a.kind == model_kind::encoder_decoder) {
    f.full_dec = acts_for(a, f, true, false);
    f.sel_dec = acts_for(a, f, true, true);
  } else {
    f.full_dec = f.full_enc;
    f.sel_dec = f.sel_enc;
  }
  return f;
}

// Trainable parameters on one stage, per GPU (after tp).
inline double trainable_on_stage(const architecture& a, const scenario& r, const facts& f, const stage_params& sp) {
  switch (r.meth) {
    case method::full: return sp.linear + sp.other;
    case method::lora:
    case method::qlora:
      return (d(sp.enc_blocks) * f.lora_enc.params + d(sp.dec_blocks) * f.lora_dec.params) / f.tp;
    case method::freeze: {
      // The top N blocks of the execution order, plus head and final norm(s) (and a
      // tied LM head's embedding matrix, which is the head's weight).
      const std::int64_t total = a.total_layers();
      const std::int64_t first_trainable = std::max<std::int64_t>(0, total - r.freeze.trainable_layers);
      double t = 0;
      const std::int64_t stage_begin = sp.begin_block;
      for (std::int64_t i = 0; i < sp.enc_blocks + sp.dec_blocks; ++i) {
        const std::int64_t idx = stage_begin + i;
        if (idx < first_trainable) continue;
        t += d(idx < a.layers ? f.p.per_layer : f.p.per_decoder_layer) / f.tp;
      }
      if (sp.last) {
        double fin = a.final_norm ? d(detail::norm_params(a)) : 0;
        if (a.kind == model_kind::encoder_decoder) fin *= 2;
        t += fin + d(f.p.head) / f.tp;
        if (a.head == head_kind::lm && a.tied_embeddings) t += d(a.vocab * a.hidden) / f.tp;
      }
      return t;
    }
  }
  return 0;
}

// Largest single trainable module on the stage, per GPU: the ZeRO-3 gather unit
// whose gradient exists unsharded before reduce-scatter, the optimizer-in-backward
// gradient, the per-tensor optimizer temporaries. Full: the stage's largest module;
// LoRA: the largest adapter matrix; freeze: the head or a trainable block's largest
// linear (the frozen embedding never has a gradient).
inline double largest_trainable(const architecture& a, const scenario& r, const facts& f, const stage_params& sp) {
  switch (r.meth) {
    case method::full: return sp.largest;
    case method::lora:
    case method::qlora:
      return std::max(sp.enc_blocks > 0 ? f.lora_enc.largest : 0.0, sp.dec_blocks > 0 ? f.lora_dec.largest : 0.0) / f.tp;
    case method::freeze: {
      const std::int64_t first_trainable = std::max<std::int64_t>(0, a.total_layers() - r.freeze.trainable_layers);
      const bool blocks = sp.begin_block + sp.enc_blocks + sp.dec_blocks > first_trainable;
      return std::max(blocks ? sp.largest_block_matrix : 0.0, sp.head_module);
    }
  }
  return 0;
}

struct phase_terms {
  double weights = 0, master = 0, grads = 0, optimizer = 0, acts = 0, transient = 0;
  [[nodiscard]] double total() const { return weights + master + grads + optimizer + acts + transient; }
};

// Loss working set (last stage, LM head), bytes for forward and backward.
inline void loss_bytes(const architecture& a, const scenario& r, const facts& f, double& fwd, double& bwd) {
  fwd = bwd = 0;
  if (a.head != head_kind::lm || a.vocab <= 0) {
    // Classifier / pooler: logits of num_labels per sequence — negligible.
    fwd = bwd = d(r.micro_batch) * d(std::max<std::int64_t>(a.num_labels, 2)) * 4;
    return;
  }
  const double e = f.pb.act;
  // Vocab-parallel cross-entropy splits the vocabulary over tp (Megatron-LM).
  const double VT = d(a.vocab) / f.tp * f.T;
  // Eager cross-entropy (F.cross_entropy on logits.float()): forward holds the
  // e-logits, their fp32 copy and log_softmax's fp32 output; backward holds the
  // saved log-probs, nll_loss's dense fp32 grad and log_softmax's fp32 grad.
  const double eager_fwd = (e < 4 ? e + 8 : 8), eager_bwd = 12;
  // Compiled (Inductor-fused) cross-entropy saves the e-logits and writes the
  // e-gradient into that saved buffer (AOTAutograd donated buffers, PyTorch >= 2.5).
  const double comp_fwd = e, comp_bwd = e;
  if (r.chunked_loss) {
    // torchtune CEWithChunkedOutputLoss: all e-logit chunks exist, each chunk is
    // upcast and reduced on its own; all chunk gradients exist before lm_head backward.
    const double k = memory_defaults::loss_chunks;
    fwd = e * VT + (r.compile ? 0 : eager_fwd - e) * VT / k;
    bwd = e * VT + (r.compile ? 0 : eager_bwd) * VT / k;
  } else if (r.compile) {
    fwd = comp_fwd * VT;
    bwd = comp_bwd * VT;
  } else {
    fwd = eager_fwd * VT;
    bwd = eager_bwd * VT;
  }
}

// One pipeline stage of a training step.
inline memory_breakdown train_stage(const architecture& a, const scenario& r, const facts& f, int stage) {
  using namespace gpuplan::memory_defaults;
  const stage_params sp = params_of_stage(a, f, r, stage);
  const precision_bytes& pb = f.pb;
  const bool lora = is_lora(r);
  const double N = f.shard;
  const int zero = r.parallel.zero;
  const bool off_opt = r.parallel.offload_optimizer != offload::none;
  const bool off_par = r.parallel.offload_params != offload::none;
  const double tr = trainable_on_stage(a, r, f, sp);
  const double big = largest_trainable(a, r, f, sp);
  const double n_gpus_node = std::max(1, std::min(r.num_gpus, r.cluster.gpus_per_node));
  double host = 0;

  // ---- weights: base linears (quantized or not), the rest, adapters, fp8 copies.
  const double row = d(a.hidden);
  const double lin_b = f.quantized ? bits_per_element(f.q, row) / 8.0 : pb.weight;
  double W = sp.linear * lin_b + sp.other * pb.weight + sp.linear * pb.fp8_copy;
  if (lora) W += tr * pb.weight;
  // ZeRO-3 / FSDP full shard: each rank keeps 1/N. A gathered module is a transient
  // (freed after use), but DeepSpeed's estimator for its mixed-precision engine
  // (estimate_zero3_model_states_mem_needs: 4·largest_layer = fp16 params + fp16 grads
  // of the largest layer) counts the largest *trainable* module's gathered params and
  // unsharded gradient as model states; with a master copy (DeepSpeed's setting) we
  // follow it (E1a/E1b). Otherwise (fp32, bf16-pure: FSDP-style) and for a frozen
  // largest module (LoRA/QLoRA base, a frozen embedding: no gradient) the gathered
  // module is counted as the transient it is, below. So persistent model states never
  // grow from ZeRO-2 to ZeRO-3 except by DeepSpeed's 4·largest_layer term.
  const bool ds_gathered = zero >= 3 && pb.master > 0;
  if (zero >= 3) {
    W /= N;
    if (off_par) { host += W * n_gpus_node; W = 0; }
    if (ds_gathered) W += big * pb.weight;
  }

  // ---- master weights (fp32 copy of the trainable parameters).
  double M = tr * pb.master;
  // ---- gradients.
  double G = tr * pb.grad;  // compute-dtype gradients of every trainable parameter
  double G_fp32_part = 0;
  if (zero >= 1) {
    // DeepSpeed ZeRO-1/2 (estimate_zero2: 4Ψ + 16Ψ/N): full compute-dtype params
    // and gradients, plus fp32 gradient partition, master partition, moments over N.
    // ZeRO-3 (estimate_zero3: 4·largest_layer + 18Ψ/N): params shard + the largest
    // trainable gathered module, its unsharded gradient before reduce-scatter, and
    // the fp32 gradient shard (with a master copy) or the compute-dtype gradient shard
    // (fp32 / bf16-pure: the reduce-scattered partition the optimizer steps on).
    if (pb.master > 0) G_fp32_part = tr * 4 / N;
    if (zero >= 3) G = ds_gathered ? big * pb.grad : tr * pb.grad / N;
  }
  if (r.optimizer_in_backward) G = big * pb.grad;  // step per tensor in the hook
  // ---- optimizer state.
  double O = 0;
  if (r.opt == optimizer::adafactor) {
    const double elems = lora ? (d(sp.enc_blocks) * f.lora_enc.adafactor + d(sp.dec_blocks) * f.lora_dec.adafactor) / f.tp
                              : adafactor_state_elements(a) * (tr / std::max(1.0, d(f.p.total)));
    O = elems * pb.state;
  } else {
    O = tr * optimizer_bytes_per_param(r.opt, pb.state);
  }
  if (zero >= 1) { O /= N; M /= N; O += M; M = 0; }  // master partition belongs to the ZeRO optimizer
  double paged = 0;
  if (optimizer_is_paged(r.opt)) { paged = O; }
  if (off_opt) {
    // ZeRO-Offload (Ren et al. 2021): fp32 master, moments and fp32 gradients on the host.
    host += (O + G_fp32_part) * n_gpus_node;
    O = 0; paged = 0; G_fp32_part = 0;
  }
  G += G_fp32_part;
  const double O_alloc = O - paged;

  // ---- activations of this stage.
  const bool sel = r.ckpt == checkpointing::selective;
  const double blk_enc = block_bytes(f, f.full_enc), blk_dec = block_bytes(f, f.full_dec);
  double stored_enc = blk_enc, stored_dec = blk_dec;
  if (sel) {
    stored_enc = block_bytes(f, f.sel_enc);
    stored_dec = block_bytes(f, f.sel_dec);
  } else if (r.ckpt == checkpointing::full) {
    // Checkpoint boundary: the block input (fp32 residual stream under autocast LayerNorm),
    // the same bytes selective checkpointing keeps as its block input.
    stored_enc = stored_dec = f.T * checkpoint_boundary_bytes(a, f.ctx) / f.seq_div;
  }
  const double blk_max = std::max(sp.enc_blocks > 0 ? blk_enc : 0.0, sp.dec_blocks > 0 ? blk_dec : 0.0);
  // What one checkpointed block keeps between forward and its backward.
  const double kept_max = std::max(sp.enc_blocks > 0 ? stored_enc : 0.0, sp.dec_blocks > 0 ? stored_dec : 0.0);
  double stored = d(sp.enc_blocks) * stored_enc + d(sp.dec_blocks) * stored_dec;
  const double h = d(a.hidden);
  if (sp.first) stored += f.T * (8 + (f.ctx.drop ? h : 0) + (a.embedding_norm ? (pb.mixed ? 4 : pb.act) * h : 0));
  if (sp.last && a.final_norm) stored += f.T * norm_bytes(a, f.ctx) / f.seq_div;
  // Working set of the block being back-propagated: the gradients of its largest
  // intermediates (transient) and, under full or selective checkpointing, what
  // recomputation regenerates — the block's activations minus those it kept (already
  // in `stored`). The recomputed tensors are saved activations of that block's
  // backward, so they are reported under activations in the backward phases.
  const double fmax = a.is_moe() ? d(a.d_expert()) * d(a.experts_per_token) : d(a.ffn);
  double work = f.T * pb.act * ((a.mlp == mlp_kind::gated ? 3 : 2) * fmax / f.tp + 2 * h / f.seq_div);
  if (r.attn == attention::eager) work += f.T * f.s / f.cp * d(a.heads) * (4 + pb.act) / f.tp;  // d(scores) fp32 + e
  const double recomputed = r.ckpt != checkpointing::none ? std::max(0.0, blk_max - kept_max) : 0.0;
  // 1F1B: stage i holds min(pp - i, micro-batches) micro-batches in flight
  // (Narayanan et al. 2021 §2.2); interleaving adds (pp-1)/(pp·v) on the first
  // stage (Korthikanti et al. 2022 §4.2.3).
  double inflight = 1;
  if (f.pp > 1) {
    inflight = std::min<double>(d(r.grad_accum), f.pp - stage);
    if (r.parallel.virtual_stages > 1 && stage == 0)
      inflight *= 1.0 + (f.pp - 1.0) / (f.pp * r.parallel.virtual_stages);
  }
  stored *= inflight;
  if (r.activation_offload) {
    // torchtune OffloadActivations: saved tensors go to pinned host memory; the
    // GPU keeps the block in flight and the one being copied.
    const double per_block = std::max(sp.enc_blocks > 0 ? stored_enc : 0.0, sp.dec_blocks > 0 ? stored_dec : 0.0);
    const double keep = std::min(stored, 2 * per_block * inflight);
    host += (stored - keep) * n_gpus_node;
    stored = keep;
  }

  // ---- transients.
  double loss_f = 0, loss_b = 0;
  if (sp.last) loss_bytes(a, r, f, loss_f, loss_b);
  double comm = 0;
  double comm_bwd = 0;  // backward only: the gathered module's unsharded gradient
  if (zero >= 3) {
    // FSDP / ZeRO-3 prefetch: the unit in use gathered + the next one prefetched; a
    // largest module not counted in W above is gathered alongside one block, and in
    // backward its unsharded gradient exists until the reduce-scatter.
    const double extra_big = ds_gathered && sp.largest <= big ? 0.0 : sp.largest * pb.weight;
    comm += std::max(2 * sp.largest_block * pb.weight, extra_big + sp.largest_block * pb.weight);
    if (!ds_gathered && !r.optimizer_in_backward) comm_bwd = big * pb.grad;
  }
  if ((zero == 1 || zero == 2) && r.num_gpus > 1) comm += std::min(tr, zero_reduce_bucket_elems) * pb.grad;
  // Optimizer step: per-tensor kernels (fused AdamW, bitsandbytes, DeepSpeed
  // FusedAdam) need one fp32 temporary of the largest tensor; Adafactor three.
  double opt_tmp = (r.opt == optimizer::adafactor ? 3 : 1) * big * 4;
  if (r.opt == optimizer::sgd) opt_tmp = 0;

  // ---- phases (max over the step, not a sum of maxima).
  const double S = W + M + O_alloc;
  const bool prealloc = !r.optimizer_in_backward && (r.grad_accum > 1 || r.num_gpus > 1 || zero > 0);
  const double G_pre = prealloc ? G : 0;
  // The head's gradient (first produced in backward) when gradients are not preallocated.
  double head_tr = 0;
  const bool tied_lm = a.head == head_kind::lm && a.tied_embeddings;
  if (sp.last && !lora) head_tr = (d(f.p.head) + (tied_lm ? d(a.vocab * a.hidden) : 0.0)) / f.tp;
  const double G_head = r.optimizer_in_backward ? G : std::min(G, head_tr * pb.grad);
  const double dlogits = sp.last && a.head == head_kind::lm ? pb.act * d(a.vocab) / f.tp * f.T : 0;

  phase_terms ph[5];
  using P = memory_breakdown::phase;
  ph[0] = {W, M, G_pre, O_alloc, stored, loss_f + comm};
  ph[1] = {W, M, G_pre > 0 ? G_pre : G_head, O_alloc, stored, std::max(loss_b, dlogits) + comm + comm_bwd};
  ph[2] = {W, M, std::max(G_pre, G_head), O_alloc, stored + recomputed, work + comm + comm_bwd};
  // Backward end: the first block's kept activations per in-flight micro-batch plus
  // the rest of that block, recomputed.
  ph[3] = {W, M, G, O_alloc, std::min(stored, inflight * kept_max) + recomputed, work + comm + comm_bwd};
  ph[4] = {W, M, r.optimizer_in_backward ? 0.0 : G, O_alloc, (f.pp > 1 ? 0.0 : 0.0), r.optimizer_in_backward ? 0.0 : opt_tmp};
  int best = 0;
  for (int i = 1; i < 5; ++i)
    if (ph[i].total() > ph[best].total()) best = i;
  (void)S;

  memory_breakdown m;
  const phase_terms& pk = ph[best];
  m.peak_phase = static_cast<P>(best);
  m.weights = bytes(pk.weights);
  m.master_weights = bytes(pk.master);
  m.gradients = bytes(pk.grads);
  m.optimizer = bytes(pk.optimizer + paged);
  m.activations = bytes(pk.acts);
  m.transient = bytes(pk.transient);
  const double alloc = pk.total();
  m.peak_allocated = bytes(alloc);
  const double reserved = alloc * reserved_factor + cublas_workspace;
  m.peak_reserved = bytes(reserved);
  const double over = cuda_context + (r.num_gpus > 1 ? nccl_buffers : 0.0);
  m.overhead = bytes(over + cublas_workspace);
  m.device = bytes(reserved + over + paged);
  m.host = bytes(host);
  m.stage = stage;
  return m;
}

// Serving: weights, KV cache of `batch` sequences of prompt+gen tokens, the
// working set of one prefill of the whole batch.
inline memory_breakdown infer_stage(const architecture& a, const scenario& r, const facts& f, int stage, double kv_per_token) {
  using namespace gpuplan::memory_defaults;
  const stage_params sp = params_of_stage(a, f, r, stage);
  const double e = f.pb.act;
  const double lin_b = f.quantized ? bits_per_element(f.q, d(a.hidden)) / 8.0 : f.pb.weight;
  const double W = sp.linear * lin_b + sp.other * f.pb.weight + (is_lora(r) ? (d(sp.enc_blocks) * f.lora_enc.params) / f.tp * f.pb.weight : 0);
  const double blocks = d(sp.enc_blocks + sp.dec_blocks);
  const double share = blocks / std::max(1.0, d(a.total_layers()));
  const double per_seq_tokens = d(r.inference.prompt_len + r.inference.gen_len);
  const double batch = d(std::max<std::int64_t>(1, r.inference.batch));
  const double kv_seq = kv_per_token * share * per_seq_tokens;
  const double kv = kv_seq * batch;
  // Prefill of the batch: per token the block input, q/k/v, attention output and
  // the MLP intermediates (gated: gate, up, product) alive at once; eager
  // attention adds the fp32 scores; the LM head computes last-position logits only.
  const double Tp = batch * d(r.inference.prompt_len);
  const double h = d(a.hidden), qd = d(a.q_dim()), kvd = d(a.kv_dim());
  const double fm = a.is_moe() ? d(a.d_expert()) * d(a.experts_per_token) : d(a.ffn);
  double act = Tp * e * (2 * h + std::max((qd + 2 * kvd + qd) / f.tp, (a.mlp == mlp_kind::gated ? 3 : 2) * fm / f.tp));
  if (r.attn == attention::eager) act += batch * d(a.heads) / f.tp * d(r.inference.prompt_len) * d(r.inference.prompt_len) * (4 + e);
  if (sp.last && a.head == head_kind::lm) act += batch * d(a.vocab) / f.tp * 4;
  memory_breakdown m;
  m.peak_phase = memory_breakdown::phase::inference;
  m.weights = bytes(W);
  m.kv_cache = bytes(kv);
  m.activations = bytes(0);
  m.transient = bytes(act);
  const double alloc = W + kv + act;
  m.peak_allocated = bytes(alloc);
  const double reserved = alloc * reserved_factor + cublas_workspace;
  m.peak_reserved = bytes(reserved);
  const double over = cuda_context + (r.num_gpus > 1 ? nccl_buffers : 0.0);
  m.overhead = bytes(over + cublas_workspace);
  m.device = bytes(reserved + over);
  const double cap = in_bytes(r.gpu.usable_memory);
  const double free = cap - (over + cublas_workspace + (W + act) * reserved_factor);
  m.max_concurrent_sequences = kv_seq > 0 && free > 0 ? static_cast<std::int64_t>(std::floor(free / (kv_seq * reserved_factor))) : 0;
  m.stage = stage;
  return m;
}

inline double kv_per_token(const architecture& a, const scenario& r) {
  const double tp = std::max(1, r.parallel.tp);
  // KV heads are split over tp; with fewer kv heads than tp each rank keeps one (Megatron/vLLM replicate).
  const double heads = std::max(1.0, d(a.n_kv_heads()) / tp);
  const double kv_layers = d(a.kind == model_kind::encoder_decoder ? 2 * a.decoder_layers : (a.kind == model_kind::encoder ? 0 : a.layers));
  return 2.0 * kv_layers * heads * d(a.d_head()) * bytes_per_element(r.inference.kv_cache_dtype);
}

inline void finish(memory_breakdown& m, const scenario& r) {
  m.capacity = r.gpu.usable_memory;
  m.headroom = m.capacity - m.device;
  m.fits = in_bytes(m.device) <= in_bytes(m.capacity);
  if (in_bytes(m.host) > in_bytes(r.cluster.host_memory_per_node)) m.warnings |= warn_host_memory;
  if (r.attn == attention::flash && r.gpu.cc_major > 0 && r.gpu.sm() < 80) m.warnings |= warn_flash_unsupported;
}

inline memory_breakdown stage_estimate(const architecture& a, const scenario& r, const facts& f, int stage) {
  memory_breakdown m = r.work == workload::infer ? infer_stage(a, r, f, stage, kv_per_token(a, r)) : train_stage(a, r, f, stage);
  finish(m, r);
  return m;
}

}  // namespace detail::mem

inline memory_breakdown estimate_memory(const run& r) {
  detail::require_valid(r);
  const architecture& model = r.model();
  const scenario& s = r.settings();
  const detail::mem::facts f = detail::mem::facts_with_acts(model, s);
  memory_breakdown worst = detail::mem::stage_estimate(model, s, f, 0);
  for (int st = 1; st < f.pp; ++st) {
    const memory_breakdown m = detail::mem::stage_estimate(model, s, f, st);
    if (in_bytes(m.device) > in_bytes(worst.device)) worst = m;
  }
  return worst;
}

inline std::vector<memory_breakdown> estimate_memory_stages(const run& r) {
  detail::require_valid(r);
  const detail::mem::facts f = detail::mem::facts_with_acts(r.model(), r.settings());
  std::vector<memory_breakdown> out;
  out.reserve(static_cast<std::size_t>(f.pp));
  for (int st = 0; st < f.pp; ++st) out.push_back(detail::mem::stage_estimate(r.model(), r.settings(), f, st));
  return out;
}

inline Bytes activation_bytes_per_layer(const run& r) {
  const detail::mem::facts f = detail::mem::facts_of(r.model(), r.settings());
  return bytes(detail::mem::block_bytes(f, detail::mem::acts_for(r.model(), f, false, false)));
}

inline Bytes kv_cache_bytes_per_token(const run& r) { return bytes(detail::mem::kv_per_token(r.model(), r.settings())); }

inline double optimizer_bytes_per_parameter(const run& r) {
  const scenario& s = r.settings();
  const auto pb = detail::mem::bytes_of(s.prec);
  if (s.opt == optimizer::adafactor)
    return detail::mem::adafactor_state_elements(r.model()) * pb.state /
           std::max(1.0, static_cast<double>(count_parameters(r.model()).total));
  return detail::mem::optimizer_bytes_per_param(s.opt, pb.state);
}

}  // namespace gpuplan
