// graph/query.hpp — the graph world's scenario: what `gpuplan recommend` and gp.recommend plan
// for an image classifier trained from scratch or a diffusion pipeline's UNet fine-tuned, typed
// (names and amounts parsed once at the edge: io/graph_query.hpp parse_graph_query), and
// validate(), the rules it satisfies before its run is built (io/graph_plan.hpp graph_plan_of):
// the LLM world's scenario.hpp → validate.hpp → run.hpp in the graph world's shape.
// docs/planner.md "Image and diffusion models".
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gpuplan/error.hpp"
#include "gpuplan/graph/layer.hpp"
#include "gpuplan/names.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/validate.hpp"

namespace gpuplan {

// What a graph query plans: a classifier trained from scratch (a vision catalog model or a
// layer graph) or a diffusion pipeline's UNet fine-tuned (a diffusion catalog name).
enum class graph_task : std::uint8_t { image_training, diffusion_finetune };

struct graph_query {
  graph_task task = graph_task::image_training;
  std::string model;                   // a vision catalog name or a diffusion pipeline name, or
  std::string graph_file;              // a layer graph file (io/graph_json.hpp), or
  std::optional<layers::graph> graph;  // a graph (Python's gp.trace / gp.Graph)
  std::optional<double> images;        // samples in the dataset (default ImageNet-1k; diffusion: the recipe's)
  std::optional<double> epochs;        // passes over `images` (default the recipe's; diffusion 1)
  std::optional<std::int64_t> image;         // classifiers: the image side (default the weights' crop)
  std::optional<std::int64_t> resolution;    // diffusion: the training resolution (default the pipeline's)
  std::optional<std::int64_t> global_batch;  // samples per optimizer step (default the recipe's)
  std::optional<std::int64_t> batch;         // micro-batch per GPU (default: the largest that fits)
  std::optional<std::int64_t> lora_rank;     // diffusion LoRA (default 4)
  std::optional<method> meth;                // full (classifiers); full or lora (diffusion); default full
  std::optional<precision> prec;             // default fp16-mixed, the only one diffusion fine-tuning models
  std::optional<optimizer> opt;              // default the recipe's (diffusion: adamw)
  std::optional<bool> checkpointing, ema;    // diffusion: default the recipe's; ema for full fine-tuning only
  std::optional<int> zero;                   // classifiers: ZeRO stage over the GPUs (default 0, DDP)
  std::string flag_prefix;  // how errors name fields: "--" in the CLI, "recommend." in Python
};

namespace detail {
// A field as the caller spells it: the CLI's flags with '-' ("--global-batch"), Python's
// keywords with '_' ("recommend.global_batch").
inline std::string graph_field(const graph_query& q, std::string name) {
  if (q.flag_prefix == "--") std::replace(name.begin(), name.end(), '_', '-');
  return q.flag_prefix + name;
}

inline void not_for(bool given, const std::string& field, const std::string& what) {
  if (given) fail(field, "does not apply to " + what);
}

// The errors of a method or precision the task does not model, the same whether the value
// came as text (parse_graph_query) or typed (validate): `got` is the value as given.
[[noreturn]] inline void bad_graph_method(const graph_query& q, std::string_view got) {
  if (q.task == graph_task::diffusion_finetune)
    fail(q.flag_prefix + "method", "must be full or lora for a diffusion pipeline (got " + std::string(got) + ")",
         error_kind::unknown_name);
  fail(q.flag_prefix + "method", "image models are planned with full training only (got " + std::string(got) + ")");
}
[[noreturn]] inline void bad_diffusion_precision(const graph_query& q, std::string_view got) {
  fail(q.flag_prefix + "precision", "diffusion fine-tuning is modelled with fp16 mixed precision only (got " +
                                        std::string(got) + ")");
}

// Diffusion fine-tuning: a pipeline, not a graph; no image side or ZeRO stage; full or LoRA
// in fp16 mixed precision; a LoRA rank for LoRA and EMA for full fine-tuning only.
inline void validate_diffusion(const graph_query& q) {
  const std::string& fp = q.flag_prefix;
  if (!q.graph_file.empty() || q.graph)
    fail(fp + "graph", "give either a model name or a graph, not both (got model '" + q.model + "')");
  const std::string what = "diffusion models";
  not_for(q.image.has_value(), fp + "image", what + " (use " + fp + "resolution)");
  not_for(q.zero.has_value(), fp + "zero", what + " (diffusers' scripts train under DDP)");
  if (q.meth && *q.meth != method::full && *q.meth != method::lora) bad_graph_method(q, to_string(*q.meth));
  if (q.prec && *q.prec != precision::fp16_mixed) bad_diffusion_precision(q, to_string(*q.prec));
  const bool lora = q.meth == method::lora;
  if (q.lora_rank) not_for(!lora, graph_field(q, "lora_rank"), "full fine-tuning");
  if (q.ema.value_or(false) && lora) fail(fp + "ema", "applies to full fine-tuning only (got method lora)");
}

// Image training: no resolution, LoRA rank or EMA; full training; ZeRO stage 0 to 3.
inline void validate_image(const graph_query& q) {
  const std::string& fp = q.flag_prefix;
  const std::string what = "image models";
  not_for(q.resolution.has_value(), fp + "resolution", what + " (use " + fp + "image)");
  not_for(q.lora_rank.has_value(), graph_field(q, "lora_rank"), what);
  not_for(q.ema.has_value(), fp + "ema", what);
  if (q.meth && *q.meth != method::full) bad_graph_method(q, to_string(*q.meth));
  if (q.zero && (*q.zero < 0 || *q.zero > 3)) fail(fp + "zero", "must be 0, 1, 2 or 3 (got " + std::to_string(*q.zero) + ")");
}
}  // namespace detail

// Every rule a graph query satisfies before its run is built, one config_error naming the
// field (as flag_prefix spells it) and the value: the settings that apply to the task, and the
// amounts given in range. What depends on the model (the micro-batch against the largest one
// the graph takes, images x epochs of the recipe's defaults, the estimator's own checks) is
// checked as the run is built.
inline void validate(const graph_query& q) {
  using detail::fail;
  const std::string& fp = q.flag_prefix;
  if (q.task == graph_task::diffusion_finetune) detail::validate_diffusion(q);
  else detail::validate_image(q);
  if (q.images && !(*q.images >= 1 && *q.images <= 1e12))
    fail(fp + "images", "must be in [1, 1e12] (got " + detail::num(*q.images) + ")");
  if (q.epochs && !(*q.epochs > 0 && *q.epochs <= 1e6)) fail(fp + "epochs", "must be in (0, 1e6] (got " + detail::num(*q.epochs) + ")");
  if (q.global_batch && (*q.global_batch < 1 || *q.global_batch > kMaxBatch))
    fail(detail::graph_field(q, "global_batch"),
         "must be between 1 and " + std::to_string(kMaxBatch) + " (got " + std::to_string(*q.global_batch) + ")");
}

}  // namespace gpuplan
