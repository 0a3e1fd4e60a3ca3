// libtorch spellings a ported program uses for checks and hooks: TENSOR_CHECK (TORCH_CHECK)
// and Tensor::remove_hook. Only public headers here: the check must be the public one.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <string>

using namespace tensor;

namespace {
std::string message_of(void (*f)(int), int arg) {
  try {
    f(arg);
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}
void check_two_dims(int dims) { TENSOR_CHECK(dims == 2, "expected a 2-d input, got ", dims, "-d (", 1.5, ")"); }
void check_positive(int v) { TENSOR_CHECK(v > 0); }
// libtorch's own macro names, as a ported program writes them (Note [libtorch's macro spellings]).
void torch_check_two_dims(int dims) { TORCH_CHECK(dims == 2, "expected a 2-d input, got ", dims, "-d"); }
void at_assert_not_nan(int v) { AT_ASSERT(v != 7); }
void internal_assert_with_message(int v) { TORCH_INTERNAL_ASSERT(v < 3, "v was ", v); }
struct TinyImpl : tensor::nn::Module {
  TinyImpl() : fc(register_module("fc", tensor::nn::Linear(2, 1))) {}
  Tensor forward(const Tensor& x) { return fc(x); }
  tensor::nn::Linear fc;
};
TORCH_MODULE(Tiny);
}  // namespace

TEST(PortChecks, TensorCheckStreamsItsArguments) {
  EXPECT_EQ(message_of(check_two_dims, 3), "expected a 2-d input, got 3-d (1.5)");
  EXPECT_EQ(message_of(check_two_dims, 2), "<no error>");
}

TEST(PortChecks, TensorCheckWithoutMessageNamesTheCondition) {
  EXPECT_EQ(message_of(check_positive, -1), "Expected v > 0 to be true, but got false.");
}

TEST(PortChecks, TensorCheckEvaluatesItsMessageOnlyOnFailure) {
  int evaluated = 0;
  auto count = [&] { return ++evaluated; };
  TENSOR_CHECK(true, "never ", count());
  EXPECT_EQ(evaluated, 0);
  EXPECT_THROW(TENSOR_CHECK(false, "once ", count()), Error);
  EXPECT_EQ(evaluated, 1);
}

TEST(PortChecks, RemoveHookOnALeaf) {
  Tensor w = tensor::tensor({1.0f, 2.0f}).requires_grad_();
  int doubled = 0, seen = 0;
  unsigned h = w.register_hook([&](Tensor g) {
    ++doubled;
    return g * 2;
  });
  w.register_hook([&](Tensor g) {
    ++seen;
    return Tensor();
  });
  (w * 3).sum().backward();
  EXPECT_FLOAT_EQ(w.grad()[0].item<float>(), 6.0f);  // 3, doubled by the hook
  w.grad().zero_();
  w.remove_hook(h);
  (w * 3).sum().backward();
  EXPECT_FLOAT_EQ(w.grad()[0].item<float>(), 3.0f);
  EXPECT_EQ(doubled, 1);
  EXPECT_EQ(seen, 2);
  EXPECT_THROW(w.remove_hook(h), Error);  // removed already
}

TEST(PortChecks, RemoveHookOnANonLeaf) {
  Tensor w = tensor::tensor({1.0f, 2.0f}).requires_grad_();
  Tensor y = w * 3;
  unsigned h = y.register_hook([](Tensor g) { return g * 10; });
  unsigned k = y.register_hook([](Tensor g) { return g + 1; });
  EXPECT_NE(h, k);
  y.remove_hook(h);
  y.sum().backward();  // (1 + 1) * 3 per element: only the second hook ran
  EXPECT_FLOAT_EQ(w.grad()[0].item<float>(), 6.0f);
  EXPECT_FLOAT_EQ(w.grad()[1].item<float>(), 6.0f);
  try {
    y.remove_hook(h);
    FAIL() << "expected tensor::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("remove_hook"), std::string::npos) << e.what();
  }
}

TEST(PortChecks, LibtorchMacroSpellings) {
  EXPECT_EQ(message_of(torch_check_two_dims, 3), "expected a 2-d input, got 3-d");
  EXPECT_EQ(message_of(torch_check_two_dims, 2), "<no error>");
  const std::string a = message_of(at_assert_not_nan, 7);
  EXPECT_NE(a.find("assertion failed: v != 7 ("), std::string::npos) << a;
  EXPECT_NE(a.find("test_port_checks.cpp:"), std::string::npos) << a;
  EXPECT_EQ(message_of(at_assert_not_nan, 6), "<no error>");
  const std::string b = message_of(internal_assert_with_message, 5);
  EXPECT_NE(b.find("assertion failed: v < 3"), std::string::npos) << b;
  EXPECT_NE(b.find(") v was 5"), std::string::npos) << b;
  Tiny tiny;  // TORCH_MODULE made the holder
  EXPECT_EQ(tiny->forward(tensor::ones({4, 2})).sizes().vec(), (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(tiny->named_parameters().size(), 2u);
}
