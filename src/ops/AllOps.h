// Internal: every built-in dispatcher op, listed once (Note [One op list] covers the elementwise
// ops in kernels/OpList.h; this list names the rest and walks both).
#pragma once

#include <vector>

#include "src/amp/AmpOps.h"
#include "src/ops/AdvancedIndexing.h"
#include "src/ops/AttentionOps.h"
#include "src/ops/CompositeOps.h"
#include "src/ops/ConvOps.h"
#include "src/ops/CopyOps.h"
#include "src/ops/ElementwiseOps.h"
#include "src/ops/FactoryOps.h"
#include "src/ops/FoldOps.h"
#include "src/ops/IndexOps.h"
#include "src/ops/LinalgOps.h"
#include "src/ops/LossOps.h"
#include "src/ops/OptimizerOps.h"
#include "src/ops/PoolNormOps.h"
#include "src/ops/RearrangeOps.h"
#include "src/ops/ReduceOps.h"
#include "src/ops/SortOps.h"
#include "src/ops/UpsampleOps.h"
#include "src/ops/UnpoolOps.h"
#include "src/ops/ViewOps.h"

namespace tensor::ops {

// Note [Every op, once]
// Wrapping layers fill one slot of every op (the profiler records each call, autocast casts
// per policy) and tests check every op, so they need all of them, each once. The elementwise
// ops come from kernels/OpList.h; every other op is a row here:
//   X(table, autograd)
//     table     the op's dispatcher table (its `name` is the op's public name);
//     autograd  how it records: Row (a row of the derivatives table), Node (a hand-written node,
//               src/autograd/nodes), Composite (no Autograd kernel: its pieces are dispatched
//               ops that record themselves) or None (not differentiable, or recorded by the
//               public composite that calls it: Note [Differentiable indexing]).
// tests/test_op_list.cpp checks the column against the Autograd slots and that no op is
// missing or listed twice, so a new op that is not added here fails a test.
enum class Recording { Row, Node, Composite, None };

// NOLINTBEGIN(cppcoreguidelines-macro-usage)
#define TENSOR_STRUCTURED_OPS(X)                            \
  /* factories (Note [Factories through the dispatcher]) */ \
  X(factory_ops().empty, None)                              \
  X(factory_ops().empty_strided, None)                      \
  X(factory_ops().full, None)                               \
  X(factory_ops().scalar_tensor, None)                      \
  X(factory_ops().arange, None)                             \
  X(factory_ops().linspace, None)                           \
  X(factory_ops().eye, None)                                \
  X(factory_ops().rand, None)                               \
  X(factory_ops().randn, None)                              \
  X(factory_ops().randint, None)                            \
  X(factory_ops().randperm, None)                           \
  /* views (Note [Views through the dispatcher]) */         \
  X(view_ops().view, Node)                                  \
  X(view_ops().permute, Node)                               \
  X(view_ops().expand, Node)                                \
  X(view_ops().transpose, Node)                             \
  X(view_ops().select, Node)                                \
  X(view_ops().t, Node)                                     \
  X(view_ops().squeeze, Node)                               \
  X(view_ops().squeeze_dim, Node)                           \
  X(view_ops().unsqueeze, Node)                             \
  X(view_ops().conj, Node)                                  \
  X(view_ops().real, Node)                                  \
  X(view_ops().imag, Node)                                  \
  X(view_ops().slice, Node)                                 \
  X(view_ops().unfold, Node)                                \
  X(view_ops().diagonal, Node)                              \
  X(view_ops().as_strided, Node)                            \
  X(view_ops().detach, None)                                \
  X(view_ops().reshape, Composite)                          \
  X(view_ops().narrow, Composite)                           \
  X(view_ops().flatten, Composite)                          \
  X(view_ops().unflatten, Composite)                        \
  /* data movement */                                       \
  X(copy_ops().copy_, Node)                                 \
  X(copy_ops().fill_, Node)                                 \
  X(copy_ops().clone, Row)                                  \
  X(copy_ops().to_copy, Row)                                \
  X(copy_ops().resolve_conj, Row)                           \
  /* condition */                                           \
  X(where_op(), Row)                                        \
  X(clamp_op(), Row)                                        \
  X(clamp_out_op(), None)                                   \
  X(clamp_inplace_op(), Node)                               \
  X(threshold_backward_op(), None)                          \
  /* reductions, scans, softmax */                          \
  X(reduce_ops().sum, Row)                                  \
  X(reduce_ops().mean, Row)                                 \
  X(reduce_ops().prod, Row)                                 \
  X(reduce_ops().max_all, Row)                              \
  X(reduce_ops().min_all, Row)                              \
  X(reduce_ops().max_dim, Node)                             \
  X(reduce_ops().min_dim, Node)                             \
  X(reduce_ops().amax, Row)                                 \
  X(reduce_ops().amin, Row)                                 \
  X(reduce_ops().logsumexp, Row)                            \
  X(reduce_ops().argmax, None)                              \
  X(reduce_ops().argmin, None)                              \
  X(reduce_ops().any, None)                                 \
  X(reduce_ops().all, None)                                 \
  X(reduce_ops().var, Row)                                  \
  X(reduce_ops().std_dev, Row)                              \
  X(reduce_ops().norm, Row)                                 \
  X(reduce_ops().cumsum, Row)                               \
  X(reduce_ops().cumprod, Row)                              \
  X(reduce_ops().softmax, Row)                              \
  X(reduce_ops().log_softmax, Row)                          \
  /* indexing and joining */                                \
  X(index_select_op(), Row)                                 \
  X(gather_op(), Row)                                       \
  X(scatter_op(), Row)                                      \
  X(scatter_inplace_op(), Node)                             \
  X(scatter_add_op(), Row)                                  \
  X(scatter_add_inplace_op(), Node)                         \
  X(index_add_op(), Row)                                    \
  X(index_add_inplace_op(), Node)                           \
  X(masked_fill_op(), Row)                                  \
  X(masked_fill_inplace_op(), Node)                         \
  X(masked_select_op(), Composite)                          \
  X(nonzero_op(), None)                                     \
  X(cat_op(), Row)                                          \
  X(stack_op(), Row)                                        \
  X(split_op(), Composite)                                  \
  X(split_with_sizes_op(), Composite)                       \
  X(chunk_op(), Composite)                                  \
  X(unbind_op(), Composite)                                 \
  X(advanced_index_ops().index, None)                       \
  X(advanced_index_ops().index_put_, None)                  \
  /* sorting */                                             \
  X(sort_ops().sort, Node)                                  \
  X(sort_ops().topk, Node)                                  \
  X(argsort_op(), Composite)                                \
  /* rearranging */                                         \
  X(rearrange_ops().tril, Row)                              \
  X(rearrange_ops().triu, Row)                              \
  X(rearrange_ops().tril_, Node)                            \
  X(rearrange_ops().triu_, Node)                            \
  X(rearrange_ops().flip, Row)                              \
  X(rearrange_ops().repeat, Composite)                      \
  X(rearrange_ops().roll, Composite)                        \
  /* matrix products */                                     \
  X(linalg_ops().mm, Row)                                   \
  X(linalg_ops().bmm, Row)                                  \
  X(linalg_ops().addmm, Row)                                \
  X(linalg_ops().linear, Row)                               \
  X(dot_op(), Composite)                                    \
  X(outer_op(), Composite)                                  \
  X(matmul_op(), Composite)                                 \
  X(einsum_op(), Composite)                                 \
  /* convolution */                                         \
  X(conv_ops().convolution, Row)                            \
  X(conv_ops().convolution_backward, None)                  \
  X(conv1d_op(), Composite)                                 \
  X(conv2d_op(), Composite)                                 \
  X(conv3d_op(), Composite)                                 \
  X(conv_transpose1d_op(), Composite)                       \
  X(conv_transpose2d_op(), Composite)                       \
  X(conv_transpose3d_op(), Composite)                       \
  X(fold_ops().im2col, Row)                                 \
  X(fold_ops().col2im, Row)                                 \
  /* pooling and normalization */                           \
  X(pool_norm_ops().max_pool2d, Node)                       \
  X(pool_norm_ops().max_pool2d_with_indices, Node)          \
  X(pool_norm_ops().max_pool2d_backward, Row)               \
  X(pool_norm_ops().avg_pool2d, Row)                        \
  X(pool_norm_ops().avg_pool2d_backward, Row)               \
  X(pool_norm_ops().adaptive_avg_pool2d, Row)               \
  X(pool_norm_ops().adaptive_avg_pool2d_backward, Row)      \
  X(pool_norm_ops().batch_norm, Node)                       \
  X(pool_norm_ops().batch_norm_backward, None)              \
  X(pool_norm_ops().layer_norm, Node)                       \
  X(pool_norm_ops().layer_norm_backward, None)              \
  X(pool_norm_ops().group_norm, Node)                       \
  X(pool_norm_ops().group_norm_backward, None)              \
  /* upsampling */                                          \
  X(upsample_ops().upsample_bicubic2d, Row)                 \
  X(upsample_ops().upsample_bicubic2d_backward, Row)        \
  X(pool_norm_ops().max_pool3d_with_indices, Node)          \
  X(pool_norm_ops().adaptive_max_pool3d, Node)              \
  X(max_pool3d_op(), Composite)                             \
  X(avg_pool3d_op(), Composite)                             \
  X(adaptive_avg_pool3d_op(), Composite)                    \
  X(adaptive_max_pool2d_op(), Composite)                    \
  /* attention (Note [SDPA backend selection]) */           \
  X(attention_ops().flash, Node)                            \
  X(attention_ops().flash_backward, None)                   \
  X(scaled_dot_product_attention_op(), Composite)           \
  /* max unpooling and fractional max pooling */           \
  X(unpool_ops().max_unpool2d, Row)                         \
  X(unpool_ops().max_unpool3d, Row)                         \
  X(unpool_ops().fractional_max_pool2d, Node)               \
  X(unpool_ops().fractional_max_pool3d, Node)               \
  X(unpool_ops().fractional_max_pool2d_backward, Row)       \
  X(unpool_ops().fractional_max_pool3d_backward, Row)       \
  /* fused optimizer steps */                               \
  X(fused_sgd_op(), None)                                   \
  X(fused_adam_op(), None)                                  \
  /* mixed precision (GradScaler) */                        \
  X(amp_unscale_op(), None)                                 \
  X(amp_update_scale_op(), None)                            \
  /* losses with their own kernels */                       \
  X(loss_ops().ctc_loss, Node)                              \
  X(loss_ops().ctc_loss_backward, None)
// NOLINTEND(cppcoreguidelines-macro-usage)

/// Calls f(table, recording) for every built-in dispatcher op: each elementwise op's functional,
/// in-place and out= tables (recorded by the derivatives table's own template, as Row), then
/// every op of TENSOR_STRUCTURED_OPS. f is generic: the tables have different signatures.
template <class F>
void for_each_op(F&& f) {
  for (int i = 0; i < kNumUnaryOps; ++i) {
    UnaryOpDefs& d = unary_op(static_cast<UnaryOp>(i));
    f(d.functional, Recording::Row);
    f(d.inplace, Recording::Row);
    f(d.out, Recording::Row);
  }
  for (int i = 0; i < kNumBinaryOps; ++i) {
    BinaryOpDefs& d = binary_op(static_cast<BinaryOp>(i));
    f(d.functional, Recording::Row);
    f(d.inplace, Recording::Row);
    f(d.out, Recording::Row);
  }
#define TENSOR_VISIT_OP(table, recording) f(table, Recording::recording);
  TENSOR_STRUCTURED_OPS(TENSOR_VISIT_OP)
#undef TENSOR_VISIT_OP
}

/// One op's entry in builtin_ops().
struct OpSummary {
  const void* table;  ///< the op's dispatcher table (unique per op; names repeat across overloads)
  const char* name;
  Recording recording;
  DispatchKeySet slots;  ///< the keys whose slot holds a kernel now
};
/// Every built-in op, in for_each_op's order, with the keys it has kernels for (the Autograd
/// slots fill on first use of autograd: Note [Lazy autograd registration]). Exported for tests.
TENSOR_API std::vector<OpSummary> builtin_ops();

}  // namespace tensor::ops
