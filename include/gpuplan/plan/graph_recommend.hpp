// plan/graph_recommend.hpp — which GPU and how many for a layer-graph model: an image
// classifier (vision.hpp) or a diffusion fine-tune (diffusion.hpp) trained with PyTorch
// DDP on 1, 2, 4, ... GPUs of one kind, ranked as recommend() ranks transformer runs
// (docs/planner.md, "Image and diffusion models").
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpuplan/detail/memory_constants.hpp"
#include "gpuplan/diffusion.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/layers.hpp"
#include "gpuplan/plan/margin.hpp"
#include "gpuplan/plan/recommend.hpp"
#include "gpuplan/units.hpp"
#include "gpuplan/vision.hpp"

namespace gpuplan {

// One micro-batch on each of `count` data-parallel GPUs.
struct graph_step {
  Bytes device = bytes(0);                  // nvidia-smi peak of one GPU
  Seconds micro = seconds(0);               // forward and backward of one micro-batch
  Seconds optimizer = seconds(0);           // once per optimizer step
  Seconds exposed_all_reduce = seconds(0);  // DDP's gradient all-reduce not hidden behind the last backward
};

// A training workload over a layer graph: how one micro-step costs on (GPU, micro-batch,
// GPU count), and the recipe around it.
struct graph_workload {
  std::string name;
  std::function<graph_step(const gpu_spec&, std::int64_t micro_batch, int count)> step;
  std::int64_t global_batch = 256;             // samples per optimizer step, all GPUs
  std::optional<std::int64_t> micro_batch{};   // per GPU; unset: the largest that fits
  std::int64_t max_micro_batch = kMaxBatch;    // the most samples the estimator takes in one micro-batch
  double samples = 0;                          // samples to train: images × epochs
  std::string recipe;                          // where the defaults come from, said in the output
};

struct graph_recommendation {
  gpu_spec gpu;
  int count = 1;
  std::int64_t micro_batch = 1, grad_accum = 1;  // per GPU
  // micro_batch × grad_accum × count: the global batch rounded up to whole micro-batches.
  std::int64_t global_batch = 1;
  graph_step step;
  Seconds optimizer_step = seconds(0);  // grad_accum × micro + exposed all-reduce + optimizer
  double samples_per_s = 0;             // all GPUs
  // Samples/s per GPU over the 1-GPU row of the same GPU type (DDP's scaling efficiency);
  // nullopt when one GPU does not fit.
  std::optional<double> scaling;
  Seconds wall = seconds(0);
  double gpu_hours = 0;
  std::optional<double> cost;
  std::optional<rental_choice> rent;
  bool meets_deadline = false;
  bool within_budget = true;
};

namespace detail {

// The micro-batch of one GPU holding `per_gpu` samples of the global batch: the fixed one,
// else per_gpu / 1, 2, 4, ... (rounded up, at most the estimator's max_micro_batch) until one
// fits under the margin; nullopt when not even one sample fits. Graph estimates have no measured error band: the margin's headroom
// applies to the estimate itself (factor 1).
inline std::optional<std::pair<std::int64_t, graph_step>> fitting_micro_batch(const graph_workload& w, const gpu_spec& gpu,
                                                                               std::int64_t per_gpu, int count,
                                                                               const plan_margin& margin) {
  const double capacity = in_bytes(gpu.usable_memory);
  std::int64_t last = 0;
  for (std::int64_t a = 1;; a *= 2) {
    const std::int64_t m = w.micro_batch ? std::min(*w.micro_batch, per_gpu) : (per_gpu + a - 1) / a;
    if (m == last) break;
    last = m;
    if (m > w.max_micro_batch) {  // more than the estimator takes at once: split further
      if (w.micro_batch) break;
      continue;
    }
    const graph_step s = w.step(gpu, m, count);
    if (margin_fits(in_bytes(s.device), capacity, 1.0, margin)) return std::pair{m, s};
    if (w.micro_batch || m == 1) break;
  }
  return std::nullopt;
}

}  // namespace detail

// Ranks GPU types × counts (1, 2, 4, ... up to o.max_gpus, and no more GPUs than the global
// batch has samples) for a graph workload under PyTorch DDP. Each GPU holds ceil(global /
// count) samples per optimizer step as micro_batch × grad_accum; the gradients are
// all-reduced once per optimizer step (DDP's no_sync during accumulation). Uses
// o.gpus, prices, deadline, budget, rank, margin and max_gpus; not tokens or global_batch.
inline std::vector<graph_recommendation> recommend_graph(const graph_workload& w, const recommend_options& o) {
  using gpuplan::detail::fail;
  using gpuplan::detail::num;
  gpuplan::detail::check_recommend_options(o);
  if (!w.step) fail("workload.step", "a graph workload needs a step function (got none)");
  if (w.global_batch < 1 || w.global_batch > kMaxBatch)
    fail("global_batch", "must be between 1 and " + std::to_string(kMaxBatch) + " (got " + std::to_string(w.global_batch) + ")");
  if (w.micro_batch && (*w.micro_batch < 1 || *w.micro_batch > kMaxBatch))
    fail("batch", "must be between 1 and " + std::to_string(kMaxBatch) + " (got " + std::to_string(*w.micro_batch) + ")");
  if (!(w.samples >= 1 && w.samples <= 1e15)) fail("images", "samples to train must be in [1, 1e15] (got " + num(w.samples) + ")");
  std::vector<graph_recommendation> out;
  for (const gpu_spec& gpu : o.gpus) {
    std::optional<double> one_gpu_rate;
    for (int n = 1; n <= o.max_gpus && n <= w.global_batch; n *= 2) {
      const std::int64_t per_gpu = (w.global_batch + n - 1) / n;
      const auto fit = detail::fitting_micro_batch(w, gpu, per_gpu, n, o.margin);
      if (!fit) continue;
      graph_recommendation r;
      r.gpu = gpu;
      r.count = n;
      r.micro_batch = fit->first;
      r.grad_accum = (per_gpu + r.micro_batch - 1) / r.micro_batch;
      r.step = fit->second;
      r.optimizer_step = r.step.micro * static_cast<double>(r.grad_accum) + r.step.exposed_all_reduce + r.step.optimizer;
      r.global_batch = r.micro_batch * r.grad_accum * n;
      r.samples_per_s = static_cast<double>(r.global_batch) / in_seconds(r.optimizer_step);
      if (n == 1) one_gpu_rate = r.samples_per_s;
      if (one_gpu_rate) r.scaling = r.samples_per_s / n / *one_gpu_rate;
      r.wall = seconds(w.samples / r.samples_per_s);
      r.gpu_hours = in_hours(r.wall) * n;
      r.rent = gpuplan::detail::rental_for(gpu.id, n, o);
      if (r.rent) r.cost = in_hours(r.wall) * r.rent->price_per_hour;
      r.meets_deadline = in_seconds(r.wall) <= in_seconds(o.deadline);
      r.within_budget = !o.budget || (r.cost && *r.cost <= *o.budget);
      if (!o.keep_late && (!r.meets_deadline || !r.within_budget)) continue;
      out.push_back(std::move(r));
    }
  }
  std::stable_sort(out.begin(), out.end(), [&](const graph_recommendation& a, const graph_recommendation& b) {
    return gpuplan::detail::recommendation_less(a, b, o.rank);
  });
  return out;
}

// Training an image model (or any layer graph) with PyTorch DDP, or sharded by ZeRO stage
// `zero`: vision::estimate_graph's step at the micro-batch and GPU count, split into its
// parts. ZeRO-3 gathers the weights and reduce-scatters the gradients every micro-batch, so
// its exposed communication belongs to the micro-batch; the others reduce once per step.
// The recipe, samples and global batch are the caller's (vision::training_recipe_of for
// catalog models).
inline graph_workload image_training(const layers::graph& g, precision prec, optimizer opt, const efficiency_params& eff = {},
                                     bool checkpointing = false, int zero = 0) {
  graph_workload w;
  w.name = g.name;
  w.max_micro_batch = 1000000;  // estimate_graph's batch range
  w.step = [g, prec, opt, eff, checkpointing, zero](const gpu_spec& gpu, std::int64_t m, int n) {
    const auto e = vision::estimate_graph(g, m, prec, opt, gpu, true, eff, n, checkpointing, zero);
    graph_step s;
    s.device = e.device;
    s.micro = std::max(e.compute + e.memory_bound, e.launch);
    s.optimizer = e.optimizer_step;
    s.exposed_all_reduce = e.step - s.micro - s.optimizer;
    if (zero >= 3) {
      s.micro += s.exposed_all_reduce;
      s.exposed_all_reduce = seconds(0);
    }
    return s;
  };
  return w;
}

// Fine-tuning a diffusion pipeline's UNet (diffusers' train_text_to_image*.py under
// accelerate DDP): diffusion::estimate_finetune at the micro-batch, the trainable
// parameters' gradients all-reduced in fp32 (the adapters' alone under LoRA), overlapping
// backward — its share of the UNet's passes: full 2 of 3 forwards' work, LoRA 1 of 2 (input
// gradients only), and the recomputed forward with checkpointing — and NCCL's buffers on
// more than one GPU.
inline graph_workload diffusion_finetuning(const diffusion::pipeline& p, const diffusion::finetune_options& o,
                                           const efficiency_params& eff = {}) {
  graph_workload w;
  w.name = p.name;
  w.max_micro_batch = 4096;  // estimate_finetune's batch range
  w.step = [p, o, eff](const gpu_spec& gpu, std::int64_t m, int n) {
    diffusion::finetune_options at = o;
    at.batch = m;
    const auto e = diffusion::estimate_finetune(p, gpu, at, eff);
    const double passes = (o.method == diffusion::finetune_method::full ? 3.0 : 2.0) + (o.gradient_checkpointing ? 1.0 : 0.0);
    const double backward = (passes - 1) / passes * in_seconds(e.unet);
    const auto ar = vision::detail::ddp_all_reduce(static_cast<double>(e.trainable_params), precision::fp16_mixed, gpu, n,
                                                   backward, eff);
    graph_step s;
    s.device = e.device + bytes(n > 1 ? memory_defaults::nccl_buffers : 0.0);
    s.micro = e.encode + e.unet;
    s.optimizer = e.optimizer;
    s.exposed_all_reduce = seconds(ar.exposed);
    return s;
  };
  return w;
}

}  // namespace gpuplan
