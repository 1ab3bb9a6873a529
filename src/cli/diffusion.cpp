// diffusion.cpp — `gpuplan diffusion`: a Stable Diffusion pipeline (UNet, VAE, text
// encoders as layer graphs) from the catalog or a diffusers folder, its exact parameters,
// and the memory and time of text-to-image inference on one GPU (docs/diffusion.md).
#include <cstdio>
#include <memory>
#include <string>

#include "command.hpp"
#include "gpuplan/diffusion.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/io/diffusion_report.hpp"

namespace gpuplan::cli {

namespace {

// Adds the subcommand and its flags (bound to `q`) to `app`.
CLI::App* add_diffusion_command(CLI::App& app, io::diffusion_query& q, bool& no_guidance) {
  auto* sub = app.add_subcommand("diffusion", "Stable Diffusion pipelines: memory, seconds per step and per image on one GPU");
  std::string names;
  for (const auto& n : diffusion::pipeline_names()) names += (names.empty() ? "" : ", ") + n;
  sub->add_option("model", q.model, "Pipeline: " + names + " (or --config DIR)");
  sub->add_option("--config", q.config_dir, "A diffusers pipeline folder: model_index.json, unet/, vae/, text_encoder*/ config.json");
  sub->add_option("--gpu,-g", q.gpu, "GPU id (gpuplan gpus)");
  sub->add_option("--batch,-b", q.batch, "Images per pipeline call (default 1)");
  sub->add_option("--steps", q.steps, "Denoising steps (default 50)");
  sub->add_option("--resolution", q.resolution, "Image side in pixels (default: the pipeline's, 512 / 768 / 1024)");
  sub->add_option("--precision", q.precision, "Weights and activations: fp16 (default), bf16, fp32");
  sub->add_option("--train", q.train, "Fine-tune the UNet instead: full or lora (diffusers examples/text_to_image)");
  sub->add_option("--rank", q.lora_rank, "LoRA rank with --train lora (default 4)");
  sub->add_flag("--checkpointing", q.checkpointing, "Gradient checkpointing with --train (unet.enable_gradient_checkpointing)");
  sub->add_flag("--ema", q.ema, "With --train full: keep the EMA copy of the UNet on the GPU (train_text_to_image.py --use_ema)");
  sub->add_option("--optimizer", q.optimizer, "With --train: adamw (default), adam, adamw-8bit (--use_8bit_adam), sgd, sgd-momentum, lion");
  sub->add_flag("--prior-preservation", q.prior_preservation,
                "With --train: DreamBooth's class images join each batch (train_dreambooth.py --with_prior_preservation)");
  sub->add_flag("--train-text-encoder", q.train_text_encoder,
                "With --train: the text encoder trains too, in full or with LoRA adapters (train_dreambooth*.py --train_text_encoder)");
  sub->add_flag("--keep-grads", q.keep_grads,
                "With --train: gradients zeroed, not freed, between steps (train_dreambooth.py without --set_grads_to_none)");
  sub->add_flag("--no-guidance", no_guidance, "No classifier-free guidance (guidance_scale <= 1): the UNet runs on the batch, not 2 x batch");
  sub->footer("Examples:\n  gpuplan diffusion sd-1.5 --gpu t4\n"
              "  gpuplan diffusion sdxl-base --gpu a100-80gb --batch 4 --steps 30 --json\n"
              "  gpuplan diffusion --config ./stable-diffusion-v1-5 --gpu rtx-4090\n"
              "  gpuplan diffusion sd-1.5 --gpu rtx-4090 --train lora --rank 4 --batch 8 --checkpointing\n"
              "  gpuplan diffusion sd-1.5 --gpu t4 --train full --prior-preservation --checkpointing --optimizer adamw-8bit --keep-grads\n");
  return sub;
}

// Flags of the other mode would change nothing: --rank is LoRA fine-tuning's (diffusion_report.cpp
// refuses the other fine-tuning flags without --train), --steps and --no-guidance text-to-image's.
void refuse_other_mode_flags(const CLI::App& sub, const io::diffusion_query& q) {
  const bool rank = sub.get_option("--rank")->count() > 0;
  if (!q.train) {
    if (rank) gpuplan::detail::fail("--rank", "applies to LoRA fine-tuning only; add --train lora (got inference)");
    return;
  }
  if (*q.train != "full" && *q.train != "lora") return;  // diffusion_report.cpp names --train
  if (rank && *q.train == "full") gpuplan::detail::fail("--rank", "applies to LoRA fine-tuning only (got --train full)");
  for (const char* name : {"--steps", "--no-guidance"})
    if (sub.get_option(name)->count() > 0) gpuplan::detail::fail(name, "applies to inference only (got --train " + *q.train + ")");
}

int run_diffusion(const CLI::App& sub, io::diffusion_query q, bool no_guidance, const io::style& st) {
  q.flag_prefix = "--";
  q.guidance = !no_guidance;
  if (q.model.empty() && !q.config_dir)
    gpuplan::detail::fail("model", "name a pipeline (" + [] {
      std::string s;
      for (const auto& n : diffusion::pipeline_names()) s += (s.empty() ? "" : ", ") + n;
      return s;
    }() + ") or --config DIR (got neither)");
  if (!q.model.empty() && q.config_dir)
    gpuplan::detail::fail("--config", "give a pipeline name or --config, not both (got '" + q.model + "' and --config)");
  refuse_other_mode_flags(sub, q);
  const io::diffusion_report r = io::diffusion_report_of(q);
  if (st.format == io::report_format::json) std::printf("%s\n", r.json.dump(2).c_str());
  else std::fputs(io::render(r.summary, st).c_str(), stdout);
  return r.fits ? 0 : 1;
}

}  // namespace

command register_diffusion(CLI::App& app, context&) {
  struct state {
    io::diffusion_query q;
    bool no_guidance = false;
    output_args out;
  };
  auto s = std::make_shared<state>();
  auto* sub = add_diffusion_command(app, s->q, s->no_guidance);
  add_output_options(sub, s->out);
  return {sub, [s, sub] { return run_diffusion(*sub, s->q, s->no_guidance, make_style(s->out)); }};
}

}  // namespace gpuplan::cli
