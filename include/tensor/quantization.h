// tensor::quantization: PyTorch's eager-mode post-training quantization workflow in C++
// (torch.ao.quantization): observers, QConfig, QuantStub/DeQuantStub, fuse_modules, prepare,
// convert and quantize_dynamic.
//
//   auto net = std::make_shared<Net>();            // holds quant (QuantStub), conv, bn, relu, fc, dequant
//   net->eval();
//   quantization::fuse_modules(*net, {{"conv", "bn", "relu"}});
//   quantization::prepare(*net, quantization::get_default_qconfig("x86"));
//   for (auto& batch : calibration) net->forward(batch);       // observers record ranges
//   for (auto& s : quantization::get_observer_state(*net))
//     std::cout << s.name << " scale " << s.scale << " zero_point " << s.zero_point << "\n";
//
//   quantization::convert(*net);                              // nn::quantized modules, int8 from here
//
// quantize_dynamic swaps Linear and LSTM layers for dynamically quantized ones; see
// docs/quantization.md, "The workflow".
#pragma once

#include <cfloat>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tensor/core/QScheme.h"
#include "tensor/core/ScalarType.h"
#include "tensor/core/Tensor.h"
#include "tensor/nn/arg.h"
#include "tensor/nn/conv.h"
#include "tensor/nn/module.h"
#include "tensor/nn/modules.h"
#include "tensor/nn/pimpl.h"

namespace tensor::quantization {

struct QConfig;

// ---------------------------------------------------------------------------------------------
// Observers
// ---------------------------------------------------------------------------------------------

/// Options shared by every observer, as the keyword arguments of PyTorch's observers. Fields an
/// observer does not use are ignored (bins by MinMaxObserver, ch_axis by HistogramObserver).
struct ObserverOptions {
  /// kQUInt8 (activations) or kQInt8 (weights).
  TENSOR_ARG(ScalarType, dtype) = kQUInt8;
  /// Unset: per_tensor_affine for per-tensor observers, per_channel_affine for per-channel ones.
  TENSOR_ARG(std::optional<QScheme>, qscheme);
  /// Halves the range (quint8 0..127, qint8 -64..63): x86's vpmaddubsw cannot overflow then.
  TENSOR_ARG(bool, reduce_range) = false;
  /// A custom range [quant_min, quant_max]: give both or neither; it must contain 0.
  TENSOR_ARG(std::optional<int64_t>, quant_min);
  TENSOR_ARG(std::optional<int64_t>, quant_max);
  /// The smallest scale calculate_qparams returns (float32 machine epsilon, as PyTorch).
  TENSOR_ARG(double, eps) = static_cast<double>(FLT_EPSILON);
  /// Per-channel observers: the channel dimension of the observed tensor (negative counts back).
  TENSOR_ARG(int64_t, ch_axis) = 0;
  /// Moving-average observers: min <- min + c * (batch_min - min).
  TENSOR_ARG(double, averaging_constant) = 0.01;
  /// HistogramObserver: number of histogram bins.
  TENSOR_ARG(int64_t, bins) = 2048;
  /// HistogramObserver: how finely the old histogram is resampled when the range grows.
  TENSOR_ARG(int64_t, upsample_rate) = 128;
};

/// The base of every observer: a module whose forward(x) records statistics of x and returns x
/// unchanged (detached statistics, no autograd), and whose calculate_qparams() turns them into
/// quantization parameters. Statistics live in buffers, so state_dict() saves them.
class TENSOR_API ObserverBase : public nn::Module {
 public:
  /// Records x (float32 or float64, any shape; empty tensors are ignored) and returns x.
  virtual Tensor forward(const Tensor& x) = 0;
  /// (scales float32 [C], zero_points int64 [C]) with C = 1 for per-tensor observers, computed
  /// as PyTorch's observers compute them. Before any forward: ([1.0], [0]).
  virtual std::tuple<Tensor, Tensor> calculate_qparams() = 0;

  ScalarType dtype() const noexcept { return dtype_; }
  QScheme qscheme() const noexcept { return qscheme_; }
  bool reduce_range() const noexcept { return reduce_range_; }
  /// The effective integer range (after reduce_range).
  int64_t quant_min() const noexcept { return quant_min_; }
  int64_t quant_max() const noexcept { return quant_max_; }
  double eps() const noexcept { return eps_; }
  bool is_per_channel() const noexcept;
  /// The QConfig that prepare() made this observer from (null for observers made by hand);
  /// convert reads its weight factory.
  const std::shared_ptr<const QConfig>& qconfig() const noexcept { return qconfig_; }

 protected:
  ObserverBase(std::string name, const ObserverOptions& options, bool per_channel);
  /// PyTorch's _calculate_qparams on float32 min/max tensors of one shape ([] or [C]).
  std::tuple<Tensor, Tensor> calculate_qparams_from(const Tensor& min_val, const Tensor& max_val) const;

  ScalarType dtype_;
  QScheme qscheme_;
  bool reduce_range_;
  bool has_customized_qrange_;
  int64_t quant_min_, quant_max_;
  double eps_;

 private:
  friend struct ObserverAccess;
  std::shared_ptr<const QConfig> qconfig_;
  uint64_t hook_handle_ = 0;
};

/// Running min and max of everything observed (PyTorch's MinMaxObserver); per_tensor_affine or
/// per_tensor_symmetric. Buffers: min_val (+inf before the first batch), max_val (-inf).
class TENSOR_API MinMaxObserver : public ObserverBase {
 public:
  explicit MinMaxObserver(const ObserverOptions& options = {});
  Tensor forward(const Tensor& x) override;
  std::tuple<Tensor, Tensor> calculate_qparams() override;
  /// Back to the state before the first batch.
  void reset_min_max_vals();
  void pretty_print(std::ostream& stream) const override;
  Tensor min_val, max_val;

 protected:
  MinMaxObserver(std::string name, const ObserverOptions& options);
};

/// min/max as an exponential moving average over batches (PyTorch's MovingAverageMinMaxObserver):
/// the first batch sets them, later ones move them by averaging_constant (0.01).
class TENSOR_API MovingAverageMinMaxObserver : public MinMaxObserver {
 public:
  explicit MovingAverageMinMaxObserver(const ObserverOptions& options = {});
  Tensor forward(const Tensor& x) override;
  double averaging_constant() const noexcept { return averaging_constant_; }

 private:
  double averaging_constant_;
};

/// Running min and max per index of ch_axis (PyTorch's PerChannelMinMaxObserver), for weights;
/// per_channel_affine or per_channel_symmetric. Buffers min_val/max_val are empty until the
/// first batch, then [C].
class TENSOR_API PerChannelMinMaxObserver : public ObserverBase {
 public:
  explicit PerChannelMinMaxObserver(const ObserverOptions& options = {});
  Tensor forward(const Tensor& x) override;
  std::tuple<Tensor, Tensor> calculate_qparams() override;
  int64_t ch_axis() const noexcept { return ch_axis_; }
  void reset_min_max_vals();
  void pretty_print(std::ostream& stream) const override;
  Tensor min_val, max_val;

 protected:
  PerChannelMinMaxObserver(std::string name, const ObserverOptions& options);
  /// x as float32 [C, rest]: the channel axis first (tensor::Error when it is out of range).
  Tensor channels_first(const Tensor& x) const;
  /// Stores new per-channel values (the buffers change size on the first batch).
  void set_min_max(Tensor min, Tensor max);
  int64_t ch_axis_;
};

/// Per-channel min/max as moving averages (PyTorch's MovingAveragePerChannelMinMaxObserver).
class TENSOR_API MovingAveragePerChannelMinMaxObserver : public PerChannelMinMaxObserver {
 public:
  explicit MovingAveragePerChannelMinMaxObserver(const ObserverOptions& options = {});
  Tensor forward(const Tensor& x) override;
  double averaging_constant() const noexcept { return averaging_constant_; }

 private:
  double averaging_constant_;
};

/// A histogram of everything observed (bins over [min_val, max_val], re-binned as the range
/// grows); calculate_qparams picks the min/max that minimize the L2 quantization error of the
/// histogram, as PyTorch's HistogramObserver (Note [Histogram observer] in
/// src/quantization/Observers.cpp), so that a few outliers do not stretch the range.
/// Per-tensor only. Buffers: histogram [bins], min_val, max_val.
class TENSOR_API HistogramObserver : public ObserverBase {
 public:
  explicit HistogramObserver(const ObserverOptions& options = {});
  Tensor forward(const Tensor& x) override;
  std::tuple<Tensor, Tensor> calculate_qparams() override;
  /// The (min, max) the L2 search chooses (the histogram's range before any batch: +inf, -inf).
  std::pair<double, double> non_linear_param_search() const;
  /// The L2 error of quantizing the histogram with the range of bins [start_bin, end_bin]
  /// into 2^8 levels: what non_linear_param_search minimizes.
  double quantization_error(int64_t start_bin, int64_t end_bin) const;
  int64_t bins() const noexcept { return bins_; }
  void pretty_print(std::ostream& stream) const override;
  Tensor histogram, min_val, max_val;

 private:
  int64_t bins_, upsample_rate_, dst_nbins_;
};

/// Records nothing: the activation "observer" of dynamic quantization, where activations are
/// quantized per batch at run time (PyTorch's PlaceholderObserver with is_dynamic).
/// calculate_qparams raises tensor::Error.
class TENSOR_API PlaceholderObserver : public ObserverBase {
 public:
  explicit PlaceholderObserver(const ObserverOptions& options = {}, bool is_dynamic = true);
  Tensor forward(const Tensor& x) override { return x; }
  std::tuple<Tensor, Tensor> calculate_qparams() override;
  bool is_dynamic() const noexcept { return is_dynamic_; }

 private:
  bool is_dynamic_;
};

/// Makes an observer: what a QConfig holds for activations and for weights (PyTorch's
/// `Observer.with_args(...)`).
using ObserverFactory = std::function<std::shared_ptr<ObserverBase>()>;

/// A factory of T with these options: `observer_factory<MinMaxObserver>(ObserverOptions().dtype(kQInt8))`.
template <typename T>
ObserverFactory observer_factory(ObserverOptions options = {}) {
  static_assert(std::is_base_of_v<ObserverBase, T>, "observer_factory: T must derive from ObserverBase");
  // Made once now, so that bad options raise here rather than at prepare time.
  (void)T(options);
  return [options]() -> std::shared_ptr<ObserverBase> { return std::make_shared<T>(options); };
}

// ---------------------------------------------------------------------------------------------
// QConfig
// ---------------------------------------------------------------------------------------------

/// How to quantize a module: an observer factory for its output activations and one for its
/// weight (PyTorch's QConfig namedtuple).
struct QConfig {
  ObserverFactory activation;
  ObserverFactory weight;
};

/// PyTorch's default_qconfig: activations MinMaxObserver quint8 with quant range 0..127,
/// weights MinMaxObserver qint8 per_tensor_symmetric.
TENSOR_API QConfig default_qconfig();
/// PyTorch's default_per_channel_qconfig: activations as default_qconfig, weights
/// PerChannelMinMaxObserver qint8 per_channel_symmetric (ch_axis 0).
TENSOR_API QConfig default_per_channel_qconfig();
/// PyTorch's default_dynamic_qconfig: activations PlaceholderObserver (quantized per batch at
/// run time), weights MinMaxObserver qint8 per_tensor_symmetric.
TENSOR_API QConfig default_dynamic_qconfig();
/// PyTorch's get_default_qconfig(backend): "x86" and "fbgemm" use HistogramObserver quint8 with
/// reduce_range for activations and per-channel symmetric qint8 weights; "onednn" the same
/// without reduce_range; "qnnpack" HistogramObserver without reduce_range and per-tensor
/// symmetric weights. Other names raise tensor::Error.
TENSOR_API QConfig get_default_qconfig(const std::string& backend = "x86");

// ---------------------------------------------------------------------------------------------
// Stubs and quantize/dequantize modules
// ---------------------------------------------------------------------------------------------

/// Marks where the quantized region starts: identity in float. prepare observes its output
/// (the region's input qparams); convert replaces it with Quantize.
class TENSOR_API QuantStubImpl : public nn::Module {
 public:
  QuantStubImpl();
  Tensor forward(const Tensor& x) { return x; }
};
TENSOR_MODULE(QuantStub);

/// Marks where the quantized region ends: identity in float; convert replaces it with
/// DeQuantize.
class TENSOR_API DeQuantStubImpl : public nn::Module {
 public:
  DeQuantStubImpl();
  Tensor forward(const Tensor& x) { return x; }
  /// Whether prepare gave it a QConfig (no nullopt override above it): convert then replaces it
  /// with DeQuantize, as PyTorch converts only DeQuantStubs that have a qconfig.
  bool prepared() const noexcept { return prepared_; }

 private:
  friend struct ObserverAccess;
  bool prepared_ = false;
};
TENSOR_MODULE(DeQuantStub);

/// quantize_per_tensor(x, scale, zero_point, dtype) as a module (PyTorch's nnq.Quantize); the
/// parameters are buffers (scale float32 [1], zero_point int64 [1]), so state_dict saves them.
class TENSOR_API QuantizeImpl : public nn::Module {
 public:
  QuantizeImpl(double scale, int64_t zero_point, ScalarType dtype = kQUInt8);
  Tensor forward(const Tensor& x);
  void pretty_print(std::ostream& stream) const override;
  ScalarType dtype;
  Tensor scale, zero_point;
};
TENSOR_MODULE(Quantize);

/// x.dequantize() as a module (PyTorch's nnq.DeQuantize).
class TENSOR_API DeQuantizeImpl : public nn::Module {
 public:
  DeQuantizeImpl();
  Tensor forward(const Tensor& x);
};
TENSOR_MODULE(DeQuantize);

// ---------------------------------------------------------------------------------------------
// Fusion
// ---------------------------------------------------------------------------------------------

/// Fuses each group of submodules, given by dotted names relative to `module`, in place (PyTorch's
/// fuse_modules with inplace=True). Patterns: (Conv1d/2d/3d, BatchNorm) -> the conv with the
/// norm folded in; (Conv, BatchNorm, ReLU) and (Conv, ReLU) -> nn::intrinsic::ConvReLU1d/2d/3d;
/// (Linear, ReLU) -> nn::intrinsic::LinearReLU; (Linear, BatchNorm1d) -> the linear with the
/// norm folded in. The first name gets the fused module, the others nn::Identity, in the
/// module tree and for calls through their holders (Note [Module swap by redirect] in
/// src/quantization/Fuse.cpp). Folding a BatchNorm needs eval mode:
/// w' = w * gamma / sqrt(var + eps), b' = (b - mean) * gamma / sqrt(var + eps) + beta.
/// Unknown names, unsupported patterns, training mode and mismatched channel counts raise
/// tensor::Error naming them; nothing is changed then.
TENSOR_API void fuse_modules(nn::Module& module, const std::vector<std::vector<std::string>>& groups);

/// The folded (weight, bias) of a conv or linear weight [out, ...] and bias (undefined: zeros)
/// followed by an eval-mode batch norm (PyTorch's fuse_conv_bn_weights), in the weight's dtype.
TENSOR_API std::pair<Tensor, Tensor> fuse_bn_weights(const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                                                     const Tensor& running_var, double eps, const Tensor& gamma,
                                                     const Tensor& beta);

// ---------------------------------------------------------------------------------------------
// prepare and observer state
// ---------------------------------------------------------------------------------------------

/// Per-submodule QConfig overrides for prepare: a name applies to that submodule and its
/// descendants, the longest matching name wins, and nullopt leaves the subtree unquantized
/// (PyTorch's qconfig_dict {"fc2": None}).
using QConfigOverrides = std::vector<std::pair<std::string, std::optional<QConfig>>>;

/// One observed submodule: what convert reads (Note [What prepare records] in
/// src/quantization/Prepare.cpp).
struct ObservedModule {
  /// Dotted name relative to the prepared module ("" for the module itself).
  std::string name;
  std::shared_ptr<nn::Module> module;
  /// Observes the module's output; registered as its child "activation_post_process".
  std::shared_ptr<ObserverBase> activation_post_process;
  /// activation for the output; weight to make the weight observer at convert time.
  QConfig qconfig;
};

/// PyTorch's prepare (eager mode, in place): gives every QuantStub, every fused
/// nn::intrinsic module and every leaf Linear, Conv1d/2d/3d, ConvTranspose1d/2d/3d, ReLU,
/// BatchNorm2d/3d, LayerNorm and GroupNorm that has a qconfig an activation observer made by
/// qconfig.activation(): registered as the child "activation_post_process" (so state_dict
/// saves its statistics as "fc.activation_post_process.min_val") and run by a forward hook on
/// the module's output. Calibrate by running batches through `module`. DeQuantStub and the
/// insides of fused modules get none. Returns what it observed, in module order. Preparing a
/// module twice raises tensor::Error.
TENSOR_API std::vector<ObservedModule> prepare(nn::Module& module, const QConfig& qconfig,
                                               const QConfigOverrides& overrides = {});

/// The observed submodules of a prepared module (as prepare returned them), read back from the
/// tree: each module with an "activation_post_process" observer attached by prepare.
TENSOR_API std::vector<ObservedModule> observed_modules(nn::Module& module);

/// One observer's state: the qparams its statistics give now.
struct ObserverState {
  std::string name;  ///< the observed submodule's dotted name
  ScalarType dtype;
  QScheme qscheme;
  Tensor scale;       ///< float32 [1] (or [C] per channel)
  Tensor zero_point;  ///< int64 [1] (or [C])
  Tensor min_val, max_val;  ///< the recorded range (for a histogram: the histogram's range)
};

/// Reads every observer prepare attached: calculate_qparams() per observed submodule name.
TENSOR_API std::vector<ObserverState> get_observer_state(nn::Module& module);

/// Removes what prepare attached (observers and hooks), leaving the float module as before.
TENSOR_API void remove_observers(nn::Module& module);

/// Observes `weight` with a fresh weight observer of `qconfig` and quantizes it with the result:
/// quantize_per_tensor, or quantize_per_channel along the observer's ch_axis. What convert does
/// to each weight.
TENSOR_API Tensor quantize_weight(const QConfig& qconfig, const Tensor& weight);

// ---------------------------------------------------------------------------------------------
// convert and quantize_dynamic
// ---------------------------------------------------------------------------------------------

/// PyTorch's convert (eager mode, in place) of a prepared and calibrated module: every observed
/// QuantStub becomes Quantize(scale, zero_point, dtype) from its observer; every DeQuantStub
/// that prepare gave a QConfig (DeQuantStubImpl::prepared()) DeQuantize; every observed Linear,
/// nn::intrinsic::LinearReLU, Conv1d/2d/3d and nn::intrinsic::ConvReLU1d/2d/3d the nn::quantized
/// module with its weight quantized by quantize_weight(qconfig, weight), its float32 bias, and
/// the output scale and zero point of its activation observer; every observed
/// nn::quantized::FloatFunctional a QFunctional with its observer's scale and zero point (the
/// old object sends its method calls there); an observed ReLU stays (relu keeps its input's
/// parameters). Then the observers are removed. Modules are swapped as
/// fuse_modules swaps them (Note [Module swap by redirect]), so the model's own forward runs
/// the quantized modules; pooling, flatten and views between them work on quantized tensors.
/// Everything is checked before anything changes: a module that was never prepared, an
/// observer that saw no data, an observed module with no quantized counterpart (ConvTranspose,
/// the norms: fuse them or leave them float with a nullopt override), a dynamic QConfig,
/// activation observers of different dtypes, padding_mode other than zeros, or the module
/// itself being observed raise tensor::Error naming the submodule.
TENSOR_API void convert(nn::Module& module);

/// Options of convert.
struct ConvertOptions {
  /// Observers that saw no data give placeholder output parameters (scale 1, zero point 0, what
  /// PyTorch's observers return before any batch) instead of raising: a converted skeleton for
  /// load_state_dict / tensor::load to fill (Note [Converting for loading] in Convert.cpp).
  TENSOR_ARG(bool, allow_uncalibrated) = false;
};
/// convert with options: convert(model, ConvertOptions().allow_uncalibrated(true)) on a
/// prepared, never calibrated model, then tensor::load(model, path) of a converted model's file
/// restores every weight, scale and zero point.
TENSOR_API void convert(nn::Module& module, const ConvertOptions& options);

/// PyTorch's quantize_dynamic (in place): every nn::Linear and nn::intrinsic::LinearReLU below
/// `module` becomes nn::quantized::dynamic::Linear (followed by ReLU for LinearReLU), and every
/// nn::LSTM nn::quantized::dynamic::LSTM (LSTMImpl::from_float), each weight quantized by
/// quantize_weight(qconfig, weight): float32 in and out, activations quantized per call from
/// their range (reduce_range as the QConfig's activation observer says). A swapped LSTM is
/// reached through its old holder by LSTMImpl::redirect_lstm_forward. Weights not on the CPU or
/// not floating point, an LSTM with proj_size, and the module itself being one of these raise
/// tensor::Error naming the submodule, before anything changes. Returns the dotted names of the
/// swapped modules; none found raises tensor::Error.
TENSOR_API std::vector<std::string> quantize_dynamic(nn::Module& module,
                                                     const QConfig& qconfig = default_dynamic_qconfig());

}  // namespace tensor::quantization

namespace tensor::nn::intrinsic {

// Fused float modules (PyTorch's torch.ao.nn.intrinsic): what fuse_modules produces and convert
// maps to nn::quantized ones. Children "0" (the linear or conv) and "1" (the ReLU), as
// PyTorch names them. forward calls the children's forward directly, so a redirect from the
// original modules to this one cannot loop back (Note [Module swap by redirect]).

/// relu(linear(x)).
class TENSOR_API LinearReLUImpl : public Module {
 public:
  LinearReLUImpl(Linear linear, ReLU relu);
  Tensor forward(const Tensor& x);
  Linear linear;
  ReLU relu;
};
TENSOR_MODULE(LinearReLU);

/// relu(conv(x)) for Conv1d.
class TENSOR_API ConvReLU1dImpl : public Module {
 public:
  ConvReLU1dImpl(Conv1d conv, ReLU relu);
  Tensor forward(const Tensor& x);
  Conv1d conv;
  ReLU relu;
};
TENSOR_MODULE(ConvReLU1d);

/// relu(conv(x)) for Conv2d.
class TENSOR_API ConvReLU2dImpl : public Module {
 public:
  ConvReLU2dImpl(Conv2d conv, ReLU relu);
  Tensor forward(const Tensor& x);
  Conv2d conv;
  ReLU relu;
};
TENSOR_MODULE(ConvReLU2d);

/// relu(conv(x)) for Conv3d.
class TENSOR_API ConvReLU3dImpl : public Module {
 public:
  ConvReLU3dImpl(Conv3d conv, ReLU relu);
  Tensor forward(const Tensor& x);
  Conv3d conv;
  ReLU relu;
};
TENSOR_MODULE(ConvReLU3d);

}  // namespace tensor::nn::intrinsic
