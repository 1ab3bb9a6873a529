// export_megatron.cpp — `torchrun … pretrain_gpt.py` with Megatron-LM's arguments for a
// plan, from the Megatron-LM contract (src/data/export/megatron.json: the parser of
// megatron/training/arguments.py, validate_args, and the GPT model's architecture flags).
#include <algorithm>
#include <cmath>
#include <string>

#include "export_common.hpp"
#include "gpuplan/model.hpp"

namespace gpuplan::io::export_detail {

namespace {

using nlohmann::json;

// Architecture -> flags: each feature of the model the GPT model of Megatron-LM can build,
// or a refusal naming the feature (the contract's "architecture" table: transformer_config.py,
// language_model_embedding.py, gpt_model.py, attention.py, mlp.py).
std::string architecture_flags(const architecture& m, const checker& c) {
  const auto unsupported = [&](const std::string& feature) {
    c.cannot("the architecture of " + m.name + " (" + feature + ")",
             ": Megatron-LM's GPT model has no such option; use --export deepspeed or accelerate-fsdp");
  };
  if (m.kind != model_kind::decoder) unsupported("not decoder-only: pretrain_gpt.py builds decoder-only models");
  if (m.parallel_block) unsupported("attention and MLP in parallel from one norm");
  if (m.embedding_norm) unsupported("a norm after the embeddings");
  if (!m.final_norm) unsupported("no final norm");
  if (m.lm_head_bias) unsupported("a bias on the LM head");
  if (m.positions == position_kind::alibi) unsupported("ALiBi positions");
  if (m.positions == position_kind::relative) unsupported("relative position buckets");
  if (m.position_offset > 0) unsupported("learned positions with an offset");
  if (m.norm == norm_kind::layernorm && !m.norm_bias) unsupported("LayerNorm without a bias");
  if (m.mlp == mlp_kind::gated && m.activation != activation_kind::silu) unsupported("a gated MLP other than SwiGLU");
  if (m.mlp == mlp_kind::plain && m.activation != activation_kind::gelu) unsupported("a plain MLP other than GELU");
  const bool all_bias = m.q_bias && m.out_bias && m.mlp_bias;
  const bool qkv_bias_only = m.q_bias && !m.out_bias && !m.mlp_bias;
  const bool no_bias = !m.q_bias && !m.out_bias && !m.mlp_bias;
  if (!all_bias && !qkv_bias_only && !no_bias) unsupported("biases on some linears only");
  std::string t;
  t += " --num-layers " + num(m.total_layers()) + " --hidden-size " + num(m.hidden) + " --ffn-hidden-size " + num(m.ffn);
  t += " --num-attention-heads " + num(m.heads) + " --kv-channels " + num(m.head_dim > 0 ? m.head_dim : m.hidden / m.heads);
  if (m.kv_heads > 0 && m.kv_heads != m.heads) t += " --group-query-attention --num-query-groups " + num(m.kv_heads);
  if (m.norm == norm_kind::rmsnorm) t += " --normalization RMSNorm";
  if (m.mlp == mlp_kind::gated) t += " --swiglu";
  if (m.positions == position_kind::rotary) t += " --position-embedding-type rope";
  if (m.positions == position_kind::none) t += " --position-embedding-type none";
  if (!all_bias) t += " --disable-bias-linear";
  if (qkv_bias_only) t += " --add-qkv-bias";
  if (!m.tied_embeddings) t += " --untie-embeddings-and-output-weights";
  if (m.experts > 0) {
    t += " --num-experts " + num(m.experts) + " --moe-router-topk " + num(m.experts_per_token);
    if (m.expert_ffn > 0 && m.expert_ffn != m.ffn) t += " --moe-ffn-hidden-size " + num(m.expert_ffn);
    if (m.shared_experts > 0) t += " --moe-shared-expert-intermediate-size " + num(m.shared_experts * (m.expert_ffn > 0 ? m.expert_ffn : m.ffn));
  }
  t += " --attention-dropout " + num(m.dropout) + " --hidden-dropout " + num(m.dropout);  // Megatron's default is 0.1
  return t;
}

// The numerics a config.json carries beside the shapes (rope base, norm epsilon, rope
// scaling): the contract's values for a catalog model, else a note to check them.
std::string numerics_flags(const architecture& m, const json& mc, launch_config& out) {
  const auto it = mc["numerics"].find(m.name);
  if (it == mc["numerics"].end()) {
    out.fill_in.emplace_back("--rotary-base and --norm-epsilon: your checkpoint's rope_theta and norm epsilon (Megatron's defaults 10000 and 1e-5 are used)");
    return "";
  }
  const json& n = *it;
  std::string t;
  if (n.contains("norm_epsilon")) t += " --norm-epsilon " + num(n["norm_epsilon"].get<double>());
  if (m.positions == position_kind::rotary && n.contains("rotary_base"))
    t += " --rotary-base " + num(n["rotary_base"].get<std::int64_t>());
  if (n.contains("rope_scaling_factor")) t += " --use-rope-scaling --rope-scaling-factor " + num(n["rope_scaling_factor"].get<double>());
  if (n.contains("rotary_percent")) t += " --rotary-percent " + num(n["rotary_percent"].get<double>());
  if (n.value("rotary_interleaved", false)) t += " --rotary-interleaved";
  return t;
}

// The parallel layout, batch, recompute and precision (arguments.py; validate_args: the
// world size divides by tp × pp, sequence parallel only with tp > 1, one of the virtual
// pipeline options).
std::string layout_flags(const scenario& s, const layout& l) {
  std::string t;
  t += " --tensor-model-parallel-size " + num(std::int64_t{l.tp});
  t += " --pipeline-model-parallel-size " + num(std::int64_t{l.pp});
  if (l.virtual_stages > 1) t += " --num-virtual-stages-per-pipeline-rank " + num(std::int64_t{l.virtual_stages});
  if (l.sp && l.tp > 1) t += " --sequence-parallel";
  // The embedding / loss as a layer of the pipeline split (megatron/training/arguments.py).
  if (l.pp > 1 && s.parallel.account_for_embedding_in_pipeline_split) t += " --account-for-embedding-in-pipeline-split";
  if (l.pp > 1 && s.parallel.account_for_loss_in_pipeline_split) t += " --account-for-loss-in-pipeline-split";
  if (l.pp > 1 && s.parallel.first_stage_layers) t += " --decoder-first-pipeline-num-layers " + num(*s.parallel.first_stage_layers);
  if (l.pp > 1 && s.parallel.last_stage_layers) t += " --decoder-last-pipeline-num-layers " + num(*s.parallel.last_stage_layers);
  t += " --micro-batch-size " + num(l.micro_batch);
  t += " --global-batch-size " + num(l.micro_batch * l.grad_accum * l.dp());
  if (l.ckpt == checkpointing::selective) t += " --recompute-granularity selective";
  if (l.ckpt == checkpointing::full) t += " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1";
  if (l.zero == 1) t += " --use-distributed-optimizer";
  if (precision_of(s) == precision::bf16_mixed || precision_of(s) == precision::bf16_pure) t += " --bf16";
  if (precision_of(s) == precision::fp16_mixed) t += " --fp16";
  if (precision_of(s) == precision::fp8_mixed) t += " --bf16 --fp8-format hybrid";
  return t;
}

// Sequence, vocabulary, tokenizer, data and schedule: what pretrain_gpt.py needs to start
// (the contract's required_for_run). --padded-vocab-size keeps the plan's vocabulary
// (Megatron pads to a multiple of 128 × tp otherwise) when tp divides it.
std::string run_flags(const resolved_run& run, const layout& l, const checker& c, launch_config& out) {
  const scenario& s = run.settings();
  const architecture& m = run.model();
  std::string t;
  if (m.positions == position_kind::learned && s.seq_len > m.max_positions)
    c.cannot("a sequence of " + num(s.seq_len) + " tokens for " + m.name,
             ": its learned position table has " + num(m.max_positions) + " rows; use --seq " + num(m.max_positions) + " or less");
  t += " --seq-length " + num(s.seq_len);
  // Learned positions: the table is the model's (a longer sequence than it has is refused by validate).
  t += " --max-position-embeddings " + num(m.positions == position_kind::learned ? m.max_positions : std::max(s.seq_len, m.max_positions));
  if (m.vocab % l.tp == 0) t += " --padded-vocab-size " + num(m.vocab);
  t += " --tokenizer-type HuggingFaceTokenizer --tokenizer-model " + launch_model_id(run);
  t += " --data-path $DATA_PATH --split 99,1,0";
  const std::int64_t global_batch = l.micro_batch * l.grad_accum * l.dp();
  const std::int64_t iters =
      s.tokens ? std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(*s.tokens / static_cast<double>(global_batch * s.seq_len))))
               : 1000;
  t += " --train-iters " + num(iters) + " --lr 3e-4 --min-lr 3e-5 --lr-decay-style cosine";
  out.fill_in.emplace_back("DATA_PATH: the prefix of your data preprocessed by tools/preprocess_data.py (or replace --data-path $DATA_PATH --split 99,1,0 with --mock-data)");
  out.fill_in.emplace_back("--lr 3e-4 --min-lr 3e-5: placeholders (the Llama examples' values); set yours");
  if (!s.tokens) out.fill_in.emplace_back("--train-iters 1000: a placeholder (the plan has no token count; --tokens sets it)");
  return t;
}

}  // namespace

launch_config megatron_command(const resolved_run& run, const layout& l, const checker& c) {
  const scenario& s = run.settings();
  require_training(c, s);
  if (s.meth != method::full) c.cannot("method " + std::string(to_string(s.meth)), ": Megatron-LM trains the full model; use --method full, or --export torchtune or axolotl");
  if (l.zero > 1) c.cannot("ZeRO stage " + num(std::int64_t{l.zero}), ": Megatron-LM's distributed optimizer is ZeRO-1; use --export deepspeed or accelerate-fsdp");
  if (l.offload_optimizer != offload::none || l.offload_params != offload::none)
    c.cannot("CPU/NVMe offload", ": Megatron-LM keeps the model state on the GPU; use --export deepspeed");
  const json& mc = contract("megatron");
  launch_config out;
  out.checked_against = checked_against("megatron");
  const std::string arch = architecture_flags(run.model(), c);
  const int nodes = nodes_of(c, s, l.gpus, "torchrun");
  // validate_args refuses tp (or cp) > 1 unless CUDA_DEVICE_MAX_CONNECTIONS=1 (GPUs before Blackwell; harmless after).
  std::string t = l.tp > 1 ? "CUDA_DEVICE_MAX_CONNECTIONS=1 " : "";
  t += "torchrun --nnodes " + num(std::int64_t{nodes}) + " --nproc_per_node " + num(std::int64_t{l.gpus / nodes});
  if (nodes > 1) {
    t += " --rdzv_id gpuplan --rdzv_backend c10d --rdzv_endpoint $MASTER_ADDR:29500";
    out.fill_in.emplace_back("MASTER_ADDR: the first node's address; run the same command on every node");
  }
  t += " pretrain_gpt.py" + layout_flags(s, l) + arch + numerics_flags(run.model(), mc, out) + run_flags(run, l, c, out);
  out.text = t + "\n";
  return out;
}

}  // namespace gpuplan::io::export_detail
