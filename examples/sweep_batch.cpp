// sweep_batch.cpp — device memory of a LoRA run over micro-batch sizes, drawn
// as a text bar chart with the card's capacity line. One run, edited in place
// per micro-batch (run::edit re-checks only the scenario's rules).
#include <cstdio>
#include <string>

#include <gpuplan/gpuplan.hpp>
#include <gpuplan/io/catalog.hpp>

int main() {
  using namespace gpuplan;
  const architecture& model = io::find_model("llama-3.1-8b");
  run r(model, {.meth = method::lora, .prec = precision::bf16_pure, .seq_len = 2048, .ckpt = checkpointing::full,
                 .gpu = io::find_gpu("a100-40gb")});
  const double cap = in_gib(r.gpu().usable_memory);
  constexpr int kWidth = 60;
  const double scale = kWidth / (cap * 1.5);
  std::printf("llama-3.1-8b LoRA on %s, seq 2048, full checkpointing ('|' = capacity %.1f GiB)\n", r.gpu().id.c_str(), cap);
  for (std::int64_t mb = 1; mb <= 64; mb *= 2) {
    r.edit([&](scenario& s) { s.micro_batch = mb; });  // re-checks the settings only
    const double dev = in_gib(estimate_memory(r).device);
    std::string bar(static_cast<std::size_t>(std::min(dev * scale, 90.0)), '#');
    const auto cap_col = static_cast<std::size_t>(cap * scale);
    if (bar.size() < cap_col) bar.resize(cap_col, ' ');
    bar.insert(cap_col, "|");
    std::printf("mb %3lld %7.2f GiB %s\n", static_cast<long long>(mb), dev, bar.c_str());
  }
  return 0;
}
