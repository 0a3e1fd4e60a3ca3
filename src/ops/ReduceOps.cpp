// Front ends of the reductions, scans and softmax: dim and dtype rules (PyTorch's), checks,
// output allocation, and the dispatcher table (src/ops/ReduceOps.h). Each front end takes the
// backend's kernel, looked up for its dispatch key (Note [Front ends and backend kernels]);
// Meta has none and stops after the allocation. CPU's loops live in kernels/cpu/ReduceKernels.cpp.
#include "src/ops/ReduceOps.h"

#include <cmath>
#include <limits>

#include "kernels/cpu/Reduce.h"
#include "src/core/Check.h"
#include "src/dispatch/BackendKernels.h"
#include "tensor/autograd/autograd.h"
#include "tensor/ops.h"

namespace tensor {
namespace ops {
namespace {

using dispatch::BackendKernels;

// The per-backend kernels: CPU's built in, CUDA's registered.
BackendKernels<ReduceKernel> g_reduce_kernels{{&cpu::reduce_kernel, nullptr}};
BackendKernels<ArgReduceKernel> g_arg_reduce_kernels{{&cpu::arg_reduce_kernel, nullptr}};
BackendKernels<CumulativeKernel> g_cumulative_kernels{{&cpu::cumulative_kernel, nullptr}};
BackendKernels<SoftmaxKernel> g_softmax_kernels{{&cpu::softmax_kernel, nullptr}};

// PyTorch's legacy dtype names, which its reduction messages print ("Got: Long").
const char* legacy_name(ScalarType t) {
  switch (t) {
    case kBool: return "Bool";
    case kUInt8: return "Byte";
    case kInt8: return "Char";
    case kInt16: return "Short";
    case kInt32: return "Int";
    case kInt64: return "Long";
    case kFloat16: return "Half";
    case kBFloat16: return "BFloat16";
    case kFloat32: return "Float";
    case kFloat64: return "Double";
    case kComplex64: return "ComplexFloat";
    case kComplex128: return "ComplexDouble";
    default: return "Undefined";
  }
}

bool is_half_type(ScalarType t) { return t == kFloat16 || t == kBFloat16; }

std::string shape_of(const Tensor& a) { return detail::shape_str(a.sizes()); }

/// Wraps a dim; out-of-range dims raise through detail::wrap_dim with the op and the shape.
int64_t wrap(const char* op, int64_t d, const Tensor& a) {
  const int64_t n = a.dim() <= 0 ? 1 : a.dim();
  if (d >= -n && d < n) return d < 0 ? d + n : d;
  const std::string where = fmt::format("{}() on a tensor of shape {}", op, shape_of(a));
  return detail::wrap_dim(d, a.dim(), where.c_str());
}

uint64_t all_bits(int64_t nd) { return nd >= 64 ? ~uint64_t(0) : (uint64_t(1) << nd) - 1; }

/// What a reduction over some dims does to a shape.
struct Reduction {
  uint64_t mask = 0;      // bit d set: dim d is reduced
  DimVector out_sizes;    // the result's shape
  int64_t count = 1;      // elements reduced into each output
};

/// Validates `dims` (empty = all) and computes the output shape. Repeated dims raise.
Reduction analyze(const char* op, const Tensor& a, IntArrayRef dims, bool keepdim) {
  const int64_t nd = a.dim();
  TENSOR_CHECK(nd <= 64, "{}(): tensors with more than 64 dims are not supported (input shape {})", op, shape_of(a));
  Reduction r;
  if (dims.empty()) {
    r.mask = all_bits(nd);
  } else {
    uint64_t seen = 0;
    for (int64_t d : dims) {
      const int64_t w = wrap(op, d, a);
      TENSOR_CHECK(!((seen >> w) & 1), "{}(): dim {} appears multiple times in the list of dims (input shape {})", op, w,
                   shape_of(a));
      seen |= uint64_t(1) << w;
    }
    r.mask = seen & all_bits(nd);
  }
  for (int64_t d = 0; d < nd; ++d) {
    if ((r.mask >> d) & 1) {
      r.count *= a.size(d);
      if (keepdim) r.out_sizes.push_back(1);
    } else {
      r.out_sizes.push_back(a.size(d));
    }
  }
  return r;
}

Reduction analyze_opt(const char* op, const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  if (!dim) return analyze(op, a, {}, false);
  const int64_t d = *dim;
  return analyze(op, a, IntArrayRef(d), keepdim);
}

/// max/min/amax/amin/argmax cannot reduce nothing: raise naming the empty dim (PyTorch's text).
void check_nonempty(const char* op, const Tensor& a, const Reduction& r, bool dims_given) {
  if (a.numel() != 0) return;
  TENSOR_CHECK(dims_given, "{}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim "
               "with the 'dim' argument (input shape {})", op, shape_of(a));
  for (int64_t d = 0; d < a.dim(); ++d)
    TENSOR_CHECK(!((r.mask >> d) & 1) || a.size(d) != 0,
                 "{}(): Expected reduction dim {} to have non-zero size (input shape {})", op, d, shape_of(a));
}

void check_not_complex(const char* op, const Tensor& a) {
  TENSOR_CHECK(!is_complex(a.dtype()), "{}(): complex inputs are not supported (they have no order); got {}", op,
               a.describe());
}

/// Allocates the result and runs the kernel (none: Meta); empty reductions give the op's identity.
Tensor reduce_into(ReduceKernel kernel, ReduceOp op, const Tensor& a, const Reduction& r, ScalarType out_t) {
  Tensor out = empty(r.out_sizes, a.options().dtype(out_t));
  if (!kernel || out.numel() == 0) return out;
  if (a.numel() == 0) {  // only sum/prod/any/all get here (max and min checked first)
    out.fill_(op == ReduceOp::Prod || op == ReduceOp::All ? 1 : 0);
    return out;
  }
  kernel(op, a.is_conj() ? a.resolve_conj() : a, r.mask, out);
  return out;
}

// Note [Reduction dtypes]
// As PyTorch: sum, prod and the scans of bool and integer inputs give int64; a `dtype`
// argument casts the input first. float16/bfloat16 accumulate in float32 (the kernels read
// them directly) and round once at the end. mean, var, std, norm, logsumexp and softmax need
// a floating (or, where meaningful, complex) input and raise otherwise.
ScalarType sum_dtype(const Tensor& a, std::optional<ScalarType> dtype) {
  if (dtype) return *dtype;
  return is_integral(a.dtype(), true) ? kInt64 : a.dtype();
}

/// Can the Sum/Prod kernels read `in` and write `out` directly?
bool kernel_reads(ScalarType in, ScalarType out) {
  return in == out || (is_integral(in, true) && out == kInt64) || (is_half_type(in) && out == kFloat32);
}

Tensor sum_or_prod(ReduceKernel kernel, ReduceOp op, const Tensor& a, const Reduction& r, ScalarType out_t) {
  Tensor x = kernel_reads(a.dtype(), out_t) ? a : a.to(out_t);
  return reduce_into(kernel, op, x, r, out_t);
}

void check_floating(const char* op, ScalarType t, bool from_dtype_arg, bool allow_complex = true) {
  TENSOR_CHECK(is_floating_point(t) || (allow_complex && is_complex(t)),
               "{}(): could not infer output dtype. {} dtype must be either a floating point{} dtype. Got: {}", op,
               from_dtype_arg ? "Optional" : "Input", allow_complex ? " or complex" : "", legacy_name(t));
}

// ---- front ends, given the backend's kernel (nullptr: Meta) ----

Tensor sum_impl(ReduceKernel kernel, const Tensor& a, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) {
  Reduction r = analyze("sum", a, dims, keepdim);
  return sum_or_prod(kernel, ReduceOp::Sum, a, r, sum_dtype(a, dtype));
}

Tensor mean_impl(ReduceKernel kernel, const Tensor& a, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) {
  const ScalarType t = dtype ? *dtype : a.dtype();
  check_floating("mean", t, dtype.has_value());
  Reduction r = analyze("mean", a, dims, keepdim);
  // Half types: sum into float32, divide there, round once.
  Tensor s = sum_or_prod(kernel, ReduceOp::Sum, a.to(t), r, is_half_type(t) ? kFloat32 : t);
  s.div_(Scalar(static_cast<double>(r.count)));
  return s.to(t);
}

Tensor prod_impl(ReduceKernel kernel, const Tensor& a, std::optional<int64_t> dim, bool keepdim, std::optional<ScalarType> dtype) {
  Reduction r = analyze_opt("prod", a, dim, keepdim);
  return sum_or_prod(kernel, ReduceOp::Prod, a, r, sum_dtype(a, dtype));
}

Tensor minmax_all(ReduceKernel kernel, const Tensor& a, bool is_max) {
  const char* op = is_max ? "max" : "min";
  check_not_complex(op, a);
  Reduction r = analyze(op, a, {}, false);
  check_nonempty(op, a, r, false);
  return reduce_into(kernel, is_max ? ReduceOp::Max : ReduceOp::Min, a, r, a.dtype());
}
Tensor max_all_impl(ReduceKernel kernel, const Tensor& a) { return minmax_all(kernel, a, true); }
Tensor min_all_impl(ReduceKernel kernel, const Tensor& a) { return minmax_all(kernel, a, false); }

// values and indices of max/min along one dim; values undefined when only indices are wanted.
std::tuple<Tensor, Tensor> arg_reduce(ArgReduceKernel kernel, const char* op, bool is_max, const Tensor& a, int64_t dim,
                                      bool keepdim, bool want_values) {
  check_not_complex(op, a);
  const int64_t d = wrap(op, dim, a);
  Reduction r = analyze(op, a, IntArrayRef(d), keepdim);
  check_nonempty(op, a, r, true);
  Tensor values = want_values ? empty(r.out_sizes, a.options()) : Tensor();
  Tensor indices = empty(r.out_sizes, a.options().dtype(kInt64));
  if (!kernel || indices.numel() == 0) return {values, indices};
  kernel(is_max, a, a.dim() == 0 ? 0 : d, values, indices);
  return {values, indices};
}
std::tuple<Tensor, Tensor> max_dim_impl(ArgReduceKernel kernel, const Tensor& a, int64_t dim, bool keepdim) {
  return arg_reduce(kernel, "max", true, a, dim, keepdim, true);
}
std::tuple<Tensor, Tensor> min_dim_impl(ArgReduceKernel kernel, const Tensor& a, int64_t dim, bool keepdim) {
  return arg_reduce(kernel, "min", false, a, dim, keepdim, true);
}

Tensor amax_amin(ReduceKernel kernel, const char* op, bool is_max, const Tensor& a, IntArrayRef dims, bool keepdim) {
  check_not_complex(op, a);
  Reduction r = analyze(op, a, dims, keepdim);
  check_nonempty(op, a, r, !dims.empty());
  return reduce_into(kernel, is_max ? ReduceOp::Max : ReduceOp::Min, a, r, a.dtype());
}
Tensor amax_impl(ReduceKernel kernel, const Tensor& a, IntArrayRef dims, bool keepdim) {
  return amax_amin(kernel, "amax", true, a, dims, keepdim);
}
Tensor amin_impl(ReduceKernel kernel, const Tensor& a, IntArrayRef dims, bool keepdim) {
  return amax_amin(kernel, "amin", false, a, dims, keepdim);
}

Tensor argmax_argmin(ArgReduceKernel kernel, const char* op, bool is_max, const Tensor& a, std::optional<int64_t> dim,
                     bool keepdim) {
  if (dim) return std::get<1>(arg_reduce(kernel, op, is_max, a, *dim, keepdim, false));
  // No dim: over the flattened input (row-major positions); keepdim gives all-ones dims.
  check_not_complex(op, a);
  TENSOR_CHECK(a.numel() > 0, "{}(): Expected reduction dim to be specified for input.numel() == 0 (input shape {})", op,
               shape_of(a));
  DimVector sizes;
  if (keepdim) sizes = DimVector(static_cast<size_t>(a.dim()), 1);
  Tensor indices = empty(sizes, a.options().dtype(kInt64));
  if (!kernel) return indices;
  Tensor flat = a.reshape({a.numel()});
  kernel(is_max, flat, 0, Tensor(), indices.view({}));
  return indices;
}
Tensor argmax_impl(ArgReduceKernel kernel, const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  return argmax_argmin(kernel, "argmax", true, a, dim, keepdim);
}
Tensor argmin_impl(ArgReduceKernel kernel, const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  return argmax_argmin(kernel, "argmin", false, a, dim, keepdim);
}

// any/all of uint8 give uint8 (0 or 1), as PyTorch documents; every other dtype gives bool.
Tensor any_impl(ReduceKernel kernel, const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  Tensor r = reduce_into(kernel, ReduceOp::Any, a, analyze_opt("any", a, dim, keepdim), kBool);
  return a.dtype() == kUInt8 ? r.to(kUInt8) : r;
}
Tensor all_impl(ReduceKernel kernel, const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  Tensor r = reduce_into(kernel, ReduceOp::All, a, analyze_opt("all", a, dim, keepdim), kBool);
  return a.dtype() == kUInt8 ? r.to(kUInt8) : r;
}

// Two passes (mean, then squared deviations): accurate without Welford's per-element divides.
// Complex: |z - m|^2 splits into the real and imaginary parts, so var is their sum (real).
Tensor var_common(const char* op, const Tensor& a, IntArrayRef dims, int64_t correction, bool keepdim) {
  check_floating(op, a.dtype(), false);
  Reduction r = analyze(op, a, dims, keepdim);
  if (is_complex(a.dtype())) {
    Tensor re = var(a.real(), dims, correction, keepdim);
    return re.add_(var(a.imag(), dims, correction, keepdim));
  }
  const ScalarType t = a.dtype();
  Tensor x = is_half_type(t) ? a.to(kFloat32) : a;
  Tensor dev = x - mean(x, dims, true);
  Tensor s = sum(dev * dev, dims, keepdim);
  s.div_(Scalar(static_cast<double>(std::max<int64_t>(0, r.count - correction))));
  return s.to(t);
}
Tensor var_impl(const Tensor& a, IntArrayRef dims, int64_t correction, bool keepdim) {
  return var_common("var", a, dims, correction, keepdim);
}
Tensor std_impl(const Tensor& a, IntArrayRef dims, int64_t correction, bool keepdim) {
  check_floating("std", a.dtype(), false);
  const ScalarType t = to_real_type(a.dtype());
  if (is_half_type(t)) return sqrt(var_common("std", a.to(kFloat32), dims, correction, keepdim)).to(t);
  return sqrt(var_common("std", a, dims, correction, keepdim));
}

Tensor norm_impl(const Tensor& a, const Scalar& p, IntArrayRef dims, bool keepdim) {
  TENSOR_CHECK(is_floating_point(a.dtype()) || is_complex(a.dtype()),
               "norm(): input dtype should be either floating point or complex. Got {} instead (input shape {})",
               legacy_name(a.dtype()), shape_of(a));
  TENSOR_CHECK(!p.is_complex(), "norm(): the order p must be real, got a complex value");
  Reduction r = analyze("norm", a, dims, keepdim);
  const double pv = p.to_double();
  const ScalarType out_t = to_real_type(a.dtype());
  Tensor x = is_half_type(a.dtype()) ? a.to(kFloat32) : a;
  Tensor out;
  if (pv == 0) {
    out = sum(x.ne(0), dims, keepdim, to_real_type(x.dtype()));
  } else if (pv == 1) {
    out = sum(abs(x), dims, keepdim);
  } else if (pv == 2 && x.is_cpu() && (x.dtype() == kFloat32 || x.dtype() == kFloat64) && x.numel() > 0 &&
             !(autograd::GradMode::is_enabled() && x.requires_grad())) {
    // One fused pass (Note [Fused 2-norm]) where nothing is recorded; with autograd the
    // composite below records its own backward.
    out = empty(r.out_sizes, x.options());
    if (out.numel() > 0) cpu::norm2_kernel(x, r.mask, out);
  } else if (pv == 2) {
    Tensor sq = is_complex(x.dtype()) ? square(abs(x)) : x * x;
    out = sqrt(sum(sq, dims, keepdim));
  } else if (std::isinf(pv)) {
    check_nonempty("norm", a, r, true);  // the max of nothing is undefined
    out = pv > 0 ? amax(abs(x), dims, keepdim) : amin(abs(x), dims, keepdim);
  } else {
    out = pow(sum(pow(abs(x), Scalar(pv)), dims, keepdim), Scalar(1.0 / pv));
  }
  return out.to(out_t);
}

// log(sum(exp(x - m))) + m with m the max, where an infinite m is replaced by 0 so that rows of
// -inf give -inf and rows holding +inf give +inf (PyTorch's formulation).
Tensor logsumexp_impl(const Tensor& a, IntArrayRef dims, bool keepdim) {
  check_floating("logsumexp", a.dtype(), false, false);
  Reduction r = analyze("logsumexp", a, dims, keepdim);
  const ScalarType t = a.dtype();
  if (r.count == 0) return full(r.out_sizes, -std::numeric_limits<double>::infinity(), a.options());
  Tensor x = is_half_type(t) ? a.to(kFloat32) : a;
  Tensor m = amax(x, dims, true);
  m = where(m.abs().eq(std::numeric_limits<double>::infinity()), Scalar(0.0), m);
  Tensor out = log(sum(exp(x - m), dims, keepdim));
  out.add_(keepdim ? m : m.reshape(r.out_sizes));
  return out.to(t);
}

Tensor cumulative(CumulativeKernel kernel, const char* op, bool is_prod, const Tensor& a, int64_t dim,
                  std::optional<ScalarType> dtype) {
  const int64_t d = wrap(op, dim, a);
  const ScalarType t = sum_dtype(a, dtype);
  Tensor out = empty(a.sizes(), a.options().dtype(t));
  if (!kernel || a.numel() == 0) return out;
  kernel(is_prod, a.to(t).contiguous(), a.dim() == 0 ? 0 : d, out);
  return out;
}
Tensor cumsum_impl(CumulativeKernel kernel, const Tensor& a, int64_t dim, std::optional<ScalarType> dtype) {
  return cumulative(kernel, "cumsum", false, a, dim, dtype);
}
Tensor cumprod_impl(CumulativeKernel kernel, const Tensor& a, int64_t dim, std::optional<ScalarType> dtype) {
  return cumulative(kernel, "cumprod", true, a, dim, dtype);
}

Tensor softmax_common(SoftmaxKernel kernel, const char* op, bool log, const Tensor& a, int64_t dim,
                      std::optional<ScalarType> dtype) {
  const int64_t d = wrap(op, dim, a);
  const ScalarType t = dtype ? *dtype : a.dtype();
  TENSOR_CHECK(is_floating_point(t), "{}(): expected a floating point input or dtype, got {} (input shape {})", op,
               legacy_name(t), shape_of(a));
  Tensor out = empty(a.sizes(), a.options().dtype(t));
  if (!kernel || a.numel() == 0) return out;
  // Half types compute in float32 (Note [Half types compute in float]).
  const ScalarType ct = is_half_type(t) ? kFloat32 : t;
  Tensor x = a.to(ct).contiguous();
  Tensor y = ct == t ? out : empty(a.sizes(), a.options().dtype(ct));
  kernel(x, a.dim() == 0 ? 0 : d, log, y);
  if (ct != t) out.copy_(y);
  return out;
}
Tensor softmax_impl(SoftmaxKernel kernel, const Tensor& a, int64_t dim, std::optional<ScalarType> dtype) {
  return softmax_common(kernel, "softmax", false, a, dim, dtype);
}
Tensor log_softmax_impl(SoftmaxKernel kernel, const Tensor& a, int64_t dim, std::optional<ScalarType> dtype) {
  return softmax_common(kernel, "log_softmax", true, a, dim, dtype);
}

// ---- the front ends per dispatch key, and the dispatcher table ----

using ReduceIndexResult = std::tuple<Tensor, Tensor>;

// Instance of front end `impl` for backend key K: looks up K's kernel in `kernels` (the
// dispatcher's "no kernel" error for a backend without one; nullptr for Meta), then runs `impl`.
#define TENSOR_REDUCE_LIST(...) __VA_ARGS__
#define TENSOR_REDUCE_FRONT_END(fn, R, kernels, impl, name, params, args) \
  template <DispatchKey K>                                                \
  R fn(TENSOR_REDUCE_LIST params) {                                       \
    return impl(kernels.template get<K>(name), TENSOR_REDUCE_LIST args);  \
  }
#define TENSOR_DTYPE_PARAMS (const Tensor& a, IntArrayRef d, bool k, std::optional<ScalarType> t)
#define TENSOR_OPT_DIM_PARAMS (const Tensor& a, std::optional<int64_t> d, bool k)
#define TENSOR_SCAN_PARAMS (const Tensor& a, int64_t d, std::optional<ScalarType> t)
TENSOR_REDUCE_FRONT_END(sum_fn, Tensor, g_reduce_kernels, sum_impl, "sum", TENSOR_DTYPE_PARAMS, (a, d, k, t))
TENSOR_REDUCE_FRONT_END(mean_fn, Tensor, g_reduce_kernels, mean_impl, "mean", TENSOR_DTYPE_PARAMS, (a, d, k, t))
TENSOR_REDUCE_FRONT_END(prod_fn, Tensor, g_reduce_kernels, prod_impl, "prod",
                        (const Tensor& a, std::optional<int64_t> d, bool k, std::optional<ScalarType> t), (a, d, k, t))
TENSOR_REDUCE_FRONT_END(max_all_fn, Tensor, g_reduce_kernels, max_all_impl, "max", (const Tensor& a), (a))
TENSOR_REDUCE_FRONT_END(min_all_fn, Tensor, g_reduce_kernels, min_all_impl, "min", (const Tensor& a), (a))
TENSOR_REDUCE_FRONT_END(max_dim_fn, ReduceIndexResult, g_arg_reduce_kernels, max_dim_impl, "max",
                        (const Tensor& a, int64_t d, bool k), (a, d, k))
TENSOR_REDUCE_FRONT_END(min_dim_fn, ReduceIndexResult, g_arg_reduce_kernels, min_dim_impl, "min",
                        (const Tensor& a, int64_t d, bool k), (a, d, k))
TENSOR_REDUCE_FRONT_END(amax_fn, Tensor, g_reduce_kernels, amax_impl, "amax", (const Tensor& a, IntArrayRef d, bool k),
                        (a, d, k))
TENSOR_REDUCE_FRONT_END(amin_fn, Tensor, g_reduce_kernels, amin_impl, "amin", (const Tensor& a, IntArrayRef d, bool k),
                        (a, d, k))
TENSOR_REDUCE_FRONT_END(argmax_fn, Tensor, g_arg_reduce_kernels, argmax_impl, "argmax", TENSOR_OPT_DIM_PARAMS, (a, d, k))
TENSOR_REDUCE_FRONT_END(argmin_fn, Tensor, g_arg_reduce_kernels, argmin_impl, "argmin", TENSOR_OPT_DIM_PARAMS, (a, d, k))
TENSOR_REDUCE_FRONT_END(any_fn, Tensor, g_reduce_kernels, any_impl, "any", TENSOR_OPT_DIM_PARAMS, (a, d, k))
TENSOR_REDUCE_FRONT_END(all_fn, Tensor, g_reduce_kernels, all_impl, "all", TENSOR_OPT_DIM_PARAMS, (a, d, k))
TENSOR_REDUCE_FRONT_END(cumsum_fn, Tensor, g_cumulative_kernels, cumsum_impl, "cumsum", TENSOR_SCAN_PARAMS, (a, d, t))
TENSOR_REDUCE_FRONT_END(cumprod_fn, Tensor, g_cumulative_kernels, cumprod_impl, "cumprod", TENSOR_SCAN_PARAMS, (a, d, t))
TENSOR_REDUCE_FRONT_END(softmax_fn, Tensor, g_softmax_kernels, softmax_impl, "softmax", TENSOR_SCAN_PARAMS, (a, d, t))
TENSOR_REDUCE_FRONT_END(log_softmax_fn, Tensor, g_softmax_kernels, log_softmax_impl, "log_softmax", TENSOR_SCAN_PARAMS,
                        (a, d, t))
#undef TENSOR_DTYPE_PARAMS
#undef TENSOR_OPT_DIM_PARAMS
#undef TENSOR_SCAN_PARAMS
#undef TENSOR_REDUCE_FRONT_END
#undef TENSOR_REDUCE_LIST

using dispatch::composite_def;

// Constant-initialized: CPU and Meta slots hold their front-end instances, CUDA's are filled
// by register_kernel; the composites serve every backend key.
ReduceOpDefs g_reduce = {
    TENSOR_FRONT_END_DEF(ReduceDtypeFn, "sum", sum_fn),
    TENSOR_FRONT_END_DEF(ReduceDtypeFn, "mean", mean_fn),
    TENSOR_FRONT_END_DEF(ReduceOneDtypeFn, "prod", prod_fn),
    TENSOR_FRONT_END_DEF(ReduceAllFn, "max", max_all_fn),
    TENSOR_FRONT_END_DEF(ReduceAllFn, "min", min_all_fn),
    TENSOR_FRONT_END_DEF(ReduceIndexFn, "max", max_dim_fn),
    TENSOR_FRONT_END_DEF(ReduceIndexFn, "min", min_dim_fn),
    TENSOR_FRONT_END_DEF(ReduceDimsFn, "amax", amax_fn),
    TENSOR_FRONT_END_DEF(ReduceDimsFn, "amin", amin_fn),
    composite_def<ReduceDimsFn>("logsumexp", &logsumexp_impl),
    TENSOR_FRONT_END_DEF(ReduceOptDimFn, "argmax", argmax_fn),
    TENSOR_FRONT_END_DEF(ReduceOptDimFn, "argmin", argmin_fn),
    TENSOR_FRONT_END_DEF(ReduceOptDimFn, "any", any_fn),
    TENSOR_FRONT_END_DEF(ReduceOptDimFn, "all", all_fn),
    composite_def<VarFn>("var", &var_impl),
    composite_def<VarFn>("std", &std_impl),
    composite_def<NormFn>("norm", &norm_impl),
    TENSOR_FRONT_END_DEF(ScanFn, "cumsum", cumsum_fn),
    TENSOR_FRONT_END_DEF(ScanFn, "cumprod", cumprod_fn),
    TENSOR_FRONT_END_DEF(ScanFn, "softmax", softmax_fn),
    TENSOR_FRONT_END_DEF(ScanFn, "log_softmax", log_softmax_fn),
};

}  // namespace

ReduceOpDefs& reduce_ops() { return g_reduce; }

constexpr DispatchKey kCUDA = DispatchKey::CUDA;

void register_kernel(DispatchKey backend, ReduceKernel kernel) {
  dispatch::check_kernel_backend(backend, "sum/mean/prod/max/min/amax/amin/any/all");
  g_reduce_kernels.set(backend, kernel);
  g_reduce.sum.set(backend, &sum_fn<kCUDA>);
  g_reduce.mean.set(backend, &mean_fn<kCUDA>);
  g_reduce.prod.set(backend, &prod_fn<kCUDA>);
  g_reduce.max_all.set(backend, &max_all_fn<kCUDA>);
  g_reduce.min_all.set(backend, &min_all_fn<kCUDA>);
  g_reduce.amax.set(backend, &amax_fn<kCUDA>);
  g_reduce.amin.set(backend, &amin_fn<kCUDA>);
  g_reduce.any.set(backend, &any_fn<kCUDA>);
  g_reduce.all.set(backend, &all_fn<kCUDA>);
}

void register_kernel(DispatchKey backend, ArgReduceKernel kernel) {
  dispatch::check_kernel_backend(backend, "max/min(dim)/argmax/argmin");
  g_arg_reduce_kernels.set(backend, kernel);
  g_reduce.max_dim.set(backend, &max_dim_fn<kCUDA>);
  g_reduce.min_dim.set(backend, &min_dim_fn<kCUDA>);
  g_reduce.argmax.set(backend, &argmax_fn<kCUDA>);
  g_reduce.argmin.set(backend, &argmin_fn<kCUDA>);
}

void register_kernel(DispatchKey backend, CumulativeKernel kernel) {
  dispatch::check_kernel_backend(backend, "cumsum/cumprod");
  g_cumulative_kernels.set(backend, kernel);
  g_reduce.cumsum.set(backend, &cumsum_fn<kCUDA>);
  g_reduce.cumprod.set(backend, &cumprod_fn<kCUDA>);
}

void register_kernel(DispatchKey backend, SoftmaxKernel kernel) {
  dispatch::check_kernel_backend(backend, "softmax/log_softmax");
  g_softmax_kernels.set(backend, kernel);
  g_reduce.softmax.set(backend, &softmax_fn<kCUDA>);
  g_reduce.log_softmax.set(backend, &log_softmax_fn<kCUDA>);
}

}  // namespace ops

// ---- public API ----
using ops::reduce_ops;

Tensor sum(const Tensor& a, std::optional<ScalarType> dtype) { return reduce_ops().sum(a, {}, false, dtype); }
Tensor sum(const Tensor& a, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
  return reduce_ops().sum(a, dim, keepdim, dtype);
}
Tensor mean(const Tensor& a, std::optional<ScalarType> dtype) { return reduce_ops().mean(a, {}, false, dtype); }
Tensor mean(const Tensor& a, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
  return reduce_ops().mean(a, dim, keepdim, dtype);
}
Tensor prod(const Tensor& a, std::optional<ScalarType> dtype) { return reduce_ops().prod(a, std::nullopt, false, dtype); }
Tensor prod(const Tensor& a, int64_t dim, bool keepdim, std::optional<ScalarType> dtype) {
  return reduce_ops().prod(a, dim, keepdim, dtype);
}
Tensor max(const Tensor& a) { return reduce_ops().max_all(a); }
std::tuple<Tensor, Tensor> max(const Tensor& a, int64_t dim, bool keepdim) { return reduce_ops().max_dim(a, dim, keepdim); }
Tensor min(const Tensor& a) { return reduce_ops().min_all(a); }
std::tuple<Tensor, Tensor> min(const Tensor& a, int64_t dim, bool keepdim) { return reduce_ops().min_dim(a, dim, keepdim); }
Tensor amax(const Tensor& a, IntArrayRef dim, bool keepdim) { return reduce_ops().amax(a, dim, keepdim); }
Tensor amin(const Tensor& a, IntArrayRef dim, bool keepdim) { return reduce_ops().amin(a, dim, keepdim); }
Tensor argmax(const Tensor& a, std::optional<int64_t> dim, bool keepdim) { return reduce_ops().argmax(a, dim, keepdim); }
Tensor argmin(const Tensor& a, std::optional<int64_t> dim, bool keepdim) { return reduce_ops().argmin(a, dim, keepdim); }
Tensor var(const Tensor& a, IntArrayRef dim, int64_t correction, bool keepdim) {
  return reduce_ops().var(a, dim, correction, keepdim);
}
Tensor std(const Tensor& a, IntArrayRef dim, int64_t correction, bool keepdim) {
  return reduce_ops().std_dev(a, dim, correction, keepdim);
}
Tensor norm(const Tensor& a, const Scalar& p, IntArrayRef dim, bool keepdim) { return reduce_ops().norm(a, p, dim, keepdim); }
Tensor logsumexp(const Tensor& a, IntArrayRef dim, bool keepdim) { return reduce_ops().logsumexp(a, dim, keepdim); }
Tensor any(const Tensor& a) { return reduce_ops().any(a, std::nullopt, false); }
Tensor any(const Tensor& a, int64_t dim, bool keepdim) { return reduce_ops().any(a, dim, keepdim); }
Tensor all(const Tensor& a) { return reduce_ops().all(a, std::nullopt, false); }
Tensor all(const Tensor& a, int64_t dim, bool keepdim) { return reduce_ops().all(a, dim, keepdim); }
Tensor cumsum(const Tensor& a, int64_t dim, std::optional<ScalarType> dtype) { return reduce_ops().cumsum(a, dim, dtype); }
Tensor cumprod(const Tensor& a, int64_t dim, std::optional<ScalarType> dtype) { return reduce_ops().cumprod(a, dim, dtype); }
Tensor softmax(const Tensor& a, int64_t dim, std::optional<ScalarType> dtype) { return reduce_ops().softmax(a, dim, dtype); }
Tensor log_softmax(const Tensor& a, int64_t dim, std::optional<ScalarType> dtype) {
  return reduce_ops().log_softmax(a, dim, dtype);
}

Tensor Tensor::sum(std::optional<ScalarType> dtype) const { return tensor::sum(*this, dtype); }
Tensor Tensor::sum(IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return tensor::sum(*this, dim, keepdim, dtype);
}
Tensor Tensor::mean(std::optional<ScalarType> dtype) const { return tensor::mean(*this, dtype); }
Tensor Tensor::mean(IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return tensor::mean(*this, dim, keepdim, dtype);
}
Tensor Tensor::prod(std::optional<ScalarType> dtype) const { return tensor::prod(*this, dtype); }
Tensor Tensor::prod(int64_t dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return tensor::prod(*this, dim, keepdim, dtype);
}
Tensor Tensor::max() const { return tensor::max(*this); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const { return tensor::max(*this, dim, keepdim); }
Tensor Tensor::min() const { return tensor::min(*this); }
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const { return tensor::min(*this, dim, keepdim); }
Tensor Tensor::amax(IntArrayRef dim, bool keepdim) const { return tensor::amax(*this, dim, keepdim); }
Tensor Tensor::amin(IntArrayRef dim, bool keepdim) const { return tensor::amin(*this, dim, keepdim); }
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const { return tensor::argmax(*this, dim, keepdim); }
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const { return tensor::argmin(*this, dim, keepdim); }
Tensor Tensor::var(IntArrayRef dim, int64_t correction, bool keepdim) const {
  return tensor::var(*this, dim, correction, keepdim);
}
Tensor Tensor::std(IntArrayRef dim, int64_t correction, bool keepdim) const {
  return tensor::std(*this, dim, correction, keepdim);
}
Tensor Tensor::norm(const Scalar& p) const { return tensor::norm(*this, p); }
Tensor Tensor::norm(const Scalar& p, IntArrayRef dim, bool keepdim) const { return tensor::norm(*this, p, dim, keepdim); }
Tensor Tensor::logsumexp(IntArrayRef dim, bool keepdim) const { return tensor::logsumexp(*this, dim, keepdim); }
Tensor Tensor::any() const { return tensor::any(*this); }
Tensor Tensor::any(int64_t dim, bool keepdim) const { return tensor::any(*this, dim, keepdim); }
Tensor Tensor::all() const { return tensor::all(*this); }
Tensor Tensor::all(int64_t dim, bool keepdim) const { return tensor::all(*this, dim, keepdim); }
Tensor Tensor::cumsum(int64_t dim, std::optional<ScalarType> dtype) const { return tensor::cumsum(*this, dim, dtype); }
Tensor Tensor::cumprod(int64_t dim, std::optional<ScalarType> dtype) const { return tensor::cumprod(*this, dim, dtype); }
Tensor Tensor::softmax(int64_t dim, std::optional<ScalarType> dtype) const { return tensor::softmax(*this, dim, dtype); }
Tensor Tensor::log_softmax(int64_t dim, std::optional<ScalarType> dtype) const {
  return tensor::log_softmax(*this, dim, dtype);
}

}  // namespace tensor
