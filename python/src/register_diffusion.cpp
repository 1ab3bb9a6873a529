// register_diffusion.cpp — Stable Diffusion pipelines (diffusion.hpp) on one GPU:
// {"data": <`gpuplan diffusion --json`>, "text", "markdown"} through io/diffusion_report.hpp,
// the formatter the CLI uses. Python's gp.diffusion (_diffusion.py) wraps it.
#include <cstdint>
#include <optional>
#include <string>

#include "common.hpp"
#include "gpuplan/io/diffusion_report.hpp"
#include "gpuplan/io/report.hpp"

namespace gpuplan::python {

void register_diffusion(py::module_& m) {
  m.def(
      "diffusion",
      [](const std::string& model, std::optional<std::string> config, const std::string& gpu, std::int64_t batch,
         std::int64_t steps, std::int64_t resolution, const std::string& precision, bool guidance,
         std::optional<std::string> train, std::int64_t lora_rank, bool checkpointing, bool ema, bool prior_preservation,
         bool train_text_encoder, bool keep_grads, const std::string& optimizer) {
        io::diffusion_query q;
        q.model = model;
        q.config_dir = std::move(config);
        q.gpu = gpu;
        q.batch = batch;
        q.steps = steps;
        q.resolution = resolution;
        q.precision = precision;
        q.guidance = guidance;
        q.train = std::move(train);
        q.lora_rank = lora_rank;
        q.checkpointing = checkpointing;
        q.ema = ema;
        q.prior_preservation = prior_preservation;
        q.train_text_encoder = train_text_encoder;
        q.keep_grads = keep_grads;
        q.optimizer = optimizer;
        q.flag_prefix = "diffusion.";
        io::diffusion_report r;
        {
          py::gil_scoped_release unlocked;
          r = io::diffusion_report_of(q);
        }
        return result_dict(r.json, r.summary);
      },
      py::arg("model"), py::arg("config"), py::arg("gpu"), py::arg("batch"), py::arg("steps"), py::arg("resolution"),
      py::arg("precision"), py::arg("guidance"), py::arg("train") = py::none(), py::arg("lora_rank") = 4,
      py::arg("checkpointing") = false, py::arg("ema") = false, py::arg("prior_preservation") = false,
      py::arg("train_text_encoder") = false, py::arg("keep_grads") = false, py::arg("optimizer") = "adamw",
      "diffusion.hpp: parameters, memory, seconds per step and per image of a Stable Diffusion pipeline on one GPU "
      "(or, with train, of fine-tuning its UNet).");
}

}  // namespace gpuplan::python
