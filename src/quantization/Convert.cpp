// convert and quantize_dynamic of tensor::quantization (PyTorch's torch/ao/quantization/quantize.py:
// convert, _convert, swap_module, quantize_dynamic, and the from_float of each quantized module).
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "src/core/Check.h"
#include "src/quantization/Swap.h"
#include "tensor/autograd/autograd.h"
#include "tensor/nn/layers.h"
#include "tensor/nn/quantized.h"
#include "tensor/nn/rnn.h"
#include "tensor/ops.h"
#include "tensor/quantization.h"

namespace tensor::quantization {

// Note [What convert does]
// convert reads the record prepare left on the model (Note [What prepare records]) and works in
// two passes so that an error leaves the model as it was: the first builds every replacement
// (qparams from the activation observers, weights quantized by the QConfig's weight observer)
// and checks everything that can fail; the second removes the observers and swaps the modules
// in (Note [Module swap by redirect]). The observers go first: an old module keeps its hooks,
// and the redirect runs them after the quantized module, so an observer left on it would be fed
// quantized tensors. A FloatFunctional is called through its methods, not forward, so it is
// replaced in the tree and pointed at its QFunctional (Note [FloatFunctional] in
// tensor/nn/quantized.h) instead of redirected. An observed ReLU is not swapped (PyTorch keeps nn.ReLU too): relu on a
// quantized tensor keeps its parameters, which is exact, and its observer is dropped.
// Layers requantize to the dtype of their input (the int8 kernels' rule), so the activation
// observers must agree on one dtype: the QuantStub's decides.
//
// Note [Converting for loading]
// A converted model's file holds everything convert derives: each quantized weight with its
// scales, the bias, every output scale and zero point (Note [Quantized module state]). To load
// it, a skeleton needs the same modules, not the same statistics, so
// ConvertOptions::allow_uncalibrated lets convert accept observers that saw no data and use
// placeholders (scale 1, zero point 0: PyTorch's calculate_qparams before any batch, where its
// convert warns and proceeds) for the load to overwrite. The weights are quantized from the
// float weights as usual (their observers need no calibration) and replaced by the load, the
// quantized copy_ taking the file's parameters. The observers' dtypes still decide each
// module's dtype, so the skeleton must be prepared with the QConfig the file's model had.

using internal::swap_in;

namespace {

std::string type_name(const nn::Module& m) {
  const std::string& n = m.name();
  const size_t colon = n.rfind("::");
  return colon == std::string::npos ? n : n.substr(colon + 2);
}

// Whether the observer has seen a batch (its range is set).
bool calibrated(ObserverBase& obs) {
  if (auto* mm = dynamic_cast<MinMaxObserver*>(&obs)) return mm->min_val.item<double>() <= mm->max_val.item<double>();
  if (auto* pc = dynamic_cast<PerChannelMinMaxObserver*>(&obs)) return pc->min_val.numel() > 0;
  if (auto* h = dynamic_cast<HistogramObserver*>(&obs)) return h->min_val.item<double>() <= h->max_val.item<double>();
  return true;  // a custom observer: its calculate_qparams decides
}

struct OutputQParams {
  double scale;
  int64_t zero_point;
  ScalarType dtype;
};

// The activation observer's per-tensor qparams, checked.
OutputQParams output_qparams(const ObservedModule& o, bool allow_uncalibrated) {
  ObserverBase& obs = *o.activation_post_process;
  const std::string what = fmt::format("'{}' ({})", o.name, type_name(*o.module));
  TENSOR_CHECK(!dynamic_cast<PlaceholderObserver*>(&obs),
               "convert: {} has a dynamic QConfig (a PlaceholderObserver for activations), which static convert "
               "cannot use; call quantize_dynamic() instead",
               what);
  TENSOR_CHECK(!obs.is_per_channel(),
               "convert: {} has a per-channel activation observer; activations are quantized "
               "per tensor",
               what);
  TENSOR_CHECK(obs.dtype() == kQUInt8 || obs.dtype() == kQInt8,
               "convert: {} has an activation observer of dtype {}; activations are quint8 or qint8", what,
               obs.dtype());
  if (!calibrated(obs)) {
    TENSOR_CHECK(allow_uncalibrated,
                 "convert: the observer of {} has seen no data; run calibration batches through the prepared model "
                 "before convert (or convert(model, ConvertOptions().allow_uncalibrated(true)) for a skeleton to "
                 "load a converted model's state into)",
                 what);
    return {1.0, 0, obs.dtype()};  // Note [Converting for loading]
  }
  std::tuple<Tensor, Tensor> qp = obs.calculate_qparams();
  const Tensor& scale = std::get<0>(qp);
  const Tensor& zero_point = std::get<1>(qp);
  TENSOR_CHECK(scale.numel() == 1 && zero_point.numel() == 1,
               "convert: the observer of {} gave {} scales; expected one (per tensor)", what, scale.numel());
  return {scale.item<double>(), zero_point.item<int64_t>(), obs.dtype()};
}

std::optional<Tensor> float_bias(const Tensor& bias) {
  if (!bias.defined()) return std::nullopt;
  return bias.detach().to(kFloat32).contiguous();
}

void check_cpu_float(const Tensor& weight, const std::string& what) {
  TENSOR_CHECK(weight.is_cpu() && weight.is_floating_point(),
               "convert: {} has a weight {} on {}; quantized modules take float CPU weights (call to(kCPU) first)",
               what, weight.describe(), weight.device().str());
}

template <typename QLinear>
std::shared_ptr<QLinear> quantized_linear(const nn::LinearImpl& lin, const QConfig& qconfig, const OutputQParams& out,
                                          const std::string& what) {
  check_cpu_float(lin.weight, what);
  auto q = std::make_shared<QLinear>(lin.options.in_features(), lin.options.out_features(), lin.bias.defined());
  NoGradGuard no_grad;
  q->set_weight_bias(quantize_weight(qconfig, lin.weight), float_bias(lin.bias));
  q->scale = out.scale;
  q->zero_point = out.zero_point;
  q->train(lin.is_training());
  return q;
}

template <size_t D>
std::vector<int64_t> vec(const ExpandingArray<D>& a) {
  return std::vector<int64_t>(a.data(), a.data() + D);
}

// The quantized conv (QConv: Conv1d/2d/3d or ConvReLU*dImpl of nn::quantized) of a float conv.
template <typename QConv, typename ConvImpl>
std::shared_ptr<QConv> quantized_conv(const ConvImpl& conv, const QConfig& qconfig, const OutputQParams& out,
                                      const std::string& what) {
  check_cpu_float(conv.weight, what);
  const auto& o = conv.options;
  TENSOR_CHECK(o.padding_mode() == kZeros,
               "convert: {} pads with padding_mode '{}'; the quantized convolution pads with zeros only", what,
               o.padding_mode().name());
  const std::vector<int64_t> k = vec(o.kernel_size()), s = vec(o.stride()), d = vec(o.dilation());
  std::vector<int64_t> p = vec(o.padding().values());
  if (o.padding().is_same()) {
    // kSame with stride 1 pads dilation * (k - 1) in all, split evenly: only odd extents split.
    for (size_t i = 0; i < k.size(); ++i) {
      const int64_t total = d[i] * (k[i] - 1);
      TENSOR_CHECK(total % 2 == 0,
                   "convert: {} uses padding kSame with an even kernel extent (kernel_size {}, dilation {}), whose "
                   "padding is asymmetric; the quantized convolution pads symmetrically",
                   what, k[i], d[i]);
      p[i] = total / 2;
    }
  }
  auto q = std::make_shared<QConv>(o.in_channels(), o.out_channels(), k, s, p, d, o.groups(), conv.bias.defined());
  NoGradGuard no_grad;
  q->set_weight_bias(quantize_weight(qconfig, conv.weight), float_bias(conv.bias));
  q->scale = out.scale;
  q->zero_point = out.zero_point;
  q->train(conv.is_training());
  return q;
}

// One swap to make once everything is built.
struct Swap {
  std::string name;
  std::function<void(nn::Module& root)> apply;
};

template <typename Impl>
Swap make_swap(const std::string& name, const std::shared_ptr<nn::Module>& old, std::shared_ptr<Impl> replacement) {
  return {name, [name, old, replacement](nn::Module& root) { swap_in(root, name, old, replacement); }};
}

}  // namespace

void convert(nn::Module& module) { convert(module, ConvertOptions()); }

void convert(nn::Module& module, const ConvertOptions& options) {
  namespace nnq = nn::quantized;
  std::vector<ObservedModule> observed = observed_modules(module);
  TENSOR_CHECK(!observed.empty(),
               "convert: the module has no observers; call prepare(module, qconfig) and run calibration batches "
               "through it first");
  std::vector<Swap> swaps;
  std::set<ScalarType> dtypes;
  for (const auto& o : observed) {
    const nn::Module& m = *o.module;
    const std::string what = fmt::format("'{}' ({})", o.name, type_name(m));
    TENSOR_CHECK(!o.name.empty(),
                 "convert: the module itself ({}) is observed; convert swaps submodules, so wrap it in a parent "
                 "module",
                 type_name(m));
    if (m.as<nn::ReLUImpl>()) continue;  // Note [What convert does]: relu keeps its input's parameters
    const OutputQParams out = output_qparams(o, options.allow_uncalibrated());
    dtypes.insert(out.dtype);
    if (m.as<QuantStubImpl>()) {
      swaps.push_back(
          make_swap(o.name, o.module, std::make_shared<QuantizeImpl>(out.scale, out.zero_point, out.dtype)));
    } else if (auto ff = std::dynamic_pointer_cast<nnq::FloatFunctionalImpl>(o.module)) {
      // Note [FloatFunctional]: the parent's typed member keeps the old object, which then
      // sends its method calls to the QFunctional.
      auto qf = std::make_shared<nnq::QFunctionalImpl>(out.scale, out.zero_point);
      qf->train(m.is_training());
      swaps.push_back({o.name, [name = o.name, ff, qf](nn::Module& root) {
                         internal::replace_in_tree(root, name, qf);
                         ff->redirect_to(qf);
                       }});
    } else if (const auto* lr = m.as<nn::intrinsic::LinearReLUImpl>()) {
      swaps.push_back(
          make_swap(o.name, o.module, quantized_linear<nnq::LinearReLUImpl>(*lr->linear, o.qconfig, out, what)));
    } else if (const auto* lin = m.as<nn::LinearImpl>()) {
      swaps.push_back(make_swap(o.name, o.module, quantized_linear<nnq::LinearImpl>(*lin, o.qconfig, out, what)));
    } else if (const auto* c1 = m.as<nn::intrinsic::ConvReLU1dImpl>()) {
      swaps.push_back(
          make_swap(o.name, o.module, quantized_conv<nnq::ConvReLU1dImpl>(*c1->conv, o.qconfig, out, what)));
    } else if (const auto* c2 = m.as<nn::intrinsic::ConvReLU2dImpl>()) {
      swaps.push_back(
          make_swap(o.name, o.module, quantized_conv<nnq::ConvReLU2dImpl>(*c2->conv, o.qconfig, out, what)));
    } else if (const auto* c3 = m.as<nn::intrinsic::ConvReLU3dImpl>()) {
      swaps.push_back(
          make_swap(o.name, o.module, quantized_conv<nnq::ConvReLU3dImpl>(*c3->conv, o.qconfig, out, what)));
    } else if (const auto* k1 = m.as<nn::Conv1dImpl>()) {
      swaps.push_back(make_swap(o.name, o.module, quantized_conv<nnq::Conv1dImpl>(*k1, o.qconfig, out, what)));
    } else if (const auto* k2 = m.as<nn::Conv2dImpl>()) {
      swaps.push_back(make_swap(o.name, o.module, quantized_conv<nnq::Conv2dImpl>(*k2, o.qconfig, out, what)));
    } else if (const auto* k3 = m.as<nn::Conv3dImpl>()) {
      swaps.push_back(make_swap(o.name, o.module, quantized_conv<nnq::Conv3dImpl>(*k3, o.qconfig, out, what)));
    } else {
      TENSOR_ERROR(
          "convert: {} has no quantized module (quantized: QuantStub, Linear, LinearReLU, Conv1d/2d/3d, "
          "ConvReLU1d/2d/3d, FloatFunctional, ReLU); fuse it into the preceding conv or linear with fuse_modules, "
          "or leave it float with a nullopt QConfig override and DeQuantStub/QuantStub around it",
          what);
    }
  }
  TENSOR_CHECK(dtypes.size() <= 1,
               "convert: the activation observers use both quint8 and qint8; quantized layers output their input's "
               "dtype, so one QConfig dtype must hold for the whole model");
  for (const auto& item : module.named_modules()) {
    const auto* dq = item.value()->as<DeQuantStubImpl>();
    if (dq && dq->prepared()) {
      TENSOR_CHECK(!item.key().empty(), "convert: the module itself is a DeQuantStub; wrap it in a parent module");
      swaps.push_back(make_swap(item.key(), item.value(), std::make_shared<DeQuantizeImpl>()));
    }
  }
  // Nothing has changed so far; from here nothing can fail.
  remove_observers(module);
  for (const auto& s : swaps) s.apply(module);
}

std::vector<std::string> quantize_dynamic(nn::Module& module, const QConfig& qconfig) {
  namespace nnqd = nn::quantized::dynamic;
  TENSOR_CHECK(static_cast<bool>(qconfig.weight), "quantize_dynamic: the QConfig has no weight observer factory");
  bool reduce_range = false;
  if (qconfig.activation) {
    std::shared_ptr<ObserverBase> act = qconfig.activation();
    reduce_range = act && act->reduce_range();
  }
  std::vector<Swap> swaps;
  std::vector<std::string> names;
  std::vector<std::string> fused;  // LinearReLU modules: their inner Linear is not swapped on its own
  for (const auto& item : module.named_modules()) {
    const std::string& name = item.key();
    const nn::Module& m = *item.value();
    bool inside = false;
    for (const auto& f : fused) inside = inside || name.compare(0, f.size() + 1, f + ".") == 0;
    if (inside) continue;
    if (const auto* lstm = m.as<nn::LSTMImpl>()) {
      const std::string what = fmt::format("'{}' ({})", name, type_name(m));
      TENSOR_CHECK(!name.empty(), "quantize_dynamic: the module itself ({}) is an LSTM; wrap it in a parent module",
                   type_name(m));
      for (const Tensor& w : lstm->all_weights()) check_cpu_float(w, what);
      TENSOR_CHECK(lstm->options.proj_size() == 0,
                   "quantize_dynamic: {} has proj_size = {}; the dynamic quantized LSTM has no projection (as in "
                   "PyTorch)",
                   what, lstm->options.proj_size());
      std::shared_ptr<nnqd::LSTMImpl> q = nnqd::LSTMImpl::from_float(*lstm, qconfig);
      // Note [Module swap by redirect], with the LSTM's own redirect: its forward is not Tensor -> Tensor.
      swaps.push_back({name, [name, old = item.value(), q](nn::Module& root) {
                         internal::replace_in_tree(root, name, q);
                         old->as<nn::LSTMImpl>()->redirect_lstm_forward(
                             [q](const Tensor& x, std::optional<std::tuple<Tensor, Tensor>> hx) {
                               return q->forward(x, std::move(hx));
                             });
                       }});
      names.push_back(name);
      continue;
    }
    const nn::LinearImpl* lin = m.as<nn::LinearImpl>();
    const auto* lr = m.as<nn::intrinsic::LinearReLUImpl>();
    if (lr) {
      lin = lr->linear.get();
      fused.push_back(name);
    }
    if (!lin) continue;
    const std::string what = fmt::format("'{}' ({})", name, type_name(m));
    TENSOR_CHECK(!name.empty(), "quantize_dynamic: the module itself ({}) is a Linear; wrap it in a parent module",
                 type_name(m));
    check_cpu_float(lin->weight, what);
    auto q = std::make_shared<nnqd::LinearImpl>(lin->options.in_features(), lin->options.out_features(),
                                                lin->bias.defined());
    {
      NoGradGuard no_grad;
      q->set_weight_bias(quantize_weight(qconfig, lin->weight), float_bias(lin->bias));
    }
    q->reduce_range = reduce_range;
    q->train(lin->is_training());
    if (lr) {
      // PyTorch's dynamic LinearReLU: the dynamic linear, then relu on its float output.
      auto relu = std::make_shared<nn::ReLUImpl>(lr->relu->options);
      auto seq = std::make_shared<nn::SequentialImpl>();
      seq->push_back("0", nnqd::Linear(q));
      seq->push_back("1", nn::ReLU(relu));
      swaps.push_back(make_swap(name, item.value(), seq));
    } else {
      swaps.push_back(make_swap(name, item.value(), q));
    }
    names.push_back(name);
  }
  TENSOR_CHECK(!swaps.empty(), "quantize_dynamic: the module has no Linear, LinearReLU or LSTM submodule to quantize");
  for (const auto& s : swaps) s.apply(module);
  return names;
}

}  // namespace tensor::quantization
