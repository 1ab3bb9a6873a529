// graph/checkpoint.hpp — what a layer graph saves for backward under gradient
// checkpointing or with frozen layers (saved_bytes_of), and the segments practitioners
// checkpoint when a graph names none (residual_segments). docs/vision.md.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

#include "gpuplan/graph/analyze.hpp"
#include "gpuplan/graph/layer.hpp"

namespace gpuplan::vision {

using layers::graph;

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

}  // namespace gpuplan::vision
