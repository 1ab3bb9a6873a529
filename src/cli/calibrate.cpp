// calibrate.cpp — `gpuplan calibrate`: the model's constants fitted to your own measured
// runs (calibrate.hpp), printed and saved as a --profile (io/profile.hpp).
#include "command.hpp"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "gpuplan/calibrate.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/io/amount.hpp"
#include "gpuplan/io/profile.hpp"

namespace gpuplan::cli {

namespace {

// `gpuplan calibrate`: measurements from --measurements FILE and/or one measured run
// given as run flags plus --measured-*; the profile is printed and saved with --out.
struct calibrate_args {
  std::string measurements_file, name = "my-run", out_file;
  std::string allocated, reserved, device, step;
  std::optional<double> tokens_per_second;
  bool force = false;  // --force: replace an existing --out file
};

// The run given by flags and its --measured-* figures, each checked as it is read:
// memory figures need a unit (io::parse_measured_size), and every error names the flag.
gpuplan::measurement flag_measurement(run_args& a, const calibrate_args& c) {
  const io::resolved_run r = build_run(a, nullptr);
  gpuplan::measurement m;
  m.model = r.model();
  m.run = r.settings();
  m.names = {"--measured-step", "--measured-step", "--measured-tokens-per-second", "--measured-allocated",
             "--measured-reserved", "--measured-device"};
  if (!c.allocated.empty()) m.peak_allocated = gpuplan::bytes(io::parse_measured_size(c.allocated, "--measured-allocated"));
  if (!c.reserved.empty()) m.peak_reserved = gpuplan::bytes(io::parse_measured_size(c.reserved, "--measured-reserved"));
  if (!c.device.empty()) m.device = gpuplan::bytes(io::parse_measured_size(c.device, "--measured-device"));
  if (!c.step.empty()) m.step = gpuplan::seconds(io::parse_positive_seconds(c.step, "--measured-step"));  // bounded below
  if (c.tokens_per_second) m.tokens_per_second_per_gpu = io::positive_amount(*c.tokens_per_second, "--measured-tokens-per-second");
  gpuplan::check_measurement(m, 0);
  return m;
}

int cmd_calibrate(run_args& a, const calibrate_args& c, const output_args& out) {
  load_extra_gpus(a);
  if (c.force && c.out_file.empty()) throw config_error("--force", "needs --out FILE (it replaces that file)");
  std::error_code ignored;
  if (!c.out_file.empty() && !c.force && std::filesystem::exists(c.out_file, ignored))
    throw config_error("--out", c.out_file + " exists; add --force to replace it", gpuplan::error_kind::io_error);
  std::vector<gpuplan::measurement> data;
  if (!c.measurements_file.empty()) {
    try {
      data = io::read_measurements_file(c.measurements_file);
    } catch (const config_error& e) {
      throw config_error("--measurements", e.what(), e.kind());
    }
  }
  const bool one = !c.allocated.empty() || !c.reserved.empty() || !c.device.empty() || !c.step.empty() || c.tokens_per_second;
  if (one) {
    data.push_back(flag_measurement(a, c));
  } else if (!a.model.empty() || !a.scenario_file.empty()) {
    throw config_error("--measured-device", "is missing: a run given by flags needs at least one --measured-* figure");
  }
  if (data.empty()) throw config_error("--measurements", "is required: a measurements file, or MODEL with --measured-* figures");
  const gpuplan::profile p = gpuplan::calibrate_profile(data, c.name);
  if (!c.out_file.empty()) {
    try {
      io::save_profile_file(p, c.out_file, c.force);
    } catch (const config_error& e) {
      throw config_error("--out", e.what(), e.kind());
    }
  }
  if (make_style(out).format == io::report_format::json) {
    print_json(io::write_profile(p));
  } else {
    gpuplan::run shown(data.front().model, data.front().run);
    shown.calibrate_with(std::make_shared<const gpuplan::profile>(p));
    print(io::calibration_text(shown) + "\n");
    if (!c.out_file.empty())
      print("Saved to " + io::printable(c.out_file) + ": add --profile " + io::printable(c.out_file) +
            " to fit, time, estimate, search and recommend.\n");
  }
  return kExitOk;
}

}  // namespace

command register_calibrate(CLI::App& app, context& ctx) {
  struct state {
    run_args args;
    calibrate_args req;
  };
  auto s = std::make_shared<state>();
  auto* sub = app.add_subcommand("calibrate", "Fit the model's constants to your own measured run; save a --profile");
  add_run_options(sub, s->args, true, false);
  sub->add_option("--measurements", s->req.measurements_file, "JSON file of measured runs (docs/calibration.md)")
      ->group("Calibrate");
  sub->add_option("--name", s->req.name, "Profile name (default my-run)")->group("Calibrate");
  sub->add_option("--out,-o", s->req.out_file, "Write the profile to this file (not over an existing one)")
      ->group("Calibrate");
  sub->add_flag("--force", s->req.force, "Replace an existing --out file")->group("Calibrate");
  sub->add_option("--measured-allocated", s->req.allocated, "torch.cuda.max_memory_allocated() with a unit: 18.2GiB")
      ->group("Calibrate");
  sub->add_option("--measured-reserved", s->req.reserved, "torch.cuda.max_memory_reserved() with a unit: 20.1GiB")
      ->group("Calibrate");
  sub->add_option("--measured-device", s->req.device, "nvidia-smi memory used, with a unit: 21500MiB")->group("Calibrate");
  sub->add_option("--measured-step", s->req.step,
                  "Seconds per optimizer step: 1.2 (bare: seconds), 1.2s, 90m; 0.0001 to 10^7 s")
      ->group("Calibrate");
  sub->add_option("--measured-tokens-per-second", s->req.tokens_per_second, "Tokens/s per GPU")->group("Calibrate");
  add_output_options(sub, ctx.out);
  sub->footer(std::string("Examples:\n"
                          "  gpuplan calibrate llama-2-7b --gpu a100-80gb --method lora --seq 2048 "
                          "--measured-reserved 21.3GiB --measured-step 1.9 --out my-a100.json\n"
                          "  gpuplan calibrate --measurements runs.json --name qwen-lora --out qwen.json\n"
                          "  gpuplan fit llama-2-13b --gpu a100-80gb --method lora --profile my-a100.json\n"
                          "Fits the allocator factor, CUDA context and the scales of model states and working "
                          "memory to the memory figures, and the GEMM, bandwidth and network efficiencies to the "
                          "times (docs/calibration.md).\n") +
              kExitCodes);
  return {sub, [s, &ctx] { return cmd_calibrate(s->args, s->req, ctx.out); }};
}

}  // namespace gpuplan::cli
