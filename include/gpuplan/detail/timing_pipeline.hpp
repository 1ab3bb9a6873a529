// detail/timing_pipeline.hpp — pipeline phase of the time model: one micro-batch's stage
// time (compute + exposed communication) and the pipeline bubble of 1F1B and interleaved
// schedules (Narayanan et al. 2021 §2.2). The stage time is the slowest stage's: usually the
// last, with ceil(layers / pp) blocks and the LM head; a middle one when Megatron's loss unit
// takes a block off the last (stage_blocks_of, compute_per_microbatch, estimate_time_of).
#pragma once

#include "gpuplan/detail/timing_comm.hpp"
#include "gpuplan/detail/timing_compute.hpp"
#include "gpuplan/scenario.hpp"

namespace gpuplan::detail {

// Bubble fraction of the ideal pipelined time m·t: (p−1)/(m·v) for p stages, m micro-batches
// and v virtual stages per GPU (1F1B: v = 1; Narayanan et al. 2021 §2.2, eq. 1 and §2.2.2).
inline double bubble_fraction(int pp, double microbatches, int virtual_stages) {
  return pp > 1 ? static_cast<double>(pp - 1) / (microbatches * virtual_stages) : 0.0;
}

// Bubble seconds = bubble_fraction × m·t_mb = (p−1)/v · t_mb: independent of m.
inline double pipeline_bubble(int pp, int virtual_stages, double microbatch_seconds) {
  return pp > 1 ? static_cast<double>(pp - 1) / virtual_stages * microbatch_seconds : 0.0;
}

struct pipeline_cost {
  double microbatch = 0;  // one micro-batch's stage time: compute + exposed per-micro-batch communication
  double bubble = 0;      // idle time of a step
};

inline pipeline_cost pipeline(const scenario& run, const compute_cost& c, const comm_cost& k) {
  pipeline_cost p;
  p.microbatch = c.microbatch + k.microbatch_exposed;
  p.bubble = pipeline_bubble(run.parallel.pp, run.parallel.virtual_stages, p.microbatch);
  return p;
}

}  // namespace gpuplan::detail
