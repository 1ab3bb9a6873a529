// The phases of the memory model, each on its own, against hand derivations:
// 1 resident_states, 2 stage_activations, 3 step_transients, 4 step_phases /
// peak_over_phases, 5 allocator_and_context, and the serving pipeline. Every
// expected figure is derived in the comment next to it from the architecture's
// shapes (config.json) and the formulas of docs/memory-model.md; the tolerances
// are relative, 1e-12 unless stated (the arithmetic is exact in doubles for
// these integer-valued products; the tolerance only absorbs the order of sums).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <memory>

#include "gpuplan/io/catalog.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/run.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_memory_phases {

using namespace gpuplan;
namespace mem = gpuplan::detail::mem;

namespace {

constexpr double kEps = 1e-12;

// llama-2-7b (config.json): h 4096, 32 layers, 32 heads (MHA), SwiGLU 11008, vocab 32000, untied.
// Ψ = 6,738,415,616; one block 202,383,360 = 202,375,168 of linears + 2 RMSNorms of 4096.
architecture llama2_7b() {
  architecture a;
  a.family = "llama";
  a.hidden = 4096; a.layers = 32; a.heads = 32; a.kv_heads = 32; a.ffn = 11008; a.vocab = 32000;
  a.mlp = mlp_kind::gated; a.activation = activation_kind::silu; a.norm = norm_kind::rmsnorm; a.norm_bias = false;
  a.positions = position_kind::rotary; a.tied_embeddings = false;
  return a;
}
constexpr double P7 = 6738415616.0;
constexpr double L7 = 32000.0 * 4096;  // largest module: the embedding (= the LM head)
constexpr double T = 2048;             // tokens of one micro-batch (1 x 2048)
constexpr double VT = 32000.0 * T;     // logits of one micro-batch

// llama-2-13b: h 5120, 40 layers, 40 heads, SwiGLU 13824, vocab 32000; Ψ = 13,015,864,320.
architecture llama2_13b() {
  architecture a = llama2_7b();
  a.hidden = 5120; a.layers = 40; a.heads = 40; a.kv_heads = 40; a.ffn = 13824;
  return a;
}

gpu_spec a100_80() {
  gpu_spec g;
  g.id = "a100-80gb";
  g.usable_memory = mib(81920);
  g.memory = g.usable_memory;
  g.cc_major = 8; g.cc_minor = 0;
  g.fp32 = tflop_per_s(1);  // rates are not read by the memory model; validation needs them positive
  g.bandwidth = gb_per_s(1000);
  return g;
}

scenario train_7b(method m, precision p) {
  scenario s;
  s.meth = m; s.prec = p; s.opt = optimizer::adamw; s.gpu = a100_80();
  s.micro_batch = 1; s.seq_len = 2048; s.attn = attention::flash;
  s.ckpt = checkpointing::none;  // explicit: the framework's default would checkpoint LoRA
  return s;
}

// One stage of one validated run, with the inputs every phase takes.
struct stage_view {
  run r;
  mem::facts f;
  mem::stage_params sp;
  mem::stage_trainables t;
  stage_view(const architecture& a, const scenario& s, int stage = 0)
      : r(std::make_shared<const architecture>(a), s),
        f(mem::facts_with_acts(r.model(), r.settings())),
        sp(mem::params_of_stage(r.model(), f, r.settings(), stage)),
        t(mem::trainables_of_stage(r.model(), r.settings(), f, sp)) {}
  [[nodiscard]] mem::model_states states() const { return mem::resident_states(r.model(), r.settings(), f, sp, t); }
  [[nodiscard]] mem::activation_plan acts(int stage = 0) const {
    return mem::stage_activations(r.model(), r.settings(), f, sp, stage);
  }
  [[nodiscard]] mem::transients trans() const { return mem::step_transients(r.model(), r.settings(), f, sp, t); }
};

}  // namespace

TEST_CASE("memory phases: the llama-2-7b fixture has the published parameter counts") {
  const parameter_breakdown p = count_parameters(llama2_7b());
  CHECK(static_cast<double>(p.total) == P7);
  CHECK(p.per_layer == 202383360);
  CHECK(static_cast<double>(p.largest_layer) == L7);
}

// ---------------------------------------------------------------------------
// Phase 1: resident model states.

TEST_CASE("memory phases 1: a bf16-mixed full fine-tune keeps 16 bytes/param before ZeRO") {
  // ZeRO paper §3.1: 2Ψ bf16 weights + 4Ψ fp32 master + 2Ψ bf16 grads + 8Ψ Adam moments.
  const auto s = stage_view(llama2_7b(), train_7b(method::full, precision::bf16_mixed)).states();
  CHECK(s.weights == doctest::Approx(2 * P7).epsilon(kEps));
  CHECK(s.master == doctest::Approx(4 * P7).epsilon(kEps));
  CHECK(s.gradients == doctest::Approx(2 * P7).epsilon(kEps));
  CHECK(s.optimizer == doctest::Approx(8 * P7).epsilon(kEps));
  CHECK(s.paged == 0);
  CHECK(s.host == 0);
}

TEST_CASE("memory phases 1: ZeRO-2 and ZeRO-3 follow DeepSpeed's estimators term by term (N = 8)") {
  scenario z = train_7b(method::full, precision::bf16_mixed);
  z.num_gpus = 8; z.parallel.zero = 2;
  // estimate_zero2_model_states_mem_needs: 4Ψ + 16Ψ/N = 2Ψ weights + (2Ψ grads + 4Ψ/N fp32 grad
  // partition) + (8Ψ moments + 4Ψ master)/N; the master partition is reported in `optimizer`.
  const auto z2 = stage_view(llama2_7b(), z).states();
  CHECK(z2.weights == doctest::Approx(2 * P7).epsilon(kEps));
  CHECK(z2.master == 0);
  CHECK(z2.gradients == doctest::Approx(2 * P7 + 4 * P7 / 8).epsilon(kEps));
  CHECK(z2.optimizer == doctest::Approx(12 * P7 / 8).epsilon(kEps));
  // estimate_zero3_model_states_mem_needs: 4·largest_layer + 18Ψ/N = (2Ψ/N + 2L gathered)
  // + (2L unsharded gradient + 4Ψ/N fp32 shard) + 12Ψ/N.
  z.parallel.zero = 3;
  const auto z3 = stage_view(llama2_7b(), z).states();
  CHECK(z3.weights == doctest::Approx(2 * P7 / 8 + 2 * L7).epsilon(kEps));
  CHECK(z3.gradients == doctest::Approx(2 * L7 + 4 * P7 / 8).epsilon(kEps));
  CHECK(z3.optimizer == doctest::Approx(12 * P7 / 8).epsilon(kEps));
  CHECK(z3.weights + z3.gradients + z3.optimizer == doctest::Approx(4 * L7 + 18 * P7 / 8).epsilon(kEps));
  // bf16-pure (FSDP-style, no master): shards only, 2Ψ/N + 2Ψ/N + 4Ψ/N (bf16 moments).
  z.prec = precision::bf16_pure;
  const auto pure = stage_view(llama2_7b(), z).states();
  CHECK(pure.weights == doctest::Approx(2 * P7 / 8).epsilon(kEps));
  CHECK(pure.gradients == doctest::Approx(2 * P7 / 8).epsilon(kEps));
  CHECK(pure.optimizer == doctest::Approx(4 * P7 / 8).epsilon(kEps));
}

TEST_CASE("memory phases 1: paged state is outside the allocator; optimizer offload moves it to the host") {
  scenario s = train_7b(method::full, precision::bf16_pure);
  s.opt = optimizer::paged_adamw_8bit;
  // bitsandbytes blockwise 8-bit: 2 moments x (1 + 4/256) bytes per parameter, all paged.
  const auto paged = stage_view(llama2_7b(), s).states();
  CHECK(paged.optimizer == 0);
  CHECK(paged.paged == doctest::Approx(2 * (1 + 4.0 / 256) * P7).epsilon(kEps));
  // ZeRO-3 + ZeRO-Offload over 8 GPUs of one node: the host holds, per node, 8 x (12Ψ/8
  // master + moments + 4Ψ/8 fp32 gradient shard) = 16Ψ; the GPU keeps the 2L gradient.
  scenario o = train_7b(method::full, precision::bf16_mixed);
  o.num_gpus = 8; o.parallel.zero = 3; o.parallel.offload_optimizer = offload::cpu;
  const auto off = stage_view(llama2_7b(), o).states();
  CHECK(off.optimizer == 0);
  CHECK(off.paged == 0);
  CHECK(off.gradients == doctest::Approx(2 * L7).epsilon(kEps));
  CHECK(off.host == doctest::Approx(16 * P7).epsilon(kEps));
}

TEST_CASE("memory phases 1: LoRA and QLoRA states") {
  // PEFT, r 8 on q and v: 32 x 8 x (4096 + 4096) x 2 = 4,194,304 adapter parameters.
  const double A = 4194304;
  const auto lora = stage_view(llama2_7b(), train_7b(method::lora, precision::bf16_mixed)).states();
  CHECK(lora.weights == doctest::Approx(2 * P7 + 2 * A).epsilon(kEps));
  CHECK(lora.master == doctest::Approx(4 * A).epsilon(kEps));
  CHECK(lora.gradients == doctest::Approx(2 * A).epsilon(kEps));
  CHECK(lora.optimizer == doctest::Approx(8 * A).epsilon(kEps));
  // QLoRA: the 32 x 202,375,168 = 6,476,005,376 block-linear parameters in NF4 + double
  // quantization, the other 262,410,240 (embedding, head, norms) in bf16, adapters in bf16.
  const double linear = 32.0 * 202375168, other = P7 - linear;
  CHECK(other == 262410240.0);
  const quantization nf4{.weights = dtype::nf4, .double_quant = true, .group_size = 0};
  const double nf4_bytes = bits_per_element(nf4, 4096) / 8;
  CHECK(nf4_bytes == doctest::Approx(4.127 / 8).epsilon(0.001));  // QLoRA paper: 4.127 bits per parameter
  scenario q = train_7b(method::qlora, precision::bf16_mixed);
  q.fw = framework::torchtune;  // torchao NF4: the rest stays bf16
  CHECK(stage_view(llama2_7b(), q).states().weights == doctest::Approx(linear * nf4_bytes + 2 * other + 2 * A).epsilon(kEps));
  // hf: PEFT's prepare_model_for_kbit_training casts the non-quantized 262,410,240 to fp32.
  q.fw = framework::hf;
  CHECK(stage_view(llama2_7b(), q).states().weights == doctest::Approx(linear * nf4_bytes + 4 * other + 2 * A).epsilon(kEps));
}

// ---------------------------------------------------------------------------
// The trainable set per stage and run.hpp's count cannot drift apart.

TEST_CASE("memory phases: per-stage trainable parameters sum to trainable_parameters (tp 1, pp 1/2/4)") {
  struct pick { const char* model; method meth; std::int64_t freeze_layers; };
  const pick picks[] = {
      {"llama-2-7b", method::full, 0},  {"llama-2-7b", method::lora, 0},  {"llama-2-7b", method::freeze, 3},
      {"llama-2-7b", method::freeze, 20}, {"llama-3.2-3b", method::lora, 0}, {"llama-3.2-3b", method::freeze, 9},
      {"t5-small", method::lora, 0},    {"t5-small", method::freeze, 8},  {"mixtral-8x7b", method::full, 0},
      {"mixtral-8x7b", method::lora, 0}, {"gpt2", method::freeze, 5},
  };
  for (const pick& p : picks) {
    const architecture& a = io::find_model(p.model);
    for (int pp : {1, 2, 4}) {
      scenario s;
      s.meth = p.meth; s.gpu = a100_80(); s.num_gpus = pp; s.parallel.pp = pp; s.seq_len = 512;
      // every linear the model has (T5 and GPT-2 have no gate projection)
      s.lora.rank = 16; s.lora.targets = a.mlp == mlp_kind::gated ? lora_all_linear : lora_all_linear & ~lora_gate;
      s.freeze.trainable_layers = p.freeze_layers;
      const run r(a, s);
      const mem::facts f = mem::facts_with_acts(a, r.settings());
      double sum = 0;
      for (int st = 0; st < pp; ++st) sum += mem::trainable_on_stage(a, r.settings(), f, mem::params_of_stage(a, f, r.settings(), st));
      CAPTURE(p.model); CAPTURE(static_cast<int>(p.meth)); CAPTURE(pp);
      CHECK(sum == doctest::Approx(static_cast<double>(trainable_parameters(r))).epsilon(kEps));
    }
  }
  // A full fine-tune of a tied LM head trains the head's own copy on a separate last stage
  // (Megatron-LM share_embeddings_and_output_weights): llama-3.2-3b, 128256 x 3072 more.
  const architecture& tied = io::find_model("llama-3.2-3b");
  REQUIRE(tied.tied_embeddings);
  for (int pp : {1, 2, 4}) {
    scenario s;
    s.meth = method::full; s.gpu = a100_80(); s.num_gpus = pp; s.parallel.pp = pp; s.seq_len = 512;
    const run r(tied, s);
    const mem::facts f = mem::facts_with_acts(tied, r.settings());
    double sum = 0;
    for (int st = 0; st < pp; ++st) sum += mem::trainable_on_stage(tied, r.settings(), f, mem::params_of_stage(tied, f, r.settings(), st));
    const double copy = pp > 1 ? 128256.0 * 3072 : 0.0;
    CAPTURE(pp);
    CHECK(sum == doctest::Approx(static_cast<double>(trainable_parameters(r)) + copy).epsilon(kEps));
  }
}

// ---------------------------------------------------------------------------
// Phase 2: the activation plan.

TEST_CASE("memory phases 2: activation plan of llama-2-7b, bf16-mixed, 1 x 2048 tokens, flash") {
  // One block without checkpointing, bytes per token: 2 RMSNorms x (fp32 upcast 4h +
  // bf16 normalised 2h + bf16 output 2h + 8) = 65,552; attention q, k, v, output 2 x 4 x 4096
  // = 32,768; fp32 logsumexp 4 x 32 = 128; SwiGLU gate, up, act, product 4 x 11008 x 2
  // = 88,064. Total 186,512 B/token, 381,976,576 B per block.
  const double block = 186512.0 * T;
  // Edges: int64 token ids 8 B/token on the first stage, the final RMSNorm (8h + 8) on the last.
  const double edges = 8 * T + (8 * 4096.0 + 8) * T;
  scenario s = train_7b(method::full, precision::bf16_mixed);
  SUBCASE("full checkpointing keeps one bf16 boundary tensor per block") {
    s.ckpt = checkpointing::full;
    const auto p = stage_view(llama2_7b(), s).acts();
    CHECK(p.kept_per_block == doctest::Approx(2 * 4096 * T).epsilon(kEps));  // e·h per token
    CHECK(p.stored == doctest::Approx(32 * 2 * 4096 * T + edges).epsilon(kEps));
    CHECK(p.recomputed == doctest::Approx(block - 2 * 4096 * T).epsilon(kEps));
    CHECK(p.in_flight == 1);
    CHECK(p.host == 0);
  }
  SUBCASE("selective keeps the block input, the attention output and every second matmul output") {
    // input 2h + attention output 2q + (q, v, gate, down of q,k,v,o,gate,up,down) x 2 B
    // = 8192 + 8192 + 2 x (4096 + 4096 + 11008 + 4096) = 62,976 B/token.
    s.ckpt = checkpointing::selective;
    const auto p = stage_view(llama2_7b(), s).acts();
    CHECK(p.kept_per_block == doctest::Approx(62976 * T).epsilon(kEps));
    CHECK(p.stored == doctest::Approx(32 * 62976 * T + edges).epsilon(kEps));
    CHECK(p.recomputed == doctest::Approx(block - 62976 * T).epsilon(kEps));
  }
  SUBCASE("no checkpointing stores every block, recomputes nothing") {
    const auto p = stage_view(llama2_7b(), s).acts();
    CHECK(p.kept_per_block == doctest::Approx(block).epsilon(kEps));
    CHECK(p.stored == doctest::Approx(32 * block + edges).epsilon(kEps));
    CHECK(p.recomputed == 0);
  }
  SUBCASE("activation offload keeps two blocks' worth on the GPU, the rest on the host") {
    s.ckpt = checkpointing::full; s.activation_offload = true;
    const auto p = stage_view(llama2_7b(), s).acts();
    CHECK(p.stored == doctest::Approx(2 * 2 * 4096 * T).epsilon(kEps));
    CHECK(p.host == doctest::Approx(32 * 2 * 4096 * T + edges - 2 * 2 * 4096 * T).epsilon(kEps));
  }
}

TEST_CASE("memory phases 2: TiledMLP keeps one sequence shard of the MLP's intermediates and gradients") {
  // 16,384 tokens: ceil(16384 / 4096) = 4 shards (DeepSpeed ulysses_sp.py TiledMLP, num_shards
  // = ceil(seqlen / hidden)). Per token: the block 186,512 B of which the SwiGLU intermediates
  // 88,064 (test above); TiledMLP saves none of them and recomputes one shard, 88,064 / 4 = 22,016.
  constexpr double T16 = 16384;
  const double block = 186512.0, mlp = 88064.0, shard = mlp / 4;
  const double edges = 8 * T16 + (8 * 4096.0 + 8) * T16;
  scenario s = train_7b(method::full, precision::bf16_mixed);
  s.seq_len = 16384;
  s.tiled_mlp = true;
  SUBCASE("no checkpointing: the blocks store no MLP intermediates; backward holds one shard") {
    const auto p = stage_view(llama2_7b(), s).acts();
    CHECK(p.stored == doctest::Approx(32 * (block - mlp) * T16 + edges).epsilon(kEps));
    CHECK(p.recomputed == doctest::Approx(shard * T16).epsilon(kEps));
  }
  SUBCASE("full checkpointing: the recomputed block holds one shard of its MLP") {
    s.ckpt = checkpointing::full;
    const auto p = stage_view(llama2_7b(), s).acts();
    CHECK(p.stored == doctest::Approx(32 * 2 * 4096 * T16 + edges).epsilon(kEps));
    CHECK(p.recomputed == doctest::Approx((block - mlp - 2 * 4096 + shard) * T16).epsilon(kEps));
  }
  SUBCASE("selective: the MLP's matmul outputs are not kept (its forward runs under no_grad)") {
    // input 2h + attention output 2q + (q, v of q,k,v,o) x 2 B = 8192 + 8192 + 16384 = 32,768 B/token.
    s.ckpt = checkpointing::selective;
    const auto p = stage_view(llama2_7b(), s).acts();
    CHECK(p.kept_per_block == doctest::Approx(32768 * T16).epsilon(kEps));
    CHECK(p.recomputed == doctest::Approx((block - mlp - 32768 + shard) * T16).epsilon(kEps));
  }
  SUBCASE("the backward block's gradients: one shard of the three MLP-wide ones, the residual's whole") {
    // e (3 f / 4 + 2 h) per token = 2 x (8256 + 8192).
    CHECK(stage_view(llama2_7b(), s).trans().backward_block == doctest::Approx(2 * (3 * 11008.0 / 4 + 2 * 4096) * T16).epsilon(kEps));
  }
}

TEST_CASE("memory phases 2: fused norm and SwiGLU kernels (Liger) keep less than eager PyTorch") {
  // Per token without checkpointing: 2 fused RMSNorms x (input 2h + output 2h + 8 B stats) =
  // 32,784 (eager 65,552: no fp32 upcast, no normalised copy); attention 32,768 + 128 as eager;
  // SwiGLU gate, up and the product kept by down, 3 x 11008 x 2 = 66,048 (eager 4f). 131,728 B.
  scenario s = train_7b(method::full, precision::bf16_mixed);
  s.fused_kernels = true;
  const stage_view v(llama2_7b(), s);
  CHECK(v.acts().kept_per_block == doctest::Approx(131728.0 * T).epsilon(kEps));
  // Liger's SwiGLU backward writes the gate's and up's gradients into their saved outputs: one
  // MLP-wide gradient (the product's) besides the residual's 2h: e (f + 2h) per token.
  CHECK(v.trans().backward_block == doctest::Approx(2 * (11008.0 + 2 * 4096) * T).epsilon(kEps));
  // Under torch.compile the compiled rules apply instead.
  s.compile = true;
  const stage_view c(llama2_7b(), s);
  scenario compiled = train_7b(method::full, precision::bf16_mixed);
  compiled.compile = true;
  CHECK(c.acts().kept_per_block == doctest::Approx(stage_view(llama2_7b(), compiled).acts().kept_per_block).epsilon(kEps));
}

TEST_CASE("memory phases 2: 1F1B keeps min(pp - i, micro-batches) in flight; interleaving adds (pp-1)/(pp·v) on stage 0") {
  scenario s = train_7b(method::full, precision::bf16_mixed);
  s.num_gpus = 4; s.parallel.pp = 4; s.grad_accum = 8; s.ckpt = checkpointing::full;
  for (int st = 0; st < 4; ++st) {
    const auto p = stage_view(llama2_7b(), s, st).acts(st);
    CAPTURE(st);
    CHECK(p.in_flight == 4 - st);
    // 8 blocks per stage, each keeping its boundary tensor per in-flight micro-batch (+ edges).
    const double edge = st == 0 ? 8 * T : st == 3 ? (8 * 4096.0 + 8) * T : 0;
    CHECK(p.stored == doctest::Approx((8 * 2 * 4096 * T + edge) * (4 - st)).epsilon(kEps));
  }
  s.parallel.virtual_stages = 2;
  CHECK(stage_view(llama2_7b(), s, 0).acts(0).in_flight == doctest::Approx(4 * (1 + 3.0 / 8)).epsilon(kEps));
  CHECK(stage_view(llama2_7b(), s, 1).acts(1).in_flight == 3);
  s.grad_accum = 2;  // fewer micro-batches than stages
  CHECK(stage_view(llama2_7b(), s, 0).acts(0).in_flight == doctest::Approx(2 * (1 + 3.0 / 8)).epsilon(kEps));
}

// ---------------------------------------------------------------------------
// Phase 3: transients.

TEST_CASE("memory phases 3: loss working set, V·T = 32000 x 2048 logits") {
  scenario s = train_7b(method::full, precision::bf16_mixed);
  // Eager: forward bf16 logits + fp32 copy + fp32 log_softmax (2 + 8) B; backward 3 fp32 tensors.
  auto x = stage_view(llama2_7b(), s).trans();
  CHECK(x.loss_forward == doctest::Approx(10 * VT).epsilon(kEps));
  CHECK(x.loss_backward == doctest::Approx(12 * VT).epsilon(kEps));
  // Compiled: the bf16 logits, gradient written into the donated buffer.
  s.compile = true;
  x = stage_view(llama2_7b(), s).trans();
  CHECK(x.loss_forward == doctest::Approx(2 * VT).epsilon(kEps));
  CHECK(x.loss_backward == doctest::Approx(2 * VT).epsilon(kEps));
  // Chunked (8 chunks), eager: all bf16 chunks + one chunk's fp32 working set.
  s.compile = false; s.chunked_loss = true;
  x = stage_view(llama2_7b(), s).trans();
  CHECK(x.loss_forward == doctest::Approx(2 * VT + 8 * VT / 8).epsilon(kEps));
  CHECK(x.loss_backward == doctest::Approx(2 * VT + 12 * VT / 8).epsilon(kEps));
  // Fused head and loss (Liger FLCE, ALST; scenario fused_linear_loss): no logits tensor, the
  // head's input gradient e·h and an fp32 statistic per token: (2 x 4096 + 4) x 2048.
  s.chunked_loss = false; s.fused_linear_loss = true;
  x = stage_view(llama2_7b(), s).trans();
  CHECK(x.loss_forward == doctest::Approx((2 * 4096.0 + 4) * T).epsilon(kEps));
  CHECK(x.loss_backward == doctest::Approx((2 * 4096.0 + 4) * T).epsilon(kEps));
  // fp32: the logits are already fp32, forward 8 B (copy + log_softmax).
  s.fused_linear_loss = false; s.prec = precision::fp32;
  x = stage_view(llama2_7b(), s).trans();
  CHECK(x.loss_forward == doctest::Approx(8 * VT).epsilon(kEps));
  // Only the last stage computes the loss.
  scenario p = train_7b(method::full, precision::bf16_mixed);
  p.num_gpus = 2; p.parallel.pp = 2;
  CHECK(stage_view(llama2_7b(), p, 0).trans().loss_backward == 0);
  CHECK(stage_view(llama2_7b(), p, 1).trans().loss_backward == doctest::Approx(12 * VT).epsilon(kEps));
}

TEST_CASE("memory phases 3: backward block, collectives and optimizer temporaries") {
  scenario s = train_7b(method::full, precision::bf16_mixed);
  // Backward of one block: T·e·(3f + 2h) = 2048 x 2 x (33,024 + 8,192).
  CHECK(stage_view(llama2_7b(), s).trans().backward_block == doctest::Approx(T * 2 * (3 * 11008 + 2 * 4096)).epsilon(kEps));
  // Eager adds the score gradients T·s·a·(4 + 2).
  s.attn = attention::eager;
  CHECK(stage_view(llama2_7b(), s).trans().backward_block ==
        doctest::Approx(T * 2 * (3 * 11008 + 2 * 4096) + T * 2048 * 32 * 6).epsilon(kEps));
  s.attn = attention::flash;
  // Optimizer step: one fp32 temporary of the largest tensor (the embedding) for AdamW,
  // three for Adafactor, none for SGD or when the step runs in backward.
  CHECK(stage_view(llama2_7b(), s).trans().optimizer_step == doctest::Approx(4 * L7).epsilon(kEps));
  s.opt = optimizer::adafactor;
  CHECK(stage_view(llama2_7b(), s).trans().optimizer_step == doctest::Approx(12 * L7).epsilon(kEps));
  s.opt = optimizer::sgd;
  CHECK(stage_view(llama2_7b(), s).trans().optimizer_step == 0);
  s.opt = optimizer::adamw; s.optimizer_in_backward = true;
  CHECK(stage_view(llama2_7b(), s).trans().optimizer_step == 0);
  s.optimizer_in_backward = false;
  // ZeRO-2 over 8 GPUs: DeepSpeed's reduce bucket of min(Ψ, 5e8) bf16 gradients.
  s.num_gpus = 8; s.parallel.zero = 2;
  CHECK(stage_view(llama2_7b(), s).trans().collective == doctest::Approx(2 * 5e8).epsilon(kEps));
  s.meth = method::lora;  // 4,194,304 adapter parameters < 5e8
  CHECK(stage_view(llama2_7b(), s).trans().collective == doctest::Approx(2 * 4194304.0).epsilon(kEps));
  // ZeRO-3: two bf16 blocks gathered (202,383,360 params each) > embedding + one block.
  s.meth = method::full; s.parallel.zero = 3;
  const auto z3 = stage_view(llama2_7b(), s).trans();
  CHECK(z3.collective == doctest::Approx(2 * 2 * 202383360.0).epsilon(kEps));
  CHECK(z3.reduce_backward == 0);  // with a master copy the unsharded gradient is a model state
  s.prec = precision::bf16_pure;   // FSDP-style: it is a backward transient
  CHECK(stage_view(llama2_7b(), s).trans().reduce_backward == doctest::Approx(2 * L7).epsilon(kEps));
}

// ---------------------------------------------------------------------------
// Phase 4: the step's moments and the peak.

TEST_CASE("memory phases 4: LoRA r8 q,v on llama-2-7b peaks in the loss backward") {
  // bf16-pure, 1 GPU, grad_accum 1: gradients appear in backward (not persistent).
  // W = 2Ψ + 2A = 13,485,219,840; O = 2 x 2 B x A = 16,777,216; G = 2A = 8,388,608.
  // Activations per block, B/token, with the base frozen (memory_terms.hpp frozen_linears):
  // 2 RMSNorms keep only their fp32 input (2 x (4h + 8) = 32,784); q, k, v (expanded),
  // the flash output and logsumexp (2 x 4h x 4 + 4 x 32 = 32,896); the MLP's gate, up and
  // SiLU outputs (3 x 2 x 11008 = 66,048; the product is kept by a trainable down only);
  // the fp32 adapters: each casts x to fp32 (2 x 4h = 32,768) and keeps its r-wide output
  // (2 x 8 x 4 = 64). Sum 164,560.
  // Edges: the token ids (8) and the frozen final norm's fp32 input (4h + 8).
  const double A = 4194304, W = 2 * P7 + 2 * A, O = 4 * A, G = 2 * A;
  const double block = 164560.0 * T, edges = 8 * T + (4 * 4096.0 + 8) * T;
  scenario s = train_7b(method::lora, precision::bf16_pure);
  const stage_view v(llama2_7b(), s);
  const auto st = v.states();
  const auto ph = mem::step_phases(st, v.acts(), v.trans(), mem::gradients_by_phase(v.r.settings(), v.f, v.t, st));
  const double stored = 32 * block + edges;
  CHECK(ph[0].total() == doctest::Approx(W + O + stored + 10 * VT).epsilon(kEps));
  CHECK(ph[1].total() == doctest::Approx(W + O + stored + 12 * VT).epsilon(kEps));
  CHECK(ph[2].total() == doctest::Approx(W + O + stored + T * 2 * (3 * 11008 + 2 * 4096)).epsilon(kEps));
  CHECK(ph[3].total() == doctest::Approx(W + G + O + block + T * 2 * (3 * 11008 + 2 * 4096)).epsilon(kEps));
  CHECK(ph[4].total() == doctest::Approx(W + G + O + 4 * 8 * 4096.0).epsilon(kEps));  // fp32 copy of one r x 4096 adapter
  const auto peak = mem::peak_over_phases(ph);
  CHECK(peak.phase == mem::step_phase::loss_backward);
  CHECK(peak.terms.grads == 0);  // LoRA's head has no gradient
  // The public estimate reports the same moment and figure: W + O + stored + 12 V·T =
  // 13,485,219,840 + 16,777,216 + 10,818,191,360 + 786,432,000 = 25,106,620,416 B.
  const memory_breakdown m = estimate_memory(v.r);
  CHECK(m.peak_phase == memory_breakdown::phase::loss_backward);
  CHECK(in_bytes(m.peak_allocated) == doctest::Approx(25106620416.0).epsilon(kEps));
  // Full checkpointing + chunked loss: the loss shrinks to 3.5 V·T and one recomputed
  // block (164,560 - 2h B/token) + its backward temporaries set the peak at backward start.
  s.ckpt = checkpointing::full; s.chunked_loss = true;
  const memory_breakdown c = estimate_memory(llama2_7b(), s);
  CHECK(c.peak_phase == memory_breakdown::phase::backward_start);
  const double kept = 2 * 4096 * T;
  CHECK(in_bytes(c.peak_allocated) ==
        doctest::Approx(W + O + (32 * kept + edges) + (block - kept) + T * 2 * (3 * 11008 + 2 * 4096)).epsilon(kEps));
}

TEST_CASE("memory phases 4: the loss's own backward and the head's are two moments") {
  // bf16-pure full fine-tune, one GPU, eager loss: the loss's backward holds its 12 V·T (saved
  // log-probs, nll's dense fp32 gradient, log_softmax's fp32 gradient); the head's backward reads
  // the 2 V·T logits' gradient and adds the head's 2 L7 gradient. 12 V·T > 2 V·T + 2 L7, so the
  // phase is the loss's own moment, without the head's gradient.
  scenario s = train_7b(method::full, precision::bf16_pure);
  const stage_view v(llama2_7b(), s);
  const auto x = v.trans();
  CHECK(x.loss_backward == doctest::Approx(12 * VT).epsilon(kEps));
  CHECK(x.head_backward == doctest::Approx(2 * VT).epsilon(kEps));
  const auto g = mem::gradients_by_phase(v.r.settings(), v.f, v.t, v.states());
  CHECK(g.head == doctest::Approx(2 * L7).epsilon(kEps));
  const auto ph = mem::step_phases(v.states(), v.acts(), x, g);
  CHECK(ph[1].grads == 0);
  CHECK(ph[1].total() == doctest::Approx(ph[0].total() - 10 * VT + 12 * VT).epsilon(kEps));
  // PyTorch FSDP over 8 GPUs, in-place loss (2 V·T both ways): the head's moment is the larger,
  // with its gradient, its unsharded copy awaiting the reduce-scatter and the root unit plus the
  // last block (root 262,148,096 and block 202,383,360 parameters, bf16); at the loss the root alone.
  s.prec = precision::bf16_mixed; s.fw = framework::fsdp; s.num_gpus = 8; s.parallel.zero = 3; s.inplace_loss = true;
  const stage_view z(llama2_7b(), s);
  const auto xz = z.trans();
  CHECK(xz.collective_at_loss == doctest::Approx(2 * 262148096.0).epsilon(kEps));
  CHECK(xz.collective_at_head == doctest::Approx(2 * (262148096.0 + 202383360.0)).epsilon(kEps));
  const auto gz = mem::gradients_by_phase(z.r.settings(), z.f, z.t, z.states());
  const auto pz = mem::step_phases(z.states(), z.acts(), xz, gz);
  CHECK(pz[0].transient == doctest::Approx(2 * VT + 2 * 262148096.0).epsilon(kEps));
  CHECK(pz[1].grads == doctest::Approx(gz.head).epsilon(kEps));
  CHECK(pz[1].transient == doctest::Approx(2 * VT + 2 * (262148096.0 + 202383360.0) + xz.reduce_backward).epsilon(kEps));
  CHECK(pz[2].transient == doctest::Approx(xz.backward_block + 2 * (262148096.0 + 2 * 202383360.0) + xz.reduce_backward).epsilon(kEps));
}

TEST_CASE("memory phases 4: persistent gradients and the optimizer step") {
  // bf16-mixed full fine-tune with grad_accum 2: gradients persist through the forward.
  scenario s = train_7b(method::full, precision::bf16_mixed);
  s.grad_accum = 2; s.ckpt = checkpointing::full; s.compile = true; s.chunked_loss = true;
  const stage_view v(llama2_7b(), s);
  const auto st = v.states();
  const auto g = mem::gradients_by_phase(v.r.settings(), v.f, v.t, st);
  CHECK(g.persistent == doctest::Approx(2 * P7).epsilon(kEps));
  CHECK(g.at_step == doctest::Approx(2 * P7).epsilon(kEps));
  const auto ph = mem::step_phases(st, v.acts(), v.trans(), g);
  for (const auto& p : ph) CHECK(p.grads == doctest::Approx(2 * P7).epsilon(kEps));
  // Optimizer step: 16Ψ of states + one fp32 copy of the embedding, no activations.
  CHECK(ph[4].acts == 0);
  CHECK(ph[4].total() == doctest::Approx(16 * P7 + 4 * L7).epsilon(kEps));
  // optimizer_in_backward: one tensor's gradient at a time, no step phase of its own.
  s.optimizer_in_backward = true; s.grad_accum = 1;  // validation: no accumulation with a step in backward
  const stage_view b(llama2_7b(), s);
  const auto gb = mem::gradients_by_phase(b.r.settings(), b.f, b.t, b.states());
  CHECK(gb.persistent == 0);
  CHECK(gb.all == doctest::Approx(2 * L7).epsilon(kEps));
  CHECK(gb.at_step == 0);
  // One GPU, no accumulation: PyTorch 2's zero_grad(set_to_none=True) frees the gradients
  // between steps; keep_gradients (PyTorch 1.x's set_to_none=False) keeps all 2Ψ through the forward.
  s.optimizer_in_backward = false;
  const stage_view freed(llama2_7b(), s);
  CHECK(mem::gradients_by_phase(freed.r.settings(), freed.f, freed.t, freed.states()).persistent == 0);
  s.keep_gradients = true;
  const stage_view kept(llama2_7b(), s);
  const auto gk = mem::gradients_by_phase(kept.r.settings(), kept.f, kept.t, kept.states());
  CHECK(gk.persistent == doctest::Approx(2 * P7).epsilon(kEps));
  const auto pk = mem::step_phases(kept.states(), kept.acts(), kept.trans(), gk);
  CHECK(pk[0].grads == doctest::Approx(2 * P7).epsilon(kEps));
}

// ---------------------------------------------------------------------------
// Phase 5: allocator and context.

TEST_CASE("memory phases 5: reserved = 1.10 x allocated + 32 MiB; device = reserved + 1343 MiB (+ 512 MiB NCCL)") {
  const double alloc = 10 * kGiB;
  const auto one = mem::allocator_and_context(alloc, 0, 1);
  CHECK(one.allocated == alloc);
  CHECK(one.reserved == doctest::Approx(1.10 * alloc + 32 * kMiB).epsilon(kEps));
  CHECK(one.overhead == doctest::Approx((1343 + 32) * kMiB).epsilon(kEps));
  CHECK(one.device == doctest::Approx(1.10 * alloc + (32 + 1343) * kMiB).epsilon(kEps));
  const auto eight = mem::allocator_and_context(alloc, 3 * kGiB, 8);
  CHECK(eight.overhead == doctest::Approx((1343 + 512 + 32) * kMiB).epsilon(kEps));
  CHECK(eight.device == doctest::Approx(1.10 * alloc + (32 + 1343 + 512) * kMiB + 3 * kGiB).epsilon(kEps));
  // The public breakdown applies it to peak_allocated.
  const memory_breakdown m = estimate_memory(llama2_7b(), train_7b(method::lora, precision::bf16_pure));
  CHECK(in_bytes(m.peak_reserved) == doctest::Approx(1.10 * in_bytes(m.peak_allocated) + 32 * kMiB).epsilon(kEps));
  CHECK(in_bytes(m.device) == doctest::Approx(in_bytes(m.peak_reserved) + 1343 * kMiB).epsilon(kEps));
  CHECK(m.fits == (in_bytes(m.device) <= 81920 * kMiB));
}

// ---------------------------------------------------------------------------
// Serving: weights -> KV cache -> prefill -> allocator.

TEST_CASE("memory phases: serving llama-2-13b bf16, batch 8 x (1024 + 1024) tokens, flash") {
  scenario s;
  s.work = workload::infer; s.prec = precision::bf16_pure; s.gpu = a100_80(); s.attn = attention::flash;
  s.inference = {.batch = 8, .prompt_len = 1024, .gen_len = 1024, .kv_cache_dtype = dtype::bf16};
  const stage_view v(llama2_13b(), s);
  // KV: 2 x 40 layers x 40 heads x 128 x 2 B = 819,200 B/token; x 2048 tokens; x 8 sequences.
  const double per_token = mem::kv_per_token(v.r.model(), v.r.settings());
  CHECK(per_token == 819200.0);
  const auto kv = mem::kv_cache_of_stage(v.r.model(), v.r.settings(), v.sp, per_token);
  CHECK(kv.per_sequence == 819200.0 * 2048);
  CHECK(kv.total == 819200.0 * 2048 * 8);
  // Prefill of 8192 tokens: bf16 x (2h + max(q + k + v + out = 20,480, 3f = 41,472)), + fp32
  // last-position logits 8 x 32000 x 4.
  const double prefill = 8192.0 * 2 * (2 * 5120 + 3 * 13824) + 8 * 32000 * 4;
  CHECK(mem::prefill_working_set(v.r.model(), v.r.settings(), v.f, v.sp) == doctest::Approx(prefill).epsilon(kEps));
  const double W = 2 * 13015864320.0;
  CHECK(mem::serving_weights(v.r.model(), v.r.settings(), v.f, v.sp) == doctest::Approx(W).epsilon(kEps));
  // Sequences beside one sequence's prefill (1024 x 2 x 51,712 + 32000 x 4 = 106,034,176 B), whatever
  // batch was typed: free = 81920 MiB - 1375 MiB - 1.1 x (W + 106,034,176) = 55,706,424,422 B;
  // one sequence 1.1 x 1,677,721,600 = 1,845,493,760 B -> 30.2 -> 30 sequences.
  const memory_breakdown m = estimate_memory(v.r);
  CHECK(m.max_concurrent_sequences == 30);
  scenario s1 = s;
  s1.inference.batch = 1;
  CHECK(estimate_memory(llama2_13b(), s1).max_concurrent_sequences == 30);
  CHECK(in_bytes(m.peak_allocated) == doctest::Approx(W + 819200.0 * 2048 * 8 + prefill).epsilon(kEps));
  CHECK(m.peak_phase == memory_breakdown::phase::inference);
}

}  // namespace unit_memory_phases
