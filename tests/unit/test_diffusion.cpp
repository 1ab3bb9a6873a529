// Stable Diffusion pipelines as layer graphs (diffusion.hpp): exact parameter counts of
// the UNets, the VAE and the text encoders; the layer kinds they need (concat, broadcast
// add, a second input, GEGLU, diffusers attention) derived by hand; inference memory and
// time of a pipeline; hostile configs.
#include <doctest/doctest.h>

#include "gpuplan/diffusion.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/io/catalog.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_diffusion {

using namespace gpuplan;
namespace L = gpuplan::layers;
namespace mk = gpuplan::layers::make;
namespace df = gpuplan::diffusion;

TEST_CASE("layers: concat, a broadcast per-channel add and a second input, by hand") {
  L::graph g;
  g.input = {4, 1, 2, 2};
  const int conv = g.push(mk::conv2d(8, 1));        // 4·8 + 8 = 40 params, 8x2x2
  const int t = g.push(mk::input({8, 1, 1, 1}));     // e.g. a timestep embedding
  const int proj = g.push(mk::linear(8), "proj", t); // 8·8 + 8 = 72
  g.push(mk::add(proj), "h + temb", conv);           // 8x2x2 + 8 per channel
  g.push(mk::concat(-2));                            // cat with the graph input: 12x2x2
  const auto c = L::analyze(g);
  CHECK(c.params == 112);
  CHECK(c.per_layer[1].out == L::shape{8, 1, 1, 1});
  CHECK(c.per_layer[3].out == L::shape{8, 1, 2, 2});
  CHECK(c.output == L::shape{12, 1, 2, 2});
  // add: reads 32 + 8, writes 32; concat: writes 48 and reads 48
  CHECK(c.per_layer[3].flops == 32);
  CHECK(c.elementwise_elements == doctest::Approx(72 + 96).epsilon(1e-12));
  // kernels: conv, linear, add, cat (the input is not a kernel)
  CHECK(c.kernels == 4);
  // saved: the conv's input (16) and the linear's input (8); add and cat save nothing
  CHECK(c.saved_elements == doctest::Approx(24).epsilon(1e-12));
  // a per-channel vector of another width, and a cat of different positions, are errors
  L::graph bad = g;
  bad.layers[0].out = 6;
  CHECK_THROWS_WITH_AS(L::analyze(bad), doctest::Contains("layers[3] (h + temb).skip: shape 8x1 does not match the input 6x4"),
                       config_error);
  L::graph bad2;
  bad2.input = {4, 1, 2, 2};
  bad2.push(mk::conv2d(4, 3, 2, 1));
  bad2.push(mk::concat(-2));
  CHECK_THROWS_WITH_AS(L::analyze(bad2), doctest::Contains("layers[1].skip: positions 1x2x2 do not match the input 1x1x1"), config_error);
  L::graph bad3;
  bad3.input = {4, 1, 2, 2};
  bad3.push(mk::input({0, 1, 1, 1}), "time_proj");
  CHECK_THROWS_WITH_AS(L::analyze(bad3), doctest::Contains("layers[0] (time_proj).source.c: must be in [1, 16777216] (got 0)"), config_error);
}

TEST_CASE("layers: diffusers attention and GEGLU, by hand") {
  L::graph g;
  g.input = {16, 1, 4, 1};  // 4 tokens of width 16
  g.push(mk::diffusers_attention(2));
  auto c = L::analyze(g);
  // to_q, to_k, to_v without bias (3·256) + to_out with bias (256 + 16)
  CHECK(c.params == 1040);
  CHECK(c.kernels == 5);
  g.layers[0] = mk::diffusers_attention(2, 77, 8);  // cross attention on 77 tokens of width 8
  c = L::analyze(g);
  CHECK(c.params == 256 + 2 * 128 + 256 + 16);
  g.layers[0] = mk::self_attention(2);  // nn.MultiheadAttention keeps the 3·16 in_proj bias
  CHECK(L::analyze(g).params == 1088);

  L::graph ff;
  ff.input = {16, 1, 4, 1};
  L::push_geglu(ff, 32, "ff");
  const auto f = L::analyze(ff);
  // GEGLU(16, 32) = Linear(16, 64): 16·64 + 64
  CHECK(f.params == 1088);
  CHECK(f.output == L::shape{32, 1, 4, 1});
  CHECK(f.matmul_flops == doctest::Approx(2.0 * 16 * 64 * 4).epsilon(1e-12));
  // saved as PyTorch keeps them: the input (64), the projection output both chunks view
  // (256 = hidden 128 + gate 128) and gelu(gate) (128)
  CHECK(f.saved_elements == doctest::Approx(64 + 256 + 128).epsilon(1e-12));
}

TEST_CASE("diffusion: exact parameters of the UNets, VAE and text encoders") {
  // Published: SD 1.5 UNet 859,520,964 and SDXL UNet 2,567,463,684 (sum of p.numel() over
  // UNet2DConditionModel.from_pretrained(...).parameters()); SD's AutoencoderKL 83,653,863;
  // CLIP ViT-L/14 text 123,060,480.
  const auto sd15 = df::sd15();
  CHECK(L::analyze(df::unet_graph(sd15.unet, 64, 64)).params == 859520964);
  CHECK(L::analyze(df::unet_graph(df::sdxl_base().unet, 128, 128)).params == 2567463684);
  const auto enc = L::analyze(df::vae_encoder_graph(sd15.vae, 512, 512));
  const auto dec = L::analyze(df::vae_decoder_graph(sd15.vae, 64, 64));
  CHECK(enc.params + dec.params == 83653863);
  CHECK(L::analyze(df::clip_text_graph(df::clip_vit_l14_text())).params == 123060480);
  // Derived from the configs (diffusers unet_2d_condition.py / unet_2d_blocks.py; transformers CLIPTextModel):
  // SD 2.1 UNet: SD 1.5's with cross_attention_dim 1024 instead of 768 — every attn2.to_k and
  // to_v gains 256·C: 2·256 x (5·320 + 5·640 + 6·1280) = 6,389,760 — and linear proj_in/proj_out
  // (the same parameters as 1x1 convs): 859,520,964 + 6,389,760
  CHECK(L::analyze(df::unet_graph(df::sd21().unet, 96, 96)).params == 859520964 + 6389760);
  // OpenCLIP ViT-H/14 text, 23 layers of width 1024: 49408·1024 + 77·1024 + 23 x 12,596,224 + 2048
  CHECK(L::analyze(df::clip_text_graph(df::openclip_vit_h14_text())).params == 50672640 + 23LL * 12596224 + 2048);
  // OpenCLIP bigG/14 text with projection: 49408·1280 + 77·1280 + 32 x 19,677,440 + 2560 + 1280²
  CHECK(L::analyze(df::clip_text_graph(df::openclip_vit_bigg14_text())).params == 63340800 + 32LL * 19677440 + 2560 + 1638400);
  // Safety checker: CLIP ViT-L/14 vision (303,179,776) + visual_projection 1024·768 + concept embeddings
  CHECK(L::analyze(df::safety_checker_graph()).params + df::kSafetyCheckerConceptParams == 303179776 + 786432 + 15380);
  // The parameter count does not depend on the latent size; the work does (4x the positions)
  CHECK(L::analyze(df::unet_graph(sd15.unet, 32, 32)).params == 859520964);
  const double macs64 = L::analyze(df::unet_graph(sd15.unet, 64, 64)).matmul_flops;
  CHECK(macs64 / 2 > 3.9e11);  // ~0.4 T multiply-adds per sample at 64x64 latents
  CHECK(macs64 / 2 < 4.1e11);
}

TEST_CASE("diffusion: hostile configs are one-line errors naming the field") {
  auto u = df::sd15().unet;
  u.attention_head_dim = {7};
  CHECK_THROWS_WITH_AS(df::unet_graph(u, 64, 64), doctest::Contains("unet.attention_head_dim[0]: the heads must divide block_out_channels[0]=320 (got 7)"), config_error);
  u = df::sd15().unet;
  u.block_out_channels = {320, 640};
  CHECK_THROWS_WITH_AS(df::unet_graph(u, 64, 64), doctest::Contains("unet.down_block_types: must have one entry per block_out_channels (2, got 4)"), config_error);
  u = df::sd15().unet;
  u.block_out_channels[1] = 650;
  CHECK_THROWS_WITH_AS(df::unet_graph(u, 64, 64), doctest::Contains("unet.block_out_channels[1]: must be a multiple of norm_num_groups=32 (got 650)"), config_error);
  u = df::sd15().unet;
  u.down_block_types[0] = "SimpleCrossAttnDownBlock2D";
  CHECK_THROWS_WITH_AS(df::unet_graph(u, 64, 64), doctest::Contains("unet.down_block_types[0]: must be CrossAttnDownBlock2D or DownBlock2D (got SimpleCrossAttnDownBlock2D)"), config_error);
  u = df::sd15().unet;
  u.transformer_layers_per_block = {1, 2};
  CHECK_THROWS_WITH_AS(df::unet_graph(u, 64, 64), doctest::Contains("unet.transformer_layers_per_block: must have 1 or 4 entries"), config_error);
  u = df::sd15().unet;
  u.layers_per_block = 1000000;
  CHECK_THROWS_WITH_AS(df::unet_graph(u, 64, 64), doctest::Contains("unet.layers_per_block: must be in [1, 16] (got 1000000)"), config_error);
  CHECK_THROWS_WITH_AS(df::unet_graph(df::sd15().unet, 60, 64), doctest::Contains("latent: must be a multiple of 8"), config_error);
  auto t = df::clip_vit_l14_text();
  t.num_attention_heads = 7;
  CHECK_THROWS_WITH_AS(df::clip_text_graph(t), doctest::Contains("text_encoder.num_attention_heads: must divide hidden_size=768 (got 7)"), config_error);
  CHECK_THROWS_WITH_AS(df::pipeline_by_name("sd-9"), doctest::Contains("model: unknown diffusion pipeline 'sd-9'; known: sd-1.5, sd-2.1, sdxl-base"), config_error);
}

TEST_CASE("diffusion: SD 1.5 inference memory on a T4, derived") {
  const auto& t4 = io::find_gpu("t4");
  const auto p = df::sd15();
  const auto e = df::estimate_pipeline(p, t4, {});
  // fp16 weights of every component: 2 B x (859,520,964 + 83,653,863 + 123,060,480 + 303,981,588)
  const double weights = 2.0 * (859520964.0 + 83653863 + 123060480 + 303981588);
  CHECK(in_bytes(e.weights) == doctest::Approx(weights).epsilon(1e-12));
  // The peak is the VAE decode at 512x512: its live set, at the first resnet of the last up
  // block, is that block's input (256 x 512²), its GroupNorm and its SiLU outputs: 3 x 67,108,864 elements
  // x 2 B, plus the latents (4 x 64² x 2 B).
  CHECK(e.peak_phase == "vae decode");
  const double decode_ws = 3.0 * 256 * 512 * 512 * 2;
  CHECK(in_bytes(e.peak_allocated) == doctest::Approx(weights + decode_ws + 4.0 * 64 * 64 * 2).epsilon(1e-9));
  // reserved = allocated x 1.10 + the cuBLAS workspace (32 MiB), device = reserved + the CUDA
  // context (1343 MiB): 4.90 GB (detail/memory_allocator.hpp, as for transformer runs). Guides
  // quote ~5-6 GB in nvidia-smi; cuDNN's convolution workspaces are not modelled (docs/diffusion.md),
  // so this is at the low end of the guides' range.
  const double allocated = weights + decode_ws + 32768;
  CHECK(in_bytes(e.reserved) == doctest::Approx(allocated * 1.10 + 32.0 * kMiB).epsilon(1e-9));
  CHECK(in_bytes(e.device) == doctest::Approx(allocated * 1.10 + 32.0 * kMiB + 1343.0 * kMiB).epsilon(1e-9));
  CHECK(in_bytes(e.device) > 4.8e9);
  CHECK(in_bytes(e.device) < 5.0e9);
  CHECK(e.fits(t4));
  // Under guidance the UNet sees 2 x batch: batch 16 needs more than batch 1, and the
  // denoising phase's working set is the UNet's at 32 samples.
  const auto b16 = df::estimate_pipeline(p, t4, {.batch = 16});
  CHECK(b16.peak_allocated > e.peak_allocated);
  const auto& unet16 = b16.components[1];
  CHECK(unet16.name == "unet");
  CHECK(unet16.batch == 32);
  CHECK(unet16.calls == 50);
  // Without guidance the UNet runs on the batch itself and the prompt is encoded once.
  const auto nog = df::estimate_pipeline(p, t4, {.guidance = false});
  CHECK(nog.components[1].batch == 1);
  CHECK(nog.components[0].calls == 1);
  CHECK(nog.unet_step < e.unet_step);
}

TEST_CASE("diffusion: the host calls of diffusers' modules set the eager floor of a small batch") {
  // layer::host_ops adds to the layer's kernels; bounds are one-line errors.
  L::graph g;
  g.input = {8, 1, 4, 1};
  g.push(mk::linear(8));
  g.layers[0].host_ops = 3;
  CHECK(L::analyze(g).kernels == 1);
  CHECK(L::analyze(g).host_ops == 4);
  g.layers[0].host_ops = -1;
  CHECK_THROWS_WITH_AS(L::analyze(g), "layers[0].host_ops: must be in [0, 10000] (got -1)", config_error);
  // SD 1.5's UNet: 662 kernels; 16 Transformer2DModels x (5 reshapes + 2 attention processors x 11
  // + 1 FeedForward dropout) = 448, 22 ResnetBlock2Ds x (dropout, division, temb[:, :, None, None])
  // = 66, and the timestep embedding's 17: 1,193 host calls per forward.
  const auto p = df::sd15();
  const auto gc = L::analyze(df::unet_graph(p.unet, 64, 64));
  CHECK(gc.kernels == 662);
  CHECK(gc.host_ops == 662 + 16 * (5 + 2 * 11 + 1) + 22 * 3 + 17);
  // Batch 1 on an RTX 4090 is host-bound: (1,193 + the PNDM step's 26 + guidance's 5) x 20 us =
  // 24.48 ms per step (the GPU's work, 22.0 ms, is shorter). Measured: 24.7 ms (diffusers
  // docs/source/en/optimization/torch2.0.md, RTX 4090, batch 1, 40.5 it/s; DF5).
  const auto& r4090 = io::find_gpu("rtx-4090");
  const auto e = df::estimate_pipeline(p, r4090, {});
  CHECK(in_seconds(e.unet_step) == doctest::Approx((1193 + 26 + 5) * 20e-6).epsilon(1e-9));
  const auto gpu_only = vision::estimate_graph(df::unet_graph(p.unet, 64, 64), 2, precision::fp16_mixed, optimizer::sgd, r4090, false);
  CHECK(in_seconds(gpu_only.compute + gpu_only.memory_bound) == doctest::Approx(0.0220).epsilon(0.01));
  // Without guidance the loop has no cat, chunk or guidance arithmetic.
  CHECK(in_seconds(df::estimate_pipeline(p, r4090, {.guidance = false}).unet_step) ==
        doctest::Approx((1193 + 26) * 20e-6).epsilon(1e-9));
}

TEST_CASE("diffusion: group norm reads its input twice (statistics, then the normalizing pass)") {
  L::graph g;
  g.input = {64, 1, 4, 4};  // 1,024 elements
  g.push(mk::group_norm(32));
  CHECK(L::analyze(g).elementwise_elements == doctest::Approx(3 * 1024));
  g.layers[0] = mk::layer_norm();
  CHECK(L::analyze(g).elementwise_elements == doctest::Approx(2 * 1024));
}

TEST_CASE("diffusion: pipeline time is text + steps x UNet step + decode, and scales with steps") {
  const auto& a100 = io::find_gpu("a100-80gb");
  const auto p = df::sd15();
  const auto e = df::estimate_pipeline(p, a100, {.batch = 4, .steps = 50});
  CHECK(in_seconds(e.total) == doctest::Approx(in_seconds(e.text_encode + e.unet_step * 50.0 + e.vae_decode + e.safety_check)).epsilon(1e-12));
  CHECK(e.images_per_s == doctest::Approx(4 / in_seconds(e.total)).epsilon(1e-12));
  const auto e25 = df::estimate_pipeline(p, a100, {.batch = 4, .steps = 25});
  CHECK(in_seconds(e.total - e25.total) == doctest::Approx(25 * in_seconds(e.unet_step)).epsilon(1e-9));
  // The UNet step is vision::estimate_graph of the UNet graph at 2 x batch (one timing model)
  const auto g = vision::estimate_graph(df::unet_graph(p.unet, 64, 64), 8, precision::fp16_mixed, optimizer::sgd, a100, false);
  CHECK(in_seconds(e.unet_step) == doctest::Approx(in_seconds(g.step)).epsilon(1e-12));
  // SDXL: two text encoders run once each (force_zeros_for_empty_prompt), the VAE decodes in fp32
  const auto x = df::estimate_pipeline(df::sdxl_base(), a100, {});
  CHECK(x.resolution == 1024);
  CHECK(x.components.size() == 4);
  CHECK(x.components[0].calls == 1);
  CHECK(x.components[2].name == "unet");
  CHECK(x.components[2].params == 2567463684);
  // SDXL's UNet at 128² latents: ~8.4x SD 1.5's multiply-adds at 64² per sample (3.38 T vs 0.40 T)
  CHECK(x.components[2].forward_macs_per_sample / e.components[1].forward_macs_per_sample > 8.0);
  CHECK(x.components[2].forward_macs_per_sample / e.components[1].forward_macs_per_sample < 9.0);
  CHECK_THROWS_WITH_AS(df::estimate_pipeline(p, a100, {.resolution = 500}), doctest::Contains("resolution: must be a multiple of 64"), config_error);
  CHECK_THROWS_WITH_AS(df::estimate_pipeline(p, a100, {.batch = 0}), doctest::Contains("batch: must be in [1, 4096] (got 0)"), config_error);
  CHECK_THROWS_WITH_AS(df::estimate_pipeline(p, a100, {.steps = -3}), doctest::Contains("steps: must be in [1, 10000] (got -3)"), config_error);
  CHECK_THROWS_WITH_AS(df::estimate_pipeline(p, a100, {.prec = precision::fp8_mixed}), doctest::Contains("precision: must be fp16, bf16 or fp32"), config_error);
}

TEST_CASE("diffusion: gradient checkpointing keeps segment inputs and the largest segment, by hand") {
  // Three blocks x -> conv -> relu -> conv -> + x on 4x2x2 (16 elements per tensor). Each block
  // saves its input (the first conv's) and the ReLU output (the second conv's): 2 x 16.
  L::graph g;
  g.input = {4, 1, 2, 2};
  int x = -2;
  for (int b = 0; b < 3; ++b) {
    const int first = g.push(mk::conv2d(4, 3, 1, 1), "conv1", x);
    g.push(mk::relu(false));
    g.push(mk::conv2d(4, 3, 1, 1));
    x = g.push(mk::add(x));
    g.segments.push_back({first, x});
  }
  const auto gc = L::analyze(g);
  CHECK(gc.saved_elements == doctest::Approx(96).epsilon(1e-12));
  // checkpointed: the three block inputs (48) + one block's saves rebuilt in backward, its
  // input apart (kept already): the ReLU output (16)
  CHECK(df::checkpointed_saved_bytes(g, gc, 2.0) == doctest::Approx(2.0 * 64).epsilon(1e-12));
  // without segments it is analyze()'s figure
  g.segments.clear();
  CHECK(df::checkpointed_saved_bytes(g, gc, 2.0) == doctest::Approx(gc.saved_bytes(2.0)).epsilon(1e-12));
}

TEST_CASE("diffusion: what LoRA's frozen layers save, by hand") {
  // x (16 x 4 tokens) -> frozen linear -> attention with adapters -> frozen linear(64) -> GELU -> frozen linear(16)
  L::graph g;
  g.input = {16, 1, 4, 1};
  g.push(mk::linear(16));
  g.push(mk::diffusers_attention(2));
  g.push(mk::linear(64));
  g.push(mk::gelu());
  g.push(mk::linear(16));
  const auto gc = L::analyze(g);
  // every layer trainable: the inputs of the three linears (64 + 64 + 256), the attention's
  // input, q, k, v and output (64 + 4·64), GELU's input (256) = 960 elements + 2 heads x 4 x 4 B logsumexp
  CHECK(gc.saved_bytes(2.0) == doctest::Approx(960 * 2 + 32).epsilon(1e-12));
  // LoRA: the first linear's input needs no gradient and the frozen linears save nothing:
  // the attention (64 + 256 elements + 32 B) and GELU (256)
  const auto saves = df::lora_saves(g);
  CHECK(saves == std::vector<char>{0, 1, 0, 1, 0});
  CHECK(df::saved_bytes_of(g, gc, 2.0, false, saves) == doctest::Approx(576 * 2 + 32).epsilon(1e-12));
}

TEST_CASE("diffusion: fine-tuning SD 1.5's UNet, full and LoRA, derived") {
  const auto& a100 = io::find_gpu("a100-80gb");
  const auto p = df::sd15();
  const df::finetune_options full{.batch = 4};
  const auto f = df::estimate_finetune(p, a100, full);
  // train_text_to_image.py under fp16 AMP with AdamW: fp32 weights (4 B) and their fp16
  // autocast copies (2 B), fp32 gradients (4 B), two fp32 moments (8 B) per UNet parameter
  const double P = 859520964;
  CHECK(f.trainable_params == 859520964);
  CHECK(in_bytes(f.trainable_weights) == doctest::Approx(6 * P).epsilon(1e-12));
  CHECK(in_bytes(f.gradients) == doctest::Approx(4 * P).epsilon(1e-12));
  CHECK(in_bytes(f.optimizer_state) == doctest::Approx(8 * P).epsilon(1e-12));
  // frozen in fp16: the VAE and the text encoder (the safety checker is not loaded for training)
  CHECK(in_bytes(f.frozen_weights) == doctest::Approx(2.0 * (83653863 + 123060480)).epsilon(1e-12));
  // activations: the UNet graph's saved tensors at 64x64 latents, x batch
  const auto unet = df::unet_graph(p.unet, 64, 64);
  const auto gc = L::analyze(unet);
  CHECK(in_bytes(f.activations) == doctest::Approx(4 * gc.saved_bytes(2.0)).epsilon(1e-12));
  // checkpointing: fewer saved bytes, one more UNet forward per step
  const auto fc = df::estimate_finetune(p, a100, {.batch = 4, .gradient_checkpointing = true});
  CHECK(fc.activations < f.activations * 0.5);
  const auto fwd = vision::estimate_graph(unet, 4, precision::fp16_mixed, optimizer::adamw, a100, false);
  CHECK(in_seconds(fc.unet - f.unet) == doctest::Approx(in_seconds(fwd.step)).epsilon(1e-9));
  // LoRA rank 4 on to_q/to_k/to_v/to_out.0 of all 32 attentions: 4 x (8C per self-attention +
  // 6C + 2·768 per cross-attention) over C = 5·320 + 5·640 + 6·1280 = 12,480 per kind:
  // 4 x (8·12,480 + 6·12,480 + 16·1,536) = 797,184
  CHECK(df::unet_lora_params(unet, 4) == 797184);
  const auto l = df::estimate_finetune(p, a100, {.method = df::finetune_method::lora, .batch = 4});
  CHECK(l.trainable_params == 797184);
  CHECK(in_bytes(l.frozen_weights) == doctest::Approx(2.0 * (P + 83653863 + 123060480)).epsilon(1e-12));
  CHECK(in_bytes(l.trainable_weights + l.gradients + l.optimizer_state) == doctest::Approx(16.0 * 797184).epsilon(1e-12));
  // the frozen convolutions, norms and activations keep their saves (the gradient flows through
  // them to earlier adapters); the frozen linear layers do not
  CHECK(l.activations < f.activations);
  CHECK(l.activations > f.activations * 0.5);
  CHECK(l.peak_allocated < f.peak_allocated * 0.5);
  CHECK(l.unet < f.unet);
  CHECK_THROWS_WITH_AS(df::estimate_finetune(p, a100, {.method = df::finetune_method::lora, .lora_rank = 0}),
                       doctest::Contains("lora_rank: must be in [1, 4096] (got 0)"), config_error);
}

TEST_CASE("diffusion: the gradients' lifetime sets the step's peak (optimizer.zero_grad(set_to_none))") {
  const auto& a100 = io::find_gpu("a100-80gb");
  const auto p = df::sd15();
  const double P = 859520964;
  for (const std::int64_t b : {1, 8}) {
    CAPTURE(b);
    const auto freed = df::estimate_finetune(p, a100, {.batch = b});
    const auto kept = df::estimate_finetune(p, a100, {.batch = b, .grads_set_to_none = false});
    // Kept gradients (zeroed, not freed) are resident beside everything else: fp32 weights,
    // autocast copies and activations at the end of the forward, plus 4 B per parameter.
    const double resident = in_bytes(kept.frozen_weights + kept.trainable_weights + kept.gradients + kept.optimizer_state);
    const double bd = static_cast<double>(b), latents = bd * 3 * 4 * 64 * 64 * 2, embeds = bd * 77 * 768 * 2;
    CHECK(in_bytes(kept.peak_allocated) ==
          doctest::Approx(resident + latents + embeds + in_bytes(kept.activations + kept.transient)).epsilon(1e-9));
    // Freed ones exist only in backward, which releases the activations and the autocast copies
    // as it produces them: the larger of (copies + activations) and the gradients.
    const double fixed = in_bytes(freed.frozen_weights + freed.trainable_weights + freed.optimizer_state) - 2 * P;
    const double forward_end = 2 * P + latents + embeds + in_bytes(freed.activations + freed.transient);
    const double backward_end = 4 * P + latents + embeds;
    CHECK(in_bytes(freed.peak_allocated) == doctest::Approx(fixed + std::max(forward_end, backward_end)).epsilon(1e-9));
    CHECK(freed.peak_allocated < kept.peak_allocated);
  }
  // At batch 1 the gradients (3.4 GB) outweigh the copies and activations (2.6 GB): the
  // backward end binds; at batch 8 the activations do.
  const auto b1 = df::estimate_finetune(p, a100, {.batch = 1});
  CHECK(in_bytes(b1.activations) + 2 * P < 4 * P);
  const auto b8 = df::estimate_finetune(p, a100, {.batch = 8});
  CHECK(in_bytes(b8.activations) + 2 * P > 4 * P);
}

TEST_CASE("diffusion: DreamBooth (train_dreambooth.py): prior preservation and the text encoder, against its README") {
  const auto p = df::sd15();
  const double P = 859520964, T = 123060480;
  const auto& a100 = io::find_gpu("a100-80gb");
  // --with_prior_preservation: the class images join the batch, so everything runs on 2 x batch.
  const auto one = df::estimate_finetune(p, a100, {.batch = 2});
  const auto prior = df::estimate_finetune(p, a100, {.batch = 1, .prior_preservation = true});
  CHECK(in_bytes(prior.activations) == doctest::Approx(in_bytes(one.activations)).epsilon(1e-12));
  CHECK(in_seconds(prior.unet) == doctest::Approx(in_seconds(one.unet)).epsilon(1e-12));
  // --train_text_encoder (full): CLIP ViT-L/14's text tower trains too: fp32 weights + autocast
  // copies (6 B), fp32 gradients (4 B), AdamW's moments (8 B); it leaves the frozen set.
  const auto te = df::estimate_finetune(p, a100, {.batch = 1, .prior_preservation = true, .train_text_encoder = true});
  CHECK(te.trainable_params == 859520964 + 123060480);
  CHECK(in_bytes(te.frozen_weights) == doctest::Approx(2.0 * 83653863).epsilon(1e-12));
  CHECK(in_bytes(te.trainable_weights) == doctest::Approx(6 * (P + T)).epsilon(1e-12));
  CHECK(in_bytes(te.gradients) == doctest::Approx(4 * (P + T)).epsilon(1e-12));
  CHECK(in_bytes(te.optimizer_state) == doctest::Approx(8 * (P + T)).epsilon(1e-12));
  CHECK(te.activations > prior.activations);
  CHECK(te.unet > prior.unet);
  // LoRA on the text encoder (train_dreambooth_lora.py): rank x 2 x 768 on q, k, v and out of
  // its 12 layers = 4 x 12 x 4 x 1,536 = 294,912 adapters beside the UNet's 797,184.
  const auto lte = df::estimate_finetune(p, a100, {.method = df::finetune_method::lora, .train_text_encoder = true});
  CHECK(lte.trainable_params == 797184 + 294912);
  // SDXL (train_dreambooth_lora_sdxl.py): both text encoders get adapters, CLIP-L's 294,912 and
  // OpenCLIP bigG's 32 layers x 4 x 4 x 2 x 1,280 = 1,310,720, beside the UNet's.
  const auto xl = df::sdxl_base();
  const auto xl_unet = df::unet_lora_params(df::unet_graph(xl.unet, 128, 128), 4);
  CHECK(df::estimate_finetune(xl, a100, {.method = df::finetune_method::lora, .train_text_encoder = true}).trainable_params ==
        xl_unet + 294912 + 1310720);
  // The README's recipes (examples/dreambooth/README.md), SD 1.x at 512, batch 1, prior
  // preservation, gradient checkpointing, 8-bit Adam (train_dreambooth.py keeps the gradients
  // unless --set_grads_to_none):
  const df::finetune_options recipe{.batch = 1, .gradient_checkpointing = true, .opt = optimizer::adamw_8bit,
                                    .prior_preservation = true, .grads_set_to_none = false};
  // "Training on a 16GB GPU" fits a T4 (16 GB).
  const auto& t4 = io::find_gpu("t4");
  CHECK(df::estimate_finetune(p, t4, recipe).fits(t4));
  // "Training on a 12GB GPU" adds --set_grads_to_none (and xFormers): fits an RTX 3060 (12 GB).
  auto r12 = recipe;
  r12.grads_set_to_none = true;
  const auto& r3060 = io::find_gpu("rtx-3060");
  CHECK(df::estimate_finetune(p, r3060, r12).fits(r3060));
  CHECK_FALSE(df::estimate_finetune(p, r3060, recipe).fits(r3060));
  // "--train_text_encoder ... won't fit on 16GB GPU. It needs at least 24GB VRAM": the estimate
  // needs 15.2 GB of a T4's 16.1 (a miss, docs/diffusion.md), and fits 24 GB.
  auto rte = recipe;
  rte.train_text_encoder = true;
  const auto e16 = df::estimate_finetune(p, t4, rte);
  CHECK(in_bytes(e16.device) == doctest::Approx(15.18e9).epsilon(0.01));
  const auto& r3090 = io::find_gpu("rtx-3090");
  CHECK(df::estimate_finetune(p, r3090, rte).fits(r3090));
  // A pipeline without a text encoder has none to train.
  auto bare = p;
  bare.text_encoders.clear();
  CHECK_THROWS_WITH_AS(df::estimate_finetune(bare, a100, {.train_text_encoder = true}),
                       doctest::Contains("train_text_encoder: the pipeline has no text encoder to train"), config_error);
}

TEST_CASE("diffusion: saved tensors of diffusers' blocks against PyTorch (tests/python/test_diffusion_saved.py)") {
  // The same blocks re-declared in PyTorch and measured with saved_tensors_hooks (torch 1.13,
  // CPU, fp32); the byte counts below are the ones that test asserts for PyTorch.
  {  // ResnetBlock2D(64 -> 128, temb 256, 32 groups) on 64 x 16 x 16: PyTorch 592,392 B, of
     // which 8 B are the wrapped double scalar of `/ output_scale_factor` (not modelled)
    L::graph g;
    g.input = {64, 1, 16, 16};
    const int emb = g.push(mk::input({256, 1, 1, 1}), "temb");
    df::detail::resnet(g, -2, 64, 128, 32, emb, "resnet");
    CHECK(L::analyze(g).saved_bytes(4.0) == doctest::Approx(592384.0).epsilon(1e-12));
  }
  {  // LayerNorm + FeedForward(GEGLU) on 16 tokens of 64
    L::graph g;
    g.input = {64, 1, 16, 1};
    g.push(mk::layer_norm());
    L::push_geglu(g, 256, "ff");
    g.push(mk::linear(64));
    CHECK(L::analyze(g).saved_bytes(4.0) == doctest::Approx(18432.0 * 4 + 128).epsilon(1e-12));
  }
  {  // Attention (2 heads, eager AttnProcessor) on 16 tokens of 64
    L::graph g;
    g.input = {64, 1, 16, 1};
    g.push(mk::diffusers_attention(2, 0, 0, false, false));
    CHECK(L::analyze(g).saved_bytes(4.0) == doctest::Approx(5632.0 * 4).epsilon(1e-12));
  }
}

}  // namespace unit_diffusion
