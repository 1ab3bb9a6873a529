// run.hpp — a validated run: the one input every estimator, the planner, the CLI
// and Python accept. A `run` exists only after validate() accepted its scenario
// against its architecture, and it carries every default resolved (the base-weight
// quantization of QLoRA, the data-parallel degree, the global batch), so the
// arithmetic never sees an unchecked or half-specified scenario.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "gpuplan/framework.hpp"
#include "gpuplan/model.hpp"
#include "gpuplan/peft.hpp"
#include "gpuplan/profile.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/validate.hpp"

namespace gpuplan {

// Fills the scenario's unset fields with their defaults (run's constructor and edits).
inline void resolve_defaults(const architecture& m, scenario& s) {
  const framework_profile& p = profile_of(s.fw);
  // QLoRA's base quantization: NF4 with double quantization (PEFT/bitsandbytes recipes).
  if (!s.quant && traits_of(s.meth).quantized_base) s.quant = base_quantization(s);
  // The framework's recipe default for activation checkpointing (framework.hpp).
  if (!s.ckpt) s.ckpt = traits_of(s.meth).peft_recipe ? p.peft_checkpointing : p.full_checkpointing;
  if (!s.prec) s.prec = precision_of(s);  // bf16-mixed, fp16-mixed without bf16 (scenario.hpp)
  // Serving engines split a model over a replica's GPUs by tensor parallelism (vLLM, SGLang,
  // TGI --num-shard, llama.cpp --split-mode) when the heads and MLP split evenly; transformers
  // generate replicates it.
  if (!s.parallel.tp) {
    const std::int64_t n = s.num_gpus, kv = m.n_kv_heads();
    const bool engine_tp = s.work == workload::infer && s.inference.eng != engine::hf && n > 1 && kv > 0 &&
                           m.heads % n == 0 && (kv % n == 0 || n % kv == 0) && m.ffn % n == 0;
    s.parallel.tp = engine_tp ? s.num_gpus : 1;
  }
  // Megatron-style stacks pair sequence parallelism with tensor parallelism (framework.hpp).
  if (!s.parallel.sp) s.parallel.sp = *s.parallel.tp > 1 && p.sequence_parallel_with_tp;
}

class run {
 public:
  // Validates `s` against `m` (config_error naming the field on the first broken
  // rule) and resolves its defaults. This form does not own `m`, which must
  // outlive the run (catalog entries do); the shared_ptr form owns it.
  run(const architecture& m, scenario s) : run(std::shared_ptr<const architecture>(std::shared_ptr<void>{}, &m), std::move(s)) {}
  run(std::shared_ptr<const architecture> m, scenario s) : model_(std::move(m)), s_(std::move(s)) {
    if (!model_) detail::fail("scenario.model", "is missing");
    validate(*model_, "scenario.model");
    resolve();
    validate_scenario(*model_, s_);
    params_ = count_parameters(*model_);
  }

  // The planner's fast path: change settings in place and re-check them. Only the
  // scenario rules run again (the architecture was checked when the run was made);
  // nothing is parsed and no string is built unless a rule fails.
  // If a rule fails, config_error propagates and the run stays unusable (the
  // estimators refuse it) until an edit succeeds; copy the run first to keep it.
  template <class Edit>
  void edit(Edit&& change) {
    valid_ = false;
    std::forward<Edit>(change)(s_);
    resolve();
    validate_scenario(*model_, s_);
    valid_ = true;
  }
  // False only after a failed edit.
  [[nodiscard]] bool valid() const noexcept { return valid_; }

  [[nodiscard]] const architecture& model() const noexcept { return *model_; }
  // count_parameters(model()), counted once when the run is made: edits change the
  // scenario, never the architecture, so the estimators do not count it per call.
  [[nodiscard]] const parameter_breakdown& parameters() const noexcept { return params_; }
  // The scenario with every default resolved (quant is set whenever the method needs one).
  [[nodiscard]] const scenario& settings() const noexcept { return s_; }
  [[nodiscard]] const gpu_spec& gpu() const noexcept { return s_.gpu; }
  [[nodiscard]] bool training() const noexcept { return s_.work == workload::train; }
  [[nodiscard]] quantization base_weights() const noexcept { return s_.quant.value_or(quantization{}); }
  [[nodiscard]] int dp() const noexcept { return s_.dp(); }
  [[nodiscard]] std::int64_t global_batch() const noexcept { return s_.global_batch(); }

  // A calibration profile (profile.hpp): its constants replace the defaults in
  // every estimator, and its bands those of the validation table for runs on the
  // GPU and framework it was measured on. Edits keep it; nullptr removes it.
  void calibrate_with(std::shared_ptr<const profile> p) noexcept { profile_ = std::move(p); }
  [[nodiscard]] const profile* calibration() const noexcept { return profile_.get(); }
  // Without a calibration profile: the documented defaults, with the allocator's
  // reserved/allocated ratio of the run's framework (framework.hpp reserved_factor), or of
  // sharded runs, whose collectives keep their own stream pools (kReservedFactorStreamPools),
  // less slack with expandable segments (allocator_factor).
  [[nodiscard]] const memory_params& memory_constants() const noexcept {
    // [framework or the sharded pools last][expandable_segments]
    static const auto defaults = [] {
      std::array<std::array<memory_params, 2>, kFrameworkProfiles.size() + 1> a{};
      for (std::size_t i = 0; i < a.size(); ++i)
        for (const bool expandable : {false, true})
          a[i][expandable].reserved_factor = allocator_factor(
              i < kFrameworkProfiles.size() ? kFrameworkProfiles[i].reserved_factor : kReservedFactorStreamPools, expandable);
      return a;
    }();
    if (profile_) return profile_->memory;
    const std::size_t row = sharded_stream_pools(s_) ? kFrameworkProfiles.size() : static_cast<std::size_t>(profile_of(s_.fw).id);
    return defaults[row][s_.expandable_segments];
  }
  [[nodiscard]] const efficiency_params& efficiency() const noexcept {
    static const efficiency_params defaults{};
    return profile_ ? profile_->time : defaults;
  }

 private:
  // Every default that depends on other fields, in one place: the scenario file, the CLI,
  // Python and C++ callers leave a field unset and get the same run. Only unset fields are
  // filled, once: an edit that changes the GPU keeps the precision already resolved.
  void resolve() { resolve_defaults(*model_, s_); }

  std::shared_ptr<const architecture> model_;
  scenario s_;
  parameter_breakdown params_{};
  std::shared_ptr<const profile> profile_;
  bool valid_ = true;
};

// Parameters that receive gradients under the run's method — the one count the
// memory and time models share (PEFT LoraLayer: A r×in + B out×r per targeted
// linear; freeze: the top N blocks plus final norm(s) and head, a tied LM head
// being the embedding matrix).
// `p` is count_parameters(a).
inline std::int64_t trainable_parameters(const architecture& a, const scenario& s, const parameter_breakdown& p) {
  switch (s.meth) {
    case method::full: return p.total;
    case method::lora:
    case method::qlora:
    case method::dora: {
      std::int64_t n = peft_extra_trainable(a, s);  // DoRA: + magnitude vectors (peft.hpp)
      for (int i = 0; i < kLinearKinds; ++i) {
        if ((s.lora.targets & (1u << i)) == 0) continue;
        const linear_shape e = linear_of(a, static_cast<linear_id>(i));
        const linear_shape d = linear_of(a, static_cast<linear_id>(i), true);
        n += a.layers * s.lora.rank * (e.in + e.out) * e.count + a.decoder_layers * s.lora.rank * (d.in + d.out) * d.count;
      }
      return n;
    }
    case method::ia3:
    case method::prompt_tuning:
    case method::prefix_tuning:
    case method::vera:
    case method::ln_tuning: return peft_extra_trainable(a, s);  // peft.hpp
    case method::freeze: {
      // Execution order: encoder blocks, then decoder blocks; the top N train.
      const std::int64_t k = std::clamp<std::int64_t>(s.freeze.trainable_layers, 0, a.total_layers());
      const std::int64_t dec = std::min(k, a.decoder_layers);
      std::int64_t n = dec * p.per_decoder_layer + (k - dec) * p.per_layer;
      const std::int64_t final_norms = a.final_norm ? detail::norm_params(a) * (a.kind == model_kind::encoder_decoder ? 2 : 1) : 0;
      n += final_norms + p.head;
      if (a.head == head_kind::lm && a.tied_embeddings) n += a.vocab * a.hidden;
      return n;
    }
  }
  return p.total;
}
inline std::int64_t trainable_parameters(const architecture& a, const scenario& s) {
  return trainable_parameters(a, s, count_parameters(a));
}
namespace detail {
// Every estimator's first line: a run left invalid by a failed edit never reaches the arithmetic.
inline void require_valid(const run& r) {
  if (!r.valid()) fail("run", "was left invalid by a failed edit; edit it again or copy it before editing");
}
}  // namespace detail

inline std::int64_t trainable_parameters(const run& r) { return trainable_parameters(r.model(), r.settings(), r.parameters()); }

}  // namespace gpuplan
