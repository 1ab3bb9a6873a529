// graph_plan.cpp — io/graph_plan.hpp: the run `gpuplan recommend` plans for an image
// classifier or a diffusion fine-tune, from the model's published recipe and the typed query
// (graph/query.hpp; validated, its names already parsed by io/graph_query.hpp).
#include "gpuplan/io/graph_plan.hpp"

#include <cmath>

#include "gpuplan/diffusion.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/io/amount.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/vision_report.hpp"
#include "gpuplan/plan_names.hpp"
#include "gpuplan/vision.hpp"

namespace gpuplan::io {

namespace {

using gpuplan::detail::fail;
using gpuplan::detail::graph_field;

// Runs the workload's step once so that the estimator's own checks (precision, optimizer,
// resolution, rank, residual blocks) fail before any GPU is tried, naming the caller's field.
void check_step(const graph_query& q, const graph_workload& w) {
  try {
    (void)w.step(io::find_gpu("a100-80gb"), 1, 1);
  } catch (const config_error& e) {
    const std::string path = e.path(), what = e.what();
    const std::string reason = what.size() > path.size() + 2 ? what.substr(path.size() + 2) : what;
    throw config_error(graph_field(q, path), reason, e.kind());
  }
}

// Samples, the summary's words for them, and the settings shared by both kinds of model.
void finish(graph_plan& p, const graph_query& q, double default_images, const std::string& images_source,
            double default_epochs, const std::string& what) {
  const std::string& fp = q.flag_prefix;
  const double images = q.images.value_or(default_images);
  const double epochs = q.epochs.value_or(default_epochs);
  p.workload.samples = images * epochs;
  if (!(p.workload.samples >= 1 && p.workload.samples <= 1e15))
    fail(fp + "epochs", "images x epochs must be in [1, 1e15] (got " + gpuplan::detail::num(images) + " x " +
                            gpuplan::detail::num(epochs) + ")");
  if (q.global_batch) p.workload.global_batch = *q.global_batch;
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

graph_plan diffusion_plan(const graph_query& q) {
  const auto p = diffusion::pipeline_by_name(q.model);
  diffusion::finetune_options o;
  const bool lora = q.meth == method::lora;
  o.method = lora ? diffusion::finetune_method::lora : diffusion::finetune_method::full;
  const auto recipe = diffusion::finetune_recipe_of(o.method);
  o.opt = q.opt.value_or(optimizer::adamw);
  o.resolution = q.resolution.value_or(0);
  if (q.lora_rank) o.lora_rank = *q.lora_rank;
  o.gradient_checkpointing = q.checkpointing.value_or(recipe.gradient_checkpointing);
  o.ema = q.ema.value_or(recipe.ema);
  graph_plan g;
  g.workload = diffusion_finetuning(p, o);
  g.workload.global_batch = recipe.global_batch;
  g.workload.recipe = recipe.source;
  const std::int64_t res = o.resolution == 0 ? p.resolution : o.resolution;
  const std::string how = std::string(lora ? "LoRA rank " + std::to_string(o.lora_rank) : "full UNet") + ", " +
                          std::to_string(res) + "x" + std::to_string(res) + ", fp16 mixed precision, " +
                          std::string(to_string(o.opt)) + (o.gradient_checkpointing ? ", gradient checkpointing" : "") +
                          (o.ema ? ", EMA" : "");
  const double images = recipe.steps * static_cast<double>(recipe.global_batch);
  finish(g, q, images, "the recipe's " + format_count(static_cast<std::int64_t>(recipe.steps)) + " steps × " +
                           std::to_string(recipe.global_batch), 1, how);
  g.settings["workload"] = "diffusion-fine-tune";
  g.settings["method"] = to_string(lora ? method::lora : method::full);
  g.settings["resolution"] = res;
  g.settings["optimizer"] = to_string(o.opt);
  g.settings["gradient_checkpointing"] = o.gradient_checkpointing;
  g.settings["ema"] = o.ema;
  if (lora) g.settings["lora_rank"] = o.lora_rank;
  check_step(q, g.workload);
  return g;
}

graph_plan image_plan(const graph_query& q) {
  vision_query vq;
  vq.model = q.model;
  vq.graph_file = q.graph_file;
  vq.graph = q.graph;
  vq.image = q.image;
  vq.flag_prefix = q.flag_prefix;
  const layers::graph g = vision_graph_of(vq);
  const bool catalog = !q.model.empty();
  // A graph named like a catalog model (Graph.from_catalog) trains with that model's recipe.
  const vision::training_recipe recipe = vision::training_recipe_of(catalog ? q.model : g.name);
  const precision prec = q.prec.value_or(precision::fp16_mixed);
  const optimizer opt = q.opt.value_or(recipe.opt);
  graph_plan p;
  const bool ckpt = q.checkpointing.value_or(false);
  const int zero = q.zero.value_or(0);
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

graph_plan graph_plan_of(const graph_query& q) {
  validate(q);
  return q.task == graph_task::diffusion_finetune ? diffusion_plan(q) : image_plan(q);
}

graph_plan graph_plan_of(const graph_recommend_query& q) { return graph_plan_of(parse_graph_query(q)); }

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
