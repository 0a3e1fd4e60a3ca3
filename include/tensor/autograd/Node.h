// A recorded backward step of the autograd graph (ARCHITECTURE.md: Autograd).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensor/core/Tensor.h"

namespace tensor::autograd {

class Node;
/// libtorch's names for a tensor in autograd code and for lists of them.
using Variable = Tensor;
using variable_list = std::vector<Tensor>;
using tensor_list = std::vector<Tensor>;

/// Where a gradient goes: input `input_nr` of node `function` (libtorch's member names).
struct Edge {
  std::shared_ptr<Node> function;
  uint32_t input_nr = 0;
  bool is_valid() const { return function != nullptr; }
  bool valid() const { return is_valid(); }
};

/// A backward function: takes the gradients of its forward op's outputs and returns the
/// gradients of its forward op's inputs, in the order of next_edges().
class TENSOR_API Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// Computes input gradients from output gradients.
  virtual variable_list apply(variable_list&& grads) = 0;
  /// "MulBackward0", "AccumulateGrad", ...
  virtual std::string name() const = 0;
  /// Frees saved tensors after backward (unless retain_graph).
  virtual void release_variables() {}

  const std::vector<Edge>& next_edges() const { return next_edges_; }
  std::vector<Edge>& mutable_next_edges() { return next_edges_; }
  /// Creation order; later nodes run first when several are ready.
  uint64_t sequence_nr() const { return sequence_nr_; }
  /// Number of gradients this node receives (its forward op's outputs).
  uint32_t num_inputs() const { return num_inputs_; }
  void set_num_inputs(uint32_t n) { num_inputs_ = n; }
  /// Where the node was created (recorded only in anomaly mode).
  const std::string& creation_trace() const { return trace_; }
  void set_creation_trace(std::string t) { trace_ = std::move(t); }

 private:
  std::vector<Edge> next_edges_;
  uint64_t sequence_nr_;
  uint32_t num_inputs_ = 1;
  std::string trace_;
};

}  // namespace tensor::autograd
