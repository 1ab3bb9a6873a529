// PEFT methods beyond LoRA (peft.hpp): exact trainable counts against PEFT's own
// print_trainable_parameters (the MetaMathQA benchmark's result files,
// num_trainable_params, llama-3.2-3b), each extra memory term against a hand
// derivation, and the scenario file's keys. llama-3.2-3b: h 3072, kv 1024 (8 kv heads
// x 128), q_dim 3072, ffn 8192, 28 layers, vocab 128256, tied, RMSNorm.
#include <doctest/doctest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "gpuplan/flops.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/scenario_json.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/peft.hpp"
#include "gpuplan/run.hpp"
#include "gpuplan/timing.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_peft {

using namespace gpuplan;
using nlohmann::json;
namespace mem = gpuplan::detail::mem;

namespace {

constexpr double kEps = 1e-12;

// The benchmark's harness: bf16 weights, batch 4, max_seq_length 768 (default_training_params.json).
scenario bench(method m) {
  scenario s;
  s.meth = m;
  s.prec = precision::bf16_pure;
  s.micro_batch = 4;
  s.seq_len = 768;
  s.gpu = io::find_gpu("l40s");
  s.lora.rank = 32;
  s.lora.alpha = 64;
  s.lora.targets = lora_q | lora_v;
  s.peft.virtual_tokens = 200;
  return s;
}

const architecture& llama32_3b() { return io::find_model("llama-3.2-3b"); }

std::int64_t trainable(method m) { return trainable_parameters(llama32_3b(), bench(m)); }

mem::facts facts_for(const scenario& s) {
  const run r(llama32_3b(), s);  // validates
  return mem::facts_with_acts(r.model(), r.settings());
}

}  // namespace

TEST_CASE("peft: trainable counts equal PEFT's print_trainable_parameters on llama-3.2-3b") {
  CHECK(trainable(method::lora) == 9175040);            // lora--llama-3.2-3B-rank32: 28·32·(3072+3072 + 3072+1024)
  CHECK(trainable(method::dora) == 9289728);            // + magnitude 28·(3072+1024)
  CHECK(trainable(method::ia3) == 286720);              // 28·(1024 + 1024 + 8192): k, v out; down in
  CHECK(trainable(method::prompt_tuning) == 614400);    // 200·3072
  CHECK(trainable(method::prefix_tuning) == 11468800);  // 200·28·2·1024 (GQA token_dim = kv)
  scenario v = bench(method::vera);
  CHECK(trainable_parameters(llama32_3b(), v) == 129024);  // 28·(256+3072 + 256+1024)
  CHECK(trainable(method::ln_tuning) == 175104);        // (2·28 + 1)·3072
}

TEST_CASE("peft: the stages' trainables sum to trainable_parameters (pp = 1 and pp = 2)") {
  for (method m : {method::dora, method::ia3, method::prompt_tuning, method::prefix_tuning, method::vera, method::ln_tuning}) {
    for (int pp : {1, 2}) {
      scenario s = bench(m);
      s.parallel.pp = pp;
      s.num_gpus = pp;
      const run r(llama32_3b(), s);
      const mem::facts f = mem::facts_with_acts(r.model(), r.settings());
      double sum = 0;
      for (int st = 0; st < pp; ++st)
        sum += mem::trainables_of_stage(r.model(), r.settings(), f, mem::params_of_stage(r.model(), f, r.settings(), st)).params;
      CAPTURE(to_string(m));
      CAPTURE(pp);
      CHECK(sum == doctest::Approx(static_cast<double>(trainable_parameters(r.model(), r.settings()))).epsilon(kEps));
    }
  }
}

TEST_CASE("peft: each method's saved activations per token per block, by hand") {
  // Every PEFT method freezes the base: the MLP product is kept only by a trainable down_proj
  // (f·e = 8192 x 2 fewer bytes per token than full fine-tuning; memory_terms.hpp frozen_linears).
  const double full = facts_for(bench(method::full)).full_enc.tp - 8192.0 * 2;
  const double lora = facts_for(bench(method::lora)).full_enc.tp;
  // DoRA beyond LoRA: (2 bf16 base output + 4 fp32 lora output)·out, q (3072) and v (1024).
  CHECK(facts_for(bench(method::dora)).full_enc.tp - lora == doctest::Approx(6.0 * (3072 + 1024)).epsilon(kEps));
  // IA3: 2·out for k and v (bf16 base outputs), 4·in for down (fp32 input copy): 2·2·1024 + 4·8192.
  CHECK(facts_for(bench(method::ia3)).full_enc.tp - full == doctest::Approx(36864.0).epsilon(kEps));
  // VeRA r256: fp32 r-wide and out-wide products, 4·(256+3072) + 4·(256+1024).
  CHECK(facts_for(bench(method::vera)).full_enc.tp - full == doctest::Approx(18432.0).epsilon(kEps));
  // LN tuning: the norms' weight multiplies keep x_normed (bf16, 2·h; norm_parts) for each of
  // the 2 norms; the other PEFT methods' frozen norms keep only their input.
  CHECK(facts_for(bench(method::ln_tuning)).full_enc.tp - full == doctest::Approx(0.0).epsilon(kEps));
  CHECK(facts_for(bench(method::ln_tuning)).full_enc.seq - facts_for(bench(method::ia3)).full_enc.seq ==
        doctest::Approx(2 * 2.0 * 3072).epsilon(kEps));
  // Prefix P=200: per layer and sequence the bf16 cache prefix (2·kv) and the saved K,V rows at
  // q_dim (2·3072), spread over S = 768 tokens: 200·2·(2048 + 6144)/768.
  const mem::facts pre = facts_for(bench(method::prefix_tuning));
  CHECK(pre.full_enc.tp - full == doctest::Approx(200.0 * 2 * 8192 / 768).epsilon(kEps));
  CHECK(pre.T == 4.0 * 768);  // no more tokens
  CHECK(pre.s == 968.0);      // keys per query S+P
  // Prompt tuning: every sequence is S+P positions long, logits included.
  const mem::facts pro = facts_for(bench(method::prompt_tuning));
  CHECK(pro.T == 4.0 * 968);
  CHECK(pro.s == 968.0);
  CHECK(pro.full_enc.tp == doctest::Approx(full).epsilon(kEps));
}

TEST_CASE("peft: VeRA's frozen projections and DoRA's weight-norm working set") {
  // vera_A 256×3072 + vera_B 3072×256 (max out over q, v = 3072), fp32.
  CHECK(peft_frozen_buffer_bytes(llama32_3b(), bench(method::vera)) == 4.0 * 256 * (3072 + 3072));
  CHECK(peft_frozen_buffer_bytes(llama32_3b(), bench(method::lora)) == 0.0);
  // DoRA q_proj (3072×3072): max(eye in² + BA in·out, BA + W copy + W+sBA = 3·in·out)·4 B.
  const peft_block b = peft_of_block(llama32_3b(), bench(method::dora), 2, 768, false);
  CHECK(b.transient == 4.0 * 3 * 3072 * 3072);
  // It is at a peak moment only when backward recomputes the block.
  scenario ck = bench(method::dora), ck_lora = bench(method::lora);
  ck.ckpt = ck_lora.ckpt = checkpointing::full;
  const run rd(llama32_3b(), ck), rl(llama32_3b(), ck_lora);
  const mem::facts fd = mem::facts_with_acts(rd.model(), rd.settings()), fl = mem::facts_with_acts(rl.model(), rl.settings());
  const auto xd = mem::step_transients(rd.model(), rd.settings(), fd, mem::params_of_stage(rd.model(), fd, rd.settings(), 0),
                                       mem::trainables_of_stage(rd.model(), rd.settings(), fd,
                                                                mem::params_of_stage(rd.model(), fd, rd.settings(), 0)));
  const auto xl = mem::step_transients(rl.model(), rl.settings(), fl, mem::params_of_stage(rl.model(), fl, rl.settings(), 0),
                                       mem::trainables_of_stage(rl.model(), rl.settings(), fl,
                                                                mem::params_of_stage(rl.model(), fl, rl.settings(), 0)));
  CHECK(xd.backward_block - xl.backward_block == doctest::Approx(4.0 * 3 * 3072 * 3072).epsilon(kEps));
}

TEST_CASE("peft: prompt tuning runs the model on S+P positions, VeRA's path has its own rank") {
  scenario p = bench(method::prompt_tuning);
  scenario longer = bench(method::ia3);  // no adapter GEMMs, base frozen: the same FLOPs at S+P
  longer.seq_len = 768 + 200;
  CHECK(in_flops(training_flops(llama32_3b(), p).model) == doctest::Approx(in_flops(training_flops(llama32_3b(), longer).model)).epsilon(kEps));
  // VeRA: 2·r·(in+out) per token per targeted linear at r = 256, as LoRA at rank 256.
  scenario v = bench(method::vera), l = bench(method::lora);
  l.lora.rank = 256;
  CHECK(detail::block_adapter_flops(llama32_3b(), v, 1, false) == detail::block_adapter_flops(llama32_3b(), l, 1, false));
  CHECK(detail::block_adapter_flops(llama32_3b(), v, 1, false) == 2.0 * 256 * (3072 + 3072 + 3072 + 1024));
  // Prefix tuning: + 4·B·S·P·q_dim attention-core FLOPs per layer (forward), nothing masked.
  scenario pre = bench(method::prefix_tuning), none = bench(method::ia3);
  pre.seq_len = none.seq_len = 210;
  CHECK(in_flops(training_flops(llama32_3b(), pre).pass.attention_core) -
            in_flops(training_flops(llama32_3b(), none).pass.attention_core) ==
        doctest::Approx(28.0 * 4 * 4 * 210 * 200 * 3072).epsilon(kEps));
  CHECK(estimate_time(run(llama32_3b(), pre)).tokens_per_second < estimate_time(run(llama32_3b(), none)).tokens_per_second);
  // Throughput counts real tokens only (1e-3: the optimizer steps over different trainable counts).
  const auto tp = estimate_time(run(llama32_3b(), p));
  const auto tl = estimate_time(run(llama32_3b(), longer));
  CHECK(tp.tokens_per_second == doctest::Approx(tl.tokens_per_second * 768.0 / 968.0).epsilon(1e-3));
}

TEST_CASE("peft: the scenario file reads and writes each method's keys") {
  const json base = {{"model", "llama-3.2-3b"}, {"gpu", "l40s"}, {"seq_len", 768}};
  const json cases[] = {
      {{"method", "dora"}, {"lora", {{"rank", 32}, {"alpha", 64}, {"targets", {"q", "v"}}}}},
      {{"method", "ia3"}, {"peft", {{"ia3_targets", {"k", "v", "down"}}}}},
      {{"method", "prompt-tuning"}, {"peft", {{"virtual_tokens", 200}}}},
      {{"method", "prefix-tuning"}, {"peft", {{"virtual_tokens", 50}}}},
      {{"method", "vera"}, {"lora", {{"targets", {"q", "v"}}}}, {"peft", {{"vera_rank", 128}}}},
      {{"method", "ln-tuning"}},
  };
  for (const json& c : cases) {
    json j = base;
    j.update(c);
    CAPTURE(j.dump());
    const auto a = io::read_scenario(j);
    const auto b = io::read_scenario(io::write_scenario(a));
    CHECK(b.settings() == a.settings());
    CHECK(io::write_scenario(b) == io::write_scenario(a));
  }
  json d = base;
  d.update({{"method", "prefix-tuning"}, {"peft", {{"virtual_tokens", 50}}}});
  CHECK(io::read_scenario(d).settings().peft.virtual_tokens == 50);
  json v = base;
  v.update({{"method", "vera"}});
  CHECK(io::read_scenario(v).settings().peft.vera_rank == 256);  // VeraConfig default
  json i = base;
  i.update({{"method", "ia3"}});
  CHECK(io::read_scenario(i).settings().peft.ia3_targets == (lora_k | lora_v | lora_down));
  // Rejections (the full set is in tests/data/bad_scenarios.jsonl).
  json bad = base;
  bad.update({{"method", "lora"}, {"peft", {{"vera_rank", 8}}}});
  CHECK_THROWS_WITH(io::read_scenario(bad), "scenario.peft.vera_rank: only applies to method vera (got method lora)");
  bad = base;
  bad.update({{"method", "prompt-tuning"}, {"peft", {{"virtual_tokens", 0}}}});
  CHECK_THROWS_WITH(io::read_scenario(bad), "scenario.peft.virtual_tokens: must be at least 1 (got 0)");
}

TEST_CASE("peft: modules_to_save trains full copies of the embedding and the head") {
  // Qwen-7B dims (QW-E2048): h 4096, vocab 151936, untied: each copy is 151936·4096.
  const json qwen = {{"model_type", "qwen2"}, {"hidden_size", 4096}, {"intermediate_size", 11008},
                     {"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"num_key_value_heads", 32},
                     {"vocab_size", 151936}, {"max_position_embeddings", 32768}, {"tie_word_embeddings", false}};
  json j = {{"model", qwen}, {"gpu", "a100-80gb"}, {"seq_len", 2048}, {"method", "lora"},
            {"lora", {{"rank", 64}, {"alpha", 16}, {"targets", "all-linear"}}}};
  const std::int64_t lora = trainable_parameters(io::read_scenario(j).model(), io::read_scenario(j).settings());
  j["lora"]["modules_to_save"] = {"embed", "head"};
  const auto r = io::read_scenario(j);
  CHECK(trainable_parameters(r.model(), r.settings()) == lora + 2 * std::int64_t{151936} * 4096);
  CHECK(io::read_scenario(io::write_scenario(r)).settings() == r.settings());
  CHECK(io::write_scenario(r)["lora"]["modules_to_save"] == json({"embed", "head"}));
  // Pipeline stages: the embedding copy on the first, the head copy on the last.
  scenario s = r.settings();
  s.parallel.pp = 2;
  s.num_gpus = 2;
  const run r2(r.model(), s);
  const mem::facts f = mem::facts_with_acts(r2.model(), r2.settings());
  const auto s0 = mem::trainables_of_stage(r2.model(), s, f, mem::params_of_stage(r2.model(), f, s, 0));
  const auto s1 = mem::trainables_of_stage(r2.model(), s, f, mem::params_of_stage(r2.model(), f, s, 1));
  CHECK(s0.params + s1.params == doctest::Approx(static_cast<double>(trainable_parameters(r2.model(), s))).epsilon(kEps));
  CHECK(s0.largest == 151936.0 * 4096);
  CHECK(s1.head == 151936.0 * 4096);
  CHECK(s0.head == 0.0);
  // A tied head is the embedding matrix: one copy (llama-3.2-3b, vocab 128256).
  scenario t = bench(method::lora);
  t.lora.modules_to_save = lora_save_embed | lora_save_head;
  CHECK(trainable_parameters(llama32_3b(), t) == 9175040 + std::int64_t{128256} * 3072);
  // Rejections.
  json bad = j;
  bad["lora"]["modules_to_save"] = {"wte"};
  CHECK_THROWS_WITH(io::read_scenario(bad), "scenario.lora.modules_to_save[0]: must be one of embed, head (got \"wte\")");
  bad["lora"]["modules_to_save"] = "head";
  CHECK_THROWS_WITH(io::read_scenario(bad), "scenario.lora.modules_to_save: must be a list of embed, head (got \"head\")");
}

}  // namespace unit_peft

namespace unit_peft_traits {
using namespace gpuplan;

TEST_CASE("method traits: one row per method, beside its name, and the named predicates read it") {
  for (const auto& row : kMethodTraits) {
    CAPTURE(to_string(row.id));
    CHECK(&traits_of(row.id) == &row);
    CHECK(is_peft(row.id) == row.peft);
    CHECK(is_lora_family(row.id) == row.lora_family);
    CHECK(has_low_rank_path(row.id) == row.low_rank_path);
    // Every LoRA-family method runs the low-rank path; only PEFT methods have adapters.
    if (row.lora_family) CHECK(row.low_rank_path);
    if (row.low_rank_path || row.peft_recipe || row.quantized_base) CHECK(row.peft);
    // A quantized base by default is exactly what base_quantization gives without a quantization key.
    scenario s;
    s.meth = row.id;
    CHECK(is_quantized(base_quantization(s).weights) == row.quantized_base);
  }
  CHECK_FALSE(is_peft(method::full));
  CHECK_FALSE(is_peft(method::freeze));
  CHECK(has_low_rank_path(method::vera));
  CHECK_FALSE(is_lora_family(method::vera));
}
}  // namespace unit_peft_traits
