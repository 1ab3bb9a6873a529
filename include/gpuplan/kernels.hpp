// kernels.hpp — the matmul kernel an inference engine runs for the model's weight
// format on a given GPU, and what it costs: the tensor-core rate of the block matmuls,
// whether activations are quantised too (W8A8), how many bytes per weight a decode step
// reads, and whether prefill first dequantises the weights to 16-bit. Memory is the
// format's own (dtype.hpp bits_per_element); this header is about speed.
// docs/serving.md, "Quantised kernels".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "gpuplan/engine.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/scenario.hpp"

namespace gpuplan {

enum class kernel_kind : std::uint8_t {
  dense,         // 16-bit (or fp32) weights and activations
  fp8_w8a8,      // FP8 weights and per-token FP8 activations on FP8 tensor cores
  fp8_marlin,    // FP8 weights, 16-bit activations: Marlin dequantises in registers (no FP8 tensor cores)
  int8_w8a8,     // INT8 weights and activations on INT8 tensor cores
  marlin_int4,   // GPTQ/AWQ 4-bit weights through the Marlin kernel (sm_80+)
  int4_dequant,  // GPTQ/AWQ 4-bit weights through kernels that dequantise to 16-bit before the GEMM
  bnb_4bit,      // bitsandbytes NF4/FP4 (Linear4bit)
  llm_int8,      // bitsandbytes LLM.int8 (outlier decomposition)
  gguf,          // llama.cpp GGUF tensors (engine.hpp gguf_bits_per_weight)
};

struct inference_kernel {
  kernel_kind kind = kernel_kind::dense;
  std::string_view name;
  bool w8a8 = false;             // the block matmuls run at `matmul_peak` with 8-bit activations
  FlopRate matmul_peak = flop_per_s(0);  // tensor-core rate of the block matmuls (W8A8; else the precision's rate)
  bool prefill_dequantizes = false;      // prefill writes a 16-bit copy of every weight before its GEMM
  bool decode_dequantizes = false;       // decode at batch > 1 reads the packed weights, writes and reads a 16-bit copy
  bool weights_as_fp16 = false;          // every decode step reads the weights at 16 bits (transformers int4 kernels)
  // Decode: a fixed cost per linear module per step, beyond its bytes (LLM.int8's eager
  // decomposition: activation quantization, int8 GEMM, dequantization, outlier GEMM, each a
  // kernel plus Python between them), seconds.
  double seconds_per_linear = 0.0;
};

// bitsandbytes LLM.int8 at decode, per linear module and step: the measured excess of
// int8 over fp16 on Llama-7B (224 linears) at batch 1, RTX 3090: 154.55 − 32.89 ms per
// token (bitsandbytes-foundation/bitsandbytes #347); the maintainer on #490 (A100, "about
// 5x as slow as bf16"): "the kernels ... were designed for training and are not efficient
// for inference". Launch- and host-bound, so the same on every GPU.
inline constexpr double kLlmInt8SecondsPerLinear = (154.55e-3 - 32.89e-3) / 224;

// The smallest compute capabilities of vLLM's kernels: cutlass_scaled_mm FP8 needs sm_89
// (vllm/model_executor/layers/quantization/fp8.py, cutlass_fp8_supported), Marlin sm_80
// (quantization/utils/marlin_utils.py, check_marlin_supported), INT8 scaled_mm sm_75
// (quantization/compressed_tensors, CompressedTensorsW8A8Int8.get_min_capability).
inline constexpr int kFp8TensorCoreSm = 89;
inline constexpr int kMarlinSm = 80;
inline constexpr int kInt8ScaledMmSm = 75;

// The kernel `s.inference.eng` runs for the scenario's weights on `s.gpu`.
inline inference_kernel kernel_for(const scenario& s) {
  const engine_profile& ep = profile_of(s.inference.eng);
  const gpu_spec& g = s.gpu;
  const bool nvidia = g.vendor == gpu_vendor::nvidia;
  inference_kernel k;
  if (ep.gguf_weights && s.inference.gguf) return {.kind = kernel_kind::gguf, .name = "GGUF (ggml-cuda mmvq/mmq)"};
  const quantization q = base_quantization(s);
  switch (q.weights) {
    case dtype::fp8_e4m3:
    case dtype::fp8_e5m2:
      // vLLM fp8.py: FP8 W8A8 via cutlass_scaled_mm on FP8 tensor cores; below sm_89 it falls
      // back to weight-only FP8 Marlin ("Your GPU does not have native support for FP8 computation").
      if (g.fp8 && (!nvidia || g.sm() >= kFp8TensorCoreSm))
        return {.kind = kernel_kind::fp8_w8a8, .name = "FP8 W8A8 (cutlass scaled_mm)", .w8a8 = true, .matmul_peak = *g.fp8};
      if (!nvidia || g.sm() >= kMarlinSm) return {.kind = kernel_kind::fp8_marlin, .name = "FP8 weight-only (Marlin)"};
      detail::fail("scenario.quantization.weights",
                   "fp8 weights need FP8 tensor cores (sm_89+) or Marlin (sm_80+); " + g.id + " is sm_" + std::to_string(g.sm()));
    case dtype::int8:
      // transformers and TGI run load_in_8bit as bitsandbytes LLM.int8 (engine.hpp int8_is_llm_int8).
      if (ep.int8_is_llm_int8)
        return {.kind = kernel_kind::llm_int8, .name = "bitsandbytes LLM.int8", .seconds_per_linear = kLlmInt8SecondsPerLinear};
      if (!g.int8 || (nvidia && g.sm() < kInt8ScaledMmSm))
        detail::fail("scenario.quantization.weights",
                     "int8 W8A8 needs INT8 tensor cores (sm_75+); " + g.id + " has none in the catalog");
      return {.kind = kernel_kind::int8_w8a8, .name = "INT8 W8A8 (cutlass scaled_mm)", .w8a8 = true, .matmul_peak = *g.int8};
    case dtype::int4:
      // transformers' GPTQ/AWQ kernels dequantise every weight (Qwen2.5 speed benchmark: no faster than bf16).
      if (ep.int4_dequantizes)
        return {.kind = kernel_kind::int4_dequant, .name = "GPTQ/AWQ (dequantising)", .prefill_dequantizes = true,
                .weights_as_fp16 = true};
      // vLLM gptq_marlin / awq_marlin on sm_80+; below it the AWQ/GPTQ CUDA kernels dequantise
      // the whole weight for prefill (awq.py: FP16 matmul when tokens >= 256).
      if (nvidia && g.sm() >= kMarlinSm) return {.kind = kernel_kind::marlin_int4, .name = "GPTQ/AWQ int4 (Marlin)"};
      return {.kind = kernel_kind::int4_dequant, .name = "GPTQ/AWQ int4 (CUDA, dequantising prefill)", .prefill_dequantizes = true};
    case dtype::nf4:
    case dtype::fp4:
      // bitsandbytes matmul_4bit: a GEMV on the packed weights at one token, else a bf16 copy (timing_compute.hpp).
      return {.kind = kernel_kind::bnb_4bit, .name = "bitsandbytes 4-bit", .prefill_dequantizes = true, .decode_dequantizes = true};
    default: break;
  }
  k.name = "unquantised";
  return k;
}

}  // namespace gpuplan
