#include "src/dispatch/Dispatcher.h"
#include "src/dispatch/BackendKernels.h"

#include "src/core/Check.h"

namespace tensor {

const char* to_string(DispatchKey k) {
  static const char* names[] = {"Undefined", "CPU", "CUDA", "Meta", "Quantized", "Autograd", "Autocast", "Profiler"};
  int i = static_cast<int>(k);
  return i < kNumDispatchKeys ? names[i] : "Unknown";
}

namespace dispatch {

thread_local LocalKeys g_local_keys;
std::atomic<uint16_t> g_global_included{0};

void no_kernel(const char* op, DispatchKey k) {
  if (k == DispatchKey::CUDA)
    TENSOR_ERROR("{}: no CUDA kernel is registered yet for this op; move the inputs to the CPU with .cpu()", op);
  // No key at all: the op's tensor arguments are all undefined.
  if (k == DispatchKey::Undefined)
    TENSOR_ERROR("{}: the tensor is undefined (default-constructed, reset, or an unset .grad()); check defined() "
                 "first", op);
  TENSOR_ERROR("{}: no kernel registered for dispatch key {}", op, to_string(k));
}

void no_quantized_kernel(const char* op, ScalarType dtype) {
  // Undefined: the quantized tensor came in an argument kind the lookup does not read.
  const char* name = dtype == ScalarType::Undefined ? "qint8/quint8/qint32" : to_string(dtype);
  TENSOR_ERROR("{}: no kernel for dtype {} (quantized tensors support views, clone, copy_, dequantize, int_repr, "
               "the q_* accessors, relu, max_pool2d, avg_pool2d, adaptive_avg_pool2d, cat and the kernels of "
               "tensor/nn/quantized.h so far; call dequantize() to compute in float)",
               op, name);
}

void check_kernel_backend(DispatchKey backend, const char* op) {
  TENSOR_CHECK(backend == DispatchKey::CUDA, "register_kernel({}): only CUDA kernels can be registered; CPU's are built "
               "in and Meta runs the front end alone, got {}", op, to_string(backend));
}

}  // namespace dispatch
}  // namespace tensor
