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

// `j` with `key` set to `v` (removed when `v` is null).
nlohmann::json sweep_with(nlohmann::json j, const char* key, const nlohmann::json& v) {
  if (v.is_null()) j.erase(key); else j[key] = v;
  return j;
}

// The axes as given: JSON values for the outer axes (an empty axis = the base scenario's value),
// integers for the inner ones.
struct sweep_axes {
  std::vector<nlohmann::json> gpus, methods, counts;
  std::vector<std::int64_t> mbs, seqs;
};

// The resolved outer runs, with their axis codes and labels, and the inner values looped over.
// An empty inner_mb means "each outer run's own micro_batch".
struct sweep_plan {
  std::vector<io::resolved_run> outer;
  std::vector<std::int32_t> outer_gpu, outer_method;
  std::vector<std::string> gpu_labels, method_labels;
  std::vector<std::int64_t> inner_mb, inner_seq;
};

// Validates every inner value once, then resolves each outer combination. With a
// global_batch, grad_accum follows micro_batch (and dp), so micro_batch joins the
// outer axes and each combination is read (and checked) by the reader.
sweep_plan resolve_sweep(const nlohmann::json& base, const sweep_axes& a) {
  const bool mb_outer = base.contains("global_batch");
  sweep_plan p;
  const nlohmann::json first =
      sweep_with(sweep_with(sweep_with(base, "gpu", a.gpus[0]), "method", a.methods[0]), "num_gpus", a.counts[0]);
  if (!mb_outer)
    for (auto mb : a.mbs) (void)io::read_scenario(sweep_with(first, "micro_batch", mb));
  for (auto s : a.seqs) (void)io::read_scenario(sweep_with(first, "seq_len", s));
  std::vector<nlohmann::json> outer_mbs;
  if (mb_outer) outer_mbs.assign(a.mbs.begin(), a.mbs.end());
  if (outer_mbs.empty()) outer_mbs.emplace_back(a.mbs.empty() ? nlohmann::json() : nlohmann::json(a.mbs[0]));
  for (std::size_t g = 0; g < a.gpus.size(); ++g)
    for (std::size_t me = 0; me < a.methods.size(); ++me)
      for (const auto& n : a.counts)
        for (const auto& mb : outer_mbs) {
          nlohmann::json j = sweep_with(sweep_with(sweep_with(base, "gpu", a.gpus[g]), "method", a.methods[me]), "num_gpus", n);
          j = sweep_with(j, "micro_batch", mb.is_null() && base.contains("micro_batch") ? base["micro_batch"] : mb);
          if (!a.seqs.empty()) j["seq_len"] = a.seqs[0];
          p.outer.push_back(io::read_scenario(j));
          p.outer_gpu.push_back(static_cast<std::int32_t>(g));
          p.outer_method.push_back(static_cast<std::int32_t>(me));
          if (p.gpu_labels.size() == g) p.gpu_labels.push_back(p.outer.back().settings().gpu.id);
          if (p.method_labels.size() == me) p.method_labels.emplace_back(to_string(p.outer.back().settings().meth));
        }
  if (mb_outer || a.mbs.empty()) p.inner_mb.clear(); else p.inner_mb = a.mbs;
  p.inner_seq = a.seqs.empty() ? std::vector<std::int64_t>{p.outer[0].settings().seq_len} : a.seqs;
  return p;
}

// One numpy column of `n` values of type V, added to `cols` as `name`.
template <class V>
V* sweep_column(py::dict& cols, const char* name, py::ssize_t n) {
  py::array_t<V> a(n);
  cols[name] = a;
  return a.mutable_data();
}

constexpr const char* kByteColumns[] = {"device_bytes", "peak_allocated_bytes", "peak_reserved_bytes", "capacity_bytes",
                                        "headroom_bytes", "weights_bytes", "master_weights_bytes", "gradients_bytes",
                                        "optimizer_bytes", "activations_bytes", "transient_bytes", "overhead_bytes",
                                        "host_bytes", "kv_cache_bytes"};
constexpr std::size_t kBytes = std::size(kByteColumns);

// The result's columns, in the DataFrame's order (gpu and method are codes into the label lists).
struct sweep_columns {
  std::int32_t *gpu, *method;
  std::int64_t *num_gpus, *micro_batch, *seq_len, *global;
  bool* fits;
  double* bytes[kBytes];
  double *step, *tps_gpu, *tps, *mfu, *total, *gpu_hours, *cost;
  std::uint32_t* warn;

  sweep_columns(py::dict& cols, py::ssize_t n)
      : gpu(sweep_column<std::int32_t>(cols, "gpu", n)),
        method(sweep_column<std::int32_t>(cols, "method", n)),
        num_gpus(sweep_column<std::int64_t>(cols, "num_gpus", n)),
        micro_batch(sweep_column<std::int64_t>(cols, "micro_batch", n)),
        seq_len(sweep_column<std::int64_t>(cols, "seq_len", n)),
        global(sweep_column<std::int64_t>(cols, "global_batch", n)),
        fits(sweep_column<bool>(cols, "fits", n)) {
    for (std::size_t i = 0; i < kBytes; ++i) bytes[i] = sweep_column<double>(cols, kByteColumns[i], n);
    step = sweep_column<double>(cols, "step_seconds", n);
    tps_gpu = sweep_column<double>(cols, "tokens_per_second_per_gpu", n);
    tps = sweep_column<double>(cols, "tokens_per_second", n);
    mfu = sweep_column<double>(cols, "mfu", n);
    total = sweep_column<double>(cols, "total_seconds", n);
    gpu_hours = sweep_column<double>(cols, "gpu_hours", n);
    cost = sweep_column<double>(cols, "cost", n);
    warn = sweep_column<std::uint32_t>(cols, "warning_bits", n);
  }

  // Row `row`: the estimate of `r` (at micro_batch `mb`, seq_len `seq`) from outer combination `o` of `p`.
  void fill(std::int64_t row, const sweep_plan& p, std::size_t o, const io::resolved_run& r, std::int64_t mb,
            std::int64_t seq) {
    const memory_breakdown m = estimate_memory(r.run);
    const time_estimate t = estimate_time(r.run);
    gpu[row] = p.outer_gpu[o];
    method[row] = p.outer_method[o];
    num_gpus[row] = r.settings().num_gpus;
    micro_batch[row] = mb;
    seq_len[row] = seq;
    global[row] = r.settings().global_batch();
    fits[row] = m.fits;
    const Bytes b[kBytes] = {m.device, m.peak_allocated, m.peak_reserved, m.capacity, m.headroom, m.weights,
                             m.master_weights, m.gradients, m.optimizer, m.activations, m.transient, m.overhead,
                             m.host, m.kv_cache};
    for (std::size_t i = 0; i < kBytes; ++i) bytes[i][row] = in_bytes(b[i]);
    step[row] = in_seconds(t.step);
    tps_gpu[row] = t.tokens_per_second_per_gpu;
    tps[row] = t.tokens_per_second;
    mfu[row] = t.mfu;
    total[row] = in_seconds(t.total);
    gpu_hours[row] = t.gpu_hours;
    cost[row] = t.cost ? *t.cost : std::numeric_limits<double>::quiet_NaN();
    warn[row] = m.warnings | t.warnings;
  }
};

// Every row: each outer run with each inner micro_batch and seq_len (only those two fields
// rewritten, then the estimators), row-major.
void run_sweep(sweep_plan& p, sweep_columns& c) {
  const std::size_t n_mb = p.inner_mb.empty() ? 1 : p.inner_mb.size();
  std::int64_t row = 0;
  for (std::size_t o = 0; o < p.outer.size(); ++o) {
    io::resolved_run& r = p.outer[o];
    for (std::size_t k = 0; k < n_mb; ++k)
      for (const auto seq : p.inner_seq) {
        const std::int64_t mb = p.inner_mb.empty() ? r.settings().micro_batch : p.inner_mb[k];
        r.run.edit([&](scenario& s) {
          s.micro_batch = mb;
          s.seq_len = seq;
        });
        c.fill(row, p, o, r, mb, seq);
        ++row;
      }
  }
}

py::dict sweep_rows(py::handle base_obj, py::handle gpus_obj, py::handle methods_obj, py::handle num_gpus_obj,
               py::handle micro_batch_obj, py::handle seq_len_obj) {
  const nlohmann::json base = to_json(base_obj, "scenario");
  if (!base.is_object()) detail::fail("scenario", "must be an object (got " + base.dump() + ")");
  // Empty axis = the base scenario's value.
  auto or_base = [&](std::vector<nlohmann::json> v, const char* key) {
    if (v.empty()) v.push_back(base.contains(key) ? base[key] : nlohmann::json());
    return v;
  };
  sweep_axes a;
  a.gpus = or_base(axis(gpus_obj, "gpu"), "gpu");
  a.methods = or_base(axis(methods_obj, "method"), "method");
  a.counts = or_base(axis(num_gpus_obj, "num_gpus"), "num_gpus");
  a.mbs = int_axis(micro_batch_obj, "micro_batch");
  a.seqs = int_axis(seq_len_obj, "seq_len");
  sweep_plan p;
  {
    py::gil_scoped_release release;
    p = resolve_sweep(base, a);
  }
  const std::size_t n_mb = p.inner_mb.empty() ? 1 : p.inner_mb.size();
  const auto total = static_cast<std::int64_t>(p.outer.size() * n_mb * p.inner_seq.size());
  if (total > kMaxScenarios)
    detail::fail("sweep", "too many scenarios (max " + std::to_string(kMaxScenarios) + ", got " +
                              std::to_string(total) + ")");
  py::dict cols;
  sweep_columns c(cols, static_cast<py::ssize_t>(total));
  {
    py::gil_scoped_release release;
    run_sweep(p, c);
  }
  py::dict out;
  out["columns"] = cols;
  out["gpu_labels"] = p.gpu_labels;
  out["method_labels"] = p.method_labels;
  return out;
}
}  // namespace

void register_sweep(py::module_& m) {
  m.def("sweep", &sweep_rows, py::arg("scenario"), py::arg("gpus"), py::arg("methods"), py::arg("num_gpus"),
        py::arg("micro_batch"), py::arg("seq_len"),
        "Estimates over gpus x methods x num_gpus x micro_batch x seq_len (row-major in that order).\n"
        "Empty lists keep the scenario's value. Returns {'columns': {name: ndarray}, 'gpu_labels': [...],\n"
        "'method_labels': [...]}; 'gpu' and 'method' columns are codes into the label lists.");
}

}  // namespace gpuplan::python
