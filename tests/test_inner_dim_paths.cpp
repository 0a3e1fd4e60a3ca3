// The CPU fast paths of issue 22: gather and scatter along the last dim (Note [Inner-dim gather
// and scatter] in kernels/cpu/IndexKernels.cpp), cat by output rows (Note [Cat by output rows] in
// kernels/cpu/CatKernels.cpp, also of narrow views), index and index_put_ of whole rows (Note
// [index_put_ by column blocks] in kernels/cpu/IndexKernels.cpp) and the fused cross_entropy
// (Note [Fused cross_entropy] in src/nn/Loss.cpp), each against plain reference loops in float64
// (sizes above the parallel grain, so the threaded loops run).
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace tensor;
namespace F = tensor::nn::functional;

namespace {

std::vector<double> values(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}
std::vector<int64_t> ints(const Tensor& t) {
  Tensor c = t.to(kInt64).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

}  // namespace

TEST(InnerDimPaths, GatherLastDimMatchesLoops) {
  manual_seed(1);
  const int64_t A = 3, B = 70, S = 300, K = 200;
  for (ScalarType dt : {kFloat32, kFloat64, kInt16}) {
    Tensor self = (randn({A, B, S}) * 100).to(dt);
    Tensor idx = randint(0, S, {A, B, K});
    Tensor out = self.gather(2, idx);
    ASSERT_EQ(out.sizes().vec(), (std::vector<int64_t>{A, B, K}));
    auto s = values(self), o = values(out);
    auto ix = ints(idx);
    for (int64_t r = 0; r < A * B; ++r)
      for (int64_t j = 0; j < K; ++j) ASSERT_EQ(o[r * K + j], s[r * S + ix[r * K + j]]) << r << " " << j;
  }
  // Index rows fewer than self's: the strided path, same values.
  Tensor self = randn({8, 50});
  Tensor idx = randint(0, 50, {4, 30});
  auto s = values(self), o = values(self.gather(1, idx));
  auto ix = ints(idx);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t j = 0; j < 30; ++j) ASSERT_EQ(o[r * 30 + j], s[r * 50 + ix[r * 30 + j]]);
  EXPECT_THROW(self.gather(1, full({8, 2}, int64_t{50}, kInt64)), Error);
  EXPECT_THROW(self.gather(1, full({8, 2}, int64_t{-1}, kInt64)), Error);
}

// 4-byte elements take the vector gather (Note [Vector row gather]): every row length around
// the vector width, both 4-byte dtypes, indices at both ends of the row; exact values.
TEST(InnerDimPaths, VectorRowGatherOfEveryLengthMatchesLoops) {
  manual_seed(5);
  const int64_t R = 5, S = 70;
  for (ScalarType dt : {kFloat32, kInt32}) {
    Tensor self = (randn({R, S}) * 1000).to(dt);
    for (int64_t K : {1, 7, 15, 16, 17, 31, 32, 33, 64, 100}) {
      Tensor idx = randint(0, S, {R, K});
      idx.select(1, 0).fill_(S - 1);
      idx.select(1, K - 1).fill_(0);
      auto s = values(self), o = values(self.gather(1, idx));
      auto ix = ints(idx);
      for (int64_t r = 0; r < R; ++r)
        for (int64_t j = 0; j < K; ++j) ASSERT_EQ(o[r * K + j], s[r * S + ix[r * K + j]]) << K << " " << r << " " << j;
    }
  }
}

TEST(InnerDimPaths, GatherAndScatterOfSelfAboveOneMegabyteMatchLoops) {
  // Above 1 MB self is taken to come from memory and its next row is prefetched (Note [Row
  // prefetch only from memory]); the tests above stay below. Same values either way.
  manual_seed(7);
  const int64_t R = 40, S = 8000, K = 500;  // 1.28 MB of float32
  Tensor self = randn({R, S});
  ASSERT_GT(self.numel() * self.element_size(), int64_t(1) << 20);
  Tensor idx = randint(0, S, {R, K});
  Tensor src = randn({R, K});
  auto sv = values(self), srcv = values(src);
  auto ix = ints(idx);
  auto g = values(self.gather(1, idx));
  auto sc = values(self.clone().scatter_(1, idx, src));
  auto sa = values(self.clone().scatter_add_(1, idx, src));
  std::vector<double> want_s = sv, want_a = sv;
  for (int64_t r = 0; r < R; ++r)
    for (int64_t j = 0; j < K; ++j) {
      const int64_t c = ix[r * K + j];
      ASSERT_EQ(g[r * K + j], sv[r * S + c]) << r << " " << j;
      want_s[r * S + c] = srcv[r * K + j];  // the last write of a repeated index wins
      want_a[r * S + c] += srcv[r * K + j];
    }
  for (size_t i = 0; i < sv.size(); ++i) {
    ASSERT_EQ(sc[i], want_s[i]) << i;
    ASSERT_NEAR(sa[i], want_a[i], 1e-5 * (1 + std::abs(want_a[i]))) << i;
  }
}

TEST(InnerDimPaths, ScatterLastDimKeepsLastWriteAndAdds) {
  manual_seed(2);
  const int64_t R = 300, S = 64, K = 200;  // K > S: every row repeats indices
  Tensor idx = randint(0, S, {R, K});
  Tensor src_wide = randn({R + 5, K + 7});  // larger than index: only its top-left block is read
  Tensor src = src_wide.narrow(0, 0, R + 5);
  Tensor base = randn({R, S});
  Tensor sc = base.clone().scatter_(1, idx, src);
  Tensor sa = base.clone().scatter_add_(1, idx, src);
  auto b = values(base), vs = values(sc), va = values(sa), sv = values(src_wide);
  auto ix = ints(idx);
  std::vector<double> want_s = b, want_a = b;
  for (int64_t r = 0; r < R; ++r)
    for (int64_t j = 0; j < K; ++j) {
      want_s[r * S + ix[r * K + j]] = sv[r * (K + 7) + j];  // serial order: the last write wins
      want_a[r * S + ix[r * K + j]] += sv[r * (K + 7) + j];
    }
  for (size_t i = 0; i < b.size(); ++i) {
    ASSERT_EQ(vs[i], want_s[i]) << i;
    ASSERT_NEAR(va[i], want_a[i], 1e-4 * (1 + std::abs(want_a[i]))) << i;
  }
  Tensor bad = full({R, 1}, int64_t{S}, kInt64);
  EXPECT_THROW(base.clone().scatter_(1, bad, src), Error);
}

TEST(InnerDimPaths, CatAlongInnerDimsMatchesLoops) {
  manual_seed(3);
  std::vector<Tensor> parts = {randn({64, 3, 40}), randn({64, 5, 40}), randn({64, 0, 40}), randn({64, 1, 40})};
  Tensor out = cat(parts, 1);
  ASSERT_EQ(out.sizes().vec(), (std::vector<int64_t>{64, 9, 40}));
  auto o = values(out);
  int64_t off = 0;
  for (const Tensor& p : parts) {
    auto v = values(p);
    const int64_t n = p.size(1);
    for (int64_t a = 0; a < 64; ++a)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t c = 0; c < 40; ++c) ASSERT_EQ(o[(a * 9 + off + j) * 40 + c], v[(a * n + j) * 40 + c]);
    off += n;
  }
  // A legacy empty input is skipped; a non-contiguous or int input takes the copy path.
  Tensor x = randn({300, 200}), y = randn({200, 300}).t();
  Tensor c2 = cat({x, zeros({0}), y, x.to(kInt32)}, 1);
  ASSERT_EQ(c2.sizes().vec(), (std::vector<int64_t>{300, 600}));
  EXPECT_TRUE(c2.narrow(1, 0, 200).equal(x));
  EXPECT_TRUE(c2.narrow(1, 200, 200).equal(y));
  EXPECT_TRUE(c2.narrow(1, 400, 200).equal(x.to(kInt32).to(kFloat32)));
}

namespace {

// Loss and d loss / d x of cross_entropy in float64 loops: logp = x - logsumexp(x), loss_n =
// -w[y_n] logp[n, y_n] (0 when ignored), reduced; the mean divides by the sum of w[y_n].
void ce_reference(const std::vector<double>& x, const std::vector<int64_t>& y, const std::vector<double>& w,
                  int64_t N, int64_t C, int64_t ignore, int red, std::vector<double>& loss, std::vector<double>& grad) {
  std::vector<double> lse(N);
  double wsum = 0;
  for (int64_t n = 0; n < N; ++n) {
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < C; ++c) m = std::max(m, x[n * C + c]);
    for (int64_t c = 0; c < C; ++c) s += std::exp(x[n * C + c] - m);
    lse[n] = m + std::log(s);
    if (y[n] != ignore) wsum += w[y[n]];
  }
  std::vector<double> rows(N, 0.0);
  for (int64_t n = 0; n < N; ++n)
    if (y[n] != ignore) rows[n] = -w[y[n]] * (x[n * C + y[n]] - lse[n]);
  double total = 0;
  for (double r : rows) total += r;
  loss = red == 0 ? rows : std::vector<double>{red == 1 ? total / wsum : total};
  // Gradient of sum(loss) for none, of the scalar otherwise.
  grad.assign(static_cast<size_t>(N * C), 0.0);
  for (int64_t n = 0; n < N; ++n) {
    if (y[n] == ignore) continue;
    const double s = w[y[n]] / (red == 1 ? wsum : 1.0);
    for (int64_t c = 0; c < C; ++c) grad[n * C + c] = s * (std::exp(x[n * C + c] - lse[n]) - (c == y[n] ? 1 : 0));
  }
}

}  // namespace

TEST(InnerDimPaths, FusedCrossEntropyMatchesLoops) {
  manual_seed(4);
  const int64_t N = 257, C = 100;
  for (ScalarType dt : {kFloat32, kFloat64}) {
    for (bool weighted : {false, true}) {
      for (int red = 0; red < 3; ++red) {
        Tensor x = (randn({N, C}) * 3).to(dt).requires_grad_(true);
        Tensor y = randint(0, C, {N});
        y.narrow(0, 0, 20).fill_(-100);  // ignored targets
        Tensor w = rand({C}).to(dt) + 0.5;
        auto opts = F::CrossEntropyFuncOptions();
        if (weighted) opts = opts.weight(w);
        if (red == 0) opts = opts.reduction(tensor::kNone);
        if (red == 2) opts = opts.reduction(tensor::kSum);
        Tensor loss = F::cross_entropy(x, y, opts);
        loss.sum().backward();
        std::vector<double> want_loss, want_grad;
        std::vector<double> wv = weighted ? values(w) : std::vector<double>(C, 1.0);
        ce_reference(values(x), ints(y), wv, N, C, -100, red, want_loss, want_grad);
        const double tol = dt == kFloat32 ? 2e-5 : 1e-12;
        auto got_loss = values(loss), got_grad = values(x.grad());
        ASSERT_EQ(got_loss.size(), want_loss.size());
        for (size_t i = 0; i < want_loss.size(); ++i)
          ASSERT_NEAR(got_loss[i], want_loss[i], tol * (1 + std::abs(want_loss[i]))) << red << " " << i;
        for (size_t i = 0; i < want_grad.size(); ++i)
          ASSERT_NEAR(got_grad[i], want_grad[i], tol) << "weighted " << weighted << " red " << red << " at " << i;
      }
    }
  }
}

TEST(InnerDimPaths, FusedCrossEntropyDoubleBackward) {
  // create_graph records the gradient from public ops (Note [Fused cross_entropy]): the
  // second derivative along v is the softmax Jacobian-vector product, checked by gradgradcheck
  // through the op table's cross_entropy row; here against finite differences of the gradient.
  manual_seed(5);
  Tensor x = randn({5, 7}, kFloat64).requires_grad_(true);
  Tensor y = tensor::tensor({1, 0, 6, 3, 2});
  Tensor v = randn({5, 7}, kFloat64);
  Tensor g = autograd::grad({F::cross_entropy(x, y)}, {x}, {}, true, true)[0];
  Tensor hv = autograd::grad({(g * v).sum()}, {x})[0];
  const double eps = 1e-6;
  auto grad_at = [&](const Tensor& xx) {
    Tensor z = xx.detach().requires_grad_(true);
    F::cross_entropy(z, y).backward();
    return z.grad();
  };
  Tensor fd = (grad_at(x.detach() + eps * v) - grad_at(x.detach() - eps * v)) / (2 * eps);
  auto a = values(hv), b = values(fd);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-7) << i;
}

TEST(InnerDimPaths, CatOfNarrowViewsMatchesLoops) {
  // Narrow views along the cat dim are made of rows (Note [Cat by output rows]): roll's pieces.
  manual_seed(4);
  const int64_t A = 3, B = 50, C = 90, D = 7;  // A * B * C * D > the parallel grain
  Tensor base = randn({A, B, C, D});
  for (int64_t dim : {1, 2, 3}) {
    const int64_t n = base.size(dim);
    Tensor p0 = base.narrow(dim, 5, n - 5), p1 = base.narrow(dim, 0, 5), p2 = base.narrow(dim, 1, 2);
    Tensor out = cat({p0, p1, p2}, dim);
    std::vector<Tensor> parts = {p0, p1, p2};
    int64_t off = 0;
    for (const Tensor& p : parts) {
      EXPECT_TRUE(out.narrow(dim, off, p.size(dim)).equal(p)) << "dim " << dim << " offset " << off;
      off += p.size(dim);
    }
    ASSERT_EQ(off, out.size(dim));
  }
  // Element by element for one case: a slice of both the outer dims and the cat dim.
  Tensor v = base.narrow(0, 1, 2).narrow(2, 10, 30);  // outer dims [2, 50] one stride apart
  Tensor w = base.narrow(0, 0, 2).narrow(2, 0, 4);
  auto o = values(cat({v, w}, 2)), vv = values(v), wv = values(w);
  for (int64_t a = 0; a < 2 * B; ++a)
    for (int64_t j = 0; j < 34; ++j)
      for (int64_t d = 0; d < D; ++d)
        ASSERT_EQ(o[(a * 34 + j) * D + d], j < 30 ? vv[(a * 30 + j) * D + d] : wv[(a * 4 + j - 30) * D + d]);
  // Outer dims that are not one stride apart (a permutation, a step) take the copy path.
  Tensor t = base.transpose(0, 1).narrow(2, 0, 9), s = base.slice(1, 0, B, 2).narrow(2, 0, 9);
  Tensor ct = cat({t, t}, 2), cs = cat({s, s.narrow(2, 0, 3)}, 2);
  EXPECT_TRUE(ct.narrow(2, 0, 9).equal(t) && ct.narrow(2, 9, 9).equal(t));
  EXPECT_TRUE(cs.narrow(2, 0, 9).equal(s) && cs.narrow(2, 9, 3).equal(s.narrow(2, 0, 3)));
  // roll along the last dim of a large tensor: its two pieces go through the same loop.
  Tensor r = randn({300, 257});
  auto rv = values(r), rr = values(r.roll({-40}, {1}));
  for (int64_t i = 0; i < 300; ++i)
    for (int64_t j = 0; j < 257; ++j) ASSERT_EQ(rr[i * 257 + j], rv[i * 257 + (j + 40) % 257]);
}

TEST(InnerDimPaths, CatRowCopiesOfEveryLengthMatchLoops) {
  // Each output row of cat along an inner dim is filled by vector copies (Note [Row copies by
  // vectors]): below one vector, whole groups of four, single vectors and an overlapping last
  // vector. Byte runs of every length from 1 to 300 (past four 64-byte vectors) and at every
  // alignment of source and destination, checked byte by byte, including that the copy of one
  // piece leaves its neighbours in the row intact.
  manual_seed(6);
  const int64_t R = 5, W = 311;
  Tensor base = randint(0, 256, {R, W}, kUInt8);
  auto bv = values(base);
  for (int64_t len = 1; len <= 300; ++len) {
    const int64_t start = (len * 7) % (W - len + 1);  // varies the source alignment
    const int64_t head = len % 5;                      // varies the destination alignment
    Tensor p0 = base.narrow(1, W - head, head), p1 = base.narrow(1, start, len);
    Tensor out = cat({p0, p1, p0}, 1);
    ASSERT_EQ(out.size(1), 2 * head + len);
    auto ov = values(out);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t j = 0; j < 2 * head + len; ++j) {
        const int64_t col = j < head ? W - head + j : j < head + len ? start + j - head : W - head + j - head - len;
        ASSERT_EQ(ov[r * (2 * head + len) + j], bv[r * W + col]) << "len " << len << " row " << r << " col " << j;
      }
  }
  // float rows, above the parallel grain, split across threads.
  Tensor f = randn({512, 131});
  auto fv = values(f), rv = values(f.roll({3}, {1}));
  for (int64_t i = 0; i < 512; ++i)
    for (int64_t j = 0; j < 131; ++j) ASSERT_EQ(rv[i * 131 + j], fv[i * 131 + (j + 128) % 131]);
}

TEST(InnerDimPaths, IndexAndIndexPutOfRowsMatchLoops) {
  // x[idx] and x[idx] = y with whole rows (Note [index_put_ by column blocks]): repeated indices
  // keep the serial order (the last write wins), also with the columns split across threads.
  manual_seed(5);
  const int64_t R = 300, C = 257, K = 400;  // K * C > the parallel grain; C not a multiple of 16
  Tensor idx = randint(0, R, {K});
  for (ScalarType dt : {kFloat32, kFloat64, kInt16}) {
    Tensor x = (randn({R, C}) * 100).to(dt), y = (randn({K, C}) * 100).to(dt);
    auto xv = values(x), yv = values(y);
    auto iv = ints(idx);
    auto got = values(x.index({idx}));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < C; ++c) ASSERT_EQ(got[k * C + c], xv[iv[k] * C + c]) << k << " " << c;
    Tensor z = x.clone();
    z.index_put_({idx}, y);
    std::vector<double> want = xv;
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < C; ++c) want[iv[k] * C + c] = yv[k * C + c];
    auto zv = values(z);
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(zv[i], want[i]) << i;
  }
  // A value row broadcast to every index, negative indices, and a column slice as dst.
  Tensor big = randn({R, C + 9});
  Tensor dst = big.narrow(1, 4, C);
  Tensor row = randn({1, C});
  Tensor nidx = tensor::tensor(std::vector<int64_t>{-1, 0, 5, -1, 299}, kInt64);
  Tensor before = big.clone();
  dst.index_put_({nidx}, row);
  auto bv = values(before), av = values(big), rowv = values(row);
  for (int64_t i = 0; i < R; ++i)
    for (int64_t c = 0; c < C + 9; ++c) {
      const bool hit = (i == 0 || i == 5 || i == 299) && c >= 4 && c < 4 + C;
      ASSERT_EQ(av[i * (C + 9) + c], hit ? rowv[c - 4] : bv[i * (C + 9) + c]) << i << " " << c;
    }
  EXPECT_TRUE(dst.index({nidx}).equal(row.expand({5, C})));
  EXPECT_THROW(dst.index_put_({tensor::tensor(std::vector<int64_t>{R}, kInt64)}, row), Error);
}

TEST(InnerDimPaths, IndexRangeCheckCatchesEitherBoundAtEveryPosition) {
  // The range check is one unsigned vector maximum over four interleaved accumulators, then
  // single vectors, then a scalar tail: lengths up to 150 reach each part for int64 and int32
  // lanes of every vector width (4 x 16 int32 lanes at most), and a bad value is found at every
  // position, below 0 and at or above the size, for int64 and int32 indices; the message names
  // the first bad value.
  Tensor self = randn({8, 50});
  for (int64_t n : {int64_t(1), int64_t(7), int64_t(13), int64_t(40), int64_t(150)})
    for (int64_t pos = 0; pos < n; ++pos)
      for (int64_t bad : {int64_t(-1), int64_t(50), std::numeric_limits<int64_t>::min(), int64_t(1) << 40}) {
        std::vector<int64_t> v(static_cast<size_t>(n), 49);
        v[static_cast<size_t>(pos)] = bad;
        Tensor idx = tensor::tensor(v, kInt64);
        EXPECT_THROW(self.index_select(1, idx), Error) << n << " " << pos << " " << bad;
        EXPECT_THROW(self.gather(1, idx.expand({8, n}).contiguous()), Error) << n << " " << pos << " " << bad;
        if (bad >= std::numeric_limits<int32_t>::min() && bad <= std::numeric_limits<int32_t>::max())
          EXPECT_THROW(self.index_select(1, idx.to(kInt32)), Error) << n << " " << pos << " " << bad;
      }
  try {
    self.index_select(1, tensor::tensor(std::vector<int64_t>{3, 70, -2, 4, 5}, kInt64));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index 70 is out of bounds"), std::string::npos) << e.what();
  }
  // Every in-range value passes, up to size - 1.
  Tensor all = tensor::arange(0, 50, kInt64);
  EXPECT_TRUE(self.index_select(1, all).equal(self));
  EXPECT_TRUE(self.index_select(1, all.to(kInt32)).equal(self));
  // Along a dim longer than INT32_MAX (an expanded view, no memory) every non-negative int32
  // index is in range and only a negative one is refused.
  Tensor wide = tensor::arange(0, 1, kFloat).expand({int64_t(1) << 32});
  Tensor picked = wide.index_select(0, tensor::tensor(std::vector<int64_t>{0, 5, INT32_MAX}, kInt64).to(kInt32));
  EXPECT_TRUE(picked.equal(zeros({3})));
  EXPECT_THROW(wide.index_select(0, tensor::tensor(std::vector<int64_t>{0, -1, 3}, kInt64).to(kInt32)), Error);
}
