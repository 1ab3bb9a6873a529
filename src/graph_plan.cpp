// graph_plan.cpp — io/graph_plan.hpp: the workload `gpuplan recommend` plans for an image
// classifier or a diffusion fine-tune, from the model's published recipe and the query.
#include "gpuplan/io/graph_plan.hpp"

#include <algorithm>
#include <cmath>

#include "gpuplan/diffusion.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/io/amount.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/graph_json.hpp"
#include "gpuplan/io/vision_report.hpp"
#include "gpuplan/plan_names.hpp"
#include "gpuplan/vision.hpp"

namespace gpuplan::io {

namespace {

using gpuplan::detail::fail;

// A field as the caller spells it: the CLI's flags with '-' ("--global-batch"), Python's
// keywords with '_' ("recommend.global_batch").
std::string field(const graph_recommend_query& q, std::string name) {
  if (q.flag_prefix == "--") std::replace(name.begin(), name.end(), '_', '-');
  return q.flag_prefix + name;
}

// A name diffusion::pipeline_by_name knows (sd-1.5, sdxl, a Hub id such as stabilityai/stable-diffusion-2-1).
bool is_pipeline(std::string_view n) {
  try {
    (void)diffusion::pipeline_by_name(n);
    return true;
  } catch (const config_error&) {
    return false;
  }
}

// Runs the workload's step once so that the estimator's own checks (precision, optimizer,
// resolution, rank, residual blocks) fail before any GPU is tried, naming the caller's field.
void check_step(const graph_recommend_query& q, const graph_workload& w) {
  try {
    (void)w.step(io::find_gpu("a100-80gb"), 1, 1);
  } catch (const config_error& e) {
    const std::string path = e.path(), what = e.what();
    const std::string reason = what.size() > path.size() + 2 ? what.substr(path.size() + 2) : what;
    throw config_error(field(q, path), reason, e.kind());
  }
}

template <class E>
E enum_field(const std::optional<std::string>& v, E fallback, const std::string& field) {
  if (!v) return fallback;
  const auto e = from_string<E>(*v);
  if (!e) fail(field, "must be one of " + name_list<E>() + " (got " + *v + ")", error_kind::unknown_name);
  return *e;
}

void not_for(bool given, const std::string& field, const std::string& what) {
  if (given) fail(field, "does not apply to " + what);
}

double positive(const std::optional<double>& v, double fallback, const std::string& field) {
  if (!v) return fallback;
  if (!(*v > 0 && *v <= 1e6)) fail(field, "must be in (0, 1e6] (got " + gpuplan::detail::num(*v) + ")");
  return *v;
}

// Samples, the summary's words for them, and the settings shared by both kinds of model.
void finish(graph_plan& p, const graph_recommend_query& q, double default_images, const std::string& images_source,
            double default_epochs, const std::string& what) {
  const std::string& fp = q.flag_prefix;
  const double images = q.images ? parse_amount(*q.images, fp + "images") : default_images;
  if (!(images >= 1 && images <= 1e12)) fail(fp + "images", "must be in [1, 1e12] (got " + gpuplan::detail::num(images) + ")");
  const double epochs = positive(q.epochs, default_epochs, fp + "epochs");
  p.workload.samples = images * epochs;
  if (!(p.workload.samples >= 1 && p.workload.samples <= 1e15))
    fail(fp + "epochs", "images x epochs must be in [1, 1e15] (got " + gpuplan::detail::num(images) + " x " +
                            gpuplan::detail::num(epochs) + ")");
  if (q.global_batch) {
    if (*q.global_batch < 1 || *q.global_batch > kMaxBatch)
      fail(field(q, "global_batch"), "must be between 1 and " + std::to_string(kMaxBatch) + " (got " + std::to_string(*q.global_batch) + ")");
    p.workload.global_batch = *q.global_batch;
  }
  if (q.batch) {
    if (*q.batch < 1 || *q.batch > p.workload.max_micro_batch)
      fail(fp + "batch", "must be between 1 and " + std::to_string(p.workload.max_micro_batch) + " for this model (got " +
                             std::to_string(*q.batch) + ")");
    p.workload.micro_batch = q.batch;
  }
  p.summary = printable(p.workload.name) + ": " + format_count(static_cast<std::int64_t>(std::llround(images))) + " images" +
              (q.images ? "" : " (" + images_source + ")") + " × " + gpuplan::detail::num(epochs) +
              (epochs == 1 ? " epoch" : " epochs") + ", global batch " + std::to_string(p.workload.global_batch) +
              (q.global_batch ? "" : " (the recipe's)") + ", " + what + "; recipe: " + p.workload.recipe;
  p.settings["model"] = p.workload.name;
  p.settings["images"] = images;
  p.settings["epochs"] = epochs;
  p.settings["samples"] = p.workload.samples;
  p.settings["global_batch"] = p.workload.global_batch;
  p.settings["micro_batch"] = q.batch ? nlohmann::json(*q.batch) : nlohmann::json(nullptr);
  p.settings["recipe"] = p.workload.recipe;
}

graph_plan diffusion_plan(const graph_recommend_query& q) {
  const std::string& fp = q.flag_prefix;
  const std::string what = "diffusion models";
  not_for(q.image.has_value(), fp + "image", what + " (use " + fp + "resolution)");
  not_for(q.zero.has_value(), fp + "zero", what + " (diffusers' scripts train under DDP)");
  const auto p = diffusion::pipeline_by_name(q.model);
  diffusion::finetune_options o;
  const std::string method = q.method.value_or("full");
  if (method == "full") o.method = diffusion::finetune_method::full;
  else if (method == "lora") o.method = diffusion::finetune_method::lora;
  else fail(fp + "method", "must be full or lora for a diffusion pipeline (got " + method + ")", error_kind::unknown_name);
  const auto recipe = diffusion::finetune_recipe_of(o.method);
  if (q.precision && *q.precision != "fp16-mixed" && *q.precision != "fp16")
    fail(fp + "precision", "diffusion fine-tuning is modelled with fp16 mixed precision only (got " + *q.precision + ")");
  o.opt = enum_field<optimizer>(q.optimizer, optimizer::adamw, fp + "optimizer");
  o.resolution = q.resolution.value_or(0);
  if (q.lora_rank) {
    not_for(o.method != diffusion::finetune_method::lora, field(q, "lora_rank"), "full fine-tuning");
    o.lora_rank = *q.lora_rank;
  }
  o.gradient_checkpointing = q.checkpointing.value_or(recipe.gradient_checkpointing);
  o.ema = q.ema.value_or(recipe.ema);
  if (o.ema && o.method != diffusion::finetune_method::full) fail(fp + "ema", "applies to full fine-tuning only (got method lora)");
  graph_plan g;
  g.workload = diffusion_finetuning(p, o);
  g.workload.global_batch = recipe.global_batch;
  g.workload.recipe = recipe.source;
  const std::int64_t res = o.resolution == 0 ? p.resolution : o.resolution;
  const std::string how = std::string(method == "lora" ? "LoRA rank " + std::to_string(o.lora_rank) : "full UNet") + ", " +
                          std::to_string(res) + "x" + std::to_string(res) + ", fp16 mixed precision, " +
                          std::string(to_string(o.opt)) + (o.gradient_checkpointing ? ", gradient checkpointing" : "") +
                          (o.ema ? ", EMA" : "");
  const double images = recipe.steps * static_cast<double>(recipe.global_batch);
  finish(g, q, images, "the recipe's " + format_count(static_cast<std::int64_t>(recipe.steps)) + " steps × " +
                           std::to_string(recipe.global_batch), 1, how);
  g.settings["workload"] = "diffusion-fine-tune";
  g.settings["method"] = method;
  g.settings["resolution"] = res;
  g.settings["optimizer"] = to_string(o.opt);
  g.settings["gradient_checkpointing"] = o.gradient_checkpointing;
  g.settings["ema"] = o.ema;
  if (o.method == diffusion::finetune_method::lora) g.settings["lora_rank"] = o.lora_rank;
  check_step(q, g.workload);
  return g;
}

graph_plan image_plan(const graph_recommend_query& q) {
  const std::string& fp = q.flag_prefix;
  const std::string what = "image models";
  not_for(q.resolution.has_value(), fp + "resolution", what + " (use " + fp + "image)");
  not_for(q.lora_rank.has_value(), field(q, "lora_rank"), what);
  not_for(q.ema.has_value(), fp + "ema", what);
  if (q.method && *q.method != "full") fail(fp + "method", "image models are planned with full training only (got " + *q.method + ")");
  vision_query vq;
  vq.model = q.model;
  vq.graph_file = q.graph_file;
  vq.graph = q.graph;
  vq.image = q.image;
  vq.flag_prefix = fp;
  const layers::graph g = vision_graph_of(vq);
  const bool catalog = !q.model.empty();
  // A graph named like a catalog model (Graph.from_catalog) trains with that model's recipe.
  const vision::training_recipe recipe = vision::training_recipe_of(catalog ? q.model : g.name);
  const precision prec = enum_field<precision>(q.precision, precision::fp16_mixed, fp + "precision");
  const optimizer opt = enum_field<optimizer>(q.optimizer, recipe.opt, fp + "optimizer");
  graph_plan p;
  const bool ckpt = q.checkpointing.value_or(false);
  const int zero = q.zero.value_or(0);
  if (zero < 0 || zero > 3) fail(fp + "zero", "must be 0, 1, 2 or 3 (got " + std::to_string(zero) + ")");
  p.workload = image_training(g, prec, opt, {}, ckpt, zero);
  if (p.workload.name.empty()) p.workload.name = "graph";
  p.workload.global_batch = recipe.global_batch;
  p.workload.recipe = recipe.source;
  const std::int64_t image = q.image.value_or(vision::default_image(q.model));
  const std::string how = (catalog ? std::to_string(image) + "x" + std::to_string(image) + ", " : std::string()) +
                          std::string(to_string(prec)) + ", " + std::string(to_string(opt)) +
                          (ckpt ? ", checkpointing" : "") + (zero > 0 ? ", ZeRO-" + std::to_string(zero) : "");
  finish(p, q, vision::kImageNetTrainImages, catalog ? "ImageNet-1k" : "ImageNet-1k's size", recipe.epochs, how);
  p.settings["workload"] = "image-training";
  p.settings["precision"] = to_string(prec);
  p.settings["optimizer"] = to_string(opt);
  p.settings["checkpointing"] = ckpt;
  p.settings["zero"] = zero;
  if (catalog) p.settings["image"] = image;
  check_step(q, p.workload);
  return p;
}

}  // namespace

bool is_graph_model(std::string_view name) {
  return !name.empty() && (vision::canonical_vision_name(name) || is_pipeline(name));
}

graph_plan graph_plan_of(const graph_recommend_query& q) {
  if (!q.model.empty() && !vision::canonical_vision_name(q.model) && is_pipeline(q.model)) {
    if (!q.graph_file.empty() || q.graph)
      fail(q.flag_prefix + "graph", "give either a model name or a graph, not both (got model '" + q.model + "')");
    return diffusion_plan(q);
  }
  return image_plan(q);
}

nlohmann::json graph_recommend_document(const graph_plan& plan, const std::vector<graph_recommendation>& rows,
                                        const recommend_options& o, std::size_t total_rows, bool spot) {
  nlohmann::json j = plan.settings;
  j["summary"] = plan.summary;
  j["deadline_seconds"] = in_seconds(o.deadline);
  j["budget"] = o.budget ? nlohmann::json(*o.budget) : nlohmann::json(nullptr);
  j["price_kind"] = spot ? "spot" : "on-demand";
  j["rank_by"] = to_string(o.rank);
  j["total_rows"] = total_rows;
  j["rows"] = graph_recommend_json(rows);
  return j;
}

}  // namespace gpuplan::io
