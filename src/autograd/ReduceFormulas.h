// Internal: the manual formulas of the reductions' rows (the `// ---- reductions ----` section
// of Derivatives.cpp), too long to write inline, like PyTorch's FunctionsManual.cpp. Every one
// is written with public differentiable ops, so its own gradient works (double backward).
//
// The holomorphic ones (prod, cumprod) are written as for real numbers: the recording template
// applies the complex convention around them (Note [Recording template]). The others (var,
// std, norm: complex to real) take the conjugates themselves.
#pragma once

#include "src/autograd/Functions.h"

namespace tensor::autograd::reduce_formulas {

/// Reduced dims, wrapped and sorted; empty `dims` means all dims. A 0-dim input has none.
DimVector reduce_dims(IntArrayRef dims, int64_t ndim);
/// A scan's or softmax's dim, wrapped (0 for a 0-dim input).
int64_t wrap_dim(int64_t dim, int64_t ndim);

/// A reduction's result (or its gradient) with the reduced dims (ascending) back as size 1,
/// so that it broadcasts against the input.
Tensor restore_dims(const Tensor& t, IntArrayRef dims, bool keepdim);
/// Sum over `dims` keeping them (a tensor with no reduced dims stays as it is).
Tensor sum_keep(const Tensor& t, IntArrayRef dims);

/// prod over `dims` (all dims when `all`; otherwise one dim): grad * result / self, or the
/// product of the other elements when self has zeros (Note [prod with zeros]). Holomorphic.
Tensor prod_backward(const Tensor& grad, const Tensor& self, const Tensor& result, IntArrayRef dims, bool keepdim,
                     bool all);
/// max(), min(), amax, amin: the gradient spread evenly over the elements equal to the result
/// (ties); NaN results select the NaN elements.
Tensor evenly_distribute_backward(const Tensor& grad, const Tensor& self, const Tensor& result, IntArrayRef dims,
                                  bool keepdim);
/// var: 2 / (N - correction) * grad * (self - mean). Not holomorphic (complex to real).
Tensor var_backward(const Tensor& grad, const Tensor& self, IntArrayRef dims, int64_t correction, bool keepdim);
/// std: var's gradient divided by 2 * result (0 where result is 0). Not holomorphic.
Tensor std_backward(const Tensor& grad, const Tensor& self, const Tensor& result, IntArrayRef dims,
                    int64_t correction, bool keepdim);
/// norm of order p (0, 1, 2, +-inf, general), masked where the norm or self is 0. Not
/// holomorphic: written with sgn(self) and self * |self|^(p-2).
Tensor norm_backward(const Tensor& grad, const Tensor& self, const Tensor& result, double p, IntArrayRef dims,
                     bool keepdim);
/// Sum of t over positions >= i along d (cumsum's gradient).
Tensor reverse_cumsum(const Tensor& t, int64_t d);
/// cumprod along d: reverse_cumsum(grad * result) / self, or an exact O(n^2) form when self
/// has zeros. Holomorphic.
Tensor cumprod_backward(const Tensor& grad, const Tensor& self, const Tensor& result, int64_t d);

}  // namespace tensor::autograd::reduce_formulas
