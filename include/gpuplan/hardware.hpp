// hardware.hpp — GPU, link and node descriptions. All tensor rates are DENSE
// (no 2:4 sparsity) and `bf16` is tensor-core BF16/FP16 with FP32 accumulate
// (src/data/gpus.md; NVIDIA datasheets halved where sparse).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "gpuplan/units.hpp"

namespace gpuplan {

enum class gpu_vendor : std::uint8_t { nvidia, amd, other };

struct gpu_spec {
  std::string id;    // catalog id, e.g. "rtx-4090"
  std::string name;  // marketing name
  std::string arch;  // "Ada Lovelace", "Hopper", ...
  gpu_vendor vendor = gpu_vendor::nvidia;
  int cc_major = 0;  // CUDA compute capability (0 for non-NVIDIA)
  int cc_minor = 0;
  std::string compute_capability;  // as published ("8.9", "gfx942")

  Bytes memory = bytes(0);         // nominal capacity (datasheet "GB", which is GiB-ish)
  Bytes usable_memory = bytes(0);  // what a process can use: nvidia-smi total
  ByteRate bandwidth = byte_per_s(0);

  FlopRate fp64 = flop_per_s(0);
  FlopRate fp32 = flop_per_s(0);                 // non-tensor FP32
  std::optional<FlopRate> tf32{};                  // dense tensor TF32
  std::optional<FlopRate> bf16{};                  // dense tensor BF16/FP16, FP32 accumulate
  std::optional<FlopRate> fp16_acc16{};            // dense tensor FP16 with FP16 accumulate
  std::optional<FlopRate> fp8{};                   // dense FP8 (sm_89+)
  std::optional<FlopRate> int8{};

  std::string link = "none";                     // "nvlink4", "nvlink3-bridge-2way", "none", ...
  ByteRate link_per_direction = byte_per_s(0);   // GPU-GPU link bandwidth, one direction
  int link_group = 1;                            // GPUs joined by that link (bridge: 2; NVSwitch: 8)
  int pcie_gen = 4;
  int pcie_lanes = 16;
  double tdp_watts = 0;
  std::string ecc = "no";                        // yes | no | soft-toggle | unverified
  bool mig = false;
  // CUDA peer-to-peer over PCIe allowed by the driver; false on GeForce cards
  // (NVIDIA developer forum, 2022-12: no P2P on the RTX 4090; src/data/gpus.md).
  bool p2p = true;
  int year = 0;
  // Streaming multiprocessors (AMD: compute units of one device); 0 = not given. A GEMM's
  // output tiles run in waves of sm_count (timing_model.hpp gemm_shape_factor).
  int sm_count = 0;
  std::string confidence;                        // the catalog's confidence column, verbatim

  [[nodiscard]] constexpr bool has_bf16() const noexcept { return bf16.has_value(); }
  [[nodiscard]] constexpr bool has_fp8() const noexcept { return fp8.has_value(); }
  [[nodiscard]] constexpr bool has_nvlink() const noexcept { return link != "none" && link_per_direction.value() > 0; }
  [[nodiscard]] constexpr int sm() const noexcept { return cc_major * 10 + cc_minor; }

  friend bool operator==(const gpu_spec&, const gpu_spec&) = default;
};

// PCIe bandwidth per direction, x16-equivalent scaled by lanes: Gen3 ≈ 16 GB/s,
// Gen4 ≈ 32 GB/s, Gen5 ≈ 64 GB/s for x16 (PCI-SIG; src/data/gpus.md). Effective
// throughput is lower (~80% after protocol overhead); callers apply efficiency.
// Integrated GPUs (Jetson: no lanes in the catalog) are taken as x16.
constexpr ByteRate pcie_per_direction(int gen, int lanes) {
  const double x16 = gen <= 3 ? 16e9 : gen == 4 ? 32e9 : gen == 5 ? 64e9 : 128e9;
  return byte_per_s(x16 * (lanes > 0 ? lanes : 16) / 16.0);
}

// The machines GPUs live in: intra-node links come from the GPU, inter-node
// network from here (unset = the reference design of the GPU's generation,
// see internode_per_gpu() below).
struct cluster_spec {
  int gpus_per_node = 8;
  std::optional<ByteRate> internode_per_gpu{};
  Seconds internode_latency = seconds(5e-6);
  Seconds intranode_latency = seconds(2e-6);
  Bytes host_memory_per_node = gib(1024);  // typical 8-GPU server; warn above it

  friend bool operator==(const cluster_spec&, const cluster_spec&) = default;
};

// Inter-node bandwidth per GPU per direction. Unless the scenario sets it, the
// NVIDIA reference design of the GPU's generation: DGX A100 8 x 200 Gb/s HDR
// InfiniBand per 8 GPUs (25 GB/s per GPU); DGX H100/B200 8 x 400 Gb/s NDR (50 GB/s).
constexpr ByteRate internode_per_gpu(const gpu_spec& g, const cluster_spec& c) {
  if (c.internode_per_gpu) return *c.internode_per_gpu;
  const bool ndr = g.vendor == gpu_vendor::nvidia && g.sm() >= 90 && g.sm() < 120;
  return gb_per_s(ndr ? 50.0 : 25.0);
}

}  // namespace gpuplan
