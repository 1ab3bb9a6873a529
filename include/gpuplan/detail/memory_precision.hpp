// detail/memory_precision.hpp — bytes per element of each persistent copy
// (weights, master, gradients, optimizer state) under a precision policy, and the
// optimizer state per trainable parameter. docs/memory-model.md § Weights,
// § Master weights, § Optimizer state.
#pragma once

#include <algorithm>

#include "gpuplan/detail/memory_constants.hpp"
#include "gpuplan/dtype.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/scenario.hpp"

namespace gpuplan::detail::mem {

// Precision policy: bytes per element of each persistent copy.
// Mixed precision after Micikevicius et al. 2018 and ZeRO (Rajbhandari et al.
// 2020, §3.1: 2Ψ fp16 params + 2Ψ fp16 grads + KΨ optimizer, K = 12 for Adam).
// bf16-pure (torchtune dtype=bf16, litgpt bf16-true): no master copy, optimizer
// moments in the parameter dtype (torch.optim creates state with zeros_like(p)).
struct precision_bytes {
  double act = 2;         // activations / compute dtype
  double weight = 2;      // persistent parameter copy used by forward/backward
  double master = 0;      // fp32 master copy of trainable parameters (0: none)
  double grad = 2;        // gradient in the compute dtype
  double state = 4;       // optimizer-moment element (full-precision optimizers)
  bool mixed = false;     // autocast-style mixed precision (norms/softmax in fp32)
  double fp8_copy = 0;    // extra per-linear-weight fp8 cast (Transformer Engine)
};

constexpr precision_bytes bytes_of(precision p) {
  switch (p) {
    case precision::fp32:
    case precision::tf32:  // tf32 is a matmul mode: tensors stay fp32
      return {.act = 4, .weight = 4, .master = 0, .grad = 4, .state = 4, .mixed = false, .fp8_copy = 0};
    case precision::fp16_mixed:
    case precision::bf16_mixed:
      return {.act = 2, .weight = 2, .master = 4, .grad = 2, .state = 4, .mixed = true, .fp8_copy = 0};
    case precision::bf16_pure:
      return {.act = 2, .weight = 2, .master = 0, .grad = 2, .state = 2, .mixed = false, .fp8_copy = 0};
    case precision::fp8_mixed:
      // Transformer Engine keeps bf16 weights plus an fp8 copy of each GEMM weight
      // (TE `fp8_weight` cache); activations stay bf16 in this model (conservative:
      // TE saves fp8 GEMM inputs, which would halve those terms).
      return {.act = 2, .weight = 2, .master = 4, .grad = 2, .state = 4, .mixed = true, .fp8_copy = 1};
  }
  return {};
}

// Paged optimizers (bitsandbytes) allocate CUDA managed memory: visible to
// nvidia-smi, not to torch.cuda.max_memory_allocated.
constexpr bool optimizer_is_paged(optimizer o) {
  return o == optimizer::paged_adamw_8bit || o == optimizer::paged_adamw_32bit;
}

// Optimizer state bytes per trainable parameter for element-wise optimizers,
// excluding the master copy; adafactor is factored (adafactor_state_elements)
// and returns 0 here.
constexpr double optimizer_bytes_per_param(optimizer o, double state_bytes) {
  switch (o) {
    case optimizer::adamw:
    case optimizer::adam: return 2 * state_bytes;                  // exp_avg + exp_avg_sq (torch.optim.AdamW)
    case optimizer::adamw_8bit:
    case optimizer::paged_adamw_8bit: return 2 * kBnb8bitMoment;   // two 8-bit blockwise moments
    case optimizer::paged_adamw_32bit: return 2 * kFp32Bytes;      // fp32 moments whatever the params
    case optimizer::sgd: return 0;
    case optimizer::sgd_momentum: return state_bytes;              // momentum_buffer
    case optimizer::lion: return state_bytes;                      // exp_avg only (Chen et al. 2023)
    case optimizer::adafactor: return 0;
  }
  return 0;
}

// Adafactor's factored second moment (Shazeer & Stern 2018; HF
// transformers.optimization.Adafactor: row + column vectors per >=2-D tensor,
// full exp_avg_sq for 1-D tensors, first moment off by default (beta1=None)).
// Returns state elements for the trainable set of a full fine-tune.
inline double adafactor_state_elements(const architecture& a) {
  const parameter_breakdown p = count_parameters(a);
  double factored = 0;     // sum of (rows + cols) over matrices
  double matrix_elems = 0; // elements covered by factoring
  auto blocks = [&](bool dec, double n) {
    for (int i = 0; i < kLinearKinds; ++i) {
      const linear_shape s = linear_of(a, static_cast<linear_id>(i), dec);
      if (s.count <= 0) continue;
      factored += n * static_cast<double>(s.count) * static_cast<double>(s.in + s.out);
      matrix_elems += n * static_cast<double>(s.count) * static_cast<double>(s.in) * static_cast<double>(s.out);
    }
  };
  blocks(false, static_cast<double>(a.layers));
  if (a.kind == model_kind::encoder_decoder) blocks(true, static_cast<double>(a.decoder_layers));
  const double h = static_cast<double>(a.hidden);
  if (!a.is_vit() && a.vocab > 0) { factored += static_cast<double>(a.vocab) + h; matrix_elems += static_cast<double>(a.vocab) * h; }
  if (a.head == head_kind::lm && !a.tied_embeddings) { factored += static_cast<double>(a.vocab) + h; matrix_elems += static_cast<double>(a.vocab) * h; }
  // Everything else (positions, norms, biases, pooler, relative tables) is taken
  // as full second moment: an upper bound for the small remainder.
  const double rest = std::max(0.0, static_cast<double>(p.total) - matrix_elems);
  return factored + rest;
}

}  // namespace gpuplan::detail::mem
