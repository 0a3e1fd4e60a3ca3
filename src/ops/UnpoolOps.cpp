// Front ends of max unpooling and fractional max pooling: libtorch's argument rules, checks
// that name the op, the shapes and dtypes, and the dispatcher table (src/ops/UnpoolOps.h). Each
// op checks, sizes and allocates its results (Meta stops there), then calls the backend's
// kernel on contiguous inputs. A 2-d problem is a 3-d one of depth 1 for the kernels.
#include "src/ops/UnpoolOps.h"

#include <array>

#include "kernels/cpu/UnpoolKernels.h"
#include "src/core/Check.h"
#include "src/dispatch/BackendKernels.h"
#include "tensor/ops.h"
#include "tensor/pooling.h"

namespace tensor {
namespace ops {
namespace {

using detail::shape_str;
using dispatch::BackendKernels;

BackendKernels<MaxUnpoolKernel> g_max_unpool{{&cpu::loops::max_unpool, nullptr}};
BackendKernels<FractionalPoolKernel> g_fractional{{&cpu::loops::fractional_max_pool, nullptr}};
BackendKernels<FractionalPoolBwdKernel> g_fractional_backward{{&cpu::loops::fractional_max_pool_backward, nullptr}};

const char* dims_desc(int64_t dims) {
  return dims == 2 ? "two elements (height, width)" : "three elements (depth, height, width)";
}

/// libtorch's checks of every non-batch dim being non-empty (dims from `first` on).
void check_non_empty(const char* op, const char* what, const Tensor& t, int64_t first) {
  for (int64_t i = first; i < t.dim(); ++i)
    TENSOR_CHECK(t.size(i) > 0,
                 "{}: expected {} to have non-zero size for non-batch dimensions, but {} has sizes {} with dimension "
                 "{} being empty", op, what, what, shape_str(t.sizes()), i);
}

// ---- max unpooling ----
template <DispatchKey K>
Tensor max_unpool_impl(const char* op, int64_t dims, const Tensor& self, const Tensor& indices, IntArrayRef output_size,
                       IntArrayRef stride, IntArrayRef padding) {
  const MaxUnpoolKernel kernel = g_max_unpool.get<K>(op);
  TENSOR_CHECK(self.is_floating_point(), "{}: expected a floating point input, got {}", op, self.describe());
  TENSOR_CHECK(indices.scalar_type() == kInt64, "{}: elements in indices should be type int64 but got {} (input {})",
               op, indices.describe(), self.describe());
  TENSOR_CHECK(self.dim() == dims + 1 || self.dim() == dims + 2,
               "{}: expected a {}-d or {}-d input, but got a tensor with {} dimensions (input {})", op, dims + 1,
               dims + 2, self.dim(), self.describe());
  TENSOR_CHECK(static_cast<int64_t>(output_size.size()) == dims,
               "{}: there should be exactly {} in output_size, but got {} (input {})", op, dims_desc(dims),
               shape_str(output_size), self.describe());
  TENSOR_CHECK(self.sizes() == indices.sizes(),
               "{}: expected indices of the input's shape {}, but got indices {}", op, shape_str(self.sizes()),
               indices.describe());
  TENSOR_CHECK(self.device() == indices.device(), "{}: input {} and indices {} must be on the same device", op,
               self.describe(), indices.describe());
  check_non_empty(op, "input", self, 1);
  if (dims == 3) {
    TENSOR_CHECK(stride.size() == 3, "{}: there should be exactly {} in stride, but got {} (input {})", op,
                 dims_desc(3), shape_str(stride), self.describe());
    TENSOR_CHECK(padding.size() == 3, "{}: there should be exactly {} in padding, but got {} (input {})", op,
                 dims_desc(3), shape_str(padding), self.describe());
    TENSOR_CHECK(stride[0] > 0 && stride[1] > 0 && stride[2] > 0,
                 "{}: strides should be greater than zero, but got stride {} (input {})", op, shape_str(stride),
                 self.describe());
  }
  for (int64_t v : output_size)
    TENSOR_CHECK(v >= 0, "{}: output_size must contain non-negative spatial dimensions, but got output_size={}", op,
                 shape_str(output_size));
  DimVector osz(self.sizes());
  int64_t out_plane = 1, in_plane = 1;
  for (int64_t d = 0; d < dims; ++d) {
    const size_t at = osz.size() - static_cast<size_t>(dims - d);
    in_plane *= osz[at];
    osz[at] = output_size[static_cast<size_t>(d)];
    out_plane *= osz[at];
  }
  Tensor out = empty(osz, self.options());
  if constexpr (K != DispatchKey::Meta) {
    if (self.numel() == 0) return out.zero_();
    const int64_t planes = self.numel() / in_plane;
    if (out_plane == 0) {
      // Every index is out of range of an empty plane; report the first.
      const int64_t first = indices.reshape({-1})[0].template item<int64_t>();
      TENSOR_ERROR("{}: found an invalid max index {} (output volumes are of size {}); input {}, indices {}", op,
                   first, fmt::join(output_size.begin(), output_size.end(), "x"), self.describe(),
                   indices.describe());
    }
    const int64_t bad = kernel(self.contiguous(), indices.contiguous(), planes, in_plane, out_plane, out);
    TENSOR_CHECK(bad == -1, "{}: found an invalid max index {} (output volumes are of size {}); input {}, indices {}",
                 op, bad, fmt::join(output_size.begin(), output_size.end(), "x"), self.describe(), indices.describe());
  }
  return out;
}

template <DispatchKey K>
Tensor max_unpool2d_fn(const Tensor& self, const Tensor& indices, IntArrayRef output_size) {
  return max_unpool_impl<K>("max_unpool2d", 2, self, indices, output_size, {}, {});
}

template <DispatchKey K>
Tensor max_unpool3d_fn(const Tensor& self, const Tensor& indices, IntArrayRef output_size, IntArrayRef stride,
                       IntArrayRef padding) {
  return max_unpool_impl<K>("max_unpool3d", 3, self, indices, output_size, stride, padding);
}

// ---- fractional max pooling ----
/// Checks a fractional pooling call and computes its problem (dims = 2 or 3).
kernels::FractionalPool fractional_geometry(const char* op, int64_t dims, const Tensor& self, IntArrayRef kernel_size,
                                            IntArrayRef output_size, const Tensor& samples) {
  TENSOR_CHECK(self.is_floating_point(), "{}: expected a floating point input, got {}", op, self.describe());
  TENSOR_CHECK(static_cast<int64_t>(kernel_size.size()) == dims,
               "{}: kernel_size must either be a single Int or tuple of {} Ints, got {} (input {})", op, dims,
               shape_str(kernel_size), self.describe());
  TENSOR_CHECK(static_cast<int64_t>(output_size.size()) == dims,
               "{}: output_size must either be a single Int or tuple of {} Ints, got {} (input {})", op, dims,
               shape_str(output_size), self.describe());
  TENSOR_CHECK(self.dim() == dims + 1 || self.dim() == dims + 2,
               "{}: expected a {}-d or {}-d input, but got {}", op, dims + 1, dims + 2, self.describe());
  check_non_empty(op, "input", self, 1);
  kernels::FractionalPool g;
  const bool batched = self.dim() == dims + 2;
  g.n = batched ? self.size(0) : 1;
  g.c = self.size(batched ? 1 : 0);
  const int64_t first = 3 - dims;  // 2-d problems fill {h, w} of {t, h, w}
  for (int64_t d = 0; d < dims; ++d) {
    const size_t i = static_cast<size_t>(first + d);
    g.in[i] = self.size(self.dim() - dims + d);
    g.out[i] = output_size[static_cast<size_t>(d)];
    g.k[i] = kernel_size[static_cast<size_t>(d)];
    TENSOR_CHECK(g.k[i] > 0 && g.out[i] > 0,
                 "{}: kernel_size {} and output_size {} must be positive (input {})", op, shape_str(kernel_size),
                 shape_str(output_size), self.describe());
    static const char* const names[3] = {"time", "height", "width"};
    TENSOR_CHECK(g.out[i] + g.k[i] - 1 <= g.in[i],
                 "{}: pool {} {} too large relative to input {} {} (output_size {}, input {})", op, names[i], g.k[i],
                 names[i], g.in[i], shape_str(output_size), self.describe());
  }
  g.sample_of = dims == 2 ? std::array<int64_t, 3>{0, 1, 0} : std::array<int64_t, 3>{0, 1, 2};
  g.samples_per_plane = dims;
  TENSOR_CHECK(samples.defined(), "{}: random_samples is undefined (input {})", op, self.describe());
  TENSOR_CHECK(samples.scalar_type() == self.scalar_type(),
               "{}: expected random_samples {} to have the same dtype as the input {}", op, samples.describe(),
               self.describe());
  TENSOR_CHECK(samples.device() == self.device(), "{}: input {} and random_samples {} must be on the same device", op,
               self.describe(), samples.describe());
  TENSOR_CHECK(samples.dim() == 3, "{}: expected random_samples to have 3 dimensions, got {} (input {})", op,
               samples.describe(), self.describe());
  TENSOR_CHECK(samples.size(0) >= g.n && samples.size(1) == g.c && samples.size(2) == dims,
               "{}: expected random_samples of shape (N >= {}, {}, {}) for input {}, got {}", op, g.n, g.c, dims,
               self.describe(), samples.describe());
  return g;
}

DimVector fractional_out_sizes(const Tensor& self, int64_t dims, IntArrayRef output_size) {
  DimVector s(self.sizes());
  for (int64_t d = 0; d < dims; ++d) s[s.size() - static_cast<size_t>(dims - d)] = output_size[static_cast<size_t>(d)];
  return s;
}

template <DispatchKey K>
std::tuple<Tensor, Tensor> fractional_impl(const char* op, int64_t dims, const Tensor& self, IntArrayRef kernel_size,
                                           IntArrayRef output_size, const Tensor& samples) {
  const FractionalPoolKernel kernel = g_fractional.get<K>(op);
  const kernels::FractionalPool g = fractional_geometry(op, dims, self, kernel_size, output_size, samples);
  const DimVector osz = fractional_out_sizes(self, dims, output_size);
  Tensor out = empty(osz, self.options());
  Tensor idx = empty(osz, self.options().dtype(kInt64));
  if constexpr (K != DispatchKey::Meta)
    if (out.numel() != 0) kernel(self.contiguous(), samples.contiguous(), g, out, idx);
  return {out, idx};
}

template <DispatchKey K>
std::tuple<Tensor, Tensor> fractional_max_pool2d_fn(const Tensor& self, IntArrayRef kernel_size,
                                                    IntArrayRef output_size, const Tensor& samples) {
  return fractional_impl<K>("fractional_max_pool2d", 2, self, kernel_size, output_size, samples);
}
template <DispatchKey K>
std::tuple<Tensor, Tensor> fractional_max_pool3d_fn(const Tensor& self, IntArrayRef kernel_size,
                                                    IntArrayRef output_size, const Tensor& samples) {
  return fractional_impl<K>("fractional_max_pool3d", 3, self, kernel_size, output_size, samples);
}

template <DispatchKey K>
Tensor fractional_backward_impl(const char* op, int64_t dims, const Tensor& grad, const Tensor& self,
                                IntArrayRef output_size, const Tensor& indices) {
  const FractionalPoolBwdKernel kernel = g_fractional_backward.get<K>(op);
  TENSOR_CHECK(self.dim() == dims + 1 || self.dim() == dims + 2, "{}: expected a {}-d or {}-d input, but got {}", op,
               dims + 1, dims + 2, self.describe());
  TENSOR_CHECK(static_cast<int64_t>(output_size.size()) == dims,
               "{}: output_size must have {} elements, got {} (input {})", op, dims, shape_str(output_size),
               self.describe());
  const DimVector osz = fractional_out_sizes(self, dims, output_size);
  TENSOR_CHECK(grad.sizes() == IntArrayRef(osz) && indices.sizes() == IntArrayRef(osz),
               "{}: expected grad_output and indices of the output's shape {} (input {}), got grad_output {} and "
               "indices {}", op, shape_str(osz), self.describe(), grad.describe(), indices.describe());
  TENSOR_CHECK(indices.scalar_type() == kInt64, "{}: expected int64 indices, got {}", op, indices.describe());
  TENSOR_CHECK(grad.is_floating_point(), "{}: expected a floating point grad_output, got {}", op, grad.describe());
  Tensor gi = empty(self.sizes(), grad.options());
  if constexpr (K != DispatchKey::Meta) {
    if (gi.numel() == 0) return gi;
    int64_t in_plane = 1, out_plane = 1;
    for (int64_t d = 0; d < dims; ++d) {
      in_plane *= self.size(self.dim() - dims + d);
      out_plane *= output_size[static_cast<size_t>(d)];
    }
    const int64_t bad = kernel(grad.contiguous(), indices.contiguous(), gi.numel() / in_plane, out_plane, in_plane, gi);
    TENSOR_CHECK(bad == -1, "{}: found an invalid index {} (input planes are of size {}); input {}, indices {}", op,
                 bad, in_plane, self.describe(), indices.describe());
  }
  return gi;
}

template <DispatchKey K>
Tensor fractional_max_pool2d_backward_fn(const Tensor& grad, const Tensor& self, IntArrayRef /*kernel_size*/,
                                         IntArrayRef output_size, const Tensor& indices) {
  return fractional_backward_impl<K>("fractional_max_pool2d_backward", 2, grad, self, output_size, indices);
}
template <DispatchKey K>
Tensor fractional_max_pool3d_backward_fn(const Tensor& grad, const Tensor& self, IntArrayRef /*kernel_size*/,
                                         IntArrayRef output_size, const Tensor& indices) {
  return fractional_backward_impl<K>("fractional_max_pool3d_backward", 3, grad, self, output_size, indices);
}

UnpoolOpDefs g_unpool = {
    TENSOR_FRONT_END_DEF(MaxUnpool2dFn, "max_unpool2d", max_unpool2d_fn),
    TENSOR_FRONT_END_DEF(MaxUnpool3dFn, "max_unpool3d", max_unpool3d_fn),
    TENSOR_FRONT_END_DEF(FractionalMaxPoolFn, "fractional_max_pool2d", fractional_max_pool2d_fn),
    TENSOR_FRONT_END_DEF(FractionalMaxPoolFn, "fractional_max_pool3d", fractional_max_pool3d_fn),
    TENSOR_FRONT_END_DEF(FractionalMaxPoolBwdFn, "fractional_max_pool2d_backward", fractional_max_pool2d_backward_fn),
    TENSOR_FRONT_END_DEF(FractionalMaxPoolBwdFn, "fractional_max_pool3d_backward", fractional_max_pool3d_backward_fn),
};

}  // namespace

UnpoolOpDefs& unpool_ops() { return g_unpool; }

void register_kernels(DispatchKey backend, const UnpoolKernels& k) {
  dispatch::check_kernel_backend(backend, "unpooling");
  if (k.max_unpool != nullptr) {
    g_max_unpool.set(backend, k.max_unpool);
    g_unpool.max_unpool2d.set(backend, &max_unpool2d_fn<DispatchKey::CUDA>);
    g_unpool.max_unpool3d.set(backend, &max_unpool3d_fn<DispatchKey::CUDA>);
  }
  if (k.fractional_max_pool != nullptr) {
    g_fractional.set(backend, k.fractional_max_pool);
    g_unpool.fractional_max_pool2d.set(backend, &fractional_max_pool2d_fn<DispatchKey::CUDA>);
    g_unpool.fractional_max_pool3d.set(backend, &fractional_max_pool3d_fn<DispatchKey::CUDA>);
  }
  if (k.fractional_max_pool_backward != nullptr) {
    g_fractional_backward.set(backend, k.fractional_max_pool_backward);
    g_unpool.fractional_max_pool2d_backward.set(backend, &fractional_max_pool2d_backward_fn<DispatchKey::CUDA>);
    g_unpool.fractional_max_pool3d_backward.set(backend, &fractional_max_pool3d_backward_fn<DispatchKey::CUDA>);
  }
}

}  // namespace ops

// ---- public functions ----
using ops::unpool_ops;

Tensor max_unpool2d(const Tensor& self, const Tensor& indices, IntArrayRef output_size) {
  return unpool_ops().max_unpool2d(self, indices, output_size);
}
Tensor max_unpool3d(const Tensor& self, const Tensor& indices, IntArrayRef output_size, IntArrayRef stride,
                    IntArrayRef padding) {
  return unpool_ops().max_unpool3d(self, indices, output_size, stride, padding);
}
std::tuple<Tensor, Tensor> fractional_max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef output_size,
                                                 const Tensor& random_samples) {
  return unpool_ops().fractional_max_pool2d(self, kernel_size, output_size, random_samples);
}
std::tuple<Tensor, Tensor> fractional_max_pool3d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef output_size,
                                                 const Tensor& random_samples) {
  return unpool_ops().fractional_max_pool3d(self, kernel_size, output_size, random_samples);
}
Tensor fractional_max_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                                      IntArrayRef output_size, const Tensor& indices) {
  return unpool_ops().fractional_max_pool2d_backward(grad_output, self, kernel_size, output_size, indices);
}
Tensor fractional_max_pool3d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                                      IntArrayRef output_size, const Tensor& indices) {
  return unpool_ops().fractional_max_pool3d_backward(grad_output, self, kernel_size, output_size, indices);
}

}  // namespace tensor
