// CUDA backend: device queries, guards and the caching allocator. The no-device tests run on
// CPU-only machines (and CPU-only builds); the rest skip there.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "tensor/core/Storage.h"
#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::error_of;

namespace {

// Owns a CUDA allocation and frees it the way a storage does.
class Buffer {
 public:
  explicit Buffer(size_t nbytes, Device device = Device(kCUDA)) : p_(get_allocator(kCUDA)->allocate(nbytes, device)) {}
  ~Buffer() { reset(); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void reset() {
    if (p_.deleter) p_.deleter(p_.data, p_.ctx);
    p_ = DataPtr{};
  }
  void* data() const { return p_.data; }
  const DataPtr& ptr() const { return p_; }

 private:
  DataPtr p_;
};

constexpr size_t kMiB = size_t(1) << 20;

}  // namespace

TEST(CudaQueries, AvailabilityMatchesDeviceCount) {
  int n = cuda::device_count();
  EXPECT_GE(n, 0);
  EXPECT_EQ(cuda::device_count(), n);  // cached, stable
  EXPECT_EQ(cuda::is_available(), n > 0);
}

TEST(CudaNoDevice, ReportsNoDevice) {
  REQUIRE_NO_CUDA();
  EXPECT_FALSE(cuda::is_available());
  EXPECT_EQ(cuda::device_count(), 0);
}

TEST(CudaNoDevice, AllocationThrowsClearError) {
  REQUIRE_NO_CUDA();
  std::string msg = error_of([] { get_allocator(kCUDA)->allocate(16, Device(kCUDA)); });
  EXPECT_NE(msg.find("CUDA"), std::string::npos) << msg;
  msg = error_of([] { get_allocator(kCUDA)->allocate(16, Device(kCUDA, 0)); });
  EXPECT_NE(msg.find("CUDA"), std::string::npos) << msg;
}

TEST(CudaNoDevice, DeviceFunctionsThrowAndStatsAreEmpty) {
  REQUIRE_NO_CUDA();
  EXPECT_THROW(cuda::current_device(), Error);
  EXPECT_THROW(cuda::set_device(0), Error);
  EXPECT_THROW(cuda::synchronize(), Error);
  EXPECT_THROW({ cuda::CUDAGuard g(0); }, Error);
  std::string msg = error_of([] { cuda::CUDAGuard g(0); });
  EXPECT_NE(msg.find("CUDA"), std::string::npos) << msg;
  cuda::MemoryStats s = cuda::memory_stats();
  EXPECT_EQ(s.allocated_bytes, 0u);
  EXPECT_EQ(s.reserved_bytes, 0u);
  EXPECT_EQ(s.num_cuda_malloc_calls, 0u);
  EXPECT_NO_THROW(cuda::empty_cache());
}

TEST(CudaDevice, CurrentDeviceAndGuard) {
  REQUIRE_CUDA();
  int n = cuda::device_count();
  int cur = cuda::current_device();
  EXPECT_GE(cur, 0);
  EXPECT_LT(cur, n);
  {
    cuda::CUDAGuard g(n - 1);
    EXPECT_EQ(cuda::current_device(), n - 1);
  }
  EXPECT_EQ(cuda::current_device(), cur);
  {
    cuda::CUDAGuard g(-1);  // keeps the current device
    EXPECT_EQ(cuda::current_device(), cur);
  }
  EXPECT_THROW({ cuda::CUDAGuard g(n); }, Error);
  EXPECT_THROW(cuda::set_device(n), Error);
  EXPECT_EQ(cuda::current_device(), cur);
  EXPECT_NO_THROW(cuda::synchronize());
}

TEST(CudaAllocator, ZeroBytesIsNull) {
  REQUIRE_CUDA();
  cuda::MemoryStats before = cuda::memory_stats();
  Buffer b(0);
  EXPECT_EQ(b.data(), nullptr);
  b.reset();
  cuda::MemoryStats after = cuda::memory_stats();
  EXPECT_EQ(after.allocated_bytes, before.allocated_bytes);
  EXPECT_EQ(after.num_cuda_malloc_calls, before.num_cuda_malloc_calls);
}

TEST(CudaAllocator, ReusesFreedBlock) {
  REQUIRE_CUDA();
  { Buffer warm(1000); }
  cuda::MemoryStats s0 = cuda::memory_stats();
  {
    Buffer b(1000);
    EXPECT_NE(b.data(), nullptr);
  }
  {
    Buffer b(1000);
    EXPECT_NE(b.data(), nullptr);
  }
  cuda::MemoryStats s1 = cuda::memory_stats();
  EXPECT_EQ(s1.num_cuda_malloc_calls, s0.num_cuda_malloc_calls);
  EXPECT_EQ(s1.num_alloc_calls, s0.num_alloc_calls + 2);
  EXPECT_EQ(s1.allocated_bytes, s0.allocated_bytes);
}

TEST(CudaAllocator, StatsTrackRoundedLiveBytes) {
  REQUIRE_CUDA();
  cuda::MemoryStats s0 = cuda::memory_stats();
  {
    Buffer a(1);     // rounded to 512
    Buffer b(1000);  // rounded to 1024
    cuda::MemoryStats s1 = cuda::memory_stats();
    EXPECT_EQ(s1.allocated_bytes, s0.allocated_bytes + 512 + 1024);
    EXPECT_GE(s1.reserved_bytes, s1.allocated_bytes);
    EXPECT_GE(s1.peak_allocated_bytes, s1.allocated_bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 512, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 512, 0u);
  }
  cuda::MemoryStats s2 = cuda::memory_stats();
  EXPECT_EQ(s2.allocated_bytes, s0.allocated_bytes);
  EXPECT_GE(s2.peak_allocated_bytes, s0.allocated_bytes + 512 + 1024);
  EXPECT_EQ(cuda::memory_stats(-1).num_alloc_calls, cuda::memory_stats(cuda::current_device()).num_alloc_calls);
}

TEST(CudaAllocator, SmallBlocksShareASegment) {
  REQUIRE_CUDA();
  cuda::empty_cache();
  cuda::MemoryStats s0 = cuda::memory_stats();
  Buffer a(4096), b(4096);
  cuda::MemoryStats s1 = cuda::memory_stats();
  EXPECT_EQ(s1.num_cuda_malloc_calls, s0.num_cuda_malloc_calls + 1);
  EXPECT_EQ(s1.reserved_bytes, s0.reserved_bytes + 2 * kMiB);
  EXPECT_NE(a.data(), b.data());
}

TEST(CudaAllocator, FreedNeighboursMergeAndEmptyCacheReleases) {
  REQUIRE_CUDA();
  cuda::empty_cache();
  cuda::MemoryStats s0 = cuda::memory_stats();
  {
    Buffer a(kMiB), b(kMiB);  // the two halves of one small-pool segment
    EXPECT_EQ(cuda::memory_stats().num_cuda_malloc_calls, s0.num_cuda_malloc_calls + 1);
  }
  EXPECT_GT(cuda::memory_stats().reserved_bytes, s0.reserved_bytes);  // cached
  cuda::empty_cache();  // only whole segments go back: needs the halves merged
  EXPECT_EQ(cuda::memory_stats().reserved_bytes, s0.reserved_bytes);
}

TEST(CudaAllocator, LargeBlocksAreCachedAndReleased) {
  REQUIRE_CUDA();
  cuda::empty_cache();
  cuda::MemoryStats s0 = cuda::memory_stats();
  {
    Buffer big(64 * kMiB);
    cuda::MemoryStats s1 = cuda::memory_stats();
    EXPECT_EQ(s1.reserved_bytes, s0.reserved_bytes + 64 * kMiB);
    EXPECT_EQ(s1.allocated_bytes, s0.allocated_bytes + 64 * kMiB);
  }
  {
    Buffer again(64 * kMiB - 100);  // same 2 MiB size class: reused
    EXPECT_EQ(cuda::memory_stats().num_cuda_malloc_calls, s0.num_cuda_malloc_calls + 1);
  }
  EXPECT_EQ(cuda::memory_stats().reserved_bytes, s0.reserved_bytes + 64 * kMiB);
  cuda::empty_cache();
  EXPECT_EQ(cuda::memory_stats().reserved_bytes, s0.reserved_bytes);
}

TEST(CudaAllocator, ExplicitAndCurrentDeviceIndex) {
  REQUIRE_CUDA();
  int cur = cuda::current_device();
  cuda::MemoryStats s0 = cuda::memory_stats(cur);
  {
    Buffer a(512, Device(kCUDA));
    Buffer b(512, Device(kCUDA, static_cast<int8_t>(cur)));
  }
  EXPECT_EQ(cuda::memory_stats(cur).num_alloc_calls, s0.num_alloc_calls + 2);
  std::string msg = error_of([] {
    get_allocator(kCUDA)->allocate(16, Device(kCUDA, static_cast<int8_t>(cuda::device_count())));
  });
  EXPECT_NE(msg.find("out of range"), std::string::npos) << msg;
}

TEST(CudaAllocator, OutOfMemoryThrowsAndRecovers) {
  REQUIRE_CUDA();
  cuda::MemoryStats s0 = cuda::memory_stats();
  std::string msg = error_of([] { get_allocator(kCUDA)->allocate(size_t(1) << 50, Device(kCUDA)); });
  EXPECT_NE(msg.find("out of memory"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(size_t(1) << 50)), std::string::npos) << msg;
  EXPECT_EQ(cuda::memory_stats().allocated_bytes, s0.allocated_bytes);
  Buffer ok(4096);
  EXPECT_NE(ok.data(), nullptr);
}

TEST(CudaAllocator, ConcurrentAllocAndFree) {
  REQUIRE_CUDA();
  cuda::MemoryStats s0 = cuda::memory_stats();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 500; ++i) {
        size_t n = size_t(512) << ((t + i) % 14);  // 512 B .. 4 MiB: both pools
        Buffer a(n), b(n / 2 + 1);
      }
    });
  }
  for (auto& th : threads) th.join();
  cuda::MemoryStats s1 = cuda::memory_stats();
  EXPECT_EQ(s1.allocated_bytes, s0.allocated_bytes);
  EXPECT_EQ(s1.num_alloc_calls, s0.num_alloc_calls + 8 * 500 * 2);
}

// ---- copy_ and fill_ on CUDA (Note [CUDA copy_ on the device]): every value checked on the host ----

TEST(CudaCopy, RoundTripKeepsValues) {
  REQUIRE_CUDA();
  Tensor x = arange(12, TensorOptions(kFloat32)).view({3, 4});
  Tensor d = x.to(Device(kCUDA));
  EXPECT_TRUE(d.is_cuda());
  EXPECT_TRUE(equal(d.cpu(), x));
}

TEST(CudaCopy, ConvertsDtypeAndLayoutBothWays) {
  REQUIRE_CUDA();
  Tensor x = arange(12, TensorOptions(kFloat64)).view({3, 4});
  // Host to device with a conversion and a transposed source.
  Tensor d = x.t().to(Device(kCUDA), kFloat32);
  EXPECT_EQ(d.dtype(), kFloat32);
  EXPECT_TRUE(equal(d.cpu(), x.t().to(kFloat32).contiguous()));
  // Device to device into a strided destination, then a device-side conversion back to int64.
  Tensor base = zeros({4, 3}, TensorOptions(kFloat32).device(kCUDA));
  base.t().copy_(x.to(kFloat32).to(Device(kCUDA)));
  EXPECT_TRUE(equal(base.cpu(), x.t().to(kFloat32).contiguous()));
  EXPECT_TRUE(equal(base.to(kInt64).cpu(), x.t().to(kInt64).contiguous()));
  // A broadcast source.
  Tensor row = tensor::tensor({1.f, 2.f, 3.f}).to(Device(kCUDA));
  Tensor dst = empty({2, 3}, TensorOptions(kFloat32).device(kCUDA));
  dst.copy_(row);
  EXPECT_TRUE(equal(dst.cpu(), tensor::tensor({{1.f, 2.f, 3.f}, {1.f, 2.f, 3.f}})));
}

TEST(CudaCopy, ConjugateViewsCopyTheirValues) {
  REQUIRE_CUDA();
  Tensor z = (tensor::tensor({1.0, 2.0}).to(kComplex64) * complex128(0, 1)).to(Device(kCUDA));
  Tensor c = z.conj().resolve_conj();
  EXPECT_FALSE(c.is_conj());
  Tensor h = c.cpu();
  EXPECT_EQ(h[0].item().to<complex128>(), complex128(0, -1));
  EXPECT_EQ(h[1].item().to<complex128>(), complex128(0, -2));
}

TEST(CudaCopy, FillsContiguousAndStridedTensors) {
  REQUIRE_CUDA();
  Tensor d = zeros({3, 4}, TensorOptions(kFloat32).device(kCUDA));
  d.select(1, 2).fill_(7);
  Tensor h = d.cpu();
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) EXPECT_EQ(h[r][c].item<float>(), c == 2 ? 7.f : 0.f);
  d.fill_(-1.5);
  EXPECT_TRUE(equal(d.cpu(), full({3, 4}, -1.5f)));
}
