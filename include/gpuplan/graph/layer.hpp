// graph/layer.hpp — a model as a graph of typed layers (linear, convolution, norm,
// pooling, activation, attention, resampling, embedding, residual add, ...): the layer
// kinds, one layer's fields, the constructors (layers::make) and the graph that holds them
// in topological order. What each layer costs: graph/analyze.hpp. docs/vision.md.
//
// Shapes are per sample: c = channels (or features, or hidden size), d/h/w = the
// spatial positions. A token sequence of length L and width D is {c = D, h = L}:
// a linear layer mixes c at every position, exactly as nn.Linear on (..., D).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

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

}  // namespace gpuplan::layers
