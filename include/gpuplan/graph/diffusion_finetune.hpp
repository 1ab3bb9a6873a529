// graph/diffusion_finetune.hpp — the memory and time of one step of fine-tuning a Stable
// Diffusion UNet on one GPU (diffusers' examples: full or LoRA, gradient checkpointing, EMA,
// DreamBooth's prior preservation and text-encoder training): estimate_finetune, and the
// published recipe `gpuplan recommend` plans with. docs/diffusion.md.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gpuplan/detail/memory_allocator.hpp"
#include "gpuplan/detail/memory_precision.hpp"
#include "gpuplan/detail/timing_model.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/graph/analyze.hpp"
#include "gpuplan/graph/checkpoint.hpp"
#include "gpuplan/graph/diffusion_config.hpp"
#include "gpuplan/graph/diffusion_graphs.hpp"
#include "gpuplan/graph/graph_estimate.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan::diffusion {

using layers::graph;

// Bytes saved for backward per sample, checkpointed or not: vision::saved_bytes_of.
using vision::saved_bytes_of;

inline double checkpointed_saved_bytes(const graph& g, const layers::graph_cost& gc, double act) {
  return saved_bytes_of(g, gc, act, true);
}

// LoRA on every attention's projections: which layers save (saved_bytes_of). A layer's
// output needs a gradient when an input does or it holds adapters (the attentions); a layer
// whose inputs need none saves nothing, a frozen linear layer saves nothing, the rest as analyze().
inline std::vector<char> lora_saves(const graph& g) {
  const std::size_t n = g.layers.size();
  std::vector<char> grad(n, 0), saves(n, 0);
  auto needs = [&](int src) { return src >= 0 && grad[static_cast<std::size_t>(src)] != 0; };
  for (std::size_t i = 0; i < n; ++i) {
    const auto& l = g.layers[i];
    const int src = l.from == -1 ? static_cast<int>(i) - 1 : l.from;
    bool in = l.k != layers::kind::input && needs(src);
    if (l.k == layers::kind::add || l.k == layers::kind::mul || l.k == layers::kind::concat) in = in || needs(l.skip);
    const bool adapters = l.k == layers::kind::attention;
    grad[i] = in || adapters ? 1 : 0;
    saves[i] = adapters || (in && l.k != layers::kind::linear) ? 1 : 0;
  }
  return saves;
}

enum class finetune_method : std::uint8_t { full, lora };

struct finetune_options {
  finetune_method method = finetune_method::full;
  std::int64_t batch = 1;
  std::int64_t resolution = 0;   // 0: the pipeline's default
  std::int64_t lora_rank = 4;    // train_text_to_image_lora.py --rank default
  bool gradient_checkpointing = false;
  // --use_ema (train_text_to_image.py, full only): EMAModel's fp32 copy of the UNet, moved to
  // the GPU (ema_unet.to(accelerator.device)) and updated after every optimizer step.
  bool ema = false;
  optimizer opt = optimizer::adamw;
  // examples/dreambooth/train_dreambooth.py --with_prior_preservation: collate_fn concatenates
  // `batch` class images to the instance images, so the VAE encoder, the text encoder and the
  // UNet run on 2 x batch.
  bool prior_preservation = false;
  // --train_text_encoder (train_dreambooth.py, train_dreambooth_lora.py,
  // train_dreambooth_lora_sdxl.py): the text encoders train with the UNet — in full (fp32
  // weights, gradients and optimizer state) or, under lora, with adapters on their q/k/v/out
  // projections — and keep their activations for backward; gradient checkpointing covers them
  // too (text_encoder.gradient_checkpointing_enable()).
  bool train_text_encoder = false;
  // optimizer.zero_grad(set_to_none=...): true frees the gradients after each optimizer step
  // (PyTorch >= 2.0's default, the call train_text_to_image.py makes); false zeroes and keeps
  // them (train_dreambooth.py unless --set_grads_to_none), resident through the next forward.
  bool grads_set_to_none = true;
};

// The fine-tuning recipe of diffusers' examples/text_to_image/README.md, what `gpuplan
// recommend` plans with: train_text_to_image.py --train_batch_size=1
// --gradient_accumulation_steps=4 --gradient_checkpointing --use_ema --max_train_steps=15000
// (full); train_text_to_image_lora.py --train_batch_size=1 --gradient_accumulation_steps=4
// --max_train_steps=15000, rank 4, no checkpointing (LoRA).
struct finetune_recipe {
  std::int64_t global_batch = 4;  // images per optimizer step: 1 x 4 accumulation
  double steps = 15000;           // optimizer steps
  bool gradient_checkpointing = false;
  bool ema = false;
  const char* source = "";
};
inline finetune_recipe finetune_recipe_of(finetune_method m) {
  if (m == finetune_method::full)
    return {4, 15000, true, true, "diffusers examples/text_to_image README: batch 1 x 4 accumulation, 15,000 steps, "
                                  "gradient checkpointing, EMA"};
  return {4, 15000, false, false, "diffusers examples/text_to_image README (LoRA): batch 1 x 4 accumulation, 15,000 steps, rank 4"};
}

struct finetune_estimate {
  std::int64_t trainable_params = 0, frozen_params = 0;
  Bytes frozen_weights = bytes(0);     // fp16 (weight_dtype): the VAE, the text encoders, and the UNet under LoRA
  // fp32 trainable parameters (accelerate mixed_precision fp16 keeps them fp32) and, for fully
  // trained networks, the fp16 copies autocast makes of them for the forward (2 B each), which
  // live from the forward until backward has used them.
  Bytes trainable_weights = bytes(0);
  Bytes gradients = bytes(0), optimizer_state = bytes(0);
  Bytes activations = bytes(0);        // the UNet's (and a trained text encoder's) saved tensors
  Bytes transient = bytes(0);          // backward's largest layer input + output gradients
  Bytes ema = bytes(0);                // the EMA copy of the UNet (fp32), when options.ema
  Bytes peak_allocated = bytes(0), reserved = bytes(0), device = bytes(0);  // as pipeline_estimate's
  // unet: forward and backward; optimizer: its step and the EMA update, once per optimizer step.
  Seconds unet = seconds(0), encode = seconds(0), optimizer = seconds(0), step = seconds(0);
  double images_per_s = 0;
  [[nodiscard]] bool fits(const gpu_spec& g) const { return device <= g.usable_memory; }
};

// The LoRA parameters of diffusers' train_text_to_image_lora.py (peft LoraConfig on
// to_q, to_k, to_v, to_out.0 of every UNet Attention): rank x (in + out) per projection.
inline std::int64_t unet_lora_params(const graph& unet, std::int64_t rank) {
  const auto gc = layers::analyze(unet);
  std::int64_t p = 0;
  for (std::size_t i = 0; i < unet.layers.size(); ++i) {
    const auto& l = unet.layers[i];
    if (l.k != layers::kind::attention) continue;
    const std::int64_t C = gc.per_layer[i].in.c, Dk = l.kv_dim > 0 ? l.kv_dim : C;
    p += rank * ((C + C) + 2 * (Dk + C) + (C + C));
  }
  return p;
}

// accelerate's fp16 mixed precision trains fp32 parameters: their gradients are fp32.
inline constexpr double kFp32GradBytes = 4;

namespace detail {
// The image side of a fine-tuning step (0: the pipeline's), a multiple of the VAE's factor
// times the UNet's down-sampling; the batch, the method's options and the text encoders checked too.
inline std::int64_t checked_finetune_resolution(const pipeline& p, const finetune_options& o) {
  check_range("batch", o.batch, 1, 4096);
  if (o.train_text_encoder && p.text_encoders.empty())
    fail("train_text_encoder", "the pipeline has no text encoder to train (got " + p.name + ")");
  if (o.method == finetune_method::lora) check_range("lora_rank", o.lora_rank, 1, 4096);
  if (o.ema && o.method != finetune_method::full) fail("ema", "applies to full fine-tuning only (got method lora)");
  const std::int64_t res = o.resolution == 0 ? p.resolution : o.resolution;
  const std::int64_t f = vae_scale_factor(p.vae);
  const std::int64_t multiple = f * (std::int64_t{1} << (p.unet.block_out_channels.size() - 1));
  check_range("resolution", res, multiple, 16384);
  if (res % multiple != 0)
    fail("resolution", "must be a multiple of " + std::to_string(multiple) + " (got " + std::to_string(res) + ")");
  if (p.text_encoders.empty()) fail("text_encoders", "a pipeline needs at least one text encoder (got 0)");
  return res;
}

// What the text encoders add to a step. Frozen: the captions' forward (no grad) and its
// working set, their parameters counted in `frozen`. Trained (--train_text_encoder): their
// trainable parameters, weights, gradients, optimizer state, saved tensors (all samples) and
// forward + backward (and recompute), part of the UNet's step.
struct text_encoders_step {
  Seconds encode = seconds(0);
  Bytes working_set = bytes(0);
  double trainable = 0, saved = 0;
  Seconds train = seconds(0);
  Bytes weights = bytes(0), grads = bytes(0), opt = bytes(0);
};
inline text_encoders_step text_encoders_of(const pipeline& p, const gpu_spec& gpu, const finetune_options& o,
                                           const efficiency_params& eff, std::int64_t B, std::int64_t ctx, double& frozen) {
  const precision prec = precision::fp16_mixed;
  const double act = gpuplan::detail::mem::bytes_of(prec).act;
  const auto pb = gpuplan::detail::mem::bytes_of(prec);
  text_encoders_step s;
  for (std::size_t i = 0; i < p.text_encoders.size(); ++i) {
    const graph tg = clip_text_graph(p.text_encoders[i]);
    const auto te = vision::estimate_graph(tg, B, prec, optimizer::sgd, gpu, false, eff);
    if (!o.train_text_encoder) {
      frozen += static_cast<double>(te.params);
      s.encode += te.step;
      s.working_set = std::max(s.working_set, te.activations);
      continue;
    }
    if (o.method == finetune_method::full) {
      // Full: as the UNet, estimate_graph's training figures (fp32 weights + autocast copies,
      // fp32 gradients, the optimizer's state), checkpointed over its encoder layers.
      const auto tt = vision::estimate_graph(tg, B, prec, o.opt, gpu, true, eff, 1, o.gradient_checkpointing);
      s.trainable += static_cast<double>(tt.params);
      s.weights += tt.weights;  // fp32 + the autocast copies, 6 B per parameter
      s.grads += bytes(static_cast<double>(tt.params) * kFp32GradBytes);
      s.opt += tt.optimizer;
      s.saved += in_bytes(tt.activations);
      s.train += tt.step - tt.optimizer_step;
    } else {
      // LoRA (train_dreambooth_lora.py text_lora_config: q_proj, k_proj, v_proj, out_proj), fp32
      // adapters; what the frozen layers save to reach them (lora_saves) and each adapter's rank-r output.
      const auto tgc = layers::analyze(tg);
      graph ck = tg;  // checkpointed per encoder layer, as estimate_graph does without segments
      if (ck.segments.empty()) ck.segments = vision::residual_segments(tg);
      const double D = static_cast<double>(p.text_encoders[i].hidden_size);
      const double L = static_cast<double>(ctx);
      double attentions = 0;
      for (const auto& l : tg.layers) attentions += l.k == layers::kind::attention ? 1 : 0;
      const double adapters = attentions * 4 * static_cast<double>(o.lora_rank) * 2 * D;
      s.trainable += adapters;
      frozen += static_cast<double>(te.params);
      s.weights += bytes(adapters * 4);
      s.grads += bytes(adapters * kFp32GradBytes);
      s.opt += bytes(adapters * gpuplan::detail::mem::optimizer_bytes_per_param(o.opt, pb.state));
      s.saved += static_cast<double>(B) * (saved_bytes_of(ck, tgc, act, o.gradient_checkpointing, lora_saves(tg)) +
                                           attentions * act * static_cast<double>(o.lora_rank) * 4 * L);
      s.train += te.step * (o.gradient_checkpointing ? 3.0 : 2.0);
    }
  }
  return s;
}

// The whole UNet trained (train_text_to_image.py): estimate_graph's training figures, and
// with --use_ema the fp32 shadow copy and its update after every optimizer step.
inline void train_full_unet(finetune_estimate& r, const graph& unet, const layers::graph_cost& gc, const gpu_spec& gpu,
                            const finetune_options& o, const efficiency_params& eff, std::int64_t B) {
  const precision prec = precision::fp16_mixed;
  const auto tr = vision::estimate_graph(unet, B, prec, o.opt, gpu, true, eff);
  r.trainable_params = gc.params;
  r.trainable_weights = tr.weights;  // AMP: 2 B + 4 B master = fp32 weights + the autocast copies
  r.gradients = bytes(static_cast<double>(gc.params) * kFp32GradBytes);  // on the fp32 parameters
  r.optimizer_state = tr.optimizer;
  r.transient = tr.transient;
  r.unet = tr.step - tr.optimizer_step;
  r.optimizer = tr.optimizer_step;
  if (o.ema) {
    // EMAModel.step: shadow = shadow - (1 - decay) x (shadow - param), fp32: read both, write the shadow.
    warning_set w{};
    r.ema = bytes(static_cast<double>(gc.params) * 4);
    r.optimizer += seconds(static_cast<double>(gc.params) * 12 / gpuplan::detail::device_rates_of(gpu, prec, eff, w).bwe);
  }
}

// LoRA on the frozen fp16 UNet (train_text_to_image_lora.py): fp32 adapters, their gradients
// and optimizer state; the adapters' rank-r outputs join the saved bytes per sample (`saved`),
// the UNet's parameters the frozen ones; backward computes input gradients only.
inline void train_lora_unet(finetune_estimate& r, const graph& unet, const layers::graph_cost& gc, const finetune_options& o,
                            std::int64_t B, const vision::graph_estimate& fwd, double& frozen, double& saved) {
  const precision prec = precision::fp16_mixed;
  const double act = gpuplan::detail::mem::bytes_of(prec).act;
  const auto pb = gpuplan::detail::mem::bytes_of(prec);
  const double Bd = static_cast<double>(B);
  const auto lora = static_cast<double>(unet_lora_params(unet, o.lora_rank));
  r.trainable_params = static_cast<std::int64_t>(lora);
  frozen += static_cast<double>(gc.params);
  // cast_training_params(..., dtype=torch.float32): the adapters train in fp32.
  r.trainable_weights = bytes(lora * 4);
  r.gradients = bytes(lora * 4);
  r.optimizer_state = bytes(lora * gpuplan::detail::mem::optimizer_bytes_per_param(o.opt, pb.state));
  // Each adapter saves lora_A's rank-r output for lora_B's gradient (its input is the base
  // layer's, already counted): r x (L for to_q and to_out, Lk for to_k and to_v) per attention.
  for (std::size_t i = 0; i < unet.layers.size(); ++i)
    if (unet.layers[i].k == layers::kind::attention) {
      const double L = static_cast<double>(gc.per_layer[i].in.positions());
      const double Lk = unet.layers[i].kv_len > 0 ? static_cast<double>(unet.layers[i].kv_len) : L;
      saved += act * static_cast<double>(o.lora_rank) * (2 * L + 2 * Lk);
    }
  double largest_io = 0;
  for (const auto& c : gc.per_layer) largest_io = std::max(largest_io, static_cast<double>(c.in.elements() + c.out.elements()));
  r.transient = bytes(Bd * largest_io * act);
  r.unet = fwd.step * 2.0;  // forward + input-gradient backward; the adapters' optimizer step (a few MB) is left out
}

// The peak of a step over its phases, then the allocator's pool and the CUDA context.
inline void finetune_peak(finetune_estimate& r, const pipeline& p, const finetune_options& o, std::int64_t B, std::int64_t lat,
                          std::int64_t res, std::int64_t ctx, Bytes encoder_ws, Bytes text_ws, double full_casts) {
  const precision prec = precision::fp16_mixed;
  const double act = gpuplan::detail::mem::bytes_of(prec).act;
  const double Bd = static_cast<double>(B);
  // Phases: encoding (the VAE encoder's and text encoders' working sets, no grad) and the UNet step.
  const double latents = Bd * static_cast<double>(p.unet.in_channels * lat * lat) * act;
  double ctx_dim = 0;
  for (const auto& t : p.text_encoders) ctx_dim += static_cast<double>(t.hidden_size);
  const double embeds = Bd * static_cast<double>(ctx) * ctx_dim * act;
  const double images = Bd * static_cast<double>(p.vae.in_channels * res * res) * act;
  const double encode_phase = images + std::max(in_bytes(encoder_ws), in_bytes(text_ws));
  const double unet_phase = latents * 3 + embeds + in_bytes(r.activations + r.transient);  // noisy latents, noise, target
  // Gradients kept between steps are resident in every phase. Freed ones (set_to_none) exist
  // only in backward, which releases the saved activations as it produces them: the step
  // holds the larger of the two, not their sum (the first gradients and the last activations
  // overlap; an approximation that is exact when either side dominates).
  // The autocast copies of fully trained networks exist from their forward until backward has
  // used them (released before the gradients are complete).
  const double grads = in_bytes(r.gradients), casts = full_casts;
  const double train_phase = casts + unet_phase;
  const double phases = o.grads_set_to_none ? std::max({encode_phase, train_phase, grads + latents * 3 + embeds})
                                            : grads + std::max(encode_phase, train_phase);
  r.peak_allocated = r.frozen_weights + r.trainable_weights - bytes(casts) + r.optimizer_state + r.ema + bytes(phases);
  const auto peaks = gpuplan::detail::mem::allocator_and_context(in_bytes(r.peak_allocated), 0, 1);
  r.reserved = bytes(peaks.reserved);
  r.device = bytes(peaks.device);
}
}  // namespace detail

// One training step of diffusers' examples/text_to_image (train_text_to_image.py: the whole
// UNet trained; train_text_to_image_lora.py: LoRA adapters on the attention projections,
// the UNet frozen in fp16) with accelerate's mixed_precision="fp16": encode the images with
// the frozen VAE encoder and the captions with the frozen text encoder(s) (no grad), then the
// UNet's forward and backward on the noisy latents (no guidance in training) and the optimizer.
// Full: estimate_graph(train) of the UNet (fp32 weights and gradients, AdamW: 16 B per
// parameter). LoRA: the frozen convolutions, norms and activations still save what they
// need to carry the gradient back to earlier adapters; frozen linear layers and the layers
// before the first adapter save nothing (lora_saves); backward computes input
// gradients only, one forward's work (Kaplan et al. 2020: backward = 2 x forward, half of it
// the weight gradients). Gradient checkpointing (unet.enable_gradient_checkpointing(): each
// ResnetBlock2D and BasicTransformerBlock) keeps segment inputs and recomputes one forward.
inline finetune_estimate estimate_finetune(const pipeline& p, const gpu_spec& gpu, const finetune_options& o,
                                           const efficiency_params& eff = {}) {
  const std::int64_t res = detail::checked_finetune_resolution(p, o);
  const std::int64_t f = vae_scale_factor(p.vae);
  // Prior preservation: the class images join each batch (train_dreambooth.py collate_fn).
  const std::int64_t lat = res / f, B = o.batch * (o.prior_preservation ? 2 : 1),
                     ctx = p.text_encoders.front().max_position_embeddings;
  const precision prec = precision::fp16_mixed;
  const double act = gpuplan::detail::mem::bytes_of(prec).act;
  const double Bd = static_cast<double>(B);
  const graph unet = unet_graph(p.unet, lat, lat, ctx);
  const auto gc = layers::analyze(unet);
  finetune_estimate r;
  // Frozen components in fp16: the whole VAE and every text encoder.
  const graph enc = vae_encoder_graph(p.vae, res, res);
  const auto enc_e = vision::estimate_graph(enc, B, prec, optimizer::sgd, gpu, false, eff);
  double frozen = static_cast<double>(enc_e.params + layers::analyze(vae_decoder_graph(p.vae, lat, lat)).params);
  const detail::text_encoders_step text = detail::text_encoders_of(p, gpu, o, eff, B, ctx, frozen);
  r.encode = enc_e.step + text.encode;
  const auto fwd = vision::estimate_graph(unet, B, prec, o.opt, gpu, false, eff);
  double saved = saved_bytes_of(unet, gc, act, o.gradient_checkpointing,
                                o.method == finetune_method::lora ? lora_saves(unet) : std::vector<char>{});
  if (o.method == finetune_method::full) detail::train_full_unet(r, unet, gc, gpu, o, eff, B);
  else detail::train_lora_unet(r, unet, gc, o, B, fwd, frozen, saved);
  if (o.gradient_checkpointing) r.unet += fwd.step;  // the segments' forward again during backward
  r.unet += text.train;
  // fp16 autocast copies of the fully trained networks' fp32 parameters (2 B each).
  const double full_casts = o.method == finetune_method::full
                                ? (static_cast<double>(gc.params) + text.trainable) * gpuplan::detail::mem::bytes_of(prec).weight
                                : 0;
  r.trainable_params += static_cast<std::int64_t>(text.trainable);
  r.trainable_weights += text.weights;
  r.gradients += text.grads;
  r.optimizer_state += text.opt;
  r.frozen_params = static_cast<std::int64_t>(frozen);
  r.frozen_weights = bytes(frozen * act);
  r.activations = bytes(Bd * saved + text.saved);
  detail::finetune_peak(r, p, o, B, lat, res, ctx, enc_e.activations, text.working_set, full_casts);
  r.step = r.encode + r.unet + r.optimizer;
  r.images_per_s = Bd / in_seconds(r.step);
  return r;
}

}  // namespace gpuplan::diffusion
