// graph/analyze.hpp — what each layer of a graph (graph/layer.hpp) costs, with tensor
// shapes propagated from the input: the exact parameter count, the forward FLOPs (one
// multiply-add = 2 FLOPs), the tensors PyTorch's autograd saves for backward
// (tools/autograd/derivatives.yaml), the memory-bound traffic, the kernels and host calls
// one eager forward makes, and the inference working set. docs/vision.md.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpuplan/error.hpp"
#include "gpuplan/graph/layer.hpp"

namespace gpuplan::layers {

// ---- costs ------------------------------------------------------------------
struct layer_cost {
  shape in, out;
  std::int64_t params = 0;
  double flops = 0;         // forward FLOPs per sample (multiply-add = 2)
  double matmul_flops = 0;  // the part in convolutions, linear layers and attention matmuls
  // Tensors saved for backward, per sample: elements in the activation dtype that
  // are new tensors of this layer (q/k/v, attention probabilities), and fixed-size
  // bytes (fp32 statistics, int64 indices, bool masks). Saved inputs/outputs that
  // are other layers' outputs are counted once in graph_cost (tensor identity).
  double saved_extra_elements = 0;
  double saved_fixed_bytes = 0;
  int saves_tensor = -3;    // tensor id this layer saves (-3: none; -2: the graph input)
  int saves_tensor2 = -3;   // a second one (mul saves both operands)
  int out_tensor = 0;       // the tensor id of the output (in-place layers: their input's id)
};

struct graph_cost {
  std::vector<layer_cost> per_layer;
  std::int64_t params = 0;
  double flops = 0;         // forward, per sample
  double matmul_flops = 0;  // forward, per sample
  // Saved for backward per sample = saved_elements · activation bytes + saved_fixed_bytes.
  double saved_elements = 0;
  double saved_fixed_bytes = 0;
  double peak_live_elements = 0;  // inference: the most activation elements alive at once, per sample
  double elementwise_elements = 0;  // elements read + written by the memory-bound layers, forward, per sample
  double kernels = 0;  // GPU kernels one forward launches (convention: one per layer, attention 5, views 0)
  double host_ops = 0;  // tensor calls one eager forward dispatches from the host: kernels, views, + every layer's host_ops
  shape output;
  [[nodiscard]] double saved_bytes(double activation_bytes) const { return saved_elements * activation_bytes + saved_fixed_bytes; }
};

namespace detail {
inline constexpr std::int64_t kMaxDim = std::int64_t{1} << 24;  // a sanity bound on any size field
inline constexpr double kMaxElements = 1099511627776.0;  // 2^40: any tensor or weight count above is an error
inline constexpr double kInt64Bytes = 8;  // max_pool2d_with_indices returns int64 indices
inline constexpr double kFp32Bytes = 4;   // mean / rstd of native_{layer,group}_norm are fp32 (accumulate type)
inline constexpr double kBoolBytes = 1;   // native_dropout's mask is a bool tensor
inline constexpr std::int64_t kMaxHostOps = 10000;  // a sanity bound on layer::host_ops

inline std::string where(const graph& g, std::size_t i) {
  const auto& l = g.layers[i];
  return "layers[" + std::to_string(i) + "]" + (l.name.empty() ? "" : " (" + l.name + ")");
}
inline void check_size(const graph& g, std::size_t i, const char* field, std::int64_t v, std::int64_t lo = 1) {
  if (v < lo || v > kMaxDim)
    gpuplan::detail::fail(where(g, i) + "." + field, "must be in [" + std::to_string(lo) + ", " + std::to_string(kMaxDim) + "] (got " + std::to_string(v) + ")");
}
inline std::int64_t out_len(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p, std::int64_t dil) {
  // torch.nn.Conv2d / MaxPool2d docs: H_out = floor((H_in + 2p - dil·(k-1) - 1) / s) + 1
  const std::int64_t num = in + 2 * p - dil * (k - 1) - 1;
  return num < 0 ? 0 : num / s + 1;
}
}  // namespace detail

// ---- analyze(), one layer kind at a time -------------------------------------
namespace detail {
using gpuplan::detail::fail;

// The graph input's sizes, each within kMaxDim and all of them within 2^40 elements.
inline void check_input(const graph& g) {
  if (g.layers.empty()) fail("graph.layers", "must not be empty (got 0 layers)");
  for (auto [f, v] : {std::pair{"graph.input.c", g.input.c}, {"graph.input.d", g.input.d},
                      {"graph.input.h", g.input.h}, {"graph.input.w", g.input.w}})
    if (v < 1 || v > kMaxDim) fail(f, "must be in [1, " + std::to_string(kMaxDim) + "] (got " + std::to_string(v) + ")");
  if (static_cast<double>(g.input.c) * static_cast<double>(g.input.d) * static_cast<double>(g.input.h) *
          static_cast<double>(g.input.w) > kMaxElements)
    fail("graph.input", "more than 2^40 elements per sample");
}

// analyze()'s walk over the layers: the cost being filled and, for the inference working
// set, the last layer reading each tensor. Tensor ids: -2 the input, i the output of layer i
// (unless in place).
struct graph_walk {
  const graph& g;
  graph_cost gc;
  std::vector<int> consumers_last;
  int input_last = -1;

  [[nodiscard]] shape shape_of_tensor(int t) const { return t == -2 ? g.input : gc.per_layer[static_cast<std::size_t>(t)].out; }
  // Layer i reads tensor t.
  void use(std::size_t i, int t) {
    if (t == -2) input_last = static_cast<int>(i);
    else consumers_last[static_cast<std::size_t>(t)] = static_cast<int>(i);
  }
  // add / mul / concat: `skip` names an earlier layer or -2 (the graph input); its tensor id and shape.
  [[nodiscard]] std::pair<int, shape> skip_operand(std::size_t i) const {
    const int sk = g.layers[i].skip;
    if (sk < -2 || sk == -1 || sk >= static_cast<int>(i))
      fail(where(g, i) + ".skip", "must name an earlier layer (got " + std::to_string(sk) + ")");
    const int tensor = sk == -2 ? -2 : gc.per_layer[static_cast<std::size_t>(sk)].out_tensor;
    return std::pair{tensor, shape_of_tensor(sk)};
  }
};

// Layer i's input: the layer `from` names (by default the one before it) or, for an input
// layer, its own source shape. Returns the input's tensor id.
inline int connect(graph_walk& w, std::size_t i) {
  const graph& g = w.g;
  const layer& l = g.layers[i];
  layer_cost& c = w.gc.per_layer[i];
  const int src = l.from == -1 ? static_cast<int>(i) - 1 : l.from;
  if (src < -2 || src >= static_cast<int>(i) || (l.from < -1 && l.from != -2))
    fail(where(g, i) + ".from", "must name an earlier layer (got " + std::to_string(l.from) + ")");
  const int in_t = src < 0 ? -2 : w.gc.per_layer[static_cast<std::size_t>(src)].out_tensor;
  c.in = src < 0 ? g.input : w.gc.per_layer[static_cast<std::size_t>(src)].out;
  c.out_tensor = static_cast<int>(i);
  if (l.k == kind::input) {
    for (auto [f, v] : {std::pair{".source.c", l.source.c}, {".source.d", l.source.d}, {".source.h", l.source.h},
                        {".source.w", l.source.w}})
      check_size(g, i, f + 1, v);
    c.in = l.source;  // reads nothing
  } else {
    w.use(i, in_t);
  }
  c.out = c.in;
  // One kernel per layer by convention; attention below; views, inputs and p = 0 dropout none.
  w.gc.kernels += 1;
  return in_t;
}

inline void linear_cost(graph_walk& w, std::size_t i, int in_t) {
  const graph& g = w.g;
  const layer& l = w.g.layers[i];
  layer_cost& c = w.gc.per_layer[i];
  const shape& x = c.in;
  const double P = static_cast<double>(x.positions());
  check_size(g, i, "out", l.out);
  c.out.c = l.out;
  c.params = x.c * l.out + (l.bias ? l.out : 0);
  c.matmul_flops = 2.0 * static_cast<double>(x.c) * static_cast<double>(l.out) * P;
  c.flops = c.matmul_flops + (l.bias ? static_cast<double>(l.out) * P : 0);
  c.saves_tensor = in_t;  // derivatives.yaml addmm/mm: mat1 (the input) kept for the weight gradient
}

inline void conv_cost(graph_walk& w, std::size_t i, int in_t) {
  const graph& g = w.g;
  const layer& l = w.g.layers[i];
  layer_cost& c = w.gc.per_layer[i];
  const shape& x = c.in;
  if (l.dims < 1 || l.dims > 3) fail(where(g, i) + ".dims", "must be 1, 2 or 3 (got " + std::to_string(l.dims) + ")");
  check_size(g, i, "out", l.out);
  check_size(g, i, "groups", l.groups);
  if (x.c % l.groups != 0 || l.out % l.groups != 0)
    fail(where(g, i) + ".groups", "must divide in_channels=" + std::to_string(x.c) + " and out_channels=" +
                                      std::to_string(l.out) + " (got " + std::to_string(l.groups) + ")");
  std::array<std::int64_t, 3> in_sp{x.d, x.h, x.w}, out_sp{1, 1, 1};
  double kvol = 1;
  for (int a = 3 - l.dims; a < 3; ++a) {
    const auto ua = static_cast<std::size_t>(a);
    check_size(g, i, "kernel", l.kernel[ua]);
    check_size(g, i, "stride", l.stride[ua]);
    check_size(g, i, "dilation", l.dilation[ua]);
    check_size(g, i, "padding", l.padding[ua], 0);
    out_sp[ua] = out_len(in_sp[ua], l.kernel[ua], l.stride[ua], l.padding[ua], l.dilation[ua]);
    if (out_sp[ua] < 1)
      fail(where(g, i) + ".kernel", "larger than the padded input " + std::to_string(in_sp[ua]) + " (got " +
                                        std::to_string(l.kernel[ua]) + ")");
    kvol *= static_cast<double>(l.kernel[ua]);
  }
  for (int a = 0; a < 3 - l.dims; ++a) out_sp[static_cast<std::size_t>(a)] = in_sp[static_cast<std::size_t>(a)];
  c.out = {l.out, out_sp[0], out_sp[1], out_sp[2]};
  const double conv_params = static_cast<double>(l.out) * static_cast<double>(x.c / l.groups) * kvol;
  if (conv_params > kMaxElements)
    fail(where(g, i) + ".kernel", "gives " + gpuplan::detail::num(conv_params) + " weights, more than 2^40 (got volume " +
                                      gpuplan::detail::num(kvol) + ")");
  c.params = static_cast<std::int64_t>(conv_params) + (l.bias ? l.out : 0);
  // Every output element is a dot product of (in/groups)·kernel_volume terms.
  c.matmul_flops = 2.0 * static_cast<double>(c.out.elements()) * static_cast<double>(x.c / l.groups) * kvol;
  c.flops = c.matmul_flops + (l.bias ? static_cast<double>(c.out.elements()) : 0);
  c.saves_tensor = in_t;  // derivatives.yaml convolution: saves input and weight
}

inline void norm_cost(graph_walk& w, std::size_t i, int in_t) {
  const graph& g = w.g;
  graph_cost& gc = w.gc;
  const layer& l = w.g.layers[i];
  layer_cost& c = w.gc.per_layer[i];
  const shape& x = c.in;
  const double P = static_cast<double>(x.positions());
  const double E = static_cast<double>(x.elements());
  const std::int64_t C = x.c;
  if (l.norm == norm_kind::group) {
    check_size(g, i, "groups", l.groups);
    if (C % l.groups != 0)
      fail(where(g, i) + ".groups", "must divide channels=" + std::to_string(C) + " (got " + std::to_string(l.groups) + ")");
  }
  c.params = l.affine ? (l.norm == norm_kind::rms ? C : 2 * C) : 0;
  // Convention: subtract mean, scale by rstd, affine multiply and add (4/element) plus the two
  // statistics (2/element); RMS norm has no mean. Memory-bound: counted for time by bytes, not FLOPs.
  c.flops = (l.norm == norm_kind::rms ? 4.0 : 6.0) * E;
  c.saves_tensor = in_t;  // derivatives.yaml native_batch_norm/native_layer_norm/native_group_norm: input
  // plus fp32 statistics: layer/rms norm one (mean, rstd) per position, group norm one per group;
  // batch norm's save_mean/save_invstd are per channel over the whole batch (ignored per sample).
  c.saved_fixed_bytes = l.norm == norm_kind::layer ? 2 * kFp32Bytes * P
                        : l.norm == norm_kind::rms ? kFp32Bytes * P
                        : l.norm == norm_kind::group ? 2 * kFp32Bytes * static_cast<double>(l.groups) : 0;
  // Group norm reads its input twice: ATen cuda/group_norm_kernel.cu computes the statistics
  // (RowwiseMomentsCUDAKernel, one pass over X), then normalizes (reads X, writes Y).
  gc.elementwise_elements += (l.norm == norm_kind::group ? 3 : 2) * E;
}

inline void pool_cost(graph_walk& w, std::size_t i, int in_t) {
  const graph& g = w.g;
  graph_cost& gc = w.gc;
  const layer& l = w.g.layers[i];
  layer_cost& c = w.gc.per_layer[i];
  const shape& x = c.in;
  const double E = static_cast<double>(x.elements());
  std::array<std::int64_t, 3> in_sp{x.d, x.h, x.w}, out_sp{x.d, x.h, x.w};
  const bool adaptive = l.pool == pool_kind::adaptive_avg || l.pool == pool_kind::adaptive_max;
  double window = 1;
  if (l.dims < 1 || l.dims > 3) fail(where(g, i) + ".dims", "must be 1, 2 or 3 (got " + std::to_string(l.dims) + ")");
  for (int a = 3 - l.dims; a < 3; ++a) {
    const auto ua = static_cast<std::size_t>(a);
    if (adaptive) {
      check_size(g, i, "out_size", l.out_size[ua]);
      out_sp[ua] = l.out_size[ua];
      window *= static_cast<double>((in_sp[ua] + out_sp[ua] - 1) / out_sp[ua]);
    } else {
      check_size(g, i, "kernel", l.kernel[ua]);
      check_size(g, i, "stride", l.stride[ua]);
      check_size(g, i, "padding", l.padding[ua], 0);
      if (2 * l.padding[ua] > l.kernel[ua])
        fail(where(g, i) + ".padding", "must be at most half the kernel " + std::to_string(l.kernel[ua]) +
                                           " (got " + std::to_string(l.padding[ua]) + ")");
      out_sp[ua] = out_len(in_sp[ua], l.kernel[ua], l.stride[ua], l.padding[ua], 1);
      if (out_sp[ua] < 1)
        fail(where(g, i) + ".kernel", "larger than the padded input " + std::to_string(in_sp[ua]) + " (got " +
                                          std::to_string(l.kernel[ua]) + ")");
      window *= static_cast<double>(l.kernel[ua]);
    }
  }
  c.out = {x.c, out_sp[0], out_sp[1], out_sp[2]};
  const double out_e = static_cast<double>(c.out.elements());
  c.flops = out_e * window;  // one compare or add per window element
  c.saves_tensor = in_t;     // derivatives.yaml max_pool2d_with_indices / avg_pool2d / _adaptive_avg_pool2d: self
  if (l.pool == pool_kind::max || l.pool == pool_kind::adaptive_max) c.saved_fixed_bytes = kInt64Bytes * out_e;
  gc.elementwise_elements += E + out_e;
}

inline void activation_cost(graph_walk& w, std::size_t i, int in_t) {
  graph_cost& gc = w.gc;
  const layer& l = w.g.layers[i];
  layer_cost& c = w.gc.per_layer[i];
  const shape& x = c.in;
  const double E = static_cast<double>(x.elements());
  c.flops = E;  // convention: one FLOP per element (GELU/SiLU cost more, memory-bound either way)
  if (l.act == act_kind::relu && l.inplace) {
    c.out_tensor = in_t;    // relu_ overwrites its input
    c.saves_tensor = in_t;  // derivatives.yaml relu_/threshold_: result (the overwritten tensor)
  } else if (l.act == act_kind::relu || l.act == act_kind::sigmoid) {
    c.saves_tensor = static_cast<int>(i);  // derivatives.yaml relu / sigmoid: result
  } else {
    // derivatives.yaml gelu / silu / hardtanh: self; silu_ and hardtanh_ (ReLU6 in place) save a
    // copy of their input, which costs the same (measured with torch 1.13, tests/python/test_trace.py).
    c.saves_tensor = in_t;
  }
  gc.elementwise_elements += 2 * E;
}

inline void attention_cost(graph_walk& w, std::size_t i, int in_t) {
  const graph& g = w.g;
  graph_cost& gc = w.gc;
  const layer& l = w.g.layers[i];
  layer_cost& c = w.gc.per_layer[i];
  const shape& x = c.in;
  const double P = static_cast<double>(x.positions());
  check_size(g, i, "heads", l.heads);
  if (x.c % l.heads != 0)
    fail(where(g, i) + ".heads", "must divide the width " + std::to_string(x.c) + " (got " + std::to_string(l.heads) + ")");
  const bool cross = l.kv_len > 0 || l.kv_dim > 0;
  if (cross) {
    check_size(g, i, "kv_len", l.kv_len);
    check_size(g, i, "kv_dim", l.kv_dim);
  }
  const double D = static_cast<double>(x.c), L = P;
  const double Lk = cross ? static_cast<double>(l.kv_len) : L;
  const double Dk = cross ? static_cast<double>(l.kv_dim) : D;
  const double H = static_cast<double>(l.heads);
  // nn.MultiheadAttention: in_proj (q: D·D, k and v: D·kdim each) + 3D bias, out_proj D·D + D;
  // diffusers Attention: the same without the q/k/v bias (attention_processor.py, bias=False).
  c.params = static_cast<std::int64_t>(D * D + 2 * D * Dk + (l.qkv_bias ? 3 * D : 0) + D * D + D);
  gc.kernels += 4;  // q, k, v and out projections besides the attention kernel
  const double proj = 2 * L * D * D + 2 * 2 * Lk * Dk * D + 2 * L * D * D;
  const double attn = 2 * 2 * L * Lk * D;  // QK^T and PV, summed over heads
  c.matmul_flops = proj + attn;
  c.flops = c.matmul_flops + 5 * H * L * Lk;  // scale, mask, softmax (exp, sum, divide) per score
  c.saves_tensor = in_t;  // in_proj linear: its input
  // q, k, v and the attention output (out_proj's input); flash: + logsumexp (fp32, per head and query)
  // (derivatives.yaml _scaled_dot_product_flash_attention: query, key, value, output, logsumexp);
  // eager: + the softmax output, which softmax and the PV bmm share (derivatives.yaml _softmax: result).
  c.saved_extra_elements = L * D + 2 * Lk * D + L * D + (l.flash ? 0 : H * L * Lk);
  c.saved_fixed_bytes = l.flash ? kFp32Bytes * H * L : 0;
  if (cross) c.saved_extra_elements += Lk * Dk;  // the context, input of the k/v projections
}

inline void upsample_cost(graph_walk& w, std::size_t i) {
  const graph& g = w.g;
  graph_cost& gc = w.gc;
  const layer& l = w.g.layers[i];
  layer_cost& c = w.gc.per_layer[i];
  const shape& x = c.in;
  const double E = static_cast<double>(x.elements());
  check_size(g, i, "factor", l.factor);
  if (l.dims < 1 || l.dims > 3) fail(where(g, i) + ".dims", "must be 1, 2 or 3 (got " + std::to_string(l.dims) + ")");
  c.out = x;  // the last `dims` spatial axes grow by `factor`
  if (l.dims >= 1) c.out.w *= l.factor;
  if (l.dims >= 2) c.out.h *= l.factor;
  if (l.dims >= 3) c.out.d *= l.factor;
  c.flops = static_cast<double>(c.out.elements());  // nearest: one copy per output element
  // derivatives.yaml upsample_nearest*: only sizes are kept, no tensor
  gc.elementwise_elements += E + static_cast<double>(c.out.elements());
}

inline void embedding_cost(graph_walk& w, std::size_t i) {
  const graph& g = w.g;
  const layer& l = w.g.layers[i];
  layer_cost& c = w.gc.per_layer[i];
  const shape& x = c.in;
  const double P = static_cast<double>(x.positions());
  check_size(g, i, "vocab", l.vocab);
  check_size(g, i, "out", l.out);
  c.out = {l.out, x.d, x.h, x.w};
  c.params = l.vocab * l.out;
  c.saved_fixed_bytes = kInt64Bytes * P;  // derivatives.yaml embedding: indices (int64)
}

inline void add_cost(graph_walk& w, std::size_t i, int in_t) {
  const graph& g = w.g;
  graph_cost& gc = w.gc;
  const layer& l = w.g.layers[i];
  layer_cost& c = w.gc.per_layer[i];
  const shape& x = c.in;
  const double E = static_cast<double>(x.elements());
  const auto [sk_t, s2] = w.skip_operand(i);
  // Same shape, or one side one value per channel broadcast over the other's positions.
  const bool x_per_channel = x.positions() == 1 && s2.positions() > 1, s2_per_channel = s2.positions() == 1;
  if (s2.c != x.c || !(s2 == x || x_per_channel || s2_per_channel))
    fail(where(g, i) + ".skip", "shape " + std::to_string(s2.c) + "x" + std::to_string(s2.positions()) +
                                     " does not match the input " + std::to_string(x.c) + "x" + std::to_string(x.positions()));
  w.use(i, sk_t);
  c.out = x_per_channel ? s2 : x;
  if (l.inplace && !x_per_channel) c.out_tensor = in_t;  // `out += identity` (torchvision BasicBlock/Bottleneck)
  const double out_e = static_cast<double>(c.out.elements());
  c.flops = out_e;  // derivatives.yaml add: nothing saved
  gc.elementwise_elements += E + static_cast<double>(s2.elements()) + out_e;
}

inline void concat_cost(graph_walk& w, std::size_t i) {
  const graph& g = w.g;
  graph_cost& gc = w.gc;
  layer_cost& c = w.gc.per_layer[i];
  const shape& x = c.in;
  const auto [sk_t, s2] = w.skip_operand(i);
  if (s2.d != x.d || s2.h != x.h || s2.w != x.w)
    fail(where(g, i) + ".skip", "positions " + std::to_string(s2.d) + "x" + std::to_string(s2.h) + "x" +
                                     std::to_string(s2.w) + " do not match the input " + std::to_string(x.d) + "x" +
                                     std::to_string(x.h) + "x" + std::to_string(x.w));
  w.use(i, sk_t);
  c.out.c = x.c + s2.c;
  // derivatives.yaml cat: only the sizes are kept, no tensor. One copy of both operands.
  gc.elementwise_elements += 2 * static_cast<double>(c.out.elements());
}

inline void mul_cost(graph_walk& w, std::size_t i, int in_t) {
  const graph& g = w.g;
  graph_cost& gc = w.gc;
  layer_cost& c = w.gc.per_layer[i];
  const shape& x = c.in;
  const double E = static_cast<double>(x.elements());
  const auto [sk_t, s2] = w.skip_operand(i);
  const bool x_per_channel = x.positions() == 1, s2_per_channel = s2.positions() == 1;
  if (s2.c != x.c || !(s2 == x || x_per_channel || s2_per_channel))
    fail(where(g, i) + ".skip", "shape " + std::to_string(s2.c) + "x" + std::to_string(s2.positions()) +
                                     " does not broadcast with the input " + std::to_string(x.c) + "x" + std::to_string(x.positions()));
  w.use(i, sk_t);
  c.out = x_per_channel ? s2 : x;
  const double out_e = static_cast<double>(c.out.elements());
  c.flops = out_e;
  // derivatives.yaml mul: each operand is saved for the other's gradient (both require grad here).
  c.saves_tensor = in_t;
  c.saves_tensor2 = sk_t;
  gc.elementwise_elements += E + static_cast<double>(s2.elements()) + out_e;
}

inline void dropout_cost(graph_walk& w, std::size_t i, int in_t) {
  const graph& g = w.g;
  graph_cost& gc = w.gc;
  const layer& l = w.g.layers[i];
  layer_cost& c = w.gc.per_layer[i];
  const shape& x = c.in;
  const double E = static_cast<double>(x.elements());
  if (!(l.p >= 0 && l.p < 1)) fail(where(g, i) + ".p", "must be in [0, 1) (got " + gpuplan::detail::num(l.p) + ")");
  // ATen Dropout.cpp: p == 0 returns the input unchanged; otherwise native_dropout saves a bool mask.
  if (l.p > 0) {
    c.flops = E;
    c.saved_fixed_bytes = kBoolBytes * E;
    gc.elementwise_elements += 2 * E;
  } else {
    c.out_tensor = in_t;
    gc.kernels -= 1;
    gc.host_ops += 1;  // no kernel, but the call is dispatched
  }
}

// The layer's output shape, parameters, FLOPs and saves, by its kind.
inline void cost_of_layer(graph_walk& w, std::size_t i, int in_t) {
  graph_cost& gc = w.gc;
  layer_cost& c = gc.per_layer[i];
  const shape& x = c.in;
  const double E = static_cast<double>(x.elements());
  switch (w.g.layers[i].k) {
    case kind::linear: linear_cost(w, i, in_t); break;
    case kind::conv: conv_cost(w, i, in_t); break;
    case kind::norm: norm_cost(w, i, in_t); break;
    case kind::pool: pool_cost(w, i, in_t); break;
    case kind::activation: activation_cost(w, i, in_t); break;
    case kind::attention: attention_cost(w, i, in_t); break;
    case kind::upsample: upsample_cost(w, i); break;
    case kind::embedding: embedding_cost(w, i); break;
    case kind::add: add_cost(w, i, in_t); break;
    case kind::concat: concat_cost(w, i); break;
    case kind::input:
      gc.kernels -= 1;  // not a kernel: the tensor exists before the forward
      break;
    case kind::mul: mul_cost(w, i, in_t); break;
    case kind::dropout: dropout_cost(w, i, in_t); break;
    case kind::flatten:
      c.out = {x.elements(), 1, 1, 1};
      c.out_tensor = in_t;  // a view
      gc.kernels -= 1;
      gc.host_ops += 1;  // a view is no kernel, but a dispatched call
      break;
    case kind::class_token:
      c.out = {x.c, 1, x.positions() + 1, 1};
      c.params = x.c;  // torchvision VisionTransformer.class_token (1, 1, D); cat saves nothing
      gc.elementwise_elements += 2 * E;
      break;
    case kind::position_embedding:
      c.params = x.elements();  // learned (1, L, D) added to the input; add saves nothing
      c.flops = E;
      gc.elementwise_elements += 2 * E;
      break;
    case kind::take_token:
      c.out = {x.c, 1, 1, 1};
      c.out_tensor = in_t;  // x[:, 0] is a view
      gc.kernels -= 1;
      gc.host_ops += 1;
      break;
    case kind::layer_scale:
      c.params = x.c;  // ConvNeXt's gamma (C, 1, 1)
      c.flops = E;
      c.saves_tensor = in_t;  // derivatives.yaml mul: self, for the gradient of the parameter
      gc.elementwise_elements += 2 * E;
      break;
  }
}

// The layer's output and parameters within 2^40, its host_ops within kMaxHostOps; its
// figures added to the graph's.
inline void add_totals(graph_walk& w, std::size_t i) {
  const graph& g = w.g;
  const layer& l = g.layers[i];
  const layer_cost& c = w.gc.per_layer[i];
  graph_cost& gc = w.gc;
  if (const double oe = static_cast<double>(c.out.c) * static_cast<double>(c.out.d) * static_cast<double>(c.out.h) *
                        static_cast<double>(c.out.w);
      oe > kMaxElements)
    fail(where(g, i), "output of " + gpuplan::detail::num(oe) + " elements per sample, more than 2^40");
  if (static_cast<double>(c.params) > kMaxElements)
    fail(where(g, i), gpuplan::detail::num(static_cast<double>(c.params)) + " parameters, more than 2^40");
  if (l.host_ops < 0 || l.host_ops > kMaxHostOps)
    fail(where(g, i) + ".host_ops", "must be in [0, " + std::to_string(kMaxHostOps) + "] (got " +
                                        std::to_string(l.host_ops) + ")");
  gc.host_ops += static_cast<double>(l.host_ops);
  gc.params += c.params;
  gc.flops += c.flops;
  gc.matmul_flops += c.matmul_flops;
  gc.saved_elements += c.saved_extra_elements;
  gc.saved_fixed_bytes += c.saved_fixed_bytes;
}

// Saved activations: each saved tensor once (conv and the in-place ReLU before it save the same one).
inline void count_saved(const graph& g, graph_cost& gc) {
  const std::size_t n = gc.per_layer.size();
  std::vector<char> saved(n, 0);
  bool input_saved = false;
  for (const auto& c : gc.per_layer) {
    for (const int t : {c.saves_tensor, c.saves_tensor2}) {
      if (t == -2) input_saved = true;
      else if (t >= 0) saved[static_cast<std::size_t>(t)] = 1;
    }
  }
  auto elems = [&](std::size_t t) { return static_cast<double>(gc.per_layer[t].out.elements()); };
  if (input_saved) gc.saved_elements += static_cast<double>(g.input.elements());
  for (std::size_t t = 0; t < n; ++t)
    if (saved[t]) gc.saved_elements += elems(t);
}

// Inference working set: at layer i, every tensor produced so far and still to be read, plus i's output.
inline void peak_live(graph_walk& w) {
  graph_cost& gc = w.gc;
  const std::size_t n = gc.per_layer.size();
  auto elems = [&](std::size_t t) { return static_cast<double>(gc.per_layer[t].out.elements()); };
  if (const int ot = gc.per_layer.back().out_tensor; ot >= 0) w.consumers_last[static_cast<std::size_t>(ot)] = static_cast<int>(n);
  else w.input_last = static_cast<int>(n);  // the result outlives the graph
  // Tensor t is alive over layers [t, max(t, its last reader)]: a sweep over births and deaths.
  std::vector<double> delta(n + 1, 0.0);
  for (std::size_t t = 0; t < n; ++t) {
    if (gc.per_layer[t].out_tensor != static_cast<int>(t)) continue;  // views and in-place results
    const std::size_t last = std::max(t, static_cast<std::size_t>(std::max(w.consumers_last[t], 0)));
    delta[t] += elems(t);
    delta[std::min(last + 1, n)] -= elems(t);
  }
  double alive = 0;
  for (std::size_t i = 0; i < n; ++i) {
    alive += delta[i];
    const double live = alive + (w.input_last >= static_cast<int>(i) ? static_cast<double>(w.g.input.elements()) : 0);
    gc.peak_live_elements = std::max(gc.peak_live_elements, live);
  }
}
}  // namespace detail

// Propagates shapes and counts parameters, FLOPs and saved tensors. Throws
// gpuplan::config_error naming the layer and field for an impossible layout.
inline graph_cost analyze(const graph& g) {
  detail::check_input(g);
  const std::size_t n = g.layers.size();
  detail::graph_walk w{g, {}, std::vector<int>(n, -1), -1};
  w.gc.per_layer.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int in_t = detail::connect(w, i);
    detail::cost_of_layer(w, i, in_t);
    detail::add_totals(w, i);
  }
  w.gc.output = w.gc.per_layer.back().out;
  w.gc.host_ops += w.gc.kernels;
  detail::count_saved(g, w.gc);
  detail::peak_live(w);
  return std::move(w.gc);
}

}  // namespace gpuplan::layers
