// Graphviz export of a tensor's backward graph (docs/autograd.md, "Drawing the graph").
#pragma once

#include <string>

#include "tensor/core/Tensor.h"

namespace tensor::autograd {

/// The backward graph that ends at t as Graphviz DOT text: one box per node (its name, and
/// the shapes of the tensors it saved for backward), one edge per gradient flow (from a node
/// to the node its gradient goes to), and each leaf's AccumulateGrad with the leaf's shape.
/// A tensor without history gives a graph with one note saying so. Render with `dot -Tsvg`.
TENSOR_API std::string to_dot(const Tensor& t);

}  // namespace tensor::autograd
