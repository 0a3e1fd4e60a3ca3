// nn::utils: gradient clipping and parameter flattening, as libtorch's torch::nn::utils, and
// nn::utils::rnn (tensor/nn/utils/rnn.h).
#pragma once

#include <initializer_list>
#include <vector>

#include "tensor/core/Tensor.h"
#include "tensor/nn/utils/rnn.h"

namespace tensor::nn::utils {

/// Scales the gradients of `parameters` in place so that their joint norm_type-norm (the norm of
/// the per-tensor norms; inf for the max) is at most max_norm, and returns that norm before
/// clipping. Parameters without a gradient are skipped. With error_if_nonfinite a NaN or
/// infinite norm raises tensor::Error.
TENSOR_API double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                                  bool error_if_nonfinite = false);
inline double clip_grad_norm_(std::initializer_list<Tensor> parameters, double max_norm, double norm_type = 2.0,
                              bool error_if_nonfinite = false) {
  return clip_grad_norm_(std::vector<Tensor>(parameters), max_norm, norm_type, error_if_nonfinite);
}
inline double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0,
                              bool error_if_nonfinite = false) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}
/// Clamps every gradient into [-clip_value, clip_value] in place.
TENSOR_API void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);

/// The parameters flattened and concatenated into one 1-d tensor.
TENSOR_API Tensor parameters_to_vector(const std::vector<Tensor>& parameters);
/// Copies consecutive slices of `vec` into the parameters (the inverse of parameters_to_vector).
TENSOR_API void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters);

}  // namespace tensor::nn::utils
