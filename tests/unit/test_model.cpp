// Parameter counts derived by hand from each family's modeling file; the
// catalog test (test_catalog.cpp) checks every catalog model against the
// official counts in tests/data/official_parameters.
#include <doctest/doctest.h>

#include "gpuplan/model.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_model {

using namespace gpuplan;

namespace {
architecture llama2_13b() {
  architecture a;
  a.family = "llama";
  a.hidden = 5120; a.layers = 40; a.heads = 40; a.ffn = 13824; a.vocab = 32000;
  a.mlp = mlp_kind::gated; a.norm = norm_kind::rmsnorm; a.norm_bias = false;
  a.positions = position_kind::rotary; a.tied_embeddings = false;
  return a;
}
}  // namespace

TEST_CASE("llama-2-13b: every component to the parameter") {
  const auto p = count_parameters(llama2_13b());
  CHECK(p.embeddings == 32000LL * 5120);
  CHECK(p.attention == 40LL * 4 * 5120 * 5120);
  CHECK(p.mlp == 40LL * 3 * 5120 * 13824);
  CHECK(p.norms == 40LL * 2 * 5120 + 5120);
  CHECK(p.head == 32000LL * 5120);
  CHECK(p.total == 13015864320LL);  // model card / num_parameters()
  CHECK(p.largest_layer == 32000LL * 5120);
}

TEST_CASE("gpt2: learned positions, biases, tied head") {
  architecture a;
  a.hidden = 768; a.layers = 12; a.heads = 12; a.ffn = 3072; a.vocab = 50257; a.max_positions = 1024;
  a.q_bias = a.out_bias = a.mlp_bias = true;
  CHECK(count_parameters(a).total == 124439808LL);
}

TEST_CASE("t5-base: encoder-decoder with relative attention bias") {
  architecture a;
  a.kind = model_kind::encoder_decoder;
  a.hidden = 768; a.layers = 12; a.decoder_layers = 12; a.heads = 12; a.head_dim = 64; a.ffn = 3072;
  a.vocab = 32128; a.norm = norm_kind::rmsnorm; a.norm_bias = false; a.positions = position_kind::relative;
  a.relative_buckets = 32;
  const auto p = count_parameters(a);
  CHECK(p.total == 222903552LL);
  const auto layers = layer_parameters(a);
  REQUIRE(layers.size() == 26);
  std::int64_t sum = 0;
  for (auto v : layers) sum += v;
  CHECK(sum == p.total);
}

TEST_CASE("phi-2: parallel block, one norm per layer, biased LM head") {
  architecture a;
  a.hidden = 2560; a.layers = 32; a.heads = 32; a.ffn = 10240; a.vocab = 51200;
  a.positions = position_kind::rotary; a.q_bias = a.out_bias = a.mlp_bias = true;
  a.parallel_block = true; a.tied_embeddings = false; a.lm_head_bias = true;
  CHECK(count_parameters(a).total == 2779683840LL);
}

TEST_CASE("vit-base-patch16-224 with a 1000-class classifier") {
  architecture a;
  a.kind = model_kind::encoder;
  a.hidden = 768; a.layers = 12; a.heads = 12; a.ffn = 3072; a.vocab = 0;
  a.image_size = 224; a.patch_size = 16; a.q_bias = a.out_bias = a.mlp_bias = true;
  a.head = head_kind::classifier; a.num_labels = 1000;
  // 590,592 patch + 768 CLS + 151,296 positions + 12 x 7,087,872 + 1,536 final LN + 769,000 classifier
  CHECK(count_parameters(a).total == 86567656LL);
}

TEST_CASE("chatglm3-6b: multi-query groups with qkv bias") {
  architecture a;
  a.hidden = 4096; a.layers = 28; a.heads = 32; a.kv_heads = 2; a.head_dim = 128; a.ffn = 13696;
  a.vocab = 65024; a.mlp = mlp_kind::gated; a.norm = norm_kind::rmsnorm; a.norm_bias = false;
  a.positions = position_kind::rotary; a.q_bias = true; a.tied_embeddings = false;
  CHECK(count_parameters(a).total == 6243584000LL);
}

TEST_CASE("per-layer list sums to the total and splits for pipelines") {
  const auto a = llama2_13b();
  const auto layers = layer_parameters(a);
  REQUIRE(layers.size() == 42);
  std::int64_t sum = 0;
  for (auto v : layers) sum += v;
  CHECK(sum == count_parameters(a).total);
  CHECK(layers.back() == 32000LL * 5120 + 5120);
}

TEST_CASE("overflow is an explicit error, not a wrapped integer") {
  architecture a = llama2_13b();
  a.hidden = std::int64_t{1} << 40;
  CHECK_THROWS_WITH_AS(count_parameters(a), "model: parameter count too large for 64-bit arithmetic", config_error);
}

}  // namespace unit_model
