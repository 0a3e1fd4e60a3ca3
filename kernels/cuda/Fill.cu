// Fills a device buffer with a repeated element pattern (fill_ for dtypes whose value bytes
// differ; all-equal bytes take cudaMemset instead, see CUDACopy.cpp).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "src/cuda/CUDAKernels.h"

namespace tensor::cuda_detail {

namespace {

struct Pattern {
  unsigned char b[16];
};

// Byte `off` of the buffer gets pattern[off % elem_size]. The 16-byte aligned middle is written
// as uint4 stores of the pattern rotated to its phase there (16 is a multiple of elem_size, so
// the phase is the same for every vector); the unaligned head and tail (under 16 bytes each)
// are written bytewise by the first threads.
__global__ void fill_kernel(unsigned char* base, size_t head, size_t nvec, size_t nbytes, uint4 vec, Pattern pat,
                            unsigned elem_size) {
  size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  uint4* v = reinterpret_cast<uint4*>(base + head);
  for (size_t i = tid; i < nvec; i += stride) v[i] = vec;
  size_t tail = head + nvec * 16;
  size_t nedge = head + (nbytes - tail);
  if (tid < nedge) {
    size_t off = tid < head ? tid : tail + (tid - head);
    base[off] = pat.b[off % elem_size];
  }
}

}  // namespace

cudaError_t launch_fill(void* dst, const void* pattern, size_t elem_size, size_t nbytes, cudaStream_t stream) {
  if (nbytes == 0) return cudaSuccess;
  if (elem_size == 0 || elem_size > 16 || 16 % elem_size != 0) return cudaErrorInvalidValue;
  auto* base = static_cast<unsigned char*>(dst);
  size_t head = (16 - reinterpret_cast<uintptr_t>(base) % 16) % 16;
  if (head > nbytes) head = nbytes;
  size_t nvec = (nbytes - head) / 16;

  Pattern pat{};
  std::memcpy(pat.b, pattern, elem_size);
  unsigned char rotated[16];
  for (size_t j = 0; j < 16; ++j) rotated[j] = pat.b[(head + j) % elem_size];
  uint4 vec;
  std::memcpy(&vec, rotated, sizeof(vec));

  // Grid-stride loop: a few thousand blocks saturate any current GPU; at least one block
  // for the head and tail bytes (at most 30, fewer than kThreads).
  constexpr unsigned kThreads = 256;
  constexpr size_t kMaxBlocks = 8192;
  size_t blocks = (nvec + kThreads - 1) / kThreads;
  if (blocks == 0) blocks = 1;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  fill_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(base, head, nvec, nbytes, vec, pat,
                                                                      static_cast<unsigned>(elem_size));
  return cudaGetLastError();
}

}  // namespace tensor::cuda_detail
