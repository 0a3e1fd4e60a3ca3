// Internal: dispatcher tables of advanced indexing, index and index_put_ (src/ops/
// AdvancedIndexing.cpp), so that wrapping layers fill their slots and a backend (CUDA)
// registers its kernels.
#pragma once

#include "kernels/AdvancedIndex.h"
#include "src/dispatch/Dispatcher.h"

namespace tensor::ops {

/// index(self, indices): indices holds one entry per leading dim of self, undefined where the
/// dim is not indexed, else an int32/int64 index or a bool mask over the dims it starts (the
/// advanced part of an index list, after Tensor::index applied the basic part as views).
using IndexFn = Tensor(const Tensor&, TensorList);
/// index_put_(self, indices, value): the same indices; value has self's dtype and broadcasts to
/// the indexed region.
using IndexPutFn = Tensor&(Tensor&, TensorList, const Tensor&);

/// Backend kernel of index: out (allocated, ai.out_shape, non-empty) = src indexed by ai. It
/// checks the index values (a front end cannot without reading them).
using IndexKernel = void (*)(const Tensor& src, const AdvancedIndex& ai, const Tensor& out);
/// Backend kernel of index_put_: dst indexed by ai = value (dst's dtype, broadcast to
/// ai.out_shape, not sharing dst's memory); with repeated indices the last write wins.
using IndexPutKernel = void (*)(const Tensor& dst, const AdvancedIndex& ai, const Tensor& value);

struct AdvancedIndexOpDefs {
  dispatch::OpDef<IndexFn> index;
  dispatch::OpDef<IndexPutFn> index_put_;
};

/// The one table of the advanced indexing ops (exported for tests, as copy_ops). No Autograd kernels: Tensor::index and
/// Tensor::index_put_ record through a composite of dispatched ops (Note [Differentiable
/// indexing]), so these ops only run below autograd.
TENSOR_API AdvancedIndexOpDefs& advanced_index_ops();

/// One backend's advanced indexing kernels (the two have the same type, so they come as a pair).
struct AdvancedIndexKernels {
  IndexKernel index = nullptr;
  IndexPutKernel index_put = nullptr;
};
/// Registers a backend's (CUDA's) kernels, each non-null one, and fills its ops' slots.
void register_kernel(DispatchKey backend, const AdvancedIndexKernels& kernels);

}  // namespace tensor::ops
