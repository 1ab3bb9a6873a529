// vision_report.cpp — io/vision_report.hpp: estimate_graph (vision.hpp) as JSON and a table.
#include "gpuplan/io/vision_report.hpp"

#include "gpuplan/error.hpp"
#include "gpuplan/io/amount.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/graph_json.hpp"
#include "gpuplan/vision.hpp"

namespace gpuplan::io {

namespace {
// "3x224x224": channels, then the spatial sizes that are not 1.
std::string shape_text(const layers::shape& s) {
  std::string t = std::to_string(s.c);
  for (const auto v : {s.d, s.h, s.w})
    if (v != 1) t += "x" + std::to_string(v);
  return t;
}
}  // namespace

layers::graph vision_graph_of(const vision_query& q) {
  const std::string& fp = q.flag_prefix;
  const int sources = int{!q.model.empty()} + int{!q.graph_file.empty()} + int{q.graph.has_value()};
  if (sources == 0) {
    std::string names;
    for (const auto& n : vision::vision_model_names()) names += (names.empty() ? "" : ", ") + n;
    gpuplan::detail::fail(fp + "model", "give a model name (" + names + ") or " + fp + "graph FILE.json");
  }
  if (sources > 1)
    gpuplan::detail::fail(fp + "graph", "give either a model name or a graph, not both (got model '" + q.model + "')");
  if (!q.model.empty()) return vision::vision_model(q.model, q.image, q.classes.value_or(1000));
  if (q.image)
    gpuplan::detail::fail(fp + "image", "does not apply to a graph: its input shape is in the graph (got " + std::to_string(*q.image) + ")");
  if (q.classes)
    gpuplan::detail::fail(fp + "classes", "does not apply to a graph: its last layer sets the outputs (got " + std::to_string(*q.classes) + ")");
  if (q.graph) {
    (void)layers::analyze(*q.graph);
    return *q.graph;
  }
  return read_graph_file(q.graph_file);
}

vision_report vision_report_of(const vision_query& q) {
  const std::string& fp = q.flag_prefix;
  const auto prec = from_string<precision>(q.precision);
  if (!prec) gpuplan::detail::fail(fp + "precision", "must be one of " + name_list<precision>() + " (got " + q.precision + ")", error_kind::unknown_name);
  const auto opt = from_string<optimizer>(q.optimizer);
  if (!opt) gpuplan::detail::fail(fp + "optimizer", "must be one of " + name_list<optimizer>() + " (got " + q.optimizer + ")", error_kind::unknown_name);
  std::optional<double> images;
  if (q.images) images = parse_amount(*q.images, fp + "images");
  const gpu_spec& gpu = find_gpu(q.gpu, fp + "gpu");
  const auto g = vision_graph_of(q);
  const bool catalog = !q.model.empty();
  const std::int64_t image = q.image.value_or(vision::default_image(q.model));  // catalog models
  const std::string name = g.name.empty() ? "graph" : g.name;
  const auto cost = layers::analyze(g);
  const auto e = vision::estimate_graph(g, q.batch, *prec, *opt, gpu, !q.infer, {}, q.num_gpus, q.checkpointing, q.zero);
  std::optional<Seconds> total;
  if (images) total = vision::time_to_train(e, *images, q.epochs);
  vision_report r;
  r.fits = e.fits(gpu);
  r.json = {{"model", name}, {"gpu", gpu.id}, {"workload", q.infer ? "infer" : "train"},
            {"batch", q.batch}, {"num_gpus", q.num_gpus}, {"precision", q.precision}, {"optimizer", q.optimizer}, {"checkpointing", q.checkpointing}, {"zero", q.zero},
            {"params", e.params}, {"forward_flops_per_image", cost.flops}, {"forward_macs_per_image", cost.matmul_flops / 2},
            {"flops_per_image", in_flops(e.flops_per_sample)},
            {"memory", {{"weights", in_bytes(e.weights)}, {"gradients", in_bytes(e.gradients)},
                        {"optimizer", in_bytes(e.optimizer)}, {"activations", in_bytes(e.activations)},
                        {"transient", in_bytes(e.transient)}, {"peak_allocated", in_bytes(e.peak_allocated)}, {"reserved", in_bytes(e.reserved)},
                        {"device", in_bytes(e.device)}, {"usable", in_bytes(gpu.usable_memory)}, {"fits", r.fits}}},
            {"time", {{"step_seconds", in_seconds(e.step)}, {"compute_seconds", in_seconds(e.compute)},
                      {"memory_bound_seconds", in_seconds(e.memory_bound)},
                      {"optimizer_seconds", in_seconds(e.optimizer_step)},
                      {"data_parallel_comm_seconds", in_seconds(e.data_parallel_comm)}, {"images_per_second", e.samples_per_s}}}};
  if (total) r.json["time"]["to_train_seconds"] = in_seconds(*total);
  r.json["input"] = {{"c", g.input.c}, {"d", g.input.d}, {"h", g.input.h}, {"w", g.input.w}};
  if (catalog) r.json["image"] = image;
  r.json["layers"] = g.layers.size();
  table& t = r.summary;
  t.title = name + " on " + (q.num_gpus > 1 ? std::to_string(q.num_gpus) + "x " : "") + gpu.id + ", " + (q.infer ? "inference" : "training") + ", batch " + std::to_string(q.batch) + (q.num_gpus > 1 ? " per GPU" : "") +
            ", " + (catalog ? std::to_string(image) + "x" + std::to_string(image)
                                                  : "input " + shape_text(g.input)) + ", " + q.precision +
            (q.infer ? "" : ", " + q.optimizer) + (q.checkpointing ? ", checkpointing" : "") +
            (q.zero > 0 ? ", ZeRO-" + std::to_string(q.zero) : "");
  t.header = {"Term", "Value"};
  t.rows = {{"parameters", format_count(e.params)},
            {"forward multiply-adds per image", format_number(cost.matmul_flops / 2 / 1e9, 4) + " G"},
            {"weights", format_bytes(e.weights)}};
  if (!q.infer) {
    t.rows.push_back({"gradients", format_bytes(e.gradients)});
    t.rows.push_back({"optimizer state", format_bytes(e.optimizer)});
    t.rows.push_back({"saved activations", format_bytes(e.activations)});
    t.rows.push_back({"backward transient", format_bytes(e.transient)});
  } else {
    t.rows.push_back({"activations (working set)", format_bytes(e.activations)});
  }
  t.rows.push_back({"peak allocated", format_bytes(e.peak_allocated)});
  t.rows.push_back({"reserved (caching allocator)", format_bytes(e.reserved)});
  t.rows.push_back({"device (reserved + CUDA context)", format_bytes(e.device) + " of " + format_bytes_short(gpu.usable_memory)});
  t.rows.push_back({"step", format_seconds(e.step)});
  if (q.num_gpus > 1 && !q.infer)
    t.rows.push_back({q.zero >= 3   ? "parameter gathers + gradient reduce-scatter (mostly hidden by compute)"
                      : q.zero >= 1 ? "gradient reduce-scatter + parameter all-gather"
                                    : "gradient all-reduce (mostly hidden by backward)",
                      format_seconds(e.data_parallel_comm)});
  t.rows.push_back({q.num_gpus > 1 ? "images/s (all GPUs)" : "images/s", format_rate(e.samples_per_s, "images")});
  if (total)
    t.rows.push_back({"time to train (" + format_count(static_cast<std::int64_t>(*images)) + " images x " +
                          gpuplan::detail::num(q.epochs) + " epochs)", format_seconds(*total)});
  t.notes.push_back(r.fits ? "fits on each " + gpu.id : "does not fit on one " + gpu.id);
  if (q.zero > 0 && q.num_gpus == 1)
    t.notes.push_back("ZeRO-" + std::to_string(q.zero) + " on one GPU shards nothing: every state stays whole (give more than one GPU)");
  return r;
}

}  // namespace gpuplan::io
