// nn::AnyModule: a type-erased module, as libtorch's torch::nn::AnyModule, for modules whose
// forward takes Tensors (up to 8, trailing ones may have defaults) and returns a Tensor: what
// the transformer stacks' `norm`, custom_encoder and custom_decoder options hold.
// `nn::AnyModule(nn::LayerNorm(nn::LayerNormOptions({512})))`, `any.forward(x)`,
// `any.forward<Tensor>(x)`.
// AnyModule is defined in tensor/nn/modules.h, beside Sequential, which holds its modules as
// AnyModules (iterating a Sequential yields them, as in libtorch).
#pragma once

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor/core/Error.h"
#include "tensor/core/Tensor.h"
#include "tensor/nn/module.h"
#include "tensor/nn/modules.h"
#include "tensor/nn/pimpl.h"
