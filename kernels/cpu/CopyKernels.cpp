// CPU copy (with dtype conversion), fill, where and clamp kernels, per Highway target.
#include "kernels/cpu/Elementwise.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/CopyKernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/cpu/Loops-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tensor::cpu::HWY_NAMESPACE {
void CopyKernelImpl(const TensorIterator& iter) {
  visit_dtype(iter.dtype(0), "copy_", [&](auto otag) {
    using O = typename decltype(otag)::type;
    visit_dtype(iter.dtype(1), "copy_", [&](auto itag) {
      using I = typename decltype(itag)::type;
      if constexpr (std::is_same_v<O, I>) {
        iter.for_each([&](char** d, const int64_t* s, int64_t n0, int64_t n1) {
          for (int64_t j = 0; j < n1; ++j) {
            char* po = d[0] + j * s[2];
            const char* pi = d[1] + j * s[3];
            if (s[0] == sizeof(O) && s[1] == sizeof(O)) {
              std::memcpy(po, pi, static_cast<size_t>(n0) * sizeof(O));
            } else {
              for (int64_t i = 0; i < n0; ++i)
                *reinterpret_cast<O*>(po + i * s[0]) = *reinterpret_cast<const O*>(pi + i * s[1]);
            }
          }
        });
      } else {
        iter.for_each([&](char** d, const int64_t* s, int64_t n0, int64_t n1) {
          for (int64_t j = 0; j < n1; ++j) {
            char* po = d[0] + j * s[2];
            const char* pi = d[1] + j * s[3];
            if (s[0] == sizeof(O) && s[1] == sizeof(I)) {
              O* o = reinterpret_cast<O*>(po);
              const I* in = reinterpret_cast<const I*>(pi);
              for (int64_t i = 0; i < n0; ++i) o[i] = convert<O>(in[i]);
            } else {
              for (int64_t i = 0; i < n0; ++i)
                *reinterpret_cast<O*>(po + i * s[0]) = convert<O>(*reinterpret_cast<const I*>(pi + i * s[1]));
            }
          }
        });
      }
    });
  });
}

void FillKernelImpl(const TensorIterator& iter, const Scalar& value) {
  visit_dtype(iter.dtype(0), "fill_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v;
    if constexpr (is_complex_v<T>) v = T(value.to_complex());
    else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) v = T(static_cast<float>(value.to_double()));
    else v = value.to<T>();
    iter.for_each([&](char** d, const int64_t* s, int64_t n0, int64_t n1) {
      for (int64_t j = 0; j < n1; ++j) {
        char* po = d[0] + j * s[1];
        if (s[0] == sizeof(T)) {
          T* o = reinterpret_cast<T*>(po);
          for (int64_t i = 0; i < n0; ++i) o[i] = v;
        } else {
          for (int64_t i = 0; i < n0; ++i) *reinterpret_cast<T*>(po + i * s[0]) = v;
        }
      }
    });
  });
}

void WhereKernelImpl(const TensorIterator& iter) {
  TENSOR_INTERNAL_ASSERT(iter.dtype(1) == kBool);
  visit_dtype(iter.dtype(0), "where", [&](auto tag) {
    using T = typename decltype(tag)::type;
    iter.for_each([&](char** d, const int64_t* s, int64_t n0, int64_t n1) {
      for (int64_t j = 0; j < n1; ++j) {
        char* po = d[0] + j * s[4];
        const char* pc = d[1] + j * s[5];
        const char* pa = d[2] + j * s[6];
        const char* pb = d[3] + j * s[7];
        if (s[0] == sizeof(T) && s[1] == 1 && s[2] == sizeof(T) && s[3] == sizeof(T)) {
          T* o = reinterpret_cast<T*>(po);
          const bool* c = reinterpret_cast<const bool*>(pc);
          const T* a = reinterpret_cast<const T*>(pa);
          const T* b = reinterpret_cast<const T*>(pb);
          for (int64_t i = 0; i < n0; ++i) o[i] = c[i] ? a[i] : b[i];
        } else {
          for (int64_t i = 0; i < n0; ++i)
            *reinterpret_cast<T*>(po + i * s[0]) = *reinterpret_cast<const bool*>(pc + i * s[1])
                                                       ? *reinterpret_cast<const T*>(pa + i * s[2])
                                                       : *reinterpret_cast<const T*>(pb + i * s[3]);
        }
      }
    });
  });
}

void ClampKernelImpl(const TensorIterator& iter, const Scalar* lo, const Scalar* hi) {
  visit_dtype<kGroupInt | kGroupFloating>(iter.dtype(0), "clamp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using OT = opmath_t<T>;
    const bool has_lo = lo != nullptr, has_hi = hi != nullptr;
    const OT l = has_lo ? lo->to<OT>() : OT(0), h = has_hi ? hi->to<OT>() : OT(0);
    auto f = [=](OT x) {
      if (has_lo && x < l) x = l;
      if (has_hi && x > h) x = h;
      return x;
    };
    iter.for_each([&](char** d, const int64_t* s, int64_t n0, int64_t n1) { loop_unary<T, T>(d, s, n0, n1, f); });
  });
}

}  // namespace tensor::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tensor::cpu {
HWY_EXPORT(CopyKernelImpl);
HWY_EXPORT(FillKernelImpl);
HWY_EXPORT(WhereKernelImpl);
HWY_EXPORT(ClampKernelImpl);
void copy_kernel(const TensorIterator& iter) { HWY_DYNAMIC_DISPATCH(CopyKernelImpl)(iter); }
void fill_kernel(const TensorIterator& iter, const Scalar& v) { HWY_DYNAMIC_DISPATCH(FillKernelImpl)(iter, v); }
void where_kernel(const TensorIterator& iter) { HWY_DYNAMIC_DISPATCH(WhereKernelImpl)(iter); }
void clamp_kernel(const TensorIterator& iter, const Scalar* lo, const Scalar* hi) {
  HWY_DYNAMIC_DISPATCH(ClampKernelImpl)(iter, lo, hi);
}
}  // namespace tensor::cpu
#endif
