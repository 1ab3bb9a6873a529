// register_hardware.cpp — GPU descriptions and the GPU catalog.
#include <optional>

#include "common.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/io/catalog.hpp"

namespace gpuplan::python {

namespace {
std::optional<double> rate(const std::optional<FlopRate>& r) {
  if (!r) return std::nullopt;
  return in_flop_per_s(*r);
}
}  // namespace

void register_hardware(py::module_& m) {
  using G = gpu_spec;
  py::class_<G>(m, "GpuSpec", "A GPU (gpuplan/hardware.hpp), read-only; rates are dense, canonical units.")
      .def_readonly("id", &G::id, "Catalog id, e.g. 'rtx-4090'.")
      .def_readonly("name", &G::name, "Marketing name.")
      .def_readonly("arch", &G::arch, "Architecture name.")
      .def_readonly("compute_capability", &G::compute_capability, "As published ('8.9', 'gfx942').")
      .def_property_readonly("memory_bytes", [](const G& g) { return in_bytes(g.memory); }, "Nominal capacity in bytes.")
      .def_property_readonly("usable_memory_bytes", [](const G& g) { return in_bytes(g.usable_memory); },
                             "Capacity a process can use (nvidia-smi total), bytes.")
      .def_property_readonly("bandwidth_byte_per_s", [](const G& g) { return in_byte_per_s(g.bandwidth); },
                             "Memory bandwidth, bytes/s.")
      .def_property_readonly("fp32_flop_per_s", [](const G& g) { return in_flop_per_s(g.fp32); }, "Non-tensor FP32 FLOP/s.")
      .def_property_readonly("tf32_flop_per_s", [](const G& g) { return rate(g.tf32); }, "Dense TF32 tensor FLOP/s or None.")
      .def_property_readonly("bf16_flop_per_s", [](const G& g) { return rate(g.bf16); },
                             "Dense BF16/FP16 tensor FLOP/s (FP32 accumulate) or None.")
      .def_property_readonly("fp8_flop_per_s", [](const G& g) { return rate(g.fp8); }, "Dense FP8 tensor FLOP/s or None.")
      .def_readonly("link", &G::link, "GPU-GPU link ('nvlink4', 'none', ...).")
      .def_property_readonly("link_byte_per_s", [](const G& g) { return in_byte_per_s(g.link_per_direction); },
                             "GPU-GPU link bandwidth per direction, bytes/s.")
      .def_readonly("pcie_gen", &G::pcie_gen, "PCIe generation.")
      .def_readonly("tdp_watts", &G::tdp_watts, "Board power, W.")
      .def_readonly("year", &G::year, "Launch year.")
      .def_readonly("confidence", &G::confidence, "The catalog's confidence column.");

  m.def("find_gpu", [](const std::string& id) { return io::find_gpu(id); }, py::arg("id"),
        "A catalog GPU by id (unknown ids raise ConfigError suggesting the nearest).");
  m.def("read_gpu", [](py::handle obj) { return io::read_gpu(to_json(obj, "gpu")); }, py::arg("spec"),
        "A GPU from a dict (optionally {'base': '<id>', ...overrides}).");
  m.def("gpu_ids", &io::gpu_ids, "Ids in the GPU catalog.");
  m.def("load_gpu_file", &io::load_gpu_file, py::arg("file"),
        "Adds or replaces catalog GPUs from a JSON file (an array of GPU objects).");
}

}  // namespace gpuplan::python
