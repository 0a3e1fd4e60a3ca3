// sort, argsort and topk on CPU: per slice along `dim`, a std::stable_sort (full sort) or a
// std::partial_sort (topk) of (key, position) pairs, slices in parallel.
//
// Note [Sort order and NaN]
// libtorch's order: NaN ranks above every number (last ascending, first descending; topk
// largest returns NaNs first). Instead of a NaN-aware comparator on every comparison, NaNs are
// set aside while a slice is loaded (in input order) and the numbers are sorted with plain < or
// >; the NaNs are then put at the end that the order wants. Equal keys keep input order: the
// full sort is stable, and topk breaks ties by position, so topk(k) is a prefix of the sort.
#include "src/ops/SortOps.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "src/core/Check.h"
#include "src/core/DtypeVisit.h"
#include "src/core/Parallel.h"
#include "tensor/ops.h"
#include "tensor/sort.h"

namespace tensor {
namespace ops {
namespace {

using detail::shape_str;

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

template <class K>
struct Entry {
  K key;
  int64_t pos;
};

template <class K>
bool is_nan(K v) {
  if constexpr (std::is_floating_point_v<K>) return std::isnan(v);
  else return false;
}

/// Writes the first k of slice order (Note [Sort order and NaN]) of every slice of `a` along d
/// into values/indices (same shape, contiguous, size k along d).
template <class T>
void select_kernel(const Tensor& a, int64_t d, int64_t k, bool descending, Tensor& values, Tensor& indices) {
  using K = std::conditional_t<std::is_same_v<T, bool>, bool, opmath_t<T>>;
  const int64_t nd = a.dim();
  const int64_t n = nd == 0 ? 1 : a.size(d);
  const int64_t in_step = nd == 0 ? 0 : a.stride(d);
  const int64_t out_step = nd == 0 ? 0 : values.stride(d);
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
  const bool full = k == n;

  auto run = [&](int64_t begin, int64_t end) {
    std::vector<Entry<K>> buf;
    std::vector<int64_t> nans;
    buf.reserve(static_cast<size_t>(n));
    for (int64_t r = begin; r < end; ++r) {
      int64_t in = 0, out = 0;
      sl.offsets(r, in, out);
      const T* row = src + in;
      buf.clear();
      nans.clear();
      for (int64_t j = 0; j < n; ++j) {
        const K v = static_cast<K>(row[j * in_step]);
        if (is_nan(v)) nans.push_back(j);
        else buf.push_back({v, j});
      }
      const int64_t nb = static_cast<int64_t>(buf.size()), nn = static_cast<int64_t>(nans.size());
      // Descending: NaNs first, then numbers; ascending: numbers, then NaNs.
      const int64_t take_nan_first = descending ? std::min(k, nn) : 0;
      const int64_t take_num = std::min(k - take_nan_first, nb);
      if (take_num > 0) {
        if (full || take_num == nb) {
          if (descending)
            std::stable_sort(buf.begin(), buf.end(), [](const Entry<K>& x, const Entry<K>& y) { return x.key > y.key; });
          else
            std::stable_sort(buf.begin(), buf.end(), [](const Entry<K>& x, const Entry<K>& y) { return x.key < y.key; });
        } else {
          // Ties broken by position make the order total, so the prefix equals the stable sort's.
          auto mid = buf.begin() + take_num;
          if (descending)
            std::partial_sort(buf.begin(), mid, buf.end(), [](const Entry<K>& x, const Entry<K>& y) {
              return x.key > y.key || (x.key == y.key && x.pos < y.pos);
            });
          else
            std::partial_sort(buf.begin(), mid, buf.end(), [](const Entry<K>& x, const Entry<K>& y) {
              return x.key < y.key || (x.key == y.key && x.pos < y.pos);
            });
        }
      }
      int64_t o = 0;
      auto emit = [&](int64_t pos) {
        vout[out + o * out_step] = row[pos * in_step];
        iout[out + o * out_step] = pos;
        ++o;
      };
      for (int64_t j = 0; j < take_nan_first; ++j) emit(nans[j]);
      for (int64_t j = 0; j < take_num; ++j) emit(buf[j].pos);
      for (int64_t j = 0; o < k; ++j) emit(nans[j]);  // ascending: NaNs fill the rest
    }
  };

  const int64_t rows = sl.count;
  const int nt = static_cast<int>(std::min<int64_t>(detail::threads_for(rows * n), rows));
  if (nt <= 1) {
    run(0, rows);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    const int64_t t = omp_get_thread_num(), nthr = omp_get_num_threads();
    const int64_t per = (rows + nthr - 1) / nthr;
    const int64_t b = std::min(rows, t * per), e = std::min(rows, b + per);
    if (b < e) run(b, e);
  }
}

void check_dtype(const char* op, const Tensor& a, bool allow_bool) {
  TENSOR_CHECK(!a.is_complex(),
               "{}(): complex input is not supported (dtype {}, shape {}): complex numbers have no order; "
               "sort a real key such as abs() or real()",
               op, a.dtype(), shape_str(a.sizes()));
  TENSOR_CHECK(allow_bool || a.dtype() != kBool, "{}(): not implemented for dtype {} (shape {})", op, a.dtype(),
               shape_str(a.sizes()));
}

int64_t wrap(const char* op, int64_t dim, const Tensor& a) {
  const std::string where = fmt::format("{}() on a tensor of shape {}", op, shape_str(a.sizes()));
  return detail::wrap_dim(dim, a.dim(), where.c_str());
}

std::tuple<Tensor, Tensor> select_common(const char* op, const Tensor& a, int64_t k, int64_t d, bool descending) {
  DimVector sizes(a.sizes());
  if (a.dim() > 0) sizes[d] = k;
  Tensor values = empty(sizes, a.options());
  Tensor indices = empty(sizes, a.options().dtype(kInt64));
  if (a.is_meta() || values.numel() == 0) return {values, indices};
  visit_dtype<kGroupReal>(a.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    select_kernel<T>(a, d, k, descending, values, indices);
  });
  return {values, indices};
}

std::tuple<Tensor, Tensor> sort_impl(const Tensor& a, int64_t dim, bool descending) {
  check_dtype("sort", a, true);
  const int64_t d = wrap("sort", dim, a);
  return select_common("sort", a, a.dim() == 0 ? 1 : a.size(d), d, descending);
}

std::tuple<Tensor, Tensor> topk_impl(const Tensor& a, int64_t k, int64_t dim, bool largest, bool /*sorted*/) {
  // Results are always sorted, which `sorted = false` (no order promised) allows.
  check_dtype("topk", a, false);
  const int64_t d = wrap("topk", dim, a);
  const int64_t n = a.dim() == 0 ? 1 : a.size(d);
  TENSOR_CHECK(k >= 0 && k <= n,
               "topk(): selected index k out of range: k = {}, but dim {} of the input (shape {}, dtype {}) has "
               "size {}",
               k, d, shape_str(a.sizes()), a.dtype(), n);
  return select_common("topk", a, k, d, largest);
}

using dispatch::backend_def;

SortOpDefs g_sort = {
    backend_def<SortFn>("sort", &sort_impl),
    backend_def<TopkFn>("topk", &topk_impl),
};

}  // namespace

SortOpDefs& sort_ops() { return g_sort; }

}  // namespace ops

// ---- public API ----
std::tuple<Tensor, Tensor> topk(const Tensor& a, int64_t k, int64_t dim, bool largest, bool sorted) {
  return ops::sort_ops().topk(a, k, dim, largest, sorted);
}
std::tuple<Tensor, Tensor> sort(const Tensor& a, int64_t dim, bool descending) {
  return ops::sort_ops().sort(a, dim, descending);
}
std::tuple<Tensor, Tensor> sort(const Tensor& a, std::optional<bool> /*stable*/, int64_t dim, bool descending) {
  return ops::sort_ops().sort(a, dim, descending);
}
Tensor argsort(const Tensor& a, int64_t dim, bool descending) {
  // Only the positions: no gradient to record.
  return std::get<1>(ops::sort_ops().sort(a, dim, descending));
}

}  // namespace tensor
