// What the frameworks keep on the GPU, beyond the textbook terms: FP8 checkpoints
// store one byte per weight, ZeRO-Offload keeps no gradients on the GPU, and
// bitsandbytes paged optimizer state never makes a run not fit.
#include <doctest/doctest.h>

#include "gpuplan/io/catalog.hpp"
#include "gpuplan/memory.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_memory_semantics {

using namespace gpuplan;

TEST_CASE("memory: FP8 weights cost one byte per block-linear parameter (llama-3-70b on one H100 NVL)") {
  const architecture& m = io::find_model("llama-3-70b");
  scenario s{.work = workload::infer, .gpu = io::find_gpu("h100-nvl")};
  const double bf16 = in_bytes(estimate_memory(m, s).weights);
  s.quant = quantization{.weights = dtype::fp8_e4m3};
  const memory_breakdown fp8 = estimate_memory(m, s);
  // Embeddings and the untied head stay bf16: 2 x 128256 x 8192 x 2 B = 4.20 GB; the
  // block linears (70.55e9 - 2.10e9 embedding/head parameters - norms) drop from 2 B to 1 B.
  const parameter_breakdown p = count_parameters(m);
  const double emb_head = 2.0 * 128256 * 8192;
  const double linears = static_cast<double>(p.total) - emb_head - static_cast<double>(p.norms);
  CHECK(bf16 - in_bytes(fp8.weights) == doctest::Approx(linears).epsilon(1e-6));
  CHECK(in_bytes(fp8.weights) == doctest::Approx(linears + 2 * (emb_head + static_cast<double>(p.norms))).epsilon(1e-6));
  CHECK(fp8.fits);  // ~73 GB of weights on a 94 GB card
}

TEST_CASE("memory: ZeRO-1/2 optimizer offload keeps only the 16-bit parameters on the GPU") {
  // DeepSpeed estimate_zero2_model_states_mem_needs(cpu_offload=True): gpu = 2 Psi.
  const architecture& m = io::find_model("llama-2-7b");
  scenario s{.seq_len = 512, .ckpt = checkpointing::full, .gpu = io::find_gpu("a100-80gb")};
  s.parallel.zero = 2;
  s.parallel.offload_optimizer = offload::cpu;
  const memory_breakdown off = estimate_memory(m, s);
  const double psi = static_cast<double>(count_parameters(m).total);
  CHECK(in_bytes(off.gradients) == 0);
  CHECK(in_bytes(off.optimizer) == 0);
  CHECK(in_bytes(off.weights) == doctest::Approx(2 * psi));
  CHECK(in_bytes(off.host) > 12 * psi);  // fp32 master + moments (+ fp32 gradient partition) on the host
  // The reduce bucket (reduce_bucket_size 5e8 elements in bf16) is live on one GPU too.
  CHECK(in_bytes(off.peak_allocated) >= 2 * psi + 5e8 * 2);
}

TEST_CASE("memory: paged optimizer state is evicted before a run fails to fit") {
  const architecture& m = io::find_model("llama-2-7b");
  scenario s{.prec = precision::bf16_pure, .opt = optimizer::paged_adamw_32bit, .seq_len = 512,
             .ckpt = checkpointing::full, .gpu = io::find_gpu("a100-40gb")};
  const memory_breakdown r = estimate_memory(m, s);
  // bf16-pure full fine-tune of 6.74 B parameters: 13.5 GB weights + 13.5 GB gradients
  // live in the allocator; 8 B/param of fp32 moments (53.9 GB) are paged.
  const double psi = static_cast<double>(count_parameters(m).total);
  CHECK(in_bytes(r.paged) == doctest::Approx(8 * psi));
  CHECK(r.fits);                                                // the allocator's part fits in 40 GB
  CHECK(in_bytes(r.device) <= in_bytes(r.capacity));            // resident pages fill what is left
  CHECK(in_bytes(r.device) == doctest::Approx(in_bytes(r.capacity)));
  // What does not stay resident is on the host: reserved + CUDA context + paged - capacity.
  const double required = in_bytes(r.peak_reserved) + memory_defaults::cuda_context;
  CHECK(in_bytes(r.host) == doctest::Approx(required + 8 * psi - in_bytes(r.capacity)).epsilon(1e-9));
  // The same run with the unpaged optimizer does not fit.
  s.opt = optimizer::adamw;
  CHECK_FALSE(estimate_memory(m, s).fits);
}

}  // namespace unit_memory_semantics
