// Internal: the manual formulas of the indexing and joining ops (as PyTorch's
// FunctionsManual.cpp): the longer gradient functions that their rows in the derivatives table
// (src/autograd/Derivatives.cpp, section "indexing and joining") call. Defined, with the
// hand-written in-place kernels, in src/autograd/IndexFormulas.cpp.
#pragma once

#include "src/autograd/Functions.h"
#include "src/ops/IndexOps.h"

namespace tensor::autograd {

/// The gradient of the src of scatter / scatter_add (dim wrapped): grad gathered at the written
/// positions; the part of src the index does not reach gets zeros. Differentiable.
Tensor scatter_src_grad(const Tensor& grad, int64_t dim, const Tensor& index, const InputMeta& src);

/// cat's gradient: the slab of grad for each input of the list, in order (undefined for inputs
/// that need none and for legacy [0]-shaped empty inputs). `dim` as the forward got it.
variable_list cat_tensors_backward(const FormulaNode& n, const Tensor& grad, int64_t dim);

}  // namespace tensor::autograd
