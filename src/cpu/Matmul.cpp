// Matrix products on CPU: oneDNN's matmul primitive for float32 and bfloat16, a plain-loop
// reference for every other dtype (and for the tests).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <omp.h>

#include "src/core/DtypeVisit.h"
#include "src/cpu/OneDNN.h"
#include "src/cpu/Matmul.h"
#include "tensor/ops.h"

namespace tensor::cpu {
namespace {

namespace dn = onednn;

/// Fewest rows sharing one weight matrix for which bf16 weights are reordered to oneDNN's
/// blocked layout (Note [Matmul weight layout]).
constexpr int64_t kBlockedWeightsMinRows = 1024;

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
  // A 2-D operand is a batch of one (its batch stride is set below).
  const int lead = 3 - static_cast<int>(t.dim());
  o.size[0] = 1;
  for (int i = lead; i < 3; ++i) { o.size[i] = t.size(i - lead); o.stride[i] = t.stride(i - lead); }
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

// Note [Small matmul overhead]
// A 64x64 float32 product takes ~3 us in oneDNN's kernel; libtorch's (OpenBLAS) call is ~2.8 us
// in all, ours was ~5.5 us (/tmp/smallmm/s.cpp, medians, this 2-core box). Of the difference,
// ~1.2 us was constructing three dnnl::memory objects per call (~0.4 us each, against ~0.03 us
// for set_data_handle) and the argument map. So each thread remembers the memory objects it
// last bound to a few primitives and only re-points them. Products below kOneThreadFlops run
// on one thread (the primitive is created with one OpenMP thread; oneDNN then runs it inline):
// 32^3 takes 0.66 us on one thread against 1.67 us on two, 64^3 is a tie (2.9 / 3.0 us), and a
// parallel region on this loaded shared box can wait milliseconds for a descheduled thread.
constexpr double kOneThreadFlops = 2.0 * 64 * 64 * 64;

/// Runs p with src, weights, dst (and bias when mds[3]) at ptrs, re-using this thread's memory
/// objects for p (Note [Small matmul overhead]).
/// make_mds() fills *mds[i]; it runs only when this thread has no binding for p.
template <class MakeMds>
void execute_bound(const dn::CachedPrimitive& p, const dnnl::memory::desc* const mds[4], void* const ptrs[4],
                   const MakeMds& make_mds) {
  struct Bound {
    dnnl::primitive prim;  // held, so that its address is not reused while remembered
    dnnl::memory mem[5];   // src, weights, dst, bias, scratchpad
    size_t scratch_bytes = 0;
  };
  static constexpr int kSlots = 4;
  thread_local Bound slots[kSlots];
  thread_local int next = 0;
  Bound* b = nullptr;
  for (Bound& s : slots)
    if (s.prim && s.prim.get() == p.prim.get()) { b = &s; break; }
  if (b == nullptr) {
    b = &slots[next];
    next = (next + 1) % kSlots;
    *b = Bound{};
    make_mds();
    for (int i = 0; i < 4; ++i)
      if (mds[i] != nullptr) b->mem[i] = dnnl::memory(*mds[i], dn::engine(), DNNL_MEMORY_NONE);
    const dnnl::memory::desc sd = p.pd.scratchpad_desc();
    b->scratch_bytes = sd.get_size();
    if (b->scratch_bytes > 0) b->mem[4] = dnnl::memory(sd, dn::engine(), DNNL_MEMORY_NONE);
    b->prim = p.prim;
  }
  static const int kArg[5] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS, DNNL_ARG_SCRATCHPAD};
  // A small scratchpad (brgemm asks 640 B per thread) lives in this thread's buffer rather than a
  // tensor per call: the primitive runs synchronously on this thread, so one buffer serves all.
  constexpr size_t kThreadScratch = 64 << 10;
  struct alignas(64) ScratchBuf { unsigned char bytes[kThreadScratch]; };
  thread_local std::unique_ptr<ScratchBuf> small_scratch;
  Tensor scratch;
  void* scratch_ptr = nullptr;
  if (b->scratch_bytes > kThreadScratch) {
    scratch = empty({static_cast<int64_t>(b->scratch_bytes)}, TensorOptions().dtype(kUInt8));
    scratch_ptr = scratch.data_ptr();
  } else if (b->scratch_bytes > 0) {
    if (!small_scratch) small_scratch = std::make_unique<ScratchBuf>();
    scratch_ptr = small_scratch->bytes;
  }
  dnnl_exec_arg_t args[5];
  int nargs = 0;
  for (int i = 0; i < 5; ++i) {
    if (!b->mem[i]) continue;
    b->mem[i].set_data_handle(i < 4 ? ptrs[i] : scratch_ptr);
    args[nargs++] = {kArg[i], b->mem[i].get()};
  }
  const dnnl_status_t st = dnnl_primitive_execute(p.prim.get(), dn::stream().get(), nargs, args);
  if (st != dnnl_success) TENSOR_ERROR("oneDNN matmul failed (status {})", static_cast<int>(st));
}

// Note [Matmul weight layout]
// oneDNN's AMX bf16 matmul (brg:avx512_core_amx_bf16) reads plain weights through its own
// copy into the blocked (VNNI-paired, BA16a64b2a) layout inside the kernel; given weights
// already blocked (format `any`, and only with 2-D descriptors in 2.6.3) it skips that copy.
// Measured with oneDNN alone (/tmp/mmprobe/p2.cpp, variants interleaved in one process):
//   2 threads, box idle (07:47 run): bf16 1024^3 plain 2.04-2.07 TFLOP/s, weights blocked
//   beforehand 2.98-3.05, src/weights/dst all reordered every call 2.22; 2048^3 plain
//   1.52-1.57, weights blocked beforehand 2.27-2.28, all reordered every call 1.94-2.00.
//   1 thread, CPU time (loaded box): 1024^3 plain 694 GFLOP/s, weights reordered every call
//   733, blocked beforehand 1025; 2048^3 686 / 723 / 825; with 1024 columns the per-call
//   reorder loses below 1024 rows (M=512: 711 plain / 630) and ties at 1024 (788 / 761).
// The reorder itself is slow (~0.8 ms for a 1024^2 bf16 matrix), so most of the kernel's gain
// goes to it; a tensor's weights can change between calls (and libtensor has no prepacked
// weight type), so it runs every call, into a scratch block from the caching allocator.
// Two later runs at 2 threads on a nearly idle box (load < 1.4; the same computation in two
// variants differed by up to 20% at 1024, so 1024 is noise-bound):
//   bf16 1024^3 plain 1.38-1.42 TFLOP/s, weights reordered every call 1.26-1.61 (a tie);
//   2048^3 plain 1.32, reordered every call 1.60-1.63 (+22%), blocked beforehand 1.83-1.88.
//   float32 (brg:avx512_core) 1024^3 plain 329-356 GFLOP/s, reordered every call 338-365
//   (+2.5-2.8%), blocked beforehand 364-401; 2048^3 339-370 / 346-380 (+2-2.7%) / 363-400.
// So bf16 from 1024 rows, and float32 where all three dims are >= 1024 (the measured range;
// one core also showed +1-4% there) take the blocked weights. In libtensor (bench_ops, 2
// threads, streaming reference 29-31 GB/s, TENSOR_ONEDNN_MATMUL_WEIGHTS=plain vs default):
//   bf16 1024: 1861-1989 -> 2025-2112 GFLOP/s; bf16 2048: 1515-1546 -> 1848-1959;
//   float32 1024: 357-365 -> 368-400; float32 2048: 351-391 -> 352-368 (noise-bound).
// TENSOR_ONEDNN_MATMUL_WEIGHTS=plain|blocked overrides the choice (for measurements only).
bool blocked_weights(ScalarType t, int64_t rows, int64_t k, int64_t m) {
  static const int mode = [] {
    const char* e = std::getenv("TENSOR_ONEDNN_MATMUL_WEIGHTS");
    if (e && std::strcmp(e, "plain") == 0) return 0;
    if (e && std::strcmp(e, "blocked") == 0) return 1;
    return -1;
  }();
  if (mode >= 0) return mode == 1;
  if (t == ScalarType::BFloat16) return rows >= kBlockedWeightsMinRows && k >= 64 && m >= 64;
  // float32: measured only with all three dims >= 1024 (+2-3%); without a bias such products
  // go to dnnl_sgemm instead (Note [float32 products on dnnl_sgemm]).
  return t == ScalarType::Float && rows >= 1024 && k >= 1024 && m >= 1024;
}

// Note [float32 products on dnnl_sgemm]
// oneDNN has two float32 GEMMs: the matmul primitive (brg:avx512_core here), which reads plain
// weights through a copy inside its kernel, and dnnl_sgemm, a BLAS-style driver that packs both
// operands itself. With 2 threads on this box (/tmp/mmprobe/g3.cpp, the two interleaved in one
// process, medians, 2 MB pages as our allocator gives; OpenBLAS, libtorch's BLAS, beside them):
//   NN 1024^3 brgemm 339-346 GFLOP/s, sgemm 353-364, OpenBLAS 337-355
//   NN 2048^3 330-347 / 366-391 / 344-366;  TN 1024^3 337-342 / 365-369;  TN 2048^3 324 / 365
//   NN 512^3 357 / 398;  NN 256^3 368-371 / 387-394;  NN 128x1024x784 332 / 372
//   NT 1024^3 366 / 369 (a tie);  NT 2048^3 364 / 392
// but brgemm wins when a dim is small: NN 1024x1024x64 396 / 370, NN 1024x64x1024 337 / 327,
// NT 64x1024x1024 312 / 211, and ties at 128^3. The float32 weights pre-blocked beforehand
// would give brgemm 375-385 at 1024 and 347-363 at 2048, but blocking them per call (the
// earlier path for dims >= 1024) loses the gain to the reorder. So float32 products without a
// bias whose three dims are all >= kSgemmMinDim go to dnnl_sgemm, which takes alpha and beta
// (beta 0 never reads C) but no bias; with a bias (linear) brgemm fuses it, which the
// measured shapes favour. TENSOR_ONEDNN_SGEMM=0 turns the path off (for measurements only).
constexpr int64_t kSgemmMinDim = 256;

bool sgemm_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("TENSOR_ONEDNN_SGEMM");
    return !(e && std::strcmp(e, "0") == 0);
  }();
  return on;
}

/// out[rows, m] = alpha * a @ w + beta * out on dnnl_sgemm (Note [float32 products on
/// dnnl_sgemm]); a is row- or column-major [rows, k] (rows folded from a's batch), w [k, m].
void sgemm(const Operand& oa, const Operand& ow, int64_t rows, int64_t k, int64_t m, const Tensor& a,
           const Tensor& w, const Tensor& out, double alpha, double beta) {
  // describe() left each matrix with a unit step in one dim: that dim decides the transpose.
  const bool ta = oa.stride[2] != 1, tw = ow.stride[2] != 1;
  const dnnl_dim_t lda = ta ? oa.stride[2] : oa.stride[1], ldw = tw ? ow.stride[2] : ow.stride[1];
  const dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tw ? 'T' : 'N', rows, m, k, static_cast<float>(alpha),
                                      static_cast<const float*>(a.data_ptr()), lda, static_cast<const float*>(w.data_ptr()),
                                      ldw, static_cast<float>(beta), static_cast<float*>(out.data_ptr()), m);
  if (st != dnnl_success) TENSOR_ERROR("oneDNN sgemm failed (status {}) for [{}, {}] x [{}, {}]", static_cast<int>(st), rows, k, k, m);
}

void matmul_onednn(Tensor a, Tensor w, const Tensor& bias, const Tensor& out, double alpha,
                   double beta) {
  Operand oa, ow;
  if (!describe(a, oa)) { a = a.contiguous(); describe(a, oa); }
  if (!describe(w, ow)) { w = w.contiguous(); describe(w, ow); }
  const ScalarType t = out.scalar_type();
  const int64_t B = out.dim() == 3 ? out.size(0) : 1, n = out.size(-2), m = out.size(-1);
  if (B > 1 && oa.size[0] == 1 && ow.size[0] == 1) {
    // Both operands broadcast over the batch (stride 0): oneDNN takes dst's batch from a source
    // and refuses the descriptor, so a is materialized over the batch (found by the CUDA suite's
    // CPU reference for bmm of two expanded operands).
    a = a.expand({B, a.size(-2), a.size(-1)}).contiguous();
    describe(a, oa);
  }
  Tensor b = bias.defined() ? bias.contiguous() : bias;
  // Blocked weights need one weight matrix for all rows: a batch of 1, or a 2-D weight under a
  // row-major batch of a whose batch stride steps whole matrices (then the batch is more rows).
  const bool foldable = ow.size[0] == 1 && (B == 1 || (oa.size[0] == B && oa.stride[2] == 1 && oa.stride[0] == n * oa.stride[1]));
  const int64_t k = a.size(-1);
  if (t == ScalarType::Float && !b.defined() && foldable && B * n >= kSgemmMinDim && k >= kSgemmMinDim &&
      m >= kSgemmMinDim && sgemm_enabled()) {
    // Folded rows need a row-major a (foldable checked its batch steps whole matrices).
    sgemm(oa, ow, B * n, k, m, a, w, out, alpha, beta);
    return;
  }
  const bool blocked = foldable && blocked_weights(t, B * n, k, m);

  dn::Key key("matmul");
  key.add(static_cast<int64_t>(t)).add(IntArrayRef(oa.size, 3)).add(IntArrayRef(oa.stride, 3));
  key.add(IntArrayRef(ow.size, 3)).add(IntArrayRef(ow.stride, 3)).add(B).add(n).add(m);
  key.add(b.defined() ? static_cast<int64_t>(b.scalar_type()) : int64_t{-1}).add(alpha).add(beta);
  key.add(static_cast<int64_t>(blocked));
  const bool one_thread = 2.0 * B * n * m * k <= kOneThreadFlops;
  key.add(static_cast<int64_t>(one_thread));

  // Descriptors are built only on a cache or binding miss: each costs a
  // dnnl_memory_desc_init_by_strides and ~1 KB of copying (Note [Small matmul overhead]).
  dnnl::memory::desc a_md, w_md, d_md, b_md;
  bool have_mds = false;
  auto make_mds = [&] {
    if (have_mds) return;
    have_mds = true;
    if (blocked) {
      // 2-D descriptors: oneDNN 2.6.3 answers `any` weights of a 3-D matmul with the plain
      // layout, of a 2-D one with the blocked layout. The rows of a's batch fold into one matrix
      // (blocked needs one weight matrix, and a row-major a whose batch follows its rows).
      const int64_t rows = B * n;
      a_md = dnnl::memory::desc({rows, k}, dn::to_dnnl(t), dnnl::memory::dims{oa.stride[1], oa.stride[2]});
      w_md = dnnl::memory::desc({k, m}, dn::to_dnnl(t), dnnl::memory::dims{ow.stride[1], ow.stride[2]});
      d_md = dnnl::memory::desc({rows, m}, dn::to_dnnl(t), dnnl::memory::dims{m, 1});
      if (b.defined()) b_md = dnnl::memory::desc({1, m}, dn::to_dnnl(b.scalar_type()), dnnl::memory::dims{m, 1});
    } else {
      a_md = md_of(oa, t);
      w_md = md_of(ow, t);
      d_md = dnnl::memory::desc({B, n, m}, dn::to_dnnl(t), dnnl::memory::dims{n * m, m, 1});
      if (b.defined()) b_md = dnnl::memory::desc({1, 1, m}, dn::to_dnnl(b.scalar_type()), dnnl::memory::dims{m, m, 1});
    }
  };
  dn::CachedPrimitive p = dn::cached(key, [&] {
    make_mds();
    dnnl::primitive_attr attr = dn::make_attr();
    if (alpha != 1.0) attr.set_output_scales(0, {static_cast<float>(alpha)});
    if (beta != 0.0) {
      dnnl::post_ops po;
      po.append_sum(static_cast<float>(beta));
      attr.set_post_ops(po);
    }
    const dnnl::memory::desc w_want =
        blocked ? dnnl::memory::desc(w_md.dims(), w_md.data_type(), dnnl::memory::format_tag::any) : w_md;
    auto d = b.defined() ? dnnl::matmul::desc(a_md, w_want, b_md, d_md) : dnnl::matmul::desc(a_md, w_want, d_md);
    // oneDNN sizes its thread partition when the primitive is made (Note [Small matmul overhead]).
    const int threads = omp_get_max_threads();
    if (one_thread) omp_set_num_threads(1);
    struct Restore {
      int n;
      bool on;
      ~Restore() { if (on) omp_set_num_threads(n); }
    } restore{threads, one_thread};
    dnnl::matmul::primitive_desc pd(d, attr, dn::engine());
    return dn::CachedPrimitive{dnnl::matmul(pd), pd};
  });
  if (!blocked) {
    const dnnl::memory::desc* const mds[4] = {&a_md, &w_md, &d_md, b.defined() ? &b_md : nullptr};
    void* const ptrs[4] = {a.data_ptr(), w.data_ptr(), out.data_ptr(), b.defined() ? b.data_ptr() : nullptr};
    execute_bound(p, mds, ptrs, make_mds);
    return;
  }
  make_mds();
  dnnl::memory w_mem = dn::wrap(w_md, w);
  Tensor w_blocked;  // keeps the reordered weights alive until the matmul has run
  if (blocked) {
    const dnnl::memory::desc want = p.pd.weights_desc();
    if (!(want == w_md)) {
      w_blocked = empty({static_cast<int64_t>(want.get_size())}, TensorOptions().dtype(kUInt8));
      dnnl::memory to(want, dn::engine(), w_blocked.data_ptr());
      dn::Key rkey = key;
      rkey.add(int64_t{-2});  // the weights' reorder: the matmul's key fixes both descriptors
      dn::CachedPrimitive r = dn::cached(rkey, [&] {
        dnnl::reorder::primitive_desc pd(dn::engine(), w_md, dn::engine(), want, dn::make_attr());
        return dn::CachedPrimitive{dnnl::reorder(pd), pd};
      });
      dn::execute(r, {{DNNL_ARG_FROM, w_mem}, {DNNL_ARG_TO, to}});
      w_mem = to;
    }
  }
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, dn::wrap(a_md, a)}, {DNNL_ARG_WEIGHTS, w_mem}, {DNNL_ARG_DST, dn::wrap(d_md, out)}};
  if (b.defined()) args.emplace(DNNL_ARG_BIAS, dn::wrap(b_md, b));
  dn::execute(p, std::move(args));
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

void matmul_reference(const char* op, const Tensor& a_in, const Tensor& w_in, const Tensor& bias_in, const Tensor& out_in,
                      const Scalar& alpha, const Scalar& beta) {
  // Lazy conj views (a^H in the backward formulas) are materialised: the loops read raw data.
  // The loops index three dims: 2-D operands become a batch of one here.
  const Tensor a3 = a_in.dim() == 2 ? a_in.unsqueeze(0) : a_in, w3 = w_in.dim() == 2 ? w_in.unsqueeze(0) : w_in;
  const Tensor out = out_in.dim() == 2 ? out_in.unsqueeze(0) : out_in;
  const Tensor a = a3.is_conj() ? a3.resolve_conj() : a3;
  const Tensor w = w3.is_conj() ? w3.resolve_conj() : w3;
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
  if (a.size(-1) == 0) {
    // An empty inner dim: the product is zero, oneDNN rejects k = 0.
    if (beta.to_complex() == std::complex<double>(0, 0)) o.zero_();
    else o.mul_(beta);
    if (bias.defined()) o.add_(bias);
    return;
  }
  if (dn::supports(t) && !alpha.is_complex() && !beta.is_complex()) {
    matmul_onednn(a, w, bias, out, alpha.to_double(), beta.to_double());
  } else if (t == ScalarType::Half) {
    // float16 computes in float32 (Note [Half types compute in float]).
    Tensor o32 = out.to(kFloat32);
    matmul_onednn(a.to(kFloat32), w.to(kFloat32), bias.defined() ? bias.to(kFloat32) : bias, o32,
                  alpha.to_double(), beta.to_double());
    o.copy_(o32);
  } else {
    matmul_reference(op, a, w, bias, out, alpha, beta);
  }
}

}  // namespace tensor::cpu
