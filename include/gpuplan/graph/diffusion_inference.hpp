// graph/diffusion_inference.hpp — the memory and time of text-to-image inference with a
// Stable Diffusion pipeline (classifier-free guidance, `steps` denoising steps, VAE decode,
// safety checker) on one GPU: estimate_pipeline, each network run as a layer graph by
// vision::estimate_graph (graph/graph_estimate.hpp). docs/diffusion.md.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "gpuplan/detail/memory_allocator.hpp"
#include "gpuplan/detail/memory_precision.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/graph/analyze.hpp"
#include "gpuplan/graph/diffusion_config.hpp"
#include "gpuplan/graph/diffusion_graphs.hpp"
#include "gpuplan/graph/graph_estimate.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan::diffusion {

using layers::graph;

struct inference_options {
  std::int64_t batch = 1;       // images per prompt batch (num_images_per_prompt x prompts)
  std::int64_t steps = 50;      // num_inference_steps (diffusers' default)
  std::int64_t resolution = 0;  // image side in pixels; 0: the pipeline's default
  precision prec = precision::fp16_mixed;  // torch_dtype: fp16 (fp16_mixed's 2-byte weights), bf16 (bf16_pure), fp32
  bool guidance = true;         // classifier-free guidance (guidance_scale > 1): the UNet runs on 2 x batch
};

struct component_estimate {
  std::string name;
  std::int64_t params = 0;
  Bytes weights = bytes(0);      // resident while the pipeline runs
  Bytes working_set = bytes(0);  // live activations of one call (layers.hpp peak_live_elements x batch)
  std::int64_t batch = 0;        // samples per call
  double calls = 0;              // calls per pipeline run
  Seconds per_call = seconds(0);
  double forward_macs_per_sample = 0;
};

struct pipeline_estimate {
  std::string model;
  std::int64_t batch = 0, steps = 0, resolution = 0, latent = 0;
  std::vector<component_estimate> components;
  Seconds unet_step = seconds(0);   // one denoising step (the UNet on 2 x batch under guidance)
  Seconds text_encode = seconds(0), vae_decode = seconds(0), safety_check = seconds(0);
  Seconds total = seconds(0);       // one pipeline call: text + steps x unet_step + decode (+ safety check)
  double images_per_s = 0;
  Bytes weights = bytes(0);         // every component resident (diffusers .to("cuda"), no offload)
  Bytes peak_allocated = bytes(0);  // torch.cuda.max_memory_allocated: weights + the largest phase's working set
  Bytes reserved = bytes(0);        // torch.cuda.max_memory_reserved (detail/memory_allocator.hpp)
  Bytes device = bytes(0);          // nvidia-smi: reserved + the CUDA context
  std::string peak_phase;           // "text encoding", "denoising", "vae decode" or "safety check"
  [[nodiscard]] bool fits(const gpu_spec& g) const { return device <= g.usable_memory; }
};

namespace detail {
// The image side of a text-to-image call (0: the pipeline's), a multiple of the VAE's factor
// times the UNet's down-sampling; the batch, the steps, the precision and the text encoders checked too.
inline std::int64_t checked_inference_resolution(const pipeline& p, const inference_options& o) {
  check_range("batch", o.batch, 1, 4096);
  check_range("steps", o.steps, 1, 10000);
  const std::int64_t res = o.resolution == 0 ? p.resolution : o.resolution;
  const std::int64_t f = vae_scale_factor(p.vae);
  const std::int64_t multiple = f * (std::int64_t{1} << (p.unet.block_out_channels.size() - 1));
  check_range("resolution", res, multiple, 16384);
  if (res % multiple != 0)
    fail("resolution", "must be a multiple of " + std::to_string(multiple) + " (the VAE's factor " + std::to_string(f) +
                           " x the UNet's down-sampling) (got " + std::to_string(res) + ")");
  if (o.prec != precision::fp16_mixed && o.prec != precision::bf16_pure && o.prec != precision::fp32)
    fail("precision", "must be fp16, bf16 or fp32 for a diffusion pipeline (got " + std::string(to_string(o.prec)) + ")");
  if (p.text_encoders.empty()) fail("text_encoders", "a pipeline needs at least one text encoder (got 0)");
  return res;
}

// One component's calls: vision::estimate_graph without training, its per-call time at least
// the eager floor plus `loop_ops`, host calls around each call (the denoising loop's); appended
// to r.components.
inline component_estimate run_component(pipeline_estimate& r, const graph& g, std::int64_t batch, precision prec, double calls,
                                        const std::string& name, const gpu_spec& gpu, const efficiency_params& eff,
                                        double loop_ops) {
  const auto e = vision::estimate_graph(g, batch, prec, optimizer::sgd, gpu, false, eff);
  const auto gc = layers::analyze(g);
  const Seconds per_call = std::max(e.step, e.launch + seconds(loop_ops * eff.launch_seconds));
  component_estimate c{name, e.params, e.weights, e.activations, batch, calls, per_call, gc.matmul_flops / 2};
  r.components.push_back(c);
  return c;
}
}  // namespace detail

// StableDiffusionPipeline / StableDiffusionXLPipeline.__call__ (diffusers pipelines/
// stable_diffusion*/): encode the prompt (and, under guidance, the negative prompt: a second
// pass unless force_zeros_for_empty_prompt), `steps` UNet calls on torch.cat([latents] * 2),
// one VAE decode of the batch at full resolution (in fp32 when vae.force_upcast and the
// weights are fp16: pipeline_stable_diffusion_xl.py upcast_vae), then the safety checker.
// Each call is vision::estimate_graph(..., train = false): GEMM-shaped layers at the GPU's
// ceiling and shape factor, attention at the FlashAttention fraction (SDPA), memory-bound
// layers by bytes, and at least kernels x launch_seconds of host time per call (eager PyTorch).
inline pipeline_estimate estimate_pipeline(const pipeline& p, const gpu_spec& gpu, const inference_options& o,
                                           const efficiency_params& eff = {}) {
  const std::int64_t res = detail::checked_inference_resolution(p, o);
  const std::int64_t f = vae_scale_factor(p.vae);
  const std::int64_t lat = res / f, B = o.batch, ctx = p.text_encoders.front().max_position_embeddings;
  const double act = gpuplan::detail::mem::bytes_of(o.prec).act;
  const bool upcast_vae = p.vae.force_upcast && o.prec == precision::fp16_mixed;
  pipeline_estimate r;
  r.model = p.name;
  r.batch = B;
  r.steps = o.steps;
  r.resolution = res;
  r.latent = lat;
  // Each component appended to r.components (detail::run_component).
  auto run = [&](const graph& g, std::int64_t batch, precision prec, double calls, const std::string& name,
                 double loop_ops = 0) { return detail::run_component(r, g, batch, prec, calls, name, gpu, eff, loop_ops); };
  const double text_calls = o.guidance && !p.force_zeros_for_empty_prompt ? 2 : 1;
  Bytes text_ws = bytes(0);
  std::int64_t ctx_dim = 0;
  for (const auto& t : p.text_encoders) {
    const auto c = run(clip_text_graph(t), B, o.prec, text_calls, t.name);
    r.text_encode += c.per_call * text_calls;
    text_ws = std::max(text_ws, c.working_set);
    ctx_dim += t.hidden_size;
  }
  if (ctx_dim != p.unet.cross_attention_dim)
    detail::fail("unet.cross_attention_dim", "must equal the text encoders' hidden sizes together, " + std::to_string(ctx_dim) +
                                                 " (got " + std::to_string(p.unet.cross_attention_dim) + ")");
  const std::int64_t unet_batch = o.guidance ? 2 * B : B;
  const double loop_ops = static_cast<double>(detail::kSchedulerStepOps + (o.guidance ? detail::kGuidanceOps : 0));
  const auto unet = run(unet_graph(p.unet, lat, lat, ctx), unet_batch, o.prec, static_cast<double>(o.steps), "unet", loop_ops);
  r.unet_step = unet.per_call;
  // The VAE: all of it is resident; only the decoder runs (txt2img).
  const graph dec = vae_decoder_graph(p.vae, lat, lat);
  const auto vae = run(dec, B, upcast_vae ? precision::fp32 : o.prec, 1, "vae");
  r.vae_decode = vae.per_call;
  auto& vc = r.components.back();
  vc.params += layers::analyze(vae_encoder_graph(p.vae, res, res)).params;
  vc.weights = bytes(static_cast<double>(vc.params) * act);
  Bytes checker_ws = bytes(0);
  if (p.safety_checker) {
    const auto sc = run(safety_checker_graph(), B, o.prec, 1, "safety_checker");
    auto& c = r.components.back();
    c.params += kSafetyCheckerConceptParams;
    c.weights = bytes(static_cast<double>(c.params) * act);
    r.safety_check = sc.per_call;
    checker_ws = sc.working_set;
  }
  for (const auto& c : r.components) r.weights += c.weights;
  // Tensors that outlive a phase: the prompt embeddings (2B x ctx x width) through the
  // denoising loop, the latents (B x 4 x lat², fp32 in the scheduler's arithmetic is
  // ignored), the decoded images (B x 3 x res²) into the safety checker.
  const double prompt = static_cast<double>(unet_batch * ctx * ctx_dim) * act;
  const double latents = static_cast<double>(B * p.unet.in_channels * lat * lat) * act;
  const double images = static_cast<double>(B * p.vae.out_channels * res * res) * act;
  struct phase { const char* name; double bytes; };
  // upcast_vae: the VAE's weights are fp32 (4 B, +2 B per parameter) while it decodes.
  const double vae_upcast = upcast_vae ? static_cast<double>(vae.params + layers::analyze(vae_encoder_graph(p.vae, res, res)).params) * 2 : 0;
  const phase phases[] = {{"text encoding", in_bytes(text_ws)},
                          {"denoising", prompt + 2 * latents + in_bytes(unet.working_set)},
                          {"vae decode", latents + vae_upcast + in_bytes(vae.working_set)},
                          {"safety check", images + in_bytes(checker_ws)}};
  double peak = -1;
  for (const auto& ph : phases)
    if (ph.bytes > peak) { peak = ph.bytes; r.peak_phase = ph.name; }
  r.peak_allocated = r.weights + bytes(peak);
  const auto peaks = gpuplan::detail::mem::allocator_and_context(in_bytes(r.peak_allocated), 0, 1);
  r.reserved = bytes(peaks.reserved);
  r.device = bytes(peaks.device);
  r.total = r.text_encode + r.unet_step * static_cast<double>(o.steps) + r.vae_decode + r.safety_check;
  r.images_per_s = static_cast<double>(B) / in_seconds(r.total);
  return r;
}

// How published runs compare: measured / estimated time over the validation rows
// (docs/accuracy.md, "Diffusion pipelines": 11 rows from three sources, ten denoising steps and
// one pipeline call; no constant fitted to them), P10, P50 and P90 by linear interpolation.
// Every row ran slower than its estimate, by 1.0x on a fast host up to 2.2x (A100 and T4 at
// batch 4 and 1); test_validation.cpp recomputes these from the rows and fails when they are stale.
inline constexpr std::array<double, 3> kStepMeasuredOverEstimate{1.148, 1.520, 2.140};
inline std::array<Seconds, 3> step_as_measured(const pipeline_estimate& e) {
  return {e.unet_step * kStepMeasuredOverEstimate[0], e.unet_step * kStepMeasuredOverEstimate[1],
          e.unet_step * kStepMeasuredOverEstimate[2]};
}

}  // namespace gpuplan::diffusion
