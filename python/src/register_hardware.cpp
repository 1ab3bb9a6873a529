// register_hardware.cpp — GPU descriptions and the GPU catalog. A GpuSpec's fields
// are named and valued as the catalog's columns (src/data/gpus.csv) and the GPU
// JSON (io::write_gpu): memory_gb, bandwidth_gb_s, bf16_tflops, gpu_link, ...
#include <string>

#include "common.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/io/catalog.hpp"

namespace gpuplan::python {

namespace {
// The GPU JSON's value of `key` (None when the JSON leaves it out: not published).
py::object gpu_field(const gpu_spec& g, const char* key) {
  const nlohmann::json j = io::write_gpu(g);
  const auto it = j.find(key);
  return it == j.end() ? py::none() : from_json(*it);
}
}  // namespace

void register_hardware(py::module_& m) {
  using G = gpu_spec;
  py::class_<G> cls(m, "GpuSpec",
                    "A GPU (gpuplan/hardware.hpp), read-only. Fields are the catalog's columns in its units\n"
                    "(GB, GB/s, TFLOP/s; dense tensor rates); to_dict() is the GPU JSON a scenario accepts.");
  cls.def_readonly("id", &G::id, "Catalog id, e.g. 'rtx-4090'.")
      .def_readonly("name", &G::name, "Marketing name.")
      .def_readonly("arch", &G::arch, "Architecture name.")
      .def_readonly("compute_capability", &G::compute_capability, "As published ('8.9', 'gfx942').")
      .def_readonly("gpu_link", &G::link, "GPU-GPU link ('nvlink4', 'none', ...).")
      .def_readonly("link_group", &G::link_group, "GPUs joined by that link (bridge: 2; NVSwitch: 8).")
      .def_readonly("pcie_gen", &G::pcie_gen, "PCIe generation.")
      .def_readonly("pcie_lanes", &G::pcie_lanes, "PCIe lanes (0: none, an integrated GPU).")
      .def_readonly("ecc", &G::ecc, "The catalog's ecc column: yes, no, soft-toggle or unverified.")
      .def_readonly("mig", &G::mig, "Multi-Instance GPU support.")
      .def_readonly("p2p", &G::p2p, "PCIe peer-to-peer allowed by the driver (False on GeForce cards).")
      .def_readonly("confidence", &G::confidence, "The catalog's confidence column.")
      .def_property_readonly("memory_bytes", [](const G& g) { return in_bytes(g.memory); }, "Nominal capacity in bytes.")
      .def_property_readonly("usable_memory_bytes", [](const G& g) { return in_bytes(g.usable_memory); },
                             "Capacity a process can use (nvidia-smi total), bytes.")
      .def("to_dict", [](const G& g) { return from_json(io::write_gpu(g)); },
           "The GPU as JSON (the catalog's columns; a scenario's \"gpu\" object or a --gpu-file entry).");
  struct numeric_field {
    const char* key;
    const char* doc;
  };
  static constexpr numeric_field kNumeric[] = {
      {"memory_gb", "Nominal capacity, datasheet GB (binary: GiB)."},
      {"usable_gib", "Capacity a process can use (nvidia-smi total), GiB."},
      {"bandwidth_gb_s", "Memory bandwidth, GB/s."},
      {"fp64_tflops", "FP64, TFLOP/s, or None."},
      {"fp32_tflops", "Non-tensor FP32, TFLOP/s."},
      {"tf32_tflops", "Dense TF32 tensor TFLOP/s, or None."},
      {"bf16_tflops", "Dense BF16/FP16 tensor TFLOP/s (FP32 accumulate), or None."},
      {"fp16_acc16_tflops", "Dense FP16 tensor TFLOP/s with FP16 accumulate, or None."},
      {"fp8_tflops", "Dense FP8 tensor TFLOP/s, or None."},
      {"int8_tops", "Dense INT8 tensor TOPS, or None."},
      {"gpu_link_gb_s_bidir", "GPU-GPU link bandwidth, both directions, GB/s, or None."},
      {"tdp_w", "Board power, W, or None."},
      {"year", "Launch year, or None."},
      {"sm_count", "Streaming multiprocessors (AMD: compute units), or None; GEMM tiles run in waves of it."},
  };
  for (const auto& f : kNumeric)
    cls.def_property_readonly(f.key, [key = f.key](const G& g) { return gpu_field(g, key); }, f.doc);

  m.def("find_gpu", [](const std::string& id) { return io::find_gpu(id); }, py::arg("id"),
        "A catalog GPU by id (unknown ids raise UnknownNameError suggesting the nearest).");
  m.def("read_gpu", [](py::handle obj) { return io::read_gpu(to_json(obj, "gpu")); }, py::arg("spec"),
        "A GPU from a dict of the catalog's columns (optionally {'base': '<id>', ...overrides}).");
  m.def("gpu_ids", &io::gpu_ids, "Ids in the GPU catalog.");
  m.def("load_gpu_file", &io::load_gpu_file, py::arg("file"),
        "Adds or replaces catalog GPUs from a JSON file (an array of GPU objects).");
}

}  // namespace gpuplan::python
