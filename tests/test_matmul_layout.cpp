// The layout decision of the CUDA matmul kernel (plan_matmul, Note [cuBLASLt matmul layout] in
// src/cuda/CUDABlas.h), on the CPU: hand-worked plans for the mapping of row-major tensors to
// cuBLAS's column-major convention, and every plan of many stride cases run through a float64
// emulation of cublasLtMatmul's documented semantics (column-major storage, op(A) / op(B), leading
// dims, strided batches, the bias epilogue) on the tensors' own memory, against the CPU matmul.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <algorithm>
#include <string>

#include "src/cuda/CUDABlas.h"
#include "tests/test_util.h"

using namespace tensor;
using tensor::cuda_detail::BlasOperand;
using tensor::cuda_detail::MatmulPlan;
using tensor::cuda_detail::MatrixView;
using tensor::cuda_detail::plan_matmul;
using tensor::testing::expect_near;
using tensor::testing::random_tensor;
using tensor::testing::vals;

namespace {

MatrixView mat(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride, int64_t batch = 1,
               int64_t batch_stride = 0) {
  MatrixView v;
  v.batch = batch;
  v.rows = rows;
  v.cols = cols;
  v.row_stride = row_stride;
  v.col_stride = col_stride;
  v.batch_stride = batch_stride;
  return v;
}

void expect_operand(const BlasOperand& o, bool transpose, int64_t rows, int64_t cols, int64_t ld, int64_t batch_stride,
                    const std::string& what) {
  EXPECT_FALSE(o.needs_copy) << what;
  EXPECT_EQ(o.transpose, transpose) << what;
  EXPECT_EQ(o.rows, rows) << what;
  EXPECT_EQ(o.cols, cols) << what;
  EXPECT_EQ(o.ld, ld) << what;
  EXPECT_EQ(o.batch_stride, batch_stride) << what;
}

}  // namespace

// a [2, 3] @ w [3, 4], both row-major: out^T = w^T a^T, w's memory is cuBLAS's A (4 x 3, ld 4),
// a's is B (3 x 2, ld 3), D is 4 x 2 with ld 4; no transposes.
TEST(MatmulLayout, RowMajorMapsToColumnMajorWithoutTransposes) {
  MatmulPlan p = plan_matmul(mat(2, 3, 3, 1), mat(3, 4, 4, 1), 1, false, 1);
  EXPECT_FALSE(p.needs_copy());
  expect_operand(p.A, false, 4, 3, 4, 0, "A (w)");
  expect_operand(p.B, false, 3, 2, 3, 0, "B (a)");
  EXPECT_EQ(p.m, 4);
  EXPECT_EQ(p.n, 2);
  EXPECT_EQ(p.k, 3);
  EXPECT_EQ(p.ldd, 4);
  EXPECT_EQ(p.batch, 1);
  EXPECT_FALSE(p.folded);
  EXPECT_FALSE(p.bias_epilogue || p.bias_after || p.bias_needs_copy);
}

// linear passes w.t() of a [4, 3] weight: [3, 4] with strides (1, 3), column-major, so cuBLAS
// reads the weight as stored (3 x 4, ld 3) and transposes it: CUBLAS_OP_T, no copy.
TEST(MatmulLayout, TransposedOperandsBecomeOpT) {
  MatmulPlan p = plan_matmul(mat(2, 3, 3, 1), mat(3, 4, 1, 3), 1, false, 1);
  expect_operand(p.A, true, 3, 4, 3, 0, "A (w.t())");
  expect_operand(p.B, false, 3, 2, 3, 0, "B (a)");
  // a = x.t() of x [3, 2]: [2, 3] strides (1, 2), read as stored 2 x 3 with ld 2, transposed.
  p = plan_matmul(mat(2, 3, 1, 2), mat(3, 4, 4, 1), 1, false, 1);
  expect_operand(p.B, true, 2, 3, 2, 0, "B (x.t())");
  expect_operand(p.A, false, 4, 3, 4, 0, "A (w)");
}

// A slice keeps a unit step and a larger pitch: the pitch is the leading dim, no copy.
TEST(MatmulLayout, SlicesKeepTheirPitchAsLeadingDim) {
  // a = x[:, 1:4] of x [2, 5]: strides (5, 1).
  MatmulPlan p = plan_matmul(mat(2, 3, 5, 1), mat(3, 4, 4, 1), 1, false, 1);
  expect_operand(p.B, false, 3, 2, 5, 0, "B (column slice)");
  // w = y.t()[0:3] of y [4, 7]: [3, 4] strides (1, 7): column-major with ld 7.
  p = plan_matmul(mat(2, 3, 3, 1), mat(3, 4, 1, 7), 1, false, 1);
  expect_operand(p.A, true, 3, 4, 7, 0, "A (sliced transpose)");
}

// No unit step in either dim (a column step of 2, an expanded matrix dim, a negative stride):
// the operand is copied and the kernel plans again.
TEST(MatmulLayout, NoUnitStepNeedsACopy) {
  EXPECT_TRUE(plan_matmul(mat(2, 3, 6, 2), mat(3, 4, 4, 1), 1, false, 1).B.needs_copy);
  EXPECT_FALSE(plan_matmul(mat(2, 3, 6, 2), mat(3, 4, 4, 1), 1, false, 1).A.needs_copy);
  EXPECT_TRUE(plan_matmul(mat(2, 3, 3, 1), mat(3, 4, 0, 1), 1, false, 1).A.needs_copy);  // [1, 4] expanded to [3, 4]
  EXPECT_TRUE(plan_matmul(mat(2, 3, 3, 1), mat(3, 4, 8, 2), 1, false, 1).A.needs_copy);
  EXPECT_TRUE(plan_matmul(mat(2, 3, -3, 1), mat(3, 4, 4, 1), 1, false, 1).B.needs_copy);
  // A row pitch shorter than the row (overlapping rows) is neither layout.
  EXPECT_TRUE(plan_matmul(mat(2, 3, 2, 1), mat(3, 4, 4, 1), 1, false, 1).B.needs_copy);
}

// The stride of a size-1 dim addresses nothing: a single row with any pitch is row-major with ld
// = its length; a single column with a step is column-major over that step.
TEST(MatmulLayout, SizeOneDimsIgnoreTheirStride) {
  MatmulPlan p = plan_matmul(mat(1, 3, 0, 1), mat(3, 4, 4, 1), 1, false, 1);  // an expanded row
  expect_operand(p.B, false, 3, 1, 3, 0, "B (one row)");
  // [1, 3] with a column step of 2: read as a 1 x 3 column-major matrix with ld 2.
  p = plan_matmul(mat(1, 3, 99, 2), mat(3, 4, 4, 1), 1, false, 1);
  expect_operand(p.B, true, 1, 3, 2, 0, "B (one row, step 2)");
  // w [3, 1] with a row step of 5: row-major, ld 5 (a column of a wider matrix).
  p = plan_matmul(mat(2, 3, 3, 1), mat(3, 1, 5, 7), 1, false, 1);
  expect_operand(p.A, false, 1, 3, 5, 0, "A (one column)");
  EXPECT_EQ(p.ldd, 1);
}

TEST(MatmulLayout, StridedBatches) {
  // bmm of contiguous [4, 2, 3] and [4, 3, 5]: batch strides 6 and 15, D's 2 * 5.
  MatmulPlan p = plan_matmul(mat(2, 3, 3, 1, 4, 6), mat(3, 5, 5, 1, 4, 15), 4, false, 1);
  EXPECT_EQ(p.batch, 4);
  EXPECT_FALSE(p.folded);
  expect_operand(p.A, false, 5, 3, 5, 15, "A");
  expect_operand(p.B, false, 3, 2, 3, 6, "B");
  EXPECT_EQ(p.d_batch_stride, 10);
  // a broadcast over the batch (stride 0, or a batch of 1), w batched: a's batch stride is 0.
  p = plan_matmul(mat(2, 3, 3, 1, 4, 0), mat(3, 5, 5, 1, 4, 15), 4, false, 1);
  EXPECT_EQ(p.batch, 4);
  EXPECT_EQ(p.B.batch_stride, 0);
  EXPECT_EQ(p.A.batch_stride, 15);
  p = plan_matmul(mat(2, 3, 3, 1, 1, 77), mat(3, 5, 5, 1, 4, 15), 4, false, 1);
  EXPECT_EQ(p.B.batch_stride, 0);
  // a.permute(1, 0, 2) of [2, 4, 3]: [4, 2, 3] strides (3, 12, 1): batches interleave with rows,
  // so no folding; B has ld 12 and batch stride 3.
  p = plan_matmul(mat(2, 3, 12, 1, 4, 3), mat(3, 5, 5, 1, 1, 0), 4, false, 1);
  EXPECT_FALSE(p.folded);
  EXPECT_EQ(p.batch, 4);
  expect_operand(p.B, false, 3, 2, 12, 3, "B (permuted)");
  EXPECT_EQ(p.A.batch_stride, 0);
}

// A broadcast w and a row-major a whose batches follow at the row pitch: one GEMM of B * n rows.
TEST(MatmulLayout, BroadcastWeightFoldsBatchIntoRows) {
  MatmulPlan p = plan_matmul(mat(2, 3, 3, 1, 4, 6), mat(3, 5, 5, 1, 4, 0), 4, false, 1);
  EXPECT_TRUE(p.folded);
  EXPECT_EQ(p.batch, 1);
  EXPECT_EQ(p.n, 8);
  expect_operand(p.B, false, 3, 8, 3, 0, "B (folded)");
  expect_operand(p.A, false, 5, 3, 5, 0, "A (broadcast)");
  // Rows sliced out of wider rows ([4, 2, 3] from [4, 2, 7]): pitch 7, batch stride 14 = 2 * 7.
  p = plan_matmul(mat(2, 3, 7, 1, 4, 14), mat(3, 5, 5, 1, 1, 0), 4, false, 1);
  EXPECT_TRUE(p.folded);
  expect_operand(p.B, false, 3, 8, 7, 0, "B (folded slice)");
  // One row per batch ([4, 1, 3] from [4, 7]): the batch stride is the pitch.
  p = plan_matmul(mat(1, 3, 3, 1, 4, 7), mat(3, 5, 5, 1, 1, 0), 4, false, 1);
  EXPECT_TRUE(p.folded);
  expect_operand(p.B, false, 3, 4, 7, 0, "B (folded rows)");
  // Not folded: a gap between batches, a column-major a, or a batched w.
  EXPECT_FALSE(plan_matmul(mat(2, 3, 3, 1, 4, 8), mat(3, 5, 5, 1, 1, 0), 4, false, 1).folded);
  EXPECT_FALSE(plan_matmul(mat(2, 3, 1, 2, 4, 6), mat(3, 5, 5, 1, 1, 0), 4, false, 1).folded);
  EXPECT_FALSE(plan_matmul(mat(2, 3, 3, 1, 4, 6), mat(3, 5, 5, 1, 4, 15), 4, false, 1).folded);
}

TEST(MatmulLayout, BiasEpilogueOrFallback) {
  // A single GEMM with k > 1 and m > 1 takes the epilogue; a strided bias is packed first.
  MatmulPlan p = plan_matmul(mat(2, 3, 3, 1), mat(3, 4, 1, 3), 1, true, 1);
  EXPECT_TRUE(p.bias_epilogue);
  EXPECT_FALSE(p.bias_needs_copy);
  EXPECT_FALSE(p.bias_after);
  p = plan_matmul(mat(2, 3, 3, 1), mat(3, 4, 1, 3), 1, true, 2);
  EXPECT_TRUE(p.bias_epilogue && p.bias_needs_copy);
  // Folded batches are a single GEMM too.
  p = plan_matmul(mat(2, 3, 3, 1, 4, 6), mat(3, 5, 5, 1, 1, 0), 4, true, 1);
  EXPECT_TRUE(p.folded && p.bias_epilogue);
  // Otherwise the bias is added after the product: a real batch, k == 1, m == 1.
  for (const MatmulPlan& q : {plan_matmul(mat(2, 3, 3, 1, 4, 6), mat(3, 5, 5, 1, 4, 15), 4, true, 1),
                              plan_matmul(mat(2, 1, 1, 1), mat(1, 4, 4, 1), 1, true, 1),
                              plan_matmul(mat(2, 3, 3, 1), mat(3, 1, 1, 1), 1, true, 1)}) {
    EXPECT_FALSE(q.bias_epilogue);
    EXPECT_FALSE(q.bias_needs_copy);
    EXPECT_TRUE(q.bias_after);
  }
}

TEST(MatmulLayout, AlignmentAndWorkspace) {
  using tensor::cuda_detail::blas_alignment;
  EXPECT_EQ(blas_alignment(0), 256u);
  EXPECT_EQ(blas_alignment(512), 256u);
  EXPECT_EQ(blas_alignment(4096 + 16), 16u);
  EXPECT_EQ(blas_alignment(4096 + 6), 2u);
  EXPECT_EQ(blas_alignment(4097), 1u);
  using tensor::cuda_detail::blas_workspace_bytes;
  EXPECT_EQ(blas_workspace_bytes(9), 32u << 20);
  EXPECT_EQ(blas_workspace_bytes(10), 32u << 20);
  EXPECT_EQ(blas_workspace_bytes(8), 4096u * 1024 * 2 + 16 * 1024 * 8);
}

// ---------------------------------------------------------------------------------------------
// Emulation: what cublasLtMatmul computes for a plan, per its documentation, in float64 loops.

namespace {

/// The largest element offset a tensor's view reaches from its data pointer.
int64_t max_offset(const Tensor& t) {
  int64_t off = 0;
  for (int64_t d = 0; d < t.dim(); ++d) off += (t.size(d) - 1) * t.stride(d);
  return off;
}

/// Element (i, j) of op(X) for a column-major stored X with leading dim ld.
double op_at(const BlasOperand& o, const double* x, int64_t b, int64_t i, int64_t j, int64_t limit, bool& oob) {
  const int64_t off = b * o.batch_stride + (o.transpose ? j + i * o.ld : i + j * o.ld);
  if (off < 0 || off > limit) {
    oob = true;
    return 0;
  }
  return x[off];
}

/// D = alpha op(A) op(B) + beta C (+ bias[i] with the epilogue), C = D's memory, column-major.
void emulate(const MatmulPlan& p, const Tensor& a, const Tensor& w, const Tensor& bias, Tensor& d, double alpha,
             double beta, const std::string& what) {
  // The shapes cuBLASLt checks: op(A) is m x k, op(B) is k x n, lds cover the stored rows.
  EXPECT_EQ(p.A.transpose ? p.A.cols : p.A.rows, p.m) << what;
  EXPECT_EQ(p.A.transpose ? p.A.rows : p.A.cols, p.k) << what;
  EXPECT_EQ(p.B.transpose ? p.B.cols : p.B.rows, p.k) << what;
  EXPECT_EQ(p.B.transpose ? p.B.rows : p.B.cols, p.n) << what;
  EXPECT_GE(p.A.ld, std::max<int64_t>(p.A.rows, 1)) << what;
  EXPECT_GE(p.B.ld, std::max<int64_t>(p.B.rows, 1)) << what;
  EXPECT_GE(p.ldd, std::max<int64_t>(p.m, 1)) << what;
  const double* A = w.data_ptr<double>();
  const double* B = a.data_ptr<double>();
  const double* bias_p = p.bias_epilogue ? bias.data_ptr<double>() : nullptr;
  double* D = d.data_ptr<double>();
  bool oob = false;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t j = 0; j < p.n; ++j)
      for (int64_t i = 0; i < p.m; ++i) {
        double acc = 0;
        for (int64_t q = 0; q < p.k; ++q)
          acc += op_at(p.A, A, b, i, q, max_offset(w), oob) * op_at(p.B, B, b, q, j, max_offset(a), oob);
        double& out = D[b * p.d_batch_stride + i + j * p.ldd];
        out = alpha * acc + (beta != 0 ? beta * out : 0) + (bias_p ? bias_p[i] : 0);
      }
  EXPECT_FALSE(oob) << what << ": the plan reads outside the operand's view";
}

/// The kernel's copy of an operand that needs one (src/cuda/CUDABlas.cpp `packed`).
Tensor packed(const Tensor& t) {
  if (t.dim() == 3 && (t.size(0) == 1 || t.stride(0) == 0)) return t.select(0, 0).contiguous().unsqueeze(0);
  return t.contiguous();
}

MatrixView view_of(const Tensor& t) {
  const bool batched = t.dim() == 3;
  return mat(t.size(-2), t.size(-1), t.stride(-2), t.stride(-1), batched ? t.size(0) : 1, batched ? t.stride(0) : 0);
}

/// Plans a @ w (+ bias) as the kernel does, emulates cuBLASLt on the plan and compares with the
/// CPU: alpha * matmul(a, w) + beta * out0 + bias.
void check_emulated(const std::string& what, Tensor a, Tensor w, const Tensor& bias = Tensor(), double alpha = 1,
                    double beta = 0) {
  SCOPED_TRACE(what);
  const int64_t out_batch = a.dim() == 3 ? std::max(a.size(0), w.size(0)) : 1;
  std::vector<int64_t> out_shape{a.size(-2), w.size(-1)};
  if (a.dim() == 3) out_shape.insert(out_shape.begin(), out_batch);
  const int64_t bias_stride = bias.defined() ? bias.stride(0) : 1;
  MatmulPlan p = plan_matmul(view_of(a), view_of(w), out_batch, bias.defined(), bias_stride);
  if (p.needs_copy()) {
    if (p.B.needs_copy) a = packed(a);
    if (p.A.needs_copy) w = packed(w);
    p = plan_matmul(view_of(a), view_of(w), out_batch, bias.defined(), bias_stride);
    ASSERT_FALSE(p.needs_copy()) << "a packed operand needs another copy";
  }
  const Tensor b = p.bias_needs_copy ? bias.contiguous() : bias;
  Tensor out0 = random_tensor(out_shape, 99);
  Tensor d = out0.clone();
  emulate(p, a, w, b, d, alpha, beta, what);
  if (p.bias_after) d.add_(bias);
  Tensor want = alpha * tensor::matmul(a, w) + beta * out0;
  if (bias.defined()) want = want + bias;
  expect_near(vals(d), vals(want), 1e-12, what);
}

Tensor rnd(std::vector<int64_t> shape, unsigned seed) { return random_tensor(shape, seed); }

}  // namespace

TEST(MatmulLayout, EmulatedTwoDimensionalCases) {
  check_emulated("contiguous", rnd({5, 7}, 1), rnd({7, 6}, 2));
  check_emulated("a transposed", rnd({7, 5}, 3).t(), rnd({7, 6}, 4));
  check_emulated("w transposed (linear)", rnd({5, 7}, 5), rnd({6, 7}, 6).t());
  check_emulated("both transposed", rnd({7, 5}, 7).t(), rnd({6, 7}, 8).t());
  check_emulated("column slice of a", rnd({5, 11}, 9).narrow(1, 2, 7), rnd({7, 6}, 10));
  check_emulated("row slice of w.t()", rnd({5, 7}, 11), rnd({6, 9}, 12).t().narrow(0, 1, 7));
  check_emulated("column step 2 (copy)", rnd({5, 14}, 13).slice(1, 0, 14, 2), rnd({7, 6}, 14));
  check_emulated("w column step 2 (copy)", rnd({5, 7}, 15), rnd({7, 12}, 16).slice(1, 0, 12, 2));
  check_emulated("expanded w (copy)", rnd({5, 7}, 17), rnd({1, 6}, 18).expand({7, 6}));
  check_emulated("one row", rnd({1, 7}, 19), rnd({7, 6}, 20));
  check_emulated("one row with a step", rnd({1, 14}, 21).slice(1, 0, 14, 2), rnd({7, 6}, 22));
  check_emulated("one column out", rnd({5, 7}, 23), rnd({7, 3}, 24).narrow(1, 1, 1));
  check_emulated("k == 1", rnd({5, 1}, 25), rnd({1, 6}, 26));
  check_emulated("alpha, beta", rnd({5, 7}, 27), rnd({6, 7}, 28).t(), Tensor(), 0.5, -1.5);
}

TEST(MatmulLayout, EmulatedBias) {
  check_emulated("bias epilogue", rnd({5, 7}, 31), rnd({6, 7}, 32).t(), rnd({6}, 33));
  check_emulated("strided bias", rnd({5, 7}, 34), rnd({6, 7}, 35).t(), rnd({12}, 36).slice(0, 0, 12, 2));
  check_emulated("bias with alpha, beta", rnd({5, 7}, 37), rnd({7, 6}, 38), rnd({6}, 39), 2.0, 0.5);
  check_emulated("bias, k == 1", rnd({5, 1}, 40), rnd({1, 6}, 41), rnd({6}, 42));
  check_emulated("bias, m == 1", rnd({5, 7}, 43), rnd({7, 1}, 44), rnd({1}, 45));
  check_emulated("bias, batched", rnd({3, 5, 7}, 46), rnd({3, 7, 6}, 47), rnd({6}, 48));
  check_emulated("bias, folded", rnd({3, 5, 7}, 49), rnd({1, 7, 6}, 50).expand({3, 7, 6}), rnd({6}, 51));
}

TEST(MatmulLayout, EmulatedBatchedCases) {
  check_emulated("bmm contiguous", rnd({3, 4, 5}, 61), rnd({3, 5, 6}, 62));
  check_emulated("bmm transposed a", rnd({3, 5, 4}, 63).transpose(1, 2), rnd({3, 5, 6}, 64));
  check_emulated("bmm transposed w", rnd({3, 4, 5}, 65), rnd({3, 6, 5}, 66).transpose(1, 2));
  check_emulated("broadcast a (stride 0)", rnd({1, 4, 5}, 67).expand({3, 4, 5}), rnd({3, 5, 6}, 68));
  check_emulated("broadcast a (batch 1)", rnd({1, 4, 5}, 69), rnd({3, 5, 6}, 70));
  check_emulated("broadcast w (folded)", rnd({3, 4, 5}, 71), rnd({1, 5, 6}, 72).expand({3, 5, 6}));
  check_emulated("broadcast w.t() (folded)", rnd({3, 4, 5}, 73), rnd({6, 5}, 74).t().unsqueeze(0).expand({3, 5, 6}));
  check_emulated("both broadcast", rnd({1, 4, 5}, 75).expand({3, 4, 5}), rnd({1, 5, 6}, 76).expand({3, 5, 6}));
  check_emulated("permuted a", rnd({4, 3, 5}, 77).permute({1, 0, 2}), rnd({1, 5, 6}, 78).expand({3, 5, 6}));
  check_emulated("sliced rows, folded", rnd({3, 4, 9}, 79).narrow(2, 1, 5), rnd({1, 5, 6}, 80).expand({3, 5, 6}));
  check_emulated("one row per batch, folded", rnd({3, 9}, 81).narrow(1, 0, 5).unsqueeze(1),
                 rnd({1, 5, 6}, 82).expand({3, 5, 6}));
  check_emulated("gap between batches, not folded", rnd({3, 5, 5}, 91).narrow(1, 0, 4),
                 rnd({1, 5, 6}, 92).expand({3, 5, 6}));
  check_emulated("batch step 2", rnd({6, 4, 5}, 83).slice(0, 0, 6, 2), rnd({3, 5, 6}, 84));
  check_emulated("batched copy", rnd({3, 4, 10}, 85).slice(2, 0, 10, 2), rnd({3, 5, 6}, 86));
  check_emulated("broadcast copy stays broadcast", rnd({3, 4, 5}, 87),
                 rnd({1, 5, 12}, 88).slice(2, 0, 12, 2).expand({3, 5, 6}));
  check_emulated("alpha, beta batched", rnd({3, 4, 5}, 89), rnd({3, 5, 6}, 90), Tensor(), -2.0, 0.25);
}
