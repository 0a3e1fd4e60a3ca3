// where, clamp, threshold_backward and the indexing ops (index_select, gather, scatter,
// scatter_add, index_add, masked_fill) on CUDA against the CPU, in every dtype their CUDA
// kernels serve, on contiguous, non-contiguous and broadcast inputs, with negative dims; autograd
// through gather, where and relu on CUDA against the CPU's gradients. Each case skips without a
// CUDA device.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <string>
#include <vector>

#include "src/ops/ElementwiseOps.h"
#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::expect_error;
using tensor::testing::random_input;

namespace {

const std::vector<ScalarType>& kReal = tensor::testing::kRealDtypes;
const std::vector<ScalarType> kMoved = {kBool, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};
const std::vector<ScalarType> kAdded = {kBool, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};
const std::vector<ScalarType> kFloating = {kFloat16, kBFloat16, kFloat32, kFloat64};

std::string name(const std::string& what, ScalarType dt) { return what + " " + std::string(to_string(dt)); }

// Exact: these kernels move values, select them or apply the CPU's functor.
void expect_same(const Tensor& cuda_result, const Tensor& cpu, const std::string& what) {
  ASSERT_TRUE(cuda_result.is_cuda()) << what;
  Tensor got = cuda_result.cpu();
  ASSERT_EQ(got.dtype(), cpu.dtype()) << what;
  ASSERT_EQ(got.sizes(), cpu.sizes()) << what;
  EXPECT_TRUE(tensor::equal(got, cpu) || tensor::allclose(got.to(kFloat64), cpu.to(kFloat64), 0, 0, true))
      << what << "\ncuda:\n" << got << "\ncpu:\n" << cpu;
}

// Sums in a different order (atomic adds): a few roundings apart for the floating types.
void expect_close(const Tensor& cuda_result, const Tensor& cpu, const std::string& what) {
  ASSERT_TRUE(cuda_result.is_cuda()) << what;
  Tensor got = cuda_result.cpu();
  ASSERT_EQ(got.dtype(), cpu.dtype()) << what;
  double rtol = 0, atol = 0;
  switch (cpu.dtype()) {
    case kFloat32: rtol = 1e-5, atol = 1e-5; break;
    case kFloat64: rtol = 1e-12, atol = 1e-12; break;
    case kFloat16: rtol = 1e-2, atol = 2e-2; break;
    case kBFloat16: rtol = 5e-2, atol = 1e-1; break;
    default: break;
  }
  EXPECT_TRUE(tensor::allclose(got.to(kFloat64), cpu.to(kFloat64), rtol, atol, true))
      << what << "\ncuda:\n" << got << "\ncpu:\n" << cpu;
}

Tensor random_mask(IntArrayRef shape, uint64_t seed) { return random_input(shape, kFloat64, 0, 1, seed).gt(0.5); }
Tensor random_index(IntArrayRef shape, int64_t size, uint64_t seed, ScalarType dt = kInt64) {
  return random_input(shape, kFloat64, -0.49, static_cast<double>(size) - 0.51, seed).to(dt);
}
// Distinct indices along `dim` in each line: the first k of a random permutation of [0, n).
Tensor distinct_index(std::vector<int64_t> shape, int64_t dim, int64_t n, int64_t k, uint64_t seed) {
  shape[static_cast<size_t>(dim)] = n;
  return tensor::argsort(random_input(shape, kFloat64, 0, 1, seed), dim).narrow(dim, 0, k).contiguous();
}
Tensor dev(const Tensor& t) { return t.cuda(); }
// The same values on the device as a non-contiguous view (a transposed copy, transposed back).
Tensor on_device_t(const Tensor& t) { return t.transpose(0, -1).contiguous().cuda().transpose(0, -1); }

}  // namespace

TEST(CudaWhere, MatchesCpu) {
  REQUIRE_CUDA();
  for (ScalarType dt : kReal) {
    Tensor c = random_mask({33, 17}, 1), a = random_input({33, 17}, dt, -9, 9, 2), b = random_input({33, 17}, dt, -9, 9, 3);
    expect_same(tensor::where(dev(c), dev(a), dev(b)), tensor::where(c, a, b), name("where contiguous", dt));
    expect_same(tensor::where(on_device_t(c), on_device_t(a), dev(b)), tensor::where(c, a, b), name("where transposed", dt));
    Tensor cb = random_mask({33, 1}, 4), ab = random_input({17}, dt, -9, 9, 5);
    expect_same(tensor::where(dev(cb), dev(ab), dev(b)), tensor::where(cb, ab, b), name("where broadcast", dt));
    Tensor s = tensor::full({}, 1, TensorOptions(dt));
    expect_same(tensor::where(dev(c), s, dev(b)), tensor::where(c, s, b), name("where CPU scalar a", dt));
    expect_same(tensor::where(dev(c), dev(a), s), tensor::where(c, a, s), name("where CPU scalar b", dt));
  }
  // Mixed dtypes promote; a Scalar operand (relu's backward with a graph: where(y <= 0, 0.0, g)).
  Tensor c = random_mask({100}, 6), i = tensor::arange(100, TensorOptions(kInt32)), f = random_input({100}, kFloat32, -1, 1, 7);
  expect_same(tensor::where(dev(c), dev(i), dev(f)), tensor::where(c, i, f), "where int32/float32");
  expect_same(tensor::where(dev(c), 0.0, dev(f)), tensor::where(c, 0.0, f), "where Scalar a");
  expect_error([&] { (void)tensor::where(tensor::zeros({100}, TensorOptions(kInt32).device(kCUDA)), dev(f), dev(f)); },
               {"where", "bool"});
  Tensor z = tensor::zeros({100}, TensorOptions(kComplex64).device(kCUDA));
  expect_error([&] { (void)tensor::where(dev(c), z, z); }, {"where", "complex64"});
}

TEST(CudaClamp, MatchesCpuInEveryForm) {
  REQUIRE_CUDA();
  for (ScalarType dt : kReal) {
    if (dt == kBool) continue;
    const bool fl = is_floating_point(dt);
    const double lo_hi = dt == kUInt8 ? 0 : -8;
    Tensor a = random_input({33, 17}, dt, lo_hi, 8, 11);
    const Scalar lo = fl ? Scalar(-1.5) : Scalar(int64_t(dt == kUInt8 ? 2 : -3)), hi = fl ? Scalar(2.25) : Scalar(int64_t(4));
    expect_same(tensor::clamp(dev(a), lo, hi), tensor::clamp(a, lo, hi), name("clamp", dt));
    expect_same(tensor::clamp(on_device_t(a), lo, std::nullopt), tensor::clamp(a, lo, std::nullopt), name("clamp min transposed", dt));
    expect_same(tensor::clamp(dev(a), std::nullopt, hi), tensor::clamp(a, std::nullopt, hi), name("clamp max", dt));
    Tensor out = tensor::empty({33, 17}, TensorOptions(dt).device(kCUDA));
    tensor::clamp_out(out, dev(a), lo, hi);
    expect_same(out, tensor::clamp(a, lo, hi), name("clamp_out", dt));
    Tensor x = on_device_t(a);
    x.clamp_(lo, hi);
    expect_same(x, tensor::clamp(a, lo, hi), name("clamp_ transposed", dt));
  }
  Tensor nan = tensor::tensor(std::vector<double>{NAN, -5, 5, 0.5}, kFloat32);
  expect_same(tensor::clamp(dev(nan), -1, 1), tensor::clamp(nan, -1, 1), "clamp keeps NaN");
  expect_error([] { (void)tensor::clamp(tensor::ones({3}, TensorOptions(kInt8).device(kCUDA)), 1000, std::nullopt); },
               {"clamp", "1000", "int8"});
}

TEST(CudaThresholdBackward, MatchesCpu) {
  REQUIRE_CUDA();
  for (ScalarType dt : kFloating) {
    Tensor g = random_input({33, 17}, dt, -2, 2, 21), y = random_input({33, 17}, dt, -2, 2, 22);
    y.view({-1}).narrow(0, 0, 1).fill_(NAN);
    for (double th : {0.0, 0.5}) {
      auto tb = [th](const Tensor& gr, const Tensor& self) { return ops::threshold_backward_op()(gr, self, th); };
      expect_same(tb(dev(g), dev(y)), tb(g, y), name("threshold_backward contiguous", dt));
      expect_same(tb(on_device_t(g), dev(y)), tb(g, y), name("threshold_backward transposed", dt));
      Tensor yb = random_input({17}, dt, -2, 2, 23);
      expect_same(tb(dev(g), dev(yb)), tb(g, yb), name("threshold_backward broadcast", dt));
    }
  }
}

TEST(CudaIndexSelect, MatchesCpu) {
  REQUIRE_CUDA();
  for (ScalarType dt : kMoved) {
    Tensor self = random_input({6, 7, 8}, dt, -9, 9, 31);
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      const int64_t size = self.size(dim < 0 ? dim + 3 : dim);
      for (ScalarType it : {kInt32, kInt64}) {
        Tensor index = random_index({11}, size, 32 + dim, it);
        const std::string what = name("index_select dim " + std::to_string(dim) + " " + to_string(it), dt);
        expect_same(tensor::index_select(dev(self), dim, dev(index)), tensor::index_select(self, dim, index), what);
        expect_same(tensor::index_select(on_device_t(self), dim, dev(index)), tensor::index_select(self, dim, index),
                    what + " transposed");
        Tensor longer = random_index({22}, size, 33 + dim, it);
        expect_same(tensor::index_select(dev(self), dim, dev(longer).slice(0, 0, 22, 2)),
                    tensor::index_select(self, dim, longer.slice(0, 0, 22, 2)), what + " strided index");
      }
    }
  }
}

TEST(CudaGather, MatchesCpu) {
  REQUIRE_CUDA();
  for (ScalarType dt : kMoved) {
    Tensor self = random_input({6, 7, 8}, dt, -9, 9, 41);
    for (int64_t dim : {0, 1, 2, -1, -2}) {
      const int64_t d = dim < 0 ? dim + 3 : dim;
      std::vector<int64_t> ishape = {4, 5, 6};
      ishape[static_cast<size_t>(d)] = 9;
      Tensor index = random_index(ishape, self.size(d), 42 + d);
      const std::string what = name("gather dim " + std::to_string(dim), dt);
      expect_same(tensor::gather(dev(self), dim, dev(index)), tensor::gather(self, dim, index), what);
      expect_same(tensor::gather(on_device_t(self), dim, on_device_t(index)), tensor::gather(self, dim, index), what + " transposed");
      // An expanded index (stride 0 along dim 0).
      std::vector<int64_t> one = ishape;
      one[0] = 1;
      Tensor ex = random_index(one, self.size(d), 43 + d).expand(ishape);
      expect_same(tensor::gather(dev(self), dim, dev(ex.contiguous()).narrow(0, 0, 1).expand(ishape)),
                  tensor::gather(self, dim, ex), what + " expanded index");
    }
  }
}

TEST(CudaScatter, DistinctIndicesMatchCpu) {
  REQUIRE_CUDA();
  for (ScalarType dt : kMoved) {
    Tensor self = random_input({6, 7, 8}, dt, -9, 9, 51);
    for (int64_t dim : {0, 2, -2}) {
      const int64_t d = dim < 0 ? dim + 3 : dim;
      Tensor index = distinct_index({5, 6, 7}, d, self.size(d), 4, 52 + d);
      Tensor src = random_input({6, 7, 8}, dt, -9, 9, 53 + d);
      const std::string what = name("scatter dim " + std::to_string(dim), dt);
      expect_same(tensor::scatter(dev(self), dim, dev(index), dev(src)), tensor::scatter(self, dim, index, src), what);
      Tensor s = on_device_t(self);
      s.scatter_(dim, dev(index), on_device_t(src));
      expect_same(s, tensor::scatter(self, dim, index, src), what + " in place, transposed");
      expect_same(dev(self).scatter(dim, dev(index), Scalar(1)), self.scatter(dim, index, Scalar(1)), what + " value");
    }
  }
}

// With repeated indices one of the written values wins (which one is unspecified, as libtorch).
TEST(CudaScatter, RepeatedIndicesWriteOneOfTheValues) {
  REQUIRE_CUDA();
  Tensor self = tensor::zeros({1, 4}, TensorOptions(kFloat32));
  Tensor index = tensor::tensor(std::vector<int64_t>{2, 2, 2, 0}, kInt64).view({1, 4});
  Tensor src = tensor::tensor(std::vector<float>{10, 20, 30, 5}, kFloat32).view({1, 4});
  Tensor r = tensor::scatter(dev(self), 1, dev(index), dev(src)).cpu();
  const float v = r.view({-1}).narrow(0, 2, 1).item<float>();
  EXPECT_TRUE(v == 10 || v == 20 || v == 30) << r;
  EXPECT_EQ(r.view({-1}).narrow(0, 0, 1).item<float>(), 5);
  EXPECT_EQ(r.view({-1}).narrow(0, 1, 1).item<float>(), 0);
}

TEST(CudaScatterAdd, MatchesCpu) {
  REQUIRE_CUDA();
  for (ScalarType dt : kAdded) {
    Tensor self = random_input({6, 7, 8}, dt, -4, 4, 61);
    for (int64_t dim : {0, 1, -1}) {
      const int64_t d = dim < 0 ? dim + 3 : dim;
      std::vector<int64_t> ishape = {5, 6, 7};
      ishape[static_cast<size_t>(d)] = 12;  // repeated indices on purpose
      Tensor index = random_index(ishape, self.size(d), 62 + d);
      std::vector<int64_t> sshape = ishape;
      sshape[0] += 1;
      Tensor src = random_input(sshape, dt, -4, 4, 63 + d);
      const std::string what = name("scatter_add dim " + std::to_string(dim), dt);
      expect_close(tensor::scatter_add(dev(self), dim, dev(index), dev(src)), tensor::scatter_add(self, dim, index, src), what);
      Tensor s = on_device_t(self);
      s.scatter_add_(dim, on_device_t(index), dev(src));
      expect_close(s, tensor::scatter_add(self, dim, index, src), what + " in place, transposed");
    }
  }
}

TEST(CudaIndexAdd, MatchesCpu) {
  REQUIRE_CUDA();
  for (ScalarType dt : kAdded) {
    Tensor self = random_input({6, 7, 8}, dt, -4, 4, 71);
    const Scalar alpha = dt == kBool ? Scalar(true) : is_floating_point(dt) ? Scalar(0.5) : Scalar(int64_t(3));
    for (int64_t dim : {0, 1, 2, -1}) {
      const int64_t d = dim < 0 ? dim + 3 : dim;
      for (ScalarType it : {kInt32, kInt64}) {
        Tensor index = random_index({10}, self.size(d), 72 + d, it);
        std::vector<int64_t> sshape = {6, 7, 8};
        sshape[static_cast<size_t>(d)] = 10;
        Tensor source = random_input(sshape, dt, -4, 4, 73 + d);
        const std::string what = name("index_add dim " + std::to_string(dim) + " " + to_string(it), dt);
        expect_close(tensor::index_add(dev(self), dim, dev(index), dev(source), alpha),
                     tensor::index_add(self, dim, index, source, alpha), what);
        Tensor s = on_device_t(self);
        s.index_add_(dim, dev(index), on_device_t(source), alpha);
        expect_close(s, tensor::index_add(self, dim, index, source, alpha), what + " in place, transposed");
      }
    }
  }
}

TEST(CudaMaskedFill, MatchesCpu) {
  REQUIRE_CUDA();
  for (ScalarType dt : kReal) {
    Tensor self = random_input({9, 13}, dt, -9, 9, 81);
    Tensor mask = random_mask({9, 13}, 82), row = random_mask({13}, 83);
    const Scalar v = dt == kBool ? Scalar(true) : Scalar(int64_t(3));
    expect_same(dev(self).masked_fill(dev(mask), v), self.masked_fill(mask, v), name("masked_fill", dt));
    expect_same(on_device_t(self).masked_fill(dev(row), v), self.masked_fill(row, v), name("masked_fill broadcast mask", dt));
    Tensor s = on_device_t(self);
    s.masked_fill_(dev(mask), v);
    expect_same(s, self.masked_fill(mask, v), name("masked_fill_ transposed", dt));
  }
  Tensor f = random_input({4, 5}, kFloat32, -1, 1, 84);
  Tensor m = random_mask({4, 5}, 85);
  expect_same(dev(f).masked_fill(dev(m), -INFINITY), f.masked_fill(m, -INFINITY), "masked_fill -inf");
  expect_error([] { (void)tensor::ones({3}, TensorOptions(kInt8).device(kCUDA)).masked_fill(
                        tensor::ones({3}, TensorOptions(kBool).device(kCUDA)), 1000); },
               {"masked_fill", "1000"});
}

// Out-of-range indices raise the CPU's error (checked on the device before anything is
// written), and self is left as it was.
TEST(CudaIndexing, OutOfRangeIndicesRaiseAndWriteNothing) {
  REQUIRE_CUDA();
  Tensor self = tensor::arange(12, TensorOptions(kFloat32)).view({3, 4}).cuda();
  Tensor bad = tensor::tensor(std::vector<int64_t>{0, 1, 7, 2}, kInt64).view({1, 4}).cuda();
  expect_error([&] { (void)tensor::gather(self, 0, bad); }, {"gather", "index 7", "dim 0", "size 3"});
  Tensor neg = tensor::tensor(std::vector<int64_t>{0, -1}, kInt64).cuda();
  expect_error([&] { (void)tensor::index_select(self, 1, neg); }, {"index_select", "index -1", "dim 1", "size 4"});
  expect_error([&] { (void)tensor::index_select(self, 1, neg.to(kInt32)); }, {"index_select", "index -1"});
  Tensor before = self.cpu();
  expect_error([&] { self.scatter_add_(0, bad, tensor::ones({1, 4}, TensorOptions(kFloat32).device(kCUDA))); },
               {"scatter_add_", "index 7"});
  expect_error([&] { self.index_add_(0, neg, tensor::ones({2, 4}, TensorOptions(kFloat32).device(kCUDA))); },
               {"index_add_", "index -1"});
  EXPECT_TRUE(tensor::equal(self.cpu(), before));
  // Complex has no CUDA add kernel yet.
  Tensor z = tensor::zeros({3, 4}, TensorOptions(kComplex64).device(kCUDA));
  expect_error([&] { z.scatter_add_(0, bad.clamp(0, 2), z.narrow(0, 0, 1)); }, {"scatter_add_", "complex64"});
}

TEST(CudaAutograd, GatherAndWhereGradientsMatchCpu) {
  REQUIRE_CUDA();
  Tensor x0 = random_input({5, 6}, kFloat64, -2, 2, 91), idx = random_index({7, 6}, 5, 92);
  Tensor g = random_input({7, 6}, kFloat64, -1, 1, 93);
  auto grad_of = [&](const Tensor& x_in, const Tensor& i, const Tensor& go) {
    Tensor x = x_in.detach().requires_grad_();
    return autograd::grad({tensor::gather(x, -2, i)}, {x}, {go})[0];
  };
  Tensor gc = grad_of(x0.cuda(), idx.cuda(), g.cuda());
  expect_close(gc, grad_of(x0, idx, g), "gather backward");

  Tensor c = random_mask({5, 6}, 94), a0 = random_input({5, 6}, kFloat64, -2, 2, 95), b0 = random_input({5, 6}, kFloat64, -2, 2, 96);
  Tensor gw = random_input({5, 6}, kFloat64, -1, 1, 97);
  auto where_grads = [&](const Tensor& cond, const Tensor& a_in, const Tensor& b_in, const Tensor& go) {
    Tensor a = a_in.detach().requires_grad_(), b = b_in.detach().requires_grad_();
    return autograd::grad({tensor::where(cond, a, b)}, {a, b}, {go});
  };
  auto cuda_g = where_grads(c.cuda(), a0.cuda(), b0.cuda(), gw.cuda());
  auto cpu_g = where_grads(c, a0, b0, gw);
  expect_close(cuda_g[0], cpu_g[0], "where backward a");
  expect_close(cuda_g[1], cpu_g[1], "where backward b");
}

// relu's backward: the fused threshold_backward without a graph, where with create_graph.
TEST(CudaAutograd, ReluBackwardMatchesCpu) {
  REQUIRE_CUDA();
  for (ScalarType dt : kFloating) {
    Tensor x0 = random_input({9, 13}, dt, -2, 2, 101), g = random_input({9, 13}, dt, -1, 1, 102);
    x0.view({-1}).narrow(0, 0, 1).fill_(0);
    auto grad_of = [&](const Tensor& x_in, const Tensor& go, bool create_graph) {
      Tensor x = x_in.detach().requires_grad_();
      return autograd::grad({tensor::relu(x)}, {x}, {go}, std::nullopt, create_graph)[0].detach();
    };
    for (bool cg : {false, true}) {
      expect_same(grad_of(x0.cuda(), g.cuda(), cg), grad_of(x0, g, cg), name(cg ? "relu backward (graph)" : "relu backward", dt));
      expect_same(grad_of(on_device_t(x0), g.cuda(), cg), grad_of(x0, g, cg), name("relu backward transposed", dt));
    }
  }
}
