// The CUDA kernels of the indexing ops (src/ops/IndexOps.h's IndexKernels): index_select,
// gather, scatter, scatter_add, index_add and masked_fill. The front ends have checked shapes,
// dtypes and devices; here each op's geometry becomes a launch of kernels/cuda/IndexKernels.cu
// (Note [CUDA index geometry]), after a range check of its indices on the device.
// masked_select and nonzero have no CUDA kernel yet.
#include <cuda_runtime_api.h>

#include <type_traits>
#include <vector>

#include "kernels/cuda/IndexLaunch.h"
#include "kernels/cuda/SelectLaunch.h"
#include "src/core/DtypeVisit.h"
#include "src/cuda/CUDAElementwise.h"
#include "src/ops/IndexOps.h"
#include "tensor/ops.h"

namespace tensor::cuda_detail {

namespace {

using cuda_kernels::ElementwiseLaunch;
using cuda_kernels::IndexDim;
using cuda_kernels::IndexMode;
using cuda_kernels::LaunchStatus;
using cuda_kernels::ScalarArg;
using detail::shape_str;

/// Per-dim element strides of up to four operands, outermost dim first (as a tensor's).
struct Geometry {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides[4];
};

/// The launch of `g` for `n` operands (element sizes `es`, pointers `data`): size-1 dims dropped,
/// dims that are contiguous with their inner neighbour in every operand merged, innermost first.
ElementwiseLaunch launch_of(const Geometry& g, int n, const int64_t* es, char* const* data, const char* op) {
  ElementwiseLaunch l;
  l.ntensors = n;
  for (int k = 0; k < n; ++k) l.data[k] = data[k];
  int nd = 0;
  for (int d = static_cast<int>(g.sizes.size()) - 1; d >= 0; --d) {
    if (g.sizes[d] == 1) continue;
    if (nd > 0) {
      bool merge = true;
      for (int k = 0; k < n; ++k) merge = merge && l.strides[k][nd - 1] * l.shape[nd - 1] == g.strides[k][d] * es[k];
      if (merge) {
        l.shape[nd - 1] *= g.sizes[d];
        continue;
      }
    }
    TENSOR_CHECK(nd < cuda_kernels::kMaxDims, "{}: CUDA indexing supports at most {} dims after merging contiguous "
                 "ones (iteration shape {})", op, cuda_kernels::kMaxDims, shape_str(g.sizes));
    l.shape[nd] = g.sizes[d];
    for (int k = 0; k < n; ++k) l.strides[k][nd] = g.strides[k][d] * es[k];
    ++nd;
  }
  l.ndim = nd;
  return l;
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op, const char* what) {
  TENSOR_CHECK(a.device() == b.device(), "{}: {} is on {}, but self is on {}", op, what, b.device().str(),
               a.device().str());
}

// Note [CUDA index range check]
// The front ends check index values on the host only for CPU index tensors; reading a CUDA
// index there would be a device-to-host copy of the whole tensor. Here a kernel finds the
// first out-of-range position on the device and only its result (8 bytes) comes back, before
// anything is written, so a bad index raises the CPU's error and leaves self untouched. The
// price is that wait: each call of these ops synchronizes its stream once (libtorch instead
// asserts inside the kernel, which kills the CUDA context and is not a catchable error).
void check_index_range(const Tensor& index, int64_t size, int64_t dim, IntArrayRef self_shape, const char* op,
                       cudaStream_t stream) {
  if (index.numel() == 0) return;
  Geometry g;
  g.sizes.assign(index.sizes().begin(), index.sizes().end());
  g.strides[0].assign(index.strides().begin(), index.strides().end());
  const int64_t es[1] = {index.element_size()};
  char* data[1] = {static_cast<char*>(index.data_ptr())};
  ElementwiseLaunch l = launch_of(g, 1, es, data, op);
  l.dtype = index.dtype();
  l.stream = stream;
  Tensor flag = tensor::empty({1}, TensorOptions(kInt64).device(index.device()));
  auto* first = static_cast<unsigned long long*>(flag.data_ptr());
  bool found = false;
  for_each_32bit(l, [&](const ElementwiseLaunch& part) {
    if (found) return;
    TENSOR_CUDA_CHECK(cudaMemsetAsync(first, 0xff, sizeof(unsigned long long), stream));
    const LaunchStatus st = cuda_kernels::launch_index_check(part, size, first);
    if (st != 0) throw_launch_error(op, st, index.dtype(), index.sizes());
    unsigned long long pos = 0;
    TENSOR_CUDA_CHECK(cudaMemcpyAsync(&pos, first, sizeof(pos), cudaMemcpyDeviceToHost, stream));
    TENSOR_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (pos == ~0ull) return;
    found = true;
    // The bad value itself, read back from its offset in the part (dim 0 innermost).
    int64_t off = 0;
    for (int d = 0; d < part.ndim; ++d) {
      off += static_cast<int64_t>(pos % part.shape[d]) * part.strides[0][d];
      pos /= part.shape[d];
    }
    int64_t value = 0;
    if (index.dtype() == kInt32) {
      int32_t v32 = 0;
      TENSOR_CUDA_CHECK(cudaMemcpy(&v32, part.data[0] + off, sizeof(v32), cudaMemcpyDeviceToHost));
      value = v32;
    } else {
      TENSOR_CUDA_CHECK(cudaMemcpy(&value, part.data[0] + off, sizeof(value), cudaMemcpyDeviceToHost));
    }
    TENSOR_ERROR("{}: index {} is out of bounds for dim {} with size {} (self shape {}, index shape {})", op, value, dim,
                 size, shape_str(self_shape), shape_str(index.sizes()));
  });
}

/// Checks the indices, then launches `mode` over g (operands dense, index, self).
void run_index(const char* op, IndexMode mode, const Geometry& g, const Tensor& dense, const Tensor& index,
               const Tensor& self, int64_t dim, ScalarArg alpha) {
  check_same_device(self, dense, op, mode == IndexMode::Gather ? "out" : "src");
  check_same_device(self, index, op, "index");
  const int device = self.device().index();
  cuda::CUDAGuard guard(device);
  const cudaStream_t stream = current_stream(device);
  check_index_range(index, self.size(dim), dim, self.sizes(), op, stream);
  const int64_t es[3] = {dense.element_size(), index.element_size(), self.element_size()};
  char* data[3] = {static_cast<char*>(dense.data_ptr()), static_cast<char*>(index.data_ptr()),
                   static_cast<char*>(self.data_ptr())};
  ElementwiseLaunch l = launch_of(g, 3, es, data, op);
  if (l.numel() == 0) return;
  l.dtype = self.dtype();
  l.stream = stream;
  IndexDim d;
  d.size = self.size(dim);
  d.stride = self.stride(dim) * self.element_size();
  d.index_dtype = index.dtype();
  for_each_32bit(l, [&](const ElementwiseLaunch& part) {
    const LaunchStatus st = cuda_kernels::launch_index(mode, part, d, alpha);
    if (st != 0) throw_launch_error(op, st, self.dtype(), self.sizes());
  });
}

/// Geometry over `shape` with dense strides `dense`, the index's per-dim strides `index` and
/// self's strides with 0 at dim.
Geometry geometry(IntArrayRef shape, IntArrayRef dense, const std::vector<int64_t>& index, const Tensor& self,
                  int64_t dim) {
  Geometry g;
  g.sizes.assign(shape.begin(), shape.end());
  g.strides[0].assign(dense.begin(), dense.end());
  g.strides[1] = index;
  for (int64_t d = 0; d < self.dim(); ++d) g.strides[2].push_back(d == dim ? 0 : self.stride(d));
  return g;
}

/// A 0-D or 1-D index's strides along the dims of a `nd`-dim iteration: its stride at dim, 0 elsewhere.
std::vector<int64_t> index_along(const Tensor& index, int64_t nd, int64_t dim) {
  std::vector<int64_t> s(static_cast<size_t>(nd), 0);
  s[static_cast<size_t>(dim)] = index.dim() == 1 ? index.stride(0) : 0;
  return s;
}

std::vector<int64_t> strides_of(const Tensor& t) { return std::vector<int64_t>(t.strides().begin(), t.strides().end()); }

void index_select(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& out) {
  const Geometry g = geometry(out.sizes(), out.strides(), index_along(index, self.dim(), dim), self, dim);
  run_index("index_select", IndexMode::Gather, g, out, index, self, dim, ScalarArg{});
}

void gather(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& out) {
  const Geometry g = geometry(index.sizes(), out.strides(), strides_of(index), self, dim);
  run_index("gather", IndexMode::Gather, g, out, index, self, dim, ScalarArg{});
}

void scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, bool add, const char* op) {
  const Geometry g = geometry(index.sizes(), src.strides(), strides_of(index), self, dim);
  ScalarArg one;
  one.i = 1;
  one.d = 1;
  run_index(op, add ? IndexMode::Add : IndexMode::Scatter, g, src, index, self, dim, one);
}

void index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha,
               const char* op) {
  const Geometry g = geometry(source.sizes(), source.strides(), index_along(index, source.dim(), dim), self, dim);
  run_index(op, IndexMode::Add, g, source, index, self, dim, scalar_arg(alpha));
}

// masked_fill is where(mask, value, src) into self on where's kernel, the value (checked
// against self's dtype as the CPU kernel checks it) a kernel argument. The geometry is built
// here rather than by a TensorIterator, whose build() libtensor does not export; mask and src
// are broadcast to self's shape by the front end's rules (stride 0).
void masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value, const Tensor& src, const char* op) {
  ScalarArg v;
  visit_dtype<kGroupReal>(self.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T x = checked_scalar<T>(value, op);
    if constexpr (std::is_integral_v<T>) {
      v.i = static_cast<int64_t>(x);
      v.d = static_cast<double>(v.i);
    } else {
      v.d = static_cast<double>(static_cast<opmath_t<T>>(x));
    }
  });
  check_same_device(self, mask, op, "mask");
  check_same_device(self, src, op, "src");
  const Tensor m = mask.expand(self.sizes()), s = src.expand(self.sizes());
  Geometry g;
  g.sizes.assign(self.sizes().begin(), self.sizes().end());
  g.strides[0] = strides_of(self);
  g.strides[1] = strides_of(m);
  g.strides[2].assign(g.sizes.size(), 0);
  g.strides[3] = strides_of(s);
  const int64_t es[4] = {self.element_size(), m.element_size(), self.element_size(), s.element_size()};
  char* data[4] = {static_cast<char*>(self.data_ptr()), static_cast<char*>(m.data_ptr()), nullptr,
                   static_cast<char*>(s.data_ptr())};
  ElementwiseLaunch l = launch_of(g, 4, es, data, op);
  l.is_scalar[2] = true;
  l.scalar[2] = v;
  l.dtype = l.out_dtype = self.dtype();
  const int device = self.device().index();
  cuda::CUDAGuard guard(device);
  l.stream = current_stream(device);
  for_each_32bit(l, [&](const ElementwiseLaunch& part) {
    const LaunchStatus st = cuda_kernels::launch_where(part);
    if (st != 0) throw_launch_error(op, st, self.dtype(), self.sizes());
  });
}

}  // namespace

void register_index_kernels() {
  ops::IndexKernels k;
  k.index_select = &index_select;
  k.gather = &gather;
  k.scatter = &scatter;
  k.index_add = &index_add;
  k.masked_fill = &masked_fill;
  ops::register_kernel(DispatchKey::CUDA, k);
}

}  // namespace tensor::cuda_detail
