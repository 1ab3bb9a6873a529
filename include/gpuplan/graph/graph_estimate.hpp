// graph/graph_estimate.hpp — the memory and time of training or running a layer graph
// (graph/analyze.hpp) on one GPU or data parallel over several (PyTorch DDP, ZeRO / FSDP):
// estimate_graph and what it is built from. docs/vision.md.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gpuplan/detail/memory_allocator.hpp"
#include "gpuplan/detail/memory_constants.hpp"
#include "gpuplan/detail/memory_precision.hpp"
#include "gpuplan/detail/timing_comm.hpp"
#include "gpuplan/detail/timing_model.hpp"
#include "gpuplan/detail/timing_params.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/graph/analyze.hpp"
#include "gpuplan/graph/checkpoint.hpp"
#include "gpuplan/graph/layer.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan::vision {

using layers::graph;
using layers::graph_cost;

// ---- memory and time of a graph model on one GPU -------------------------------

struct graph_estimate {
  std::int64_t params = 0;
  FlopCount flops_per_sample = flops(0);  // forward (inference) or forward + backward (training)
  Bytes weights = bytes(0), gradients = bytes(0), optimizer = bytes(0), activations = bytes(0), transient = bytes(0);
  Bytes peak_allocated = bytes(0);  // torch.cuda.max_memory_allocated
  Bytes reserved = bytes(0);        // torch.cuda.max_memory_reserved (detail/memory_allocator.hpp)
  Bytes device = bytes(0);          // nvidia-smi: reserved + CUDA context (+ NCCL buffers on more than one GPU)
  Seconds compute = seconds(0), memory_bound = seconds(0), optimizer_step = seconds(0), step = seconds(0);
  // Host time to dispatch the step's tensor calls in eager PyTorch (host_ops × launch_seconds): the
  // GPU idles when compute + memory_bound is shorter (small batches).
  Seconds launch = seconds(0);
  // Data-parallel communication, all of it (the exposed part is in `step`): DDP's gradient
  // all-reduce, ZeRO-1/2's reduce-scatter and parameter all-gather, ZeRO-3's gathers.
  Seconds data_parallel_comm = seconds(0);
  int num_gpus = 1;
  double samples_per_s = 0;  // all GPUs together
  [[nodiscard]] bool fits(const gpu_spec& g) const { return device <= g.usable_memory; }
};

namespace detail {
// Seconds of one convolution or linear layer's forward for `batch` samples: an implicit
// GEMM (cuDNN maps a conv to M = N·H_out·W_out, N = C_out/groups, K = C_in/groups·kernel
// volume, once per group) at the GPU's GEMM ceiling times the shape factor of
// timing_model.hpp, or its operand traffic at the element-wise bandwidth when slower.
inline double gemm_layer_seconds(const layers::layer& l, const layers::layer_cost& c, double batch,
                                 const gpuplan::detail::device_rates& r, const efficiency_params& e) {
  const double groups = l.k == layers::kind::conv ? static_cast<double>(l.groups) : 1.0;
  const double m = batch * static_cast<double>(c.out.positions());
  const double n = static_cast<double>(c.out.c) / groups;
  const double k = c.matmul_flops / (2.0 * static_cast<double>(c.out.elements()) / groups);
  const double shape = gpuplan::detail::gemm_shape_factor(m, n, k, groups, r.sms, e);
  const double compute = batch * c.matmul_flops / (r.peak.gemm * r.ceiling * std::max(shape, 1e-3));
  const double traffic = (batch * static_cast<double>(c.in.elements() + c.out.elements()) * r.peak.act_bytes +
                          static_cast<double>(c.params) * r.peak.act_bytes) / r.bwe;
  return std::max(compute, traffic);
}

// Data-parallel communication of one training step of `params` parameters on `num_gpus`
// GPUs under ZeRO stage `zero`, as timing_comm.hpp models transformer runs: ZeRO-0 (PyTorch
// DDP) all-reduces the gradients in their dtype (fp32 under AMP: reduced_gradient_bytes),
// ZeRO-1/2 reduce-scatter them in 16-bit and all-gather the updated parameters, exposed
// (dp_reduction); the reduction overlaps `backward_seconds` up to ddp_overlap, at least the
// last bucket exposed. ZeRO-3 (FSDP FULL_SHARD) all-gathers the parameters for forward and
// again for backward and reduce-scatters the gradients, hidden behind fsdp_overlap of
// `compute_seconds` but for the first unit's gather, `first_unit` of the parameters
// (zero3_gathers). The whole, and the part not hidden.
struct ddp_cost {
  double whole = 0, exposed = 0;  // seconds
};
inline ddp_cost data_parallel_comm(double params, precision prec, const gpu_spec& gpu, int num_gpus, int zero,
                                   double compute_seconds, double backward_seconds, double first_unit,
                                   const efficiency_params& eff) {
  if (num_gpus < 2) return {};
  scenario sc;
  sc.gpu = gpu;
  sc.num_gpus = num_gpus;
  sc.prec = prec;
  sc.parallel.zero = zero;
  const gpuplan::detail::stage_parameters p{0, 0, params, params};
  if (zero >= 3) {
    const auto z = gpuplan::detail::zero3_gathers(sc, p, first_unit, compute_seconds, eff);
    return {z.per_microbatch, z.exposed};
  }
  gpuplan::detail::compute_cost backward;
  backward.microbatch = backward_seconds;
  backward.backward_share = 1;
  const auto d = gpuplan::detail::dp_reduction(sc, p, backward, eff);
  return {d.reduce + d.gather, d.exposed};
}

// PyTorch DDP's gradient all-reduce (ZeRO-0 above).
inline ddp_cost ddp_all_reduce(double params, precision prec, const gpu_spec& gpu, int num_gpus, double backward_seconds,
                               const efficiency_params& eff) {
  return data_parallel_comm(params, prec, gpu, num_gpus, 0, backward_seconds, backward_seconds, 1.0, eff);
}

// ZeRO-3 / FSDP units of a graph: each checkpoint segment (else each residual block) is
// one wrapped unit, as FSDP's ModuleWrapPolicy wraps blocks; the layers outside every
// unit belong to the root, which stays gathered from forward to backward (FSDP does not
// reshard the root after forward). No residual block: the whole graph is one unit.
struct sharding_units {
  double root = 0;     // parameters outside every unit
  double largest = 0;  // parameters of the largest unit
};
inline sharding_units sharding_units_of(const graph& g, const layers::graph_cost& gc) {
  const auto segments = g.segments.empty() ? residual_segments(g) : g.segments;
  const int n = static_cast<int>(gc.per_layer.size());
  std::vector<bool> in_unit(gc.per_layer.size(), false);
  sharding_units u;
  for (const auto& [first, last] : segments) {
    double unit = 0;
    for (int i = std::max(first, 0); i <= std::min(last, n - 1); ++i) {
      unit += static_cast<double>(gc.per_layer[static_cast<std::size_t>(i)].params);
      in_unit[static_cast<std::size_t>(i)] = true;
    }
    u.largest = std::max(u.largest, unit);
  }
  for (std::size_t i = 0; i < in_unit.size(); ++i)
    if (!in_unit[i]) u.root += static_cast<double>(gc.per_layer[i].params);
  return u;
}

// The arguments estimate_graph takes: a batch and a GPU count in range, a GPU with memory,
// bandwidth and the GEMM rate of the precision, a precision and an optimizer layer graphs are
// modelled with, and checkpointing and ZeRO for training only.
inline void check_graph_step(std::int64_t batch, precision prec, optimizer opt, const gpu_spec& gpu, bool train,
                             int num_gpus, bool checkpointing, int zero) {
  using gpuplan::detail::fail;
  if (batch < 1 || batch > 1000000) fail("batch", "must be in [1, 1000000] (got " + std::to_string(batch) + ")");
  if (num_gpus < 1 || num_gpus > 65536) fail("num_gpus", "must be in [1, 65536] (got " + std::to_string(num_gpus) + ")");
  if (!(in_bytes(gpu.usable_memory) > 0) || !(in_byte_per_s(gpu.bandwidth) > 0))
    fail("gpu", "needs memory and bandwidth (got '" + gpu.id + "')");
  if (prec == precision::fp8_mixed) fail("precision", "fp8-mixed is not modelled for layer graphs (got fp8-mixed)");
  gpuplan::detail::require_fp32_rate(gpu, prec, "gpu");  // the GEMM rate the precision runs at
  if (checkpointing && !train) fail("checkpointing", "applies to training only (got inference)");
  if (zero < 0 || zero > 3) fail("zero", "must be 0, 1, 2 or 3 (got " + std::to_string(zero) + ")");
  if (zero > 0 && !train) fail("zero", "shards training states; inference has none (got " + std::to_string(zero) + ")");
  switch (opt) {
    case optimizer::sgd: case optimizer::sgd_momentum: case optimizer::adam: case optimizer::adamw:
    case optimizer::adamw_8bit: case optimizer::lion: break;
    default: fail("optimizer", "must be sgd, sgd-momentum, adam, adamw, adamw-8bit or lion for layer graphs (got " +
                  std::string(to_string(opt)) + ")");
  }
}

// The memory of one step: weights, and for training gradients, optimizer state (each sharded
// as ZeRO's stage says), the saved activations (checkpointed or not) and backward's
// transient; for inference the working set. Then the caching allocator's pool and the context.
inline void graph_memory(graph_estimate& e, const graph& g, const graph_cost& gc, double B,
                         const gpuplan::detail::mem::precision_bytes& pb, optimizer opt, bool train, int num_gpus,
                         bool checkpointing, int zero, const sharding_units& u) {
  using gpuplan::detail::fail;
  const double P = static_cast<double>(gc.params);
  // ZeRO (Rajbhandari et al. 2020, Fig. 1): stage 1 shards the optimizer state and the fp32
  // master copy over the GPUs, 2 also the gradients, 3 also the 16-bit weights.
  const double dp = static_cast<double>(num_gpus);
  auto shard = [&](int stage) { return zero >= stage ? dp : 1.0; };
  e.weights = bytes(train ? P * pb.weight / shard(3) + P * pb.master / shard(1) : P * pb.weight);
  double largest_io = 0;  // elements of the largest layer's input + output, per sample
  for (const auto& c : gc.per_layer)
    largest_io = std::max(largest_io, static_cast<double>(c.in.elements() + c.out.elements()));
  if (train) {
    e.gradients = bytes(P * pb.grad / shard(2));
    e.optimizer = bytes(P * gpuplan::detail::mem::optimizer_bytes_per_param(opt, pb.state) / shard(1));
    if (checkpointing) {
      // torch.utils.checkpoint over the graph's segments, else every residual branch.
      graph seg = g;
      if (seg.segments.empty()) seg.segments = residual_segments(g);
      if (seg.segments.empty())
        fail("checkpointing", "the graph has no residual blocks to checkpoint (got '" + g.name + "')");
      e.activations = bytes(B * saved_bytes_of(seg, gc, pb.act, true));
    } else {
      e.activations = bytes(B * gc.saved_bytes(pb.act));
    }
    e.transient = bytes(B * largest_io * pb.act);  // grad_output and grad_input of the layer in backward
    if (zero >= 3) {
      // The root gathered from forward to backward, the unit in use and the next prefetched.
      e.transient += bytes((u.root + gpuplan::detail::mem::kGatheredUnitsInFlight * u.largest) * pb.weight);
    } else if (zero >= 1 && num_gpus > 1) {
      // DeepSpeed ZeRO-1/2 reduce bucket (reduce_bucket_size, memory_transients.hpp).
      e.transient += bytes(std::min(P, gpuplan::memory_defaults::zero_reduce_bucket_elems) * pb.grad);
    }
  } else {
    e.activations = bytes(B * gc.peak_live_elements * pb.act);
  }
  e.peak_allocated = e.weights + e.gradients + e.optimizer + e.activations + e.transient;
  // The caching allocator's pool and the context, as for transformer runs (memory-model.md § Overheads).
  const auto peaks = gpuplan::detail::mem::allocator_and_context(in_bytes(e.peak_allocated), 0, num_gpus);
  e.reserved = bytes(peaks.reserved);
  e.device = bytes(peaks.device);
}

// Seconds of the GEMM-shaped work of one forward of `B` samples: each conv/linear layer as a
// GEMM (gemm_layer_seconds), attention projections likewise and its core at the
// FlashAttention fraction.
inline double graph_gemm_seconds(const graph& g, const graph_cost& gc, double B, const gpuplan::detail::device_rates& rates,
                                 const gpu_spec& gpu, const efficiency_params& eff) {
  double compute = 0;
  for (std::size_t i = 0; i < gc.per_layer.size(); ++i) {
    const auto& l = g.layers[i];
    const auto& c = gc.per_layer[i];
    if (l.k == layers::kind::conv || l.k == layers::kind::linear) {
      compute += gemm_layer_seconds(l, c, B, rates, eff);
    } else if (l.k == layers::kind::attention) {
      const double L = static_cast<double>(c.in.positions()), D = static_cast<double>(c.in.c);
      const double core = 4.0 * L * (l.kv_len > 0 ? static_cast<double>(l.kv_len) : L) * D;
      const double shape = gpuplan::detail::gemm_shape_factor(B * L, D, D, 1, rates.sms, eff);
      const double head_dim = D / static_cast<double>(l.heads);
      compute += B * (c.matmul_flops - core) / (rates.peak.gemm * rates.ceiling * shape) +
                 B * core / (rates.peak.gemm * gpuplan::detail::flash_fraction(gpu, eff) *
                             gpuplan::detail::flash_head_dim_efficiency(head_dim));
    }
  }
  return compute;
}
}  // namespace detail

// One step of `batch` samples per GPU on `num_gpus` GPUs of one kind (PyTorch DDP: the
// gradients are all-reduced, overlapping backward as in timing_comm.hpp's dp_reduction;
// with `zero` 1-3 the model states are sharded as ZeRO, data_parallel_comm). Training: weights, gradients and optimizer
// state under the precision policy of memory_precision.hpp (AMP keeps fp32 weights
// and gradients: 4 + 4 bytes, the same sum as its 2 + 4 master + 2 gradient), the
// saved activations of analyze(), and a backward transient of the largest layer's
// input and output gradients. Time: each conv/linear layer as a GEMM (above), attention
// projections likewise and its core at the FlashAttention fraction, memory-bound layers
// by bytes at efficiency_params::bandwidth_fraction, and the optimizer's traffic.
inline graph_estimate estimate_graph(const graph& g, std::int64_t batch, precision prec, optimizer opt,
                                     const gpu_spec& gpu, bool train = true, const efficiency_params& eff = {},
                                     int num_gpus = 1, bool checkpointing = false, int zero = 0) {
  detail::check_graph_step(batch, prec, opt, gpu, train, num_gpus, checkpointing, zero);
  const graph_cost gc = layers::analyze(g);
  const auto pb = gpuplan::detail::mem::bytes_of(prec);
  const double P = static_cast<double>(gc.params), B = static_cast<double>(batch);
  const detail::sharding_units u = zero >= 3 ? detail::sharding_units_of(g, gc) : detail::sharding_units{P, 0};
  graph_estimate e;
  e.params = gc.params;
  detail::graph_memory(e, g, gc, B, pb, opt, train, num_gpus, checkpointing, zero, u);
  // Backward of a conv/linear layer is two products of the forward's size (input and
  // weight gradients): 3x forward (Kaplan et al. 2020 §2.1, C ≈ 6N per token); checkpointing
  // runs the segments' forward again in backward (Chen et al. 2016): 4x, the recompute
  // counted over the whole forward.
  const double passes = train ? (checkpointing ? 4.0 : 3.0) : 1.0;
  e.flops_per_sample = flops((train ? 3.0 : 1.0) * gc.flops);
  warning_set w{};
  const auto rates = gpuplan::detail::device_rates_of(gpu, prec, eff, w);
  e.compute = seconds(passes * detail::graph_gemm_seconds(g, gc, B, rates, gpu, eff));
  // Memory-bound layers: forward reads and writes each tensor once (analyze()); backward
  // reads the saved tensor and grad_output and writes grad_input, and norms read their
  // input twice for the statistics: about twice the forward's traffic.
  e.memory_bound = seconds(passes * gc.elementwise_elements * pb.act * B / rates.bwe);
  if (train) {
    // torch.optim SGD/Adam (foreach): read weight, gradient and state, write weight and state.
    const double dp = static_cast<double>(num_gpus);
    auto shard = [&](int stage) { return zero >= stage ? dp : 1.0; };
    const double opt_bytes = P * (2 * (pb.weight + pb.master) + pb.grad +
                                  2 * gpuplan::detail::mem::optimizer_bytes_per_param(opt, pb.state));
    e.optimizer_step = seconds(opt_bytes / shard(1) / rates.bwe);  // each GPU updates its shard
  }
  // Eager PyTorch dispatches every tensor call from the host (timing_params.hpp launch_seconds, the
  // transformer model's floor in timing_compute.hpp): each kernel and each module's other calls
  // (graph_cost::host_ops); backward launches about twice the forward's.
  e.launch = seconds(passes * gc.host_ops * eff.launch_seconds);
  e.step = std::max(e.compute + e.memory_bound, e.launch) + e.optimizer_step;
  e.num_gpus = num_gpus;
  if (train && num_gpus > 1) {
    // Backward (with any recompute) is (passes - 1) / passes of the compute and memory-bound time.
    const double busy = in_seconds(e.compute + e.memory_bound);
    const double first_unit = P > 0 ? std::min(1.0, (u.root + u.largest) / P) : 1.0;
    const auto dpc = detail::data_parallel_comm(P, prec, gpu, num_gpus, zero, busy, (passes - 1) / passes * busy, first_unit, eff);
    e.data_parallel_comm = seconds(dpc.whole);
    e.step += seconds(dpc.exposed);
  }
  e.samples_per_s = B * num_gpus / in_seconds(e.step);
  return e;
}

// Wall-clock to see `images` samples `epochs` times at the estimate's throughput.
inline Seconds time_to_train(const graph_estimate& e, double images, double epochs) {
  if (!(images >= 1 && images <= 1e12)) gpuplan::detail::fail("images", "must be in [1, 1e12] (got " + gpuplan::detail::num(images) + ")");
  if (!(epochs > 0 && epochs <= 1e6)) gpuplan::detail::fail("epochs", "must be in (0, 1e6] (got " + gpuplan::detail::num(epochs) + ")");
  return seconds(images * epochs / e.samples_per_s);
}

}  // namespace gpuplan::vision
