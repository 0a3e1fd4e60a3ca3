// The per-op sweep (bench_ops --sweep): which ops it times, at which sizes, and the names of its
// cases. Shared by bench_sweep.cpp (libtensor) and torch_sweep.cpp (the twins of both libtorch
// peers), so the two sides cannot drift apart. Includes no tensor or torch header.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/OpList.h"

namespace bench::sweep {

// Note [Op sweep]
// As ggml's test-backend-ops perf mode, the sweep times every op of the library alone, rather
// than the handful of TARGETS.md cases, so that a slow kernel cannot hide behind a fast one:
//   - the elementwise ops come from the op list itself (TENSOR_UNARY_OPS and TENSOR_BINARY_OPS
//     in kernels/OpList.h), so a new op gets its four cases (16M and 4K elements, fresh output
//     and out=) without anyone editing the sweep. The api column picks the spelling by token
//     pasting (SWEEP_UNARY_<api>): Full, Fn and Alpha ops are public as tensor::name and
//     tensor::name_out, and so are they in libtorch; Internal ops are reached through another
//     op and spelled so in SWEEP_INTERNAL_<Enum> below (one missing there fails the build);
//   - every other op (reductions, softmax, layer_norm, the losses, indexing) is a row of
//     TENSOR_SWEEP_OPS below, one expression written once for both libraries: `NS` is `tensor`
//     or `torch` and the inputs are named alike, so the row is the twin's source too. Those ops
//     have no out= form in libtensor, so they run fresh only.
// Float32 inputs in (0.1, 0.9), valid for every op's domain (log, sqrt, asin, pow, fmod ...) so
// that no case times NaN paths; integer-only ops (bitwise_*) take int32 in [0, 1000).
// 16M elements are a [4096, 4096] tensor where an op needs rows, 4K a [64, 64] one: 16M streams
// from memory, 4K stays in L1 and measures the fixed cost per call.
constexpr int64_t kBigRows = 4096, kSmallRows = 64;  // square: rows x rows elements

/// The case name of an op at a size: "sweep:exp_16M", "sweep:exp_4K_out".
inline std::string case_name(const std::string& op, bool big, bool out) {
  return "sweep:" + op + (big ? "_16M" : "_4K") + (out ? "_out" : "");
}
/// Timed batches and calls per batch: 16M calls take milliseconds, 4K calls microseconds.
constexpr int kReps = 11;
inline int inner_calls(bool big) { return big ? 1 : 200; }

// Rows: X(name, bytes, expr)
//   name   the case's op name
//   bytes  bytes one call moves per element of the [rows, rows] input, counted as Note [Case
//          work] in harness.h says (each input read once, each output written once); 0 where
//          the op reads a small part of its input (nll_loss picks one value per row)
//   expr   the call, in `NS::` spelling, over the inputs of SWEEP_INPUTS:
//            x, y        float32 [rows, rows] in (0.1, 0.9)      p   float32 near 1 (prod, cumprod)
//            mask        bool [rows, rows], about half true     w, b float32 [rows] (layer_norm)
//            idx         int64 [rows], a permutation            pm  float32 [rows, rows], +-1
//            gidx        int64 [rows, rows] in [0, rows)         cls int64 [rows] in [0, rows)
//            logp        log_softmax(x, 1)                      sgn float32 [rows], +-1
// NOLINTBEGIN(cppcoreguidelines-macro-usage)
#define TENSOR_SWEEP_OPS(X)                                                                      \
  /* reductions */                                                                              \
  X(sum, 4, NS::sum(in.x))                                                                      \
  X(sum_dim1, 4, NS::sum(in.x, {1}))                                                            \
  X(sum_dim0, 4, NS::sum(in.x, {0}))                                                            \
  X(mean, 4, NS::mean(in.x))                                                                    \
  X(mean_dim1, 4, NS::mean(in.x, {1}))                                                          \
  X(prod_dim1, 4, NS::prod(in.p, 1))                                                            \
  X(max, 4, NS::max(in.x))                                                                      \
  X(max_dim1, 4, std::get<0>(NS::max(in.x, 1)))                                                 \
  X(min, 4, NS::min(in.x))                                                                      \
  X(min_dim1, 4, std::get<0>(NS::min(in.x, 1)))                                                 \
  X(amax_dim1, 4, NS::amax(in.x, {1}))                                                          \
  X(amin_dim1, 4, NS::amin(in.x, {1}))                                                          \
  X(argmax_dim1, 4, NS::argmax(in.x, 1))                                                        \
  X(argmin_dim1, 4, NS::argmin(in.x, 1))                                                        \
  X(logsumexp_dim1, 4, NS::logsumexp(in.x, {1}))                                                \
  X(any, 1, NS::any(in.mask))                                                                   \
  X(all, 1, NS::all(in.mask))                                                                   \
  X(var_dim1, 4, NS::var(in.x, {1}, 1, false))                                                  \
  X(std_dim1, 4, NS::std(in.x, {1}, 1, false))                                                  \
  X(norm, 4, NS::norm(in.x))                                                                    \
  X(norm_dim1, 4, NS::norm(in.x, 2, {1}))                                                       \
  X(cumsum_dim1, 8, NS::cumsum(in.x, 1))                                                        \
  X(cumprod_dim1, 8, NS::cumprod(in.p, 1))                                                      \
  /* softmax and normalization */                                                               \
  X(softmax_dim1, 8, NS::softmax(in.x, 1))                                                      \
  X(log_softmax_dim1, 8, NS::log_softmax(in.x, 1))                                              \
  X(softmax_dim0, 8, NS::softmax(in.x, 0))                                                      \
  X(layer_norm, 8, NS::layer_norm(in.x, {in.x.size(1)}, in.w, in.b))                            \
  X(clamp, 8, NS::clamp(in.x, 0.2, 0.8))                                                        \
  /* losses (mean reduction) */                                                                 \
  X(mse_loss, 8, NS::mse_loss(in.x, in.y))                                                      \
  X(l1_loss, 8, NS::l1_loss(in.x, in.y))                                                        \
  X(smooth_l1_loss, 8, NS::smooth_l1_loss(in.x, in.y))                                          \
  X(huber_loss, 8, NS::huber_loss(in.x, in.y))                                                  \
  X(kl_div, 8, NS::kl_div(in.logp, in.y))                                                       \
  X(binary_cross_entropy, 8, NS::binary_cross_entropy(in.x, in.y))                              \
  X(bce_with_logits, 8, NS::binary_cross_entropy_with_logits(in.x, in.y))                       \
  X(soft_margin_loss, 8, NS::soft_margin_loss(in.x, in.pm))                                     \
  X(poisson_nll_loss, 8, NS::poisson_nll_loss(in.x, in.y, true, false, 1e-8, 1))               \
  X(cross_entropy, 4, NS::cross_entropy_loss(in.x, in.cls))                                     \
  X(nll_loss, 0, NS::nll_loss(in.logp, in.cls))                                                 \
  X(multi_margin_loss, 4, NS::multi_margin_loss(in.x, in.cls))                                  \
  X(margin_ranking_loss, 12, NS::margin_ranking_loss(in.x, in.y, in.pm))                          \
  X(cosine_embedding_loss, 8, NS::cosine_embedding_loss(in.x, in.y, in.sgn))                    \
  X(hinge_embedding_loss, 8, NS::hinge_embedding_loss(in.x, in.pm))                             \
  /* indexing */                                                                                \
  X(index_select_dim0, 8, NS::index_select(in.x, 0, in.idx))                                    \
  X(index_tensor, 8, in.x.index({in.idx}))                                                      \
  X(index_put_, 8, in.x.index_put_({in.idx}, in.y))                                             \
  X(gather_dim1, 16, NS::gather(in.x, 1, in.gidx))                                              \
  X(scatter_dim1, 20, NS::scatter(in.x, 1, in.gidx, in.y))                                      \
  X(scatter_add_dim1, 20, NS::scatter_add(in.x, 1, in.gidx, in.y))                              \
  X(index_add_dim0, 16, NS::index_add(in.x, 0, in.idx, in.y))                                   \
  X(masked_fill, 9, NS::masked_fill(in.x, in.mask, 0.5))                                        \
  X(masked_select, 7, NS::masked_select(in.x, in.mask))                                         \
  X(where, 13, NS::where(in.mask, in.x, in.y))                                                  \
  X(nonzero, 9, NS::nonzero(in.mask))                                                           \
  X(cat_dim0, 16, NS::cat({in.x, in.y}, 0))
// NOLINTEND(cppcoreguidelines-macro-usage)

/// Builds the inputs of TENSOR_SWEEP_OPS in namespace `ns` (tensor or torch): the same calls in
/// both, so that both libraries time the same data shapes and value ranges.
// NOLINTNEXTLINE(cppcoreguidelines-macro-usage)
#define SWEEP_INPUTS(ns, Tensor, rows)                                                            \
  struct {                                                                                        \
    Tensor x, y, p, mask, idx, gidx, cls, logp, w, b, pm, sgn;                                    \
  } in;                                                                                           \
  in.x = ns::rand({rows, rows}) * 0.8 + 0.1;                                                      \
  in.y = ns::rand({rows, rows}) * 0.8 + 0.1;                                                      \
  in.p = ns::rand({rows, rows}) * 0.002 + 0.999;                                                  \
  in.mask = ns::rand({rows, rows}) > 0.5;                                                         \
  in.idx = ns::randperm(rows);                                                                    \
  in.gidx = ns::randint(0, rows, {rows, rows}, ns::kInt64);                                       \
  in.cls = ns::randint(0, rows, {rows}, ns::kInt64);                                              \
  in.logp = ns::log_softmax(in.x, 1);                                                             \
  in.w = ns::rand({rows}) + 0.5;                                                                  \
  in.b = ns::rand({rows});                                                                        \
  in.pm = (ns::rand({rows, rows}) > 0.5).to(ns::kFloat32) * 2 - 1;                                \
  in.sgn = (ns::rand({rows}) > 0.5).to(ns::kFloat32) * 2 - 1;

// The elementwise cases, generated from the op list. A file that includes this header defines
// NS (tensor or torch) and SWEEP_ADD_UNARY(name, dtypes, result, fn, out_fn) and
// SWEEP_ADD_BINARY(...) (out_fn empty for ops without an out= form), then expands
// TENSOR_UNARY_OPS(SWEEP_UNARY) and TENSOR_BINARY_OPS(SWEEP_BINARY).
// NOLINTBEGIN(cppcoreguidelines-macro-usage)
#define SWEEP_UNARY(Enum, name, dtypes, result, api) SWEEP_UNARY_##api(Enum, name, dtypes, result)
#define SWEEP_UNARY_PUBLIC(Enum, name, dtypes, result)                                            \
  SWEEP_ADD_UNARY(#name, dtypes, ::tensor::oplist::Result::result, [](const auto& a) { return NS::name(a); }, \
                  [](auto& o, const auto& a) { NS::name##_out(o, a); });
#define SWEEP_UNARY_Full SWEEP_UNARY_PUBLIC
#define SWEEP_UNARY_Fn SWEEP_UNARY_PUBLIC
#define SWEEP_UNARY_Internal(Enum, name, dtypes, result) SWEEP_INTERNAL_##Enum(dtypes, result)

#define SWEEP_BINARY(Enum, name, dtypes, result, api) SWEEP_BINARY_##api(Enum, name, dtypes, result)
#define SWEEP_BINARY_PUBLIC(Enum, name, dtypes, result)                                           \
  SWEEP_ADD_BINARY(#name, dtypes, ::tensor::oplist::Result::result,                                \
                   [](const auto& a, const auto& b) { return NS::name(a, b); },                   \
                   [](auto& o, const auto& a, const auto& b) { NS::name##_out(o, a, b); });
#define SWEEP_BINARY_Full SWEEP_BINARY_PUBLIC
#define SWEEP_BINARY_Fn SWEEP_BINARY_PUBLIC
#define SWEEP_BINARY_Alpha SWEEP_BINARY_PUBLIC
#define SWEEP_BINARY_Internal(Enum, name, dtypes, result) SWEEP_INTERNAL_##Enum(dtypes, result)

// Internal ops, each through the public op that reaches it (no out= form there). An Internal op
// added to the op list without a line here fails to build bench_ops ("SWEEP_INTERNAL_<Enum> was
// not declared"), as a missing derivatives row does.
#define SWEEP_INTERNAL_GeluTanh(dtypes, result)                                                    \
  SWEEP_ADD_UNARY("gelu_tanh", dtypes, ::tensor::oplist::Result::result,                            \
                  [](const auto& a) { return NS::gelu(a, "tanh"); }, nullptr);
// conj_physical of a real tensor is a copy, and complex inputs are outside this float32 sweep.
#define SWEEP_INTERNAL_Conj(dtypes, result)
#define SWEEP_INTERNAL_DivTrunc(dtypes, result)                                                    \
  SWEEP_ADD_BINARY("div_trunc", dtypes, ::tensor::oplist::Result::result,                           \
                   [](const auto& a, const auto& b) { return NS::div(a, b, "trunc"); }, nullptr);
#define SWEEP_INTERNAL_DivFloor(dtypes, result)                                                    \
  SWEEP_ADD_BINARY("div_floor", dtypes, ::tensor::oplist::Result::result,                           \
                   [](const auto& a, const auto& b) { return NS::div(a, b, "floor"); }, nullptr);
// NOLINTEND(cppcoreguidelines-macro-usage)

/// Bytes one elementwise call moves per element: inputs of 4 bytes (float32 or int32) and an
/// output of 1 (bool) or 4.
constexpr double elementwise_bytes(int inputs, ::tensor::oplist::Result result) {
  return 4.0 * inputs + (result == ::tensor::oplist::Result::Bool ? 1 : 4);
}
/// Whether the op takes float32 inputs (else int32: bitwise_*, which take no floats).
constexpr bool takes_float(unsigned dtypes) { return (dtypes & ::tensor::oplist::F) != 0; }

}  // namespace bench::sweep
