// Reverse-mode autograd: backward(), grad(), grad mode guards and gradient checking.
#pragma once

#include <string>
#include <vector>

#include <functional>
#include <optional>
#include <vector>

#include "tensor/autograd/Node.h"
#include "tensor/core/Tensor.h"

namespace tensor {
namespace autograd {

/// Sums d(outputs)/d(leaves) weighted by grad_tensors into every leaf's .grad().
TENSOR_API void backward(const variable_list& tensors, const variable_list& grad_tensors = {},
                         std::optional<bool> retain_graph = std::nullopt, bool create_graph = false);

/// Returns d(outputs)/d(inputs) weighted by grad_outputs, without touching .grad().
/// allow_unused: an input that no output depends on gets an undefined Tensor instead of an Error.
TENSOR_API variable_list grad(const variable_list& outputs, const variable_list& inputs,
                              const variable_list& grad_outputs = {}, std::optional<bool> retain_graph = std::nullopt,
                              bool create_graph = false, bool allow_unused = false);

/// Thread-local switch for recording; NoGradGuard turns it off for a scope.
struct TENSOR_API GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

/// Sets grad mode for a scope and restores the previous mode on exit.
class TENSOR_API AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : prev_(GradMode::is_enabled()) { GradMode::set_enabled(enabled); }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

/// Anomaly mode: nodes remember where they were made, and backward reports NaN gradients.
struct TENSOR_API AnomalyMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

/// Compares analytical gradients of fn (a scalar-valued or any-shaped function) with central
/// finite differences in float64. Inputs must be float64 or complex128 tensors; those requiring
/// grad are checked (complex ones along their real and imaginary axes, PyTorch's convention).
/// Returns true when every entry agrees within atol + rtol * |numerical|; throws tensor::Error
/// with the first mismatch otherwise (so failures say where).
TENSOR_API bool gradcheck(const std::function<Tensor(const variable_list&)>& fn, const variable_list& inputs,
                          double eps = 1e-6, double atol = 1e-5, double rtol = 1e-3);
/// gradcheck of the gradients themselves (second derivatives via create_graph).
TENSOR_API bool gradgradcheck(const std::function<Tensor(const variable_list&)>& fn, const variable_list& inputs,
                              double eps = 1e-6, double atol = 1e-5, double rtol = 1e-3);

/// One row of the derivatives table: the dispatcher op it differentiates ("mm") and the node
/// it records ("MmBackward0").
struct DerivativeRow {
  std::string op;
  std::string node;
};
/// Every row of the derivatives table, for introspection and for the tests that check each
/// differentiable op is gradient-checked (ops with hand-written nodes are not listed).
TENSOR_API std::vector<DerivativeRow> derivative_rows();

}  // namespace autograd

// libtorch spells these at the top level too (torch::AutoGradMode, torch::GradMode).
using autograd::AutoGradMode;
using autograd::GradMode;

/// Disables gradient recording for a scope (thread-local).
class TENSOR_API NoGradGuard {
 public:
  NoGradGuard() : mode_(false) {}

 private:
  autograd::AutoGradMode mode_;
};

/// Inference scope: no recording, and memory allocated inside makes inference tensors
/// (Tensor::is_inference). Nests; InferenceMode(false) turns it off for its scope.
class TENSOR_API InferenceMode {
 public:
  explicit InferenceMode(bool enabled = true) : mode_(!enabled), prev_(detail::inference_mode_enabled()) {
    detail::set_inference_mode_enabled(enabled);
  }
  ~InferenceMode() { detail::set_inference_mode_enabled(prev_); }
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;
  /// True inside an enabled InferenceMode scope on this thread.
  static bool is_enabled() { return detail::inference_mode_enabled(); }

 private:
  autograd::AutoGradMode mode_;
  bool prev_;
};

}  // namespace tensor
