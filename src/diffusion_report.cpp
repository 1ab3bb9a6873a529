// diffusion_report.cpp — io/diffusion_report.hpp: estimate_pipeline (diffusion.hpp) as JSON and a table.
#include "gpuplan/io/diffusion_report.hpp"

#include <algorithm>

#include "gpuplan/diffusion.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/diffusers_config.hpp"

namespace gpuplan::io {

namespace {
// --train full|lora: the fine-tuning options of the query (fp: the caller's flag prefix).
diffusion::finetune_options diffusion_finetune_options(const diffusion_query& q) {
  const std::string& fp = q.flag_prefix;
  diffusion::finetune_options o;
  if (*q.train == "full") o.method = diffusion::finetune_method::full;
  else if (*q.train == "lora") o.method = diffusion::finetune_method::lora;
  else gpuplan::detail::fail(fp + "train", "must be full or lora (got " + *q.train + ")", error_kind::unknown_name);
  if (q.precision != "fp16")
    gpuplan::detail::fail(fp + "precision", "fine-tuning is modelled with fp16 mixed precision only (got " + q.precision + ")");
  o.batch = q.batch;
  o.resolution = q.resolution;
  o.lora_rank = q.lora_rank;
  o.gradient_checkpointing = q.checkpointing;
  o.ema = q.ema;
  o.prior_preservation = q.prior_preservation;
  o.train_text_encoder = q.train_text_encoder;
  o.grads_set_to_none = !q.keep_grads;
  const auto opt = from_string<optimizer>(q.optimizer);
  if (!opt)
    gpuplan::detail::fail(fp + "optimizer", "must be one of " + name_list<optimizer>() + " (got " + q.optimizer + ")",
                          error_kind::unknown_name);
  o.opt = *opt;
  return o;
}

// The training resolution: the query's, else the pipeline's.
std::int64_t finetune_resolution(const diffusion_query& q, const diffusion::pipeline& p) {
  return q.resolution == 0 ? p.resolution : q.resolution;
}

nlohmann::json finetune_json(const diffusion_query& q, const diffusion::pipeline& p, const gpu_spec& gpu,
                             const diffusion::finetune_options& o, const diffusion::finetune_estimate& e, bool fits) {
  const std::int64_t res = finetune_resolution(q, p);
  const std::int64_t images = q.batch * (q.prior_preservation ? 2 : 1);  // instance + class images per step
  nlohmann::json j = {{"model", p.name}, {"gpu", gpu.id}, {"workload", "fine-tune"}, {"method", *q.train}, {"batch", q.batch},
                       {"resolution", res}, {"precision", "fp16-mixed"}, {"gradient_checkpointing", q.checkpointing}, {"ema", q.ema},
                       {"optimizer", to_string(o.opt)}, {"prior_preservation", q.prior_preservation}, {"train_text_encoder", q.train_text_encoder},
                       {"keep_grads", q.keep_grads},
                       {"params", e.trainable_params + e.frozen_params}, {"trainable_params", e.trainable_params},
                       {"frozen_params", e.frozen_params}, {"components", nlohmann::json::array()},
                       {"memory", {{"frozen_weights", in_bytes(e.frozen_weights)}, {"trainable_weights", in_bytes(e.trainable_weights)},
                                   {"gradients", in_bytes(e.gradients)}, {"optimizer", in_bytes(e.optimizer_state)},
                                   {"activations", in_bytes(e.activations)}, {"transient", in_bytes(e.transient)},
                                   {"ema", in_bytes(e.ema)}, {"peak_allocated", in_bytes(e.peak_allocated)}, {"reserved", in_bytes(e.reserved)}, {"device", in_bytes(e.device)},
                                   {"usable", in_bytes(gpu.usable_memory)}, {"fits", fits}}},
                       {"time", {{"step_seconds", in_seconds(e.step)}, {"unet_seconds", in_seconds(e.unet)},
                                 {"encode_seconds", in_seconds(e.encode)},
                                 {"seconds_per_image", in_seconds(e.step) / static_cast<double>(images)},
                                 {"images_per_second", e.images_per_s}}}};
  if (*q.train == "lora") j["lora_rank"] = q.lora_rank;
  return j;
}

table finetune_table(const diffusion_query& q, const diffusion::pipeline& p, const gpu_spec& gpu,
                     const diffusion::finetune_options& o, const diffusion::finetune_estimate& e, bool fits) {
  const std::int64_t res = finetune_resolution(q, p);
  table t;
  t.title = p.name + " UNet " + (*q.train == "lora" ? "LoRA (rank " + std::to_string(q.lora_rank) + ")" : std::string("full")) +
            " fine-tuning on " + gpu.id + ", " + std::to_string(res) + "x" + std::to_string(res) + ", batch " +
            std::to_string(q.batch) + (q.prior_preservation ? " + " + std::to_string(q.batch) + " class images" : "") +
            ", fp16 mixed precision, " + std::string(to_string(o.opt)) + (q.checkpointing ? ", gradient checkpointing" : "") +
            (q.ema ? ", EMA" : "") + (q.train_text_encoder ? ", text encoder trained" : "") +
            (q.keep_grads ? ", gradients kept between steps" : "");
  t.header = {"Term", "Value"};
  t.rows = {{"trainable parameters", format_count(e.trainable_params)},
            {"frozen parameters (fp16)", format_count(e.frozen_params)},
            {"frozen weights", format_bytes(e.frozen_weights)},
            {"trainable weights (fp32 + fp16 autocast copies)", format_bytes(e.trainable_weights)},
            {"gradients", format_bytes(e.gradients)},
            {"optimizer state", format_bytes(e.optimizer_state)},
            {q.train_text_encoder ? "saved activations (UNet, text encoder)" : "saved activations (UNet)", format_bytes(e.activations)},
            {"backward transient", format_bytes(e.transient)},
            {"peak allocated", format_bytes(e.peak_allocated)},
            {"reserved (caching allocator)", format_bytes(e.reserved)},
            {"device (reserved + CUDA context)", format_bytes(e.device) + " of " + format_bytes_short(gpu.usable_memory)},
            {q.train_text_encoder ? "step (VAE encoding, text encoder and UNet forward and backward)"
                                  : "step (VAE + text encoding, UNet forward and backward)", format_seconds(e.step)},
            {"images/s", format_rate(e.images_per_s, "images")}};
  if (q.ema) t.rows.insert(t.rows.begin() + 8, {"EMA copy of the UNet (fp32)", format_bytes(e.ema)});
  t.notes.push_back("memory: peak allocated = torch.cuda.max_memory_allocated; reserved = the caching allocator's pool "
                    "(x 1.10 + cuBLAS workspace); device adds the CUDA context");
  t.notes.push_back(q.keep_grads ? "gradients: zeroed and kept between steps (zero_grad(set_to_none=False)), resident "
                                   "beside the activations"
                                 : "gradients: freed after each step (zero_grad(set_to_none=True), PyTorch 2's default): "
                                   "backward holds them or the activations, whichever is larger");
  t.notes.push_back(fits ? "fits on one " + gpu.id : "does not fit on one " + gpu.id);
  return t;
}

// --train full|lora: one fine-tuning step of the UNet (diffusion::estimate_finetune).
diffusion_report finetune_report(const diffusion_query& q, const diffusion::pipeline& p, const gpu_spec& gpu) {
  const std::string& fp = q.flag_prefix;
  const diffusion::finetune_options o = diffusion_finetune_options(q);
  diffusion::finetune_estimate e;
  try {
    e = diffusion::estimate_finetune(p, gpu, o);
  } catch (const config_error& err) {
    const std::string path = err.path();
    if (path == "batch" || path == "resolution" || path == "lora_rank" || path == "optimizer")
      gpuplan::detail::fail(fp + (path == "lora_rank" ? std::string("rank") : path), std::string(err.what()).substr(path.size() + 2), err.kind());
    throw;
  }
  diffusion_report r;
  r.fits = e.fits(gpu);
  r.json = finetune_json(q, p, gpu, o, e, r.fits);
  r.summary = finetune_table(q, p, gpu, o, e, r.fits);
  return r;
}

// --precision of inference: fp16 (default), bf16 or fp32 (fp: the caller's flag prefix).
precision diffusion_precision(const diffusion_query& q) {
  const std::string& fp = q.flag_prefix;
  precision prec = precision::fp16_mixed;
  if (q.precision == "fp16" || q.precision == "float16") prec = precision::fp16_mixed;
  else if (q.precision == "bf16" || q.precision == "bfloat16") prec = precision::bf16_pure;
  else if (q.precision == "fp32" || q.precision == "float32") prec = precision::fp32;
  else gpuplan::detail::fail(fp + "precision", "must be fp16, bf16 or fp32 (got " + q.precision + ")", error_kind::unknown_name);
  return prec;
}

// Training-only options without --train would change nothing: say so rather than ignore them.
void check_training_only_options(const diffusion_query& q) {
  const std::string& fp = q.flag_prefix;
  for (const auto& [set, name] : {std::pair{q.checkpointing, "checkpointing"}, {q.ema, "ema"},
                                  {q.prior_preservation, "prior-preservation"}, {q.train_text_encoder, "train-text-encoder"},
                                  {q.keep_grads, "keep-grads"}, {q.optimizer != "adamw", "optimizer"}})
    if (set) {
      std::string field = name;  // the CLI's flag, or Python's keyword (underscores)
      if (fp != "--") std::replace(field.begin(), field.end(), '-', '_');
      gpuplan::detail::fail(fp + field, "applies to fine-tuning only; add " + fp + "train full or lora (got inference)");
    }
}

// The parameters of every component (the "all components" row and "params").
std::int64_t pipeline_params(const diffusion::pipeline_estimate& e) {
  std::int64_t params = 0;
  for (const auto& c : e.components) params += c.params;
  return params;
}

nlohmann::json inference_json(const diffusion_query& q, const diffusion::pipeline& p, const gpu_spec& gpu,
                              const diffusion::pipeline_estimate& e, bool fits) {
  nlohmann::json comps = nlohmann::json::array();
  const std::int64_t params = pipeline_params(e);
  for (const auto& c : e.components) {
    comps.push_back({{"name", c.name}, {"params", c.params}, {"weights", in_bytes(c.weights)},
                     {"working_set", in_bytes(c.working_set)}, {"batch", c.batch}, {"calls", c.calls},
                     {"seconds_per_call", in_seconds(c.per_call)}, {"forward_macs_per_sample", c.forward_macs_per_sample}});
  }
  const double per_image = in_seconds(e.total) / static_cast<double>(e.batch);
  const auto measured = diffusion::step_as_measured(e);
  return {{"model", p.name}, {"gpu", gpu.id}, {"workload", "text-to-image"}, {"batch", e.batch}, {"steps", e.steps},
          {"resolution", e.resolution}, {"latent", e.latent}, {"precision", q.precision}, {"guidance", q.guidance},
          {"params", params}, {"components", comps},
          {"memory", {{"weights", in_bytes(e.weights)}, {"peak_allocated", in_bytes(e.peak_allocated)}, {"reserved", in_bytes(e.reserved)},
                      {"device", in_bytes(e.device)}, {"usable", in_bytes(gpu.usable_memory)}, {"fits", fits},
                      {"peak_phase", e.peak_phase}}},
          {"time", {{"step_seconds", in_seconds(e.unet_step)}, {"text_encode_seconds", in_seconds(e.text_encode)},
                    {"vae_decode_seconds", in_seconds(e.vae_decode)}, {"safety_check_seconds", in_seconds(e.safety_check)},
                    {"pipeline_seconds", in_seconds(e.total)}, {"seconds_per_image", per_image},
                    {"images_per_second", e.images_per_s},
                    {"step_seconds_as_measured", {{"p10", in_seconds(measured[0])}, {"p50", in_seconds(measured[1])},
                                                  {"p90", in_seconds(measured[2])}}}}}};
}

table inference_table(const diffusion_query& q, const diffusion::pipeline& p, const gpu_spec& gpu,
                      const diffusion::pipeline_estimate& e, bool fits) {
  const std::int64_t params = pipeline_params(e);
  const double per_image = in_seconds(e.total) / static_cast<double>(e.batch);
  const auto measured = diffusion::step_as_measured(e);
  table t;
  t.title = p.name + " on " + gpu.id + ", text-to-image " + std::to_string(e.resolution) + "x" + std::to_string(e.resolution) +
            ", batch " + std::to_string(e.batch) + ", " + std::to_string(e.steps) + " steps, " + q.precision +
            (q.guidance ? ", guidance (UNet on 2 x batch)" : ", no guidance");
  t.header = {"Component", "Parameters", "Weights", "Working set", "Time"};
  for (const auto& c : e.components) {
    const std::string runs = c.calls == 1 ? "" : gpuplan::detail::num(c.calls) + " x ";
    t.rows.push_back({c.name + " (batch " + std::to_string(c.batch) + ")", format_count(c.params), format_bytes(c.weights),
                      format_bytes(c.working_set), runs + format_seconds(c.per_call)});
  }
  t.rows.push_back({"all components", format_count(params), format_bytes(e.weights), "", ""});
  t.rows.push_back({"peak allocated (" + e.peak_phase + ")", "", format_bytes(e.peak_allocated), "", ""});
  t.rows.push_back({"reserved (caching allocator)", "", format_bytes(e.reserved), "", ""});
  t.rows.push_back({"device (reserved + CUDA context)", "", format_bytes(e.device) + " of " + format_bytes_short(gpu.usable_memory), "", ""});
  t.rows.push_back({"denoising step", "", "", "", format_seconds(e.unet_step)});
  t.rows.push_back({"  as published runs measure (P10-P90)", "", "", "",
                    format_seconds(measured[0]) + " - " + format_seconds(measured[2])});
  t.rows.push_back({"pipeline call (" + std::to_string(e.batch) + (e.batch == 1 ? " image)" : " images)"), "", "", "",
                    format_seconds(e.total)});
  t.rows.push_back({"seconds per image", "", "", "", format_seconds(seconds(per_image))});
  t.rows.push_back({"images/s", "", "", "", format_rate(e.images_per_s, "images")});
  t.notes.push_back("memory: peak allocated = torch.cuda.max_memory_allocated; reserved = the caching allocator's pool "
                    "(x 1.10 + cuBLAS workspace); device adds the CUDA context (cuDNN workspaces are not modelled)");
  t.notes.push_back("time: every published step time ran 1.0-2.2x this estimate (docs/accuracy.md: host speed per "
                    "call varies by machine, and A100 and T4 sustain less than their GEMM ceiling on this UNet)");
  t.notes.push_back(fits ? "fits on one " + gpu.id : "does not fit on one " + gpu.id);
  return t;
}

}  // namespace

diffusion_report diffusion_report_of(const diffusion_query& q) {
  const std::string& fp = q.flag_prefix;
  const precision prec = diffusion_precision(q);
  const gpu_spec& gpu = find_gpu(q.gpu, fp + "gpu");
  const diffusion::pipeline p = q.config_dir ? read_diffusers_pipeline(*q.config_dir) : diffusion::pipeline_by_name(q.model);
  if (q.train) return finetune_report(q, p, gpu);
  check_training_only_options(q);
  diffusion::inference_options o;
  o.batch = q.batch;
  o.steps = q.steps;
  o.resolution = q.resolution;
  o.prec = prec;
  o.guidance = q.guidance;
  diffusion::pipeline_estimate e;
  try {
    e = diffusion::estimate_pipeline(p, gpu, o);
  } catch (const config_error& err) {
    // batch, steps, resolution, precision: name the flag they came from
    const std::string path = err.path();
    if (path == "batch" || path == "steps" || path == "resolution" || path == "precision")
      gpuplan::detail::fail(fp + path, std::string(err.what()).substr(path.size() + 2), err.kind());
    throw;
  }
  diffusion_report r;
  r.fits = e.fits(gpu);
  r.json = inference_json(q, p, gpu, e, r.fits);
  r.summary = inference_table(q, p, gpu, e, r.fits);
  return r;
}

}  // namespace gpuplan::io
