// The CUDA elementwise kernels' bodies, run per index on the CPU (Note [Kernel bodies run on the
// CPU] in kernels/cuda/ElementwiseBody.h): every unary and binary op of the op list, in every
// dtype its op-table row names, on contiguous (the vectorized body), transposed and broadcast
// (the strided body) inputs and with a CPU scalar operand, against the CPU kernels' results.
// The layout is computed here from the tensors' public sizes and strides, independently of the
// TensorIterator the CUDA backend reads.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <map>
#include <random>
#include <string>

#include "kernels/cuda/ElementwiseBody.h"
#include "kernels/math/Binary.h"
#include "kernels/math/Unary.h"
#include "tests/op_table.h"
#include "tests/test_util.h"

using namespace tensor;
namespace ck = tensor::cuda_kernels;
using cpu::BinaryOp;
using cpu::UnaryOp;
using tensor::testing::random_input;

namespace {

template <class T> struct Tag { using type = T; };

// Calls f(Tag<T>{}) for dtype t when the op list's dtype bits (Groups) accept it.
template <unsigned Groups, class F>
void visit_real(ScalarType t, const F& f) {
  switch (t) {
    case kBool: if constexpr ((Groups & 1u) != 0) return f(Tag<bool>{}); break;
    case kUInt8: if constexpr ((Groups & 2u) != 0) return f(Tag<uint8_t>{}); break;
    case kInt8: if constexpr ((Groups & 2u) != 0) return f(Tag<int8_t>{}); break;
    case kInt16: if constexpr ((Groups & 2u) != 0) return f(Tag<int16_t>{}); break;
    case kInt32: if constexpr ((Groups & 2u) != 0) return f(Tag<int32_t>{}); break;
    case kInt64: if constexpr ((Groups & 2u) != 0) return f(Tag<int64_t>{}); break;
    case kFloat16: if constexpr ((Groups & 8u) != 0) return f(Tag<Half>{}); break;
    case kBFloat16: if constexpr ((Groups & 8u) != 0) return f(Tag<BFloat16>{}); break;
    case kFloat32: if constexpr ((Groups & 4u) != 0) return f(Tag<float>{}); break;
    case kFloat64: if constexpr ((Groups & 4u) != 0) return f(Tag<double>{}); break;
    default: break;
  }
  FAIL() << "the op list does not accept dtype " << t << " for this op";
}

template <class T> constexpr ScalarType dtype_of();
template <> constexpr ScalarType dtype_of<bool>() { return kBool; }
template <> constexpr ScalarType dtype_of<uint8_t>() { return kUInt8; }
template <> constexpr ScalarType dtype_of<int8_t>() { return kInt8; }
template <> constexpr ScalarType dtype_of<int16_t>() { return kInt16; }
template <> constexpr ScalarType dtype_of<int32_t>() { return kInt32; }
template <> constexpr ScalarType dtype_of<int64_t>() { return kInt64; }
template <> constexpr ScalarType dtype_of<Half>() { return kFloat16; }
template <> constexpr ScalarType dtype_of<BFloat16>() { return kBFloat16; }
template <> constexpr ScalarType dtype_of<float>() { return kFloat32; }
template <> constexpr ScalarType dtype_of<double>() { return kFloat64; }

// Byte strides, innermost dim first, of `t` broadcast to `shape`.
void byte_strides(const Tensor& t, IntArrayRef shape, int64_t* out) {
  const int64_t nd = static_cast<int64_t>(shape.size()), off = nd - t.dim();
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t ld = nd - 1 - d, td = ld - off;
    out[d] = (td < 0 || t.size(td) == 1) ? 0 : t.stride(td) * t.element_size();
  }
}

// Runs a body over every index of `out` (contiguous, the broadcast shape): the vectorized body
// when every tensor operand is contiguous with out's shape, else the strided one.
template <class out_t, class in_t, int NIN, class F>
void run_bodies(const Tensor& out, const std::vector<Tensor>& in, const std::vector<bool>& cpu_scalar,
                const std::vector<double>& scalar_value, const F& f) {
  using op_t = math::opmath_t<in_t>;
  ck::ElementwiseArgs<in_t, NIN> a{};
  a.out = static_cast<char*>(out.data_ptr());
  a.scalar_mask = 0;
  bool contiguous = true;
  for (int k = 0; k < NIN; ++k) {
    a.in[k] = static_cast<const char*>(in[k].data_ptr());
    a.scalar[k] = op_t{};
    if (cpu_scalar[k]) {
      a.scalar_mask |= 1u << k;
      a.scalar[k] = static_cast<op_t>(scalar_value[k]);
    } else if (!(in[k].is_contiguous() && in[k].sizes() == out.sizes())) {
      contiguous = false;
    }
  }
  const uint32_t n = static_cast<uint32_t>(out.numel());
  if (contiguous) {
    constexpr int VEC = ck::vec_size<out_t, in_t>();
    for (uint32_t vi = 0; vi * VEC < n; ++vi) ck::vectorized_body<VEC, out_t>(a, vi, n, f);
    return;
  }
  const int nd = static_cast<int>(out.dim());
  int64_t sizes[8], strides[NIN + 1][8];
  for (int d = 0; d < nd; ++d) sizes[d] = out.size(nd - 1 - d);
  byte_strides(out, out.sizes(), strides[0]);
  for (int k = 0; k < NIN; ++k) {
    if (cpu_scalar[k]) std::fill(strides[k + 1], strides[k + 1] + 8, 0);
    else byte_strides(in[k], out.sizes(), strides[k + 1]);
  }
  const int64_t* sp[NIN + 1];
  for (int k = 0; k <= NIN; ++k) sp[k] = strides[k];
  a.offsets = math::OffsetCalculator<NIN + 1>(nd, sizes, sp);
  for (uint32_t i = 0; i < n; ++i) ck::strided_body<out_t>(a, i, f);
}

// Equal for integer and bool results and for the half types (their CPU loops run the same
// functor); floats within a few ulps, since the CPU's SIMD paths (Highway, oneDNN) differ there.
int g_compared = 0;  // comparisons made, so a test that skipped everything fails

void expect_same(const Tensor& body, const Tensor& cpu, const std::string& what) {
  ++g_compared;
  ASSERT_EQ(body.dtype(), cpu.dtype()) << what;
  ASSERT_EQ(body.sizes(), cpu.sizes()) << what;
  const ScalarType t = cpu.dtype();
  if (t == kFloat32 || t == kFloat64) {
    const double rtol = t == kFloat32 ? 1e-5 : 1e-12, atol = t == kFloat32 ? 1e-6 : 1e-13;
    EXPECT_TRUE(tensor::allclose(body, cpu, rtol, atol, /*equal_nan=*/true))
        << what << "\nbody:\n" << body << "\ncpu:\n" << cpu;
  } else {
    EXPECT_TRUE(tensor::allclose(body.to(kFloat64), cpu.to(kFloat64), 0, 0, /*equal_nan=*/true))
        << what << "\nbody:\n" << body << "\ncpu:\n" << cpu;
  }
}

std::string dims(IntArrayRef v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

double item_double(const Tensor& t) { return t.to(kFloat64).item<double>(); }

template <UnaryOp Op>
void check_unary(const optable::UnaryCase& row, ScalarType dt) {
  visit_real<cpu::info(Op).dtypes>(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using R = decltype(math::unary_op<Op>(math::opmath_t<T>{}));
    using out_t = std::conditional_t<std::is_same_v<R, bool>, bool, T>;
    auto f = [](auto x) { return math::unary_op<Op>(x); };
    // 37 elements: a partial last vector for every vector width.
    Tensor contiguous = random_input({37}, dt, row.lo, row.hi, 1);
    Tensor transposed = random_input({7, 5}, dt, row.lo, row.hi, 2).t();
    Tensor expanded = random_input({1, 5}, dt, row.lo, row.hi, 3).expand({4, 5});
    for (const Tensor& x : {contiguous, transposed, expanded}) {
      Tensor cpu = row.fn(x);
      if (cpu.dtype() != dtype_of<out_t>()) return;  // promoted by the front end (ints to float)
      Tensor body = tensor::empty(cpu.sizes(), TensorOptions(cpu.dtype()));
      run_bodies<out_t, T, 1>(body, {x}, {false}, {0.0}, f);
      expect_same(body, cpu, row.name + " " + std::string(to_string(dt)) + " " + dims(x.strides()));
    }
  });
}

template <BinaryOp Op>
void check_binary(const optable::BinaryCase& row, ScalarType dt, double alpha = 1) {
  visit_real<cpu::info(Op).dtypes>(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using op_t = math::opmath_t<T>;
    using R = decltype(math::binary_op<Op>(op_t{}, op_t{}));
    using out_t = std::conditional_t<std::is_same_v<R, bool>, bool, T>;
    const auto al = static_cast<op_t>(alpha);
    auto f = [al](op_t x, op_t y) {
      if constexpr ((Op == BinaryOp::Add || Op == BinaryOp::Sub) && !std::is_same_v<T, bool>) {
        if (!(al == op_t(1))) return static_cast<decltype(math::binary_op<Op>(x, y))>(math::add_alpha<Op>(x, y, al));
      }
      return math::binary_op<Op>(x, y);
    };
    struct Pair { Tensor a, b; bool b_scalar; };
    const double b_scalar = is_floating_point(dt) ? 0.5 * (row.blo + row.bhi) + 0.25 : std::round(0.5 * (row.blo + row.bhi)) + 1;
    std::vector<Pair> pairs = {
        {random_input({37}, dt, row.lo, row.hi, 4), random_input({37}, dt, row.blo, row.bhi, 5), false},
        {random_input({7, 5}, dt, row.lo, row.hi, 6).t(), random_input({5, 7}, dt, row.blo, row.bhi, 7), false},
        {random_input({5, 1}, dt, row.lo, row.hi, 8), random_input({7}, dt, row.blo, row.bhi, 9), false},
        {random_input({3, 6}, dt, row.lo, row.hi, 10), tensor::full({}, b_scalar, TensorOptions(dt)), true},
    };
    for (const Pair& p : pairs) {
      Tensor cpu = row.fn(p.a, p.b);
      if (cpu.dtype() != dtype_of<out_t>()) return;
      Tensor body = tensor::empty(cpu.sizes(), TensorOptions(cpu.dtype()));
      run_bodies<out_t, T, 2>(body, {p.a, p.b}, {false, p.b_scalar}, {0.0, p.b_scalar ? item_double(p.b) : 0.0}, f);
      expect_same(body, cpu,
                  row.name + " " + std::string(to_string(dt)) + (p.b_scalar ? " (CPU scalar b)" : "") + " a " +
                      dims(p.a.sizes()) + " strides " + dims(p.a.strides()) + " b " +
                      dims(p.b.sizes()));
    }
  });
}

// The op table's rows by name, and the op-list entries they exercise.
using UnaryCheck = void (*)(const optable::UnaryCase&, ScalarType);
const std::map<std::string, UnaryCheck>& unary_checks() {
  static const std::map<std::string, UnaryCheck> m = {
#define TENSOR_ROW(Enum, name, dtypes, result, api) {#name, &check_unary<UnaryOp::Enum>},
      TENSOR_UNARY_OPS(TENSOR_ROW)
#undef TENSOR_ROW
  };
  return m;
}

}  // namespace

TEST(KernelBodies, EveryUnaryRowMatchesTheCpuKernel) {
  int checked = 0;
  g_compared = 0;
  for (const optable::UnaryCase& row : optable::unary_cases()) {
    auto it = unary_checks().find(row.name);
    ASSERT_NE(it, unary_checks().end()) << row.name << " has no op-list entry";
    for (ScalarType dt : row.dtypes) {
      it->second(row, dt);
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
  EXPECT_GT(g_compared, 3 * 100);
}

TEST(KernelBodies, EveryBinaryRowMatchesTheCpuKernel) {
  int checked = 0;
  g_compared = 0;
  for (const optable::BinaryCase& row : optable::binary_cases()) {
    for (ScalarType dt : row.dtypes) {
      const std::string& n = row.name;
      if (n == "add_alpha") check_binary<BinaryOp::Add>(row, dt, 2);
#define TENSOR_ROW(Enum, name, dtypes, result, api) else if (n == #name) check_binary<BinaryOp::Enum>(row, dt);
      TENSOR_BINARY_OPS(TENSOR_ROW)
#undef TENSOR_ROW
      else FAIL() << n << " has no op-list entry";
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
  EXPECT_GT(g_compared, 4 * 100);
}

// The two rounding divisions have no op-table row of their own (they are div's rounding modes).
TEST(KernelBodies, RoundingDivisionsMatchTheCpuKernel) {
  optable::BinaryCase trunc{"div trunc", [](const Tensor& a, const Tensor& b) { return tensor::div(a, b, "trunc"); },
                            nullptr, -20, 20, 1, 6, {kFloat32, kFloat64, kInt32, kInt64, kInt8}};
  optable::BinaryCase floor{"div floor", [](const Tensor& a, const Tensor& b) { return tensor::div(a, b, "floor"); },
                            nullptr, -20, 20, -6, -1, {kFloat32, kFloat64, kInt32, kInt64, kInt8}};
  for (ScalarType dt : trunc.dtypes) check_binary<BinaryOp::DivTrunc>(trunc, dt);
  for (ScalarType dt : floor.dtypes) check_binary<BinaryOp::DivFloor>(floor, dt);
}

// A body that is wrong must fail the comparison: an off-by-one in the strided offsets would.
TEST(KernelBodies, TheComparisonCatchesAWrongBody) {
  Tensor x = tensor::arange(12, TensorOptions(kFloat32)).view({3, 4}).t();
  Tensor body = tensor::empty({4, 3}, TensorOptions(kFloat32));
  run_bodies<float, float, 1>(body, {x.contiguous()}, {false}, {0.0}, [](float v) { return v + 1; });
  EXPECT_FALSE(tensor::allclose(body, x, 1e-5, 1e-6));
  EXPECT_TRUE(tensor::allclose(body, x + 1, 1e-5, 1e-6));
}
