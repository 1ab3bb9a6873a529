// Price catalogs (src/data/{prices,instances,purchase}.csv), the user price
// reader (CSV / JSON) and rent-vs-buy arithmetic (include/gpuplan/io/prices.hpp).
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/error.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/prices.hpp"

#include "support/utf8.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_prices {

namespace {

using namespace gpuplan;

constexpr std::string_view kToday = "2026-12-03";

bool known_gpu(const std::string& id) {
  for (const auto& g : io::gpu_ids())
    if (g == id) return true;
  return false;
}

// A valid YYYY-MM-DD no later than today (lexicographic order is date order).
void check_date(const std::string& d) {
  INFO("date " << d);
  REQUIRE(d.size() == 10);
  CHECK(d[4] == '-');
  CHECK(d[7] == '-');
  CHECK(d >= "2000-01-01");
  CHECK(std::string_view(d) <= kToday);
}

// The message config_error carries for `text` read as a user price file named `name`.
std::string error_of(std::string_view text, const std::string& name = "prices.csv") {
  try {
    (void)io::read_prices_text(text, name);
  } catch (const config_error& e) {
    const std::string msg = e.what();
    CHECK(msg.find('\n') == std::string::npos);
    CHECK(test::valid_utf8(msg));
    CHECK(msg.rfind(e.path(), 0) == 0);
    return msg;
  }
  return "(accepted)";
}

std::string temp_file(const std::string& bytes, const char* suffix) {
  const auto path = (std::filesystem::temp_directory_path() /
                     ("gpuplan-prices-" + std::to_string(getpid()) + suffix))
                        .string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

}  // namespace

TEST_CASE("prices: every catalog row parses, names a catalog GPU, is dated and sourced") {
  const auto& prices = io::price_catalog();
  CHECK(prices.size() >= 30);
  std::set<std::string> providers;
  for (const auto& p : prices) {
    INFO(p.provider << " " << p.instance << " " << p.gpu_id);
    CHECK(known_gpu(p.gpu_id));
    CHECK(std::isfinite(p.price_per_gpu_hour_usd));
    CHECK(p.price_per_gpu_hour_usd > 0);
    CHECK(p.price_per_gpu_hour_usd <= io::kMaxPricePerGpuHour);
    CHECK(p.gpus >= 1);
    CHECK(!p.provider.empty());
    CHECK(!p.instance.empty());
    CHECK((p.kind == "on-demand" || p.kind == "spot"));
    CHECK(!p.source.empty());
    check_date(p.date);
    providers.insert(p.provider);
  }
  for (const char* p : {"aws", "gcp", "azure", "lambda", "runpod-secure", "runpod-community", "vast.ai"}) {
    INFO(p);
    CHECK(providers.count(p) == 1);
  }

  const auto& instances = io::instance_catalog();
  CHECK(instances.size() >= 8);
  for (const auto& i : instances) {
    INFO(i.provider << " " << i.instance);
    CHECK(known_gpu(i.gpu_id));
    CHECK(i.gpus >= 1);
    CHECK(i.vcpus >= 1);
    CHECK(i.ram_gib > 0);
    CHECK((i.interconnect == "nvswitch" || i.interconnect == "nvlink" || i.interconnect == "pcie" ||
           i.interconnect == "none"));
    CHECK((i.gpus == 1) == (i.interconnect == "none"));
    CHECK(!i.source.empty());
    check_date(i.date);
  }

  const auto& purchases = io::purchase_catalog();
  CHECK(purchases.size() >= 4);
  for (const auto& p : purchases) {
    INFO(p.gpu_id);
    CHECK(known_gpu(p.gpu_id));
    CHECK(p.price_usd > 0);
    CHECK((p.kind == "msrp" || p.kind == "street"));
    CHECK(!p.source.empty());
    check_date(p.date);
  }
}

TEST_CASE("prices: catalog rows agree with their instances") {
  // A priced instance that is also in instances.csv has the same GPU and count.
  for (const auto& p : io::price_catalog())
    for (const auto& i : io::instance_catalog())
      if (p.provider == i.provider && p.instance == i.instance) {
        INFO(p.provider << " " << p.instance);
        CHECK(p.gpu_id == i.gpu_id);
        CHECK(p.gpus == i.gpus);
      }
  // Spot is cheaper than on-demand for the same provider and instance.
  int pairs = 0;
  for (const auto& s : io::price_catalog())
    for (const auto& d : io::price_catalog())
      if (s.kind == "spot" && d.kind == "on-demand" && s.provider == d.provider && s.instance == d.instance &&
          s.gpu_id == d.gpu_id) {
        INFO(s.provider << " " << s.instance);
        CHECK(s.price_per_gpu_hour_usd < d.price_per_gpu_hour_usd);
        ++pairs;
      }
  CHECK(pairs >= 3);
}

TEST_CASE("prices: cheapest_price and require_price") {
  const std::vector<io::price_row> rows = {
      {"a", "per-gpu", "h100-sxm", 1, 3.0, "on-demand", "", "", ""},
      {"b", "per-gpu", "h100-sxm", 8, 2.5, "on-demand", "", "", ""},
      {"c", "per-gpu", "h100-sxm", 1, 1.0, "spot", "", "", ""},
  };
  CHECK(*io::cheapest_price(rows, "h100-sxm") == 2.5);
  CHECK(*io::cheapest_price(rows, "H100-SXM") == 2.5);
  CHECK(*io::cheapest_price(rows, "h100-sxm", "spot") == 1.0);
  CHECK(!io::cheapest_price(rows, "a100-80gb"));
  CHECK(!io::cheapest_price(rows, "h100-sxm", "reserved-1y"));
  CHECK(io::require_price(rows, "h100-sxm") == 2.5);
  CHECK_THROWS_WITH_AS(io::require_price(rows, "rtx-4090", "on-demand", "budget"),
                       "budget: no on-demand price for GPU 'rtx-4090' in the price catalog; give one with --price "
                       "<dollars per GPU-hour> or --prices FILE",
                       config_error);
  // The catalog itself prices the common rental GPUs.
  for (const char* id : {"h100-sxm", "a100-80gb", "a100-40gb", "a10g", "h100-pcie"}) {
    INFO(id);
    CHECK(io::cheapest_price(io::price_catalog(), id).has_value());
  }
}

TEST_CASE("prices: a user file overrides the catalog") {
  const auto user = io::read_prices_text("gpu_id,price_per_gpu_hour_usd\nh100-sxm,1.25\n", "mine.csv");
  REQUIRE(user.size() == 1);
  CHECK(user[0].provider == "user");
  CHECK(user[0].instance == "per-gpu");
  CHECK(user[0].kind == "on-demand");
  CHECK(user[0].gpus == 1);
  CHECK(user[0].price_per_gpu_hour_usd == 1.25);

  const auto merged = io::override_prices(io::price_catalog(), user);
  CHECK(*io::cheapest_price(merged, "h100-sxm") == 1.25);
  // Dearer than the catalog too: the user's price replaces, it does not join.
  const auto dear = io::override_prices(io::price_catalog(), io::read_prices_text(R"({"h100-sxm": 99})", "p.json"));
  CHECK(*io::cheapest_price(dear, "h100-sxm") == 99);
  // Other GPUs and other kinds keep the catalog's rows.
  CHECK(io::cheapest_price(dear, "a100-80gb") == io::cheapest_price(io::price_catalog(), "a100-80gb"));
  CHECK(io::cheapest_price(dear, "h100-sxm", "spot") == io::cheapest_price(io::price_catalog(), "h100-sxm", "spot"));

  // Files on disk, CSV with every column and JSON rows; ids are case-insensitive.
  const auto csv = temp_file(
      "# my negotiated rates\n"
      "provider,instance,gpu_id,gpus,price_per_gpu_hour_usd,kind,region,date,source\n"
      "acme,\"8x H100, SXM\",H100-SXM,8,2.10,reserved-1y,us-east,2026-11-30,contract 42\n",
      ".csv");
  const auto rows = io::read_prices_file(csv);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0] == io::price_row{"acme", "8x H100, SXM", "h100-sxm", 8, 2.10, "reserved-1y", "us-east", "2026-11-30",
                                 "contract 42"});
  std::filesystem::remove(csv);

  const auto js = temp_file(R"([{"gpu_id": "rtx-4090", "price_per_gpu_hour_usd": 0.34, "kind": "spot",
                                 "provider": "vast.ai", "gpus": 2}])",
                            ".json");
  const auto jrows = io::read_prices_file(js);
  REQUIRE(jrows.size() == 1);
  CHECK(jrows[0] == io::price_row{"vast.ai", "per-gpu", "rtx-4090", 2, 0.34, "spot", "", "", ""});
  std::filesystem::remove(js);
}

TEST_CASE("prices: hostile user files give one-line messages naming the field and value") {
  const std::string h = "gpu_id,price_per_gpu_hour_usd\n";
  // CSV values.
  CHECK(error_of(h + "a100-80gb,1\nh100-sxm,-1\n") ==
        "prices.csv:3.price_per_gpu_hour_usd: must be a positive number (got -1)");
  CHECK(error_of(h + "h100-sxm,nan\n") == "prices.csv:2.price_per_gpu_hour_usd: must be a positive number (got nan)");
  CHECK(error_of(h + "h100-sxm,inf\n") == "prices.csv:2.price_per_gpu_hour_usd: must be a positive number (got inf)");
  CHECK(error_of(h + "h100-sxm,1e999\n") ==
        "prices.csv:2.price_per_gpu_hour_usd: must be a positive number (got 1e999)");
  CHECK(error_of(h + "h100-sxm,0\n") == "prices.csv:2.price_per_gpu_hour_usd: must be a positive number (got 0)");
  CHECK(error_of(h + "h100-sxm,$2.50\n") ==
        "prices.csv:2.price_per_gpu_hour_usd: must be a positive number (got \"$2.50\")");
  CHECK(error_of(h + "h100-sxm,\n") == "prices.csv:2.price_per_gpu_hour_usd: must be a positive number (got \"\")");
  CHECK(error_of(h + "h100-sxm,5000\n") ==
        "prices.csv:2.price_per_gpu_hour_usd: must be at most 1000 dollars per GPU-hour (got 5000)");
  CHECK(error_of(h + "h100-sxn,2\n") ==
        "prices.csv:2.gpu_id: unknown GPU 'h100-sxn' (did you mean: h100-sxm, h800-sxm, h200-sxm?)");
  CHECK(error_of(h + ",2\n") == "prices.csv:2.gpu_id: missing required field (a GPU id)");
  CHECK(error_of("gpu_id,price_per_gpu_hour_usd,kind\nh100-sxm,2,weekly\n") ==
        "prices.csv:2.kind: must be one of on-demand, spot, reserved-1y, reserved-3y (got \"weekly\")");
  CHECK(error_of("gpu_id,price_per_gpu_hour_usd,date\nh100-sxm,2,2026-02-30\n") ==
        "prices.csv:2.date: must be a date YYYY-MM-DD (got \"2026-02-30\")");
  CHECK(error_of("gpu_id,price_per_gpu_hour_usd,date\nh100-sxm,2,30/11/2026\n") ==
        "prices.csv:2.date: must be a date YYYY-MM-DD (got \"30/11/2026\")");
  CHECK(error_of("gpu_id,price_per_gpu_hour_usd,gpus\nh100-sxm,2,2.5\n") ==
        "prices.csv:2.gpus: must be an integer in [1, 1024] (got 2.5)");
  CHECK(error_of("gpu_id,price_per_gpu_hour_usd,gpus\nh100-sxm,2,0\n") ==
        "prices.csv:2.gpus: must be an integer in [1, 1024] (got 0)");
  // CSV structure.
  CHECK(error_of("") == "prices.csv: empty file (expected a CSV header line, or JSON)");
  CHECK(error_of(" \n\t\n") == "prices.csv: empty file (expected a CSV header line, or JSON)");
  CHECK(error_of("# only a comment\n") == "prices.csv: empty file (expected a CSV header line, or JSON)");
  CHECK(error_of(h) == "prices.csv: no price rows after the header");
  CHECK(error_of("gpu,price\nh100-sxm,2\n") ==
        "prices.csv:1: unknown column 'gpu' (known: provider, instance, gpu_id, gpus, price_per_gpu_hour_usd, kind, "
        "region, date, source)");
  CHECK(error_of("gpu_id,gpu_id,price_per_gpu_hour_usd\n") == "prices.csv:1: duplicate column 'gpu_id'");
  CHECK(error_of("gpu_id,kind\nh100-sxm,spot\n") == "prices.csv:1: missing column 'price_per_gpu_hour_usd'");
  CHECK(error_of(h + "h100-sxm,2,3\n") == "prices.csv:2: expected 2 comma-separated fields (got 3)");
  CHECK(error_of(h + "\"h100-sxm,2\n") == "prices.csv:2: unterminated quoted field");
  CHECK(error_of(h + "h100-sxm\xff,2\n") ==
        "prices.csv:2.gpu_id: unknown GPU 'h100-sxm\xEF\xBF\xBD' (did you mean: h100-sxm, h800-sxm, h200-sxm?)");

  // JSON.
  CHECK(error_of(R"({"h100-sxm": -1})", "p.json") == "p.json.h100-sxm: must be a positive number (got -1)");
  CHECK(error_of(R"({"h100-sxm": "2.5"})", "p.json") == "p.json.h100-sxm: must be a positive number (got \"2.5\")");
  CHECK(error_of(R"({"h100-sxm": true})", "p.json") == "p.json.h100-sxm: must be a positive number (got true)");
  CHECK(error_of(R"({"h100-sxm": null})", "p.json") == "p.json.h100-sxm: must be a positive number (got null)");
  CHECK(error_of(R"({"h100-sxm": 1e300})", "p.json") ==
        "p.json.h100-sxm: must be at most 1000 dollars per GPU-hour (got 1e+300)");
  CHECK(error_of(R"({"nope": 2})", "p.json") ==
        "p.json.nope: unknown GPU 'nope' (did you mean: l4, l40s, t4?)");
  CHECK(error_of(R"({})", "p.json") == "p.json: no prices (the JSON object is empty)");
  CHECK(error_of(R"([])", "p.json") == "p.json: no prices (the JSON array is empty)");
  CHECK(error_of(R"([3])", "p.json") == "p.json[0]: must be an object of price fields (got 3)");
  CHECK(error_of(R"([{"gpu_id": "h100-sxm"}])", "p.json") == "p.json[0].price_per_gpu_hour_usd: missing required field");
  CHECK(error_of(R"([{"gpu_id": 7, "price_per_gpu_hour_usd": 2}])", "p.json") ==
        "p.json[0].gpu_id: must be a string (got 7)");
  CHECK(error_of(R"([{"gpu_id": "h100-sxm", "price_per_gpu_hour_usd": 2, "cost": 1}])", "p.json") ==
        "p.json[0].cost: unknown key (known: provider, instance, gpu_id, gpus, price_per_gpu_hour_usd, kind, region, "
        "date, source)");
  CHECK(error_of(R"([{"gpu_id": "h100-sxm", "price_per_gpu_hour_usd": 2, "gpus": "8"}])", "p.json") ==
        "p.json[0].gpus: must be an integer in [1, 1024] (got \"8\")");
  CHECK(error_of(R"({"h100-sxm": 2,})", "p.json") ==
        "p.json: malformed JSON: parse error at line 1, column 16: syntax error while parsing object key - unexpected "
        "'}'; expected string literal");
  CHECK(error_of("[" + std::string(300, '[') + "]", "p.json") == "p.json: malformed JSON: nested deeper than 256 levels");

  // Files.
  CHECK_THROWS_WITH_AS(io::read_prices_file("/nonexistent/prices.csv"),
                       "/nonexistent/prices.csv: cannot open prices file '/nonexistent/prices.csv'", config_error);
  const auto empty = temp_file("", "-empty.csv");
  CHECK_THROWS_WITH_AS(io::read_prices_file(empty), (empty + ": empty file (expected a CSV header line, or JSON)").c_str(),
                       config_error);
  std::filesystem::remove(empty);
}

TEST_CASE("prices: break-even hours against renting, electricity included") {
  // $1,600 card, $0.69/h rent, 450 W at $0.30/kWh: power costs 0.135 $/h, so
  // buying saves 0.555 $/h and pays off after 1600 / 0.555 = 2882.9 hours.
  CHECK(io::break_even_hours(1600, 0.69, 450, 0.30) == doctest::Approx(2882.88).epsilon(1e-5));
  CHECK(io::break_even_hours(1600, 0.69, 450, 0.30) == doctest::Approx(1600 / 0.555));
  // Free electricity: purchase / rent.
  CHECK(io::break_even_hours(1000, 0.5, 300, 0) == doctest::Approx(2000));
  // Renting costs no more than the electricity: buying never pays off.
  CHECK(std::isinf(io::break_even_hours(1600, 0.135, 450, 0.30)));
  CHECK(std::isinf(io::break_even_hours(1600, 0.10, 450, 0.30)));
  CHECK(std::isinf(io::break_even_hours(1600, 0, 0, 0)));
  // With the catalog: an RTX 4090 at its launch price.
  for (const auto& p : io::purchase_catalog())
    if (p.gpu_id == "rtx-4090") {
      const double tdp = 450;  // gpus.csv tdp_w of rtx-4090
      CHECK(io::break_even_hours(p.price_usd, 0.69, tdp, 0.30) == doctest::Approx(1599 / 0.555));
    }
  // Bad inputs.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_WITH_AS(io::break_even_hours(-1, 0.69, 450, 0.3), "break_even.purchase_usd: must be a positive number (got -1)",
                       config_error);
  CHECK_THROWS_WITH_AS(io::break_even_hours(0, 0.69, 450, 0.3), "break_even.purchase_usd: must be a positive number (got 0)",
                       config_error);
  CHECK_THROWS_WITH_AS(io::break_even_hours(1600, nan, 450, 0.3),
                       "break_even.rent_per_hour: must be a non-negative number (got nan)", config_error);
  CHECK_THROWS_WITH_AS(io::break_even_hours(1600, 0.69, -450, 0.3),
                       "break_even.tdp_watts: must be a non-negative number (got -450)", config_error);
  CHECK_THROWS_WITH_AS(io::break_even_hours(1600, 0.69, 450, std::numeric_limits<double>::infinity()),
                       "break_even.kwh_price: must be a non-negative number (got inf)", config_error);
}

}  // namespace unit_prices
