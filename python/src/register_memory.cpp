// register_memory.cpp — memory_breakdown (gpuplan/memory.hpp) in bytes.
#include "common.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/io/scenario_json.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/replay.hpp"

namespace gpuplan::python {

void register_memory(py::module_& m) {
  using M = memory_breakdown;
  py::class_<M> c(m, "MemoryBreakdown", "Per-GPU memory of the most loaded pipeline stage, in bytes.");
#define GPUPLAN_BYTES(field, doc) \
  c.def_property_readonly(#field "_bytes", [](const M& b) { return in_bytes(b.field); }, doc)
  GPUPLAN_BYTES(weights, "(Quantized) base and trainable weights.");
  GPUPLAN_BYTES(master_weights, "FP32 master copy (mixed precision).");
  GPUPLAN_BYTES(gradients, "Gradients.");
  GPUPLAN_BYTES(optimizer, "Optimizer state.");
  GPUPLAN_BYTES(activations, "Activations saved for backward at the peak.");
  GPUPLAN_BYTES(transient, "Largest working set alive at the peak.");
  GPUPLAN_BYTES(overhead, "CUDA context, cuBLAS/NCCL workspaces.");
  GPUPLAN_BYTES(peak_allocated, "Live tensors at the peak (torch.cuda.max_memory_allocated).");
  GPUPLAN_BYTES(peak_reserved, "Caching-allocator pool (torch.cuda.max_memory_reserved).");
  GPUPLAN_BYTES(device, "What nvidia-smi shows: reserved + context + workspaces + non-PyTorch memory.");
  GPUPLAN_BYTES(capacity, "The GPU's usable capacity.");
  GPUPLAN_BYTES(headroom, "capacity - device (negative when it does not fit).");
  GPUPLAN_BYTES(host, "Host RAM for offloaded state, per node.");
  GPUPLAN_BYTES(kv_cache, "Serving: KV cache.");
#undef GPUPLAN_BYTES
  c.def_readonly("fits", &M::fits, "device <= capacity.")
      .def_readonly("stage", &M::stage, "Pipeline stage these figures describe.")
      .def_readonly("max_concurrent_sequences", &M::max_concurrent_sequences,
                    "Serving: sequences of prompt_len + gen_len that fit.")
      .def_readonly("warning_bits", &M::warnings, "Warning bit set (gpuplan/warnings.hpp).")
      .def_property_readonly("warnings", [](const M& b) { return warning_messages(b.warnings); }, "Warning messages.");

  m.def("estimate_memory", [](const io::resolved_run& r) { return estimate_memory(r.run); }, py::arg("run"),
        "Per-GPU memory of the most loaded pipeline stage.");
  m.def(
      "replay_allocator",
      [](const io::resolved_run& r, bool expandable_segments) {
        const allocator_replay rp = replay_allocator(r.run, {.expandable_segments = expandable_segments});
        py::dict d = from_json(io::replay_json(rp, estimate_memory(r.run)));  // estimate_json's fields
        d["replayed"] = rp.replayed;
        return d;
      },
      py::arg("run"), py::arg("expandable_segments") = false,
      "Two training steps replayed tensor by tensor through PyTorch's caching-allocator rules (replay.hpp).");
  m.def("estimate_memory_stages", [](const io::resolved_run& r) { return estimate_memory_stages(r.run); },
        py::arg("run"), "One breakdown per pipeline stage.");
  m.def("activation_bytes_per_layer", [](const io::resolved_run& r) { return in_bytes(activation_bytes_per_layer(r.run)); },
        py::arg("run"), "Activation bytes one transformer block saves for backward under the run (bytes).");
}

}  // namespace gpuplan::python
