// validate.hpp — every rule a run must satisfy before it is estimated. Each
// violation throws config_error naming the scenario path, the rule and the value.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "gpuplan/detail/timing_model.hpp"
#include "gpuplan/engine.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/framework.hpp"
#include "gpuplan/kernels.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/peft.hpp"
#include "gpuplan/scenario.hpp"

namespace gpuplan {

namespace detail {
inline std::string i2s(std::int64_t v) { return std::to_string(v); }
// The path is a view: the planner re-checks runs millions of times per second, so a
// string is built only when a rule fails, out of line (the check itself is two compares).
[[noreturn, gnu::noinline, gnu::cold]] inline void out_of_range(std::int64_t v, std::int64_t lo, std::int64_t hi,
                                                                std::string_view path) {
  if (v < lo) fail(std::string(path), "must be at least " + i2s(lo) + " (got " + i2s(v) + ")");
  fail(std::string(path), "must be at most " + i2s(hi) + " (got " + i2s(v) + ")");
}
inline void require_range(std::int64_t v, std::int64_t lo, std::int64_t hi, std::string_view path) {
  if (v < lo || v > hi) [[unlikely]] out_of_range(v, lo, hi, path);
}
inline void require_finite(double v, double lo, double hi, std::string_view path) {
  if (!std::isfinite(v)) fail(std::string(path), "must be a finite number (got " + num(v) + ")");
  if (v < lo) fail(std::string(path), "must be at least " + num(lo) + " (got " + num(v) + ")");
  if (v > hi) fail(std::string(path), "must be at most " + num(hi) + " (got " + num(v) + ")");
}
}  // namespace detail

// Largest sizes we accept: beyond these no real run exists and products could
// leave the exact range of double/int64.
inline constexpr std::int64_t kMaxBatch = std::int64_t{1} << 24;
inline constexpr std::int64_t kMaxSeq = std::int64_t{1} << 24;
inline constexpr std::int64_t kMaxGpus = std::int64_t{1} << 20;

namespace detail {
// Sizes: every count within the bounds no real run exceeds.
inline void validate_sizes(const scenario& s) {
  const auto& p = s.parallel;
  require_range(s.micro_batch, 1, kMaxBatch, "scenario.micro_batch");
  require_range(s.seq_len, 1, kMaxSeq, "scenario.seq_len");
  require_range(s.grad_accum, 1, kMaxBatch, "scenario.grad_accum");
  if (s.loss_tokens) require_range(*s.loss_tokens, 1, s.seq_len, "scenario.loss_tokens");
  require_range(s.num_gpus, 1, kMaxGpus, "scenario.num_gpus");
  require_range(s.cluster.gpus_per_node, 1, 1024, "scenario.gpus_per_node");
  if (p.tp) require_range(*p.tp, 1, kMaxGpus, "scenario.parallel.tp");
  require_range(p.pp, 1, kMaxGpus, "scenario.parallel.pp");
  require_range(p.virtual_stages, 1, 1024, "scenario.parallel.virtual_stages");
  require_range(p.cp, 1, kMaxGpus, "scenario.parallel.cp");
  require_range(p.ep, 1, kMaxGpus, "scenario.parallel.ep");
  require_range(p.zero, 0, 3, "scenario.parallel.zero");
  if (s.work == workload::infer) {
    require_range(s.inference.batch, 1, kMaxBatch, "scenario.inference.batch");
    require_range(s.inference.prompt_len, 1, kMaxSeq, "scenario.inference.prompt_len");
    require_range(s.inference.gen_len, 0, kMaxSeq, "scenario.inference.gen_len");
    require_range(s.inference.max_batched_tokens, 0, kMaxSeq, "scenario.inference.max_batched_tokens");
    if (s.inference.gpu_layers) require_range(*s.inference.gpu_layers, 0, kMaxSeq, "scenario.inference.gpu_layers");
    if (s.inference.memory_fraction) {
      require_finite(*s.inference.memory_fraction, 0.01, 1.0, "scenario.inference.memory_fraction");
      if (!profile_of(s.inference.eng).paged_pool)
        fail("scenario.inference.memory_fraction", "only applies to an engine with a KV pool (vllm, sglang, tgi; got engine " +
                                                       std::string(to_string(s.inference.eng)) + ")");
    }
    if (s.inference.eng != engine::llama_cpp && (s.inference.gguf || s.inference.gpu_layers))
      fail(s.inference.gguf ? "scenario.inference.gguf" : "scenario.inference.gpu_layers",
           "only applies to engine llama.cpp (got engine " + std::string(to_string(s.inference.eng)) + ")");
    if (s.inference.cuda_graphs.value_or(false) && !profile_of(s.inference.eng).has_cuda_graphs())
      fail("scenario.inference.cuda_graphs", "engine " + std::string(to_string(s.inference.eng)) +
                                                 " does not replay decode as CUDA graphs (got true)");
    // The weight format needs a kernel on this GPU (kernels.hpp kernel_for names the field when none runs).
    (void)kernel_for(s);
  }
}

// Tensor/pipeline/context/expert parallelism and ZeRO/offload combinations.
inline void validate_layout(const architecture& m, const scenario& s) {
  const auto& p = s.parallel;
  if (m.heads % p.tp_size() != 0)
    fail("scenario.parallel.tp", "must divide num_attention_heads=" + i2s(m.heads) + " (got " + i2s(p.tp_size()) + ")");
  const std::int64_t kv = m.n_kv_heads();
  if (kv % p.tp_size() != 0 && p.tp_size() % kv != 0)
    fail("scenario.parallel.tp", "must divide num_key_value_heads=" + i2s(kv) + " or be a multiple of it (got " + i2s(p.tp_size()) + ")");
  if (m.ffn % p.tp_size() != 0)
    fail("scenario.parallel.tp", "must divide intermediate_size=" + i2s(m.ffn) + " (got " + i2s(p.tp_size()) + ")");
  const std::int64_t stages = std::int64_t{p.pp} * p.virtual_stages;
  // Uneven stages run without interleaving (DeepSpeed PipelineModule partition_uniform;
  // Megatron --decoder-first/last-pipeline-num-layers): BLOOM-176B trained 70 layers on 12
  // stages. Every stage needs a block; the interleaved schedule needs layers divisible by
  // pp x v (megatron/core/transformer/transformer_block.py get_num_layers_to_build).
  if (m.total_layers() < p.pp)
    fail("scenario.parallel.pp", "must not exceed the number of layers=" + i2s(m.total_layers()) + " (got pp=" + i2s(p.pp) + ")");
  if (p.virtual_stages > 1 && m.total_layers() % stages != 0 && !p.account_for_embedding_in_pipeline_split &&
      !p.account_for_loss_in_pipeline_split)
    fail("scenario.parallel.pp", "pp*virtual_stages=" + i2s(stages) + " must divide the number of layers=" +
                                     i2s(m.total_layers()) + " (got pp=" + i2s(p.pp) + ")");
  // Megatron-LM's embedding / loss units of the split: its framework only, and the units
  // must split evenly (get_num_layers_to_build asserts it).
  for (const auto& [on, key] : {std::pair{p.account_for_embedding_in_pipeline_split, "account_for_embedding_in_pipeline_split"},
                                std::pair{p.account_for_loss_in_pipeline_split, "account_for_loss_in_pipeline_split"}}) {
    if (on && !profile_of(s.fw).account_in_pipeline_split)
      fail(std::string("scenario.parallel.") + key,
           "only framework megatron counts the embedding or loss in the pipeline split (got framework " +
               std::string(to_string(s.fw)) + ")");
  }
  // Megatron's uneven first/last stages (TransformerConfig __post_init__): its framework only,
  // pp > 1, no interleaving and no embedding/loss units with them, every stage at least one
  // block, and the other stages splitting the rest evenly.
  for (const auto& [v, key] : {std::pair{p.first_stage_layers, "first_stage_layers"}, std::pair{p.last_stage_layers, "last_stage_layers"}}) {
    if (!v) continue;
    const std::string path = std::string("scenario.parallel.") + key;
    if (!profile_of(s.fw).account_in_pipeline_split)
      fail(path, "only framework megatron sets uneven pipeline stages (got framework " + std::string(to_string(s.fw)) + ")");
    if (p.pp < 2) fail(path, "needs pp > 1 (got pp=" + i2s(p.pp) + ")");
    if (p.virtual_stages > 1) fail(path, "is not modelled with interleaving (got virtual_stages=" + i2s(p.virtual_stages) + ")");
    if (p.account_for_embedding_in_pipeline_split || p.account_for_loss_in_pipeline_split)
      fail(path, "cannot be combined with account_for_embedding/loss_in_pipeline_split (Megatron-LM asserts it)");
    if (*v < 1 || *v > m.total_layers())
      fail(path, "must be between 1 and the number of layers=" + i2s(m.total_layers()) + " (got " + i2s(*v) + ")");
  }
  if (p.pp > 1 && (p.first_stage_layers || p.last_stage_layers)) {
    const std::int64_t rest = m.total_layers() - p.first_stage_layers.value_or(0) - p.last_stage_layers.value_or(0);
    const std::int64_t stages_left = p.pp - (p.first_stage_layers ? 1 : 0) - (p.last_stage_layers ? 1 : 0);
    if (stages_left == 0 ? rest != 0 : (rest < stages_left || rest % stages_left != 0))
      fail("scenario.parallel.pp", "the " + i2s(rest) + " layers left after the first/last stages must split evenly over the other " +
                                       i2s(stages_left) + " stages, at least one each (got pp=" + i2s(p.pp) + ")");
  }
  if (p.pp > 1 && (p.account_for_embedding_in_pipeline_split || p.account_for_loss_in_pipeline_split)) {
    const std::int64_t units = m.total_layers() + (p.account_for_embedding_in_pipeline_split ? 1 : 0) +
                               (p.account_for_loss_in_pipeline_split ? 1 : 0);
    if (units % stages != 0)
      fail("scenario.parallel.pp", "pp*virtual_stages=" + i2s(stages) + " must divide layers + embedding/loss units=" +
                                       i2s(units) + " (Megatron-LM get_num_layers_to_build; got pp=" + i2s(p.pp) + ")");
  }
  if (p.virtual_stages > 1 && p.pp == 1)
    fail("scenario.parallel.virtual_stages", "needs pp > 1 (got virtual_stages=" + i2s(p.virtual_stages) + " with pp=1)");
  const std::int64_t mp = std::int64_t{p.tp_size()} * p.pp * p.cp;
  if (mp > s.num_gpus || s.num_gpus % mp != 0)
    fail("scenario.num_gpus", "must be a multiple of tp*pp*cp=" + i2s(mp) + " (got " + i2s(s.num_gpus) + ")");
  const std::int64_t dp = s.num_gpus / mp;
  if (p.ep > 1) {
    if (!m.is_moe()) fail("scenario.parallel.ep", "needs a mixture-of-experts model (got ep=" + i2s(p.ep) + ")");
    if (m.experts % p.ep != 0)
      fail("scenario.parallel.ep", "must divide num_local_experts=" + i2s(m.experts) + " (got " + i2s(p.ep) + ")");
    if ((dp * p.cp) % p.ep != 0)
      fail("scenario.parallel.ep", "must divide the data-parallel degree dp*cp=" + i2s(dp * p.cp) + " (got " + i2s(p.ep) + ")");
  }
  if (p.cp > 1 && s.seq_len % (2 * p.cp) != 0)
    fail("scenario.seq_len", "must be divisible by 2*cp=" + i2s(2 * p.cp) + " for context parallelism (got " + i2s(s.seq_len) + ")");
  if (p.sp_enabled() && s.seq_len % p.tp_size() != 0)
    fail("scenario.seq_len", "must be divisible by tp=" + i2s(p.tp_size()) + " with sequence parallelism (got " + i2s(s.seq_len) + ")");
  if (p.offload_params != offload::none && p.zero != 3)
    fail("scenario.parallel.offload_params", "needs zero=3 (got zero=" + i2s(p.zero) + ")");
  if (p.offload_optimizer != offload::none && p.zero == 0)
    fail("scenario.parallel.offload_optimizer", "needs zero>=1 (got zero=0)");
}

// Sequence length against the model's positions.
inline void validate_sequence(const architecture& m, const scenario& s) {
  if (m.positions == position_kind::learned && m.max_positions > 0 && !m.is_vit()) {
    const std::int64_t len = s.work == workload::infer ? s.inference.prompt_len + s.inference.gen_len : s.seq_len;
    if (len > m.max_positions)
      fail(s.work == workload::infer ? "scenario.inference" : "scenario.seq_len",
           "exceeds max_position_embeddings=" + i2s(m.max_positions) + " of a learned-position model (got " + i2s(len) + ")");
  }
  // Paged engines refuse a context beyond the model's: vLLM's ModelConfig ("User-specified
  // max_model_len ... is greater than the derived max_model_len"), SGLang and TGI likewise.
  if (s.work == workload::infer && m.max_positions > 0 && profile_of(s.inference.eng).paged_pool) {
    const std::int64_t len = s.inference.prompt_len + s.inference.gen_len;
    if (len > m.max_positions)
      fail("scenario.inference", "prompt_len + gen_len = " + i2s(len) + " exceeds the model's maximum context (max_position_embeddings=" +
                                     i2s(m.max_positions) + "), which " + std::string(to_string(s.inference.eng)) + " refuses");
  }
  if (m.is_vit() && s.seq_len != m.vit_tokens())
    fail("scenario.seq_len", "a ViT's sequence is fixed by image_size/patch_size = " + i2s(m.vit_tokens()) +
                                 " tokens (got " + i2s(s.seq_len) + ")");
}

// The training method: LoRA and PEFT options, freeze, quantized bases.
inline void validate_method(const architecture& m, const scenario& s) {
  const quantization q = base_quantization(s);
  if (has_low_rank_path(s.meth)) {
    if (s.lora.targets == 0 || (s.lora.targets & ~lora_all_linear) != 0)
      fail("scenario.lora.targets", "must name at least one of q, k, v, o, gate, up, down");
    std::int64_t width = INT64_MAX;
    for (int i = 0; i < kLinearKinds; ++i) {
      if ((s.lora.targets & (1u << i)) == 0) continue;
      const linear_shape sh = linear_of(m, static_cast<linear_id>(i));
      if (sh.count == 0)
        fail("scenario.lora.targets", "model has no '" + std::string(kLoraTargetNames[static_cast<std::size_t>(i)].name) + "' projection (plain MLP)");
      width = std::min(width, std::min(sh.in, sh.out));
    }
    require_range(s.lora.rank, 1, width, "scenario.lora.rank");
    if (!(s.lora.alpha > 0) || !std::isfinite(s.lora.alpha))
      fail("scenario.lora.alpha", "must be a positive finite number (got " + detail::num(s.lora.alpha) + ")");
    detail::require_finite(s.lora.dropout, 0, 0.999, "scenario.lora.dropout");
    if ((s.lora.modules_to_save & lora_save_embed) != 0 && m.vocab <= 0)
      fail("scenario.lora.modules_to_save", "model has no token embedding to train (got embed)");
  }
  // PEFT methods beyond LoRA (peft.hpp).
  const std::uint8_t peft_keys = traits_of(s.meth).peft_keys;
  if (peft_keys & peft_key_vera_rank) require_range(s.peft.vera_rank, 1, kMaxModelDim, "scenario.peft.vera_rank");
  if (peft_keys & peft_key_ia3_targets) {
    if (s.peft.ia3_targets == 0 || (s.peft.ia3_targets & ~lora_all_linear) != 0)
      fail("scenario.peft.ia3_targets", "must name at least one of q, k, v, o, gate, up, down");
    for (int i = 0; i < kLinearKinds; ++i)
      if ((s.peft.ia3_targets & (1u << i)) != 0 && linear_of(m, static_cast<linear_id>(i)).count == 0)
        fail("scenario.peft.ia3_targets", "model has no '" + std::string(kLoraTargetNames[static_cast<std::size_t>(i)].name) + "' projection (plain MLP)");
  }
  if (peft_keys & peft_key_virtual_tokens) {
    require_range(s.peft.virtual_tokens, 1, kMaxModelDim, "scenario.peft.virtual_tokens");
    if (m.is_vit()) fail("scenario.method", std::string(to_string(s.meth)) + " needs a text model (got a ViT)");
  }
  if (s.meth == method::freeze) require_range(s.freeze.trainable_layers, 1, m.total_layers(), "scenario.freeze.trainable_layers");
  if (s.meth == method::qlora && !is_quantized(q.weights) && q.weights != dtype::fp8_e4m3)
    fail("scenario.quantization.weights", "qlora needs a quantized base (nf4, fp4, int4, int8) (got " + std::string(to_string(q.weights)) + ")");
  if (s.work == workload::train && (s.meth == method::full || s.meth == method::freeze) && s.quant && is_quantized(s.quant->weights))
    fail("scenario.quantization", std::string("cannot train quantized weights with method ") + std::string(to_string(s.meth)) +
                                      "; use lora/qlora or workload infer (got weights=" + std::string(to_string(s.quant->weights)) + ")");
  if (s.quant) {
    if (s.quant->double_quant && s.quant->weights != dtype::nf4 && s.quant->weights != dtype::fp4)
      fail("scenario.quantization.double_quant", "applies to nf4/fp4 only (got weights=" + std::string(to_string(s.quant->weights)) + ")");
    require_range(s.quant->group_size, 0, 1 << 20, "scenario.quantization.group_size");
  }
}

// Training kernels: a serving run computes no loss and keeps nothing for a backward pass; the
// fused head and loss replaces the other loss paths.
inline void validate_kernels(const scenario& s) {
  if (s.work != workload::train) {
    if (s.fused_linear_loss) fail("scenario.fused_linear_loss", "only applies to workload train (got workload infer)");
    if (s.tiled_mlp) fail("scenario.tiled_mlp", "only applies to workload train (got workload infer)");
  }
  if (s.fused_linear_loss && (s.chunked_loss || s.inplace_loss))
    fail("scenario.fused_linear_loss", std::string("the fused head and loss replace chunked_loss and inplace_loss (got both fused_linear_loss and ") +
                                           (s.chunked_loss ? "chunked_loss" : "inplace_loss") + ")");
}

// The optimizer step.
inline void validate_step(const scenario& s) {
  if (s.optimizer_in_backward && s.grad_accum > 1)
    fail("scenario.optimizer_in_backward", "cannot be combined with gradient accumulation (got grad_accum=" + i2s(s.grad_accum) + ")");
}

// The GPU: precision support and the figures the estimators divide by.
inline void validate_hardware(const scenario& s) {
  if (precision_of(s) == precision::fp8_mixed && !s.gpu.has_fp8())
    fail("scenario.precision", "fp8-mixed needs FP8 tensor cores (sm_89+); " + s.gpu.id +
                                   (s.gpu.cc_major > 0 ? " is sm_" + i2s(s.gpu.sm()) : std::string(" has none")));
  if (s.gpu.id.empty() && !(in_bytes(s.gpu.usable_memory) > 0))
    fail("scenario.gpu", "is required (a gpu_spec, e.g. io::find_gpu(\"a100-80gb\"), the scenario file's default; got none)");
  if (!(in_bytes(s.gpu.usable_memory) > 0))
    fail("scenario.gpu", "has no usable memory (got " + detail::num(in_bytes(s.gpu.usable_memory)) + " bytes)");
  // The estimators divide by these: the GEMM rate the precision runs at and the bandwidth. fp32 is
  // needed only where no tensor rate serves the precision (a bf16 run on a bf16 GPU never reads it).
  require_fp32_rate(s.gpu, precision_of(s), "scenario.gpu");
  if (!(in_byte_per_s(s.gpu.bandwidth) > 0))
    fail("scenario.gpu.bandwidth_gb_s", "must be positive (got " + detail::num(in_gb_per_s(s.gpu.bandwidth)) + ")");
}

// Token count, price, network.
inline void validate_totals(const scenario& s) {
  if (s.tokens) detail::require_finite(*s.tokens, 1, 1e18, "scenario.tokens");
  if (s.price_per_gpu_hour) detail::require_finite(*s.price_per_gpu_hour, 0, 1e6, "scenario.price_per_gpu_hour");
  if (s.cluster.internode_per_gpu)
    detail::require_finite(in_gb_per_s(*s.cluster.internode_per_gpu), 1e-3, 1e6, "scenario.network.internode_gb_s");
}
}  // namespace detail

// The scenario's rules against an architecture that was already validated
// (run::edit re-checks only these).
inline void validate_scenario(const architecture& m, const scenario& s) {
  detail::validate_sizes(s);
  detail::validate_layout(m, s);
  detail::validate_sequence(m, s);
  detail::validate_method(m, s);
  detail::validate_step(s);
  detail::validate_kernels(s);
  detail::validate_hardware(s);
  detail::validate_totals(s);
}

// Every rule: the architecture's, then the scenario's.
inline void validate(const architecture& m, const scenario& s) {
  validate(m, "scenario.model");
  validate_scenario(m, s);
}

}  // namespace gpuplan
