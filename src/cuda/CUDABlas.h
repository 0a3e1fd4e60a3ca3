// Internal to libtensor_cuda: the matrix-product kernel on cuBLASLt (src/cuda/CUDABlas.cpp) and
// its layout decision, a pure host function of sizes and strides. The decision is inline here,
// with no CUDA type in its interface, so the CPU test suite runs it (tests/test_matmul_layout.cpp)
// on a machine without CUDA.
#pragma once

#include <cstdint>

namespace tensor::cuda_detail {

// Note [cuBLASLt matmul layout]
// cuBLAS reads matrices column-major. The kernel contract (MatmulKernel, src/ops/LinalgOps.h) is
// out[b] = alpha * a[b] @ w[b] + beta * out[b] + bias with out [B, n, m] contiguous (row-major).
// A row-major [n, m] out is the column-major [m, n] matrix out^T, and out^T = w^T @ a^T, so
// cuBLAS computes D (m x n) = op(A) (m x k) @ op(B) (k x n) with A read from w's memory and B
// from a's: the operands swap places, and no data moves.
//
// Each operand X ([r, c], strides sr, sc) is read as cuBLAS's X^T:
//   - row-major (sc == 1, sr >= c): its memory, read column-major, is X^T [c, r] with ld = sr,
//     so cuBLAS takes it as it is (CUBLAS_OP_N);
//   - column-major (sr == 1, sc >= r): its memory is X [r, c] with ld = sc, which cuBLAS
//     transposes (CUBLAS_OP_T). linear's w.t() and every .t() / .mT() view land here uncopied.
// The stride of a size-1 dim addresses nothing and is ignored (its ld becomes the other size).
// Anything else (no unit step in either dim: a sliced column step, an expanded matrix dim)
// needs a copy: the kernel makes the operand contiguous (a broadcast batch copies one matrix, so
// it stays broadcast) and plans again.
//
// Batches: a 3-D operand whose batch is 1 or has stride 0 is broadcast (cuBLASLt batch stride
// 0). When w is broadcast and a is row-major with its batches following each other at the row
// pitch (batch stride == n * row stride; for n == 1 any batch stride >= k, which becomes the
// ld), a's batches are just more rows: the product is one GEMM of B * n rows (folded), which
// cuBLASLt runs faster than B small ones and which can take the bias epilogue.
//
// Bias: CUBLASLT_EPILOGUE_BIAS adds a packed vector of D's rows (m, out's columns) to every
// column of D, after alpha and beta, which is the contract's `+ bias`. It is used for a single
// (possibly folded) GEMM with k > 1 and m > 1, the cases libtorch's addmm sends to it with CUDA
// >= 12.1 (its test_corner_cases_of_cublasltmatmul); a strided bias is copied first (m
// elements). Otherwise the kernel adds the bias after the product (out += bias), on the stream;
// so it does too when cuBLASLt's heuristic offers no algorithm with the epilogue for a case.

/// One operand as the front end hands it to the kernel: a [batch, rows, cols] matrix (a 2-D
/// operand is a batch of 1) with element strides; batch_stride is ignored when batch == 1.
struct MatrixView {
  int64_t batch = 1, rows = 0, cols = 0;
  int64_t batch_stride = 0, row_stride = 0, col_stride = 0;
};

/// How cuBLASLt reads one operand (Note [cuBLASLt matmul layout]).
struct BlasOperand {
  bool needs_copy = false;     // neither row- nor column-major with a unit step: copy, then plan again
  bool transpose = false;      // CUBLAS_OP_T (the tensor is column-major) rather than CUBLAS_OP_N
  int64_t rows = 0, cols = 0;  // the stored matrix in cuBLAS's column-major view (before op)
  int64_t ld = 0;              // its leading dimension, >= rows
  int64_t batch_stride = 0;    // elements between batches; 0 broadcasts one matrix
};

/// The whole cuBLASLt call for out = alpha * a @ w + beta * out (+ bias).
struct MatmulPlan {
  BlasOperand A;                // cuBLAS's A: w read as w^T [m, k]
  BlasOperand B;                // cuBLAS's B: a read as a^T [k, n]
  int64_t m = 0, n = 0, k = 0;  // D = op(A) op(B) is m x n: m = out's columns, n = out's rows (all batches when folded)
  int64_t ldd = 0;              // D (= C, out) leading dimension: out's row pitch m
  int64_t batch = 1;            // cuBLASLt batch count after folding
  int64_t d_batch_stride = 0;   // n * m when batch > 1
  bool folded = false;          // a's batches became rows of one GEMM
  bool bias_epilogue = false;   // CUBLASLT_EPILOGUE_BIAS adds the bias
  bool bias_needs_copy = false;  // the epilogue's bias must be packed: copy it first
  bool bias_after = false;       // no epilogue: the kernel adds the bias after the product
  bool needs_copy() const { return A.needs_copy || B.needs_copy; }
};

namespace blas_layout {

/// X read as cuBLAS's X^T (Note [cuBLASLt matmul layout]); sets needs_copy when X has no unit
/// step in either dim (or a negative stride).
inline BlasOperand read_transposed(int64_t r, int64_t c, int64_t sr, int64_t sc) {
  BlasOperand o;
  if (sr < 0 || sc < 0) {
    o.needs_copy = true;
    return o;
  }
  const bool row = (c == 1 || sc == 1) && (r == 1 || sr >= c);
  const bool col = (r == 1 || sr == 1) && (c == 1 || sc >= r);
  if (row) {
    // Column-major X^T [c, r]: its columns are X's rows, ld the row pitch.
    o.rows = c;
    o.cols = r;
    o.ld = r == 1 ? (c > 1 ? c : 1) : sr;
  } else if (col) {
    o.transpose = true;
    o.rows = r;
    o.cols = c;
    o.ld = c == 1 ? (r > 1 ? r : 1) : sc;
  } else {
    o.needs_copy = true;
  }
  return o;
}

/// Whether a [batch, ...] operand is one matrix for every batch (cuBLASLt batch stride 0).
inline bool broadcast_batch(const MatrixView& v) { return v.batch == 1 || v.batch_stride == 0; }

}  // namespace blas_layout

/// The cuBLASLt layout of out [out_batch, a.rows, w.cols] = a @ w (+ bias of stride
/// bias_stride when has_bias), for a [B or 1, n, k] and w [B or 1, k, m] (Note [cuBLASLt matmul
/// layout]). Pure: sizes and strides in, decisions out; the kernel acts on them.
inline MatmulPlan plan_matmul(const MatrixView& a, const MatrixView& w, int64_t out_batch, bool has_bias,
                              int64_t bias_stride) {
  using blas_layout::broadcast_batch;
  using blas_layout::read_transposed;
  MatmulPlan p;
  const int64_t n = a.rows, k = a.cols, m = w.cols;
  p.A = read_transposed(w.rows, w.cols, w.row_stride, w.col_stride);
  p.B = read_transposed(a.rows, a.cols, a.row_stride, a.col_stride);
  p.m = m;
  p.n = n;
  p.k = k;
  p.ldd = m > 1 ? m : 1;
  p.batch = out_batch;
  if (p.needs_copy()) return p;

  if (out_batch > 1 && broadcast_batch(w) && !broadcast_batch(a) && !p.B.transpose &&
      (n == 1 ? a.batch_stride >= k : a.batch_stride == n * p.B.ld)) {
    // a's batches continue its rows at the same pitch: one GEMM of out_batch * n rows.
    p.folded = true;
    p.n = out_batch * n;
    p.B.cols = p.n;
    if (n == 1) p.B.ld = a.batch_stride;
    p.batch = 1;
  }
  if (p.batch > 1) {
    p.A.batch_stride = broadcast_batch(w) ? 0 : w.batch_stride;
    p.B.batch_stride = broadcast_batch(a) ? 0 : a.batch_stride;
    p.d_batch_stride = n * m;
  }
  if (has_bias) {
    p.bias_epilogue = p.batch == 1 && k > 1 && m > 1;
    p.bias_needs_copy = p.bias_epilogue && bias_stride != 1;
    p.bias_after = !p.bias_epilogue;
  }
  return p;
}

/// The largest power of two up to 256 that divides `address`: the alignment cuBLASLt's
/// heuristic is told for each matrix (it assumes 256 bytes unless told, and a sliced operand's
/// pointer may be less aligned).
inline uint32_t blas_alignment(uint64_t address) {
  uint32_t align = 256;
  while (align > 1 && address % align != 0) align /= 2;
  return align;
}

/// Bytes of the cuBLASLt workspace per stream on a device of compute capability `major`:
/// libtorch's per-arch cuBLAS workspace size, which its unified cuBLAS/cuBLASLt workspace
/// uses: 32 MiB from Hopper (9.x) on, 8 MiB + 128 KiB before (its ":4096:2:16:8").
inline uint64_t blas_workspace_bytes(int major) {
  return major >= 9 ? uint64_t(32) << 20 : uint64_t(4096) * 1024 * 2 + uint64_t(16) * 1024 * 8;
}

}  // namespace tensor::cuda_detail
