// Options for factories: dtype, device, requires_grad, memory_format.
#pragma once

#include <optional>

#include "tensor/core/Device.h"
#include "tensor/core/MemoryFormat.h"
#include "tensor/core/ScalarType.h"

namespace tensor {

/// Builder for factory options, as libtorch: `dtype(kFloat64).device(kCPU).requires_grad(true)`.
class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(ScalarType t) : dtype_(t), has_dtype_(true) {}
  TensorOptions(Device d) : device_(d), has_device_(true) {}
  TensorOptions(DeviceType d) : device_(d), has_device_(true) {}

  TensorOptions dtype(ScalarType t) const { TensorOptions o = *this; o.dtype_ = t; o.has_dtype_ = true; return o; }
  TensorOptions device(Device d) const { TensorOptions o = *this; o.device_ = d; o.has_device_ = true; return o; }
  TensorOptions requires_grad(bool r) const { TensorOptions o = *this; o.requires_grad_ = r; return o; }
  /// The layout empty() gives its result (Contiguous, ChannelsLast for 4-d, ChannelsLast3d for
  /// 5-d), and the layout to(options) converts to.
  TensorOptions memory_format(MemoryFormat f) const { TensorOptions o = *this; o.memory_format_ = f; return o; }

  /// The dtype, or the default dtype when unset.
  ScalarType dtype() const { return has_dtype_ ? dtype_ : get_default_dtype(); }
  Device device() const { return has_device_ ? device_ : default_device(); }
  bool requires_grad() const { return requires_grad_; }
  bool has_dtype() const { return has_dtype_; }
  bool has_device() const { return has_device_; }
  bool has_memory_format() const { return memory_format_.has_value(); }
  /// The memory format, or nullopt when unset (factories then make contiguous tensors).
  std::optional<MemoryFormat> memory_format_opt() const { return memory_format_; }

  /// The device used by factories when none is given (CPU unless set_default_device changed it).
  TENSOR_API static Device default_device();

 private:
  ScalarType dtype_ = ScalarType::Float;
  Device device_ = Device(kCPU);
  bool has_dtype_ = false;
  bool has_device_ = false;
  bool requires_grad_ = false;
  std::optional<MemoryFormat> memory_format_;
};

/// Options with only the dtype set.
inline TensorOptions dtype(ScalarType t) { return TensorOptions().dtype(t); }
/// Options with only the device set.
inline TensorOptions device(Device d) { return TensorOptions().device(d); }
/// Options with only requires_grad set.
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }
/// Options with only the memory format set.
inline TensorOptions memory_format(MemoryFormat f) { return TensorOptions().memory_format(f); }
/// Sets the device used by factories when none is given. Only the CPU is accepted for now
/// (raises tensor::Error otherwise; Note [Default device is the CPU] in src/core/Device.cpp).
TENSOR_API void set_default_device(Device d);

}  // namespace tensor
