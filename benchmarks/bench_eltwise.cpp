// Activation cases (Note [oneDNN eltwise] in src/cpu/OneDNNEltwise.cpp): exact and tanh GELU, tanh and
// sigmoid on 16M floats and a mid size (256K), each beside its libtorch twin (torch_eltwise.cpp).
#include <tensor/tensor.h>

#include "harness.h"

using namespace tensor;
using bench::median_seconds;

namespace {

bench::Case unary_case(const char* name, int64_t n, Tensor (*f)(const Tensor&)) {
  return {name, "GB/s", 2.0 * 4 * n, "<= 1.0x", [n, f] {
            Tensor x = randn({n});
            return median_seconds([&] { Tensor y = f(x); }, 15, n < (1 << 20) ? 20 : 1);
          }};
}

Tensor gelu_tanh(const Tensor& x) { return nn::functional::gelu(x, nn::functional::GELUFuncOptions().approximate("tanh")); }
Tensor gelu_erf(const Tensor& x) { return tensor::gelu(x); }
Tensor tanh_(const Tensor& x) { return tensor::tanh(x); }
Tensor sigmoid_(const Tensor& x) { return tensor::sigmoid(x); }

const bench::AddCases kEltwiseCases({
    unary_case("gelu_16M", 16 << 20, gelu_erf),
    unary_case("gelu_256K", 256 << 10, gelu_erf),
    unary_case("gelu_tanh_16M", 16 << 20, gelu_tanh),
    unary_case("gelu_tanh_256K", 256 << 10, gelu_tanh),
    unary_case("tanh_16M", 16 << 20, tanh_),
    unary_case("sigmoid_16M", 16 << 20, sigmoid_),
});

}  // namespace
