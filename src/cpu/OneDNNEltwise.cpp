// oneDNN's eltwise primitive for the unary ops where it beats libtensor's kernels.
#include "src/cpu/OneDNNEltwise.h"

#include "src/cpu/OneDNN.h"
#include "tensor/ops.h"

namespace tensor::cpu {

// Note [oneDNN eltwise]
// libtensor's unary kernels are Highway vector loops for most float ops, but exact GELU ran
// the scalar std::erf per element; oneDNN's jit eltwise (gelu_erf) is vectorised. Measured
// interleaved in one process on this shared 2-core box (loaded: the streaming add reached only
// 7-8 GB/s), float32, 2 threads, fresh output per call (/tmp/eltprobe/elt.cpp, medians of 7):
//   16M: tensor::gelu 164 ms, oneDNN gelu_erf 25.6 ms (6.4x); tanh 28.4 / 24.0 ms, exp 24.0 /
//   24.0, sigmoid 24.4 / 23.9, relu 23.9 / 24.0 (bandwidth-bound ties on the loaded box; at
//   256K the timings were too noisy to separate them). After the switch bench_ops gives
//   gelu_16M at 0.25-0.41x libtorch's time and gelu_256K at 0.97-0.99x.
// On a quieter box (streaming add 29.5 GB/s, same probe, medians of 5) oneDNN also beat the
// Highway loops for tanh (16M: 8.01 -> 4.29 ms; 256K: 64.0 -> 41.1 us) and sigmoid (6.99 ->
// 4.21 ms; 55.7 -> 45.9 us); exp (4.31 / 4.12 ms, 44.1 / 32.7 us) and relu (tie) stay.
// So GELU, tanh and sigmoid moved to oneDNN; the Highway loops stay for the others. The tanh
// approximation (nn::functional::gelu, approximate="tanh") is 8 composed ops so that autograd
// sees it; with no gradient to record it runs oneDNN's gelu_tanh instead (16M: 218 ms composed,
// 24 ms). Below kMinElements (a guess, not measured: the call's fixed cost is a cache lookup,
// two memory objects and an OpenMP region, ~2 us) the loops stay.
// Sigmoid went back to the Highway loop at every size (2026-11-28, session 13): oneDNN's
// logistic returns 0 for x below about -87 (its exp flushes where the result would be
// subnormal) where 1 / (1 + exp(-x)) is 3e-39 to 2e-38 down to -88.7 (torch 2.15's value);
// at 4K floats oneDNN's call took 6-24 us against the loop's 2-3 us; at 16M, with the loop's
// edge patches cut (Note [Sigmoid and silu edges]), the loop uses up to 8% more CPU time than
// oneDNN's logistic (7.6-7.7 against 7.1-7.3 ms, mins of 9-15 calls; docs/benchmarks.md,
// "Elementwise kernels"), the price of the correct tail. The 16M wall times of the earlier
// comparison (oneDNN 11-13 ms, loop 21-23 ms, on a box loaded to 3x its cores) did not hold up
// in CPU time: whole scheduler slices were lost in either.
// GELU went back to a Highway loop too (2026-11-28, session 15): Note [Vector gelu] computes
// it without 1 + erf's cancellation (oneDNN's returns 0 up to 1.7e7 ulp away for x < -5.7), and
// at 256K floats it runs at 0.91-1.00x torch 2.15's time, where oneDNN's took 1.06-1.34x.
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
  dnnl::algorithm alg;
  switch (op) {
    case UnaryOp::GeluTanh: alg = dnnl::algorithm::eltwise_gelu_tanh; break;
    case UnaryOp::Tanh: alg = dnnl::algorithm::eltwise_tanh; break;
    default: return false;
  }
  if (!it.device().is_cpu() || it.ntensors() != 2 || it.dtype(0) != kFloat32 || it.dtype(1) != kFloat32) return false;
  if (it.numel() < kMinElements || !it.is_contiguous()) return false;
  run_eltwise(alg, it.numel(), it.data(1), it.data(0));
  return true;
}


}  // namespace tensor::cpu
