// tensor::MemoryFormat in libtorch's spelling (Note [Memory formats], src/ops/MemoryFormat.cpp):
// the strides that empty, contiguous, to, clone and empty_like give, when to() aliases, what
// suggest_memory_format answers, and the errors. Expected strides are worked out by hand from
// the layout each format names (and agree with libtorch 1.13's on the same calls); values are
// compared with the source element by element.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <sstream>
#include <string>
#include <vector>

using namespace tensor;

namespace {

using Dims = std::vector<int64_t>;

Dims strides_of(const Tensor& t) { return t.strides().vec(); }

/// Every element of a equals b's (same sizes), read through each tensor's own strides.
void expect_same_values(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.sizes().vec(), b.sizes().vec());
  Tensor x = a.to(kFloat64).reshape({-1}), y = b.to(kFloat64).reshape({-1});
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(x[i].item<double>(), y[i].item<double>()) << "at " << i;
}

template <class F>
void expect_error_mentioning(F f, const std::vector<std::string>& parts) {
  try {
    f();
    FAIL() << "expected tensor::Error";
  } catch (const Error& e) {
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(MemoryFormat, EmptyLaysOutEachFormat) {
  Tensor cl = empty({2, 3, 4, 5}, {}, MemoryFormat::ChannelsLast);
  EXPECT_EQ(strides_of(cl), (Dims{60, 1, 15, 3}));
  EXPECT_FALSE(cl.is_contiguous());
  EXPECT_TRUE(cl.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_EQ(cl.suggest_memory_format(), MemoryFormat::ChannelsLast);

  // The same through the options, as libtorch's TensorOptions().memory_format(...).
  Tensor via_options = empty({2, 3, 4, 5}, TensorOptions().dtype(kFloat64).memory_format(MemoryFormat::ChannelsLast));
  EXPECT_EQ(strides_of(via_options), (Dims{60, 1, 15, 3}));
  EXPECT_EQ(via_options.dtype(), kFloat64);
  EXPECT_EQ(strides_of(empty({2, 3, 4, 5}, tensor::memory_format(MemoryFormat::Contiguous))), (Dims{60, 20, 5, 1}));

  // (N, C, D, H, W) stored N, D, H, W, C.
  Tensor cl3 = empty({2, 3, 4, 5, 6}, {}, MemoryFormat::ChannelsLast3d);
  EXPECT_EQ(strides_of(cl3), (Dims{360, 1, 90, 18, 3}));
  EXPECT_TRUE(cl3.is_contiguous(MemoryFormat::ChannelsLast3d));
  EXPECT_FALSE(cl3.is_contiguous(MemoryFormat::ChannelsLast));  // 4-d only
  EXPECT_EQ(cl3.suggest_memory_format(), MemoryFormat::ChannelsLast3d);

  Tensor plain = empty({2, 3, 4, 5});
  EXPECT_TRUE(plain.is_contiguous(MemoryFormat::Contiguous));
  EXPECT_FALSE(plain.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_EQ(plain.suggest_memory_format(), MemoryFormat::Contiguous);
}

TEST(MemoryFormat, SizeOneDimsDecideTheSuggestion) {
  // (N, C, 1, 1) is dense in both orders; the strides of the size-1 dims tell which one made it.
  Tensor rowmajor = empty({2, 3, 1, 1});
  Tensor cl = empty({2, 3, 1, 1}, {}, MemoryFormat::ChannelsLast);
  EXPECT_EQ(strides_of(rowmajor), (Dims{3, 1, 1, 1}));
  EXPECT_EQ(strides_of(cl), (Dims{3, 1, 3, 3}));
  for (const Tensor& t : {rowmajor, cl}) {
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_TRUE(t.is_contiguous(MemoryFormat::ChannelsLast));
  }
  EXPECT_EQ(rowmajor.suggest_memory_format(), MemoryFormat::Contiguous);
  EXPECT_EQ(cl.suggest_memory_format(), MemoryFormat::ChannelsLast);
  // (N, 1, 1, 1) with equal strides is row-major by default.
  EXPECT_EQ(empty({4, 1, 1, 1}).suggest_memory_format(), MemoryFormat::Contiguous);
  // An expanded channel dim (stride 0) is never channels-last.
  EXPECT_EQ(empty({2, 1, 4, 5}).expand({2, 3, 4, 5}).suggest_memory_format(), MemoryFormat::Contiguous);
  // A permute of an NHWC tensor is channels-last.
  EXPECT_EQ(randn({2, 4, 5, 3}).permute({0, 3, 1, 2}).suggest_memory_format(), MemoryFormat::ChannelsLast);
  // 3-d tensors have no channels-last format.
  EXPECT_EQ(randn({2, 5, 3}).permute({0, 2, 1}).suggest_memory_format(), MemoryFormat::Contiguous);
}

TEST(MemoryFormat, ContiguousConvertsAndReturnsSelfWhenAlreadyThere) {
  manual_seed(0);
  Tensor x = randn({2, 3, 4, 5});
  Tensor y = x.contiguous(MemoryFormat::ChannelsLast);
  EXPECT_EQ(strides_of(y), (Dims{60, 1, 15, 3}));
  expect_same_values(y, x);
  EXPECT_TRUE(y.contiguous(MemoryFormat::ChannelsLast).is_same(y));
  EXPECT_TRUE(x.contiguous(MemoryFormat::Contiguous).is_same(x));
  Tensor back = y.contiguous();
  EXPECT_EQ(strides_of(back), (Dims{60, 20, 5, 1}));
  expect_same_values(back, x);

  Tensor x5 = randn({2, 3, 2, 3, 4});
  Tensor y5 = x5.contiguous(MemoryFormat::ChannelsLast3d);
  EXPECT_EQ(strides_of(y5), (Dims{72, 1, 36, 12, 3}));
  expect_same_values(y5, x5);
}

TEST(MemoryFormat, ToPreservesDenseStridesByDefault) {
  manual_seed(1);
  Tensor y = randn({2, 3, 4, 5}).contiguous(MemoryFormat::ChannelsLast);
  Tensor d = y.to(kFloat64);
  EXPECT_EQ(d.dtype(), kFloat64);
  EXPECT_EQ(strides_of(d), (Dims{60, 1, 15, 3}));
  expect_same_values(d, y);
  // The same with the format spelled out, through every overload.
  EXPECT_EQ(strides_of(y.to(kFloat64, false, false, MemoryFormat::Preserve)), (Dims{60, 1, 15, 3}));
  EXPECT_EQ(strides_of(y.to(Device(kCPU), kFloat64, false, false, MemoryFormat::Preserve)), (Dims{60, 1, 15, 3}));
  EXPECT_EQ(strides_of(y.to(TensorOptions().dtype(kFloat64), false, false, MemoryFormat::Preserve)),
            (Dims{60, 1, 15, 3}));

  // A transposed matrix keeps its transposed strides.
  Tensor t = randn({3, 4}).t();
  Tensor t64 = t.to(kFloat64);
  EXPECT_EQ(strides_of(t64), (Dims{1, 4}));
  expect_same_values(t64, t);
  // An explicit format converts.
  Tensor rm = y.to(kFloat64, false, false, MemoryFormat::Contiguous);
  EXPECT_EQ(strides_of(rm), (Dims{60, 20, 5, 1}));
  expect_same_values(rm, y);
  Tensor x = randn({2, 3, 4, 5});
  Tensor xcl = x.to(kFloat32, false, false, MemoryFormat::ChannelsLast);
  EXPECT_FALSE(xcl.is_same(x));
  EXPECT_EQ(strides_of(xcl), (Dims{60, 1, 15, 3}));
  expect_same_values(xcl, x);
  Tensor via_options = x.to(TensorOptions().dtype(kFloat64).memory_format(MemoryFormat::ChannelsLast));
  EXPECT_EQ(strides_of(via_options), (Dims{60, 1, 15, 3}));
  EXPECT_EQ(via_options.dtype(), kFloat64);
}

TEST(MemoryFormat, ToAliasesWhenNothingChanges) {
  Tensor y = randn({2, 3, 4, 5}).contiguous(MemoryFormat::ChannelsLast);
  EXPECT_TRUE(y.to(kFloat32).is_same(y));
  EXPECT_TRUE(y.to(kFloat32, false, false, MemoryFormat::ChannelsLast).is_same(y));
  EXPECT_FALSE(y.to(kFloat32, false, /*copy=*/true).is_same(y));
  EXPECT_EQ(strides_of(y.to(kFloat32, false, /*copy=*/true)), (Dims{60, 1, 15, 3}));
  // As libtorch: the format is compared with suggest_memory_format(), not is_contiguous(), so a
  // transposed matrix (suggested Contiguous) is returned as it is.
  Tensor t = randn({3, 4}).t();
  EXPECT_TRUE(t.to(kFloat32, false, false, MemoryFormat::Contiguous).is_same(t));
  // to(other): other's dtype and device.
  Tensor o = y.to(tensor::ones({1}, kFloat64));
  EXPECT_EQ(o.dtype(), kFloat64);
  EXPECT_EQ(strides_of(o), (Dims{60, 1, 15, 3}));
}

TEST(MemoryFormat, NonDenseSources) {
  manual_seed(2);
  // A channels-last tensor sliced along C: not dense, still suggested ChannelsLast.
  Tensor z = randn({2, 3, 4, 5}).contiguous(MemoryFormat::ChannelsLast).slice(1, 0, 2);
  ASSERT_EQ(strides_of(z), (Dims{60, 1, 15, 3}));
  EXPECT_EQ(z.suggest_memory_format(), MemoryFormat::ChannelsLast);
  EXPECT_EQ(z.suggest_memory_format(/*channels_last_strides_exact_match=*/true), MemoryFormat::Contiguous);
  const Dims dense_cl{40, 1, 10, 2};
  Tensor z64 = z.to(kFloat64);
  EXPECT_EQ(strides_of(z64), dense_cl);
  expect_same_values(z64, z);
  EXPECT_EQ(strides_of(z.clone(MemoryFormat::Preserve)), dense_cl);
  EXPECT_EQ(strides_of(empty_like(z)), dense_cl);
  EXPECT_EQ(z64.suggest_memory_format(true), MemoryFormat::ChannelsLast);

  // A slice of a transposed matrix: to() falls back to the suggested (row-major) layout, while
  // clone(Preserve) and empty_like keep the order of the strides.
  Tensor a = randn({4, 6}).t().slice(0, 0, 3);
  ASSERT_EQ(strides_of(a), (Dims{1, 6}));
  EXPECT_EQ(strides_of(a.to(kFloat64)), (Dims{4, 1}));
  Tensor ac = a.clone(MemoryFormat::Preserve);
  EXPECT_EQ(strides_of(ac), (Dims{1, 3}));
  expect_same_values(ac, a);
  EXPECT_EQ(strides_of(empty_like(a)), (Dims{1, 3}));
  // An expanded tensor (overlapping) gets dense strides.
  Tensor e = tensor::tensor({1.0, 2.0}).expand({3, 2});
  EXPECT_EQ(strides_of(e.to(kFloat64)), (Dims{2, 1}));
  EXPECT_EQ(strides_of(e.clone(MemoryFormat::Preserve)), (Dims{2, 1}));
}

TEST(MemoryFormat, EmptyLikeAndClone) {
  Tensor y = randn({2, 3, 4, 5}).contiguous(MemoryFormat::ChannelsLast);
  EXPECT_EQ(strides_of(empty_like(y)), (Dims{60, 1, 15, 3}));
  EXPECT_EQ(strides_of(empty_like(y, kFloat64)), (Dims{60, 1, 15, 3}));
  EXPECT_EQ(empty_like(y, kFloat64).dtype(), kFloat64);
  EXPECT_EQ(strides_of(empty_like(y, {}, MemoryFormat::Contiguous)), (Dims{60, 20, 5, 1}));
  EXPECT_EQ(strides_of(empty_like(y, TensorOptions().memory_format(MemoryFormat::Contiguous))), (Dims{60, 20, 5, 1}));
  EXPECT_EQ(strides_of(empty_like(randn({2, 3, 4, 5}), {}, MemoryFormat::ChannelsLast)), (Dims{60, 1, 15, 3}));
  // A transposed matrix: empty_like keeps the transposed strides.
  EXPECT_EQ(strides_of(empty_like(randn({3, 4}).t())), (Dims{1, 4}));

  Tensor kept = y.clone(MemoryFormat::Preserve);
  EXPECT_EQ(strides_of(kept), (Dims{60, 1, 15, 3}));
  expect_same_values(kept, y);
  EXPECT_NE(kept.data_ptr(), y.data_ptr());
  EXPECT_EQ(strides_of(y.clone()), (Dims{60, 20, 5, 1}));  // clone() is row-major (documented deviation)
  EXPECT_EQ(strides_of(y.clone(MemoryFormat::Contiguous)), (Dims{60, 20, 5, 1}));
}

TEST(MemoryFormat, GradientsFlowThroughLayoutChanges) {
  Tensor x = randn({1, 2, 2, 3}, TensorOptions().dtype(kFloat64).requires_grad(true));
  Tensor w = arange(12, TensorOptions().dtype(kFloat64)).reshape({1, 2, 2, 3});
  (x.contiguous(MemoryFormat::ChannelsLast) * w).sum().backward();
  expect_same_values(x.grad(), w);
  x.mutable_grad() = Tensor();
  Tensor y = x.to(kFloat32, false, false, MemoryFormat::ChannelsLast);
  EXPECT_TRUE(y.requires_grad());
  (y * w.to(kFloat32)).sum().backward();
  EXPECT_EQ(x.grad().dtype(), kFloat64);
  expect_same_values(x.grad(), w);
  x.mutable_grad() = Tensor();
  (x.clone(MemoryFormat::ChannelsLast) * 2).sum().backward();
  expect_same_values(x.grad(), full({1, 2, 2, 3}, 2.0, kFloat64));
}

TEST(MemoryFormat, BadFormatsRaise) {
  expect_error_mentioning([] { empty({2, 3}, {}, MemoryFormat::ChannelsLast); }, {"empty", "ChannelsLast", "[2, 3]"});
  expect_error_mentioning([] { empty({2, 3, 4, 5}, {}, MemoryFormat::ChannelsLast3d); },
                          {"empty", "ChannelsLast3d", "5-d"});
  expect_error_mentioning([] { empty({2, 3}, {}, MemoryFormat::Preserve); }, {"empty", "Preserve"});
  expect_error_mentioning([] { randn({2, 3, 4}).contiguous(MemoryFormat::ChannelsLast); },
                          {"contiguous", "ChannelsLast", "[2, 3, 4]"});
  expect_error_mentioning([] { randn({2, 3}).contiguous(MemoryFormat::Preserve); }, {"contiguous", "Preserve"});
  expect_error_mentioning([] { randn({2, 3}).is_contiguous(MemoryFormat::Preserve); }, {"is_contiguous", "Preserve"});
  expect_error_mentioning([] { randn({2, 3}).to(kFloat64, false, false, MemoryFormat::ChannelsLast); },
                          {"to", "ChannelsLast", "[2, 3]"});
  expect_error_mentioning(
      [] {
        randn({2, 3, 4, 5}).to(TensorOptions().memory_format(MemoryFormat::ChannelsLast), false, false,
                               MemoryFormat::Contiguous);
      },
      {"to", "both", "ChannelsLast", "Contiguous"});
}

TEST(MemoryFormat, Prints) {
  std::ostringstream s;
  s << MemoryFormat::ChannelsLast << " " << MemoryFormat::Preserve << " " << MemoryFormat::ChannelsLast3d << " "
    << MemoryFormat::Contiguous;
  EXPECT_EQ(s.str(), "ChannelsLast Preserve ChannelsLast3d Contiguous");
  EXPECT_FALSE(TensorOptions().has_memory_format());
  EXPECT_EQ(TensorOptions().memory_format(MemoryFormat::ChannelsLast).memory_format_opt(), MemoryFormat::ChannelsLast);
}

TEST(MemoryFormat, ConvKeepsChannelsLastThroughTo) {
  // A channels-last input converted with to() stays channels-last, so conv2d's output does too
  // (the layout propagates through a chain of ops, as in libtorch).
  manual_seed(3);
  Tensor x = randn({2, 3, 5, 5}).contiguous(MemoryFormat::ChannelsLast).to(kFloat64).to(kFloat32);
  ASSERT_EQ(x.suggest_memory_format(), MemoryFormat::ChannelsLast);
  Tensor w = randn({4, 3, 3, 3});
  Tensor y = conv2d(x, w);
  EXPECT_EQ(y.suggest_memory_format(), MemoryFormat::ChannelsLast);
  EXPECT_TRUE(y.allclose(conv2d(x.contiguous(), w), 1e-4, 1e-5));
}
