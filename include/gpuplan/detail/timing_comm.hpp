// detail/timing_comm.hpp — communication phase of the time model: the collectives of
// one training step (TP, EP, CP and PP per micro-batch; ZeRO-3/FSDP gathers per
// micro-batch; the data-parallel gradient reduction once per step), each as its total
// time and the part left exposed after overlap with compute. Collective costs and
// links: timing_model.hpp; formulas and sources: docs/time-model.md, "Communication".
#pragma once

#include <algorithm>

#include "gpuplan/detail/timing_compute.hpp"
#include "gpuplan/detail/timing_model.hpp"
#include "gpuplan/detail/timing_params.hpp"
#include "gpuplan/flops.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan::detail {

// PyTorch DDP bucket_cap_mb default: 25 MiB; at least the last bucket's all-reduce is exposed (Li et al. 2020).
inline constexpr double kDdpBucketBytes = 25.0 * kMiB;
// MoE dispatch and combine: two all-to-alls per block forward (Megatron-Core MoEAlltoAllTokenDispatcher).
inline constexpr double kMoeAllToAllsPerBlock = 2.0;
// Backward moves 2× the forward's all-to-all traffic (the model's assumption, docs/time-model.md "EP").
inline constexpr double kMoeBackwardAllToAllPasses = 2.0;
// Ring attention backward passes K,V and their gradients around the ring: 2× the forward traffic
// (Liu et al. 2023, Ring Attention).
inline constexpr double kRingAttentionBackwardPasses = 2.0;
// Pipeline point-to-point per micro-batch: the activation forward and its gradient backward (Narayanan 2021 §2.2).
inline constexpr double kPipelineSendsPerMicrobatch = 2.0;
// ZeRO-3 / FSDP all-gathers the parameters for forward and again for backward (Rajbhandari et al. 2020,
// ZeRO, communication analysis of P_os+g+p: 3Ψ per step with the gradient reduce-scatter).
inline constexpr double kZero3GathersPerMicrobatch = 2.0;

// Without PCIe peer-to-peer (GeForce, gpu_spec::p2p false) NCCL stages every transfer in
// host memory (SHM transport: PCIe to the host and back). Measured on 2x RTX 5090, PCIe 5.0
// x8, without and with P2P: 24 vs 28 GB/s one way, 14 vs 0.48 us latency (patched
// tinygrad/open-gpu-kernel-modules fork benchmarks, 2025; src/data/gpus.md "p2p").
inline constexpr double kHostStagedBandwidthFactor = 24.0 / 28.0;
inline constexpr double kHostStagedLatencySeconds = 14e-6;

// The link of a collective over `n` GPUs `stride` apart (group_link), through host memory
// when the in-node path is PCIe and the card has no peer-to-peer.
inline comm_link collective_link(const scenario& run, int n, int stride) {
  comm_link l = group_link(run, n, stride);
  const gpu_spec& g = run.gpu;
  const double pcie = in_byte_per_s(pcie_per_direction(g.pcie_gen, g.pcie_lanes));
  const bool over_pcie = l.bytes_per_s == pcie && !(g.has_nvlink() && in_byte_per_s(g.link_per_direction) == pcie);
  if (!g.p2p && n > 1 && over_pcie) {  // PCIe inside the node (not NVLink, not a slower network)
    l.bytes_per_s = pcie * kHostStagedBandwidthFactor;
    l.latency = std::max(l.latency, kHostStagedLatencySeconds);
  }
  return l;
}

// Bytes per parameter gathered (ZeRO-1..3 all-gathers, offload upload): the working copy, fp32 under fp32/tf32, else 16-bit.
inline double gathered_weight_bytes(const scenario& run) {
  return (precision_of(run) == precision::fp32 || precision_of(run) == precision::tf32) ? 4.0 : 2.0;
}
// Gradient bytes reduced per parameter: DDP under AMP reduces the fp32 parameter
// gradients (4 B); ZeRO/FSDP mixed precision and pure 16-bit reduce 16-bit gradients (2 B).
inline double reduced_gradient_bytes(const scenario& run) {
  const bool pure = precision_of(run) == precision::bf16_pure;
  return (precision_of(run) == precision::fp32 || precision_of(run) == precision::tf32) ? 4.0
         : (run.parallel.zero == 0 && !pure)                          ? 4.0
                                                                      : 2.0;
}

// Parameters one GPU holds before data-parallel sharding (one tp × pp shard).
struct stage_parameters {
  std::int64_t total = 0;      // whole model
  std::int64_t trainable = 0;  // whole model, trainable_parameters()
  double params = 0;           // total / (tp·pp)
  double trainable_params = 0; // trainable / (tp·pp)
};

inline stage_parameters stage_parameters_of(const scenario& run, std::int64_t total, std::int64_t trainable) {
  const int tp = run.parallel.tp_size(), pp = run.parallel.pp;
  return {total, trainable, static_cast<double>(total) / (tp * pp), static_cast<double>(trainable) / (tp * pp)};
}

// Exposed communication of one micro-batch on one stage, by group.
struct block_comm {
  double tp = 0;
  double ep = 0;
  double cp = 0;
};

// `acc` plus one group of blocks' exposed TP, EP and CP communication per micro-batch.
// TP (Megatron): the forward all-reduces are exposed, and so are the ones a full recompute
// repeats; with sp each becomes reduce-scatter + all-gather of the same bytes. Backward: the
// all-reduce of a column-parallel linear's input gradient runs beside that linear's
// weight-gradient GEMM (Megatron-LM tensor_parallel/layers.py
// LinearWithGradAccumulationAndAsyncCommunication, on by default): only the excess over the
// dW GEMM (as long as the linear's forward) is exposed; cross attention's extra one and
// frozen blocks (no dW GEMM) stay exposed. EP: dispatch + combine all-to-alls of T·k·h,
// exposed. CP: ring attention passes K,V (cp−1) times per layer beside the attention core;
// the excess is exposed.
inline block_comm plus_block_comm(block_comm acc, const architecture& a, const scenario& run, const block_group& g,
                                  const backward_scope& sc, const microbatch_shape& m, double act_bytes,
                                  const efficiency_params& e) {
  if (g.count <= 0) return acc;
  const block_cost& c = g.cost;
  const int tp = run.parallel.tp_size(), cp = run.parallel.cp, ep = run.parallel.ep;
  const double path = g.count * sc.path_blocks;
  const double trained = g.count * sc.trained_blocks;
  const double coll = run.ckpt == checkpointing::full ? path + path : path;  // backward + recomputed forward
  const double ar = all_reduce_seconds(c.tp_bytes, tp, collective_link(run, tp, 1), e);
  const double bwd_exposed = tp > 1 ? std::max(0.0, ar - c.linear_col_attn) + std::max(0.0, ar - c.linear_col_mlp) +
                                          (c.tp_collectives - kTpAllReducesPerBlock) * ar
                                    : 0.0;
  acc.tp += (g.count + (coll - path)) * c.tp_collectives * ar + trained * bwd_exposed;
  if (path > trained) acc.tp += (path - trained) * c.tp_collectives * ar;
  if (a.is_moe() && ep > 1) {
    const double bytes = m.tokens * static_cast<double>(a.hidden) * act_bytes * static_cast<double>(a.experts_per_token);
    const comm_link epl = collective_link(run, ep, tp * run.parallel.pp);
    acc.ep += (g.count + kMoeBackwardAllToAllPasses * path) * kMoeAllToAllsPerBlock * all_to_all_seconds(bytes, ep, epl, e);
  }
  if (cp > 1) {
    const double kv = m.tokens * kKeyAndValue * static_cast<double>(a.kv_dim()) * act_bytes / tp;
    const double t = (cp - 1) * p2p_seconds(kv, collective_link(run, cp, tp), e);
    acc.cp += g.count * std::max(0.0, t - c.core) + path * std::max(0.0, kRingAttentionBackwardPasses * t - c.core_bwd);
  }
  return acc;
}

// Pipeline point-to-point seconds per micro-batch: one activation send forward, one gradient
// send backward, T·h elements (÷tp with sp: each tensor-parallel rank sends its shard, the
// scatter/gather optimization of Narayanan et al. 2021).
inline double pipeline_p2p_seconds(const architecture& a, const scenario& run, const microbatch_shape& m, double act_bytes,
                                   const efficiency_params& e) {
  const int tp = run.parallel.tp_size(), pp = run.parallel.pp;
  if (pp <= 1) return 0.0;
  const double bytes = m.tokens * static_cast<double>(a.hidden) * act_bytes / (run.parallel.sp_enabled() ? tp : 1);
  return kPipelineSendsPerMicrobatch * p2p_seconds(bytes, collective_link(run, pp, tp), e);
}

// ZeRO-3 / FSDP per micro-batch: all-gather the stage's parameters for forward and for backward,
// reduce-scatter its gradients (Rajbhandari et al. 2020). Prefetch hides up to fsdp_overlap
// of the micro-batch's compute; the first layer's gather cannot be prefetched.
struct zero3_comm {
  double per_microbatch = 0;  // all of it
  double exposed = 0;         // after overlap with compute
};

// The same for any model: `first_unit` is the share of the parameters in the first unit
// gathered (one layer of a transformer stage, the largest wrapped block of a layer graph).
inline zero3_comm zero3_gathers(const scenario& run, const stage_parameters& p, double first_unit, double compute_mb,
                                const efficiency_params& e) {
  const int dp = std::max(1, run.dp());
  if (run.parallel.zero != 3 || dp <= 1) return {};
  const comm_link dpl = collective_link(run, dp, run.parallel.tp_size() * run.parallel.pp);
  const double ag = gather_seconds(p.params * gathered_weight_bytes(run), dp, dpl, e);
  const double rs = gather_seconds(p.trainable_params * reduced_gradient_bytes(run), dp, dpl, e);
  zero3_comm z;
  z.per_microbatch = kZero3GathersPerMicrobatch * ag + rs;
  z.exposed = std::max(0.0, z.per_microbatch - e.fsdp_overlap * compute_mb) + first_unit * ag;
  return z;
}

inline zero3_comm zero3_per_microbatch(const architecture& a, const scenario& run, const stage_parameters& p,
                                       double compute_mb, const efficiency_params& e) {
  const double layers = std::max(1.0, static_cast<double>(a.total_layers()) / run.parallel.pp);
  return zero3_gathers(run, p, 1.0 / layers, compute_mb, e);
}

// Data-parallel gradient reduction, once per step (DDP no_sync during accumulation), ZeRO-0..2.
// ZeRO-0 (DDP): all-reduce; ZeRO-1/2: reduce-scatter (half an all-reduce). Either overlaps
// with the last micro-batch's backward up to ddp_overlap, and at least one bucket is
// exposed (Li et al. 2020). ZeRO-1/2 then all-gather the updated parameters, exposed.
struct dp_comm {
  double reduce = 0;   // all-reduce (ZeRO-0) or reduce-scatter (ZeRO-1/2) of the gradients
  double gather = 0;   // ZeRO-1/2 all-gather of the updated parameters
  double exposed = 0;  // after overlap with backward
};

inline dp_comm dp_reduction(const scenario& run, const stage_parameters& p, const compute_cost& c,
                            const efficiency_params& e) {
  const int dp = std::max(1, run.dp());
  if (dp <= 1 || run.parallel.zero >= 3) return {};
  const comm_link dpl = collective_link(run, dp, run.parallel.tp_size() * run.parallel.pp);
  const double bytes = p.trainable_params * reduced_gradient_bytes(run);
  const double t = run.parallel.zero == 0 ? all_reduce_seconds(bytes, dp, dpl, e) : gather_seconds(bytes, dp, dpl, e);
  const double bucket = all_reduce_seconds(std::min(bytes, kDdpBucketBytes), dp, dpl, e);
  dp_comm d;
  d.reduce = t;
  d.exposed = std::max(bucket, t - e.ddp_overlap * c.backward_share * c.microbatch);
  if (run.parallel.zero >= 1) {
    d.gather = gather_seconds(p.trainable_params * gathered_weight_bytes(run), dp, dpl, e);
    d.exposed += d.gather;
  }
  return d;
}

// Communication of one training step.
struct comm_cost {
  block_comm blocks{};                // TP, EP, CP per micro-batch, exposed
  double pp = 0;                      // pipeline p2p per micro-batch (exposed)
  zero3_comm zero3{};                 // ZeRO-3 per micro-batch
  dp_comm dp{};                       // DP reduction per step
  double microbatch_exposed = 0;      // exposed per micro-batch: tp + ep + cp + pp + ZeRO-3
  double step_exposed = 0;            // exposed per step: grad_accum × micro-batch + DP
  double total = 0;                   // all of a step's communication, overlapped or not
};

inline comm_cost communication(const architecture& a, const scenario& run, const microbatch_shape& m,
                               const stage_blocks& blocks, const backward_scope& sc, const compute_cost& c,
                               const stage_parameters& p, double act_bytes, const efficiency_params& e) {
  comm_cost k;
  k.blocks = plus_block_comm(block_comm{}, a, run, blocks.plain, sc, m, act_bytes, e);
  k.blocks = plus_block_comm(k.blocks, a, run, blocks.decoder, sc, m, act_bytes, e);
  k.pp = pipeline_p2p_seconds(a, run, m, act_bytes, e);
  k.zero3 = zero3_per_microbatch(a, run, p, c.microbatch, e);
  k.dp = dp_reduction(run, p, c, e);
  const double ga = static_cast<double>(run.grad_accum);
  const double exposed_mb = k.blocks.tp + k.blocks.ep + k.blocks.cp + k.pp;
  k.microbatch_exposed = exposed_mb + k.zero3.exposed;
  k.step_exposed = ga * k.microbatch_exposed + k.dp.exposed;
  k.total = k.zero3.per_microbatch * ga + exposed_mb * ga;
  k.total += k.dp.reduce;
  k.total += k.dp.gather;
  return k;
}

}  // namespace gpuplan::detail
