// diffusion.hpp — Stable Diffusion pipelines as layer graphs (layers.hpp): diffusers'
// UNet2DConditionModel, AutoencoderKL and the CLIP text encoders built from configs that
// mirror their config.json fields, and the memory and time of text-to-image inference
// (classifier-free guidance, `steps` denoising steps, VAE decode) on one GPU. docs/diffusion.md.
//
// The umbrella of the graph world's diffusion headers:
//   graph/diffusion_config.hpp     UNet, VAE and CLIP text configs, the pipeline, validate
//   graph/diffusion_graphs.hpp     unet_graph, vae_encoder/decoder_graph, clip_text_graph, safety checker
//   graph/diffusion_catalog.hpp    sd-1.5, sd-2.1, sdxl-base; pipeline_by_name
//   graph/diffusion_inference.hpp  estimate_pipeline: text-to-image memory and time
//   graph/diffusion_finetune.hpp   estimate_finetune: UNet fine-tuning (full, LoRA); the recipe
#pragma once

#include "gpuplan/graph/diffusion_catalog.hpp"
#include "gpuplan/graph/diffusion_config.hpp"
#include "gpuplan/graph/diffusion_finetune.hpp"
#include "gpuplan/graph/diffusion_graphs.hpp"
#include "gpuplan/graph/diffusion_inference.hpp"
#include "gpuplan/layers.hpp"
#include "gpuplan/vision.hpp"
