// detail/memory_states.hpp — phase 1 of the training memory model: the model
// states resident on one stage's GPU for the whole step — weights, master
// weights, gradients, optimizer state — after ZeRO partitioning, paging and
// offload. docs/memory-model.md § Weights, § Master weights, § Gradients,
// § Optimizer state.
#pragma once

#include <algorithm>

#include "gpuplan/detail/memory_constants.hpp"
#include "gpuplan/detail/memory_facts.hpp"
#include "gpuplan/detail/memory_trainable.hpp"
#include "gpuplan/dtype.hpp"
#include "gpuplan/framework.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/peft.hpp"

namespace gpuplan::detail::mem {

// Bytes per GPU (host: per node) of the persistent model states of one stage.
struct model_states {
  double weights = 0;    // base (quantized) + adapters + fp8 copies; ZeRO-3: shard + DeepSpeed's gathered module
  double master = 0;     // fp32 master copy; 0 under ZeRO >= 1, where its partition is in `optimizer`
  double gradients = 0;  // every gradient after backward (compute dtype + ZeRO's fp32 partition)
  double optimizer = 0;  // optimizer state inside the caching allocator (ZeRO >= 1: + master partition)
  double paged = 0;      // optimizer state in CUDA managed memory, outside the allocator
  double host = 0;       // offloaded parameters and optimizer state, per node
};

// Base weights of the stage: block linears quantized (or in the weight dtype),
// everything else in the weight dtype (bitsandbytes / torchao leave them unquantized).
inline double base_weight_bytes(const architecture& a, const facts& f, const stage_params& sp) {
  const double lin_b = f.quantized ? bits_per_element(f.q, d(a.hidden)) / kBitsPerByte : f.pb.weight;
  return sp.linear * lin_b + sp.other * f.pb.weight;
}

// Training a bitsandbytes-quantized base under a framework that prepares it with
// PEFT's prepare_model_for_kbit_training: every parameter bitsandbytes did not
// quantise (embeddings, LM head, norms, biases) is cast to fp32
// (peft/utils/other.py: "cast all non INT8 parameters to fp32").
inline bool kbit_prepared(const scenario& r, const facts& f) {
  return r.work == workload::train && is_bitsandbytes(f.q.weights) && profile_of(r.fw).kbit_non_quantized_fp32;
}

inline double training_base_weight_bytes(const architecture& a, const scenario& r, const facts& f, const stage_params& sp) {
  if (!kbit_prepared(r, f)) return base_weight_bytes(a, f, sp);
  return sp.linear * bits_per_element(f.q, d(a.hidden)) / kBitsPerByte + sp.other * kFp32Bytes;
}

// FSDP mixed precision keeps the sharded parameters in fp32 and they are the
// optimizer's master copy (torch.distributed.fsdp MixedPrecision: "the sharded
// parameters are kept in full precision"); DeepSpeed keeps a 16-bit shard beside
// its fp32 partition.
inline bool sharded_master_is_weight(const scenario& r, const facts& f) {
  return r.parallel.zero >= 3 && f.pb.master > 0 && profile_of(r.fw).sharded_fp32_is_master;
}

// ZeRO-3 counts the largest trainable module's gathered parameters and unsharded
// gradient as model states when a master copy exists: DeepSpeed's mixed-precision
// engine (estimate_zero3_model_states_mem_needs: 4·largest_layer = fp16 params +
// fp16 grads of the largest layer). Otherwise (fp32, bf16-pure: FSDP-style) the
// gathered module is a transient (step_transients).
inline bool zero3_states_hold_gathered(const scenario& r, const facts& f) {
  return r.parallel.zero >= 3 && f.pb.master > 0 && !profile_of(r.fw).sharded_fp32_is_master;
}

struct weight_states { double gpu = 0, host = 0; };

// The statistics of a bitsandbytes 4-bit base on the stage: the bits per element beyond the
// four data bits (dtype.hpp bits_per_element). torchtune's torchao NF4 tensors shard theirs.
inline double bnb_4bit_statistics_bytes(const architecture& a, const scenario& r, const facts& f, const stage_params& sp) {
  if ((f.q.weights != dtype::nf4 && f.q.weights != dtype::fp4) || r.fw == framework::torchtune) return 0;
  return sp.linear * (bits_per_element(f.q, d(a.hidden)) - 4) / kBitsPerByte;
}

// Weights resident on the GPU: base + fp8 GEMM copies + adapters; ZeRO-3 / FSDP
// full shard keeps 1/N (parameter offload moves it to the host) plus, with a master
// copy, the gathered largest trainable module.
inline weight_states resident_weights(const architecture& a, const scenario& r, const facts& f, const stage_params& sp,
                                      const stage_trainables& t) {
  double W = training_base_weight_bytes(a, r, f, sp) + sp.linear * f.pb.fp8_copy;
  if (is_peft(r.meth)) W += t.params * f.pb.weight;
  W += peft_frozen_buffer_bytes(a, r);  // VeRA's shared frozen projections (peft.hpp)
  weight_states w;
  if (r.parallel.zero >= 3) {
    // bitsandbytes 4-bit statistics (quant_state: absmax, nested absmax) are not parameters:
    // FSDP neither shards nor offloads them, every rank keeps them whole (bitsandbytes
    // nn/modules.py fix_4bit_weight_quant_state_from_module: "the quant state got lost ...
    // This happens for example for fsdp").
    const double stats = bnb_4bit_statistics_bytes(a, r, f, sp);
    W = (W - stats) / f.shard;
    // FSDP: the trainable shard is the fp32 master (counted there); frozen parameters stay as stored.
    if (sharded_master_is_weight(r, f)) W = std::max(0.0, W - t.params * f.pb.weight / f.shard);
    if (r.parallel.offload_params != offload::none) { w.host = W * gpus_on_node(r); W = 0; }
    W += stats;
    if (zero3_states_hold_gathered(r, f)) W += t.largest * f.pb.weight;
  }
  w.gpu = W;
  return w;
}

// Optimizer state of the stage's trainable set before ZeRO partitioning, excluding
// the master copy. Adafactor: factored state of the adapters (LoRA) or the full
// model's factored state in proportion to the stage's trainable share.
inline double optimizer_state_bytes(const architecture& a, const scenario& r, const facts& f, const stage_params& sp,
                                    const stage_trainables& t) {
  if (r.opt != optimizer::adafactor) return t.params * optimizer_bytes_per_param(r.opt, f.pb.state);
  const double elems = is_peft(r.meth) ? (d(sp.enc_blocks) * f.lora_enc.adafactor + d(sp.dec_blocks) * f.lora_dec.adafactor) / f.tp
                                  : adafactor_state_elements(a) * (t.params / std::max(1.0, d(f.p.total)));
  return elems * f.pb.state;
}

// Phase 1. ZeRO-1/2 (DeepSpeed estimate_zero2_model_states_mem_needs: 4Ψ + 16Ψ/N):
// full compute-dtype params and gradients, plus the fp32 gradient partition, master
// partition and moments over N. ZeRO-3 (estimate_zero3_model_states_mem_needs:
// 4·largest_layer + 18Ψ/N): params shard + the gathered largest trainable module,
// its unsharded gradient, and the fp32 gradient shard (with a master copy) or the
// compute-dtype gradient shard (FSDP's sharded .grad). Optimizer offload
// (ZeRO-Offload, Ren et al. 2021): master, moments and fp32 gradients on the host.
inline model_states resident_states(const architecture& a, const scenario& r, const facts& f, const stage_params& sp,
                                    const stage_trainables& t) {
  const precision_bytes& pb = f.pb;
  const double N = f.shard;
  const int zero = r.parallel.zero;
  const weight_states w = resident_weights(a, r, f, sp, t);
  model_states s;
  s.weights = w.gpu;
  s.host = w.host;
  double M = t.params * pb.master;
  double G = t.params * pb.grad;
  double G_fp32_part = 0;
  if (zero >= 1) {
    if (pb.master > 0) G_fp32_part = t.params * kFp32Bytes / N;
    if (zero >= 3) G = zero3_states_hold_gathered(r, f) ? t.largest * pb.grad : t.params * pb.grad / N;
    // FSDP upcasts the reduce-scattered gradient shard to fp32 (keep_low_precision_grads=False):
    // the fp32 shard is the only persistent gradient: 4 + 4 + 8 = 16 B/param / N with the master.
    if (sharded_master_is_weight(r, f)) G = 0;
  }
  if (r.optimizer_in_backward) G = t.largest * pb.grad;  // step per tensor in the gradient hook
  double O = optimizer_state_bytes(a, r, f, sp, t);
  if (zero >= 1) { O /= N; M /= N; O += M; M = 0; }  // the master partition belongs to the ZeRO optimizer
  double paged = optimizer_is_paged(r.opt) ? O : 0;
  if (optimizer_on_host(r)) {
    s.host += (O + G_fp32_part) * gpus_on_node(r);
    O = 0; paged = 0; G_fp32_part = 0;
    // ZeRO-3 / FSDP offload: the reduce-scattered gradient shard is copied to the host
    // as soon as it exists (FSDP _flat_param.py _cpu_grad / FSDP2 CPUOffloadPolicy;
    // DeepSpeed stage3.py partition_grads into the CPU fp32 partition;
    // estimate_zero3_model_states_mem_needs with cpu_offload: no 2Ψ/N gradient term).
    // The unsharded gradient in flight is the backward transient (step_transients).
    if (zero >= 3 && !zero3_states_hold_gathered(r, f)) { s.host += G * gpus_on_node(r); G = 0; }
    // ZeRO-1/2 offload keeps only the 16-bit parameters on the GPU: each gradient is
    // reduced through the IPG bucket into pinned host buffers (DeepSpeed
    // stage_1_and_2.py async_accumulate_grad_in_cpu_via_gpu; estimate_zero2_model_states_mem_needs
    // with cpu_offload: gpu = 2Ψ).
    if (zero <= 2) G = 0;
  }
  s.master = M;
  s.gradients = G + G_fp32_part;
  s.optimizer = O - paged;
  s.paged = paged;
  return s;
}

}  // namespace gpuplan::detail::mem
