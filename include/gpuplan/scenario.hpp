// scenario.hpp — the run being estimated. One value type shared by the C++ API,
// the CLI's scenario file and Python. Names and defaults match docs/scenario.md.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "gpuplan/dtype.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/names.hpp"

namespace gpuplan {

enum class workload : std::uint8_t { train, infer };
enum class method : std::uint8_t { full, lora, qlora, freeze, dora, ia3, prompt_tuning, prefix_tuning, vera, ln_tuning };
// fp16-mixed / bf16-mixed: fp32 master weights and fp32 optimizer moments
// (Micikevicius et al. 2018); bf16-pure: everything bf16, no master copy.
enum class precision : std::uint8_t { fp32, tf32, fp16_mixed, bf16_mixed, bf16_pure, fp8_mixed };
enum class optimizer : std::uint8_t {
  adamw, adam, adamw_8bit, paged_adamw_8bit, paged_adamw_32bit, sgd, sgd_momentum, adafactor, lion
};
enum class checkpointing : std::uint8_t { none, selective, full };
enum class attention : std::uint8_t { flash, eager };
// How the optimizer step runs: PyTorch's multi-tensor (foreach) kernels, one element-wise op
// per line of the algorithm, or one fused kernel per tensor group (torch fused=True, apex /
// DeepSpeed FusedAdam). detail/timing_optimizer.hpp counts the bytes each moves.
enum class optimizer_kernel : std::uint8_t { foreach, fused };
enum class offload : std::uint8_t { none, cpu, nvme };
// The software that runs the training step: what it keeps on the GPU, its recipes'
// defaults, its kernels and feasible layouts (framework.hpp holds the profiles).
enum class framework : std::uint8_t { hf, deepspeed, fsdp, torchtune, megatron, unsloth };
// The software that serves the model (workload infer): how it holds the KV cache, what
// it reserves at start-up and how fast its decode step is (engine.hpp holds the profiles).
enum class engine : std::uint8_t { hf, vllm, sglang, tgi, llama_cpp };
// llama.cpp GGUF weight types (engine.hpp: bits per weight of each).
enum class gguf_type : std::uint8_t { f16, q8_0, q6_k, q5_k_m, q4_k_m, q4_0 };

// LoRA targets as bits (q,k,v,o,gate,up,down = linear_id order).
enum lora_target : std::uint8_t {
  lora_q = 1, lora_k = 2, lora_v = 4, lora_o = 8, lora_gate = 16, lora_up = 32, lora_down = 64,
  lora_all_linear = 127,
};

// PEFT modules_to_save: whole modules trained as full copies next to the adapters.
enum lora_module : std::uint8_t { lora_save_embed = 1, lora_save_head = 2 };

struct lora_config {
  std::int64_t rank = 8;
  double alpha = 16;
  double dropout = 0.0;
  std::uint8_t targets = lora_q | lora_v;  // PEFT's default for llama-style models
  std::uint8_t modules_to_save = 0;        // lora_module bits (peft.hpp)

  friend bool operator==(const lora_config&, const lora_config&) = default;
};

struct freeze_config {
  std::int64_t trainable_layers = 1;  // the top N blocks (plus the head) train

  friend bool operator==(const freeze_config&, const freeze_config&) = default;
};

// Options of the PEFT methods other than LoRA (peft.hpp; docs/scenario.md § PEFT methods).
// DoRA and VeRA take their targets (and DoRA its rank) from lora_config.
struct peft_config {
  std::int64_t virtual_tokens = 20;  // prompt / prefix tuning: num_virtual_tokens (PEFT requires it; 20 as its docs' examples)
  std::int64_t vera_rank = 256;      // VeraConfig.r default
  std::uint8_t ia3_targets = lora_k | lora_v | lora_down;  // IA3 default for llama (peft/utils/constants.py)

  friend bool operator==(const peft_config&, const peft_config&) = default;
};

struct parallel_config {
  // Unset: 1, or every GPU of the run for a paged serving engine whose heads and MLP split
  // evenly (vLLM, SGLang, TGI --num-shard, llama.cpp --split-mode); run.hpp resolves it.
  std::optional<int> tp{};
  int pp = 1;
  int virtual_stages = 1;
  // Megatron sequence parallelism (with tp). Unset: on with tp > 1 where the framework pairs
  // them (framework.hpp sequence_parallel_with_tp), off otherwise; run.hpp resolves it.
  std::optional<bool> sp{};
  int cp = 1;
  int ep = 1;
  int zero = 0;     // 0..3; FSDP full-shard = 3, shard-grad-op = 2
  offload offload_optimizer = offload::none;
  offload offload_params = offload::none;
  // Megatron-LM --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split:
  // the embedding (the loss) counts as one layer of the pipeline split, so the first (last)
  // stage builds one block fewer (megatron/core/transformer/transformer_block.py
  // get_num_layers_to_build). Frameworks whose profile has account_in_pipeline_split only.
  bool account_for_embedding_in_pipeline_split = false;
  bool account_for_loss_in_pipeline_split = false;
  // Megatron-LM --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers
  // (TransformerConfig num_layers_in_first/last_pipeline_stage): uneven pipeline stages, the
  // other stages splitting the remaining blocks evenly (BLOOM-176B: 70 layers on 12 stages).
  std::optional<std::int64_t> first_stage_layers;
  std::optional<std::int64_t> last_stage_layers;

  // The resolved degrees (a run always has them set; an unresolved scenario reads the plain defaults).
  [[nodiscard]] constexpr int tp_size() const noexcept { return tp.value_or(1); }
  [[nodiscard]] constexpr bool sp_enabled() const noexcept { return sp.value_or(false); }

  friend bool operator==(const parallel_config&, const parallel_config&) = default;
};

struct inference_config {
  std::int64_t batch = 1;
  std::int64_t prompt_len = 512;
  std::int64_t gen_len = 512;
  dtype kv_cache_dtype = dtype::bf16;
  engine eng = engine::hf;
  std::int64_t max_batched_tokens = 0;  // tokens of one engine step (vLLM max_num_batched_tokens); 0: the engine's default
  std::optional<gguf_type> gguf{};      // llama.cpp: the GGUF weight type (unset: the scenario's quantization)
  std::optional<int> gpu_layers{};      // llama.cpp -ngl: layers on the GPU (unset: all)
  std::optional<bool> cuda_graphs{};    // decode replayed as CUDA graphs (unset: the engine's default, engine.hpp)
  // The engine's memory budget as a share of the GPU (vLLM --gpu-memory-utilization, SGLang
  // --mem-fraction-static); unset: the engine's default (engine.hpp memory_fraction_of).
  std::optional<double> memory_fraction{};

  friend bool operator==(const inference_config&, const inference_config&) = default;
};

struct scenario {
  workload work = workload::train;
  method meth = method::full;
  lora_config lora{};
  freeze_config freeze{};
  peft_config peft{};
  std::optional<quantization> quant{};  // base-weight quantization (qlora default: nf4 + double quant)
  // Unset: bf16-mixed, or fp16-mixed on a GPU without bf16 tensor cores (T4, V100: PyTorch
  // autocast docs); run.hpp resolves it, so estimators always see a value.
  std::optional<precision> prec{};
  optimizer opt = optimizer::adamw;
  std::int64_t micro_batch = 1;
  std::int64_t seq_len = 2048;
  std::int64_t grad_accum = 1;
  framework fw = framework::hf;
  std::optional<checkpointing> ckpt{};  // unset: the framework's recipe default (run.hpp resolves it)
  attention attn = attention::flash;
  bool compile = false;
  // The block's element-wise ops run in fused kernels without torch.compile: Liger Kernel
  // (transformers TrainingArguments use_liger_kernel), Apex / flash-attn fused norm, rotary and
  // MLP ops, Transformer Engine layers. Time: timing_compute.hpp fused(); memory (without
  // compile): Liger's fused RMSNorm and SwiGLU saves (detail/memory_terms.hpp act_context::fused).
  bool fused_kernels = false;
  bool chunked_loss = false;
  // The LM head and the cross-entropy fused, a chunk of tokens at a time, so no logits tensor
  // exists (Liger LigerFusedLinearCrossEntropyLoss, transformers use_liger_kernel, ALST's
  // TiledFusedLogitsLoss; framework.hpp fused_linear_loss is a framework's own, e.g. Unsloth's).
  bool fused_linear_loss = false;
  // ALST TiledMLP (deepspeed/runtime/sequence_parallel/ulysses_sp.py; ArcticTraining
  // tiled_mlp_compute, axolotl tiled_mlp): each block's MLP runs over ceil(s / hidden) shards of
  // the sequence, saving only its input and recomputing one shard at a time in backward.
  bool tiled_mlp = false;
  // The loss reads the 16-bit logits and writes their gradient into them (flash-attn's Triton
  // cross_entropy_loss with inplace_backward: verl logprobs_from_logits): no fp32 copies.
  bool inplace_loss = false;
  // Positions per sequence whose logits the LM head and the loss compute (transformers
  // logits_to_keep; TRL's GRPO and PPO score the completion only). Unset: every position.
  std::optional<std::int64_t> loss_tokens{};
  bool activation_offload = false;
  bool optimizer_in_backward = false;
  std::optional<optimizer_kernel> opt_kernel{};  // unset: the framework's default (framework.hpp)
  // Gradient tensors kept, zero-filled, from one step to the next: PyTorch < 2.0, whose
  // zero_grad() defaulted to set_to_none=False (HF Trainer's model.zero_grad() before
  // transformers on torch 2), or code passing set_to_none=False. Default: freed each step.
  bool keep_gradients = false;
  // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the caching allocator grows one segment
  // per pool instead of keeping fixed-size ones (framework.hpp kExpandableSlackKept).
  bool expandable_segments = false;
  gpu_spec gpu{};
  int num_gpus = 1;
  cluster_spec cluster{};
  parallel_config parallel{};
  inference_config inference{};
  std::optional<double> tokens{};              // total training tokens
  std::optional<double> price_per_gpu_hour{};  // currency per GPU-hour

  [[nodiscard]] constexpr int model_parallel() const noexcept { return parallel.tp_size() * parallel.pp * parallel.cp; }
  [[nodiscard]] constexpr int dp() const noexcept { return num_gpus / model_parallel(); }
  [[nodiscard]] constexpr std::int64_t global_batch() const noexcept { return micro_batch * grad_accum * dp(); }

  friend bool operator==(const scenario&, const scenario&) = default;
};


// Names as they appear in the scenario file, the CLI and Python, in the order
// error messages, help and completions list them.
inline constexpr std::array<enum_name<workload>, 2> kWorkloadNames{{{workload::train, "train"}, {workload::infer, "infer"}}};
inline constexpr std::array<enum_name<method>, 10> kMethodNames{{
    {method::full, "full"}, {method::lora, "lora"}, {method::qlora, "qlora"}, {method::freeze, "freeze"},
    {method::dora, "dora"}, {method::ia3, "ia3"}, {method::prompt_tuning, "prompt-tuning"},
    {method::prefix_tuning, "prefix-tuning"}, {method::vera, "vera"}, {method::ln_tuning, "ln-tuning"}}};
// What each training method is, one row per method beside its name: the estimators,
// validation, the readers and the exports read these traits (peft.hpp names them), so
// a new PEFT method is a row here plus its arithmetic (peft.hpp peft_of_block).
struct method_traits {
  method id;
  bool peft;           // the base is frozen and added parameters train (HF PEFT); not full, not freeze
  bool lora_family;    // LoRA A/B adapters on lora.targets (LoRA, QLoRA, DoRA)
  bool low_rank_path;  // two thin GEMMs per targeted linear, configured by scenario.lora (LoRA family, VeRA)
  bool quantized_base; // the base is quantized unless the scenario says otherwise (QLoRA: NF4)
  // The frameworks' PEFT recipe defaults (framework.hpp peft_checkpointing) apply: the
  // PEFT/TRL LoRA and QLoRA examples; other methods take the full-training default.
  bool peft_recipe;
  // The scenario.peft keys the method reads (peft_key_*): PEFT's config fields for it.
  std::uint8_t peft_keys;
};
inline constexpr std::uint8_t peft_key_virtual_tokens = 1;  // PromptTuningConfig / PrefixTuningConfig num_virtual_tokens
inline constexpr std::uint8_t peft_key_vera_rank = 2;       // VeraConfig r
inline constexpr std::uint8_t peft_key_ia3_targets = 4;     // IA3Config target_modules
inline constexpr std::array<method_traits, 10> kMethodTraits{{
    // id                    peft   lora   low-rank quantized recipe  scenario.peft keys
    {method::full,           false, false, false,   false,    false,  0},
    {method::lora,           true,  true,  true,    false,    true,   0},
    {method::qlora,          true,  true,  true,    true,     true,   0},
    {method::freeze,         false, false, false,   false,    false,  0},
    {method::dora,           true,  true,  true,    false,    false,  0},
    {method::ia3,            true,  false, false,   false,    false,  peft_key_ia3_targets},
    {method::prompt_tuning,  true,  false, false,   false,    false,  peft_key_virtual_tokens},
    {method::prefix_tuning,  true,  false, false,   false,    false,  peft_key_virtual_tokens},
    {method::vera,           true,  false, true,    false,    false,  peft_key_vera_rank},
    {method::ln_tuning,      true,  false, false,   false,    false,  0},
}};
constexpr bool method_traits_in_enum_order() {
  for (std::size_t i = 0; i < kMethodTraits.size(); ++i)
    if (static_cast<std::size_t>(kMethodTraits[i].id) != i || kMethodNames[i].value != kMethodTraits[i].id) return false;
  return true;
}
static_assert(kMethodTraits.size() == kMethodNames.size() && method_traits_in_enum_order());
constexpr const method_traits& traits_of(method m) { return kMethodTraits[static_cast<std::size_t>(m)]; }

// The run's precision: as set, else bf16-mixed, or fp16-mixed on a GPU without bf16 tensor
// cores (T4, V100: fp16 AMP is what runs there, PyTorch autocast docs). run.hpp resolves it once.
constexpr precision precision_of(const scenario& s) noexcept {
  if (s.prec) return *s.prec;
  return s.gpu.has_bf16() ? precision::bf16_mixed : precision::fp16_mixed;
}

// The same run served instead of trained: workload infer, and the training-only kernels (the
// fused head and loss, TiledMLP) off, as a serving run computes no loss and no backward
// (validate.hpp validate_kernels refuses them there).
constexpr void serve_instead(scenario& s) noexcept {
  s.work = workload::infer;
  s.fused_linear_loss = s.tiled_mlp = false;
}

// The effective base-weight quantization: explicit, or QLoRA's default (NF4 + double quant).
inline quantization base_quantization(const scenario& s) {
  if (s.quant) return *s.quant;
  if (traits_of(s.meth).quantized_base) return {.weights = dtype::nf4, .double_quant = true, .group_size = 0};
  return {};
}

inline constexpr std::array<enum_name<precision>, 6> kPrecisionNames{{
    {precision::fp32, "fp32"}, {precision::tf32, "tf32"}, {precision::fp16_mixed, "fp16-mixed"},
    {precision::bf16_mixed, "bf16-mixed"}, {precision::bf16_pure, "bf16-pure"}, {precision::fp8_mixed, "fp8-mixed"}}};
inline constexpr std::array<enum_name<optimizer>, 9> kOptimizerNames{{
    {optimizer::adamw, "adamw"}, {optimizer::adam, "adam"}, {optimizer::adamw_8bit, "adamw-8bit"},
    {optimizer::paged_adamw_8bit, "paged-adamw-8bit"}, {optimizer::paged_adamw_32bit, "paged-adamw-32bit"},
    {optimizer::sgd, "sgd"}, {optimizer::sgd_momentum, "sgd-momentum"}, {optimizer::adafactor, "adafactor"},
    {optimizer::lion, "lion"}}};
inline constexpr std::array<enum_name<framework>, 6> kFrameworkNames{{
    {framework::hf, "hf"}, {framework::deepspeed, "deepspeed"}, {framework::fsdp, "fsdp"},
    {framework::torchtune, "torchtune"}, {framework::megatron, "megatron"}, {framework::unsloth, "unsloth"}}};
inline constexpr std::array<enum_name<engine>, 5> kEngineNames{{
    {engine::hf, "hf"}, {engine::vllm, "vllm"}, {engine::sglang, "sglang"}, {engine::tgi, "tgi"}, {engine::llama_cpp, "llama.cpp"}}};
inline constexpr std::array<enum_name<gguf_type>, 6> kGgufTypeNames{{
    {gguf_type::f16, "F16"}, {gguf_type::q8_0, "Q8_0"}, {gguf_type::q6_k, "Q6_K"}, {gguf_type::q5_k_m, "Q5_K_M"},
    {gguf_type::q4_k_m, "Q4_K_M"}, {gguf_type::q4_0, "Q4_0"}}};
inline constexpr std::array<enum_name<checkpointing>, 3> kCheckpointingNames{{
    {checkpointing::none, "none"}, {checkpointing::selective, "selective"}, {checkpointing::full, "full"}}};
inline constexpr std::array<enum_name<attention>, 2> kAttentionNames{{{attention::flash, "flash"}, {attention::eager, "eager"}}};
inline constexpr std::array<enum_name<optimizer_kernel>, 2> kOptimizerKernelNames{{
    {optimizer_kernel::foreach, "foreach"}, {optimizer_kernel::fused, "fused"}}};
inline constexpr std::array<enum_name<offload>, 3> kOffloadNames{{
    {offload::none, "none"}, {offload::cpu, "cpu"}, {offload::nvme, "nvme"}}};
// LoRA targets: the seven single linears (a list of them) and "all-linear" (a string),
// last so that the first seven are the single targets.
inline constexpr std::array<enum_name<lora_target>, 8> kLoraTargetNames{{
    {lora_q, "q"}, {lora_k, "k"}, {lora_v, "v"}, {lora_o, "o"}, {lora_gate, "gate"}, {lora_up, "up"},
    {lora_down, "down"}, {lora_all_linear, "all-linear"}}};
inline constexpr std::span<const enum_name<lora_target>> kLoraSingleTargetNames{kLoraTargetNames.data(),
                                                                               kLoraTargetNames.size() - 1};
// Values of scenario.lora.modules_to_save (the token embedding, the LM head or classifier).
inline constexpr std::array<enum_name<lora_module>, 2> kLoraModuleNames{{{lora_save_embed, "embed"}, {lora_save_head, "head"}}};

// Values of scenario.quantization.weights ("fp8" is e4m3).
inline constexpr std::array<enum_name<dtype>, 8> kWeightDtypeNames{{
    {dtype::nf4, "nf4"}, {dtype::fp4, "fp4"}, {dtype::int8, "int8"}, {dtype::int4, "int4"},
    {dtype::fp8_e4m3, "fp8"}, {dtype::bf16, "bf16"}, {dtype::fp16, "fp16"}, {dtype::fp32, "fp32"}}};
// Values of scenario.inference.kv_cache_dtype ("fp8" is e4m3).
inline constexpr std::array<enum_name<dtype>, 6> kKvCacheDtypeNames{{
    {dtype::bf16, "bf16"}, {dtype::fp16, "fp16"}, {dtype::fp32, "fp32"}, {dtype::fp8_e4m3, "fp8"},
    {dtype::int8, "int8"}, {dtype::int4, "int4"}}};

template <> inline constexpr std::span<const enum_name<workload>> name_table<workload>{kWorkloadNames};
template <> inline constexpr std::span<const enum_name<method>> name_table<method>{kMethodNames};
template <> inline constexpr std::span<const enum_name<precision>> name_table<precision>{kPrecisionNames};
template <> inline constexpr std::span<const enum_name<optimizer>> name_table<optimizer>{kOptimizerNames};
template <> inline constexpr std::span<const enum_name<checkpointing>> name_table<checkpointing>{kCheckpointingNames};
template <> inline constexpr std::span<const enum_name<framework>> name_table<framework>{kFrameworkNames};
template <> inline constexpr std::span<const enum_name<attention>> name_table<attention>{kAttentionNames};
template <> inline constexpr std::span<const enum_name<engine>> name_table<engine>{kEngineNames};
template <> inline constexpr std::span<const enum_name<gguf_type>> name_table<gguf_type>{kGgufTypeNames};
template <> inline constexpr std::span<const enum_name<offload>> name_table<offload>{kOffloadNames};
template <> inline constexpr std::span<const enum_name<optimizer_kernel>> name_table<optimizer_kernel>{kOptimizerKernelNames};
template <> inline constexpr std::span<const enum_name<lora_target>> name_table<lora_target>{kLoraTargetNames};

static_assert(names_are_unique(kWorkloadNames) && names_cover(kWorkloadNames, workload::infer));
static_assert(names_are_unique(kMethodNames) && names_cover(kMethodNames, method::ln_tuning));
static_assert(names_are_unique(kPrecisionNames) && names_cover(kPrecisionNames, precision::fp8_mixed));
static_assert(names_are_unique(kOptimizerNames) && names_cover(kOptimizerNames, optimizer::lion));
static_assert(names_are_unique(kCheckpointingNames) && names_cover(kCheckpointingNames, checkpointing::full));
static_assert(names_are_unique(kFrameworkNames) && names_cover(kFrameworkNames, framework::unsloth));
static_assert(names_are_unique(kEngineNames) && names_cover(kEngineNames, engine::llama_cpp));
static_assert(names_are_unique(kGgufTypeNames) && names_cover(kGgufTypeNames, gguf_type::q4_0));
static_assert(names_are_unique(kAttentionNames) && names_cover(kAttentionNames, attention::eager));
static_assert(names_are_unique(kOffloadNames) && names_cover(kOffloadNames, offload::nvme));
static_assert(names_are_unique(kOptimizerKernelNames) && names_cover(kOptimizerKernelNames, optimizer_kernel::fused));
static_assert(names_are_unique(kLoraTargetNames) && names_are_unique(kWeightDtypeNames) &&
              names_are_unique(kKvCacheDtypeNames));

}  // namespace gpuplan
