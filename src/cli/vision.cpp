// vision.cpp — `gpuplan vision`: a torchvision image model (ResNet, VGG, ViT, ConvNeXt)
// as a layer graph, its exact parameters and FLOPs, and the memory and time of
// training or inference at a batch and image size on one GPU (docs/vision.md).
#include "vision_command.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "gpuplan/io/amount.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/vision.hpp"

namespace gpuplan::cli {

CLI::App* add_vision_command(CLI::App& app, vision_request& req) {
  auto* sub = app.add_subcommand("vision", "Image models (ResNet, VGG, ViT, ConvNeXt): memory, images/s, time to train on one GPU");
  std::string names;
  for (const auto& n : vision::vision_model_names()) names += (names.empty() ? "" : ", ") + n;
  sub->add_option("model", req.model, "Model: " + names)->required();
  sub->add_option("--gpu,-g", req.gpu, "GPU id (gpuplan gpus)");
  sub->add_option("--batch,-b", req.batch, "Images per step (default 32)");
  sub->add_option("--image", req.image, "Image side in pixels (default 224)");
  sub->add_option("--classes", req.classes, "Classifier outputs (default 1000)");
  sub->add_option("--precision", req.precision, "Precision: " + name_list<precision>());
  sub->add_option("--optimizer", req.optimizer, "Optimizer: sgd, sgd-momentum (default), adam, adamw, adamw-8bit, lion");
  sub->add_flag("--infer", req.infer, "Inference (forward only) instead of training");
  sub->add_option("--images", req.images, "Dataset size in images (1.28M): prints the time to train");
  sub->add_option("--epochs", req.epochs, "Passes over the dataset (default 1)");
  sub->footer("Examples:\n  gpuplan vision resnet-50 --gpu t4 --batch 64 --image 224\n"
              "  gpuplan vision vit-b-16 --gpu a100-80gb --batch 128 --optimizer adamw --images 1.28M --epochs 300\n");
  return sub;
}

int run_vision(const vision_request& req, const io::style& st) {
  const auto prec = from_string<precision>(req.precision);
  if (!prec) gpuplan::detail::fail("--precision", "must be one of " + name_list<precision>() + " (got " + req.precision + ")", error_kind::unknown_name);
  const auto opt = from_string<optimizer>(req.optimizer);
  if (!opt) gpuplan::detail::fail("--optimizer", "must be one of " + name_list<optimizer>() + " (got " + req.optimizer + ")", error_kind::unknown_name);
  std::optional<double> images;
  if (req.images) images = io::parse_amount(*req.images, "--images");
  const gpu_spec& gpu = io::find_gpu(req.gpu, "--gpu");
  const auto g = vision::vision_model(req.model, req.image, req.classes);
  const auto cost = layers::analyze(g);
  const auto e = vision::estimate_graph(g, req.batch, *prec, *opt, gpu, !req.infer);
  std::optional<Seconds> total;
  if (images) total = vision::time_to_train(e, *images, req.epochs);
  const bool fits = e.fits(gpu);
  if (st.format == io::report_format::json) {
    nlohmann::json j{{"model", g.name}, {"gpu", gpu.id}, {"workload", req.infer ? "infer" : "train"},
                     {"batch", req.batch}, {"image", req.image}, {"params", e.params},
                     {"forward_flops_per_image", cost.flops}, {"forward_macs_per_image", cost.matmul_flops / 2},
                     {"flops_per_image", in_flops(e.flops_per_sample)},
                     {"memory", {{"weights", in_bytes(e.weights)}, {"gradients", in_bytes(e.gradients)},
                                 {"optimizer", in_bytes(e.optimizer)}, {"activations", in_bytes(e.activations)},
                                 {"transient", in_bytes(e.transient)}, {"peak_allocated", in_bytes(e.peak_allocated)},
                                 {"device", in_bytes(e.device)}, {"usable", in_bytes(gpu.usable_memory)}, {"fits", fits}}},
                     {"time", {{"step_seconds", in_seconds(e.step)}, {"compute_seconds", in_seconds(e.compute)},
                               {"memory_bound_seconds", in_seconds(e.memory_bound)},
                               {"optimizer_seconds", in_seconds(e.optimizer_step)}, {"images_per_second", e.samples_per_s}}}};
    if (total) j["time"]["to_train_seconds"] = in_seconds(*total);
    std::printf("%s\n", j.dump(2).c_str());
    return fits ? 0 : 1;
  }
  io::table t;
  t.title = g.name + " on " + gpu.id + ", " + (req.infer ? "inference" : "training") + ", batch " + std::to_string(req.batch) +
            ", " + std::to_string(req.image) + "x" + std::to_string(req.image) + ", " + req.precision +
            (req.infer ? "" : ", " + req.optimizer);
  t.header = {"Term", "Value"};
  t.rows = {{"parameters", io::format_count(e.params)},
            {"forward multiply-adds per image", io::format_number(cost.matmul_flops / 2 / 1e9, 4) + " G"},
            {"weights", io::format_bytes(e.weights)}};
  if (!req.infer) {
    t.rows.push_back({"gradients", io::format_bytes(e.gradients)});
    t.rows.push_back({"optimizer state", io::format_bytes(e.optimizer)});
    t.rows.push_back({"saved activations", io::format_bytes(e.activations)});
    t.rows.push_back({"backward transient", io::format_bytes(e.transient)});
  } else {
    t.rows.push_back({"activations (working set)", io::format_bytes(e.activations)});
  }
  t.rows.push_back({"peak allocated", io::format_bytes(e.peak_allocated)});
  t.rows.push_back({"device (+ CUDA context)", io::format_bytes(e.device) + " of " + io::format_bytes_short(gpu.usable_memory)});
  t.rows.push_back({"step", io::format_seconds(e.step)});
  t.rows.push_back({"images/s", io::format_rate(e.samples_per_s, "images")});
  if (total) t.rows.push_back({"time to train (" + io::format_count(static_cast<std::int64_t>(*images)) + " images x " + gpuplan::detail::num(req.epochs) + " epochs)", io::format_seconds(*total)});
  t.notes.push_back(fits ? "fits on one " + gpu.id : "does not fit on one " + gpu.id);
  std::fputs(io::render(t, st).c_str(), stdout);
  return fits ? 0 : 1;
}

}  // namespace gpuplan::cli
