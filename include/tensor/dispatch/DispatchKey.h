// Dispatch keys and key sets (ARCHITECTURE.md: Dispatcher).
#pragma once

#include <cstdint>

#include "tensor/export.h"

namespace tensor {

/// Keys in increasing priority: backends first, then Quantized, Autograd, Autocast, Profiler.
/// A call goes to the kernel of the highest key present in its key set. Quantized is carried
/// by tensors of a quantized dtype (libtorch's QuantizedCPU): an op without a Quantized kernel
/// raises instead of running a backend kernel on the raw integers (Note [Quantized key]).
enum class DispatchKey : uint8_t {
  Undefined = 0,
  CPU = 1,
  CUDA = 2,
  Meta = 3,
  Quantized = 4,
  Autograd = 5,
  Autocast = 6,
  Profiler = 7,
  NumKeys = 8,
};
constexpr int kNumDispatchKeys = static_cast<int>(DispatchKey::NumKeys);

/// A bitset of DispatchKeys. The highest set bit picks the kernel.
class DispatchKeySet {
 public:
  constexpr DispatchKeySet() = default;
  constexpr explicit DispatchKeySet(DispatchKey k) : bits_(k == DispatchKey::Undefined ? 0 : 1u << static_cast<int>(k)) {}
  constexpr static DispatchKeySet from_bits(uint16_t b) { DispatchKeySet s; s.bits_ = b; return s; }
  constexpr bool has(DispatchKey k) const { return bits_ & (1u << static_cast<int>(k)); }
  constexpr DispatchKeySet operator|(DispatchKeySet o) const { return from_bits(bits_ | o.bits_); }
  constexpr DispatchKeySet operator&(DispatchKeySet o) const { return from_bits(bits_ & o.bits_); }
  constexpr DispatchKeySet remove(DispatchKey k) const { return from_bits(bits_ & ~DispatchKeySet(k).bits_); }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr uint16_t raw() const { return bits_; }
  /// The highest-priority key in the set (Undefined when empty).
  DispatchKey highest() const {
    return bits_ ? static_cast<DispatchKey>(31 - __builtin_clz(static_cast<unsigned>(bits_))) : DispatchKey::Undefined;
  }
  /// The keys strictly below k.
  constexpr DispatchKeySet below(DispatchKey k) const {
    return from_bits(bits_ & static_cast<uint16_t>((1u << static_cast<int>(k)) - 1u));
  }

 private:
  uint16_t bits_ = 0;
};

/// Printable name of a key ("CPU", "Autograd", ...).
TENSOR_API const char* to_string(DispatchKey k);

}  // namespace tensor
