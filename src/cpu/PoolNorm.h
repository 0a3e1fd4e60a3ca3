// Internal: the CPU kernels of pooling and normalization (src/cpu/PoolNormKernel.cpp), and the
// oneDNN ones they run (src/cpu/Pooling.cpp and src/cpu/Normalization.cpp).
#pragma once

#include <tuple>

#include "kernels/cpu/PoolNormKernels.h"

namespace tensor::cpu {

// ---- the CPU kernels behind the front ends (src/ops/PoolNormOps.h's PoolNormKernels) ----
// Each picks oneDNN or the loops by dtype, layout and mode; contracts as in PoolNormOps.h.
Tensor max_pool2d_kernel(const Tensor& x, const Pool2d& g);
std::tuple<Tensor, Tensor> max_pool2d_with_indices_kernel(const Tensor& x, const Pool2d& g);
void max_pool2d_backward_kernel(const Tensor& grad, const Tensor& indices, const Pool2d& g, const Tensor& grad_input);
Tensor avg_pool2d_kernel(const Tensor& x, const Pool2d& g);
Tensor avg_pool2d_backward_kernel(const Tensor& grad, IntArrayRef in_sizes, const Pool2d& g);
Tensor adaptive_avg_pool2d_kernel(const Tensor& x, const Pool2d& g);
void adaptive_avg_pool2d_backward_kernel(const Tensor& grad, const Pool2d& g, const Tensor& grad_input);
std::tuple<Tensor, Tensor> max_pool3d_with_indices_kernel(const Tensor& x, const Pool3d& g);
std::tuple<Tensor, Tensor> adaptive_max_pool3d_kernel(const Tensor& x, const Pool3d& g);
Tensor batch_norm_kernel(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& running_mean,
                         const Tensor& running_var, bool training, double momentum, double eps, const Tensor& mean,
                         const Tensor& var);
Tensor batch_norm_backward_kernel(const Tensor& grad, const Tensor& x, const Tensor& w, const Tensor& mean,
                                  const Tensor& var, bool training, double eps, const Tensor& grad_weight,
                                  const Tensor& grad_bias);
void layer_norm_kernel(const Tensor& x, int64_t rows, int64_t cols, const Tensor& w, const Tensor& b, double eps,
                       const Tensor& out, const Tensor& mean, const Tensor& var);
void layer_norm_backward_kernel(const Tensor& grad, const Tensor& x, int64_t rows, int64_t cols, const Tensor& w,
                                const Tensor& mean, const Tensor& var, double eps, const Tensor& grad_input,
                                const Tensor& grad_weight, const Tensor& grad_bias);
void group_norm_kernel(const Tensor& x, int64_t groups, const Tensor& w, const Tensor& b, double eps,
                       const Tensor& out, const Tensor& mean, const Tensor& var);
void group_norm_backward_kernel(const Tensor& grad, const Tensor& x, int64_t groups, const Tensor& w,
                                const Tensor& mean, const Tensor& var, double eps, const Tensor& grad_input,
                                const Tensor& grad_weight, const Tensor& grad_bias);

// ---- oneDNN (float32, bfloat16) ----
namespace onednn {
/// Can oneDNN pool this tensor in place as it lies (dtype, contiguous or channels-last)?
bool pool_layout_ok(const Tensor& x);
/// Max pooling without indices (forward_inference); out in x's layout.
void max_pool2d(const Tensor& x, const Pool2d& p, const Tensor& out);
/// Average pooling with oneDNN's include/exclude padding (callers check that the divisor
/// matches libtorch's, Note [Average pooling divisors]).
void avg_pool2d(const Tensor& x, const Pool2d& p, const Tensor& out);
void avg_pool2d_backward(const Tensor& grad_out, const Pool2d& p, const Tensor& grad_in);

/// batch_norm forward: training computes mean/var into the given float32 tensors, otherwise
/// reads them. w, b: float32 or undefined.
void batch_norm(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& mean, const Tensor& var,
                bool training, double eps, const Tensor& out);
/// Training-mode backward (batch statistics).
void batch_norm_backward(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& var,
                         double eps, const Tensor& gx, const Tensor& gw, const Tensor& gb);
/// x: contiguous, viewed as (rows, cols).
void layer_norm(const Tensor& x, int64_t rows, int64_t cols, const Tensor& w, const Tensor& b, double eps,
                const Tensor& out, const Tensor& mean, const Tensor& var);
void layer_norm_backward(const Tensor& g, const Tensor& x, int64_t rows, int64_t cols, const Tensor& w,
                         const Tensor& mean, const Tensor& var, double eps, const Tensor& gx, const Tensor& gw,
                         const Tensor& gb);
}  // namespace onednn

}  // namespace tensor::cpu
