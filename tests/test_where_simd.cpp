// where(cond, a, b) and masked_fill(_) on random masks (Note [Vectorized where] in
// kernels/cpu/CopyKernels.cpp): every dtype, lengths around the vector widths (tails), above
// the parallel grain, contiguous, broadcast-scalar, non-contiguous and row-broadcast conditions.
// Random bit patterns are used as values, so float NaNs (with payloads), -0.0 and infinities
// occur; results are compared byte for byte with a plain loop over contiguous copies.
#include <gtest/gtest.h>

#include <complex>
#include <tensor/tensor.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace tensor;

namespace {

std::mt19937_64& rng() {
  static std::mt19937_64 g(12345);
  return g;
}

// Random raw bits of dtype dt (bool: 0/1); float types also get explicit quiet NaNs.
Tensor rand_bits(IntArrayRef shape, ScalarType dt) {
  Tensor t = empty(shape, TensorOptions(dt));
  auto* p = static_cast<unsigned char*>(t.data_ptr());
  const size_t nbytes = static_cast<size_t>(t.numel()) * t.element_size();
  for (size_t i = 0; i < nbytes; ++i) p[i] = static_cast<unsigned char>(rng()());
  if (dt == kBool)
    for (size_t i = 0; i < nbytes; ++i) p[i] &= 1;
  if (dt == kFloat32)
    for (int64_t i = 0; i < t.numel(); i += 5) t.data_ptr<float>()[i] = std::nanf("");
  if (dt == kFloat64)
    for (int64_t i = 0; i < t.numel(); i += 5) t.data_ptr<double>()[i] = std::nan("");
  return t;
}
Tensor rand_mask(IntArrayRef shape) { return rand_bits(shape, kBool); }

// out[i] = c[i] ? a[i] : b[i] byte for byte, over contiguous copies expanded to `shape`.
Tensor where_ref(const Tensor& c, const Tensor& a, const Tensor& b, IntArrayRef shape) {
  Tensor cc = c.expand(shape).contiguous(), ac = a.expand(shape).contiguous(), bc = b.expand(shape).contiguous();
  Tensor out = empty(shape, a.options());
  const size_t es = out.element_size();
  const bool* cp = cc.data_ptr<bool>();
  const auto* ap = static_cast<const unsigned char*>(ac.data_ptr());
  const auto* bp = static_cast<const unsigned char*>(bc.data_ptr());
  auto* op = static_cast<unsigned char*>(out.data_ptr());
  for (int64_t i = 0; i < out.numel(); ++i) std::memcpy(op + i * es, (cp[i] ? ap : bp) + i * es, es);
  return out;
}

void expect_same_bytes(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  Tensor g = got.contiguous();
  const size_t es = g.element_size();
  const auto* gp = static_cast<const unsigned char*>(g.data_ptr());
  const auto* wp = static_cast<const unsigned char*>(want.data_ptr());
  for (int64_t i = 0; i < g.numel(); ++i)
    if (std::memcmp(gp + i * es, wp + i * es, es) != 0) {
      ADD_FAILURE() << what << ": first mismatch at flat index " << i << " of " << g.numel();
      return;
    }
}

const ScalarType kDtypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt8,      kUInt8,
                              kInt16,   kInt32,   kInt64,   kBool,     kComplex64, kComplex128};
const int64_t kLens[] = {1, 3, 7, 15, 16, 17, 31, 33, 63, 65, 255, 1031, 70001};

TEST(WhereSimd, ContiguousAndBroadcastScalarOperands) {
  for (ScalarType dt : kDtypes)
    for (int64_t n : kLens) {
      const std::string tag = std::string(to_string(dt)) + " n=" + std::to_string(n);
      Tensor c = rand_mask({n}), a = rand_bits({n}, dt), b = rand_bits({n}, dt);
      expect_same_bytes(where(c, a, b), where_ref(c, a, b, {n}), "contiguous " + tag);
      Tensor s = rand_bits({}, dt), s1 = rand_bits({1}, dt);
      expect_same_bytes(where(c, a, s), where_ref(c, a, s, {n}), "b 0-dim " + tag);
      expect_same_bytes(where(c, s, b), where_ref(c, s, b, {n}), "a 0-dim " + tag);
      expect_same_bytes(where(c, s1, s), where_ref(c, s1, s, {n}), "both broadcast " + tag);
      expect_same_bytes(where(c, a, s1.expand({n})), where_ref(c, a, s1, {n}), "b expanded " + tag);
    }
}

TEST(WhereSimd, NonContiguousAndRowBroadcastCondition) {
  for (ScalarType dt : kDtypes)
    for (int64_t n : {1, 5, 17, 67, 12001}) {
      const std::string tag = std::string(to_string(dt)) + " n=" + std::to_string(n);
      Tensor a = rand_bits({3, n}, dt).t();                          // [n, 3], strides (1, n)
      Tensor c = rand_mask({n, 6}).slice(1, 0, 6, 2);                 // [n, 3], strides (6, 2)
      Tensor b = rand_bits({n, 3}, dt);
      expect_same_bytes(where(c, a, b), where_ref(c, a, b, {n, 3}), "strided " + tag);
      Tensor cr = rand_mask({n, 1});                                  // one condition per row
      Tensor a2 = rand_bits({n, 9}, dt), b2 = rand_bits({n, 9}, dt), s = rand_bits({}, dt);
      expect_same_bytes(where(cr, a2, b2), where_ref(cr, a2, b2, {n, 9}), "row cond " + tag);
      expect_same_bytes(where(cr, a2, s), where_ref(cr, a2, s, {n, 9}), "row cond, b 0-dim " + tag);
      Tensor cm = rand_mask({9});                                     // condition broadcast over rows
      expect_same_bytes(where(cm, a2, b2), where_ref(cm, a2, b2, {n, 9}), "col cond " + tag);
    }
}

TEST(WhereSimd, ScalarOverloadKeepsNaN) {
  for (int64_t n : kLens) {
    Tensor y = rand_bits({n}, kFloat32), g = rand_bits({n}, kFloat32);
    Tensor c = y.gt(0);
    Tensor zero = scalar_tensor(0.0, TensorOptions(kFloat32));
    expect_same_bytes(where(c, g, 0.0), where_ref(c, g, zero, {n}), "where(y > 0, g, 0) n=" + std::to_string(n));
    Tensor nan = scalar_tensor(std::nan(""), TensorOptions(kFloat64));
    Tensor gd = rand_bits({n}, kFloat64);
    Tensor r = where(c, std::nan(""), gd);
    expect_same_bytes(r, where_ref(c, nan, gd, {n}), "where(c, nan, g) f64 n=" + std::to_string(n));
  }
}

TEST(MaskedFillSimd, OutOfPlaceReadsConjViews) {
  // A lazy conj view is read with its conj applied; the input is left untouched.
  Tensor re = randn({6}, kFloat64), im = randn({6}, kFloat64);
  Tensor z = re.to(kComplex128) + im.to(kComplex128) * scalar_tensor(std::complex<double>(0, 1), kComplex128);
  Tensor m = tensor::tensor({true, false, false, true, false, true});
  Tensor got = z.conj().masked_fill(m, 0.0);
  for (int64_t i = 0; i < 6; ++i) {
    const bool filled = m[i].item<bool>();
    EXPECT_EQ(got.real()[i].item<double>(), filled ? 0.0 : re[i].item<double>()) << i;
    EXPECT_EQ(got.imag()[i].item<double>(), filled ? 0.0 : -im[i].item<double>()) << i;
  }
  EXPECT_TRUE(z.imag().equal(im));
}

TEST(MaskedFillSimd, RandomMasksAllLayouts) {
  for (ScalarType dt : kDtypes)
    for (int64_t n : kLens) {
      const std::string tag = std::string(to_string(dt)) + " n=" + std::to_string(n);
      Scalar v = dt == kBool ? Scalar(true)
                 : is_floating_point(dt) ? Scalar(n % 2 ? std::nan("") : -2.5)
                                         : Scalar(int64_t{7});
      Tensor vt = scalar_tensor(v, TensorOptions(dt));
      Tensor x = rand_bits({n}, dt), m = rand_mask({n});
      expect_same_bytes(x.masked_fill(m, v), where_ref(m, vt, x, {n}), "out of place " + tag);
      // Out of place from a transposed input, and from an input the mask broadcasts ([n] -> [3, n]):
      // the output is filled in one pass from the input, not copied first.
      Tensor src_t = rand_bits({n, 3}, dt).t();
      Tensor m3 = rand_mask({3, n});
      expect_same_bytes(src_t.masked_fill(m3, v), where_ref(m3, vt, src_t, {3, n}), "out of place transposed " + tag);
      expect_same_bytes(x.masked_fill(m3, v), where_ref(m3, vt, x, {3, n}), "out of place, input broadcast " + tag);
      // In place on a transposed view, with the mask broadcast over the rows.
      Tensor base = rand_bits({n, 4}, dt);
      Tensor xt = base.t();  // [4, n], strides (1, 4)
      Tensor mr = rand_mask({n});
      Tensor want = where_ref(mr, vt, xt, {4, n});
      xt.masked_fill_(mr, v);
      expect_same_bytes(xt, want, "in place transposed " + tag);
      // In place, contiguous, mask of the full shape.
      Tensor y = rand_bits({2, n}, dt), my = rand_mask({2, n});
      Tensor want2 = where_ref(my, vt, y, {2, n});
      y.masked_fill_(my, v);
      expect_same_bytes(y, want2, "in place contiguous " + tag);
    }
}

}  // namespace
