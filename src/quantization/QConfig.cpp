// QConfigs, stubs, Quantize/DeQuantize and quantize_weight of tensor::quantization
// (PyTorch's torch/ao/quantization/qconfig.py, stubs.py and nnq.Quantize/DeQuantize).
#include <ostream>

#include "src/core/Check.h"
#include "tensor/ops.h"
#include "tensor/quantization.h"
#include "tensor/quantized.h"

namespace tensor::quantization {

namespace {

// PyTorch's default_observer: quint8 with quant range 0..127 (the reduced range, spelled as a
// custom range as PyTorch now spells it).
ObserverFactory default_observer() {
  return observer_factory<MinMaxObserver>(ObserverOptions().quant_min(0).quant_max(127));
}
// PyTorch's default_weight_observer.
ObserverFactory default_weight_observer() {
  return observer_factory<MinMaxObserver>(ObserverOptions().dtype(kQInt8).qscheme(kPerTensorSymmetric));
}
// PyTorch's default_per_channel_weight_observer.
ObserverFactory default_per_channel_weight_observer() {
  return observer_factory<PerChannelMinMaxObserver>(ObserverOptions().dtype(kQInt8).qscheme(kPerChannelSymmetric));
}

}  // namespace

QConfig default_qconfig() { return {default_observer(), default_weight_observer()}; }

QConfig default_per_channel_qconfig() { return {default_observer(), default_per_channel_weight_observer()}; }

QConfig default_dynamic_qconfig() {
  ObserverOptions act = ObserverOptions().dtype(kQUInt8).quant_min(0).quant_max(255);
  return {[act]() -> std::shared_ptr<ObserverBase> { return std::make_shared<PlaceholderObserver>(act, true); },
          default_weight_observer()};
}

QConfig get_default_qconfig(const std::string& backend) {
  if (backend == "x86" || backend == "fbgemm") {
    return {observer_factory<HistogramObserver>(ObserverOptions().reduce_range(true)),
            default_per_channel_weight_observer()};
  }
  if (backend == "onednn") {
    return {observer_factory<HistogramObserver>(ObserverOptions().reduce_range(false)),
            default_per_channel_weight_observer()};
  }
  if (backend == "qnnpack") {
    return {observer_factory<HistogramObserver>(ObserverOptions().reduce_range(false)), default_weight_observer()};
  }
  TENSOR_ERROR("get_default_qconfig: unknown backend '{}' (expected \"x86\", \"fbgemm\", \"onednn\" or \"qnnpack\")",
               backend);
}

// ---- stubs ----

QuantStubImpl::QuantStubImpl() : nn::Module("QuantStub") {}
DeQuantStubImpl::DeQuantStubImpl() : nn::Module("DeQuantStub") {}

QuantizeImpl::QuantizeImpl(double s, int64_t zp, ScalarType dt) : nn::Module("Quantize"), dtype(dt) {
  TENSOR_CHECK(dt == kQUInt8 || dt == kQInt8 || dt == kQInt32, "Quantize: dtype must be a quantized dtype, got {}", dt);
  // Checks scale and zero point against the dtype now rather than on the first batch.
  (void)quantize_per_tensor(zeros({1}, kFloat32), s, zp, dt);
  scale = register_buffer("scale", full({1}, s, kFloat32));
  zero_point = register_buffer("zero_point", full({1}, zp, kInt64));
}

Tensor QuantizeImpl::forward(const Tensor& x) {
  return quantize_per_tensor(x, scale.item<double>(), zero_point.item<int64_t>(), dtype);
}

void QuantizeImpl::pretty_print(std::ostream& stream) const {
  stream << "Quantize(scale=" << scale.item<double>() << ", zero_point=" << zero_point.item<int64_t>()
         << ", dtype=" << to_string(dtype) << ")";
}

DeQuantizeImpl::DeQuantizeImpl() : nn::Module("DeQuantize") {}

Tensor DeQuantizeImpl::forward(const Tensor& x) {
  TENSOR_CHECK(x.is_quantized(), "DeQuantize: expected a quantized tensor, got dtype {}", x.scalar_type());
  return x.dequantize();
}

// ---- quantize_weight ----

Tensor quantize_weight(const QConfig& qconfig, const Tensor& weight) {
  TENSOR_CHECK(static_cast<bool>(qconfig.weight), "quantize_weight: the QConfig has no weight observer factory");
  std::shared_ptr<ObserverBase> obs = qconfig.weight();
  TENSOR_CHECK(obs != nullptr, "quantize_weight: the QConfig's weight factory returned no observer");
  obs->forward(weight);
  auto [scale, zero_point] = obs->calculate_qparams();
  Tensor w = weight.detach().to(kFloat32);
  if (auto* pc = dynamic_cast<PerChannelMinMaxObserver*>(obs.get())) {
    const int64_t axis = pc->ch_axis() < 0 ? pc->ch_axis() + w.dim() : pc->ch_axis();
    return quantize_per_channel(w, scale.to(kFloat64), zero_point, axis, obs->dtype());
  }
  return quantize_per_tensor(w, scale.item<double>(), zero_point.item<int64_t>(), obs->dtype());
}

}  // namespace tensor::quantization
