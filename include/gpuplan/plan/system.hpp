// plan/system.hpp — the system around a run: nodes, CPU cores, host RAM, power,
// the CUDA floor of the GPU, NVLink and ECC notes (docs/planner.md, "System
// around each row", cites each rule).
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "gpuplan/hardware.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/run.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/timing.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan {

struct cuda_version {
  int major = 0;
  int minor = 0;
  friend bool operator==(const cuda_version&, const cuda_version&) = default;
};

// The first CUDA toolkit that compiles for the GPU's compute capability
// (NVIDIA CUDA Toolkit release notes, first release listing each sm_XX target;
// src/data/gpus.md: sm_89 ≥ 11.8, sm_90 ≥ 12.0, sm_120 ≥ 12.8). sm_100 (B200)
// first shipped in 12.8 too. nullopt for non-NVIDIA or unknown capabilities.
constexpr std::optional<cuda_version> cuda_floor(const gpu_spec& g) {
  if (g.vendor != gpu_vendor::nvidia || g.cc_major <= 0) return std::nullopt;
  const int sm = g.sm();
  if (sm >= 120) return cuda_version{12, 8};
  if (sm >= 100) return cuda_version{12, 8};
  if (sm >= 90) return cuda_version{12, 0};
  if (sm >= 89) return cuda_version{11, 8};
  if (sm >= 87) return cuda_version{11, 4};
  if (sm >= 86) return cuda_version{11, 1};
  if (sm >= 80) return cuda_version{11, 0};
  if (sm >= 75) return cuda_version{10, 0};
  if (sm >= 72) return cuda_version{10, 0};
  if (sm >= 70) return cuda_version{9, 0};
  return std::nullopt;
}

// Sizing rules (docs/planner.md cites each).
inline constexpr int kCpuCoresPerGpuMin = 10;     // logical cores per GPU for data loading (guides: 10–12)
inline constexpr int kCpuCoresPerGpu = 12;        // the guides' upper figure, recommended
inline constexpr double kHostRamPerGpuMemory = 2.0;  // host RAM >= 2 × total GPU memory (guides)
inline constexpr double kCpuSocketWatts = 350.0;   // server CPU TDP per socket (EPYC/Xeon class)
inline constexpr int kGpusPerServer = 8;           // 8-GPU servers (DGX/HGX)
inline constexpr int kCpuSocketsPer8Gpus = 2;      // dual-socket 8-GPU servers (DGX/HGX)
inline constexpr double kPsuMargin = 1.30;         // +30% power-supply margin (guides)
inline constexpr double kCommFractionNeedsNvlink = 0.10;  // exposed comm > 10% of the step
inline constexpr double kLongRunHours = 24;        // a run this long without ECC gets a note

struct system_sizing {
  int nodes = 1;
  int cpu_cores_min = 0;     // logical cores
  int cpu_cores = 0;         // recommended
  Bytes host_ram = bytes(0);  // whole system (all nodes)
  double gpu_watts = 0;
  double cpu_watts = 0;
  double psu_watts = 0;           // (GPU + CPU TDP) × 1.3, whole system
  double psu_watts_per_node = 0;
  std::optional<cuda_version> cuda_min;
  bool nvlink_present = false;
  bool nvlink_needed = false;  // tp > 1, or exposed communication > 10% of the step
  std::string ecc;             // the catalog's yes | no | soft-toggle | unverified
  std::vector<std::string> notes;
};

namespace detail {
// The notes of a sizing: missing NVLink where it is needed, tp beyond the NVLink
// group, ECC, host RAM for offload.
inline std::vector<std::string> system_notes(const scenario& s, const system_sizing& z, const memory_breakdown& mem,
                                             const time_estimate& t) {
  const gpu_spec& g = s.gpu;
  std::vector<std::string> notes;
  if (z.nvlink_needed && !z.nvlink_present)
    notes.emplace_back(s.parallel.tp > 1 ? "no NVLink: tensor-parallel all-reduces run over PCIe every layer"
                                         : "no NVLink: gradient all-reduce over PCIe is a large part of the step");
  if (z.nvlink_present && g.link_group < s.num_gpus && (s.parallel.tp > g.link_group))
    notes.push_back("tp exceeds the NVLink group of " + std::to_string(g.link_group) + " GPUs (" + g.link + ")");
  if (g.ecc == "no" && (s.num_gpus > 1 || in_hours(t.total) > kLongRunHours))
    notes.emplace_back("no ECC: a memory bit-flip goes undetected on a long multi-GPU run; checkpoint often");
  if (g.ecc == "soft-toggle")
    notes.emplace_back("ECC is off by default on this card (nvidia-smi -e 1 enables it at some bandwidth cost)");
  if (in_bytes(mem.host) > in_bytes(s.cluster.host_memory_per_node))
    notes.emplace_back("offload needs more host RAM per node than the cluster's host_memory_per_node");
  return notes;
}
}  // namespace detail

// The system for the settings `s` with their memory and time estimates.
inline system_sizing size_system(const scenario& s, const memory_breakdown& mem, const time_estimate& t) {
  system_sizing z;
  const gpu_spec& g = s.gpu;
  const int n = s.num_gpus;
  const int per_node = std::max(1, s.cluster.gpus_per_node);
  z.nodes = (n + per_node - 1) / per_node;
  z.cpu_cores_min = kCpuCoresPerGpuMin * n;
  z.cpu_cores = kCpuCoresPerGpu * n;
  z.host_ram = bytes(kHostRamPerGpuMemory * n * in_bytes(g.memory) + z.nodes * in_bytes(mem.host));
  const auto servers = [](int gpus) { return (gpus + kGpusPerServer - 1) / kGpusPerServer; };
  const int sockets = kCpuSocketsPer8Gpus * servers(n);
  z.gpu_watts = g.tdp_watts * n;
  z.cpu_watts = kCpuSocketWatts * sockets;
  z.psu_watts = (z.gpu_watts + z.cpu_watts) * kPsuMargin;
  const int node_gpus = std::min(n, per_node);
  z.psu_watts_per_node = (g.tdp_watts * node_gpus + kCpuSocketWatts * kCpuSocketsPer8Gpus * servers(node_gpus)) * kPsuMargin;
  z.cuda_min = cuda_floor(g);
  z.nvlink_present = g.has_nvlink();
  const double step = in_seconds(t.step);
  const double comm_fraction = step > 0 ? in_seconds(t.breakdown.communication) / step : 0.0;
  z.nvlink_needed = s.parallel.tp > 1 || (s.dp() > 1 && comm_fraction > kCommFractionNeedsNvlink);
  z.ecc = g.ecc;
  z.notes = detail::system_notes(s, z, mem, t);
  return z;
}

// The system for a run with the given estimates of it.
inline system_sizing size_system(const run& r, const memory_breakdown& mem, const time_estimate& t) {
  return size_system(r.settings(), mem, t);
}

// The system for a run, estimating its memory and time.
inline system_sizing size_system(const run& r) {
  detail::require_valid(r);
  return size_system(r.settings(), estimate_memory(r), estimate_time(r));
}

}  // namespace gpuplan
