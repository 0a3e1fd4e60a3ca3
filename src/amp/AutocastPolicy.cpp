// Autocast's cast policy and its Autocast-key kernels.
#include "src/amp/AutocastPolicy.h"

#include <array>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "src/amp/AutocastState.h"
#include "src/core/Check.h"
#include "src/ops/AllOps.h"
#include "tensor/amp/autocast.h"

namespace tensor::autocast {
namespace {

// Note [Autocast policy]
// One row per op name: what autocast does to the op's floating-point inputs on CPU and on CUDA.
// The rows follow libtorch's lists (aten/src/ATen/autocast_mode.cpp and autocast_mode.h:
// AT_FORALL_LOWER_PRECISION_FP, AT_FORALL_FP32, AT_FORALL_FP32_SET_OPT_DTYPE, AT_FORALL_PROMOTE
// for CUDA, the AutocastCPU block for CPU), restricted to ops libtensor has, with one deliberate
// difference: libtorch's CPU list keeps softmax, log_softmax, exp, log, pow, sum, cumsum and the
// norms in the input's dtype, while here they run in float32 on CPU as on CUDA. The API contract
// (docs/amp.md) promises softmax and losses in float32 in a CPU bf16 region, and a result rounded
// to bf16 keeps 8 significant bits: a loss or a log-probability of magnitude 100 is off by up to
// 0.25, which a float32 result avoids for the price of one cast.
//
// - LowerPrecision: ops that gain from bf16/fp16 and keep their accuracy there (matrix products
//   and convolutions accumulate in float32 inside oneDNN/cuBLAS).
// - Fp32: ops whose result loses too much in 8 or 11 mantissa bits. libtorch's
//   fp32_set_opt_dtype ops (softmax, sum, cumsum, ...) pass dtype=float32 when the caller gave
//   none; casting their input to float32 gives the same result, so they are Fp32 here.
// - Promote: ops that take several tensors and must agree on one dtype.
// - Banned: binary_cross_entropy on CUDA, as libtorch (use binary_cross_entropy_with_logits).
//
// Every name must be a dispatcher op (ops::for_each_op) or listed in kPending below:
// tests/test_autocast.cpp checks it, so a misspelled row fails. Ops listed under several tables
// (overloads share their name, as libtorch's) all get the policy. In-place and out= variants
// ("exp_", "exp.out") are not listed: as in libtorch, autocast leaves them alone.
constexpr CastPolicy L = CastPolicy::LowerPrecision;
constexpr CastPolicy F = CastPolicy::Fp32;
constexpr CastPolicy P = CastPolicy::Promote;
constexpr CastPolicy B = CastPolicy::Banned;
constexpr CastPolicy N = CastPolicy::None;

constexpr PolicyRow kPolicy[] = {
    // ---- lower precision ----
    {"mm", L, L},
    {"bmm", L, L},
    {"addmm", L, L},
    {"baddbmm", L, L},
    {"addbmm", L, L},
    {"matmul", L, L},
    {"linear", L, L},
    {"einsum", N, L},
    {"mv", N, L},
    {"prelu", L, L},
    {"convolution", L, L},
    {"conv1d", L, L},
    {"conv2d", L, L},
    {"conv3d", L, L},
    {"conv_transpose1d", L, L},
    {"conv_transpose2d", L, L},
    {"conv_transpose3d", L, L},
    {"scaled_dot_product_attention", L, L},
    // ---- float32 ----
    {"acos", F, F},
    {"asin", F, F},
    {"cosh", F, F},
    {"sinh", F, F},
    {"tan", F, F},
    {"erfinv", F, F},
    {"exp", F, F},
    {"expm1", F, F},
    {"log", F, F},
    {"log10", F, F},
    {"log2", F, F},
    {"log1p", F, F},
    {"reciprocal", F, F},
    {"rsqrt", F, F},
    {"pow", F, F},
    {"softplus", F, F},
    {"softmax", F, F},
    {"log_softmax", F, F},
    {"sum", F, F},
    {"prod", F, F},
    {"cumsum", F, F},
    {"cumprod", F, F},
    {"norm", F, F},
    {"layer_norm", F, F},
    {"group_norm", F, F},
    {"batch_norm", F, N},  // CUDA: cuDNN takes fp16 input with float32 statistics (libtorch lists it for MPS only)
    {"cosine_similarity", F, F},
    {"cdist", F, F},
    {"dist", F, F},
    // losses
    {"cross_entropy", F, F},
    {"nll_loss", F, F},
    {"mse_loss", F, F},
    {"l1_loss", F, F},
    {"smooth_l1_loss", F, F},
    {"huber_loss", F, F},
    {"kl_div", F, F},
    {"binary_cross_entropy", F, B},
    {"binary_cross_entropy_with_logits", F, F},
    {"_ctc_loss", F, N},  // libtorch's CPU row is ctc_loss, the composite over this op
    // pools that libtorch's CPU list runs in float32
    {"max_pool3d", F, N},
    {"avg_pool3d", F, N},
    {"adaptive_avg_pool3d", F, N},
    {"adaptive_max_pool3d", F, N},
    {"max_unpool2d", F, N},
    {"max_unpool3d", F, N},
    {"fractional_max_pool2d", F, N},
    {"fractional_max_pool3d", F, N},
    // ---- promote ----
    {"cat", P, P},
    {"stack", P, P},
    {"index_copy", P, P},
    {"index_put", P, P},
    {"scatter_add", P, P},
    {"addcdiv", P, P},
    {"addcmul", P, P},
    {"atan2", P, P},
    {"cross", P, P},
    {"dot", N, P},
    {"bilinear", P, P},
    {"tensordot", P, P},
};

// Rows whose op is not a dispatcher op in this tree: the nn losses and cosine_similarity are
// composites of dispatched ops (cross_entropy is log_softmax, float32 by its own row, then a
// gather), and the others are not implemented yet. Their rows take effect when such an op is
// added to the list (a test then asks for its name to leave this list).
constexpr std::string_view kPending[] = {
    "baddbmm", "addbmm", "mv", "prelu", "erfinv", "softplus",
    "cosine_similarity", "cdist", "dist", "cross_entropy", "nll_loss", "mse_loss", "l1_loss",
    "smooth_l1_loss", "huber_loss", "kl_div", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "index_copy", "index_put", "addcdiv", "addcmul", "cross", "bilinear", "tensordot",
};

// ---- the Autocast-key kernel ----

// Finds the device type of the first defined tensor argument (libtorch picks AutocastCPU or
// AutocastCUDA by the arguments' backend).
inline void first_device(std::optional<DeviceType>& d, const Tensor& t) {
  if (!d && t.defined()) d = t.device().type();
}
inline void first_device(std::optional<DeviceType>& d, const std::optional<Tensor>& t) {
  if (t) first_device(d, *t);
}
inline void first_device(std::optional<DeviceType>& d, TensorList ts) {
  for (const Tensor& t : ts) first_device(d, t);
}
inline void first_device(std::optional<DeviceType>& d, const std::vector<Tensor>& ts) { first_device(d, TensorList(ts)); }
template <class T>
inline void first_device(std::optional<DeviceType>&, const T&) {}

// libtorch's promote_type: start from the lower-precision dtype; any eligible float32 input makes
// it float32. float64 inputs are ignored (not eligible), so the op's own promotion handles them.
inline void promote(ScalarType& cur, DeviceType dev, const Tensor& t) {
  if (is_eligible(t, dev) && t.dtype() != cur) cur = kFloat32;
}
inline void promote(ScalarType& cur, DeviceType dev, const std::optional<Tensor>& t) {
  if (t) promote(cur, dev, *t);
}
inline void promote(ScalarType& cur, DeviceType dev, TensorList ts) {
  for (const Tensor& t : ts) promote(cur, dev, t);
}
inline void promote(ScalarType& cur, DeviceType dev, const std::vector<Tensor>& ts) { promote(cur, dev, TensorList(ts)); }
template <class T>
inline void promote(ScalarType&, DeviceType, const T&) {}

// The cast of one argument, chosen by the kernel's parameter type: tensors read by the op are
// cast; in-place and out= tensors (Tensor&) and non-tensor arguments pass through untouched.
template <class A>
struct Cast {
  static A apply(ScalarType, DeviceType, A a) { return a; }
};
template <>
struct Cast<const Tensor&> {
  static Tensor apply(ScalarType to, DeviceType dev, const Tensor& t) { return cached_cast(to, t, dev); }
};
template <>
struct Cast<const std::optional<Tensor>&> {
  static std::optional<Tensor> apply(ScalarType to, DeviceType dev, const std::optional<Tensor>& t) {
    if (!t) return std::nullopt;
    return cached_cast(to, *t, dev);
  }
};
template <>
struct Cast<TensorList> {
  static std::vector<Tensor> apply(ScalarType to, DeviceType dev, TensorList ts) {
    std::vector<Tensor> out;
    out.reserve(ts.size());
    for (const Tensor& t : ts) out.push_back(cached_cast(to, t, dev));
    return out;
  }
};
template <>
struct Cast<const std::vector<Tensor>&> : Cast<TensorList> {};
// Tensors taken by value (a signature another branch may add) are read-only inputs too.
template <>
struct Cast<Tensor> : Cast<const Tensor&> {};
template <>
struct Cast<std::optional<Tensor>> : Cast<const std::optional<Tensor>&> {};

// While an Autocast kernel runs the op below itself, the Autocast key is excluded, so that the
// op's pieces (a composite's inner ops, the casts) are not cast again (libtorch's
// ExcludeDispatchKeyGuard in every autocast wrapper).
struct ExcludeAutocast {
  DispatchKeySet prev;
  ExcludeAutocast() : prev(dispatch::local_keys().excluded) {
    dispatch::local_keys().excluded = prev | DispatchKeySet(DispatchKey::Autocast);
  }
  ~ExcludeAutocast() { dispatch::local_keys().excluded = prev; }
  ExcludeAutocast(const ExcludeAutocast&) = delete;
  ExcludeAutocast& operator=(const ExcludeAutocast&) = delete;
};

// Note [Autocast kernels by slot]
// Dispatcher kernels are plain function pointers, and one Autocast kernel must know which op it
// serves (to redispatch it) and that op's policy. Ops of one signature share a pool of kernels
// that differ only in the slot they read: installing the policy of an op takes the next free
// slot of its signature's pool. The pools are sized for the table (unary ops share one
// signature and most of the float32 rows); ensure_autocast_kernels throws if one runs out.
template <class Sig>
constexpr int kPoolSize = 6;
template <>
constexpr int kPoolSize<ops::UnaryFn> = 24;

template <class Sig>
struct Pool;
template <class R, class... A>
struct Pool<R(A...)> {
  using Def = dispatch::OpDef<R(A...)>;
  using Fn = R (*)(A...);
  struct Slot {
    Def* def = nullptr;
    CastPolicy cpu = CastPolicy::None;
    CastPolicy cuda = CastPolicy::None;
  };
  static constexpr int kSize = kPoolSize<R(A...)>;
  static inline Slot slots[kSize];
  static inline int used = 0;

  static R run(const Slot& s, A... a) {
    std::optional<DeviceType> dev;
    (first_device(dev, a), ...);
    if (!dev || *dev == DeviceType::Meta || !is_autocast_enabled(*dev))
      return s.def->redispatch(DispatchKey::Autocast, a...);
    const CastPolicy policy = *dev == DeviceType::CUDA ? s.cuda : s.cpu;
    const ScalarType lower = get_autocast_dtype(*dev);
    ScalarType to = lower;
    switch (policy) {
      case CastPolicy::None: return s.def->redispatch(DispatchKey::Autocast, a...);
      case CastPolicy::LowerPrecision: break;
      case CastPolicy::Fp32: to = kFloat32; break;
      case CastPolicy::Promote: (promote(to, *dev, a), ...); break;
      case CastPolicy::Banned:
        TENSOR_ERROR(
            "{} is unsafe to autocast on {}: many models apply a sigmoid right before it, and in float16 the "
            "sigmoid's output rounds to 0 or 1. Combine the two with binary_cross_entropy_with_logits (or "
            "nn::BCEWithLogitsLoss), which is safe to autocast.",
            s.def->name, Device(*dev).str());
    }
    ExcludeAutocast no_autocast;
    return s.def->redispatch(DispatchKey::Autocast, Cast<A>::apply(to, *dev, a)...);
  }
  template <int I>
  static R kernel(A... a) {
    return run(slots[I], a...);
  }
  template <size_t... I>
  static constexpr std::array<Fn, kSize> make_kernels(std::index_sequence<I...>) {
    return {&kernel<static_cast<int>(I)>...};
  }
  static void install(Def& def, const PolicyRow& row) {
    static constexpr std::array<Fn, kSize> kernels = make_kernels(std::make_index_sequence<kSize>{});
    TENSOR_CHECK(used < kSize,
                 "internal error: autocast has no free kernel slot for {} (raise kPoolSize for its signature in "
                 "src/amp/AutocastPolicy.cpp)",
                 row.name);
    slots[used] = Slot{&def, row.cpu, row.cuda};
    def.set(DispatchKey::Autocast, kernels[used]);
    ++used;
  }
};

const PolicyRow* find_row(std::string_view name) {
  for (const PolicyRow& r : kPolicy)
    if (r.name == name) return &r;
  return nullptr;
}

}  // namespace

const PolicyRow* policy_rows(size_t* count) {
  *count = std::size(kPolicy);
  return kPolicy;
}

const std::string_view* pending_ops(size_t* count) {
  *count = std::size(kPending);
  return kPending;
}

CastPolicy policy_for(std::string_view op, DeviceType device) {
  const PolicyRow* r = find_row(op);
  if (!r || device == DeviceType::Meta) return CastPolicy::None;
  return device == DeviceType::CUDA ? r->cuda : r->cpu;
}

// Note [Lazy autocast registration]
// As the Autograd slots (Note [Lazy autograd registration]), the Autocast slots are filled once,
// by the first AutocastGuard: until then no call can carry the Autocast key, so programs that
// never use autocast never pay for it, and nothing depends on static initializers.
size_t ensure_autocast_kernels() {
  static std::once_flag once;
  static size_t installed = 0;
  std::call_once(once, [] {
    ops::for_each_op([](auto& def, ops::Recording) {
      using Sig = typename std::remove_reference_t<decltype(def)>::Signature;
      const PolicyRow* row = find_row(def.name);
      if (!row || (row->cpu == CastPolicy::None && row->cuda == CastPolicy::None)) return;
      Pool<Sig>::install(def, *row);
      ++installed;
    });
  });
  return installed;
}

}  // namespace tensor::autocast
