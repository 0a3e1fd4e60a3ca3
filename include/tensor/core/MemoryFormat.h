// MemoryFormat: the order in which a dense tensor's dims are laid out in memory, as libtorch's
// c10::MemoryFormat (Note [Memory formats] in src/ops/MemoryFormat.cpp).
#pragma once

#include <cstdint>
#include <iosfwd>

#include "tensor/export.h"

namespace tensor {

/// Contiguous: row-major. ChannelsLast: (N, C, H, W) sizes laid out as N, H, W, C (4-d only).
/// ChannelsLast3d: (N, C, D, H, W) laid out as N, D, H, W, C (5-d only). Preserve: the source's
/// strides when it is dense and non-overlapping, else the layout suggest_memory_format() names
/// (only where a result is made from a source: to(), clone(), empty_like()).
enum class MemoryFormat : int8_t { Contiguous, Preserve, ChannelsLast, ChannelsLast3d };

/// "Contiguous", "Preserve", "ChannelsLast" or "ChannelsLast3d".
TENSOR_API const char* to_string(MemoryFormat f);
TENSOR_API std::ostream& operator<<(std::ostream& os, MemoryFormat f);

}  // namespace tensor
