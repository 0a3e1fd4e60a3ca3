// Derivatives of pooling and normalization (see Note [Derivatives table]).
#include "src/autograd/Functions.h"

namespace tensor::autograd {

void register_pool_norm_derivatives() {}

}  // namespace tensor::autograd
