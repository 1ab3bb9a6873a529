// graph/vision_models.hpp — torchvision's image models as layer graphs (graph/layer.hpp):
// ResNet, VGG, ViT, ConvNeXt and EfficientNet, their catalog names (torchvision's, timm's,
// Hub ids) and the published ImageNet-1k recipes they train with. docs/vision.md.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/error.hpp"
#include "gpuplan/graph/layer.hpp"
#include "gpuplan/scenario.hpp"

namespace gpuplan::vision {

using layers::graph;
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

}  // namespace gpuplan::vision
