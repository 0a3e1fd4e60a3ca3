// Built when libtorch is not installed: no twins, figures for libtensor only.
#include "harness.h"

namespace bench {
bool torch_available() { return false; }
std::string torch_version() { return ""; }
}  // namespace bench
