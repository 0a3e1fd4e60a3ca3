// Front ends of the fused attention ops (src/ops/AttentionOps.h): libtorch's argument rules for
// _scaled_dot_product_flash_attention_for_cpu and its backward, checks that name the op, the
// shapes and dtypes, the outputs' allocation (Meta stops there), then CPU's kernel
// (kernels/cpu/FlashAttentionKernels.cpp). Recorded by a hand-written node
// (src/autograd/nodes/MultiOutput.cpp) whose backward is the fused backward.
#include "src/ops/AttentionOps.h"

#include <cmath>
#include <limits>

#include "kernels/cpu/FlashAttentionKernels.h"
#include "src/core/Check.h"
#include "src/dispatch/BackendKernels.h"
#include "tensor/nn/attention.h"
#include "tensor/ops.h"

namespace tensor::ops {
namespace {

using detail::shape_str;
using FlashKernel = decltype(&cpu::flash_attention_kernel);
using FlashBwdKernel = decltype(&cpu::flash_attention_backward_kernel);
dispatch::BackendKernels<FlashKernel> g_flash{{&cpu::flash_attention_kernel, nullptr}};
dispatch::BackendKernels<FlashBwdKernel> g_flash_backward{{&cpu::flash_attention_backward_kernel, nullptr}};

constexpr const char* kFwd = "_scaled_dot_product_flash_attention_for_cpu";
constexpr const char* kBwd = "_scaled_dot_product_flash_attention_for_cpu_backward";

ScalarType opmath_dtype(ScalarType t) { return t == kFloat64 ? kFloat64 : kFloat32; }

struct Geometry {
  int64_t B, H, L, S, E, Ev;
  double scale;
};

// The checks shared by the forward and the backward.
Geometry check_inputs(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                      double dropout_p, bool is_causal, std::optional<double> scale) {
  TENSOR_CHECK(q.defined() && k.defined() && v.defined(), "{}: query, key and value must be defined", op);
  TENSOR_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4,
               "{}: expected 4-D query [B, H, L, E], key [B, H, S, E] and value [B, H, S, Ev], got query {}, key "
               "{}, value {}",
               op, q.describe(), k.describe(), v.describe());
  const ScalarType t = q.scalar_type();
  TENSOR_CHECK((t == kFloat32 || t == kFloat64 || t == kBFloat16 || t == kFloat16) && k.scalar_type() == t &&
                   v.scalar_type() == t,
               "{}: query, key and value must share one dtype among float32, float64, bfloat16 and float16, got "
               "query {}, key {}, value {}",
               op, q.describe(), k.describe(), v.describe());
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), E = q.size(3), S = k.size(2), Ev = v.size(3);
  TENSOR_CHECK(k.size(0) == B && v.size(0) == B && k.size(1) == H && v.size(1) == H && k.size(3) == E &&
                   v.size(2) == S,
               "{}: expected query [B, H, L, E], key [B, H, S, E] and value [B, H, S, Ev] (one B and H, no "
               "broadcasting), got query {}, key {}, value {}",
               op, q.describe(), k.describe(), v.describe());
  TENSOR_CHECK(dropout_p == 0.0,
               "{}: dropout_p = {} is not supported by the fused CPU kernel (only 0); the math backend of "
               "scaled_dot_product_attention supports dropout",
               op, dropout_p);
  TENSOR_CHECK(!(is_causal && mask.defined()), "{}: pass either attn_mask or is_causal, not both (attn_mask {})", op,
               mask.describe());
  if (mask.defined()) {
    TENSOR_CHECK(mask.scalar_type() == kBool || mask.is_floating_point(),
                 "{}: attn_mask must be bool or floating point, got {}", op, mask.describe());
    const int64_t full[4] = {B, H, L, S};
    bool ok = mask.dim() <= 4;
    for (int64_t i = 0; ok && i < mask.dim(); ++i) {
      const int64_t m = mask.size(mask.dim() - 1 - i), f = full[3 - i];
      ok = m == f || m == 1;
    }
    TENSOR_CHECK(ok, "{}: attn_mask {} does not broadcast to [B, H, L, S] = {} (query {}, key {})", op,
                 mask.describe(), shape_str(full), q.describe(), k.describe());
  }
  return {B, H, L, S, E, Ev, scale.value_or(1.0 / std::sqrt(static_cast<double>(E)))};
}

// The mask as an additive opmath tensor viewed as [B, H, L, S] (broadcast dims stride 0): a bool
// mask says where to attend (false -> -inf). Converted at its own size, never the full one.
Tensor additive_mask(const Tensor& mask, ScalarType dtype, const Geometry& g) {
  if (!mask.defined()) return mask;
  Tensor m = mask.scalar_type() == kBool
                 ? zeros(mask.sizes(), mask.options().dtype(opmath_dtype(dtype)))
                       .masked_fill(mask.logical_not(), -std::numeric_limits<double>::infinity())
                 : mask.to(opmath_dtype(dtype));
  return m.expand({g.B, g.H, g.L, g.S});
}

template <DispatchKey K>
std::tuple<Tensor, Tensor> flash_fn(const Tensor& q, const Tensor& k, const Tensor& v, double dropout_p,
                                    bool is_causal, const Tensor& mask, std::optional<double> scale) {
  const FlashKernel kernel = g_flash.get<K>(kFwd);
  const Geometry g = check_inputs(kFwd, q, k, v, mask, dropout_p, is_causal, scale);
  Tensor out = empty({g.B, g.H, g.L, g.Ev}, q.options());
  Tensor lse = empty({g.B, g.H, g.L}, q.options().dtype(opmath_dtype(q.scalar_type())));
  if constexpr (K != DispatchKey::Meta) {
    if (out.numel() == 0 && lse.numel() == 0) return {out, lse};
    if (g.S == 0) {  // no keys: the math path's empty softmax times an empty value is 0
      out.zero_();
      lse.fill_(-std::numeric_limits<double>::infinity());
      return {out, lse};
    }
    kernel(q, k, v, additive_mask(mask, q.scalar_type(), g), is_causal, g.scale, out, lse);
  }
  return {out, lse};
}

template <DispatchKey K>
std::tuple<Tensor, Tensor, Tensor> flash_backward_fn(const Tensor& grad_out, const Tensor& q, const Tensor& k,
                                                     const Tensor& v, const Tensor& out, const Tensor& lse,
                                                     double dropout_p, bool is_causal, const Tensor& mask,
                                                     std::optional<double> scale) {
  const FlashBwdKernel kernel = g_flash_backward.get<K>(kBwd);
  const Geometry g = check_inputs(kBwd, q, k, v, mask, dropout_p, is_causal, scale);
  const std::vector<int64_t> out_sizes = {g.B, g.H, g.L, g.Ev};
  TENSOR_CHECK(grad_out.defined() && out.defined() && grad_out.sizes() == IntArrayRef(out_sizes) &&
                   out.sizes() == IntArrayRef(out_sizes) && grad_out.scalar_type() == q.scalar_type() &&
                   out.scalar_type() == q.scalar_type(),
               "{}: grad_out and out must be {} of query's dtype, got grad_out {}, out {} (query {}, value {})", kBwd,
               shape_str(out_sizes), grad_out.describe(), out.describe(), q.describe(), v.describe());
  const std::vector<int64_t> lse_sizes = {g.B, g.H, g.L};
  TENSOR_CHECK(lse.defined() && lse.sizes() == IntArrayRef(lse_sizes) &&
                   lse.scalar_type() == opmath_dtype(q.scalar_type()) && lse.is_contiguous(),
               "{}: logsumexp must be a contiguous [B, H, L] = {} of dtype {}, got {}", kBwd,
               shape_str(lse_sizes), opmath_dtype(q.scalar_type()), lse.describe());
  Tensor gq = empty(q.sizes(), q.options()), gk = empty(k.sizes(), k.options()), gv = empty(v.sizes(), v.options());
  if constexpr (K != DispatchKey::Meta) {
    if (g.L == 0 || g.S == 0) {
      gq.zero_();
      gk.zero_();
      gv.zero_();
      return {gq, gk, gv};
    }
    kernel(grad_out, q, k, v, out, lse, additive_mask(mask, q.scalar_type(), g), is_causal, g.scale, gq, gk, gv);
  }
  return {gq, gk, gv};
}

AttentionOpDefs g_attention = {
    TENSOR_FRONT_END_DEF(FlashAttnFn, kFwd, flash_fn),
    TENSOR_FRONT_END_DEF(FlashAttnBwdFn, kBwd, flash_backward_fn),
};

}  // namespace

AttentionOpDefs& attention_ops() { return g_attention; }

}  // namespace tensor::ops

namespace tensor {

std::tuple<Tensor, Tensor> _scaled_dot_product_flash_attention_for_cpu(const Tensor& query, const Tensor& key,
                                                                       const Tensor& value, double dropout_p,
                                                                       bool is_causal,
                                                                       const std::optional<Tensor>& attn_mask,
                                                                       std::optional<double> scale) {
  return ops::attention_ops().flash(query, key, value, dropout_p, is_causal, attn_mask ? *attn_mask : Tensor(),
                                    scale);
}

std::tuple<Tensor, Tensor, Tensor> _scaled_dot_product_flash_attention_for_cpu_backward(
    const Tensor& grad_out, const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& out,
    const Tensor& logsumexp, double dropout_p, bool is_causal, const std::optional<Tensor>& attn_mask,
    std::optional<double> scale) {
  return ops::attention_ops().flash_backward(grad_out, query, key, value, out, logsumexp, dropout_p, is_causal,
                                             attn_mask ? *attn_mask : Tensor(), scale);
}

}  // namespace tensor
