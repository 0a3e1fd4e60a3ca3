// The bodies of CUDA's copy_ and fill_ kernels (CopyFn on kernels/cuda/ElementwiseBody.h), run
// per index on the CPU (Note [Kernel bodies run on the CPU]) for every pair of real dtypes, on a
// transposed and a broadcast source (the strided body) and a contiguous one (the vectorized
// body), and as a fill, against the CPU's copy_ and fill_: bit for bit.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernels/cuda/CopyBody.h"
#include "kernels/cuda/ElementwiseBody.h"
#include "tests/test_util.h"

using namespace tensor;
namespace ck = tensor::cuda_kernels;
using tensor::testing::random_input;

namespace {

using tensor::testing::visit_real_dtype;
const std::vector<ScalarType>& kReal = tensor::testing::kRealDtypes;

// Runs the strided body for every element of dst (innermost dim first, byte strides computed
// here from the public sizes and strides), src broadcast to dst's shape.
template <class out_t, class in_t>
void run_strided(const Tensor& dst, const Tensor& src) {
  const Tensor s = src.expand(dst.sizes());
  const int nd = static_cast<int>(dst.dim());
  std::vector<int64_t> shape(nd), so(nd), si(nd);
  for (int d = 0; d < nd; ++d) {
    shape[d] = dst.size(nd - 1 - d);
    so[d] = dst.stride(nd - 1 - d) * static_cast<int64_t>(sizeof(out_t));
    si[d] = s.stride(nd - 1 - d) * static_cast<int64_t>(sizeof(in_t));
  }
  const int64_t* strides[2] = {so.data(), si.data()};
  ck::ElementwiseArgs<in_t, 1> a{};
  a.out = static_cast<char*>(dst.data_ptr());
  a.in[0] = static_cast<const char*>(s.data_ptr());
  a.offsets = math::OffsetCalculator<2>(nd, shape.data(), strides);
  for (uint32_t i = 0; i < static_cast<uint32_t>(dst.numel()); ++i) ck::strided_body<out_t>(a, i, ck::CopyFn{});
}

template <class out_t, class in_t>
void run_vectorized(const Tensor& dst, const Tensor& src) {
  ck::ElementwiseArgs<in_t, 1> a{};
  a.out = static_cast<char*>(dst.data_ptr());
  a.in[0] = static_cast<const char*>(src.data_ptr());
  constexpr int VEC = ck::vec_size<out_t, in_t>();
  const uint32_t n = static_cast<uint32_t>(dst.numel());
  for (uint32_t v = 0; v < (n + VEC - 1) / VEC; ++v) ck::vectorized_body<VEC, out_t>(a, v, n, ck::CopyFn{});
}

void expect_same_bytes(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_TRUE(got.is_contiguous() && want.is_contiguous());
  EXPECT_EQ(std::memcmp(got.data_ptr(), want.data_ptr(), static_cast<size_t>(want.nbytes())), 0)
      << what << "\ngot:\n" << got << "\nwant:\n" << want;
}

}  // namespace

TEST(CopyBodies, EveryRealDtypePairMatchesCpuCopy) {
  uint64_t seed = 1;
  for (ScalarType in : kReal)
    for (ScalarType out : kReal) {
      // Values every dtype holds (non-negative, below int8's max), zeros included for bool.
      const Tensor base = random_input({7, 5}, in, 0, 100, seed++);
      const Tensor transposed = base.t();                                        // [5, 7], strided
      const Tensor row = random_input({7}, in, 0, 100, seed++);                  // broadcast over rows
      const Tensor contiguous = random_input({133}, in, 0, 100, seed++);         // a vector tail
      const std::string what = std::string(to_string(in)) + " -> " + to_string(out);
      visit_real_dtype(out, [&](auto ot) {
        using out_t = typename decltype(ot)::type;
        visit_real_dtype(in, [&](auto it) {
          using in_t = typename decltype(it)::type;
          for (const Tensor* src : {&transposed, &row}) {
            Tensor got = empty({5, 7}, TensorOptions(out)), want = empty({5, 7}, TensorOptions(out));
            want.copy_(*src);
            run_strided<out_t, in_t>(got, *src);
            expect_same_bytes(got, want, what + (src == &row ? " (broadcast)" : " (transposed)"));
          }
          Tensor got = empty({133}, TensorOptions(out)), want = empty({133}, TensorOptions(out));
          want.copy_(contiguous);
          run_vectorized<out_t, in_t>(got, contiguous);
          expect_same_bytes(got, want, what + " (contiguous)");
        });
      });
    }
}

// A fill is the same launch with the input a scalar argument in the output's dtype.
TEST(CopyBodies, FillMatchesCpuFill) {
  for (ScalarType t : kReal)
    visit_real_dtype(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (double value : {0.0, 1.0, 3.0, 100.0}) {
        Tensor want = empty({4, 6}, TensorOptions(t));
        want.fill_(value);
        Tensor got = empty({6, 4}, TensorOptions(t)).t();  // a strided destination
        ck::ElementwiseArgs<T, 1> a{};
        a.out = static_cast<char*>(got.data_ptr());
        a.scalar_mask = 1u;
        a.scalar[0] = static_cast<math::opmath_t<T>>(math::cast<T>(value));
        std::vector<int64_t> shape = {6, 4}, so = {got.stride(1) * int64_t(sizeof(T)), got.stride(0) * int64_t(sizeof(T))},
                             si = {0, 0};
        const int64_t* strides[2] = {so.data(), si.data()};
        a.offsets = math::OffsetCalculator<2>(2, shape.data(), strides);
        for (uint32_t i = 0; i < 24; ++i) ck::strided_body<T>(a, i, ck::CopyFn{});
        expect_same_bytes(got.contiguous(), want, std::string(to_string(t)) + " fill " + std::to_string(value));
      }
    });
}
