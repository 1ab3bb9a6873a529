// plan/margin.hpp — when the planner calls a run a plan: the device memory at a
// chosen quantile of its error band (bands.hpp) plus a headroom is within the
// GPU's usable capacity. One value type (plan_margin), one predicate
// (plans_fit), the three-state verdict under it, and a per-search table that
// answers the same question without looking the band up again (docs/planner.md,
// "Safety margin").
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

#include "gpuplan/bands.hpp"
#include "gpuplan/detail/memory_allocator.hpp"
#include "gpuplan/detail/memory_constants.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/run.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan {

// The planning criterion. A run is a plan when
//   quantile(device memory, confidence) + max(headroom_fraction × capacity, headroom_min) <= capacity.
// Defaults: the P90 of the band (issue-tracker rule "plan on P90"), and the larger
// of 5% and 1 GiB kept free — what the fragmentation of a long run and the
// allocations outside PyTorch (NCCL communicators created late, a second
// process, the display) take beyond the estimate (PyTorch CUDA semantics,
// "Memory management": reserved memory grows with fragmentation).
struct plan_margin {
  double confidence = 0.9;         // 0.5 (P50), 0.9 (P90) or 0.99
  double headroom_fraction = 0.05; // of the usable capacity, in [0, 0.5]
  Bytes headroom_min = gib(1);
  friend bool operator==(const plan_margin&, const plan_margin&) = default;
};

// Largest accepted headroom_min: 1 TiB, beyond every GPU's memory (a typo otherwise).
inline constexpr double kMaxHeadroomBytes = 1024.0 * kGiB;

namespace detail {

// Standard normal quantiles: z(0.9) = 1.2816, z(0.99) = 2.3263 (any statistics table,
// e.g. NIST/SEMATECH e-Handbook 1.3.6.7.1).
inline constexpr double kZ90 = 1.2815516;
inline constexpr double kZ99 = 2.3263479;

// The factor (measured / estimated) at `confidence` from the band's quantiles.
// P50 and P90 are measured; P99 is beyond the validation table (46 training
// cases cannot resolve it), so it extrapolates the P50→P90 spread with the
// normal ratio z(0.99)/z(0.9) = 1.815.
constexpr double quantile_factor(const band_factors& f, double confidence) {
  if (confidence <= 0.5) return f.q50;
  if (confidence <= 0.9) return f.q90;
  return f.q50 + (f.q90 - f.q50) * (kZ99 / kZ90);
}

// Device memory that must stay resident: everything but paged optimizer state,
// which the driver evicts to host memory under pressure and so never makes a run
// not fit (memory.hpp). device = reserved + context (+ NCCL) + paged and
// overhead = context (+ NCCL) + cuBLAS workspace (detail/memory_allocator.hpp),
// so without the paged part it is reserved + overhead − cuBLAS workspace.
inline double resident_device(const memory_breakdown& m) {
  if (in_bytes(m.paged) <= 0) return in_bytes(m.device);
  return in_bytes(m.peak_reserved) + in_bytes(m.overhead) - memory_defaults::cublas_workspace;
}

inline void check_margin(const plan_margin& g, const std::string& path) {
  if (!(g.confidence == 0.5 || g.confidence == 0.9 || g.confidence == 0.99))
    fail(path + ".confidence", "must be 0.5, 0.9 or 0.99 (got " + num(g.confidence) + ")");
  if (!(g.headroom_fraction >= 0 && g.headroom_fraction <= 0.5))
    fail(path + ".headroom_fraction", "must be between 0 and 0.5 (got " + num(g.headroom_fraction) + ")");
  const double b = in_bytes(g.headroom_min);
  if (!(b >= 0 && b <= kMaxHeadroomBytes))
    fail(path + ".headroom_min", "must be between 0 and 1 TiB (got " + num(b) + " bytes)");
}

// The part of the resident device memory the caching allocator cannot give back: under
// pressure a failed cudaMalloc releases every cached free segment and retries
// (CUDACachingAllocator.cpp release_cached_blocks; memory_allocator.hpp squeezes the pool the
// same way), so a pool grown past the card shrinks to the live tensors with single-stream
// fragmentation (mem::squeezed_live) plus the context and workspaces. The verdict's median
// test and every P50 figure read it (a bare device figure, with no allocator terms, is taken
// whole).
inline double firm_device(const memory_breakdown& m) {
  if (in_bytes(m.peak_allocated) <= 0) return resident_device(m);
  const double firm = mem::squeezed_live(in_bytes(m.peak_allocated)) + in_bytes(m.overhead);
  return std::min(resident_device(m), firm);
}

// The criterion on bare numbers: the resident device memory scaled by the
// quantile factor, plus the headroom, within capacity.
inline bool margin_fits(double resident, double capacity, double factor, const plan_margin& g) {
  const double keep = std::max(g.headroom_fraction * capacity, in_bytes(g.headroom_min));
  return resident * factor + keep <= capacity;
}

// A paged serving engine fills its budget with the KV pool by design (vLLM
// gpu_worker.py determine_available_memory: the pool is total × gpu_memory_utilization
// minus what the profiled rest takes), so a pool that reaches the budget is no risk: when
// the rest is larger than estimated the pool shrinks. The band applies to the rest, and the
// plan asks that the requested batch's KV still fits: rest × factor + kv_needed within the
// engine's budget (its device figure); the engine's own 1 − utilization is the headroom.
inline bool elastic_pool(const memory_breakdown& m) { return in_bytes(m.kv_needed) > 0; }
inline double elastic_need(const memory_breakdown& m, double factor) {
  return (in_bytes(m.device) - in_bytes(m.kv_cache)) * factor + in_bytes(m.kv_needed);
}

// margin_fits of an estimate: the elastic rule for a paged engine's pool, else the bare one.
inline bool margin_fits(const memory_breakdown& m, double factor, const plan_margin& g) {
  if (elastic_pool(m)) return elastic_need(m, factor) <= std::min(in_bytes(m.device), in_bytes(m.capacity));
  return margin_fits(resident_device(m), in_bytes(m.capacity), factor, g);
}

// The factor the planner applies to a band: its quantile at the confidence;
// outside every validated regime the band is the widest, but the factor is
// never smaller than the run's own regime's (the widest band is widest by
// P90/P10 and may have a lower P90 than, say, full fine-tuning's), so that more
// GPUs beyond the validated scale never make a plan of a run that was not one.
constexpr double plan_factor(const band_source& b, double confidence) {
  const double f = quantile_factor(b.factors, confidence);
  return b.validated ? f : std::max(f, quantile_factor(b.regime_factors, confidence));
}

// plans_fit for one search: the band of a training run depends on its GPU count
// only through "one GPU / several / beyond the validated scale" (bands.hpp), so
// the three factors are looked up once and each query is two multiplications
// and a compare — no allocation, no table walk on the search's hot path.
class margin_table {
 public:
  margin_table(const run& r, const plan_margin& g) : g_(g) {
    const scenario& s = r.settings();
    const band_metric m = r.training() ? band_metric::memory_train : band_metric::memory_infer;
    const int peft = s.meth == method::full ? 0 : 1;
    const bool family_ok = contains(kValidatedFamilies, r.model().family) &&
                           contains(kValidatedPrecisions, to_string(precision_of(s)));
    auto band = [&](int multi, bool validated) {
      const bool covered = covered_combo(kValidatedCombos, to_string(s.fw), peft, gpu_class(s.gpu), multi);
      return plan_factor(with_coverage(select_band(kBandRows, m, peft, multi, validated), covered), g.confidence);
    };
    one_ = band(0, family_ok);
    many_ = band(1, family_ok);
    beyond_ = band(1, false);
  }
  // The run must be the table's run with only its layout (GPU count) changed.
  [[nodiscard]] bool fits(const memory_breakdown& m, int num_gpus) const {
    const double f = num_gpus <= 1 ? one_ : num_gpus <= kValidatedMaxGpus ? many_ : beyond_;
    return margin_fits(m, f, g_);
  }
  // fits(estimate_memory(r), num_gpus), stage by stage until one does not fit. Without
  // paged optimizer state every stage's device memory is resident (resident_device), so
  // the run fits exactly when each stage does; with it, the whole estimate decides.
  [[nodiscard]] bool fits(const run& r, int num_gpus) const {
    if (mem::optimizer_is_paged(r.settings().opt)) return fits(estimate_memory(r), num_gpus);
    return mem::every_stage(r, [&](const memory_breakdown& m) { return fits(m, num_gpus); });
  }

 private:
  plan_margin g_;
  double one_ = 1, many_ = 1, beyond_ = 1;
};

}  // namespace detail

// The headroom the margin keeps on a GPU of `capacity`.
inline Bytes margin_headroom(const plan_margin& g, Bytes capacity) {
  return bytes(std::max(g.headroom_fraction * in_bytes(capacity), in_bytes(g.headroom_min)));
}

// The resident device memory at the margin's confidence (bytes), from the band of `r`; for
// a paged engine's elastic pool, the rest at that confidence plus the requested batch's KV.
inline double device_quantile(const run& r, const memory_breakdown& m, const plan_margin& g) {
  const band_source b =
      detail::band_source_for(r, r.training() ? detail::band_metric::memory_train : detail::band_metric::memory_infer);
  const double factor = detail::plan_factor(b, g.confidence);
  return detail::elastic_pool(m) ? detail::elastic_need(m, factor) : detail::resident_device(m) * factor;
}

// Is `m` (the estimate of `r`) a plan: the device memory at the margin's
// confidence plus the headroom within the usable capacity (detail::margin_fits)?
inline bool plans_fit(const run& r, const memory_breakdown& m, const plan_margin& g = {}) {
  const band_source b =
      detail::band_source_for(r, r.training() ? detail::band_metric::memory_train : detail::band_metric::memory_infer);
  return detail::margin_fits(m, detail::plan_factor(b, g.confidence), g);
}

// The three-state verdict under a margin, from the estimate and its bands (docs/planner.md,
// "Safety margin"), decided in this order:
// does_not_fit — the P50 device figure (resident device memory × the band's P50) exceeds
//   the usable capacity, or the estimate says the run cannot start with its bytes
//   within capacity (a paged serving engine whose KV pool holds no whole request, memory.hpp);
// fits — else, the quantile plus the headroom is within capacity (plans_fit);
// tight — else ("likely fits; leave headroom or try it").
// does_not_fit comes first and rests on the P50 alone, so no band (however shaped) and no
// margin turns a run whose median does not fit into anything else: every output reports
// fits = (verdict != does_not_fit) and its headroom from the same P50 figure.
inline verdict verdict_of(const memory_breakdown& m, const memory_bands& b, const plan_margin& g = {}) {
  const double cap = in_bytes(m.capacity);
  // memory.hpp sets fits = device <= capacity, false beside that only for the engine rule above.
  const bool cannot_start = !m.fits && m.peak_phase == memory_breakdown::phase::inference && in_bytes(m.device) <= cap;
  // A paged engine's pool at P50: the requested batch must fit beside the rest.
  // The median figure must fit, its cached slack aside (the allocator frees it under pressure).
  const bool p50_fits = detail::elastic_pool(m) ? detail::margin_fits(m, b.source.factors.q50, g)
                                                : detail::firm_device(m) * b.source.factors.q50 <= cap;
  if (!p50_fits || cannot_start) return verdict::does_not_fit;
  if (detail::margin_fits(m, detail::plan_factor(b.source, g.confidence), g)) return verdict::fits;
  return verdict::tight;
}

// The same from the run (looks the band up).
inline verdict verdict_of(const run& r, const memory_breakdown& m, const plan_margin& g = {}) {
  return verdict_of(m, bands_of(r, m), g);
}

}  // namespace gpuplan
