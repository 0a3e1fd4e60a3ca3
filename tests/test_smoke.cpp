#include <gtest/gtest.h>
#include <tensor/tensor.h>

using namespace tensor;

TEST(Smoke, AddFloat) {
  Tensor a = tensor::tensor({1.0, 2.0, 3.0});
  Tensor b = tensor::tensor({0.5, 0.25, 0.125});
  Tensor c = a + b;
  EXPECT_EQ(c.dtype(), kFloat32);
  EXPECT_FLOAT_EQ(c[0].item<float>(), 1.5f);
  EXPECT_FLOAT_EQ(c[2].item<float>(), 3.125f);
}
