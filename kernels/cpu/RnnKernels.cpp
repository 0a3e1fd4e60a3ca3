// The fused per-step kernels of the recurrent layers (kernels/cpu/RnnKernels.h), compiled once
// per Highway target (Note [Per-ISA loops]); src/nn/RNNFused.cpp calls them.
#include "kernels/cpu/RnnKernels.h"

#include "src/core/Check.h"
#include "src/core/Parallel.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/RnnKernels.cpp"
// foreach_target.h must come first.
// clang-format off
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace tensor::cpu::HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

// Highway's Exp is accurate only inside its documented range (Note [Vector math at the edges]):
// the argument is clamped where sigmoid is already 0 or 1 in the type, and NaN stays NaN.
template <class D, class V>
HWY_INLINE V sigmoid(D d, V x) {
  using T = hn::TFromD<D>;
  const T lim = sizeof(T) == 4 ? T(80) : T(700);
  const V one = hn::Set(d, T(1));
  const V xc = hn::Min(hn::Max(x, hn::Set(d, -lim)), hn::Set(d, lim));
  const V r = hn::Div(one, hn::Add(one, hn::Exp(d, hn::Neg(xc))));
  return hn::IfThenElse(hn::IsNaN(x), x, r);
}
template <class D, class V>
HWY_INLINE V tanh_(D d, V x) {
  return hn::IfThenElse(hn::IsNaN(x), x, hn::Tanh(d, x));
}
template <class D, class V>
HWY_INLINE V relu(D d, V x) {
  return hn::IfThenElse(hn::IsNaN(x), x, hn::Max(x, hn::Zero(d)));
}

// Runs f(d, j) over j in [0, H) in full vectors, then the remainder one lane at a time with the
// same code (a one-lane tag), so the tail computes exactly what the body does.
template <class T, class F>
HWY_INLINE void over_row(int64_t H, const F& f) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t j = 0;
  for (; j + N <= H; j += N) f(d, j);
  const hn::CappedTag<T, 1> d1;
  for (; j < H; ++j) f(d1, j);
}

template <class T>
void forward_rows(RnnCell cell, const RnnForwardStep& s, int64_t b0, int64_t b1) {
  const int64_t H = s.H, G = rnn_gates(cell) * H;
  const bool save = s.act != nullptr;
  for (int64_t b = b0; b < b1; ++b) {
    const T* gx = static_cast<const T*>(s.gx) + b * G;
    const T* gh = static_cast<const T*>(s.gh) + b * G;
    T* h = static_cast<T*>(s.h) + b * H;
    T* y = static_cast<T*>(s.y) + b * H;
    T* act = save ? static_cast<T*>(s.act) + b * G : nullptr;
    T* hprev = save ? static_cast<T*>(s.hprev) + b * H : nullptr;
    over_row<T>(H, [&](auto d, int64_t j) {
      using V = decltype(hn::Zero(d));
      auto pre = [&](int64_t k) { return hn::Add(hn::LoadU(d, gx + k * H + j), hn::LoadU(d, gh + k * H + j)); };
      const V hp = hn::LoadU(d, h + j);
      if (save) hn::StoreU(hp, d, hprev + j);
      V hn_;
      switch (cell) {
        case RnnCell::Tanh:
          hn_ = tanh_(d, pre(0));
          if (save) hn::StoreU(hn_, d, act + j);
          break;
        case RnnCell::Relu:
          hn_ = relu(d, pre(0));
          if (save) hn::StoreU(hn_, d, act + j);
          break;
        case RnnCell::LSTM: {
          T* c = static_cast<T*>(s.c) + b * H;
          const V i = sigmoid(d, pre(0)), f = sigmoid(d, pre(1)), g = tanh_(d, pre(2)), o = sigmoid(d, pre(3));
          const V cp = hn::LoadU(d, c + j);
          const V cn = hn::MulAdd(f, cp, hn::Mul(i, g));
          const V tc = tanh_(d, cn);
          hn_ = hn::Mul(o, tc);
          hn::StoreU(cn, d, c + j);
          if (save) {
            hn::StoreU(i, d, act + j);
            hn::StoreU(f, d, act + H + j);
            hn::StoreU(g, d, act + 2 * H + j);
            hn::StoreU(o, d, act + 3 * H + j);
            hn::StoreU(cp, d, static_cast<T*>(s.cprev) + b * H + j);
            hn::StoreU(tc, d, static_cast<T*>(s.aux) + b * H + j);
          }
          break;
        }
        case RnnCell::GRU: {
          const V r = sigmoid(d, pre(0)), z = sigmoid(d, pre(1));
          const V ghn = hn::LoadU(d, gh + 2 * H + j);
          const V n = tanh_(d, hn::MulAdd(r, ghn, hn::LoadU(d, gx + 2 * H + j)));
          hn_ = hn::MulAdd(z, hn::Sub(hp, n), n);  // (1 - z) * n + z * h
          if (save) {
            hn::StoreU(r, d, act + j);
            hn::StoreU(z, d, act + H + j);
            hn::StoreU(n, d, act + 2 * H + j);
            hn::StoreU(ghn, d, static_cast<T*>(s.aux) + b * H + j);
          }
          break;
        }
      }
      hn::StoreU(hn_, d, h + j);
      hn::StoreU(hn_, d, y + j);
    });
  }
}

template <class T>
void backward_rows(RnnCell cell, const RnnBackwardStep& s, int64_t b0, int64_t b1) {
  const int64_t H = s.H, G = rnn_gates(cell) * H;
  for (int64_t b = b0; b < b1; ++b) {
    const T* dy = s.dy ? static_cast<const T*>(s.dy) + b * H : nullptr;
    T* dhp = static_cast<T*>(s.dh) + b * H;
    const T* act = static_cast<const T*>(s.act) + b * G;
    T* dgx = static_cast<T*>(s.dgx) + b * G;
    over_row<T>(H, [&](auto d, int64_t j) {
      using V = decltype(hn::Zero(d));
      const V one = hn::Set(d, T(1));
      V dh = hn::LoadU(d, dhp + j);
      if (dy) dh = hn::Add(dh, hn::LoadU(d, dy + j));
      switch (cell) {
        case RnnCell::Tanh: {
          const V h = hn::LoadU(d, act + j);
          hn::StoreU(hn::Mul(dh, hn::NegMulAdd(h, h, one)), d, dgx + j);
          hn::StoreU(hn::Zero(d), d, dhp + j);
          break;
        }
        case RnnCell::Relu: {
          const V h = hn::LoadU(d, act + j);
          hn::StoreU(hn::IfThenElseZero(hn::Gt(h, hn::Zero(d)), dh), d, dgx + j);
          hn::StoreU(hn::Zero(d), d, dhp + j);
          break;
        }
        case RnnCell::LSTM: {
          T* dcp = static_cast<T*>(s.dc) + b * H;
          const V i = hn::LoadU(d, act + j), f = hn::LoadU(d, act + H + j), g = hn::LoadU(d, act + 2 * H + j),
                  o = hn::LoadU(d, act + 3 * H + j);
          const V tc = hn::LoadU(d, static_cast<const T*>(s.aux) + b * H + j);
          const V cp = hn::LoadU(d, static_cast<const T*>(s.cprev) + b * H + j);
          // dc = dc_next + dh * o * (1 - tanh(c)^2)
          const V dc = hn::MulAdd(hn::Mul(dh, o), hn::NegMulAdd(tc, tc, one), hn::LoadU(d, dcp + j));
          const V di = hn::Mul(dc, g), df = hn::Mul(dc, cp), dg = hn::Mul(dc, i), do_ = hn::Mul(dh, tc);
          hn::StoreU(hn::Mul(di, hn::Mul(i, hn::Sub(one, i))), d, dgx + j);
          hn::StoreU(hn::Mul(df, hn::Mul(f, hn::Sub(one, f))), d, dgx + H + j);
          hn::StoreU(hn::Mul(dg, hn::NegMulAdd(g, g, one)), d, dgx + 2 * H + j);
          hn::StoreU(hn::Mul(do_, hn::Mul(o, hn::Sub(one, o))), d, dgx + 3 * H + j);
          hn::StoreU(hn::Mul(dc, f), d, dcp + j);
          hn::StoreU(hn::Zero(d), d, dhp + j);
          break;
        }
        case RnnCell::GRU: {
          T* dgh = static_cast<T*>(s.dgh) + b * G;
          const V r = hn::LoadU(d, act + j), z = hn::LoadU(d, act + H + j), n = hn::LoadU(d, act + 2 * H + j);
          const V hp = hn::LoadU(d, static_cast<const T*>(s.hprev) + b * H + j);
          const V ghn = hn::LoadU(d, static_cast<const T*>(s.aux) + b * H + j);
          // h = (1 - z) * n + z * hprev; n = tanh(gx_n + r * gh_n)
          const V dpn = hn::Mul(hn::Mul(dh, hn::Sub(one, z)), hn::NegMulAdd(n, n, one));
          const V dpz = hn::Mul(hn::Mul(dh, hn::Sub(hp, n)), hn::Mul(z, hn::Sub(one, z)));
          const V dpr = hn::Mul(hn::Mul(dpn, ghn), hn::Mul(r, hn::Sub(one, r)));
          hn::StoreU(dpr, d, dgx + j);
          hn::StoreU(dpz, d, dgx + H + j);
          hn::StoreU(dpn, d, dgx + 2 * H + j);
          hn::StoreU(dpr, d, dgh + j);
          hn::StoreU(dpz, d, dgh + H + j);
          hn::StoreU(hn::Mul(dpn, r), d, dgh + 2 * H + j);
          hn::StoreU(hn::Mul(dh, z), d, dhp + j);
          break;
        }
      }
    });
  }
}

}  // namespace

void RnnForwardImpl(int dtype, int cell, const RnnForwardStep& s) {
  const RnnCell c = static_cast<RnnCell>(cell);
  // A step's rows are independent: threads split them once the step has a grain of work.
  ::tensor::detail::parallel_range(s.n, ::tensor::detail::threads_for(s.n * s.H * rnn_gates(c) * 8),
                                   [&](int64_t b0, int64_t b1) {
                                     if (dtype == static_cast<int>(ScalarType::Float))
                                       forward_rows<float>(c, s, b0, b1);
                                     else
                                       forward_rows<double>(c, s, b0, b1);
                                   });
}

void RnnBackwardImpl(int dtype, int cell, const RnnBackwardStep& s) {
  const RnnCell c = static_cast<RnnCell>(cell);
  ::tensor::detail::parallel_range(s.n, ::tensor::detail::threads_for(s.n * s.H * rnn_gates(c) * 4),
                                   [&](int64_t b0, int64_t b1) {
                                     if (dtype == static_cast<int>(ScalarType::Float))
                                       backward_rows<float>(c, s, b0, b1);
                                     else
                                       backward_rows<double>(c, s, b0, b1);
                                   });
}

}  // namespace tensor::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tensor::cpu {

HWY_EXPORT(RnnForwardImpl);
HWY_EXPORT(RnnBackwardImpl);

void rnn_forward_step(ScalarType dtype, RnnCell cell, const RnnForwardStep& s) {
  TENSOR_INTERNAL_ASSERT(dtype == ScalarType::Float || dtype == ScalarType::Double);
  HWY_DYNAMIC_DISPATCH(RnnForwardImpl)(static_cast<int>(dtype), static_cast<int>(cell), s);
}

void rnn_backward_step(ScalarType dtype, RnnCell cell, const RnnBackwardStep& s) {
  TENSOR_INTERNAL_ASSERT(dtype == ScalarType::Float || dtype == ScalarType::Double);
  HWY_DYNAMIC_DISPATCH(RnnBackwardImpl)(static_cast<int>(dtype), static_cast<int>(cell), s);
}

}  // namespace tensor::cpu
#endif
