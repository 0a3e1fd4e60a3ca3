#include "tensor/core/Device.h"

#include <ostream>

#include "src/core/Check.h"
#include "tensor/core/TensorOptions.h"

namespace tensor {

Device::Device(const std::string& spec) : type_(DeviceType::CPU), index_(-1) {
  std::string kind = spec, idx;
  auto colon = spec.find(':');
  if (colon != std::string::npos) {
    kind = spec.substr(0, colon);
    idx = spec.substr(colon + 1);
  }
  if (kind == "cpu") type_ = DeviceType::CPU;
  else if (kind == "cuda") type_ = DeviceType::CUDA;
  else if (kind == "meta") type_ = DeviceType::Meta;
  else TENSOR_ERROR("Device: unknown device '{}' (expected cpu, cuda, cuda:N or meta)", spec);
  if (colon != std::string::npos) {
    bool ok = !idx.empty() && idx.size() <= 3 && idx.find_first_not_of("0123456789") == std::string::npos;
    TENSOR_CHECK(ok && std::stoi(idx) < 128, "Device: bad device index in '{}'", spec);
    index_ = static_cast<int8_t>(std::stoi(idx));
  }
}

std::string Device::str() const {
  switch (type_) {
    case DeviceType::CPU: return "cpu";
    case DeviceType::Meta: return "meta";
    default: return index_ >= 0 ? "cuda:" + std::to_string(index_) : "cuda";
  }
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }
std::ostream& operator<<(std::ostream& os, DeviceType d) { return os << Device(d).str(); }

static Device g_default_device(DeviceType::CPU);
Device TensorOptions::default_device() { return g_default_device; }
// Note [Default device is the CPU]
// Library code builds host scratch tensors (tensor::tensor of a vector, index tables, sampler
// permutations, quantization observers, DDP headers) with default options and writes them
// through host pointers; with a CUDA default device those writes would hit device memory and
// crash. Until every such site names the CPU, only the CPU may be the default device.
void set_default_device(Device d) {
  TENSOR_CHECK(d.is_cpu(), "set_default_device: only the CPU can be the default device (got {}); pass the "
               "device to factories instead, e.g. zeros(shape, TensorOptions().device(Device(kCUDA)))",
               d.str());
  g_default_device = d;
}

}  // namespace tensor
