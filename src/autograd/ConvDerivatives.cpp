// Derivatives of the convolutions (see Note [Derivatives table]).
#include "src/autograd/Functions.h"

namespace tensor::autograd {

void register_conv_derivatives() {}

}  // namespace tensor::autograd
