// Devices: CPU, CUDA:n and Meta.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "tensor/export.h"

namespace tensor {

/// Where a tensor's memory lives. Meta tensors have shapes and dtypes but no memory.
enum class DeviceType : int8_t { CPU = 0, CUDA = 1, Meta = 2 };

constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;
constexpr DeviceType kMeta = DeviceType::Meta;

/// A device type and an index (-1 means "the current one" for CUDA).
class TENSOR_API Device {
 public:
  Device(DeviceType type, int8_t index = -1) : type_(type), index_(index) {}
  /// Parses "cpu", "cuda", "cuda:1", "meta"; throws tensor::Error on anything else.
  Device(const std::string& spec);
  Device(const char* spec) : Device(std::string(spec)) {}

  DeviceType type() const { return type_; }
  int8_t index() const { return index_; }
  bool has_index() const { return index_ >= 0; }
  bool is_cpu() const { return type_ == DeviceType::CPU; }
  bool is_cuda() const { return type_ == DeviceType::CUDA; }
  bool is_meta() const { return type_ == DeviceType::Meta; }
  bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  /// "cpu", "cuda:0", "meta".
  std::string str() const;

 private:
  DeviceType type_;
  int8_t index_;
};

TENSOR_API std::ostream& operator<<(std::ostream& os, const Device& d);
TENSOR_API std::ostream& operator<<(std::ostream& os, DeviceType d);

}  // namespace tensor
