// Helpers of the ported-program tests (tests/test_port_nn*.cpp), which compare with PyTorch
// values printed by tests/reference/torch_*.py.
#pragma once

#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cstdint>
#include <vector>

namespace tensor::testing {

/// The deterministic fill of det() in tests/reference/torch_ref_common.py:
/// lo + (hi - lo) * (((i * 37 + seed * 11 + 5) % 101) + 0.5) / 101 in row-major order, computed
/// in float64, then cast to dtype.
inline Tensor det(const std::vector<int64_t>& shape, int seed, double lo = -1.0, double hi = 1.0,
                  ScalarType dtype = kFloat64) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = lo + (hi - lo) * (static_cast<double>((i * 37 + seed * 11 + 5) % 101) + 0.5) / 101;
  return tensor::tensor(v, kFloat64).reshape(shape).to(dtype);
}

/// x's values in a non-contiguous view (every other element of the last dim of a wider tensor),
/// a leaf without history; a 0-dim x is returned as is.
inline Tensor strided(const Tensor& x) {
  std::vector<int64_t> shape = x.sizes().vec();
  if (shape.empty()) return x;
  shape.back() *= 2;
  Tensor big = zeros(shape, x.options());
  Tensor view = big.slice(-1, 0, shape.back(), 2);
  {
    NoGradGuard no_grad;
    view.copy_(x);
  }
  EXPECT_FALSE(view.is_contiguous());
  return view;
}

}  // namespace tensor::testing
