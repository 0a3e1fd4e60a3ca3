// Fused attention on CPU (kernels/cpu/FlashAttentionKernels.h), compiled once per Highway target
// (Note [Per-ISA loops]): the tile products are plain unit-stride loops that the compiler
// vectorizes for the target, the exponentials are Highway's vector Exp.
#include "kernels/cpu/FlashAttentionKernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/FlashAttentionKernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "src/core/DtypeVisit.h"
#include "src/core/Parallel.h"
#include "tensor/ops.h"

// Note [Flash attention on CPU]
// FlashAttention-2 on CPU. The forward splits each (batch, head) into blocks of kFlashBlockQ
// query rows; one task runs one query block over the key blocks of kFlashBlockK rows, keeping
// per row the running max m, the running sum l of exp(s - m) and the unnormalized output. A new
// key block with a larger max rescales l and the output by exp(m_old - m_new). The scores of
// one tile (64 x 64) live in a scratch buffer: the [L, S] matrix never exists. The forward
// saves the output and lse = m + log(l) per row (O(L) memory); the backward recomputes each
// tile's probabilities as exp(s - lse) and applies
//   dV += P^T dO,  dP = dO V^T,  dS = P * (dP - D) with D = rowsum(dO * O),
//   dQ += scale * dS K,  dK += scale * dS^T Q.
// The backward runs one task per (batch, head), the key blocks outer (dK and dV of a key block
// stay in a tile buffer) and the query blocks inner (dQ accumulates in an [L, E] buffer), so no
// two threads write one gradient row; with fewer (batch, head) pairs than threads it splits
// into a pass over key blocks (dK, dV) and one over query blocks (dQ). Causal masking (top-left: query i sees keys 0..i) skips
// the tiles that are wholly above the diagonal. Inputs of any strides are copied tile by tile
// into opmath buffers (float for float32 / bfloat16 / float16, double for float64), with q
// pre-scaled and k also stored transposed, so that every tile product is one row-major
// C (+)= A B for a register-blocked Highway micro-kernel (gemm below) compiled for the
// enclosing Highway target. A row whose every key is masked gets NaN, as the math path.

HWY_BEFORE_NAMESPACE();
namespace tensor::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace {

constexpr int64_t BQ = kFlashBlockQ, BK = kFlashBlockK;

// A strided [B, H, N, D] operand.
template <class T>
struct View4 {
  const T* p;
  int64_t s0, s1, s2, s3;
  explicit View4(const Tensor& t)
      : p(t.data_ptr<T>()), s0(t.stride(0)), s1(t.stride(1)), s2(t.stride(2)), s3(t.stride(3)) {}
  const T* row(int64_t b, int64_t h, int64_t i) const { return p + b * s0 + h * s1 + i * s2; }
};

// dst[r * D + c] = src row (r0 + r), column c, times mul, for r < n; rows n..rows are zero.
template <class A, class T>
void load_rows(A* dst, const View4<T>& v, int64_t b, int64_t h, int64_t r0, int64_t n, int64_t rows, int64_t D,
               A mul) {
  for (int64_t r = 0; r < n; ++r) {
    const T* s = v.row(b, h, r0 + r);
    A* d = dst + r * D;
    if (v.s3 == 1) {
      for (int64_t c = 0; c < D; ++c) d[c] = static_cast<A>(s[c]) * mul;
    } else {
      for (int64_t c = 0; c < D; ++c) d[c] = static_cast<A>(s[c * v.s3]) * mul;
    }
  }
  std::fill(dst + n * D, dst + rows * D, A(0));
}

// dst[c * BK + r] = src row (r0 + r), column c: the transposed tile, zero past n.
template <class A, class T>
void load_rows_t(A* dst, const View4<T>& v, int64_t b, int64_t h, int64_t r0, int64_t n, int64_t D) {
  std::fill(dst, dst + D * BK, A(0));
  for (int64_t r = 0; r < n; ++r) {
    const T* s = v.row(b, h, r0 + r);
    for (int64_t c = 0; c < D; ++c) dst[c * BK + r] = static_cast<A>(s[c * v.s3]);
  }
}

// C[M, N] (+)= A[M, K] B[K, N], all row-major with leading dims lda, ldb, ldc (TransA: A given
// as its transpose [K, M], so P^T dO and dS^T Q need no transposed copy): the register-
// blocked micro-kernel of every tile product. Blocks of 4 rows x 4 vectors keep 16
// accumulators in registers and load each B vector once per 4 rows; tails take narrower loops.
// GCC warns that some iteration near 2^62 of the scalar loops would overflow, in the one-lane
// HWY_SCALAR instance only; the trip counts are tile sizes (at most 64 x head_dim).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Waggressive-loop-optimizations"
template <bool TransA = false, class A>
HWY_NOINLINE void gemm(A* HWY_RESTRICT C, int64_t ldc, const A* HWY_RESTRICT Am, int64_t lda, const A* HWY_RESTRICT B,
          int64_t ldb, int64_t M, int64_t N, int64_t K, bool accumulate) {
  const hn::ScalableTag<A> d;
  using V = hn::Vec<decltype(d)>;
  const int64_t NL = static_cast<int64_t>(hn::Lanes(d));
  constexpr int R = 4, NV = 4;
  int64_t j = 0;
  for (; j + NV * NL <= N; j += NV * NL) {
    int64_t i = 0;
    for (; i + R <= M; i += R) {
      V c[R][NV];
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) c[r][v] = accumulate ? hn::LoadU(d, C + (i + r) * ldc + j + v * NL) : hn::Zero(d);
      for (int64_t k = 0; k < K; ++k) {
        V b[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) b[v] = hn::LoadU(d, B + k * ldb + j + v * NL);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          const V a = hn::Set(d, TransA ? Am[k * lda + i + r] : Am[(i + r) * lda + k]);
#pragma GCC unroll 4
          for (int v = 0; v < NV; ++v) c[r][v] = hn::MulAdd(a, b[v], c[r][v]);
        }
      }
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) hn::StoreU(c[r][v], d, C + (i + r) * ldc + j + v * NL);
    }
    for (; i < M; ++i) {
      V c[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) c[v] = accumulate ? hn::LoadU(d, C + i * ldc + j + v * NL) : hn::Zero(d);
      for (int64_t k = 0; k < K; ++k) {
        const V a = hn::Set(d, TransA ? Am[k * lda + i] : Am[i * lda + k]);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) c[v] = hn::MulAdd(a, hn::LoadU(d, B + k * ldb + j + v * NL), c[v]);
      }
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) hn::StoreU(c[v], d, C + i * ldc + j + v * NL);
    }
  }
#if HWY_TARGET != HWY_SCALAR  // one lane: the scalar tail below does it
  const int64_t vec_end = j + (N - j) / NL * NL;
  for (; j < vec_end; j += NL) {
    for (int64_t i = 0; i < M; ++i) {
      V c = accumulate ? hn::LoadU(d, C + i * ldc + j) : hn::Zero(d);
      for (int64_t k = 0; k < K; ++k)
        c = hn::MulAdd(hn::Set(d, TransA ? Am[k * lda + i] : Am[i * lda + k]), hn::LoadU(d, B + k * ldb + j), c);
      hn::StoreU(c, d, C + i * ldc + j);
    }
  }
#endif
  for (; j < N; ++j) {
    for (int64_t i = 0; i < M; ++i) {
      A c = accumulate ? C[i * ldc + j] : A(0);
      for (int64_t k = 0; k < K; ++k) c += (TransA ? Am[k * lda + i] : Am[i * lda + k]) * B[k * ldb + j];
      C[i * ldc + j] = c;
    }
  }
}
#pragma GCC diagnostic pop

// max(x[0..n)), vectorized: a scalar max is a chain of dependent instructions.
template <class A>
A row_max(const A* HWY_RESTRICT x, int64_t n) {
  const hn::ScalableTag<A> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  auto m = hn::Set(d, -std::numeric_limits<A>::infinity());
  int64_t j = 0;
  for (; j + N <= n; j += N) m = hn::Max(m, hn::LoadU(d, x + j));
  A r = hn::GetLane(hn::MaxOfLanes(d, m));
  for (; j < n; ++j) r = std::max(r, x[j]);
  return r;
}

// x[j] = exp(x[j] - sub) for j < n; returns the sum. Masked scores (-inf) give 0: the argument
// is clamped to the lowest finite value, inside Exp's domain.
template <class A>
A exp_sum(A* HWY_RESTRICT x, int64_t n, A sub) {
  const hn::ScalableTag<A> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto vsub = hn::Set(d, sub), lo = hn::Set(d, std::numeric_limits<A>::lowest());
  auto acc = hn::Zero(d);
  int64_t j = 0;
  for (; j + N <= n; j += N) {
    const auto e = hn::Exp(d, hn::Max(hn::Sub(hn::LoadU(d, x + j), vsub), lo));
    hn::StoreU(e, d, x + j);
    acc = hn::Add(acc, e);
  }
  A sum = hn::GetLane(hn::SumOfLanes(d, acc));
  for (; j < n; ++j) sum += (x[j] = std::exp(x[j] - sub));
  return sum;
}

// Adds the mask and the causal -inf to the scores of rows [q0, q0 + nq) and keys [k0, k0 + nk)
// of (b, h); columns nk..BK become -inf.
template <class A>
void mask_tile(A* s, int64_t nq, int64_t nk, int64_t q0, int64_t k0, const A* mask, const int64_t* ms, int64_t b,
               int64_t h, bool causal) {
  constexpr A ninf = -std::numeric_limits<A>::infinity();
  for (int64_t i = 0; i < nq; ++i) {
    A* row = s + i * BK;
    if (mask != nullptr) {
      const A* m = mask + b * ms[0] + h * ms[1] + (q0 + i) * ms[2] + k0 * ms[3];
      if (ms[3] == 1) {
        for (int64_t j = 0; j < nk; ++j) row[j] += m[j];
      } else {
        for (int64_t j = 0; j < nk; ++j) row[j] += m[j * ms[3]];
      }
    }
    if (causal)
      for (int64_t j = std::max<int64_t>(0, q0 + i + 1 - k0); j < nk; ++j) row[j] = ninf;
    for (int64_t j = nk; j < BK; ++j) row[j] = ninf;
  }
}

// A scratch buffer of n opmath values from the caching allocator: large packs reuse cached
// blocks instead of page-faulting fresh ones on every call. Not initialized.
template <class A>
struct Scratch {
  Tensor t;
  explicit Scratch(int64_t n) : t(empty({n}, TensorOptions().dtype(std::is_same_v<A, double> ? kFloat64 : kFloat32))) {}
  A* data() const { return t.data_ptr<A>(); }
};

struct Dims {
  int64_t B, H, L, S, E, Ev;
};

Dims dims_of(const Tensor& q, const Tensor& v) {
  return {q.size(0), q.size(1), q.size(2), v.size(2), q.size(3), v.size(3)};
}

// Threads for `tasks` tasks of `flops_per_task` each: the grain counts multiply-adds.
int threads_for_tasks(int64_t tasks, int64_t flops_per_task) {
  const int nt = detail::threads_for(tasks * std::max<int64_t>(1, flops_per_task));
  return static_cast<int>(std::min<int64_t>(nt, tasks));
}

template <class T>
void forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal, double scale,
             const Tensor& out, const Tensor& lse) {
  using A = opmath_t<T>;
  const Dims d = dims_of(q, v);
  const View4<T> Q(q), K(k), V(v);
  T* O = out.data_ptr<T>();
  A* LSE = lse.data_ptr<A>();
  const A* M = mask.defined() ? mask.data_ptr<A>() : nullptr;
  int64_t ms[4] = {0, 0, 0, 0};
  if (M != nullptr)
    for (int i = 0; i < 4; ++i) ms[i] = mask.stride(i);
  const int64_t nqb = (d.L + BQ - 1) / BQ, nkb = (d.S + BK - 1) / BK;
  const int64_t tasks = d.B * d.H * nqb;
  const int nt = threads_for_tasks(tasks, BQ * d.S * (d.E + d.Ev));
  // K^T and V tiles, packed once (every query block reads them): O(S) memory per (batch, head).
  const int64_t kt_size = d.E * BK, v_size = BK * d.Ev;
  const Scratch<A> kpack(d.B * d.H * nkb * kt_size), vpack(d.B * d.H * nkb * v_size);
  detail::parallel_range(d.B * d.H * nkb, nt, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t kb = t % nkb, bh = t / nkb, k0 = kb * BK, nk = std::min(BK, d.S - k0);
      load_rows_t(kpack.data() + t * kt_size, K, bh / d.H, bh % d.H, k0, nk, d.E);
      load_rows(vpack.data() + t * v_size, V, bh / d.H, bh % d.H, k0, nk, BK, d.Ev, A(1));
    }
  });
  detail::parallel_range(tasks, nt, [&](int64_t begin, int64_t end) {
    std::vector<A> qt(BQ * d.E), st(BQ * BK), acc(BQ * d.Ev), mrow(BQ), lrow(BQ);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t qb = task % nqb, bh = task / nqb, b = bh / d.H, h = bh % d.H;
      const int64_t q0 = qb * BQ, nq = std::min(BQ, d.L - q0);
      load_rows(qt.data(), Q, b, h, q0, nq, BQ, d.E, static_cast<A>(scale));
      std::fill(acc.begin(), acc.end(), A(0));
      std::fill(mrow.begin(), mrow.end(), -std::numeric_limits<A>::infinity());
      std::fill(lrow.begin(), lrow.end(), A(0));
      for (int64_t kb = 0; kb < nkb; ++kb) {
        const int64_t k0 = kb * BK, nk = std::min(BK, d.S - k0);
        if (causal && k0 > q0 + nq - 1) break;  // every later tile is above the diagonal
        const A* kt = kpack.data() + (bh * nkb + kb) * kt_size;
        const A* vt = vpack.data() + (bh * nkb + kb) * v_size;
        gemm(st.data(), BK, qt.data(), d.E, kt, BK, nq, BK, d.E, false);
        mask_tile(st.data(), nq, nk, q0, k0, M, ms, b, h, causal);
        for (int64_t i = 0; i < nq; ++i) {
          A* row = st.data() + i * BK;
          const A m_new = std::max(mrow[i], row_max(row, nk));
          // A row masked so far keeps m = -inf; subtracting 0 then keeps exp(-inf) = 0.
          const A sub = std::isinf(m_new) && m_new < 0 ? A(0) : m_new;
          const A alpha = std::exp(mrow[i] - sub);
          const A sum = exp_sum(row, nk, sub);
          lrow[i] = lrow[i] * alpha + sum;
          mrow[i] = m_new;
          A* o = acc.data() + i * d.Ev;
          if (alpha != A(1))
            for (int64_t c = 0; c < d.Ev; ++c) o[c] *= alpha;
        }
        // acc += P V
        gemm(acc.data(), d.Ev, st.data(), BK, vt, d.Ev, nq, d.Ev, nk, true);
      }
      for (int64_t i = 0; i < nq; ++i) {
        const int64_t r = bh * d.L + q0 + i;
        const A inv = A(1) / lrow[i];  // l = 0 (every key masked): 0 * inf = NaN, as the math path
        const A* o = acc.data() + i * d.Ev;
        T* dst = O + r * d.Ev;
        for (int64_t c = 0; c < d.Ev; ++c) dst[c] = static_cast<T>(o[c] * inv);
        LSE[r] = mrow[i] + std::log(lrow[i]);
      }
    }
  });
}

// The per-thread tiles of the backward.
template <class A>
struct BwdTiles {
  std::vector<A> st, dpt, dk, dv, dqt;
  BwdTiles(int64_t E, int64_t Ev) : st(BQ * BK), dpt(BQ * BK), dk(BK * E), dv(BK * Ev), dqt(BQ * E) {}
};

template <class T>
void backward(const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
              const Tensor& lse, const Tensor& mask, bool causal, double scale, const Tensor& grad_q,
              const Tensor& grad_k, const Tensor& grad_v) {
  using A = opmath_t<T>;
  const Dims d = dims_of(q, v);
  const View4<T> Q(q), K(k), V(v), GO(grad_out), OUT(out);
  const A* LSE = lse.data_ptr<A>();
  T *GQ = grad_q.data_ptr<T>(), *GK = grad_k.data_ptr<T>(), *GV = grad_v.data_ptr<T>();
  const A* M = mask.defined() ? mask.data_ptr<A>() : nullptr;
  int64_t ms[4] = {0, 0, 0, 0};
  if (M != nullptr)
    for (int i = 0; i < 4; ++i) ms[i] = mask.stride(i);
  const A sc = static_cast<A>(scale);
  const int64_t nqb = (d.L + BQ - 1) / BQ, nkb = (d.S + BK - 1) / BK, BH = d.B * d.H, Lp = nqb * BQ;
  const int nt = threads_for_tasks(BH * nkb, d.L * BK * (d.E + d.Ev));

  // Packed once: q * scale and dO per (batch, head), rows padded to whole blocks; K, K^T and V^T
  // per key tile; D = rowsum(dO * O).
  const int64_t kt_size = BK * d.E, vt_size = d.Ev * BK;
  const Scratch<A> qpack(BH * Lp * d.E), dopack(BH * Lp * d.Ev), Dv(BH * d.L);
  const Scratch<A> krpack(BH * nkb * kt_size), ktpack(BH * nkb * kt_size), vtpack(BH * nkb * vt_size);
  detail::parallel_range(BH, std::min<int64_t>(nt, BH), [&](int64_t begin, int64_t end) {
    std::vector<A> orow(d.Ev);
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / d.H, h = bh % d.H;
      A* qp = qpack.data() + bh * Lp * d.E;
      A* dop = dopack.data() + bh * Lp * d.Ev;
      load_rows(qp, Q, b, h, 0, d.L, Lp, d.E, sc);
      load_rows(dop, GO, b, h, 0, d.L, Lp, d.Ev, A(1));
      for (int64_t i = 0; i < d.L; ++i) {
        load_rows(orow.data(), OUT, b, h, i, 1, 1, d.Ev, A(1));
        A acc = 0;
        for (int64_t c = 0; c < d.Ev; ++c) acc += orow[c] * dop[i * d.Ev + c];
        Dv.data()[bh * d.L + i] = acc;
      }
      for (int64_t kb = 0; kb < nkb; ++kb) {
        const int64_t k0 = kb * BK, nk = std::min(BK, d.S - k0), t = bh * nkb + kb;
        load_rows(krpack.data() + t * kt_size, K, b, h, k0, nk, BK, d.E, A(1));
        load_rows_t(ktpack.data() + t * kt_size, K, b, h, k0, nk, d.E);
        load_rows_t(vtpack.data() + t * vt_size, V, b, h, k0, nk, d.Ev);
      }
    }
  });

  // The tile (query block qb, key block kb) of (bh): P into w.st, dS into w.dpt; then
  // dV += P^T dO and dK += dS^T (scale * Q) when kv, dQ (unscaled) += dS K into dq when given.
  auto tile = [&](BwdTiles<A>& w, int64_t bh, int64_t qb, int64_t kb, bool kv, A* dq, int64_t ldq) {
    const int64_t b = bh / d.H, h = bh % d.H, q0 = qb * BQ, nq = std::min(BQ, d.L - q0);
    const int64_t k0 = kb * BK, nk = std::min(BK, d.S - k0), t = bh * nkb + kb;
    const A* qt = qpack.data() + (bh * Lp + q0) * d.E;
    const A* dot = dopack.data() + (bh * Lp + q0) * d.Ev;
    // P = exp(s - lse).
    gemm(w.st.data(), BK, qt, d.E, ktpack.data() + t * kt_size, BK, nq, BK, d.E, false);
    mask_tile(w.st.data(), nq, nk, q0, k0, M, ms, b, h, causal);
    for (int64_t i = 0; i < nq; ++i) {
      const A l = LSE[bh * d.L + q0 + i];
      A* row = w.st.data() + i * BK;
      if (std::isinf(l) && l < 0) {  // every key masked: NaN, as the math path
        std::fill(row, row + BK, std::numeric_limits<A>::quiet_NaN());
        continue;
      }
      exp_sum(row, BK, l);
    }
    if (kv) gemm<true>(w.dv.data(), d.Ev, w.st.data(), BK, dot, d.Ev, nk, d.Ev, nq, true);  // dV += P^T dO
    // dP = dO V^T, dS = P * (dP - D)
    gemm(w.dpt.data(), BK, dot, d.Ev, vtpack.data() + t * vt_size, BK, nq, BK, d.Ev, false);
    for (int64_t i = 0; i < nq; ++i) {
      const A Di = Dv.data()[bh * d.L + q0 + i];
      A* ds = w.dpt.data() + i * BK;
      const A* p = w.st.data() + i * BK;
      for (int64_t j = 0; j < BK; ++j) ds[j] = p[j] * (ds[j] - Di);
    }
    if (dq != nullptr) gemm(dq, ldq, w.dpt.data(), BK, krpack.data() + t * kt_size, d.E, nq, d.E, nk, true);
    if (kv) gemm<true>(w.dk.data(), d.E, w.dpt.data(), BK, qt, d.E, nk, d.E, nq, true);  // dK += dS^T (scale Q)
  };
  // dK, dV of key block kb, looping over the query blocks that see it (causal: from k0 on).
  auto kv_block = [&](BwdTiles<A>& w, int64_t bh, int64_t kb, A* dq) {
    const int64_t k0 = kb * BK, nk = std::min(BK, d.S - k0);
    std::fill(w.dk.begin(), w.dk.end(), A(0));
    std::fill(w.dv.begin(), w.dv.end(), A(0));
    for (int64_t qb = causal ? k0 / BQ : 0; qb < nqb; ++qb)
      tile(w, bh, qb, kb, true, dq == nullptr ? nullptr : dq + qb * BQ * d.E, d.E);
    for (int64_t j = 0; j < nk; ++j) {
      T* gk = GK + (bh * d.S + k0 + j) * d.E;
      T* gv = GV + (bh * d.S + k0 + j) * d.Ev;
      for (int64_t c = 0; c < d.E; ++c) gk[c] = static_cast<T>(w.dk[j * d.E + c]);
      for (int64_t c = 0; c < d.Ev; ++c) gv[c] = static_cast<T>(w.dv[j * d.Ev + c]);
    }
  };

  if (BH >= nt) {
    // One task per (batch, head): key blocks outer, dQ accumulated over them in an [L, E] buffer.
    detail::parallel_range(BH, nt, [&](int64_t begin, int64_t end) {
      BwdTiles<A> w(d.E, d.Ev);
      std::vector<A> dq(Lp * d.E);
      for (int64_t bh = begin; bh < end; ++bh) {
        std::fill(dq.begin(), dq.end(), A(0));
        for (int64_t kb = 0; kb < nkb; ++kb) kv_block(w, bh, kb, dq.data());
        T* gq = GQ + bh * d.L * d.E;
        for (int64_t i = 0; i < d.L * d.E; ++i) gq[i] = static_cast<T>(dq[i] * sc);
      }
    });
    return;
  }
  // Fewer (batch, head) pairs than threads: one pass over (batch, head, key block) for dK and
  // dV, and one over (batch, head, query block) for dQ, which recomputes P and dS (three more
  // tile products per tile) so that no two threads write one row.
  detail::parallel_range(BH * nkb, nt, [&](int64_t begin, int64_t end) {
    BwdTiles<A> w(d.E, d.Ev);
    for (int64_t t = begin; t < end; ++t) kv_block(w, t / nkb, t % nkb, nullptr);
  });
  detail::parallel_range(BH * nqb, std::min<int64_t>(nt, BH * nqb), [&](int64_t begin, int64_t end) {
    BwdTiles<A> w(d.E, d.Ev);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t bh = t / nqb, qb = t % nqb, q0 = qb * BQ, nq = std::min(BQ, d.L - q0);
      std::fill(w.dqt.begin(), w.dqt.end(), A(0));
      for (int64_t kb = 0; kb < nkb; ++kb) {
        if (causal && kb * BK > q0 + nq - 1) break;
        tile(w, bh, qb, kb, false, w.dqt.data(), d.E);
      }
      T* gq = GQ + (bh * d.L + q0) * d.E;
      for (int64_t i = 0; i < nq * d.E; ++i) gq[i] = static_cast<T>(w.dqt[i] * sc);
    }
  });
}

}  // namespace

void FlashForwardImpl(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
                      double scale, const Tensor& out, const Tensor& lse) {
  visit_dtype<kGroupFloating>(q.scalar_type(), "_scaled_dot_product_flash_attention_for_cpu", [&](auto tag) {
    using T = typename decltype(tag)::type;
    forward<T>(q, k, v, mask, causal, scale, out, lse);
  });
}

void FlashBackwardImpl(const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                       const Tensor& lse, const Tensor& mask, bool causal, double scale, const Tensor& grad_q,
                       const Tensor& grad_k, const Tensor& grad_v) {
  visit_dtype<kGroupFloating>(q.scalar_type(), "_scaled_dot_product_flash_attention_for_cpu_backward",
                              [&](auto tag) {
                                using T = typename decltype(tag)::type;
                                backward<T>(grad_out, q, k, v, out, lse, mask, causal, scale, grad_q, grad_k,
                                            grad_v);
                              });
}

}  // namespace tensor::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tensor::cpu {
HWY_EXPORT(FlashForwardImpl);
HWY_EXPORT(FlashBackwardImpl);

void flash_attention_kernel(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
                            double scale, const Tensor& out, const Tensor& lse) {
  HWY_DYNAMIC_DISPATCH(FlashForwardImpl)(q, k, v, mask, causal, scale, out, lse);
}

void flash_attention_backward_kernel(const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
                                     const Tensor& out, const Tensor& lse, const Tensor& mask, bool causal,
                                     double scale, const Tensor& grad_q, const Tensor& grad_k,
                                     const Tensor& grad_v) {
  HWY_DYNAMIC_DISPATCH(FlashBackwardImpl)(grad_out, q, k, v, out, lse, mask, causal, scale, grad_q, grad_k, grad_v);
}
}  // namespace tensor::cpu
#endif
