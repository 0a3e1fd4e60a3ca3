// The CPU loops of sort, argsort and topk (front ends: src/ops/SortOps.cpp), per slice along
// `dim` (any strides), slices in parallel: a std::stable_sort of (key, position) pairs, or for a
// small k a single scan keeping the best k in a heap.
//
// Note [Sort order and NaN]
// libtorch's order: NaN ranks above every number (last ascending, first descending; topk
// largest returns NaNs first). The full sort sets NaNs aside while a slice is loaded (in input
// order), sorts the numbers with plain < or >, then puts the NaNs at the end that the order
// wants; the topk scan compares with a NaN-aware `before`. Equal keys keep input order: the sort
// is stable, and the heap breaks ties by position, so topk(k) is always a prefix of the sort.
#include "kernels/cpu/SortKernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "src/core/DtypeVisit.h"
#include "src/core/Parallel.h"

namespace tensor::cpu {
namespace {

/// Positions of the slices: the dims other than `dim`, with the input's and output's strides.
struct Slices {
  DimVector sizes, in_strides, out_strides;
  int64_t count = 1;
  void offsets(int64_t r, int64_t& in, int64_t& out) const {
    in = 0;
    out = 0;
    for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
      const int64_t c = r % sizes[i];
      r /= sizes[i];
      in += c * in_strides[i];
      out += c * out_strides[i];
    }
  }
};

/// A key and its position in the slice; int32 positions when the slice allows (half the
/// memory traffic of the sort).
template <class K, class I>
struct Entry {
  K key;
  I pos;
};

template <class K>
bool is_nan(K v) {
  if constexpr (std::is_floating_point_v<K>) return std::isnan(v);
  else return false;
}

/// Rank of keys (Note [Sort order and NaN]): `before(a, b)` when a comes strictly first.
template <class K, bool Desc>
bool before(K a, K b) {
  if constexpr (Desc) return !is_nan(b) && (is_nan(a) || a > b);
  else return !is_nan(a) && (is_nan(b) || a < b);
}

/// One slice: its first k in order, written as values and positions.
template <class T, class K, class I, bool Desc>
struct SliceSelector {
  int64_t n, k, in_step, out_step;
  std::vector<Entry<K, I>> buf;
  std::vector<I> nans;

  static bool by_rank_then_pos(const Entry<K, I>& x, const Entry<K, I>& y) {
    return before<K, Desc>(x.key, y.key) || (!before<K, Desc>(y.key, x.key) && x.pos < y.pos);
  }

  void run(const T* row, T* vout, int64_t* iout) {
    if (k == 0) return;
    // A small k scans once, keeping the best k in a heap whose front is the worst of them (one
    // comparison for most elements). A later element never beats an equal key: stable.
    if (k * 8 <= n) {
      buf.clear();
      for (int64_t j = 0; j < k; ++j) buf.push_back({static_cast<K>(row[j * in_step]), static_cast<I>(j)});
      std::make_heap(buf.begin(), buf.end(), by_rank_then_pos);
      auto offer = [&](int64_t j) {
        const K v = static_cast<K>(row[j * in_step]);
        if (before<K, Desc>(v, buf.front().key)) {
          std::pop_heap(buf.begin(), buf.end(), by_rank_then_pos);
          buf.back() = {v, static_cast<I>(j)};
          std::push_heap(buf.begin(), buf.end(), by_rank_then_pos);
        }
      };
      int64_t j = k;
      if constexpr (std::is_same_v<T, K>) {
        // Contiguous slices: a vectorizable test per block skips blocks where nothing can beat
        // the current worst kept (a superset test: NaN on either side passes).
        constexpr int64_t kBlock = 64;
        if (in_step == 1) {
          for (; j + kBlock <= n; j += kBlock) {
            const K worst = buf.front().key;
            int any = 0;
            for (int64_t t = 0; t < kBlock; ++t) {
              if constexpr (Desc) any |= !(row[j + t] <= worst);
              else any |= !(row[j + t] >= worst);
            }
            if (any)
              for (int64_t t = 0; t < kBlock; ++t) offer(j + t);
          }
        }
      }
      for (; j < n; ++j) offer(j);
      std::sort_heap(buf.begin(), buf.end(), by_rank_then_pos);  // best first
      for (int64_t o = 0; o < k; ++o) emit(row, vout, iout, o, buf[o].pos);
      return;
    }
    // Otherwise a full stable sort of the numbers, the NaNs set aside in input order.
    buf.resize(static_cast<size_t>(n));
    nans.resize(static_cast<size_t>(n));
    int64_t nb = 0, nn = 0;
    for (int64_t j = 0; j < n; ++j) {
      const K v = static_cast<K>(row[j * in_step]);
      if (is_nan(v)) nans[nn++] = static_cast<I>(j);
      else buf[nb++] = {v, static_cast<I>(j)};
    }
    std::stable_sort(buf.begin(), buf.begin() + nb, [](const Entry<K, I>& x, const Entry<K, I>& y) {
      if constexpr (Desc) return x.key > y.key;
      else return x.key < y.key;
    });
    int64_t o = 0;
    if (Desc)
      for (int64_t j = 0; j < nn && o < k; ++j) emit(row, vout, iout, o++, nans[j]);
    for (int64_t j = 0; j < nb && o < k; ++j) emit(row, vout, iout, o++, buf[j].pos);
    if (!Desc)
      for (int64_t j = 0; j < nn && o < k; ++j) emit(row, vout, iout, o++, nans[j]);
  }

  void emit(const T* row, T* vout, int64_t* iout, int64_t o, I pos) const {
    vout[o * out_step] = row[pos * in_step];
    iout[o * out_step] = pos;
  }
};

/// Writes the first k of slice order (Note [Sort order and NaN]) of every slice of `a` along d
/// into values/indices (same shape, contiguous, size k along d).
template <class T, class I, bool Desc>
void select_kernel(const Tensor& a, int64_t d, int64_t k, const Tensor& values, const Tensor& indices) {
  using K = std::conditional_t<std::is_same_v<T, bool>, bool, opmath_t<T>>;
  const int64_t nd = a.dim();
  const int64_t n = nd == 0 ? 1 : a.size(d);
  Slices sl;
  for (int64_t i = 0; i < nd; ++i) {
    if (i == d) continue;
    sl.sizes.push_back(a.size(i));
    sl.in_strides.push_back(a.stride(i));
    sl.out_strides.push_back(values.stride(i));
    sl.count *= a.size(i);
  }
  const T* src = a.data_ptr<T>();
  T* vout = values.data_ptr<T>();
  int64_t* iout = indices.data_ptr<int64_t>();
  const int64_t in_step = nd == 0 ? 0 : a.stride(d), out_step = nd == 0 ? 0 : values.stride(d);

  auto run = [&](int64_t begin, int64_t end) {
    SliceSelector<T, K, I, Desc> sel{n, k, in_step, out_step, {}, {}};
    for (int64_t r = begin; r < end; ++r) {
      int64_t in = 0, out = 0;
      sl.offsets(r, in, out);
      sel.run(src + in, vout + out, iout + out);
    }
  };

  const int64_t rows = sl.count;
  // The grain counts elements, the chunks rows.
  const int nt = static_cast<int>(std::min<int64_t>(detail::threads_for(rows * n), rows));
  detail::parallel_range(rows, nt, run);
}

template <class T>
void select_dispatch(const Tensor& a, int64_t d, int64_t k, bool desc, const Tensor& values, const Tensor& indices) {
  const int64_t n = a.dim() == 0 ? 1 : a.size(d);
  if (n <= std::numeric_limits<int32_t>::max()) {
    if (desc) select_kernel<T, int32_t, true>(a, d, k, values, indices);
    else select_kernel<T, int32_t, false>(a, d, k, values, indices);
  } else {
    if (desc) select_kernel<T, int64_t, true>(a, d, k, values, indices);
    else select_kernel<T, int64_t, false>(a, d, k, values, indices);
  }
}

}  // namespace

void sort_select(const char* op, const Tensor& a, int64_t d, int64_t k, bool descending, const Tensor& values,
                 const Tensor& indices) {
  visit_dtype<kGroupReal>(a.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    select_dispatch<T>(a, d, k, descending, values, indices);
  });
}

}  // namespace tensor::cpu
