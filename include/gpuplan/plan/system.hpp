// plan/system.hpp — a machine you can buy (or the instance you rent) around a run:
// the platform class, CPU cores, host RAM, power supply and wall circuit, PCIe lanes
// per GPU, the CUDA toolkit and driver floor of the GPU, NVLink and ECC notes
// (docs/planner.md, "System around each row", cites each rule).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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

// The oldest Linux driver that runs a CUDA toolkit (CUDA Toolkit release notes,
// Table 3 "CUDA Toolkit and Corresponding Driver Versions", GA releases).
constexpr std::string_view driver_floor(const cuda_version& v) {
  if (v.major >= 13) return "580.65.06";
  if (v.major == 12 && v.minor >= 8) return "570.26";
  if (v.major == 12) return "525.60.13";
  if (v.major == 11 && v.minor >= 8) return "520.61.05";
  if (v.major == 11 && v.minor >= 4) return "470.42.01";
  if (v.major == 11 && v.minor >= 1) return "455.23";
  if (v.major == 11) return "450.36.06";
  if (v.major == 10) return "410.48";
  return "384.81";  // CUDA 9.0
}

// The class of machine that holds the GPUs of one node.
enum class platform_class : std::uint8_t {
  desktop,      // one consumer CPU, ATX power supply (1-2 GPUs)
  workstation,  // HEDT / workstation CPU (Threadripper PRO, Xeon W): 3-4 GPUs
  server,       // 2-socket server (EPYC / Xeon SP): 8-GPU boards and > 4 GPUs
  cloud,        // a rented instance: the provider sizes CPU, RAM and power
};
inline constexpr std::array<std::string_view, 4> kPlatformClassNames{"desktop", "workstation", "server", "cloud"};
constexpr std::string_view to_string(platform_class p) { return kPlatformClassNames[static_cast<std::size_t>(p)]; }

// What each platform class offers (one row per class, docs/planner.md cites each).
struct platform_spec {
  platform_class id;
  int max_gpus;          // GPUs one such machine holds
  int max_cores;         // physical cores of the largest CPU(s) of the class
  double cpu_watts;      // CPU TDP (all sockets)
  int gpu_pcie_lanes;    // CPU PCIe lanes available to GPUs
};
inline constexpr std::array<platform_spec, 4> kPlatforms{{
    // Core i9-14900K: 24 cores, 125 W base power, 16 CPU lanes for graphics (x8/x8 for two cards);
    // Ryzen 9 7950X: 16 cores, AM5 x16 graphics (Intel ARK; AMD product pages).
    {platform_class::desktop, 2, 24, 125, 16},
    // Threadripper PRO 7985WX/7995WX: 64-96 cores, 350 W, 128 PCIe 5.0 lanes (AMD product page).
    {platform_class::workstation, 4, 96, 350, 128},
    // 2 × EPYC 9004 (up to 96 cores, 360 W each; 128 lanes per socket, 160 usable in 2P)
    // as in DGX/HGX-class 8-GPU servers (AMD EPYC 9004 product brief).
    {platform_class::server, 8, 192, 720, 160},
    // Rented instances: the provider's vCPUs and RAM (src/data/instances.csv).
    {platform_class::cloud, 8, 0, 0, 0},
}};
constexpr const platform_spec& platform_of(platform_class p) { return kPlatforms[static_cast<std::size_t>(p)]; }

// GeForce cards go in one machine: their driver licence forbids datacenter deployment
// (NVIDIA GeForce software licence, "No Datacenter Deployment"), they have no PCIe
// peer-to-peer (src/data/gpus.csv p2p), and a workstation holds four
// (plan/system.hpp kPlatforms). Nobody builds nodes of them.
inline bool is_consumer_card(const gpu_spec& g) { return g.name.rfind("GeForce", 0) == 0; }
inline int max_cards_of(const gpu_spec& g, int max_gpus) {
  return is_consumer_card(g) ? std::min(max_gpus, platform_of(platform_class::workstation).max_gpus) : max_gpus;
}

// Sizing rules (docs/planner.md cites each).
inline constexpr int kCpuCoresPerGpuMin = 4;         // data-loading workers per GPU (PyTorch DataLoader num_workers 2-4 + the training process)
inline constexpr int kCpuCoresPerGpu = 8;            // recommended, capped by the platform
inline constexpr double kHostRamPerGpuMemory = 2.0;  // host RAM >= 2 × total GPU memory (GPU selection guides)
inline constexpr double kOtherSystemWatts = 150.0;   // board, RAM, drives, fans
inline constexpr double kPsuMargin = 1.30;           // +30% power-supply headroom (GPU selection guides)
// ATX power-supply sizes sold (Corsair/Seasonic ranges); above the largest: more than one PSU or a server chassis.
inline constexpr std::array<double, 8> kPsuSizes{550, 650, 750, 850, 1000, 1200, 1600, 2000};
inline constexpr double kPsuEfficiency = 0.90;       // 80 PLUS Gold at 50% load (80 PLUS programme)
// One circuit's continuous load: NEC 210.19/210.20, continuous loads at 80% of the breaker.
inline constexpr double kCircuit120V15AWatts = 120.0 * 15.0 * 0.8;  // 1,440 W (North America)
inline constexpr double kCircuit230V16AWatts = 230.0 * 16.0;        // 3,680 W (IEC 60884 Schuko / BS 1363 class)
// DIMM-population totals people buy (GB): the host RAM figure is rounded up to one.
inline constexpr std::array<double, 14> kRamSizesGb{16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072};
inline constexpr double kCommFractionNeedsNvlink = 0.10;  // exposed comm > 10% of the step
inline constexpr double kLongRunHours = 24;               // a run this long without ECC gets a note

struct system_sizing {
  platform_class platform = platform_class::desktop;
  int nodes = 1;
  int gpus_per_node = 1;
  int cpu_cores_min = 0;      // per node: kCpuCoresPerGpuMin × GPUs
  int cpu_cores = 0;          // per node: recommended, capped by the platform
  Bytes host_ram = bytes(0);  // per node, rounded up to a size people buy
  double gpu_watts = 0;       // per node: Σ GPU TDP
  double cpu_watts = 0;       // per node
  double psu_watts = 0;       // per node: (GPU + CPU + 150 W) × 1.3, rounded up to a PSU size (server: to 100 W)
  double psu_watts_per_node = 0;  // = psu_watts (kept for older readers)
  double wall_watts = 0;      // per node at full load: (GPU + CPU + 150 W) / PSU efficiency
  int pcie_lanes_per_gpu = 0; // what the platform gives each GPU (0: cloud / not applicable)
  std::optional<cuda_version> cuda_min;
  std::string driver_min;     // Linux driver for cuda_min; empty when unknown
  bool nvlink_present = false;
  bool nvlink_needed = false;  // tp > 1, or exposed communication > 10% of the step
  std::string ecc;             // the catalog's yes | no | soft-toggle | unverified
  std::vector<std::string> notes;
};

namespace detail {

// The platform for `node_gpus` GPUs of `g` per node: 8-GPU boards (NVSwitch/SXM, link
// group >= 4) and more than 4 cards need a server; 3-4 a workstation; else a desktop.
constexpr platform_class platform_for(const gpu_spec& g, int node_gpus) {
  if (g.link_group >= 4 || node_gpus > platform_of(platform_class::workstation).max_gpus) return platform_class::server;
  if (node_gpus > platform_of(platform_class::desktop).max_gpus) return platform_class::workstation;
  return platform_class::desktop;
}

inline double round_up_to(double x, double step) { return std::ceil(x / step) * step; }

// Watts a power supply must deliver rounded up to a size sold (ATX) or to 100 W.
inline double psu_size(double watts, platform_class p) {
  if (p != platform_class::server)
    for (const double s : kPsuSizes)
      if (s >= watts) return s;
  return round_up_to(watts, 100.0);
}

inline double ram_size_gb(double gb) {
  for (const double s : kRamSizesGb)
    if (s >= gb) return s;
  return round_up_to(gb, 1024.0);
}

// PCIe lanes each GPU gets: the platform's GPU lanes split among the cards, in the
// widths slots come in (16, 8, 4), never more than the card has.
constexpr int lanes_per_gpu(const platform_spec& p, const gpu_spec& g, int node_gpus) {
  if (p.gpu_pcie_lanes <= 0 || g.pcie_lanes <= 0) return 0;
  const int share = p.gpu_pcie_lanes / std::max(1, node_gpus);
  const int width = share >= 16 ? 16 : share >= 8 ? 8 : share >= 4 ? 4 : 1;
  return std::min(width, g.pcie_lanes);
}

// The notes of a sizing: missing NVLink where it is needed, tp beyond the NVLink
// group, ECC, host RAM for offload, power circuits, PCIe lanes.
inline std::vector<std::string> system_notes(const scenario& s, const system_sizing& z, const memory_breakdown& mem,
                                             const time_estimate& t) {
  const gpu_spec& g = s.gpu;
  std::vector<std::string> notes;
  if (z.nvlink_needed && !z.nvlink_present)
    notes.emplace_back(s.parallel.tp_size() > 1 ? "no NVLink: tensor-parallel all-reduces run over PCIe every layer"
                                         : "no NVLink: gradient all-reduce over PCIe is a large part of the step");
  if (!g.p2p && s.num_gpus > 1 && !(g.has_nvlink() && s.num_gpus <= g.link_group))
    notes.emplace_back("no PCIe peer-to-peer on this card (driver): collectives go through host memory");
  if (z.nvlink_present && g.link_group < s.num_gpus && (s.parallel.tp_size() > g.link_group))
    notes.push_back("tp exceeds the NVLink group of " + std::to_string(g.link_group) + " GPUs (" + g.link + ")");
  if (g.ecc == "no" && (s.num_gpus > 1 || in_hours(t.total) > kLongRunHours))
    notes.emplace_back("no ECC: a memory bit-flip goes undetected on a long multi-GPU run; checkpoint often");
  if (g.ecc == "soft-toggle")
    notes.emplace_back("ECC is off by default on this card (nvidia-smi -e 1 enables it at some bandwidth cost)");
  if (in_bytes(mem.host) > in_bytes(s.cluster.host_memory_per_node))
    notes.emplace_back("offload needs more host RAM per node than the cluster's host_memory_per_node");
  if (z.platform != platform_class::cloud && z.platform != platform_class::server) {
    if (z.wall_watts > kCircuit230V16AWatts)
      notes.emplace_back("draws more than one 16 A / 230 V circuit (3,680 W): split across circuits or use a server room");
    else if (z.wall_watts > kCircuit120V15AWatts)
      notes.emplace_back("draws more than one 15 A / 120 V circuit delivers (1,440 W continuous): use a 20 A or 230 V circuit");
    if (z.psu_watts > kPsuSizes.back()) notes.emplace_back("above the largest ATX power supply: two PSUs or a server chassis");
  }
  if (z.cpu_cores < z.cpu_cores_min)
    notes.push_back("the platform's CPUs have fewer cores than " + std::to_string(kCpuCoresPerGpuMin) + " per GPU");
  if (z.pcie_lanes_per_gpu > 0 && z.pcie_lanes_per_gpu < g.pcie_lanes)
    notes.push_back("each GPU gets x" + std::to_string(z.pcie_lanes_per_gpu) + " of its x" + std::to_string(g.pcie_lanes) +
                    " PCIe lanes on this platform");
  return notes;
}

}  // namespace detail

// The system for the settings `s` with their memory and time estimates; `platform`
// forces a class (cloud: a rented instance), else it follows from the GPUs per node.
inline system_sizing size_system(const scenario& s, const memory_breakdown& mem, const time_estimate& t,
                                 std::optional<platform_class> platform = std::nullopt) {
  system_sizing z;
  const gpu_spec& g = s.gpu;
  const int n = std::max(1, s.num_gpus);
  const int per_node = std::max(1, s.cluster.gpus_per_node);
  z.nodes = (n + per_node - 1) / per_node;
  z.gpus_per_node = std::min(n, per_node);
  z.platform = platform.value_or(detail::platform_for(g, z.gpus_per_node));
  const platform_spec& p = platform_of(z.platform);
  z.cpu_cores_min = kCpuCoresPerGpuMin * z.gpus_per_node;
  z.cpu_cores = kCpuCoresPerGpu * z.gpus_per_node;
  if (p.max_cores > 0) z.cpu_cores = std::min(z.cpu_cores, p.max_cores);
  const double ram_gb = in_bytes(kHostRamPerGpuMemory * z.gpus_per_node * g.memory + mem.host) / kGiB;
  z.host_ram = gib(detail::ram_size_gb(ram_gb));
  z.gpu_watts = g.tdp_watts * z.gpus_per_node;
  z.cpu_watts = p.cpu_watts;
  if (z.platform != platform_class::cloud) {
    const double load = z.gpu_watts + z.cpu_watts + kOtherSystemWatts;
    z.psu_watts = detail::psu_size(load * kPsuMargin, z.platform);
    z.wall_watts = load / kPsuEfficiency;
  }
  z.psu_watts_per_node = z.psu_watts;
  z.pcie_lanes_per_gpu = detail::lanes_per_gpu(p, g, z.gpus_per_node);
  z.cuda_min = cuda_floor(g);
  if (z.cuda_min) z.driver_min = std::string(driver_floor(*z.cuda_min));
  z.nvlink_present = g.has_nvlink();
  const double step = in_seconds(t.step);
  const double comm_fraction = step > 0 ? in_seconds(t.breakdown.communication) / step : 0.0;
  z.nvlink_needed = s.parallel.tp_size() > 1 || (s.dp() > 1 && comm_fraction > kCommFractionNeedsNvlink);
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
