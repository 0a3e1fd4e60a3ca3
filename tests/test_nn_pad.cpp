// F::pad (constant, reflect, replicate, circular), F::one_hot and Tensor::accessor against
// hand-computed values, with gradcheck and the errors libtorch raises.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <vector>

#include "tests/grad_test_util.h"
#include "tests/test_util.h"

using namespace tensor;
namespace F = tensor::nn::functional;
using autograd::variable_list;
using tensor::testing::check;
using tensor::testing::expect_error;

namespace {
Tensor t64(std::vector<double> v, std::vector<int64_t> shape) { return tensor::tensor(v, kFloat64).reshape(shape); }
}  // namespace

TEST(NnPad, ModesByHand) {
  Tensor x = t64({1, 2, 3}, {1, 3});
  EXPECT_TRUE(F::pad(x, F::PadFuncOptions({2, 1}).value(9)).equal(t64({9, 9, 1, 2, 3, 9}, {1, 6})));
  EXPECT_TRUE(F::pad(x, F::PadFuncOptions({-1, 1})).equal(t64({2, 3, 0}, {1, 3})));  // crop in front
  EXPECT_TRUE(F::pad(x, F::PadFuncOptions({2, 2}).mode(kReflect)).equal(t64({3, 2, 1, 2, 3, 2, 1}, {1, 7})));
  EXPECT_TRUE(F::pad(x, F::PadFuncOptions({2, 1}).mode(kReplicate)).equal(t64({1, 1, 1, 2, 3, 3}, {1, 6})));
  EXPECT_TRUE(F::pad(x, F::PadFuncOptions({1, 2}).mode(kCircular)).equal(t64({3, 1, 2, 3, 1, 2}, {1, 6})));
  // Two dims: (left, right) of the last dim first, then of the one before.
  Tensor y = t64({1, 2, 3, 4}, {1, 2, 2});
  EXPECT_TRUE(F::pad(y, F::PadFuncOptions({1, 0, 0, 1})).equal(t64({0, 1, 2, 0, 3, 4, 0, 0, 0}, {1, 3, 3})));
  EXPECT_TRUE(F::pad(y, F::PadFuncOptions({1, 1, 1, 1}).mode(kReplicate))
                  .equal(t64({1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, {1, 4, 4})));
  // A transposed input, int dtype.
  Tensor z = tensor::tensor({1, 2, 3, 4, 5, 6}).reshape({2, 3}).t();  // [[1,4],[2,5],[3,6]]
  EXPECT_TRUE(F::pad(z, F::PadFuncOptions({0, 1}).value(-1)).equal(tensor::tensor({1, 4, -1, 2, 5, -1, 3, 6, -1}).reshape({3, 3})));
  EXPECT_TRUE(F::pad(z, F::PadFuncOptions({1, 0}).mode(kReflect)).equal(tensor::tensor({4, 1, 4, 5, 2, 5, 6, 3, 6}).reshape({3, 3})));
}

TEST(NnPad, Gradients) {
  manual_seed(3);
  Tensor x = randn({2, 3, 4}, kFloat64).requires_grad_(true);
  for (auto mode : {0, 1, 2, 3}) {
    F::PadFuncOptions o({2, 1, 1, 2});
    if (mode == 1) o.mode(kReflect);
    if (mode == 2) o.mode(kReplicate);
    if (mode == 3) o.mode(kCircular);
    auto f = [o](const variable_list& in) { return F::pad(in[0], o); };
    check("pad gradcheck mode " + std::to_string(mode), [&] { return autograd::gradcheck(f, {x}); });
    check("pad gradgradcheck mode " + std::to_string(mode), [&] { return autograd::gradgradcheck(f, {x}); });
  }
  auto crop = [](const variable_list& in) { return F::pad(in[0], F::PadFuncOptions({-1, 2, 1, -1}).value(0.5)); };
  check("pad crop gradcheck", [&] { return autograd::gradcheck(crop, {x}); });
  // Replicate: the edge element collects the gradient of every copy.
  Tensor v = t64({1, 2}, {2}).requires_grad_(true);
  F::pad(v.unsqueeze(0), F::PadFuncOptions({2, 0}).mode(kReplicate)).sum().backward();
  EXPECT_TRUE(v.grad().equal(t64({3, 1}, {2})));
}

TEST(NnPad, Errors) {
  Tensor x = t64({1, 2, 3}, {1, 3});
  expect_error([&] { F::pad(x, F::PadFuncOptions({1})); }, {"pad", "divisible by 2"});
  expect_error([&] { F::pad(x, F::PadFuncOptions({1, 1, 1, 1, 1, 1})); }, {"pad", "too large", "[1, 3]"});
  expect_error([&] { F::pad(x, F::PadFuncOptions({3, 0}).mode(kReflect)); }, {"reflect", "less than", "[1, 3]"});
  expect_error([&] { F::pad(x, F::PadFuncOptions({4, 0}).mode(kCircular)); }, {"circular", "at most", "[1, 3]"});
  expect_error([&] { F::pad(x, F::PadFuncOptions({-1, 0}).mode(kReplicate)); }, {"replicate", "negative"});
  expect_error([&] { F::pad(x, F::PadFuncOptions({-2, -2})); }, {"pad", "negative size", "[1, 3]"});
}

TEST(NnOneHot, ValuesAndErrors) {
  Tensor t = tensor::tensor({0, 2, 1, 2});
  EXPECT_TRUE(F::one_hot(t).equal(tensor::tensor({1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1}).reshape({4, 3})));
  Tensor b = F::one_hot(t.reshape({2, 2}), 4);
  EXPECT_EQ(b.sizes().vec(), (std::vector<int64_t>{2, 2, 4}));
  EXPECT_EQ(b.dtype(), kInt64);
  EXPECT_EQ(b.sum().item<int64_t>(), 4);
  EXPECT_EQ(b[1][1][2].item<int64_t>(), 1);
  EXPECT_EQ(F::one_hot(tensor::tensor({1, 0, 1}).slice(0, 0, 3, 2), 2).sizes().vec(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(F::one_hot(empty({0}, kInt64), 3).sizes().vec(), (std::vector<int64_t>{0, 3}));
  expect_error([&] { F::one_hot(tensor::tensor({0.0, 1.0})); }, {"one_hot", "int64", "float"});
  expect_error([&] { F::one_hot(tensor::tensor({-1, 0})); }, {"one_hot", "non-negative"});
  expect_error([&] { F::one_hot(tensor::tensor({0, 3}), 3); }, {"one_hot", "smaller than num_classes"});
  expect_error([&] { F::one_hot(empty({0}, kInt64)); }, {"one_hot", "empty"});
}

TEST(TensorAccessor, ReadsAndWritesThroughStrides) {
  Tensor a = arange(6, kFloat32).reshape({2, 3}).t();  // [3, 2], strides (1, 3)
  auto acc = a.accessor<float, 2>();
  EXPECT_EQ(acc.size(0), 3);
  EXPECT_EQ(acc.stride(1), 3);
  EXPECT_EQ(acc[2][1], 5.0f);  // a[2][1] = original [1][2]
  acc[0][1] = 42.0f;
  EXPECT_EQ(a[0][1].item<float>(), 42.0f);
  double sum = 0;
  for (int64_t i = 0; i < acc.size(0); ++i)
    for (int64_t j = 0; j < acc.size(1); ++j) sum += acc[i][j];
  EXPECT_EQ(sum, 0 + 1 + 2 + 42 + 4 + 5);
  Tensor c = zeros({2, 2, 2}, kFloat64);  // (accessor() on a temporary does not compile)
  auto acc3 = c.accessor<double, 3>();
  acc3[1][0][1] = 7.0;
  EXPECT_EQ(c[1][0][1].item<double>(), 7.0);
  expect_error([&] { a.accessor<float, 3>(); }, {"accessor", "3-dim", "2 dims"});
  EXPECT_THROW((a.accessor<double, 2>()), tensor::Error);  // wrong dtype
}
