// FLOP counts cross-checked against closed forms from the literature. Each
// expected value is derived in the comment next to it; tolerances are stated.
#include <doctest/doctest.h>

#include "gpuplan/flops.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_flops {

using namespace gpuplan;

namespace {
// Megatron GPT (Narayanan et al. 2021): ffn = 4h, learned positions, tied head.
architecture gpt(std::int64_t h, std::int64_t L, std::int64_t heads, std::int64_t V) {
  architecture a;
  a.hidden = h; a.layers = L; a.heads = heads; a.ffn = 4 * h; a.vocab = V; a.max_positions = 2048;
  a.q_bias = a.out_bias = a.mlp_bias = true;
  return a;
}
scenario run_of(std::int64_t mb, std::int64_t s, checkpointing ck, attention at) {
  scenario r;
  r.micro_batch = mb; r.seq_len = s; r.ckpt = ck; r.attn = at; r.num_gpus = 1;
  return r;
}
architecture llama2_7b() {
  architecture a;
  a.hidden = 4096; a.layers = 32; a.heads = 32; a.ffn = 11008; a.vocab = 32000;
  a.mlp = mlp_kind::gated; a.norm = norm_kind::rmsnorm; a.norm_bias = false;
  a.positions = position_kind::rotary; a.tied_embeddings = false;
  return a;
}
}  // namespace

TEST_CASE("flops: Narayanan 2021 eq. 3 with full recompute (eager attention) is exact") {
  // eq. 3: F = 96·B·s·l·h²·(1 + s/6h + V/16lh). Our count adds nothing else for GPT
  // (biases and norms are not matmuls), so it must agree to rounding.
  const architecture a = gpt(2304, 24, 24, 51200);
  const scenario r = run_of(16, 2048, checkpointing::full, attention::eager);
  const double B = 16, s = 2048, l = 24, h = 2304, V = 51200;
  const double eq3 = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  CHECK(in_flops(training_flops(a, r).hardware) == doctest::Approx(eq3).epsilon(1e-12));
}

TEST_CASE("flops: Korthikanti 2022 model FLOPs 72·B·s·l·h²(1 + s/6h + V/12lh)") {
  const architecture a = gpt(6144, 48, 64, 51200);
  const scenario r = run_of(4, 2048, checkpointing::selective, attention::eager);
  const double B = 4, s = 2048, l = 48, h = 6144, V = 51200;
  const double model = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  const flop_breakdown f = training_flops(a, r);
  CHECK(in_flops(f.model) == doctest::Approx(model).epsilon(1e-12));
  // Selective recompute adds the attention core forward once: 4·B·s²·h per layer.
  CHECK(in_flops(f.recompute) == doctest::Approx(4 * B * s * s * h * l).epsilon(1e-12));
}

TEST_CASE("flops: 6·N·D for llama-2-7b within the attention and embedding terms") {
  // 6·N·D counts every parameter (incl. the 131M-parameter input embedding, which
  // is a look-up) and no attention core: 6ND - 6·V·h·D + 3·(4·s·h·l/2)·D (flash causal).
  const architecture a = llama2_7b();
  scenario r = run_of(1, 4096, checkpointing::none, attention::flash);
  const double N = static_cast<double>(count_parameters(a).total);  // 6,738,415,616
  const double D = 4096;
  const double norms = static_cast<double>(count_parameters(a).norms);
  const double expected = 6 * (N - 32000.0 * 4096 - norms) * D + 3 * (4 * 4096.0 * 4096 * 32 / 2) * D;
  CHECK(in_flops(training_flops(a, r).model) == doctest::Approx(expected).epsilon(1e-12));
  // And 6ND itself is within 10% (attention adds ~8%, the embedding look-up -2%).
  CHECK(in_flops(training_flops(a, r).model) == doctest::Approx(6 * N * D).epsilon(0.10));
}

TEST_CASE("flops: causal halving only for flash kernels; flash backward recomputes the scores") {
  const architecture a = llama2_7b();
  const scenario fl = run_of(1, 4096, checkpointing::none, attention::flash);
  const scenario ea = run_of(1, 4096, checkpointing::none, attention::eager);
  const double full_core = 4.0 * 4096 * 4096 * 4096 * 32;  // 4·b·s²·h·l
  CHECK(in_flops(forward_pass_flops(a, ea, 1, 4096).attention_core) == doctest::Approx(full_core));
  CHECK(in_flops(forward_pass_flops(a, fl, 1, 4096).attention_core) == doctest::Approx(full_core / 2));
  CHECK(in_flops(training_flops(a, fl).flash_recompute) == doctest::Approx(full_core / 4));
  CHECK(in_flops(training_flops(a, ea).flash_recompute) == 0);
}

TEST_CASE("flops: LoRA — frozen base needs the input-grad matmul only; adapters r·(in+out)") {
  const architecture a = llama2_7b();
  scenario full = run_of(1, 2048, checkpointing::none, attention::eager);
  scenario lora = full;
  lora.meth = method::lora;
  lora.lora.rank = 8;
  lora.lora.targets = lora_q | lora_v;
  const flop_breakdown ff = training_flops(a, full), fl = training_flops(a, lora);
  const forward_flops p = fl.pass;
  const double T = 2048, r = 8;
  // q and v are 4096x4096: 2·T·r·(4096+4096) each, 32 layers.
  CHECK(in_flops(p.adapters) == doctest::Approx(32 * 2 * 2 * T * r * 8192));
  // Backward: linears and head 1x (input grad), attention core 2x, adapters 2x.
  const double expected_bwd = in_flops(p.block_linear) + in_flops(p.head) + 2 * in_flops(p.attention_core) +
                              2 * in_flops(p.adapters);
  CHECK(in_flops(fl.backward) == doctest::Approx(expected_bwd));
  // Full fine-tuning backward is 2x every matmul.
  CHECK(in_flops(ff.backward) == doctest::Approx(2 * in_flops(ff.forward)));
}

TEST_CASE("flops: GQA and MoE top-k count only the active projections and experts") {
  architecture a = llama2_7b();
  a.kv_heads = 8;  // k,v project to 8·128 = 1024
  const scenario r = run_of(1, 1, checkpointing::none, attention::eager);
  const double per_layer = 2.0 * (4096.0 * 4096 * 2 + 4096.0 * 1024 * 2 + 3 * 4096.0 * 11008);
  CHECK(in_flops(forward_pass_flops(a, r, 1, 1).block_linear) == doctest::Approx(32 * per_layer));
  a.experts = 8; a.experts_per_token = 2; a.expert_ffn = 14336;  // Mixtral-like
  const double moe = 2.0 * (4096.0 * 4096 * 2 + 4096.0 * 1024 * 2 + 2 * 3 * 4096.0 * 14336 + 4096.0 * 8);
  CHECK(in_flops(forward_pass_flops(a, r, 1, 1).block_linear) == doctest::Approx(32 * moe));
}

TEST_CASE("flops: full recompute re-runs the block forward, not the head") {
  const architecture a = gpt(1024, 4, 16, 50000);
  const scenario r = run_of(2, 512, checkpointing::full, attention::eager);
  const flop_breakdown f = training_flops(a, r);
  CHECK(in_flops(f.recompute) == doctest::Approx(in_flops(f.pass.block_linear) + in_flops(f.pass.attention_core)));
  CHECK(in_flops(f.hardware) == doctest::Approx(in_flops(f.model) + in_flops(f.recompute)));
}

TEST_CASE("flops: encoder-decoder counts cross attention; freeze stops backward at the frozen blocks") {
  architecture t5;
  t5.kind = model_kind::encoder_decoder;
  t5.hidden = 768; t5.layers = 12; t5.decoder_layers = 12; t5.heads = 12; t5.ffn = 3072; t5.vocab = 32128;
  const scenario r = run_of(1, 512, checkpointing::none, attention::eager);
  const double T = 512, h = 768;
  // Encoder block 4h² + 2·h·ffn; decoder block adds cross q,k,v,o (another 4h²).
  const double lin = 2 * T * (12 * (4 * h * h + 2 * h * 3072) + 12 * (8 * h * h + 2 * h * 3072));
  CHECK(in_flops(forward_pass_flops(t5, r, 1, 512).block_linear) == doctest::Approx(lin));
  const double core = 4 * T * T * h * (12 + 12 * 2);  // enc self, dec self + cross (eager: no halving)
  CHECK(in_flops(forward_pass_flops(t5, r, 1, 512).attention_core) == doctest::Approx(core));

  const architecture g = gpt(1024, 8, 16, 50000);
  scenario fr = run_of(1, 512, checkpointing::none, attention::eager);
  fr.meth = method::freeze;
  fr.freeze.trainable_layers = 2;
  const flop_breakdown f = training_flops(g, fr);
  const forward_flops p = f.pass;
  const double expected = 0.25 * (2 * in_flops(p.block_linear) + 2 * in_flops(p.attention_core)) + 2 * in_flops(p.head);
  CHECK(in_flops(f.backward) == doctest::Approx(expected));
}

}  // namespace unit_flops
