// Concurrency: what several threads may do at once, with values checked against float64
// references. These are the ThreadSanitizer targets (scripts/sanitize.sh thread); in the normal
// build they still check the values.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <atomic>
#include <thread>
#include <vector>

using namespace tensor;

namespace {
constexpr int kThreads = 4;

std::vector<double> to_vec(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}
}  // namespace

// Threads run forward and backward at once through graphs that share two leaves, so their
// gradients meet in the same AccumulateGrad nodes; the leaves' .grad() must be the exact sum.
TEST(Threads, ConcurrentBackwardAccumulatesIntoSharedLeaves) {
  constexpr int n = 16, iters = 40;
  Tensor w = tensor::linspace(-1, 1, n, dtype(kFloat64)).requires_grad_(true);
  Tensor b = tensor::full({n}, 0.25, dtype(kFloat64)).requires_grad_(true);
  auto xval = [](int t, int i, int j) { return 0.01 * (t + 1) + 0.001 * i - 0.002 * j; };
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t)
    pool.emplace_back([&, t] {
      for (int i = 0; i < iters; ++i) {
        std::vector<double> xs(n);
        for (int j = 0; j < n; ++j) xs[j] = xval(t, i, j);
        Tensor x = tensor::tensor(xs, dtype(kFloat64));
        Tensor y = w * x + b;
        (y * y).sum().backward();
      }
    });
  for (auto& th : pool) th.join();

  // d/dw sum((w x + b)^2) = 2 (w x + b) x; d/db = 2 (w x + b).
  std::vector<double> wv = to_vec(w.detach()), gw(n, 0.0), gb(n, 0.0);
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < iters; ++i)
      for (int j = 0; j < n; ++j) {
        double x = xval(t, i, j), y = wv[j] * x + 0.25;
        gw[j] += 2 * y * x;
        gb[j] += 2 * y;
      }
  std::vector<double> got_w = to_vec(w.grad()), got_b = to_vec(b.grad());
  for (int j = 0; j < n; ++j) {
    EXPECT_NEAR(got_w[j], gw[j], 1e-12 * (1 + std::abs(gw[j]))) << j;
    EXPECT_NEAR(got_b[j], gb[j], 1e-12 * (1 + std::abs(gb[j]))) << j;
  }
}

// Threads differentiate one shared graph (retain_graph) at once: each gets the same gradient
// from autograd::grad, and backward() sums all of them into the leaf.
TEST(Threads, ConcurrentBackwardThroughOneRetainedGraph) {
  Tensor x = tensor::tensor({0.5, -1.5, 2.0}, dtype(kFloat64).requires_grad(true));
  Tensor y = (x * x * x).sum();  // dy/dx = 3 x^2
  std::vector<std::vector<double>> got(kThreads);
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t)
    pool.emplace_back([&, t] {
      got[t] = to_vec(autograd::grad({y}, {x}, {}, /*retain_graph=*/true)[0]);
      y.backward({}, /*retain_graph=*/true);
    });
  for (auto& th : pool) th.join();
  const double ref[] = {0.75, 6.75, 12.0};
  for (int t = 0; t < kThreads; ++t)
    for (int j = 0; j < 3; ++j) EXPECT_DOUBLE_EQ(got[t][j], ref[j]);
  std::vector<double> g = to_vec(x.grad());
  for (int j = 0; j < 3; ++j) EXPECT_DOUBLE_EQ(g[j], kThreads * ref[j]);
}

// A DataLoader with several workers delivers every sample once per epoch, in the sampler's order,
// with the right contents; stopping mid-epoch and destroying the loader joins the workers.
TEST(Threads, DataLoaderWorkersDeliverEverySampleOnce) {
  constexpr int64_t N = 1000, D = 3;
  Tensor data = tensor::arange(N * D, dtype(kFloat32)).reshape({N, D});
  Tensor target = tensor::arange(N, dtype(kInt64));
  auto ds = std::make_shared<data::TensorDataset>(data, target);
  data::DataLoader loader(ds, data::DataLoaderOptions(32).shuffle(true).num_workers(4).seed(7));
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::vector<int> seen(N, 0);
    int64_t count = 0;
    for (data::Example<>& batch : loader) {
      ASSERT_EQ(batch.data.size(1), D);
      ASSERT_EQ(batch.data.size(0), batch.target.size(0));
      Tensor d = batch.data.contiguous();
      Tensor tg = batch.target.contiguous();
      for (int64_t r = 0; r < tg.size(0); ++r) {
        int64_t i = tg.data_ptr<int64_t>()[r];
        ASSERT_TRUE(i >= 0 && i < N);
        ++seen[i];
        for (int64_t c = 0; c < D; ++c) ASSERT_EQ(d.data_ptr<float>()[r * D + c], float(i * D + c));
      }
      count += tg.size(0);
    }
    EXPECT_EQ(count, N);
    for (int64_t i = 0; i < N; ++i) ASSERT_EQ(seen[i], 1) << "epoch " << epoch << " sample " << i;
  }
  // Abandon an epoch after two batches, start another, then destroy the loader mid-epoch.
  int taken = 0;
  for (data::Example<>& batch : loader) {
    (void)batch;
    if (++taken == 2) break;
  }
  auto it = loader.begin();
  EXPECT_EQ(it->data.size(0), 32);
}

// Tensors of every size class are made on some threads and freed on others (their blocks join
// the freeing thread's cache), while threads exit and reap their caches; values survive.
TEST(Threads, AllocatorCachesAcrossThreads) {
  const std::vector<int64_t> sizes = {1, 7, 16, 100, 1000, 4096, 16384, 300000};
  constexpr int rounds = 30;
  std::vector<std::vector<Tensor>> made(kThreads);
  std::atomic<int> bad{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t)
    pool.emplace_back([&, t] {
      for (int r = 0; r < rounds; ++r)
        for (int64_t n : sizes) {
          Tensor a = tensor::full({n}, float(t * 1000 + r), dtype(kFloat32));
          Tensor s = a + 1;  // a temporary freed on this thread, reused by the next
          if (s[n - 1].item<float>() != float(t * 1000 + r + 1)) ++bad;
          if (r % 3 == 0) made[t].push_back(a);
        }
    });
  for (auto& th : pool) th.join();
  // Free each thread's tensors on another thread, after the maker has exited.
  pool.clear();
  for (int t = 0; t < kThreads; ++t)
    pool.emplace_back([&, t] {
      std::vector<Tensor> mine = std::move(made[(t + 1) % kThreads]);
      int owner = (t + 1) % kThreads, i = 0;
      for (int r = 0; r < rounds; r += 3)
        for (int64_t n : sizes) {
          const Tensor& a = mine[i++];
          if (a.numel() != n || a[0].item<float>() != float(owner * 1000 + r)) ++bad;
        }
      mine.clear();
      for (int64_t n : sizes) {  // blocks just cached here are handed out again
        Tensor c = tensor::zeros({n}, dtype(kFloat32));
        if (c.sum().item<float>() != 0.f) ++bad;
      }
    });
  for (auto& th : pool) th.join();
  EXPECT_EQ(bad.load(), 0);
}
