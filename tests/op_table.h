// The elementwise op table shared by the op tests and the gradient checks (Note [Op table]).
#pragma once

#include <tensor/tensor.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace tensor::optable {

// Note [Op table]
// One table drives the elementwise tests, as ggml's test-backend-ops does: an entry names the
// op, how to call it, a float64 reference for one element, the input domain and the dtypes it
// is tested in. tests/test_ops.cpp checks values against the reference; tests/test_gradcheck.cpp
// checks gradients by finite differences of every row whose op records a derivative, in
// float64 and, when the op list (kernels/OpList.h) says the op accepts complex, in complex128.
// tests/test_op_list.cpp fails when a public op of the op list has no row here. Adding an op
// means adding a row here.

struct UnaryCase {
  std::string name;
  std::function<Tensor(const Tensor&)> fn;
  std::function<double(double)> ref;
  double lo, hi;                 // input domain
  std::vector<ScalarType> dtypes;
  bool bool_out = false;
};
struct BinaryCase {
  std::string name;
  std::function<Tensor(const Tensor&, const Tensor&)> fn;
  std::function<double(double, double)> ref;
  double lo, hi, blo, bhi;
  std::vector<ScalarType> dtypes;
  bool bool_out = false;
};

inline const std::vector<ScalarType> kFloats = {kFloat32, kFloat64, kFloat16, kBFloat16};
inline const std::vector<ScalarType> kReal = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kInt16, kInt8, kUInt8};

inline double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }

inline std::vector<UnaryCase> unary_cases() {
  return {
      {"neg", [](auto& a) { return tensor::neg(a); }, [](double x) { return -x; }, -5, 5, {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kInt8}},
      {"abs", [](auto& a) { return tensor::abs(a); }, [](double x) { return std::fabs(x); }, -5, 5, {kFloat32, kFloat64, kFloat16, kInt32, kInt64, kInt8}},
      {"exp", [](auto& a) { return tensor::exp(a); }, [](double x) { return std::exp(x); }, -10, 10, kFloats},
      {"exp2", [](auto& a) { return tensor::exp2(a); }, [](double x) { return std::exp2(x); }, -10, 10, kFloats},
      {"log", [](auto& a) { return tensor::log(a); }, [](double x) { return std::log(x); }, 0.01, 100, kFloats},
      {"log2", [](auto& a) { return tensor::log2(a); }, [](double x) { return std::log2(x); }, 0.01, 100, kFloats},
      {"log10", [](auto& a) { return tensor::log10(a); }, [](double x) { return std::log10(x); }, 0.01, 100, kFloats},
      {"log1p", [](auto& a) { return tensor::log1p(a); }, [](double x) { return std::log1p(x); }, -0.9, 10, kFloats},
      {"expm1", [](auto& a) { return tensor::expm1(a); }, [](double x) { return std::expm1(x); }, -5, 5, kFloats},
      {"sqrt", [](auto& a) { return tensor::sqrt(a); }, [](double x) { return std::sqrt(x); }, 0, 100, kFloats},
      {"rsqrt", [](auto& a) { return tensor::rsqrt(a); }, [](double x) { return 1 / std::sqrt(x); }, 0.01, 100, kFloats},
      {"sin", [](auto& a) { return tensor::sin(a); }, [](double x) { return std::sin(x); }, -6, 6, kFloats},
      {"cos", [](auto& a) { return tensor::cos(a); }, [](double x) { return std::cos(x); }, -6, 6, kFloats},
      {"tan", [](auto& a) { return tensor::tan(a); }, [](double x) { return std::tan(x); }, -1.2, 1.2, kFloats},
      {"asin", [](auto& a) { return tensor::asin(a); }, [](double x) { return std::asin(x); }, -0.99, 0.99, kFloats},
      {"acos", [](auto& a) { return tensor::acos(a); }, [](double x) { return std::acos(x); }, -0.99, 0.99, kFloats},
      {"atan", [](auto& a) { return tensor::atan(a); }, [](double x) { return std::atan(x); }, -10, 10, kFloats},
      {"sinh", [](auto& a) { return tensor::sinh(a); }, [](double x) { return std::sinh(x); }, -5, 5, kFloats},
      {"cosh", [](auto& a) { return tensor::cosh(a); }, [](double x) { return std::cosh(x); }, -5, 5, kFloats},
      {"tanh", [](auto& a) { return tensor::tanh(a); }, [](double x) { return std::tanh(x); }, -5, 5, kFloats},
      {"sigmoid", [](auto& a) { return tensor::sigmoid(a); }, sigmoid_ref, -10, 10, kFloats},
      {"relu", [](auto& a) { return tensor::relu(a); }, [](double x) { return std::isnan(x) || x > 0 ? x : 0; }, -5, 5, {kFloat32, kFloat64, kFloat16, kInt32, kInt64}},
      {"gelu", [](auto& a) { return tensor::gelu(a); }, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -5, 5, kFloats},
      {"gelu_tanh", [](auto& a) { return tensor::gelu(a, "tanh"); }, [](double x) { return 0.5 * x * (1 + std::tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x))); }, -5, 5, kFloats},
      {"silu", [](auto& a) { return tensor::silu(a); }, [](double x) { return x * sigmoid_ref(x); /* -inf * 0: NaN, as libtorch */ }, -10, 10, kFloats},
      {"erf", [](auto& a) { return tensor::erf(a); }, [](double x) { return std::erf(x); }, -3, 3, kFloats},
      {"floor", [](auto& a) { return tensor::floor(a); }, [](double x) { return std::floor(x); }, -5, 5, {kFloat32, kFloat64, kFloat16, kInt32}},
      {"ceil", [](auto& a) { return tensor::ceil(a); }, [](double x) { return std::ceil(x); }, -5, 5, {kFloat32, kFloat64, kFloat16, kInt32}},
      {"round", [](auto& a) { return tensor::round(a); }, [](double x) { return std::nearbyint(x); }, -5, 5, {kFloat32, kFloat64, kFloat16}},
      {"trunc", [](auto& a) { return tensor::trunc(a); }, [](double x) { return std::trunc(x); }, -5, 5, {kFloat32, kFloat64, kFloat16}},
      {"sign", [](auto& a) { return tensor::sign(a); }, [](double x) { return double((x > 0) - (x < 0)); /* NaN -> 0, as PyTorch */ }, -5, 5, {kFloat32, kFloat64, kInt32, kInt64}},
      {"reciprocal", [](auto& a) { return tensor::reciprocal(a); }, [](double x) { return 1 / x; }, 0.1, 10, kFloats},
      {"square", [](auto& a) { return tensor::square(a); }, [](double x) { return x * x; }, -5, 5, {kFloat32, kFloat64, kFloat16, kInt32, kInt64}},
      {"logical_not", [](auto& a) { return tensor::logical_not(a); }, [](double x) { return double(x == 0); }, -2, 2, {kFloat32, kFloat64, kInt32, kInt64}, true},
      {"bitwise_not", [](auto& a) { return tensor::bitwise_not(a); }, [](double x) { return double(~int64_t(x)); }, -9, 9, {kInt32, kInt64, kInt8}},
      {"isnan", [](auto& a) { return tensor::isnan(a); }, [](double x) { return double(std::isnan(x)); }, -5, 5, {kFloat32, kFloat64, kFloat16, kInt32}, true},
  };
}

inline std::vector<BinaryCase> binary_cases() {
  return {
      {"add", [](auto& a, auto& b) { return a + b; }, [](double x, double y) { return x + y; }, -5, 5, -5, 5, kReal},
      {"add_alpha", [](auto& a, auto& b) { return tensor::add(a, b, 2); }, [](double x, double y) { return x + 2 * y; }, -5, 5, -5, 5, {kFloat32, kFloat64, kInt64}},
      {"sub", [](auto& a, auto& b) { return a - b; }, [](double x, double y) { return x - y; }, -5, 5, -5, 5, {kFloat32, kFloat64, kFloat16, kInt32, kInt64}},
      {"mul", [](auto& a, auto& b) { return a * b; }, [](double x, double y) { return x * y; }, -5, 5, -5, 5, kReal},
      {"div", [](auto& a, auto& b) { return a / b; }, [](double x, double y) { return x / y; }, -5, 5, 0.5, 5, kFloats},
      {"remainder", [](auto& a, auto& b) { return tensor::remainder(a, b); }, [](double x, double y) { double r = std::fmod(x, y); return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r; }, -20, 20, 1, 6, {kFloat32, kFloat64, kInt32, kInt64}},
      {"fmod", [](auto& a, auto& b) { return tensor::fmod(a, b); }, [](double x, double y) { return std::fmod(x, y); }, -20, 20, 1, 6, {kFloat32, kFloat64, kInt32, kInt64}},
      {"pow", [](auto& a, auto& b) { return tensor::pow(a, b); }, [](double x, double y) { return std::pow(x, y); }, 0.1, 3, -2, 2, {kFloat32, kFloat64}},
      // maximum/minimum propagate NaN from either side (std::max would drop one); xlogy is 0
      // where x is 0 unless y is NaN, as libtorch (0 * log(0) and 0 * log(inf) are not NaN).
      {"maximum", [](auto& a, auto& b) { return tensor::maximum(a, b); }, [](double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y); }, -5, 5, -5, 5, kReal},
      {"minimum", [](auto& a, auto& b) { return tensor::minimum(a, b); }, [](double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y); }, -5, 5, -5, 5, kReal},
      {"atan2", [](auto& a, auto& b) { return tensor::atan2(a, b); }, [](double x, double y) { return std::atan2(x, y); }, -5, 5, -5, 5, {kFloat32, kFloat64}},
      {"hypot", [](auto& a, auto& b) { return tensor::hypot(a, b); }, [](double x, double y) { return std::hypot(x, y); }, -5, 5, -5, 5, kFloats},
      {"logaddexp", [](auto& a, auto& b) { return tensor::logaddexp(a, b); }, [](double x, double y) { return std::log(std::exp(x) + std::exp(y)); }, -5, 5, -5, 5, kFloats},
      {"xlogy", [](auto& a, auto& b) { return tensor::xlogy(a, b); }, [](double x, double y) { return std::isnan(y) ? NAN : x == 0 ? 0.0 : x * std::log(y); }, -5, 5, 0.1, 5, kFloats},
      {"copysign", [](auto& a, auto& b) { return tensor::copysign(a, b); }, [](double x, double y) { return std::copysign(x, y); }, -5, 5, -5, 5, kFloats},
      {"eq", [](auto& a, auto& b) { return a == b; }, [](double x, double y) { return double(x == y); }, -2, 2, -2, 2, kReal, true},
      {"ne", [](auto& a, auto& b) { return a != b; }, [](double x, double y) { return double(x != y); }, -2, 2, -2, 2, kReal, true},
      {"lt", [](auto& a, auto& b) { return a < b; }, [](double x, double y) { return double(x < y); }, -2, 2, -2, 2, kReal, true},
      {"le", [](auto& a, auto& b) { return a <= b; }, [](double x, double y) { return double(x <= y); }, -2, 2, -2, 2, kReal, true},
      {"gt", [](auto& a, auto& b) { return a > b; }, [](double x, double y) { return double(x > y); }, -2, 2, -2, 2, kReal, true},
      {"ge", [](auto& a, auto& b) { return a >= b; }, [](double x, double y) { return double(x >= y); }, -2, 2, -2, 2, kReal, true},
      {"logical_and", [](auto& a, auto& b) { return tensor::logical_and(a, b); }, [](double x, double y) { return double(x != 0 && y != 0); }, -1, 1, -1, 1, {kFloat32, kInt64}, true},
      {"logical_or", [](auto& a, auto& b) { return tensor::logical_or(a, b); }, [](double x, double y) { return double(x != 0 || y != 0); }, -1, 1, -1, 1, {kFloat32, kInt64}, true},
      {"logical_xor", [](auto& a, auto& b) { return tensor::logical_xor(a, b); }, [](double x, double y) { return double((x != 0) != (y != 0)); }, -1, 1, -1, 1, {kFloat32, kInt64}, true},
      {"bitwise_and", [](auto& a, auto& b) { return tensor::bitwise_and(a, b); }, [](double x, double y) { return double(int64_t(x) & int64_t(y)); }, -9, 9, -9, 9, {kInt32, kInt64, kUInt8}},
      {"bitwise_or", [](auto& a, auto& b) { return tensor::bitwise_or(a, b); }, [](double x, double y) { return double(int64_t(x) | int64_t(y)); }, -9, 9, -9, 9, {kInt32, kInt64}},
      {"bitwise_xor", [](auto& a, auto& b) { return tensor::bitwise_xor(a, b); }, [](double x, double y) { return double(int64_t(x) ^ int64_t(y)); }, -9, 9, -9, 9, {kInt32, kInt64}},
  };
}


// The structured (non-elementwise) differentiable ops: matrix products, convolutions, pooling,
// normalization, softmax, losses and attention. Each row calls the op on float64 inputs of the
// given shapes; tests/test_gradcheck.cpp runs gradcheck and gradgradcheck on contiguous inputs
// and again on non-contiguous ones (the same shapes as transposed or strided views). Their
// value tests against reference loops live in each area's own test file.
struct StructuredCase {
  std::string name;
  std::function<Tensor(const std::vector<Tensor>&)> fn;
  std::vector<std::vector<int64_t>> shapes;
  bool second_order = true;
  /// The dispatcher ops (derivative_rows() names) the case checks; empty: its name's first word.
  std::vector<std::string> covers = {};
};

/// The dispatcher ops a structured case gradient-checks.
inline std::vector<std::string> covered_ops(const StructuredCase& c) {
  if (!c.covers.empty()) return c.covers;
  return {c.name.substr(0, c.name.find(' '))};
}

/// An index or mask constant of a row, on the device of the row's first input (so the CUDA
/// mode of the table, tests/test_cuda_op_table.cpp, runs the same rows).
inline Tensor on(const std::vector<Tensor>& v, const Tensor& t) { return t.to(v[0].device()); }

inline std::vector<StructuredCase> structured_cases() {
  namespace F = tensor::nn::functional;
  using V = std::vector<Tensor>;
  return {
      {"where", [](const V& v) { return tensor::where(v[0] > 0, v[0], v[1]); }, {{3, 4}, {4}}},
      {"clamp", [](const V& v) { return v[0].clamp(-0.5, 0.5); }, {{3, 4}}},
      {"sum", [](const V& v) { return v[0].sum({1}, true); }, {{3, 4}}},
      {"mean", [](const V& v) { return v[0].mean({0, 1}); }, {{3, 4}}},
      {"prod", [](const V& v) { return v[0].prod(1); }, {{3, 4}}},
      {"prod (all)", [](const V& v) { return v[0].prod(); }, {{3, 4}}},
      {"max (all)", [](const V& v) { return v[0].max(); }, {{3, 4}}},
      {"min (all)", [](const V& v) { return v[0].min(); }, {{3, 4}}},
      {"amax", [](const V& v) { return v[0].amax({1}, true); }, {{3, 4}}},
      {"amin", [](const V& v) { return v[0].amin({0}); }, {{3, 4}}},
      {"logsumexp", [](const V& v) { return v[0].logsumexp({1}); }, {{3, 4}}},
      {"var", [](const V& v) { return v[0].var({1}); }, {{3, 4}}},
      {"std (correction 0)", [](const V& v) { return v[0].std({0}, 0); }, {{3, 4}}},
      {"norm (p=2)", [](const V& v) { return v[0].norm(2, {1}); }, {{3, 4}}},
      {"norm (p=3, all)", [](const V& v) { return v[0].norm(3); }, {{3, 4}}},
      {"cumsum", [](const V& v) { return v[0].cumsum(1); }, {{3, 4}}},
      {"cumprod", [](const V& v) { return v[0].cumprod(0); }, {{3, 4}}},
      {"index_select", [](const V& v) { return v[0].index_select(1, on(v, tensor::tensor({3, 0, 3}))); }, {{3, 4}}},
      {"gather", [](const V& v) { return v[0].gather(0, on(v, tensor::tensor({{0, 2, 1, 0}, {2, 2, 0, 1}}))); }, {{3, 4}}},
      {"scatter", [](const V& v) { return v[0].scatter(0, on(v, tensor::tensor({{2, 0, 1, 1}, {0, 1, 2, 0}})), v[1]); }, {{3, 4}, {2, 4}}},
      {"scatter_add", [](const V& v) { return v[0].scatter_add(0, on(v, tensor::tensor({{2, 2, 1, 0}, {2, 1, 2, 0}})), v[1]); }, {{3, 4}, {2, 4}}},
      {"index_add", [](const V& v) { return v[0].index_add(0, on(v, tensor::tensor({2, 0, 2})), v[1], 0.5); }, {{3, 4}, {3, 4}}},
      {"masked_fill (broadcast mask)", [](const V& v) { return v[0].masked_fill(on(v, tensor::tensor({true, false, false, true})), 2.0); }, {{3, 4}}},
      {"cat", [](const V& v) { return tensor::cat({v[0], v[1]}, 1); }, {{3, 2}, {3, 4}}},
      {"stack", [](const V& v) { return tensor::stack({v[0], v[1]}, -1); }, {{3, 4}, {3, 4}}},
      // Views (hand-written nodes, src/autograd/nodes/Views.cpp), several per case.
      {"views: view, transpose, t, permute", [](const V& v) { Tensor c = v[0].contiguous(); return c.view({4, 3}).transpose(0, 1).t().permute({1, 0}) * c.view({4, 3}).t(); }, {{3, 4}}, true, {"view", "transpose", "t", "permute"}},
      {"views: select, slice, unsqueeze, squeeze, expand", [](const V& v) { return v[0].select(0, 1).unsqueeze(0).expand({2, 4}) + v[0].slice(0, 0, 3, 2).unsqueeze(1).squeeze(1).squeeze(); }, {{3, 4}}, true, {"select", "slice", "unsqueeze", "squeeze", "expand"}},
      {"views: diagonal, unfold, as_strided", [](const V& v) { return v[0].diagonal(1).sum() * v[0].unfold(1, 2, 1) + v[0].as_strided({2, 2}, {4, 1}, 1).sum(); }, {{3, 4}}, true, {"diagonal", "unfold", "as_strided"}},
      {"views: conj, real, imag", [](const V& v) { Tensor z = v[0].to(tensor::kComplex128) * tensor::complex128(1, 0.5); return (z.conj() * z * z).real() + z.imag() * z.conj().imag(); }, {{3, 4}}, true, {"conj", "real", "imag"}},
      // Data movement: a transposed (non-contiguous) input; copy=true forces the conversion op.
      {"clone", [](const V& v) { return v[0].t().clone() * v[0].t(); }, {{3, 4}}},
      {"_to_copy", [](const V& v) { return v[0].t().to(v[0].dtype(), false, /*copy=*/true); }, {{3, 4}}},
      {"_to_copy (real to complex)", [](const V& v) { return (v[0].to(tensor::kComplex128) * tensor::complex128(0.5, 2)).real(); }, {{3, 4}}},
      // A lazily conjugated complex input (real inputs have no conj bit, so nothing to resolve).
      {"resolve_conj", [](const V& v) { return v[0].conj().resolve_conj() * v[1]; }, {{3, 4}, {4}}},
      // In-place ops with hand-written nodes, on a non-leaf copy (a leaf that requires grad
      // cannot be written in place); the views make CopySlices record the write.
      {"copy_ (broadcast into a slice)", [](const V& v) { Tensor y = v[0] * 1; y.narrow(0, 0, 2).copy_(v[1]); return y * v[0]; }, {{3, 4}, {4}}, true, {"copy_"}},
      {"fill_ (through a view)", [](const V& v) { Tensor y = v[0] * 1; y.select(1, 2).fill_(0.5); return y * v[0]; }, {{3, 4}}, true, {"fill_"}},
      {"clamp_", [](const V& v) { Tensor y = v[0] * 1; y.clamp_(-0.5, 0.5); return y; }, {{3, 4}}, true, {"clamp_"}},
      {"scatter_", [](const V& v) { Tensor y = v[0] * 1; y.scatter_(0, on(v, tensor::tensor({{2, 0, 1, 1}, {0, 1, 2, 0}})), v[1]); return y; }, {{3, 4}, {2, 4}}, true, {"scatter_"}},
      {"scatter_add_", [](const V& v) { Tensor y = v[0] * 1; y.scatter_add_(0, on(v, tensor::tensor({{2, 2, 1, 0}, {2, 1, 2, 0}})), v[1]); return y; }, {{3, 4}, {2, 4}}, true, {"scatter_add_"}},
      {"index_add_", [](const V& v) { Tensor y = v[0] * 1; y.index_add_(0, on(v, tensor::tensor({2, 0, 2})), v[1], 0.5); return y; }, {{3, 4}, {3, 4}}, true, {"index_add_"}},
      {"masked_fill_", [](const V& v) { Tensor y = v[0] * 1; y.masked_fill_(on(v, tensor::tensor({true, false, false, true})), 2.0); return y * v[0]; }, {{3, 4}}, true, {"masked_fill_"}},
      {"sort", [](const V& v) { return std::get<0>(v[0].sort(1, true)); }, {{3, 4}}},
      {"topk", [](const V& v) { return std::get<0>(v[0].topk(2, 0)); }, {{3, 4}}},
      {"tril_", [](const V& v) { Tensor y = v[0] * 1; y.tril_(1); return y; }, {{3, 4}}, true, {"tril_"}},
      {"triu_", [](const V& v) { Tensor y = v[0] * 1; y.triu_(); return y; }, {{4, 3}}, true, {"triu_"}},
      {"tril", [](const V& v) { return v[0].tril(-1); }, {{3, 4}}},
      {"triu", [](const V& v) { return v[0].triu(1) * v[0]; }, {{4, 3}}},
      {"flip", [](const V& v) { return v[0].flip({0, -1}); }, {{2, 3, 4}}},
      // libtorch ops for ported programs, composites of the ops above (src/ops/PortedOps.cpp).
      {"constant_pad_nd", [](const V& v) { return tensor::constant_pad_nd(v[0], {2, -1, 1, 1}, 0.5); }, {{3, 4}}},
      {"reflection_pad2d", [](const V& v) { return tensor::reflection_pad2d(v[0], {1, 2, 2, 1}); }, {{2, 3, 4}}},
      {"diag", [](const V& v) { return tensor::diag(v[0], -1) * tensor::diag(v[1], 1).sum(); }, {{3}, {3, 4}}},
      // QR (Note [QR backward]): Q and R flattened into one output; first order only.
      {"linalg_qr (tall)", [](const V& v) { auto [q, r] = tensor::linalg_qr(v[0]); return tensor::cat({q.reshape({-1}), r.reshape({-1})}); }, {{4, 3}}, false, {"linalg_qr"}},
      {"linalg_qr (wide, batched)", [](const V& v) { auto [q, r] = tensor::linalg_qr(v[0]); return tensor::cat({q.reshape({-1}), r.reshape({-1})}); }, {{2, 3, 5}}, false, {"linalg_qr"}},
      {"linalg_qr (complete, square)", [](const V& v) { auto [q, r] = tensor::linalg_qr(v[0], "complete"); return tensor::cat({q.reshape({-1}), r.reshape({-1})}); }, {{3, 3}}, false, {"linalg_qr"}},
      {"min, max (two tensors)", [](const V& v) { return tensor::max(v[0], v[1]) * tensor::min(v[0], v[1]); }, {{3, 4}, {4}}, true, {"maximum", "minimum"}},
      // The in-place shape ops (src/autograd/InPlaceViews.cpp) on a non-leaf.
      {"in-place views: t_, unsqueeze_, transpose_, squeeze_", [](const V& v) { Tensor y = v[0] * 1; y.t_(); y.unsqueeze_(0); y.transpose_(0, 2); y.squeeze_({-1}); return y * v[0]; }, {{3, 4}}, true, {"t_", "unsqueeze_", "transpose_", "squeeze_"}},
      {"mm", [](const V& v) { return tensor::mm(v[0], v[1]); }, {{3, 4}, {4, 2}}},
      {"bmm", [](const V& v) { return tensor::bmm(v[0], v[1]); }, {{2, 3, 4}, {2, 4, 2}}},
      {"addmm (broadcast self)", [](const V& v) { return tensor::addmm(v[0], v[1], v[2], 0.5, 2.0); }, {{1, 2}, {3, 4}, {4, 2}}},
      {"linear", [](const V& v) { return tensor::linear(v[0], v[1], v[2]); }, {{2, 3, 4}, {5, 4}, {5}}},
      {"matmul (broadcast batch)", [](const V& v) { return tensor::matmul(v[0], v[1]); }, {{2, 1, 3, 4}, {3, 4, 2}}},
      {"dot", [](const V& v) { return tensor::dot(v[0], v[1]); }, {{5}, {5}}},
      {"outer", [](const V& v) { return tensor::outer(v[0], v[1]); }, {{3}, {4}}},
      {"einsum", [](const V& v) { return tensor::einsum("bij,bjk->bik", {v[0], v[1]}); }, {{2, 3, 4}, {2, 4, 2}}},
      {"conv1d", [](const V& v) { return tensor::conv1d(v[0], v[1], v[2], 2, 1); }, {{2, 3, 7}, {4, 3, 3}, {4}}, true, {"convolution"}},
      {"conv2d (groups, dilation)", [](const V& v) { return tensor::conv2d(v[0], v[1], v[2], 1, 1, 2, 2); }, {{1, 4, 6, 5}, {2, 2, 3, 3}, {2}}, true, {"convolution"}},
      {"conv3d", [](const V& v) { return tensor::conv3d(v[0], v[1], std::nullopt, 1, 1); }, {{1, 2, 3, 4, 3}, {2, 2, 2, 2, 2}}, false, {"convolution"}},
      {"conv_transpose2d", [](const V& v) { return tensor::conv_transpose2d(v[0], v[1], v[2], 2, 1, 1); }, {{1, 3, 3, 4}, {3, 2, 3, 3}, {2}}, true, {"convolution"}},
      {"im2col", [](const V& v) { return tensor::im2col(v[0], {2, 3}, {2, 1}, {1, 2}, {2, 1}); }, {{2, 2, 5, 4}}, true, {"im2col", "col2im"}},
      {"im2col (unbatched)", [](const V& v) { return tensor::im2col(v[0], {2, 2}, {1, 1}, {0, 1}, {1, 2}); }, {{2, 3, 4}}, true, {"im2col", "col2im"}},
      {"col2im", [](const V& v) { return tensor::col2im(v[0], {5, 4}, {2, 3}, {2, 1}, {1, 2}, {2, 1}); }, {{2, 12, 18}}, true, {"col2im", "im2col"}},
      {"col2im (unbatched)", [](const V& v) { return tensor::col2im(v[0], {3, 4}, {2, 2}, {1, 1}, {0, 1}, {1, 2}); }, {{8, 6}}, true, {"col2im", "im2col"}},
      // The pooling backward ops are rows too: gradgradcheck differentiates them.
      {"max_pool2d_with_indices", [](const V& v) { return std::get<0>(tensor::max_pool2d_with_indices(v[0], {2, 2}, {1, 1})); }, {{1, 2, 4, 4}}},
      {"max_pool2d", [](const V& v) { return tensor::max_pool2d(v[0], {2, 2}, {}, 0, 1, true); }, {{2, 2, 5, 5}}, true, {"max_pool2d", "max_pool2d_backward"}},
      {"avg_pool2d", [](const V& v) { return tensor::avg_pool2d(v[0], {3, 3}, {2, 2}, 1); }, {{1, 2, 6, 5}}, true, {"avg_pool2d", "avg_pool2d_backward"}},
      {"adaptive_avg_pool2d", [](const V& v) { return tensor::adaptive_avg_pool2d(v[0], {3, 2}); }, {{1, 2, 7, 5}}, true, {"adaptive_avg_pool2d", "adaptive_avg_pool2d_backward"}},
      {"upsample_bicubic2d", [](const V& v) { return tensor::upsample_bicubic2d(v[0], {5, 7}, false); }, {{1, 2, 3, 4}}, true, {"upsample_bicubic2d", "upsample_bicubic2d_backward"}},
      {"upsample_bicubic2d (align_corners, downscale, scales)", [](const V& v) { return tensor::upsample_bicubic2d(v[0], {2, 5}, true, 0.4, 1.3); }, {{2, 1, 4, 4}}, true, {"upsample_bicubic2d", "upsample_bicubic2d_backward"}},
      // Unpooling: fixed indices, distinct within each plane ((k * 7) % out_plane over the flat k).
      {"max_unpool2d", [](const V& v) { std::vector<int64_t> i(18); for (int64_t k = 0; k < 18; ++k) i[static_cast<size_t>(k)] = k * 7 % 25; return tensor::max_unpool2d(v[0], tensor::tensor(i).reshape({1, 2, 3, 3}), {5, 5}); }, {{1, 2, 3, 3}}},
      {"max_unpool3d", [](const V& v) { std::vector<int64_t> i(8); for (int64_t k = 0; k < 8; ++k) i[static_cast<size_t>(k)] = k * 7 % 12; return tensor::max_unpool3d(v[0], tensor::tensor(i).reshape({1, 2, 1, 2, 2}), {1, 3, 4}, {1, 1, 1}, {0, 0, 0}); }, {{1, 2, 1, 2, 2}}},
      {"fractional_max_pool2d", [](const V& v) { return std::get<0>(tensor::fractional_max_pool2d(v[0], {3, 2}, {3, 4}, tensor::tensor({0.3, 0.7, 0.1, 0.9}, kFloat64).reshape({1, 2, 2}))); }, {{1, 2, 5, 6}}, true, {"fractional_max_pool2d", "fractional_max_pool2d_backward"}},
      {"fractional_max_pool3d", [](const V& v) { return std::get<0>(tensor::fractional_max_pool3d(v[0], {2, 2, 2}, {2, 2, 3}, tensor::tensor({0.3, 0.7, 0.1, 0.9, 0.5, 0.2}, kFloat64).reshape({1, 2, 3}))); }, {{1, 2, 4, 3, 5}}, true, {"fractional_max_pool3d", "fractional_max_pool3d_backward"}},
      {"max_pool3d_with_indices", [](const V& v) { return std::get<0>(tensor::max_pool3d_with_indices(v[0], {2, 3, 2}, {1, 2, 1}, {1, 1, 0}, 1, true)); }, {{1, 2, 3, 4, 3}}, true, {"max_pool3d_with_indices", "max_pool2d_backward"}},
      // Composites (their names are no dispatcher ops) also name the op they run on, so that the
      // CUDA mode of the table knows whether it has a kernel.
      {"max_pool3d (unbatched)", [](const V& v) { return tensor::max_pool3d(v[0], 2, 1); }, {{2, 3, 3, 4}}, true, {"max_pool3d", "max_pool3d_with_indices"}},
      {"adaptive_max_pool3d", [](const V& v) { return std::get<0>(tensor::adaptive_max_pool3d(v[0], {2, 3, 2})); }, {{1, 2, 3, 5, 4}}, true, {"adaptive_max_pool3d", "max_pool2d_backward"}},
      {"adaptive_max_pool2d", [](const V& v) { return std::get<0>(tensor::adaptive_max_pool2d(v[0], {3, 2})); }, {{2, 5, 4}}, true, {"adaptive_max_pool2d", "adaptive_max_pool3d"}},
      {"avg_pool3d", [](const V& v) { return tensor::avg_pool3d(v[0], 3, 2, 1, true, false); }, {{1, 2, 4, 5, 3}}, true, {"avg_pool3d", "avg_pool2d"}},
      {"adaptive_avg_pool3d", [](const V& v) { return tensor::adaptive_avg_pool3d(v[0], {2, 3, 2}); }, {{1, 2, 3, 5, 4}}, true, {"adaptive_avg_pool3d", "adaptive_avg_pool2d"}},
      {"batch_norm (training)", [](const V& v) { return tensor::batch_norm(v[0], v[1], v[2], std::nullopt, std::nullopt, true, 0.1, 1e-5); }, {{4, 3, 2, 2}, {3}, {3}}},
      {"layer_norm", [](const V& v) { return tensor::layer_norm(v[0], {4}, v[1], v[2]); }, {{3, 2, 4}, {4}, {4}}},
      {"group_norm", [](const V& v) { return tensor::group_norm(v[0], 2, v[1], v[2]); }, {{2, 4, 3}, {4}, {4}}},
      {"softmax", [](const V& v) { return tensor::softmax(v[0], 1); }, {{3, 4}}},
      {"log_softmax", [](const V& v) { return tensor::log_softmax(v[0], 0); }, {{3, 4}}},
      {"cross_entropy", [](const V& v) { return F::cross_entropy(v[0], on(v, tensor::tensor({1, 0, 3}))); }, {{3, 4}}},
      {"mse_loss", [](const V& v) { return F::mse_loss(v[0], v[1]); }, {{3, 4}, {3, 4}}},
      // First order only: _ctc_loss_backward is not differentiable (as libtorch's). Unnormalized
      // log_probs: the node's gradient is the exact derivative (Note [CTC gradient]).
      {"_ctc_loss", [](const V& v) { return std::get<0>(tensor::_ctc_loss(v[0], tensor::tensor({{1, 1, 2}, {2, 0, 0}}), {5, 4}, {3, 1})); }, {{5, 2, 3}}, false},
      {"scaled_dot_product_attention", [](const V& v) { return F::scaled_dot_product_attention(v[0], v[1], v[2], {}, 0.0, true); }, {{2, 3, 4}, {2, 3, 4}, {2, 3, 2}}},
      // The fused op (first order: its fused backward; second: the node's differentiable formula).
      {"_scaled_dot_product_flash_attention_for_cpu (causal, L != S)", [](const V& v) { return std::get<0>(tensor::_scaled_dot_product_flash_attention_for_cpu(v[0], v[1], v[2], 0.0, true)); }, {{1, 2, 4, 3}, {1, 2, 5, 3}, {1, 2, 5, 2}}},
      {"_scaled_dot_product_flash_attention_for_cpu (float mask, scale)", [](const V& v) { return std::get<0>(tensor::_scaled_dot_product_flash_attention_for_cpu(v[0], v[1], v[2], 0.0, false, tensor::linspace(-1.0, 1.0, 12, TensorOptions(kFloat64)).view({3, 4}), 0.7)); }, {{2, 1, 3, 2}, {2, 1, 4, 2}, {2, 1, 4, 3}}},
  };
}

}  // namespace tensor::optable
