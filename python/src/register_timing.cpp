// register_timing.cpp — time_estimate (gpuplan/timing.hpp) in seconds and FLOP.
#include "common.hpp"
#include "gpuplan/io/scenario_json.hpp"
#include "gpuplan/timing.hpp"

namespace gpuplan::python {

void register_timing(py::module_& m) {
  using T = time_estimate;
  py::class_<T>(m, "TimeEstimate", "Step time, throughput, time-to-train and cost; canonical units.")
      .def_property_readonly("step_seconds", [](const T& t) { return in_seconds(t.step); }, "One optimizer step.")
      .def_readonly("tokens_per_second_per_gpu", &T::tokens_per_second_per_gpu, "Training tokens/s per GPU.")
      .def_readonly("tokens_per_second", &T::tokens_per_second, "Training tokens/s, whole job.")
      .def_property_readonly("model_flops_per_step", [](const T& t) { return in_flops(t.model_flops_per_step); },
                             "Model FLOP per step (no recompute).")
      .def_property_readonly("hardware_flops_per_step", [](const T& t) { return in_flops(t.hardware_flops_per_step); },
                             "Hardware FLOP per step (with recompute).")
      .def_readonly("mfu", &T::mfu, "Model FLOPs utilisation (0..1).")
      .def_readonly("hfu", &T::hfu, "Hardware FLOPs utilisation (0..1).")
      .def_property_readonly("total_seconds", [](const T& t) { return in_seconds(t.total); },
                             "Time to train `tokens` (0 when tokens is unset).")
      .def_readonly("gpu_hours", &T::gpu_hours, "GPU-hours to train `tokens`.")
      .def_readonly("cost", &T::cost, "Cost (price_per_gpu_hour x gpu_hours) or None.")
      .def_readonly("energy_kwh", &T::energy_kwh, "Energy, kWh.")
      .def_property_readonly("compute_seconds", [](const T& t) { return in_seconds(t.breakdown.compute); }, "Compute per step.")
      .def_property_readonly("communication_seconds", [](const T& t) { return in_seconds(t.breakdown.communication); },
                             "Exposed communication per step.")
      .def_property_readonly("bubble_seconds", [](const T& t) { return in_seconds(t.breakdown.bubble); }, "Pipeline bubble per step.")
      .def_property_readonly("optimizer_seconds", [](const T& t) { return in_seconds(t.breakdown.optimizer); }, "Optimizer per step.")
      .def_property_readonly("offload_seconds", [](const T& t) { return in_seconds(t.breakdown.offload); }, "Exposed offload per step.")
      .def_property_readonly("time_to_first_token_seconds", [](const T& t) { return in_seconds(t.time_to_first_token); },
                             "Serving: prefill latency.")
      .def_readonly("decode_tokens_per_second_per_sequence", &T::decode_tokens_per_second_per_sequence, "Serving.")
      .def_readonly("decode_tokens_per_second", &T::decode_tokens_per_second, "Serving, all sequences.")
      .def_readonly("decode_compute_bound_batch", &T::decode_compute_bound_batch, "Serving: batch where decode turns compute-bound.")
      .def_readonly("warning_bits", &T::warnings, "Warning bit set (gpuplan/warnings.hpp).")
      .def_property_readonly("warnings", [](const T& t) { return warning_messages(t.warnings); }, "Warning messages.");

  m.def("estimate_time", [](const io::resolved_run& r) { return estimate_time(r.run); }, py::arg("run"),
        "Step time, throughput, time-to-train and cost.");
}

}  // namespace gpuplan::python
