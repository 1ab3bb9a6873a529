// detail/timing_compute.hpp — compute phase of the time model: seconds of one
// block's linears, attention core and element-wise work on one GPU (block_seconds),
// the head, and one micro-batch's forward, backward and recompute on one pipeline
// stage (compute_per_microbatch). Matmuls go through gemm_seconds (FLOPs at the
// shape-dependent fraction of the peak, or operand bytes over HBM); element-wise
// work is bytes over HBM. Formulas and sources: docs/time-model.md, "Compute efficiency".
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>

#include "gpuplan/detail/memory_layout.hpp"
#include "gpuplan/detail/timing_model.hpp"
#include "gpuplan/detail/timing_params.hpp"
#include "gpuplan/flops.hpp"
#include "gpuplan/framework.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/peft.hpp"

namespace gpuplan::detail {

// ---- element-access counts of memory-bound kernels -------------------------
// An element-wise op (norm, activation, rotary, cast) reads and writes each element once.
inline constexpr double kReadWrite = 2.0;
// A binary op (residual add, gated activation, LoRA add) reads two operands and writes one.
inline constexpr double kBinaryOpAccesses = 3.0;
// Dropout keeps a 1-byte mask per element (PyTorch native_dropout returns a bool mask).
inline constexpr double kDropoutMaskBytes = 1.0;
// Eager scale + mask + softmax reads and writes the scores once per op (×unfused_factor);
// softmax under autocast adds one fp32 upcast pass (torch.autocast op list: softmax runs in fp32).
inline constexpr double kSoftmaxUpcastPasses = 1.0;
// PEFT lora.Linear.forward: lora_dropout(x) reads x, writes the dropped copy, lora_A reads it.
inline constexpr double kLoraDropoutAccesses = 3.0;
// bitsandbytes matmul_4bit dequantizes to a bf16 copy (2 B written per weight) that the GEMM reads.
inline constexpr double kDequantWriteBytes = 2.0;
// GPTQ int4 in training: transformers loads auto-gptq's QuantLinear with exllama off (Qwen finetune.py
// GPTQConfig(bits=4, disable_exllama=True)); at >= kernel_switch_threshold rows its forward unpacks
// the weights in PyTorch ops (auto_gptq qlinear_cuda_old.py: shift, to(int8), and, - zeros, * scales).
inline constexpr double kGptqTorchPathRows = 128;
// Bytes per weight of that unpacking: shift r 0.5 w 4 (int32), to(int8) r 4 w 1, and r 1 w 1,
// - zeros r 1 w 1, * scales r 1 w 2 (16-bit) = 16.5.
inline constexpr double kGptqTorchDequantBytes = 16.5;
// Kernels of that unpacking per linear: 5 on the weights, 4 on the zeros (shift, to, and, + 1).
inline constexpr int kGptqTorchDequantKernels = 9;
// LLM.int8 with outlier decomposition runs 2–3x slower than 16-bit matmuls beyond its
// traffic (bitsandbytes issues #465 and #181): the middle.
inline constexpr double kLlmInt8GemmFactor = 2.5;
// MoE token permute and unpermute (Megatron-Core moe_utils permute/unpermute): each r+w of T·k·h.
inline constexpr double kMoePermuteAccesses = 2.0 * kReadWrite;

// Megatron TP all-reduces per block forward: after attention and after the MLP (the g
// operators, Shoeybi et al. 2019 §3); a decoder block's cross attention adds one.
inline constexpr int kTpAllReducesPerBlock = 2;

// ---- backward / forward ratios (flops.hpp conventions) ---------------------
// A trainable linear's backward = input grad + weight grad = 2× its forward FLOPs.
inline constexpr double kTrainableBackwardRatio = 2.0;
// A frozen linear on the gradient path computes the input grad only: 1×.
inline constexpr double kFrozenBackwardRatio = 1.0;
// FlashAttention-2 backward = 2.5× forward FLOPs: it recomputes the scores (Dao 2023, §4).
inline constexpr double kFlashBackwardRatio = 2.5;
// Eager attention backward: two GEMMs per forward GEMM (grads of both operands).
inline constexpr double kEagerCoreBackwardRatio = 2.0;
// Element-wise backward = 2× its forward traffic (docs/time-model.md "Element-wise").
inline constexpr double kElementwiseBackwardRatio = 2.0;

// ---- head and launch floor -------------------------------------------------
// fp32 cross-entropy per logit besides reading the logits: write the fp32 softmax, read it, write the
// gradient, ~16 B (docs/time-model.md "Element-wise").
inline constexpr double kCrossEntropyFp32Bytes = 16.0;
// The cross-entropy traffic splits evenly between forward (softmax) and backward (gradient).
inline constexpr double kCrossEntropyForwardShare = 0.5;
// Kernels per block forward, counted for an HF-style eager block: ~35 (linears, bias, norms, reshapes,
// softmax chain, dropout, residuals); torch.compile / framework-fused blocks: ~12.
inline constexpr int kEagerKernelsPerBlock = 35;
inline constexpr int kFusedKernelsPerBlock = 12;
// PEFT LoRA per targeted linear: dropout, A, B, scale-and-add.
inline constexpr int kLoraKernelsPerTarget = 4;
// Launch passes over a block per micro-batch: forward + backward (2×); full recompute adds a forward.
inline constexpr int kLaunchPasses = 3;
inline constexpr int kLaunchPassesFullRecompute = 4;
// Backward share of a micro-batch when it has no compute at all (backward ≈ 2× forward: 2/3).
inline constexpr double kDefaultBackwardShare = 0.67;

// Seconds of one block's work for one micro-batch on one GPU.
struct block_cost {
  double linear = 0;        // forward block linears (dense / fp8 where eligible)
  double linear_col_attn = 0;  // forward q,k,v (column-parallel) linears: their dW GEMM hides one backward TP all-reduce
  double linear_col_mlp = 0;   // forward gate/up (column-parallel) linears: the same for the MLP's
  double linear_mlp = 0;       // forward MLP linears (gate, up, down; experts): TiledMLP runs them once more
  double core = 0;          // forward attention core
  double core_bwd = 0;      // backward attention core (flash: includes in-kernel recompute)
  double elementwise = 0;   // forward element-wise (norms, activations, residuals, rope, dropout, casts)
  double scores = 0;        // forward element-wise on s x s scores (eager only)
  double adapters = 0;      // forward LoRA (two skinny GEMMs + the add)
  double dequant = 0;       // one dequantization of the frozen base weights (QLoRA), per forward
  double dequant_bwd = 0;   // the same in backward (0 when the forward saved the 16-bit weight)
  double dequant_kernels = 0;  // kernels of one forward's dequantization beyond the block's own
  double tp_bytes = 0;      // bytes of one tensor-parallel all-reduce
  int tp_collectives = kTpAllReducesPerBlock;  // all-reduces per forward
  int kernels = 0;          // kernels launched per forward
};

inline bool is_mlp(linear_id id) { return id == linear_id::gate || id == linear_id::up || id == linear_id::down; }
inline bool column_parallel(linear_id id) {
  return id == linear_id::q || id == linear_id::k || id == linear_id::v || id == linear_id::gate || id == linear_id::up;
}
// Kernels fused by torch.compile or by the framework itself (framework.hpp fused_kernels:
// Megatron's, Unsloth's); these fuse eager attention's score chain too.
inline bool framework_fused(const scenario& run) { return run.compile || profile_of(run.fw).fused_kernels; }
// The block's element-wise ops in fused kernels: the above, or fused norm/rotary/MLP kernels
// the run names (scenario fused_kernels: Liger, Apex, Transformer Engine).
inline bool fused(const scenario& run) { return framework_fused(run) || run.fused_kernels; }
// FlashAttention runs in 16-bit only; fp32/tf32 runs take the eager path.
inline bool flash_kernel(const scenario& run, const peak_rates& r) { return run.attn == attention::flash && r.act_bytes <= 2; }

// Forward seconds of one block's linears and what hangs off them.
struct linear_cost {
  double linear = 0, col_attn = 0, col_mlp = 0, mlp = 0;  // as block_cost
  double adapters = 0;
  double dequant = 0, dequant_bwd = 0;  // as block_cost
  double dequant_kernels = 0;
  double fp8_cast_elems = 0;  // GEMM input elements quantized to FP8 (amax + cast), Transformer Engine
};

// `acc` plus LoRA on one linear (Hu et al. 2021; PEFT lora.Linear): x·A (T×in)·(in×r), then
// ·B (T×r)·(r×out), then the add into the output; dropout on x when lora.dropout > 0.
inline double plus_lora_adapter(double acc, const scenario& run, const device_rates& d, double m, double in, double out,
                                double active, const efficiency_params& e) {
  const peak_rates& r = d.peak;
  const double eb = r.act_bytes;
  const double rank = static_cast<double>(adapter_rank(run));
  acc += gemm_seconds(m, rank, in, 1, active, r.gemm, d.ceiling, d.sms, d.bw, eb, e);
  acc += gemm_seconds(m, out, rank, 1, active, r.gemm, d.ceiling, d.sms, d.bw, eb, e);
  acc += kBinaryOpAccesses * m * out * eb * active / d.bwe;
  if (run.lora.dropout > 0) acc += kLoraDropoutAccesses * m * in * eb * active / d.bwe;
  return acc;
}

// Tensor parallelism splits column-parallel linears by output, row-parallel by input
// (Megatron-LM, Shoeybi et al. 2019 §3); MoE experts: each GPU holds E/ep experts and each
// sees T·k·ep/E tokens (Megatron-Core expert parallelism); the h×E router runs on every token.
inline linear_cost block_linears(const architecture& a, const scenario& run, const device_rates& d, double tokens,
                                 bool decoder_block, const efficiency_params& e) {
  linear_cost c;
  const peak_rates& r = d.peak;
  const double bw = d.bw, ceil = d.ceiling, eb = r.act_bytes;
  const double tp = run.parallel.tp_size();
  const double ep = std::max(1, run.parallel.ep);
  const bool lora = has_low_rank_path(run.meth);
  double linear_params = 0;
  double linears = 0;  // linear modules per block
  for (int i = 0; i < kLinearKinds; ++i) {
    const auto id = static_cast<linear_id>(i);
    const linear_shape s = linear_of(a, id, decoder_block);
    if (s.count == 0) continue;
    linears += static_cast<double>(s.count);
    double in = static_cast<double>(s.in), out = static_cast<double>(s.out);
    if (column_parallel(id)) out /= tp; else in /= tp;
    const double m = tokens, count = static_cast<double>(s.count);
    double active = count;
    if (is_mlp(id) && a.is_moe()) {
      const double E = static_cast<double>(a.experts), k = static_cast<double>(a.experts_per_token);
      double t = gemm_seconds(tokens * k * ep / E, out, in, 1, E / ep, r.fp8_gemm, ceil, d.sms, bw, eb, e);
      if (a.shared_experts > 0)
        t += gemm_seconds(tokens, out, in, 1, static_cast<double>(a.shared_experts), r.fp8_gemm, ceil, d.sms, bw, eb, e);
      c.linear += t;
      c.mlp += t;
      active = k + static_cast<double>(a.shared_experts);
      linear_params += in * out * E / ep + in * out * static_cast<double>(a.shared_experts);
    } else {
      const double t = gemm_seconds(m, out, in, 1, count, r.fp8_gemm, ceil, d.sms, bw, r.fp8 ? kFp8Bytes : eb, e);
      c.linear += t;
      if (is_mlp(id)) c.mlp += t;
      if (column_parallel(id)) (is_mlp(id) ? c.col_mlp : c.col_attn) += t;
      linear_params += in * out * count;
    }
    if (r.fp8) c.fp8_cast_elems += tokens * in * active;
    if (lora && (run.lora.targets & (1u << i)) != 0) c.adapters = plus_lora_adapter(c.adapters, run, d, m, in, out, active, e);
  }
  if (a.is_moe())
    c.linear += gemm_seconds(tokens, static_cast<double>(a.experts), static_cast<double>(a.hidden), 1, 1, r.gemm, ceil, d.sms, bw,
                             eb, e);
  if (traits_of(run.meth).quantized_base || (run.quant && is_quantized(run.quant->weights))) {
    // Read the packed weights (bits_per_element incl. scales), write the bf16 copy.
    const double packed = bits_per_element(base_quantization(run), static_cast<double>(a.hidden)) / kBitsPerByte;
    c.dequant = c.dequant_bwd = linear_params * (packed + kDequantWriteBytes) / d.bwe;
    if (run.work == workload::train && base_quantization(run).weights == dtype::int4 && tokens >= kGptqTorchPathRows) {
      // GPTQ's PyTorch unpacking; torch.matmul saves the 16-bit weight, so backward does not repeat it.
      c.dequant = linear_params * kGptqTorchDequantBytes / d.bwe;
      c.dequant_bwd = 0;
      c.dequant_kernels = kGptqTorchDequantKernels * linears;
    }
    if (base_quantization(run).weights == dtype::int8) {
      c.linear *= kLlmInt8GemmFactor;
      c.col_attn *= kLlmInt8GemmFactor;
      c.col_mlp *= kLlmInt8GemmFactor;
      c.mlp *= kLlmInt8GemmFactor;
    }
  }
  return c;
}

// Seconds of one attention core (QK^T, softmax, AV) for `batch` sequences.
struct attention_cost {
  double fwd = 0;
  double bwd = 0;     // flash: includes the in-kernel score recompute
  double scores = 0;  // eager: element-wise passes over the s_q × s_kv scores
};

// flash: FLOPs (flops.hpp, causal halving) at flash_fraction of the peak (Dao 2023);
// eager: two batched GEMMs per head — QK^T (s_q×s_kv, k = d_head), AV (s_q×d_head, k = s_kv) —
// plus scale, mask, softmax (+ dropout and its mask) over the scores.
inline attention_cost attention_core_seconds(const architecture& a, const scenario& run, const device_rates& d,
                                             double batch, double s_q, double s_kv, bool causal, bool flash,
                                             const efficiency_params& e) {
  attention_cost c;
  const peak_rates& r = d.peak;
  const double tp = run.parallel.tp_size();
  const double eb = r.act_bytes;
  const double fl = attention_core_flops(a, batch, s_q, s_kv, causal, flash) / tp;
  if (flash) {
    const double rate = r.gemm * flash_fraction(run.gpu, e) * e.matmul_scale *
                        flash_head_dim_efficiency(static_cast<double>(a.d_head()));
    c.fwd = fl / rate;
    c.bwd = kFlashBackwardRatio * fl / rate;
    return c;
  }
  const double heads = static_cast<double>(a.heads) / tp;
  const double dh = static_cast<double>(a.d_head());
  const double t = gemm_seconds(s_q, s_kv, dh, batch * heads, 1, r.gemm, d.ceiling, d.sms, d.bw, eb, e) +
                   gemm_seconds(s_q, dh, s_kv, batch * heads, 1, r.gemm, d.ceiling, d.sms, d.bw, eb, e);
  c.fwd = t;
  c.bwd = kEagerCoreBackwardRatio * t;
  // Fused norm/rotary/MLP kernels alone (fused_kernels) leave eager attention's score chain as it is.
  const double u = framework_fused(run) ? 1.0 : e.unfused_factor;
  double acc = kReadWrite * u + kSoftmaxUpcastPasses;
  if (a.dropout > 0) acc += kReadWrite * u + kDropoutMaskBytes / eb;
  c.scores = batch * heads * s_q * s_kv * eb * acc / d.bwe;
  return c;
}

// ---- element accesses per element of the eager (un-fused) block ops ----------
// Each op of the module as written reads and writes its whole tensor; fused kernels
// (framework.hpp fused_kernels, the scenario's fused_kernels, torch.compile) make one pass
// per chain (kReadWrite).
// RMSNorm in eager code upcasts (transformers LlamaRMSNorm, torchtune RMSNorm:
// x.to(float32), pow(2).mean(-1), x·rsqrt(var + eps), .to(dtype), ·weight): 16-bit
// reads and writes of the input, the cast back and the weight product (4) plus 7
// fp32 accesses (cast write, pow r+w, mean r, product r+w, cast-back r).
inline constexpr double kEagerRmsNormWideAccesses = 4.0;
inline constexpr double kEagerRmsNormFp32Accesses = 7.0;
// LayerNorm is one native kernel, eager or fused (torch native_layer_norm): r+w.
// Gated MLP, eager: act(gate) r+w, then ·up 2r+1w (transformers LlamaMLP); fused SwiGLU: 2r+1w.
inline constexpr double kEagerGatedMlpAccesses = kReadWrite + kBinaryOpAccesses;
// Rotary, eager (transformers apply_rotary_pos_emb): q·cos r+w, rotate_half = neg of one
// half r+w (1 per element) and cat r+w, ·sin r+w, add 2r+1w: 10 per element of q and k.
inline constexpr double kEagerRotaryAccesses = kReadWrite + 1.0 + kReadWrite + kReadWrite + kBinaryOpAccesses;

// Accesses (in activation-width elements) of one norm per element of h.
inline double norm_accesses(const architecture& a, bool eager, double act_bytes) {
  if (!eager || a.norm != norm_kind::rmsnorm) return kReadWrite;
  if (act_bytes >= mem::kFp32Bytes) return kEagerRmsNormFp32Accesses;  // fp32 activations: the casts are no-ops
  return kEagerRmsNormWideAccesses + kEagerRmsNormFp32Accesses * mem::kFp32Bytes / act_bytes;
}

// Forward element-wise seconds of one block: element accesses × bytes over HBM. Per token:
// norms (above), residual adds 2r+1w of h, dropout r+w + a 1-byte mask, the MLP activation
// (plain r+w of ffn; gated: above), rotary (above), eager head reshapes r+w of q,k,v, MoE
// permute / unpermute, FP8 casts. Hidden-width ops are replicated across tp ranks unless sp
// (Korthikanti et al. 2022 §4.2.2).
inline double elementwise_seconds(const architecture& a, const scenario& run, const device_rates& d, double tokens,
                                  bool decoder_block, bool flash, double fp8_cast_elems) {
  const double tp = run.parallel.tp_size();
  const double eb = d.peak.act_bytes;
  const double h = static_cast<double>(a.hidden);
  const bool eager = !fused(run);
  const double hid_div = run.parallel.sp_enabled() ? tp : 1.0;
  const double norms = (a.parallel_block ? 1.0 : 2.0) + (decoder_block ? 1.0 : 0.0);
  const double residuals = (a.parallel_block ? 1.0 : 2.0) + (decoder_block ? 1.0 : 0.0);
  double hid = norms * norm_accesses(a, eager, eb) + kBinaryOpAccesses * residuals;
  if (a.dropout > 0) hid += residuals * (kReadWrite + kDropoutMaskBytes / eb);
  double acc = tokens * h * hid / hid_div;
  const double f = a.is_moe() ? static_cast<double>(a.d_expert()) * static_cast<double>(a.experts_per_token + a.shared_experts)
                              : static_cast<double>(a.ffn);
  const double mlp = a.mlp != mlp_kind::gated ? kReadWrite : eager ? kEagerGatedMlpAccesses : kBinaryOpAccesses;
  acc += tokens * f * mlp / tp;
  if (a.positions == position_kind::rotary)
    acc += tokens * static_cast<double>(a.q_dim() + a.kv_dim()) * (eager ? kEagerRotaryAccesses : kReadWrite) / tp;
  if (!flash && eager) acc += tokens * static_cast<double>(a.q_dim() + 2 * a.kv_dim()) * kReadWrite / tp;  // q,k,v
  if (a.is_moe()) acc += kMoePermuteAccesses * tokens * h * static_cast<double>(a.experts_per_token);
  double t = acc * eb / d.bwe;
  if (d.peak.fp8) t += fp8_cast_elems * (eb + kFp8Bytes) / tp / d.bwe;  // read the 16-bit input, write the FP8 copy
  return t;
}

// One block's seconds: `tokens` = batch·s_q tokens on this GPU; `decoder_block` adds
// cross attention (s_q × s_kv, non-causal) and its linears.
inline block_cost block_seconds(const architecture& a, const scenario& run, const device_rates& d, double tokens,
                                double batch, double s_q, double s_kv, bool decoder_block, const efficiency_params& e) {
  block_cost c;
  const linear_cost l = block_linears(a, run, d, tokens, decoder_block, e);
  c.linear = l.linear;
  c.linear_col_attn = l.col_attn;
  c.linear_col_mlp = l.col_mlp;
  c.linear_mlp = l.mlp;
  c.adapters = l.adapters;
  c.dequant = l.dequant;
  c.dequant_bwd = l.dequant_bwd;
  const bool flash = flash_kernel(run, d.peak);
  const attention_cost self = attention_core_seconds(a, run, d, batch, s_q, s_kv, a.kind != model_kind::encoder, flash, e);
  c.core = self.fwd;
  c.core_bwd = self.bwd;
  c.scores = self.scores;
  if (prefix_tokens(run) > 0) {
    // Prefix tuning: the P prefix keys of every layer, visible to every query (peft.hpp).
    const attention_cost pre = attention_core_seconds(a, run, d, batch, s_q, static_cast<double>(prefix_tokens(run)), false, flash, e);
    c.core += pre.fwd;
    c.core_bwd += pre.bwd;
    c.scores += pre.scores;
  }
  if (decoder_block) {
    const attention_cost cross = attention_core_seconds(a, run, d, batch, s_q, s_kv, false, flash, e);
    c.core += cross.fwd;
    c.core_bwd += cross.bwd;
    c.scores += cross.scores;
  }
  c.elementwise = elementwise_seconds(a, run, d, tokens, decoder_block, flash, l.fp8_cast_elems);
  c.tp_bytes = tokens * static_cast<double>(a.hidden) * d.peak.act_bytes;  // one all-reduce of T·h
  c.tp_collectives = kTpAllReducesPerBlock + (decoder_block ? 1 : 0);
  c.kernels = (fused(run) ? kFusedKernelsPerBlock : kEagerKernelsPerBlock) +
              (has_low_rank_path(run.meth) ? kLoraKernelsPerTarget * std::popcount(run.lora.targets) : 0);
  c.dequant_kernels = l.dequant_kernels;
  return c;
}

// ---- one micro-batch on one pipeline stage ----------------------------------

// Shape of one micro-batch on one GPU.
struct microbatch_shape {
  double seq = 0;     // sequence length the model sees (effective_seq)
  double batch = 0;   // sequences (micro_batch)
  double tokens = 0;  // batch·seq / cp: tokens per GPU (context parallelism splits the sequence)
};

inline microbatch_shape microbatch_of(const architecture& a, const scenario& run) {
  microbatch_shape m;
  m.seq = static_cast<double>(effective_seq(a, run.seq_len + prompt_tokens(run)));  // prompt tuning: S+P positions
  m.batch = static_cast<double>(run.micro_batch);
  m.tokens = m.batch * m.seq / run.parallel.cp;
  return m;
}

// Blocks of one kind on the slowest pipeline stage and one block's seconds.
struct block_group {
  double count = 0;  // blocks on the slowest stage (ceil(layers / pp) with the head)
  block_cost cost{};
};
struct stage_blocks {
  block_group plain;    // encoder and decoder-only blocks (a.layers)
  block_group decoder;  // decoder blocks with cross attention (a.decoder_layers)
};

// Per-block seconds already computed, for a caller that estimates many runs of one
// template which differ only in their layout (plan/layout.hpp; the search). Of the layout,
// block_seconds reads tp, ep, sp and the micro-batch's shape alone, so a run that agrees with
// an earlier one on those reuses its costs (the same arithmetic, not repeated). A small
// direct-mapped table: a slot holds the last costs of the shapes that map to it.
class block_memo {
 public:
  template <class Cost>
  block_cost get(const scenario& run, double tokens, double batch, double s_q, double s_kv, bool decoder_block,
                 Cost&& cost) {
    const entry key{true, decoder_block, tokens, batch, s_q, s_kv, run.parallel.tp_size(), run.parallel.ep, run.parallel.sp_enabled(), {}};
    entry& e = slots_[slot(key)];
    if (!e.same(key)) {
      e = key;
      e.cost = cost();
    }
    return e.cost;
  }

 private:
  static constexpr std::size_t kSlots = 128;
  struct entry {
    bool valid = false, decoder = false;
    double tokens = 0, batch = 0, s_q = 0, s_kv = 0;
    int tp = 0, ep = 0;
    bool sp = false;
    block_cost cost{};
    [[nodiscard]] bool same(const entry& o) const {
      return valid && decoder == o.decoder && tokens == o.tokens && batch == o.batch && s_q == o.s_q && s_kv == o.s_kv &&
             tp == o.tp && ep == o.ep && sp == o.sp;
    }
  };
  static std::size_t slot(const entry& k) {
    const auto t = static_cast<std::uint64_t>(k.tokens), b = static_cast<std::uint64_t>(k.batch);
    const std::uint64_t h = (t * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full) ^
                            (static_cast<std::uint64_t>(k.tp) << 1) ^ (k.sp ? 1u : 0u) ^ (k.decoder ? 0x80u : 0u);
    return static_cast<std::size_t>((h ^ (h >> 29)) % kSlots);
  }
  std::array<entry, kSlots> slots_{};
};

// The blocks of pipeline stage `stage` (default: the last). Blocks are whole per stage;
// the remainder of layers / pp goes to the last stages, which also hold the head
// (mem::blocks_of_stage); Megatron's embedding / loss units of the split take a block
// off the first / last stage. A block's seconds do not depend on its stage: `known`
// (another stage of the same run and micro-batch) lends the per-block costs it holds,
// else `memo` (block_memo) those of the caller's earlier runs when they are the same.
inline stage_blocks stage_blocks_of(const architecture& a, const scenario& run, const device_rates& d,
                                    const microbatch_shape& m, const efficiency_params& e, int stage = -1,
                                    const stage_blocks* known = nullptr, block_memo* memo = nullptr) {
  stage_blocks b;
  const int pp = std::max(1, run.parallel.pp), cp = run.parallel.cp;
  std::int64_t begin = 0, enc = 0, dec = 0;
  mem::blocks_of_stage(a, run.parallel, stage < 0 ? pp - 1 : stage, begin, enc, dec);
  b.plain.count = static_cast<double>(enc);
  b.decoder.count = static_cast<double>(dec);
  auto cost = [&](const block_group* k, bool decoder_block) {
    if (k != nullptr && k->count > 0) return k->cost;
    auto fresh = [&] { return block_seconds(a, run, d, m.tokens, m.batch, m.seq / cp, m.seq, decoder_block, e); };
    return memo != nullptr ? memo->get(run, m.tokens, m.batch, m.seq / cp, m.seq, decoder_block, fresh) : fresh();
  };
  if (b.plain.count > 0) b.plain.cost = cost(known ? &known->plain : nullptr, false);
  if (b.decoder.count > 0) b.decoder.cost = cost(known ? &known->decoder : nullptr, true);
  return b;
}

// Forward and backward seconds of the head on the last stage (Megatron places it there):
// LM head GEMM + fp32 cross-entropy over the logits; pooler/classifier on the CLS token;
// a ViT's patch projection (weight grad only under full training).
struct head_cost {
  double fwd = 0;
  double bwd = 0;
};

inline head_cost head_seconds(const architecture& a, const scenario& run, const device_rates& d, const microbatch_shape& m,
                              const backward_scope& sc, const efficiency_params& e) {
  head_cost c;
  const peak_rates& r = d.peak;
  const double eb = r.act_bytes, h = static_cast<double>(a.hidden), V = static_cast<double>(a.vocab);
  const int tp = run.parallel.tp_size();
  if (a.head == head_kind::lm) {
    c.fwd = gemm_seconds(m.tokens, V / tp, h, 1, 1, r.gemm, d.ceiling, d.sms, d.bw, eb, e);
    c.bwd = (sc.head_trains ? kTrainableBackwardRatio : kFrozenBackwardRatio) * c.fwd;
    const double ce = m.tokens * V / tp * (eb + kCrossEntropyFp32Bytes) / d.bwe;
    c.fwd += ce * kCrossEntropyForwardShare;
    c.bwd += ce * (1.0 - kCrossEntropyForwardShare);
  } else if (a.head != head_kind::none) {
    c.fwd = gemm_seconds(m.batch, h, h, 1, 1, r.gemm, d.ceiling, d.sms, d.bw, eb, e);
    c.bwd = kTrainableBackwardRatio * c.fwd;
  }
  if (a.is_vit()) {
    const double patch_in = static_cast<double>(a.channels * a.patch_size * a.patch_size);
    const double t = gemm_seconds(m.tokens, h, patch_in, 1, 1, r.gemm, d.ceiling, d.sms, d.bw, eb, e);
    c.fwd += t;
    c.bwd += run.meth == method::full ? t : 0.0;
  }
  return c;
}

// Seconds of one micro-batch's compute on one pipeline stage.
struct compute_cost {
  double fwd = 0;             // forward: blocks + head
  double bwd = 0;             // backward (trainable linears 2×, frozen on the path 1×)
  double recompute = 0;       // activation recomputation (selective: attention core; full: block forward)
  double kernels = 0;         // kernel launches (double: no overflow at 2^24 layers)
  double microbatch = 0;      // max(fwd + bwd + recompute, kernels × launch_seconds)
  double backward_share = 0;  // bwd / (fwd + bwd + recompute)
};

// Adds one group of blocks: forward; backward over the blocks backward runs through
// (backward_scope_of); recompute per checkpointing (Korthikanti et al. 2022 §5).
// TiledMLP (scenario tiled_mlp) runs each block's MLP forward once more, in its backward.
inline compute_cost add_block_compute(compute_cost c, const block_group& g, checkpointing ckpt, const backward_scope& sc,
                                      bool tiled_mlp = false) {
  if (g.count <= 0) return c;
  const block_cost& b = g.cost;
  const double path = g.count * sc.path_blocks;        // blocks backward runs through
  const double trained = g.count * sc.trained_blocks;  // blocks whose linear weights train
  const double forward = b.linear + b.core + b.elementwise + b.scores + b.adapters + b.dequant;
  c.fwd += g.count * forward;
  c.bwd += trained * kTrainableBackwardRatio * b.linear + (path - trained) * kFrozenBackwardRatio * b.linear +
           path * (b.core_bwd + kElementwiseBackwardRatio * b.elementwise + kElementwiseBackwardRatio * b.scores +
                   kTrainableBackwardRatio * b.adapters + b.dequant_bwd);
  if (ckpt == checkpointing::full) c.recompute += path * forward;
  else if (ckpt == checkpointing::selective) c.recompute += path * (b.core + b.scores);
  if (tiled_mlp) c.recompute += path * b.linear_mlp;
  c.kernels += g.count * b.kernels * (ckpt == checkpointing::full ? kLaunchPassesFullRecompute : kLaunchPasses);
  c.kernels += g.count * b.dequant_kernels * (ckpt == checkpointing::full ? 2 : 1);  // forward passes only
  return c;
}

// ---- autocast weight casts ---------------------------------------------------
// torch.autocast keeps the 16-bit copy of each fp32 weight for one autocast region (its weight
// cache, torch.autocast cache_enabled=True): one cast kernel per weight tensor per forward,
// reading 4 B and writing 2 B per parameter; a full-checkpointing recompute runs in a new region
// and casts again. Backward runs each cast's backward, the 16-bit weight gradient read (2 B) and
// written as fp32 (4 B), and each micro-batch after the first adds it into .grad (reads 4 + 4 B,
// writes 4 B): one kernel each.
inline constexpr double kAutocastCastBytes = 6.0;
inline constexpr double kFp32GradAccumulateBytes = 12.0;

struct weight_cast_cost {
  double fwd = 0, bwd = 0, recompute = 0;
  double kernels = 0;  // cast, cast-backward and accumulation kernels of the micro-batch
};

// Trainable weight tensors of one block that autocast casts under full fine-tuning: each
// linear's weight and bias. PEFT adapters are cast too, but their kernels stay within the
// coarse per-target count (kLoraKernelsPerTarget); their bytes are charged (trainable_params).
inline double cast_tensors_per_block(const architecture& a, const scenario& run, bool decoder_block) {
  if (run.meth != method::full) return 0;
  double n = 0;
  for (int i = 0; i < kLinearKinds; ++i) {
    const auto id = static_cast<linear_id>(i);
    const double count = static_cast<double>(linear_of(a, id, decoder_block).count);
    const bool bias = is_mlp(id) ? a.mlp_bias : (id == linear_id::o ? a.out_bias : a.q_bias);
    n += count * (bias ? 2 : 1);
  }
  return n;
}

// The casts of one micro-batch on one stage holding `trainable_params` trainable weights in
// `tensors` tensors, for the frameworks whose mixed precision is autocast over fp32 weights
// (framework.hpp); ZeRO keeps its own 16-bit copy of the parameters, so nothing is cast there.
inline weight_cast_cost autocast_weight_casts(const scenario& run, const device_rates& d, double trainable_params,
                                              double tensors) {
  if (!autocast_casts_weights(run)) return {};
  const double ga = static_cast<double>(std::max<std::int64_t>(1, run.grad_accum));
  const double accumulating = run.keep_gradients ? 1.0 : (ga - 1.0) / ga;  // share of micro-batches adding into .grad
  const bool again = run.ckpt.value_or(checkpointing::none) == checkpointing::full;
  weight_cast_cost w;
  w.fwd = kAutocastCastBytes * trainable_params / d.bwe;
  w.bwd = (kAutocastCastBytes + accumulating * kFp32GradAccumulateBytes) * trainable_params / d.bwe;
  if (again) w.recompute = w.fwd;
  w.kernels = tensors * (2.0 + accumulating + (again ? 1.0 : 0.0));
  return w;
}

// One micro-batch on one stage: blocks, then the head when the stage holds it (the last
// stage; `with_head`), and the autocast weight casts of the stage's `trainable_params`; at
// least the host launch floor (eager PyTorch dispatch: kernels × launch_seconds). The
// embedding lookup on the first stage is a gather of T rows: no GEMM.
inline compute_cost compute_per_microbatch(const architecture& a, const scenario& run, const device_rates& d,
                                           const microbatch_shape& m, const stage_blocks& blocks,
                                           const backward_scope& sc, const efficiency_params& e, double trainable_params,
                                           bool with_head = true) {
  const checkpointing ckpt = run.ckpt.value_or(checkpointing::none);
  compute_cost c = add_block_compute(compute_cost{}, blocks.plain, ckpt, sc, run.tiled_mlp);
  c = add_block_compute(c, blocks.decoder, ckpt, sc, run.tiled_mlp);
  const head_cost hd = with_head ? head_seconds(a, run, d, m, sc, e) : head_cost{};
  const double tensors = blocks.plain.count * cast_tensors_per_block(a, run, false) +
                         blocks.decoder.count * cast_tensors_per_block(a, run, true);
  const weight_cast_cost wc = autocast_weight_casts(run, d, trainable_params, tensors);
  c.fwd += hd.fwd + wc.fwd;
  c.bwd += hd.bwd + wc.bwd;
  c.recompute += wc.recompute;
  c.kernels += wc.kernels;
  const double busy = c.fwd + c.bwd + c.recompute;
  c.microbatch = std::max(busy, c.kernels * e.launch_seconds);
  c.backward_share = busy > 0 ? c.bwd / busy : kDefaultBackwardShare;
  return c;
}

}  // namespace gpuplan::detail
