// io/prices.hpp — dated, sourced GPU prices: rental prices per GPU-hour, the
// instance shapes people rent, purchase prices of cards people buy (data in
// src/data/{prices,instances,purchase}.csv, described in src/data/PRICES.md),
// a reader for a user's own prices (CSV or JSON), and rent-vs-buy arithmetic.
//
// Every bad input throws gpuplan::config_error with a one-line message naming
// the file, line or key, the field and the value:
//   "prices.csv:3.price_per_gpu_hour_usd: must be a positive number (got -1)".
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/plan/recommend.hpp"

namespace gpuplan::io {

// Largest accepted rental price, in US dollars per GPU-hour (the dearest
// catalog row is ~12 $/GPU-hour; anything above 1000 is a typo or per-month).
inline constexpr double kMaxPricePerGpuHour = 1000;
// Largest accepted purchase price of one card, in US dollars.
inline constexpr double kMaxPurchaseUsd = 1e7;

// One rental price: what `provider` charges per GPU-hour for `gpu_id` on
// `instance` ("per-gpu" when sold by the GPU) with `gpus` GPUs.
struct price_row {
  std::string provider;
  std::string instance = "per-gpu";
  std::string gpu_id;  // an id of the GPU catalog (io::find_gpu)
  int gpus = 1;
  double price_per_gpu_hour_usd = 0;
  std::string kind = "on-demand";  // on-demand | spot | reserved-1y | reserved-3y
  std::string region;              // empty when not stated
  std::string date;                // YYYY-MM-DD the price was published or observed; may be empty in user files
  std::string source;              // URL or document; may be empty in user files
  bool operator==(const price_row&) const = default;
};

// One rentable instance shape.
struct instance_row {
  std::string provider;
  std::string instance;
  std::string gpu_id;
  int gpus = 1;
  std::string interconnect;  // nvswitch | nvlink | pcie | none (single GPU)
  int vcpus = 0;
  double ram_gib = 0;
  std::string date;
  std::string source;
  bool operator==(const instance_row&) const = default;
};

// One purchase price of a card.
struct purchase_row {
  std::string gpu_id;
  double price_usd = 0;
  std::string kind;  // msrp | street
  std::string date;
  std::string source;
  bool operator==(const purchase_row&) const = default;
};

// The built-in catalogs, parsed once (thread-safe) from the embedded CSV files.
const std::vector<price_row>& price_catalog();
const std::vector<instance_row>& instance_catalog();
const std::vector<purchase_row>& purchase_catalog();

// A user's prices (--prices FILE), either
//  * CSV with a header naming at least gpu_id and price_per_gpu_hour_usd, and
//    optionally any other price_row column (provider, instance, gpus, kind,
//    region, date, source); lines starting with '#' are comments; or
//  * JSON: {"<gpu_id>": <price>, ...} (on-demand, per GPU-hour), or an array
//    of row objects with price_row's field names.
// Rows without a provider get "user". Throws config_error on any bad input.
std::vector<price_row> read_prices_file(const std::string& path);
// The same from text already in memory; `name` prefixes every error path.
std::vector<price_row> read_prices_text(std::string_view text, const std::string& name);

// `base` with every (gpu_id, kind) that `user` prices replaced by the user's rows.
std::vector<price_row> override_prices(std::span<const price_row> base, std::span<const price_row> user);

// The lowest price per GPU-hour of `gpu_id` (case-insensitive) of that kind;
// nullopt when no row prices it.
std::optional<double> cheapest_price(std::span<const price_row> rows, std::string_view gpu_id,
                                     std::string_view kind = "on-demand");
// As cheapest_price, but a budget needs a price: throws config_error(path,
// "no <kind> price for GPU '<id>' ... give one with --price or --prices FILE").
double require_price(std::span<const price_row> rows, std::string_view gpu_id, std::string_view kind = "on-demand",
                     const std::string& path = "price");

// Hours of use after which buying a card costs less than renting one:
//   purchase / (rent - tdp_watts * kwh_price / 1000),
// the electricity of running the card included. +infinity when renting costs
// no more than the electricity alone (buying never pays off). Throws
// config_error on negative, NaN or infinite inputs.
double break_even_hours(double purchase_usd, double rent_per_hour, double tdp_watts, double kwh_price);

// The offers to rent each GPU, by GPU id: the catalog's rental rows with the user's
// price file (`prices_file`, may be empty) over them — spot rows where `spot` and
// published, else on-demand. apply_market() and `recommend --serve` price from it.
std::map<std::string, std::vector<rental_offer>, std::less<>> rental_offers(const std::string& prices_file = {},
                                                                           bool spot = false);

// The market recommend() ranks by: rental_offers(prices_file, spot), the instances'
// shapes and the purchase prices. The CLI's `recommend` and Python's gp.recommend
// both start from it.
void apply_market(recommend_options& o, const std::string& prices_file = {}, bool spot = false);

// Where a recommendation's market came from, for its errors: the CLI's flags or Python's keywords.
struct market_names {
  std::string gpus;      // "--gpus-list" / "recommend.gpus"
  std::string prices;    // "--price" / "recommend.price_per_gpu_hour"
  std::string rank;      // "--rank" / "recommend.rank"
  std::string remedy;    // how to name candidates or give prices, when none has a price
};

// The market every recommendation starts from: apply_market(prices_file, spot), the user's
// `prices` per GPU-hour over it (keyed by canonical GPU id), the candidates named in `gpus` (else every GPU one can
// rent: a catalog or user price) and the ranking named `rank`. Unknown GPU ids and ranks,
// and no candidate with a price, are config_errors naming `names`' field.
recommend_options market_options(const std::optional<std::vector<std::string>>& gpus,
                                 const std::map<std::string, double, std::less<>>& prices,
                                 const std::string& prices_file, bool spot, const std::string& rank,
                                 const market_names& names);

// Per GPU id, the cheapest offer per GPU-hour of a market, the user's prices over it
// (what `recommend --serve` prices replicas with).
std::map<std::string, double, std::less<>> hourly_prices(const recommend_options& market);

}  // namespace gpuplan::io
