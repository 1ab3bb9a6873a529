// plan/layout.hpp — a parallel layout: the point of the search space that
// search() ranks and recommend() reports, and how it is written into a scenario.
#pragma once

#include <cstdint>

#include "gpuplan/scenario.hpp"

namespace gpuplan {

struct layout {
  int gpus = 1;
  int tp = 1;
  int pp = 1;
  int virtual_stages = 1;
  bool sp = false;
  checkpointing ckpt = checkpointing::none;
  int zero = 0;
  offload offload_optimizer = offload::none;
  offload offload_params = offload::none;
  std::int64_t micro_batch = 1;
  std::int64_t grad_accum = 1;

  [[nodiscard]] constexpr int dp() const noexcept { return gpus / (tp * pp); }
  friend bool operator==(const layout&, const layout&) = default;
};

// Writes a layout into a scenario (cp is fixed at 1 by the search; ep is kept).
inline void apply_layout(scenario& s, const layout& l) noexcept {
  s.num_gpus = l.gpus;
  s.parallel.tp = l.tp;
  s.parallel.pp = l.pp;
  s.parallel.virtual_stages = l.virtual_stages;
  s.parallel.sp = l.sp;
  s.parallel.cp = 1;
  s.parallel.zero = l.zero;
  s.parallel.offload_optimizer = l.offload_optimizer;
  s.parallel.offload_params = l.offload_params;
  s.ckpt = l.ckpt;
  s.micro_batch = l.micro_batch;
  s.grad_accum = l.grad_accum;
}

// The layout a run already has (its GPUs, parallel settings, checkpointing and batch);
// apply_layout(s, layout_of(s)) leaves s as it was.
inline layout layout_of(const scenario& s) {
  layout l;
  l.gpus = s.num_gpus;
  l.tp = s.parallel.tp_size();
  l.pp = s.parallel.pp;
  l.virtual_stages = s.parallel.virtual_stages;
  l.sp = s.parallel.sp_enabled();
  l.ckpt = s.ckpt.value_or(checkpointing::none);
  l.zero = s.parallel.zero;
  l.offload_optimizer = s.parallel.offload_optimizer;
  l.offload_params = s.parallel.offload_params;
  l.micro_batch = s.micro_batch;
  l.grad_accum = s.grad_accum;
  return l;
}

}  // namespace gpuplan
