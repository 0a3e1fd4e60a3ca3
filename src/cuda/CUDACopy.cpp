// Raw byte copies between CPU and CUDA devices, and device fills. Everything is ordered on the
// current stream of the CUDA side (Note [non_blocking copies]; Note [CUDA caching allocator]
// keys blocks on it too).
#include <cuda_runtime_api.h>

#include <complex>
#include <cstdint>
#include <cstring>

#include "kernels/cuda/ElementwiseLaunch.h"
#include "src/core/Check.h"
#include "src/cuda/CUDAElementwise.h"
#include "src/cuda/CUDARuntime.h"
#include "src/ops/IndexOps.h"
#include "tensor/autograd/autograd.h"
#include "tensor/ops.h"

namespace tensor::cuda_detail {

namespace {

// An event on the current device, destroyed on scope exit (the driver releases it once any
// pending record completes, so destroying right after enqueueing a wait is fine).
class ScopedEvent {
 public:
  ScopedEvent() { TENSOR_CUDA_CHECK(cudaEventCreateWithFlags(&ev_, cudaEventDisableTiming)); }
  ~ScopedEvent() {
    if (cudaEventDestroy(ev_) != cudaSuccess) (void)cudaGetLastError();
  }
  ScopedEvent(const ScopedEvent&) = delete;
  ScopedEvent& operator=(const ScopedEvent&) = delete;
  cudaEvent_t get() const { return ev_; }

 private:
  cudaEvent_t ev_ = nullptr;
};

// Copies between two devices on the source device's stream. Events make the copy wait for
// earlier work on the destination's stream (which may still read dst), and make later work
// there wait for the copy, since streams of different devices are not ordered otherwise. As any
// device-to-device copy, it is asynchronous to the host (Note [non_blocking copies]).
void peer_copy(void* dst, int dst_dev, const void* src, int src_dev, size_t nbytes) {
  cudaStream_t ds = current_stream(dst_dev);
  cudaStream_t ss = current_stream(src_dev);
  cuda::CUDAGuard to_dst(dst_dev);
  ScopedEvent dst_ready;
  TENSOR_CUDA_CHECK(cudaEventRecord(dst_ready.get(), ds));
  {
    cuda::CUDAGuard to_src(src_dev);
    ScopedEvent copied;
    TENSOR_CUDA_CHECK(cudaStreamWaitEvent(ss, dst_ready.get(), 0));
    TENSOR_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_dev, src, src_dev, nbytes, ss));
    TENSOR_CUDA_CHECK(cudaEventRecord(copied.get(), ss));
    cuda::CUDAGuard back(dst_dev);
    TENSOR_CUDA_CHECK(cudaStreamWaitEvent(ds, copied.get(), 0));
  }
}

// Page-locked host memory that libtensor did not allocate (cudaHostRegister, a foreign
// cudaHostAlloc): the driver knows it. Its owner keeps it alive, as with from_blob.
bool foreign_pinned(const void* p) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
}

bool all_bytes_equal(const unsigned char* p, size_t n) {
  for (size_t i = 1; i < n; ++i)
    if (p[i] != p[0]) return false;
  return true;
}

}  // namespace

// Note [non_blocking copies]
// Every copy is queued on the current stream of its CUDA side, so it is ordered after the work
// that produced its source and before the work that reads its destination, on that stream.
// - Device to device: asynchronous to the host whatever non_blocking says, as in libtorch; the
//   host sees the data only through a later copy to the host, which is ordered after it.
// - Blocking host copies wait for the stream (not the device, as cudaMemcpy would): the host
//   buffer is complete, or free to change, on return.
// - non_blocking with pinned host memory: no wait. The copy reads or writes the host block after
//   copy_ returns, so a block of the pinned allocator is noted as used on the stream
//   (record_host_use) and not reused before the copy is done (Note [Pinned host memory]).
// - non_blocking from pageable memory to a device: no wait either. The driver reads the source
//   into its own staging buffer before cudaMemcpyAsync returns, so the caller may change or free
//   it at once; only the device side is stream-ordered, which is what non_blocking promises.
// - non_blocking from a device into pageable memory: the host could read the destination before
//   the DMA lands (nothing records the use, and the memory may be freed or reused), so the
//   stream is synchronized, as if blocking. CUDA documents such a copy as complete when
//   cudaMemcpyAsync returns, which makes the wait nearly free; it keeps this correct without
//   relying on that.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes, bool non_blocking) {
  TENSOR_CHECK(!dst_device.is_meta() && !src_device.is_meta(), "copy: meta tensors have no data to copy ({} -> {})",
               src_device.str(), dst_device.str());
  bool to_cuda = dst_device.is_cuda(), from_cuda = src_device.is_cuda();
  if (!to_cuda && !from_cuda) {
    if (nbytes != 0 && dst != src) std::memcpy(dst, src, nbytes);
    return;
  }
  if (to_cuda && from_cuda) {
    int dd = resolve_device("copy between CUDA devices", dst_device);
    int sd = resolve_device("copy between CUDA devices", src_device);
    if (nbytes == 0) return;
    if (dd != sd) {
      peer_copy(dst, dd, src, sd, nbytes);
      return;
    }
    cuda::CUDAGuard guard(dd);
    TENSOR_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, current_stream(dd)));
    return;
  }
  int d = resolve_device(to_cuda ? "copy to CUDA" : "copy from CUDA", to_cuda ? dst_device : src_device);
  if (nbytes == 0) return;
  cuda::CUDAGuard guard(d);
  cudaStream_t s = current_stream(d);
  const cudaMemcpyKind kind = to_cuda ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  if (!non_blocking) {
    TENSOR_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, kind, s));
    TENSOR_CUDA_CHECK(cudaStreamSynchronize(s));
    return;
  }
  const void* host = to_cuda ? src : dst;
  const bool ours = record_host_use(host, d, s);
  TENSOR_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, kind, s));
  if (from_cuda && !ours && !foreign_pinned(dst)) TENSOR_CUDA_CHECK(cudaStreamSynchronize(s));
}

// Stream-ordered and asynchronous, like any kernel: the pattern is passed by value, so the
// caller's host buffer may die right after.
void fill_bytes(void* dst, Device device, const void* pattern, size_t elem_size, size_t count) {
  int d = resolve_device("fill on CUDA", device);
  TENSOR_CHECK(elem_size == 1 || elem_size == 2 || elem_size == 4 || elem_size == 8 || elem_size == 16,
               "fill on CUDA: unsupported element size {} bytes (expected 1, 2, 4, 8 or 16)", elem_size);
  if (count == 0) return;
  TENSOR_CHECK(count <= SIZE_MAX / elem_size, "fill on CUDA: {} elements of {} bytes overflow size_t", count,
               elem_size);
  size_t nbytes = count * elem_size;
  cuda::CUDAGuard guard(d);
  cudaStream_t s = current_stream(d);
  const auto* p = static_cast<const unsigned char*>(pattern);
  if (all_bytes_equal(p, elem_size)) {
    TENSOR_CUDA_CHECK(cudaMemsetAsync(dst, p[0], nbytes, s));
  } else {
    TENSOR_CUDA_CHECK(launch_fill(dst, pattern, elem_size, nbytes, s));
  }
}

// Note [CUDA copy_ on the device]
// copy_ and fill_ between real dtypes run as one launch of the elementwise engine's CopyFn
// (kernels/cuda/CopyKernels.cu): conversion on load and store, any strides, a broadcast source.
// A copy from the host first moves the source's bytes to the device as they are (contiguous,
// unconverted), a copy to the host converts on the device into a contiguous buffer of the
// destination's dtype first; so only bytes cross the bus and every conversion and layout change
// is a kernel. Between two devices the source is made contiguous on its own device, then copied
// peer to peer. Complex tensors go through their real parts (Note [Complex copies as real parts]).
namespace {

using cuda_kernels::ElementwiseLaunch;

// The launch of dst = src (already expanded to dst's shape; both on one device): dims innermost
// first, size-1 dims dropped, and neighbours merged where both operands step evenly across them.
ElementwiseLaunch describe_copy(const Tensor& dst, const Tensor* src) {
  ElementwiseLaunch l;
  l.ntensors = 2;
  l.data[0] = static_cast<char*>(dst.data_ptr());
  l.data[1] = src ? static_cast<char*>(src->data_ptr()) : nullptr;
  l.out_dtype = dst.dtype();
  l.dtype = src ? src->dtype() : dst.dtype();
  const int64_t es_out = dst.element_size(), es_in = src ? src->element_size() : 0;
  int nd = 0;
  for (int64_t d = dst.dim() - 1; d >= 0; --d) {
    if (dst.size(d) == 1) continue;
    const int64_t so = dst.stride(d) * es_out, si = src ? src->stride(d) * es_in : 0;
    if (nd > 0 && l.strides[0][nd - 1] * l.shape[nd - 1] == so && l.strides[1][nd - 1] * l.shape[nd - 1] == si) {
      l.shape[nd - 1] *= dst.size(d);  // the outer dim continues the inner one for both operands
      continue;
    }
    TENSOR_CHECK(nd < cuda_kernels::kMaxDims, "copy_ on CUDA: {} has more than {} dims that do not merge", dst.describe(),
                 cuda_kernels::kMaxDims);
    l.shape[nd] = dst.size(d);
    l.strides[0][nd] = so;
    l.strides[1][nd] = si;
    ++nd;
  }
  if (nd == 0) {  // a single element
    l.shape[0] = 1;
    l.strides[0][0] = es_out;
    l.strides[1][0] = src ? es_in : 0;
    nd = 1;
  }
  l.ndim = nd;
  return l;
}

void run_copy_launch(const char* op, const Tensor& dst, ElementwiseLaunch l) {
  if (dst.numel() == 0) return;
  const int device = dst.device().index();
  cuda::CUDAGuard guard(device);
  l.stream = current_stream(device);
  for_each_32bit(l, [&](const ElementwiseLaunch& part) {
    const cuda_kernels::LaunchStatus st = cuda_kernels::launch_copy(part);
    if (st != 0) throw_launch_error(op, st, l.dtype, dst.sizes());
  });
}

// dst = src, both CUDA tensors of one device, real dtypes; src broadcasts to dst's shape.
void real_copy(const Tensor& dst, const Tensor& src) {
  const Tensor s = src.expand(dst.sizes());
  run_copy_launch("copy_", dst, describe_copy(dst, &s));
}

// Every element of the CUDA tensor self (real dtype, any strides) = value.
void real_fill(const Tensor& self, const Scalar& value) {
  // The value converted to self's dtype on the host, as the CPU's fill_ does, then passed exactly.
  const Tensor one = scalar_tensor(value, TensorOptions(self.dtype()));
  ElementwiseLaunch l = describe_copy(self, nullptr);
  l.is_scalar[1] = true;
  l.scalar[1].d = one.to(kFloat64).item<double>();
  l.scalar[1].i = one.to(kInt64).item<int64_t>();
  run_copy_launch("fill_", self, l);
}

// Note [Complex copies as real parts]
// CUDA has no complex kernels yet, but a complex tensor's real and imaginary parts are real
// views of it (real(), imag(): float or double, the complex strides doubled), so every complex
// copy, conversion, broadcast and fill is one or two real launches on those views, plus a
// negation of the imaginary part where exactly one side is lazily conjugated (a conj view
// stores the conjugates of its values). Real to complex writes a zero imaginary part; complex to
// real keeps the real part, as libtorch's copy_ does.
struct Parts {
  Tensor re, im;
  bool conj;  // the values are the conjugates of re + i im
};
Parts parts_of(const Tensor& t) {
  const Tensor plain = t.is_conj() ? t.conj() : t;
  return {plain.real(), plain.imag(), t.is_conj()};
}

// dst = src, both CUDA tensors of one device, any dtypes; src broadcasts to dst's shape.
void device_copy(const Tensor& dst, const Tensor& src) {
  const bool cd = is_complex(dst.dtype()), cs = is_complex(src.dtype());
  if (!cd && !cs) {
    real_copy(dst, src);
    return;
  }
  NoGradGuard no_grad;  // the part views and the negation serve this kernel, not autograd
  const Tensor s = src.expand(dst.sizes());
  if (!cd) {
    real_copy(dst, parts_of(s).re);
    return;
  }
  const Parts d = parts_of(dst);
  if (!cs) {
    real_copy(d.re, s);
    real_fill(d.im, 0);
    return;
  }
  const Parts from = parts_of(s);
  real_copy(d.re, from.re);
  real_copy(d.im, from.im);
  if (d.conj != from.conj) Tensor(d.im).neg_();
}

void device_fill(const Tensor& self, const Scalar& value) {
  if (!is_complex(self.dtype())) {
    real_fill(self, value);
    return;
  }
  NoGradGuard no_grad;
  const std::complex<double> v = value.to<std::complex<double>>();
  const Parts d = parts_of(self);
  real_fill(d.re, v.real());
  real_fill(d.im, d.conj ? -v.imag() : v.imag());
}

// A contiguous tensor on `device` holding src's values (src on any device), unconjugated.
Tensor plain_on(const Tensor& src, Device device, bool non_blocking) {
  Tensor from;
  if (src.is_cuda()) {
    from = empty(src.sizes(), TensorOptions(src.dtype()).device(src.device()));
    device_copy(from, src);  // layout and conjugation resolved on the source's device
  } else {
    from = src.contiguous();  // a broadcast source stays small: only its own elements move
    if (from.is_conj()) from = from.resolve_conj();
  }
  if (from.device() == device) return from;
  Tensor staged = empty(from.sizes(), TensorOptions(from.dtype()).device(device));
  copy_bytes(staged.data_ptr(), staged.device(), from.data_ptr(), from.device(), static_cast<size_t>(from.nbytes()),
             non_blocking);
  return staged;
}

}  // namespace

void copy_kernel(const Tensor& dst, const Tensor& src, bool non_blocking) {
  if (src.dtype() == dst.dtype() && src.sizes() == dst.sizes() && src.is_contiguous() && dst.is_contiguous() &&
      !src.is_conj() && !dst.is_conj()) {
    copy_bytes(dst.data_ptr(), dst.device(), src.data_ptr(), src.device(), static_cast<size_t>(dst.nbytes()),
               non_blocking);
    return;
  }
  if (dst.is_cuda()) {
    // Same device: one kernel. From the host or another device: the source's bytes first.
    device_copy(dst, src.is_cuda() && src.device() == dst.device() ? src : plain_on(src, dst.device(), non_blocking));
    return;
  }
  // To the host: converted on the device into a contiguous buffer holding what dst's memory
  // must hold (for a lazily conjugated dst, the conjugates: written through a conj view of the
  // buffer), then bytes, into dst's plain alias (a strided one through the CPU's copy_).
  NoGradGuard no_grad;
  const Tensor mem = dst.is_conj() ? dst.conj() : dst;
  Tensor staged = empty(dst.sizes(), TensorOptions(dst.dtype()).device(src.device()));
  device_copy(dst.is_conj() ? staged.conj() : staged, src);
  if (mem.is_contiguous()) {
    copy_bytes(mem.data_ptr(), mem.device(), staged.data_ptr(), staged.device(), static_cast<size_t>(mem.nbytes()),
               non_blocking);
    return;
  }
  Tensor host = empty(dst.sizes(), TensorOptions(dst.dtype()));
  copy_bytes(host.data_ptr(), host.device(), staged.data_ptr(), staged.device(), static_cast<size_t>(host.nbytes()),
             false);
  Tensor(mem).copy_(host);  // the CPU kernel writes the strided destination
}

void fill_kernel(const Tensor& self, const Scalar& value) {
  if (self.is_contiguous() && !self.is_conj()) {
    const Tensor one = scalar_tensor(value, TensorOptions(self.dtype()));
    fill_bytes(self.data_ptr(), self.device(), one.data_ptr(), static_cast<size_t>(self.element_size()),
               static_cast<size_t>(self.numel()));
    return;
  }
  device_fill(self, value);
}

// cat and stack's CUDA kernel (CatSlabKernel): the slab of `out` is a view, written by copy_'s
// device kernel, which converts to out's dtype and resolves a lazy conjugation. The view is
// made with autograd off: out is the front end's fresh output, recorded by cat's own node.
namespace {
void cat_copy_slab(const Tensor& out, const Tensor& src, int64_t dim, int64_t offset) {
  NoGradGuard no_grad;
  copy_kernel(out.narrow(dim, offset, src.size(dim)), src, false);
}
}  // namespace

void register_copy_kernels() { ops::register_kernel(DispatchKey::CUDA, &cat_copy_slab); }

}  // namespace tensor::cuda_detail
