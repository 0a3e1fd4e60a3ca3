// Front ends of GradScaler's ops, _amp_foreach_non_finite_check_and_unscale_ and
// _amp_update_scale_ (libtorch's names and semantics): argument checks, then the backend's
// kernel; Meta stops after the checks.
#include "src/amp/AmpOps.h"

#include <vector>

#include "kernels/AmpMath.h"
#include "kernels/cpu/AmpKernels.h"
#include "src/core/Check.h"
#include "src/dispatch/BackendKernels.h"
#include "tensor/amp/grad_scaler.h"

namespace tensor {
namespace ops {
namespace {

void check_one_element(const char* op, const char* what, const Tensor& t, ScalarType dtype, Device device) {
  TENSOR_CHECK(t.defined() && t.numel() == 1 && t.dtype() == dtype,
               "{}: {} must be a one-element {} tensor, got {}", op, what, dtype,
               t.defined() ? t.describe() : std::string("an undefined tensor"));
  TENSOR_CHECK(t.device() == device, "{}: {} is on {}, but the other tensors are on {}", op, what, t.device().str(),
               device.str());
}

dispatch::BackendKernels<decltype(AmpKernels::unscale)> g_unscale_kernels;
dispatch::BackendKernels<decltype(AmpKernels::update_scale)> g_update_scale_kernels;

template <DispatchKey K>
void amp_unscale(TensorList grads, const Tensor& found_inf, const Tensor& inv_scale) {
  const char* op = "_amp_foreach_non_finite_check_and_unscale_";
  TENSOR_CHECK(found_inf.defined(), "{}: found_inf must be defined", op);
  const Device device = found_inf.device();
  check_one_element(op, "found_inf", found_inf, kFloat32, device);
  check_one_element(op, "inv_scale", inv_scale, kFloat32, device);
  for (size_t i = 0; i < grads.size(); ++i) {
    const Tensor& g = grads[i];
    TENSOR_CHECK(g.defined(), "{}: gradient {} is undefined", op, i);
    TENSOR_CHECK(g.is_floating_point(), "{}: gradients must be floating point, gradient {} is {}", op, i, g.describe());
    TENSOR_CHECK(g.device() == device, "{}: gradient {} is on {}, but found_inf and inv_scale are on {}", op, i,
                 g.device().str(), device.str());
  }
  if constexpr (K != DispatchKey::Meta) {
    // The kernels read contiguous memory; a strided gradient (rare: gradients take their
    // parameter's layout) goes through a contiguous copy written back.
    std::vector<Tensor> work;
    for (const Tensor& g : grads)
      if (g.numel() > 0) work.push_back(g.is_contiguous() ? g : g.contiguous());
    if constexpr (K == DispatchKey::CPU)
      cpu::amp_non_finite_check_and_unscale(work, found_inf.data_ptr<float>(), *inv_scale.data_ptr<float>());
    else
      g_unscale_kernels.get<K>(op)(work, found_inf, inv_scale);
    for (size_t i = 0, w = 0; i < grads.size(); ++i) {
      if (grads[i].numel() == 0) continue;
      if (!work[w].is_same(grads[i])) grads[i].copy_(work[w]);
      ++w;
    }
  }
}

template <DispatchKey K>
Tensor& amp_update_scale(Tensor& scale, const Tensor& growth_tracker, const Tensor& found_inf, double growth_factor,
                         double backoff_factor, int64_t growth_interval) {
  const char* op = "_amp_update_scale_";
  TENSOR_CHECK(scale.defined(), "{}: scale must be defined", op);
  const Device device = scale.device();
  check_one_element(op, "scale", scale, kFloat32, device);
  check_one_element(op, "growth_tracker", growth_tracker, kInt32, device);
  check_one_element(op, "found_inf", found_inf, kFloat32, device);
  TENSOR_CHECK(growth_interval > 0, "{}: growth_interval must be positive, got {}", op, growth_interval);
  if constexpr (K == DispatchKey::CPU) {
    amp_math::update_scale(*scale.data_ptr<float>(), *growth_tracker.data_ptr<int32_t>(), *found_inf.data_ptr<float>(),
                           growth_factor, backoff_factor, growth_interval);
  } else if constexpr (K != DispatchKey::Meta) {
    g_update_scale_kernels.get<K>(op)(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval);
  }
  return scale;
}

dispatch::OpDef<AmpUnscaleFn> g_unscale =
    TENSOR_FRONT_END_DEF(AmpUnscaleFn, "_amp_foreach_non_finite_check_and_unscale_", amp_unscale);
dispatch::OpDef<AmpUpdateScaleFn> g_update_scale =
    TENSOR_FRONT_END_DEF(AmpUpdateScaleFn, "_amp_update_scale_", amp_update_scale);

}  // namespace

dispatch::OpDef<AmpUnscaleFn>& amp_unscale_op() { return g_unscale; }
dispatch::OpDef<AmpUpdateScaleFn>& amp_update_scale_op() { return g_update_scale; }

void register_kernel(DispatchKey backend, const AmpKernels& kernels) {
  dispatch::check_kernel_backend(backend, "_amp_foreach_non_finite_check_and_unscale_/_amp_update_scale_");
  TENSOR_CHECK(kernels.unscale && kernels.update_scale, "register_kernel(amp): both kernels are required");
  g_unscale_kernels.set(backend, kernels.unscale);
  g_update_scale_kernels.set(backend, kernels.update_scale);
  g_unscale.set(backend, &amp_unscale<DispatchKey::CUDA>);
  g_update_scale.set(backend, &amp_update_scale<DispatchKey::CUDA>);
}

}  // namespace ops

void _amp_foreach_non_finite_check_and_unscale_(TensorList self, const Tensor& found_inf, const Tensor& inv_scale) {
  ops::g_unscale(self, found_inf, inv_scale);
}

Tensor& _amp_update_scale_(Tensor& self, const Tensor& growth_tracker, const Tensor& found_inf, double growth_factor,
                           double backoff_factor, int64_t growth_interval) {
  return ops::g_update_scale(self, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval);
}

}  // namespace tensor
