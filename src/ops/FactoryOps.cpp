// The factories as dispatcher ops (src/ops/FactoryOps.h).
//
// Note [Factories through the dispatcher]
// A factory has no tensor argument to take a dispatch key from, so it dispatches on the
// backend of the device its options name (OpDef::call_on), plus the thread's included keys:
// the profiler sees `empty`, `zeros` (as `full`), `arange` or `randn` like any other op, as in
// libtorch. The implementations (src/core/Factories.cpp, src/core/Random.cpp) allocate through
// the device's allocator, so one function fills every backend slot (composite_def); a backend
// that wants its own kernel (CUDA's random numbers) replaces its slot. The *_like factories,
// zeros, ones, and the shorter arange/eye/randint overloads call these, so they show as the op
// they call. from_blob and the tensor() literals are not ops, as in libtorch.
#include "src/ops/FactoryOps.h"

#include "src/core/FactoryImpls.h"
#include "src/dispatch/BackendKernels.h"
#include "tensor/ops.h"

namespace tensor {
namespace ops {
namespace {
using dispatch::composite_def;

FactoryOpDefs g_factories = {
    composite_def<EmptyFn>("empty", &detail::empty_impl),
    composite_def<EmptyStridedFn>("empty_strided", &detail::empty_strided_impl),
    composite_def<FullFn>("full", &detail::full_impl),
    composite_def<ScalarTensorFn>("scalar_tensor", &detail::scalar_tensor_impl),
    composite_def<ArangeFn>("arange", &detail::arange_impl),
    composite_def<LinspaceFn>("linspace", &detail::linspace_impl),
    composite_def<EyeFn>("eye", &detail::eye_impl),
    composite_def<RandFn>("rand", &detail::rand_impl),
    composite_def<RandFn>("randn", &detail::randn_impl),
    composite_def<RandintFn>("randint", &detail::randint_impl),
    composite_def<RandpermFn>("randperm", &detail::randperm_impl),
};
}  // namespace

FactoryOpDefs& factory_ops() { return g_factories; }
}  // namespace ops

using ops::factory_ops;

Tensor empty(IntArrayRef sizes, const TensorOptions& o) { return factory_ops().empty.call_on(o.device(), sizes, o); }
Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, const TensorOptions& o) {
  return factory_ops().empty_strided.call_on(o.device(), sizes, strides, o);
}
Tensor full(IntArrayRef sizes, const Scalar& value, const TensorOptions& o) {
  return factory_ops().full.call_on(o.device(), sizes, value, o);
}
Tensor scalar_tensor(const Scalar& s, const TensorOptions& o) {
  // A scalar tensor is on the CPU unless the options say otherwise (not the default device).
  return factory_ops().scalar_tensor.call_on(o.has_device() ? o.device() : Device(kCPU), s, o);
}
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& o) {
  return factory_ops().arange.call_on(o.device(), start, end, step, o);
}
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, const TensorOptions& o) {
  return factory_ops().linspace.call_on(o.device(), start, end, steps, o);
}
Tensor eye(int64_t n, int64_t m, const TensorOptions& o) { return factory_ops().eye.call_on(o.device(), n, m, o); }
Tensor rand(IntArrayRef sizes, const TensorOptions& o) { return factory_ops().rand.call_on(o.device(), sizes, o); }
Tensor randn(IntArrayRef sizes, const TensorOptions& o) { return factory_ops().randn.call_on(o.device(), sizes, o); }
Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, const TensorOptions& o) {
  return factory_ops().randint.call_on(o.device(), low, high, sizes, o);
}
Tensor randperm(int64_t n, const TensorOptions& o) { return factory_ops().randperm.call_on(o.device(), n, o); }

}  // namespace tensor
