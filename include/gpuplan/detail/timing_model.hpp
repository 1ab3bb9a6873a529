// detail/timing_model.hpp — building blocks of the time model: peak selection,
// the run's device rates, GEMM efficiency, collective costs and link choice.
// Users call estimate_time() (timing.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "gpuplan/detail/timing_params.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/warnings.hpp"

namespace gpuplan::detail {

inline constexpr double kBitsPerByte = 8.0;
// Bytes of one FP8 element (E4M3/E5M2).
inline constexpr double kFp8Bytes = 1.0;
// Attention keeps two tensors per token and layer, K and V (KV cache, ring-attention blocks).
inline constexpr double kKeyAndValue = 2.0;

// Rates a run's matmuls execute at, in FLOP/s, before efficiency.
struct peak_rates {
  double gemm = 0;        // block linears (and everything when not fp8)
  double fp8_gemm = 0;    // FP8-eligible block linears under fp8-mixed (= gemm otherwise)
  double act_bytes = 2;   // bytes per activation element
  bool fp8 = false;
  bool simt = false;      // FP32 without tensor cores (fp32 precision, or bf16 emulated)
};

inline std::string sm_name(const gpu_spec& g) { return "sm_" + std::to_string(g.sm()); }

// The tensor rate whose absence makes select_peaks (below) run p's matmuls at the non-tensor FP32
// rate ("" for fp32 itself, which always does); nullopt where a tensor rate serves p.
inline std::optional<std::string_view> fp32_fallback_of(const gpu_spec& g, precision p) {
  switch (p) {
    case precision::fp32: return "";
    case precision::tf32: return g.tf32 ? std::nullopt : std::optional<std::string_view>("tf32_tflops");
    case precision::fp16_mixed:
      return g.bf16 || g.fp16_acc16 ? std::nullopt : std::optional<std::string_view>("bf16_tflops or fp16_acc16_tflops");
    case precision::bf16_mixed:
    case precision::bf16_pure:
    case precision::fp8_mixed: return g.bf16 ? std::nullopt : std::optional<std::string_view>("bf16_tflops");
  }
  return "";
}

// A GPU file needs only one of bf16, fp16_acc16 and fp32 (catalog.cpp apply_figures), and fp32
// is not needed where a tensor rate serves the run: select_peaks reads it only as the fallback
// above, element-wise and optimizer kernels are bandwidth-bound. A run that falls back to an
// fp32 rate the GPU does not give is refused by name. `path`: "scenario.gpu", or "gpu".
inline void require_fp32_rate(const gpu_spec& g, precision p, const std::string& path) {
  const std::optional<std::string_view> lacking = fp32_fallback_of(g, p);
  const double tflops = in_tflop_per_s(g.fp32);
  if (!lacking || tflops > 0) return;
  const std::string why = lacking->empty() ? "" : " without " + std::string(*lacking);
  const std::string got = tflops == 0 ? "none" : num(tflops);
  fail(path + ".fp32_tflops", "precision " + std::string(to_string(p)) + why + " needs the GPU's fp32 rate (got " + got + ")");
}

// Peak selection (src/data/gpus.md conventions):
//   fp32 -> non-tensor FP32 (PyTorch leaves TF32 off for matmuls by default);
//   tf32 -> tensor TF32 (sm_80+);
//   fp16/bf16 mixed or pure -> tensor BF16/FP16 with FP32 accumulate (`bf16`);
//     GeForce runs FP32 accumulate at half the FP16-accumulate rate (warned);
//   T4/V100 (no bf16): fp16-mixed -> `fp16_acc16` (their FP32-accumulate rate is the
//     same), bf16 -> emulated at the FP32 rate (warned);
//   fp8-mixed -> `fp8` for FP8-eligible GEMMs (Transformer Engine keeps attention,
//     the LM head and embeddings in bf16); needs sm_89+.
inline peak_rates select_peaks(const gpu_spec& g, precision p, warning_set& w) {
  peak_rates r;
  const double fp32 = in_flop_per_s(g.fp32);
  auto half_rate_check = [&] {
    if (g.bf16 && g.fp16_acc16 && in_flop_per_s(*g.fp16_acc16) > 1.8 * in_flop_per_s(*g.bf16))
      w |= warn_fp32_accumulate_half_rate;
  };
  switch (p) {
    case precision::fp32:
      r.gemm = fp32;
      r.simt = true;
      r.act_bytes = 4;
      break;
    case precision::tf32:
      // Without TF32 tensor cores (pre-Ampere) PyTorch's allow_tf32 has no effect:
      // the matmuls run in FP32 (torch.backends.cuda.matmul docs). A warning, not an error.
      if (!g.tf32) {
        w |= warn_tf32_unsupported;
        r.gemm = fp32;
        r.simt = true;
      } else {
        r.gemm = in_flop_per_s(*g.tf32);
      }
      r.act_bytes = 4;
      break;
    case precision::fp16_mixed:
      if (g.bf16) {
        r.gemm = in_flop_per_s(*g.bf16);
        half_rate_check();
      } else if (g.fp16_acc16) {
        r.gemm = in_flop_per_s(*g.fp16_acc16);
      } else {
        r.gemm = fp32;
        r.simt = true;
      }
      break;
    case precision::bf16_mixed:
    case precision::bf16_pure:
      if (g.bf16) {
        r.gemm = in_flop_per_s(*g.bf16);
        half_rate_check();
      } else {
        w |= warn_bf16_emulated;
        r.gemm = fp32;
        r.simt = true;
      }
      break;
    case precision::fp8_mixed:
      // FP8 tensor cores: NVIDIA sm_89+ (Ada, Hopper, Blackwell); AMD CDNA3 (MI300X).
      if (!g.fp8 || (g.vendor == gpu_vendor::nvidia && g.sm() < 89))
        fail("scenario.precision", "fp8-mixed needs FP8 tensor cores (sm_89+); " + g.id + " is " + sm_name(g));
      r.gemm = g.bf16 ? in_flop_per_s(*g.bf16) : fp32;
      half_rate_check();
      r.fp8 = true;
      r.fp8_gemm = in_flop_per_s(*g.fp8);
      return r;
  }
  r.fp8_gemm = r.gemm;
  return r;
}

// Dense GEMM ceiling as a fraction of the dense peak: the LOW end of the measured
// best-shape range (src/data/gpus.md, "measured best-shape dense matmul"): A100
// 81–87%, H100/H200 71–80% (FP8 on H100: 1403 of 1979 TFLOP/s = 71%, the same),
// B200 ≈77%, MI300X 51–60%. The high end is a short benchmark on a cool GPU; a
// training step runs its GEMMs back to back on real (random-like) data at the
// board power limit, where the clock drops (H. He 2024, "Strangely, matrix
// multiplications on GPUs run faster when given 'predictable' data": power-limit
// throttling makes random-data GEMMs slower than zero/constant-data ones).
// Chosen by leave-one-source-out validation over the time cases (docs/time-model.md).
// GeForce parts run above their spec boost clock (RTX 4090 measured 165–179
// TFLOP/s of 165.2): 1.0. Other NVIDIA parts (Volta, Turing, GA10x, Ada
// workstation): 0.80. Non-tensor FP32 (SIMT) SGEMM: cuBLAS reaches ≈90% of the FP32
// peak on large shapes (e.g. V100 ≈14 of 15.7 TFLOP/s; Jia et al. 2018, "Dissecting Volta", §4).
// Parts whose measured best 16-bit matmul falls below their class's ceiling: the best of
// torch.matmul on random normal square matrices of 1024–10240 as a fraction of the catalog's
// dense peak (zzc0721/torch-performance-test-data database.md @9d828276; the median entry where
// a part has several). Power-limited parts throttle under tensor-core load: L4 (72 W) 70.9 of
// 121, T4 (70 W) 41.9 of 65, L40S (350 W) 269.2 of 362, V100 SXM2 94.8 of 125, A100 40GB 246.3
// of 312, A100 PCIe 40GB 234.1 of 312, H100 PCIe (350 W) 495.9 of 756, B200 1696 of 2250.
struct measured_gemm {
  std::string_view id;
  double fraction;
};
inline constexpr std::array<measured_gemm, 9> kMeasuredGemm{{
    {"l4", 70.89 / 121}, {"t4", 41.93 / 65}, {"l40s", 269.15 / 362}, {"v100-sxm2-16gb", 94.84 / 125},
    {"v100-sxm2-32gb", 94.84 / 125}, {"a100-40gb", 246.33 / 312}, {"a100-pcie-40gb", 234.14 / 312},
    {"h100-pcie", 495.93 / 756}, {"b200", 1696.03 / 2250}}};

inline double gpu_gemm_ceiling(const gpu_spec& g, bool simt_fp32 = false) {
  if (simt_fp32) return 0.90;
  if (g.vendor == gpu_vendor::amd) return 0.51;
  const int sm = g.sm();
  const bool geforce = g.bf16 && g.fp16_acc16 && in_flop_per_s(*g.fp16_acc16) > 1.8 * in_flop_per_s(*g.bf16);
  if (geforce) return 1.0;
  double c = 0.80;
  if (sm == 80) c = 0.81;
  else if (sm >= 90 && sm < 100) c = 0.71;
  else if (sm >= 100 && sm < 120) c = 0.77;
  for (const measured_gemm& m : kMeasuredGemm)
    if (m.id == g.id) return std::min(c, m.fraction);
  return c;
}

// The rates one run's kernels see on its GPU, derived once per estimate.
struct device_rates {
  peak_rates peak{};     // select_peaks()
  double bw = 0;         // memory bandwidth, bytes/s (gemm_seconds applies bandwidth_fraction itself)
  double bwe = 0;        // bw · bandwidth_fraction: element-wise kernels, optimizer, decode
  double ceiling = 0;    // gpu_gemm_ceiling()
  double sms = 0;        // gpu_spec::sm_count (0: not given; gemm_shape_factor)
  double mfu_peak = 0;   // the dense peak MFU/HFU divide by: fp8 under fp8-mixed, else the GEMM peak
};

inline device_rates device_rates_of(const gpu_spec& g, precision p, const efficiency_params& e, warning_set& w) {
  device_rates d;
  d.peak = select_peaks(g, p, w);
  d.bw = in_byte_per_s(g.bandwidth);
  d.bwe = d.bw * e.bandwidth_fraction;
  d.ceiling = gpu_gemm_ceiling(g, d.peak.simt);
  d.sms = static_cast<double>(g.sm_count);
  d.mfu_peak = d.peak.fp8 ? d.peak.fp8_gemm : d.peak.gemm;
  return d;
}

// FlashAttention kernel fraction of the dense peak by generation (params).
inline double flash_fraction(const gpu_spec& g, const efficiency_params& e) {
  if (g.sm() >= 90 && g.sm() < 120) return e.flash_fraction_hopper;
  if (g.sm() >= 80) return e.flash_fraction_ampere;
  // Pre-Ampere: no FlashAttention-2; PyTorch SDPA's memory-efficient kernel
  // (xformers cutlass) reaches roughly half of FA2's fraction.
  return 0.5 * e.flash_fraction_ampere;
}

// FlashAttention-2 runs a head on the kernel built for its size rounded up, to a multiple
// of 32 up to 128 and of 64 beyond (flash-attention csrc/flash_attn/flash_api.cpp
// head_size_rounded; PyTorch's SDPA flash backend carries the same code): a 40-wide head
// (Stable Diffusion 1.5) runs the 64-wide kernel, so its FLOPs go at 40/64 of the rate.
inline double flash_head_dim_efficiency(double head_dim) {
  if (!(head_dim > 0)) return 1.0;
  const double step = head_dim <= 128 ? 32.0 : 64.0;
  return head_dim / (step * std::ceil(head_dim / step));
}

// Output tile shapes (rows x columns) the GEMM libraries choose among for 16-bit tensor-core
// GEMMs (CUTLASS's default Ampere/Hopper threadblock shapes; cuBLAS picks one per problem).
struct gemm_tile {
  double m, n;
};
inline constexpr std::array<gemm_tile, 5> kGemmTiles{{{128, 256}, {256, 128}, {128, 128}, {128, 64}, {64, 128}}};

// Tile and wave quantization (NVIDIA Deep Learning Performance Guide, "Matrix Multiplication
// Background"): the m x n output is cut into tiles, and a GPU with S SMs runs them in waves
// of S, so a GEMM takes ceil(tiles / S) waves of a tile's time. Useful work over work paid
// for, m·n / (S · waves · tile area), at the library's best tile shape.
inline double tile_wave_efficiency(double m, double n, double batch, double sms) {
  double best = 0;
  for (const gemm_tile& t : kGemmTiles) {
    const double tiles = batch * std::ceil(m / t.m) * std::ceil(n / t.n);
    best = std::max(best, batch * m * n / (sms * std::ceil(tiles / sms) * t.m * t.n));
  }
  return best;
}

// Shape factor of an (m x k)·(k x n) GEMM on a GPU with `sms` SMs: tile and wave
// quantization of the output, times k/(k + tile_dim) for the main loop's prologue on short
// k. Without an SM count (a custom GPU that gives none) a smooth stand-in: each dimension
// d/(d + tile_dim), and 128 x 128 tiles t as t/(t + tile_waves).
inline double gemm_shape_factor(double m, double n, double k, double batch, double sms, const efficiency_params& e) {
  auto dim = [&](double d) { return d / (d + e.tile_dim); };
  if (sms >= 1) return dim(k) * tile_wave_efficiency(m, n, batch, sms);
  const double tiles = batch * std::ceil(m / 128.0) * std::ceil(n / 128.0);
  return dim(m) * dim(n) * dim(k) * tiles / (tiles + e.tile_waves);
}

// Time of `count` GEMMs of shape (m,n,k) (batched `batch` times each): the slower of
// the compute time at the shape's efficiency and the operand traffic over HBM.
inline double gemm_seconds(double m, double n, double k, double batch, double count, double peak, double ceiling,
                           double sms, double bw, double elem_bytes, const efficiency_params& e) {
  if (m <= 0 || n <= 0 || k <= 0 || count <= 0) return 0;
  const double fl = 2.0 * m * n * k * batch;
  const double rate = peak * ceiling * e.matmul_scale * gemm_shape_factor(m, n, k, batch, sms, e);
  const double tc = fl / std::max(rate, 1.0);
  const double tm = elem_bytes * batch * (m * k + k * n + m * n) / std::max(bw * e.bandwidth_fraction, 1.0);
  return count * std::max(tc, tm);
}

// ---- communication -------------------------------------------------------
struct comm_link {
  double bytes_per_s = 0;  // per direction, before comm_fraction
  double latency = 0;      // per ring step
};

// Inter-node bandwidth per GPU: the scenario's, else the GPU generation's
// reference design (gpuplan::internode_per_gpu in hardware.hpp).
inline double internode_bytes_per_s(const gpu_spec& g, const cluster_spec& c) {
  return in_byte_per_s(internode_per_gpu(g, c));
}

// The link a group of `n` GPUs whose members are `stride` apart uses. Layout:
// tp innermost, then pp, then dp (Megatron-LM's default rank order).
inline comm_link group_link(const scenario& run, int n, int stride) {
  const cluster_spec& c = run.cluster;
  const gpu_spec& g = run.gpu;
  const int per_node = std::max(1, c.gpus_per_node);
  const bool spans_nodes = static_cast<long long>(n) * stride > per_node && run.num_gpus > per_node;
  double intra = in_byte_per_s(pcie_per_direction(g.pcie_gen, g.pcie_lanes));
  // NVLink only when every member of the in-node part of the group shares it.
  const int in_node = spans_nodes ? std::max(1, per_node / std::max(1, stride)) : n;
  if (g.has_nvlink() && static_cast<long long>(std::min(n, in_node)) * stride <= g.link_group)
    intra = in_byte_per_s(g.link_per_direction);
  if (!spans_nodes) return {intra, in_seconds(c.intranode_latency)};
  return {std::min(intra, internode_bytes_per_s(g, c)), in_seconds(c.internode_latency)};
}

// Ring all-reduce: 2(n-1)/n · S over the bus bandwidth + 2(n-1) latency steps
// (Patarasuk & Yuan 2009; NCCL docs "Performance: bus bandwidth").
inline double all_reduce_seconds(double bytes, int n, const comm_link& l, const efficiency_params& e) {
  if (n <= 1 || bytes <= 0) return 0;
  const double f = static_cast<double>(n - 1) / n;
  return 2.0 * f * bytes / (l.bytes_per_s * e.comm_fraction) + 2.0 * (n - 1) * l.latency;
}
// Reduce-scatter or all-gather of a buffer of `bytes` (whole, unsharded): (n-1)/n · S.
inline double gather_seconds(double bytes, int n, const comm_link& l, const efficiency_params& e) {
  if (n <= 1 || bytes <= 0) return 0;
  const double f = static_cast<double>(n - 1) / n;
  return f * bytes / (l.bytes_per_s * e.comm_fraction) + (n - 1) * l.latency;
}
// All-to-all (MoE dispatch/combine): each GPU sends (n-1)/n of its buffer.
inline double all_to_all_seconds(double bytes, int n, const comm_link& l, const efficiency_params& e) {
  return gather_seconds(bytes, n, l, e);
}
// Point-to-point send of `bytes`.
inline double p2p_seconds(double bytes, const comm_link& l, const efficiency_params& e) {
  if (bytes <= 0) return 0;
  return bytes / (l.bytes_per_s * e.comm_fraction) + l.latency;
}

}  // namespace gpuplan::detail
