// scenario.hpp — the run being estimated. One value type shared by the C++ API,
// the CLI's scenario file and Python. Names and defaults match docs/scenario.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "gpuplan/dtype.hpp"
#include "gpuplan/hardware.hpp"

namespace gpuplan {

enum class workload : std::uint8_t { train, infer };
enum class method : std::uint8_t { full, lora, qlora, freeze };
// fp16-mixed / bf16-mixed: fp32 master weights and fp32 optimizer moments
// (Micikevicius et al. 2018); bf16-pure: everything bf16, no master copy.
enum class precision : std::uint8_t { fp32, tf32, fp16_mixed, bf16_mixed, bf16_pure, fp8_mixed };
enum class optimizer : std::uint8_t {
  adamw, adam, adamw_8bit, paged_adamw_8bit, paged_adamw_32bit, sgd, sgd_momentum, adafactor, lion
};
enum class checkpointing : std::uint8_t { none, selective, full };
enum class attention : std::uint8_t { flash, eager };
enum class offload : std::uint8_t { none, cpu, nvme };

// LoRA targets as bits (q,k,v,o,gate,up,down = linear_id order).
enum lora_target : std::uint8_t {
  lora_q = 1, lora_k = 2, lora_v = 4, lora_o = 8, lora_gate = 16, lora_up = 32, lora_down = 64,
  lora_all_linear = 127,
};

struct lora_config {
  std::int64_t rank = 8;
  double alpha = 16;
  double dropout = 0.0;
  std::uint8_t targets = lora_q | lora_v;  // PEFT's default for llama-style models

  friend bool operator==(const lora_config&, const lora_config&) = default;
};

struct freeze_config {
  std::int64_t trainable_layers = 1;  // the top N blocks (plus the head) train

  friend bool operator==(const freeze_config&, const freeze_config&) = default;
};

struct parallel_config {
  int tp = 1;
  int pp = 1;
  int virtual_stages = 1;
  bool sp = false;  // Megatron sequence parallelism (with tp)
  int cp = 1;
  int ep = 1;
  int zero = 0;     // 0..3; FSDP full-shard = 3, shard-grad-op = 2
  offload offload_optimizer = offload::none;
  offload offload_params = offload::none;

  friend bool operator==(const parallel_config&, const parallel_config&) = default;
};

struct inference_config {
  std::int64_t batch = 1;
  std::int64_t prompt_len = 512;
  std::int64_t gen_len = 512;
  dtype kv_cache_dtype = dtype::bf16;

  friend bool operator==(const inference_config&, const inference_config&) = default;
};

struct scenario {
  workload work = workload::train;
  method meth = method::full;
  lora_config lora{};
  freeze_config freeze{};
  std::optional<quantization> quant{};  // base-weight quantization (qlora default: nf4 + double quant)
  precision prec = precision::bf16_mixed;
  optimizer opt = optimizer::adamw;
  std::int64_t micro_batch = 1;
  std::int64_t seq_len = 2048;
  std::int64_t grad_accum = 1;
  checkpointing ckpt = checkpointing::none;
  attention attn = attention::flash;
  bool compile = false;
  bool chunked_loss = false;
  bool activation_offload = false;
  bool optimizer_in_backward = false;
  gpu_spec gpu{};
  int num_gpus = 1;
  cluster_spec cluster{};
  parallel_config parallel{};
  inference_config inference{};
  std::optional<double> tokens{};              // total training tokens
  std::optional<double> price_per_gpu_hour{};  // currency per GPU-hour

  [[nodiscard]] constexpr int model_parallel() const noexcept { return parallel.tp * parallel.pp * parallel.cp; }
  [[nodiscard]] constexpr int dp() const noexcept { return num_gpus / model_parallel(); }
  [[nodiscard]] constexpr std::int64_t global_batch() const noexcept { return micro_batch * grad_accum * dp(); }

  friend bool operator==(const scenario&, const scenario&) = default;
};

// The effective base-weight quantization: explicit, or QLoRA's default (NF4 + double quant).
inline quantization base_quantization(const scenario& s) {
  if (s.quant) return *s.quant;
  if (s.meth == method::qlora) return {.weights = dtype::nf4, .double_quant = true, .group_size = 0};
  return {};
}

// Names as they appear in the scenario file.
constexpr std::string_view to_string(workload v) { return v == workload::train ? "train" : "infer"; }
constexpr std::string_view to_string(method v) {
  switch (v) { case method::full: return "full"; case method::lora: return "lora";
               case method::qlora: return "qlora"; case method::freeze: return "freeze"; }
  return "?";
}
constexpr std::string_view to_string(precision v) {
  switch (v) { case precision::fp32: return "fp32"; case precision::tf32: return "tf32";
               case precision::fp16_mixed: return "fp16-mixed"; case precision::bf16_mixed: return "bf16-mixed";
               case precision::bf16_pure: return "bf16-pure"; case precision::fp8_mixed: return "fp8-mixed"; }
  return "?";
}
constexpr std::string_view to_string(optimizer v) {
  switch (v) { case optimizer::adamw: return "adamw"; case optimizer::adam: return "adam";
               case optimizer::adamw_8bit: return "adamw-8bit"; case optimizer::paged_adamw_8bit: return "paged-adamw-8bit";
               case optimizer::paged_adamw_32bit: return "paged-adamw-32bit"; case optimizer::sgd: return "sgd";
               case optimizer::sgd_momentum: return "sgd-momentum"; case optimizer::adafactor: return "adafactor";
               case optimizer::lion: return "lion"; }
  return "?";
}
constexpr std::string_view to_string(checkpointing v) {
  return v == checkpointing::none ? "none" : v == checkpointing::selective ? "selective" : "full";
}
constexpr std::string_view to_string(attention v) { return v == attention::flash ? "flash" : "eager"; }
constexpr std::string_view to_string(offload v) {
  return v == offload::none ? "none" : v == offload::cpu ? "cpu" : "nvme";
}

}  // namespace gpuplan
