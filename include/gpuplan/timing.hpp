// timing.hpp — step time, throughput, time-to-train and cost.
// The model (docs/time-model.md): matmul time from FLOPs at a shape-dependent
// fraction of the dense peak; element-wise work, optimizer and decode from bytes
// over memory bandwidth; communication from ring collectives over the link each
// parallel group uses, with the overlap frameworks achieve; pipeline bubble;
// offload over PCIe. All defaults live in efficiency_params (one set for all GPUs).
#pragma once

#include <algorithm>
#include <cmath>
#include <bit>
#include <optional>

#include "gpuplan/detail/timing_model.hpp"
#include "gpuplan/detail/timing_params.hpp"
#include "gpuplan/flops.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/run.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/units.hpp"
#include "gpuplan/warnings.hpp"

namespace gpuplan {

struct time_breakdown {
  Seconds compute = seconds(0);
  Seconds communication = seconds(0);  // exposed (not overlapped) communication
  Seconds bubble = seconds(0);         // pipeline bubble
  Seconds optimizer = seconds(0);
  Seconds offload = seconds(0);
};

struct time_estimate {
  Seconds step = seconds(0);  // one optimizer step (all micro-batches)
  double tokens_per_second_per_gpu = 0;
  double tokens_per_second = 0;
  FlopCount model_flops_per_step = flops(0);     // excludes recompute
  FlopCount hardware_flops_per_step = flops(0);  // includes recompute
  double mfu = 0;
  double hfu = 0;
  Seconds total = seconds(0);  // time to train `tokens` (0 when tokens unset)
  double gpu_hours = 0;
  std::optional<double> cost;
  double energy_kwh = 0;
  time_breakdown breakdown{};
  // Serving (workload: infer).
  Seconds time_to_first_token = seconds(0);
  double decode_tokens_per_second_per_sequence = 0;
  double decode_tokens_per_second = 0;
  std::int64_t decode_compute_bound_batch = 0;
  warning_set warnings = 0;
  // Added by the time model (after the fixed fields).
  Seconds total_communication = seconds(0);  // all communication, overlapped or not
  double peak_flop_per_s = 0;                // dense peak MFU/HFU are measured against (per GPU)
};

inline time_estimate estimate_time(const run& r, const efficiency_params& eff = {});
// Convenience: validate (config_error on a broken rule), then estimate.
inline time_estimate estimate_time(const architecture& model, const scenario& s, const efficiency_params& eff = {}) {
  return estimate_time(run(model, s), eff);
}

namespace detail {

// Seconds of one block's work for one micro-batch on one GPU.
struct block_cost {
  double linear = 0;        // forward block linears (dense / fp8 where eligible)
  double linear_col_attn = 0;  // forward q,k,v (column-parallel) linears: their dW GEMM hides one backward TP all-reduce
  double linear_col_mlp = 0;   // forward gate/up (column-parallel) linears: the same for the MLP's
  double core = 0;          // forward attention core
  double core_bwd = 0;      // backward attention core (flash: includes in-kernel recompute)
  double elementwise = 0;   // forward element-wise (norms, activations, residuals, rope, dropout, casts)
  double scores = 0;        // forward element-wise on s x s scores (eager only)
  double adapters = 0;      // forward LoRA (two skinny GEMMs + the add)
  double dequant = 0;       // one dequantization of the frozen base weights (QLoRA)
  double tp_bytes = 0;      // bytes of one tensor-parallel all-reduce
  int tp_collectives = 2;   // all-reduces per forward
  int kernels = 0;          // kernels launched per forward
};

inline bool is_mlp(linear_id id) { return id == linear_id::gate || id == linear_id::up || id == linear_id::down; }
inline bool column_parallel(linear_id id) {
  return id == linear_id::q || id == linear_id::k || id == linear_id::v || id == linear_id::gate || id == linear_id::up;
}

inline block_cost block_seconds(const architecture& a, const scenario& run, const peak_rates& r, double tokens, double batch,
                                double s_q, double s_kv, bool decoder_block, const efficiency_params& e) {
  block_cost c;
  const gpu_spec& g = run.gpu;
  const double bw = in_byte_per_s(g.bandwidth);
  const double bwe = bw * e.bandwidth_fraction;
  const double ceil = gpu_gemm_ceiling(g, r.simt);
  const double tp = run.parallel.tp;
  const double ep = std::max(1, run.parallel.ep);
  const double eb = r.act_bytes;
  const double h = static_cast<double>(a.hidden);
  const double u = run.compile ? 1.0 : e.unfused_factor;
  const bool lora = run.meth == method::lora || run.meth == method::qlora;
  const double rank = static_cast<double>(run.lora.rank);
  const quantization q = base_quantization(run);
  double linear_params = 0;
  double fp8_cast_elems = 0;
  for (int i = 0; i < kLinearKinds; ++i) {
    const auto id = static_cast<linear_id>(i);
    const linear_shape s = linear_of(a, id, decoder_block);
    if (s.count == 0) continue;
    double in = static_cast<double>(s.in), out = static_cast<double>(s.out);
    if (column_parallel(id)) out /= tp; else in /= tp;
    double m = tokens, count = static_cast<double>(s.count);
    double active = count;
    if (is_mlp(id) && a.is_moe()) {
      // Routed experts: each GPU holds E/ep experts, each sees T·k·ep/E tokens.
      const double E = static_cast<double>(a.experts), k = static_cast<double>(a.experts_per_token);
      c.linear += gemm_seconds(tokens * k * ep / E, out, in, 1, E / ep, r.fp8_gemm, ceil, bw, eb, e);
      if (a.shared_experts > 0)
        c.linear += gemm_seconds(tokens, out, in, 1, static_cast<double>(a.shared_experts), r.fp8_gemm, ceil, bw, eb, e);
      active = k + static_cast<double>(a.shared_experts);
      linear_params += in * out * E / ep + in * out * static_cast<double>(a.shared_experts);
    } else {
      const double t = gemm_seconds(m, out, in, 1, count, r.fp8_gemm, ceil, bw, r.fp8 ? 1.0 : eb, e);
      c.linear += t;
      if (column_parallel(id)) (is_mlp(id) ? c.linear_col_mlp : c.linear_col_attn) += t;
      linear_params += in * out * count;
    }
    if (r.fp8) fp8_cast_elems += tokens * in * active;  // quantize each GEMM input (amax + cast)
    if (lora && (run.lora.targets & (1u << i)) != 0) {
      // x·A (T x in)·(in x r), then ·B (T x r)·(r x out), then the add into the output.
      c.adapters += gemm_seconds(m, rank, in, 1, active, r.gemm, ceil, bw, eb, e);
      c.adapters += gemm_seconds(m, out, rank, 1, active, r.gemm, ceil, bw, eb, e);
      c.adapters += 3.0 * m * out * eb * active / bwe;
      if (run.lora.dropout > 0) c.adapters += 3.0 * m * in * eb * active / bwe;
    }
  }
  if (a.is_moe())
    c.linear += gemm_seconds(tokens, static_cast<double>(a.experts), h, 1, 1, r.gemm, ceil, bw, eb, e);
  if (run.meth == method::qlora || (run.quant && is_quantized(run.quant->weights))) {
    // Dequantize to bf16 before each matmul (bitsandbytes matmul_4bit): read the
    // packed weights and write the bf16 copy the GEMM then reads.
    c.dequant = linear_params * (bits_per_element(q, h) / 8.0 + 2.0) / bwe;
  }
  // Attention core.
  const double heads = static_cast<double>(a.heads) / tp;
  const double dh = static_cast<double>(a.d_head());
  const bool causal = a.kind != model_kind::encoder;
  const bool flash = run.attn == attention::flash && eb <= 2;
  auto core_of = [&](double sq, double skv, bool causal_attn, double& fwd, double& bwd, double& scores) {
    const double fl = attention_core_flops(a, batch, sq, skv, causal_attn, flash) / tp;
    if (flash) {
      const double rate = r.gemm * flash_fraction(g, e) * e.matmul_scale;
      fwd += fl / rate;
      bwd += 2.5 * fl / rate;  // FA2 backward = 2.5x forward FLOPs (recomputes the scores)
    } else {
      // Two batched GEMMs per head: QK^T (s_q x s_kv, k = d) and AV (s_q x d, k = s_kv).
      const double t = gemm_seconds(sq, skv, dh, batch * heads, 1, r.gemm, ceil, bw, eb, e) +
                       gemm_seconds(sq, dh, skv, batch * heads, 1, r.gemm, ceil, bw, eb, e);
      fwd += t;
      bwd += 2.0 * t;
      // scale, mask, softmax (+ dropout with its mask) over the s_q x s_kv scores.
      double acc = 2.0 * u + 1.0;  // + one fp32 upcast pass for softmax under autocast
      if (a.dropout > 0) acc += 2.0 * u + 1.0 / eb;
      scores += batch * heads * sq * skv * eb * acc / bwe;
    }
  };
  core_of(s_q, s_kv, causal, c.core, c.core_bwd, c.scores);
  if (decoder_block) core_of(s_q, s_kv, false, c.core, c.core_bwd, c.scores);
  // Element-wise work per token (element accesses x bytes): norms r+w, residual
  // adds 2r+1w, MLP activation (plain: r+w of ffn; gated: 2r+1w), rotary on q,k,
  // dropout r+w plus a 1-byte mask. Replicated across tp ranks unless sp.
  const double hid_div = run.parallel.sp ? tp : 1.0;
  const double norms = (a.parallel_block ? 1.0 : 2.0) + (decoder_block ? 1.0 : 0.0);
  const double residuals = (a.parallel_block ? 1.0 : 2.0) + (decoder_block ? 1.0 : 0.0);
  double hid = u * (2.0 * norms + 3.0 * residuals);
  if (a.dropout > 0) hid += residuals * (2.0 * u + 1.0 / eb);
  double acc = tokens * h * hid / hid_div;
  const double f = a.is_moe() ? static_cast<double>(a.d_expert()) * static_cast<double>(a.experts_per_token + a.shared_experts)
                              : static_cast<double>(a.ffn);
  acc += tokens * f * u * (a.mlp == mlp_kind::gated ? 3.0 : 2.0) / tp;
  if (a.positions == position_kind::rotary)
    acc += tokens * static_cast<double>(a.q_dim() + a.kv_dim()) * 2.0 * u / tp;
  if (!flash) acc += tokens * static_cast<double>(a.q_dim() + 2 * a.kv_dim()) * 2.0 * (u - 1.0) / tp;  // head reshapes
  if (a.is_moe()) acc += 4.0 * tokens * h * static_cast<double>(a.experts_per_token);  // permute / unpermute
  c.elementwise = acc * eb / bwe;
  if (r.fp8) c.elementwise += fp8_cast_elems * (eb + 1.0) / tp / bwe;
  c.tp_bytes = tokens * h * eb;
  c.tp_collectives = decoder_block ? 3 : 2;
  // Kernels per block forward: eager HF-style blocks launch ~35 (linears, bias, norms,
  // reshapes, softmax chain, dropout, residuals); compiled/fused ones ~12.
  c.kernels = (run.compile ? 12 : 35) + (lora ? 4 * std::popcount(run.lora.targets) : 0);
  return c;
}

// Bytes the optimizer moves per trainable parameter (read + write), before the
// unfused factor. Minimum traffic of a fused kernel: weights r+w, gradient read,
// each state r+w, plus the 16-bit copy written under mixed precision.
inline double optimizer_traffic_per_param(const scenario& run, bool& fused) {
  const bool pure = run.prec == precision::bf16_pure;
  const double wb = pure ? 2.0 : 4.0;
  const double gb = pure ? 2.0 : 4.0;
  double states = 0;  // bytes of state per parameter
  fused = false;
  switch (run.opt) {
    case optimizer::adamw: case optimizer::adam: case optimizer::paged_adamw_32bit: states = pure ? 4.0 : 8.0; break;
    case optimizer::adamw_8bit: case optimizer::paged_adamw_8bit: states = 2.0; fused = true; break;  // bitsandbytes fused kernel
    case optimizer::sgd: states = 0; break;
    case optimizer::sgd_momentum: case optimizer::lion: states = pure ? 2.0 : 4.0; break;
    case optimizer::adafactor:
      // HF transformers Adafactor: ~12 unfused fp32 element-wise kernels over each
      // parameter-sized tensor (update², row/col means, rsqrt, RMS clip, ...).
      return 12.0 * 2.0 * 4.0;
  }
  const bool mixed = run.prec == precision::fp16_mixed || run.prec == precision::bf16_mixed || run.prec == precision::fp8_mixed;
  return 2.0 * wb + gb + 2.0 * states + (mixed ? 2.0 : 0.0) + gb;  // + gradient-norm read for clipping
}

// Bytes that stay on the GPU besides the optimizer state (for paged optimizers,
// whose state bitsandbytes pages to host memory when the device is full). A coarse
// stand-in for the memory model: weights, gradients, activations (Korthikanti 2022
// eq. 2 per layer, 34·s·b·h bytes in 16-bit without the s² term under flash;
// s·b·h under full recompute), fp32 logits and their gradient, 1 GiB of context.
inline double resident_bytes(const architecture& a, const scenario& run, std::int64_t params, std::int64_t trainable,
                             double act_bytes) {
  const double pb = run.prec == precision::fp32 || run.prec == precision::tf32 ? 4.0 : 2.0;
  const double wq = run.meth == method::qlora ? bits_per_element(base_quantization(run)) / 8.0 : pb;
  double w = static_cast<double>(params - trainable) * wq + static_cast<double>(trainable) * pb;
  if (run.prec == precision::fp16_mixed || run.prec == precision::bf16_mixed) w += 4.0 * static_cast<double>(trainable);
  const double grads = run.optimizer_in_backward ? 0.0 : static_cast<double>(trainable) * pb;
  const double T = static_cast<double>(run.micro_batch * detail::effective_seq(a, run.seq_len));
  const double L = static_cast<double>(a.total_layers());
  const double h = static_cast<double>(a.hidden);
  double per_layer = run.ckpt == checkpointing::full ? T * h * act_bytes : 17.0 * T * h * act_bytes;
  if (run.attn == attention::eager && run.ckpt != checkpointing::full)
    per_layer += 2.5 * static_cast<double>(a.heads) * T * static_cast<double>(run.seq_len) * act_bytes;
  double act = L * per_layer + 17.0 * T * h * act_bytes;  // + one layer recomputed / in flight
  if (a.head == head_kind::lm) act += T * static_cast<double>(a.vocab) * 8.0;
  return w + grads + act + kGiB;
}

}  // namespace detail

namespace detail {
inline time_estimate estimate_time_of(const architecture& a, const scenario& run, const efficiency_params& e) {
  time_estimate out;
  warning_set w = 0;
  const peak_rates r = select_peaks(run.gpu, run.prec, w);
  if (run.attn == attention::flash && run.gpu.vendor == gpu_vendor::nvidia && run.gpu.sm() < 80) w |= warn_flash_unsupported;
  if (run.parallel.tp > 1 && !(run.gpu.has_nvlink() && run.parallel.tp <= run.gpu.link_group)) w |= warn_no_nvlink_tp;
  if (!run.gpu.confidence.empty() && run.gpu.confidence.find("unverified") != std::string::npos) w |= warn_unverified_gpu;
  if (a.max_positions > 0 && !a.is_vit() && run.seq_len > a.max_positions && a.positions == position_kind::learned)
    w |= warn_seq_beyond_positions;

  const gpu_spec& g = run.gpu;
  const double bw = in_byte_per_s(g.bandwidth);
  const double bwe = bw * e.bandwidth_fraction;
  const double ceil = gpu_gemm_ceiling(g, r.simt);
  const int tp = run.parallel.tp, pp = run.parallel.pp, cp = run.parallel.cp;
  const int dp = std::max(1, run.dp());
  const double eb = r.act_bytes;
  const double h = static_cast<double>(a.hidden);
  const double V = static_cast<double>(a.vocab);
  const parameter_breakdown P = count_parameters(a);
  const double peak = r.fp8 ? r.fp8_gemm : r.gemm;
  out.peak_flop_per_s = peak;

  // ---------------- serving ----------------
  if (run.work == workload::infer) {
    const double B = static_cast<double>(run.inference.batch);
    const double prompt = static_cast<double>(run.inference.prompt_len);
    const double gen = static_cast<double>(run.inference.gen_len);
    // Prefill: the whole prompt batch through every block (same efficiency model), LM head on all positions.
    const double Tp = B * prompt;
    double prefill = 0, tp_comm = 0;
    const comm_link tpl = group_link(run, tp, 1);
    auto add_blocks = [&](double n_blocks, bool dec) {
      if (n_blocks <= 0) return;
      const block_cost c = block_seconds(a, run, r, Tp, B, prompt, prompt, dec, e);
      prefill += n_blocks * (c.linear + c.core + c.elementwise + c.scores + c.adapters + c.dequant);
      tp_comm += n_blocks * c.tp_collectives * all_reduce_seconds(c.tp_bytes, tp, tpl, e);
    };
    add_blocks(static_cast<double>(a.layers) / pp, false);
    add_blocks(static_cast<double>(a.decoder_layers) / pp, true);
    if (a.head == head_kind::lm) prefill += gemm_seconds(B, V / tp, h, 1, 1, r.gemm, ceil, bw, eb, e);  // last position only
    prefill = (prefill + tp_comm) * pp;  // one request batch passes all stages in turn
    out.time_to_first_token = seconds(prefill);
    // Decode: one token per sequence per step at the mean context (prompt + gen/2).
    // Bandwidth roofline: all weights (quantized as stored) + the KV cache are read per step.
    const double ctx = prompt + 0.5 * gen;
    const quantization q = base_quantization(run);
    const double block_params = static_cast<double>(P.attention + P.mlp);
    double active_block = block_params;
    if (a.is_moe()) {
      // Only routed experts' weights are read; with many sequences most experts are hit.
      const double per_expert = static_cast<double>(P.mlp) / static_cast<double>(a.experts + a.shared_experts);
      const double hit = std::min<double>(static_cast<double>(a.experts),
                                          B * static_cast<double>(a.experts_per_token));
      active_block = static_cast<double>(P.attention) + per_expert * (hit + static_cast<double>(a.shared_experts));
    }
    const double wbits = (q.weights == dtype::bf16 && (run.prec == precision::fp32 || run.prec == precision::tf32))
                             ? 32.0 : bits_per_element(q, h);
    const double other = static_cast<double>(P.total) - block_params;  // embeddings, norms, head in 16-bit
    const double weight_bytes = (active_block * wbits / 8.0 + other * std::max(2.0, eb)) / (tp * pp);
    const double kv_per_seq = 2.0 * static_cast<double>(a.kv_dim()) * static_cast<double>(a.total_layers()) *
                              bytes_per_element(run.inference.kv_cache_dtype) / (tp * pp);
    const double mat_params = static_cast<double>(P.attention + P.mlp) +
                              (a.head == head_kind::lm ? V * h : 0.0);  // matmul weights touched per token
    double active_mat = mat_params;
    if (a.is_moe()) active_mat = active_block + (a.head == head_kind::lm ? V * h : 0.0);
    const double flop_per_seq = (2.0 * active_mat + 4.0 * ctx * static_cast<double>(a.q_dim()) *
                                                       static_cast<double>(a.total_layers())) / (tp * pp);
    const double rate = r.gemm * ceil * e.matmul_scale;
    // GEMV/skinny GEMM at decode: the roofline of bytes vs FLOPs at the best-shape rate.
    auto decode_step = [&](double batch) {
      const double mem = (weight_bytes + batch * ctx * kv_per_seq) / bwe;
      const double cmp = batch * flop_per_seq / rate;
      const double comm = static_cast<double>(a.total_layers()) / pp * 2.0 *
                          all_reduce_seconds(batch * h * eb, tp, tpl, e);
      return std::max(mem, cmp) * pp + comm * pp;
    };
    const double t_dec = decode_step(B);
    out.decode_tokens_per_second_per_sequence = 1.0 / t_dec;
    out.decode_tokens_per_second = B / t_dec;
    // Batch at which the weight matmuls turn compute-bound: B·2·N_active/rate = weight
    // bytes/bandwidth (the ridge point). Attention over the KV cache reads its own bytes
    // per sequence and stays bandwidth-bound at any batch.
    const double per_seq_cmp = 2.0 * active_mat / (tp * pp) / rate;
    out.decode_compute_bound_batch = static_cast<std::int64_t>(std::ceil(weight_bytes / bwe / per_seq_cmp));
    const double total = prefill + gen * t_dec;
    out.step = seconds(total);
    out.breakdown.compute = seconds(total - tp_comm * pp);
    out.breakdown.communication = seconds(tp_comm * pp);
    const double replicas = static_cast<double>(dp);
    out.tokens_per_second = replicas * B * gen / total;
    out.tokens_per_second_per_gpu = out.tokens_per_second / run.num_gpus;
    const FlopCount fl = inference_flops(a, run, B, run.inference.prompt_len) +
                         flops(gen * flop_per_seq * tp * pp * B);
    out.model_flops_per_step = fl * replicas;
    out.hardware_flops_per_step = fl * replicas;
    out.mfu = out.hfu = in_flops(fl) / (total * tp * pp * peak);
    out.warnings = w;
    return out;
  }

  // ---------------- training ----------------
  const double s = static_cast<double>(effective_seq(a, run.seq_len));
  const double mb = static_cast<double>(run.micro_batch);
  const double T = mb * s / cp;  // tokens per GPU per micro-batch
  const backward_scope sc = backward_scope_of(a, run);
  const flop_breakdown F = training_flops(a, run);
  out.model_flops_per_step = F.model;
  out.hardware_flops_per_step = F.hardware;

  // Per-stage compute of one micro-batch (stages balanced; the LM head is added to
  // the stage time — Megatron places it on the last stage).
  double fwd = 0, bwd = 0, rec = 0, tp_comm = 0, ep_comm = 0, cp_comm = 0;
  double kernels = 0;  // launches per micro-batch (double: no overflow at 2^24 layers)
  const comm_link tpl = group_link(run, tp, 1);
  const comm_link epl = group_link(run, run.parallel.ep, tp * pp);
  const comm_link cpl = group_link(run, cp, tp);
  auto add_blocks = [&](double n_blocks, bool dec) {
    if (n_blocks <= 0) return;
    const block_cost c = block_seconds(a, run, r, T, mb, s / cp, s, dec, e);
    const double path = n_blocks * sc.path_blocks;        // blocks backward runs through
    const double trained = n_blocks * sc.trained_blocks;  // blocks whose linear weights train
    fwd += n_blocks * (c.linear + c.core + c.elementwise + c.scores + c.adapters + c.dequant);
    bwd += trained * 2.0 * c.linear + (path - trained) * c.linear + path * (c.core_bwd + 2.0 * c.elementwise +
                                                                           2.0 * c.scores + 2.0 * c.adapters + c.dequant);
    double coll = path;  // backward: one pass of all-reduces per block (the f operators' grads)
    if (run.ckpt == checkpointing::full) {
      rec += path * (c.linear + c.core + c.elementwise + c.scores + c.adapters + c.dequant);
      coll += path;
    } else if (run.ckpt == checkpointing::selective) {
      rec += path * (c.core + c.scores);
    }
    // Megatron TP: 2 all-reduces per block forward, 2 backward, 2 more when the forward is
    // recomputed; with sp each becomes reduce-scatter + all-gather of the same bytes. Forward
    // ones are exposed. Backward: the f operator's all-reduce of a column-parallel linear's
    // input gradient runs asynchronously beside that linear's weight-gradient GEMM (Megatron-LM
    // tensor_parallel/layers.py LinearWithGradAccumulationAndAsyncCommunication, on by default;
    // with sp the reduce-scatter is overlapped the same way): only the excess over the dW GEMM
    // (as long as the linear's forward) is exposed. Cross-attention's extra one, and frozen
    // blocks (no dW GEMM), stay exposed.
    const double ar = all_reduce_seconds(c.tp_bytes, tp, tpl, e);
    const double bwd_exposed = tp > 1 ? std::max(0.0, ar - c.linear_col_attn) + std::max(0.0, ar - c.linear_col_mlp) +
                                            (c.tp_collectives - 2) * ar
                                      : 0.0;
    tp_comm += (n_blocks + (coll - path)) * c.tp_collectives * ar + trained * bwd_exposed;
    if (path > trained) tp_comm += (path - trained) * c.tp_collectives * ar;
    if (a.is_moe() && run.parallel.ep > 1) {
      const double bytes = T * h * eb * static_cast<double>(a.experts_per_token);
      ep_comm += (n_blocks + 2.0 * path) * 2.0 * all_to_all_seconds(bytes, run.parallel.ep, epl, e);
    }
    if (cp > 1) {
      // Ring attention: pass K,V blocks (cp-1) times per layer, overlapped with the core.
      const double kv = T * 2.0 * static_cast<double>(a.kv_dim()) * eb / tp;
      const double t = (cp - 1) * p2p_seconds(kv, cpl, e);
      cp_comm += n_blocks * std::max(0.0, t - c.core) + path * std::max(0.0, 2.0 * t - c.core_bwd);
    }
    kernels += static_cast<double>(n_blocks) * c.kernels * (run.ckpt == checkpointing::full ? 4 : 3);
  };
  add_blocks(static_cast<double>(a.layers) / pp, false);
  add_blocks(static_cast<double>(a.decoder_layers) / pp, true);
  // Head (last stage): LM head GEMM and the fp32 cross-entropy over the logits
  // (read logits, write fp32 softmax, read it, write the gradient: ~16 B + 2 passes).
  double head_fwd = 0, head_bwd = 0;
  if (a.head == head_kind::lm) {
    const double Th = T;
    head_fwd = gemm_seconds(Th, V / tp, h, 1, 1, r.gemm, ceil, bw, eb, e);
    head_bwd = (sc.head_trains ? 2.0 : 1.0) * head_fwd;
    const double ce = Th * V / tp * (eb + 16.0) / bwe;
    head_fwd += ce * 0.5;
    head_bwd += ce * 0.5;
  } else if (a.head != head_kind::none) {
    head_fwd = gemm_seconds(mb, h, h, 1, 1, r.gemm, ceil, bw, eb, e);
    head_bwd = 2.0 * head_fwd;
  }
  if (a.is_vit()) {
    const double patch_in = static_cast<double>(a.channels * a.patch_size * a.patch_size);
    const double t = gemm_seconds(T, h, patch_in, 1, 1, r.gemm, ceil, bw, eb, e);
    head_fwd += t;
    head_bwd += run.meth == method::full ? t : 0.0;
  }
  fwd += head_fwd;
  bwd += head_bwd;
  double compute_mb = fwd + bwd + rec;
  // Host launch floor (eager PyTorch dispatch): a micro-batch is at least its kernel count x launch cost.
  compute_mb = std::max(compute_mb, kernels * e.launch_seconds);
  const double bwd_share = (fwd + bwd + rec) > 0 ? bwd / (fwd + bwd + rec) : 0.67;

  // Parameters per GPU before data-parallel sharding.
  const std::int64_t trainable_total = trainable_parameters(a, run);
  const double stage_params = static_cast<double>(P.total) / (tp * pp);
  const double stage_trainable = static_cast<double>(trainable_total) / (tp * pp);
  const bool pure = run.prec == precision::bf16_pure;
  const double wcomm = (run.prec == precision::fp32 || run.prec == precision::tf32) ? 4.0 : 2.0;  // gathered weight bytes
  // Gradient bytes reduced: DDP under AMP reduces the fp32 parameter gradients (4 B);
  // ZeRO/FSDP mixed precision and pure 16-bit reduce 16-bit gradients (2 B).
  const double gcomm = (run.prec == precision::fp32 || run.prec == precision::tf32) ? 4.0
                       : (run.parallel.zero == 0 && !pure) ? 4.0 : 2.0;
  const comm_link dpl = group_link(run, dp, tp * pp);
  const double ga = static_cast<double>(run.grad_accum);

  // ZeRO-3 / FSDP: all-gather parameters for forward and again for backward, reduce-
  // scatter gradients, every micro-batch; prefetch hides up to fsdp_overlap of compute.
  double zero3_exposed = 0, comm_total = 0;
  if (run.parallel.zero == 3 && dp > 1) {
    const double ag = gather_seconds(stage_params * wcomm, dp, dpl, e);
    const double rs = gather_seconds(stage_trainable * gcomm, dp, dpl, e);
    const double per_mb = 2.0 * ag + rs;
    const double first_layer = ag / std::max(1.0, static_cast<double>(a.total_layers()) / pp);
    zero3_exposed = std::max(0.0, per_mb - e.fsdp_overlap * compute_mb) + first_layer;
    comm_total += per_mb * ga;
  }
  // Pipeline point-to-point: activations forward, gradients backward, per micro-batch.
  double pp_comm = 0;
  if (pp > 1) {
    const comm_link ppl = group_link(run, pp, tp);
    const double bytes = T * h * eb / (run.parallel.sp ? tp : 1);
    pp_comm = 2.0 * p2p_seconds(bytes, ppl, e);
  }
  const double mb_exposed = tp_comm + ep_comm + cp_comm + pp_comm + zero3_exposed;
  comm_total += (tp_comm + ep_comm + cp_comm + pp_comm) * ga;
  const double t_mb = compute_mb + mb_exposed;

  // Data-parallel gradient reduction (once per step; DDP no_sync during accumulation).
  double dp_exposed = 0;
  if (dp > 1 && run.parallel.zero < 3) {
    const double bytes = stage_trainable * gcomm;
    // ZeRO-1/2: reduce-scatter (half an all-reduce) overlapped with backward, then an
    // exposed all-gather of the updated 16-bit parameters after the step.
    const double t = run.parallel.zero == 0 ? all_reduce_seconds(bytes, dp, dpl, e) : gather_seconds(bytes, dp, dpl, e);
    const double bucket = all_reduce_seconds(std::min(bytes, 25.0 * kMiB), dp, dpl, e);  // DDP 25 MiB buckets
    dp_exposed = std::max(bucket, t - e.ddp_overlap * bwd_share * compute_mb);
    comm_total += t;
    if (run.parallel.zero >= 1) {
      const double ag = gather_seconds(stage_trainable * wcomm, dp, dpl, e);
      dp_exposed += ag;
      comm_total += ag;
    }
  }

  // Pipeline bubble: (p-1)/(m·v) of the ideal pipelined time (Narayanan et al. 2021 §2.2).
  const double bubble = pp > 1 ? static_cast<double>(pp - 1) / run.parallel.virtual_stages * t_mb : 0.0;

  // Optimizer step: bytes over HBM for the parameters this GPU updates.
  bool fused = false;
  const double opt_bpp = optimizer_traffic_per_param(run, fused);
  const double shard = run.parallel.zero >= 1 ? static_cast<double>(dp) : 1.0;
  const double opt_params = stage_trainable / shard;
  double optimizer_t = 0, offload_t = 0;
  const double pcie = in_byte_per_s(pcie_per_direction(g.pcie_gen, g.pcie_lanes)) * e.pcie_fraction;
  const double gpus_on_node = std::min<double>(run.num_gpus, std::max(1, run.cluster.gpus_per_node));
  if (run.parallel.offload_optimizer != offload::none) {
    // ZeRO-Offload: gradients to host, CPU Adam, updated 16-bit params back (Ren et al. 2021).
    offload_t += opt_params * (gcomm + wcomm) / pcie;
    optimizer_t = opt_params * gpus_on_node / e.cpu_adam_params_per_s;
    if (run.parallel.offload_optimizer == offload::nvme)
      offload_t += 2.0 * opt_params * gpus_on_node * 12.0 / e.nvme_bytes_per_s;  // fp32 master + 2 moments in and out
  } else {
    optimizer_t = opt_params * opt_bpp * (fused ? 1.0 : e.unfused_optimizer_factor) / bwe;
  }
  if (run.parallel.offload_params != offload::none) {
    // Parameters streamed host->device for forward and backward of every micro-batch.
    offload_t += ga * 2.0 * (stage_params / shard) * wcomm / pcie;
  }
  if (run.opt == optimizer::paged_adamw_8bit || run.opt == optimizer::paged_adamw_32bit) {
    // bitsandbytes paged state lives in managed memory: what does not fit next to the
    // resident tensors pages in and out over PCIe every step.
    const double state = opt_params * (run.opt == optimizer::paged_adamw_8bit ? 2.0 : 8.0);
    const double cap = in_bytes(g.usable_memory) > 0 ? in_bytes(g.usable_memory) : in_bytes(g.memory);
    const double free = cap - resident_bytes(a, run, P.total, trainable_total, eb) / (tp * pp * 1.0);
    const double paged = std::clamp(state - std::max(0.0, free), 0.0, state);
    offload_t += 2.0 * paged / pcie;
  }

  const double compute = ga * compute_mb;
  const double comm_exposed = ga * mb_exposed + dp_exposed;
  const double step = compute + comm_exposed + bubble + optimizer_t + offload_t;
  out.breakdown.compute = seconds(compute);
  out.breakdown.communication = seconds(comm_exposed);
  out.breakdown.bubble = seconds(bubble);
  out.breakdown.optimizer = seconds(optimizer_t);
  out.breakdown.offload = seconds(offload_t);
  out.total_communication = seconds(comm_total);
  out.step = seconds(step);
  const double tokens_step = static_cast<double>(run.global_batch()) * s;
  out.tokens_per_second = tokens_step / step;
  out.tokens_per_second_per_gpu = out.tokens_per_second / run.num_gpus;
  const double capacity = step * run.num_gpus * peak;
  out.mfu = in_flops(F.model) / capacity;
  out.hfu = in_flops(F.hardware) / capacity;
  if (run.tokens && *run.tokens > 0) {
    const double total = *run.tokens / out.tokens_per_second;
    out.total = seconds(total);
    out.gpu_hours = total * run.num_gpus / 3600.0;
    if (run.price_per_gpu_hour) out.cost = out.gpu_hours * *run.price_per_gpu_hour;
    // Energy: TDP x utilisation, utilisation = idle fraction + (1 - idle) x busy
    // share of the step (compute, optimizer); communication/bubble time at idle power.
    const double busy = (compute + optimizer_t) / step;
    const double util = e.idle_power_fraction + (1.0 - e.idle_power_fraction) * busy;
    out.energy_kwh = g.tdp_watts * util * out.gpu_hours / 1000.0;
  }
  out.warnings = w;
  return out;
}

}  // namespace detail

inline time_estimate estimate_time(const run& r, const efficiency_params& e) {
  detail::require_valid(r);
  return detail::estimate_time_of(r.model(), r.settings(), e);
}

}  // namespace gpuplan
