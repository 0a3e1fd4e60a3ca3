// Matrix products on CPU: oneDNN's matmul primitive for float32 and bfloat16, a plain-loop
// reference for every other dtype (and for the tests).
#include <algorithm>
#include <cstring>

#include "src/core/DtypeVisit.h"
#include "src/cpu/OneDNN.h"
#include "src/ops/LinalgOps.h"
#include "tensor/ops.h"

namespace tensor::cpu {
namespace {

namespace dn = onednn;

/// Sizes and strides of one 3-D operand as oneDNN will see it.
struct Operand {
  int64_t size[3];
  int64_t stride[3];
};

// Note [Matmul operand layouts]
// oneDNN's matmul takes any strides, but its fast kernels only recognise plain row-major ("ab")
// and column-major ("ba") matrices, i.e. the transposes libtorch passes to BLAS as transa/transb.
// So a transposed weight (linear's w.t()) is passed as it is, never copied. Strides of size-1
// dims do not address anything and are normalised so the layout is recognised; a batch stride
// of 0 (an expanded batch) becomes a batch of 1, which oneDNN broadcasts. Anything else (a
// column step other than 1 in both dims) is copied to contiguous first.
bool describe(const Tensor& t, Operand& o) {
  for (int i = 0; i < 3; ++i) { o.size[i] = t.size(i); o.stride[i] = t.stride(i); }
  const int64_t r = o.size[1], c = o.size[2];
  const bool row = (c == 1 || o.stride[2] == 1) && (r == 1 || o.stride[1] >= c);
  const bool col = (r == 1 || o.stride[1] == 1) && (c == 1 || o.stride[2] >= r);
  if (row) {
    o.stride[2] = 1;
    if (r == 1) o.stride[1] = std::max<int64_t>(c, 1);
  } else if (col) {
    o.stride[1] = 1;
    if (c == 1) o.stride[2] = std::max<int64_t>(r, 1);
  } else {
    return false;
  }
  const int64_t footprint = std::max<int64_t>(r * c, 1);
  if (o.size[0] == 1 || o.stride[0] == 0) {
    o.size[0] = 1;
    o.stride[0] = footprint;
  }
  return true;
}

dnnl::memory::desc md_of(const Operand& o, ScalarType t) {
  return dnnl::memory::desc({o.size[0], o.size[1], o.size[2]}, dn::to_dnnl(t),
                            dnnl::memory::dims{o.stride[0], o.stride[1], o.stride[2]});
}

void matmul_onednn(const char* op, Tensor a, Tensor w, const Tensor& bias, const Tensor& out, double alpha,
                   double beta) {
  Operand oa, ow;
  if (!describe(a, oa)) { a = a.contiguous(); describe(a, oa); }
  if (!describe(w, ow)) { w = w.contiguous(); describe(w, ow); }
  const ScalarType t = out.scalar_type();
  const int64_t B = out.size(0), n = out.size(1), m = out.size(2);
  Tensor b = bias.defined() ? bias.contiguous() : bias;

  dn::Key key("matmul");
  key.add(static_cast<int64_t>(t)).add(IntArrayRef(oa.size, 3)).add(IntArrayRef(oa.stride, 3));
  key.add(IntArrayRef(ow.size, 3)).add(IntArrayRef(ow.stride, 3)).add(B).add(n).add(m);
  key.add(b.defined() ? static_cast<int64_t>(b.scalar_type()) : int64_t{-1}).add(alpha).add(beta);

  dnnl::memory::desc a_md = md_of(oa, t), w_md = md_of(ow, t);
  dnnl::memory::desc d_md({B, n, m}, dn::to_dnnl(t), dnnl::memory::dims{n * m, m, 1});
  dnnl::memory::desc b_md;
  if (b.defined()) b_md = dnnl::memory::desc({1, 1, m}, dn::to_dnnl(b.scalar_type()), dnnl::memory::dims{m, m, 1});

  dn::CachedPrimitive p = dn::cached(key, [&] {
    dnnl::primitive_attr attr = dn::make_attr();
    if (alpha != 1.0) attr.set_output_scales(0, {static_cast<float>(alpha)});
    if (beta != 0.0) {
      dnnl::post_ops po;
      po.append_sum(static_cast<float>(beta));
      attr.set_post_ops(po);
    }
    auto d = b.defined() ? dnnl::matmul::desc(a_md, w_md, b_md, d_md) : dnnl::matmul::desc(a_md, w_md, d_md);
    dnnl::matmul::primitive_desc pd(d, attr, dn::engine());
    return dn::CachedPrimitive{dnnl::matmul(pd), pd};
  });
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, dn::wrap(a_md, a)}, {DNNL_ARG_WEIGHTS, dn::wrap(w_md, w)}, {DNNL_ARG_DST, dn::wrap(d_md, out)}};
  if (b.defined()) args.emplace(DNNL_ARG_BIAS, dn::wrap(b_md, b));
  dn::execute(p, std::move(args));
  (void)op;
}

template <class T>
void reference_loops(const Tensor& a, const Tensor& w, const Tensor& bias, const Tensor& out, const Scalar& alpha_s,
                     const Scalar& beta_s) {
  using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, opmath_t<T>>;
  const Acc alpha = alpha_s.to<Acc>(), beta = beta_s.to<Acc>();
  const bool use_beta = !(beta_s.to_complex() == std::complex<double>(0, 0));
  const int64_t B = out.size(0), n = out.size(1), m = out.size(2), k = a.size(2);
  const T* A = static_cast<const T*>(a.data_ptr());
  const T* W = static_cast<const T*>(w.data_ptr());
  const T* bias_p = bias.defined() ? static_cast<const T*>(bias.data_ptr()) : nullptr;
  const int64_t bias_s = bias.defined() && bias.dim() > 0 ? bias.stride(-1) : 0;
  T* O = static_cast<T*>(out.data_ptr());
  const int64_t as0 = a.size(0) == 1 ? 0 : a.stride(0), as1 = a.stride(1), as2 = a.stride(2);
  const int64_t ws0 = w.size(0) == 1 ? 0 : w.stride(0), ws1 = w.stride(1), ws2 = w.stride(2);
  const int64_t rows = B * n;
#pragma omp parallel if (rows * m * k > (1 << 16))
  {
    std::vector<Acc> acc(static_cast<size_t>(m));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t bi = r / n, i = r % n;
      std::fill(acc.begin(), acc.end(), Acc(0));
      const T* arow = A + bi * as0 + i * as1;
      const T* wb = W + bi * ws0;
      for (int64_t p = 0; p < k; ++p) {
        const Acc av = static_cast<Acc>(convert<opmath_t<T>>(arow[p * as2]));
        const T* wrow = wb + p * ws1;
        for (int64_t j = 0; j < m; ++j) acc[j] += av * static_cast<Acc>(convert<opmath_t<T>>(wrow[j * ws2]));
      }
      T* orow = O + r * m;
      for (int64_t j = 0; j < m; ++j) {
        Acc v = alpha * acc[j];
        if (use_beta) v += beta * static_cast<Acc>(convert<opmath_t<T>>(orow[j]));
        if (bias_p) v += static_cast<Acc>(convert<opmath_t<T>>(bias_p[j * bias_s]));
        orow[j] = convert<T>(v);
      }
    }
  }
}

}  // namespace

void matmul_reference(const char* op, const Tensor& a_in, const Tensor& w_in, const Tensor& bias_in, const Tensor& out,
                      const Scalar& alpha, const Scalar& beta) {
  // Lazy conj views (a^H in the backward formulas) are materialised: the loops read raw data.
  const Tensor a = a_in.is_conj() ? a_in.resolve_conj() : a_in;
  const Tensor w = w_in.is_conj() ? w_in.resolve_conj() : w_in;
  const Tensor bias = bias_in.defined() && bias_in.is_conj() ? bias_in.resolve_conj() : bias_in;
  visit_dtype<kGroupInt | kGroupFloating | kGroupComplex>(out.scalar_type(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reference_loops<T>(a, w, bias, out, alpha, beta);
  });
}

void matmul(const char* op, const Tensor& a, const Tensor& w, const Tensor& bias, const Tensor& out,
            const Scalar& alpha, const Scalar& beta) {
  const ScalarType t = out.scalar_type();
  Tensor o = out;  // the handle is const, the data is written
  if (a.size(2) == 0) {
    // An empty inner dim: the product is zero, oneDNN rejects k = 0.
    if (beta.to_complex() == std::complex<double>(0, 0)) o.zero_();
    else o.mul_(beta);
    if (bias.defined()) o.add_(bias);
    return;
  }
  if (dn::supports(t) && !alpha.is_complex() && !beta.is_complex()) {
    matmul_onednn(op, a, w, bias, out, alpha.to_double(), beta.to_double());
  } else if (t == ScalarType::Half) {
    // float16 computes in float32 (Note [Half types compute in float]).
    Tensor o32 = out.to(kFloat32);
    matmul_onednn(op, a.to(kFloat32), w.to(kFloat32), bias.defined() ? bias.to(kFloat32) : bias, o32,
                  alpha.to_double(), beta.to_double());
    o.copy_(o32);
  } else {
    matmul_reference(op, a, w, bias, out, alpha, beta);
  }
}

}  // namespace tensor::cpu
