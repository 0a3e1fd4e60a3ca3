#include <tensor/tensor.h>

#include <iostream>

int main() {
  tensor::Tensor a = tensor::tensor({1.0, 2.0, 3.0});
  tensor::Tensor s = (a * 2).sum();
  std::cout << "sum " << s.item<float>() << "\n";
  return s.item<float>() == 12.0f ? 0 : 1;
}
