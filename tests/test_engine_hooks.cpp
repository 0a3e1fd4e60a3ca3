// Post-accumulate-grad hooks and end-of-backward callbacks (include/tensor/autograd/hooks.h),
// the engine hooks DDP and FSDP build on.
#include <gtest/gtest.h>
#include <tensor/autograd/hooks.h>
#include <tensor/tensor.h>

#include <string>
#include <vector>

using namespace tensor;

TEST(EngineHooks, PostAccumulateHookSeesTheAccumulatedGradient) {
  Tensor w = tensor::tensor({1.0f, 2.0f, 3.0f}).requires_grad_();
  std::vector<float> seen;
  int calls = 0;
  autograd::register_post_accumulate_grad_hook(w, [&](const Tensor& leaf) {
    ++calls;
    ASSERT_TRUE(leaf.grad().defined());
    seen.push_back(leaf.grad().sum().item<float>());
  });
  // d/dw sum(w * w) = 2w: sum 12. A second backward accumulates: grad 4w, sum 24.
  (w * w).sum().backward();
  (w * w).sum().backward();
  ASSERT_EQ(calls, 2);
  EXPECT_FLOAT_EQ(seen[0], 12.0f);
  EXPECT_FLOAT_EQ(seen[1], 24.0f);
}

TEST(EngineHooks, PostAccumulateHookRunsOncePerBackwardForASharedLeaf) {
  // w is used twice: the engine sums both contributions before its one AccumulateGrad runs.
  Tensor w = tensor::tensor({2.0f}).requires_grad_();
  int calls = 0;
  float grad = 0;
  autograd::register_post_accumulate_grad_hook(w, [&](const Tensor& leaf) {
    ++calls;
    grad = leaf.grad().item<float>();
  });
  (w * 3 + w * w).sum().backward();  // 3 + 2w = 7
  EXPECT_EQ(calls, 1);
  EXPECT_FLOAT_EQ(grad, 7.0f);
}

TEST(EngineHooks, RemovedHookNoLongerRuns) {
  Tensor w = tensor::ones({2}).requires_grad_();
  int a = 0, b = 0;
  unsigned ha = autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) { ++a; });
  autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) { ++b; });
  w.sum().backward();
  EXPECT_TRUE(autograd::remove_post_accumulate_grad_hook(w, ha));
  EXPECT_FALSE(autograd::remove_post_accumulate_grad_hook(w, ha));
  w.sum().backward();
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 2);
}

TEST(EngineHooks, PostAccumulateHookRejectsNonLeaves) {
  Tensor w = tensor::ones({2}).requires_grad_();
  Tensor y = w * 2;
  Tensor plain = tensor::ones({2});
  for (const Tensor* t : {&y, &plain}) {
    try {
      autograd::register_post_accumulate_grad_hook(*t, [](const Tensor&) {});
      FAIL() << "expected tensor::Error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("register_post_accumulate_grad_hook"), std::string::npos) << e.what();
    }
  }
}

TEST(EngineHooks, QueuedCallbackRunsAfterEveryNode) {
  // Two leaves; a callback queued from the first leaf's hook must see both gradients final.
  Tensor a = tensor::tensor({1.0f, 2.0f}).requires_grad_();
  Tensor b = tensor::tensor({3.0f, 4.0f}).requires_grad_();
  std::vector<std::string> order;
  float a_sum = 0, b_sum = 0;
  auto hook = [&](const Tensor& leaf) {
    order.push_back(leaf.data_ptr() == a.data_ptr() ? "a" : "b");
    if (order.size() == 1)
      autograd::queue_callback([&] {
        order.push_back("callback");
        a_sum = a.grad().sum().item<float>();
        b_sum = b.grad().sum().item<float>();
        // A callback may queue another; it runs after this one, still inside backward.
        autograd::queue_callback([&] { order.push_back("second"); });
      });
  };
  autograd::register_post_accumulate_grad_hook(a, hook);
  autograd::register_post_accumulate_grad_hook(b, hook);
  (a * b).sum().backward();  // grad a = b, grad b = a
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order[2], "callback");
  EXPECT_EQ(order[3], "second");
  EXPECT_FLOAT_EQ(a_sum, 7.0f);
  EXPECT_FLOAT_EQ(b_sum, 3.0f);
}

TEST(EngineHooks, QueueCallbackOutsideBackwardIsAnError) {
  try {
    autograd::queue_callback([] {});
    FAIL() << "expected tensor::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("queue_callback"), std::string::npos) << e.what();
  }
}
