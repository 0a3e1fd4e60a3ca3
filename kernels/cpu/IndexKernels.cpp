// The CPU loops of the indexing ops: index_select, gather, scatter, scatter_add, index_add,
// masked_select, nonzero (front ends: src/ops/IndexOps.cpp) and Tensor::index/index_put_ (front
// ends: src/ops/AdvancedIndexing.cpp), over the strided offset loop of kernels/cpu/IndexLoops.h
// (Note [Index loop geometry]). Element moves go through an unsigned type as wide as one element,
// so they need no per-dtype code.
#include "kernels/cpu/IndexKernels.h"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "src/core/DtypeVisit.h"
#include "src/core/Parallel.h"
#include "tensor/ops.h"

namespace tensor::cpu {

// The Highway where kernel (kernels/cpu/CopyKernels.cpp), declared here rather than through
// kernels/cpu/Elementwise.h (and its TensorIterator.h), which this file needs for nothing else.
/// out = where(mask, value, src), mask and src broadcast to out's shape (src may be out itself).
void masked_fill_where(const Tensor& out, const Tensor& mask, const Tensor& value, const Tensor& src, const char* op);
// The Highway maxima of kernels/cpu/IndexRangeKernels.cpp: the largest of p[0, n) read as
// unsigned values.
uint64_t index_max_unsigned(const int64_t* p, int64_t n);
uint32_t index_max_unsigned(const int32_t* p, int64_t n);
void gather_row32(const uint32_t* s, const int64_t* idx, uint32_t* o, int64_t k);

void masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value, const Tensor& src, const char* op) {
  // self = where(mask, value, src): the value is a 0-dim tensor that the iterator broadcasts
  // with stride 0, so this runs the vectorized select (Note [Vectorized where] in
  // kernels/cpu/CopyKernels.cpp) rather than a per-element branch on random masks.
  Tensor fillv = empty({}, self.options());
  visit_dtype(self.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    *static_cast<T*>(fillv.data_ptr()) = checked_scalar<T>(value, op);
  });
  masked_fill_where(self, mask, fillv, src, op);
}

namespace {
using index_loops::Geometry;
using index_loops::geometry_of;
using index_loops::visit_element_size;

template <class F>
void visit_index_dtype(ScalarType t, F&& f) {
  if (t == kInt32)
    f(TypeTag<int32_t>{});
  else
    f(TypeTag<int64_t>{});
}

/// dst (+)= v in the op's compute type (float for half types, logical or for bool).
template <class T>
inline void add_into(T& dst, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    dst = dst || v;
  } else {
    using M = opmath_t<T>;
    dst = convert<T>(static_cast<M>(convert<M>(dst) + convert<M>(v)));
  }
}

template <class T>
inline bool is_nonzero(T v) {
  if constexpr (std::is_same_v<T, bool>)
    return v;
  else if constexpr (is_complex_v<T>)
    return v != T(0);
  else
    return static_cast<opmath_t<T>>(v) != opmath_t<T>(0);
}
}  // namespace

bool index_values_in_range(const Tensor& index, int64_t size, int64_t& bad_value) {
  if (index.is_contiguous()) {
    // A vector maximum first (serial: a parallel region costs more than it saves on a loaded
    // machine); only a failing index pays for the ordered scan below that finds the first bad
    // value for the message. As unsigned values a negative index is above every size, so one
    // maximum checks both bounds. Over 4096 int64 indices the scalar maximum (four chains, 15.4K
    // instructions) took about 1 us, a third of a gather_dim1_4K call; the Highway one (7.0K
    // with AVX2 under callgrind; AVX-512 has a native unsigned maximum) takes 8% of the call's
    // perf samples where the scalar one took 20%.
    const int64_t n = index.numel();
    bool ok;
    if (index.dtype() == kInt32) {
      // An int32 index is at most INT32_MAX, so above that size only a negative one (a uint32
      // at 2^31 or more) is bad.
      const uint64_t m = index_max_unsigned(index.data_ptr<int32_t>(), n);
      ok = size > INT32_MAX ? m <= uint64_t(INT32_MAX) : m < static_cast<uint64_t>(size);
    } else {
      ok = index_max_unsigned(index.data_ptr<int64_t>(), n) < static_cast<uint64_t>(size);
    }
    if (ok) return true;
  }
  Geometry g = geometry_of(index);
  g.coalesce();
  bool bad = false;
  visit_index_dtype(index.dtype(), [&](auto tag) {
    using I = typename decltype(tag)::type;
    const I* p = index.data_ptr<I>();
    auto f = [&](int64_t a, int64_t, int64_t) {
      int64_t v = static_cast<int64_t>(p[a]);
      if (!bad && (v < 0 || v >= size)) {
        bad = true;
        bad_value = v;
      }
    };
    index_loops::for_each(g, f, /*parallel=*/false);
  });
  return !bad;
}

void index_select(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& out) {
  const int64_t es = self.element_size();
  const int64_t n = index.numel(), idx_stride = index.dim() == 1 ? index.stride(0) : 0;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= self.size(d);
  for (int64_t d = dim + 1; d < self.dim(); ++d) inner *= self.size(d);
  visit_index_dtype(index.dtype(), [&](auto itag) {
    using I = typename decltype(itag)::type;
    const I* ip = index.data_ptr<I>();
    if (self.is_contiguous() && inner > 1) {
      // Contiguous fast path: every selected slice is `inner` consecutive elements.
      const char* src = static_cast<const char*>(self.data_ptr());
      char* dst = static_cast<char*>(out.data_ptr());
      const int64_t src_size = self.size(dim), rows = outer * n, bytes = inner * es;
      tensor::detail::parallel_range(rows, tensor::detail::threads_for(rows * inner), [&](int64_t rb, int64_t re) {
        for (int64_t r = rb; r < re; ++r) {
          int64_t o = r / n, i = r % n;
          int64_t v = static_cast<int64_t>(ip[i * idx_stride]);
          std::memcpy(dst + r * bytes, src + (o * src_size + v) * bytes, static_cast<size_t>(bytes));
        }
      });
      return;
    }
    Geometry g;
    for (int64_t d = 0; d < self.dim(); ++d)
      g.add_dim(out.size(d), out.stride(d), d == dim ? idx_stride : 0, d == dim ? 0 : self.stride(d));
    g.coalesce();
    const int64_t sd = self.stride(dim);
    visit_element_size(es, [&](auto etag) {
      using E = typename decltype(etag)::type;
      E* o = static_cast<E*>(out.data_ptr());
      const E* s = static_cast<const E*>(self.data_ptr());
      index_loops::for_each(
          g, [=](int64_t a, int64_t b, int64_t c) { o[a] = s[c + static_cast<int64_t>(ip[b]) * sd]; },
          /*parallel=*/true);
    });
  });
}

namespace {
// Note [Inner-dim gather and scatter]
// Along the last dim of contiguous tensors (the cross-entropy and top-k pattern) every row of
// the index reads or writes one row of self, so rows run in parallel with plain pointer loops,
// also for scatter: two rows never touch the same element, and within a row the writes keep
// their order (the last write of a repeated index wins). The rows of self and index must line
// up, so their outer sizes must match.
// Note [Row prefetch only from memory]
// The software prefetch of the next row pays where self streams from memory (gather_dim1_16M:
// 64 MB, 16 KB rows); where self fits in the L2 cache the prefetches, a few per row, were
// themselves the cost: on [64, 64] float32 (16 KB, 256-byte rows) gather took 3.25 us a call
// with them and 2.32 us without, scatter 3.67 and 2.77 us, scatter_add 3.71 and 3.31 us (torch
// 1.13: 2.75, 3.98, 4.11 us), each the best of 200 batches of 200 calls on a loaded machine.
// Above 1 MB (the L2 cache of the benchmarks' machine) self is taken to come from memory.
bool rows_from_memory(const Tensor& self) { return self.numel() * self.element_size() > (int64_t(1) << 20); }

bool inner_rows(const Tensor& self, int64_t dim, const Tensor& idx, const Tensor& other) {
  if (dim != self.dim() - 1 || !self.is_contiguous() || !idx.is_contiguous() || !other.is_contiguous()) return false;
  for (int64_t d = 0; d < dim; ++d)
    if (idx.size(d) != self.size(d) || other.size(d) != idx.size(d)) return false;
  return other.size(dim) == idx.size(dim);
}
}  // namespace

void gather(const Tensor& self, int64_t dim, const Tensor& idx, const Tensor& out) {
  if (inner_rows(self, dim, idx, out)) {
    const int64_t k = idx.size(dim), srow = self.size(dim), rows = idx.numel() / std::max<int64_t>(k, 1);
    const int64_t* ip = idx.data_ptr<int64_t>();
    const bool prefetch = rows_from_memory(self);
    visit_element_size(self.element_size(), [&](auto etag) {
      using E = typename decltype(etag)::type;
      E* o = static_cast<E*>(out.data_ptr());
      const E* s = static_cast<const E*>(self.data_ptr());
      // parallel_range, not an OpenMP region with an if clause (Note [One-thread parallel
      // regions] in src/core/Parallel.h): a one-thread region was a seventh of a [64, 64] gather.
      tensor::detail::parallel_range(rows, tensor::detail::threads_for(rows * k), [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r) {
        const E* sr = s + r * srow;
        const int64_t* ir = ip + r * k;
        E* orow = o + r * k;
        // The reads below hit random cache lines of the row, which the hardware prefetcher
        // cannot follow: fetch the next row's lines in sequence meanwhile, when self is not
        // already in cache (Note [Row prefetch only from memory]).
        if (prefetch && r + 1 < rows)
          for (int64_t b = 0; b < srow * int64_t(sizeof(E)); b += 64)
            __builtin_prefetch(reinterpret_cast<const char*>(sr + srow) + b);
        if constexpr (sizeof(E) == 4) {
          if (srow <= INT32_MAX) {  // the gather's offsets are int32 (Note [Vector row gather])
            gather_row32(reinterpret_cast<const uint32_t*>(sr), ir, reinterpret_cast<uint32_t*>(orow), k);
            continue;
          }
        }
        for (int64_t j = 0; j < k; ++j) orow[j] = sr[ir[j]];
      }
      });
    });
    return;
  }
  Geometry g;
  for (int64_t d = 0; d < idx.dim(); ++d)
    g.add_dim(idx.size(d), out.stride(d), idx.stride(d), d == dim ? 0 : self.stride(d));
  g.coalesce();
  const int64_t sd = self.stride(dim);
  const int64_t* ip = idx.data_ptr<int64_t>();
  visit_element_size(self.element_size(), [&](auto etag) {
    using E = typename decltype(etag)::type;
    E* o = static_cast<E*>(out.data_ptr());
    const E* s = static_cast<const E*>(self.data_ptr());
    index_loops::for_each(
        g, [=](int64_t a, int64_t b, int64_t c) { o[a] = s[c + ip[b] * sd]; }, /*parallel=*/true);
  });
}

void scatter(const Tensor& s1, int64_t dim, const Tensor& idx, const Tensor& src, bool add, const char* op) {
  Geometry g;
  for (int64_t d = 0; d < idx.dim(); ++d)
    g.add_dim(idx.size(d), src.stride(d), idx.stride(d), d == dim ? 0 : s1.stride(d));
  g.coalesce();
  const int64_t sd = s1.stride(dim);
  const int64_t* ip = idx.data_ptr<int64_t>();
  if (inner_rows(s1, dim, idx, idx) && src.stride(dim) == 1) {
    // Rows in parallel (Note [Inner-dim gather and scatter]; the front end cloned a src or
    // index that shares self's storage). src may be larger than index in every dim.
    const int64_t k = idx.size(dim), srow = s1.size(dim), rows = idx.numel() / std::max<int64_t>(k, 1);
    bool src_rows = true;  // index's outer dims walk src with one row stride
    int64_t src_row = 0;
    if (dim > 0) {
      src_row = src.stride(dim - 1);
      for (int64_t d = dim - 1; d > 0; --d) src_rows = src_rows && src.stride(d - 1) == src.stride(d) * idx.size(d);
    }
    if (src_rows) {
      const bool prefetch = rows_from_memory(s1);
      auto run = [&](auto body) {
        tensor::detail::parallel_range(rows, tensor::detail::threads_for(rows * k), [&](int64_t rb, int64_t re) {
          for (int64_t r = rb; r < re; ++r) body(r);
        });
      };
      if (add) {
        visit_dtype(s1.dtype(), op, [&](auto tag) {
          using T = typename decltype(tag)::type;
          T* p = static_cast<T*>(s1.data_ptr());
          const T* sp = static_cast<const T*>(src.data_ptr());
          run([=](int64_t r) {
            if (prefetch && r + 1 < rows)
              for (int64_t b = 0; b < srow * int64_t(sizeof(T)); b += 64)
                __builtin_prefetch(reinterpret_cast<const char*>(p + (r + 1) * srow) + b, 1);
            for (int64_t j = 0; j < k; ++j) add_into(p[r * srow + ip[r * k + j]], sp[r * src_row + j]);
          });
        });
      } else {
        visit_element_size(s1.element_size(), [&](auto etag) {
          using E = typename decltype(etag)::type;
          E* p = static_cast<E*>(s1.data_ptr());
          const E* sp = static_cast<const E*>(src.data_ptr());
          run([=](int64_t r) {
            if (prefetch && r + 1 < rows)  // as gather: the random writes' lines, a row ahead
              for (int64_t b = 0; b < srow * int64_t(sizeof(E)); b += 64)
                __builtin_prefetch(reinterpret_cast<const char*>(p + (r + 1) * srow) + b, 1);
            for (int64_t j = 0; j < k; ++j) p[r * srow + ip[r * k + j]] = sp[r * src_row + j];
          });
        });
      }
      return;
    }
  }
  // Serial: duplicate indices write the same element (the last write wins for scatter_).
  if (add) {
    visit_dtype(s1.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = static_cast<T*>(s1.data_ptr());
      const T* sp = static_cast<const T*>(src.data_ptr());
      index_loops::for_each(
          g, [=](int64_t a, int64_t b, int64_t c) { add_into(p[c + ip[b] * sd], sp[a]); }, false);
    });
  } else {
    visit_element_size(s1.element_size(), [&](auto etag) {
      using E = typename decltype(etag)::type;
      E* p = static_cast<E*>(s1.data_ptr());
      const E* sp = static_cast<const E*>(src.data_ptr());
      index_loops::for_each(
          g, [=](int64_t a, int64_t b, int64_t c) { p[c + ip[b] * sd] = sp[a]; }, false);
    });
  }
}

// Note [index_add by rows]
// When self and source are both contiguous, each index moves one contiguous block of `inner`
// elements (the dims after `dim`): a float or double block add is a loop the compiler
// vectorizes, where the geometry walk below takes one scalar step per element (index_add of
// [64, 64] rows: 3.3 us, 1.09x libtorch 1.13's time). Same additions in the same order.
template <class T, class I>
void index_add_rows(T* p, const T* sp, const I* ip, int64_t idx_stride, int64_t outer, int64_t n, int64_t self_n,
                    int64_t inner, T a) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t b = 0; b < n; ++b) {
      T* __restrict d = p + (o * self_n + static_cast<int64_t>(ip[b * idx_stride])) * inner;
      const T* __restrict x = sp + (o * n + b) * inner;
      for (int64_t j = 0; j < inner; ++j) d[j] = d[j] + a * x[j];
    }
}

void index_add(const Tensor& s1, int64_t dim, const Tensor& idx, const Tensor& src, const Scalar& alpha,
               const char* op) {
  const int64_t idx_stride = idx.dim() == 1 ? idx.stride(0) : 0;
  if ((s1.dtype() == kFloat32 || s1.dtype() == kFloat64) && s1.is_contiguous() && src.is_contiguous()) {
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= src.size(d);
    for (int64_t d = dim + 1; d < src.dim(); ++d) inner *= src.size(d);
    const int64_t n = src.size(dim), self_n = s1.size(dim);
    visit_index_dtype(idx.dtype(), [&](auto itag) {
      using I = typename decltype(itag)::type;
      const I* ip = idx.data_ptr<I>();
      if (s1.dtype() == kFloat32)
        index_add_rows(s1.data_ptr<float>(), src.data_ptr<float>(), ip, idx_stride, outer, n, self_n, inner,
                       alpha.to<float>());
      else
        index_add_rows(s1.data_ptr<double>(), src.data_ptr<double>(), ip, idx_stride, outer, n, self_n, inner,
                       alpha.to<double>());
    });
    return;
  }
  Geometry g;
  for (int64_t d = 0; d < src.dim(); ++d)
    g.add_dim(src.size(d), src.stride(d), d == dim ? idx_stride : 0, d == dim ? 0 : s1.stride(d));
  g.coalesce();
  const int64_t sd = s1.stride(dim);
  visit_index_dtype(idx.dtype(), [&](auto itag) {
    using I = typename decltype(itag)::type;
    const I* ip = idx.data_ptr<I>();
    visit_dtype(s1.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using M = opmath_t<T>;
      T* p = static_cast<T*>(s1.data_ptr());
      const T* sp = static_cast<const T*>(src.data_ptr());
      const M a = alpha.to<M>();
      index_loops::for_each(
          g,
          [=](int64_t x, int64_t b, int64_t c) {
            T& dst = p[c + static_cast<int64_t>(ip[b]) * sd];
            if constexpr (std::is_same_v<T, bool>)
              dst = dst || (a && sp[x]);
            else
              dst = convert<T>(static_cast<M>(convert<M>(dst) + a * convert<M>(sp[x])));
          },
          /*parallel=*/false);
    });
  });
}

namespace {
Geometry masked_geometry(const Tensor& self, const Tensor& mask) {
  Geometry g;
  for (int64_t d = 0; d < self.dim(); ++d) g.add_dim(self.size(d), self.stride(d), mask.stride(d), 0);
  g.coalesce();
  return g;
}
}  // namespace

int64_t masked_select_count(const Tensor& self, const Tensor& mask) {
  Geometry g = masked_geometry(self, mask);
  const bool* mp = mask.numel() ? mask.data_ptr<bool>() : nullptr;
  int64_t count = 0;
  auto counter = [&](int64_t, int64_t b, int64_t) { count += mp[b] ? 1 : 0; };
  index_loops::for_each(g, counter, /*parallel=*/false);
  return count;
}

void masked_select_fill(const Tensor& self, const Tensor& mask, const Tensor& buf) {
  Geometry g = masked_geometry(self, mask);
  const bool* mp = mask.numel() ? mask.data_ptr<bool>() : nullptr;
  // The spare slot lets the copy loop store every element and advance only on true mask
  // entries, without a branch on the mask.
  visit_element_size(self.element_size(), [&](auto etag) {
    using E = typename decltype(etag)::type;
    E* o = static_cast<E*>(buf.data_ptr());
    const E* s = static_cast<const E*>(self.data_ptr());
    int64_t k = 0;
    auto writer = [&](int64_t a, int64_t b, int64_t) {
      o[k] = s[a];
      k += mp[b] ? 1 : 0;
    };
    index_loops::for_each(g, writer, /*parallel=*/false);
  });
}

int64_t nonzero_count(const Tensor& a, const char* op) {
  int64_t count = 0;
  visit_dtype(a.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = a.numel() ? static_cast<const T*>(a.data_ptr()) : nullptr;
    Geometry g = geometry_of(a);
    g.coalesce();
    auto counter = [&](int64_t x, int64_t, int64_t) { count += is_nonzero(p[x]) ? 1 : 0; };
    index_loops::for_each(g, counter, /*parallel=*/false);
  });
  return count;
}

void nonzero_fill(const Tensor& a, const Tensor& buf, const char* op) {
  const int64_t nd = a.dim();
  visit_dtype(a.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = a.numel() ? static_cast<const T*>(a.data_ptr()) : nullptr;
    // The spare row lets this pass write every element's coordinates and advance only past the
    // nonzero ones, with no branch on the (often random) values.
    int64_t* o = buf.data_ptr<int64_t>();
    const int64_t last = nd - 1;
    index_loops::for_each_row(a.sizes(), a.strides(),
                              [&](const int64_t* coords, int64_t base, int64_t n, int64_t stride) {
                                for (int64_t i = 0; i < n; ++i) {
                                  const bool nz = is_nonzero(p[base + i * stride]);
                                  for (int64_t d = 0; d < last; ++d) o[d] = coords[d];
                                  o[last] = i;
                                  o += nz ? nd : 0;
                                }
                              });
  });
}

int64_t mask_true_count(const Tensor& mask) {
  const bool* mp = mask.numel() ? mask.data_ptr<bool>() : nullptr;
  int64_t count = 0;
  index_loops::for_each_row(mask.sizes(), mask.strides(),
                            [&](const int64_t*, int64_t base, int64_t n, int64_t stride) {
                              for (int64_t i = 0; i < n; ++i) count += mp[base + i * stride] ? 1 : 0;
                            });
  return count;
}

void mask_offsets_fill(const Tensor& mask, IntArrayRef strides, const Tensor& buf) {
  const bool* mp = mask.numel() ? mask.data_ptr<bool>() : nullptr;
  // The spare slot lets the loop store at every entry and advance only on true ones (no branch).
  int64_t* o = buf.data_ptr<int64_t>();
  const int64_t k = mask.dim(), last_stride = strides[static_cast<size_t>(k - 1)];
  index_loops::for_each_row(mask.sizes(), mask.strides(),
                            [&](const int64_t* coords, int64_t base, int64_t n, int64_t stride) {
                              int64_t row = 0;
                              for (int64_t d = 0; d + 1 < k; ++d) row += coords[d] * strides[d];
                              for (int64_t i = 0; i < n; ++i) {
                                *o = row + i * last_stride;
                                o += mp[base + i * stride] ? 1 : 0;
                              }
                            });
}

bool fold_index_offsets(const Tensor& offsets, const Tensor& e, int64_t size, int64_t stride, bool ready,
                        int64_t& bad_value) {
  IntArrayRef B = offsets.sizes();
  Geometry g;
  for (size_t i = 0; i < B.size(); ++i)
    g.add_dim(B[i], offsets.stride(static_cast<int64_t>(i)), e.stride(static_cast<int64_t>(i)), 0);
  g.coalesce();
  int64_t* op_data = offsets.data_ptr<int64_t>();
  bool bad = false;
  auto fold = [&](auto tag) {
    using I = typename decltype(tag)::type;
    const I* ip = e.numel() ? e.data_ptr<I>() : nullptr;
    auto f = [&](int64_t a, int64_t b, int64_t) {
      int64_t v = static_cast<int64_t>(ip[b]);
      if (ready) {
        op_data[a] += v;
      } else if (v < -size || v >= size) {
        if (!bad) bad_value = v;
        bad = true;
      } else {
        op_data[a] += (v < 0 ? v + size : v) * stride;
      }
    };
    index_loops::for_each(g, f, /*parallel=*/false);
  };
  if (e.dtype() == kInt32)
    fold(TypeTag<int32_t>{});
  else
    fold(TypeTag<int64_t>{});
  return !bad;
}

void read_at_offsets(const Tensor& src, const Tensor& out, const Geometry& g, const int64_t* offs) {
  visit_element_size(src.element_size(), [&](auto etag) {
    using E = typename decltype(etag)::type;
    E* o = static_cast<E*>(out.data_ptr());
    const E* s = static_cast<const E*>(src.data_ptr());
    const size_t nd = g.sizes.size();
    if (nd >= 2 && g.strides[0][nd - 1] == 1 && g.strides[1][nd - 1] == 0 && g.strides[2][nd - 1] == 1) {
      // x[idx] with rows of x: a memcpy per index (Note [index_put_ by column blocks], read side;
      // reads may run in any order, so the runs are split across threads).
      Geometry outer;
      for (size_t k = 0; k + 1 < nd; ++k) outer.add_dim(g.sizes[k], g.strides[0][k], g.strides[1][k], g.strides[2][k]);
      const int64_t cols = g.sizes[nd - 1], runs = outer.numel();
      const int nt = static_cast<int>(std::min<int64_t>(tensor::detail::threads_for(g.numel()), runs));
      tensor::detail::parallel_range(runs, nt, [&](int64_t b, int64_t e) {
        auto row = [=](int64_t x, int64_t y, int64_t z) {
          std::memcpy(o + x, s + z + offs[y], static_cast<size_t>(cols) * sizeof(E));
        };
        index_loops::for_each_range(outer, b, e, row);
      });
      return;
    }
    index_loops::for_each(
        g, [=](int64_t a, int64_t b, int64_t c) { o[a] = s[c + offs[b]]; }, /*parallel=*/true);
  });
}

// Note [index_put_ by column blocks]
// index_put_ (accumulate=false) keeps the serial order, in which the last of repeated indices
// wins, so its positions cannot be split across threads. When the innermost dim of the loop is
// an un-indexed dim of dst (x[idx] = y with rows of y: offsets stride 0 there, unit strides in
// value and dst) each index instead writes a run of contiguous elements, and two different
// columns of that dim never name the same element: the columns are split into blocks, one
// per thread, and every thread walks all the indices in order over its own block, a memcpy per
// run. Each element is still written by one thread, in the serial order.
void write_at_offsets(const Tensor& dst, const Tensor& value, const Geometry& g, const int64_t* offs) {
  visit_element_size(dst.element_size(), [&](auto etag) {
    using E = typename decltype(etag)::type;
    E* d = static_cast<E*>(dst.data_ptr());
    const E* v = static_cast<const E*>(value.data_ptr());
    const size_t nd = g.sizes.size();
    if (nd >= 1 && g.strides[0][nd - 1] == 1 && g.strides[1][nd - 1] == 0 && g.strides[2][nd - 1] == 1) {
      Geometry outer;  // the loop without its innermost dim: one position per run
      for (size_t k = 0; k + 1 < nd; ++k) outer.add_dim(g.sizes[k], g.strides[0][k], g.strides[1][k], g.strides[2][k]);
      const int64_t cols = g.sizes[nd - 1];
      // Blocks of whole cache lines, so that two threads never share one.
      constexpr int64_t kLine = std::max<int64_t>(1, 64 / static_cast<int64_t>(sizeof(E)));
      const int64_t lines = (cols + kLine - 1) / kLine;
      const int nt = static_cast<int>(std::min<int64_t>(tensor::detail::threads_for(g.numel()), lines));
      tensor::detail::parallel_range(lines, nt, [&](int64_t lb, int64_t le) {
        const int64_t c0 = lb * kLine, n = std::min(cols, le * kLine) - c0;
        auto row = [=](int64_t a, int64_t b, int64_t c) {
          std::memcpy(d + c + offs[b] + c0, v + a + c0, static_cast<size_t>(n) * sizeof(E));
        };
        index_loops::for_each_range(outer, 0, outer.numel(), row);
      });
      return;
    }
    // Serial: with repeated indices the last write wins (accumulate=false).
    index_loops::for_each(
        g, [=](int64_t a, int64_t b, int64_t c) { d[c + offs[b]] = v[a]; }, /*parallel=*/false);
  });
}

// ---- advanced indexing: the CPU kernels of index and index_put_ ----
namespace {
using detail::shape_str;

// The element offsets of a mask's true entries, in row-major order (the linear form of
// nonzero(mask) over dims of `strides`).
Tensor mask_offsets(const Tensor& mask, IntArrayRef strides) {
  const int64_t count = mask_true_count(mask);
  // A spare slot lets the loop store at every entry and advance only on true ones (no branch).
  Tensor buf = empty({count + 1}, TensorOptions(kInt64));
  mask_offsets_fill(mask, strides, buf);
  return buf.narrow(0, 0, count);
}

// The linear element offset of src that each position of the broadcast index shape b picks.
Tensor fold_offsets(const Tensor& src, const AdvancedIndex& ai, const char* op) {
  Tensor offsets = zeros(ai.b, TensorOptions(kInt64));
  for (size_t j = 0; j < ai.dims.size(); ++j) {
    const AdvancedIndex::Entry& e = ai.dims[j];
    if (!e.t.defined()) continue;
    const bool mask = e.mask_dims > 0;
    const Tensor idx = mask ? mask_offsets(e.t, IntArrayRef(src.strides().data() + j, static_cast<size_t>(e.mask_dims)))
                            : e.t;
    const int64_t size = src.size(static_cast<int64_t>(j));
    int64_t bad_value = 0;
    TENSOR_CHECK(fold_index_offsets(offsets, idx.expand(ai.b), size, src.stride(static_cast<int64_t>(j)), mask, bad_value),
                 "{}: index {} is out of bounds for dim {} with size {} (indexed tensor of shape {})", op, bad_value, j,
                 size, shape_str(src.sizes()));
  }
  return offsets;
}

// The loop over the output shape (Note [Basic then advanced indexing]): operand 0 walks t (the
// output, or the value broadcast to it), 1 the offsets of b, 2 the un-indexed dims of src.
Geometry index_geometry(const Tensor& src, const AdvancedIndex& ai, const Tensor& t) {
  DimVector b_strides(ai.b.size(), 0);
  for (int64_t i = static_cast<int64_t>(ai.b.size()) - 1, st = 1; i >= 0; --i) {
    b_strides[static_cast<size_t>(i)] = st;
    st *= std::max<int64_t>(ai.b[static_cast<size_t>(i)], 1);
  }
  Geometry g;
  int64_t o = 0;  // output dim
  auto add_src_dim = [&](int64_t j) { g.add_dim(src.size(j), t.stride(o++), 0, src.stride(j)); };
  auto add_b_dims = [&] {
    for (size_t i = 0; i < ai.b.size(); ++i) g.add_dim(ai.b[i], t.stride(o++), b_strides[i], 0);
  };
  if (ai.adjacent) {
    for (int64_t j = 0; j < ai.first; ++j) add_src_dim(j);
    add_b_dims();
    for (int64_t j = ai.last + 1; j < src.dim(); ++j) add_src_dim(j);
  } else {
    add_b_dims();
    for (int64_t j = 0; j < src.dim(); ++j)
      if (!ai.dims[static_cast<size_t>(j)].indexed()) add_src_dim(j);
  }
  g.coalesce();
  return g;
}
}  // namespace

void advanced_index(const Tensor& src, const AdvancedIndex& ai, const Tensor& out) {
  const Tensor offsets = fold_offsets(src, ai, "index");
  read_at_offsets(src, out, index_geometry(src, ai, out), offsets.data_ptr<int64_t>());
}

void advanced_index_put(const Tensor& dst, const AdvancedIndex& ai, const Tensor& value) {
  const Tensor offsets = fold_offsets(dst, ai, "index_put_");
  write_at_offsets(dst, value, index_geometry(dst, ai, value), offsets.data_ptr<int64_t>());
}

}  // namespace tensor::cpu
