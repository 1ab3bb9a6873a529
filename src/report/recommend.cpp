// report/recommend.cpp — `gpuplan recommend`: GPU types × counts as JSON and tables, for
// transformer runs (plan/recommend.hpp) and layer-graph models (io/graph_plan.hpp).
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common.hpp"
#include "gpuplan/io/graph_plan.hpp"
#include "gpuplan/io/report.hpp"
#include "gpuplan/plan_names.hpp"

namespace gpuplan::io {
using nlohmann::json;

namespace {

// RAM sizes (binary, as DIMMs are sold) in GiB below 1 TiB, else TiB; at most 4 significant digits.
std::string human_size(Bytes b) {
  const double g = in_gib(b);
  return g < 1024 ? format_number(g) + " GiB" : format_number(g / 1024) + " TiB";
}
std::string human_watts(double w) { return w < 1000 ? format_number(w) + " W" : format_number(w / 1000) + " kW"; }
// Three significant digits, thousands grouped: 52,509 -> "52,500".
std::string three_digits(double v) {
  if (!(std::fabs(v) >= 1000) || !std::isfinite(v)) return format_number(v);
  const double scale = std::pow(10.0, std::floor(std::log10(std::fabs(v))) - 2);
  return format_number(std::round(v / scale) * scale);
}
std::string human_money(double usd) { return "$" + three_digits(usd); }
std::string human_hours(double h) {
  if (!std::isfinite(h)) return "never";
  return three_digits(h) + " h";
}

// How recommend's rows are ranked, the first note under its tables.
const char* const kRecommendRankNote =
    "Ranked: meets the deadline, within budget, cheapest run (rented rows first, then cards to buy), fastest, fewer GPUs, id. "
    "Cost = wall-clock × the rented instances' $/h; for cards with no rental price, their purchase + this run's electricity (buy).";

json rent_json(const std::optional<rental_choice>& rent) {
  if (!rent) return nullptr;
  const rental_choice& c = *rent;
  return {{"provider", c.offer.provider},
          {"instance", c.offer.instance},
          {"gpus_per_instance", c.offer.gpus_per_instance},
          {"instances", c.instances},
          {"price_per_gpu_hour", c.offer.price_per_gpu_hour},
          {"price_per_hour", c.price_per_hour},
          {"kind", c.offer.kind},
          {"date", c.offer.date}};
}

std::string rent_text(const std::optional<rental_choice>& rent) {
  if (!rent) return "-";
  const rental_choice& c = *rent;
  if (c.offer.instance == "per-gpu") return c.offer.provider + " (per GPU)";
  return c.offer.provider + " " + c.offer.instance + (c.instances > 1 ? " × " + std::to_string(c.instances) : "");
}

}  // namespace

json recommend_json(const std::vector<recommendation>& r) {
  json arr = json::array();
  int rank = 1;
  for (const auto& x : r) {
    const system_sizing& z = x.system;
    const auto opt = [](const std::optional<double>& v) { return v && std::isfinite(*v) ? json(*v) : json(nullptr); };
    arr.push_back({{"rank", rank++},
                   {"gpu", x.gpu.id},
                   {"count", x.count},
                   {"layout", layout_json(layout_of(x.run))},
                   {"global_batch", x.run.global_batch()},
                   {"wall_seconds", in_seconds(x.wall)},
                   {"gpu_hours", x.gpu_hours},
                   {"cost", x.cost ? json(*x.cost) : json(nullptr)},
                   {"rent", rent_json(x.rent)},
                   {"purchase", opt(x.purchase)},
                   // null with a purchase price: renting costs no more than the electricity (never pays off).
                   {"break_even_hours", opt(x.break_even_hours)},
                   {"own_electricity", opt(x.own_electricity)},
                   {"own_cost", opt(x.own_cost)},
                   {"meets_deadline", x.meets_deadline},
                   {"within_budget", x.within_budget},
                   {"device_bytes", in_bytes(x.memory.device)},
                   {"step_seconds", in_seconds(x.time.step)},
                   {"mfu", x.time.mfu},
                   {"system",
                    {{"platform", to_string(z.platform)},
                     {"nodes", z.nodes},
                     {"gpus_per_node", z.gpus_per_node},
                     {"cpu_cores_min", z.cpu_cores_min},
                     {"cpu_cores", z.cpu_cores},
                     {"host_ram_bytes", in_bytes(z.host_ram)},
                     {"gpu_watts", z.gpu_watts},
                     {"cpu_watts", z.cpu_watts},
                     {"psu_watts", z.psu_watts},
                     {"psu_watts_per_node", z.psu_watts_per_node},
                     {"wall_watts", z.wall_watts},
                     {"pcie_lanes_per_gpu", z.pcie_lanes_per_gpu},
                     {"cuda_min", z.cuda_min ? json(format_cuda(z.cuda_min)) : json(nullptr)},
                     {"driver_min", z.driver_min.empty() ? json(nullptr) : json(z.driver_min)},
                     {"nvlink_present", z.nvlink_present},
                     {"nvlink_needed", z.nvlink_needed},
                     {"ecc", z.ecc},
                     {"notes", z.notes}}}});
  }
  return arr;
}

table recommend_table(const std::vector<recommendation>& r, Seconds deadline) {
  table t;
  t.title = "GPU recommendation (deadline " + format_seconds(deadline) + ")";
  t.header = {"#", "GPU", "Count", "Wall-clock", "Cost", "$/h", "Deadline", "Rent", "Buy: break-even", "Layout",
              "Machine (per node)", "CUDA ≥ / driver ≥"};
  int rank = 1;
  bool any_buy = false;
  for (const auto& x : r) {
    const system_sizing& z = x.system;
    const std::string id = std::to_string(rank);
    std::string buy = "-";
    if (x.purchase) {
      any_buy = true;
      buy = human_money(*x.purchase) + (x.break_even_hours ? ", " + human_hours(*x.break_even_hours) : "");
    }
    std::string machine = std::string(to_string(z.platform)) + (z.nodes > 1 ? " × " + std::to_string(z.nodes) : "");
    if (z.platform != platform_class::cloud)
      machine += ": " + std::to_string(z.cpu_cores_min) + "-" + std::to_string(z.cpu_cores) + " cores, " +
                 human_size(z.host_ram) + " RAM, " + human_watts(z.psu_watts) + " PSU";
    else
      machine += ": " + std::to_string(z.cpu_cores) + " vCPUs, " + human_size(z.host_ram) + " RAM";
    t.rows.push_back({id, x.gpu.id, std::to_string(x.count), format_seconds(x.wall),
                      x.cost ? human_money(*x.cost) : x.own_cost ? human_money(*x.own_cost) + " (buy)" : std::string("-"),
                      x.rent ? human_money(x.rent->price_per_hour) : std::string("-"),
                      std::string(x.meets_deadline ? "met" : "late") + (x.within_budget ? "" : ", over budget"),
                      rent_text(x.rent), buy, report_detail::layout_text(x.run), machine,
                      format_cuda(z.cuda_min) + (z.driver_min.empty() ? "" : " / " + z.driver_min)});
    for (const auto& n : z.notes) t.notes.push_back("#" + id + " " + x.gpu.id + " × " + std::to_string(x.count) + ": " + n);
    ++rank;
  }
  t.right_align = {true, false, true, true, true, true, false, false, false, false, false, false};
  if (r.empty()) t.notes.insert(t.notes.begin(), "No GPU type and count in the list fits this run.");
  if (any_buy)
    t.notes.insert(t.notes.begin(),
                   "Buy: the cards' purchase price and the hours of use after which owning one costs less than "
                   "renting it, its electricity included (--kwh-price).");
  t.notes.insert(t.notes.begin(), kRecommendRankNote);
  return t;
}

// The link DDP all-reduces over inside a node (detail/timing_comm.hpp collective_link).
std::string gpu_link_text(const gpu_spec& g) { return g.has_nvlink() ? g.link : g.p2p ? "PCIe" : "PCIe, no P2P"; }

json graph_recommend_json(const std::vector<graph_recommendation>& r) {
  json arr = json::array();
  int rank = 1;
  for (const auto& x : r)
    arr.push_back({{"rank", rank++},
                   {"gpu", x.gpu.id},
                   {"count", x.count},
                   {"link", gpu_link_text(x.gpu)},
                   {"micro_batch", x.micro_batch},
                   {"grad_accum", x.grad_accum},
                   {"global_batch", x.global_batch},
                   {"device_bytes", in_bytes(x.step.device)},
                   {"usable_bytes", in_bytes(x.gpu.usable_memory)},
                   {"micro_step_seconds", in_seconds(x.step.micro)},
                   {"optimizer_step_seconds", in_seconds(x.optimizer_step)},
                   {"exposed_all_reduce_seconds", in_seconds(x.step.exposed_all_reduce)},
                   {"samples_per_second", x.samples_per_s},
                   {"scaling", x.scaling ? json(*x.scaling) : json(nullptr)},
                   {"wall_seconds", in_seconds(x.wall)},
                   {"gpu_hours", x.gpu_hours},
                   {"cost", x.cost ? json(*x.cost) : json(nullptr)},
                   {"rent", rent_json(x.rent)},
                   {"meets_deadline", x.meets_deadline},
                   {"within_budget", x.within_budget}});
  return arr;
}

table graph_recommend_table(const std::vector<graph_recommendation>& r, Seconds deadline, int zero) {
  table t;
  t.title = "GPU recommendation (deadline " + format_seconds(deadline) + ")";
  t.header = {"#", "GPU", "Count", "Link", "Batch/GPU", "Memory/GPU", "Images/s", "Scaling", "Wall-clock", "Cost", "$/h",
              "Deadline", "Rent"};
  int rank = 1;
  for (const auto& x : r) {
    t.rows.push_back({std::to_string(rank++), x.gpu.id, std::to_string(x.count),
                      x.count > 1 ? gpu_link_text(x.gpu) : std::string("-"),
                      std::to_string(x.micro_batch) + (x.grad_accum > 1 ? " × " + std::to_string(x.grad_accum) : ""),
                      format_bytes_short(x.step.device) + " / " + format_bytes_short(x.gpu.usable_memory),
                      format_number(x.samples_per_s, 3), x.scaling ? format_number(100 * *x.scaling, 3) + "%" : std::string("-"),
                      format_seconds(x.wall), x.cost ? human_money(*x.cost) : std::string("-"),
                      x.rent ? human_money(x.rent->price_per_hour) : std::string("-"),
                      std::string(x.meets_deadline ? "met" : "late") + (x.within_budget ? "" : ", over budget"),
                      rent_text(x.rent)});
  }
  t.right_align = {true, false, true, false, true, true, true, true, true, true, true, false, false};
  if (r.empty()) t.notes.push_back("No GPU type and count in the list fits this run, even at one sample per GPU.");
  t.notes.insert(t.notes.begin(),
                 std::string(zero >= 3 ? "ZeRO-3 (FSDP FULL_SHARD): each GPU runs micro-batch × accumulation of the global "
                                         "batch, gathering the weights and reduce-scattering the gradients every micro-batch"
                             : zero >= 1 ? "ZeRO-" + std::to_string(zero) + ": each GPU runs micro-batch × accumulation of the "
                                           "global batch; the gradients are reduce-scattered once per optimizer step"
                                         : "PyTorch DDP: each GPU runs micro-batch × accumulation of the global batch; the "
                                           "gradients are all-reduced once per optimizer step") +
                     " over the GPUs' link. Scaling: images/s per GPU against one GPU of the type. "
                     "Memory: nvidia-smi peak (reserved + CUDA context), planned with the headroom kept free.");
  t.notes.insert(t.notes.begin(), kRecommendRankNote);
  return t;
}

}  // namespace gpuplan::io
