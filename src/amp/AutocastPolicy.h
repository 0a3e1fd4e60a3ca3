// Internal: autocast's cast policy, one row per op name (Note [Autocast policy]).
#pragma once

#include <cstdint>
#include <string_view>

#include "tensor/core/Device.h"
#include "tensor/export.h"

namespace tensor::autocast {

/// What autocast does to an op's floating-point tensor inputs (libtorch's CastPolicy).
enum class CastPolicy : uint8_t {
  None,            ///< not listed for this device: the op runs in its inputs' dtypes
  LowerPrecision,  ///< cast to the region's dtype (bf16 or fp16): matrix products, convolutions
  Fp32,            ///< cast lower-precision inputs up to float32: reductions, exp/log, norms, losses
  Promote,         ///< cast every input to the widest input dtype (float32 wins over bf16/fp16)
  Banned,          ///< unsafe under autocast: throws tensor::Error saying what to use instead
};

/// One row of the policy: an op's public name and its policy on CPU and on CUDA.
struct PolicyRow {
  std::string_view name;
  CastPolicy cpu;
  CastPolicy cuda;
};

/// The policy table (every row; see AutocastPolicy.cpp). These four are exported for tests.
TENSOR_API const PolicyRow* policy_rows(size_t* count);
/// Names in the table that are not dispatcher ops in this tree yet (composites such as the nn
/// losses, or ops another branch is adding). Their rows apply as soon as such an op exists.
TENSOR_API const std::string_view* pending_ops(size_t* count);
/// The policy of `op` on `device` (None when the table has no row for it).
TENSOR_API CastPolicy policy_for(std::string_view op, DeviceType device);
/// Fills the Autocast slot of every dispatcher op the table names, once (Note [Lazy autocast
/// registration]); returns how many slots it filled.
TENSOR_API size_t ensure_autocast_kernels();

}  // namespace tensor::autocast
