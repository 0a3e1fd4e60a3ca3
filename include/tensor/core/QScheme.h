// How a quantized tensor maps its integers to real values (libtorch's c10::QScheme).
#pragma once

#include <cstdint>
#include <iosfwd>

#include "tensor/export.h"

namespace tensor {

/// Quantization schemes, in libtorch's order. Tensors made today are PerTensorAffine or
/// PerChannelAffine; the symmetric ones name what observers will ask for (docs/quantization.md).
enum class QScheme : uint8_t {
  PerTensorAffine = 0,
  PerChannelAffine = 1,
  PerTensorSymmetric = 2,
  PerChannelSymmetric = 3,
  PerChannelAffineFloatQParams = 4,
};
constexpr QScheme kPerTensorAffine = QScheme::PerTensorAffine;
constexpr QScheme kPerChannelAffine = QScheme::PerChannelAffine;
constexpr QScheme kPerTensorSymmetric = QScheme::PerTensorSymmetric;
constexpr QScheme kPerChannelSymmetric = QScheme::PerChannelSymmetric;
constexpr QScheme kPerChannelAffineFloatQParams = QScheme::PerChannelAffineFloatQParams;

/// libtorch's names: "per_tensor_affine", "per_channel_affine", ...
TENSOR_API const char* to_string(QScheme q);
TENSOR_API std::ostream& operator<<(std::ostream& os, QScheme q);

}  // namespace tensor
