// detail/timing_params.hpp — the efficiency defaults of the time model, in one
// struct so calibration (calibrate.hpp) can pass other values. One set of
// defaults serves every GPU; each figure's source is in docs/time-model.md.
#pragma once

namespace gpuplan {

struct efficiency_params {
  // --- the three parameters calibrate() fits ---
  // Multiplies each GPU's best-shape GEMM ceiling (gpu_gemm_ceiling()).
  double matmul_scale = 1.0;
  // Achieved fraction of HBM/GDDR bandwidth for element-wise kernels, optimizer
  // and decode (STREAM-like kernels reach 80–90% on A100/H100; eager small
  // kernels less): 0.8.
  double bandwidth_fraction = 0.8;
  // NCCL bus bandwidth / link bandwidth per direction (nccl-tests all_reduce_perf
  // on DGX A100 ≈ 230 of 300 GB/s NVLink; IB HDR ≈ 0.8–0.9 of line rate): 0.8.
  double comm_fraction = 0.8;

  // --- fixed defaults (documented, not fitted) ---
  // GEMM shape factor (timing_model.hpp gemm_shape_factor): k contributes k/(k + tile_dim)
  // beside the tile and wave quantization over the GPU's SMs; for a GPU without an SM
  // count, each dimension d contributes d/(d + tile_dim) and the 128x128 output tiles t
  // t/(t + tile_waves).
  double tile_dim = 64;
  double tile_waves = 8;
  // FlashAttention-2 fwd+bwd achieved fraction of the dense peak: 50–73% on A100
  // (Dao 2023, Fig. 4–6); 35% on H100 (Shah et al. 2024, FlashAttention-3 abstract:
  // "FlashAttention-2 ... achieving only 35% utilization on the H100").
  double flash_fraction_ampere = 0.60;
  double flash_fraction_hopper = 0.35;
  // Element accesses of eager attention's scale/mask/softmax/dropout chain on the
  // s×s scores relative to a fused kernel: ~2x (each op reads and writes the whole
  // score tensor instead of once per chain). The block's other element-wise ops
  // are counted op by op (timing_compute.hpp elementwise_seconds).
  double unfused_factor = 2.0;
  // DDP overlaps bucketed gradient all-reduce with backward; this fraction of the
  // last micro-batch's backward can hide communication (Li et al. 2020, PyTorch
  // DDP, VLDB §5: overlap is partial as NCCL shares SMs and buckets fill late).
  double ddp_overlap = 0.8;
  // FSDP / ZeRO-3 prefetch hides this fraction of compute time behind all-gathers.
  double fsdp_overlap = 0.8;
  // PCIe achieved fraction (protocol overhead: ~80% of the x16 figure).
  double pcie_fraction = 0.8;
  // CPU Adam throughput per node in parameters/s (DeepSpeed CPUAdam, AVX-512,
  // ZeRO-Offload paper, Ren et al. 2021, §5 "≈1 s per billion parameters" order).
  double cpu_adam_params_per_s = 1.0e9;
  // NVMe bandwidth per node for ZeRO-Infinity optimizer offload (one PCIe Gen4 SSD ≈ 6 GB/s).
  double nvme_bytes_per_s = 6.0e9;
  // Host-side cost per kernel in eager PyTorch (Python module call + dispatcher +
  // autograd recording, ~10–30 µs/op for HF-style modules; PyTorch performance
  // tuning guide, "CPU overhead"). A micro-batch takes at least kernels x this:
  // the GPU idles when the host cannot launch fast enough (small models/batches).
  double launch_seconds = 20e-6;
  // Power at idle / communication-bound time as a fraction of TDP (energy model).
  double idle_power_fraction = 0.3;
  friend bool operator==(const efficiency_params&, const efficiency_params&) = default;
};

}  // namespace gpuplan
