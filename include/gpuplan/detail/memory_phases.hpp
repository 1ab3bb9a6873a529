// detail/memory_phases.hpp — phase 4 of the training memory model: the live
// bytes at five moments of a step, and the peak as their maximum (not a sum of
// maxima). docs/memory-model.md § Phases.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "gpuplan/detail/memory_activations.hpp"
#include "gpuplan/detail/memory_facts.hpp"
#include "gpuplan/detail/memory_states.hpp"
#include "gpuplan/detail/memory_transients.hpp"
#include "gpuplan/detail/memory_trainable.hpp"
#include "gpuplan/profile.hpp"
#include "gpuplan/scenario.hpp"

namespace gpuplan::detail::mem {

// The moments of a training step, in the order of memory_breakdown::phase.
enum class step_phase : std::uint8_t { forward_loss, loss_backward, backward_start, backward_end, optimizer_step };
inline constexpr int kStepPhases = 5;

// Live bytes per GPU at one moment.
struct phase_terms {
  double weights = 0, master = 0, grads = 0, optimizer = 0, acts = 0, transient = 0;
  [[nodiscard]] double total() const { return weights + master + grads + optimizer + acts + transient; }
};

// Gradient bytes alive at each moment.
struct gradient_schedule {
  double persistent = 0;  // live through the forward (preallocated buffers), else 0
  double head = 0;        // after the loss backward: the head's gradient (the whole per-tensor one in backward)
  double all = 0;         // at the end of backward
  double at_step = 0;     // during the optimizer step (0 when the step runs in backward)
};

// Gradients persist through the forward with grad_accum > 1, keep_gradients
// (zero_grad(set_to_none=False), PyTorch 1.x's default: torch/optim/optimizer.py), or buffers
// allocated once: more than one GPU or ZeRO (DDP buckets, Megatron's contiguous grad buffer,
// DeepSpeed IPG and partition buffers), not PyTorch FSDP (framework.hpp
// gradients_allocated_in_backward); otherwise they appear during backward
// (zero_grad(set_to_none=True), PyTorch 2.x). optimizer_in_backward
// (register_post_accumulate_grad_hook) keeps one tensor's.
inline gradient_schedule gradients_by_phase(const scenario& r, const facts& f, const stage_trainables& t, const model_states& s) {
  const bool in_backward = r.optimizer_in_backward;
  const bool buffers = (r.num_gpus > 1 || r.parallel.zero > 0) && !profile_of(r.fw).gradients_allocated_in_backward;
  const bool prealloc = !in_backward && (r.grad_accum > 1 || r.keep_gradients || buffers);
  gradient_schedule g;
  g.all = s.gradients;
  g.persistent = prealloc ? s.gradients : 0;
  g.head = in_backward ? s.gradients : std::min(s.gradients, t.head * f.pb.grad);
  g.at_step = in_backward ? 0.0 : s.gradients;
  return g;
}

// The five moments: forward + loss; loss backward, the larger of the loss's own backward and
// the head's (the head's backward needs the logits' whole gradient, so its weight gradient, its
// reduction and FSDP's prefetch of the last block come after the loss's working set is freed); backward
// start (one block recomputed, its gradient temporaries); backward end (all gradients, the first
// block's kept activations per in-flight micro-batch plus that block recomputed); optimizer step
// (no activations).
inline std::array<phase_terms, kStepPhases> step_phases(const model_states& s, const activation_plan& p, const transients& x,
                                                        const gradient_schedule& g) {
  const double W = s.weights, M = s.master, O = s.optimizer;
  const double first_block = std::min(p.stored, p.in_flight * p.kept_per_block) + p.recomputed;
  std::array<phase_terms, kStepPhases> ph;
  ph[0] = {W, M, g.persistent, O, p.stored, x.loss_forward + x.collective_at_loss};
  const phase_terms own{W, M, g.persistent, O, p.stored, x.loss_backward + x.collective_at_loss};
  const phase_terms head{W, M, g.persistent > 0 ? g.persistent : g.head, O, p.stored,
                         x.head_backward + x.collective_at_head + x.reduce_backward};
  ph[1] = own.total() > head.total() ? own : head;
  ph[2] = {W, M, std::max(g.persistent, g.head), O, p.stored + p.recomputed, x.backward_block + x.collective + x.reduce_backward};
  ph[3] = {W, M, g.all, O, first_block, x.backward_block + x.collective + x.reduce_backward};
  ph[4] = {W, M, g.at_step, O, 0.0, x.optimizer_step};
  return ph;
}

// A calibrated run's scales (profile.hpp): model states and working memory (saved
// activations, transients) each by their own factor; 1 and 1 by default.
inline void scale(phase_terms& t, const memory_params& mp) {
  t.weights *= mp.states_scale;
  t.master *= mp.states_scale;
  t.grads *= mp.states_scale;
  t.optimizer *= mp.states_scale;
  t.acts *= mp.activation_scale;
  t.transient *= mp.activation_scale;
}

struct step_peak {
  step_phase phase = step_phase::forward_loss;
  phase_terms terms;
};

// The peak is the moment with the largest total (the first one on a tie).
inline step_peak peak_over_phases(const std::array<phase_terms, kStepPhases>& ph) {
  int best = 0;
  for (int i = 1; i < kStepPhases; ++i)
    if (ph[static_cast<std::size_t>(i)].total() > ph[static_cast<std::size_t>(best)].total()) best = i;
  return {static_cast<step_phase>(best), ph[static_cast<std::size_t>(best)]};
}

}  // namespace gpuplan::detail::mem
