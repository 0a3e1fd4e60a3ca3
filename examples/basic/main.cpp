// A small tour of libtensor until the Fashion-MNIST example lands: Monte Carlo pi, broadcasting,
// reductions and a softmax, each printed with what it should be.
#include <tensor/tensor.h>

#include <cmath>
#include <iostream>

using namespace tensor;

int main() {
  tensor::manual_seed(0);
  set_num_threads(2);

  // Monte Carlo estimate of pi from 4M points in the unit square.
  const int64_t n = 4 << 20;
  Tensor xy = tensor::rand({n, 2}, kFloat64);
  Tensor inside = (xy.square().sum({1}) <= 1.0);
  double pi = 4.0 * inside.to(kFloat64).mean().item<double>();
  std::cout << "pi ~ " << pi << " (error " << std::abs(pi - M_PI) << ", expected about 1e-3)\n";

  // Broadcasting: an outer product through shapes [3,1] * [4].
  Tensor col = tensor::arange(1, 4).view({3, 1});
  Tensor row = tensor::linspace(0, 1, 4);
  std::cout << "outer product of [1,2,3] and linspace(0,1,4):\n" << col * row << "\n";

  // Type promotion: int64 tensor + float scalar -> float32; int64 / int64 -> float32.
  Tensor ints = tensor::tensor({1, 2, 3});
  std::cout << "int64 + 0.5 -> " << to_string((ints + 0.5).dtype()) << ", int64 / int64 -> "
            << to_string((ints / ints).dtype()) << "\n";

  // Softmax of logits sums to one.
  Tensor logits = tensor::tensor({2.0, 1.0, 0.1});
  Tensor p = tensor::softmax(logits, 0);
  std::cout << "softmax([2, 1, 0.1]) = " << p << "\n(sum " << p.sum().item<float>()
            << ", expected [0.6590, 0.2424, 0.0986])\n";

  // Statistics of a large normal sample.
  Tensor z = tensor::randn({1 << 20});
  std::cout << "randn: mean " << z.mean().item<float>() << " (expect ~0), std " << z.std().item<float>()
            << " (expect ~1)\n";
  return 0;
}
