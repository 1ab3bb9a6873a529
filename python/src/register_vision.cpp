// register_vision.cpp — image models as layer graphs (vision.hpp) on one GPU:
// {"data": <`gpuplan vision --json`>, "text", "markdown"} through io/vision_report.hpp,
// the formatter the CLI uses. Python's gp.vision (_vision.py) wraps it.
#include <cstdint>
#include <optional>
#include <string>

#include "common.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/io/vision_report.hpp"

namespace gpuplan::python {

void register_vision(py::module_& m) {
  m.def(
      "vision",
      [](const std::string& model, const std::string& gpu, std::int64_t batch, std::int64_t image, std::int64_t classes,
         const std::string& precision, const std::string& optimizer, bool infer, std::optional<std::string> images,
         double epochs, int num_gpus) {
        io::vision_query q{.model = model, .gpu = gpu, .batch = batch, .image = image, .classes = classes,
                           .precision = precision, .optimizer = optimizer, .infer = infer,
                           .images = std::move(images), .epochs = epochs, .flag_prefix = "vision."};
        q.num_gpus = num_gpus;
        io::vision_report r;
        {
          py::gil_scoped_release unlocked;
          r = io::vision_report_of(q);
        }
        py::dict d;
        d["data"] = from_json(r.json);
        d["text"] = io::render(r.summary, {.format = io::report_format::text, .color = false});
        d["markdown"] = io::render(r.summary, {.format = io::report_format::markdown, .color = false});
        return d;
      },
      py::arg("model"), py::arg("gpu"), py::arg("batch"), py::arg("image"), py::arg("classes"), py::arg("precision"),
      py::arg("optimizer"), py::arg("infer"), py::arg("images") = py::none(), py::arg("epochs") = 1.0, py::arg("num_gpus") = 1,
      "vision.hpp: parameters, FLOPs, memory and images/s of a torchvision image model on one GPU.");
}

}  // namespace gpuplan::python
