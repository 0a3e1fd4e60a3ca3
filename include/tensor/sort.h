// Sorting and selection along one dim, spelled as libtorch's free functions (torch::sort,
// torch::argsort, torch::topk). Real dtypes on CPU (bool for sort and argsort too); complex
// raises. NaN ranks above every number: last ascending, first descending, and topk with
// largest = true returns NaNs first, as libtorch. Equal keys keep input order (stable).
#pragma once

#include <optional>
#include <tuple>

#include "tensor/core/Tensor.h"

namespace tensor {

/// The k largest (or smallest) entries along dim and their int64 positions, best first (the
/// result is ordered whatever `sorted` says, which libtorch allows). Values are differentiable.
TENSOR_API std::tuple<Tensor, Tensor> topk(const Tensor& a, int64_t k, int64_t dim = -1, bool largest = true,
                                           bool sorted = true);
/// Values sorted along dim and their int64 positions in `a`. The sort is always stable.
TENSOR_API std::tuple<Tensor, Tensor> sort(const Tensor& a, int64_t dim = -1, bool descending = false);
/// libtorch's overload with `stable`; every sort here is stable, so any value gives the same.
TENSOR_API std::tuple<Tensor, Tensor> sort(const Tensor& a, std::optional<bool> stable, int64_t dim = -1,
                                           bool descending = false);
/// The int64 positions that sort `a` along dim (sort(a, dim, descending)'s indices).
TENSOR_API Tensor argsort(const Tensor& a, int64_t dim = -1, bool descending = false);

}  // namespace tensor
