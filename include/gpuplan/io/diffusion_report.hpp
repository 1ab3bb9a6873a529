// io/diffusion_report.hpp — one Stable Diffusion pipeline's text-to-image inference on one
// GPU as a report (JSON and a table): `gpuplan diffusion` and Python's gp.diffusion print
// the same figures (docs/diffusion.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "gpuplan/io/report.hpp"

namespace gpuplan::io {

struct diffusion_query {
  std::string model;                      // catalog name (sd-1.5, sd-2.1, sdxl-base); ignored with config_dir
  std::optional<std::string> config_dir;  // a diffusers pipeline folder (model_index.json + component configs)
  std::string gpu = "a100-80gb";
  std::int64_t batch = 1;
  std::int64_t steps = 50;
  std::int64_t resolution = 0;  // 0: the pipeline's default
  std::string precision = "fp16";  // fp16, bf16 or fp32 (torch_dtype)
  bool guidance = true;            // classifier-free guidance: the UNet runs on 2 x batch
  // Fine-tuning the UNet instead of inference: "full" or "lora" (diffusion::estimate_finetune).
  std::optional<std::string> train;
  std::int64_t lora_rank = 4;
  bool checkpointing = false;      // unet.enable_gradient_checkpointing()
  bool ema = false;                // --use_ema: the EMA copy of the UNet (full fine-tuning)
  bool prior_preservation = false; // train_dreambooth.py --with_prior_preservation: class images join each batch
  bool train_text_encoder = false; // --train_text_encoder: the text encoder trains too (full, or LoRA under lora)
  bool keep_grads = false;         // optimizer.zero_grad(set_to_none=False) (train_dreambooth.py's default)
  std::string optimizer = "adamw"; // with train: adamw, adam, adamw-8bit (--use_8bit_adam), sgd, sgd-momentum, lion
  std::string flag_prefix;         // "--" in the CLI, so errors name the flag
};

struct diffusion_report {
  nlohmann::json json;  // `gpuplan diffusion --json`
  table summary;        // the table `gpuplan diffusion` prints
  bool fits = false;
};

// Throws config_error naming the field for an unknown model, GPU or precision, for
// out-of-range numbers and for a bad config folder.
diffusion_report diffusion_report_of(const diffusion_query& q);

}  // namespace gpuplan::io
