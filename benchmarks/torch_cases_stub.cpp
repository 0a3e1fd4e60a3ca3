// Built when libtorch is not installed: no twins, figures for libtensor only.
#include "harness.h"

namespace bench {
bool torch_available() { return false; }
TwinTable torch_cases() { return {}; }
}  // namespace bench
