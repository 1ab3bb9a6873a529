// detail/memory_transients.hpp — phase 3 of the training memory model: the
// working sets that live only for part of a step — the loss, the ZeRO-3 gathered
// units and ZeRO-1/2 reduce bucket, the backward of one block, the optimizer's
// temporaries. docs/memory-model.md § Transient buffers.
#pragma once

#include <algorithm>

#include "gpuplan/detail/memory_activations.hpp"
#include "gpuplan/detail/memory_constants.hpp"
#include "gpuplan/detail/memory_facts.hpp"
#include "gpuplan/detail/memory_states.hpp"
#include "gpuplan/detail/memory_trainable.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/scenario.hpp"

namespace gpuplan::detail::mem {

// Bytes per GPU of the transient working sets of one stage.
struct transients {
  double loss_forward = 0;    // last stage: loss forward working set
  double loss_backward = 0;   // last stage: the loss's own backward working set (before the head's), at least the logits' gradient
  double head_backward = 0;   // last stage: what the head's backward reads, the logits' gradient (a fused
                              // head + loss: its backward working set)
  double collective = 0;      // ZeRO-3 gathered units in a block's forward or backward, or the ZeRO-1/2 reduce bucket
  double collective_at_loss = 0;  // the same at the loss, forward and its own backward
  double collective_at_head = 0;  // the same at the head's backward
  double reduce_backward = 0; // backward: the largest trainable module's unsharded gradient (ZeRO-3, no master)
  double backward_block = 0;  // gradient temporaries of the block being back-propagated
  double optimizer_step = 0;  // optimizer-step temporaries (none with optimizer_in_backward)
};

struct loss_working_set { double forward = 0, backward = 0; };

// Loss working set (LM head), bytes for forward and backward, VT = V/tp·T logits.
inline loss_working_set loss_bytes(const architecture& a, const scenario& r, const facts& f) {
  if (a.head != head_kind::lm || a.vocab <= 0) {
    // Classifier / pooler: fp32 logits of num_labels (at least 2) per sequence — negligible.
    const double logits = d(r.micro_batch) * d(std::max<std::int64_t>(a.num_labels, 2)) * kFp32Bytes;
    return {logits, logits};
  }
  const double e = f.pb.act;
  if (fused_linear_loss(r)) {  // no logits tensor
    const double per_token = f.T_loss * (e * d(a.hidden) + kFp32Bytes);
    return {per_token, per_token};
  }
  // Vocab-parallel cross-entropy splits the vocabulary over tp (Megatron-LM).
  const double VT = d(a.vocab) / f.tp * f.T_loss;
  // Eager cross-entropy (F.cross_entropy on logits.float()): forward holds the
  // e-logits, their fp32 copy and log_softmax's fp32 output; backward holds the
  // saved log-probs, nll_loss's dense fp32 grad and log_softmax's fp32 grad.
  const double eager_fwd = (e < kFp32Bytes ? e + 2 * kFp32Bytes : 2 * kFp32Bytes), eager_bwd = 3 * kFp32Bytes;
  // Compiled only when the framework's compile covers the loss (framework.hpp compile_fuses_loss).
  const bool fused = r.compile && profile_of(r.fw).compile_fuses_loss;
  // In-place cross-entropy (flash_attn/ops/triton/cross_entropy.py, inplace_backward): the
  // e-logits alone, their gradient written over them.
  if (r.inplace_loss) return {e * VT, e * VT};
  if (r.chunked_loss) {
    // torchtune CEWithChunkedOutputLoss: all e-logit chunks exist, each chunk is
    // upcast and reduced on its own; all chunk gradients exist before lm_head backward.
    const double k = memory_defaults::loss_chunks;
    return {e * VT + (fused ? 0 : eager_fwd - e) * VT / k, e * VT + (fused ? 0 : eager_bwd) * VT / k};
  }
  // Compiled (Inductor-fused) cross-entropy saves the e-logits and writes the
  // e-gradient into that saved buffer (AOTAutograd donated buffers, PyTorch >= 2.5).
  if (fused) return {e * VT, e * VT};
  return {eager_fwd * VT, eager_bwd * VT};
}

// Gradient temporaries of the block being back-propagated: the gradients of its
// largest intermediates (gated MLP: gate, up, product; plain: up, activation) and
// of the residual stream in and out (2h); eager attention adds the score gradients,
// fp32 d(softmax) + e d(scores) per head and key.
inline double backward_block_bytes(const architecture& a, const scenario& r, const facts& f) {
  const double h = d(a.hidden);
  const double fmax = a.is_moe() ? d(a.d_expert()) * d(a.experts_per_token) : d(a.ffn);
  // Fused LoRA kernels back-propagate SwiGLU in place: one MLP-wide gradient (framework.hpp
  // fused_lora_kernels); so does Liger's fused SwiGLU (ops/swiglu.py swiglu_backward writes the
  // gate's and up's gradients into their saved outputs; scenario fused_kernels).
  const bool in_place = uses_fused_lora(r) || (f.ctx.fused && a.mlp == mlp_kind::gated);
  const double mlp_grads = in_place ? 1 : a.mlp == mlp_kind::gated ? 3 : 2;
  // TiledMLP back-propagates one sequence shard of the MLP at a time (f.mlp_tile).
  double work = f.T * f.pb.act * (mlp_grads * fmax / f.tp * f.mlp_tile + 2 * h / f.seq_div);
  if (r.attn == attention::eager) work += f.T * f.s / f.cp * d(a.heads) * (kFp32Bytes + f.pb.act) / f.tp;
  return work;
}

// A quantized base's linear is dequantized to 16 bits for each matmul, forward and backward:
// bitsandbytes MatMul4Bit holds one copy of the weight (autograd/_functions.py
// `F.dequantize_4bit(B, quant_state).to(A.dtype)`); torchtune's torchao NF4 linears without
// compile dequantize eagerly through int64 code indices, lookups and scaled copies
// (torchao/dtypes/nf4tensor.py get_original_weight), about 14 B per element at their peak.
inline constexpr double kTorchaoEagerDequantBytes = 14;
inline double dequantized_weight_bytes(const scenario& r, const facts& f, const stage_params& sp) {
  if (r.work != workload::train || !is_quantized(f.q.weights)) return 0;
  const bool torchao_eager = r.fw == framework::torchtune && !r.compile;
  return (torchao_eager ? kTorchaoEagerDequantBytes : f.pb.act) * sp.largest_block_matrix;
}

// ZeRO-3 / FSDP gathered parameters, bytes: in a block's forward or backward, at the loss, at
// the head's backward.
struct zero3_gathered { double block = 0, loss = 0, head = 0; };

// ZeRO-3 / FSDP prefetch: the unit in use gathered + the next one prefetched. FSDP keeps its
// root unit (what no block holds: embeddings, final norm, head) gathered from forward to the
// end of backward beside them (framework.hpp root_unit_stays_gathered); DeepSpeed gathers
// module by module, so a largest module not already in the model states joins one block.
// At the loss FSDP holds its root unit alone: the last block is resharded after its forward
// (FULL_SHARD), forward_prefetch is off by default, and the backward prefetch of the last block
// starts in the root's pre-backward hook, registered on its outputs, so once the logits'
// gradient is complete: the head's backward holds the root and that one block
// (torch/distributed/fsdp/_runtime_utils.py _pre_backward_hook, _prefetch_handle).
inline zero3_gathered zero3_gather_bytes(const scenario& r, const facts& f, const stage_params& sp, const stage_trainables& t) {
  if (profile_of(r.fw).root_unit_stays_gathered)
    return {(sp.root + kGatheredUnitsInFlight * sp.largest_block) * f.pb.weight, sp.root * f.pb.weight,
            (sp.root + sp.largest_block) * f.pb.weight};
  const bool in_states = zero3_states_hold_gathered(r, f);
  const double extra_big = in_states && sp.largest <= t.largest ? 0.0 : sp.largest * f.pb.weight;
  const double all = std::max(kGatheredUnitsInFlight * sp.largest_block * f.pb.weight, extra_big + sp.largest_block * f.pb.weight);
  return {all, all, all};
}

// Phase 3.
inline transients step_transients(const architecture& a, const scenario& r, const facts& f, const stage_params& sp,
                                  const stage_trainables& t) {
  const precision_bytes& pb = f.pb;
  const int zero = r.parallel.zero;
  transients x;
  if (sp.last) {
    const loss_working_set loss = loss_bytes(a, r, f);
    // lm_head's backward reads the e-gradient of the logits (none when head and loss are fused).
    const bool logits = a.head == head_kind::lm && !fused_linear_loss(r);
    const double dlogits = logits ? pb.act * d(a.vocab) / f.tp * f.T_loss : 0;
    x.loss_forward = loss.forward;
    x.loss_backward = std::max(loss.backward, dlogits);
    x.head_backward = logits ? dlogits : loss.backward;
  }
  if (zero >= 3) {
    const zero3_gathered g = zero3_gather_bytes(r, f, sp, t);
    x.collective = g.block;
    x.collective_at_loss = sp.last ? g.loss : g.block;  // a stage without the loss ends its forward in a block
    x.collective_at_head = sp.last ? g.head : g.block;
    if (!zero3_states_hold_gathered(r, f) && !r.optimizer_in_backward) x.reduce_backward = t.largest * pb.grad;
  }
  // DeepSpeed ZeRO-1/2 reduce bucket (reduce_bucket_size).
  // With optimizer offload every gradient passes through it, even on one GPU.
  const bool reduces = r.num_gpus > 1 || r.parallel.offload_optimizer != offload::none;
  if ((zero == 1 || zero == 2) && reduces)
    x.collective = x.collective_at_loss = x.collective_at_head = std::min(t.params, memory_defaults::zero_reduce_bucket_elems) * pb.grad;
  x.backward_block = backward_block_bytes(a, r, f) + dequantized_weight_bytes(r, f, sp);
  // DoRA's per-layer weight-norm working set (peft.hpp) lives during a block's forward;
  // it reaches a peak moment only when the block's forward is recomputed in backward.
  if (r.ckpt != checkpointing::none) x.backward_block += std::max(f.lora_enc.peft_transient, f.lora_dec.peft_transient);
  // Per-tensor optimizer kernels need fp32 temporaries of the largest tensor; SGD none.
  const double temps = r.opt == optimizer::adafactor ? kAdafactorStepTemporaries : kAdamStepTemporaries;
  // An optimizer on the host (CPU Adam, FSDP CPU offload) allocates none of them on the GPU.
  if (r.opt != optimizer::sgd && !r.optimizer_in_backward && !optimizer_on_host(r)) x.optimizer_step = temps * t.largest * kFp32Bytes;
  return x;
}

}  // namespace gpuplan::detail::mem
