// detail/timing_serving.hpp — serving phases of the time model (workload: infer):
// prefill of the prompt batch through the block model, and decode as a roofline of the
// bytes read per token (weights as stored + KV cache) against its FLOPs.
// Sources: docs/time-model.md, "Serving".
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "gpuplan/detail/timing_comm.hpp"
#include "gpuplan/detail/timing_compute.hpp"
#include "gpuplan/detail/timing_model.hpp"
#include "gpuplan/detail/timing_params.hpp"
#include "gpuplan/engine.hpp"
#include "gpuplan/kernels.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/scenario.hpp"

namespace gpuplan::detail {

// Decode runs at the mean context of a request: prompt + gen_len / 2.
inline constexpr double kMeanGeneratedShare = 0.5;
// Attention over the KV cache per generated token: QK^T and AV, 2 FLOPs per multiply-add
// each over ctx·q_dim: 4·ctx·q_dim per layer.
inline constexpr double kDecodeAttentionFlopsPerContextQ = 4.0;
// FLOPs per weight per token of a matmul (one multiply-add).
inline constexpr double kFlopsPerWeight = 2.0;
// fp32 serving keeps bf16 catalog weights in fp32.
inline constexpr double kFp32Bits = 32.0;
// Embeddings, norms and the head stay in 16-bit (or the activation width when wider).
inline constexpr double kUnquantizedBytes = 2.0;

// Prefill of the prompt batch (time to first token): every block (same efficiency model)
// with the LM head on the last position only; one request batch passes all stages in turn.
struct prefill_cost {
  double seconds = 0;        // all stages
  double stage_tp_comm = 0;  // TP all-reduces of one stage
};

inline prefill_cost prefill_seconds(const architecture& a, const scenario& run, const device_rates& d,
                                    const efficiency_params& e) {
  const double B = static_cast<double>(run.inference.batch);
  const double prompt = static_cast<double>(run.inference.prompt_len);
  const int tp = run.parallel.tp_size(), pp = run.parallel.pp;
  // TP all-reduces go through host memory on cards without peer-to-peer (timing_comm.hpp).
  const comm_link tpl = collective_link(run, tp, 1);
  // The engine's kernel for the weight format (kernels.hpp): W8A8 runs the block matmuls at
  // the 8-bit tensor-core rate on 8-bit operands (the per-token activation cast counted as
  // under fp8 training); Marlin dequantises in registers, so prefill costs the 16-bit GEMM
  // (Frantar et al. 2024, MARLIN §5: at large batch the kernel runs at the FP16 GEMM's speed).
  const inference_kernel k = kernel_for(run);
  scenario ks = run;
  device_rates kd = d;
  if (!k.prefill_dequantizes && k.kind != kernel_kind::llm_int8 && k.kind != kernel_kind::gguf) {
    ks.quant.reset();
    if (ks.meth == method::qlora) ks.meth = method::full;
  }
  if (k.w8a8) {
    kd.peak.fp8 = true;
    kd.peak.fp8_gemm = in_flop_per_s(k.matmul_peak);
  }
  double t = 0, comm = 0;
  auto add_blocks = [&](double n_blocks, bool dec) {
    if (n_blocks <= 0) return;
    const block_cost c = block_seconds(a, ks, kd, B * prompt, B, prompt, prompt, dec, e);
    t += n_blocks * (c.linear + c.core + c.elementwise + c.scores + c.adapters + c.dequant);
    comm += n_blocks * c.tp_collectives * all_reduce_seconds(c.tp_bytes, tp, tpl, e);
  };
  add_blocks(static_cast<double>(a.layers) / pp, false);
  add_blocks(static_cast<double>(a.decoder_layers) / pp, true);
  if (a.head == head_kind::lm)
    t += gemm_seconds(B, static_cast<double>(a.vocab) / tp, static_cast<double>(a.hidden), 1, 1, d.peak.gemm, d.ceiling, d.sms,
                      d.bw, d.peak.act_bytes, e);
  return {(t + comm) * pp, comm};
}

// What one decode step reads and computes, per GPU (÷tp·pp).
struct decode_shape {
  double context = 0;       // mean context per sequence
  double weight_bytes = 0;  // weights read per step: block matmuls as stored (MoE: experts hit), the rest 16-bit
  double kv_bytes_per_token = 0;  // KV cache bytes per sequence per context token
  double active_matmul = 0;       // matmul weights touched per token (MoE: active experts)
  double flop_per_seq = 0;        // FLOPs per sequence per generated token
  double block_weights = 0;       // block matmul weights read per step (the quantised ones)
  double block_flop_per_seq = 0;  // the part of flop_per_seq in the block matmuls (the kernel's rate)
};

inline decode_shape decode_shape_of(const architecture& a, const scenario& run, const device_rates& d,
                                    const parameter_breakdown& P) {
  decode_shape s;
  const double B = static_cast<double>(run.inference.batch);
  const double h = static_cast<double>(a.hidden), V = static_cast<double>(a.vocab);
  const int tp = run.parallel.tp_size(), pp = run.parallel.pp;
  s.context = static_cast<double>(run.inference.prompt_len) + kMeanGeneratedShare * static_cast<double>(run.inference.gen_len);
  const quantization q = base_quantization(run);
  const double block_params = static_cast<double>(P.attention + P.mlp);
  double active_block = block_params;
  if (a.is_moe()) {
    // Only routed experts' weights are read; with many sequences most experts are hit.
    const double per_expert = static_cast<double>(P.mlp) / static_cast<double>(a.experts + a.shared_experts);
    const double hit = std::min<double>(static_cast<double>(a.experts), B * static_cast<double>(a.experts_per_token));
    active_block = static_cast<double>(P.attention) + per_expert * (hit + static_cast<double>(a.shared_experts));
  }
  const engine_profile& eng = profile_of(run.inference.eng);
  double wbits = (q.weights == dtype::bf16 && (precision_of(run) == precision::fp32 || precision_of(run) == precision::tf32))
                     ? kFp32Bits : bits_per_element(q, h);
  // transformers' int4 GPTQ/AWQ kernels dequantise every weight to 16-bit before the matmul:
  // the pass costs what fp16 weights cost (Qwen2.5 speed benchmark: int4 no faster than bf16).
  if (kernel_for(run).weights_as_fp16) wbits = std::max(wbits, 8.0 * kUnquantizedBytes);
  const double other = static_cast<double>(P.total) - block_params;
  double other_bytes = std::max(kUnquantizedBytes, d.peak.act_bytes);
  if (eng.gguf_weights && run.inference.gguf) {  // llama.cpp: every tensor in its GGUF type
    wbits = gguf_bits_per_weight(*run.inference.gguf);
    other_bytes = wbits / kBitsPerByte;
  }
  s.weight_bytes = (active_block * wbits / kBitsPerByte + other * other_bytes) / (tp * pp);
  s.block_weights = active_block / (tp * pp);
  s.block_flop_per_seq = kFlopsPerWeight * active_block / (tp * pp);
  s.kv_bytes_per_token = kKeyAndValue * static_cast<double>(a.kv_dim()) * static_cast<double>(a.total_layers()) *
                         bytes_per_element(run.inference.kv_cache_dtype) / (tp * pp);
  const double head = a.head == head_kind::lm ? V * h : 0.0;
  s.active_matmul = a.is_moe() ? active_block + head : static_cast<double>(P.attention + P.mlp) + head;
  s.flop_per_seq = (kFlopsPerWeight * s.active_matmul + kDecodeAttentionFlopsPerContextQ * s.context *
                                                          static_cast<double>(a.q_dim()) *
                                                          static_cast<double>(a.total_layers())) / (tp * pp);
  return s;
}

// Seconds of one decode step for `batch` sequences: the slower of bytes over HBM and FLOPs
// at the best-shape rate (GEMV / skinny GEMM roofline), plus two TP all-reduces per layer;
// stages run in turn.
inline double decode_step_seconds(const architecture& a, const scenario& run, const device_rates& d,
                                  const decode_shape& s, double batch, const efficiency_params& e) {
  const int tp = run.parallel.tp_size(), pp = run.parallel.pp;
  const engine_profile& eng = profile_of(run.inference.eng);
  const double rate = d.peak.gemm * d.ceiling * e.matmul_scale;
  const inference_kernel k = kernel_for(run);
  // W8A8: the block matmuls at the 8-bit tensor-core rate, attention and the head at 16-bit.
  const double block_rate = k.w8a8 ? in_flop_per_s(k.matmul_peak) * d.ceiling * e.matmul_scale : rate;
  double weight_read = s.weight_bytes;
  // bitsandbytes 4-bit above one token: write a bf16 copy of every block weight and read it
  // in the GEMM (bitsandbytes functional.py, matmul_4bit: gemv_4bit only for a single token).
  if (k.decode_dequantizes && batch > 1) weight_read += s.block_weights * 2.0 * kDequantWriteBytes;
  // llama.cpp -ngl: the layers left on the CPU read their weights and KV from host memory.
  double gpu_share = 1.0;
  if (eng.gguf_weights && run.inference.gpu_layers)
    gpu_share = std::clamp(static_cast<double>(*run.inference.gpu_layers) / static_cast<double>(a.total_layers()), 0.0, 1.0);
  const double step_bytes = weight_read + batch * s.context * s.kv_bytes_per_token * eng.kv_cache_passes;
  const double mem = step_bytes * gpu_share / d.bwe;
  const double cpu = step_bytes * (1.0 - gpu_share) / (kHostMemoryBytesPerSecond * e.bandwidth_fraction);
  const double cmp =
      batch * ((s.flop_per_seq - s.block_flop_per_seq) / rate + s.block_flop_per_seq / block_rate) * gpu_share;
  const double comm = static_cast<double>(a.total_layers()) / pp * kTpAllReducesPerBlock *
                      all_reduce_seconds(batch * static_cast<double>(a.hidden) * d.peak.act_bytes, tp,
                                         collective_link(run, tp, 1), e);
  // Each kernel of the step beyond its bytes: a CUDA graph node's GPU-side cost, or the engine's
  // one-by-one launch (engine.hpp); then the engine's per-step CPU work.
  const double kernels = eng.decode_kernels_per_layer + (eng.separate_bias_kernels && a.q_bias ? kBiasAddKernels : 0.0);
  const double per_kernel = decode_uses_cuda_graphs(run) ? kGraphKernelSeconds : eng.eager_kernel_seconds;
  const double launch = static_cast<double>(a.total_layers()) * gpu_share * kernels * per_kernel;
  // LLM.int8: each linear module's fixed per-step cost (kernels.hpp kLlmInt8SecondsPerLinear).
  double linears = 0;
  for (int i = 0; i < kLinearKinds; ++i) linears += static_cast<double>(linear_of(a, static_cast<linear_id>(i)).count);
  const double per_linear = static_cast<double>(a.total_layers()) / pp * linears * k.seconds_per_linear;
  return std::max(mem, cmp) * pp + cpu + comm * pp + launch + per_linear * pp + eng.step_overhead_seconds;
}

// Batch at which the weight matmuls turn compute-bound: B·2·N_active/rate = weight bytes /
// bandwidth (the roofline ridge point). Attention over the KV cache reads its own bytes per
// sequence and stays bandwidth-bound at any batch.
inline std::int64_t decode_compute_bound_batch(const scenario& run, const device_rates& d, const decode_shape& s,
                                               const efficiency_params& e) {
  const double rate = d.peak.gemm * d.ceiling * e.matmul_scale;
  const double per_seq_cmp = kFlopsPerWeight * s.active_matmul / (run.parallel.tp_size() * run.parallel.pp) / rate;
  return static_cast<std::int64_t>(std::ceil(s.weight_bytes / d.bwe / per_seq_cmp));
}

// Serving of one request batch.
struct serving_cost {
  prefill_cost prefill{};
  decode_shape decode{};
  double decode_step = 0;  // seconds per generated token (whole batch)
  std::int64_t compute_bound_batch = 0;
};

inline serving_cost serving_time(const architecture& a, const scenario& run, const device_rates& d,
                                 const parameter_breakdown& P, const efficiency_params& e) {
  serving_cost c;
  c.prefill = prefill_seconds(a, run, d, e);
  c.decode = decode_shape_of(a, run, d, P);
  c.decode_step = decode_step_seconds(a, run, d, c.decode, static_cast<double>(run.inference.batch), e);
  c.compute_bound_batch = decode_compute_bound_batch(run, d, c.decode, e);
  return c;
}

}  // namespace gpuplan::detail
