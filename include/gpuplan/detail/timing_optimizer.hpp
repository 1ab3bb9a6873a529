// detail/timing_optimizer.hpp — optimizer phase of the time model: the optimizer step as
// bytes over HBM, ZeRO-Offload (CPU Adam, PCIe, NVMe), parameter offload and the PCIe
// traffic of paged bitsandbytes optimizers. Sources: docs/time-model.md, "Optimizer", "Offload".
#pragma once

#include <algorithm>
#include <cstdint>

#include "gpuplan/detail/timing_comm.hpp"
#include "gpuplan/detail/timing_model.hpp"
#include "gpuplan/detail/timing_params.hpp"
#include "gpuplan/flops.hpp"
#include "gpuplan/framework.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan::detail {

// HF transformers Adafactor: ~12 unfused fp32 element-wise kernels over each parameter-sized
// tensor (update², row/col means, rsqrt, RMS clip, ...), each reading and writing 4 B.
inline constexpr double kAdafactorKernels = 12.0;
inline constexpr double kAdafactorBytesPerParam = kAdafactorKernels * 2.0 * 4.0;
// ZeRO-Infinity NVMe optimizer offload: fp32 master weights + two fp32 Adam moments per parameter.
inline constexpr double kNvmeStateBytesPerParam = 12.0;
// Offloaded or paged state moves both ways each step (read in, write back).
inline constexpr double kInAndOut = 2.0;
// ZeRO-Offload parameter offload streams the parameters in for forward and again for backward.
inline constexpr double kParameterStreamsPerMicrobatch = 2.0;
// bitsandbytes paged AdamW state per parameter: two moments, 1 B each (8-bit) or 4 B each (32-bit).
inline constexpr double kPaged8bitStateBytes = 2.0;
inline constexpr double kPaged32bitStateBytes = 8.0;

// Element accesses (reads + writes) one optimizer step makes per trainable parameter, by tensor:
// the weight (master copy), its gradient, and state-sized tensors (moments and temporaries).
struct optimizer_accesses {
  double weight = 0, grad = 0, state = 0;
};

// torch foreach kernels, one element-wise pass per line of the algorithm:
// AdamW (_multi_tensor_adam, torch/optim/adam.py): _foreach_mul_(params) for the decoupled weight
// decay (w 2), _foreach_lerp_(exp_avgs, grads) (m 2, g 1), _foreach_mul_(exp_avg_sqs) and
// _foreach_addcmul_(exp_avg_sqs, grads, grads) (v 4, g 1), _foreach_sqrt into a temporary and its
// _foreach_div_ / _foreach_add_ (v 1, tmp 5), _foreach_addcdiv_(params, exp_avgs, tmp) (w 2, m 1, tmp 1).
inline constexpr optimizer_accesses kForeachAdamW{.weight = 4, .grad = 2, .state = 14};
// Adam without weight decay (torch's default weight_decay=0): no _foreach_mul_(params).
inline constexpr optimizer_accesses kForeachAdam{.weight = 2, .grad = 2, .state = 14};
// SGD (_multi_tensor_sgd, torch/optim/sgd.py) with the recipes' weight decay: grads + wd·params into
// a new tensor (w 1, g 2), _foreach_mul_(bufs) and _foreach_add_(bufs, grads) (buf 4, g 1),
// _foreach_add_(params, bufs) (w 2, buf 1). Lion (one moment, a sign instead of a division) as SGD.
inline constexpr optimizer_accesses kForeachSgdMomentum{.weight = 3, .grad = 3, .state = 5};
inline constexpr optimizer_accesses kForeachSgd{.weight = 3, .grad = 3, .state = 0};
// One fused kernel (torch fused=True _fused_adamw_, apex / DeepSpeed FusedAdam multi_tensor_adam,
// bitsandbytes' 8-bit and 32-bit kernels): each tensor read once and written once.
inline constexpr optimizer_accesses kFusedAdam{.weight = 2, .grad = 1, .state = 4};
inline constexpr optimizer_accesses kFusedSgdMomentum{.weight = 2, .grad = 1, .state = 2};
inline constexpr optimizer_accesses kFusedSgd{.weight = 2, .grad = 1, .state = 0};
// Gradient-norm clipping before the step (torch.nn.utils.clip_grad_norm_: _foreach_norm reads each
// gradient, _foreach_mul_ scales it in place; Megatron's multi_tensor_l2norm + multi_tensor_scale
// the same): 3 accesses. The recipes clip (HF max_grad_norm=1.0, Megatron --clip-grad 1.0).
inline constexpr double kClipGradAccesses = 3.0;
// Bytes of the 16-bit model copy written after the step under mixed precision (DeepSpeed and
// Megatron keep one beside the fp32 master).
inline constexpr double kHalfCopyBytes = 2.0;

// Bytes the optimizer step moves per trainable parameter over HBM (reads + writes): each
// tensor's accesses (above) times its bytes, plus clipping and the 16-bit copy. The optimizers
// that bring their own kernels (framework.hpp optimizer_brings_own_kernels): bitsandbytes' are
// one fused kernel; HF Adafactor has its own count.
inline double optimizer_bytes_per_param(const scenario& run) {
  const bool pure = precision_of(run) == precision::bf16_pure;
  const bool eight_bit = run.opt == optimizer::adamw_8bit || run.opt == optimizer::paged_adamw_8bit;
  const double wb = pure ? 2.0 : 4.0;                        // master weight and gradient: 16-bit only under bf16-pure
  const double sb = eight_bit ? 1.0 : (pure ? 2.0 : 4.0);  // one element of a moment / temporary
  const bool fused = optimizer_kernel_of(run) == optimizer_kernel::fused;
  optimizer_accesses a;
  switch (run.opt) {
    case optimizer::adamw: a = fused ? kFusedAdam : kForeachAdamW; break;
    case optimizer::adam: a = fused ? kFusedAdam : kForeachAdam; break;
    case optimizer::paged_adamw_32bit: case optimizer::adamw_8bit: case optimizer::paged_adamw_8bit: a = kFusedAdam; break;
    case optimizer::sgd: a = fused ? kFusedSgd : kForeachSgd; break;
    case optimizer::sgd_momentum: case optimizer::lion: a = fused ? kFusedSgdMomentum : kForeachSgdMomentum; break;
    case optimizer::adafactor: return kAdafactorBytesPerParam;
  }
  const bool mixed = precision_of(run) == precision::fp16_mixed || precision_of(run) == precision::bf16_mixed || precision_of(run) == precision::fp8_mixed;
  return a.weight * wb + (a.grad + kClipGradAccesses) * wb + a.state * sb + (mixed ? kHalfCopyBytes : 0.0);
}

// ---- paged optimizers: what stays resident on the GPU -------------------------
// Activation bytes per token and hidden unit of one layer in 16-bit without the s² term:
// 34·s·b·h bytes = 17·T·h elements (Korthikanti et al. 2022, eq. 2, flash / no dropout masks).
inline constexpr double kActivationElemsPerTokenHidden = 17.0;
// Eager attention's s² term: 5·a·s²·b bytes in 16-bit = 2.5·heads·T·s elements (Korthikanti 2022 eq. 2).
inline constexpr double kEagerScoreElemsPerHeadTokenSeq = 2.5;
// fp32 logits and their fp32 gradient: 8 B per logit (HF causal-LM loss upcasts the logits).
inline constexpr double kFp32LogitsAndGradBytes = 8.0;
// fp32 master copy of each trainable parameter under mixed precision (Micikevicius et al. 2018).
inline constexpr double kMasterWeightBytes = 4.0;
// The CUDA context, rounded to 1 GiB (memory.hpp models it in detail).
inline constexpr double kResidentContextBytes = kGiB;

// Bytes that stay on one GPU besides the optimizer state, for paged optimizers (bitsandbytes
// pages their state to host memory when the device is full). A coarse stand-in for the memory
// model (memory.hpp): weights (QLoRA base as stored), fp32 master copies under mixed precision,
// gradients, activations (Korthikanti 2022 eq. 2 per layer; T·h under full recompute, plus one
// layer recomputed / in flight), fp32 logits and their gradient, and the context. Whole model:
// the caller divides by tp·pp.
inline double paged_optimizer_resident_bytes(const architecture& a, const scenario& run, std::int64_t params,
                                             std::int64_t trainable, double act_bytes) {
  const double pb = precision_of(run) == precision::fp32 || precision_of(run) == precision::tf32 ? 4.0 : 2.0;
  const double wq = run.meth == method::qlora ? bits_per_element(base_quantization(run)) / kBitsPerByte : pb;
  double w = static_cast<double>(params - trainable) * wq + static_cast<double>(trainable) * pb;
  if (precision_of(run) == precision::fp16_mixed || precision_of(run) == precision::bf16_mixed)
    w += kMasterWeightBytes * static_cast<double>(trainable);
  const double grads = run.optimizer_in_backward ? 0.0 : static_cast<double>(trainable) * pb;
  const double T = static_cast<double>(run.micro_batch * effective_seq(a, run.seq_len));
  const double L = static_cast<double>(a.total_layers());
  const double h = static_cast<double>(a.hidden);
  const double layer_act = kActivationElemsPerTokenHidden * T * h * act_bytes;
  double per_layer = run.ckpt == checkpointing::full ? T * h * act_bytes : layer_act;
  if (run.attn == attention::eager && run.ckpt != checkpointing::full)
    per_layer += kEagerScoreElemsPerHeadTokenSeq * static_cast<double>(a.heads) * T * static_cast<double>(run.seq_len) *
                 act_bytes;
  double act = L * per_layer + layer_act;
  if (a.head == head_kind::lm) act += T * static_cast<double>(a.vocab) * kFp32LogitsAndGradBytes;
  return w + grads + act + kResidentContextBytes;
}

// Bytes per second one GPU copies to or from host memory: its PCIe link per direction at the
// achieved fraction (the offload model's rate; RL's state copies use it too, rl_estimate.hpp).
inline double host_copy_rate(const gpu_spec& g, const efficiency_params& e) {
  return in_byte_per_s(pcie_per_direction(g.pcie_gen, g.pcie_lanes)) * e.pcie_fraction;
}

// Seconds per step of paged optimizer state over PCIe: what does not fit next to the resident
// tensors pages in and out every step (bitsandbytes paged optimizers use CUDA managed memory).
inline double paged_optimizer_seconds(const architecture& a, const scenario& run, const stage_parameters& p,
                                      double opt_params, double act_bytes, double pcie) {
  const double state = opt_params * (run.opt == optimizer::paged_adamw_8bit ? kPaged8bitStateBytes : kPaged32bitStateBytes);
  const gpu_spec& g = run.gpu;
  const double cap = in_bytes(g.usable_memory) > 0 ? in_bytes(g.usable_memory) : in_bytes(g.memory);
  const double resident = paged_optimizer_resident_bytes(a, run, p.total, p.trainable, act_bytes);
  const double free = cap - resident / (run.parallel.tp_size() * run.parallel.pp * 1.0);
  const double paged = std::clamp(state - std::max(0.0, free), 0.0, state);
  return kInAndOut * paged / pcie;
}

// Seconds of one step's optimizer update and of its host/NVMe traffic.
struct optimizer_cost {
  double optimizer = 0;  // the update (GPU kernels, or CPU Adam under offload)
  double offload = 0;    // PCIe / NVMe transfers
};

// The update covers the parameters this GPU owns (÷dp under ZeRO ≥ 1). On the GPU: traffic
// per parameter over HBM (optimizer_bytes_per_param). ZeRO-Offload (Ren et al.
// 2021): gradients to the host, CPU Adam, updated 16-bit parameters back; NVMe adds the state
// in and out. Parameter offload streams the parameters in for each micro-batch.
inline optimizer_cost optimizer_and_offload(const architecture& a, const scenario& run, const device_rates& d,
                                            const stage_parameters& p, const efficiency_params& e) {
  optimizer_cost o;
  const int dp = std::max(1, run.dp());
  const double shard = run.parallel.zero >= 1 ? static_cast<double>(dp) : 1.0;
  const double opt_params = p.trainable_params / shard;
  const double wcomm = gathered_weight_bytes(run), gcomm = reduced_gradient_bytes(run);
  const double pcie = host_copy_rate(run.gpu, e);
  const double gpus_on_node = std::min<double>(run.num_gpus, std::max(1, run.cluster.gpus_per_node));
  // FSDP CPUOffload(offload_params=True) also runs the step on the CPU (framework.hpp
  // param_offload_moves_optimizer): gradients go down; the parameters already live there.
  const bool fsdp_style = run.parallel.offload_params != offload::none && profile_of(run.fw).param_offload_moves_optimizer;
  if (optimizer_on_host(run)) {
    o.offload += opt_params * (gcomm + (fsdp_style ? 0.0 : wcomm)) / pcie;
    o.optimizer = opt_params * gpus_on_node / e.cpu_adam_params_per_s;
    if (run.parallel.offload_optimizer == offload::nvme)
      o.offload += kInAndOut * opt_params * gpus_on_node * kNvmeStateBytesPerParam / e.nvme_bytes_per_s;
  } else {
    o.optimizer = opt_params * optimizer_bytes_per_param(run) / d.bwe;
  }
  if (run.parallel.offload_params != offload::none)
    o.offload += static_cast<double>(run.grad_accum) * kParameterStreamsPerMicrobatch * (p.params / shard) * wcomm / pcie;
  if (run.opt == optimizer::paged_adamw_8bit || run.opt == optimizer::paged_adamw_32bit)
    o.offload += paged_optimizer_seconds(a, run, p, opt_params, d.peak.act_bytes, pcie);
  return o;
}

}  // namespace gpuplan::detail
