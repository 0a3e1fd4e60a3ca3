// The CUDA backend's kernels enter the dispatcher here, once, when libtensor_cuda loads.
#include "src/cuda/CUDARuntime.h"

namespace tensor::cuda_detail {

void register_elementwise_kernels();  // src/cuda/CUDAElementwise.cpp
void register_index_kernels();        // src/cuda/CUDAIndex.cpp
void register_copy_kernels();         // src/cuda/CUDACopy.cpp (cat and stack)
void register_reduce_kernels();       // src/cuda/CUDAReduce.cpp
void register_blas_kernels();         // src/cuda/CUDABlas.cpp
void register_optimizer_kernels();    // src/cuda/CUDAOptimizer.cpp
void register_amp_kernels();          // src/cuda/CUDAAmp.cpp
void register_random_kernels();       // src/cuda/CUDARandom.cpp
void register_rearrange_kernels();    // src/cuda/CUDARearrange.cpp (tril, triu)

void register_cuda_kernels() {
  register_elementwise_kernels();
  register_index_kernels();
  register_copy_kernels();
  register_reduce_kernels();
  register_blas_kernels();
  register_optimizer_kernels();
  register_amp_kernels();
  register_random_kernels();
  register_rearrange_kernels();
}

}  // namespace tensor::cuda_detail
