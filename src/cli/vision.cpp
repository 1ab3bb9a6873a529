// vision.cpp — `gpuplan vision`: a torchvision image model (ResNet, VGG, ViT, ConvNeXt, EfficientNet)
// as a layer graph, its exact parameters and FLOPs, and the memory and time of
// training or inference at a batch and image size on one GPU (docs/vision.md); or any
// layer graph from a file (--graph, docs/trace.md), and a catalog graph written as one.
#include <cstdio>
#include <memory>
#include <string>

#include "command.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/io/graph_json.hpp"
#include "gpuplan/io/vision_report.hpp"
#include "gpuplan/vision.hpp"

namespace gpuplan::cli {

namespace {

// Adds the subcommand and its flags (bound to `q`) to `app`.
CLI::App* add_vision_command(CLI::App& app, io::vision_query& q) {
  auto* sub = app.add_subcommand("vision", "Image models (ResNet, VGG, ViT, ConvNeXt, EfficientNet): memory, images/s, time to train on one GPU");
  std::string names;
  for (const auto& n : vision::vision_model_names()) names += (names.empty() ? "" : ", ") + n;
  sub->add_option("model", q.model, "Model: " + names + " (optional with --graph)");
  sub->add_option("--graph", q.graph_file, "A layer graph file (JSON, docs/trace.md; gp.trace writes one) instead of a model name");
  sub->add_option("--export-graph", q.export_graph, "Write the model's layer graph as JSON to FILE ('-': stdout) and stop");
  sub->add_option("--gpu,-g", q.gpu, "GPU id (gpuplan gpus)");
  sub->add_option("--batch,-b", q.batch, "Images per step and GPU (default 32)");
  sub->add_option("--gpus", q.num_gpus, "Data-parallel GPUs (DDP; default 1)");
  sub->add_option("--image", q.image, "Image side in pixels (default: the crop of the model's torchvision weights, 224; EfficientNet-B1..B4 240, 288, 300, 380; catalog models only)");
  sub->add_option("--classes", q.classes, "Classifier outputs (default 1000; catalog models only)");
  sub->add_option("--precision", q.precision, "Precision: " + name_list<precision>() + " (default fp16-mixed)");
  sub->add_option("--optimizer", q.optimizer, "Optimizer: sgd, sgd-momentum (default), adam, adamw, adamw-8bit, lion");
  sub->add_flag("--infer", q.infer, "Inference (forward only) instead of training");
  sub->add_option("--zero", q.zero, "Training on --gpus: shard the optimizer state (1), also the gradients (2), also the weights (3, FSDP FULL_SHARD, each residual block a unit) over the GPUs (ZeRO; default 0, DDP)");
  sub->add_flag("--checkpointing", q.checkpointing, "Training: activation checkpointing of every residual block (torch.utils.checkpoint, timm set_grad_checkpointing)");
  sub->add_option("--images", q.images, "Dataset size in images (1.28M): prints the time to train");
  sub->add_option("--epochs", q.epochs, "Passes over the dataset (default 1)");
  sub->footer("Examples:\n  gpuplan vision resnet-50 --gpu t4 --batch 64 --image 224\n"
              "  gpuplan vision vit-b-16 --gpu a100-80gb --gpus 8 --batch 128 --optimizer adamw --images 1.28M --epochs 300\n"
              "  gpuplan vision vit-h-14 --gpu rtx-4090 --gpus 8 --zero 3 --optimizer adamw --batch 16\n"
              "  gpuplan vision resnet-50 --image 128 --export-graph resnet50.json\n"
              "  gpuplan vision --graph resnet50.json --gpu t4 --batch 64\n");
  return sub;
}

// With --infer the training flags would change nothing: the optimizer holds no state, and
// --images/--epochs print a time to train (vision_report.cpp refuses --checkpointing and --zero).
void refuse_training_flags(const CLI::App& sub, const io::vision_query& q) {
  if (!q.infer) return;
  for (const char* name : {"--optimizer", "--images", "--epochs"})
    if (sub.get_option(name)->count() > 0) gpuplan::detail::fail(name, "applies to training only (got inference)");
}

int run_vision(const CLI::App& sub, io::vision_query q, const io::style& st) {
  q.flag_prefix = "--";
  refuse_training_flags(sub, q);
  if (!q.export_graph.empty()) {
    const layers::graph g = io::vision_graph_of(q);
    if (q.export_graph == "-") {
      std::printf("%s\n", io::write_graph(g).dump(1).c_str());
    } else {
      io::save_graph_file(g, q.export_graph);
      std::printf("Wrote the layer graph of %s (%zu layers) to %s\n", io::printable(g.name).c_str(), g.layers.size(),
                  io::printable(q.export_graph).c_str());
    }
    return 0;
  }
  const io::vision_report r = io::vision_report_of(q);
  if (st.format == io::report_format::json) std::printf("%s\n", r.json.dump(2).c_str());
  else std::fputs(io::render(r.summary, st).c_str(), stdout);
  return r.fits ? 0 : 1;
}

}  // namespace

command register_vision(CLI::App& app, context&) {
  struct state {
    io::vision_query q;
    output_args out;
  };
  auto s = std::make_shared<state>();
  auto* sub = add_vision_command(app, s->q);
  add_output_options(sub, s->out);
  return {sub, [s, sub] { return run_vision(*sub, s->q, make_style(s->out)); }};
}

}  // namespace gpuplan::cli
