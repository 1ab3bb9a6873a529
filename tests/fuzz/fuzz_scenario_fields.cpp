// fuzz_scenario_fields — structured fuzzing of io::read_scenario through the
// JSON-value API (what the Python binding and C++ callers use, so NaN, inf and
// invalid UTF-8 are reachable here, unlike through JSON text). A valid run is
// edited at up to 10 paths with either a plausible value (an enum name, a small
// power of two) or a hostile one (fuzz_values.hpp).
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz_common.hpp"
#include "fuzz_values.hpp"

namespace {
using json = nlohmann::json;

constexpr std::array<std::string_view, 8> kModels = {
    "gpt2", "llama-2-7b", "mixtral-8x7b", "bert-base-uncased", "mt0-xxl", "mpt-7b", "gemma-2b", "llama-3.1-8b"};
constexpr std::string_view kInline =
    R"({"model_type":"llama","hidden_size":64,"num_hidden_layers":4,"num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":128,"vocab_size":100,"max_position_embeddings":256})";
constexpr std::array<std::string_view, 6> kGpus = {"a100-80gb", "rtx-4090", "t4", "v100-sxm2-16gb", "h100-sxm", "rtx-3060"};

struct field {
  std::string_view path;                     // '/'-separated JSON pointer without the leading '/'
  std::array<std::string_view, 9> plausible; // enum names or numbers as JSON text
};
constexpr std::array<field, 54> kFields = {{
    {"workload", {R"("train")", R"("infer")"}},
    {"method", {R"("full")", R"("lora")", R"("qlora")", R"("freeze")"}},
    {"precision", {R"("fp32")", R"("tf32")", R"("fp16-mixed")", R"("bf16-mixed")", R"("bf16-pure")", R"("fp8-mixed")"}},
    {"optimizer", {R"("adamw")", R"("adamw-8bit")", R"("paged-adamw-8bit")", R"("paged-adamw-32bit")", R"("sgd")",
                   R"("sgd-momentum")", R"("adafactor")", R"("lion")", R"("adam")"}},
    {"micro_batch", {"1", "2", "8", "64"}},
    {"seq_len", {"128", "512", "2048", "8192", "197"}},
    {"grad_accum", {"1", "4"}},
    {"global_batch", {"8", "64", "1024"}},
    {"checkpointing", {R"("none")", R"("selective")", R"("full")"}},
    {"attention", {R"("flash")", R"("eager")"}},
    {"compile", {"true", "false"}},
    {"fused_kernels", {"true", "false"}},
    {"chunked_loss", {"true", "false"}},
    {"fused_linear_loss", {"true", "false"}},
    {"tiled_mlp", {"true", "false"}},
    {"inplace_loss", {"true", "false"}},
    {"activation_offload", {"true", "false"}},
    {"optimizer_in_backward", {"true", "false"}},
    {"optimizer_kernel", {R"("foreach")", R"("fused")"}},
    {"keep_gradients", {"true", "false"}},
    {"expandable_segments", {"true", "false"}},
    {"num_gpus", {"1", "2", "8", "16", "64"}},
    {"gpus_per_node", {"1", "4", "8"}},
    {"tokens", {"1e9", R"("300B")", R"("1T")", R"("2e9")"}},
    {"price_per_gpu_hour", {"0", "2.5"}},
    {"network/internode_gb_s", {"12.5", "50", "847.434"}},
    {"network/latency_us", {"0", "3", "847.434"}},
    {"network/host_memory_gib", {"256", "2048"}},
    {"parallel/tp", {"1", "2", "4", "8"}},
    {"parallel/pp", {"1", "2", "4"}},
    {"parallel/virtual_stages", {"1", "2"}},
    {"parallel/sp", {"true", "false"}},
    {"parallel/cp", {"1", "2"}},
    {"parallel/ep", {"1", "2", "8"}},
    {"parallel/zero", {"0", "1", "2", "3"}},
    {"parallel/offload_optimizer", {R"("none")", R"("cpu")", R"("nvme")"}},
    {"parallel/offload_params", {R"("none")", R"("cpu")", R"("nvme")"}},
    {"parallel/account_for_embedding_in_pipeline_split", {"true", "false"}},
    {"parallel/account_for_loss_in_pipeline_split", {"true", "false"}},
    {"parallel/first_stage_layers", {"1", "3", "0", "-1", "100000"}},
    {"parallel/last_stage_layers", {"1", "9", "0"}},
    {"lora/rank", {"1", "8", "64", "4096"}},
    {"lora/alpha", {"16", "0.5"}},
    {"lora/dropout", {"0", "0.05"}},
    {"lora/targets", {R"("all-linear")", R"(["q","v"])", R"(["gate","up","down"])"}},
    {"freeze/trainable_layers", {"1", "2", "12"}},
    {"quantization/weights", {R"("nf4")", R"("fp4")", R"("int8")", R"("int4")", R"("fp8")", R"("bf16")"}},
    {"quantization/double_quant", {"true", "false"}},
    {"quantization/group_size", {"0", "64", "128"}},
    {"inference/batch", {"1", "32"}},
    {"inference/prompt_len", {"1", "512", "4096"}},
    {"inference/gen_len", {"0", "128"}},
    {"inference/kv_cache_dtype", {R"("bf16")", R"("fp8")", R"("int4")"}},
    {"inference/cuda_graphs", {"true", "false"}},
}};

std::size_t count_plausible(const field& f) {
  std::size_t n = 0;
  while (n < f.plausible.size() && !f.plausible[n].empty()) ++n;
  return n;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  json j = json::object();
  const std::size_t m = in.ConsumeIntegralInRange<std::size_t>(0, kModels.size());
  j["model"] = m < kModels.size() ? json(std::string(kModels[m])) : json::parse(kInline);
  j["gpu"] = std::string(kGpus[in.ConsumeIntegralInRange<std::size_t>(0, kGpus.size() - 1)]);
  j["seq_len"] = 128;
  const int edits = in.ConsumeIntegralInRange<int>(0, 10);
  for (int i = 0; i < edits && in.remaining_bytes() > 0; ++i) {
    const field& f = kFields[in.ConsumeIntegralInRange<std::size_t>(0, kFields.size() - 1)];
    const json::json_pointer ptr("/" + std::string(f.path));
    if (in.ConsumeIntegralInRange<int>(0, 3) != 0) {
      const std::size_t n = count_plausible(f);
      j[ptr] = json::parse(f.plausible[in.ConsumeIntegralInRange<std::size_t>(0, n - 1)]);
    } else {
      j[ptr] = gpuplan::fuzz::hostile_value(in);
    }
  }
  // Occasionally a hostile model or GPU entry.
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) j["model"] = gpuplan::fuzz::hostile_value(in);
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) j["gpu"] = gpuplan::fuzz::hostile_value(in);

  std::optional<gpuplan::io::resolved_run> r;
  gpuplan::fuzz::print_input(j.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace));
  try {
    r = gpuplan::io::read_scenario(j);
  } catch (const gpuplan::config_error& e) {
    gpuplan::fuzz::check_error(e);
    return 0;
  }
  gpuplan::fuzz::check_run(*r);
  return 0;
}
