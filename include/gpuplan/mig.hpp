// mig.hpp — Multi-Instance GPU slices as GPUs of their own: an A100 or H100 cut into
// GPU instances "1g.10gb" ... "7g.80gb", each with its share of the SMs (compute slices
// of 7), of the memory controllers (memory slices of 8: capacity and bandwidth) and no
// link to any other GPU. The catalog registers every slice of a parent it holds under
// the id "<parent>-mig-<profile>" (a100-80gb-mig-3g.40gb). docs/serving.md, "MIG".
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gpuplan/hardware.hpp"

namespace gpuplan {

// NVIDIA MIG user guide, "Supported MIG Profiles": A100 and H100 split into 7 compute
// slices (GPCs) and 8 memory slices; "Fraction of SMs" g/7, "Fraction of Memory" m/8.
inline constexpr int kMigComputeSlices = 7;
inline constexpr int kMigMemorySlices = 8;

enum class mig_family : std::uint8_t { gb40, gb80 };

struct mig_profile {
  mig_family family = mig_family::gb80;
  std::string_view name;   // "1g.10gb"
  int compute_slices = 1;  // of kMigComputeSlices
  int memory_slices = 1;   // of kMigMemorySlices
  double memory_gib = 0;   // the instance's memory as nvidia-smi reports it
};

// Profiles and their memory (GiB) from the MIG user guide's profile tables and its
// `nvidia-smi mig -lgip` listing (A100-SXM4-40GB: 4.75 / 9.75 / 19.62 / 39.38 GiB for 1, 2,
// 4 and 8 memory slices); the 80 GB parts (A100 80GB, H100 80GB) name the same slices
// 1g.10gb ... 7g.80gb with twice the memory per slice.
inline constexpr std::array<mig_profile, 12> kMigProfiles{{
    {mig_family::gb40, "1g.5gb", 1, 1, 4.75},   {mig_family::gb40, "1g.10gb", 1, 2, 9.75},
    {mig_family::gb40, "2g.10gb", 2, 2, 9.75},  {mig_family::gb40, "3g.20gb", 3, 4, 19.62},
    {mig_family::gb40, "4g.20gb", 4, 4, 19.62}, {mig_family::gb40, "7g.40gb", 7, 8, 39.38},
    {mig_family::gb80, "1g.10gb", 1, 1, 9.75},  {mig_family::gb80, "1g.20gb", 1, 2, 19.62},
    {mig_family::gb80, "2g.20gb", 2, 2, 19.62}, {mig_family::gb80, "3g.40gb", 3, 4, 39.38},
    {mig_family::gb80, "4g.40gb", 4, 4, 39.38}, {mig_family::gb80, "7g.80gb", 7, 8, 79.25},
}};

// Catalog parents that take MIG slices (MIG user guide, "Supported GPUs": A100 and H100,
// SXM and PCIe, 40 and 80 GB).
struct mig_parent {
  std::string_view id;
  mig_family family;
};
inline constexpr std::array<mig_parent, 6> kMigParents{{
    {"a100-40gb", mig_family::gb40}, {"a100-pcie-40gb", mig_family::gb40}, {"a100-80gb", mig_family::gb80},
    {"a100-pcie-80gb", mig_family::gb80}, {"h100-sxm", mig_family::gb80}, {"h100-pcie", mig_family::gb80},
}};

inline std::string mig_id(std::string_view parent, const mig_profile& p) {
  return std::string(parent) + "-mig-" + std::string(p.name);
}

// The slice as a GPU: compute rates x g/7, bandwidth x m/8, the profile's memory, no
// NVLink and no peer-to-peer (MIG user guide, "Application Considerations": GPU to GPU
// P2P, PCIe and NVLink, is not supported), board power x g/7 (the share of SMs, assumed).
inline gpu_spec mig_slice(const gpu_spec& parent, const mig_profile& p) {
  gpu_spec g = parent;
  const double c = static_cast<double>(p.compute_slices) / kMigComputeSlices;
  const double m = static_cast<double>(p.memory_slices) / kMigMemorySlices;
  g.id = mig_id(parent.id, p);
  g.name = parent.name + " MIG " + std::string(p.name);
  g.memory = gib(p.memory_gib);
  g.usable_memory = gib(p.memory_gib);
  g.bandwidth = parent.bandwidth * m;
  g.fp64 = parent.fp64 * c;
  g.fp32 = parent.fp32 * c;
  for (std::optional<FlopRate>* r : {&g.tf32, &g.bf16, &g.fp16_acc16, &g.fp8, &g.int8})
    if (*r) **r = **r * c;
  g.link = "none";
  g.link_per_direction = byte_per_s(0);
  g.link_group = 1;
  g.p2p = false;
  g.mig = false;
  g.tdp_watts = parent.tdp_watts * c;
  g.sm_count = parent.sm_count * p.compute_slices / kMigComputeSlices;  // the slice's share of the SMs
  g.confidence = "derived: MIG slice of " + parent.id + " (MIG user guide profile table)";
  return g;
}

}  // namespace gpuplan
