// Quantized kernels and modules (issue 25; docs/quantization.md, "Kernels"): libtorch's
// torch.ops.quantized.* ops in tensor::quantized (int8 linear and convolution on oneDNN with
// weights packed once, add/mul/cat with an output scale) and the modules of
// torch.ao.nn.quantized in tensor::nn::quantized (Linear, Conv1d/2d/3d, their ReLU and Add
// fusions, dynamic::Linear and dynamic::LSTM). relu, max_pool2d, avg_pool2d, adaptive_avg_pool2d
// and cat on per-tensor quantized tensors go through the ordinary ops (their Quantized dispatch
// slots).
//
//   using namespace tensor;
//   nn::quantized::Linear fc(1024, 1024);
//   fc->set_weight_bias(quantize_per_channel(W, s, zeros({1024}, kInt64), 0, kQInt8), b);
//   fc->scale = 0.05; fc->zero_point = 64;
//   Tensor qy = fc(quantize_per_tensor(x, 0.02, 128, kQUInt8));
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "tensor/core/Tensor.h"
#include "tensor/nn/module.h"
#include "tensor/nn/pimpl.h"
#include "tensor/quantized.h"

namespace tensor {

namespace nn {
class LSTMImpl;
struct LSTMOptions;
}  // namespace nn
namespace quantization {
struct QConfig;
}  // namespace quantization

// ---- Quantized kernels (docs/quantization.md, "Kernels") ----
//
// libtorch's quantized ops (torch.ops.quantized.*): int8 linear and convolution on oneDNN with
// weights packed once, and elementwise/pooling ops on per-tensor quantized activations.
//
//   auto w = tensor::quantized::linear_prepack(quantize_per_channel(W, s, zeros, 0, kQInt8), b);
//   Tensor qy = tensor::quantized::linear(qx, *w, /*output_scale=*/0.1, /*output_zero_point=*/64);
namespace quantized {

/// Weights of a quantized linear layer packed once for oneDNN's int8 matmul: qint8 weight
/// [out_features, in_features] (per-tensor, or per-channel along dim 0, zero points 0) and an
/// optional float32 bias [out_features]. Made by linear_prepack; shared by modules and copies.
class TENSOR_API LinearPackedParams {
 public:
  struct Impl;
  explicit LinearPackedParams(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  /// The quantized weight and bias given to linear_prepack (libtorch's unpack()).
  std::tuple<Tensor, std::optional<Tensor>> unpack() const;
  /// The weight's dims: [out_features, in_features].
  int64_t in_features() const;
  int64_t out_features() const;
  const std::shared_ptr<Impl>& impl() const { return impl_; }

 private:
  std::shared_ptr<Impl> impl_;
};

/// Packs a qint8 weight [out, in] and an optional float32 bias [out] for linear/linear_dynamic.
/// Raises for other dtypes, a per-channel axis other than 0, nonzero weight zero points, or a
/// bias whose size is not `out`.
TENSOR_API std::shared_ptr<LinearPackedParams> linear_prepack(const Tensor& qweight,
                                                              const std::optional<Tensor>& bias = std::nullopt);
/// y = requantize(x W^T + b) for a per-tensor quint8/qint8 input [..., in]: int32 accumulation,
/// output of the input's dtype with this scale and zero point (rounding: Note [Requantization
/// in oneDNN] in src/ops/QuantizedLinear.cpp).
TENSOR_API Tensor linear(const Tensor& qx, const LinearPackedParams& w, double output_scale, int64_t output_zero_point);
/// linear with ReLU fused before requantization (outputs below the zero point become it).
TENSOR_API Tensor linear_relu(const Tensor& qx, const LinearPackedParams& w, double output_scale,
                              int64_t output_zero_point);
/// Dynamic quantization: float32 x [..., in] is quantized to quint8 with a scale and zero point
/// chosen from its min and max (choose_qparams), multiplied in int8 and returned in float32.
/// reduce_range uses 7 bits (libtorch's option for CPUs without VNNI).
TENSOR_API Tensor linear_dynamic(const Tensor& x, const LinearPackedParams& w, bool reduce_range = false);
/// linear_dynamic followed by ReLU.
TENSOR_API Tensor linear_relu_dynamic(const Tensor& x, const LinearPackedParams& w, bool reduce_range = false);

/// libtorch's choose_qparams for dynamic quantization: the range [min(x_min, 0), max(x_max, 0)]
/// mapped onto [qmin, qmax]; returns (scale, zero_point). A zero range gives scale 0.1.
TENSOR_API std::tuple<double, int64_t> choose_qparams(double x_min, double x_max, int64_t qmin, int64_t qmax);

/// Weights of a quantized convolution packed once for oneDNN's int8 convolution: qint8 weight
/// [out, in / groups, k...] (1 to 3 spatial dims; per-tensor or per-channel along dim 0, zero
/// points 0), an optional float32 bias [out], and the geometry.
class TENSOR_API ConvPackedParams {
 public:
  struct Impl;
  explicit ConvPackedParams(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  /// The quantized weight and bias given to conv_prepack.
  std::tuple<Tensor, std::optional<Tensor>> unpack() const;
  /// The geometry, one value per spatial dim.
  std::vector<int64_t> stride() const;
  std::vector<int64_t> padding() const;
  std::vector<int64_t> dilation() const;
  int64_t groups() const;
  const std::shared_ptr<Impl>& impl() const { return impl_; }

 private:
  std::shared_ptr<Impl> impl_;
};

/// Packs a convolution's weight and bias. stride/padding/dilation hold one value per spatial
/// dim of the weight (or one value for all).
TENSOR_API std::shared_ptr<ConvPackedParams> conv_prepack(const Tensor& qweight, const std::optional<Tensor>& bias,
                                                          IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                                          int64_t groups);
/// Quantized convolution of a per-tensor quint8/qint8 input [N, C, spatial...] (the spatial dims
/// of the packed weight): int32 accumulation requantized to the input's dtype with this scale and
/// zero point. The output is laid out channels-last (the layout oneDNN's int8 kernels use).
TENSOR_API Tensor conv(const Tensor& qx, const ConvPackedParams& w, double output_scale, int64_t output_zero_point);
/// conv with ReLU fused.
TENSOR_API Tensor conv_relu(const Tensor& qx, const ConvPackedParams& w, double output_scale,
                            int64_t output_zero_point);
/// conv(qx) + qresidual in one pass (residual blocks): the residual (per-tensor, the output's
/// dtype and shape) is added in real values before requantization (oneDNN's sum post-op).
TENSOR_API Tensor conv_add(const Tensor& qx, const ConvPackedParams& w, const Tensor& qresidual, double output_scale,
                           int64_t output_zero_point);
/// relu(conv(qx) + qresidual), fused.
TENSOR_API Tensor conv_add_relu(const Tensor& qx, const ConvPackedParams& w, const Tensor& qresidual,
                                double output_scale, int64_t output_zero_point);

/// qa + qb in real values, requantized with this scale and zero point (libtorch's
/// quantized::add): both per-tensor quantized of one dtype, broadcasting; output of that dtype.
TENSOR_API Tensor add(const Tensor& qa, const Tensor& qb, double scale, int64_t zero_point);
/// relu(qa + qb), requantized once.
TENSOR_API Tensor add_relu(const Tensor& qa, const Tensor& qb, double scale, int64_t zero_point);
/// qa * qb in real values, requantized with this scale and zero point (quantized::mul).
TENSOR_API Tensor mul(const Tensor& qa, const Tensor& qb, double scale, int64_t zero_point);
/// relu(qa * qb), requantized once.
TENSOR_API Tensor mul_relu(const Tensor& qa, const Tensor& qb, double scale, int64_t zero_point);
/// cat of per-tensor quantized tensors of one dtype, requantized to this scale and zero point.
TENSOR_API Tensor cat(TensorList qxs, int64_t dim, double scale, int64_t zero_point);

}  // namespace quantized

namespace nn::quantized {

// Note [Quantized module state]
// A quantized module's state_dict holds what PyTorch's holds: `weight` (the quantized weight,
// saved with its scales and zero points: docs/io_data.md), `bias` (float32, when there is one),
// and for static modules `scale` (float64, 0-dim) and `zero_point` (int64, 0-dim), the output's
// parameters. All four are buffers, so state_dict(), tensor::save and tensor::load handle them
// like any other, and load_state_dict copies into them in place (a quantized weight takes the
// file's scales and zero points, as libtorch's copy_ does). The packed oneDNN weights are a
// cache of the `weight` and `bias` buffers: forward repacks them when either buffer's version
// counter moved (a load, or any in-place write), so a loaded model computes with the loaded
// weights. The repack is not synchronized: after a load, make one call before calling forward
// from several threads at once. `scale` and `zero_point` read and write their buffers (OutputQParam), so
// `fc->scale = 0.05` keeps working and is what state_dict saves.

/// A number kept in a 0-dim buffer of its module: reads as T, assigns with fill_, so state_dict
/// saves and load_state_dict restores it (Note [Quantized module state]).
template <typename T>
class OutputQParam {
 public:
  OutputQParam() = default;
  /// Wraps `buffer` (0-dim, registered by the module); the handle shares its storage.
  explicit OutputQParam(Tensor buffer) : buffer_(std::move(buffer)) {}
  /// Assigning copies the value, never the buffer: `a->scale = b->scale` leaves two buffers.
  OutputQParam(const OutputQParam&) = default;
  OutputQParam& operator=(const OutputQParam& other) { return *this = static_cast<T>(other); }
  /// The buffer's value.
  operator T() const { return buffer_.template item<T>(); }
  /// Writes v into the buffer.
  OutputQParam& operator=(T v) {
    buffer_.fill_(v);
    return *this;
  }
  /// The buffer (what state_dict holds under "scale" / "zero_point").
  const Tensor& buffer() const noexcept { return buffer_; }

 private:
  Tensor buffer_;
};
template <typename T>
std::ostream& operator<<(std::ostream& os, const OutputQParam<T>& p) {
  return os << static_cast<T>(p);
}

/// A quantized linear layer (torch.ao.nn.quantized.Linear): quantized input [..., in] ->
/// quantized output [..., out] with `scale` and `zero_point`. Its weights start as qint8 zeros
/// (scale 1) and a zero bias until set_weight_bias.
class TENSOR_API LinearImpl : public Module {
 public:
  /// A layer with qint8 zero weights (scale 1) and, with_bias, a zero bias.
  LinearImpl(int64_t in_features, int64_t out_features, bool with_bias = true);
  /// Packs a qint8 weight [out, in] (per-tensor or per-channel along 0) and an optional bias;
  /// they become the `weight` and `bias` buffers (Note [Quantized module state]).
  void set_weight_bias(const Tensor& qweight, const std::optional<Tensor>& bias);
  /// The quantized weight and the bias (the buffers).
  Tensor weight() const;
  std::optional<Tensor> bias() const;
  /// quantized::linear(qx, packed, scale, zero_point).
  Tensor forward(const Tensor& qx);
  /// "QuantizedLinear(in_features=.., out_features=.., scale=.., zero_point=.., qscheme=..)".
  void pretty_print(std::ostream& stream) const override;
  /// The packed weights, repacked first if the weight or bias buffer changed since packing.
  const tensor::quantized::LinearPackedParams& packed_params();

  int64_t in_features, out_features;
  /// The output's quantization parameters (buffers "scale", float64, and "zero_point", int64).
  OutputQParam<double> scale;
  OutputQParam<int64_t> zero_point;
  std::shared_ptr<tensor::quantized::LinearPackedParams> packed;

 protected:
  virtual const char* type_name() const { return "QuantizedLinear"; }

 private:
  uint32_t weight_version_ = 0, bias_version_ = 0;
};
TENSOR_MODULE(Linear);

/// Linear followed by ReLU in one kernel (torch.ao.nn.intrinsic.quantized.LinearReLU).
class TENSOR_API LinearReLUImpl : public LinearImpl {
 public:
  using LinearImpl::LinearImpl;
  /// quantized::linear_relu(qx, packed, scale, zero_point).
  Tensor forward(const Tensor& qx);

 protected:
  const char* type_name() const override { return "QuantizedLinearReLU"; }
};
TENSOR_MODULE(LinearReLU);

/// A quantized convolution over 1 to 3 spatial dims (torch.ao.nn.quantized.Conv1d/2d/3d share
/// it): quantized input [N, in, spatial...] -> quantized output [N, out, spatial...] with `scale`
/// and `zero_point`. `fuse` selects the fused tail: none, ReLU, residual add, add then ReLU.
class TENSOR_API ConvNdImpl : public Module {
 public:
  enum class Fuse { None, ReLU, Add, AddReLU };
  /// A layer with qint8 zero weights [out, in / groups, kernel...] (scale 1) and, with_bias, a
  /// zero bias; kernel_size/stride/padding/dilation hold one value per spatial dim.
  ConvNdImpl(int64_t spatial_dims, int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size,
             std::vector<int64_t> stride, std::vector<int64_t> padding, std::vector<int64_t> dilation, int64_t groups,
             bool with_bias, Fuse fuse);
  /// Packs a qint8 weight [out, in / groups, k...] and an optional bias with this module's
  /// geometry; they become the `weight` and `bias` buffers (Note [Quantized module state]).
  void set_weight_bias(const Tensor& qweight, const std::optional<Tensor>& bias);
  /// The quantized weight and the bias (the buffers).
  Tensor weight() const;
  std::optional<Tensor> bias() const;
  /// Fuse::None or ReLU.
  Tensor forward(const Tensor& qx);
  /// Fuse::Add or AddReLU: the residual is added before the (ReLU and) requantization.
  Tensor forward(const Tensor& qx, const Tensor& qresidual);
  /// "QuantizedConvReLU2d(in, out, kernel_size=(..), stride=(..), scale=.., zero_point=.., ...)".
  void pretty_print(std::ostream& stream) const override;
  /// The packed weights, repacked first if the weight or bias buffer changed since packing.
  const tensor::quantized::ConvPackedParams& packed_params();

  int64_t spatial_dims, in_channels, out_channels, groups;
  std::vector<int64_t> kernel_size, stride, padding, dilation;
  Fuse fuse;
  /// The output's quantization parameters (buffers "scale", float64, and "zero_point", int64).
  OutputQParam<double> scale;
  OutputQParam<int64_t> zero_point;
  std::shared_ptr<tensor::quantized::ConvPackedParams> packed;

 private:
  uint32_t weight_version_ = 0, bias_version_ = 0;
};

/// Options of the quantized convolutions, as the float ones (one value for every spatial dim).
struct QuantizedConvArgs {
  int64_t stride = 1, padding = 0, dilation = 1, groups = 1;
  bool bias = true;
};

#define TENSOR_QUANTIZED_CONV(Name, Dims, FuseKind)                                                                  \
  class TENSOR_API Name##Impl : public ConvNdImpl {                                                                  \
   public:                                                                                                           \
    /** A square (cubic) kernel; the options apply to every spatial dim. */                                          \
    Name##Impl(int64_t in_channels, int64_t out_channels, int64_t kernel_size, QuantizedConvArgs a = {})             \
        : ConvNdImpl(Dims, in_channels, out_channels, std::vector<int64_t>(Dims, kernel_size),                       \
                     std::vector<int64_t>(Dims, a.stride), std::vector<int64_t>(Dims, a.padding),                    \
                     std::vector<int64_t>(Dims, a.dilation), a.groups, a.bias, Fuse::FuseKind) {}                    \
    /** One value per spatial dim for each of kernel_size, stride, padding and dilation (what a float */             \
    /** Conv's options hold, for convert). */                                                                        \
    Name##Impl(int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size,                          \
               std::vector<int64_t> stride, std::vector<int64_t> padding, std::vector<int64_t> dilation,             \
               int64_t groups = 1, bool bias = true)                                                                 \
        : ConvNdImpl(Dims, in_channels, out_channels, std::move(kernel_size), std::move(stride), std::move(padding), \
                     std::move(dilation), groups, bias, Fuse::FuseKind) {}                                           \
  };                                                                                                                 \
  TENSOR_MODULE(Name)

/// torch.ao.nn.quantized.Conv1d / Conv2d / Conv3d.
TENSOR_QUANTIZED_CONV(Conv1d, 1, None);
TENSOR_QUANTIZED_CONV(Conv2d, 2, None);
TENSOR_QUANTIZED_CONV(Conv3d, 3, None);
/// torch.ao.nn.intrinsic.quantized.ConvReLU1d / 2d / 3d.
TENSOR_QUANTIZED_CONV(ConvReLU1d, 1, ReLU);
TENSOR_QUANTIZED_CONV(ConvReLU2d, 2, ReLU);
TENSOR_QUANTIZED_CONV(ConvReLU3d, 3, ReLU);
/// torch.ao.nn.intrinsic.quantized.ConvAdd2d / ConvAddReLU2d: forward(qx, qresidual).
TENSOR_QUANTIZED_CONV(ConvAdd2d, 2, Add);
TENSOR_QUANTIZED_CONV(ConvAddReLU2d, 2, AddReLU);
#undef TENSOR_QUANTIZED_CONV

// ---- FloatFunctional and QFunctional: arithmetic between modules (residual adds) ----

// Note [FloatFunctional]
// PyTorch's eager mode quantizes the arithmetic a forward does between modules (a ResNet
// block's skip add) through a module that does it: FloatFunctional computes in float and, once
// prepare has given it an observer, records each result; convert swaps it for QFunctional, which
// calls the quantized kernels with the observed scale and zero point. prepare feeds the observer
// as for any observed module, through a forward hook, which FloatFunctional's methods run on
// their result. A parent calls `skip_add->add(out, identity)` through its typed member, which
// neither the tree swap nor the one-Tensor forward redirect reaches (Note [Module swap by
// redirect]), so convert also points the old FloatFunctional at its QFunctional (redirect_to):
// from then on its methods call the QFunctional's. add_scalar and mul_scalar are not observed,
// as in PyTorch: their quantized forms derive the output's parameters from the input's.

class QFunctionalImpl;

/// torch.ao.nn.quantized.FloatFunctional: float arithmetic as a module, so that prepare can
/// observe its results and convert can swap it for QFunctional (Note [FloatFunctional]).
///   skip_add = register_module("skip_add", nn::quantized::FloatFunctional());
///   Tensor y = relu(skip_add->add(out, identity));
class TENSOR_API FloatFunctionalImpl : public Module {
 public:
  FloatFunctionalImpl();
  /// a + b (broadcasting).
  Tensor add(const Tensor& a, const Tensor& b);
  /// relu(a + b).
  Tensor add_relu(const Tensor& a, const Tensor& b);
  /// a * b (broadcasting).
  Tensor mul(const Tensor& a, const Tensor& b);
  /// relu(a * b).
  Tensor mul_relu(const Tensor& a, const Tensor& b);
  /// cat(xs, dim).
  Tensor cat(TensorList xs, int64_t dim = 0);
  /// a + c; not observed (QFunctional::add_scalar derives its output's parameters).
  Tensor add_scalar(const Tensor& a, double c);
  /// a * c; not observed (QFunctional::mul_scalar derives its output's parameters).
  Tensor mul_scalar(const Tensor& a, double c);
  /// Sends every later call to `target` (convert's swap; null restores the float arithmetic).
  void redirect_to(std::shared_ptr<QFunctionalImpl> target) { redirect_ = std::move(target); }
  /// The QFunctional the calls go to, or null.
  const std::shared_ptr<QFunctionalImpl>& redirect() const noexcept { return redirect_; }
  /// "FloatFunctional()".
  void pretty_print(std::ostream& stream) const override;

 private:
  // Runs the forward hooks (prepare's observer) on a result.
  Tensor observe(const Tensor& result);
  std::shared_ptr<QFunctionalImpl> redirect_;
};
TENSOR_MODULE(FloatFunctional);

/// torch.ao.nn.quantized.QFunctional: FloatFunctional's methods on per-tensor quantized
/// tensors, each result requantized with `scale` and `zero_point` (the observed output's
/// parameters; buffers, so state_dict saves them: Note [Quantized module state]).
class TENSOR_API QFunctionalImpl : public Module {
 public:
  explicit QFunctionalImpl(double scale = 1.0, int64_t zero_point = 0);
  /// quantized::add(qa, qb, scale, zero_point).
  Tensor add(const Tensor& qa, const Tensor& qb);
  /// quantized::add_relu(qa, qb, scale, zero_point).
  Tensor add_relu(const Tensor& qa, const Tensor& qb);
  /// quantized::mul(qa, qb, scale, zero_point).
  Tensor mul(const Tensor& qa, const Tensor& qb);
  /// quantized::mul_relu(qa, qb, scale, zero_point).
  Tensor mul_relu(const Tensor& qa, const Tensor& qb);
  /// quantized::cat(qxs, dim, scale, zero_point).
  Tensor cat(TensorList qxs, int64_t dim = 0);
  /// qa + c, as libtorch's quantized::add_scalar: c is rounded to qa's grid (c_q =
  /// nearbyint(c / s)) and the integers are kept with zero point z - c_q; when that leaves the
  /// dtype's range, the zero point is the range's end and the scale grows to hold the shifted
  /// range, the integers requantized in float64. Ignores `scale` and `zero_point`.
  Tensor add_scalar(const Tensor& qa, double c);
  /// qa * c, as libtorch's quantized::mul_scalar: the same integers with scale s * c for c > 0;
  /// for c < 0 the integers mirrored in the dtype's range (q' = qmin + qmax - q, likewise the
  /// zero point) with scale s * |c|; for c = 0 zeros with scale 1 and zero point 0. Exact.
  Tensor mul_scalar(const Tensor& qa, double c);
  /// "QFunctional(scale=.., zero_point=..)".
  void pretty_print(std::ostream& stream) const override;

  /// The output's quantization parameters (buffers "scale", float64, and "zero_point", int64).
  OutputQParam<double> scale;
  OutputQParam<int64_t> zero_point;
};
TENSOR_MODULE(QFunctional);

namespace dynamic {
/// A dynamically quantized linear layer (torch.ao.nn.quantized.dynamic.Linear): float32 input,
/// quantized per call from its range, int8 weights, float32 output.
class TENSOR_API LinearImpl : public Module {
 public:
  /// A layer with qint8 zero weights (scale 1) and, with_bias, a zero bias.
  LinearImpl(int64_t in_features, int64_t out_features, bool with_bias = true);
  /// Packs a qint8 weight [out, in] (per-tensor or per-channel along 0) and an optional bias;
  /// they become the `weight` and `bias` buffers (Note [Quantized module state]).
  void set_weight_bias(const Tensor& qweight, const std::optional<Tensor>& bias);
  /// The quantized weight and the bias (the buffers).
  Tensor weight() const;
  std::optional<Tensor> bias() const;
  /// quantized::linear_dynamic(x, packed, reduce_range): float32 in, float32 out.
  Tensor forward(const Tensor& x);
  /// "DynamicQuantizedLinear(in_features=.., out_features=.., dtype=torch.qint8, qscheme=..)".
  void pretty_print(std::ostream& stream) const override;
  /// The packed weights, repacked first if the weight or bias buffer changed since packing.
  const tensor::quantized::LinearPackedParams& packed_params();

  int64_t in_features, out_features;
  /// 7-bit activations (libtorch's option for CPUs without VNNI).
  bool reduce_range = false;
  std::shared_ptr<tensor::quantized::LinearPackedParams> packed;

 private:
  uint32_t weight_version_ = 0, bias_version_ = 0;
};
TENSOR_MODULE(Linear);

/// A dynamically quantized LSTM (torch.ao.nn.quantized.dynamic.LSTM): the options, forward and
/// outputs of nn::LSTM (layers, bidirectional, batch_first, bias, inter-layer dropout in training;
/// no proj_size), float32 in and out. Each layer and direction's weight_ih [4H, in] and
/// weight_hh [4H, H] are qint8 (per-tensor or per-channel along dim 0) and packed once; every
/// gate product is quantized::linear_dynamic, the gates and the cell update are float32 (Note
/// [Dynamic quantized LSTM] in src/nn/QuantizedLSTM.cpp). state_dict holds the float LSTM's
/// names: weight_ih_l{k}[_reverse], weight_hh_l{k}[_reverse] (quantized) and bias_ih_l{k},
/// bias_hh_l{k} (float32) as buffers, repacked when they change (Note [Quantized module state]).
///
///   auto q = nn::quantized::dynamic::LSTMImpl::from_float(*float_lstm);   // or quantize_dynamic
///   auto [out, state] = q->forward(x);                                   // state = (h_n, c_n)
class TENSOR_API LSTMImpl : public Module {
 public:
  /// Weights start as qint8 zeros (scale 1) and zero biases, until set_weight_bias.
  LSTMImpl(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1, bool bias = true, bool batch_first = false,
           double dropout = 0.0, bool bidirectional = false);
  /// From a float LSTM's options (include tensor/nn/rnn.h); proj_size must be 0.
  explicit LSTMImpl(const ::tensor::nn::LSTMOptions& options);
  /// PyTorch's from_float: every weight quantized by quantization::quantize_weight(qconfig, w)
  /// (per-tensor or per-channel as the QConfig's weight observer says), biases as float32,
  /// reduce_range from the QConfig's activation observer, and the float module's training mode.
  /// Raises for proj_size > 0 and weights that are not float CPU tensors.
  static std::shared_ptr<LSTMImpl> from_float(const ::tensor::nn::LSTMImpl& lstm,
                                              const ::tensor::quantization::QConfig& qconfig);
  /// from_float with quantization::default_dynamic_qconfig().
  static std::shared_ptr<LSTMImpl> from_float(const ::tensor::nn::LSTMImpl& lstm);
  /// Sets (and packs) one layer and direction's weights: qint8 w_ih [4H, in] and w_hh [4H, H],
  /// float32 biases [4H] (given exactly when the module has bias).
  void set_weight_bias(int64_t layer, bool reverse, const Tensor& w_ih, const Tensor& w_hh,
                       const std::optional<Tensor>& b_ih, const std::optional<Tensor>& b_hh);
  /// input [T, N, input_size] ([N, T, input_size] with batch_first, or unbatched [T, input_size]),
  /// float32; hx = (h_0, c_0), each [L*D, N, H] ([L*D, H] unbatched), zeros when not given ->
  /// (output [T, N, D*H], (h_n, c_n)), as nn::LSTM.
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(const Tensor& input,
                                                         std::optional<std::tuple<Tensor, Tensor>> hx_opt = {});
  /// "DynamicQuantizedLSTM(8, 16, num_layers=2, bidirectional=true)", as PyTorch prints it.
  void pretty_print(std::ostream& stream) const override;

  int64_t input_size, hidden_size, num_layers;
  bool bias, batch_first;
  double dropout;
  bool bidirectional;
  /// 7-bit activations (libtorch's option for CPUs without VNNI).
  bool reduce_range = false;

 private:
  // One layer and direction: the packed weights and the buffer versions they were packed at.
  struct Cell {
    std::string suffix;  // "l0", "l0_reverse", ...
    std::shared_ptr<tensor::quantized::LinearPackedParams> ih, hh;
    uint32_t versions[4] = {0, 0, 0, 0};
  };
  std::vector<Cell> cells_;
  // The cell's packed weights, repacked first if one of its buffers changed since packing.
  Cell& packed_cell(size_t index);
};
TENSOR_MODULE(LSTM);
}  // namespace dynamic

}  // namespace nn::quantized
}  // namespace tensor
