// tril/triu on CUDA (kernels/cuda/RearrangeLaunch.h): one block per matrix row, whose threads
// write zeros over that row's dropped columns only, so there is one division per row and none
// per element, and no element outside the dropped triangle is touched.
#include <cuda_runtime.h>

#include "kernels/cuda/RearrangeLaunch.h"

namespace tensor::cuda_kernels {

namespace {

constexpr int kTriangleThreads = 128;

// An element of `Bytes` bytes (the dtype does not matter: zero is all-zero bytes).
template <int Bytes>
struct alignas(Bytes) Bits {
  unsigned char b[Bytes];
};

template <class E>
__global__ void __launch_bounds__(kTriangleThreads)
    zero_triangle_kernel(E* data, int64_t lines, int64_t rows, int64_t cols, int64_t diagonal, bool lower) {
  for (int64_t line = blockIdx.x; line < lines; line += gridDim.x) {
    const int64_t r = line % rows;
    // lower: columns r + diagonal + 1 .. cols - 1; upper: 0 .. r + diagonal - 1.
    const int64_t lo = lower ? (r + diagonal + 1 > 0 ? r + diagonal + 1 : 0) : 0;
    const int64_t hi = lower ? cols : (r + diagonal < cols ? r + diagonal : cols);
    E* row = data + line * cols;
    for (int64_t c = lo + threadIdx.x; c < hi; c += kTriangleThreads) row[c] = E{};
  }
}

template <int Bytes>
LaunchStatus launch(void* data, int64_t lines, int64_t rows, int64_t cols, int64_t diagonal, bool lower,
                    cudaStream_t stream) {
  const unsigned blocks = static_cast<unsigned>(lines < 65536 ? lines : 65536);
  zero_triangle_kernel<Bits<Bytes>>
      <<<blocks, kTriangleThreads, 0, stream>>>(static_cast<Bits<Bytes>*>(data), lines, rows, cols, diagonal, lower);
  return static_cast<LaunchStatus>(cudaGetLastError());
}

}  // namespace

LaunchStatus launch_zero_triangle(void* data, int64_t elem_size, int64_t lines, int64_t rows, int64_t cols,
                                  int64_t diagonal, bool lower, void* stream) {
  if (lines == 0 || cols == 0) return 0;
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (elem_size) {
    case 1: return launch<1>(data, lines, rows, cols, diagonal, lower, s);
    case 2: return launch<2>(data, lines, rows, cols, diagonal, lower, s);
    case 4: return launch<4>(data, lines, rows, cols, diagonal, lower, s);
    case 8: return launch<8>(data, lines, rows, cols, diagonal, lower, s);
    case 16: return launch<16>(data, lines, rows, cols, diagonal, lower, s);
    default: return kNoKernelForDtype;
  }
}

}  // namespace tensor::cuda_kernels
