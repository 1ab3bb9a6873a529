// A tool that links gpuplan: the 13B question through the public API.
#include <cstdio>

#include <gpuplan/gpuplan.hpp>
#include <gpuplan/io/catalog.hpp>

int main() {
  const gpuplan::architecture& m = gpuplan::io::find_model("llama-2-13b");
  gpuplan::scenario run;
  run.gpu = gpuplan::io::find_gpu("rtx-4090");
  run.meth = gpuplan::method::qlora;
  const auto mem = gpuplan::estimate_memory(m, run);
  std::printf("gpuplan %s: llama-2-13b has %lld parameters; qlora on rtx-4090 device %.2f GiB\n",
              gpuplan::version_string, static_cast<long long>(gpuplan::count_parameters(m).total),
              gpuplan::in_gib(mem.device));
  return gpuplan::count_parameters(m).total == 13015864320LL ? 0 : 1;
}
