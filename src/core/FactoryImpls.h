// Internal: the factories' implementations, which src/ops/FactoryOps.cpp puts behind the
// dispatcher (Note [Factories through the dispatcher]). Each allocates on the options' device
// through that device's allocator, so one function serves every backend.
#pragma once

#include <cstdint>

#include "tensor/core/Scalar.h"
#include "tensor/core/Tensor.h"
#include "tensor/core/TensorOptions.h"

namespace tensor::detail {

Tensor empty_impl(IntArrayRef sizes, const TensorOptions& o);
Tensor empty_strided_impl(IntArrayRef sizes, IntArrayRef strides, const TensorOptions& o);
Tensor full_impl(IntArrayRef sizes, const Scalar& value, const TensorOptions& o);
Tensor scalar_tensor_impl(const Scalar& s, const TensorOptions& o);
Tensor arange_impl(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& o);
Tensor linspace_impl(const Scalar& start, const Scalar& end, int64_t steps, const TensorOptions& o);
Tensor eye_impl(int64_t n, int64_t m, const TensorOptions& o);
Tensor rand_impl(IntArrayRef sizes, const TensorOptions& o);
Tensor randn_impl(IntArrayRef sizes, const TensorOptions& o);
Tensor randint_impl(int64_t low, int64_t high, IntArrayRef sizes, const TensorOptions& o);
Tensor randperm_impl(int64_t n, const TensorOptions& o);

}  // namespace tensor::detail
