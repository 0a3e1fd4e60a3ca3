// tril/triu (and in place), repeat, roll, flip (src/ops/RearrangeOps.cpp): hand-computed values,
// a float64 reference loop for each op on batched, transposed and sliced inputs, negative
// diagonals/dims/shifts, int and bool dtypes, gradcheck + gradgradcheck, and libtorch's errors.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include "tests/grad_test_util.h"
#include "tests/test_util.h"

#include <functional>
#include <sstream>
#include <string>
#include <vector>

using namespace tensor;
using autograd::variable_list;
using tensor::testing::check;
using tensor::testing::expect_error;
using tensor::testing::random_tensor;

namespace {

using Index = std::vector<int64_t>;

/// Float64 reference: out[idx] = a[src(idx)] (or 0 where src returns an empty index), for
/// every idx of `out_sizes`; a is read through its own strides-independent contiguous copy.
Tensor reference(const Tensor& a, const Index& out_sizes, const std::function<Index(const Index&)>& src) {
  Tensor ac = a.to(kFloat64).contiguous();
  const double* p = ac.data_ptr<double>();
  int64_t n = 1;
  for (int64_t s : out_sizes) n *= s;
  std::vector<double> out(static_cast<size_t>(n));
  Index idx(out_sizes.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t rem = k;
    for (int64_t d = static_cast<int64_t>(out_sizes.size()) - 1; d >= 0; --d) {
      idx[d] = rem % out_sizes[d];
      rem /= out_sizes[d];
    }
    Index s = src(idx);
    if (s.empty() && !idx.empty()) {
      out[k] = 0;
      continue;
    }
    int64_t off = 0;
    for (size_t d = 0; d < s.size(); ++d) off = off * ac.size(static_cast<int64_t>(d)) + s[d];
    out[k] = p[off];
  }
  return tensor::tensor(out, kFloat64).reshape(out_sizes);
}

void expect_same(const Tensor& got, const Tensor& want, ScalarType dtype, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(got.dtype(), dtype);
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(tensor::equal(got.to(kFloat64), want)) << got << "\n" << want;
}

std::string str(IntArrayRef s) {
  std::ostringstream os;
  os << s;
  return os.str();
}
std::string str(ScalarType t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

Index shape(const Tensor& t) { return Index(t.sizes().begin(), t.sizes().end()); }

int64_t mod(int64_t a, int64_t n) { return ((a % n) + n) % n; }

/// Inputs of one shape in several layouts: contiguous, transposed (last two dims) and sliced.
std::vector<std::pair<std::string, Tensor>> layouts(const Index& sizes, unsigned seed, ScalarType dt) {
  std::vector<std::pair<std::string, Tensor>> r;
  auto cast = [&](Tensor t) {
    if (dt == kBool) return t.gt(0);
    if (dt == kInt32 || dt == kInt64) return (t * 3).round().to(dt);
    return t.to(dt);
  };
  r.emplace_back("contiguous", cast(random_tensor(sizes, seed)));
  if (sizes.size() >= 2) {
    Index sw = sizes;
    std::swap(sw[sw.size() - 1], sw[sw.size() - 2]);
    Tensor t = cast(random_tensor(sw, seed + 1)).transpose(-1, -2);
    if (sizes.back() > 1 && sizes[sizes.size() - 2] > 1) EXPECT_FALSE(t.is_contiguous());
    r.emplace_back("transposed", t);
  }
  Index big = sizes;
  big.back() = 2 * big.back() + 1;
  Tensor s = cast(random_tensor(big, seed + 2)).slice(-1, 1, big.back(), 2);
  EXPECT_EQ(shape(s), sizes);
  r.emplace_back("sliced", s);
  return r;
}

const std::vector<ScalarType> kDtypes = {kFloat64, kFloat32, kInt32, kInt64, kBool};

void check_grads(const std::string& name, const std::function<Tensor(const Tensor&)>& f, const Tensor& x0) {
  Tensor x = x0.detach().requires_grad_(true);
  auto fn = [&](const variable_list& v) { return f(v[0]); };
  EXPECT_TRUE(fn({x}).requires_grad()) << name;
  check(name + " gradcheck", [&] { return autograd::gradcheck(fn, {x}, 1e-6, 1e-5, 1e-3); });
  check(name + " gradgradcheck", [&] { return autograd::gradgradcheck(fn, {x}, 1e-6, 1e-5, 1e-3); });
}

// ---------------------------------------------------------------- tril / triu

TEST(TrilTriu, HandComputed) {
  Tensor a = tensor::arange(1, 13, kFloat32).reshape({3, 4});
  expect_same(tensor::tril(a), tensor::tensor(std::vector<double>{1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0}, kFloat64).reshape({3, 4}),
              kFloat32, "tril");
  expect_same(a.triu(1), tensor::tensor(std::vector<double>{0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12}, kFloat64).reshape({3, 4}),
              kFloat32, "triu(1)");
  expect_same(a.tril(-1), tensor::tensor(std::vector<double>{0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0}, kFloat64).reshape({3, 4}),
              kFloat32, "tril(-1)");
  expect_same(a.triu(-2), a.to(kFloat64), kFloat32, "triu(-2) keeps all");
  expect_same(a.tril(5), a.to(kFloat64), kFloat32, "tril(5) keeps all");
  expect_same(a.triu(4), tensor::zeros({3, 4}, kFloat64), kFloat32, "triu(4) keeps none");
}

TEST(TrilTriu, ReferenceLayoutsDtypesBatches) {
  for (const Index& sizes : {Index{4, 5}, Index{5, 3}, Index{2, 3, 4}, Index{2, 1, 3, 3}, Index{0, 3}, Index{3, 0}})
    for (ScalarType dt : kDtypes)
      for (auto& [lay, a] : layouts(sizes, 7, dt))
        for (int64_t k : {-3, -1, 0, 1, 2}) {
          const std::string what = lay + " " + str(sizes) + " " + str(dt) + " k=" + std::to_string(k);
          auto keep = [&](bool lower) {
            return [&, lower](const Index& i) {
              const int64_t r = i[i.size() - 2], c = i.back();
              return (lower ? c - r <= k : c - r >= k) ? i : Index{};
            };
          };
          Tensor lo = reference(a, sizes, keep(true)), up = reference(a, sizes, keep(false));
          expect_same(tensor::tril(a, k), lo, dt, "tril " + what);
          expect_same(tensor::triu(a, k), up, dt, "triu " + what);
          Tensor b = a.clone();
          EXPECT_TRUE(&b.tril_(k) == &b);
          expect_same(b, lo, dt, "tril_ " + what);
          Tensor c = a.clone();
          c.triu_(k);
          expect_same(c, up, dt, "triu_ " + what);
        }
}

TEST(TrilTriu, InPlaceOnView) {
  // tril_ on a transposed view writes through to the base.
  Tensor base = tensor::arange(1, 10, kFloat64).reshape({3, 3});
  Tensor v = base.t();
  v.tril_();
  expect_same(base, tensor::tensor(std::vector<double>{1, 2, 3, 0, 5, 6, 0, 0, 9}, kFloat64).reshape({3, 3}), kFloat64,
              "base after t().tril_()");
}

TEST(TrilTriu, LargeParallel) {
  // Enough rows for several threads; batched and transposed so rows are strided.
  Tensor a = random_tensor({3, 260, 250}, 23).transpose(-1, -2);  // [3, 250, 260]
  for (int64_t k : {-7, 0, 5}) {
    Tensor lo = reference(a, {3, 250, 260}, [&](const Index& i) { return i[2] - i[1] <= k ? i : Index{}; });
    Tensor up = reference(a, {3, 250, 260}, [&](const Index& i) { return i[2] - i[1] >= k ? i : Index{}; });
    expect_same(a.tril(k), lo, kFloat64, "large tril");
    expect_same(a.triu(k), up, kFloat64, "large triu");
    Tensor b = a.clone();  // keeps the transposed strides
    expect_same(b.tril_(k), lo, kFloat64, "large tril_");
  }
}

TEST(TrilTriu, Grad) {
  for (auto& [lay, a] : layouts({3, 4}, 11, kFloat64))
    for (int64_t k : {-1, 0, 2}) {
      check_grads("tril " + lay + " k=" + std::to_string(k), [k](const Tensor& x) { return x.tril(k); }, a);
      check_grads("triu " + lay + " k=" + std::to_string(k), [k](const Tensor& x) { return tensor::triu(x, k); }, a);
      check_grads("tril_ " + lay, [k](const Tensor& x) { return (x * 2).tril_(k); }, a);
      check_grads("triu_ " + lay, [k](const Tensor& x) { return (x * 1).triu_(k); }, a);
    }
  check_grads("tril batched", [](const Tensor& x) { return x.tril(); }, random_tensor({2, 3, 3}, 3));
  // The gradient is the incoming gradient with the dropped triangle zeroed.
  Tensor x = tensor::ones({2, 2}, kFloat64).requires_grad_(true);
  (x.triu() * tensor::arange(1, 5, kFloat64).reshape({2, 2})).sum().backward();
  expect_same(x.grad(), tensor::tensor(std::vector<double>{1, 2, 0, 4}, kFloat64).reshape({2, 2}), kFloat64, "triu grad");
}

TEST(TrilTriu, Errors) {
  expect_error([] { tensor::tril(tensor::ones({3})); }, {"tril", "at least 2 dimensions", "[3]"});
  expect_error([] { tensor::ones({}).triu(); }, {"triu", "at least 2 dimensions", "[]"});
  expect_error([] { Tensor t = tensor::ones({4}, kInt32); t.tril_(); }, {"tril_", "[4]", "int32"});
  expect_error([] { Tensor t = tensor::ones({2, 2}, kFloat64).requires_grad_(true); t.triu_(); },
               {"triu_", "leaf Variable that requires grad"});
}

// ---------------------------------------------------------------- repeat

TEST(Repeat, HandComputed) {
  Tensor a = tensor::tensor(std::vector<double>{1, 2, 3}, kFloat64);
  expect_same(a.repeat({2}), tensor::tensor(std::vector<double>{1, 2, 3, 1, 2, 3}, kFloat64), kFloat64, "[3] x 2");
  expect_same(a.repeat({2, 1}), tensor::tensor(std::vector<double>{1, 2, 3, 1, 2, 3}, kFloat64).reshape({2, 3}),
              kFloat64, "leading dim");
  Tensor m = tensor::tensor(std::vector<double>{1, 2, 3, 4}, kFloat64).reshape({2, 2});
  expect_same(m.repeat({1, 2}), tensor::tensor(std::vector<double>{1, 2, 1, 2, 3, 4, 3, 4}, kFloat64).reshape({2, 4}),
              kFloat64, "[2, 2] x [1, 2]");
  EXPECT_EQ(shape(m.repeat({0, 3})), (Index{0, 6}));
  EXPECT_EQ(shape(tensor::ones({}).repeat({})), Index{});
  EXPECT_EQ(shape(tensor::ones({}).repeat({2, 3})), (Index{2, 3}));
  // Always a copy, even with all repeats 1.
  Tensor r = m.repeat({1, 1});
  r.fill_(0);
  EXPECT_EQ(m.sum().item<double>(), 10.0);
}

TEST(Repeat, Reference) {
  for (const Index& sizes : {Index{2, 3}, Index{3, 1, 2}, Index{4, 0}})
    for (const Index& reps : {Index{1, 1, 1}, Index{2, 1, 3}, Index{2, 3, 2, 1}, Index{1, 0, 2}})
      for (ScalarType dt : kDtypes)
        for (auto& [lay, a] : layouts(sizes, 5, dt)) {
          if (reps.size() < sizes.size()) continue;
          const size_t pad = reps.size() - sizes.size();
          Index out;
          for (size_t d = 0; d < reps.size(); ++d) out.push_back(reps[d] * (d < pad ? 1 : sizes[d - pad]));
          Tensor want = reference(a, out, [&](const Index& i) {
            Index s;
            for (size_t d = pad; d < i.size(); ++d) s.push_back(i[d] % sizes[d - pad]);
            return s;
          });
          expect_same(tensor::repeat(a, reps), want, dt,
                      "repeat " + lay + " " + str(sizes) + " by " + str(reps));
        }
}

TEST(Repeat, Grad) {
  for (auto& [lay, a] : layouts({2, 3}, 13, kFloat64)) {
    check_grads("repeat " + lay, [](const Tensor& x) { return x.repeat({2, 1, 2}); }, a);
    check_grads("repeat ones " + lay, [](const Tensor& x) { return x.repeat({1, 1}); }, a);
  }
  // Each element is used r0 * r1 times.
  Tensor x = tensor::ones({2}, kFloat64).requires_grad_(true);
  x.repeat({3, 2}).sum().backward();
  expect_same(x.grad(), tensor::full({2}, 6.0, kFloat64), kFloat64, "repeat grad");
}

TEST(Repeat, Errors) {
  expect_error([] { tensor::ones({2, 3}).repeat({2}); },
               {"repeat", "can not be smaller than number of dimensions", "[2]", "[2, 3]", "float32"});
  expect_error([] { tensor::ones({2}).repeat({-1}); }, {"repeat", "non-negative", "[-1]", "[2]"});
}

// ---------------------------------------------------------------- roll

TEST(Roll, HandComputed) {
  Tensor a = tensor::arange(1, 9, kInt64).reshape({4, 2});
  // Flattened: 1..8 rolled by 1 -> 8,1,...,7, shape kept.
  expect_same(tensor::roll(a, {1}), tensor::tensor(std::vector<double>{8, 1, 2, 3, 4, 5, 6, 7}, kFloat64).reshape({4, 2}),
              kInt64, "flattened");
  expect_same(a.roll({1}, {0}), tensor::tensor(std::vector<double>{7, 8, 1, 2, 3, 4, 5, 6}, kFloat64).reshape({4, 2}),
              kInt64, "dim 0");
  expect_same(a.roll({-1}, {0}), tensor::tensor(std::vector<double>{3, 4, 5, 6, 7, 8, 1, 2}, kFloat64).reshape({4, 2}),
              kInt64, "dim 0 by -1");
  expect_same(a.roll({2, 1}, {0, 1}), tensor::tensor(std::vector<double>{6, 5, 8, 7, 2, 1, 4, 3}, kFloat64).reshape({4, 2}),
              kInt64, "two dims");
  expect_same(a.roll({9}, {-2}), a.roll({1}, {0}).to(kFloat64), kInt64, "shift past the size wraps");
}

TEST(Roll, Reference) {
  for (const Index& sizes : {Index{5, 3}, Index{2, 3, 4}, Index{0, 3}})
    for (ScalarType dt : kDtypes)
      for (auto& [lay, a] : layouts(sizes, 9, dt)) {
        const int64_t nd = static_cast<int64_t>(sizes.size());
        const std::vector<std::pair<Index, Index>> cases = {
            {{2}, {0}}, {{-1}, {-1}}, {{7, -2}, {0, nd - 1}}, {{1, 1}, {1, 1}}, {{0}, {1}}};
        for (auto& [shifts, dims] : cases) {
          Tensor want = reference(a, sizes, [&](const Index& i) {
            Index s = i;
            for (size_t k = 0; k < dims.size(); ++k) {
              const int64_t d = dims[k] < 0 ? dims[k] + nd : dims[k];
              s[d] = mod(s[d] - shifts[k], sizes[d]);
            }
            return s;
          });
          expect_same(tensor::roll(a, shifts, dims), want, dt,
                      "roll " + lay + " " + str(sizes) + " " + str(shifts) + " " +
                          str(dims));
        }
        // Flattened roll against a roll of the flat contiguous copy.
        int64_t n = 1;
        for (int64_t s : sizes) n *= s;
        Tensor flat = a.contiguous().reshape({n});
        for (int64_t sh : {3, -4}) {
          Tensor want = reference(flat, {n}, [&](const Index& i) { return Index{mod(i[0] - sh, n)}; }).reshape(sizes);
          expect_same(a.roll({sh}), want, dt, "flat roll " + lay + " " + std::to_string(sh));
        }
      }
}

TEST(Roll, Grad) {
  for (auto& [lay, a] : layouts({3, 4}, 17, kFloat64)) {
    check_grads("roll " + lay, [](const Tensor& x) { return x.roll({1, -2}, {0, 1}); }, a);
    check_grads("roll flat " + lay, [](const Tensor& x) { return tensor::roll(x, {5}); }, a);
  }
}

TEST(Roll, Errors) {
  expect_error([] { tensor::ones({2, 3}).roll({1, 2}, {0}); }, {"roll", "shifts and dimensions must align", "[2, 3]"});
  expect_error([] { tensor::ones({2, 3}).roll({1, 2}); }, {"roll", "shifts: 2, dims: 0"});
  expect_error([] { tensor::ones({2, 3}).roll({}, {}); }, {"roll", "`shifts` required"});
  expect_error([] { tensor::ones({2, 3}).roll({1}, {2}); }, {"roll", "dim 2", "out of range", "[2, 3]"});
}

// ---------------------------------------------------------------- flip

TEST(Flip, HandComputed) {
  Tensor a = tensor::arange(1, 7, kFloat32).reshape({2, 3});
  expect_same(a.flip({1}), tensor::tensor(std::vector<double>{3, 2, 1, 6, 5, 4}, kFloat64).reshape({2, 3}), kFloat32,
              "flip dim 1");
  expect_same(tensor::flip(a, {0, -1}), tensor::tensor(std::vector<double>{6, 5, 4, 3, 2, 1}, kFloat64).reshape({2, 3}),
              kFloat32, "flip both");
  Tensor same = a.flip({});
  expect_same(same, a.to(kFloat64), kFloat32, "no dims");
  same.fill_(0);  // a copy, not a view
  EXPECT_EQ(a.sum().item<double>(), 21.0);
  expect_same(tensor::scalar_tensor(5.0, kFloat64).flip({0}), tensor::scalar_tensor(5.0, kFloat64), kFloat64, "0-dim");
}

TEST(Flip, ReferenceLayoutsDtypes) {
  for (const Index& sizes : {Index{7}, Index{4, 5}, Index{2, 3, 4}, Index{3, 0}, Index{1, 300}})
    for (ScalarType dt : {kFloat64, kFloat32, kFloat16, kInt32, kInt64, kInt8, kBool})
      for (auto& [lay, a] : layouts(sizes, 3, dt)) {
        const int64_t nd = static_cast<int64_t>(sizes.size());
        std::vector<Index> dimsets = {{0}, {-1}};
        if (nd >= 2) dimsets.push_back({-2});
        if (nd >= 3) dimsets.push_back({2, 0});
        if (nd >= 2) dimsets.push_back({1, 0});
        for (const Index& dims : dimsets) {
          Tensor want = reference(a, sizes, [&](const Index& i) {
            Index s = i;
            for (int64_t d : dims) {
              const int64_t w = d < 0 ? d + nd : d;
              s[w] = sizes[w] - 1 - s[w];
            }
            return s;
          });
          expect_same(a.flip(dims), want, dt,
                      "flip " + lay + " " + str(sizes) + " " + str(dims));
        }
      }
}

TEST(Flip, LargeParallel) {
  // Large enough for several threads: the row chunking must cover every element exactly once.
  Tensor a = random_tensor({257, 131}, 21).slice(1, 0, 131);
  Tensor f = a.flip({0, 1});
  Tensor want = reference(a, {257, 131}, [](const Index& i) { return Index{256 - i[0], 130 - i[1]}; });
  expect_same(f, want, kFloat64, "large");
  Tensor t = random_tensor({300, 200}, 22).t();  // 200 x 300, transposed
  expect_same(t.flip({1}), reference(t, {200, 300}, [](const Index& i) { return Index{i[0], 299 - i[1]}; }), kFloat64,
              "large transposed");
}

TEST(Flip, LastDimOfEveryLength) {
  // Along the last dim 4- and 8-byte elements are reversed by whole vectors (up to 16 lanes),
  // then one at a time: every row length from 1 to 70 reaches both parts and every remainder.
  for (ScalarType dt : {kFloat32, kInt64})
    for (int64_t n = 1; n <= 70; ++n) {
      Tensor a = random_tensor({3, n}, 23).to(dt);
      expect_same(a.flip({1}), reference(a, {3, n}, [n](const Index& i) { return Index{i[0], n - 1 - i[1]}; }), dt,
                  "flip length " + std::to_string(n));
    }
}

TEST(Flip, Grad) {
  for (auto& [lay, a] : layouts({3, 4}, 19, kFloat64)) {
    check_grads("flip " + lay, [](const Tensor& x) { return x.flip({0}); }, a);
    check_grads("flip both " + lay, [](const Tensor& x) { return tensor::flip(x, {-1, 0}); }, a);
  }
  Tensor x = tensor::zeros({3}, kFloat64).requires_grad_(true);
  (x.flip({0}) * tensor::tensor(std::vector<double>{1, 2, 3}, kFloat64)).sum().backward();
  expect_same(x.grad(), tensor::tensor(std::vector<double>{3, 2, 1}, kFloat64), kFloat64, "flip grad");
  Tensor i = tensor::ones({3}, kInt64);
  EXPECT_FALSE(i.flip({0}).requires_grad());
}

TEST(Flip, Errors) {
  expect_error([] { tensor::ones({2, 3}).flip({2}); }, {"flip", "dim 2", "out of range", "[2, 3]", "float32"});
  expect_error([] { tensor::ones({2, 3}).flip({1, -1}); }, {"flip", "dim 1 appears multiple times", "[2, 3]"});
}

// ---------------------------------------------------------------- complex

// The rows are written as for real numbers (holomorphic): the table's conjugate convention
// must give the right complex gradients, on a transposed input and on a lazily conjugated one.
TEST(Rearrange, ComplexGrad) {
  Tensor re = random_tensor({4, 3}, 23), im = random_tensor({4, 3}, 24);
  Tensor z0 = (re.to(kComplex128) + im.to(kComplex128) * complex128(0, 1)).t();  // [3, 4], transposed
  for (bool conj : {false, true}) {
    const std::string how = conj ? " conj" : " transposed";
    auto run = [&](const std::string& name, const std::function<Tensor(const Tensor&)>& f) {
      Tensor z = z0.detach().requires_grad_(true);
      auto fn = [&](const variable_list& v) { return f(conj ? v[0].conj() : v[0]); };
      check(name + how + " gradcheck", [&] { return autograd::gradcheck(fn, {z}); });
      check(name + how + " gradgradcheck", [&] { return autograd::gradgradcheck(fn, {z}); });
    };
    run("tril", [](const Tensor& x) { return x.tril(1); });
    run("triu", [](const Tensor& x) { return x.triu(-1); });
    run("tril_", [](const Tensor& x) { return (x * 1).tril_(); });
    run("flip", [](const Tensor& x) { return x.flip({0, 1}); });
    run("repeat", [](const Tensor& x) { return x.repeat({2, 1}); });
    run("roll", [](const Tensor& x) { return x.roll({1, -1}, {0, 1}); });
  }
}

// ---------------------------------------------------------------- meta tensors

// Every rearranging op runs its front end alone on meta tensors: the right shape and dtype,
// and no data work (a meta tensor has no memory, so a kernel touching it would throw; the
// sizes here would need 40 GB).
TEST(Rearrange, MetaShapesWithoutData) {
  const TensorOptions meta = TensorOptions().dtype(kFloat32).device(kMeta);
  Tensor m = tensor::empty({100000, 100000}, meta);
  Tensor b = tensor::empty({2, 3, 4}, meta.dtype(kInt64));
  auto expect_meta = [](const Tensor& t, const Index& sizes, ScalarType dt, const std::string& what) {
    SCOPED_TRACE(what);
    EXPECT_TRUE(t.is_meta());
    EXPECT_EQ(shape(t), sizes);
    EXPECT_EQ(t.dtype(), dt);
    EXPECT_THROW(t.data_ptr(), tensor::Error);
  };
  expect_meta(m.tril(3), {100000, 100000}, kFloat32, "tril");
  expect_meta(tensor::triu(b, -1), {2, 3, 4}, kInt64, "triu");
  expect_meta(m.t().tril_(), {100000, 100000}, kFloat32, "tril_");
  expect_meta(b.triu_(2), {2, 3, 4}, kInt64, "triu_");
  expect_meta(m.flip({0, -1}), {100000, 100000}, kFloat32, "flip");
  expect_meta(b.flip({}), {2, 3, 4}, kInt64, "flip no dims");
  expect_meta(b.repeat({2, 1, 3, 2}), {2, 2, 9, 8}, kInt64, "repeat");
  expect_meta(m.roll({5, -7}, {0, 1}), {100000, 100000}, kFloat32, "roll");
  expect_meta(tensor::roll(b, {5}), {2, 3, 4}, kInt64, "roll flattened");
  // The same checks as on the CPU.
  expect_error([&] { tensor::empty({3}, meta).tril(); }, {"tril", "at least 2 dimensions", "[3]"});
  expect_error([&] { b.flip({1, -2}); }, {"flip", "dim 1 appears multiple times"});
  expect_error([&] { b.repeat({2}); }, {"repeat", "can not be smaller than number of dimensions"});
  // Recorded on meta tensors too (shapes only): the rows' nodes, and a meta gradient.
  Tensor x = tensor::empty({4, 5}, meta).requires_grad_(true);
  Tensor y = x.tril(1).flip({0}).triu();
  EXPECT_EQ(y.grad_fn()->name(), "TriuBackward0");
  y.sum().backward();
  expect_meta(x.grad(), {4, 5}, kFloat32, "meta gradient");
}

}  // namespace
