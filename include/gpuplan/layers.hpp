// layers.hpp — a model as a graph of typed layers (linear, convolution, norm,
// pooling, activation, attention, resampling, embedding, residual add, ...) with
// tensor shapes propagated from the input. For each layer: the exact parameter
// count, the forward FLOPs (one multiply-add = 2 FLOPs) and the tensors PyTorch's
// autograd saves for backward (tools/autograd/derivatives.yaml). docs/vision.md.
//
// The umbrella of the graph world's layer headers:
//   graph/layer.hpp    shapes, layer kinds, layers::make constructors, layers::graph
//   graph/analyze.hpp  layers::analyze: parameters, FLOPs, saved tensors, working set
#pragma once

#include "gpuplan/graph/analyze.hpp"
#include "gpuplan/graph/layer.hpp"
