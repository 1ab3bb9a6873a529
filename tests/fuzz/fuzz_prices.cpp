// fuzz_prices — a user's price file (--prices FILE) as raw bytes, CSV or JSON:
// io::read_prices_text. Bad input is a one-line config_error; accepted rows
// name a catalog GPU and carry a finite price in (0, 1000] per GPU-hour, a GPU
// count in [1, 1024] and a known kind, and the cheapest price of each is found.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "fuzz_invariants.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/prices.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<gpuplan::io::price_row> rows;
  try {
    rows = gpuplan::io::read_prices_text(text, "prices.csv");
  } catch (const gpuplan::config_error& e) {
    gpuplan::fuzz::check_error(e);
    return 0;
  }
  using namespace gpuplan;
  fuzz::expect(!rows.empty(), "accepted an empty price list");
  for (const auto& r : rows) {
    fuzz::finite_nonneg(r.price_per_gpu_hour_usd, "price_per_gpu_hour_usd");
    fuzz::expect(r.price_per_gpu_hour_usd > 0 && r.price_per_gpu_hour_usd <= io::kMaxPricePerGpuHour,
                 "price out of (0, 1000]");
    fuzz::expect(r.gpus >= 1 && r.gpus <= 1024, "gpus out of [1, 1024]");
    fuzz::expect(r.kind == "on-demand" || r.kind == "spot" || r.kind == "reserved-1y" || r.kind == "reserved-3y",
                 "unknown kind accepted", r.kind);
    fuzz::expect(io::find_gpu(r.gpu_id).id == r.gpu_id, "gpu_id is not a catalog id", r.gpu_id);
    const auto best = io::cheapest_price(rows, r.gpu_id, r.kind);
    fuzz::expect(best && *best <= r.price_per_gpu_hour_usd, "cheapest_price above a row's price");
  }
  const auto merged = io::override_prices(io::price_catalog(), rows);
  for (const auto& r : rows)
    fuzz::expect(io::cheapest_price(merged, r.gpu_id, r.kind) == io::cheapest_price(rows, r.gpu_id, r.kind),
                 "override_prices kept a catalog price the user replaced");
  return 0;
}
