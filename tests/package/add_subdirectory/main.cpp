// A tool that vendors gpuplan with add_subdirectory and uses only the header-only
// target: the 13B question with an architecture it describes itself.
#include <cstdio>

#include <gpuplan/gpuplan.hpp>

int main() {
  gpuplan::architecture m;  // llama-2-13b (config.json)
  m.family = "llama";
  m.hidden = 5120;
  m.layers = 40;
  m.heads = 40;
  m.ffn = 13824;
  m.vocab = 32000;
  m.mlp = gpuplan::mlp_kind::gated;
  m.norm = gpuplan::norm_kind::rmsnorm;
  m.norm_bias = false;
  m.positions = gpuplan::position_kind::rotary;
  m.tied_embeddings = false;
  gpuplan::scenario run;  // an RTX 4090 as nvidia-smi lists it (24,564 MiB), Ada (sm_89)
  run.gpu.id = "rtx-4090";
  run.gpu.cc_major = 8;
  run.gpu.cc_minor = 9;
  run.gpu.memory = gpuplan::gib(24);
  run.gpu.usable_memory = gpuplan::mib(24564);
  run.gpu.bandwidth = gpuplan::byte_per_s(1008e9);
  run.gpu.fp32 = gpuplan::flop_per_s(82.6e12);
  run.gpu.bf16 = gpuplan::flop_per_s(165.2e12);
  run.meth = gpuplan::method::qlora;
  const auto mem = gpuplan::estimate_memory(m, run);
  const long long total = gpuplan::count_parameters(m).total;
  std::printf("gpuplan %s: llama-2-13b has %lld parameters; qlora on an rtx-4090 needs %.2f GiB\n", gpuplan::version_string, total,
              gpuplan::in_gib(mem.device));
  return total == 13015864320LL && gpuplan::in_gib(mem.device) > 0 ? 0 : 1;
}
