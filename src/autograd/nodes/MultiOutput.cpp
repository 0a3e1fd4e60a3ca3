// Hand-written nodes of the multi-output ops (Note [Hand-written nodes] in Views.cpp): the
// recording template (src/autograd/Record.h) makes nodes for ops with one result only, so the
// ops below, which return several tensors (values and indices, or output and statistics),
// record their node by hand. Each section says what its node does with the outputs.
#include <algorithm>
#include <cmath>
#include <limits>

#include "src/autograd/Functions.h"
#include "src/autograd/PoolNormFormulas.h"
#include "src/autograd/ReduceFormulas.h"
#include "src/ops/AttentionOps.h"
#include "src/ops/ReduceOps.h"
#include "src/ops/SortOps.h"
#include "tensor/linalg.h"
#include "tensor/normalization.h"
#include "tensor/ops.h"

namespace tensor::autograd {

namespace {
using ops::NormResult;
using ops::pool_norm_ops;

bool should_record(const Tensor& out, std::initializer_list<const Tensor*> inputs) {
  return is_differentiable(out.dtype()) && any_requires_grad(inputs);
}
}  // namespace

// ---- hand-written: multi-output ----
// max(dim) and min(dim) return (values, indices): the recording template makes nodes for
// single-output ops only (Note [Recording template]), so these record their node by hand. The
// values get the gradient at the returned indices; the indices are not differentiable.
namespace {

template <bool IsMax>
std::tuple<Tensor, Tensor> ag_minmax_dim(const Tensor& x, int64_t dim, bool keepdim) {
  std::tuple<Tensor, Tensor> r;
  {
    BelowAutograd below;
    r = IsMax ? ops::reduce_ops().max_dim(x, dim, keepdim) : ops::reduce_ops().min_dim(x, dim, keepdim);
  }
  const Tensor& values = std::get<0>(r);
  if (!is_differentiable(values.dtype()) || !any_requires_grad({&x})) return r;
  // saved: indices; ints: dim; scalars: keepdim.
  auto node = std::make_shared<FormulaNode>(IsMax ? "MaxBackward0" : "MinBackward0", TENSOR_GRAD(
      const InputMeta& m = n.input_meta(0);
      if (m.sizes.empty()) return {g};
      const int64_t d = n.ints[0];
      const bool keepdim = n.scalars[0].to_bool();
      Tensor idx = n.saved(0);
      DimVector shape(m.sizes.size(), 1);
      shape[d] = m.sizes[d];
      Tensor pos = arange(m.sizes[d], TensorOptions(kInt64).device(g.device())).view(shape);
      Tensor mask = pos.eq(keepdim ? idx : idx.unsqueeze(d)).to(g.dtype());
      return {(keepdim ? g : g.unsqueeze(d)) * mask};));
  node->add_input(x);
  node->save(std::get<1>(r));
  node->ints.push_back(reduce_formulas::wrap_dim(dim, x.dim()));
  node->scalars.push_back(keepdim);
  set_history(values, node, 0);
  return r;
}

}  // namespace

static void register_reduce_nodes() {
  auto& r = ops::reduce_ops();
  r.max_dim.set(DispatchKey::Autograd, &ag_minmax_dim<true>);
  r.min_dim.set(DispatchKey::Autograd, &ag_minmax_dim<false>);
}


// ---- sort and topk ----
// Derivatives of sort and topk (see Note [Derivatives table]): the values are elements of the
// input picked by the returned positions, so their gradient is scattered back to those
// positions (PyTorch's value_selecting_reduction_backward); the positions are distinct within
// a slice. scatter_add is differentiable in its src (its gradient is a gather), so double
// backward works. The indices get no gradient.
namespace {


// saved: indices; ints: the wrapped dim.
BackwardFn select_backward() {
  return TENSOR_GRAD(
      const InputMeta& m = n.input_meta(0);
      if (m.sizes.empty()) return {g};
      return {zeros(m.sizes, TensorOptions(g.dtype()).device(g.device())).scatter_add(n.ints[0], n.saved(0), g)};);
}

std::tuple<Tensor, Tensor> record(const char* name, const Tensor& x, int64_t dim, std::tuple<Tensor, Tensor> r) {
  const Tensor& values = std::get<0>(r);
  if (!is_differentiable(values.dtype()) || !any_requires_grad({&x})) return r;
  auto node = std::make_shared<FormulaNode>(name, select_backward());
  node->add_input(x);
  node->save(std::get<1>(r));
  // The kernel has validated dim already.
  node->ints.push_back(x.dim() == 0 ? 0 : (dim < 0 ? dim + x.dim() : dim));
  set_history(values, node, 0);
  return r;
}

std::tuple<Tensor, Tensor> ag_sort(const Tensor& x, int64_t dim, bool descending) {
  std::tuple<Tensor, Tensor> r;
  {
    BelowAutograd below;
    r = ops::sort_ops().sort(x, dim, descending);
  }
  return record("SortBackward0", x, dim, std::move(r));
}

std::tuple<Tensor, Tensor> ag_topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
  std::tuple<Tensor, Tensor> r;
  {
    BelowAutograd below;
    r = ops::sort_ops().topk(x, k, dim, largest, sorted);
  }
  return record("TopkBackward0", x, dim, std::move(r));
}


}  // namespace

static void register_sort_nodes() {
  auto& s = ops::sort_ops();
  s.sort.set(DispatchKey::Autograd, &ag_sort);
  s.topk.set(DispatchKey::Autograd, &ag_topk);
}


// ---- hand-written: in-place / multi-output ----
// max_pool2d_with_indices returns (output, indices) and the normalizations (output, mean, var):
// the recording template (Record.h) only makes nodes for ops with one result. max_pool2d has one
// result, but recorded it must run another op (max_pool2d_with_indices, for the indices its
// backward needs) than the one it runs without autograd (oneDNN's kernel, no indices), while the
// template always runs the op itself; its node is max_pool2d_with_indices' node, as in PyTorch.
// (avg_pool2d, adaptive_avg_pool2d, their backward ops and max_pool2d_backward are rows of
// Derivatives.cpp.)
namespace {

// ---- max_pool2d ----
std::tuple<Tensor, Tensor> ag_max_pool2d_with_indices(const Tensor& x, IntArrayRef k, IntArrayRef s, IntArrayRef p,
                                                      IntArrayRef d, bool ceil_mode) {
  std::tuple<Tensor, Tensor> r;
  {
    BelowAutograd below;
    r = pool_norm_ops().max_pool2d_with_indices(x, k, s, p, d, ceil_mode);
  }
  const Tensor& out = std::get<0>(r);
  if (!should_record(out, {&x})) return r;
  auto node = std::make_shared<FormulaNode>("MaxPool2DWithIndicesBackward0", TENSOR_GRAD(
      return {pool_norm_ops().max_pool2d_backward(g, n.input_meta(0).sizes, n.saved(0))};));
  node->add_input(x);
  node->save(std::get<1>(r));
  set_history(out, node);
  return r;
}

// Without autograd max_pool2d takes oneDNN's kernel; recorded, it needs the indices.
Tensor ag_max_pool2d(const Tensor& x, IntArrayRef k, IntArrayRef s, IntArrayRef p, IntArrayRef d, bool ceil_mode) {
  if (!GradMode::is_enabled() || !x.requires_grad()) {
    BelowAutograd below;
    return pool_norm_ops().max_pool2d(x, k, s, p, d, ceil_mode);
  }
  return std::get<0>(ag_max_pool2d_with_indices(x, k, s, p, d, ceil_mode));
}

// ---- max_pool3d_with_indices, adaptive_max_pool3d ----
// (values, indices) as max_pool2d_with_indices: the values get the gradient scattered to the
// indices, flat over each plane's D * H * W, which is max_pool2d_backward on (..., 1, D * H * W)
// views (Note [3-d pooling by composition] in src/ops/PoolNormOps.cpp); that op's row makes
// the scatter differentiable.
Tensor max_pool_planes_backward(const Tensor& g, IntArrayRef in_sizes, const Tensor& idx) {
  const int64_t nd = static_cast<int64_t>(in_sizes.size());
  const int64_t in_plane = in_sizes[nd - 3] * in_sizes[nd - 2] * in_sizes[nd - 1];
  DimVector in2, out2;  // the batch dims, if any, and the channels
  for (int64_t d = 0; d < nd - 3; ++d) in2.push_back(in_sizes[d]), out2.push_back(in_sizes[d]);
  in2.push_back(1), in2.push_back(in_plane);
  out2.push_back(1), out2.push_back(idx.size(-3) * idx.size(-2) * idx.size(-1));
  return pool_norm_ops().max_pool2d_backward(g.reshape(out2), in2, idx.reshape(out2)).reshape(in_sizes);
}

template <class Run>
std::tuple<Tensor, Tensor> record_max_pool3d(const char* name, const Tensor& x, Run run) {
  std::tuple<Tensor, Tensor> r;
  {
    BelowAutograd below;
    r = run();
  }
  const Tensor& out = std::get<0>(r);
  if (!should_record(out, {&x})) return r;
  auto node = std::make_shared<FormulaNode>(name, TENSOR_GRAD(
      return {max_pool_planes_backward(g, n.input_meta(0).sizes, n.saved(0))};));
  node->add_input(x);
  node->save(std::get<1>(r));
  set_history(out, node);
  return r;
}

std::tuple<Tensor, Tensor> ag_max_pool3d_with_indices(const Tensor& x, IntArrayRef k, IntArrayRef s, IntArrayRef p,
                                                      IntArrayRef d, bool ceil_mode) {
  return record_max_pool3d("MaxPool3DWithIndicesBackward0", x,
                           [&] { return pool_norm_ops().max_pool3d_with_indices(x, k, s, p, d, ceil_mode); });
}

std::tuple<Tensor, Tensor> ag_adaptive_max_pool3d(const Tensor& x, IntArrayRef output_size) {
  return record_max_pool3d("AdaptiveMaxPool3DBackward0", x,
                           [&] { return pool_norm_ops().adaptive_max_pool3d(x, output_size); });
}

// ---- normalization: the differentiable composite (Note [Fast and differentiable ...]) ----
/// gx for statistics over `dims` (keepdim), given gxhat, xhat and invstd (all broadcastable).
Tensor norm_input_grad(const Tensor& gxhat, const Tensor& xhat, const Tensor& invstd, IntArrayRef dims) {
  return invstd * (gxhat - gxhat.mean(dims, true) - xhat * (gxhat * xhat).mean(dims, true));
}

/// Sum over `dims`, where an empty list means none (unlike sum(), where it means all).
Tensor sum_over(const Tensor& t, IntArrayRef dims) { return dims.empty() ? t : t.sum(dims); }

/// xhat and invstd of x over `dims`, recomputed with public ops (biased variance).
std::pair<Tensor, Tensor> normalize(const Tensor& x, IntArrayRef dims, double eps) {
  Tensor xc = x - x.mean(dims, true);
  Tensor invstd = ((xc * xc).mean(dims, true) + eps).rsqrt();
  return {xc * invstd, invstd};
}

/// (1, C, 1, ...) for broadcasting per-channel vectors against x.
DimVector channel_shape(int64_t ndim, int64_t c) {
  DimVector s(static_cast<size_t>(ndim), 1);
  s[1] = c;
  return s;
}

Tensor like_grad(const Tensor& t, const Tensor& g) { return t.defined() && t.dtype() != g.dtype() ? t.to(g.dtype()) : t; }

/// The common tail of the normalizations' kernels: edges to (x, w, b), saves x, w and the
/// forward's mean and var (in that order, as the formulas read them), and sets the history.
const NormResult& record_norm(const std::shared_ptr<FormulaNode>& node, const NormResult& r, const Tensor& x,
                              const Tensor& w, const Tensor& b) {
  node->add_input(x);
  node->add_input(w);
  node->add_input(b);
  node->save(x);
  node->save(w);
  node->save(std::get<1>(r));
  node->save(std::get<2>(r));
  set_history(std::get<0>(r), node);
  return r;
}

// saved: input, weight, mean, var; scalars: training, eps.
NormResult ag_batch_norm(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& rm, const Tensor& rv,
                         bool training, double momentum, double eps) {
  NormResult r;
  {
    BelowAutograd below;
    r = pool_norm_ops().batch_norm(x, w, b, rm, rv, training, momentum, eps);
  }
  const Tensor& out = std::get<0>(r);
  if (!should_record(out, {&x, &w, &b})) return r;
  auto node = std::make_shared<FormulaNode>("NativeBatchNormBackward0", TENSOR_GRAD(
      Tensor x = n.saved(0), w = n.saved(1), mean = n.saved(2), var = n.saved(3);
      const bool training = n.scalars[0].to_bool();
      const double eps = n.scalars[1].to_double();
      if (!GradMode::is_enabled()) {
        auto [gx, gw, gb] = pool_norm_ops().batch_norm_backward(g, x, w, mean, var, training, eps);
        return {gx, gw, gb};
      }
      x = like_grad(x, g);
      w = like_grad(w, g);
      const DimVector cs = channel_shape(x.dim(), x.size(1));
      DimVector dims;
      for (int64_t d = 0; d < x.dim(); ++d)
        if (d != 1) dims.push_back(d);
      Tensor xhat, invstd;
      if (training) {
        std::tie(xhat, invstd) = normalize(x, dims, eps);
      } else {
        invstd = (var.to(g.dtype()).view(cs) + eps).rsqrt();
        xhat = (x - mean.to(g.dtype()).view(cs)) * invstd;
      }
      Tensor gxhat = w.defined() ? g * w.view(cs) : g;
      Tensor gx;
      if (n.needs_input_grad(0)) gx = training ? norm_input_grad(gxhat, xhat, invstd, dims) : gxhat * invstd;
      Tensor gw = n.needs_input_grad(1) ? (g * xhat).sum(dims) : Tensor();
      Tensor gb = n.needs_input_grad(2) ? g.sum(dims) : Tensor();
      return {gx, gw, gb};));
  node->scalars = {Scalar(training), Scalar(eps)};
  return record_norm(node, r, x, w, b);
}

// saved: input, weight, mean, var; ints: normalized_shape; scalars: eps.
NormResult ag_layer_norm(const Tensor& x, IntArrayRef ns, const Tensor& w, const Tensor& b, double eps) {
  NormResult r;
  {
    BelowAutograd below;
    r = pool_norm_ops().layer_norm(x, ns, w, b, eps);
  }
  const Tensor& out = std::get<0>(r);
  if (!should_record(out, {&x, &w, &b})) return r;
  auto node = std::make_shared<FormulaNode>("NativeLayerNormBackward0", TENSOR_GRAD(
      Tensor x = n.saved(0), w = n.saved(1);
      const double eps = n.scalars[0].to_double();
      if (!GradMode::is_enabled()) {
        auto [gx, gw, gb] = pool_norm_ops().layer_norm_backward(g, x, n.ints, w, n.saved(2), n.saved(3), eps);
        return {gx, gw, gb};
      }
      x = like_grad(x, g);
      w = like_grad(w, g);
      const int64_t k = static_cast<int64_t>(n.ints.size());
      DimVector norm_dims, lead_dims;
      for (int64_t d = 0; d < x.dim(); ++d) (d >= x.dim() - k ? norm_dims : lead_dims).push_back(d);
      auto [xhat, invstd] = normalize(x, norm_dims, eps);
      Tensor gxhat = w.defined() ? g * w : g;
      Tensor gx = n.needs_input_grad(0) ? norm_input_grad(gxhat, xhat, invstd, norm_dims) : Tensor();
      Tensor gw = n.needs_input_grad(1) ? sum_over(g * xhat, lead_dims) : Tensor();
      Tensor gb = n.needs_input_grad(2) ? sum_over(g, lead_dims) : Tensor();
      return {gx, gw, gb};));
  node->ints = DimVector(ns);
  node->scalars = {Scalar(eps)};
  return record_norm(node, r, x, w, b);
}

// saved: input, weight, mean, var; ints: num_groups; scalars: eps.
NormResult ag_group_norm(const Tensor& x, int64_t groups, const Tensor& w, const Tensor& b, double eps) {
  NormResult r;
  {
    BelowAutograd below;
    r = pool_norm_ops().group_norm(x, groups, w, b, eps);
  }
  const Tensor& out = std::get<0>(r);
  if (!should_record(out, {&x, &w, &b})) return r;
  auto node = std::make_shared<FormulaNode>("NativeGroupNormBackward0", TENSOR_GRAD(
      Tensor x = n.saved(0), w = n.saved(1);
      const int64_t groups = n.ints[0];
      const double eps = n.scalars[0].to_double();
      if (!GradMode::is_enabled()) {
        auto [gx, gw, gb] = pool_norm_ops().group_norm_backward(g, x, groups, w, n.saved(2), n.saved(3), eps);
        return {gx, gw, gb};
      }
      x = like_grad(x, g);
      w = like_grad(w, g);
      const int64_t nb = x.size(0);
      const DimVector cs = channel_shape(x.dim(), x.size(1));
      DimVector other;  // every dim but the channels
      for (int64_t d = 0; d < x.dim(); ++d)
        if (d != 1) other.push_back(d);
      const int64_t grouped_dim = 2;
      auto [xhat_g, invstd] = normalize(x.reshape({nb, groups, -1}), IntArrayRef(grouped_dim), eps);
      Tensor xhat = xhat_g.reshape(x.sizes());
      Tensor gx;
      if (n.needs_input_grad(0)) {
        Tensor gxhat = (w.defined() ? g * w.view(cs) : g).reshape({nb, groups, -1});
        gx = norm_input_grad(gxhat, xhat_g, invstd, IntArrayRef(grouped_dim)).reshape(x.sizes());
      }
      Tensor gw = n.needs_input_grad(1) ? (g * xhat).sum(other) : Tensor();
      Tensor gb = n.needs_input_grad(2) ? g.sum(other) : Tensor();
      return {gx, gw, gb};));
  node->ints = {groups};
  node->scalars = {Scalar(eps)};
  return record_norm(node, r, x, w, b);
}


}  // namespace

static void register_pool_norm_nodes() {
  auto& t = ops::pool_norm_ops();
  t.max_pool2d.set(DispatchKey::Autograd, &ag_max_pool2d);
  t.max_pool2d_with_indices.set(DispatchKey::Autograd, &ag_max_pool2d_with_indices);
  t.batch_norm.set(DispatchKey::Autograd, &ag_batch_norm);
  t.layer_norm.set(DispatchKey::Autograd, &ag_layer_norm);
  t.group_norm.set(DispatchKey::Autograd, &ag_group_norm);
  t.max_pool3d_with_indices.set(DispatchKey::Autograd, &ag_max_pool3d_with_indices);
  t.adaptive_max_pool3d.set(DispatchKey::Autograd, &ag_adaptive_max_pool3d);
}


// ---- fused attention ----
// _scaled_dot_product_flash_attention_for_cpu returns (output, logsumexp); the output gets the
// node, the logsumexp is not differentiable. Without create_graph the node runs the fused
// backward op (Note [Flash attention on CPU]); with it, the same gradients as public ops
// (P recomputed by softmax), so that double backward works. attn_mask gets no gradient: the
// public composite sends a mask that requires grad to the math path, and a direct call errs.
namespace {

// The scores of (q, k) as public ops: (q * scale) k^T plus the mask or the causal -inf.
Tensor attention_scores(const Tensor& q, const Tensor& k, const Tensor& mask, bool causal, double scale) {
  Tensor s = matmul(q * scale, k.transpose(-2, -1));
  constexpr double ninf = -std::numeric_limits<double>::infinity();
  if (mask.defined()) {
    s = mask.scalar_type() == kBool ? s.masked_fill(mask.logical_not(), ninf) : s + mask.to(s.dtype());
  } else if (causal) {
    const int64_t L = q.size(-2), S = k.size(-2);
    Tensor above = arange(S, TensorOptions(kInt64).device(q.device())).unsqueeze(0) >
                   arange(L, TensorOptions(kInt64).device(q.device())).unsqueeze(1);
    s = s.masked_fill(above, ninf);
  }
  return s;
}

// saved: query, key, value, output, logsumexp, attn_mask; scalars: is_causal, scale.
std::tuple<Tensor, Tensor> ag_flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, double dropout_p,
                                              bool is_causal, const Tensor& mask, std::optional<double> scale) {
  TENSOR_CHECK(!(mask.defined() && mask.requires_grad() && GradMode::is_enabled()),
               "_scaled_dot_product_flash_attention_for_cpu: attn_mask {} requires grad, but the fused kernel gives "
               "no gradient for the mask (scaled_dot_product_attention's math backend does)",
               mask.describe());
  std::tuple<Tensor, Tensor> r;
  {
    BelowAutograd below;
    r = ops::attention_ops().flash(q, k, v, dropout_p, is_causal, mask, scale);
  }
  const Tensor& out = std::get<0>(r);
  if (!should_record(out, {&q, &k, &v})) return r;
  auto node = std::make_shared<FormulaNode>("ScaledDotProductFlashAttentionForCpuBackward0", TENSOR_GRAD(
      Tensor q = n.saved(0), k = n.saved(1), v = n.saved(2), mask = n.saved(5);
      const bool causal = n.scalars[0].to_bool();
      const double scale = n.scalars[1].to_double();
      if (!GradMode::is_enabled()) {
        auto [gq, gk, gv] = ops::attention_ops().flash_backward(g, q, k, v, n.saved(3), n.saved(4), 0.0, causal,
                                                                mask, scale);
        return {gq, gk, gv};
      }
      Tensor p = softmax(attention_scores(q, k, mask, causal, scale), -1);
      Tensor dp = matmul(g, v.transpose(-2, -1));
      Tensor ds = p * (dp - (p * dp).sum({-1}, true));  // D = rowsum(dO * O) = rowsum(P * dP)
      Tensor gq = n.needs_input_grad(0) ? matmul(ds, k) * scale : Tensor();
      Tensor gk = n.needs_input_grad(1) ? matmul(ds.transpose(-2, -1), q) * scale : Tensor();
      Tensor gv = n.needs_input_grad(2) ? matmul(p.transpose(-2, -1), g) : Tensor();
      return {gq, gk, gv};));
  node->add_input(q);
  node->add_input(k);
  node->add_input(v);
  node->save(q);
  node->save(k);
  node->save(v);
  node->save(out, /*is_output=*/true);
  node->save(std::get<1>(r));
  node->save(mask);
  node->scalars = {Scalar(is_causal), Scalar(scale.value_or(1.0 / std::sqrt(static_cast<double>(q.size(-1)))))};
  set_history(out, node);
  return r;
}

}  // namespace

void register_multi_output_nodes() {
  ops::attention_ops().flash.set(DispatchKey::Autograd, &ag_flash_attention);
  register_reduce_nodes();
  register_sort_nodes();
  register_pool_norm_nodes();
}

}  // namespace tensor::autograd
