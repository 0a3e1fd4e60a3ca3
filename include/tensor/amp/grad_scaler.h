// GradScaler: dynamic loss scaling for float16 training (torch.amp.GradScaler).
//
//   tensor::amp::GradScaler scaler(tensor::amp::GradScalerOptions().init_scale(65536.0));
//   scaler.scale(loss).backward();
//   scaler.unscale_(opt);            // optional: before clipping gradients
//   scaler.step(opt);                // skipped when a gradient is inf or NaN
//   scaler.update();                 // backs the scale off after a skip, grows it after
//                                    // growth_interval clean steps
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "tensor/core/Tensor.h"
#include "tensor/export.h"
#include "tensor/nn/arg.h"
#include "tensor/optim/optimizer.h"

namespace tensor {

/// Multiplies every tensor of `self` by inv_scale in place and sets found_inf (a one-element
/// float32 tensor) to 1 when any element of any of them was inf or NaN (libtorch's op of that
/// name; all tensors on found_inf's device).
TENSOR_API void _amp_foreach_non_finite_check_and_unscale_(TensorList self, const Tensor& found_inf,
                                                            const Tensor& inv_scale);
/// GradScaler.update's step on the one-element float32 `self` (the scale) and int32
/// growth_tracker, in place: backoff after found_inf != 0, growth after growth_interval clean
/// steps (libtorch's op of that name). Returns self.
TENSOR_API Tensor& _amp_update_scale_(Tensor& self, const Tensor& growth_tracker, const Tensor& found_inf,
                                      double growth_factor, double backoff_factor, int64_t growth_interval);

namespace amp {

/// Options of GradScaler, with torch.amp.GradScaler's defaults.
struct TENSOR_API GradScalerOptions {
  /// The scale before the first update.
  TENSOR_ARG(double, init_scale) = 65536.0;
  /// Multiplies the scale after growth_interval steps in a row without inf/NaN gradients.
  TENSOR_ARG(double, growth_factor) = 2.0;
  /// Multiplies the scale after a step with inf/NaN gradients.
  TENSOR_ARG(double, backoff_factor) = 0.5;
  /// Clean steps in a row before the scale grows.
  TENSOR_ARG(int64_t, growth_interval) = 2000;
  /// false: every method is a no-op pass-through (scale() returns its input, step() steps).
  TENSOR_ARG(bool, enabled) = true;
};

/// Dynamic loss scaling (torch.amp.GradScaler): scale() multiplies the loss so that small
/// float16 gradients do not flush to zero; unscale_() divides the gradients back and checks them
/// for inf/NaN; step() skips the optimizer step when one was found; update() adjusts the scale.
class TENSOR_API GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  /// `outputs` multiplied by the current scale (outputs unchanged when disabled). The scale is
  /// a one-element float32 tensor on outputs' device, made on first use.
  Tensor scale(const Tensor& outputs);
  /// Each tensor of `outputs` multiplied by the scale.
  std::vector<Tensor> scale(const std::vector<Tensor>& outputs);

  /// Divides the gradients of `optimizer`'s parameters by the scale in place and records
  /// whether any is inf/NaN. Call it before clipping; at most once per optimizer between two
  /// update() calls (tensor::Error otherwise), and before step().
  void unscale_(optim::Optimizer& optimizer);

  /// Unscales the gradients unless unscale_ already did, then runs optimizer.step() only when
  /// no gradient was inf/NaN. Returns step()'s result, or an undefined Tensor when skipped.
  /// Once per optimizer between two update() calls.
  Tensor step(optim::Optimizer& optimizer);

  /// Adjusts the scale from the inf/NaN checks of this iteration's steps (backoff, or growth
  /// after growth_interval clean steps), or sets it to `new_scale` when given. Call once per
  /// iteration, after step().
  void update(std::optional<double> new_scale = std::nullopt);

  /// The current scale (init_scale before the first scale(); 1.0 when disabled).
  double get_scale() const;
  double get_growth_factor() const { return options_.growth_factor(); }
  void set_growth_factor(double v) { options_.growth_factor(v); }
  double get_backoff_factor() const { return options_.backoff_factor(); }
  void set_backoff_factor(double v) { options_.backoff_factor(v); }
  int64_t get_growth_interval() const { return options_.growth_interval(); }
  void set_growth_interval(int64_t v) { options_.growth_interval(v); }
  /// Clean steps in a row since the scale last changed.
  int64_t get_growth_tracker() const;
  bool is_enabled() const { return options_.enabled(); }

  /// "scale", "growth_factor", "backoff_factor", "growth_interval" and "_growth_tracker" as
  /// 0-dim tensors (float64, int64), as torch's state_dict; empty when disabled.
  optim::NamedTensors state_dict() const;
  /// Restores state_dict()'s entries; tensor::Error for an empty dict (saved from a disabled
  /// scaler) or a missing entry.
  void load_state_dict(const optim::NamedTensors& state);

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct OptimizerState {
    Stage stage = Stage::Ready;
    std::vector<Tensor> found_inf;  // one per device of the gradients
  };
  void lazy_init(Device device);
  void unscale_grads(optim::Optimizer& optimizer, OptimizerState& st);

  GradScalerOptions options_;
  Tensor scale_;           // [1] float32
  Tensor growth_tracker_;  // [1] int32
  int64_t init_growth_tracker_ = 0;  // the tracker lazy_init starts from (load_state_dict may set it)
  std::unordered_map<const optim::Optimizer*, OptimizerState> per_optimizer_;
};

}  // namespace amp
}  // namespace tensor
