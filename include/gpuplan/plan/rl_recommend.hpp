// plan/rl_recommend.hpp — which GPU and how many for an RL run (rl.hpp): for each GPU type,
// the fewest GPUs whose every phase fits with the planning headroom (plan/margin.hpp: the larger
// of 5% of the usable memory and 1 GiB left free), with its step time and, where a price is
// known, the cost of a step. "Which GPUs for GRPO on Qwen2.5-7B with G = 8".
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/plan/margin.hpp"
#include "gpuplan/rl.hpp"

namespace gpuplan {

struct rl_option {
  gpu_spec gpu;
  int gpus = 0;
  rl_estimate estimate;
  std::optional<double> price_per_gpu_hour;
  std::optional<double> cost_per_step;  // price x GPUs (incl. separate rollout GPUs) x step / 3600
};

struct rl_recommend_request {
  std::vector<gpu_spec> gpus;               // the GPU types to consider
  int max_gpus = 64;                        // counts 1, 2, 4, ... up to this
  double headroom_fraction = 0.05;          // of each GPU's usable memory left free (plan/margin.hpp's default)
  Bytes headroom_min = gib(1);              // at least this left free (plan/margin.hpp's default)
  std::map<std::string, double, std::less<>> prices;  // price per GPU-hour by GPU id

  // What a GPU of `capacity` must keep free: max(headroom_fraction x capacity, headroom_min).
  [[nodiscard]] Bytes headroom_kept(Bytes capacity) const {
    return margin_headroom(plan_margin{.headroom_fraction = headroom_fraction, .headroom_min = headroom_min}, capacity);
  }
};

namespace detail::rl {

// The smallest count of one GPU type that fits with the headroom, max(headroom_fraction x usable,
// headroom_min) (plan/margin.hpp margin_headroom), and generates a whole sequence (a finite
// step); nullopt when none up to max. Counts the layout cannot take (a tensor or rollout TP that
// does not divide) are skipped.
inline std::optional<rl_option> smallest_fit(const architecture& m, scenario policy, const rl_config& cfg,
                                             const gpu_spec& gpu, const rl_recommend_request& req) {
  policy.gpu = gpu;
  for (int n = 1; n <= req.max_gpus; n *= 2) {
    policy.num_gpus = n;
    rl_estimate e;
    try {
      e = estimate_rl(m, policy, cfg);
    } catch (const config_error&) {
      continue;
    }
    if (in_bytes(e.headroom) < in_bytes(req.headroom_kept(e.capacity)) || !std::isfinite(in_seconds(e.step))) continue;
    rl_option o{gpu, n, e, std::nullopt, std::nullopt};
    if (const auto p = req.prices.find(gpu.id); p != req.prices.end()) {
      o.price_per_gpu_hour = p->second;
      o.cost_per_step = p->second * e.gpus * in_seconds(e.step) / 3600.0;
    }
    return o;
  }
  return std::nullopt;
}

}  // namespace detail::rl

// One row per GPU type that fits at some count up to max_gpus: cheapest step first where
// prices are known (unpriced rows after, by step time), else fastest step first.
inline std::vector<rl_option> recommend_rl(const architecture& m, const scenario& policy, const rl_config& cfg,
                                           const rl_recommend_request& req) {
  if (req.gpus.empty()) detail::fail("rl.recommend.gpus", "needs at least one GPU type (got none)");
  detail::require_range(req.max_gpus, 1, kMaxGpus, "rl.recommend.max_gpus");
  detail::require_finite(req.headroom_fraction, 0, 0.5, "rl.recommend.headroom_fraction");
  detail::require_finite(in_bytes(req.headroom_min), 0, kMaxHeadroomBytes, "rl.recommend.headroom_min");
  std::vector<rl_option> out;
  for (const gpu_spec& g : req.gpus)
    if (auto o = detail::rl::smallest_fit(m, policy, cfg, g, req)) out.push_back(std::move(*o));
  std::stable_sort(out.begin(), out.end(), [](const rl_option& a, const rl_option& b) {
    if (a.cost_per_step.has_value() != b.cost_per_step.has_value()) return a.cost_per_step.has_value();
    if (a.cost_per_step && *a.cost_per_step != *b.cost_per_step) return *a.cost_per_step < *b.cost_per_step;
    return in_seconds(a.estimate.step) < in_seconds(b.estimate.step);
  });
  return out;
}

}  // namespace gpuplan
