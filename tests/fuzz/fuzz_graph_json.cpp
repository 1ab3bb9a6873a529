// fuzz_graph_json — graph files (`gpuplan vision --graph FILE`, gp.Graph; io/graph_json.hpp)
// as raw bytes. Bad input is a one-line config_error naming its path; an accepted graph
// has finite, non-negative figures, survives write -> read unchanged, and estimates on
// one GPU, and sharded over eight, without error or a non-finite number.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_invariants.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/graph_json.hpp"
#include "gpuplan/vision.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using gpuplan::fuzz::expect;
  using gpuplan::fuzz::finite_nonneg;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const gpuplan::layers::graph g = gpuplan::io::read_graph_text(text);
    const auto c = gpuplan::layers::analyze(g);
    expect(c.params >= 0, "negative parameter count");
    finite_nonneg(c.flops, "flops");
    finite_nonneg(c.saved_elements, "saved_elements");
    finite_nonneg(c.saved_fixed_bytes, "saved_fixed_bytes");
    finite_nonneg(c.peak_live_elements, "peak_live_elements");
    const gpuplan::layers::graph back = gpuplan::io::read_graph_text(gpuplan::io::write_graph(g).dump());
    expect(gpuplan::io::same_graph(back, g), "graph changed in a write/read round trip");
    const auto& gpu = gpuplan::io::find_gpu("a100-80gb", "gpu");
    for (const bool train : {true, false}) {
      const auto e = gpuplan::vision::estimate_graph(g, 1, gpuplan::precision::fp16_mixed, gpuplan::optimizer::adamw, gpu, train);
      finite_nonneg(gpuplan::in_bytes(e.peak_allocated), "peak_allocated");
      finite_nonneg(gpuplan::in_seconds(e.step), "step");
    }
    // Sharded over 8 GPUs (ZeRO-3: the graph's own segments, else its residual blocks, as units).
    for (const int zero : {1, 3}) {
      const auto e = gpuplan::vision::estimate_graph(g, 1, gpuplan::precision::fp16_mixed, gpuplan::optimizer::adamw, gpu,
                                                     true, {}, 8, false, zero);
      finite_nonneg(gpuplan::in_bytes(e.peak_allocated), "sharded peak_allocated");
      finite_nonneg(gpuplan::in_seconds(e.step), "sharded step");
    }
  } catch (const gpuplan::config_error& e) {
    gpuplan::fuzz::check_error(e);
  }
  return 0;
}
