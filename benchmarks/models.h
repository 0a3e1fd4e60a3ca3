// Models shared by the benchmark cases and the soak programs, so that both measure one shape.
#pragma once

#include <tensor/tensor.h>

namespace bench {

/// The MLP of TARGETS.md: 784-1024-1024-10 with ReLU, trained at batch kBatch with SGD and
/// mlp_sgd_options().
struct MLP : tensor::nn::Module {
  static constexpr int64_t kBatch = 128, kIn = 784, kClasses = 10;
  MLP()
      : fc1(register_module("fc1", tensor::nn::Linear(kIn, 1024))),
        fc2(register_module("fc2", tensor::nn::Linear(1024, 1024))),
        fc3(register_module("fc3", tensor::nn::Linear(1024, kClasses))) {}
  tensor::Tensor forward(const tensor::Tensor& x) { return fc3(relu(fc2(relu(fc1(x))))); }
  tensor::nn::Linear fc1, fc2, fc3;
};

/// The MLP case's optimizer settings: SGD, lr 0.01, momentum 0.9.
inline tensor::optim::SGDOptions mlp_sgd_options() { return tensor::optim::SGDOptions(0.01).momentum(0.9); }

}  // namespace bench
