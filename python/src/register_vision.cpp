// register_vision.cpp — image models as layer graphs (vision.hpp) on one GPU:
// {"data": <`gpuplan vision --json`>, "text", "markdown"} through io/vision_report.hpp,
// the formatter the CLI uses. Python's gp.vision (_vision.py) wraps it. Layer graphs as
// JSON text (io/graph_json.hpp): read, analyse, estimate; gp.trace and gp.Graph (_trace.py) wrap them.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common.hpp"
#include "gpuplan/io/graph_json.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/io/vision_report.hpp"
#include "gpuplan/layers.hpp"
#include "gpuplan/vision.hpp"

namespace gpuplan::python {
namespace {

py::dict report_dict(const io::vision_query& q) {
  io::vision_report r;
  {
    py::gil_scoped_release unlocked;
    r = io::vision_report_of(q);
  }
  return result_dict(r.json, r.summary);
}

// The run settings gp.vision and Graph.estimate share.
void set_run(io::vision_query& q, const std::string& gpu, std::int64_t batch, const std::string& precision,
             const std::string& optimizer, bool infer, std::optional<std::string> images, double epochs, int num_gpus,
             bool checkpointing, int zero) {
  q.checkpointing = checkpointing;
  q.zero = zero;
  q.gpu = gpu;
  q.batch = batch;
  q.precision = precision;
  q.optimizer = optimizer;
  q.infer = infer;
  q.images = std::move(images);
  q.epochs = epochs;
  q.num_gpus = num_gpus;
}

nlohmann::json shape_json(const layers::shape& s) { return {{"c", s.c}, {"d", s.d}, {"h", s.h}, {"w", s.w}}; }

// layers::analyze as JSON: totals and per layer (shapes, params, FLOPs, saved tensors).
nlohmann::json analysis_json(const layers::graph& g) {
  const layers::graph_cost c = layers::analyze(g);
  nlohmann::json per = nlohmann::json::array();
  for (const auto& l : c.per_layer)
    per.push_back({{"in", shape_json(l.in)}, {"out", shape_json(l.out)}, {"params", l.params}, {"flops", l.flops},
                   {"matmul_flops", l.matmul_flops}, {"saved_extra_elements", l.saved_extra_elements},
                   {"saved_fixed_bytes", l.saved_fixed_bytes}});
  return {{"name", g.name}, {"params", c.params}, {"flops", c.flops}, {"matmul_flops", c.matmul_flops},
          {"saved_elements", c.saved_elements}, {"saved_fixed_bytes", c.saved_fixed_bytes},
          {"peak_live_elements", c.peak_live_elements}, {"elementwise_elements", c.elementwise_elements},
          {"kernels", c.kernels}, {"host_ops", c.host_ops}, {"input", shape_json(g.input)}, {"output", shape_json(c.output)}, {"layers", per}};
}

}  // namespace

void register_vision(py::module_& m) {
  m.def(
      "vision",
      [](const std::string& model, const std::string& gpu, std::int64_t batch, std::optional<std::int64_t> image, std::int64_t classes,
         const std::string& precision, const std::string& optimizer, bool infer, std::optional<std::string> images,
         double epochs, int num_gpus, bool checkpointing, int zero) {
        io::vision_query q;
        q.model = model;
        q.image = image;
        q.classes = classes;
        q.flag_prefix = "vision.";
        set_run(q, gpu, batch, precision, optimizer, infer, std::move(images), epochs, num_gpus, checkpointing, zero);
        return report_dict(q);
      },
      py::arg("model"), py::arg("gpu"), py::arg("batch"), py::arg("image"), py::arg("classes"), py::arg("precision"),
      py::arg("optimizer"), py::arg("infer"), py::arg("images") = py::none(), py::arg("epochs") = 1.0, py::arg("num_gpus") = 1, py::arg("checkpointing") = false, py::arg("zero") = 0,
      "vision.hpp: parameters, FLOPs, memory and images/s of a torchvision image model on one GPU.");

  m.def(
      "vision_graph",
      [](const std::string& graph_json, const std::string& gpu, std::int64_t batch, const std::string& precision,
         const std::string& optimizer, bool infer, std::optional<std::string> images, double epochs, int num_gpus,
         bool checkpointing, int zero) {
        io::vision_query q;
        q.graph = io::read_graph_text(graph_json);
        q.flag_prefix = "estimate.";
        set_run(q, gpu, batch, precision, optimizer, infer, std::move(images), epochs, num_gpus, checkpointing, zero);
        return report_dict(q);
      },
      py::arg("graph_json"), py::arg("gpu"), py::arg("batch"), py::arg("precision"), py::arg("optimizer"), py::arg("infer"),
      py::arg("images") = py::none(), py::arg("epochs") = 1.0, py::arg("num_gpus") = 1, py::arg("checkpointing") = false, py::arg("zero") = 0,
      "gp.vision's figures for a layer graph given as graph JSON text (io/graph_json.hpp).");
  m.def(
      "graph_analyze", [](const std::string& graph_json) { return from_json(analysis_json(io::read_graph_text(graph_json))); },
      py::arg("graph_json"), "layers::analyze of graph JSON text: totals and per-layer shapes, params, FLOPs, saved tensors.");
  m.def(
      "graph_normalize", [](const std::string& graph_json) { return io::write_graph(io::read_graph_text(graph_json)).dump(1); },
      py::arg("graph_json"), "Reads and checks graph JSON text and writes it back in the canonical form.");
  m.def(
      "vision_model_graph",
      [](const std::string& model, std::optional<std::int64_t> image, std::int64_t classes) {
        return io::write_graph(vision::vision_model(model, image, classes)).dump(1);
      },
      py::arg("model"), py::arg("image") = py::none(), py::arg("classes") = 1000,
      "A catalog model's layer graph as graph JSON text (image None: the model's default, vision::default_image).");
  m.def("graph_layer_kinds", &io::graph_layer_kinds, "The layer kinds a graph file may name.");
}

}  // namespace gpuplan::python
