// Tensor: a refcounted handle to a TensorImpl. Copies share data (as in libtorch).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "tensor/core/ArrayRef.h"
#include "tensor/core/Error.h"
#include "tensor/core/MemoryFormat.h"
#include "tensor/core/QScheme.h"
#include "tensor/core/Scalar.h"
#include "tensor/core/TensorAccessor.h"
#include "tensor/core/TensorImpl.h"
#include "tensor/core/TensorOptions.h"

namespace tensor {

namespace indexing { class TensorIndex; }
namespace autograd { class Node; }
namespace cuda { class Stream; }
class Tensor;
using TensorList = ArrayRef<Tensor>;

/// A strided view over refcounted storage. A default-constructed Tensor is undefined.
class TENSOR_API Tensor {
 public:
  Tensor() = default;
  explicit Tensor(intrusive_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  Tensor(const Tensor&) = default;
  Tensor(Tensor&&) = default;

  // Assignment follows libtorch: to a named handle (an lvalue) it rebinds the handle, sharing
  // the other tensor's data; to a temporary (an rvalue, such as `t[0]` or `t.select(0, 1)`) it
  // writes through the view, so `t[0] = u;` changes t instead of silently doing nothing.
  /// Rebinds this handle to `o`'s tensor (no data is copied).
  Tensor& operator=(const Tensor& o) & = default;
  /// Rebinds this handle, taking `o`'s reference.
  Tensor& operator=(Tensor&& o) & = default;
  /// Copies `src` into the viewed elements (broadcasting, converting dtype): `t[0] = u`.
  Tensor& operator=(const Tensor& src) && { return copy_(src); }
  /// Copies `src` into the viewed elements: `t[0] = a + b`.
  Tensor& operator=(Tensor&& src) && { return copy_(src); }
  /// Fills the viewed elements with `v`: `t[0] = 3.5`.
  Tensor& operator=(const Scalar& v) && { return fill_(v); }

  bool defined() const { return static_cast<bool>(impl_); }
  TensorImpl* unsafeGetTensorImpl() const { return impl_.get(); }
  const intrusive_ptr<TensorImpl>& impl() const { return impl_; }
  /// True when both handles share one TensorImpl.
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  void reset() { impl_.reset(); }

  // ---- metadata ----
  /// Sizes of every dim.
  IntArrayRef sizes() const { return checked()->sizes(); }
  /// Size of dim `d` (negative counts from the end).
  int64_t size(int64_t d) const;
  IntArrayRef strides() const { return checked()->strides(); }
  int64_t stride(int64_t d) const;
  int64_t dim() const { return checked()->dim(); }
  int64_t ndimension() const { return dim(); }
  int64_t numel() const { return checked()->numel(); }
  ScalarType dtype() const { return checked()->dtype(); }
  ScalarType scalar_type() const { return checked()->dtype(); }
  Device device() const { return checked()->device(); }
  TensorOptions options() const { return TensorOptions().dtype(dtype()).device(device()); }
  bool is_contiguous() const { return checked()->is_contiguous(); }
  /// True when the dims are dense in `f`'s order (ChannelsLast: 4-d, C innermost; ChannelsLast3d:
  /// 5-d); size-1 dims' strides are ignored, as in is_contiguous(). Preserve is an error.
  bool is_contiguous(MemoryFormat f) const;
  /// The layout results made from this tensor take (libtorch's heuristic over the strides,
  /// Note [Memory formats]): ChannelsLast(3d) for 4-d (5-d) tensors strided like it, else
  /// Contiguous. With `channels_last_strides_exact_match`, only exact channels-last strides count.
  MemoryFormat suggest_memory_format(bool channels_last_strides_exact_match = false) const;
  int64_t storage_offset() const { return checked()->storage_offset(); }
  int64_t element_size() const { return tensor::element_size(dtype()); }
  int64_t nbytes() const { return numel() * element_size(); }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_cpu() const { return device().is_cpu(); }
  bool is_meta() const { return device().is_meta(); }
  bool is_floating_point() const { return tensor::is_floating_point(dtype()); }
  bool is_complex() const { return tensor::is_complex(dtype()); }
  /// True when this is a lazily conjugated view (conj() of a complex tensor).
  bool is_conj() const { return checked()->is_conj(); }

  // ---- quantized tensors (tensor/quantized.h, docs/quantization.md) ----
  /// True for a tensor of dtype kQInt8, kQUInt8 or kQInt32.
  bool is_quantized() const { return is_qint_type(dtype()); }
  /// kPerTensorAffine or kPerChannelAffine; throws for a tensor that is not quantized.
  QScheme qscheme() const;
  /// The scale of a per-tensor quantized tensor.
  double q_scale() const;
  /// The zero point of a per-tensor quantized tensor.
  int64_t q_zero_point() const;
  /// The scales of a per-channel quantized tensor (float64, one per channel; a copy).
  Tensor q_per_channel_scales() const;
  /// The zero points of a per-channel quantized tensor (int64, one per channel; a copy).
  Tensor q_per_channel_zero_points() const;
  /// The dim whose index picks the channel of a per-channel quantized tensor.
  int64_t q_per_channel_axis() const;
  /// The stored integers as a new int8/uint8/int32 tensor (a copy, same shape).
  Tensor int_repr() const;
  /// The real values (q - zero_point) * scale as a new float32 tensor.
  Tensor dequantize() const;
  /// Typed pointer to element 0; throws if T does not match the dtype or the tensor has no memory.
  template <class T> T* data_ptr() const;
  void* data_ptr() const;
  /// libtorch's older spelling of data_ptr<T>().
  template <class T> T* data() const { return data_ptr<T>(); }
  /// Indexed element access, `t.accessor<float, 2>()[i][j]` (libtorch's accessor): checks the
  /// dim and dtype; valid while this tensor lives and keeps its shape.
  template <class T, size_t N> TensorAccessor<T, N> accessor() const&;
  /// Not on a temporary: the accessor would outlive the sizes it points to.
  template <class T, size_t N> TensorAccessor<T, N> accessor() && = delete;
  /// The value of a one-element tensor, converted to T.
  template <class T> T item() const;
  Scalar item() const;
  /// The truth of a one-element tensor (nonzero); throws for zero or several elements.
  bool is_nonzero() const;
  /// Shape and dtype for messages: "[2, 3] float32".
  std::string describe() const;
  /// In-place-write counter shared with views (autograd checks it).
  uint32_t _version() const { return checked()->version(); }

  // ---- conversion ----
  /// Copy to another dtype and/or device and/or memory format, as libtorch: returns *this when
  /// nothing changes (dtype, device, and a memory format that is unset, Preserve, or the one
  /// suggest_memory_format() names) unless `copy`. An unset memory format means Preserve: the
  /// copy keeps a dense source's strides (Note [Memory formats]).
  Tensor to(ScalarType t, bool non_blocking = false, bool copy = false,
            std::optional<MemoryFormat> memory_format = std::nullopt) const;
  Tensor to(Device d, bool non_blocking = false, bool copy = false,
            std::optional<MemoryFormat> memory_format = std::nullopt) const;
  Tensor to(DeviceType d, bool non_blocking = false, bool copy = false,
            std::optional<MemoryFormat> memory_format = std::nullopt) const {
    return to(Device(d), non_blocking, copy, memory_format);
  }
  Tensor to(Device d, ScalarType t, bool non_blocking = false, bool copy = false,
            std::optional<MemoryFormat> memory_format = std::nullopt) const;
  /// The options' dtype, device and memory format where set; a memory format in both the
  /// options and the argument is an error.
  Tensor to(const TensorOptions& o, bool non_blocking = false, bool copy = false,
            std::optional<MemoryFormat> memory_format = std::nullopt) const;
  /// To `other`'s dtype and device.
  Tensor to(const Tensor& other, bool non_blocking = false, bool copy = false,
            std::optional<MemoryFormat> memory_format = std::nullopt) const;
  Tensor cpu() const { return to(Device(kCPU)); }
  Tensor cuda(bool non_blocking = false) const { return to(Device(kCUDA), non_blocking); }
  /// A copy in page-locked host memory (a CPU tensor), so that copies to CUDA can overlap.
  Tensor pin_memory() const;
  /// True for a CPU tensor in page-locked memory (made by pin_memory).
  bool is_pinned() const;
  /// This CUDA tensor's memory is not reused before the work queued on `stream` so far finishes
  /// (for a tensor used on a stream other than the one that allocated it).
  void record_stream(const cuda::Stream& stream) const;
  Tensor toType(ScalarType t) const { return to(t); }

  // ---- views and shape ----
  Tensor view(IntArrayRef sizes) const;
  Tensor reshape(IntArrayRef sizes) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const;
  Tensor permute(IntArrayRef dims) const;
  Tensor slice(int64_t dim = 0, std::optional<int64_t> start = std::nullopt, std::optional<int64_t> end = std::nullopt,
               int64_t step = 1) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  Tensor expand(IntArrayRef sizes) const;
  Tensor expand_as(const Tensor& other) const { return expand(other.sizes()); }
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  // In-place shape ops (libtorch's): they change this tensor's own sizes and strides, which
  // every handle to it sees, and keep its data. With autograd as libtorch: refused on a leaf
  // that requires grad (or a view of one) with grad mode on, recorded as the view otherwise
  // (Note [In-place views] in src/autograd/InPlaceViews.cpp).
  /// unsqueeze(dim), in place.
  Tensor& unsqueeze_(int64_t dim) const;
  /// squeeze(), in place: drops every size-1 dim.
  Tensor& squeeze_() const;
  /// squeeze(dim), in place: drops dim if its size is 1.
  Tensor& squeeze_(int64_t dim) const;
  /// Drops each of `dims` whose size is 1 (libtorch's squeeze_(IntArrayRef)).
  Tensor& squeeze_(IntArrayRef dims) const;
  /// t(), in place (a tensor of at most 2 dims).
  Tensor& t_() const;
  /// transpose(d0, d1), in place.
  Tensor& transpose_(int64_t d0, int64_t d1) const;
  /// tensor::detach_: no grad_fn, requires_grad false, in place; refused on a view of a tensor
  /// that requires grad (use detach()), as libtorch.
  Tensor& detach_() const;
  /// True for a tensor whose memory was allocated inside an InferenceMode scope (and its views).
  bool is_inference() const;
  /// A tensor of `sizes` with this tensor's dtype and device unless `o` gives them
  /// (libtorch's new_empty / new_zeros / new_ones / new_full).
  Tensor new_empty(IntArrayRef sizes, const TensorOptions& o = {}) const;
  Tensor new_zeros(IntArrayRef sizes, const TensorOptions& o = {}) const;
  Tensor new_ones(IntArrayRef sizes, const TensorOptions& o = {}) const;
  Tensor new_full(IntArrayRef sizes, const Scalar& value, const TensorOptions& o = {}) const;
  /// tensor::diag: a 1-D tensor gives a matrix with it on diagonal `diagonal`, a 2-D one a copy
  /// of that diagonal.
  Tensor diag(int64_t diagonal = 0) const;
  /// tensor::multinomial: int64 indices drawn by the rows of this (1-D or 2-D) weight tensor.
  Tensor multinomial(int64_t num_samples, bool replacement = false) const;
  /// tensor::qr: (Q, R), reduced when `some`, complete otherwise.
  std::tuple<Tensor, Tensor> qr(bool some = true) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unflatten(int64_t dim, IntArrayRef sizes) const;
  Tensor unfold(int64_t dim, int64_t size, int64_t step) const;
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  Tensor as_strided(IntArrayRef sizes, IntArrayRef strides, std::optional<int64_t> storage_offset = std::nullopt) const;
  Tensor contiguous() const;
  /// *this when is_contiguous(f), else a copy laid out in f (Contiguous, ChannelsLast for 4-d,
  /// ChannelsLast3d for 5-d; Preserve is an error).
  Tensor contiguous(MemoryFormat f) const;
  /// A copy with its own memory, row-major (libtorch's clone() preserves a dense tensor's
  /// strides: spell that clone(MemoryFormat::Preserve)).
  Tensor clone() const;
  /// A copy laid out in `f`; Preserve keeps a dense tensor's strides (Note [Memory formats]).
  Tensor clone(MemoryFormat f) const;
  Tensor detach() const;
  /// libtorch's Tensor::data(): the same data without autograd history (requires_grad false),
  /// for writes autograd must not see. Here it is detach(): the version counter lives in the
  /// storage, so it stays shared.
  Tensor data() const { return detach(); }
  /// Lazy conjugate: flips the conj bit of a complex tensor (no copy); identity for real tensors.
  Tensor conj() const;
  /// Materializes a pending conjugation.
  Tensor resolve_conj() const;
  Tensor real() const;
  Tensor imag() const;
  Tensor view_as(const Tensor& o) const { return view(o.sizes()); }
  Tensor reshape_as(const Tensor& o) const { return reshape(o.sizes()); }
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  /// size(dim) views, the i-th equal to select(dim, i) (libtorch's unbind); dim may be negative.
  std::vector<Tensor> unbind(int64_t dim = 0) const;
  /// tensor::tril/triu on the last two dims; the trailing-underscore forms write in place.
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;
  /// In place. Every `*_` method is a const member returning Tensor&, as in libtorch: the
  /// handle is const, the data it points to is not, so `x.grad().zero_()` compiles.
  Tensor& tril_(int64_t diagonal = 0) const;
  Tensor& triu_(int64_t diagonal = 0) const;
  /// Tiles repeats[k] times along dim k (repeats.size() >= dim(); extra entries add leading dims).
  Tensor repeat(IntArrayRef repeats) const;
  /// tensor::roll: rotate along dims by shifts (no dims: roll the flattened tensor, keep the shape).
  Tensor roll(IntArrayRef shifts, IntArrayRef dims = {}) const;
  /// tensor::flip: reverse along each of dims.
  Tensor flip(IntArrayRef dims) const;

  // ---- indexing ----
  Tensor index(ArrayRef<indexing::TensorIndex> indices) const;
  /// Writes value into x.index(indices) (broadcasting); returns *this.
  Tensor& index_put_(ArrayRef<indexing::TensorIndex> indices, const Tensor& value) const;
  Tensor& index_put_(ArrayRef<indexing::TensorIndex> indices, const Scalar& value) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor index_add(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1) const;
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  Tensor masked_select(const Tensor& mask) const;
  Tensor nonzero() const;
  /// In-place forms of scatter, scatter_add, index_add and masked_fill; each returns *this.
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor& scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor& index_add_(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1) const;
  Tensor& masked_fill_(const Tensor& mask, const Scalar& value) const;

  // ---- elementwise ----
  // Each op has a functional form and an in-place `op_` form (const member, returns *this).
#define TENSOR_BINARY_METHODS(name)             \
  Tensor name(const Tensor& other) const;       \
  Tensor name(const Scalar& other) const;       \
  Tensor& name##_(const Tensor& other) const;   \
  Tensor& name##_(const Scalar& other) const;
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor add(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor& add_(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor& add_(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor& sub_(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor& sub_(const Scalar& other, const Scalar& alpha = 1) const;
  TENSOR_BINARY_METHODS(mul)
  TENSOR_BINARY_METHODS(div)
  TENSOR_BINARY_METHODS(remainder)
  TENSOR_BINARY_METHODS(fmod)
  TENSOR_BINARY_METHODS(pow)
  TENSOR_BINARY_METHODS(maximum)
  TENSOR_BINARY_METHODS(minimum)
  TENSOR_BINARY_METHODS(atan2)
  TENSOR_BINARY_METHODS(hypot)
  TENSOR_BINARY_METHODS(logaddexp)
  TENSOR_BINARY_METHODS(xlogy)
  TENSOR_BINARY_METHODS(copysign)
  TENSOR_BINARY_METHODS(eq)
  TENSOR_BINARY_METHODS(ne)
  TENSOR_BINARY_METHODS(lt)
  TENSOR_BINARY_METHODS(le)
  TENSOR_BINARY_METHODS(gt)
  TENSOR_BINARY_METHODS(ge)
  TENSOR_BINARY_METHODS(logical_and)
  TENSOR_BINARY_METHODS(logical_or)
  TENSOR_BINARY_METHODS(logical_xor)
  TENSOR_BINARY_METHODS(bitwise_and)
  TENSOR_BINARY_METHODS(bitwise_or)
  TENSOR_BINARY_METHODS(bitwise_xor)
#undef TENSOR_BINARY_METHODS

#define TENSOR_UNARY_METHODS(name) \
  Tensor name() const;             \
  Tensor& name##_() const;
  TENSOR_UNARY_METHODS(neg)
  TENSOR_UNARY_METHODS(abs)
  TENSOR_UNARY_METHODS(exp)
  TENSOR_UNARY_METHODS(exp2)
  TENSOR_UNARY_METHODS(log)
  TENSOR_UNARY_METHODS(log2)
  TENSOR_UNARY_METHODS(log10)
  TENSOR_UNARY_METHODS(log1p)
  TENSOR_UNARY_METHODS(expm1)
  TENSOR_UNARY_METHODS(sqrt)
  TENSOR_UNARY_METHODS(rsqrt)
  TENSOR_UNARY_METHODS(sin)
  TENSOR_UNARY_METHODS(cos)
  TENSOR_UNARY_METHODS(tan)
  TENSOR_UNARY_METHODS(asin)
  TENSOR_UNARY_METHODS(acos)
  TENSOR_UNARY_METHODS(atan)
  TENSOR_UNARY_METHODS(sinh)
  TENSOR_UNARY_METHODS(cosh)
  TENSOR_UNARY_METHODS(tanh)
  TENSOR_UNARY_METHODS(sigmoid)
  TENSOR_UNARY_METHODS(relu)
  TENSOR_UNARY_METHODS(gelu)
  TENSOR_UNARY_METHODS(silu)
  TENSOR_UNARY_METHODS(erf)
  TENSOR_UNARY_METHODS(floor)
  TENSOR_UNARY_METHODS(ceil)
  TENSOR_UNARY_METHODS(round)
  TENSOR_UNARY_METHODS(trunc)
  TENSOR_UNARY_METHODS(sign)
  TENSOR_UNARY_METHODS(reciprocal)
  TENSOR_UNARY_METHODS(square)
  TENSOR_UNARY_METHODS(logical_not)
  TENSOR_UNARY_METHODS(bitwise_not)
#undef TENSOR_UNARY_METHODS
  Tensor isnan() const;
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  /// In-place clamp; returns *this.
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor clamp_min(const Scalar& min) const { return clamp(min, std::nullopt); }
  Tensor clamp_max(const Scalar& max) const { return clamp(std::nullopt, max); }
  /// Sets every element to value (a Scalar or a 0-dim tensor); returns *this.
  Tensor& fill_(const Scalar& value) const;
  Tensor& fill_(const Tensor& value) const;
  /// fill_(0).
  Tensor& zero_() const;
  /// Copies src into this tensor (broadcasting src; any dtype and device).
  Tensor& copy_(const Tensor& src, bool non_blocking = false) const;

  // ---- in-place random fills (libtorch's; drawn from the global generator, tensor::manual_seed) ----
  /// Uniform on [from, to) (floating dtypes).
  Tensor& uniform_(double from = 0, double to = 1) const;
  /// Normal with this mean and standard deviation (floating dtypes).
  Tensor& normal_(double mean = 0, double std = 1) const;
  /// 1 with probability p, else 0 (any dtype but complex).
  Tensor& bernoulli_(double p = 0.5) const;
  /// 1 with probability p[i] (p broadcasts to this tensor's shape, values in [0, 1]), else 0.
  Tensor& bernoulli_(const Tensor& p) const;
  /// Integers uniform on [from, to - 1]; with `to` absent, up to the largest integer the dtype
  /// holds exactly (2^mantissa for floating dtypes), as libtorch.
  Tensor& random_(int64_t from, std::optional<int64_t> to) const;
  /// Integers uniform on [0, to - 1].
  Tensor& random_(int64_t to) const;
  /// Integers uniform on [0, the largest integer the dtype holds exactly].
  Tensor& random_() const;
  /// Exponential with rate lambd > 0 (floating dtypes).
  Tensor& exponential_(double lambd = 1) const;
  /// exp of a normal with this mean and standard deviation (floating dtypes).
  Tensor& log_normal_(double mean = 1, double std = 2) const;
  /// Cauchy with this median and scale (floating dtypes).
  Tensor& cauchy_(double median = 0, double sigma = 1) const;
  /// Geometric with success probability 0 < p < 1: the number of trials to the first success
  /// (1, 2, ...).
  Tensor& geometric_(double p) const;

  // ---- reductions ----
  Tensor sum(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor sum(IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor mean(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor mean(IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor prod(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor prod(int64_t dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor max() const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  Tensor min() const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  /// Elementwise minimum(other) / maximum(other) (libtorch's min(Tensor) and max(Tensor)).
  Tensor min(const Tensor& other) const;
  Tensor max(const Tensor& other) const;
  Tensor amax(IntArrayRef dim = {}, bool keepdim = false) const;
  Tensor amin(IntArrayRef dim = {}, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor var(IntArrayRef dim = {}, int64_t correction = 1, bool keepdim = false) const;
  Tensor std(IntArrayRef dim = {}, int64_t correction = 1, bool keepdim = false) const;
  Tensor norm(const Scalar& p = 2) const;
  Tensor norm(const Scalar& p, IntArrayRef dim, bool keepdim = false) const;
  Tensor logsumexp(IntArrayRef dim, bool keepdim = false) const;
  Tensor any() const;
  Tensor any(int64_t dim, bool keepdim = false) const;
  Tensor all() const;
  Tensor all(int64_t dim, bool keepdim = false) const;
  Tensor cumsum(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor cumprod(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor softmax(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor log_softmax(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  /// tensor::topk, tensor::sort, tensor::argsort (NaN ranks highest; sorts are stable).
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;
  std::tuple<Tensor, Tensor> sort(std::optional<bool> stable, int64_t dim = -1, bool descending = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false) const;

  // ---- linear algebra (tensor/linalg.h) ----
  /// Matrix product with libtorch's matmul rules (1-D cases, broadcast batch dims).
  Tensor matmul(const Tensor& other) const;
  /// 2-D matrix product.
  Tensor mm(const Tensor& other) const;
  /// Batched 3-D matrix product.
  Tensor bmm(const Tensor& other) const;
  /// Inner product of two 1-D tensors.
  Tensor dot(const Tensor& other) const;
  /// Outer product of two 1-D tensors.
  Tensor outer(const Tensor& other) const;

  // ---- comparison of whole tensors ----
  /// |a - b| <= atol + rtol * |b| everywhere (NaNs equal only if equal_nan).
  bool allclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;
  /// Same shape and same values.
  bool equal(const Tensor& other) const;

  // ---- autograd ----
  /// True when ops on this tensor are recorded for backward.
  bool requires_grad() const { return checked()->requires_grad(); }
  /// Marks a leaf as requiring grad (floating and complex dtypes only).
  Tensor& requires_grad_(bool requires_grad = true) const;
  /// libtorch's other spelling of requires_grad_(requires_grad).
  Tensor& set_requires_grad(bool requires_grad) const { return requires_grad_(requires_grad); }
  /// The accumulated gradient of a leaf (or of a tensor that called retain_grad()); undefined until backward.
  const Tensor& grad() const;
  /// Mutable access: `x.mutable_grad() = Tensor()` resets it.
  Tensor& mutable_grad() const;
  /// True for tensors not produced by a recorded op (user-created, or detached).
  bool is_leaf() const;
  /// The node that produced this tensor (null for leaves).
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  /// Keeps .grad() of a non-leaf after backward.
  void retain_grad() const;
  bool retains_grad() const;
  /// Which output of grad_fn this tensor is.
  uint32_t output_nr() const;
  /// Backpropagates from this tensor; `gradient` may be omitted for a one-element tensor.
  void backward(const Tensor& gradient = Tensor(), std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false) const;
  /// Calls hook(grad) when the gradient for this tensor is computed; a defined return value
  /// replaces the gradient. Returns a handle for remove_hook.
  unsigned register_hook(std::function<Tensor(Tensor)> hook) const;
  /// Removes the hook that register_hook returned `handle` for; throws tensor::Error if there is none.
  void remove_hook(unsigned handle) const;

 private:
  // Metadata of an undefined Tensor is a user error, not a crash: one predictable branch.
  const TensorImpl* checked() const {
    if (__builtin_expect(!impl_, 0)) throw_undefined();
    return impl_.get();
  }
  [[noreturn]] static void throw_undefined();
  intrusive_ptr<TensorImpl> impl_;
};

// Operators, as libtorch.
TENSOR_API Tensor operator+(const Tensor& a, const Tensor& b);
TENSOR_API Tensor operator+(const Tensor& a, const Scalar& b);
TENSOR_API Tensor operator+(const Scalar& a, const Tensor& b);
TENSOR_API Tensor operator-(const Tensor& a, const Tensor& b);
TENSOR_API Tensor operator-(const Tensor& a, const Scalar& b);
TENSOR_API Tensor operator-(const Scalar& a, const Tensor& b);
TENSOR_API Tensor operator*(const Tensor& a, const Tensor& b);
TENSOR_API Tensor operator*(const Tensor& a, const Scalar& b);
TENSOR_API Tensor operator*(const Scalar& a, const Tensor& b);
TENSOR_API Tensor operator/(const Tensor& a, const Tensor& b);
TENSOR_API Tensor operator/(const Tensor& a, const Scalar& b);
TENSOR_API Tensor operator/(const Scalar& a, const Tensor& b);
TENSOR_API Tensor operator-(const Tensor& a);
TENSOR_API Tensor operator==(const Tensor& a, const Tensor& b);
TENSOR_API Tensor operator==(const Tensor& a, const Scalar& b);
TENSOR_API Tensor operator!=(const Tensor& a, const Tensor& b);
TENSOR_API Tensor operator!=(const Tensor& a, const Scalar& b);
TENSOR_API Tensor operator<(const Tensor& a, const Tensor& b);
TENSOR_API Tensor operator<(const Tensor& a, const Scalar& b);
TENSOR_API Tensor operator<=(const Tensor& a, const Tensor& b);
TENSOR_API Tensor operator<=(const Tensor& a, const Scalar& b);
TENSOR_API Tensor operator>(const Tensor& a, const Tensor& b);
TENSOR_API Tensor operator>(const Tensor& a, const Scalar& b);
TENSOR_API Tensor operator>=(const Tensor& a, const Tensor& b);
TENSOR_API Tensor operator>=(const Tensor& a, const Scalar& b);
TENSOR_API Tensor& operator+=(Tensor& a, const Tensor& b);
TENSOR_API Tensor& operator+=(Tensor& a, const Scalar& b);
TENSOR_API Tensor& operator-=(Tensor& a, const Tensor& b);
TENSOR_API Tensor& operator-=(Tensor& a, const Scalar& b);
TENSOR_API Tensor& operator*=(Tensor& a, const Tensor& b);
TENSOR_API Tensor& operator*=(Tensor& a, const Scalar& b);
TENSOR_API Tensor& operator/=(Tensor& a, const Tensor& b);
TENSOR_API Tensor& operator/=(Tensor& a, const Scalar& b);
TENSOR_API Tensor operator&(const Tensor& a, const Tensor& b);
TENSOR_API Tensor operator|(const Tensor& a, const Tensor& b);
TENSOR_API Tensor operator^(const Tensor& a, const Tensor& b);
TENSOR_API Tensor operator~(const Tensor& a);

namespace detail {
/// Throws the error of accessor<T, N>() on a tensor of another rank.
[[noreturn]] TENSOR_API void accessor_rank_error(size_t expected, int64_t got);
}  // namespace detail

template <class T, size_t N>
TensorAccessor<T, N> Tensor::accessor() const& {
  static_assert(N > 0, "accessor is used for indexing a tensor; for a scalar use *data_ptr<T>()");
  if (dim() != static_cast<int64_t>(N)) detail::accessor_rank_error(N, dim());
  return TensorAccessor<T, N>(data_ptr<T>(), sizes().data(), strides().data());
}

/// Prints values, dtype and shape.
TENSOR_API std::ostream& operator<<(std::ostream& os, const Tensor& t);
/// Prints sizes or strides as libtorch does: `[2, 3]`.
TENSOR_API std::ostream& operator<<(std::ostream& os, IntArrayRef a);

}  // namespace tensor
