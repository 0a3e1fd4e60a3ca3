// Small helpers shared by the test files: checking tensor::Error messages and making
// deterministic float64 inputs.
#pragma once

#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace tensor::testing {

/// Runs f and returns the message of the tensor::Error it throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const tensor::Error& e) {
    return e.what();
  }
  return "";
}

/// Expects f to throw a tensor::Error whose message contains every fragment: a (non-fatal)
/// failure when nothing is thrown or a fragment is missing.
inline void expect_error(const std::function<void()>& f, const std::vector<std::string>& fragments) {
  try {
    f();
  } catch (const tensor::Error& e) {
    const std::string msg = e.what();
    for (const std::string& frag : fragments)
      EXPECT_NE(msg.find(frag), std::string::npos) << "message: " << msg << "\nmissing: " << frag;
    return;
  }
  std::string want;
  for (const std::string& frag : fragments) want += (want.empty() ? "'" : ", '") + frag + "'";
  ADD_FAILURE() << "expected tensor::Error containing " << want << ", but nothing was thrown";
}

/// The text of the error for an in-place write to output `output_nr` of a function that returns
/// several views, named by its backward node `node` (Note [Multi-output views]); the full message
/// has the op name before it and the tensor after it.
inline std::string multi_output_view_error(const std::string& node, int output_nr) {
  return "Output " + std::to_string(output_nr) + " of " + node +
         " is a view and is being modified inplace. This view is the output of a function that returns multiple "
         "views. Such functions do not allow the output views to be modified inplace. You should replace the "
         "inplace operation by an out-of-place one";
}

/// A contiguous float64 tensor of the given shape, values uniform in [lo, hi) drawn from
/// std::mt19937 seeded with `seed`: the same values on every run.
inline Tensor random_tensor(const std::vector<int64_t>& sizes, unsigned seed, double lo = -3.0, double hi = 3.0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(gen);
  return tensor::tensor(v, kFloat64).reshape(sizes);
}

/// t's values as float64, in row-major order (any dtype, layout or grad state).
inline std::vector<double> vals(const Tensor& t) {
  Tensor c = t.detach().to(kFloat64).contiguous();
  const double* p = c.numel() ? c.data_ptr<double>() : nullptr;
  return std::vector<double>(p, p + c.numel());
}

/// got[i] within tol * (1 + |want[i]|) of want[i] for every i, naming `what` and i on failure.
inline void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol,
                        const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << what << " at " << i;
}

/// Uniform values in [lo, hi) of dtype dt (rounded for integer dtypes), the same for a seed.
inline Tensor random_input(IntArrayRef shape, ScalarType dt, double lo, double hi, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Tensor t = tensor::empty(shape, TensorOptions(kFloat64));
  double* p = t.data_ptr<double>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = u(g);
    p[i] = is_floating_point(dt) ? v : std::round(v);
  }
  return t.to(dt);
}

/// The ten real dtypes, bool to float64 (the CUDA kernels' dtypes).
inline const std::vector<ScalarType> kRealDtypes = {kBool,    kUInt8,   kInt8,     kInt16,   kInt32,
                                                    kInt64,   kFloat16, kBFloat16, kFloat32, kFloat64};

template <class T>
struct TypeTag {
  using type = T;
};

/// Calls f(TypeTag<T>{}) with the C++ type of a real dtype; a test failure for any other.
template <class F>
void visit_real_dtype(ScalarType t, const F& f) {
  switch (t) {
    case kBool: return f(TypeTag<bool>{});
    case kUInt8: return f(TypeTag<uint8_t>{});
    case kInt8: return f(TypeTag<int8_t>{});
    case kInt16: return f(TypeTag<int16_t>{});
    case kInt32: return f(TypeTag<int32_t>{});
    case kInt64: return f(TypeTag<int64_t>{});
    case kFloat16: return f(TypeTag<Half>{});
    case kBFloat16: return f(TypeTag<BFloat16>{});
    case kFloat32: return f(TypeTag<float>{});
    case kFloat64: return f(TypeTag<double>{});
    default: FAIL() << "not a real dtype: " << t;
  }
}

}  // namespace tensor::testing

/// Skips the test (reported skipped, never passed) where no CUDA device is visible, and the
/// reverse: tests of the no-device behaviour skip where one is.
#define REQUIRE_CUDA()                                                            \
  do {                                                                            \
    if (!::tensor::cuda::is_available()) GTEST_SKIP() << "no CUDA device";        \
  } while (0)
#define REQUIRE_NO_CUDA()                                                                   \
  do {                                                                                      \
    if (::tensor::cuda::is_available()) GTEST_SKIP() << "a CUDA device is available";       \
  } while (0)
