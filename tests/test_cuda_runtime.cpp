// CUDA runtime: streams, events, guards, the stream-aware caching allocator (record_stream,
// statistics, out of memory), the pinned host allocator and host/device copies. The no-device
// tests run everywhere (CPU-only machines included); the rest skip without a device.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tensor/core/Storage.h"
#include "tensor/cuda/cuda.h"
#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::error_of;

namespace {

#define REQUIRE_TWO_DEVICES()                                                       \
  do {                                                                              \
    if (cuda::device_count() < 2) GTEST_SKIP() << "needs two CUDA devices";        \
  } while (0)

constexpr size_t kMiB = size_t(1) << 20;

TensorOptions on_cuda(ScalarType t = kFloat32, int device = -1) {
  return TensorOptions(t).device(Device(kCUDA, static_cast<int8_t>(device)));
}

uintptr_t addr(const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()); }

// Whether a shared object whose path contains `name` is mapped into this process.
bool mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(name) != std::string::npos) return true;
  return false;
}

// Every public entry point that needs a device, with the name its error must carry.
std::vector<std::pair<std::string, std::function<void()>>> entry_points() {
  using cuda::Stream;
  return {
      {"cuda::current_device", [] { cuda::current_device(); }},
      {"cuda::set_device", [] { cuda::set_device(0); }},
      {"cuda::synchronize", [] { cuda::synchronize(); }},
      {"cuda::synchronize", [] { cuda::synchronize(0); }},
      {"cuda::CUDAGuard", [] { cuda::CUDAGuard g(0); }},
      {"cuda::CUDAGuard", [] { cuda::CUDAGuard g(-1); }},
      {"cuda::getCurrentCUDAStream", [] { cuda::getCurrentCUDAStream(); }},
      {"cuda::getCurrentCUDAStream", [] { cuda::current_stream(0); }},
      {"cuda::getDefaultCUDAStream", [] { cuda::getDefaultCUDAStream(); }},
      {"cuda::getDefaultCUDAStream", [] { cuda::default_stream(0); }},
      {"cuda::getStreamFromPool", [] { cuda::getStreamFromPool(); }},
      {"cuda::getStreamFromPool", [] { cuda::get_stream_from_pool(true, 0); }},
      {"cuda::setCurrentCUDAStream", [] { cuda::setCurrentCUDAStream(Stream(0, 0)); }},
      {"cuda::StreamGuard", [] { cuda::StreamGuard g(Stream(0, 0)); }},
      {"cuda::Stream::query", [] { Stream(0, 0).query(); }},
      {"cuda::Stream::synchronize", [] { Stream(0, 0).synchronize(); }},
      {"cuda::Stream::priority", [] { Stream(0, 0).priority(); }},
      {"cuda::Event::record", [] { cuda::Event().record(); }},
      {"cuda::Event::record", [] { cuda::Event(true).record(Stream(0, 0)); }},
      {"CUDA allocation", [] { get_allocator(kCUDA)->allocate(16, Device(kCUDA)); }},
      {"CUDA allocation", [] { zeros({2}, on_cuda(kInt64, 0)); }},
      // Factories resolve a device without index first (cuda::current_device names itself).
      {"CUDA", [] { empty({2}, on_cuda()); }},
      {"CUDA", [] { ones({2}).cuda(); }},
      {"CUDA", [] { ones({2}).cuda(/*non_blocking=*/true); }},
      {"CUDA", [] { ones({2}).to(Device(kCUDA), kFloat64); }},
      {"pin_memory", [] { ones({2}).pin_memory(); }},
  };
}

// The entry points whose error does not name them (empty when all do).
std::string unnamed_entry_points() {
  std::string bad;
  for (auto& [name, f] : entry_points()) {
    std::string msg = error_of(f);
    if (msg.find(name) == std::string::npos) bad += "\n  " + name + ": got \"" + msg + "\"";
  }
  return bad;
}

// Queues roughly `ms` milliseconds of device work (at ~3 TB/s, H100-class) on the current
// stream and returns at once: tensors allocated here die on return, which is safe since their
// blocks are only reused in the order of this stream.
void queue_busy_work(double ms = 40) {
  const int64_t n = int64_t(256) << 20;  // 1 GiB of float32 each
  Tensor a = empty({n}, on_cuda());
  Tensor b = empty({n}, on_cuda());
  a.fill_(1.5f);
  int reps = static_cast<int>(ms / 0.7) + 1;  // one 1 GiB copy moves 2 GiB: ~0.7 ms
  for (int i = 0; i < reps; ++i) (i % 2 ? a : b).copy_(i % 2 ? b : a);
}

// Distinct bytes so that a shifted or partial copy shows.
Tensor pattern_bytes(int64_t n, int seed = 0) {
  return arange(seed, seed + n, TensorOptions(kInt64)).remainder(251).to(kUInt8);
}

}  // namespace

// ---- no device (these run here, on CPU-only machines) ----

TEST(CudaRuntimeNoDevice, EveryEntryPointRaisesAnErrorNamingItself) {
  REQUIRE_NO_CUDA();
  EXPECT_EQ(unnamed_entry_points(), "");
  EXPECT_EQ(cuda::device_count(), 0);
  EXPECT_FALSE(cuda::is_available());
}

TEST(CudaRuntimeNoDevice, StatsAreEmptyAndCacheCallsAreNoOps) {
  REQUIRE_NO_CUDA();
  cuda::MemoryStats s = cuda::memory_stats();
  EXPECT_EQ(s.allocated_bytes, 0u);
  EXPECT_EQ(s.reserved_bytes, 0u);
  EXPECT_EQ(s.num_alloc_calls, 0u);
  EXPECT_EQ(s.num_ooms, 0u);
  EXPECT_NO_THROW(cuda::reset_peak_memory_stats());
  EXPECT_NO_THROW(cuda::empty_cache());
}

// The stand-in that libtensor uses when libtensor_cuda cannot be loaded names every entry point
// too. A fresh process, since the backend is looked for once.
TEST(CudaRuntimeNoDevice, StandInNamesEveryEntryPoint) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("TENSOR_CUDA_LIBRARY", "/nonexistent/libtensor_cuda.so.0", 1);
        // A static build links the backend in and ignores the variable: nothing to check then.
        if (cuda::is_available()) std::exit(0);
        std::string bad = unnamed_entry_points();
        std::string why = error_of([] { cuda::current_device(); });
        if (why.find("could not be loaded") == std::string::npos && why.find("no CUDA device") == std::string::npos)
          bad += "\n  reason missing: " + why;
        std::fprintf(stderr, "%s", bad.c_str());
        std::exit(bad.empty() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(CudaRuntimeNoDevice, IsPinnedOnCpuTensorLoadsNothing) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        Tensor t = ones({3});
        bool pinned = t.is_pinned() || t.narrow(0, 1, 2).is_pinned() || Tensor().is_pinned();
        bool loaded = mapped("libtensor_cuda") || mapped("libcudart");
        std::fprintf(stderr, "pinned=%d loaded=%d", pinned, loaded);
        std::exit(!pinned && !loaded ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(CudaRuntimeNoDevice, EmptyCacheBeforeAnyUseLoadsNothing) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        cuda::empty_cache();
        std::exit(mapped("libtensor_cuda") || mapped("libcudart") ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), "");
}

// An event that was never recorded needs no device: nothing to wait for.
TEST(CudaRuntimeEvent, UnrecordedEventIsCompleteAndNeedsNoDevice) {
  cuda::Event e;
  EXPECT_FALSE(e.is_created());
  EXPECT_TRUE(e.query());
  EXPECT_NO_THROW(e.synchronize());
  EXPECT_NO_THROW(e.block(cuda::Stream(0, 0)));
  cuda::Event moved(std::move(e));
  EXPECT_TRUE(moved.query());
  cuda::Event timed(true);
  tensor::testing::expect_error([&] { timed.elapsed_time(moved); },
                                {"cuda::Event::elapsed_time", "recorded"});
}

TEST(CudaRuntimeNoDevice, RecordStreamRejectsNonCudaTensors) {
  tensor::testing::expect_error([] { ones({2}).record_stream(cuda::Stream(0, 0)); },
                                {"record_stream", "CUDA tensor", "cpu"});
  tensor::testing::expect_error([] { Tensor().record_stream(cuda::Stream(0, 0)); },
                                {"record_stream", "undefined"});
}

TEST(CudaRuntimeNoDevice, PinMemoryRejectsNonCpuTensors) {
  tensor::testing::expect_error([] { Tensor().pin_memory(); }, {"pin_memory", "undefined"});
}

// ---- streams (GPU) ----

TEST(CudaStreams, CurrentStreamIsTheDefaultStream) {
  REQUIRE_CUDA();
  int dev = cuda::current_device();
  cuda::Stream cur = cuda::getCurrentCUDAStream();
  EXPECT_EQ(cur, cuda::getDefaultCUDAStream());
  EXPECT_EQ(cur.id(), 0u);
  EXPECT_EQ(cur.device_index(), dev);
  EXPECT_EQ(cur, cuda::current_stream(dev));
  EXPECT_EQ(cuda::default_stream(dev), cuda::getDefaultCUDAStream(-1));
  EXPECT_NO_THROW(cur.synchronize());
  EXPECT_TRUE(cur.query());
  EXPECT_EQ(cur.priority(), 0);
}

TEST(CudaStreams, PoolStreamsDifferFromDefaultAndRoundRobin) {
  REQUIRE_CUDA();
  std::vector<cuda::Stream> low, high;
  for (int i = 0; i < 64; ++i) low.push_back(cuda::getStreamFromPool());
  for (int i = 0; i < 64; ++i) high.push_back(cuda::get_stream_from_pool(/*high_priority=*/true));
  std::set<cuda::StreamId> low_ids, high_ids;
  for (int i = 0; i < 64; ++i) {
    EXPECT_NE(low[i], cuda::getDefaultCUDAStream());
    EXPECT_NE(low[i].id(), 0u);
    EXPECT_EQ(low[i].device_index(), cuda::current_device());
    EXPECT_EQ(low[i % 32], low[i]) << "pool of 32 handed out round-robin";
    EXPECT_EQ(high[i % 32], high[i]);
    low_ids.insert(low[i].id());
    high_ids.insert(high[i].id());
  }
  EXPECT_EQ(low_ids.size(), 32u);
  EXPECT_EQ(high_ids.size(), 32u);
  for (cuda::StreamId id : high_ids) EXPECT_EQ(low_ids.count(id), 0u);
  EXPECT_EQ(low[0].priority(), 0);  // the lowest priority is the default one
  EXPECT_LE(high[0].priority(), low[0].priority());
  EXPECT_LT(high[0].priority(), 0) << "H100-class devices have stream priorities";
  for (const auto& s : {low[0], high[0]}) {
    s.synchronize();
    EXPECT_TRUE(s.query());
  }
}

TEST(CudaStreams, StreamGuardSwitchesAndRestores) {
  REQUIRE_CUDA();
  const cuda::Stream def = cuda::getCurrentCUDAStream();
  cuda::Stream a = cuda::getStreamFromPool();
  cuda::Stream b = cuda::getStreamFromPool(true);
  {
    cuda::StreamGuard ga(a);
    EXPECT_EQ(cuda::getCurrentCUDAStream(), a);
    {
      cuda::StreamGuard gb(b);
      EXPECT_EQ(cuda::getCurrentCUDAStream(), b);
    }
    EXPECT_EQ(cuda::getCurrentCUDAStream(), a);
    cuda::setCurrentCUDAStream(b);  // undone by ga's exit, as libtorch's guard does
    EXPECT_EQ(cuda::getCurrentCUDAStream(), b);
    // The current stream is per thread: another thread still sees the default.
    cuda::Stream other_thread(0, 1);
    std::thread([&] { other_thread = cuda::getCurrentCUDAStream(); }).join();
    EXPECT_EQ(other_thread, def);
  }
  EXPECT_EQ(cuda::getCurrentCUDAStream(), def);
  cuda::setCurrentCUDAStream(a);
  EXPECT_EQ(cuda::getCurrentCUDAStream(), a);
  cuda::setCurrentCUDAStream(def);
  EXPECT_EQ(cuda::getCurrentCUDAStream(), def);
}

TEST(CudaStreams, WorkIsQueuedOnTheCurrentStream) {
  REQUIRE_CUDA();
  cuda::Stream s = cuda::getStreamFromPool();
  Tensor x = empty({int64_t(64) << 20}, on_cuda());
  {
    cuda::StreamGuard g(s);
    queue_busy_work(30);
    x.fill_(3.f);
    cuda::Event done;
    done.record();  // the current stream: s
    EXPECT_FALSE(done.query()) << "the busy work went to s and should still run";
    s.synchronize();
    EXPECT_TRUE(s.query());
    EXPECT_TRUE(done.query());
  }
  EXPECT_TRUE(equal(x.narrow(0, x.numel() - 4, 4).cpu(), full({4}, 3.f)));
}

TEST(CudaStreams, StreamGuardAcrossDevices) {
  REQUIRE_CUDA();
  REQUIRE_TWO_DEVICES();
  cuda::CUDAGuard at0(0);
  cuda::Stream s1 = cuda::getStreamFromPool(false, 1);
  EXPECT_EQ(s1.device_index(), 1);
  {
    cuda::StreamGuard g(s1);
    EXPECT_EQ(cuda::current_device(), 1);
    EXPECT_EQ(cuda::getCurrentCUDAStream(), s1);
    EXPECT_EQ(cuda::getCurrentCUDAStream(1), s1);
    EXPECT_EQ(cuda::getCurrentCUDAStream(0), cuda::getDefaultCUDAStream(0));
    Tensor t = ones({4}, on_cuda(kFloat32));  // allocated on cuda:1, ordered on s1
    EXPECT_EQ(t.device().index(), 1);
    EXPECT_TRUE(equal(t.cpu(), ones({4})));
  }
  EXPECT_EQ(cuda::current_device(), 0);
  EXPECT_EQ(cuda::getCurrentCUDAStream(1), cuda::getDefaultCUDAStream(1));
  // A stream of another device is queried and synchronized on its own device.
  EXPECT_NO_THROW(s1.synchronize());
  EXPECT_TRUE(s1.query());
  EXPECT_NO_THROW(cuda::Stream(1, 0).synchronize());
  EXPECT_EQ(s1.priority(), 0);
  EXPECT_EQ(cuda::current_device(), 0);
  // A handle paired with the wrong device is refused.
  tensor::testing::expect_error([&] { cuda::setCurrentCUDAStream(cuda::Stream(0, s1.id())); },
                                {"cuda::setCurrentCUDAStream", "cuda:1"});
  EXPECT_EQ(cuda::getCurrentCUDAStream(0), cuda::getDefaultCUDAStream(0));
}

TEST(CudaStreams, CUDAGuardRestoresTheOriginalDevice) {
  REQUIRE_CUDA();
  REQUIRE_TWO_DEVICES();
  cuda::CUDAGuard outer(0);
  {
    cuda::CUDAGuard g(-1);
    cuda::set_device(1);  // changed inside the scope: still restored, as libtorch's guard does
  }
  EXPECT_EQ(cuda::current_device(), 0);
  {
    cuda::CUDAGuard g(1);
    EXPECT_EQ(cuda::current_device(), 1);
  }
  EXPECT_EQ(cuda::current_device(), 0);
}

// ---- events (GPU) ----

TEST(CudaEvents, RecordQuerySynchronizeAndElapsedTime) {
  REQUIRE_CUDA();
  cuda::Event start(/*enable_timing=*/true), end(true);
  start.record();
  EXPECT_TRUE(start.is_created());
  EXPECT_EQ(start.device_index(), cuda::current_device());
  queue_busy_work(20);
  end.record();
  end.synchronize();
  EXPECT_TRUE(end.query());
  EXPECT_TRUE(start.query());
  float ms = start.elapsed_time(end);
  EXPECT_GT(ms, 0.f);
  EXPECT_LT(ms, 10000.f);
  // Re-recording reuses the event.
  end.record();
  end.synchronize();
  EXPECT_GE(start.elapsed_time(end), ms);
  cuda::Event untimed;
  untimed.record();
  untimed.synchronize();
  tensor::testing::expect_error([&] { start.elapsed_time(untimed); }, {"elapsed_time", "enable_timing"});
  cuda::Event moved = std::move(start);
  EXPECT_FALSE(start.is_created());  // NOLINT(bugprone-use-after-move): moved-from state is specified
  EXPECT_GT(moved.elapsed_time(end), 0.f);
}

TEST(CudaEvents, BlockMakesOneStreamWaitForAnother) {
  REQUIRE_CUDA();
  cuda::Stream a = cuda::getStreamFromPool();
  cuda::Stream b = cuda::getStreamFromPool();
  ASSERT_NE(a, b);
  const int64_t n = int64_t(64) << 20;  // 256 MiB
  Tensor x = zeros({n}, on_cuda());
  Tensor y = zeros({n}, on_cuda());
  cuda::synchronize();
  cuda::Event ready;
  {
    cuda::StreamGuard g(a);
    queue_busy_work(40);
    for (int v = 1; v <= 7; ++v) x.fill_(static_cast<float>(v));
    ready.record();
  }
  {
    cuda::StreamGuard g(b);
    ready.block(b);
    y.copy_(x);
  }
  b.synchronize();
  EXPECT_TRUE(ready.query()) << "b waited for a's event";
  EXPECT_TRUE(equal(y.cpu(), full({n}, 7.f)));
}

TEST(CudaEvents, BlockWaitsOnTheStreamsOwnDevice) {
  REQUIRE_CUDA();
  REQUIRE_TWO_DEVICES();
  cuda::CUDAGuard at0(0);
  cuda::Event e;
  queue_busy_work(40);
  e.record();  // on cuda:0
  e.block(cuda::Stream(1, 0));  // the default stream of cuda:1, not of the current device
  cuda::Stream(1, 0).synchronize();
  EXPECT_TRUE(e.query());
  EXPECT_EQ(cuda::current_device(), 0);
  // An event records streams of its own device only.
  tensor::testing::expect_error([&] { e.record(cuda::getDefaultCUDAStream(1)); }, {"cuda::Event::record", "cuda:1"});
}

// ---- the caching allocator (GPU) ----

TEST(CudaAllocatorRuntime, StatsCountAllocationsAndPeaks) {
  REQUIRE_CUDA();
  cuda::synchronize();
  cuda::empty_cache();
  cuda::reset_peak_memory_stats();
  cuda::MemoryStats s0 = cuda::memory_stats();
  EXPECT_EQ(s0.peak_allocated_bytes, s0.allocated_bytes);
  EXPECT_EQ(s0.peak_reserved_bytes, s0.reserved_bytes);
  {
    Tensor a = empty({int64_t(1) << 20}, on_cuda());  // 4 MiB: a large-pool segment of its own
    cuda::MemoryStats s1 = cuda::memory_stats();
    EXPECT_EQ(s1.allocated_bytes, s0.allocated_bytes + 4 * kMiB);
    EXPECT_EQ(s1.reserved_bytes, s0.reserved_bytes + 4 * kMiB);
    EXPECT_EQ(s1.num_alloc_calls, s0.num_alloc_calls + 1);
    EXPECT_EQ(s1.num_cuda_malloc_calls, s0.num_cuda_malloc_calls + 1);
    EXPECT_EQ(s1.peak_allocated_bytes, s1.allocated_bytes);
    EXPECT_EQ(s1.peak_reserved_bytes, s1.reserved_bytes);
    Tensor b = empty({100}, on_cuda(kUInt8));  // 512 B from a new 2 MiB small segment
    cuda::MemoryStats s2 = cuda::memory_stats();
    EXPECT_EQ(s2.allocated_bytes, s1.allocated_bytes + 512);
    EXPECT_EQ(s2.reserved_bytes, s1.reserved_bytes + 2 * kMiB);
    EXPECT_EQ(s2.num_alloc_calls, s1.num_alloc_calls + 1);
  }
  cuda::MemoryStats s3 = cuda::memory_stats();
  EXPECT_EQ(s3.allocated_bytes, s0.allocated_bytes);
  EXPECT_EQ(s3.reserved_bytes, s0.reserved_bytes + 6 * kMiB);  // cached
  EXPECT_EQ(s3.peak_allocated_bytes, s0.allocated_bytes + 4 * kMiB + 512);
  {
    Tensor again = empty({int64_t(1) << 20}, on_cuda());  // reuses the cached block
    EXPECT_EQ(cuda::memory_stats().num_cuda_malloc_calls, s3.num_cuda_malloc_calls);
  }
  cuda::reset_peak_memory_stats();
  cuda::MemoryStats s4 = cuda::memory_stats();
  EXPECT_EQ(s4.peak_allocated_bytes, s4.allocated_bytes);
  EXPECT_EQ(s4.peak_reserved_bytes, s4.reserved_bytes);
  EXPECT_EQ(s4.num_ooms, s0.num_ooms);
}

TEST(CudaAllocatorRuntime, EmptyCacheReturnsEverythingOnceTensorsDie) {
  REQUIRE_CUDA();
  {
    std::vector<Tensor> ts;
    for (int64_t n : {int64_t(1), int64_t(1000), int64_t(1) << 18, int64_t(3) << 20, int64_t(50) << 20})
      ts.push_back(empty({n}, on_cuda()));
    cuda::Stream s = cuda::getStreamFromPool();
    cuda::StreamGuard g(s);
    ts.push_back(empty({int64_t(5) << 20}, on_cuda()));
    EXPECT_GT(cuda::memory_stats().reserved_bytes, 0u);
  }
  cuda::empty_cache();
  cuda::MemoryStats s = cuda::memory_stats();
  EXPECT_EQ(s.allocated_bytes, 0u) << "no tensor of this test binary outlives its test";
  EXPECT_EQ(s.reserved_bytes, 0u);
}

// Note [record_stream] in src/cuda/CUDAAllocator.cpp.
TEST(CudaAllocatorRuntime, RecordStreamDefersReuseUntilTheOtherStreamIsDone) {
  REQUIRE_CUDA();
  cuda::synchronize();
  cuda::empty_cache();
  cuda::Stream a = cuda::getStreamFromPool();
  cuda::Stream b = cuda::getStreamFromPool();
  ASSERT_NE(a, b);
  const int64_t n = int64_t(3) << 20;  // 12 MiB: a segment of its own
  Tensor src = full({n}, 2.f, on_cuda());
  cuda::synchronize();

  // Control: without record_stream, a block freed on its own stream is reused at once.
  uintptr_t p0;
  {
    cuda::StreamGuard ga(a);
    Tensor x = empty({n}, on_cuda());
    p0 = addr(x);
  }
  {
    cuda::StreamGuard ga(a);
    EXPECT_EQ(addr(empty({n}, on_cuda())), p0);
  }

  // Allocated on a, used by long work on b, freed while b still runs.
  uintptr_t p;
  {
    Tensor x;
    {
      cuda::StreamGuard ga(a);
      x = empty({n}, on_cuda());
    }
    p = addr(x);
    EXPECT_EQ(p, p0);
    cuda::StreamGuard gb(b);
    queue_busy_work(60);
    x.copy_(src);
    x.record_stream(b);
    x.record_stream(b);  // twice: one use
    x.record_stream(a);  // its own stream: nothing to record
  }
  EXPECT_FALSE(b.query()) << "the busy work should still run; the test needs a longer queue";
  Tensor y;
  {
    cuda::StreamGuard ga(a);
    y = empty({n}, on_cuda());
    EXPECT_NE(addr(y), p) << "the block must wait for b";
  }
  b.synchronize();
  {
    cuda::StreamGuard ga(a);
    Tensor z = empty({n}, on_cuda());
    EXPECT_EQ(addr(z), p) << "b finished: the block is back in a's pool";
  }
  cuda::MemoryStats s = cuda::memory_stats();
  y = Tensor();
  EXPECT_EQ(cuda::memory_stats().allocated_bytes, s.allocated_bytes - static_cast<size_t>(n) * 4);
}

TEST(CudaAllocatorRuntime, RecordStreamOnViewsAndForeignMemory) {
  REQUIRE_CUDA();
  cuda::Stream b = cuda::getStreamFromPool();
  Tensor x = zeros({1024}, on_cuda());
  EXPECT_NO_THROW(x.narrow(0, 10, 100).record_stream(b));  // a view: its storage's block
  EXPECT_NO_THROW(empty({0}, on_cuda()).record_stream(b));  // no memory: nothing to do
  // Memory the allocator did not hand out (here: inside x's block) is ignored, as in libtorch.
  Tensor foreign =
      from_blob(static_cast<char*>(x.data_ptr()) + 512, {16}, on_cuda(kFloat32, cuda::current_device()));
  EXPECT_NO_THROW(foreign.record_stream(b));
  x = Tensor();
  EXPECT_NO_THROW(cuda::synchronize());
  if (cuda::device_count() >= 2) {
    Tensor on0 = zeros({4}, on_cuda(kFloat32, 0));
    tensor::testing::expect_error([&] { on0.record_stream(cuda::getStreamFromPool(false, 1)); },
                                  {"record_stream", "cuda:1"});
  }
}

TEST(CudaAllocatorRuntime, EmptyCacheWaitsForRecordedStreams) {
  REQUIRE_CUDA();
  cuda::synchronize();
  cuda::empty_cache();
  cuda::Stream a = cuda::getStreamFromPool();
  cuda::Stream b = cuda::getStreamFromPool(true);
  {
    Tensor x;
    {
      cuda::StreamGuard ga(a);
      x = empty({int64_t(4) << 20}, on_cuda());
    }
    cuda::StreamGuard gb(b);
    queue_busy_work(30);
    x.fill_(1.f);
    x.record_stream(b);
  }
  cuda::empty_cache();  // waits for b, then releases x's block too
  EXPECT_TRUE(b.query());
  EXPECT_EQ(cuda::memory_stats().reserved_bytes, 0u);
}

TEST(CudaAllocatorRuntime, ManyThreadsRecordingStreams) {
  REQUIRE_CUDA();
  cuda::synchronize();
  cuda::MemoryStats s0 = cuda::memory_stats();
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([t] {
      cuda::Stream own = cuda::getStreamFromPool();
      cuda::Stream other = cuda::getStreamFromPool(true);
      cuda::StreamGuard g(own);
      for (int i = 0; i < 200; ++i) {
        int64_t n = int64_t(64) << ((t + i) % 16);  // 256 B .. 8 MiB: both pools
        Tensor x = empty({n}, on_cuda());
        x.fill_(static_cast<float>(i));
        {
          cuda::StreamGuard go(other);
          Tensor y = empty({n}, on_cuda());
          y.copy_(x);
          x.record_stream(other);
        }
        if (i % 50 == 49) {
          Tensor h = x.narrow(0, n - 1, 1).cpu();
          EXPECT_EQ(h.item<float>(), static_cast<float>(i));
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  cuda::synchronize();
  cuda::MemoryStats s1 = cuda::memory_stats();
  EXPECT_EQ(s1.allocated_bytes, s0.allocated_bytes);
  EXPECT_EQ(s1.num_alloc_calls, s0.num_alloc_calls + 6 * 200 * 2);
  cuda::empty_cache();
  EXPECT_EQ(cuda::memory_stats().reserved_bytes, 0u);
}

TEST(CudaAllocatorRuntime, OutOfMemoryNamesTheBytesAndTheAllocatorRecovers) {
  REQUIRE_CUDA();
  cuda::MemoryStats s0 = cuda::memory_stats();
  const size_t pib = size_t(1) << 50;
  std::string msg = error_of([] { empty({int64_t(1) << 48}, on_cuda()); });  // 1 PiB of float32
  EXPECT_NE(msg.find("out of memory"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(pib)), std::string::npos) << msg;
  EXPECT_NE(msg.find("reserved"), std::string::npos) << msg;
  EXPECT_NE(msg.find("allocated"), std::string::npos) << msg;
  cuda::MemoryStats s1 = cuda::memory_stats();
  EXPECT_EQ(s1.num_ooms, s0.num_ooms + 1);
  EXPECT_EQ(s1.allocated_bytes, s0.allocated_bytes);
  // Sizes whose rounding would overflow are refused the same way.
  msg = error_of([] { get_allocator(kCUDA)->allocate(SIZE_MAX - 5, Device(kCUDA)); });
  EXPECT_NE(msg.find("out of memory"), std::string::npos) << msg;
  EXPECT_EQ(cuda::memory_stats().num_ooms, s0.num_ooms + 2);
  Tensor ok = full({1000}, 4.f, on_cuda());
  EXPECT_TRUE(equal(ok.cpu(), full({1000}, 4.f)));
}

// Fill the device, free it all (cached on one stream), then fill it again from another stream:
// only possible when the out-of-memory path releases the cache and retries.
TEST(CudaAllocatorRuntime, OutOfMemoryReleasesTheCacheAndRetries) {
  REQUIRE_CUDA();
  cuda::synchronize();
  cuda::empty_cache();
  const int64_t chunk = int64_t(1) << 30;  // 4 GiB of float32
  size_t filled = 0;
  {
    std::vector<Tensor> hog;
    std::string msg;
    for (int i = 0; i < 1024 && msg.empty(); ++i) {
      msg = error_of([&] { hog.push_back(empty({chunk}, on_cuda())); });
    }
    ASSERT_NE(msg.find("out of memory"), std::string::npos) << msg;
    filled = hog.size();
    ASSERT_GE(filled, 2u);
  }
  cuda::MemoryStats cached = cuda::memory_stats();
  EXPECT_GE(cached.reserved_bytes, filled * 4 * size_t(chunk));
  {
    cuda::StreamGuard g(cuda::getStreamFromPool());
    std::vector<Tensor> again;
    for (size_t i = 0; i < filled; ++i) {
      std::string msg = error_of([&] { again.push_back(empty({chunk}, on_cuda())); });
      EXPECT_EQ(msg, "") << "chunk " << i << " of " << filled;
    }
    EXPECT_EQ(cuda::memory_stats().num_ooms, cached.num_ooms) << "the retry succeeded";
    again.back().fill_(9.f);
    EXPECT_TRUE(equal(again.back().narrow(0, chunk - 3, 3).cpu(), full({3}, 9.f)));
  }
  cuda::empty_cache();
  EXPECT_EQ(cuda::memory_stats().reserved_bytes, 0u);
}

// ---- pinned memory and copies (GPU) ----

TEST(CudaPinned, PinMemoryKeepsValuesAndIsPinned) {
  REQUIRE_CUDA();
  Tensor h = arange(1000, TensorOptions(kFloat32)).view({10, 100});
  EXPECT_FALSE(h.is_pinned());
  Tensor p = h.pin_memory();
  EXPECT_TRUE(p.is_pinned());
  EXPECT_TRUE(p.is_cpu());
  EXPECT_TRUE(equal(p, h));
  EXPECT_NE(addr(p), addr(h));
  EXPECT_FALSE(h.is_pinned());
  EXPECT_TRUE(p.narrow(0, 2, 3).is_pinned());  // views share the pinned storage
  EXPECT_EQ(addr(p.pin_memory()), addr(p));     // already pinned: itself
  EXPECT_TRUE(empty({0}).pin_memory().is_pinned());
  Tensor strided = h.t().pin_memory();
  EXPECT_TRUE(strided.is_pinned());
  EXPECT_TRUE(equal(strided, h.t()));
  tensor::testing::expect_error([] { ones({2}, on_cuda()).pin_memory(); }, {"pin_memory", "cuda"});
}

TEST(CudaPinned, FreedPinnedBlocksAreReused) {
  REQUIRE_CUDA();
  uintptr_t p;
  {
    Tensor a = empty({700000}, TensorOptions(kUInt8)).pin_memory();
    p = addr(a);
  }
  Tensor b = empty({600000}, TensorOptions(kUInt8)).pin_memory();  // same size class (1 MiB)
  EXPECT_EQ(addr(b), p);
  EXPECT_TRUE(b.is_pinned());
}

TEST(CudaPinned, NonBlockingRoundTrip) {
  REQUIRE_CUDA();
  const int64_t n = int64_t(16) << 20;
  Tensor h = arange(n, TensorOptions(kFloat32)).pin_memory();
  Tensor d = empty({n}, on_cuda());
  d.copy_(h, /*non_blocking=*/true);
  Tensor back = empty({n}).pin_memory();
  back.copy_(d, /*non_blocking=*/true);
  cuda::getCurrentCUDAStream().synchronize();
  EXPECT_TRUE(equal(back, h));
  // The Tensor spellings.
  Tensor d2 = h.cuda(/*non_blocking=*/true);
  Tensor d3 = h.to(Device(kCUDA), /*non_blocking=*/true);
  EXPECT_TRUE(equal(d2.cpu(), h));
  EXPECT_TRUE(equal(d3.to(Device(kCPU), /*non_blocking=*/true), h));  // pageable destination: synced
}

TEST(CudaPinned, NonBlockingOnAPoolStream) {
  REQUIRE_CUDA();
  cuda::Stream s = cuda::getStreamFromPool();
  const int64_t n = int64_t(8) << 20;
  Tensor h = arange(n, TensorOptions(kInt32)).pin_memory();
  Tensor back = zeros({n}, TensorOptions(kInt32)).pin_memory();
  {
    cuda::StreamGuard g(s);
    Tensor d = empty({n}, on_cuda(kInt32));
    queue_busy_work(20);
    d.copy_(h, true);
    back.copy_(d, true);
    s.synchronize();
  }
  EXPECT_TRUE(equal(back, h));
}

// Note [Pinned host memory]: a pinned block that a pending non_blocking copy reads is not
// handed out again until the copy has completed.
TEST(CudaPinned, PendingCopyKeepsItsBlockFromReuse) {
  REQUIRE_CUDA();
  const int64_t n = int64_t(1) << 20;  // 4 MiB of float32
  Tensor d = empty({n}, on_cuda());
  uintptr_t p;
  {
    Tensor h = full({n}, 5.f).pin_memory();
    p = addr(h);
    queue_busy_work(60);
    d.copy_(h, /*non_blocking=*/true);  // queued behind the busy work
  }
  EXPECT_FALSE(cuda::getCurrentCUDAStream().query()) << "the busy work should still run";
  Tensor h2 = full({n}, -1.f).pin_memory();  // must not overwrite the block being copied
  EXPECT_NE(addr(h2), p);
  cuda::synchronize();
  EXPECT_TRUE(equal(d.cpu(), full({n}, 5.f)));
  Tensor h3 = empty({n}).pin_memory();
  EXPECT_EQ(addr(h3), p) << "the copy completed: the block is reused";
  // A view into a pinned block counts as pinned (its uses are recorded on the whole block).
  Tensor window = h2.narrow(0, 7, 100);
  Tensor dw = empty({100}, on_cuda());
  dw.copy_(window, true);
  cuda::synchronize();
  EXPECT_TRUE(equal(dw.cpu(), full({100}, -1.f)));
}

// The driver reads a pageable source before cudaMemcpyAsync returns (Note [non_blocking copies]).
TEST(CudaCopyRuntime, NonBlockingFromPageableMemoryIsSafe) {
  REQUIRE_CUDA();
  const int64_t n = int64_t(4) << 20;
  Tensor h = arange(n, TensorOptions(kFloat32));
  Tensor expect = h.clone();
  Tensor d = empty({n}, on_cuda());
  queue_busy_work(30);
  d.copy_(h, /*non_blocking=*/true);
  h.fill_(-7.f);  // the caller may reuse its pageable buffer at once
  // Into pageable memory: complete on return, without an explicit synchronize.
  Tensor out = zeros({n});
  out.copy_(d, /*non_blocking=*/true);
  EXPECT_TRUE(equal(out, expect));
}

TEST(CudaCopyRuntime, ManySizesBothDirections) {
  REQUIRE_CUDA();
  for (int64_t nbytes : {int64_t(0), int64_t(1), int64_t(15), int64_t(16), int64_t(17), (int64_t(1) << 20) + 3}) {
    for (bool pinned : {false, true}) {
      for (bool non_blocking : {false, true}) {
        SCOPED_TRACE(::testing::Message() << nbytes << " bytes, pinned " << pinned << ", non_blocking "
                                          << non_blocking);
        Tensor h = pattern_bytes(nbytes, static_cast<int>(nbytes));
        if (pinned) h = h.pin_memory();
        Tensor d = empty({nbytes}, on_cuda(kUInt8));
        d.copy_(h, non_blocking);
        Tensor d2 = empty({nbytes}, on_cuda(kUInt8));
        d2.copy_(d, non_blocking);  // device to device
        Tensor back = empty({nbytes}, TensorOptions(kUInt8));
        if (pinned) back = back.pin_memory();
        back.copy_(d2, non_blocking);
        cuda::synchronize();
        EXPECT_TRUE(equal(back, h));
        // Unaligned windows: one byte in, both sides.
        if (nbytes > 2) {
          Tensor win = empty({nbytes - 2}, TensorOptions(kUInt8));
          if (pinned) win = win.pin_memory();
          win.copy_(d2.narrow(0, 1, nbytes - 2), non_blocking);
          Tensor dwin = zeros({nbytes}, on_cuda(kUInt8));
          dwin.narrow(0, 1, nbytes - 2).copy_(h.narrow(0, 1, nbytes - 2), non_blocking);
          cuda::synchronize();
          EXPECT_TRUE(equal(win, h.narrow(0, 1, nbytes - 2)));
          Tensor hw = dwin.cpu();
          EXPECT_EQ(hw[0].item<uint8_t>(), 0);
          EXPECT_EQ(hw[nbytes - 1].item<uint8_t>(), 0);
          EXPECT_TRUE(equal(hw.narrow(0, 1, nbytes - 2), h.narrow(0, 1, nbytes - 2)));
        }
      }
    }
  }
}

TEST(CudaCopyRuntime, DeviceToDeviceIsOrderedWithoutHostWaits) {
  REQUIRE_CUDA();
  const int64_t n = int64_t(32) << 20;
  Tensor a = full({n}, 1.f, on_cuda());
  Tensor b = empty({n}, on_cuda());
  Tensor c = empty({n}, on_cuda());
  for (int i = 0; i < 8; ++i) {
    a.fill_(static_cast<float>(i));
    b.copy_(a);
    c.copy_(b);
  }
  EXPECT_TRUE(equal(c.cpu(), full({n}, 7.f)));  // the copy to the host is ordered after them
}

TEST(CudaCopyRuntime, CopiesBetweenDevices) {
  REQUIRE_CUDA();
  REQUIRE_TWO_DEVICES();
  const int64_t n = (int64_t(1) << 20) + 3;
  Tensor h = pattern_bytes(n, 3);
  Tensor d0 = h.to(Device(kCUDA, 0));
  Tensor d1 = empty({n}, on_cuda(kUInt8, 1));
  {
    cuda::CUDAGuard g(0);
    queue_busy_work(20);
    d0.fill_(0);
    d0.copy_(h);
  }
  d1.copy_(d0);  // waits for cuda:0's stream, and cuda:1's stream waits for it
  EXPECT_TRUE(equal(d1.cpu(), h));
  Tensor back = empty({n}, on_cuda(kUInt8, 0));
  back.copy_(d1, /*non_blocking=*/true);
  EXPECT_TRUE(equal(back.cpu(), h));
}
