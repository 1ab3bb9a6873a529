// vision.hpp — torchvision's image models as layer graphs (layers.hpp) and the
// memory and time of training or running a graph model on one GPU. docs/vision.md.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/detail/memory_allocator.hpp"
#include "gpuplan/detail/memory_constants.hpp"
#include "gpuplan/detail/memory_precision.hpp"
#include "gpuplan/detail/timing_comm.hpp"
#include "gpuplan/detail/timing_model.hpp"
#include "gpuplan/detail/timing_params.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/hardware.hpp"
#include "gpuplan/layers.hpp"
#include "gpuplan/scenario.hpp"
#include "gpuplan/units.hpp"

namespace gpuplan::vision {

using layers::graph;
using layers::graph_cost;
namespace make = layers::make;

namespace detail {
inline void check_image(std::int64_t image, std::int64_t classes) {
  if (image < 32 || image > 8192) gpuplan::detail::fail("image", "must be in [32, 8192] pixels (got " + std::to_string(image) + ")");
  if (classes < 1 || classes > 1000000) gpuplan::detail::fail("classes", "must be in [1, 1000000] (got " + std::to_string(classes) + ")");
}
}  // namespace detail

// torchvision/models/resnet.py: BasicBlock (18, 34) and Bottleneck v1.5 (stride on
// the 3x3 conv; 50, 101, 152); every ReLU is nn.ReLU(inplace=True), `out += identity`.
inline graph resnet(int depth, std::int64_t image = 224, std::int64_t classes = 1000) {
  detail::check_image(image, classes);
  std::array<int, 4> blocks{};
  bool bottleneck = true;
  switch (depth) {
    case 18: blocks = {2, 2, 2, 2}; bottleneck = false; break;
    case 34: blocks = {3, 4, 6, 3}; bottleneck = false; break;
    case 50: blocks = {3, 4, 6, 3}; break;
    case 101: blocks = {3, 4, 23, 3}; break;
    case 152: blocks = {3, 8, 36, 3}; break;
    default: gpuplan::detail::fail("resnet.depth", "must be 18, 34, 50, 101 or 152 (got " + std::to_string(depth) + ")", error_kind::unknown_name);
  }
  graph g;
  g.name = "resnet-" + std::to_string(depth);
  g.input = {3, 1, image, image};
  g.push(make::conv2d(64, 7, 2, 3, 1, false), "conv1");
  g.push(make::batch_norm(), "bn1");
  g.push(make::relu());
  g.push(make::max_pool2d(3, 2, 1), "maxpool");
  std::int64_t in = 64;
  const std::int64_t expansion = bottleneck ? 4 : 1;
  for (int s = 0; s < 4; ++s) {
    const std::int64_t planes = std::int64_t{64} << s;
    for (int b = 0; b < blocks[static_cast<std::size_t>(s)]; ++b) {
      const std::int64_t stride = (b == 0 && s > 0) ? 2 : 1;
      const int x = g.last();
      const std::string nm = "layer" + std::to_string(s + 1) + "." + std::to_string(b);
      if (bottleneck) {
        g.push(make::conv2d(planes, 1, 1, 0, 1, false), nm + ".conv1");
        g.push(make::batch_norm());
        g.push(make::relu());
        g.push(make::conv2d(planes, 3, stride, 1, 1, false), nm + ".conv2");
        g.push(make::batch_norm());
        g.push(make::relu());
        g.push(make::conv2d(planes * expansion, 1, 1, 0, 1, false), nm + ".conv3");
      } else {
        g.push(make::conv2d(planes, 3, stride, 1, 1, false), nm + ".conv1");
        g.push(make::batch_norm());
        g.push(make::relu());
        g.push(make::conv2d(planes, 3, 1, 1, 1, false), nm + ".conv2");
      }
      const int main_out = g.push(make::batch_norm());
      int identity = x;
      if (stride != 1 || in != planes * expansion) {
        g.push(make::conv2d(planes * expansion, 1, stride, 0, 1, false), nm + ".downsample", x);
        identity = g.push(make::batch_norm());
      }
      g.push(make::add(identity, true), nm + ".add", main_out);
      g.push(make::relu());
      in = planes * expansion;
    }
  }
  g.push(make::adaptive_avg_pool2d(1, 1), "avgpool");
  g.push(make::flatten());
  g.push(make::linear(classes), "fc");
  return g;
}

// torchvision/models/vgg.py, configuration "D" without batch norm.
inline graph vgg16(std::int64_t image = 224, std::int64_t classes = 1000) {
  detail::check_image(image, classes);
  graph g;
  g.name = "vgg-16";
  g.input = {3, 1, image, image};
  constexpr std::array<int, 18> cfg{64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0};
  for (int v : cfg) {
    if (v == 0) {
      g.push(make::max_pool2d(2, 2));
    } else {
      g.push(make::conv2d(v, 3, 1, 1));
      g.push(make::relu());
    }
  }
  g.push(make::adaptive_avg_pool2d(7, 7), "avgpool");
  g.push(make::flatten());
  for (int i = 0; i < 2; ++i) {
    g.push(make::linear(4096));
    g.push(make::relu());
    g.push(make::dropout(0.5));
  }
  g.push(make::linear(classes), "classifier");
  return g;
}

// torchvision/models/vision_transformer.py: conv patch embedding, class token,
// learned position embedding, pre-norm encoder blocks (LayerNorm, nn.MultiheadAttention,
// MLP with GELU), dropout 0.0 everywhere, head on the class token.
inline graph vit(std::string_view variant, std::int64_t image = 224, std::int64_t classes = 1000, bool flash = true) {
  detail::check_image(image, classes);
  std::int64_t patch = 16, width = 768, depth = 12, heads = 12, mlp = 3072;
  if (variant == "b16") {
  } else if (variant == "l16") {
    width = 1024; depth = 24; heads = 16; mlp = 4096;
  } else if (variant == "h14") {
    patch = 14; width = 1280; depth = 32; heads = 16; mlp = 5120;
  } else {
    gpuplan::detail::fail("vit.variant", "must be b16, l16 or h14 (got " + std::string(variant) + ")", error_kind::unknown_name);
  }
  if (image % patch != 0)
    gpuplan::detail::fail("image", "must be a multiple of the patch size " + std::to_string(patch) + " (got " + std::to_string(image) + ")");
  graph g;
  g.name = "vit-" + std::string(variant.substr(0, 1)) + "-" + std::string(variant.substr(1));
  g.input = {3, 1, image, image};
  g.push(make::conv2d(width, patch, patch), "conv_proj");
  g.push(make::class_token(), "class_token");
  g.push(make::position_embedding(), "pos_embedding");
  for (std::int64_t i = 0; i < depth; ++i) {
    const std::string nm = "encoder_layer_" + std::to_string(i);
    const int x = g.last();
    g.push(make::layer_norm(), nm + ".ln_1");
    g.push(make::self_attention(heads, flash), nm + ".self_attention");
    const int y = g.push(make::add(x), nm + ".add_1");
    g.push(make::layer_norm(), nm + ".ln_2");
    g.push(make::linear(mlp), nm + ".mlp.0");
    g.push(make::gelu());
    g.push(make::linear(width), nm + ".mlp.3");
    g.push(make::add(y), nm + ".add_2");
  }
  g.push(make::layer_norm(), "encoder.ln");
  g.push(make::take_token());
  g.push(make::linear(classes), "heads.head");
  return g;
}

// torchvision/models/convnext.py: 4x4 stem + LayerNorm2d, CNBlock (7x7 depthwise conv,
// LayerNorm, Linear 4C, GELU, Linear C, layer scale, stochastic depth, `result += input`),
// LayerNorm2d + 2x2 stride-2 conv between stages, LayerNorm2d + Linear head.
// Stochastic depth multiplies by a (N,1,1,1) noise tensor: only that tensor is saved.
inline graph convnext(std::string_view variant, std::int64_t image = 224, std::int64_t classes = 1000) {
  detail::check_image(image, classes);
  std::array<std::int64_t, 4> ch{96, 192, 384, 768};
  std::array<int, 4> blocks{3, 3, 27, 3};
  if (variant == "tiny") blocks = {3, 3, 9, 3};
  else if (variant == "small") {
  } else if (variant == "base") ch = {128, 256, 512, 1024};
  else if (variant == "large") ch = {192, 384, 768, 1536};
  else gpuplan::detail::fail("convnext.variant", "must be tiny, small, base or large (got " + std::string(variant) + ")", error_kind::unknown_name);
  graph g;
  g.name = "convnext-" + std::string(variant);
  g.input = {3, 1, image, image};
  g.push(make::conv2d(ch[0], 4, 4), "stem");
  g.push(make::layer_norm());
  for (std::size_t s = 0; s < 4; ++s) {
    for (int b = 0; b < blocks[s]; ++b) {
      const std::string nm = "stage" + std::to_string(s) + "." + std::to_string(b);
      const int x = g.last();
      g.push(make::conv2d(ch[s], 7, 1, 3, ch[s]), nm + ".dwconv");
      g.push(make::layer_norm());
      g.push(make::linear(4 * ch[s]), nm + ".pwconv1");
      g.push(make::gelu());
      g.push(make::linear(ch[s]), nm + ".pwconv2");
      g.push(make::layer_scale());
      g.push(make::add(x, true), nm + ".add");
    }
    if (s < 3) {
      g.push(make::layer_norm());
      g.push(make::conv2d(ch[s + 1], 2, 2), "downsample" + std::to_string(s));
    }
  }
  g.push(make::adaptive_avg_pool2d(1, 1), "avgpool");
  g.push(make::layer_norm());
  g.push(make::flatten());
  g.push(make::linear(classes), "classifier");
  return g;
}

namespace detail {
// torchvision/models/_utils.py _make_divisible: the nearest multiple of `divisor` (at least
// `divisor`), one multiple more when rounding lost more than 10%.
inline std::int64_t make_divisible(double v, std::int64_t divisor = 8) {
  const auto d = static_cast<double>(divisor);
  std::int64_t r = std::max(divisor, static_cast<std::int64_t>(v + d / 2) / divisor * divisor);
  if (static_cast<double>(r) < 0.9 * v) r += divisor;
  return r;
}

// torchvision/models/efficientnet.py efficientnet_b0..b4: _efficientnet_conf(width_mult,
// depth_mult), the classifier's Dropout p, and the crop size of the ImageNet weights'
// transforms (EfficientNet_B*_Weights.IMAGENET1K_V1: 224, 240, 288, 300, 380).
struct efficientnet_variant {
  std::string_view name;
  double width_mult, depth_mult, dropout;
  std::int64_t image;
};
inline constexpr std::array<efficientnet_variant, 5> kEfficientNet{{{"b0", 1.0, 1.0, 0.2, 224},
                                                                    {"b1", 1.0, 1.1, 0.2, 240},
                                                                    {"b2", 1.1, 1.2, 0.3, 288},
                                                                    {"b3", 1.2, 1.4, 0.3, 300},
                                                                    {"b4", 1.4, 1.8, 0.4, 380}}};

// A catalog name in its canonical spelling: lower case, '-' for '_'.
inline std::string catalog_key(std::string_view name) {
  std::string n;
  for (char ch : name) {
    if (ch == '_') ch = '-';
    n.push_back(static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch));
  }
  return n;
}
}  // namespace detail

// torchvision/models/efficientnet.py, efficientnet_b0..b4: Conv2dNormActivation (conv without
// bias, BatchNorm, SiLU), MBConv blocks (1x1 expansion, depthwise kxk, squeeze-excitation
// with squeeze = max(1, in/4) and a sigmoid gate, 1x1 projection, `result += input` when
// the shape is kept), a 1x1 conv to 4 x the last stage's channels, average pooling,
// Dropout and Linear. B0's stages scaled by MBConvConfig.adjust_channels
// (_make_divisible(channels · width_mult, 8)) and adjust_depth (ceil(layers · depth_mult)).
// Stochastic depth (a per-sample noise tensor of a few bytes) is left out. `image` defaults
// to the variant's weights' crop size.
inline graph efficientnet(std::string_view variant, std::optional<std::int64_t> image_side = std::nullopt, std::int64_t classes = 1000) {
  const auto v = std::find_if(detail::kEfficientNet.begin(), detail::kEfficientNet.end(),
                              [&](const detail::efficientnet_variant& e) { return e.name == variant; });
  if (v == detail::kEfficientNet.end())
    gpuplan::detail::fail("efficientnet.variant", "must be b0, b1, b2, b3 or b4 (got " + std::string(variant) + ")", error_kind::unknown_name);
  const std::int64_t image = image_side.value_or(v->image);
  detail::check_image(image, classes);
  struct stage { std::int64_t expand, kernel, stride, in, out; int layers; };
  constexpr std::array<stage, 7> b0{{{1, 3, 1, 32, 16, 1}, {6, 3, 2, 16, 24, 2}, {6, 5, 2, 24, 40, 2},
                                     {6, 3, 2, 40, 80, 3}, {6, 5, 1, 80, 112, 3}, {6, 5, 2, 112, 192, 4},
                                     {6, 3, 1, 192, 320, 1}}};
  auto channels = [v](std::int64_t c) { return detail::make_divisible(static_cast<double>(c) * v->width_mult); };
  graph g;
  g.name = "efficientnet-" + std::string(variant);
  g.input = {3, 1, image, image};
  auto cna = [&g](std::int64_t out, std::int64_t k, std::int64_t stride, std::int64_t groups, bool act, const std::string& nm) {
    g.push(make::conv2d(out, k, stride, (k - 1) / 2, groups, false), nm);
    g.push(make::batch_norm());
    if (act) g.push(make::silu());
  };
  cna(channels(b0[0].in), 3, 2, 1, true, "features.0");
  int n = 1;
  for (const auto& st : b0) {
    const std::int64_t out = channels(st.out);
    const int repeats = static_cast<int>(std::ceil(st.layers * v->depth_mult));
    for (int b = 0; b < repeats; ++b) {
      const std::int64_t in = b == 0 ? channels(st.in) : out, stride = b == 0 ? st.stride : 1;
      const std::int64_t expanded = detail::make_divisible(static_cast<double>(in * st.expand));
      const std::string nm = "block" + std::to_string(n++);
      const int x = g.last();
      if (expanded != in) cna(expanded, 1, 1, 1, true, nm + ".expand");
      cna(expanded, st.kernel, stride, expanded, true, nm + ".depthwise");
      const int features = g.last();
      g.push(make::adaptive_avg_pool2d(1, 1), nm + ".se.avgpool");
      g.push(make::conv2d(std::max<std::int64_t>(1, in / 4), 1), nm + ".se.fc1");
      g.push(make::silu());
      g.push(make::conv2d(expanded, 1), nm + ".se.fc2");
      g.push(make::sigmoid());
      g.push(make::mul(features), nm + ".se.scale");
      cna(out, 1, 1, 1, false, nm + ".project");
      if (stride == 1 && in == out) g.push(make::add(x, true), nm + ".add");
    }
  }
  cna(4 * channels(b0.back().out), 1, 1, 1, true, "features.8");
  g.push(make::adaptive_avg_pool2d(1, 1), "avgpool");
  g.push(make::flatten());
  g.push(make::dropout(v->dropout));
  g.push(make::linear(classes), "classifier");
  return g;
}

inline graph efficientnet_b0(std::int64_t image = 224, std::int64_t classes = 1000) { return efficientnet("b0", image, classes); }

// The catalog names: resnet-18/34/50/101/152, vgg-16, vit-b-16, vit-l-16, vit-h-14,
// convnext-tiny/small/base/large, efficientnet-b0..b4 (other spellings: canonical_vision_name).
inline std::vector<std::string> vision_model_names() {
  std::vector<std::string> names{"resnet-18", "resnet-34", "resnet-50", "resnet-101", "resnet-152", "vgg-16", "vit-b-16",
                                 "vit-l-16", "vit-h-14", "convnext-tiny", "convnext-small", "convnext-base", "convnext-large"};
  for (const auto& v : detail::kEfficientNet) names.push_back("efficientnet-" + std::string(v.name));
  return names;
}

// A catalog name from its own spelling, torchvision's builder name (resnet50, vgg16,
// vit_b_16, convnext_tiny, efficientnet_b3) or timm's for the same architecture
// (vit_base_patch16_224 and vit_large_patch16_224 are torchvision's ViT-B/16 and ViT-L/16:
// 86,567,656 and 304,326,632 parameters; timm's resnet*, vgg16, convnext_* and
// efficientnet_b0..b4 share torchvision's names), also as a Hub id or a qualified name
// (timm/resnet50.a1_in1k: the pretrained tag after the dot names weights, not an
// architecture; torchvision.models.resnet50); nullopt for any other name.
inline std::optional<std::string> canonical_vision_name(std::string_view name) {
  for (std::string_view prefix : {"timm/", "torchvision.models.", "torchvision/"})
    if (name.starts_with(prefix)) { name.remove_prefix(prefix.size()); break; }
  name = name.substr(0, name.find('.'));  // timm.create_model("resnet50.a1_in1k"): the tag
  std::string n = detail::catalog_key(name);
  if (n == "vit-base-patch16-224") n = "vit-b-16";
  if (n == "vit-large-patch16-224") n = "vit-l-16";
  if (n == "vit-huge-patch14-224") n = "vit-h-14";
  if (n == "vgg16") n = "vgg-16";
  for (int d : {18, 34, 50, 101, 152})
    if (n == "resnet" + std::to_string(d)) n = "resnet-" + std::to_string(d);
  for (const auto& m : vision_model_names())
    if (n == m) return n;
  return std::nullopt;
}

// The image side a catalog model takes when none is given: the crop size of its torchvision
// ImageNet weights (EfficientNet-B1..B4: 240, 288, 300, 380), 224 for the others.
inline std::int64_t default_image(std::string_view name) {
  const std::string n = canonical_vision_name(name).value_or("");
  for (const auto& v : detail::kEfficientNet)
    if (n == "efficientnet-" + std::string(v.name)) return v.image;
  return 224;
}

// A catalog model at `image` pixels (default: default_image(name)) and `classes` outputs.
inline graph vision_model(std::string_view name, std::optional<std::int64_t> image = std::nullopt, std::int64_t classes = 1000) {
  const auto canonical = canonical_vision_name(name);
  if (!canonical) {
    std::string list;
    for (const auto& m : vision_model_names()) list += (list.empty() ? "" : ", ") + m;
    gpuplan::detail::fail("model", "unknown vision model '" + std::string(name) + "'; known: " + list, error_kind::unknown_name);
  }
  const std::string& n = *canonical;
  const std::int64_t im = image.value_or(default_image(n));
  for (int d : {18, 34, 50, 101, 152})
    if (n == "resnet-" + std::to_string(d)) return resnet(d, im, classes);
  for (std::string_view v : {"b-16", "l-16", "h-14"})
    if (n == "vit-" + std::string(v)) return vit(std::string{v[0]} + std::string(v.substr(2)), im, classes);
  for (std::string_view v : {"tiny", "small", "base", "large"})
    if (n == "convnext-" + std::string(v)) return convnext(v, im, classes);
  for (const auto& v : detail::kEfficientNet)
    if (n == "efficientnet-" + std::string(v.name)) return efficientnet(v.name, im, classes);
  return vgg16(im, classes);  // the one catalog name left
}

// ---- the recipes these models are trained with ------------------------------------

// ILSVRC-2012 (ImageNet-1k) training images (Russakovsky et al. 2015, Table 2: 1,281,167).
inline constexpr double kImageNetTrainImages = 1281167;

// A model's published ImageNet-1k training recipe: what `gpuplan recommend` plans with
// unless told otherwise.
struct training_recipe {
  std::int64_t global_batch = 256;  // images per optimizer step, all GPUs
  optimizer opt = optimizer::sgd_momentum;
  double epochs = 90;
  const char* source = "";
};

inline training_recipe training_recipe_of(std::string_view name) {
  const std::string n = canonical_vision_name(name).value_or("");
  if (n.starts_with("resnet"))
    return {256, optimizer::sgd_momentum, 90, "He et al. 2016 §3.4 (batch 256, SGD momentum 0.9); torchvision's "
                                              "references/classification defaults (8 GPUs x 32, 90 epochs)"};
  if (n == "vgg-16") return {256, optimizer::sgd_momentum, 74, "Simonyan & Zisserman 2015 §3.1 (batch 256, momentum 0.9, 74 epochs)"};
  if (n.starts_with("vit"))
    return {1024, optimizer::adamw, 300, "DeiT (Touvron et al. 2021), ImageNet-1k from scratch: AdamW, batch 1024, 300 epochs"};
  if (n.starts_with("convnext")) return {4096, optimizer::adamw, 300, "Liu et al. 2022, appendix A.1: AdamW, batch 4096, 300 epochs"};
  // RMSProp with momentum keeps two fp32 states per parameter, as Adam does: planned as adam.
  if (n.starts_with("efficientnet"))
    return {4096, optimizer::adam, 350, "Tan & Le 2019 §5.2: RMSProp (momentum: two states, planned as Adam), batch 4096, 350 epochs"};
  return {256, optimizer::sgd_momentum, 1, "no published recipe: batch 256 (He et al. 2016), SGD momentum, 1 epoch"};
}

// Bytes saved for backward per sample. `saves` (one flag per layer, empty: all) says which
// layers keep what analyze() says they save: under LoRA a frozen linear layer keeps nothing
// (autograd saves mm's input only for the weight's gradient; measured with
// torch.autograd.graph.saved_tensors_hooks, torch 1.13: a frozen nn.Linear saves only its
// weight, a frozen Conv2d and GroupNorm still save their input), and no layer before the
// first trainable one saves anything. With `checkpointing` the graph's segments run under
// torch.utils.checkpoint: the saves of layers outside every segment, each segment's input
// (what checkpoint keeps), and the largest segment's own saves (rebuilt for that segment
// alone while backward passes through it).
inline double saved_bytes_of(const graph& g, const layers::graph_cost& gc, double act, bool checkpointing,
                             const std::vector<char>& saves = {}) {
  const std::size_t n = g.layers.size();
  auto keeps = [&](std::size_t i) { return saves.empty() || saves[i] != 0; };
  std::vector<int> seg(n, -1);
  for (std::size_t s = 0; checkpointing && s < g.segments.size(); ++s)
    for (int i = std::max(g.segments[s][0], 0); i <= g.segments[s][1] && i < static_cast<int>(n); ++i) seg[static_cast<std::size_t>(i)] = static_cast<int>(s);
  auto elems = [&](int t) { return static_cast<double>(t == -2 ? g.input.elements() : gc.per_layer[static_cast<std::size_t>(t)].out.elements()); };
  std::vector<char> kept(n + 1, 0);  // tensor ids; index n: the graph input
  auto slot = [&](int t) -> char& { return kept[t == -2 ? n : static_cast<std::size_t>(t)]; };
  double outside = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (seg[i] >= 0 || !keeps(i)) continue;
    const auto& c = gc.per_layer[i];
    outside += c.saved_extra_elements * act + c.saved_fixed_bytes;
    for (const int t : {c.saves_tensor, c.saves_tensor2})
      if (t >= -2 && t != -1 && !slot(t)) { slot(t) = 1; outside += elems(t) * act; }
  }
  double inputs = 0, largest = 0;
  for (const auto& s : g.segments) {
    if (!checkpointing) break;
    const auto first = static_cast<std::size_t>(s[0]);
    const int src = g.layers[first].from == -1 ? s[0] - 1 : g.layers[first].from;
    const int in_t = src < 0 ? -2 : gc.per_layer[static_cast<std::size_t>(src)].out_tensor;
    if (!slot(in_t)) inputs += elems(in_t) * act;
    std::vector<int> mine{in_t};  // the segment's input is alive already (counted above)
    double own = 0;
    for (int i = s[0]; i <= s[1]; ++i) {
      if (!keeps(static_cast<std::size_t>(i))) continue;
      const auto& c = gc.per_layer[static_cast<std::size_t>(i)];
      own += c.saved_extra_elements * act + c.saved_fixed_bytes;
      for (const int t : {c.saves_tensor, c.saves_tensor2})
        if (t >= -2 && t != -1 && std::find(mine.begin(), mine.end(), t) == mine.end()) { mine.push_back(t); own += elems(t) * act; }
    }
    largest = std::max(largest, own);
  }
  return outside + inputs + largest;
}
// The checkpoint segments practitioners wrap in torch.utils.checkpoint when a graph has none
// of its own (timm's set_grad_checkpointing checkpoints every block): the spans between
// consecutive cut points — tensors after which no layer reads anything earlier — that hold
// more than one layer, i.e. every residual branch (a ResNet or ConvNeXt block, each half of a
// ViT block); plain chains of layers stay outside.
inline std::vector<std::array<int, 2>> residual_segments(const graph& g) {
  const int n = static_cast<int>(g.layers.size());
  std::vector<int> lowest(static_cast<std::size_t>(n) + 1, n);  // lowest tensor read by any layer from k on
  for (int k = n - 1; k >= 0; --k) {
    const auto& l = g.layers[static_cast<std::size_t>(k)];
    int m = l.from == -1 ? k - 1 : std::max(l.from, -1);
    if ((l.k == layers::kind::add || l.k == layers::kind::mul || l.k == layers::kind::concat) && l.skip != -1)
      m = std::min(m, std::max(l.skip, -1));
    lowest[static_cast<std::size_t>(k)] = std::min(m, lowest[static_cast<std::size_t>(k) + 1]);
  }
  std::vector<std::array<int, 2>> out;
  int prev = -1;  // the graph input is a cut
  for (int j = 0; j < n; ++j) {
    if (lowest[static_cast<std::size_t>(j) + 1] < j) continue;  // a later layer reads before j
    if (j - prev >= 2) out.push_back({prev + 1, j});
    prev = j;
  }
  return out;
}

// ---- memory and time of a graph model on one GPU -------------------------------

struct graph_estimate {
  std::int64_t params = 0;
  FlopCount flops_per_sample = flops(0);  // forward (inference) or forward + backward (training)
  Bytes weights = bytes(0), gradients = bytes(0), optimizer = bytes(0), activations = bytes(0), transient = bytes(0);
  Bytes peak_allocated = bytes(0);  // torch.cuda.max_memory_allocated
  Bytes reserved = bytes(0);        // torch.cuda.max_memory_reserved (detail/memory_allocator.hpp)
  Bytes device = bytes(0);          // nvidia-smi: reserved + CUDA context (+ NCCL buffers on more than one GPU)
  Seconds compute = seconds(0), memory_bound = seconds(0), optimizer_step = seconds(0), step = seconds(0);
  // Host time to dispatch the step's tensor calls in eager PyTorch (host_ops × launch_seconds): the
  // GPU idles when compute + memory_bound is shorter (small batches).
  Seconds launch = seconds(0);
  // Data-parallel communication, all of it (the exposed part is in `step`): DDP's gradient
  // all-reduce, ZeRO-1/2's reduce-scatter and parameter all-gather, ZeRO-3's gathers.
  Seconds data_parallel_comm = seconds(0);
  int num_gpus = 1;
  double samples_per_s = 0;  // all GPUs together
  [[nodiscard]] bool fits(const gpu_spec& g) const { return device <= g.usable_memory; }
};

namespace detail {
// Seconds of one convolution or linear layer's forward for `batch` samples: an implicit
// GEMM (cuDNN maps a conv to M = N·H_out·W_out, N = C_out/groups, K = C_in/groups·kernel
// volume, once per group) at the GPU's GEMM ceiling times the shape factor of
// timing_model.hpp, or its operand traffic at the element-wise bandwidth when slower.
inline double gemm_layer_seconds(const layers::layer& l, const layers::layer_cost& c, double batch,
                                 const gpuplan::detail::device_rates& r, const efficiency_params& e) {
  const double groups = l.k == layers::kind::conv ? static_cast<double>(l.groups) : 1.0;
  const double m = batch * static_cast<double>(c.out.positions());
  const double n = static_cast<double>(c.out.c) / groups;
  const double k = c.matmul_flops / (2.0 * static_cast<double>(c.out.elements()) / groups);
  const double shape = gpuplan::detail::gemm_shape_factor(m, n, k, groups, r.sms, e);
  const double compute = batch * c.matmul_flops / (r.peak.gemm * r.ceiling * std::max(shape, 1e-3));
  const double traffic = (batch * static_cast<double>(c.in.elements() + c.out.elements()) * r.peak.act_bytes +
                          static_cast<double>(c.params) * r.peak.act_bytes) / r.bwe;
  return std::max(compute, traffic);
}

// Data-parallel communication of one training step of `params` parameters on `num_gpus`
// GPUs under ZeRO stage `zero`, as timing_comm.hpp models transformer runs: ZeRO-0 (PyTorch
// DDP) all-reduces the gradients in their dtype (fp32 under AMP: reduced_gradient_bytes),
// ZeRO-1/2 reduce-scatter them in 16-bit and all-gather the updated parameters, exposed
// (dp_reduction); the reduction overlaps `backward_seconds` up to ddp_overlap, at least the
// last bucket exposed. ZeRO-3 (FSDP FULL_SHARD) all-gathers the parameters for forward and
// again for backward and reduce-scatters the gradients, hidden behind fsdp_overlap of
// `compute_seconds` but for the first unit's gather, `first_unit` of the parameters
// (zero3_gathers). The whole, and the part not hidden.
struct ddp_cost {
  double whole = 0, exposed = 0;  // seconds
};
inline ddp_cost data_parallel_comm(double params, precision prec, const gpu_spec& gpu, int num_gpus, int zero,
                                   double compute_seconds, double backward_seconds, double first_unit,
                                   const efficiency_params& eff) {
  if (num_gpus < 2) return {};
  scenario sc;
  sc.gpu = gpu;
  sc.num_gpus = num_gpus;
  sc.prec = prec;
  sc.parallel.zero = zero;
  const gpuplan::detail::stage_parameters p{0, 0, params, params};
  if (zero >= 3) {
    const auto z = gpuplan::detail::zero3_gathers(sc, p, first_unit, compute_seconds, eff);
    return {z.per_microbatch, z.exposed};
  }
  gpuplan::detail::compute_cost backward;
  backward.microbatch = backward_seconds;
  backward.backward_share = 1;
  const auto d = gpuplan::detail::dp_reduction(sc, p, backward, eff);
  return {d.reduce + d.gather, d.exposed};
}

// PyTorch DDP's gradient all-reduce (ZeRO-0 above).
inline ddp_cost ddp_all_reduce(double params, precision prec, const gpu_spec& gpu, int num_gpus, double backward_seconds,
                               const efficiency_params& eff) {
  return data_parallel_comm(params, prec, gpu, num_gpus, 0, backward_seconds, backward_seconds, 1.0, eff);
}

// ZeRO-3 / FSDP units of a graph: each checkpoint segment (else each residual block) is
// one wrapped unit, as FSDP's ModuleWrapPolicy wraps blocks; the layers outside every
// unit belong to the root, which stays gathered from forward to backward (FSDP does not
// reshard the root after forward). No residual block: the whole graph is one unit.
struct sharding_units {
  double root = 0;     // parameters outside every unit
  double largest = 0;  // parameters of the largest unit
};
inline sharding_units sharding_units_of(const graph& g, const layers::graph_cost& gc) {
  const auto segments = g.segments.empty() ? residual_segments(g) : g.segments;
  const int n = static_cast<int>(gc.per_layer.size());
  std::vector<bool> in_unit(gc.per_layer.size(), false);
  sharding_units u;
  for (const auto& [first, last] : segments) {
    double unit = 0;
    for (int i = std::max(first, 0); i <= std::min(last, n - 1); ++i) {
      unit += static_cast<double>(gc.per_layer[static_cast<std::size_t>(i)].params);
      in_unit[static_cast<std::size_t>(i)] = true;
    }
    u.largest = std::max(u.largest, unit);
  }
  for (std::size_t i = 0; i < in_unit.size(); ++i)
    if (!in_unit[i]) u.root += static_cast<double>(gc.per_layer[i].params);
  return u;
}
}  // namespace detail

// One step of `batch` samples per GPU on `num_gpus` GPUs of one kind (PyTorch DDP: the
// gradients are all-reduced, overlapping backward as in timing_comm.hpp's dp_reduction;
// with `zero` 1-3 the model states are sharded as ZeRO, data_parallel_comm). Training: weights, gradients and optimizer
// state under the precision policy of memory_precision.hpp (AMP keeps fp32 weights
// and gradients: 4 + 4 bytes, the same sum as its 2 + 4 master + 2 gradient), the
// saved activations of analyze(), and a backward transient of the largest layer's
// input and output gradients. Time: each conv/linear layer as a GEMM (above), attention
// projections likewise and its core at the FlashAttention fraction, memory-bound layers
// by bytes at efficiency_params::bandwidth_fraction, and the optimizer's traffic.
inline graph_estimate estimate_graph(const graph& g, std::int64_t batch, precision prec, optimizer opt,
                                     const gpu_spec& gpu, bool train = true, const efficiency_params& eff = {},
                                     int num_gpus = 1, bool checkpointing = false, int zero = 0) {
  using gpuplan::detail::fail;
  if (batch < 1 || batch > 1000000) fail("batch", "must be in [1, 1000000] (got " + std::to_string(batch) + ")");
  if (num_gpus < 1 || num_gpus > 65536) fail("num_gpus", "must be in [1, 65536] (got " + std::to_string(num_gpus) + ")");
  if (!(in_bytes(gpu.usable_memory) > 0) || !(in_byte_per_s(gpu.bandwidth) > 0))
    fail("gpu", "needs memory and bandwidth (got '" + gpu.id + "')");
  if (prec == precision::fp8_mixed) fail("precision", "fp8-mixed is not modelled for layer graphs (got fp8-mixed)");
  if (checkpointing && !train) fail("checkpointing", "applies to training only (got inference)");
  if (zero < 0 || zero > 3) fail("zero", "must be 0, 1, 2 or 3 (got " + std::to_string(zero) + ")");
  if (zero > 0 && !train) fail("zero", "shards training states; inference has none (got " + std::to_string(zero) + ")");
  switch (opt) {
    case optimizer::sgd: case optimizer::sgd_momentum: case optimizer::adam: case optimizer::adamw:
    case optimizer::adamw_8bit: case optimizer::lion: break;
    default: fail("optimizer", "must be sgd, sgd-momentum, adam, adamw, adamw-8bit or lion for layer graphs (got " +
                  std::string(to_string(opt)) + ")");
  }
  const graph_cost gc = layers::analyze(g);
  const auto pb = gpuplan::detail::mem::bytes_of(prec);
  const double P = static_cast<double>(gc.params), B = static_cast<double>(batch);
  const detail::sharding_units u = zero >= 3 ? detail::sharding_units_of(g, gc) : detail::sharding_units{P, 0};
  graph_estimate e;
  e.params = gc.params;
  // ZeRO (Rajbhandari et al. 2020, Fig. 1): stage 1 shards the optimizer state and the fp32
  // master copy over the GPUs, 2 also the gradients, 3 also the 16-bit weights.
  const double dp = static_cast<double>(num_gpus);
  auto shard = [&](int stage) { return zero >= stage ? dp : 1.0; };
  e.weights = bytes(train ? P * pb.weight / shard(3) + P * pb.master / shard(1) : P * pb.weight);
  double largest_io = 0;  // elements of the largest layer's input + output, per sample
  for (const auto& c : gc.per_layer)
    largest_io = std::max(largest_io, static_cast<double>(c.in.elements() + c.out.elements()));
  if (train) {
    e.gradients = bytes(P * pb.grad / shard(2));
    e.optimizer = bytes(P * gpuplan::detail::mem::optimizer_bytes_per_param(opt, pb.state) / shard(1));
    if (checkpointing) {
      // torch.utils.checkpoint over the graph's segments, else every residual branch.
      graph seg = g;
      if (seg.segments.empty()) seg.segments = residual_segments(g);
      if (seg.segments.empty())
        fail("checkpointing", "the graph has no residual blocks to checkpoint (got '" + g.name + "')");
      e.activations = bytes(B * saved_bytes_of(seg, gc, pb.act, true));
    } else {
      e.activations = bytes(B * gc.saved_bytes(pb.act));
    }
    e.transient = bytes(B * largest_io * pb.act);  // grad_output and grad_input of the layer in backward
    if (zero >= 3) {
      // The root gathered from forward to backward, the unit in use and the next prefetched.
      e.transient += bytes((u.root + gpuplan::detail::mem::kGatheredUnitsInFlight * u.largest) * pb.weight);
    } else if (zero >= 1 && num_gpus > 1) {
      // DeepSpeed ZeRO-1/2 reduce bucket (reduce_bucket_size, memory_transients.hpp).
      e.transient += bytes(std::min(P, gpuplan::memory_defaults::zero_reduce_bucket_elems) * pb.grad);
    }
  } else {
    e.activations = bytes(B * gc.peak_live_elements * pb.act);
  }
  e.peak_allocated = e.weights + e.gradients + e.optimizer + e.activations + e.transient;
  // The caching allocator's pool and the context, as for transformer runs (memory-model.md § Overheads).
  const auto peaks = gpuplan::detail::mem::allocator_and_context(in_bytes(e.peak_allocated), 0, num_gpus);
  e.reserved = bytes(peaks.reserved);
  e.device = bytes(peaks.device);
  // Backward of a conv/linear layer is two products of the forward's size (input and
  // weight gradients): 3x forward (Kaplan et al. 2020 §2.1, C ≈ 6N per token); checkpointing
  // runs the segments' forward again in backward (Chen et al. 2016): 4x, the recompute
  // counted over the whole forward.
  const double passes = train ? (checkpointing ? 4.0 : 3.0) : 1.0;
  e.flops_per_sample = flops((train ? 3.0 : 1.0) * gc.flops);
  warning_set w{};
  const auto rates = gpuplan::detail::device_rates_of(gpu, prec, eff, w);
  double compute = 0;
  for (std::size_t i = 0; i < gc.per_layer.size(); ++i) {
    const auto& l = g.layers[i];
    const auto& c = gc.per_layer[i];
    if (l.k == layers::kind::conv || l.k == layers::kind::linear) {
      compute += detail::gemm_layer_seconds(l, c, B, rates, eff);
    } else if (l.k == layers::kind::attention) {
      const double L = static_cast<double>(c.in.positions()), D = static_cast<double>(c.in.c);
      const double core = 4.0 * L * (l.kv_len > 0 ? static_cast<double>(l.kv_len) : L) * D;
      const double shape = gpuplan::detail::gemm_shape_factor(B * L, D, D, 1, rates.sms, eff);
      const double head_dim = D / static_cast<double>(l.heads);
      compute += B * (c.matmul_flops - core) / (rates.peak.gemm * rates.ceiling * shape) +
                 B * core / (rates.peak.gemm * gpuplan::detail::flash_fraction(gpu, eff) *
                             gpuplan::detail::flash_head_dim_efficiency(head_dim));
    }
  }
  e.compute = seconds(passes * compute);
  // Memory-bound layers: forward reads and writes each tensor once (analyze()); backward
  // reads the saved tensor and grad_output and writes grad_input, and norms read their
  // input twice for the statistics: about twice the forward's traffic.
  e.memory_bound = seconds(passes * gc.elementwise_elements * pb.act * B / rates.bwe);
  if (train) {
    // torch.optim SGD/Adam (foreach): read weight, gradient and state, write weight and state.
    const double opt_bytes = P * (2 * (pb.weight + pb.master) + pb.grad +
                                  2 * gpuplan::detail::mem::optimizer_bytes_per_param(opt, pb.state));
    e.optimizer_step = seconds(opt_bytes / shard(1) / rates.bwe);  // each GPU updates its shard
  }
  // Eager PyTorch dispatches every tensor call from the host (timing_params.hpp launch_seconds, the
  // transformer model's floor in timing_compute.hpp): each kernel and each module's other calls
  // (graph_cost::host_ops); backward launches about twice the forward's.
  e.launch = seconds(passes * gc.host_ops * eff.launch_seconds);
  e.step = std::max(e.compute + e.memory_bound, e.launch) + e.optimizer_step;
  e.num_gpus = num_gpus;
  if (train && num_gpus > 1) {
    // Backward (with any recompute) is (passes - 1) / passes of the compute and memory-bound time.
    const double busy = in_seconds(e.compute + e.memory_bound);
    const double first_unit = P > 0 ? std::min(1.0, (u.root + u.largest) / P) : 1.0;
    const auto dpc = detail::data_parallel_comm(P, prec, gpu, num_gpus, zero, busy, (passes - 1) / passes * busy, first_unit, eff);
    e.data_parallel_comm = seconds(dpc.whole);
    e.step += seconds(dpc.exposed);
  }
  e.samples_per_s = B * num_gpus / in_seconds(e.step);
  return e;
}

// Wall-clock to see `images` samples `epochs` times at the estimate's throughput.
inline Seconds time_to_train(const graph_estimate& e, double images, double epochs) {
  if (!(images >= 1 && images <= 1e12)) gpuplan::detail::fail("images", "must be in [1, 1e12] (got " + gpuplan::detail::num(images) + ")");
  if (!(epochs > 0 && epochs <= 1e6)) gpuplan::detail::fail("epochs", "must be in (0, 1e6] (got " + gpuplan::detail::num(epochs) + ")");
  return seconds(images * epochs / e.samples_per_s);
}

}  // namespace gpuplan::vision
