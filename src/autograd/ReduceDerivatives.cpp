// Derivatives of the reductions beyond sum and mean (see Note [Derivatives table]).
#include "src/autograd/Functions.h"

namespace tensor::autograd {

void register_reduce_derivatives() {}

}  // namespace tensor::autograd
