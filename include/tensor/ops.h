// Free functions for every public op, as libtorch's torch:: namespace.
#pragma once

#include <initializer_list>
#include <optional>
#include <tuple>
#include <vector>

#include "tensor/core/Tensor.h"

namespace tensor {

// ---- factories ----
/// Uninitialized tensor.
TENSOR_API Tensor empty(IntArrayRef sizes, const TensorOptions& o = {});
/// Uninitialized tensor laid out in `memory_format` (Contiguous, ChannelsLast for 4-d sizes,
/// ChannelsLast3d for 5-d; Preserve is an error); also set through options().memory_format().
TENSOR_API Tensor empty(IntArrayRef sizes, const TensorOptions& o, std::optional<MemoryFormat> memory_format);
/// Uninitialized tensor with the given strides.
TENSOR_API Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, const TensorOptions& o = {});
TENSOR_API Tensor zeros(IntArrayRef sizes, const TensorOptions& o = {});
TENSOR_API Tensor ones(IntArrayRef sizes, const TensorOptions& o = {});
/// Filled with `value`; the dtype follows the value (bool, int64, default float) unless given.
TENSOR_API Tensor full(IntArrayRef sizes, const Scalar& value, const TensorOptions& o = {});
/// [start, end) with step; integer arguments give int64, float ones the default dtype.
TENSOR_API Tensor arange(const Scalar& end, const TensorOptions& o = {});
TENSOR_API Tensor arange(const Scalar& start, const Scalar& end, const TensorOptions& o = {});
TENSOR_API Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& o = {});
/// `steps` evenly spaced values from start to end inclusive.
TENSOR_API Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, const TensorOptions& o = {});
/// n x m identity.
TENSOR_API Tensor eye(int64_t n, const TensorOptions& o = {});
TENSOR_API Tensor eye(int64_t n, int64_t m, const TensorOptions& o = {});
/// Uniform [0, 1) from the global generator.
TENSOR_API Tensor rand(IntArrayRef sizes, const TensorOptions& o = {});
/// Standard normal from the global generator.
TENSOR_API Tensor randn(IntArrayRef sizes, const TensorOptions& o = {});
/// 1 with probability p[i], else 0, in p's shape and dtype (p floating, values in [0, 1]).
TENSOR_API Tensor bernoulli(const Tensor& p);
/// Normal samples, as libtorch's torch::normal: mean and std per element (tensors broadcast
/// together, or a tensor and a number; std >= 0), differentiable in both (the sample is
/// mean + std * z); or `size` samples of N(mean, std^2).
TENSOR_API Tensor normal(const Tensor& mean, double std = 1);
TENSOR_API Tensor normal(double mean, const Tensor& std);
TENSOR_API Tensor normal(const Tensor& mean, const Tensor& std);
TENSOR_API Tensor normal(double mean, double std, IntArrayRef size, const TensorOptions& o = {});
/// Integers uniform in [low, high); int64 unless given.
TENSOR_API Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, const TensorOptions& o = {});
TENSOR_API Tensor randint(int64_t high, IntArrayRef sizes, const TensorOptions& o = {});
/// A random permutation of 0..n-1 (int64).
TENSOR_API Tensor randperm(int64_t n, const TensorOptions& o = {});
/// Uninitialized, t's sizes, dtype and device unless given. The layout follows libtorch's
/// Preserve by default: t's strides when t is dense and non-overlapping, else the layout
/// t.suggest_memory_format() names; a memory format in `o` or the argument picks another.
TENSOR_API Tensor empty_like(const Tensor& t, const TensorOptions& o = {},
                             std::optional<MemoryFormat> memory_format = std::nullopt);
TENSOR_API Tensor zeros_like(const Tensor& t, const TensorOptions& o = {});
TENSOR_API Tensor ones_like(const Tensor& t, const TensorOptions& o = {});
TENSOR_API Tensor full_like(const Tensor& t, const Scalar& value, const TensorOptions& o = {});
TENSOR_API Tensor rand_like(const Tensor& t, const TensorOptions& o = {});
TENSOR_API Tensor randn_like(const Tensor& t, const TensorOptions& o = {});
/// Seeds the global generator (CPU and CUDA).
TENSOR_API void manual_seed(uint64_t seed);
/// Wraps memory the caller owns: no copy, no ownership. `strides` default to contiguous.
TENSOR_API Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& o = {});
TENSOR_API Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const TensorOptions& o = {});
/// A 0-dim tensor holding `s` (dtype from the scalar unless given).
TENSOR_API Tensor scalar_tensor(const Scalar& s, const TensorOptions& o = {});

/// Nested initializer lists of numbers, for tensor::tensor({...}).
class TENSOR_API TensorLiteral {
 public:
  TensorLiteral(const Scalar& s) : scalar_(s), is_scalar_(true) {}
  TensorLiteral(bool b) : TensorLiteral(Scalar(b)) {}
  TensorLiteral(int v) : TensorLiteral(Scalar(v)) {}
  TensorLiteral(int64_t v) : TensorLiteral(Scalar(v)) {}
  TensorLiteral(float v) : TensorLiteral(Scalar(v)) {}
  TensorLiteral(double v) : TensorLiteral(Scalar(v)) {}
  TensorLiteral(std::initializer_list<TensorLiteral> l) : list_(l), is_scalar_(false) {}
  Tensor to_tensor(const TensorOptions& o) const;

 private:
  Scalar scalar_;
  std::vector<TensorLiteral> list_;
  bool is_scalar_;
};
/// Builds a tensor from nested braces: float literals give the default dtype, integers int64.
TENSOR_API Tensor tensor(const TensorLiteral& values, const TensorOptions& o = {});
TENSOR_API Tensor tensor(std::initializer_list<TensorLiteral> values, const TensorOptions& o = {});
TENSOR_API Tensor tensor(const std::vector<double>& values, const TensorOptions& o = {});
TENSOR_API Tensor tensor(const std::vector<float>& values, const TensorOptions& o = {});
TENSOR_API Tensor tensor(const std::vector<int64_t>& values, const TensorOptions& o = {});

// ---- type promotion ----
/// The dtype an op on these operands computes in (PyTorch's result_type).
TENSOR_API ScalarType result_type(const Tensor& a, const Tensor& b);
TENSOR_API ScalarType result_type(const Tensor& a, const Scalar& b);
/// Shape that a and b broadcast to; throws tensor::Error if they do not.
TENSOR_API std::vector<int64_t> broadcast_shapes(IntArrayRef a, IntArrayRef b);
TENSOR_API std::vector<Tensor> broadcast_tensors(TensorList tensors);

// ---- elementwise binary: functional, in-place (method), out= ----
#define TENSOR_BINARY_FREE(name)                                              \
  TENSOR_API Tensor name(const Tensor& a, const Tensor& b);                   \
  TENSOR_API Tensor name(const Tensor& a, const Scalar& b);                   \
  TENSOR_API Tensor& name##_out(Tensor& out, const Tensor& a, const Tensor& b);
TENSOR_API Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
TENSOR_API Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
TENSOR_API Tensor& add_out(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
TENSOR_API Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
TENSOR_API Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
TENSOR_API Tensor& sub_out(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
TENSOR_BINARY_FREE(mul)
TENSOR_BINARY_FREE(div)
TENSOR_BINARY_FREE(remainder)
TENSOR_BINARY_FREE(fmod)
TENSOR_BINARY_FREE(pow)
TENSOR_BINARY_FREE(maximum)
TENSOR_BINARY_FREE(minimum)
TENSOR_BINARY_FREE(atan2)
/// sqrt(a^2 + b^2) without overflow or underflow in between.
TENSOR_BINARY_FREE(hypot)
/// log(exp(a) + exp(b)), computed stably.
TENSOR_BINARY_FREE(logaddexp)
/// a * log(b), and 0 where a is 0 (unless b is NaN).
TENSOR_BINARY_FREE(xlogy)
/// The magnitude of a with the sign of b (signed zeros included).
TENSOR_BINARY_FREE(copysign)
TENSOR_BINARY_FREE(eq)
TENSOR_BINARY_FREE(ne)
TENSOR_BINARY_FREE(lt)
TENSOR_BINARY_FREE(le)
TENSOR_BINARY_FREE(gt)
TENSOR_BINARY_FREE(ge)
TENSOR_BINARY_FREE(logical_and)
TENSOR_BINARY_FREE(logical_or)
TENSOR_BINARY_FREE(logical_xor)
TENSOR_BINARY_FREE(bitwise_and)
TENSOR_BINARY_FREE(bitwise_or)
TENSOR_BINARY_FREE(bitwise_xor)
#undef TENSOR_BINARY_FREE
/// Scalar base to a tensor power.
TENSOR_API Tensor pow(const Scalar& base, const Tensor& exponent);
/// xlogy with a Scalar first argument.
TENSOR_API Tensor xlogy(const Scalar& self, const Tensor& other);
/// Division with rounding_mode "trunc" or "floor" (empty: true division).
TENSOR_API Tensor div(const Tensor& a, const Tensor& b, const std::string& rounding_mode);

// ---- elementwise unary ----
#define TENSOR_UNARY_FREE(name)                         \
  TENSOR_API Tensor name(const Tensor& a);              \
  TENSOR_API Tensor& name##_out(Tensor& out, const Tensor& a);
TENSOR_UNARY_FREE(neg)
TENSOR_UNARY_FREE(abs)
TENSOR_UNARY_FREE(exp)
TENSOR_UNARY_FREE(exp2)
TENSOR_UNARY_FREE(log)
TENSOR_UNARY_FREE(log2)
TENSOR_UNARY_FREE(log10)
TENSOR_UNARY_FREE(log1p)
TENSOR_UNARY_FREE(expm1)
TENSOR_UNARY_FREE(sqrt)
TENSOR_UNARY_FREE(rsqrt)
TENSOR_UNARY_FREE(sin)
TENSOR_UNARY_FREE(cos)
TENSOR_UNARY_FREE(tan)
TENSOR_UNARY_FREE(asin)
TENSOR_UNARY_FREE(acos)
TENSOR_UNARY_FREE(atan)
TENSOR_UNARY_FREE(sinh)
TENSOR_UNARY_FREE(cosh)
TENSOR_UNARY_FREE(tanh)
TENSOR_UNARY_FREE(sigmoid)
TENSOR_UNARY_FREE(relu)
TENSOR_UNARY_FREE(gelu)
TENSOR_UNARY_FREE(silu)
TENSOR_UNARY_FREE(erf)
TENSOR_UNARY_FREE(floor)
TENSOR_UNARY_FREE(ceil)
TENSOR_UNARY_FREE(round)
TENSOR_UNARY_FREE(trunc)
TENSOR_UNARY_FREE(sign)
TENSOR_UNARY_FREE(reciprocal)
TENSOR_UNARY_FREE(square)
TENSOR_UNARY_FREE(logical_not)
TENSOR_UNARY_FREE(bitwise_not)
TENSOR_UNARY_FREE(isnan)
#undef TENSOR_UNARY_FREE
/// GELU with `approximate` "none" (the erf form, as gelu(a)) or "tanh" (PyTorch's tanh form).
TENSOR_API Tensor gelu(const Tensor& a, const std::string& approximate);
/// Clamps to [min, max]; either bound may be absent.
TENSOR_API Tensor clamp(const Tensor& a, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
TENSOR_API Tensor& clamp_out(Tensor& out, const Tensor& a, std::optional<Scalar> min, std::optional<Scalar> max);
/// cond ? a : b, broadcasting all three.
TENSOR_API Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
TENSOR_API Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b);
TENSOR_API Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b);
/// Indices of the true elements of cond, as nonzero(cond) split by column.
TENSOR_API std::vector<Tensor> where(const Tensor& cond);

// ---- reductions ----
TENSOR_API Tensor sum(const Tensor& a, std::optional<ScalarType> dtype = std::nullopt);
TENSOR_API Tensor sum(const Tensor& a, IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
TENSOR_API Tensor mean(const Tensor& a, std::optional<ScalarType> dtype = std::nullopt);
TENSOR_API Tensor mean(const Tensor& a, IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
TENSOR_API Tensor prod(const Tensor& a, std::optional<ScalarType> dtype = std::nullopt);
TENSOR_API Tensor prod(const Tensor& a, int64_t dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
TENSOR_API Tensor max(const Tensor& a);
TENSOR_API std::tuple<Tensor, Tensor> max(const Tensor& a, int64_t dim, bool keepdim = false);
TENSOR_API Tensor min(const Tensor& a);
TENSOR_API std::tuple<Tensor, Tensor> min(const Tensor& a, int64_t dim, bool keepdim = false);
TENSOR_API Tensor amax(const Tensor& a, IntArrayRef dim = {}, bool keepdim = false);
TENSOR_API Tensor amin(const Tensor& a, IntArrayRef dim = {}, bool keepdim = false);
TENSOR_API Tensor argmax(const Tensor& a, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
TENSOR_API Tensor argmin(const Tensor& a, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
/// Variance with Bessel-style `correction` (1 = unbiased) over `dim` (all dims when empty).
TENSOR_API Tensor var(const Tensor& a, IntArrayRef dim = {}, int64_t correction = 1, bool keepdim = false);
TENSOR_API Tensor std(const Tensor& a, IntArrayRef dim = {}, int64_t correction = 1, bool keepdim = false);
/// p-norm (p = 0, 1, 2, inf, -inf or any real) over `dim` (all dims when empty).
TENSOR_API Tensor norm(const Tensor& a, const Scalar& p = 2, IntArrayRef dim = {}, bool keepdim = false);
TENSOR_API Tensor logsumexp(const Tensor& a, IntArrayRef dim, bool keepdim = false);
TENSOR_API Tensor any(const Tensor& a);
TENSOR_API Tensor any(const Tensor& a, int64_t dim, bool keepdim = false);
TENSOR_API Tensor all(const Tensor& a);
TENSOR_API Tensor all(const Tensor& a, int64_t dim, bool keepdim = false);
TENSOR_API Tensor cumsum(const Tensor& a, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
TENSOR_API Tensor cumprod(const Tensor& a, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
TENSOR_API Tensor softmax(const Tensor& a, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
TENSOR_API Tensor log_softmax(const Tensor& a, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);

// ---- sorting and selection (src/ops/SortOps.cpp) ----
// Real dtypes on CPU (bool for sort and argsort too); complex raises. NaN ranks above every
// number: last ascending, first descending, and topk with largest = true returns NaNs first, as
// libtorch. Equal keys keep input order (stable).
/// The k largest (or smallest) entries along dim and their int64 positions, best first (the
/// result is ordered whatever `sorted` says, which libtorch allows). Values are differentiable.
TENSOR_API std::tuple<Tensor, Tensor> topk(const Tensor& a, int64_t k, int64_t dim = -1, bool largest = true,
                                           bool sorted = true);
/// Values sorted along dim and their int64 positions in `a`. The sort is always stable.
TENSOR_API std::tuple<Tensor, Tensor> sort(const Tensor& a, int64_t dim = -1, bool descending = false);
/// libtorch's overload with `stable`; every sort here is stable, so any value gives the same.
TENSOR_API std::tuple<Tensor, Tensor> sort(const Tensor& a, std::optional<bool> stable, int64_t dim = -1,
                                           bool descending = false);
/// The int64 positions that sort `a` along dim (sort(a, dim, descending)'s indices).
TENSOR_API Tensor argsort(const Tensor& a, int64_t dim = -1, bool descending = false);

// ---- shape and joining ----
TENSOR_API Tensor cat(TensorList tensors, int64_t dim = 0);
TENSOR_API Tensor stack(TensorList tensors, int64_t dim = 0);
TENSOR_API std::vector<Tensor> split(const Tensor& a, int64_t split_size, int64_t dim = 0);
TENSOR_API std::vector<Tensor> split(const Tensor& a, IntArrayRef split_sizes, int64_t dim = 0);
TENSOR_API std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim = 0);
/// Removes `dim`: a.size(dim) views of `a`, the i-th equal to a.select(dim, i) (empty when the
/// dim has size 0). Writing one in place while `a` requires grad raises, as for split/chunk.
TENSOR_API std::vector<Tensor> unbind(const Tensor& a, int64_t dim = 0);
TENSOR_API Tensor reshape(const Tensor& a, IntArrayRef sizes);
TENSOR_API Tensor transpose(const Tensor& a, int64_t d0, int64_t d1);
TENSOR_API Tensor permute(const Tensor& a, IntArrayRef dims);
TENSOR_API Tensor flatten(const Tensor& a, int64_t start_dim = 0, int64_t end_dim = -1);
TENSOR_API Tensor squeeze(const Tensor& a);
TENSOR_API Tensor squeeze(const Tensor& a, int64_t dim);
TENSOR_API Tensor unsqueeze(const Tensor& a, int64_t dim);
/// Lower triangle of the last two dims (any batch dims): keeps a[..., i, j] where j - i <= diagonal, zeros the rest.
TENSOR_API Tensor tril(const Tensor& a, int64_t diagonal = 0);
/// Upper triangle of the last two dims: keeps a[..., i, j] where j - i >= diagonal, zeros the rest.
TENSOR_API Tensor triu(const Tensor& a, int64_t diagonal = 0);
/// Tiles `a` repeats[k] times along dim k; repeats.size() >= a.dim(), extra leading entries add dims.
TENSOR_API Tensor repeat(const Tensor& a, IntArrayRef repeats);
/// Rotates along `dims` by `shifts` (elements pushed off the end come back at the start); with no
/// dims, rolls the flattened tensor by shifts[0] and keeps the shape.
TENSOR_API Tensor roll(const Tensor& a, IntArrayRef shifts, IntArrayRef dims = {});
/// Reverses the order of elements along each of `dims` (a copy, as libtorch).
TENSOR_API Tensor flip(const Tensor& a, IntArrayRef dims);

// ---- indexing ----
TENSOR_API Tensor index_select(const Tensor& a, int64_t dim, const Tensor& index);
TENSOR_API Tensor gather(const Tensor& a, int64_t dim, const Tensor& index);
TENSOR_API Tensor scatter(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src);
TENSOR_API Tensor scatter_add(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src);
TENSOR_API Tensor index_add(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1);
TENSOR_API Tensor masked_fill(const Tensor& a, const Tensor& mask, const Scalar& value);
TENSOR_API Tensor masked_select(const Tensor& a, const Tensor& mask);
/// Indices of nonzero elements, shape [n, dim], int64.
TENSOR_API Tensor nonzero(const Tensor& a);

// ---- comparison of whole tensors ----
TENSOR_API bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
TENSOR_API bool equal(const Tensor& a, const Tensor& b);

// ---- fused optimizer steps (libtorch's _fused_sgd_ / _fused_adam_) ----
/// One torch.optim.SGD step in place on param, and on momentum_buffer when momentum != 0 (the
/// caller allocates it; on the first step it is set to the update). A backend's fused one-pass
/// kernel where it has one (CPU: contiguous float32/float64), the tensor-op form otherwise.
TENSOR_API void _fused_sgd_(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, double lr,
                            double momentum, double dampening, double weight_decay, bool nesterov, bool maximize,
                            bool is_first_step);
/// One torch.optim.Adam step (AdamW's with decoupled) in place on param, exp_avg, exp_avg_sq and,
/// with amsgrad, max_exp_avg_sq (all allocated by the caller). step_size is lr / (1 - beta1^t);
/// bias_correction2_sqrt is sqrt(1 - beta2^t). Fused where the backend has a kernel, as above.
TENSOR_API void _fused_adam_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                             const Tensor& max_exp_avg_sq, double lr, double beta1, double beta2, double eps,
                             double weight_decay, double step_size, double bias_correction2_sqrt, bool amsgrad,
                             bool maximize, bool decoupled);

// ---- threads ----
/// Intra-op threads (OpenMP, shared with oneDNN).
TENSOR_API void set_num_threads(int n);
TENSOR_API int get_num_threads();

}  // namespace tensor
