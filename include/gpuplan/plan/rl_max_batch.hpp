// plan/rl_max_batch.hpp — the largest micro-batch of an RL run (rl.hpp): the most sequences per
// GPU per forward/backward (DPO: pairs) at which every phase of the step fits, the rest of the
// run as given. This is the search verl's tuning scripts record by hand (examples/tuning/*/
// *_grpo-lora_*.sh: "nproc_per_gpu=58 # 32√ → 64× → 48√ → 56√ → 60× → 58√ → 59×") and the
// boundary the published rows in tests/data/validation/rl.jsonl (metric rl.max_micro_batch) check.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "gpuplan/detail/plan_probe.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/rl.hpp"
#include "gpuplan/validate.hpp"

namespace gpuplan {

struct rl_max_batch {
  std::optional<std::int64_t> micro_batch;  // nullopt: not even one sequence (pair) fits
  rl_estimate estimate;                     // at micro_batch (at 1 when none fits)
};

// Memory grows with the micro-batch (its tokens, the heaviest micro-batch's under dropped padding:
// detail/rl_estimate.hpp heaviest_tokens), so galloping then bisection finds the boundary; a
// micro-batch the rules refuse does not fit. Token-bounded micro-batches (rl.max_token_len) are
// sized by their tokens, not their sequences: that search is not this one.
inline rl_max_batch largest_rl_micro_batch(const architecture& m, const scenario& policy, rl_config cfg) {
  if (cfg.max_token_len)
    detail::fail("rl.max_token_len", "micro-batches are token-bounded, so their sequence count sets no memory (got " +
                                         std::to_string(*cfg.max_token_len) + ")");
  auto at = [&](std::int64_t b) {
    cfg.micro_batch = b;
    return estimate_rl(m, policy, cfg);
  };
  rl_max_batch out;
  out.estimate = at(1);  // a run the rules refuse at any micro-batch says why here
  if (!out.estimate.fits) return out;
  // A probe that fits is larger than every one that fit before it (galloping, then bisection
  // above the last that fit), so the estimate kept last is the answer's.
  out.micro_batch = detail::largest_true(kMaxBatch, [&](std::int64_t b) {
    if (b == 1) return true;  // estimated above
    try {
      rl_estimate e = at(b);
      if (!e.fits) return false;
      out.estimate = std::move(e);
      return true;
    } catch (const config_error&) {
      return false;
    }
  });
  return out;
}

}  // namespace gpuplan
