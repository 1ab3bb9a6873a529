// graph_query.cpp — io/graph_query.hpp: the one parse of what the user typed about an image
// or diffusion model into the typed graph query (graph/query.hpp).
#include "gpuplan/io/graph_query.hpp"

#include "gpuplan/diffusion.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/io/amount.hpp"
#include "gpuplan/vision.hpp"

namespace gpuplan::io {

namespace {

using gpuplan::detail::fail;

// A name diffusion::pipeline_by_name knows (sd-1.5, sdxl, a Hub id such as stabilityai/stable-diffusion-2-1).
bool is_pipeline(std::string_view n) {
  try {
    (void)diffusion::pipeline_by_name(n);
    return true;
  } catch (const config_error&) {
    return false;
  }
}

template <class E>
std::optional<E> enum_field(const std::optional<std::string>& v, const std::string& field) {
  if (!v) return std::nullopt;
  const auto e = from_string<E>(*v);
  if (!e) fail(field, "must be one of " + name_list<E>() + " (got " + *v + ")", error_kind::unknown_name);
  return e;
}

// full (classifiers); full or lora (diffusion).
std::optional<method> method_of(const graph_query& q, const std::optional<std::string>& v) {
  if (!v) return std::nullopt;
  if (*v == "full") return method::full;
  if (*v == "lora" && q.task == graph_task::diffusion_finetune) return method::lora;
  gpuplan::detail::bad_graph_method(q, *v);
}

// Diffusion fine-tuning is modelled in fp16 mixed precision ("fp16-mixed", also spelled "fp16").
std::optional<precision> precision_of(const graph_query& q, const std::optional<std::string>& v) {
  if (q.task == graph_task::image_training || !v) return enum_field<precision>(v, q.flag_prefix + "precision");
  if (*v == "fp16-mixed" || *v == "fp16") return precision::fp16_mixed;
  gpuplan::detail::bad_diffusion_precision(q, *v);
}

}  // namespace

bool is_graph_model(std::string_view name) {
  return !name.empty() && (vision::canonical_vision_name(name) || is_pipeline(name));
}

graph_query parse_graph_query(const graph_recommend_query& r) {
  graph_query q;
  q.flag_prefix = r.flag_prefix;
  q.task = !r.model.empty() && !vision::canonical_vision_name(r.model) && is_pipeline(r.model) ? graph_task::diffusion_finetune
                                                                                               : graph_task::image_training;
  q.model = r.model;
  q.graph_file = r.graph_file;
  q.graph = r.graph;
  if (r.images) q.images = parse_amount(*r.images, r.flag_prefix + "images");
  q.epochs = r.epochs;
  q.image = r.image;
  q.resolution = r.resolution;
  q.global_batch = r.global_batch;
  q.batch = r.batch;
  q.lora_rank = r.lora_rank;
  q.meth = method_of(q, r.method);
  q.prec = precision_of(q, r.precision);
  q.opt = enum_field<optimizer>(r.optimizer, r.flag_prefix + "optimizer");
  q.checkpointing = r.checkpointing;
  q.ema = r.ema;
  q.zero = r.zero;
  return q;
}

}  // namespace gpuplan::io
