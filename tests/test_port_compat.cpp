// libtorch spellings that ported programs use beyond torch:: (issue 24): <tensor/compat.h>'s at::
// and c10:: names, IntArrayRef::slice, Module::as<T>() on a const module, iterating a Sequential
// as AnyModules, std::accumulate reached through the umbrella header, and at::normal. Written as
// a libtorch program would be, with `torch` renamed `tensor`.
#include <gtest/gtest.h>
#include <tensor/compat.h>
#include <tensor/tensor.h>

#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

namespace {

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const c10::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(PortCompat, AtAndC10NamesAreLibtensors) {
  static_assert(std::is_same_v<at::Tensor, tensor::Tensor>);
  static_assert(std::is_same_v<at::TensorOptions, tensor::TensorOptions>);
  static_assert(std::is_same_v<c10::TensorOptions, tensor::TensorOptions>);
  static_assert(std::is_same_v<at::ScalarType, tensor::ScalarType>);
  static_assert(std::is_same_v<c10::ScalarType, tensor::ScalarType>);
  static_assert(std::is_same_v<c10::IntArrayRef, tensor::IntArrayRef>);
  static_assert(std::is_same_v<at::IntArrayRef, tensor::IntArrayRef>);
  static_assert(std::is_same_v<c10::ArrayRef<double>, tensor::ArrayRef<double>>);
  static_assert(std::is_same_v<c10::optional<int64_t>, std::optional<int64_t>>);
  static_assert(std::is_same_v<c10::Device, tensor::Device>);
  static_assert(std::is_same_v<at::Device, tensor::Device>);
  static_assert(std::is_same_v<c10::Scalar, tensor::Scalar>);
  static_assert(std::is_same_v<c10::MemoryFormat, tensor::MemoryFormat>);
  static_assert(std::is_same_v<c10::Half, tensor::Half>);
  static_assert(std::is_same_v<c10::complex<float>, std::complex<float>>);
  static_assert(at::kFloat == tensor::kFloat32 && at::kLong == tensor::kInt64 && at::kByte == tensor::kUInt8);
  static_assert(at::ScalarType::Long == tensor::kInt64 && at::ScalarType::Byte == tensor::kUInt8 &&
                c10::ScalarType::Char == tensor::kInt8 && c10::ScalarType::Short == tensor::kInt16 &&
                at::ScalarType::Int == tensor::kInt32 && at::ScalarType::Float == tensor::kFloat32);
  static_assert(c10::kCUDA == tensor::kCUDA && at::kCPU == tensor::kCPU);

  at::Tensor x = at::zeros({2, 3}, at::TensorOptions().dtype(at::kDouble).device(c10::Device(c10::kCPU)));
  EXPECT_EQ(x.scalar_type(), at::ScalarType::Double);
  EXPECT_EQ(c10::elementSize(x.scalar_type()), 8);
  EXPECT_TRUE(c10::isFloatingType(at::kHalf));
  EXPECT_FALSE(c10::isFloatingType(at::kLong));
  EXPECT_TRUE(c10::isComplexType(at::kComplexFloat));
  EXPECT_TRUE(c10::isIntegralType(at::kBool, /*includeBool=*/true));
  EXPECT_FALSE(c10::isIntegralType(at::kBool, /*includeBool=*/false));
  EXPECT_EQ(std::string(c10::toString(at::kFloat)), std::string(tensor::to_string(tensor::kFloat32)));
  EXPECT_EQ(c10::str("step ", 3, " loss ", 0.5), "step 3 loss 0.5");
  c10::optional<int64_t> none = c10::nullopt;
  EXPECT_FALSE(none.has_value());
  // A case label in libtorch's enumerator spelling.
  auto kind = [](c10::ScalarType t) {
    switch (t) {
      case c10::ScalarType::Long: return 1;
      case c10::ScalarType::Byte: return 2;
      default: return 0;
    }
  };
  EXPECT_EQ(kind(tensor::kInt64), 1);
  EXPECT_EQ(kind(tensor::kUInt8), 2);
  EXPECT_EQ(kind(tensor::kFloat32), 0);
}

TEST(PortCompat, IndexingAndIrange) {
  using namespace at::indexing;
  at::Tensor x = at::arange(12, at::kFloat).reshape({3, 4});
  at::Tensor row = x.index({1, Slice(None, 2)});
  EXPECT_EQ(row.sizes().vec(), (std::vector<int64_t>{2}));
  EXPECT_EQ(row[0].item<float>(), 4.0f);
  EXPECT_EQ(row[1].item<float>(), 5.0f);
  EXPECT_EQ(x.index({Ellipsis, 3}).sizes().vec(), (std::vector<int64_t>{3}));
  EXPECT_EQ(x.index({None}).sizes().vec(), (std::vector<int64_t>{1, 3, 4}));

  std::vector<int64_t> seen;
  for (const auto i : c10::irange(x.size(0))) {
    static_assert(std::is_same_v<std::decay_t<decltype(i)>, int64_t>);
    x.index_put_({i, Slice(0, 1)}, static_cast<double>(-i));
    seen.push_back(i);
  }
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(x.index({2, 0}).item<float>(), -2.0f);
  std::vector<int> from2;
  for (int i : c10::irange(2, 5)) from2.push_back(i);
  EXPECT_EQ(from2, (std::vector<int>{2, 3, 4}));
  int empty_count = 0;
  for (int i : at::irange(5, 2)) empty_count += i + 1;
  EXPECT_EQ(empty_count, 0);
}

TEST(PortCompat, NormalSamples) {
  tensor::manual_seed(0);
  at::Tensor s = at::normal(2.0, 3.0, {200000}, at::TensorOptions().dtype(at::kDouble));
  EXPECT_EQ(s.sizes().vec(), (std::vector<int64_t>{200000}));
  EXPECT_EQ(s.scalar_type(), at::kDouble);
  // Mean within 4 standard errors (3 / sqrt(2e5) = 0.0067), std within 1%.
  EXPECT_NEAR(s.mean().item<double>(), 2.0, 0.03);
  EXPECT_NEAR(s.std().item<double>(), 3.0, 0.03);

  // Zero std gives the mean exactly; the tensor and the number forms broadcast.
  at::Tensor mean = at::arange(6, at::kDouble).reshape({2, 3});
  EXPECT_TRUE(at::normal(mean, 0.0).equal(mean));
  EXPECT_TRUE(at::normal(mean, at::zeros({3}, at::kDouble)).equal(mean));
  EXPECT_TRUE(at::normal(1.5, at::zeros({4}, at::kDouble)).equal(at::full({4}, 1.5, at::kDouble)));

  // Per-element parameters: a large std tensor column has a large spread.
  at::Tensor m = at::tensor({0.0, 100.0}, at::kDouble).expand({50000, 2});
  at::Tensor sd = at::tensor({1.0, 0.01}, at::kDouble);
  at::Tensor draws = at::normal(m, sd);
  EXPECT_NEAR(draws.select(1, 0).mean().item<double>(), 0.0, 0.03);
  EXPECT_NEAR(draws.select(1, 1).mean().item<double>(), 100.0, 0.001);
  EXPECT_NEAR(draws.select(1, 0).std().item<double>(), 1.0, 0.02);
  EXPECT_NEAR(draws.select(1, 1).std().item<double>(), 0.01, 0.0002);

  // Gradients: 1 to the mean, (sample - mean) / std to the std.
  at::Tensor mu = at::tensor({1.0, -2.0}, at::TensorOptions().dtype(at::kDouble).requires_grad(true));
  at::Tensor sigma = at::tensor({0.5, 2.0}, at::TensorOptions().dtype(at::kDouble).requires_grad(true));
  at::Tensor out = at::normal(mu, sigma);
  out.sum().backward();
  EXPECT_TRUE(mu.grad().equal(at::ones({2}, at::kDouble)));
  EXPECT_TRUE(sigma.grad().allclose((out.detach() - mu.detach()) / sigma.detach(), 1e-12, 1e-12));

  EXPECT_NE(error_of([] { at::normal(0.0, -1.0, {2}); }).find("std >= 0.0"), std::string::npos);
  EXPECT_NE(error_of([] { at::normal(at::zeros({2}), at::tensor({1.0, -1.0})); }).find("std >= 0.0"),
            std::string::npos);
  EXPECT_NE(error_of([] { at::normal(at::zeros({2}, at::kLong), 1.0); }).find("floating point mean"),
            std::string::npos);
}

TEST(PortCompat, IntArrayRefSlice) {
  std::vector<int64_t> v{2, 3, 5, 7};
  c10::IntArrayRef r(v);
  EXPECT_EQ(r.slice(1, 2).vec(), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(r.slice(2).vec(), (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(r.slice(4).size(), 0u);
  EXPECT_EQ(r.slice(1, 0).size(), 0u);
  // A typical use: the trailing dims of a shape.
  at::Tensor x = at::zeros({4, 3, 2});
  EXPECT_EQ(x.sizes().slice(1).vec(), (std::vector<int64_t>{3, 2}));
  std::string e = error_of([&] { r.slice(3, 2); });
  EXPECT_NE(e.find("ArrayRef::slice"), std::string::npos) << e;
  EXPECT_NE(e.find("[3, 5)"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { r.slice(5); }).find("4 elements"), std::string::npos);
}

namespace {
struct Block : tensor::nn::Module {
  Block() { lin = register_module("lin", tensor::nn::Linear(2, 2)); }
  tensor::Tensor forward(tensor::Tensor x) { return lin(x); }
  tensor::nn::Linear lin{nullptr};
};

/// Written against a const module, as libtorch code that inspects a model does.
int count_linears(const tensor::nn::Module& m) {
  int n = m.as<tensor::nn::Linear>() != nullptr ? 1 : 0;
  for (const auto& c : m.children()) n += count_linears(*c);
  return n;
}
}  // namespace

TEST(PortCompat, ConstModuleAs) {
  namespace nn = tensor::nn;
  nn::Linear lin(3, 4);
  const nn::Module& as_base = *lin;
  const nn::LinearImpl* p = as_base.as<nn::Linear>();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p, lin.get());
  EXPECT_EQ(as_base.as<nn::LinearImpl>(), lin.get());
  EXPECT_EQ(as_base.as<nn::ReLU>(), nullptr);
  static_assert(std::is_same_v<decltype(as_base.as<nn::Linear>()), const nn::LinearImpl*>);
  nn::Sequential seq(nn::Linear(2, 2), nn::ReLU(), Block(), nn::Linear(2, 1));
  EXPECT_EQ(count_linears(*seq), 3);
}

TEST(PortCompat, IteratingSequentialYieldsAnyModules) {
  namespace nn = tensor::nn;
  tensor::manual_seed(0);
  nn::Sequential seq(nn::Linear(3, 4), nn::ReLU(), nn::Linear(4, 2));
  std::vector<std::string> names;
  int linears = 0;
  at::Tensor x = at::randn({5, 3}), h = x;
  for (auto& m : *seq) {
    static_assert(std::is_same_v<std::decay_t<decltype(m)>, nn::AnyModule>);
    names.push_back(m.ptr()->name());
    if (m.is<nn::Linear>()) {
      ++linears;
      EXPECT_EQ(m.get<nn::LinearImpl>().weight.size(1), m.ptr<nn::LinearImpl>()->options.in_features());
      EXPECT_EQ(m.get<nn::Linear>().get(), m.ptr<nn::LinearImpl>().get());
    }
    h = m.forward(h);  // stepping through the modules by hand gives forward()'s result
  }
  EXPECT_EQ(names, (std::vector<std::string>{"tensor::nn::Linear", "tensor::nn::ReLU", "tensor::nn::Linear"}));
  EXPECT_EQ(linears, 2);
  EXPECT_TRUE(h.equal(seq->forward(x)));
  const nn::SequentialImpl& cseq = *seq;
  size_t n = 0;
  for (const auto& m : cseq) n += m.is<nn::ReLU>() ? 10 : 1;
  EXPECT_EQ(n, 12u);
  EXPECT_NE(error_of([&] { seq->begin()->get<nn::ReLU>(); }).find("AnyModule::get"), std::string::npos);
  // extend() shares the modules, and iterating the result sees them.
  nn::Sequential more;
  more->extend(*seq);
  EXPECT_EQ(more->begin()->ptr().get(), seq->begin()->ptr().get());
}

TEST(PortCompat, NumericReachableFromUmbrella) {
  // libtorch programs call std::accumulate and std::iota with only <torch/torch.h> included;
  // this file includes no <numeric> of its own.
  std::vector<int64_t> v(4);
  std::iota(v.begin(), v.end(), 1);
  EXPECT_EQ(std::accumulate(v.begin(), v.end(), int64_t{1}, std::multiplies<int64_t>()), 24);
  at::Tensor x = at::zeros({2, 3, 4});
  EXPECT_EQ(std::accumulate(x.sizes().begin(), x.sizes().end(), int64_t{1}, std::multiplies<>()), x.numel());
}
