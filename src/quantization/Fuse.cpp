// fuse_modules and the fused float modules (PyTorch's torch/ao/quantization/fuse_modules.py,
// fuser_method_mappings.py, torch/nn/utils/fusion.py and torch.ao.nn.intrinsic).
#include <set>
#include <string>
#include <vector>

#include "src/core/Check.h"
#include "src/quantization/Swap.h"
#include "tensor/autograd/autograd.h"
#include "tensor/nn/layers.h"
#include "tensor/nn/norm_pool.h"
#include "tensor/ops.h"
#include "tensor/quantization.h"

namespace tensor::nn::intrinsic {

LinearReLUImpl::LinearReLUImpl(Linear l, ReLU r) : Module("LinearReLU"), linear(std::move(l)), relu(std::move(r)) {
  register_module("0", linear);
  register_module("1", relu);
}
// The children's own forwards, not their holders: Note [Module swap by redirect].
Tensor LinearReLUImpl::forward(const Tensor& x) { return relu->forward(linear->forward(x)); }

ConvReLU1dImpl::ConvReLU1dImpl(Conv1d c, ReLU r) : Module("ConvReLU1d"), conv(std::move(c)), relu(std::move(r)) {
  register_module("0", conv);
  register_module("1", relu);
}
Tensor ConvReLU1dImpl::forward(const Tensor& x) { return relu->forward(conv->forward(x)); }

ConvReLU2dImpl::ConvReLU2dImpl(Conv2d c, ReLU r) : Module("ConvReLU2d"), conv(std::move(c)), relu(std::move(r)) {
  register_module("0", conv);
  register_module("1", relu);
}
Tensor ConvReLU2dImpl::forward(const Tensor& x) { return relu->forward(conv->forward(x)); }

ConvReLU3dImpl::ConvReLU3dImpl(Conv3d c, ReLU r) : Module("ConvReLU3d"), conv(std::move(c)), relu(std::move(r)) {
  register_module("0", conv);
  register_module("1", relu);
}
Tensor ConvReLU3dImpl::forward(const Tensor& x) { return relu->forward(conv->forward(x)); }

}  // namespace tensor::nn::intrinsic

namespace tensor::quantization {

// Note [Module swap by redirect]
// PyTorch swaps modules with setattr(parent, name, new): the parent's forward reads the
// attribute on every call. A libtorch-style parent holds its children in typed members
// (`nn::Conv2d conv;`) that replace_module cannot reach, so fuse_modules and convert
// swap in two steps: replace_module(name, new) puts the new module in the tree (named_modules,
// state_dict, printing and prepare see it), and old->redirect_forward(new) makes every call
// through the old module's holder, a Sequential or an AnyModule run the new module instead
// (Note [Forward hooks and redirection] in src/nn/Module.cpp). The redirect calls the new
// module through its holder, so hooks prepare attaches to it (observers) run. Fused modules are
// built from copies of the originals and call their children's forward directly, so no
// redirect can lead back into itself and no module keeps the one it replaces alive. An LSTM's
// forward takes (input, (h0, c0)) and returns a tuple, which the Tensor -> Tensor redirect cannot
// carry: quantize_dynamic redirects a swapped nn::LSTM with LSTMImpl::redirect_lstm_forward,
// which its own forward checks first (so `lstm->forward(x)` is redirected too).

std::pair<Tensor, Tensor> fuse_bn_weights(const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                                          const Tensor& running_var, double eps, const Tensor& gamma,
                                          const Tensor& beta) {
  TENSOR_CHECK(weight.defined() && weight.dim() >= 2, "fuse_bn_weights: expected a weight of 2 or more dims, got {}",
               weight.defined() ? detail::shape_str(weight.sizes()) : std::string("an undefined tensor"));
  TENSOR_CHECK(running_mean.defined() && running_var.defined(),
               "fuse_bn_weights: the batch norm has no running statistics (track_running_stats=false cannot be "
               "folded)");
  const int64_t out = weight.size(0);
  TENSOR_CHECK(running_mean.numel() == out && running_var.numel() == out,
               "fuse_bn_weights: the weight has {} output channels but the batch norm {} features", out,
               running_mean.numel());
  NoGradGuard no_grad;
  const ScalarType dt = weight.scalar_type();
  Tensor rm = running_mean.detach().to(dt), rv = running_var.detach().to(dt);
  Tensor g = gamma.defined() ? gamma.detach().to(dt) : ones({out}, dt);
  Tensor bt = beta.defined() ? beta.detach().to(dt) : zeros({out}, dt);
  Tensor b = bias.defined() ? bias.detach().to(dt) : zeros({out}, dt);
  Tensor factor = g * rsqrt(rv + eps);  // gamma / sqrt(var + eps)
  std::vector<int64_t> shape(static_cast<size_t>(weight.dim()), 1);
  shape[0] = out;
  Tensor w = weight.detach() * factor.reshape(shape);
  Tensor nb = (b - rm) * factor + bt;
  return {w, nb};
}

namespace {

enum class Kind { Conv1d, Conv2d, Conv3d, Linear, BatchNorm1d, BatchNorm2d, BatchNorm3d, ReLU, Other };

Kind kind_of(const nn::Module& m) {
  if (m.as<nn::Conv1dImpl>()) return Kind::Conv1d;
  if (m.as<nn::Conv2dImpl>()) return Kind::Conv2d;
  if (m.as<nn::Conv3dImpl>()) return Kind::Conv3d;
  if (m.as<nn::LinearImpl>()) return Kind::Linear;
  if (m.as<nn::BatchNorm1dImpl>()) return Kind::BatchNorm1d;
  if (m.as<nn::BatchNorm2dImpl>()) return Kind::BatchNorm2d;
  if (m.as<nn::BatchNorm3dImpl>()) return Kind::BatchNorm3d;
  if (m.as<nn::ReLUImpl>()) return Kind::ReLU;
  return Kind::Other;
}

int conv_dim(Kind k) { return k == Kind::Conv1d ? 1 : k == Kind::Conv2d ? 2 : k == Kind::Conv3d ? 3 : 0; }
int bn_dim(Kind k) { return k == Kind::BatchNorm1d ? 1 : k == Kind::BatchNorm2d ? 2 : k == Kind::BatchNorm3d ? 3 : 0; }

constexpr const char* kPatterns =
    "(Conv1d/2d/3d, BatchNorm1d/2d/3d), (Conv1d/2d/3d, BatchNorm1d/2d/3d, ReLU), (Conv1d/2d/3d, ReLU), "
    "(Linear, ReLU), (Linear, BatchNorm1d)";

struct Resolved {
  std::vector<std::string> names;
  std::vector<std::shared_ptr<nn::Module>> modules;
  std::vector<Kind> kinds;
};

std::string group_str(const std::vector<std::string>& names) {
  return fmt::format("['{}']", fmt::join(names.begin(), names.end(), "', '"));
}

std::string types_str(const Resolved& r) {
  std::vector<std::string> t;
  for (const auto& m : r.modules) {
    // "tensor::nn::Conv2d" -> "Conv2d".
    const std::string& n = m->name();
    const size_t colon = n.rfind("::");
    t.push_back(colon == std::string::npos ? n : n.substr(colon + 2));
  }
  return fmt::format("({})", fmt::join(t.begin(), t.end(), ", "));
}

// Finds the group's modules and checks that they form a supported, foldable pattern.
Resolved resolve(nn::Module& root, const std::vector<std::string>& names) {
  TENSOR_CHECK(names.size() >= 2 && names.size() <= 3,
               "fuse_modules: a group names 2 or 3 submodules, got {} {}", names.size(), group_str(names));
  auto all = root.named_modules();
  Resolved r;
  r.names = names;
  for (const auto& n : names) {
    TENSOR_CHECK(!n.empty(), "fuse_modules: the group {} names the module itself (\"\"); name its submodules",
                 group_str(names));
    if (!all.contains(n)) {
      std::vector<std::string> known;
      for (const auto& item : all) {
        if (!item.key().empty()) known.push_back(item.key());
      }
      TENSOR_ERROR("fuse_modules: no submodule named '{}' in the group {} (submodules: {})", n, group_str(names),
                   fmt::join(known.begin(), known.end(), ", "));
    }
    r.modules.push_back(all[n]);
    r.kinds.push_back(kind_of(*all[n]));
  }
  const Kind a = r.kinds[0], b = r.kinds[1];
  const Kind c = names.size() == 3 ? r.kinds[2] : Kind::Other;
  bool ok = false;
  if (conv_dim(a) && names.size() == 2) ok = bn_dim(b) == conv_dim(a) || b == Kind::ReLU;
  if (conv_dim(a) && names.size() == 3) ok = bn_dim(b) == conv_dim(a) && c == Kind::ReLU;
  if (a == Kind::Linear && names.size() == 2) ok = b == Kind::ReLU || b == Kind::BatchNorm1d;
  TENSOR_CHECK(ok, "fuse_modules: cannot fuse {} of types {}: the supported patterns are {}", group_str(names),
               types_str(r), kPatterns);
  if (bn_dim(b)) {
    const auto* bn = r.modules[1]->as<nn::BatchNormImplBase>();
    TENSOR_CHECK(!r.modules[0]->is_training() && !bn->is_training(),
                 "fuse_modules: folding the batch norm of {} needs eval mode (call eval() on the model first; fusion "
                 "for quantization-aware training is not supported)",
                 group_str(names));
    TENSOR_CHECK(bn->running_mean.defined() && bn->running_var.defined(),
                 "fuse_modules: the batch norm '{}' has no running statistics (track_running_stats=false), so it "
                 "cannot be folded",
                 names[1]);
    const nn::Module& m0 = *r.modules[0];
    const int64_t out = a == Kind::Conv1d   ? m0.as<nn::Conv1dImpl>()->weight.size(0)
                        : a == Kind::Conv2d ? m0.as<nn::Conv2dImpl>()->weight.size(0)
                        : a == Kind::Conv3d ? m0.as<nn::Conv3dImpl>()->weight.size(0)
                                            : m0.as<nn::LinearImpl>()->weight.size(0);
    TENSOR_CHECK(out == bn->options.num_features(),
                 "fuse_modules: '{}' has {} output channels but the batch norm '{}' has {} features", names[0], out,
                 names[1], bn->options.num_features());
  }
  return r;
}

// A fresh ConvImpl with the original's options (bias forced on when `bias` is given), device,
// dtype and training mode, holding `weight` and `bias` (or the original's).
template <typename ConvImpl>
std::shared_ptr<ConvImpl> copy_conv(const ConvImpl& conv, const Tensor& weight, const Tensor& bias) {
  auto opts = conv.options;
  if (bias.defined()) opts.bias(true);
  auto out = std::make_shared<ConvImpl>(opts);
  out->to(conv.weight.device(), conv.weight.scalar_type());
  NoGradGuard no_grad;
  out->weight.copy_(weight.defined() ? weight : conv.weight);
  Tensor b = bias.defined() ? bias : conv.bias;
  if (b.defined()) out->bias.copy_(b);
  out->train(conv.is_training());
  return out;
}

std::shared_ptr<nn::LinearImpl> copy_linear(const nn::LinearImpl& lin, const Tensor& weight, const Tensor& bias) {
  auto opts = lin.options;
  if (bias.defined()) opts.bias(true);
  auto out = std::make_shared<nn::LinearImpl>(opts);
  out->to(lin.weight.device(), lin.weight.scalar_type());
  NoGradGuard no_grad;
  out->weight.copy_(weight.defined() ? weight : lin.weight);
  Tensor b = bias.defined() ? bias : lin.bias;
  if (b.defined()) out->bias.copy_(b);
  out->train(lin.is_training());
  return out;
}

std::shared_ptr<nn::ReLUImpl> copy_relu(const nn::Module& m) {
  auto out = std::make_shared<nn::ReLUImpl>(m.as<nn::ReLUImpl>()->options);
  out->train(m.is_training());
  return out;
}

using internal::swap_in;

template <typename ConvImpl, typename ConvHolder, typename FusedImpl>
std::shared_ptr<nn::Module> fuse_conv(const Resolved& r) {
  const auto& conv = *r.modules[0]->as<ConvImpl>();
  const bool has_bn = bn_dim(r.kinds[1]) != 0;
  const bool has_relu = r.kinds.back() == Kind::ReLU;
  std::shared_ptr<ConvImpl> fused_conv;
  if (has_bn) {
    const auto& bn = *r.modules[1]->as<nn::BatchNormImplBase>();
    auto [w, b] = fuse_bn_weights(conv.weight, conv.bias, bn.running_mean, bn.running_var, bn.options.eps(),
                                  bn.weight, bn.bias);
    fused_conv = copy_conv(conv, w, b);
  } else {
    fused_conv = copy_conv(conv, Tensor(), Tensor());
  }
  if (!has_relu) return fused_conv;
  auto fused = std::make_shared<FusedImpl>(ConvHolder(fused_conv), nn::ReLU(copy_relu(*r.modules.back())));
  fused->train(conv.is_training());
  return fused;
}

void apply(nn::Module& root, const Resolved& r) {
  std::shared_ptr<nn::Module> fused;
  switch (r.kinds[0]) {
    case Kind::Conv1d: fused = fuse_conv<nn::Conv1dImpl, nn::Conv1d, nn::intrinsic::ConvReLU1dImpl>(r); break;
    case Kind::Conv2d: fused = fuse_conv<nn::Conv2dImpl, nn::Conv2d, nn::intrinsic::ConvReLU2dImpl>(r); break;
    case Kind::Conv3d: fused = fuse_conv<nn::Conv3dImpl, nn::Conv3d, nn::intrinsic::ConvReLU3dImpl>(r); break;
    case Kind::Linear: {
      const auto& lin = *r.modules[0]->as<nn::LinearImpl>();
      if (r.kinds[1] == Kind::BatchNorm1d) {
        const auto& bn = *r.modules[1]->as<nn::BatchNormImplBase>();
        auto [w, b] = fuse_bn_weights(lin.weight, lin.bias, bn.running_mean, bn.running_var, bn.options.eps(),
                                      bn.weight, bn.bias);
        fused = copy_linear(lin, w, b);
      } else {
        auto f = std::make_shared<nn::intrinsic::LinearReLUImpl>(nn::Linear(copy_linear(lin, Tensor(), Tensor())),
                                                                 nn::ReLU(copy_relu(*r.modules[1])));
        f->train(lin.is_training());
        fused = f;
      }
      break;
    }
    default: TENSOR_ERROR("fuse_modules: internal error, unexpected pattern {}", types_str(r));
  }
  // Through the concrete type, so that the redirect's holder call reaches the right forward.
  if (auto p = std::dynamic_pointer_cast<nn::intrinsic::ConvReLU1dImpl>(fused)) swap_in(root, r.names[0], r.modules[0], p);
  else if (auto p = std::dynamic_pointer_cast<nn::intrinsic::ConvReLU2dImpl>(fused)) swap_in(root, r.names[0], r.modules[0], p);
  else if (auto p = std::dynamic_pointer_cast<nn::intrinsic::ConvReLU3dImpl>(fused)) swap_in(root, r.names[0], r.modules[0], p);
  else if (auto p = std::dynamic_pointer_cast<nn::intrinsic::LinearReLUImpl>(fused)) swap_in(root, r.names[0], r.modules[0], p);
  else if (auto p = std::dynamic_pointer_cast<nn::Conv1dImpl>(fused)) swap_in(root, r.names[0], r.modules[0], p);
  else if (auto p = std::dynamic_pointer_cast<nn::Conv2dImpl>(fused)) swap_in(root, r.names[0], r.modules[0], p);
  else if (auto p = std::dynamic_pointer_cast<nn::Conv3dImpl>(fused)) swap_in(root, r.names[0], r.modules[0], p);
  else if (auto p = std::dynamic_pointer_cast<nn::LinearImpl>(fused)) swap_in(root, r.names[0], r.modules[0], p);
  for (size_t i = 1; i < r.names.size(); ++i) {
    auto id = std::make_shared<nn::IdentityImpl>();
    id->train(r.modules[i]->is_training());
    swap_in(root, r.names[i], r.modules[i], id);
  }
}

}  // namespace

void fuse_modules(nn::Module& module, const std::vector<std::vector<std::string>>& groups) {
  // Every group is checked before any is applied, so that an error leaves the model as it was.
  std::vector<Resolved> resolved;
  std::set<std::string> seen;
  for (const auto& g : groups) {
    for (const auto& n : g) {
      TENSOR_CHECK(seen.insert(n).second, "fuse_modules: '{}' appears in more than one group", n);
    }
    resolved.push_back(resolve(module, g));
  }
  for (const auto& r : resolved) apply(module, r);
}

}  // namespace tensor::quantization
