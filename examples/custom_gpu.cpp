// custom_gpu.cpp — a GPU the catalog does not have, described in JSON, and a
// catalog GPU overridden field by field ("base").
#include <cstdio>

#include <nlohmann/json.hpp>

#include <gpuplan/gpuplan.hpp>
#include <gpuplan/io/catalog.hpp>

int main() {
  using namespace gpuplan;
  const auto spec = nlohmann::json::parse(R"json({"base": "rtx-4090", "id": "rtx-4090-48gb",
                                                  "name": "RTX 4090 (48 GB mod)", "memory_gb": 48})json");
  const gpu_spec gpu = io::read_gpu(spec);
  const architecture& model = io::find_model("llama-2-13b");
  const scenario run{.meth = method::lora, .prec = precision::bf16_pure, .seq_len = 2048,
                     .ckpt = checkpointing::full, .gpu = gpu};
  const memory_breakdown mem = estimate_memory(model, run);
  std::printf("%s: %.1f GiB usable; llama-2-13b LoRA needs %.2f GiB on the device -> %s\n", gpu.name.c_str(),
              in_gib(gpu.usable_memory), in_gib(mem.device), mem.fits ? "fits" : "does not fit");
  return 0;
}
