// A program that never touches CUDA loads no CUDA library (Note [CUDA hooks]): libtensor links
// none, and opens libtensor_cuda (which brings the CUDA runtime) only on first use.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <fstream>
#include <string>

using namespace tensor;

namespace {
// The shared objects mapped into this process whose path contains `needle`.
std::string mapped(const std::string& needle) {
  std::ifstream maps("/proc/self/maps");
  std::string line, found;
  while (std::getline(maps, line))
    if (line.find(needle) != std::string::npos) found += line + "\n";
  return found;
}
}  // namespace

TEST(CpuOnlyLoad, TrainingStepLoadsNoCudaLibrary) {
#if defined(TENSOR_STATIC)
  GTEST_SKIP() << "a static build links the CUDA backend into the program that asks for it";
#endif
  nn::Linear lin(8, 4);
  optim::SGD opt(lin->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  Tensor x = tensor::randn({16, 8}), y = tensor::randint(0, 4, {16});
  Tensor loss = nn::functional::cross_entropy(lin->forward(x), y);
  loss.backward();
  opt.step();
  EXPECT_TRUE(std::isfinite(loss.item<float>()));
  EXPECT_EQ(mapped("libcudart"), "");
  EXPECT_EQ(mapped("libnccl"), "");
  EXPECT_EQ(mapped("libtensor_cuda"), "");
  EXPECT_FALSE(x.is_pinned());  // asks without loading the backend
  EXPECT_EQ(mapped("libtensor_cuda"), "");
}

// Asking about CUDA loads the backend where it was built, and nothing breaks where it was not.
TEST(CpuOnlyLoad, AskingForCudaLoadsTheBackendOnce) {
  const int n = cuda::device_count();
  EXPECT_EQ(cuda::is_available(), n > 0);
#if defined(TENSOR_TEST_HAVE_CUDA_BACKEND)
  EXPECT_NE(mapped("libtensor_cuda"), "") << "the CUDA backend was built but not loaded";
#else
  EXPECT_EQ(mapped("libtensor_cuda"), "");
  if (n == 0) {
    try {
      (void)tensor::zeros({2}, TensorOptions().device(kCUDA));
      FAIL() << "expected tensor::Error";
    } catch (const tensor::Error& e) {
      EXPECT_NE(std::string(e.what()).find("CUDA"), std::string::npos) << e.what();
    }
  }
#endif
}
