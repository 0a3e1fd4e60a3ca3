// builtin_ops(): every built-in dispatcher op and the slots it fills (src/ops/AllOps.h).
#include "src/ops/AllOps.h"

namespace tensor::ops {

std::vector<OpSummary> builtin_ops() {
  std::vector<OpSummary> out;
  for_each_op([&](const auto& def, Recording r) {
    DispatchKeySet slots;
    for (int k = 0; k < kNumDispatchKeys; ++k)
      if (def.kernels[k] != nullptr) slots = slots | DispatchKeySet(static_cast<DispatchKey>(k));
    out.push_back({&def, def.name, r, slots});
  });
  return out;
}

}  // namespace tensor::ops
