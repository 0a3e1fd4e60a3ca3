// Internal: the factories' implementations, which src/ops/FactoryOps.cpp puts behind the
// dispatcher (Note [Factories through the dispatcher]). Each allocates on the options' device
// through that device's allocator, so one function serves every backend. (The filling
// factories, rand/randn/randint/arange/linspace, are front ends over per-backend kernels in
// src/ops/FactoryOps.cpp.)
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
Tensor eye_impl(int64_t n, int64_t m, const TensorOptions& o);

}  // namespace tensor::detail
