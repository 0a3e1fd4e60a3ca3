// optim::LBFGS: limited-memory BFGS over all parameters as one flat vector, with an optional
// strong-Wolfe line search (torch::optim::LBFGS).
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <utility>

#include "tensor/optim/optimizer.h"

namespace tensor::optim {

struct TENSOR_API LBFGSOptions : public OptimizerCloneableOptions<LBFGSOptions> {
  LBFGSOptions(double lr = 1);
  double get_lr() const override;
  void set_lr(double lr) override;
  /// lr, max_iter, max_eval (left out while unset), tolerance_grad, tolerance_change,
  /// history_size, and line_search_fn as 0 (none) or 1 ("strong_wolfe").
  std::vector<std::pair<std::string, double>> named_values() const override;
  void set_named_value(const std::string& name, double value) override;
  /// The fixed step length, or the line search's first trial step.
  TENSOR_ARG(double, lr) = 1;
  /// Iterations per step() call.
  TENSOR_ARG(int64_t, max_iter) = 20;
  /// Closure evaluations per step() call; unset means max_iter * 5 / 4 (the constructor fills it).
  TENSOR_ARG(std::optional<int64_t>, max_eval) = std::nullopt;
  /// Stop when the largest gradient element is at most this.
  TENSOR_ARG(double, tolerance_grad) = 1e-7;
  /// Stop when the step, or the change in loss, is below this.
  TENSOR_ARG(double, tolerance_change) = 1e-9;
  /// How many (step, gradient change) pairs approximate the inverse Hessian.
  TENSOR_ARG(int64_t, history_size) = 100;
  /// std::nullopt (fixed step lr) or "strong_wolfe".
  TENSOR_ARG(std::optional<std::string>, line_search_fn) = std::nullopt;
};

/// LBFGS's state. It is global, not per parameter, and lives under the first parameter (as
/// libtorch's), so state_dict() holds it as "state.0.*": func_evals, n_iter (int64), t,
/// prev_loss (0-dim float64), d, H_diag, prev_flat_grad, and the history as old_dirs.i,
/// old_stps.i and ro.i, oldest first (flat tensors in the parameters' dtype).
struct TENSOR_API LBFGSParamState : public OptimizerCloneableParamState<LBFGSParamState> {
  NamedTensors named_tensors() const override;
  void set_named_tensor(const std::string& name, const Tensor& value) override;
  /// False: the flat tensors span all parameters and t, prev_loss stay float64.
  bool shaped_like_param(const std::string& name) const override;
  /// Closure evaluations over all step() calls.
  TENSOR_ARG(int64_t, func_evals) = 0;
  /// Iterations over all step() calls.
  TENSOR_ARG(int64_t, n_iter) = 0;
  /// The last step length.
  TENSOR_ARG(double, t) = 0;
  /// The loss before the last iteration's step.
  TENSOR_ARG(double, prev_loss) = 0;
  /// The last search direction.
  TENSOR_ARG(Tensor, d) = {};
  /// The scale of the initial inverse Hessian, y.s / y.y of the newest pair.
  TENSOR_ARG(Tensor, H_diag) = {};
  TENSOR_ARG(Tensor, prev_flat_grad) = {};
  /// Gradient changes y, steps s and 1 / (y.s), oldest first.
  TENSOR_ARG(std::deque<Tensor>, old_dirs);
  TENSOR_ARG(std::deque<Tensor>, old_stps);
  TENSOR_ARG(std::deque<Tensor>, ro);
  /// Scratch of the two-loop recursion, rewritten before every read (so not in state_dict).
  TENSOR_ARG(std::optional<std::vector<Tensor>>, al) = std::nullopt;
};

/// Each step() call runs up to max_iter L-BFGS iterations on the closure's loss: the direction
/// d = -H g from the two-loop recursion over the last history_size pairs, then p += t d with
/// t = lr (t = min(1, 1 / |g|_1) lr on the very first iteration), or t from a strong-Wolfe line
/// search (c1 = 1e-4, c2 = 0.9, at most 25 evaluations). One parameter group only.
class TENSOR_API LBFGS : public Optimizer {
 public:
  /// tensor::Error for more than one group ("LBFGS doesn't support per-parameter options
  /// (parameter groups)"), a line_search_fn other than "strong_wolfe", a negative lr, or a
  /// max_iter, max_eval or history_size below 1. Fills an unset max_eval with max_iter * 5 / 4.
  LBFGS(std::vector<OptimizerParamGroup> param_groups, LBFGSOptions defaults = {});
  LBFGS(std::vector<Tensor> params, LBFGSOptions defaults = {});
  /// Runs the iterations; `closure` (required: "LBFGS requires closure to be passed") zeroes
  /// the gradients, computes the loss, calls backward and returns the loss. Returns the loss
  /// of the first evaluation, before any update.
  Tensor step(LossClosure closure) override;

 protected:
  std::unique_ptr<OptimizerParamState> make_param_state() const override;

 private:
  Tensor gather_flat_grad() const;
  void add_grad(double step_size, const Tensor& update);
};

}  // namespace tensor::optim
