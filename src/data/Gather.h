// Internal: batch assembly for datasets held in one tensor.
#pragma once

#include <vector>

#include "tensor/core/Tensor.h"

namespace tensor::data::detail {

/// The rows `indices` of `src` (along dim 0), stacked: index_select(src, 0, indices), but for a
/// contiguous CPU source a plain serial copy. Note [Serial batch assembly]: a DataLoader
/// parallelizes across batches (its workers); an op that opens an OpenMP region for every
/// 200 KB batch pays a fork/join each time, which on a loaded machine costs a scheduler tick
/// (milliseconds) whenever a team thread is descheduled.
Tensor gather_rows(const Tensor& src, const std::vector<size_t>& indices);

}  // namespace tensor::data::detail
