// plan/recommend.hpp — which GPU and how many: GPU types × counts ranked by
// deadline, budget, cost and time, each with its fastest layout from search()
// and the system around it (docs/planner.md, "recommend").
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/memory.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/plan/search.hpp"
#include "gpuplan/plan/system.hpp"
#include "gpuplan/run.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/timing.hpp"
#include "gpuplan/units.hpp"
#include "gpuplan/validate.hpp"

namespace gpuplan {

enum class recommend_rank : std::uint8_t {
  cost,  // cheapest first (rows without a price after priced rows, by time)
  time,  // fastest first
};

// The guides' "a day" rule: a training run should finish within 24 hours.
inline constexpr double kDefaultDeadlineSeconds = 24 * 3600.0;

// US average residential electricity price, 2024: 16.48 cents/kWh (U.S. EIA, Electric
// Power Monthly, Table 5.3, February 2025). The default of --kwh-price.
inline constexpr double kDefaultKwhPrice = 0.1648;

// Global batch defaults (sequences per optimizer step) when the user sets none.
// Fine-tuning: QLoRA used 16 sequences per step for 7B-13B and 32-64 beyond (Dettmers
// et al. 2023, Table 9); Stanford Alpaca 128 (train.py recipe): ~64k tokens per step,
// 16 to 128 sequences.
inline constexpr double kFineTuneTokensPerStep = 65536;
inline constexpr std::int64_t kFineTuneMinSequences = 16;
inline constexpr std::int64_t kFineTuneMaxSequences = 128;
// Pre-training: tokens per step by model size, GPT-3 (Brown et al. 2020, Table 2.1:
// 0.5M up to 760M parameters, 1M for 1.3B-2.7B, 2M for 6.7B-13B) and Llama 2
// (Touvron et al. 2023, §2.2: 4M tokens per step at 7B-70B; Chinchilla 70B 1.5M→3M).
inline constexpr double kPretrainTokensPerStepSmall = 0.5e6;  // < 1B parameters
inline constexpr double kPretrainTokensPerStepMedium = 1e6;   // 1B to 5B
inline constexpr double kPretrainTokensPerStepLarge = 2e6;    // 5B to 50B
inline constexpr double kPretrainTokensPerStepHuge = 4e6;     // 50B and up
// A full-parameter run over this many tokens or more is taken as pre-training
// (continued pre-training budgets start in the tens of billions of tokens; fine-tuning
// sets are millions to a few billion).
inline constexpr double kPretrainMinTokens = 1e10;

// One way to rent a GPU: a row of the price catalog (io/prices.hpp) or the user's price.
struct rental_offer {
  std::string provider = "user";
  std::string instance = "per-gpu";  // the provider's instance type; "per-gpu": sold one GPU at a time
  int gpus_per_instance = 1;         // whole instances are rented
  double price_per_gpu_hour = 0;
  std::string kind = "on-demand";
  std::string date;                  // of the price (empty for a user's)
};

// The host of a rentable instance type (src/data/instances.csv), by "provider/instance".
struct instance_shape {
  int vcpus = 0;
  double ram_gib = 0;
  std::string interconnect;  // nvswitch | nvlink | pcie | none
};

// What renting `count` GPUs on an offer takes: whole instances, paid for every GPU in them.
struct rental_choice {
  rental_offer offer;
  int instances = 1;
  double price_per_hour = 0;  // all instances
};

struct recommend_options {
  std::vector<gpu_spec> gpus{};                           // candidates (the CLI passes the priced catalog GPUs)
  std::map<std::string, double, std::less<>> price_per_gpu_hour{};  // by GPU id, per GPU; overrides `rentals`
  std::map<std::string, std::vector<rental_offer>, std::less<>> rentals{};  // by GPU id: the offers to rent it
  std::map<std::string, instance_shape, std::less<>> instances{};  // by "provider/instance": the rented host
  std::map<std::string, double, std::less<>> purchase_usd{};  // by GPU id: one card's price (rent vs buy)
  double kwh_price = kDefaultKwhPrice;   // currency per kWh, for owning a card
  // Sequences per optimizer step; unset: the template's when above 1, else
  // default_global_batch() (the scenario's default of 1 is not a choice anyone makes).
  std::optional<std::int64_t> global_batch{};
  std::optional<double> tokens{};        // total tokens; else epochs × dataset_tokens; else the template's
  double epochs = 1;
  std::optional<double> dataset_tokens{};
  Seconds deadline = seconds(kDefaultDeadlineSeconds);
  std::optional<double> budget{};            // currency, same as the prices
  int max_gpus = 64;                         // counts 1, 2, 4, ... up to this
  recommend_rank rank = recommend_rank::cost;
  bool keep_late = true;  // keep rows past the deadline / over budget (ranked after)
  plan_margin margin{};   // what "fits" means for every searched layout (plan/margin.hpp)
};

struct recommendation {
  gpu_spec gpu;
  int count = 1;
  scenario run;  // the fastest layout found by search() on `count` GPUs
  memory_breakdown memory;
  time_estimate time;
  Seconds wall = seconds(0);   // tokens / (global batch × seq_len) steps × step time
  double gpu_hours = 0;
  std::optional<double> cost;  // the whole run: rented instances' price per hour × wall-clock hours
  std::optional<rental_choice> rent;  // the cheapest offer for `count` GPUs
  std::optional<double> purchase;     // count × one card's price, when the card can be bought
  std::optional<double> break_even_hours;  // of one card against renting it (electricity included); inf: never
  std::optional<double> own_electricity;   // of this run on owned cards: count × TDP × hours × kWh price
  // A card with no rental price but a purchase price: buying `count` of them and this run's
  // electricity, the figure a card owner ranks by.
  std::optional<double> own_cost;
  bool meets_deadline = false;
  bool within_budget = true;   // true when no budget is given
  system_sizing system;
};

// Hours of use after which buying a card costs less than renting it, its electricity
// included: purchase / (rent − TDP × kWh price / 1000); +infinity when renting costs no
// more than the electricity alone (owning never pays off).
inline double rent_vs_buy_hours(double purchase, double rent_per_hour, double tdp_watts, double kwh_price) {
  const double saved_per_hour = rent_per_hour - tdp_watts * kwh_price / 1000.0;
  if (!(saved_per_hour > 0)) return std::numeric_limits<double>::infinity();
  return purchase / saved_per_hour;
}

// The cheapest way to rent `count` GPUs among `offers`: whole instances of each offer
// (ceil(count / gpus_per_instance)); ties keep the first offer.
inline std::optional<rental_choice> cheapest_rental(const std::vector<rental_offer>& offers, int count) {
  std::optional<rental_choice> best;
  for (const rental_offer& f : offers) {
    const int per = std::max(1, f.gpus_per_instance);
    const int instances = (count + per - 1) / per;
    const double hourly = static_cast<double>(instances) * per * f.price_per_gpu_hour;
    if (!best || hourly < best->price_per_hour) best = rental_choice{f, instances, hourly};
  }
  return best;
}

inline std::int64_t nearest_power_of_two(double x) {
  if (!(x > 1)) return 1;
  return std::int64_t{1} << static_cast<int>(std::lround(std::log2(x)));
}

// Is this run pre-training (a token budget per step) rather than fine-tuning?
inline bool is_pretraining(const scenario& s, double tokens) {
  return s.meth == method::full && tokens >= kPretrainMinTokens;
}

// The global batch practitioners use for this run (sequences per step): fine-tuning
// ~64k tokens per step within 16-128 sequences; pre-training the token budget per step
// of its model size (constants above), in sequences, a power of two.
inline std::int64_t default_global_batch(const architecture& m, const scenario& s, double tokens) {
  const double seq = static_cast<double>(std::max<std::int64_t>(1, s.seq_len));
  if (!is_pretraining(s, tokens))
    return std::clamp(nearest_power_of_two(kFineTuneTokensPerStep / seq), kFineTuneMinSequences, kFineTuneMaxSequences);
  const auto n = static_cast<double>(count_parameters(m).total);
  const double per_step = n < 1e9 ? kPretrainTokensPerStepSmall : n < 5e9 ? kPretrainTokensPerStepMedium
                          : n < 5e10 ? kPretrainTokensPerStepLarge : kPretrainTokensPerStepHuge;
  return std::max<std::int64_t>(1, nearest_power_of_two(per_step / seq));
}

// When no row meets the deadline: how many GPUs of the fastest type would, extrapolated
// from that type's measured counts as wall ∝ count^−α, α fitted on its two largest
// measured counts (1, linear scaling, when only one count fits).
struct deadline_extrapolation {
  gpu_spec gpu;
  int measured_count = 0;
  Seconds measured_wall = seconds(0);
  double exponent = 1;            // α
  bool exponent_measured = false; // false: only one count of this GPU fits, α = 1 assumed
  std::optional<double> count;    // GPUs needed, a power of two; nullopt: more GPUs do not help (α <= 0)
  bool modelled = false;          // count comes from the model's own best layout at that count, not a fit
  Seconds wall = seconds(0);      // modelled: the wall-clock at `count`
  std::optional<double> cost;     // modelled: the run's cost at `count`
};

// Counts beyond --max-gpus that more_gpus_for_deadline() evaluates with the model.
inline constexpr int kMaxModelledGpus = 1 << 16;

namespace detail {

template <class Row>
std::optional<double> own_cost_of(const Row& r) {
  if constexpr (requires { r.own_cost; }) return r.own_cost;
  else return std::nullopt;
}

// Rows of recommend() and recommend_graph(): meets the deadline, within budget, then cost
// (rank cost: rented rows by the run's cost, then cards to buy by purchase + electricity,
// so that a card owner gets the fewest cards that meet the deadline) and time, fewer
// GPUs, GPU id.
template <class Row>
bool recommendation_less(const Row& a, const Row& b, recommend_rank rank) {
  if (a.meets_deadline != b.meets_deadline) return a.meets_deadline;
  if (a.within_budget != b.within_budget) return a.within_budget;
  const double ta = in_seconds(a.wall), tb = in_seconds(b.wall);
  if (rank == recommend_rank::cost && a.cost.has_value() != b.cost.has_value()) return a.cost.has_value();
  if (rank == recommend_rank::cost && a.cost && b.cost && *a.cost != *b.cost) return *a.cost < *b.cost;
  const std::optional<double> oa = own_cost_of(a), ob = own_cost_of(b);
  if (rank == recommend_rank::cost && oa.has_value() != ob.has_value()) return oa.has_value();
  if (rank == recommend_rank::cost && oa && ob && *oa != *ob) return *oa < *ob;
  if (ta != tb) return ta < tb;
  if (a.count != b.count) return a.count < b.count;
  return a.gpu.id < b.gpu.id;
}

// Checks what recommend() and recommend_graph() share: counts, deadline, budget, margin,
// prices and the global batch.
inline void check_recommend_options(const recommend_options& o) {
  if (o.max_gpus < 1 || o.max_gpus > kMaxGpus) fail("recommend.max_gpus", "must be between 1 and " + std::to_string(kMaxGpus) + " (got " + std::to_string(o.max_gpus) + ")");
  if (!(in_seconds(o.deadline) > 0)) fail("recommend.deadline", "must be positive (got " + num(in_seconds(o.deadline)) + " s)");
  if (o.budget && !(*o.budget >= 0)) fail("recommend.budget", "must be non-negative (got " + num(*o.budget) + ")");
  check_margin(o.margin, "recommend.margin");
  if (!(o.epochs > 0)) fail("recommend.epochs", "must be positive (got " + num(o.epochs) + ")");
  for (const auto& [id, price] : o.price_per_gpu_hour)
    if (!(price >= 0) || !std::isfinite(price)) fail("recommend.price_per_gpu_hour." + id, "must be a non-negative number (got " + num(price) + ")");
  for (const auto& [id, offers] : o.rentals)
    for (const rental_offer& f : offers) {
      if (!(f.price_per_gpu_hour >= 0) || !std::isfinite(f.price_per_gpu_hour))
        fail("recommend.rentals." + id, "price per GPU-hour must be a non-negative number (got " + num(f.price_per_gpu_hour) + ")");
      if (f.gpus_per_instance < 1 || f.gpus_per_instance > 1024)
        fail("recommend.rentals." + id, "gpus_per_instance must be between 1 and 1024 (got " + std::to_string(f.gpus_per_instance) + ")");
    }
  for (const auto& [id, price] : o.purchase_usd)
    if (!(price > 0) || !std::isfinite(price)) fail("recommend.purchase_usd." + id, "must be a positive number (got " + num(price) + ")");
  if (!(o.kwh_price >= 0) || !std::isfinite(o.kwh_price) || o.kwh_price > 100)
    fail("recommend.kwh_price", "must be between 0 and 100 per kWh (got " + num(o.kwh_price) + ")");
  if (o.global_batch && (*o.global_batch < 1 || *o.global_batch > kMaxBatch))
    fail("recommend.global_batch", "must be between 1 and " + std::to_string(kMaxBatch) + " (got " + std::to_string(*o.global_batch) + ")");
  // A budget needs a price for every candidate: a row without one cannot be judged.
  if (o.budget)
    for (const gpu_spec& g : o.gpus)
      if (!o.price_per_gpu_hour.contains(g.id) && (!o.rentals.contains(g.id) || o.rentals.find(g.id)->second.empty()))
        fail("recommend.budget", "no price for GPU '" + g.id + "': a budget needs one for every candidate (give it with --price " +
                                     g.id + "=<dollars per GPU-hour> or --prices FILE, or leave it out of --gpus-list)");
}

// Checks the options and returns the tokens to train: options.tokens, else
// epochs × dataset_tokens, else the template's.
inline double recommend_tokens(const scenario& tmpl, const recommend_options& o) {
  if (tmpl.work != workload::train) fail("recommend", "ranks training runs only (got workload infer)");
  check_recommend_options(o);
  double tokens = 0;
  if (o.tokens) tokens = *o.tokens;
  else if (o.dataset_tokens) tokens = o.epochs * *o.dataset_tokens;
  else if (tmpl.tokens) tokens = *tmpl.tokens;
  else fail("recommend.tokens", "a workload needs tokens (or epochs × dataset_tokens)");
  if (!(tokens >= 1) || !std::isfinite(tokens)) fail("recommend.tokens", "must be at least 1 (got " + num(tokens) + ")");
  return tokens;
}

// The global batch a recommendation uses: the option, else the template's when above 1,
// else default_global_batch().
inline std::int64_t recommend_global_batch(const architecture& m, const scenario& tmpl, double tokens,
                                           const recommend_options& o) {
  if (o.global_batch) return *o.global_batch;
  const std::int64_t own = tmpl.micro_batch * tmpl.grad_accum * std::max(1, tmpl.dp());
  return own > 1 ? own : default_global_batch(m, tmpl, tokens);
}

// How `count` GPUs of `gpu_id` are rented: the user's price per GPU, else the cheapest offer.
inline std::optional<rental_choice> rental_for(const std::string& gpu_id, int count, const recommend_options& o) {
  if (auto it = o.price_per_gpu_hour.find(gpu_id); it != o.price_per_gpu_hour.end()) {
    rental_offer user;
    user.price_per_gpu_hour = it->second;
    return rental_choice{user, count, count * it->second};
  }
  if (auto offers = o.rentals.find(gpu_id); offers != o.rentals.end()) return cheapest_rental(offers->second, count);
  return std::nullopt;
}

// The row of `count` GPUs from the best layout of its search.
inline recommendation recommendation_of(const gpu_spec& gpu, int count, const search_row& row, double tokens,
                                        std::int64_t gb, const recommend_options& o) {
  recommendation r;
  r.gpu = gpu;
  r.count = count;
  r.run = row.run;
  r.memory = row.memory;
  r.time = row.time;
  // Steps to train `tokens` at global batch × seq_len tokens per step.
  const double steps = tokens / (static_cast<double>(gb) * static_cast<double>(row.run.seq_len));
  r.wall = seconds(steps * in_seconds(row.time.step));
  r.gpu_hours = in_hours(r.wall) * count;
  r.rent = rental_for(gpu.id, count, o);
  if (r.rent) r.cost = in_hours(r.wall) * r.rent->price_per_hour;
  // Instances smaller than the node the time model assumes: the GPUs talk over the provider's network.
  // ("per-gpu" offers are GPUs of multi-GPU machines sold one at a time: not split.)
  const bool split = r.rent && r.rent->offer.instance != "per-gpu" && r.rent->instances > 1 &&
                     r.rent->offer.gpus_per_instance < row.run.cluster.gpus_per_node;
  if (auto buy = o.purchase_usd.find(gpu.id); buy != o.purchase_usd.end()) {
    r.purchase = count * buy->second;
    r.own_electricity = count * gpu.tdp_watts / 1000.0 * in_hours(r.wall) * o.kwh_price;
    if (!r.rent) r.own_cost = *r.purchase + *r.own_electricity;
    if (r.rent) r.break_even_hours = rent_vs_buy_hours(buy->second, r.rent->price_per_hour / count, gpu.tdp_watts, o.kwh_price);
  }
  r.meets_deadline = in_seconds(r.wall) <= in_seconds(o.deadline);
  r.within_budget = !o.budget || (r.cost && *r.cost <= *o.budget);
  r.system = size_system(r.run, r.memory, r.time);
  // A rented instance type with a known host: the provider's machine, not one to build.
  if (r.rent && r.rent->offer.instance != "per-gpu")
    if (auto it = o.instances.find(r.rent->offer.provider + "/" + r.rent->offer.instance); it != o.instances.end()) {
      r.system = size_system(r.run, r.memory, r.time, platform_class::cloud);
      r.system.cpu_cores = it->second.vcpus;  // per instance
      r.system.host_ram = gib(it->second.ram_gib);
      r.system.nodes = r.rent->instances;
      r.system.gpus_per_node = std::min(count, r.rent->offer.gpus_per_instance);
      r.system.cpu_cores_min = kCpuCoresPerGpuMin * r.system.gpus_per_node;
      if (it->second.vcpus < r.system.cpu_cores_min)
        r.system.notes.push_back("the instance has " + std::to_string(it->second.vcpus) + " vCPUs, fewer than " +
                                 std::to_string(kCpuCoresPerGpuMin) + " per GPU");
    }
  if (split)
    r.system.notes.push_back(std::to_string(r.rent->instances) + " instances of " +
                             std::to_string(r.rent->offer.gpus_per_instance) +
                             " GPU(s): data parallelism crosses the provider's network, slower than the " +
                             std::to_string(row.run.cluster.gpus_per_node) + "-GPU node the estimate assumes");
  return r;
}

// The best layout of `t` (its GPU, count and tokens set) at global batch `gb`.
// `start` is the scratch run the searches start from, made on first use and then
// edited in place; a config_error means no count of this GPU can run.
inline search_result best_layout_on(const architecture& m, std::optional<run>& start, const scenario& t, std::int64_t gb,
                                    const plan_margin& margin) {
  const scenario b = without_layout(t);
  if (start) start->edit([&](scenario& x) { x = b; });
  else start.emplace(m, b);
  return search_from(*start, t, {.top_k = 1, .global_batch = gb, .margin = margin});
}

inline std::vector<recommendation> recommend_from(const architecture& m, std::optional<run> start, const scenario& tmpl,
                                                  double tokens, const recommend_options& o) {
  const std::int64_t gb = recommend_global_batch(m, tmpl, tokens, o);
  std::vector<recommendation> out;
  for (const gpu_spec& gpu : o.gpus) {
    for (int n = 1; n <= max_cards_of(gpu, o.max_gpus); n *= 2) {
      scenario t = tmpl;
      t.gpu = gpu;
      t.num_gpus = n;
      t.tokens = tokens;
      search_result sr;
      try {
        sr = best_layout_on(m, start, t, gb, o.margin);
      } catch (const config_error&) {
        break;  // e.g. a precision this GPU cannot run: no count helps
      }
      if (sr.rows.empty()) continue;
      recommendation r = recommendation_of(gpu, n, sr.rows.front(), tokens, gb, o);
      if (!o.keep_late && (!r.meets_deadline || !r.within_budget)) continue;
      out.push_back(std::move(r));
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [&](const recommendation& a, const recommendation& b) { return recommendation_less(a, b, o.rank); });
  return out;
}

}  // namespace detail

// Ranks GPU types × counts (powers of two up to max_gpus) for a training
// workload: each (GPU, count) gets its fastest fitting layout from search()
// (top-1, same global batch as the template); configurations that fit nowhere
// are dropped. Order: meets deadline, within budget, then cost (or time), then
// time, fewer GPUs, GPU id. `base` supplies everything but the GPU, the count
// and the layout (its own layout sets the global batch).
inline std::vector<recommendation> recommend(const run& base, const recommend_options& o) {
  detail::require_valid(base);
  const double tokens = detail::recommend_tokens(base.settings(), o);
  return detail::recommend_from(base.model(), base, base.settings(), tokens, o);
}

// Convenience: the template's GPU and layout need not form a valid run; each
// (GPU, count) is validated as its search starts.
inline std::vector<recommendation> recommend(const architecture& m, const scenario& tmpl, const recommend_options& o) {
  const double tokens = detail::recommend_tokens(tmpl, o);
  return detail::recommend_from(m, std::nullopt, tmpl, tokens, o);
}

// The global batch recommend() uses for this template and options (stated in its output).
inline std::int64_t recommend_global_batch(const architecture& m, const scenario& tmpl, const recommend_options& o) {
  return detail::recommend_global_batch(m, tmpl, detail::recommend_tokens(tmpl, o), o);
}

// When no row meets `deadline`: the GPU type with the fastest row, and how many of it
// would meet the deadline, extrapolated (see deadline_extrapolation). nullopt when a
// row meets the deadline or there are no rows.
inline std::optional<deadline_extrapolation> extrapolate_deadline(const std::vector<recommendation>& rows, Seconds deadline) {
  if (rows.empty()) return std::nullopt;
  for (const auto& r : rows)
    if (r.meets_deadline) return std::nullopt;
  const recommendation* best = &rows.front();
  for (const auto& r : rows)
    if (in_seconds(r.wall) < in_seconds(best->wall) ||
        (in_seconds(r.wall) == in_seconds(best->wall) && r.count > best->count)) best = &r;
  // The largest measured count of that GPU below the best one, for the exponent.
  const recommendation* prev = nullptr;
  for (const auto& r : rows)
    if (r.gpu.id == best->gpu.id && r.count < best->count && (!prev || r.count > prev->count)) prev = &r;
  deadline_extrapolation x;
  x.gpu = best->gpu;
  x.measured_count = best->count;
  x.measured_wall = best->wall;
  if (prev) {
    x.exponent = std::log(in_seconds(prev->wall) / in_seconds(best->wall)) /
                 std::log(static_cast<double>(best->count) / prev->count);
    x.exponent_measured = true;
  }
  if (!(x.exponent > 0.05)) return x;  // the wall-clock no longer falls with more GPUs
  const double need = best->count * std::pow(in_seconds(best->wall) / in_seconds(deadline), 1.0 / x.exponent);
  double count = 1;
  while (count < need && count < 1e12) count *= 2;  // the next power of two (counts are 1, 2, 4, ...)
  x.count = count;
  return x;
}

// When no row meets the deadline: how many GPUs of the type with the fastest row would.
// First the model itself: that type's best layout at doubling counts up to
// kMaxModelledGpus (same global batch, so data parallelism stops at it); the first
// count that meets the deadline is the answer (modelled). Else the power-law
// extrapolation of extrapolate_deadline() over all of that type's rows, labelled so.
inline std::optional<deadline_extrapolation> more_gpus_for_deadline(const run& base, const recommend_options& o,
                                                                    const std::vector<recommendation>& rows) {
  const std::optional<deadline_extrapolation> first = extrapolate_deadline(rows, o.deadline);
  if (!first && !rows.empty()) return first;  // a row meets the deadline
  recommend_options wide = o;
  // Nothing fits up to o.max_gpus (no rows): every candidate type at larger counts.
  if (first) wide.gpus = {first->gpu};
  wide.max_gpus = std::max(o.max_gpus, kMaxModelledGpus);
  wide.budget.reset();
  wide.keep_late = true;
  std::vector<recommendation> more = recommend(base, wide);
  std::sort(more.begin(), more.end(), [](const recommendation& a, const recommendation& b) {
    return a.count != b.count ? a.count < b.count : in_seconds(a.wall) < in_seconds(b.wall);
  });
  for (const recommendation& r : more)
    if (r.meets_deadline) {
      deadline_extrapolation x;
      if (first) x = *first;
      else { x.gpu = r.gpu; x.measured_count = r.count; x.measured_wall = r.wall; }
      x.count = static_cast<double>(r.count);
      x.modelled = true;
      x.wall = r.wall;
      x.cost = r.cost;
      return x;
    }
  for (auto& r : more) r.meets_deadline = false;
  const std::optional<deadline_extrapolation> x = extrapolate_deadline(more.empty() ? rows : more, o.deadline);
  return first ? x.value_or(*first) : x;
}

}  // namespace gpuplan
