// will_it_fit.cpp — "Will Llama-2-13B fit on my 24 GB card?" through the C++ API.
// Full fine-tuning, LoRA and QLoRA at seq 2048, micro-batch 1, on an RTX 4090,
// with full activation checkpointing (what PEFT's QLoRA recipe turns on).
#include <cstdio>

#include <gpuplan/gpuplan.hpp>
#include <gpuplan/io/catalog.hpp>

int main() {
  using namespace gpuplan;
  const architecture& model = io::find_model("llama-2-13b");
  for (const method m : {method::full, method::lora, method::qlora}) {
    const run r(model, {.meth = m, .prec = m == method::full ? precision::bf16_mixed : precision::bf16_pure,
                        .micro_batch = 1, .seq_len = 2048, .ckpt = checkpointing::full,
                        .gpu = io::find_gpu("rtx-4090")});  // validated here (config_error naming the field)
    const memory_breakdown mem = estimate_memory(r);
    std::printf("%-6s weights %6.2f GiB  grads %6.2f GiB  optimizer %6.2f GiB  activations %6.2f GiB  "
                "device %6.2f GiB of %5.2f GiB -> %s\n",
                std::string(to_string(m)).c_str(), in_gib(mem.weights), in_gib(mem.gradients), in_gib(mem.optimizer),
                in_gib(mem.activations), in_gib(mem.device), in_gib(mem.capacity), mem.fits ? "fits" : "does not fit");
  }
  return 0;
}
