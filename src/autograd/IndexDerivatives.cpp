// Derivatives of the indexing, joining and selection ops (see Note [Derivatives table]).
#include "src/autograd/Functions.h"

namespace tensor::autograd {

void register_index_derivatives() {}

}  // namespace tensor::autograd
