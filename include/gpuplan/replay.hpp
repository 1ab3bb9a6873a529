// replay.hpp — the training step's allocations and frees, tensor by tensor, replayed
// through the caching allocator (allocator.hpp) to give the pool PyTorch reserves
// instead of a fixed reserved/allocated factor. The tensors are the memory model's
// own terms (detail/memory_*.hpp) cut at the sizes the code allocates them: one
// tensor per parameter (one flat shard per block under ZeRO-3 / FSDP, flat partitions
// under ZeRO-1/2), two moments per trainable tensor, a block's saved activations as
// its MLP-wide and hidden-wide tensors, the loss's logits-sized buffers. Two steps
// are replayed (the first allocates the optimizer state between freed activations,
// the second runs on the fragmented pool). docs/memory-model.md § Allocator replay.
//
// The fast path (memory.hpp: allocated × reserved_factor) serves the planner; the
// replay serves `fit`/`estimate` (about 0.1-1 ms per run) and checks that factor.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "gpuplan/allocator.hpp"
#include "gpuplan/memory.hpp"

namespace gpuplan {

struct allocator_replay {
  double peak_allocated = 0;  // bytes: the replay's live tensors, 512 B rounded (max_memory_allocated)
  double peak_reserved = 0;   // bytes: the replay's pool + cuBLAS workspace (max_memory_reserved)
  double ratio = 0;           // peak_reserved / peak_allocated of the replay
  int tensors = 0;            // allocations replayed
  std::int64_t segments = 0;  // cudaMalloc'd segments at the end
  bool replayed = false;      // false for serving runs: engines preallocate (engine.hpp), no replay
};

namespace detail::replay {

using mem::d;

// Tensors of one block or one group, in bytes.
using sizes = std::vector<double>;

// A block's linears and norms, per GPU, by element count; experts grouped by eight
// (per-expert tensors are far above 10 MiB in every catalog MoE, so grouping moves no rounding).
inline sizes block_params(const architecture& a, const mem::facts& f, bool dec) {
  sizes out;
  for (int i = 0; i < kLinearKinds; ++i) {
    const linear_shape s = linear_of(a, static_cast<linear_id>(i), dec);
    if (s.count <= 0) continue;
    const std::int64_t groups = std::min<std::int64_t>(s.count, 8);
    for (std::int64_t g = 0; g < groups; ++g) out.push_back(d(s.in) * d(s.out) * d(s.count) / d(groups) / f.tp);
  }
  out.push_back(d(a.hidden));  // attention norm
  out.push_back(d(a.hidden));  // MLP norm
  return out;
}

// A block's trainable tensors by element count: its parameters (full), the LoRA A and B
// of each targeted linear, or one tensor of the method's parameters (other PEFT methods).
inline sizes block_trainables(const architecture& a, const scenario& r, const mem::facts& f, bool dec) {
  if (r.meth == method::full || r.meth == method::freeze) return block_params(a, f, dec);
  sizes out;
  if (is_lora_family(r.meth)) {
    const double rank = d(r.lora.rank);
    for (int i = 0; i < kLinearKinds; ++i) {
      const auto id = static_cast<linear_id>(i);
      const linear_shape s = linear_of(a, id, dec);
      if (s.count <= 0 || !mem::targeted(r, id)) continue;
      for (std::int64_t c = 0; c < std::min<std::int64_t>(s.count, 8); ++c) {
        out.push_back(rank * d(s.in) / f.tp);
        out.push_back(rank * d(s.out));
      }
    }
  }
  if (out.empty()) out.push_back((dec ? f.lora_dec.params : f.lora_enc.params) / f.tp);
  return out;
}

// `list` scaled so that its sum is `total` bytes (the memory model's aggregate).
inline sizes scaled(const sizes& list, double total) {
  double sum = 0;
  for (double v : list) sum += v;
  sizes out;
  if (sum <= 0 || total <= 0) return out;
  out.reserve(list.size());
  for (double v : list) out.push_back(v / sum * total);
  return out;
}

// `bytes` cut into tensors the way a block allocates them: up to `wide_count` of the
// MLP-wide size, then hidden-wide ones, then the rest.
inline sizes cut(double bytes, double wide, int wide_count, double narrow) {
  sizes out;
  double rest = bytes;
  for (int i = 0; i < wide_count && wide > 0 && rest >= wide; ++i) { out.push_back(wide); rest -= wide; }
  while (narrow > 0 && rest >= narrow && out.size() < 64) { out.push_back(narrow); rest -= narrow; }
  if (rest > 0.5) out.push_back(rest);
  return out;
}

// One stage's step as tensor groups, each in bytes.
struct step_tensors {
  std::vector<sizes> weights;     // per block (then embeddings/head), allocated at load
  std::vector<sizes> master;      // per block, allocated at load
  std::vector<sizes> grads;       // per block
  std::vector<sizes> moments;     // per block, allocated at the first optimizer step
  sizes saved, recomputed, backward_work, loss_fwd, loss_bwd, forward_temp;
  double gathered = 0;            // ZeRO-3 / FSDP unit gathered per block (0: none)
  double reduce = 0;              // ZeRO-3 unsharded gradient of a unit in backward
  double bucket = 0;              // ZeRO-1/2 reduce bucket, alive through backward
  double extra_acts = 0;          // embeddings' and final norm's saved tensors
  double opt_temp = 0;            // optimizer-step temporary
  double in_flight = 1;           // micro-batches whose activations are alive (pipeline)
  bool persistent_grads = false;  // gradients kept across steps (buckets, ZeRO, set_to_none=False)
  std::int64_t blocks = 0;
};

// Per-block groups of `per_block` scaled to `total`, one flat tensor per block when `flat`.
inline std::vector<sizes> per_block(const sizes& one, std::int64_t blocks, double total, bool flat) {
  std::vector<sizes> out;
  if (blocks <= 0 || total <= 0) return out;
  const double each = total / d(blocks);
  for (std::int64_t b = 0; b < blocks; ++b) out.push_back(flat ? sizes{each} : scaled(one, each));
  return out;
}

inline step_tensors tensors_of_stage(const architecture& a, const scenario& r, const mem::facts& f, int stage,
                                     const memory_params& mp) {
  using namespace mem;
  const stage_params sp = params_of_stage(a, f, r, stage);
  const stage_trainables t = trainables_of_stage(a, r, f, sp);
  const model_states st = resident_states(a, r, f, sp, t);
  const activation_plan acts = stage_activations(a, r, f, sp, stage);
  const transients x = step_transients(a, r, f, sp, t);
  const gradient_schedule g = gradients_by_phase(r, f, t, st);
  const bool dec = sp.dec_blocks > 0 && sp.enc_blocks == 0;
  step_tensors s;
  s.blocks = std::max<std::int64_t>(1, sp.enc_blocks + sp.dec_blocks);
  const double ss = mp.states_scale, as = mp.activation_scale;
  const bool zero3 = r.parallel.zero >= 3, zero12 = r.parallel.zero == 1 || r.parallel.zero == 2;
  // Weights: the blocks' tensors (flat shards under ZeRO-3), the rest (embeddings, head) as one tensor each.
  const sizes params = block_params(a, f, dec);
  double per_block_params = 0;
  for (double v : params) per_block_params += v;
  const double block_share = d(s.blocks) * per_block_params / std::max(1.0, d(s.blocks) * per_block_params + sp.other);
  s.weights = per_block(params, s.blocks, st.weights * ss * block_share, zero3);
  if (st.weights * (1 - block_share) > 0) s.weights.push_back(cut(st.weights * ss * (1 - block_share), d(a.vocab) * d(a.hidden) * f.pb.weight, 2, 0));
  const sizes train = block_trainables(a, r, f, dec);
  s.master = per_block(train, s.blocks, st.master * ss, zero3);
  s.grads = per_block(train, s.blocks, st.gradients * ss, zero3);
  // Adam's two moments per tensor; ZeRO-1/2 keeps flat fp32 partitions (master + moments: three).
  if (zero12) {
    const double third = st.optimizer * ss / 3;
    if (third > 0) s.moments = {sizes{third, third, third}};
  } else {
    sizes two;
    for (double v : train) { two.push_back(v); two.push_back(v); }
    s.moments = per_block(two, s.blocks, st.optimizer * ss, zero3);
  }
  // Activations: a block's saved tensors are MLP-wide (gate, up, product: three) and hidden-wide.
  const double wide = f.T * f.pb.act * (a.is_moe() ? d(a.d_expert()) * d(a.experts_per_token) : d(a.ffn)) / f.tp;
  const double narrow = f.T * f.pb.act * d(a.hidden) / f.seq_div;
  const int mlp_tensors = a.mlp == mlp_kind::gated ? 3 : 2;
  s.in_flight = std::max(1.0, acts.in_flight);
  s.saved = cut(acts.kept_per_block * as, wide, mlp_tensors, narrow);
  s.recomputed = cut(acts.recomputed * as, wide, mlp_tensors, narrow);
  s.backward_work = cut(x.backward_block * as, wide, mlp_tensors, narrow);
  s.forward_temp = {wide * as};
  const double kept_blocks = d(s.blocks) * acts.kept_per_block * s.in_flight;
  s.extra_acts = std::max(0.0, acts.stored - kept_blocks) * as;
  const double logits = f.T * d(std::max<std::int64_t>(a.vocab, 1)) / f.tp * kFp32Bytes;
  s.loss_fwd = cut(x.loss_forward * as, 0, 0, logits);
  s.loss_bwd = cut(x.loss_backward * as, 0, 0, logits);
  if (zero3) {
    s.gathered = x.collective * as / kGatheredUnitsInFlight;
    s.reduce = x.reduce_backward * as;
  } else if (zero12) {
    s.bucket = x.collective * as;
  }
  s.opt_temp = x.optimizer_step * as;
  s.persistent_grads = g.persistent > 0;
  return s;
}

// Replays two steps of `s` through `alloc`.
class step_replayer {
 public:
  step_replayer(const step_tensors& s, caching_allocator& alloc) : s_(s), a_(alloc) {}

  void run() {
    for (const sizes& w : s_.weights) keep(w, static_);
    for (const sizes& m : s_.master) keep(m, static_);
    for (int step = 0; step < 2; ++step) one_step();
  }
  [[nodiscard]] int tensors() const { return count_; }

 private:
  int take(double bytes) {
    ++count_;
    return a_.alloc(static_cast<std::int64_t>(std::ceil(bytes)));
  }
  void keep(const sizes& list, std::vector<int>& into) {
    for (double v : list) into.push_back(take(v));
  }
  void release(std::vector<int>& list) {
    for (auto it = list.rbegin(); it != list.rend(); ++it) a_.free(*it);
    list.clear();
  }

  void forward(std::vector<std::vector<int>>& saved, std::vector<int>& gathered) {
    for (std::size_t b = 0; b < saved.size(); ++b) {
      if (s_.gathered > 0) gather(gathered);
      std::vector<int> temp;
      keep(s_.forward_temp, temp);
      keep(s_.saved, saved[b]);
      release(temp);
    }
  }

  // ZeRO-3 / FSDP: the unit in use and the one prefetched are alive; the oldest is freed.
  void gather(std::vector<int>& gathered) {
    gathered.push_back(take(s_.gathered));
    if (gathered.size() > static_cast<std::size_t>(mem::kGatheredUnitsInFlight)) {
      a_.free(gathered.front());
      gathered.erase(gathered.begin());
    }
  }

  void backward(std::vector<std::vector<int>>& saved, std::vector<int>& gathered) {
    const std::size_t per_mb = static_cast<std::size_t>(s_.blocks);
    for (std::size_t i = saved.size(); i-- > 0;) {
      const std::size_t b = i % per_mb;
      if (s_.gathered > 0) gather(gathered);
      std::vector<int> rec, work, reduce;
      keep(s_.recomputed, rec);
      keep(s_.backward_work, work);
      if (grads_.size() < s_.grads.size() && b < s_.grads.size() && i < per_mb) keep(s_.grads[b], grads_);
      if (s_.reduce > 0) reduce.push_back(take(s_.reduce));
      release(work);
      release(rec);
      release(saved[i]);
      release(reduce);
    }
  }

  void one_step() {
    std::vector<int> extra, gathered, loss_f, loss_b, bucket, temp;
    std::vector<std::vector<int>> saved(static_cast<std::size_t>(s_.blocks) * static_cast<std::size_t>(s_.in_flight));
    if (s_.extra_acts > 0) extra.push_back(take(s_.extra_acts));
    forward(saved, gathered);
    keep(s_.loss_fwd, loss_f);  // the loss's forward working set, then its backward's (which holds what forward saved)
    release(loss_f);
    keep(s_.loss_bwd, loss_b);
    if (s_.bucket > 0) bucket.push_back(take(s_.bucket));
    release(loss_b);
    backward(saved, gathered);
    release(gathered);
    release(extra);
    release(bucket);
    if (moments_.empty())
      for (const sizes& m : s_.moments) keep(m, moments_);
    if (s_.opt_temp > 0) temp.push_back(take(s_.opt_temp));
    release(temp);
    if (!s_.persistent_grads) release(grads_);
  }

  const step_tensors& s_;
  caching_allocator& a_;
  std::vector<int> static_, grads_, moments_;
  int count_ = 0;
};

}  // namespace detail::replay

// The fast path's pool over its live tensors, counted as the replay's `ratio` is (the cuBLAS
// workspace apart): the run's reserved_factor, or less where the pool met the card's capacity.
inline double fast_path_ratio(const memory_breakdown& m) {
  const double alloc = in_bytes(m.peak_allocated);
  return alloc > 0 ? (in_bytes(m.peak_reserved) - memory_defaults::cublas_workspace) / alloc : 0.0;
}

// The replay of the stage estimate_memory reports. Serving runs are not replayed
// (paged engines preallocate their pool; allocator.hpp covers training).
inline allocator_replay replay_allocator(const run& r, const allocator_options& o = {}) {
  allocator_replay out;
  if (!r.training()) return out;
  const memory_breakdown m = estimate_memory(r);
  const detail::mem::facts f = detail::mem::facts_with_acts(r.model(), r.settings());
  const detail::replay::step_tensors t = detail::replay::tensors_of_stage(r.model(), r.settings(), f, m.stage, r.memory_constants());
  caching_allocator alloc(o);
  detail::replay::step_replayer replayer(t, alloc);
  replayer.run();
  const allocator_stats& st = alloc.stats();
  out.peak_allocated = static_cast<double>(st.peak_allocated);
  out.peak_reserved = static_cast<double>(st.peak_reserved) + memory_defaults::cublas_workspace;
  out.ratio = st.peak_allocated > 0 ? static_cast<double>(st.peak_reserved) / static_cast<double>(st.peak_allocated) : 0;
  out.tensors = replayer.tensors();
  out.segments = st.segments;
  out.replayed = true;
  return out;
}

}  // namespace gpuplan
