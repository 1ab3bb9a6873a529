// models.hpp — architectures the planner tests and benchmarks share.
#pragma once

#include "gpuplan/model.hpp"

namespace gpuplan::test {

// GPT-3 175B (Brown et al. 2020, Table 2.1): 96 layers, d_model 12288, 96 heads,
// vocabulary 50257 padded to 51200 (Megatron-LM), context 2048.
inline architecture gpt3_175b() {
  architecture a;
  a.name = "gpt3-175b";
  a.family = "gpt2";
  a.hidden = 12288; a.layers = 96; a.heads = 96; a.ffn = 4 * 12288; a.vocab = 51200; a.max_positions = 2048;
  a.q_bias = a.out_bias = a.mlp_bias = true;
  return a;
}

}  // namespace gpuplan::test
