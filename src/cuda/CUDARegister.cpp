// The CUDA backend's kernels enter the dispatcher here, once, when libtensor_cuda loads.
#include "src/cuda/CUDARuntime.h"

namespace tensor::cuda_detail {

void register_elementwise_kernels();  // src/cuda/CUDAElementwise.cpp
void register_reduce_kernels();       // src/cuda/CUDAReduce.cpp

void register_cuda_kernels() {
  register_elementwise_kernels();
  register_reduce_kernels();
}

}  // namespace tensor::cuda_detail
