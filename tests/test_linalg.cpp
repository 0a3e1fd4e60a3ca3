// Matrix products against float64 reference loops written here (independent of the library's
// own reference path), hand-computed values, and each other's definitions.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <atomic>
#include <cmath>
#include <complex>
#include <thread>

#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::expect_error;

namespace {

/// C = A @ B in float64 by the definition, for 2-D tensors of any dtype and strides.
Tensor ref_mm(const Tensor& a, const Tensor& b) {
  Tensor A = a.to(kFloat64).contiguous(), B = b.to(kFloat64).contiguous();
  const int64_t n = A.size(0), k = A.size(1), m = B.size(1);
  Tensor C = zeros({n, m}, kFloat64);
  const double* pa = A.data_ptr<double>();
  const double* pb = B.data_ptr<double>();
  double* pc = C.data_ptr<double>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += pa[i * k + p] * pb[p * m + j];
      pc[i * m + j] = s;
    }
  return C;
}

/// Batched reference: [B, n, k] x [B, k, m] (already expanded to the same batch).
Tensor ref_bmm(const Tensor& a, const Tensor& b) {
  std::vector<Tensor> outs;
  for (int64_t i = 0; i < a.size(0); ++i) outs.push_back(ref_mm(a[i], b[i]));
  return stack(outs);
}

/// |got - want| <= atol + rtol * |want| elementwise, with a message naming the case.
void expect_close(const Tensor& got, const Tensor& want, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
  Tensor g = got.to(kFloat64), w = want.to(kFloat64);
  Tensor err = (g - w).abs() - (w.abs() * rtol + atol);
  EXPECT_LE(err.max().item<double>(), 0.0) << what << ": max abs diff " << (g - w).abs().max().item<double>();
}

// Sizes that exercise oneDNN's blocking edges: 1, odd, just over a power of two.
const int64_t kShapes[][3] = {{1, 1, 1}, {1, 7, 1}, {3, 5, 7}, {7, 1, 9}, {64, 33, 17}, {17, 64, 33}, {130, 257, 65}};

}  // namespace

TEST(Linalg, MmHandComputed) {
  Tensor a = tensor::tensor({{1.0, 2.0}, {3.0, 4.0}}, kFloat32);
  Tensor b = tensor::tensor({{5.0, 6.0}, {7.0, 8.0}}, kFloat32);
  Tensor c = mm(a, b);
  EXPECT_EQ(c.dtype(), kFloat32);
  EXPECT_TRUE(c.equal(tensor::tensor({{19.0, 22.0}, {43.0, 50.0}}, kFloat32)));
  EXPECT_TRUE(a.mm(b).equal(c));
  EXPECT_TRUE(a.matmul(b).equal(c));
}

TEST(Linalg, MmAgainstReferenceAllLayouts) {
  manual_seed(1);
  for (auto& s : kShapes) {
    const int64_t n = s[0], k = s[1], m = s[2];
    Tensor a = randn({n, k}), b = randn({k, m});
    const std::string shape = std::to_string(n) + "x" + std::to_string(k) + "x" + std::to_string(m);
    // float32 accumulation error grows with the inner size k.
    const double tol = 2e-6 * static_cast<double>(k) + 1e-5;
    expect_close(mm(a, b), ref_mm(a, b), 1e-5, tol, "contiguous " + shape);
    // Transposed operands (BLAS's transa/transb), as linear's w.t() passes them.
    Tensor at = randn({k, n}).t(), bt = randn({m, k}).t();
    expect_close(mm(at, bt), ref_mm(at, bt), 1e-5, tol, "transposed " + shape);
    // Every other column and row: neither dim has step 1, so the kernel must copy.
    Tensor as = randn({2 * n, 2 * k}).slice(0, 0, 2 * n, 2).slice(1, 0, 2 * k, 2);
    Tensor bs = randn({k, 3 * m}).slice(1, 0, 3 * m, 3);
    expect_close(mm(as, bs), ref_mm(as, bs), 1e-5, tol, "strided " + shape);
    // Expanded (stride 0) operands.
    Tensor ae = randn({1, k}).expand({n, k});
    expect_close(mm(ae, b), ref_mm(ae, b), 1e-5, tol, "expanded " + shape);
  }
}

TEST(Linalg, Float64IntComplexHalfDtypes) {
  manual_seed(2);
  Tensor a = randn({9, 13}, kFloat64), b = randn({13, 5}, kFloat64);
  expect_close(mm(a, b), ref_mm(a, b), 1e-12, 1e-12, "float64");
  Tensor ai = randint(-5, 5, {6, 7}), bi = randint(-5, 5, {7, 3});
  EXPECT_EQ(mm(ai, bi).dtype(), kInt64);
  EXPECT_TRUE(mm(ai, bi).to(kFloat64).equal(ref_mm(ai, bi)));
  Tensor ai32 = ai.to(kInt32), bi32 = bi.to(kInt32);
  EXPECT_TRUE(mm(ai32, bi32).to(kFloat64).equal(ref_mm(ai, bi)));
  // Complex: (ar + i ai)(br + i bi) by real products.
  Tensor ar = randn({4, 6}, kFloat64), aim = randn({4, 6}, kFloat64);
  Tensor br = randn({6, 3}, kFloat64), bim = randn({6, 3}, kFloat64);
  Tensor j = scalar_tensor(std::complex<double>(0, 1), kComplex128);
  Tensor za = ar.to(kComplex128) + aim.to(kComplex128) * j, zb = br.to(kComplex128) + bim.to(kComplex128) * j;
  Tensor zc = mm(za, zb);
  expect_close(zc.real(), ref_mm(ar, br) - ref_mm(aim, bim), 1e-12, 1e-12, "complex real part");
  expect_close(zc.imag(), ref_mm(ar, bim) + ref_mm(aim, br), 1e-12, 1e-12, "complex imag part");
  // float16 computes in float32 and rounds once.
  Tensor ah = randn({8, 16}).to(kFloat16), bh = randn({16, 4}).to(kFloat16);
  Tensor ch = mm(ah, bh);
  EXPECT_EQ(ch.dtype(), kFloat16);
  expect_close(ch, ref_mm(ah, bh), 2e-3, 2e-3, "float16");
}

TEST(Linalg, BFloat16WithinTolerance) {
  manual_seed(3);
  for (int64_t n : {1, 17, 64, 129}) {
    Tensor a = randn({n, 96}), b = randn({96, n + 3});
    Tensor ab = a.to(kBFloat16), bb = b.to(kBFloat16);
    Tensor c = mm(ab, bb);
    EXPECT_EQ(c.dtype(), kBFloat16);
    // Exact products of the bf16-rounded inputs, rounded once to bf16 (8 bits of mantissa).
    expect_close(c, ref_mm(ab, bb), 1e-2, 1e-1, "bf16 n=" + std::to_string(n));
    expect_close(c, mm(a, b), 3e-2, 3e-1, "bf16 vs float32 n=" + std::to_string(n));
  }
}

TEST(Linalg, BFloat16BlockedWeights) {
  // Enough rows per weight matrix for oneDNN's blocked weight layout (Note [Matmul weight
  // layout]): the weights are reordered every call, so plain, transposed and batched weights,
  // and weights changed between calls, must all give the product of the current values.
  manual_seed(5);
  Tensor a = randn({1100, 136}).to(kBFloat16), b = randn({136, 72}).to(kBFloat16);
  expect_close(mm(a, b), ref_mm(a, b), 1e-2, 1e-1, "bf16 blocked weights");
  Tensor bt = randn({72, 136}).to(kBFloat16).t();  // column-major weights (linear's w.t())
  expect_close(mm(a, bt), ref_mm(a, bt), 1e-2, 1e-1, "bf16 blocked transposed weights");
  b.mul_(-2.0);  // same shapes, same cached primitive, new weight values
  expect_close(mm(a, b), ref_mm(a, b), 1e-2, 1e-1, "bf16 blocked weights after an in-place change");
  // 3-D x 2-D: 3 x 350 rows share one weight matrix.
  Tensor x = randn({3, 350, 136}).to(kBFloat16);
  Tensor y = matmul(x, b);
  for (int64_t i = 0; i < 3; ++i) expect_close(y[i], ref_mm(x[i], b), 1e-2, 1e-1, "bf16 blocked 3-D x 2-D");
  // linear with bias on the same path.
  Tensor w = randn({96, 136}).to(kBFloat16), bias = randn({96}).to(kBFloat16);
  expect_close(linear(a, w, bias), ref_mm(a, w.t()) + bias.to(kFloat64), 1e-2, 1.5e-1, "bf16 blocked linear");
}

TEST(Linalg, Float32LargeProducts) {
  // float32 products with all dims >= 256 and no bias run on dnnl_sgemm (Note [float32 products
  // on dnnl_sgemm]); with a bias and all dims >= 1024, on brgemm with blocked weights (Note
  // [Matmul weight layout]). Checked against float64 on sampled rows (the full reference is
  // 2 GFLOP), in every transpose, with rows folded from a batch, and with alpha and beta.
  manual_seed(8);
  auto check_rows = [](const Tensor& got, const Tensor& a, const Tensor& w, const std::string& what) {
    for (int64_t r : {int64_t{0}, got.size(0) / 2, got.size(0) - 1})
      expect_close(got.narrow(0, r, 1), ref_mm(a.narrow(0, r, 1), w), 1e-4, 1e-3, what + " row " + std::to_string(r));
  };
  Tensor a = randn({1024, 1040}), at = randn({1040, 1024}).t();
  Tensor b = randn({1040, 1032}), bt = randn({1032, 1040}).t();
  check_rows(mm(a, b), a, b, "NN");
  check_rows(mm(at, b), at, b, "TN");
  check_rows(mm(a, bt), a, bt, "NT");
  check_rows(mm(at, bt), at, bt, "TT");
  // Leading dims larger than the matrix (a column slice of a wider tensor).
  Tensor wide = randn({300, 700}), wb = randn({800, 300});
  Tensor as = wide.narrow(1, 5, 600), bs = wb.narrow(1, 3, 260);
  check_rows(mm(as, wb.narrow(0, 0, 600)), as, wb.narrow(0, 0, 600), "sliced a");
  check_rows(mm(wb.narrow(0, 0, 600).t().narrow(0, 0, 260), bs.narrow(0, 0, 600)),
             wb.narrow(0, 0, 600).t().narrow(0, 0, 260), bs.narrow(0, 0, 600), "sliced transposed a, sliced w");
  // Weights changed in place between calls: no stale result.
  Tensor b2 = b.clone();
  Tensor first = mm(a, b2);
  b2.mul_(-0.5);
  check_rows(mm(a, b2), a, b2, "after an in-place change");
  EXPECT_TRUE(mm(a, b2).allclose(first * -0.5, 1e-5, 1e-4));
  // 3-D x 2-D: 4 x 300 rows fold into one product.
  Tensor x = randn({4, 300, 260}), w = randn({260, 270});
  Tensor y = matmul(x, w);
  for (int64_t i = 0; i < 4; ++i) check_rows(y[i], x[i], w, "3-D x 2-D batch " + std::to_string(i));
  // addmm: beta * self + alpha * a @ b; beta 0 ignores self, even NaN (libtorch's rule).
  Tensor self = randn({1024, 1032});
  Tensor got = addmm(self, a, b, 0.5, 2.0);
  for (int64_t r : {0, 700}) {
    Tensor want = ref_mm(a.narrow(0, r, 1), b) * 2.0 + self.narrow(0, r, 1).to(kFloat64) * 0.5;
    expect_close(got.narrow(0, r, 1), want, 1e-4, 2e-3, "addmm beta 0.5 alpha 2 row " + std::to_string(r));
  }
  Tensor nan_self = full({1024, 1032}, std::nan(""));
  Tensor z = addmm(nan_self, a, b, 0.0, 1.0);
  EXPECT_FALSE(z.isnan().any().item<bool>());
  check_rows(z, a, b, "addmm beta 0 with NaN self");
  // linear with a bias: brgemm with blocked weights, bias fused.
  Tensor lw = randn({1032, 1040}), lb = randn({1032});
  Tensor l = linear(a, lw, lb);
  for (int64_t r : {0, 1023}) {
    Tensor want = ref_mm(a.narrow(0, r, 1), lw.t()) + lb.to(kFloat64);
    expect_close(l.narrow(0, r, 1), want, 1e-4, 1e-3, "linear with bias row " + std::to_string(r));
  }
}

TEST(Linalg, BmmAndBroadcastBatch) {
  manual_seed(4);
  Tensor a = randn({5, 3, 7}), b = randn({5, 7, 4});
  expect_close(bmm(a, b), ref_bmm(a, b), 1e-5, 1e-5, "bmm");
  expect_close(a.bmm(b), ref_bmm(a, b), 1e-5, 1e-5, "Tensor::bmm");
  // A batch that is only broadcast (stride 0) is not copied, and must still be right.
  Tensor w = randn({1, 7, 4}).expand({5, 7, 4});
  expect_close(bmm(a, w), ref_bmm(a, w.contiguous()), 1e-5, 1e-5, "stride-0 batch");
  // Both operands broadcast over the batch (oneDNN's descriptor takes no such batch).
  Tensor a1 = randn({1, 3, 7}).expand({5, 3, 7});
  expect_close(bmm(a1, w), ref_bmm(a1.contiguous(), w.contiguous()), 1e-5, 1e-5, "both stride-0 batches");
  expect_close(bmm(a1.to(kBFloat16), w.to(kBFloat16)), ref_bmm(a1.to(kBFloat16).contiguous(), w.to(kBFloat16).contiguous()),
               2e-2, 2e-2, "both stride-0 batches, bfloat16");
  Tensor at = randn({5, 7, 3}).transpose(1, 2);
  expect_close(bmm(at, b), ref_bmm(at, b), 1e-5, 1e-5, "transposed batch");
  Tensor ad = randn({5, 3, 7}, kFloat64), bd = randn({5, 7, 4}, kFloat64);
  expect_close(bmm(ad, bd), ref_bmm(ad, bd), 1e-12, 1e-12, "bmm float64");
}

TEST(Linalg, MatmulRankCases) {
  manual_seed(5);
  Tensor v = randn({4}), v2 = randn({4});
  Tensor M = randn({3, 4}), N = randn({4, 5});
  // 1-D x 1-D: dot.
  EXPECT_EQ(matmul(v, v2).dim(), 0);
  EXPECT_NEAR(matmul(v, v2).item<double>(), ref_mm(v.unsqueeze(0), v2.unsqueeze(1)).item<double>(), 1e-5);
  // 2-D x 1-D and 1-D x 2-D.
  expect_close(matmul(M, v), ref_mm(M, v.unsqueeze(1)).squeeze(1), 1e-5, 1e-5, "mv");
  Tensor u = randn({3});
  expect_close(matmul(u, M), ref_mm(u.unsqueeze(0), M).squeeze(0), 1e-5, 1e-5, "vm");
  // N-D x 2-D folds into one mm; N-D x 1-D.
  Tensor X = randn({2, 6, 4});
  Tensor want = stack({ref_mm(X[0], N), ref_mm(X[1], N)});
  expect_close(matmul(X, N), want, 1e-5, 1e-5, "3-D x 2-D");
  expect_close(matmul(X.transpose(0, 1), N), want.transpose(0, 1), 1e-5, 1e-5, "non-contiguous 3-D x 2-D");
  EXPECT_EQ(matmul(X, v).sizes().vec(), (std::vector<int64_t>{2, 6}));
  // 1-D x N-D and 2-D x N-D go through the batched path.
  Tensor Y = randn({2, 4, 5});
  EXPECT_EQ(matmul(v, Y).sizes().vec(), (std::vector<int64_t>{2, 5}));
  expect_close(matmul(v, Y)[1], ref_mm(v.unsqueeze(0), Y[1]).squeeze(0), 1e-5, 1e-5, "1-D x 3-D");
  expect_close(matmul(M, Y)[0], ref_mm(M, Y[0]), 1e-5, 1e-5, "2-D x 3-D");
  // Broadcast batch dims: [2, 1, 3, 4] x [5, 4, 2] -> [2, 5, 3, 2].
  Tensor P = randn({2, 1, 3, 4}), Q = randn({5, 4, 2});
  Tensor R = matmul(P, Q);
  EXPECT_EQ(R.sizes().vec(), (std::vector<int64_t>{2, 5, 3, 2}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 5; ++j) expect_close(R[i][j], ref_mm(P[i][0], Q[j]), 1e-5, 1e-5, "broadcast batch");
}

TEST(Linalg, AddmmBetaAlphaAndBroadcastSelf) {
  manual_seed(6);
  Tensor a = randn({6, 5}), b = randn({5, 7});
  Tensor p = ref_mm(a, b);
  Tensor row = randn({7}), full = randn({6, 7}), col = randn({6, 1});
  expect_close(addmm(row, a, b), p + row.to(kFloat64), 1e-5, 1e-5, "row bias (fused)");
  expect_close(addmm(full, a, b, 0.5, 2.0), p * 2.0 + full.to(kFloat64) * 0.5, 1e-5, 1e-5, "beta alpha");
  expect_close(addmm(col, a, b, 1.0, -1.0), col.to(kFloat64) - p, 1e-5, 1e-5, "column self");
  expect_close(addmm(row, a, b, 1.0, 3.0), p * 3.0 + row.to(kFloat64), 1e-5, 1e-5, "fused bias with alpha");
  // beta = 0 ignores self entirely, NaN included (libtorch's rule).
  Tensor nan_self = full_like(full, std::nan(""));
  expect_close(addmm(nan_self, a, b, 0.0, 1.0), p, 1e-5, 1e-5, "beta 0 with NaN self");
  Tensor ad = a.to(kFloat64), bd = b.to(kFloat64);
  expect_close(addmm(full.to(kFloat64), ad, bd, 2, 3), p * 3 + full.to(kFloat64) * 2, 1e-12, 1e-12, "float64");
  // k = 0: the product is zero.
  Tensor e = addmm(full, empty({6, 0}), empty({0, 7}), 2.0, 1.0);
  expect_close(e, full.to(kFloat64) * 2, 0, 0, "empty inner dim");
}

TEST(Linalg, Linear) {
  manual_seed(7);
  Tensor w = randn({5, 8}), bias = randn({5});
  Tensor x = randn({3, 4, 8});
  Tensor want = ref_mm(x.reshape({12, 8}), w.t()).reshape({3, 4, 5}) + bias.to(kFloat64);
  expect_close(linear(x, w, bias), want, 1e-5, 1e-5, "3-D input with bias");
  expect_close(linear(x, w), want - bias.to(kFloat64), 1e-5, 1e-5, "no bias");
  expect_close(linear(x.transpose(0, 1), w, bias), want.transpose(0, 1), 1e-5, 1e-5, "non-contiguous input");
  Tensor x1 = randn({8});
  expect_close(linear(x1, w, bias), ref_mm(x1.unsqueeze(0), w.t()).squeeze(0) + bias.to(kFloat64), 1e-5, 1e-5, "1-D");
  Tensor xd = x.to(kFloat64);
  expect_close(linear(xd, w.to(kFloat64), bias.to(kFloat64)), want, 1e-12, 1e-12, "float64");
  EXPECT_EQ(linear(empty({0, 8}), w, bias).sizes().vec(), (std::vector<int64_t>{0, 5}));
}

TEST(Linalg, DotOuter) {
  Tensor a = tensor::tensor({1.0, 2.0, 3.0}), b = tensor::tensor({4.0, -5.0, 6.0});
  EXPECT_FLOAT_EQ(dot(a, b).item<float>(), 12.0f);
  EXPECT_FLOAT_EQ(a.dot(b).item<float>(), 12.0f);
  Tensor o = outer(a, tensor::tensor({1.0, -1.0}));
  EXPECT_TRUE(o.equal(tensor::tensor({{1.0, -1.0}, {2.0, -2.0}, {3.0, -3.0}})));
  Tensor s = tensor::arange(0, 10, 2, kFloat32).slice(0, 0, 5, 2);  // [0, 4, 8], stride 2
  EXPECT_FLOAT_EQ(dot(s, a).item<float>(), 4 * 2 + 8 * 3);
  Tensor ai = tensor::tensor({1, 2, 3}), bi = tensor::tensor({4, 5, 6});
  EXPECT_EQ(dot(ai, bi).item<int64_t>(), 32);
}

TEST(Linalg, Einsum) {
  manual_seed(8);
  Tensor A = randn({3, 4}, kFloat64), B = randn({4, 5}, kFloat64), C = randn({5, 2}, kFloat64);
  expect_close(einsum("ij,jk->ik", {A, B}), ref_mm(A, B), 1e-12, 1e-12, "matrix product");
  expect_close(einsum("ij,jk", {A, B}), ref_mm(A, B), 1e-12, 1e-12, "implicit output");
  expect_close(einsum("ij->ji", {A}), A.t(), 0, 0, "transpose");
  expect_close(einsum("ij->", {A}), A.sum(), 1e-12, 1e-12, "total sum");
  expect_close(einsum("ij,jk,kl->il", {A, B, C}), ref_mm(ref_mm(A, B), C), 1e-12, 1e-12, "chain of three");
  Tensor S = randn({4, 4}, kFloat64);
  expect_close(einsum("ii->i", {S}), S.diagonal(), 0, 0, "diagonal");
  expect_close(einsum("ii", {S}), S.diagonal().sum(), 1e-12, 1e-12, "trace");
  Tensor u = randn({4}, kFloat64), v = randn({3}, kFloat64);
  expect_close(einsum("i,j->ij", {u, v}), outer(u, v), 0, 0, "outer");
  expect_close(einsum("i,i->", {u, u}), (u * u).sum(), 1e-12, 1e-12, "inner");
  // Attention scores with batch and heads; also an ellipsis with broadcast batch dims.
  Tensor q = randn({2, 3, 5, 4}, kFloat64), k = randn({2, 3, 6, 4}, kFloat64);
  Tensor sc = einsum("bhqd,bhkd->bhqk", {q, k});
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 3; ++h) expect_close(sc[b][h], ref_mm(q[b][h], k[b][h].t()), 1e-12, 1e-12, "attention");
  Tensor P = randn({2, 1, 3, 4}, kFloat64), Q = randn({5, 4, 2}, kFloat64);
  expect_close(einsum("...ij,...jk->...ik", {P, Q}), matmul(P, Q), 1e-12, 1e-12, "ellipsis broadcast");
  // A label summed that only one operand has, and a repeated label across three operands.
  expect_close(einsum("ij,k->i", {A, u}), A.sum({1}) * u.sum(), 1e-12, 1e-12, "separately summed");
  Tensor w = randn({3}, kFloat64);
  expect_close(einsum("i,i,i->i", {w, w, w}), w * w * w, 1e-12, 1e-12, "three-way elementwise");
  // float32 through oneDNN.
  expect_close(einsum("ij,jk->ik", {A.to(kFloat32), B.to(kFloat32)}), ref_mm(A, B), 1e-5, 1e-5, "float32");
}

TEST(Linalg, ErrorsNameOpShapesAndDtypes) {
  expect_error([] { mm(ones({2, 3}), ones({4, 5})); }, {"mm", "[2, 3]", "[4, 5]"});
  expect_error([] { mm(ones({2, 3}), ones({3, 5}, kFloat64)); }, {"mm", "same dtype", "float32", "float64"});
  expect_error([] { mm(ones({3}), ones({3, 5})); }, {"mm", "2-D", "[3]"});
  expect_error([] { mm(ones({2, 2}, kBool), ones({2, 2}, kBool)); }, {"mm", "Bool"});
  expect_error([] { bmm(ones({2, 3, 4}), ones({3, 4, 5})); }, {"bmm", "batch", "[2, 3, 4]", "[3, 4, 5]"});
  expect_error([] { matmul(ones({2, 3, 4}), ones({5, 6})); }, {"matmul", "[2, 3, 4]", "[5, 6]"});
  expect_error([] { matmul(ones({2, 3, 4}), ones({3, 4, 5})); }, {"matmul", "do not broadcast"});
  expect_error([] { linear(ones({2, 3}), ones({4, 5})); }, {"linear", "[2, 3]", "[4, 5]"});
  expect_error([] { linear(ones({2, 5}), ones({4, 5}), ones({3})); }, {"linear", "bias", "[3]"});
  expect_error([] { addmm(ones({3, 3}), ones({2, 3}), ones({3, 4})); }, {"addmm", "[3, 3]", "broadcast"});
  expect_error([] { dot(ones({3}), ones({4})); }, {"dot", "3", "4"});
  expect_error([] { einsum("ij,jk->ik", {ones({2, 3}), ones({4, 5})}); }, {"einsum", "size"});
  expect_error([] { einsum("ij->ik", {ones({2, 3})}); }, {"einsum", "'k'"});
  expect_error([] { einsum("ij", {ones({2, 3, 4})}); }, {"einsum", "[2, 3, 4]"});
}

TEST(Linalg, MetaShapes) {
  Tensor a = empty({7, 3}, TensorOptions().device(kMeta)), b = empty({3, 9}, TensorOptions().device(kMeta));
  Tensor c = mm(a, b);
  EXPECT_TRUE(c.is_meta());
  EXPECT_EQ(c.sizes().vec(), (std::vector<int64_t>{7, 9}));
  EXPECT_EQ(linear(empty({2, 4, 3}, TensorOptions().device(kMeta)), empty({6, 3}, TensorOptions().device(kMeta)))
                .sizes().vec(), (std::vector<int64_t>{2, 4, 6}));
}

// mm, bmm, addmm and linear are front ends: on meta tensors they check and size the result
// and touch no data (a product this large would not fit in memory).
TEST(Linalg, MetaShapesWithoutData) {
  const TensorOptions meta = TensorOptions().dtype(kFloat32).device(kMeta);
  auto expect_meta = [](const Tensor& t, const std::vector<int64_t>& sizes, ScalarType dt, const std::string& what) {
    SCOPED_TRACE(what);
    EXPECT_TRUE(t.is_meta());
    EXPECT_EQ(t.sizes().vec(), sizes);
    EXPECT_EQ(t.dtype(), dt);
    EXPECT_THROW(t.data_ptr(), Error);
  };
  Tensor a = empty({100000, 3000}, meta), b = empty({3000, 200000}, meta);
  expect_meta(mm(a, b), {100000, 200000}, kFloat32, "mm");
  expect_meta(mm(empty({4, 5}, meta.dtype(kFloat64)), empty({5, 6}, meta.dtype(kFloat64))), {4, 6}, kFloat64,
              "mm float64");
  expect_meta(bmm(empty({64, 1000, 30}, meta.dtype(kBFloat16)), empty({64, 30, 2000}, meta.dtype(kBFloat16))),
              {64, 1000, 2000}, kBFloat16, "bmm");
  expect_meta(addmm(empty({200000}, meta), a, b), {100000, 200000}, kFloat32, "addmm fused bias");
  expect_meta(addmm(empty({100000, 1}, meta), a, b, 2, 3), {100000, 200000}, kFloat32, "addmm");
  expect_meta(linear(empty({8, 100, 3000}, meta), empty({50000, 3000}, meta), empty({50000}, meta)), {8, 100, 50000},
              kFloat32, "linear");
  expect_meta(linear(empty({3000}, meta.dtype(kInt64)), empty({7, 3000}, meta.dtype(kInt64)), Tensor()), {7}, kInt64,
              "linear int64 1-D");
  expect_meta(matmul(empty({2, 5, 3000}, meta), empty({3, 1, 3000, 4}, meta)), {3, 2, 5, 4}, kFloat32,
              "matmul batched");
  // The same checks as on the CPU.
  expect_error([&] { mm(a, empty({4, 5}, meta)); }, {"mm", "[100000, 3000]", "[4, 5]", "cannot be multiplied"});
  expect_error([&] { bmm(empty({2, 3, 4}, meta), empty({3, 4, 5}, meta)); }, {"bmm", "same batch size"});
  expect_error([&] { addmm(empty({3, 3}, meta), empty({2, 3}, meta), empty({3, 4}, meta)); },
               {"addmm", "[3, 3]", "broadcast"});
  expect_error([&] { linear(empty({2, 3}, meta), empty({4, 5}, meta)); }, {"linear", "in_features = 5"});
  expect_error([&] { mm(empty({2, 2}, meta.dtype(kBool)), empty({2, 2}, meta.dtype(kBool))); }, {"mm", "Bool"});
}

TEST(Linalg, PrimitiveCacheReusesAndEvicts) {
  Tensor a = randn({31, 29}), b = randn({29, 23});
  mm(a, b);
  const size_t misses = onednn::primitive_cache_misses();
  for (int i = 0; i < 5; ++i) mm(a, b);
  EXPECT_EQ(onednn::primitive_cache_misses(), misses) << "an identical call must reuse the cached primitive";
  mm(a.t().contiguous().t(), b);  // other strides: a new primitive
  EXPECT_EQ(onednn::primitive_cache_misses(), misses + 1);
  const size_t cap = onednn::primitive_cache_capacity();
  onednn::set_primitive_cache_capacity(2);
  for (int64_t n = 1; n <= 4; ++n) mm(randn({n, 5}), randn({5, 3}));
  EXPECT_LE(onednn::primitive_cache_size(), 2u);
  onednn::set_primitive_cache_capacity(0);
  EXPECT_TRUE(mm(tensor::tensor({{2.0}}, kFloat32), tensor::tensor({{3.0}}, kFloat32)).equal(tensor::tensor({{6.0}}, kFloat32)));
  onednn::set_primitive_cache_capacity(cap);
}

TEST(Linalg, BoundArgumentsAcrossEvictionAndThreads) {
  // Each thread re-points the memory objects it last bound to a primitive (Note [Small matmul
  // overhead]): results must follow the current tensors through cache eviction, many shapes
  // in turn (more than the remembered bindings), and several threads at once.
  manual_seed(6);
  const size_t cap = onednn::primitive_cache_capacity();
  onednn::set_primitive_cache_capacity(1);
  for (int round = 0; round < 2; ++round)
    for (int64_t n : {3, 9, 17, 33, 64, 65}) {
      Tensor a = randn({n, 12}), b = randn({12, n + 1});
      expect_close(mm(a, b), ref_mm(a, b), 1e-5, 1e-5, "evicting n=" + std::to_string(n));
      Tensor bias = randn({n + 1});
      expect_close(addmm(bias, a, b), ref_mm(a, b) + bias.to(kFloat64), 1e-5, 1e-5, "addmm n=" + std::to_string(n));
    }
  onednn::set_primitive_cache_capacity(cap);
  std::vector<Tensor> as, bs, got(4);
  for (int i = 0; i < 4; ++i) { as.push_back(randn({40, 30})); bs.push_back(randn({30, 20})); }
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      Tensor c;
      for (int r = 0; r < 50; ++r) c = mm(as[i], bs[i]);
      got[i] = c;
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) expect_close(got[i], ref_mm(as[i], bs[i]), 1e-5, 1e-5, "thread " + std::to_string(i));
}

TEST(Linalg, ThreadCachesFollowEvictionAcrossThreads) {
  // Each thread remembers its last primitives (Note [Thread-local primitive cache]); a capacity
  // change or eviction from another thread must invalidate them: results stay right, capacity 0
  // still misses on every call, and the global LRU still bounds the cache.
  manual_seed(7);
  const size_t cap = onednn::primitive_cache_capacity();
  std::vector<Tensor> as, bs;
  for (int i = 0; i < 6; ++i) { as.push_back(randn({5 + i, 7})); bs.push_back(randn({7, 3 + i})); }
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 300; ++r) {
        const int i = (r + t) % 6;
        Tensor c = mm(as[i], bs[i]);
        if (!c.to(kFloat64).allclose(ref_mm(as[i], bs[i]), 1e-5, 1e-5)) ++bad;
      }
    });
  std::thread churn([&] {
    for (int r = 0; r < 50 && !stop; ++r) {
      onednn::set_primitive_cache_capacity(r % 3);
      std::this_thread::yield();
    }
  });
  for (auto& th : threads) th.join();
  stop = true;
  churn.join();
  EXPECT_EQ(bad.load(), 0);
  onednn::set_primitive_cache_capacity(0);
  const size_t misses = onednn::primitive_cache_misses();
  mm(as[0], bs[0]);
  mm(as[1], bs[1]);
  mm(as[0], bs[0]);
  EXPECT_EQ(onednn::primitive_cache_misses(), misses + 3) << "capacity 0 must not be served from a thread's copy";
  onednn::set_primitive_cache_capacity(2);
  for (int i = 0; i < 6; ++i) mm(as[i], bs[i]);
  EXPECT_LE(onednn::primitive_cache_size(), 2u);
  const size_t m2 = onednn::primitive_cache_misses();
  mm(as[5], bs[5]);
  EXPECT_EQ(onednn::primitive_cache_misses(), m2) << "the newest entry must still be cached";
  mm(as[0], bs[0]);
  EXPECT_EQ(onednn::primitive_cache_misses(), m2 + 1) << "an evicted entry must miss, not come from a thread's copy";
  onednn::set_primitive_cache_capacity(cap);
}
