// sort, argsort and topk: front ends (Note [Front ends and backend kernels],
// src/ops/ElementwiseOps.cpp) with the checks and the outputs' allocation, where the Meta
// instance stops, and the dispatcher table. The CPU and CUDA instances then call their
// backend's SortKernel; CPU's loops are in kernels/cpu/SortKernels.cpp (Note [Sort order and
// NaN] there).
#include "src/ops/SortOps.h"
#include "src/ops/CompositeOps.h"

#include "kernels/cpu/SortKernels.h"
#include "src/core/Check.h"
#include "src/dispatch/BackendKernels.h"
#include "tensor/ops.h"

namespace tensor {
namespace ops {
namespace {

using detail::shape_str;

// The per-backend kernels: CPU's built in, CUDA's registered.
dispatch::BackendKernels<SortKernel> g_sort_kernels{{&cpu::sort_select, nullptr}};

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

template <DispatchKey K>
std::tuple<Tensor, Tensor> select_common(SortKernel kernel, const char* op, const Tensor& a, int64_t k, int64_t d,
                                         bool descending) {
  DimVector sizes(a.sizes());
  if (a.dim() > 0) sizes[d] = k;
  Tensor values = empty(sizes, a.options());
  Tensor indices = empty(sizes, a.options().dtype(kInt64));
  if (K == DispatchKey::Meta || values.numel() == 0) return {values, indices};
  kernel(op, a, d, k, descending, values, indices);
  return {values, indices};
}

template <DispatchKey K>
std::tuple<Tensor, Tensor> sort_fn(const Tensor& a, int64_t dim, bool descending) {
  const SortKernel kernel = g_sort_kernels.get<K>("sort");
  check_dtype("sort", a, true);
  const int64_t d = wrap("sort", dim, a);
  return select_common<K>(kernel, "sort", a, a.dim() == 0 ? 1 : a.size(d), d, descending);
}

template <DispatchKey K>
std::tuple<Tensor, Tensor> topk_fn(const Tensor& a, int64_t k, int64_t dim, bool largest, bool /*sorted*/) {
  // Results are always sorted, which `sorted = false` (no order promised) allows.
  const SortKernel kernel = g_sort_kernels.get<K>("topk");
  check_dtype("topk", a, false);
  const int64_t d = wrap("topk", dim, a);
  const int64_t n = a.dim() == 0 ? 1 : a.size(d);
  TENSOR_CHECK(k >= 0 && k <= n,
               "topk(): selected index k out of range: k = {}, but dim {} of the input (shape {}, dtype {}) has "
               "size {}",
               k, d, shape_str(a.sizes()), a.dtype(), n);
  return select_common<K>(kernel, "topk", a, k, d, largest);
}

// Constant-initialized: CPU and Meta slots hold their front-end instances; CUDA's are filled by
// register_kernel.
SortOpDefs g_sort = {
    TENSOR_FRONT_END_DEF(SortFn, "sort", sort_fn),
    TENSOR_FRONT_END_DEF(TopkFn, "topk", topk_fn),
};

}  // namespace

SortOpDefs& sort_ops() { return g_sort; }

void register_kernel(DispatchKey backend, SortKernel kernel) {
  dispatch::check_kernel_backend(backend, "sort/topk");
  g_sort_kernels.set(backend, kernel);
  g_sort.sort.set(backend, &sort_fn<DispatchKey::CUDA>);
  g_sort.topk.set(backend, &topk_fn<DispatchKey::CUDA>);
}

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
namespace {
Tensor argsort_composite(const Tensor& a, int64_t dim, bool descending) {
  // Only the positions: no gradient to record.
  return std::get<1>(ops::sort_ops().sort(a, dim, descending));
}
}  // namespace
namespace ops {
TENSOR_COMPOSITE_OP(argsort, ArgsortFn, argsort_composite)
}  // namespace ops
Tensor argsort(const Tensor& a, int64_t dim, bool descending) { return ops::argsort_op()(a, dim, descending); }

std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  return tensor::topk(*this, k, dim, largest, sorted);
}
std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const { return tensor::sort(*this, dim, descending); }
std::tuple<Tensor, Tensor> Tensor::sort(std::optional<bool> stable, int64_t dim, bool descending) const {
  return tensor::sort(*this, stable, dim, descending);
}
Tensor Tensor::argsort(int64_t dim, bool descending) const { return tensor::argsort(*this, dim, descending); }

}  // namespace tensor
