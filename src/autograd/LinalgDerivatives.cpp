// Derivatives of the matmul family (see Note [Derivatives table]).
#include "src/autograd/Functions.h"

namespace tensor::autograd {

void register_linalg_derivatives() {}

}  // namespace tensor::autograd
