// Front ends of the elementwise ops: dtype rules, checks, and the dispatcher tables.
#include "src/ops/ElementwiseOps.h"

#include "kernels/cpu/Elementwise.h"
#include "src/dispatch/BackendKernels.h"

#include "tensor/autograd/autograd.h"
#include "tensor/ops.h"

namespace tensor {
namespace ops {

// Note [Front ends and backend kernels]
// An op's dispatcher slots for the backend keys (CPU, CUDA, Meta) each hold an instance of
// the same front end: argument checks, type promotion, the output's shape and dtype, and the
// output's allocation, all in a TensorIterator. The Meta instance stops there (that is all a
// meta tensor needs); the CPU and CUDA instances then call that backend's kernel for the op,
// looked up in a per-backend table. The front end never names a backend: a new backend fills
// its table (register_kernel), and the op's slot for its key starts routing to it. CPU's table
// is built in (constant-initialized in kernels/cpu, so it needs no static initializer); a
// backend without a kernel for an op has an empty slot, and the dispatcher says so.

namespace {

using dispatch::backend_index;

// The per-backend kernel tables, indexed by backend_index then by op.
UnaryKernel g_cuda_unary[kNumUnaryOps] = {};
BinaryKernel g_cuda_binary[kNumBinaryOps] = {};
const UnaryKernel* const g_unary_kernels[] = {cpu::kUnaryKernels, g_cuda_unary};
const BinaryKernel* const g_binary_kernels[] = {cpu::kBinaryKernels, g_cuda_binary};

using oplist::Result;

template <BinaryOp Op>
void configure(TensorIterator& it) {
  it.name(info(Op).name);
  if constexpr (info(Op).result == Result::Bool) it.output_dtype(kBool);
  if constexpr (info(Op).result == Result::ToFloat) it.promote_integer_inputs_to_float();
}

// Checks that depend on values or on the computed dtype, before any kernel runs.
template <BinaryOp Op, DispatchKey K>
void check(const TensorIterator& it, const Tensor& b, const Scalar& alpha) {
  const char* name = info(Op).name;
  ScalarType t = it.common_dtype();
  if constexpr (Op == BinaryOp::Sub) {
    TENSOR_CHECK(t != kBool, "sub: subtraction of two bool tensors is not supported; use logical_xor or bitwise_xor");
  }
  if constexpr (Op == BinaryOp::Add || Op == BinaryOp::Sub) {
    TENSOR_CHECK(!is_integral(t, true) || alpha.is_integral(true),
                 "{}: for integral input tensors (dtype {}), argument alpha must not be a floating point number", name, t);
    TENSOR_CHECK(is_complex(t) || !alpha.is_complex(), "{}: for non-complex input tensors (dtype {}), argument alpha must "
                 "not be a complex number", name, t);
  }
  if constexpr (K != DispatchKey::Meta && (Op == BinaryOp::DivTrunc || Op == BinaryOp::DivFloor ||
                                           Op == BinaryOp::Remainder || Op == BinaryOp::Fmod)) {
    if (is_integral(t, true) && b.numel() > 0)
      TENSOR_CHECK(!b.eq(0).any().template item<bool>(), "{}: integer division by zero (divisor of shape {}, dtype {})",
                   name, detail::shape_str(b.sizes()), b.dtype());
  }
  if constexpr (Op == BinaryOp::Pow) {
    // As PyTorch: a negative Scalar exponent is an error; a tensor exponent follows powi rules.
    if (is_integral(t, true) && b.unsafeGetTensorImpl()->is_wrapped_number())
      TENSOR_CHECK(b.item().to_long() >= 0, "pow: integers to negative integer powers are not allowed (dtype {})", t);
  }
}

// The backend's kernel for op, or the dispatcher's "no kernel" error (Meta runs none).
template <DispatchKey K, class Kernel, class Op>
Kernel kernel_for(const Kernel* const (&tables)[2], Op op) {
  if constexpr (K == DispatchKey::Meta) return nullptr;
  Kernel k = tables[backend_index(K)][static_cast<int>(op)];
  if (__builtin_expect(k == nullptr, 0)) dispatch::no_kernel(info(op).name, K);
  return k;
}

template <BinaryOp Op, DispatchKey K>
Tensor binary_fn(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  BinaryKernel kernel = kernel_for<K>(g_binary_kernels, Op);
  TensorIterator it;
  configure<Op>(it);
  it.add_output().add_input(a).add_input(b);
  it.build();
  check<Op, K>(it, b, alpha);
  if constexpr (K != DispatchKey::Meta) kernel(it, alpha);
  return it.output();
}

template <BinaryOp Op, DispatchKey K>
Tensor& binary_inplace(Tensor& self, const Tensor& b, const Scalar& alpha) {
  BinaryKernel kernel = kernel_for<K>(g_binary_kernels, Op);
  TensorIterator it;
  configure<Op>(it);
  it.add_output(self).add_input(self).add_input(b).inplace();
  it.build();
  check<Op, K>(it, b, alpha);
  if constexpr (K != DispatchKey::Meta) {
    kernel(it, alpha);
    it.finish();
  }
  self.unsafeGetTensorImpl()->bump_version();
  return self;
}

template <BinaryOp Op, DispatchKey K>
Tensor& binary_out(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  BinaryKernel kernel = kernel_for<K>(g_binary_kernels, Op);
  TensorIterator it;
  configure<Op>(it);
  it.add_output(out).add_input(a).add_input(b);
  it.build();
  check<Op, K>(it, b, alpha);
  if constexpr (K != DispatchKey::Meta) {
    kernel(it, alpha);
    it.finish();
  }
  out.unsafeGetTensorImpl()->bump_version();
  return out;
}

template <UnaryOp Op>
void configure(TensorIterator& it, const Tensor& a) {
  it.name(info(Op).name);
  if constexpr (info(Op).result == Result::Bool) it.output_dtype(kBool);
  if constexpr (info(Op).result == Result::ToFloat) it.promote_integer_inputs_to_float();
  if constexpr (info(Op).result == Result::ToReal) {
    if (is_complex(a.dtype())) it.output_dtype(to_real_type(a.dtype()));
  }
  if constexpr (Op == UnaryOp::Neg) {
    TENSOR_CHECK(a.dtype() != kBool, "neg: negation of a bool tensor (shape {}) is not supported; use logical_not",
                 detail::shape_str(a.sizes()));
  }
}

template <UnaryOp Op, DispatchKey K>
Tensor unary_fn(const Tensor& a) {
  UnaryKernel kernel = kernel_for<K>(g_unary_kernels, Op);
  TensorIterator it;
  configure<Op>(it, a);
  it.add_output().add_input(a);
  it.build();
  if constexpr (K != DispatchKey::Meta) kernel(it);
  return it.output();
}

template <UnaryOp Op, DispatchKey K>
Tensor& unary_inplace(Tensor& self) {
  UnaryKernel kernel = kernel_for<K>(g_unary_kernels, Op);
  TensorIterator it;
  configure<Op>(it, self);
  it.add_output(self).add_input(self).inplace();
  it.build();
  if constexpr (K != DispatchKey::Meta) {
    kernel(it);
    it.finish();
  }
  self.unsafeGetTensorImpl()->bump_version();
  return self;
}

template <UnaryOp Op, DispatchKey K>
Tensor& unary_out(Tensor& out, const Tensor& a) {
  UnaryKernel kernel = kernel_for<K>(g_unary_kernels, Op);
  TensorIterator it;
  configure<Op>(it, a);
  it.add_output(out).add_input(a);
  it.build();
  if constexpr (K != DispatchKey::Meta) {
    kernel(it);
    it.finish();
  }
  out.unsafeGetTensorImpl()->bump_version();
  return out;
}

// Built-in tables, constant-initialized: the CPU and Meta slots hold their front-end instances;
// the CUDA slot is filled when a CUDA kernel is registered.
using dispatch::front_end_def;
// Kind: Binary or Unary; kind: binary or unary. The tables are named as libtorch's schemas:
// "add", "add_" and "add.out" (the profiler and the "no kernel" error show them).
#define TENSOR_DEFS(Kind, kind, Enum, name)                                                                 \
  Kind##OpDefs{front_end_def<Kind##Fn>(#name, &kind##_fn<Kind##Op::Enum, DispatchKey::CPU>,                  \
                                     &kind##_fn<Kind##Op::Enum, DispatchKey::Meta>),                           \
               front_end_def<Kind##InplaceFn>(#name "_", &kind##_inplace<Kind##Op::Enum, DispatchKey::CPU>,  \
                                             &kind##_inplace<Kind##Op::Enum, DispatchKey::Meta>),             \
               front_end_def<Kind##OutFn>(#name ".out", &kind##_out<Kind##Op::Enum, DispatchKey::CPU>,        \
                                         &kind##_out<Kind##Op::Enum, DispatchKey::Meta>)},
#define TENSOR_BINARY_DEFS(Enum, name, dtypes, result, api) TENSOR_DEFS(Binary, binary, Enum, name)
#define TENSOR_UNARY_DEFS(Enum, name, dtypes, result, api) TENSOR_DEFS(Unary, unary, Enum, name)
BinaryOpDefs g_binary[] = {TENSOR_BINARY_OPS(TENSOR_BINARY_DEFS)};
UnaryOpDefs g_unary[] = {TENSOR_UNARY_OPS(TENSOR_UNARY_DEFS)};

// The CUDA instances, installed by register_kernel.
struct BinaryCudaFns { BinaryFn* fn; BinaryInplaceFn* inplace; BinaryOutFn* out; };
struct UnaryCudaFns { UnaryFn* fn; UnaryInplaceFn* inplace; UnaryOutFn* out; };
#define TENSOR_CUDA_FNS(Kind, kind, Enum) \
  {&kind##_fn<Kind##Op::Enum, DispatchKey::CUDA>, &kind##_inplace<Kind##Op::Enum, DispatchKey::CUDA>, \
   &kind##_out<Kind##Op::Enum, DispatchKey::CUDA>},
#define TENSOR_BINARY_CUDA(Enum, name, dtypes, result, api) TENSOR_CUDA_FNS(Binary, binary, Enum)
#define TENSOR_UNARY_CUDA(Enum, name, dtypes, result, api) TENSOR_CUDA_FNS(Unary, unary, Enum)
constexpr BinaryCudaFns kBinaryCuda[] = {TENSOR_BINARY_OPS(TENSOR_BINARY_CUDA)};
constexpr UnaryCudaFns kUnaryCuda[] = {TENSOR_UNARY_OPS(TENSOR_UNARY_CUDA)};
#undef TENSOR_BINARY_CUDA
#undef TENSOR_UNARY_CUDA
#undef TENSOR_CUDA_FNS
#undef TENSOR_BINARY_DEFS
#undef TENSOR_UNARY_DEFS
#undef TENSOR_DEFS
static_assert(sizeof(g_binary) / sizeof(g_binary[0]) == kNumBinaryOps);
static_assert(sizeof(g_unary) / sizeof(g_unary[0]) == kNumUnaryOps);

}  // namespace

BinaryOpDefs& binary_op(BinaryOp op) { return g_binary[static_cast<int>(op)]; }
UnaryOpDefs& unary_op(UnaryOp op) { return g_unary[static_cast<int>(op)]; }

void register_kernel(DispatchKey backend, BinaryOp op, BinaryKernel kernel) {
  dispatch::check_kernel_backend(backend, binary_name(op));
  const int i = static_cast<int>(op);
  g_cuda_binary[i] = kernel;
  g_binary[i].functional.set(backend, kBinaryCuda[i].fn);
  g_binary[i].inplace.set(backend, kBinaryCuda[i].inplace);
  g_binary[i].out.set(backend, kBinaryCuda[i].out);
}

void register_kernel(DispatchKey backend, UnaryOp op, UnaryKernel kernel) {
  dispatch::check_kernel_backend(backend, unary_name(op));
  const int i = static_cast<int>(op);
  g_cuda_unary[i] = kernel;
  g_unary[i].functional.set(backend, kUnaryCuda[i].fn);
  g_unary[i].inplace.set(backend, kUnaryCuda[i].inplace);
  g_unary[i].out.set(backend, kUnaryCuda[i].out);
}

}  // namespace ops

// ---- public API: generated from the op list's `api` column ----
using kernels::BinaryOp;
using kernels::UnaryOp;
using ops::binary_op;
using ops::unary_op;

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) { return binary_op(BinaryOp::Add).functional(a, b, alpha); }
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) { return add(a, wrapped_scalar(b), alpha); }
Tensor& add_out(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) { return binary_op(BinaryOp::Add).out(out, a, b, alpha); }
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) { return binary_op(BinaryOp::Sub).functional(a, b, alpha); }
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) { return sub(a, wrapped_scalar(b), alpha); }
Tensor& sub_out(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) { return binary_op(BinaryOp::Sub).out(out, a, b, alpha); }
Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const { return tensor::add(*this, o, alpha); }
Tensor Tensor::add(const Scalar& o, const Scalar& alpha) const { return tensor::add(*this, o, alpha); }
Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) const { return binary_op(BinaryOp::Add).inplace(const_cast<Tensor&>(*this), o, alpha); }
Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha) const { return add_(wrapped_scalar(o), alpha); }
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const { return tensor::sub(*this, o, alpha); }
Tensor Tensor::sub(const Scalar& o, const Scalar& alpha) const { return tensor::sub(*this, o, alpha); }
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) const { return binary_op(BinaryOp::Sub).inplace(const_cast<Tensor&>(*this), o, alpha); }
Tensor& Tensor::sub_(const Scalar& o, const Scalar& alpha) const { return sub_(wrapped_scalar(o), alpha); }

#define TENSOR_BINARY_API_Full(name, Op)                                                                           \
  Tensor name(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Op).functional(a, b, 1); }            \
  Tensor name(const Tensor& a, const Scalar& b) { return binary_op(BinaryOp::Op).functional(a, wrapped_scalar(b), 1); } \
  Tensor& name##_out(Tensor& out, const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Op).out(out, a, b, 1); } \
  Tensor Tensor::name(const Tensor& o) const { return tensor::name(*this, o); }                                    \
  Tensor Tensor::name(const Scalar& o) const { return tensor::name(*this, o); }                                    \
  Tensor& Tensor::name##_(const Tensor& o) const { return binary_op(BinaryOp::Op).inplace(const_cast<Tensor&>(*this), o, 1); }                \
  Tensor& Tensor::name##_(const Scalar& o) const { return binary_op(BinaryOp::Op).inplace(const_cast<Tensor&>(*this), wrapped_scalar(o), 1); }
#define TENSOR_BINARY_API_Alpha(name, Op)
#define TENSOR_BINARY_API_Internal(name, Op)
#define TENSOR_BINARY_API(Enum, name, dtypes, result, api) TENSOR_BINARY_API_##api(name, Enum)
TENSOR_BINARY_OPS(TENSOR_BINARY_API)
#undef TENSOR_BINARY_API
#undef TENSOR_BINARY_API_Full
#undef TENSOR_BINARY_API_Alpha
#undef TENSOR_BINARY_API_Internal

Tensor pow(const Scalar& base, const Tensor& exponent) { return pow(wrapped_scalar(base), exponent); }
Tensor xlogy(const Scalar& self, const Tensor& other) { return xlogy(wrapped_scalar(self), other); }

Tensor gelu(const Tensor& a, const std::string& approximate) {
  if (approximate == "none") return gelu(a);
  if (approximate == "tanh") return unary_op(UnaryOp::GeluTanh).functional(a);
  TENSOR_ERROR("gelu: approximate must be \"none\" or \"tanh\", got \"{}\"", approximate);
}

Tensor div(const Tensor& a, const Tensor& b, const std::string& rounding_mode) {
  if (rounding_mode.empty()) return div(a, b);
  if (rounding_mode == "trunc") return binary_op(BinaryOp::DivTrunc).functional(a, b, 1);
  if (rounding_mode == "floor") return binary_op(BinaryOp::DivFloor).functional(a, b, 1);
  TENSOR_ERROR("div: rounding_mode must be \"trunc\", \"floor\" or empty, got \"{}\"", rounding_mode);
}

#define TENSOR_UNARY_API_Fn(name, Op)                                                               \
  Tensor name(const Tensor& a) { return unary_op(UnaryOp::Op).functional(a); }                      \
  Tensor& name##_out(Tensor& out, const Tensor& a) { return unary_op(UnaryOp::Op).out(out, a); }    \
  Tensor Tensor::name() const { return tensor::name(*this); }
#define TENSOR_UNARY_API_Full(name, Op) \
  TENSOR_UNARY_API_Fn(name, Op)         \
  Tensor& Tensor::name##_() const { return unary_op(UnaryOp::Op).inplace(const_cast<Tensor&>(*this)); }
#define TENSOR_UNARY_API_Internal(name, Op)
#define TENSOR_UNARY_API(Enum, name, dtypes, result, api) TENSOR_UNARY_API_##api(name, Enum)
TENSOR_UNARY_OPS(TENSOR_UNARY_API)
#undef TENSOR_UNARY_API
#undef TENSOR_UNARY_API_Fn
#undef TENSOR_UNARY_API_Full
#undef TENSOR_UNARY_API_Internal

// ---- operators ----
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator-(const Scalar& a, const Tensor& b) { return sub(wrapped_scalar(a), b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
Tensor operator/(const Scalar& a, const Tensor& b) { return div(wrapped_scalar(a), b); }
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator==(const Tensor& a, const Scalar& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator!=(const Tensor& a, const Scalar& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<(const Tensor& a, const Scalar& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator<=(const Tensor& a, const Scalar& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>(const Tensor& a, const Scalar& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator>=(const Tensor& a, const Scalar& b) { return ge(a, b); }
Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
Tensor& operator+=(Tensor& a, const Scalar& b) { return a.add_(b); }
Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
Tensor& operator-=(Tensor& a, const Scalar& b) { return a.sub_(b); }
Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
Tensor& operator*=(Tensor& a, const Scalar& b) { return a.mul_(b); }
Tensor& operator/=(Tensor& a, const Tensor& b) { return a.div_(b); }
Tensor& operator/=(Tensor& a, const Scalar& b) { return a.div_(b); }
Tensor operator&(const Tensor& a, const Tensor& b) { return bitwise_and(a, b); }
Tensor operator|(const Tensor& a, const Tensor& b) { return bitwise_or(a, b); }
Tensor operator^(const Tensor& a, const Tensor& b) { return bitwise_xor(a, b); }
Tensor operator~(const Tensor& a) { return bitwise_not(a); }

// ---- clamp and where: front ends over their backend kernels ----
namespace ops {
namespace {

// The per-backend kernels: CPU's built in, CUDA's registered.
dispatch::BackendKernels<ClampKernel> g_clamp_kernels{{&cpu::clamp_kernel, nullptr}};
dispatch::BackendKernels<WhereKernel> g_where_kernels{{&cpu::where_kernel, nullptr}};

template <DispatchKey K>
Tensor& clamp_out_fn(Tensor& out, const Tensor& a, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  const ClampKernel kernel = g_clamp_kernels.get<K>("clamp");
  TENSOR_CHECK(!out.defined() || !autograd::GradMode::is_enabled() || !(a.requires_grad() || out.requires_grad()),
               "clamp_out: functions with out=... arguments don't support automatic differentiation, but one of the "
               "arguments requires grad (input shape {})", detail::shape_str(a.sizes()));
  TENSOR_CHECK(lo || hi, "clamp: at least one of min and max must be given (input shape {})", detail::shape_str(a.sizes()));
  TensorIterator it;
  it.name("clamp");
  // The bounds take part in promotion as weak types, as PyTorch does.
  Tensor lo_t = lo ? wrapped_scalar(*lo) : Tensor(), hi_t = hi ? wrapped_scalar(*hi) : Tensor();
  Tensor all[3] = {a, lo_t, hi_t};
  it.common_dtype(result_type_of(all, 3));
  it.add_output(out).add_input(a);
  it.build();
  TENSOR_CHECK(!is_complex(it.common_dtype()) && it.common_dtype() != kBool, "clamp: not supported for dtype {}", it.common_dtype());
  if constexpr (K != DispatchKey::Meta) {
    kernel(it, lo ? &*lo : nullptr, hi ? &*hi : nullptr);
    it.finish();
  }
  if (out.defined()) out.unsafeGetTensorImpl()->bump_version();
  else out = it.output();
  return out;
}
template <DispatchKey K>
Tensor& clamp_inplace_fn(Tensor& self, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  return clamp_out_fn<K>(self, self, lo, hi);
}

template <DispatchKey K>
Tensor clamp_fn(const Tensor& a, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  Tensor out;
  return clamp_out_fn<K>(out, a, lo, hi);
}
template <DispatchKey K>
Tensor where_fn(const Tensor& cond, const Tensor& a, const Tensor& b) {
  const WhereKernel kernel = g_where_kernels.get<K>("where");
  TENSOR_CHECK(cond.dtype() == kBool, "where: condition must be a bool tensor, got {} of shape {}", cond.dtype(),
               detail::shape_str(cond.sizes()));
  TensorIterator it;
  it.name("where").add_output().add_input(cond).add_input(a).add_input(b).no_input_cast(1);
  it.build();
  if constexpr (K != DispatchKey::Meta) kernel(it);
  return it.output();
}
dispatch::OpDef<ClampFn> g_clamp = TENSOR_FRONT_END_DEF(ClampFn, "clamp", clamp_fn);
dispatch::OpDef<ClampOutFn> g_clamp_out = TENSOR_FRONT_END_DEF(ClampOutFn, "clamp.out", clamp_out_fn);
dispatch::OpDef<ClampInplaceFn> g_clamp_inplace = TENSOR_FRONT_END_DEF(ClampInplaceFn, "clamp_", clamp_inplace_fn);
dispatch::OpDef<WhereFn> g_where = TENSOR_FRONT_END_DEF(WhereFn, "where", where_fn);
}  // namespace

dispatch::OpDef<ClampFn>& clamp_op() { return g_clamp; }
dispatch::OpDef<ClampOutFn>& clamp_out_op() { return g_clamp_out; }
dispatch::OpDef<ClampInplaceFn>& clamp_inplace_op() { return g_clamp_inplace; }
dispatch::OpDef<WhereFn>& where_op() { return g_where; }

void register_kernel(DispatchKey backend, ClampKernel kernel) {
  dispatch::check_kernel_backend(backend, "clamp");
  g_clamp_kernels.set(backend, kernel);
  g_clamp.set(backend, &clamp_fn<DispatchKey::CUDA>);
  g_clamp_out.set(backend, &clamp_out_fn<DispatchKey::CUDA>);
  g_clamp_inplace.set(backend, &clamp_inplace_fn<DispatchKey::CUDA>);
}
void register_kernel(DispatchKey backend, WhereKernel kernel) {
  dispatch::check_kernel_backend(backend, "where");
  g_where_kernels.set(backend, kernel);
  g_where.set(backend, &where_fn<DispatchKey::CUDA>);
}
}  // namespace ops

Tensor& clamp_out(Tensor& out, const Tensor& a, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  return ops::clamp_out_op()(out, a, lo, hi);
}
Tensor clamp(const Tensor& a, std::optional<Scalar> lo, std::optional<Scalar> hi) { return ops::clamp_op()(a, lo, hi); }
Tensor Tensor::clamp(std::optional<Scalar> lo, std::optional<Scalar> hi) const { return tensor::clamp(*this, lo, hi); }
Tensor& Tensor::clamp_(std::optional<Scalar> lo, std::optional<Scalar> hi) const {
  return ops::clamp_inplace_op()(const_cast<Tensor&>(*this), lo, hi);
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) { return ops::where_op()(cond, a, b); }
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b) { return where(cond, wrapped_scalar(a), b); }
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b) { return where(cond, a, wrapped_scalar(b)); }

}  // namespace tensor
