// detail/plan_probe.hpp — how the planner asks "does it fit?": monotone searches
// over an integer (galloping, bisection) and fit queries on a scratch run that is
// edited in place (run::edit) instead of validated from scratch.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

#include "gpuplan/error.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/plan/margin.hpp"
#include "gpuplan/run.hpp"
#include "gpuplan/scenario.hpp"

namespace gpuplan::detail {

// Largest k in [1, k_max] with pred(k) true, assuming pred is monotone
// (true then false). Galloping then bisection: O(log k) calls.
template <class Pred>
std::optional<std::int64_t> largest_true(std::int64_t k_max, Pred pred) {
  if (k_max < 1 || !pred(1)) return std::nullopt;
  std::int64_t lo = 1;  // pred(lo) true
  std::int64_t hi = 2;  // first candidate not yet known
  while (hi <= k_max && pred(hi)) { lo = hi; hi = hi * 2; }
  hi = std::min(hi, k_max + 1);  // pred(hi) false or beyond range
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (pred(mid)) lo = mid; else hi = mid;
  }
  return lo;
}

// Smallest k in [1, k_max] with pred(k) true, assuming pred is monotone (false then true).
template <class Pred>
std::optional<std::int64_t> smallest_true(std::int64_t k_max, Pred pred) {
  if (k_max < 1 || !pred(k_max)) return std::nullopt;
  std::int64_t lo = 0, hi = k_max;  // pred(hi) true; lo false or out of range
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (pred(mid)) hi = mid; else lo = mid;
  }
  return hi;
}

// Whether `probe` is a plan after `change` (the margin's quantile plus headroom
// fits, plan/margin.hpp); a change the rules reject does not fit.
template <class Edit>
bool fits_after(run& probe, const plan_margin& g, Edit&& change) {
  try {
    probe.edit(std::forward<Edit>(change));
    return plans_fit(probe, estimate_memory(probe), g);
  } catch (const config_error&) {
    return false;
  }
}

// Whether the settings `s` are a plan for the model of `probe` (probe's settings become `s`).
inline bool fits_as(run& probe, const scenario& s, const plan_margin& g) {
  return fits_after(probe, g, [&](scenario& x) { x = s; });
}

}  // namespace gpuplan::detail
