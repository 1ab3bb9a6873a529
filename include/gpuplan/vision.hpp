// vision.hpp — torchvision's image models as layer graphs (layers.hpp) and the
// memory and time of training or running a graph model on one GPU. docs/vision.md.
//
// The umbrella of the graph world's image-model headers:
//   graph/vision_models.hpp   ResNet, VGG, ViT, ConvNeXt, EfficientNet; catalog names; recipes
//   graph/checkpoint.hpp      saved_bytes_of (checkpointed, frozen layers), residual_segments
//   graph/graph_estimate.hpp  estimate_graph: memory and time on one GPU or data parallel
#pragma once

#include "gpuplan/graph/checkpoint.hpp"
#include "gpuplan/graph/graph_estimate.hpp"
#include "gpuplan/graph/vision_models.hpp"
#include "gpuplan/layers.hpp"
