// oneDNN's eltwise primitive for the unary ops where it beats libtensor's kernels.
#include "src/cpu/Eltwise.h"

#include "src/cpu/OneDNN.h"
#include "tensor/ops.h"

namespace tensor::cpu {

// Note [oneDNN eltwise]
// libtensor's unary kernels are Highway vector loops for most float ops, but exact GELU runs
// the scalar std::erf per element. oneDNN's jit eltwise (gelu_erf) is vectorised. Measured
// interleaved in one process on this 2-core box, float32, 2 threads, fresh output each call
// (/tmp/eltprobe/elt.cpp; medians of 7 rounds, time per call):
//   16M elements: tensor::gelu 164 ms, oneDNN gelu_erf 25.6 ms (6.4x); tanh 28.4 / 24.0,
//   exp 24.0 / 24.0, sigmoid 24.4 / 23.9, relu 23.9 / 24.0 ms (memory bound: a tie).
// (see the mmperf branch report for the mid-size figures). So only GELU moves to oneDNN; the
// Highway loops stay for the others. The tanh approximation (nn::functional::gelu with
// approximate="tanh") is composed of 8 elementwise ops for autograd; without a gradient to
// record it runs oneDNN's gelu_tanh instead: 16M floats 218 ms composed against 24 ms. Below kMinElements the primitive call's fixed cost (a
// cache lookup and an OpenMP region) outweighs the win and the loop stays.
namespace {
constexpr int64_t kMinElements = 1024;
}

namespace {

/// y = alg(x) over n contiguous float32 elements (in place when x == y).
void run_eltwise(dnnl::algorithm alg, int64_t n, void* x, void* y) {
  namespace dn = onednn;
  dn::Key key("eltwise");
  key.add(static_cast<int64_t>(alg)).add(n);
  const dnnl::memory::desc md({n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  const dn::CachedPrimitive p = dn::cached(key, [&] {
    dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, alg, md, 0.f, 0.f);
    dnnl::eltwise_forward::primitive_desc pd(d, dn::make_attr(), dn::engine());
    return dn::CachedPrimitive{dnnl::eltwise_forward(pd), pd};
  });
  dn::execute(p, {{DNNL_ARG_SRC, dnnl::memory(md, dn::engine(), x)}, {DNNL_ARG_DST, dnnl::memory(md, dn::engine(), y)}});
}

}  // namespace

bool onednn_unary(const TensorIterator& it, UnaryOp op) {
  if (op != UnaryOp::Gelu) return false;
  if (!it.device().is_cpu() || it.ntensors() != 2 || it.dtype(0) != kFloat32 || it.dtype(1) != kFloat32) return false;
  if (it.numel() < kMinElements || !it.is_contiguous()) return false;
  run_eltwise(dnnl::algorithm::eltwise_gelu_erf, it.numel(), it.data(1), it.data(0));
  return true;
}

Tensor onednn_gelu_tanh(const Tensor& x) {
  if (!x.device().is_cpu() || x.scalar_type() != kFloat32 || x.numel() < kMinElements || !x.is_contiguous()) return {};
  Tensor y = tensor::empty(x.sizes(), x.options());
  run_eltwise(dnnl::algorithm::eltwise_gelu_tanh, x.numel(), x.data_ptr(), y.data_ptr());
  return y;
}

}  // namespace tensor::cpu
