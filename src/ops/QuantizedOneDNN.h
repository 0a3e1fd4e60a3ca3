// Internal: what the oneDNN int8 kernels of quantized linear and convolution share
// (src/ops/QuantizedLinear.cpp, src/ops/QuantizedConv.cpp).
#pragma once

#include <mutex>
#include <optional>
#include <vector>

#include "src/cpu/OneDNN.h"
#include "tensor/core/Tensor.h"

namespace tensor::quantized::detail {

/// The checked weight of linear_prepack / conv_prepack: qint8, per-tensor or per-channel along
/// dim 0 with zero points 0; its scales, one per output channel (repeated when per-tensor).
struct CheckedWeight {
  Tensor qweight;              // as given (for unpack)
  Tensor ints;                 // contiguous int8 copy of the integers
  std::vector<double> scales;  // one per output channel
  bool per_channel = false;
  // Names `scales` in primitive cache keys (Note [Weight scales by id]): unique in the process.
  int64_t id = 0;
};
CheckedWeight check_weight(const Tensor& qweight, int64_t min_dim, int64_t max_dim, const char* op);
/// The bias as contiguous float32 [out] (or undefined), checked.
Tensor check_bias(const std::optional<Tensor>& bias, int64_t out, const char* op);

/// A per-tensor quantized activation of dtype quint8 or qint8, checked.
void check_activation(const Tensor& qx, const char* op, const char* what = "input");
/// Checks an output scale and zero point for dtype.
void check_output_qparams(double scale, int64_t zero_point, ScalarType dtype, const char* op);

dnnl::memory::data_type dnnl_type_of(ScalarType quantized);

// Note [Weights packed once]
// oneDNN's int8 kernels read weights in a blocked layout of their own (VNNI groups of four
// int8s), which the primitive descriptor names once it is made with format `any`. The packed
// params keep the weights reordered into the last layout a primitive asked for: the first
// forward reorders (once), every later call with a primitive that wants the same layout (the
// usual case: the layout depends on the channels and the ISA, not on the batch) reuses them.
// A call whose primitive wants another layout reorders again and keeps that one as well.
class PackedWeights {
 public:
  /// The weights in layout `want`, reordered from `plain` (memory over the int8 weights) the
  /// first time that layout is asked for.
  dnnl::memory get(const dnnl::memory::desc& want, const dnnl::memory& plain);

 private:
  struct Packed {
    dnnl::memory::desc desc;
    dnnl::memory mem;
    Tensor storage;  // owns mem's bytes (undefined when mem is the plain weights)
  };
  std::mutex mu_;
  // Every layout asked for so far (one or two in practice): an entry is never dropped, so a
  // primitive running on another thread never sees its weights freed.
  std::vector<Packed> packed_;
};

/// Requantization's output scales, x_scale * w_scale[c] / y_scale (one per channel, or one for
/// all), for a primitive's attributes (Note [Requantization in oneDNN] in
/// src/ops/QuantizedLinear.cpp).
std::vector<float> requant_scales(const CheckedWeight& w, double x_scale, double y_scale);
/// The bias moved into the accumulator's units, bias[c] / (x_scale * w_scale[c]), float32 (oneDNN
/// 2.x adds the bias before scaling); undefined without a bias.
Tensor requant_bias(const CheckedWeight& w, const Tensor& bias, double x_scale);

// Note [Weight scales by id]
// An int8 primitive's output scales are fixed at creation, so they belong to its cache key. A
// key holding every channel's scale (1024 doubles for a 1024-wide linear) cost a hash and a
// compare of 8 KB and the scales' computation on every call, a few microseconds against a
// 90 us int8 matmul of 64 x 1024 x 1024. The scales are a function of the checked weight's
// scales and the call's input and output scales, so the key holds the weight's id (fresh for
// every prepack) and those two instead, and requant_scales runs only when a primitive is made.
/// Adds what determines requant_scales(w, x_scale, y_scale) to a key.
void add_scales_key(::tensor::cpu::onednn::Key& key, const CheckedWeight& w, double x_scale, double y_scale);

/// A float32 / int32 one-dim memory over a tensor's data.
dnnl::memory f32_memory(const Tensor& t);
dnnl::memory s32_scalar(int32_t v, Tensor& keep);

}  // namespace tensor::quantized::detail
