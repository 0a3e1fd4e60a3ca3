// Per-ISA loop templates (Note [Per-ISA loops]). Included once per Highway target, inside
// that target's pragma region, so the plain C++ loops below are auto-vectorized for AVX-512,
// AVX2 and the baseline separately, and the explicit Highway code picks that target's ops.

// Per-target include guard, as Highway's -inl.h convention requires.
#if defined(TENSOR_KERNELS_CPU_LOOPS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TENSOR_KERNELS_CPU_LOOPS_INL_H_
#undef TENSOR_KERNELS_CPU_LOOPS_INL_H_
#else
#define TENSOR_KERNELS_CPU_LOOPS_INL_H_
#endif

#include <hwy/highway.h>

#include "src/core/DtypeVisit.h"

HWY_BEFORE_NAMESPACE();
namespace tensor::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Note [Per-ISA loops]
// Kernels are written once as a scalar functor on opmath values. The loops below give the
// compiler typed, unit-stride inner loops (and scalar-broadcast variants) that it vectorizes
// for the ISA of the enclosing Highway target; transcendental float ops add explicit Highway
// vector code (hwy/contrib/math). Strided and mixed cases take the generic byte-stride path.

template <class out_t, class a_t, class F>
HWY_INLINE void loop_unary(char** data, const int64_t* s, int64_t n0, int64_t n1, const F& f) {
  using oa = opmath_t<a_t>;
  for (int64_t j = 0; j < n1; ++j) {
    char* po = data[0] + j * s[2];
    const char* pa = data[1] + j * s[3];
    if (s[0] == sizeof(out_t) && s[1] == sizeof(a_t)) {
      out_t* o = reinterpret_cast<out_t*>(po);
      const a_t* a = reinterpret_cast<const a_t*>(pa);
      for (int64_t i = 0; i < n0; ++i) o[i] = convert<out_t>(f(static_cast<oa>(a[i])));
    } else if (s[0] == sizeof(out_t) && s[1] == 0) {
      out_t* o = reinterpret_cast<out_t*>(po);
      const out_t v = convert<out_t>(f(static_cast<oa>(*reinterpret_cast<const a_t*>(pa))));
      for (int64_t i = 0; i < n0; ++i) o[i] = v;
    } else {
      for (int64_t i = 0; i < n0; ++i)
        *reinterpret_cast<out_t*>(po + i * s[0]) = convert<out_t>(f(static_cast<oa>(*reinterpret_cast<const a_t*>(pa + i * s[1]))));
    }
  }
}

template <class out_t, class a_t, class b_t, class F>
HWY_INLINE void loop_binary(char** data, const int64_t* s, int64_t n0, int64_t n1, const F& f) {
  using oa = opmath_t<a_t>;
  using ob = opmath_t<b_t>;
  for (int64_t j = 0; j < n1; ++j) {
    char* po = data[0] + j * s[3];
    const char* pa = data[1] + j * s[4];
    const char* pb = data[2] + j * s[5];
    out_t* o = reinterpret_cast<out_t*>(po);
    const a_t* a = reinterpret_cast<const a_t*>(pa);
    const b_t* b = reinterpret_cast<const b_t*>(pb);
    if (s[0] == sizeof(out_t) && s[1] == sizeof(a_t) && s[2] == sizeof(b_t)) {
      for (int64_t i = 0; i < n0; ++i) o[i] = convert<out_t>(f(static_cast<oa>(a[i]), static_cast<ob>(b[i])));
    } else if (s[0] == sizeof(out_t) && s[1] == sizeof(a_t) && s[2] == 0) {
      const ob bv = static_cast<ob>(*b);
      for (int64_t i = 0; i < n0; ++i) o[i] = convert<out_t>(f(static_cast<oa>(a[i]), bv));
    } else if (s[0] == sizeof(out_t) && s[1] == 0 && s[2] == sizeof(b_t)) {
      const oa av = static_cast<oa>(*a);
      for (int64_t i = 0; i < n0; ++i) o[i] = convert<out_t>(f(av, static_cast<ob>(b[i])));
    } else {
      for (int64_t i = 0; i < n0; ++i)
        *reinterpret_cast<out_t*>(po + i * s[0]) =
            convert<out_t>(f(static_cast<oa>(*reinterpret_cast<const a_t*>(pa + i * s[1])),
                             static_cast<ob>(*reinterpret_cast<const b_t*>(pb + i * s[2]))));
    }
  }
}

/// Applies a Highway vector functor over a contiguous float/double array; the tail goes
/// through the same vector code via a padded buffer so every element sees one algorithm.
template <class T, class VF>
HWY_INLINE void vec_map(const T* in, T* out, int64_t n, const VF& vf) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(vf(d, hn::LoadU(d, in + i)), d, out + i);
  if (i < n) {
    HWY_ALIGN T buf[HWY_MAX_BYTES / sizeof(T)] = {};
    for (int64_t k = 0; k < n - i; ++k) buf[k] = in[i + k];
    hn::Store(vf(d, hn::Load(d, buf)), d, buf);
    for (int64_t k = 0; k < n - i; ++k) out[i + k] = buf[k];
  }
}

}  // namespace tensor::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
