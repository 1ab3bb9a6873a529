// framework.hpp — the run the user will launch: each framework's recipe defaults,
// what it keeps on the GPU and how fast its kernels are.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuplan/framework.hpp"
#include "gpuplan/framework_rules.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/io/scenario_json.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/timing.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_framework {

using namespace gpuplan;
using nlohmann::json;

TEST_CASE("framework: one profile per framework, found by id") {
  for (const auto& e : kFrameworkNames) CHECK(profile_of(e.value).id == e.value);
  CHECK(to_string(framework::deepspeed) == "deepspeed");
  CHECK(from_string<framework>("unsloth") == framework::unsloth);
}

TEST_CASE("framework: checkpointing defaults to the framework's recipe; an explicit value wins") {
  const architecture& m = io::find_model("llama-2-7b");
  const gpu_spec g = io::find_gpu("a100-80gb");
  // PEFT/TRL QLoRA and LoRA recipes checkpoint; a plain Trainer full fine-tune does not.
  CHECK(run(m, scenario{.meth = method::qlora, .gpu = g}).settings().ckpt == checkpointing::full);
  CHECK(run(m, scenario{.meth = method::lora, .gpu = g}).settings().ckpt == checkpointing::full);
  CHECK(run(m, scenario{.meth = method::full, .gpu = g}).settings().ckpt == checkpointing::none);
  // torchtune's full fine-tuning recipes checkpoint; Megatron recomputes selectively.
  CHECK(run(m, scenario{.fw = framework::torchtune, .gpu = g}).settings().ckpt == checkpointing::full);
  CHECK(run(m, scenario{.fw = framework::megatron, .gpu = g}).settings().ckpt == checkpointing::selective);
  CHECK(run(m, scenario{.meth = method::qlora, .ckpt = checkpointing::none, .gpu = g}).settings().ckpt == checkpointing::none);
}

TEST_CASE("framework: the reader's defaults — fp16 AMP without bf16 tensor cores, SP with TP in Megatron") {
  const auto t4 = io::read_scenario(json{{"model", "llama-2-7b"}, {"gpu", "t4"}, {"method", "qlora"}});
  CHECK(precision_of(t4.settings()) == precision::fp16_mixed);
  const auto explicit_bf16 = io::read_scenario(json{{"model", "llama-2-7b"}, {"gpu", "t4"}, {"precision", "bf16-mixed"}, {"method", "qlora"}});
  CHECK(precision_of(explicit_bf16.settings()) == precision::bf16_mixed);
  const json tp8 = {{"model", "llama-2-70b"}, {"gpu", "h100-sxm"}, {"num_gpus", 8}, {"parallel", {{"tp", 8}}}};
  CHECK_FALSE(io::read_scenario(tp8).settings().parallel.sp_enabled());  // an HF user's TP has no SP
  json mega = tp8;
  mega["framework"] = "megatron";
  CHECK(io::read_scenario(mega).settings().parallel.sp_enabled());
  mega["parallel"]["sp"] = false;
  CHECK_FALSE(io::read_scenario(mega).settings().parallel.sp_enabled());
  // The writer records the framework and the resolved checkpointing.
  const json w = io::write_scenario(io::read_scenario(mega));
  CHECK(w["framework"] == "megatron");
  CHECK(w["checkpointing"] == "selective");
}

TEST_CASE("framework: the common free-notebook recipes fit with the hf defaults") {
  // 7B QLoRA on a 16 GB T4 at seq 512 and 1024; 13B QLoRA on a 24 GB card at seq 2048.
  for (std::int64_t seq : {512, 1024}) {
    CAPTURE(seq);
    const auto r = io::read_scenario(json{{"model", "llama-2-7b"}, {"gpu", "t4"}, {"method", "qlora"}, {"seq_len", seq}});
    CHECK(estimate_memory(r.run).fits);
  }
  const auto r = io::read_scenario(json{{"model", "llama-2-13b"}, {"gpu", "rtx-4090"}, {"method", "qlora"}, {"seq_len", 2048}});
  CHECK(estimate_memory(r.run).fits);
}

TEST_CASE("framework: FSDP keeps 16 bytes per parameter of sharded model states, DeepSpeed 18 (+ gathered layer)") {
  const architecture& m = io::find_model("llama-2-7b");
  scenario s{.prec = precision::bf16_mixed, .seq_len = 512, .fw = framework::fsdp, .ckpt = checkpointing::full,
             .gpu = io::find_gpu("a100-80gb"), .num_gpus = 8};
  s.parallel.zero = 3;
  const double psi = static_cast<double>(count_parameters(m).total);
  auto states = [&](const memory_breakdown& b) { return in_bytes(b.weights + b.master_weights + b.gradients + b.optimizer); };
  // FSDP mixed precision: fp32 shard (the master) + fp32 gradient shard + Adam moments = 16 B/param / 8.
  CHECK(states(estimate_memory(m, s)) == doctest::Approx(16 * psi / 8).epsilon(1e-6));
  s.fw = framework::deepspeed;  // estimate_zero3_model_states_mem_needs: 4 x largest layer + 18 Psi / N
  const double largest = static_cast<double>(count_parameters(m).largest_layer);
  CHECK(states(estimate_memory(m, s)) == doctest::Approx(4 * largest + 18 * psi / 8).epsilon(1e-6));
}

TEST_CASE("framework: LLM.int8 matmuls are slower than 16-bit ones; fused frameworks skip the eager factor") {
  const architecture& m = io::find_model("llama-2-7b");
  scenario s{.meth = method::qlora, .seq_len = 1024, .gpu = io::find_gpu("a100-80gb")};
  s.quant = quantization{.weights = dtype::nf4};
  const double nf4 = in_seconds(estimate_time(m, s).step);
  s.quant = quantization{.weights = dtype::int8};
  const double int8 = in_seconds(estimate_time(m, s).step);
  CHECK(int8 > 1.5 * nf4);  // bitsandbytes issues #465, #181: 2-3x
  scenario f{.seq_len = 2048, .gpu = io::find_gpu("a100-80gb")};
  const double eager = in_seconds(estimate_time(m, f).step);
  f.fw = framework::megatron;
  f.ckpt = checkpointing::none;
  CHECK(in_seconds(estimate_time(m, f).step) < eager);
}

TEST_CASE("framework: the allocator's reserved/allocated ratio is the run's unless a calibration profile sets it") {
  const architecture& m = io::find_model("llama-2-7b");
  scenario s{.prec = precision::bf16_mixed, .seq_len = 512, .ckpt = checkpointing::full, .gpu = io::find_gpu("a100-80gb"),
             .num_gpus = 8};
  // reserved = allocated x factor + the 32 MiB cuBLAS workspace (detail/memory_allocator.hpp).
  auto ratio = [](const memory_breakdown& b) {
    return (in_bytes(b.peak_reserved) - memory_defaults::cublas_workspace) / in_bytes(b.peak_allocated);
  };
  // Sharded (ZeRO-3 / FSDP), any framework: the collectives' stream pools (framework.hpp).
  s.parallel.zero = 3;
  CHECK(kReservedFactorStreamPools > memory_defaults::reserved_factor);
  for (const framework fw : {framework::hf, framework::fsdp, framework::deepspeed, framework::torchtune}) {
    s.fw = fw;
    CHECK(ratio(estimate_memory(m, s)) == doctest::Approx(kReservedFactorStreamPools).epsilon(1e-9));
  }
  // Not sharded (DDP, ZeRO-1/2: contiguous gradient buffers): one stream, the default 1.10.
  for (const int zero : {0, 2})
    for (const framework fw : {framework::hf, framework::deepspeed}) {
      s.parallel.zero = zero;
      s.fw = fw;
      CHECK(ratio(estimate_memory(m, s)) == doctest::Approx(memory_defaults::reserved_factor).epsilon(1e-9));
    }
  s.parallel.zero = 3;
  // A calibration profile's fitted ratio replaces the framework's default.
  s.fw = framework::fsdp;
  run r(m, s);
  auto p = std::make_shared<profile>();
  p->memory.reserved_factor = 1.31;
  r.calibrate_with(p);
  CHECK(r.memory_constants().reserved_factor == 1.31);
  CHECK(ratio(estimate_memory(r)) == doctest::Approx(1.31).epsilon(1e-9));
  r.calibrate_with(nullptr);
  CHECK(r.memory_constants().reserved_factor == kReservedFactorStreamPools);
}

TEST_CASE("framework: FSDP allocates the gradient shards in backward; DeepSpeed keeps its partitions") {
  // torch/distributed/fsdp/_runtime_utils.py _post_backward_hook assigns each unit's reduced shard
  // to .grad; zero_grad(set_to_none=True) frees it. With one micro-batch per step the backward
  // starts without the shards; with two the first micro-batch's are there when the second starts.
  // (The peak is the loss backward: every activation and the logits' gradient alive.)
  const architecture& m = io::find_model("llama-2-7b");
  scenario s{.prec = precision::bf16_mixed, .micro_batch = 8, .seq_len = 4096, .fw = framework::fsdp, .ckpt = checkpointing::full,
             .gpu = io::find_gpu("a100-80gb"), .num_gpus = 8};
  s.parallel.zero = 3;
  const memory_breakdown one = estimate_memory(m, s);
  s.grad_accum = 2;
  const memory_breakdown two = estimate_memory(m, s);
  const double psi = static_cast<double>(count_parameters(m).total);
  REQUIRE(one.peak_phase == memory_breakdown::phase::loss_backward);  // the logits' backward, activations alive
  REQUIRE(two.peak_phase == one.peak_phase);
  // The fp32 gradient shard: 4 B x Psi / 8, less the LM head's gradient the first backward
  // already holds (4 B x 32000 x 4096 in fp32 at most).
  const double shard = 4 * psi / 8, head = 4.0 * 32000 * 4096;
  CHECK(in_bytes(two.peak_allocated) - in_bytes(one.peak_allocated) <= shard);
  CHECK(in_bytes(two.peak_allocated) - in_bytes(one.peak_allocated) >= shard - head);
  // DeepSpeed ZeRO-3 allocates its gradient partitions once (stage3.py): the same either way.
  s.fw = framework::deepspeed;
  const double ds_two = in_bytes(estimate_memory(m, s).peak_allocated);
  s.grad_accum = 1;
  CHECK(in_bytes(estimate_memory(m, s).peak_allocated) == doctest::Approx(ds_two).epsilon(1e-12));
}

TEST_CASE("framework: FSDP CPU offload keeps parameters, gradients and the optimizer on the host") {
  // torch/distributed/fsdp/api.py CPUOffload(offload_params=True): gradients and the
  // optimizer step go to the CPU with the parameters; the GPU holds the gathered units.
  const architecture& m = io::find_model("llama-2-7b");
  // Four micro-batches per step, so the gradient shards live through every backward.
  scenario s{.prec = precision::bf16_mixed, .seq_len = 2048, .grad_accum = 4, .fw = framework::fsdp,
             .ckpt = checkpointing::full, .gpu = io::find_gpu("a100-80gb"), .num_gpus = 8};
  s.parallel.zero = 3;
  s.parallel.offload_params = offload::cpu;
  const memory_breakdown off = estimate_memory(m, s);
  const double psi = static_cast<double>(count_parameters(m).total);
  CHECK(in_bytes(off.weights) == 0);
  CHECK(in_bytes(off.master_weights) == 0);
  CHECK(in_bytes(off.gradients) == 0);
  CHECK(in_bytes(off.optimizer) == 0);
  // Host, per node of 8 GPUs: fp32 parameter shard 4 + fp32 gradient shard 4 + Adam moments 8
  // = 16 B/param / 8 ranks x 8 ranks on the node = 16 Psi.
  CHECK(in_bytes(off.host) == doctest::Approx(16 * psi).epsilon(1e-9));
  // Without offload the same run holds 16 Psi / 8 of states plus the fused-AdamW
  // temporary of the largest tensor (4 B x 32000 x 4096): offload removes more than both.
  s.parallel.offload_params = offload::none;
  const memory_breakdown on = estimate_memory(m, s);
  CHECK(in_bytes(on.peak_allocated) - in_bytes(off.peak_allocated) >= 16 * psi / 8 - 1.0);
  // DeepSpeed's offload_param alone leaves the optimizer partition on the GPU (offload_optimizer is separate).
  s.fw = framework::deepspeed;
  s.parallel.offload_params = offload::cpu;
  CHECK(in_bytes(estimate_memory(m, s).optimizer) == doctest::Approx(12 * psi / 8).epsilon(1e-9));
  s.parallel.offload_optimizer = offload::cpu;  // estimate_zero3_model_states_mem_needs(cpu_offload, cpu_offload_params): 4 x largest layer
  const memory_breakdown ds = estimate_memory(m, s);
  const double largest = static_cast<double>(count_parameters(m).largest_layer);
  CHECK(in_bytes(ds.weights + ds.master_weights + ds.gradients + ds.optimizer) == doctest::Approx(4 * largest).epsilon(1e-9));
  // Time: the FSDP step runs on the CPU, Psi / 8 parameters per rank x 8 ranks sharing the
  // node's CPU at cpu_adam_params_per_s (timing_optimizer.hpp): 6.74e9 / 1e9 = 6.74 s.
  s.fw = framework::fsdp;
  s.parallel.offload_optimizer = offload::none;
  const efficiency_params e{};
  CHECK(in_seconds(estimate_time(m, s).breakdown.optimizer) == doctest::Approx(psi / e.cpu_adam_params_per_s).epsilon(1e-9));
}

TEST_CASE("framework: FSDP keeps its root unit gathered beside two blocks; DeepSpeed gathers module by module") {
  // Llama-2-7B: root = embeddings + head (2 x 32000 x 4096) + final norm (4096) = 262,148,096;
  // block = 4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096 = 202,383,360 parameters.
  const architecture& m = io::find_model("llama-2-7b");
  scenario s{.prec = precision::bf16_mixed, .seq_len = 2048, .fw = framework::fsdp, .ckpt = checkpointing::full,
             .gpu = io::find_gpu("a100-80gb"), .num_gpus = 8};
  s.parallel.zero = 3;
  auto gathered = [&](const scenario& x) {
    const run r(m, x);
    const detail::mem::facts f = detail::mem::facts_of(m, r.settings());
    const detail::mem::stage_params sp = detail::mem::params_of_stage(m, f.p, detail::mem::linears_of_block(m, false),
                                                                      detail::mem::linears_of_block(m, true), r.settings(), 0);
    CHECK(sp.root == 262148096.0);
    CHECK(sp.largest_block == 202383360.0);
    return detail::mem::zero3_gather_bytes(r.settings(), f, sp, detail::mem::trainables_of_stage(m, r.settings(), f, sp));
  };
  // FSDP1 _post_forward_reshard / FSDP2 root reshard_after_forward False: root + the unit in use + the next, bf16.
  const auto fsdp = gathered(s);
  CHECK(fsdp.block == 2.0 * (262148096.0 + 2 * 202383360.0));
  // At the loss the root alone (the last block resharded, no forward prefetch); at the head's
  // backward the root and the last block, prefetched by the root's pre-backward hook.
  CHECK(fsdp.loss == 2.0 * 262148096.0);
  CHECK(fsdp.head == 2.0 * (262148096.0 + 202383360.0));
  // DeepSpeed: two blocks (the embedding, 131M, is smaller than a block), at every moment.
  s.fw = framework::deepspeed;
  const auto ds = gathered(s);
  CHECK(ds.block == 2.0 * 2 * 202383360.0);
  CHECK(ds.loss == ds.block);
  CHECK(ds.head == ds.block);
}

TEST_CASE("framework: Unsloth's offloaded checkpointing keeps two block inputs on the GPU") {
  const architecture& m = io::find_model("llama-2-7b");
  const scenario s{.meth = method::qlora, .seq_len = 2048, .fw = framework::unsloth, .gpu = io::find_gpu("rtx-4090")};
  const run r(m, s);
  REQUIRE(r.settings().ckpt == checkpointing::full);
  const scenario& rs = r.settings();
  const detail::mem::facts f = detail::mem::facts_with_acts(m, rs);
  const detail::mem::stage_params sp = detail::mem::params_of_stage(m, f.p, detail::mem::linears_of_block(m, false),
                                                                    detail::mem::linears_of_block(m, true), rs, 0);
  const detail::mem::activation_plan a = detail::mem::stage_activations(m, rs, f, sp, 0);
  // Checkpointed: each of the 32 blocks keeps its input (kept_per_block); Unsloth_Offloaded_Gradient_Checkpointer
  // copies it to the host, the GPU keeps the block in flight and the one being copied.
  CHECK(a.stored == doctest::Approx(detail::mem::kOffloadResidentBlocks * a.kept_per_block).epsilon(1e-12));
  const double all = 32 * a.kept_per_block + detail::mem::embedding_activations(m, f) +
                     f.T * detail::mem::norm_bytes(m, f.ctx) / f.seq_div;
  CHECK(a.host + a.stored == doctest::Approx(all).epsilon(1e-12));
  // hf's checkpointing keeps every input on the GPU.
  scenario h = s;
  h.fw = framework::hf;
  const run rh(m, h);
  const detail::mem::facts fh = detail::mem::facts_with_acts(m, rh.settings());
  CHECK(detail::mem::stage_activations(m, rh.settings(), fh, sp, 0).host == 0);
}

TEST_CASE("framework: uneven pipeline stages — the slowest stage has ceil(layers / pp) blocks and the head") {
  // BLOOM-176B's layout: 70 layers on 12 stages -> stages of 5 and 6 blocks; every micro-batch waits for a 6-block stage.
  architecture a = io::find_model("llama-2-7b");
  a.layers = 70;
  scenario s{.seq_len = 2048, .fw = framework::megatron, .gpu = io::find_gpu("a100-80gb"), .num_gpus = 12};
  s.parallel.pp = 12;
  s.grad_accum = 24;
  const run r(a, s);
  const efficiency_params e{};
  warning_set w = 0;
  const detail::device_rates d = detail::device_rates_of(r.gpu(), precision_of(r.settings()), e, w);
  const detail::microbatch_shape mb = detail::microbatch_of(a, r.settings());
  CHECK(detail::stage_blocks_of(a, r.settings(), d, mb, e).plain.count == 6);  // not 70 / 12 = 5.83
  // Memory: the most loaded stage (6 blocks; the first also holds the embedding and 12 in-flight micro-batches) sets it.
  std::int64_t begin = 0, enc = 0, dec = 0, total = 0;
  for (int st = 0; st < 12; ++st) {
    detail::mem::blocks_of_stage(a, s.parallel, st, begin, enc, dec);
    CHECK((enc == 5 || enc == 6));
    total += enc;
  }
  CHECK(total == 70);
}

// Megatron-LM places the word embedding on the first pipeline stage and the final norm,
// output layer and loss on the last (megatron/core/models/gpt/gpt_model.py pre_process /
// post_process); --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split
// count each as one layer of the split (transformer_block.py get_num_layers_to_build).
namespace {
// llama-2-7b's shapes with 6 blocks: h 4096, ffn 11008, 32 heads = 32 KV heads, vocab 32000, untied.
architecture six_block_llama() {
  architecture a = io::find_model("llama-2-7b");
  a.layers = 6;
  return a;
}
scenario megatron_pp4(bool embedding_unit, bool loss_unit) {
  scenario s{.seq_len = 512, .fw = framework::megatron, .gpu = io::find_gpu("a100-80gb"), .num_gpus = 4};
  s.parallel.pp = 4;
  s.grad_accum = 8;
  s.parallel.account_for_embedding_in_pipeline_split = embedding_unit;
  s.parallel.account_for_loss_in_pipeline_split = loss_unit;
  return s;
}
}  // namespace

TEST_CASE("framework: megatron pipeline stages — embedding on the first, head and logits on the last (hand-derived)") {
  const architecture a = six_block_llama();
  // One block: q, k, v, o 4·h² = 67,108,864 + gate, up, down 3·h·ffn = 135,266,304 + two RMSNorms 2·h = 8,192.
  const double block = 4.0 * 4096 * 4096 + 3.0 * 4096 * 11008 + 2 * 4096;
  REQUIRE(block == 202383360.0);
  REQUIRE(static_cast<double>(count_parameters(a).per_layer) == block);
  const double embedding = 32000.0 * 4096, head = 32000.0 * 4096, final_norm = 4096;
  const double bf16 = 2;  // bf16-mixed: 16-bit weights (the fp32 master is master_weights)

  // Default split: 6 blocks on 4 stages -> 1, 1, 2, 2 (the remainder on the last stages).
  const auto even = estimate_memory_stages(a, megatron_pp4(false, false));
  REQUIRE(even.size() == 4);
  CHECK(in_bytes(even[0].weights) == bf16 * (block + embedding));
  CHECK(in_bytes(even[1].weights) == bf16 * block);
  CHECK(in_bytes(even[2].weights) == bf16 * 2 * block);
  CHECK(in_bytes(even[3].weights) == bf16 * (2 * block + final_norm + head));

  // Both units counted: (6 + 1 + 1) / 4 = 2 units per stage -> blocks 1, 2, 2, 1.
  const scenario both = megatron_pp4(true, true);
  const auto split = estimate_memory_stages(a, both);
  CHECK(in_bytes(split[0].weights) == bf16 * (block + embedding));
  CHECK(in_bytes(split[1].weights) == bf16 * 2 * block);
  CHECK(in_bytes(split[2].weights) == bf16 * 2 * block);
  CHECK(in_bytes(split[3].weights) == bf16 * (block + final_norm + head));
  // estimate_memory reports the stage with the most device memory.
  double most = 0;
  for (const auto& m : split) most = std::max(most, in_bytes(m.device));
  CHECK(in_bytes(estimate_memory(a, both).device) == most);

  // The logits live on the last stage only: eager cross-entropy holds the bf16 logits, their
  // fp32 copy and log_softmax's fp32 output, (2 + 4 + 4) B x V x T, T = 1 x 512 tokens.
  const run r(a, both);
  const detail::mem::facts f = detail::mem::facts_with_acts(a, r.settings());
  for (int st = 0; st < 4; ++st) {
    CAPTURE(st);
    const auto sp = detail::mem::params_of_stage(a, f, r.settings(), st);
    const auto t = detail::mem::trainables_of_stage(a, r.settings(), f, sp);
    const auto x = detail::mem::step_transients(a, r.settings(), f, sp, t);
    CHECK(x.loss_forward == (st == 3 ? 10.0 * 32000 * 512 : 0.0));
  }
}

TEST_CASE("framework: megatron's loss unit takes a block off the last stage; a middle stage then paces the pipeline") {
  const architecture a = six_block_llama();
  const run plain(a, megatron_pp4(false, false)), both(a, megatron_pp4(true, true));
  const efficiency_params e{};
  warning_set w = 0;
  const detail::device_rates d = detail::device_rates_of(both.gpu(), precision_of(both.settings()), e, w);
  const detail::microbatch_shape mb = detail::microbatch_of(a, both.settings());
  const backward_scope sc = backward_scope_of(a, both.settings());
  std::vector<double> blocks;
  for (int st = 0; st < 4; ++st) blocks.push_back(detail::stage_blocks_of(a, both.settings(), d, mb, e, st).plain.count);
  CHECK(blocks == std::vector<double>{1, 2, 2, 1});
  // Default split: the last stage (2 blocks + head) paces; with both units a middle stage
  // (2 blocks, no head) does, so each micro-batch saves the head's forward and backward.
  const detail::stage_blocks middle = detail::stage_blocks_of(a, both.settings(), d, mb, e, 1);
  // Megatron keeps 16-bit parameters: no autocast casts, whatever the trainable count.
  const double middle_mb = detail::compute_per_microbatch(a, both.settings(), d, mb, middle, sc, e, 0.0, false).microbatch;
  const detail::head_cost hd = detail::head_seconds(a, both.settings(), d, mb, sc, e);
  const double ga = 8;
  CHECK(in_seconds(estimate_time(both).breakdown.compute) == doctest::Approx(ga * middle_mb).epsilon(1e-12));
  CHECK(in_seconds(estimate_time(plain).breakdown.compute) - in_seconds(estimate_time(both).breakdown.compute) ==
        doctest::Approx(ga * (hd.fwd + hd.bwd)).epsilon(1e-9));
}

TEST_CASE("framework: the embedding / loss units of the split are megatron's, and must split evenly") {
  const architecture a = six_block_llama();
  scenario hf = megatron_pp4(true, false);
  hf.fw = framework::hf;
  CHECK_THROWS_WITH_AS(static_cast<void>(run(a, hf)), doctest::Contains("scenario.parallel.account_for_embedding_in_pipeline_split: only framework megatron"),
                       config_error);
  // 6 blocks + the embedding = 7 units do not split over 4 stages (Megatron asserts it).
  CHECK_THROWS_WITH_AS(static_cast<void>(run(a, megatron_pp4(true, false))), doctest::Contains("scenario.parallel.pp: pp*virtual_stages=4 must divide layers + embedding/loss units=7"),
                       config_error);
  // The scenario file carries both keys; a non-boolean is an error naming the key.
  // llama-2-7b: 32 blocks + the loss = 33 units, 11 per stage on 3 stages.
  const auto j = io::read_scenario(json{{"model", "llama-2-7b"}, {"framework", "megatron"}, {"num_gpus", 3},
                                        {"parallel", {{"pp", 3}, {"account_for_loss_in_pipeline_split", true}}}});
  CHECK(j.settings().parallel.account_for_loss_in_pipeline_split);
  CHECK_FALSE(j.settings().parallel.account_for_embedding_in_pipeline_split);
  CHECK_THROWS_WITH_AS(io::read_scenario(json{{"model", "llama-2-7b"}, {"parallel", {{"account_for_loss_in_pipeline_split", 1}}}}),
                       doctest::Contains("scenario.parallel.account_for_loss_in_pipeline_split"), config_error);
}

TEST_CASE("framework: megatron's uneven first and last stages (--decoder-first/last-pipeline-num-layers)") {
  const architecture a = six_block_llama();
  const double block = 202383360.0, embedding = 32000.0 * 4096, head = 32000.0 * 4096, final_norm = 4096, bf16 = 2;
  // 6 blocks on 4 stages: the first 1 and the last 3 leave 2 for the 2 middle stages: 1, 1, 1, 3.
  scenario s = megatron_pp4(false, false);
  s.parallel.first_stage_layers = 1;
  s.parallel.last_stage_layers = 3;
  const auto st = estimate_memory_stages(a, s);
  REQUIRE(st.size() == 4);
  CHECK(in_bytes(st[0].weights) == bf16 * (block + embedding));
  CHECK(in_bytes(st[1].weights) == bf16 * block);
  CHECK(in_bytes(st[2].weights) == bf16 * block);
  CHECK(in_bytes(st[3].weights) == bf16 * (3 * block + final_norm + head));
  // Only the first set: 6 - 3 = 3 blocks over the other 3 stages: 3, 1, 1, 1.
  s.parallel.last_stage_layers.reset();
  s.parallel.first_stage_layers = 3;
  const auto first = estimate_memory_stages(a, s);
  CHECK(in_bytes(first[0].weights) == bf16 * (3 * block + embedding));
  CHECK(in_bytes(first[3].weights) == bf16 * (block + final_norm + head));
  // Errors: the other stages must split the rest evenly, megatron only, no interleaving or units.
  s.parallel.first_stage_layers = 2;  // 4 blocks over 3 stages
  CHECK_THROWS_WITH_AS(static_cast<void>(run(a, s)),
                       doctest::Contains("scenario.parallel.pp: the 4 layers left after the first/last stages must split evenly over the other 3 stages"),
                       config_error);
  s.parallel.first_stage_layers = 7;
  CHECK_THROWS_WITH_AS(static_cast<void>(run(a, s)), doctest::Contains("scenario.parallel.first_stage_layers: must be between 1 and the number of layers=6 (got 7)"),
                       config_error);
  s.parallel.first_stage_layers = 3;
  s.fw = framework::hf;
  CHECK_THROWS_WITH_AS(static_cast<void>(run(a, s)), doctest::Contains("scenario.parallel.first_stage_layers: only framework megatron"), config_error);
  s.fw = framework::megatron;
  s.parallel.account_for_loss_in_pipeline_split = true;
  CHECK_THROWS_WITH_AS(static_cast<void>(run(a, s)), doctest::Contains("cannot be combined with account_for_embedding/loss_in_pipeline_split"), config_error);
  // The scenario file round-trips the keys.
  const auto j = io::read_scenario(json{{"model", "llama-2-7b"}, {"framework", "megatron"}, {"num_gpus", 4},
                                        {"parallel", {{"pp", 4}, {"first_stage_layers", 5}, {"last_stage_layers", 9}}}});
  CHECK(*j.settings().parallel.first_stage_layers == 5);
  CHECK(*j.settings().parallel.last_stage_layers == 9);
  CHECK(io::write_scenario(j)["parallel"]["last_stage_layers"] == 9);
}

TEST_CASE("framework rules: each names the estimate's terms it changes, the profile rule and a source") {
  const architecture& m = io::find_model("llama-2-7b");
  std::set<std::string> keys;  // every term `gpuplan explain` prints
  for (const auto* list : {&io::memory_terms(), &io::time_terms()})
    for (const auto& t : *list) keys.insert(std::string(t.key));
  auto rules_of = [&](const scenario& s) {
    const run r(m, s);
    std::map<std::string, framework_rule> out;
    for (const framework_rule& x : framework_rules(m, r.settings())) {
      CAPTURE(x.rule);
      CHECK_FALSE(x.effect.empty());
      CHECK_FALSE(x.source.empty());
      std::istringstream terms(x.terms);
      for (std::string k; std::getline(terms, k, ',');) CHECK(keys.contains(k.substr(k.find_first_not_of(' '))));
      out.emplace(x.rule, x);
    }
    return out;
  };
  const gpu_spec a100 = io::find_gpu("a100-80gb");
  scenario fsdp{.fw = framework::fsdp, .gpu = a100, .num_gpus = 8};
  fsdp.parallel.zero = 3;
  fsdp.parallel.offload_params = offload::cpu;
  const auto f = rules_of(fsdp);
  CHECK(f.contains("fsdp.param_offload_moves_optimizer"));
  CHECK(f.contains("fsdp.sharded_fp32_is_master"));
  CHECK(f.at("all frameworks: ZeRO-3 / FSDP stream pools").effect.find("1.35 x allocated") != std::string::npos);
  // The same layout under DeepSpeed keeps its optimizer on the GPU (offload_param alone) and 1.10.
  scenario ds = fsdp;
  ds.fw = framework::deepspeed;
  const auto d = rules_of(ds);
  CHECK_FALSE(d.contains("deepspeed.param_offload_moves_optimizer"));
  CHECK(d.contains("deepspeed.sharded_fp32_is_master = false"));
  CHECK(d.at("all frameworks: ZeRO-3 / FSDP stream pools").effect.find("1.35 x allocated") != std::string::npos);
  ds.parallel.zero = 2;
  ds.parallel.offload_params = offload::none;
  CHECK(rules_of(ds).at("deepspeed.reserved_factor").effect.find("1.10 x allocated") != std::string::npos);
  // QLoRA under hf with a paged optimizer; under unsloth, offloaded checkpoints and no k-bit upcast.
  scenario q{.meth = method::qlora, .opt = optimizer::paged_adamw_8bit, .gpu = io::find_gpu("rtx-4090")};
  const auto h = rules_of(q);
  CHECK(h.contains("hf.kbit_non_quantized_fp32"));
  CHECK(h.contains("all frameworks: optimizer paged-adamw-8bit"));
  CHECK(h.contains("all frameworks: quantized base"));
  q.fw = framework::unsloth;
  q.opt = optimizer::adamw_8bit;
  const auto u = rules_of(q);
  CHECK(u.contains("unsloth.checkpoints_on_host"));
  CHECK_FALSE(u.contains("unsloth.kbit_non_quantized_fp32"));
  CHECK_FALSE(u.contains("all frameworks: optimizer adamw-8bit"));
  // Pipeline stages: the profile rule only when Megatron's units of the split are on.
  scenario mg{.fw = framework::megatron, .gpu = a100, .num_gpus = 2};
  mg.parallel.pp = 2;
  CHECK(rules_of(mg).contains("all frameworks: pipeline stages"));
  mg.parallel.account_for_embedding_in_pipeline_split = mg.parallel.account_for_loss_in_pipeline_split = true;
  const auto mr = rules_of(mg);  // 32 + 2 = 34 units, 17 per stage
  CHECK(mr.contains("megatron.account_in_pipeline_split"));
  CHECK_FALSE(mr.contains("all frameworks: pipeline stages"));
}

}  // namespace unit_framework

namespace unit_framework_layouts {
using namespace gpuplan;

TEST_CASE("framework rules on every door: a layout the framework cannot launch is estimated and flagged") {
  // The planner never proposes these layouts (detail/plan_search_space.hpp); fit, estimate
  // and Python estimate them when asked and name the rule the layout breaks.
  const architecture& m = io::find_model("llama-2-7b");
  const auto warnings_of = [&](framework fw, int gpus, int tp, int pp, int zero) {
    scenario s;
    s.gpu = io::find_gpu("h100-sxm");
    s.fw = fw;
    s.num_gpus = gpus;
    s.parallel.tp = tp;
    s.parallel.pp = pp;
    s.parallel.zero = zero;
    return estimate_memory(m, s).warnings;
  };
  constexpr warning_set kFramework = warn_framework_gpus | warn_framework_parallelism | warn_framework_zero | warn_zero_with_pipeline;
  CHECK((warnings_of(framework::unsloth, 8, 1, 1, 0) & warn_framework_gpus) != 0);        // Unsloth runs on one GPU
  CHECK((warnings_of(framework::hf, 8, 2, 1, 0) & warn_framework_parallelism) != 0);      // no tensor parallelism in HF
  CHECK((warnings_of(framework::torchtune, 8, 2, 1, 3) & warn_framework_parallelism) != 0);
  CHECK((warnings_of(framework::deepspeed, 8, 1, 2, 3) & warn_zero_with_pipeline) != 0);  // PipelineEngine asserts
  CHECK((warnings_of(framework::megatron, 8, 2, 2, 3) & (warn_framework_zero | warn_zero_with_pipeline)) != 0);
  // What the frameworks launch carries none of them.
  CHECK((warnings_of(framework::hf, 1, 1, 1, 0) & kFramework) == 0);
  CHECK((warnings_of(framework::deepspeed, 8, 1, 1, 3) & kFramework) == 0);
  CHECK((warnings_of(framework::megatron, 8, 2, 2, 1) & kFramework) == 0);
  CHECK((warnings_of(framework::unsloth, 1, 1, 1, 0) & kFramework) == 0);
  CHECK(warning_message(warn_zero_with_pipeline).find("pipeline") != std::string_view::npos);
}

TEST_CASE("serving: a paged engine refuses a context beyond the model's maximum") {
  // llama-3.1-8b (131,072 positions), a 200,000-token prompt: vLLM refuses max_model_len above
  // the derived maximum; transformers generate runs (and warns) past it.
  const architecture& m = io::find_model("llama-3.1-8b");
  scenario s;
  s.gpu = io::find_gpu("h100-sxm");
  s.work = workload::infer;
  s.inference.eng = engine::vllm;
  s.inference.prompt_len = 200000;
  s.inference.gen_len = 512;
  CHECK_THROWS_WITH_AS(validate(m, s), doctest::Contains("scenario.inference: prompt_len + gen_len = 200512 exceeds the model's maximum context"),
                       config_error);
  s.inference.prompt_len = 130000;
  CHECK_NOTHROW(validate(m, s));
}
}  // namespace unit_framework_layouts
