// register_sweep.cpp — vectorised estimates over a cartesian product, returned as
// numpy columns (gpuplan.sweep wraps them in a pandas DataFrame).
//
// The outer axes (gpu, method, num_gpus) change what io::read_scenario resolves
// (defaults that depend on the method, divisibility by the GPU count), so each
// outer combination goes through the reader once. The inner axes (micro_batch,
// seq_len) are plain integers: every value is validated once through the reader,
// then the loop only rewrites those two fields and calls the estimators, so the
// per-scenario cost is estimate_memory + estimate_time and nothing else.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <pybind11/numpy.h>

#include "common.hpp"
#include "gpuplan/io/scenario_json.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/timing.hpp"

namespace gpuplan::python {

namespace {
constexpr std::int64_t kMaxScenarios = 50'000'000;

std::vector<nlohmann::json> axis(const py::handle& values, const std::string& key) {
  std::vector<nlohmann::json> out;
  std::size_t i = 0;
  for (auto v : values) out.push_back(to_json(v, "sweep." + key + "[" + std::to_string(i++) + "]"));
  return out;
}

std::vector<std::int64_t> int_axis(const py::handle& values, const std::string& key) {
  std::vector<std::int64_t> out;
  for (const auto& j : axis(values, key)) {
    if (!j.is_number_integer())
      detail::fail("sweep." + key, "must be a list of integers (got " + j.dump() + ")");
    out.push_back(j.get<std::int64_t>());
  }
  return out;
}
}  // namespace

void register_sweep(py::module_& m) {
  m.def(
      "sweep",
      [](py::handle base_obj, py::handle gpus_obj, py::handle methods_obj, py::handle num_gpus_obj,
         py::handle micro_batch_obj, py::handle seq_len_obj) {
        const nlohmann::json base = to_json(base_obj, "scenario");
        if (!base.is_object()) detail::fail("scenario", "must be an object (got " + base.dump() + ")");
        // Empty axis = the base scenario's value.
        auto or_base = [&](std::vector<nlohmann::json> v, const char* key) {
          if (v.empty()) v.push_back(base.contains(key) ? base[key] : nlohmann::json());
          return v;
        };
        const auto gpus = or_base(axis(gpus_obj, "gpu"), "gpu");
        const auto methods = or_base(axis(methods_obj, "method"), "method");
        const auto counts = or_base(axis(num_gpus_obj, "num_gpus"), "num_gpus");
        const auto mbs = int_axis(micro_batch_obj, "micro_batch");
        const auto seqs = int_axis(seq_len_obj, "seq_len");
        auto with = [](nlohmann::json j, const char* key, const nlohmann::json& v) {
          if (v.is_null()) j.erase(key); else j[key] = v;
          return j;
        };

        // Validate every inner value once, then resolve each outer combination. With a
        // global_batch, grad_accum follows micro_batch (and dp), so micro_batch joins the
        // outer axes and each combination is read (and checked) by the reader.
        const bool mb_outer = base.contains("global_batch");
        std::vector<io::resolved_run> outer;
        std::vector<std::int32_t> outer_gpu, outer_method;
        std::vector<std::string> gpu_labels, method_labels;
        std::vector<std::int64_t> inner_mb, inner_seq;
        {
          py::gil_scoped_release release;
          const nlohmann::json first =
              with(with(with(base, "gpu", gpus[0]), "method", methods[0]), "num_gpus", counts[0]);
          if (!mb_outer)
            for (auto mb : mbs) (void)io::read_scenario(with(first, "micro_batch", mb));
          for (auto s : seqs) (void)io::read_scenario(with(first, "seq_len", s));
          std::vector<nlohmann::json> outer_mbs;
          if (mb_outer) outer_mbs.assign(mbs.begin(), mbs.end());
          if (outer_mbs.empty()) outer_mbs.emplace_back(mbs.empty() ? nlohmann::json() : nlohmann::json(mbs[0]));
          for (std::size_t g = 0; g < gpus.size(); ++g)
            for (std::size_t me = 0; me < methods.size(); ++me)
              for (const auto& n : counts)
                for (const auto& mb : outer_mbs) {
                  nlohmann::json j = with(with(with(base, "gpu", gpus[g]), "method", methods[me]), "num_gpus", n);
                  j = with(j, "micro_batch", mb.is_null() && base.contains("micro_batch") ? base["micro_batch"] : mb);
                  if (!seqs.empty()) j["seq_len"] = seqs[0];
                  outer.push_back(io::read_scenario(j));
                  outer_gpu.push_back(static_cast<std::int32_t>(g));
                  outer_method.push_back(static_cast<std::int32_t>(me));
                  if (gpu_labels.size() == g) gpu_labels.push_back(outer.back().settings().gpu.id);
                  if (method_labels.size() == me) method_labels.emplace_back(to_string(outer.back().settings().meth));
                }
          if (mb_outer || mbs.empty()) inner_mb.clear(); else inner_mb = mbs;
          inner_seq = seqs.empty() ? std::vector<std::int64_t>{outer[0].settings().seq_len} : seqs;
        }
        // An empty inner_mb means "each outer run's own micro_batch".
        const std::size_t n_mb = inner_mb.empty() ? 1 : inner_mb.size();
        const auto total = static_cast<std::int64_t>(outer.size() * n_mb * inner_seq.size());
        if (total > kMaxScenarios)
          detail::fail("sweep", "too many scenarios (max " + std::to_string(kMaxScenarios) + ", got " +
                                    std::to_string(total) + ")");
        const auto n = static_cast<py::ssize_t>(total);

        py::dict cols;
        auto make = [&](const char* name, auto tag) {
          using V = decltype(tag);
          py::array_t<V> a(n);
          cols[name] = a;
          return a.mutable_data();
        };
        auto* c_gpu = make("gpu", std::int32_t{});
        auto* c_method = make("method", std::int32_t{});
        auto* c_num_gpus = make("num_gpus", std::int64_t{});
        auto* c_mb = make("micro_batch", std::int64_t{});
        auto* c_seq = make("seq_len", std::int64_t{});
        auto* c_global = make("global_batch", std::int64_t{});
        auto* c_fits = make("fits", bool{});
        const char* byte_names[] = {"device_bytes", "peak_allocated_bytes", "peak_reserved_bytes", "capacity_bytes",
                                    "headroom_bytes", "weights_bytes", "master_weights_bytes", "gradients_bytes",
                                    "optimizer_bytes", "activations_bytes", "transient_bytes", "overhead_bytes",
                                    "host_bytes", "kv_cache_bytes"};
        constexpr std::size_t kBytes = std::size(byte_names);
        double* c_bytes[kBytes];
        for (std::size_t i = 0; i < kBytes; ++i) c_bytes[i] = make(byte_names[i], double{});
        auto* c_step = make("step_seconds", double{});
        auto* c_tps_gpu = make("tokens_per_second_per_gpu", double{});
        auto* c_tps = make("tokens_per_second", double{});
        auto* c_mfu = make("mfu", double{});
        auto* c_total = make("total_seconds", double{});
        auto* c_gpu_hours = make("gpu_hours", double{});
        auto* c_cost = make("cost", double{});
        auto* c_warn = make("warning_bits", std::uint32_t{});

        {
          py::gil_scoped_release release;
          std::int64_t row = 0;
          for (std::size_t o = 0; o < outer.size(); ++o) {
            io::resolved_run& r = outer[o];
            for (std::size_t k = 0; k < n_mb; ++k)
              for (const auto seq : inner_seq) {
                const std::int64_t mb = inner_mb.empty() ? r.settings().micro_batch : inner_mb[k];
                r.run.edit([&](scenario& s) {
                  s.micro_batch = mb;
                  s.seq_len = seq;
                });
                const memory_breakdown mem = estimate_memory(r.run);
                const time_estimate t = estimate_time(r.run);
                c_gpu[row] = outer_gpu[o];
                c_method[row] = outer_method[o];
                c_num_gpus[row] = r.settings().num_gpus;
                c_mb[row] = mb;
                c_seq[row] = seq;
                c_global[row] = r.settings().global_batch();
                c_fits[row] = mem.fits;
                const Bytes b[kBytes] = {mem.device, mem.peak_allocated, mem.peak_reserved, mem.capacity,
                                         mem.headroom, mem.weights, mem.master_weights, mem.gradients,
                                         mem.optimizer, mem.activations, mem.transient, mem.overhead,
                                         mem.host, mem.kv_cache};
                for (std::size_t i = 0; i < kBytes; ++i) c_bytes[i][row] = in_bytes(b[i]);
                c_step[row] = in_seconds(t.step);
                c_tps_gpu[row] = t.tokens_per_second_per_gpu;
                c_tps[row] = t.tokens_per_second;
                c_mfu[row] = t.mfu;
                c_total[row] = in_seconds(t.total);
                c_gpu_hours[row] = t.gpu_hours;
                c_cost[row] = t.cost ? *t.cost : std::numeric_limits<double>::quiet_NaN();
                c_warn[row] = mem.warnings | t.warnings;
                ++row;
              }
          }
        }
        py::dict out;
        out["columns"] = cols;
        out["gpu_labels"] = gpu_labels;
        out["method_labels"] = method_labels;
        return out;
      },
      py::arg("scenario"), py::arg("gpus"), py::arg("methods"), py::arg("num_gpus"), py::arg("micro_batch"),
      py::arg("seq_len"),
      "Estimates over gpus x methods x num_gpus x micro_batch x seq_len (row-major in that order).\n"
      "Empty lists keep the scenario's value. Returns {'columns': {name: ndarray}, 'gpu_labels': [...],\n"
      "'method_labels': [...]}; 'gpu' and 'method' columns are codes into the label lists.");
}

}  // namespace gpuplan::python
