// Controls of the oneDNN CPU backend (Note [Primitive cache] in src/cpu/OneDNN.h).
#pragma once

#include <cstddef>

#include "tensor/export.h"

namespace tensor::onednn {

/// Sets how many oneDNN primitives the LRU cache keeps (0 turns caching off). The default is
/// 1024, or the environment variable TENSOR_ONEDNN_CACHE_CAPACITY.
TENSOR_API void set_primitive_cache_capacity(size_t n);
/// The cache's capacity, in primitives.
TENSOR_API size_t primitive_cache_capacity();
/// Primitives cached now.
TENSOR_API size_t primitive_cache_size();
/// Cache lookups that missed (and so created a primitive) since the process started.
TENSOR_API size_t primitive_cache_misses();

}  // namespace tensor::onednn
