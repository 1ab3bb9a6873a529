// layers.hpp — a model as a graph of typed layers (linear, convolution, norm,
// pooling, activation, attention, resampling, embedding, residual add, ...) with
// tensor shapes propagated from the input. For each layer: the exact parameter
// count, the forward FLOPs (one multiply-add = 2 FLOPs) and the tensors PyTorch's
// autograd saves for backward (tools/autograd/derivatives.yaml). docs/vision.md.
//
// Shapes are per sample: c = channels (or features, or hidden size), d/h/w = the
// spatial positions. A token sequence of length L and width D is {c = D, h = L}:
// a linear layer mixes c at every position, exactly as nn.Linear on (..., D).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpuplan/error.hpp"

namespace gpuplan::layers {

struct shape {
  std::int64_t c = 0, d = 1, h = 1, w = 1;
  [[nodiscard]] constexpr std::int64_t positions() const noexcept { return d * h * w; }
  [[nodiscard]] constexpr std::int64_t elements() const noexcept { return c * d * h * w; }
  friend constexpr bool operator==(const shape&, const shape&) = default;
};

enum class kind : std::uint8_t {
  linear, conv, norm, pool, activation, attention, upsample, embedding, add, dropout,
  flatten, class_token, position_embedding, take_token, layer_scale, mul,
  concat,  // torch.cat along channels with `skip` (diffusers UNet up blocks)
  input    // a second graph input of shape `source` (timestep embedding, conditioning vectors)
};
enum class norm_kind : std::uint8_t { batch, group, layer, rms };
enum class pool_kind : std::uint8_t { max, avg, adaptive_avg, adaptive_max };
enum class act_kind : std::uint8_t { relu, gelu, silu, sigmoid, relu6 };  // relu6: hardtanh(0, 6) (MobileNetV2)

// One layer. Fields that do not apply to its kind are ignored. Spatial arrays are
// ordered {d, h, w}; conv1d uses w, conv2d h and w, conv3d all three.
struct layer {
  kind k = kind::linear;
  std::string name;
  int from = -1;  // index of the layer whose output is this layer's input; -1: the previous one
  int skip = -1;  // add, mul: the other operand (a layer index; -2: the graph input)
  std::int64_t out = 0;  // linear/conv: output features/channels; embedding: width
  bool bias = true;
  int dims = 2;  // conv/pool: 1, 2 or 3 spatial dimensions
  std::array<std::int64_t, 3> kernel{1, 1, 1}, stride{1, 1, 1}, padding{0, 0, 0}, dilation{1, 1, 1};
  std::int64_t groups = 1;  // conv groups; group norm: number of groups
  norm_kind norm = norm_kind::batch;
  bool affine = true;
  pool_kind pool = pool_kind::max;
  std::array<std::int64_t, 3> out_size{1, 1, 1};  // adaptive pooling output {d, h, w}
  act_kind act = act_kind::relu;
  bool inplace = false;                            // ReLU(inplace=True)
  std::int64_t heads = 1;                          // attention
  bool flash = true;                               // attention: fused SDPA (flash) or eager softmax(QK^T)V
  std::int64_t kv_len = 0, kv_dim = 0;             // cross attention: context length and width (0: self)
  std::int64_t factor = 2;                         // upsample: integer scale on every spatial dim
  std::int64_t vocab = 0;                          // embedding rows
  double p = 0;                                    // dropout probability
  bool qkv_bias = true;                            // attention: q/k/v projections have a bias (diffusers Attention: False)
  shape source{};                                  // input: the shape of the tensor it introduces
  // Tensor calls the module's Python forward makes besides this layer's own kernels (views,
  // reshapes, dtype casts, eval-mode dropout, scalar arithmetic the graph folds away), each a
  // dispatch on the host in eager PyTorch: graph_cost::host_ops. 0 for plain torch.nn layers.
  std::int64_t host_ops = 0;
};

// ---- layer constructors -----------------------------------------------------
namespace make {
inline std::array<std::int64_t, 3> sq(int dims, std::int64_t v) {
  return dims == 1 ? std::array<std::int64_t, 3>{1, 1, v}
         : dims == 2 ? std::array<std::int64_t, 3>{1, v, v} : std::array<std::int64_t, 3>{v, v, v};
}
inline std::array<std::int64_t, 3> zero_pad(int dims, std::int64_t v) {
  auto a = sq(dims, v);
  if (dims < 3) a[0] = 0;
  if (dims < 2) a[1] = 0;
  return a;
}
inline layer linear(std::int64_t out, bool bias = true) {
  layer l; l.k = kind::linear; l.out = out; l.bias = bias; return l;
}
inline layer conv(int dims, std::int64_t out, std::int64_t k, std::int64_t stride = 1, std::int64_t pad = 0,
                  std::int64_t groups = 1, bool bias = true, std::int64_t dilation = 1) {
  layer l; l.k = kind::conv; l.dims = dims; l.out = out; l.kernel = sq(dims, k); l.stride = sq(dims, stride);
  l.padding = zero_pad(dims, pad); l.dilation = sq(dims, dilation); l.groups = groups; l.bias = bias; return l;
}
inline layer conv2d(std::int64_t out, std::int64_t k, std::int64_t stride = 1, std::int64_t pad = 0,
                    std::int64_t groups = 1, bool bias = true) {
  return conv(2, out, k, stride, pad, groups, bias);
}
inline layer norm(norm_kind n, std::int64_t groups = 1, bool affine = true) {
  layer l; l.k = kind::norm; l.norm = n; l.groups = groups; l.affine = affine; return l;
}
inline layer batch_norm() { return norm(norm_kind::batch); }
inline layer layer_norm() { return norm(norm_kind::layer); }
inline layer rms_norm() { return norm(norm_kind::rms); }
inline layer group_norm(std::int64_t g) { return norm(norm_kind::group, g); }
inline layer activation(act_kind a, bool inplace = false) {
  layer l; l.k = kind::activation; l.act = a; l.inplace = inplace; return l;
}
inline layer relu(bool inplace = true) { return activation(act_kind::relu, inplace); }
inline layer gelu() { return activation(act_kind::gelu); }
inline layer silu() { return activation(act_kind::silu); }
inline layer sigmoid() { return activation(act_kind::sigmoid); }
inline layer relu6(bool inplace = true) { return activation(act_kind::relu6, inplace); }
inline layer pool(pool_kind p, int dims, std::int64_t k, std::int64_t stride, std::int64_t pad = 0) {
  layer l; l.k = kind::pool; l.pool = p; l.dims = dims; l.kernel = sq(dims, k); l.stride = sq(dims, stride);
  l.padding = zero_pad(dims, pad); return l;
}
inline layer max_pool2d(std::int64_t k, std::int64_t stride, std::int64_t pad = 0) { return pool(pool_kind::max, 2, k, stride, pad); }
inline layer avg_pool2d(std::int64_t k, std::int64_t stride, std::int64_t pad = 0) { return pool(pool_kind::avg, 2, k, stride, pad); }
inline layer adaptive_avg_pool2d(std::int64_t h, std::int64_t w) {
  layer l; l.k = kind::pool; l.pool = pool_kind::adaptive_avg; l.dims = 2; l.out_size = {1, h, w}; return l;
}
inline layer self_attention(std::int64_t heads, bool flash = true) {
  layer l; l.k = kind::attention; l.heads = heads; l.flash = flash; return l;
}
inline layer cross_attention(std::int64_t heads, std::int64_t kv_len, std::int64_t kv_dim, bool flash = true) {
  layer l = self_attention(heads, flash); l.kv_len = kv_len; l.kv_dim = kv_dim; return l;
}
// diffusers Attention (attention_processor.py): separate to_q/to_k/to_v Linear(bias=`qkv_bias`),
// to_out[0] Linear(bias=True); kv_len = 0 for self attention.
inline layer diffusers_attention(std::int64_t heads, std::int64_t kv_len = 0, std::int64_t kv_dim = 0, bool qkv_bias = false,
                                 bool flash = true) {
  layer l = self_attention(heads, flash); l.kv_len = kv_len; l.kv_dim = kv_dim; l.qkv_bias = qkv_bias; return l;
}
inline layer upsample(std::int64_t factor, int dims = 2) { layer l; l.k = kind::upsample; l.factor = factor; l.dims = dims; return l; }
inline layer embedding(std::int64_t vocab, std::int64_t width) {
  layer l; l.k = kind::embedding; l.vocab = vocab; l.out = width; return l;
}
// Elementwise sum with `skip`; either side may be one value per channel, broadcast over the
// positions (diffusers ResnetBlock2D: `hidden_states + temb[:, :, None, None]`).
inline layer add(int skip, bool inplace = false) { layer l; l.k = kind::add; l.skip = skip; l.inplace = inplace; return l; }
// torch.cat([input, skip], dim=1): channels add up, positions must match.
inline layer concat(int skip) { layer l; l.k = kind::concat; l.skip = skip; return l; }
// A tensor that does not come from another layer (a second model input), of shape `s`.
inline layer input(shape s) { layer l; l.k = kind::input; l.source = s; return l; }
// Elementwise product with `skip`; either side may be one value per channel (squeeze-excitation).
inline layer mul(int skip) { layer l; l.k = kind::mul; l.skip = skip; return l; }
inline layer dropout(double p) { layer l; l.k = kind::dropout; l.p = p; return l; }
inline layer flatten() { layer l; l.k = kind::flatten; return l; }
inline layer class_token() { layer l; l.k = kind::class_token; return l; }
inline layer position_embedding() { layer l; l.k = kind::position_embedding; return l; }
inline layer take_token() { layer l; l.k = kind::take_token; return l; }
inline layer layer_scale() { layer l; l.k = kind::layer_scale; return l; }
}  // namespace make

// A model: the input shape and the layers in topological order (each layer reads
// `from`, by default the one before it; `add` also reads `skip`).
struct graph {
  std::string name;
  shape input;
  std::vector<layer> layers;
  // Layer ranges [first, last] that torch.utils.checkpoint wraps under gradient
  // checkpointing (diffusers: every ResnetBlock2D and BasicTransformerBlock); optional.
  std::vector<std::array<int, 2>> segments;
  // Appends a layer (optionally named and reading `from`) and returns its index.
  int push(layer l, std::string layer_name = {}, int from = -1) {
    l.name = std::move(layer_name);
    l.from = from;
    layers.push_back(std::move(l));
    return static_cast<int>(layers.size()) - 1;
  }
  [[nodiscard]] int last() const noexcept { return static_cast<int>(layers.size()) - 1; }
};

// GEGLU (diffusers attention.py GEGLU, Shazeer 2020): proj = Linear(dim, 2·inner), chunk into
// hidden and gate, hidden · gelu(gate). Pushed as two Linear(dim, inner) reading `from`, GELU
// on the gate and a mul: the same parameters, FLOPs and saved tensors (the 2·inner projection
// output, which both chunks view, and the GELU output). Returns the mul's index.
inline int push_geglu(graph& g, std::int64_t inner, const std::string& name, int from = -1) {
  const int x = from != -1 ? from : g.layers.empty() ? -2 : g.last();  // -2: the graph input
  const int hidden = g.push(make::linear(inner), name + ".proj[hidden]", x);
  g.push(make::linear(inner), name + ".proj[gate]", x);
  g.push(make::gelu(), name + ".gelu");
  return g.push(make::mul(hidden), name + ".mul");
}

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

// Propagates shapes and counts parameters, FLOPs and saved tensors. Throws
// gpuplan::config_error naming the layer and field for an impossible layout.
inline graph_cost analyze(const graph& g) {
  namespace dt = detail;
  using gpuplan::detail::fail;
  const auto n = g.layers.size();
  if (n == 0) fail("graph.layers", "must not be empty (got 0 layers)");
  for (auto [f, v] : {std::pair{"graph.input.c", g.input.c}, {"graph.input.d", g.input.d},
                      {"graph.input.h", g.input.h}, {"graph.input.w", g.input.w}})
    if (v < 1 || v > dt::kMaxDim) fail(f, "must be in [1, " + std::to_string(dt::kMaxDim) + "] (got " + std::to_string(v) + ")");
  if (static_cast<double>(g.input.c) * static_cast<double>(g.input.d) * static_cast<double>(g.input.h) *
          static_cast<double>(g.input.w) > dt::kMaxElements)
    fail("graph.input", "more than 2^40 elements per sample");
  graph_cost gc;
  gc.per_layer.resize(n);
  // Tensor ids: -2 the input, i the output of layer i (unless in place).
  auto shape_of_tensor = [&](int t) { return t == -2 ? g.input : gc.per_layer[static_cast<std::size_t>(t)].out; };
  std::vector<int> consumers_last(n, -1);
  int input_last = -1;
  for (std::size_t i = 0; i < n; ++i) {
    const layer& l = g.layers[i];
    layer_cost& c = gc.per_layer[i];
    const int src = l.from == -1 ? static_cast<int>(i) - 1 : l.from;
    if (src < -2 || src >= static_cast<int>(i) || (l.from < -1 && l.from != -2))
      fail(dt::where(g, i) + ".from", "must name an earlier layer (got " + std::to_string(l.from) + ")");
    const int in_t = src < 0 ? -2 : gc.per_layer[static_cast<std::size_t>(src)].out_tensor;
    c.in = src < 0 ? g.input : gc.per_layer[static_cast<std::size_t>(src)].out;
    c.out_tensor = static_cast<int>(i);
    auto use = [&](int t) {
      if (t == -2) input_last = static_cast<int>(i);
      else consumers_last[static_cast<std::size_t>(t)] = static_cast<int>(i);
    };
    // add / mul / concat: `skip` names an earlier layer or -2 (the graph input); its tensor id and shape.
    auto skip_operand = [&] {
      const int sk = l.skip;
      if (sk < -2 || sk == -1 || sk >= static_cast<int>(i))
        fail(dt::where(g, i) + ".skip", "must name an earlier layer (got " + std::to_string(sk) + ")");
      const int tensor = sk == -2 ? -2 : gc.per_layer[static_cast<std::size_t>(sk)].out_tensor;
      return std::pair{tensor, shape_of_tensor(sk)};
    };
    if (l.k == kind::input) {
      for (auto [f, v] : {std::pair{".source.c", l.source.c}, {".source.d", l.source.d}, {".source.h", l.source.h},
                          {".source.w", l.source.w}})
        dt::check_size(g, i, f + 1, v);
      c.in = l.source;  // reads nothing
    } else {
      use(in_t);
    }
    c.out = c.in;
    // One kernel per layer by convention; attention below; views, inputs and p = 0 dropout none.
    gc.kernels += 1;
    const shape& x = c.in;
    const double P = static_cast<double>(x.positions());
    const double E = static_cast<double>(x.elements());
    switch (l.k) {
      case kind::linear: {
        dt::check_size(g, i, "out", l.out);
        c.out.c = l.out;
        c.params = x.c * l.out + (l.bias ? l.out : 0);
        c.matmul_flops = 2.0 * static_cast<double>(x.c) * static_cast<double>(l.out) * P;
        c.flops = c.matmul_flops + (l.bias ? static_cast<double>(l.out) * P : 0);
        c.saves_tensor = in_t;  // derivatives.yaml addmm/mm: mat1 (the input) kept for the weight gradient
        break;
      }
      case kind::conv: {
        if (l.dims < 1 || l.dims > 3) fail(dt::where(g, i) + ".dims", "must be 1, 2 or 3 (got " + std::to_string(l.dims) + ")");
        dt::check_size(g, i, "out", l.out);
        dt::check_size(g, i, "groups", l.groups);
        if (x.c % l.groups != 0 || l.out % l.groups != 0)
          fail(dt::where(g, i) + ".groups", "must divide in_channels=" + std::to_string(x.c) + " and out_channels=" +
                                                std::to_string(l.out) + " (got " + std::to_string(l.groups) + ")");
        std::array<std::int64_t, 3> in_sp{x.d, x.h, x.w}, out_sp{1, 1, 1};
        double kvol = 1;
        for (int a = 3 - l.dims; a < 3; ++a) {
          const auto ua = static_cast<std::size_t>(a);
          dt::check_size(g, i, "kernel", l.kernel[ua]);
          dt::check_size(g, i, "stride", l.stride[ua]);
          dt::check_size(g, i, "dilation", l.dilation[ua]);
          dt::check_size(g, i, "padding", l.padding[ua], 0);
          out_sp[ua] = dt::out_len(in_sp[ua], l.kernel[ua], l.stride[ua], l.padding[ua], l.dilation[ua]);
          if (out_sp[ua] < 1)
            fail(dt::where(g, i) + ".kernel", "larger than the padded input " + std::to_string(in_sp[ua]) + " (got " +
                                                  std::to_string(l.kernel[ua]) + ")");
          kvol *= static_cast<double>(l.kernel[ua]);
        }
        for (int a = 0; a < 3 - l.dims; ++a) out_sp[static_cast<std::size_t>(a)] = in_sp[static_cast<std::size_t>(a)];
        c.out = {l.out, out_sp[0], out_sp[1], out_sp[2]};
        const double conv_params = static_cast<double>(l.out) * static_cast<double>(x.c / l.groups) * kvol;
        if (conv_params > dt::kMaxElements)
          fail(dt::where(g, i) + ".kernel", "gives " + gpuplan::detail::num(conv_params) + " weights, more than 2^40 (got volume " +
                                                gpuplan::detail::num(kvol) + ")");
        c.params = static_cast<std::int64_t>(conv_params) + (l.bias ? l.out : 0);
        // Every output element is a dot product of (in/groups)·kernel_volume terms.
        c.matmul_flops = 2.0 * static_cast<double>(c.out.elements()) * static_cast<double>(x.c / l.groups) * kvol;
        c.flops = c.matmul_flops + (l.bias ? static_cast<double>(c.out.elements()) : 0);
        c.saves_tensor = in_t;  // derivatives.yaml convolution: saves input and weight
        break;
      }
      case kind::norm: {
        const std::int64_t C = x.c;
        if (l.norm == norm_kind::group) {
          dt::check_size(g, i, "groups", l.groups);
          if (C % l.groups != 0)
            fail(dt::where(g, i) + ".groups", "must divide channels=" + std::to_string(C) + " (got " + std::to_string(l.groups) + ")");
        }
        c.params = l.affine ? (l.norm == norm_kind::rms ? C : 2 * C) : 0;
        // Convention: subtract mean, scale by rstd, affine multiply and add (4/element) plus the two
        // statistics (2/element); RMS norm has no mean. Memory-bound: counted for time by bytes, not FLOPs.
        c.flops = (l.norm == norm_kind::rms ? 4.0 : 6.0) * E;
        c.saves_tensor = in_t;  // derivatives.yaml native_batch_norm/native_layer_norm/native_group_norm: input
        // plus fp32 statistics: layer/rms norm one (mean, rstd) per position, group norm one per group;
        // batch norm's save_mean/save_invstd are per channel over the whole batch (ignored per sample).
        c.saved_fixed_bytes = l.norm == norm_kind::layer ? 2 * dt::kFp32Bytes * P
                              : l.norm == norm_kind::rms ? dt::kFp32Bytes * P
                              : l.norm == norm_kind::group ? 2 * dt::kFp32Bytes * static_cast<double>(l.groups) : 0;
        // Group norm reads its input twice: ATen cuda/group_norm_kernel.cu computes the statistics
        // (RowwiseMomentsCUDAKernel, one pass over X), then normalizes (reads X, writes Y).
        gc.elementwise_elements += (l.norm == norm_kind::group ? 3 : 2) * E;
        break;
      }
      case kind::pool: {
        std::array<std::int64_t, 3> in_sp{x.d, x.h, x.w}, out_sp{x.d, x.h, x.w};
        const bool adaptive = l.pool == pool_kind::adaptive_avg || l.pool == pool_kind::adaptive_max;
        double window = 1;
        if (l.dims < 1 || l.dims > 3) fail(dt::where(g, i) + ".dims", "must be 1, 2 or 3 (got " + std::to_string(l.dims) + ")");
        for (int a = 3 - l.dims; a < 3; ++a) {
          const auto ua = static_cast<std::size_t>(a);
          if (adaptive) {
            dt::check_size(g, i, "out_size", l.out_size[ua]);
            out_sp[ua] = l.out_size[ua];
            window *= static_cast<double>((in_sp[ua] + out_sp[ua] - 1) / out_sp[ua]);
          } else {
            dt::check_size(g, i, "kernel", l.kernel[ua]);
            dt::check_size(g, i, "stride", l.stride[ua]);
            dt::check_size(g, i, "padding", l.padding[ua], 0);
            if (2 * l.padding[ua] > l.kernel[ua])
              fail(dt::where(g, i) + ".padding", "must be at most half the kernel " + std::to_string(l.kernel[ua]) +
                                                     " (got " + std::to_string(l.padding[ua]) + ")");
            out_sp[ua] = dt::out_len(in_sp[ua], l.kernel[ua], l.stride[ua], l.padding[ua], 1);
            if (out_sp[ua] < 1)
              fail(dt::where(g, i) + ".kernel", "larger than the padded input " + std::to_string(in_sp[ua]) + " (got " +
                                                    std::to_string(l.kernel[ua]) + ")");
            window *= static_cast<double>(l.kernel[ua]);
          }
        }
        c.out = {x.c, out_sp[0], out_sp[1], out_sp[2]};
        const double out_e = static_cast<double>(c.out.elements());
        c.flops = out_e * window;  // one compare or add per window element
        c.saves_tensor = in_t;     // derivatives.yaml max_pool2d_with_indices / avg_pool2d / _adaptive_avg_pool2d: self
        if (l.pool == pool_kind::max || l.pool == pool_kind::adaptive_max) c.saved_fixed_bytes = dt::kInt64Bytes * out_e;
        gc.elementwise_elements += E + out_e;
        break;
      }
      case kind::activation: {
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
        break;
      }
      case kind::attention: {
        dt::check_size(g, i, "heads", l.heads);
        if (x.c % l.heads != 0)
          fail(dt::where(g, i) + ".heads", "must divide the width " + std::to_string(x.c) + " (got " + std::to_string(l.heads) + ")");
        const bool cross = l.kv_len > 0 || l.kv_dim > 0;
        if (cross) {
          dt::check_size(g, i, "kv_len", l.kv_len);
          dt::check_size(g, i, "kv_dim", l.kv_dim);
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
        c.saved_fixed_bytes = l.flash ? dt::kFp32Bytes * H * L : 0;
        if (cross) c.saved_extra_elements += Lk * Dk;  // the context, input of the k/v projections
        break;
      }
      case kind::upsample: {
        dt::check_size(g, i, "factor", l.factor);
        if (l.dims < 1 || l.dims > 3) fail(dt::where(g, i) + ".dims", "must be 1, 2 or 3 (got " + std::to_string(l.dims) + ")");
        c.out = x;  // the last `dims` spatial axes grow by `factor`
        if (l.dims >= 1) c.out.w *= l.factor;
        if (l.dims >= 2) c.out.h *= l.factor;
        if (l.dims >= 3) c.out.d *= l.factor;
        c.flops = static_cast<double>(c.out.elements());  // nearest: one copy per output element
        // derivatives.yaml upsample_nearest*: only sizes are kept, no tensor
        gc.elementwise_elements += E + static_cast<double>(c.out.elements());
        break;
      }
      case kind::embedding: {
        dt::check_size(g, i, "vocab", l.vocab);
        dt::check_size(g, i, "out", l.out);
        c.out = {l.out, x.d, x.h, x.w};
        c.params = l.vocab * l.out;
        c.saved_fixed_bytes = dt::kInt64Bytes * P;  // derivatives.yaml embedding: indices (int64)
        break;
      }
      case kind::add: {
        const auto [sk_t, s2] = skip_operand();
        // Same shape, or one side one value per channel broadcast over the other's positions.
        const bool x_per_channel = x.positions() == 1 && s2.positions() > 1, s2_per_channel = s2.positions() == 1;
        if (s2.c != x.c || !(s2 == x || x_per_channel || s2_per_channel))
          fail(dt::where(g, i) + ".skip", "shape " + std::to_string(s2.c) + "x" + std::to_string(s2.positions()) +
                                               " does not match the input " + std::to_string(x.c) + "x" + std::to_string(x.positions()));
        use(sk_t);
        c.out = x_per_channel ? s2 : x;
        if (l.inplace && !x_per_channel) c.out_tensor = in_t;  // `out += identity` (torchvision BasicBlock/Bottleneck)
        const double out_e = static_cast<double>(c.out.elements());
        c.flops = out_e;  // derivatives.yaml add: nothing saved
        gc.elementwise_elements += E + static_cast<double>(s2.elements()) + out_e;
        break;
      }
      case kind::concat: {
        const auto [sk_t, s2] = skip_operand();
        if (s2.d != x.d || s2.h != x.h || s2.w != x.w)
          fail(dt::where(g, i) + ".skip", "positions " + std::to_string(s2.d) + "x" + std::to_string(s2.h) + "x" +
                                               std::to_string(s2.w) + " do not match the input " + std::to_string(x.d) + "x" +
                                               std::to_string(x.h) + "x" + std::to_string(x.w));
        use(sk_t);
        c.out.c = x.c + s2.c;
        // derivatives.yaml cat: only the sizes are kept, no tensor. One copy of both operands.
        gc.elementwise_elements += 2 * static_cast<double>(c.out.elements());
        break;
      }
      case kind::input:
        gc.kernels -= 1;  // not a kernel: the tensor exists before the forward
        break;
      case kind::mul: {
        const auto [sk_t, s2] = skip_operand();
        const bool x_per_channel = x.positions() == 1, s2_per_channel = s2.positions() == 1;
        if (s2.c != x.c || !(s2 == x || x_per_channel || s2_per_channel))
          fail(dt::where(g, i) + ".skip", "shape " + std::to_string(s2.c) + "x" + std::to_string(s2.positions()) +
                                               " does not broadcast with the input " + std::to_string(x.c) + "x" + std::to_string(x.positions()));
        use(sk_t);
        c.out = x_per_channel ? s2 : x;
        const double out_e = static_cast<double>(c.out.elements());
        c.flops = out_e;
        // derivatives.yaml mul: each operand is saved for the other's gradient (both require grad here).
        c.saves_tensor = in_t;
        c.saves_tensor2 = sk_t;
        gc.elementwise_elements += E + static_cast<double>(s2.elements()) + out_e;
        break;
      }
      case kind::dropout: {
        if (!(l.p >= 0 && l.p < 1)) fail(dt::where(g, i) + ".p", "must be in [0, 1) (got " + gpuplan::detail::num(l.p) + ")");
        // ATen Dropout.cpp: p == 0 returns the input unchanged; otherwise native_dropout saves a bool mask.
        if (l.p > 0) {
          c.flops = E;
          c.saved_fixed_bytes = dt::kBoolBytes * E;
          gc.elementwise_elements += 2 * E;
        } else {
          c.out_tensor = in_t;
          gc.kernels -= 1;
          gc.host_ops += 1;  // no kernel, but the call is dispatched
        }
        break;
      }
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
    if (const double oe = static_cast<double>(c.out.c) * static_cast<double>(c.out.d) * static_cast<double>(c.out.h) *
                          static_cast<double>(c.out.w);
        oe > dt::kMaxElements)
      fail(dt::where(g, i), "output of " + gpuplan::detail::num(oe) + " elements per sample, more than 2^40");
    if (static_cast<double>(c.params) > dt::kMaxElements)
      fail(dt::where(g, i), gpuplan::detail::num(static_cast<double>(c.params)) + " parameters, more than 2^40");
    if (l.host_ops < 0 || l.host_ops > dt::kMaxHostOps)
      fail(dt::where(g, i) + ".host_ops", "must be in [0, " + std::to_string(dt::kMaxHostOps) + "] (got " +
                                              std::to_string(l.host_ops) + ")");
    gc.host_ops += static_cast<double>(l.host_ops);
    gc.params += c.params;
    gc.flops += c.flops;
    gc.matmul_flops += c.matmul_flops;
    gc.saved_elements += c.saved_extra_elements;
    gc.saved_fixed_bytes += c.saved_fixed_bytes;
  }
  gc.output = gc.per_layer.back().out;
  gc.host_ops += gc.kernels;
  // Saved activations: each saved tensor once (conv and the in-place ReLU before it save the same one).
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
  // Inference working set: at layer i, every tensor produced so far and still to be read, plus i's output.
  if (const int ot = gc.per_layer.back().out_tensor; ot >= 0) consumers_last[static_cast<std::size_t>(ot)] = static_cast<int>(n);
  else input_last = static_cast<int>(n);  // the result outlives the graph
  // Tensor t is alive over layers [t, max(t, its last reader)]: a sweep over births and deaths.
  std::vector<double> delta(n + 1, 0.0);
  for (std::size_t t = 0; t < n; ++t) {
    if (gc.per_layer[t].out_tensor != static_cast<int>(t)) continue;  // views and in-place results
    const std::size_t last = std::max(t, static_cast<std::size_t>(std::max(consumers_last[t], 0)));
    delta[t] += elems(t);
    delta[std::min(last + 1, n)] -= elems(t);
  }
  double alive = 0;
  for (std::size_t i = 0; i < n; ++i) {
    alive += delta[i];
    const double live = alive + (input_last >= static_cast<int>(i) ? static_cast<double>(g.input.elements()) : 0);
    gc.peak_live_elements = std::max(gc.peak_live_elements, live);
  }
  return gc;
}

}  // namespace gpuplan::layers
