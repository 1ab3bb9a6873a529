// vision_report.cpp — io/vision_report.hpp: estimate_graph (vision.hpp) as JSON and a table.
#include "gpuplan/io/vision_report.hpp"

#include "gpuplan/error.hpp"
#include "gpuplan/io/amount.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/vision.hpp"

namespace gpuplan::io {

vision_report vision_report_of(const vision_query& q) {
  const std::string& fp = q.flag_prefix;
  const auto prec = from_string<precision>(q.precision);
  if (!prec) gpuplan::detail::fail(fp + "precision", "must be one of " + name_list<precision>() + " (got " + q.precision + ")", error_kind::unknown_name);
  const auto opt = from_string<optimizer>(q.optimizer);
  if (!opt) gpuplan::detail::fail(fp + "optimizer", "must be one of " + name_list<optimizer>() + " (got " + q.optimizer + ")", error_kind::unknown_name);
  std::optional<double> images;
  if (q.images) images = parse_amount(*q.images, fp + "images");
  const gpu_spec& gpu = find_gpu(q.gpu, fp + "gpu");
  const auto g = vision::vision_model(q.model, q.image, q.classes);
  const auto cost = layers::analyze(g);
  const auto e = vision::estimate_graph(g, q.batch, *prec, *opt, gpu, !q.infer, {}, q.num_gpus);
  std::optional<Seconds> total;
  if (images) total = vision::time_to_train(e, *images, q.epochs);
  vision_report r;
  r.fits = e.fits(gpu);
  r.json = {{"model", g.name}, {"gpu", gpu.id}, {"workload", q.infer ? "infer" : "train"},
            {"batch", q.batch}, {"num_gpus", q.num_gpus}, {"image", q.image}, {"precision", q.precision}, {"optimizer", q.optimizer},
            {"params", e.params}, {"forward_flops_per_image", cost.flops}, {"forward_macs_per_image", cost.matmul_flops / 2},
            {"flops_per_image", in_flops(e.flops_per_sample)},
            {"memory", {{"weights", in_bytes(e.weights)}, {"gradients", in_bytes(e.gradients)},
                        {"optimizer", in_bytes(e.optimizer)}, {"activations", in_bytes(e.activations)},
                        {"transient", in_bytes(e.transient)}, {"peak_allocated", in_bytes(e.peak_allocated)},
                        {"device", in_bytes(e.device)}, {"usable", in_bytes(gpu.usable_memory)}, {"fits", r.fits}}},
            {"time", {{"step_seconds", in_seconds(e.step)}, {"compute_seconds", in_seconds(e.compute)},
                      {"memory_bound_seconds", in_seconds(e.memory_bound)},
                      {"optimizer_seconds", in_seconds(e.optimizer_step)},
                      {"all_reduce_seconds", in_seconds(e.gradient_all_reduce)}, {"images_per_second", e.samples_per_s}}}};
  if (total) r.json["time"]["to_train_seconds"] = in_seconds(*total);
  table& t = r.summary;
  t.title = g.name + " on " + (q.num_gpus > 1 ? std::to_string(q.num_gpus) + "x " : "") + gpu.id + ", " + (q.infer ? "inference" : "training") + ", batch " + std::to_string(q.batch) + (q.num_gpus > 1 ? " per GPU" : "") +
            ", " + std::to_string(q.image) + "x" + std::to_string(q.image) + ", " + q.precision +
            (q.infer ? "" : ", " + q.optimizer);
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
  t.rows.push_back({"device (+ CUDA context)", format_bytes(e.device) + " of " + format_bytes_short(gpu.usable_memory)});
  t.rows.push_back({"step", format_seconds(e.step)});
  if (q.num_gpus > 1 && !q.infer) t.rows.push_back({"gradient all-reduce (mostly hidden by backward)", format_seconds(e.gradient_all_reduce)});
  t.rows.push_back({q.num_gpus > 1 ? "images/s (all GPUs)" : "images/s", format_rate(e.samples_per_s, "images")});
  if (total)
    t.rows.push_back({"time to train (" + format_count(static_cast<std::int64_t>(*images)) + " images x " +
                          gpuplan::detail::num(q.epochs) + " epochs)", format_seconds(*total)});
  t.notes.push_back(r.fits ? "fits on each " + gpu.id : "does not fit on one " + gpu.id);
  return r;
}

}  // namespace gpuplan::io
