// The CUDA reductions' description and bodies (Note [Kernel bodies run on the CPU] in
// kernels/cuda/ElementwiseBody.h): a plain-data description of one reduction (kept and reduced
// dims through offset calculators, 32-bit indexing), the reduce ops in opmath precision over the
// shared combine steps of kernels/math/Reduce.h, and host/device functions that fold a slice of
// one output's reduced range, combine partial results and store. kernels/cuda/ReduceKernels.cuh
// wraps them in __global__ shells; tests/test_reduce_bodies.cpp runs them on the CPU against
// the CPU kernels. Also the contract between src/cuda/CUDAReduce.cpp and the launchers of
// kernels/cuda/Reduce*.cu (plain data: nvcc never sees Tensor or fmt).
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/math/Cast.h"
#include "kernels/math/Macros.h"
#include "kernels/math/OffsetCalculator.h"
#include "kernels/math/Reduce.h"
#include "tensor/core/ScalarType.h"

namespace tensor::cuda_kernels {

// ---- the description of one reduction ----

/// The reduce ops, in kernels::ReduceOp's order (src/cuda/CUDAReduce.cpp checks it).
enum class ReduceKind : int { Sum, Prod, Max, Min, Any, All };

/// One reduction launch. Each output index o (row-major over the kept dims, in the order the
/// host chose) has byte offsets kept.get(o) = {input base, output, output 2}; each reduce index
/// r in [0, num_reduce) adds reduced.get(r)[0] to the input offset. `out2` is the int64 index
/// output of an argmax/argmin (else null); `out` may be null there (indices only). An
/// argmax/argmin reduces exactly one dim, so r is the position along it.
struct ReduceDesc {
  const char* in = nullptr;
  char* out = nullptr;
  char* out2 = nullptr;
  uint32_t num_outputs = 0;
  uint32_t num_reduce = 0;
  math::OffsetCalculator<3> kept;
  math::OffsetCalculator<1> reduced;
};

/// One dim of a reduction's input as the host sees it: its size, the byte strides of the input,
/// the output and output 2 along it (0 for a reduced dim), and whether it is reduced.
struct ReduceDim {
  int64_t size = 1;
  int64_t in = 0, out = 0, out2 = 0;
  bool reduced = false;
};

enum class DescStatus { Ok, TooManyDims, Over32Bit };

/// Builds `d` from `n` dims in any order (the caller's layout) and pointers: size-1 dims are
/// dropped, the rest ordered by input stride (innermost = smallest; stride 0 outermost) and
/// neighbours of the same kind merged where their strides allow. `rows` says whether the
/// input's innermost dim is reduced (a block per output then reads contiguous memory); else
/// neighbouring outputs are neighbours in memory and a thread per output reads coalesced.
/// TooManyDims: more than 8 kept or 8 reduced dims remain; Over32Bit: a count or a byte span
/// does not fit 32-bit indexing (Note [32-bit indexing] in src/cuda/CUDAElementwise.cpp), or
/// the smaller `limits` a test passes. Strides must be non-negative.
struct ReduceLimits {
  int64_t count = INT32_MAX;                  // outputs, and reduced elements per output
  int64_t span = int64_t(UINT32_MAX) - 16;    // bytes from an operand's first to last element
};
inline DescStatus make_reduce_desc(const ReduceDim* dims_in, int n, const char* in, char* out, char* out2,
                                   ReduceDesc& d, bool& rows, const ReduceLimits& limits = {}) {
  constexpr int kMax = 64;
  ReduceDim dims[kMax];
  int m = 0;
  for (int i = 0; i < n && m < kMax; ++i)
    if (dims_in[i].size != 1) dims[m++] = dims_in[i];
  // Stable insertion sort, largest input stride first (stride 0: outermost).
  auto key = [](const ReduceDim& r) { return r.in == 0 ? INT64_MAX : r.in; };
  for (int i = 1; i < m; ++i) {
    const ReduceDim cur = dims[i];
    int k = i;
    for (; k > 0 && key(dims[k - 1]) < key(cur); --k) dims[k] = dims[k - 1];
    dims[k] = cur;
  }
  int merged = 0;
  for (int i = 0; i < m; ++i) {
    if (merged > 0) {
      ReduceDim& o = dims[merged - 1];
      const ReduceDim& c = dims[i];
      if (o.reduced == c.reduced && o.in == c.in * c.size && o.out == c.out * c.size && o.out2 == c.out2 * c.size) {
        o.size *= c.size;
        o.in = c.in, o.out = c.out, o.out2 = c.out2;
        continue;
      }
    }
    dims[merged++] = dims[i];
  }
  // Innermost first for the offset calculators.
  int64_t ksize[kMax], kin[kMax], kout[kMax], kout2[kMax], rsize[kMax], rin[kMax];
  int nk = 0, nr = 0;
  int64_t num_out = 1, num_red = 1, span_in = 0, span_out = 0, span_out2 = 0;
  int64_t min_kept = INT64_MAX, min_red = INT64_MAX;
  for (int i = merged - 1; i >= 0; --i) {
    const ReduceDim& r = dims[i];
    span_in += (r.size - 1) * r.in;
    if (r.reduced) {
      rsize[nr] = r.size, rin[nr] = r.in, ++nr;
      num_red *= r.size;
      if (r.in > 0 && r.in < min_red) min_red = r.in;
    } else {
      ksize[nk] = r.size, kin[nk] = r.in, kout[nk] = r.out, kout2[nk] = r.out2, ++nk;
      num_out *= r.size;
      span_out += (r.size - 1) * r.out;
      span_out2 += (r.size - 1) * r.out2;
      if (r.in > 0 && r.in < min_kept) min_kept = r.in;
    }
  }
  if (nk > math::OffsetCalculator<3>::kMaxDims || nr > math::OffsetCalculator<1>::kMaxDims)
    return DescStatus::TooManyDims;
  if (num_out > limits.count || num_red > limits.count || span_in > limits.span || span_out > limits.span ||
      span_out2 > limits.span)
    return DescStatus::Over32Bit;
  const int64_t* kstr[3] = {kin, kout, kout2};
  const int64_t* rstr[1] = {rin};
  d.in = in, d.out = out, d.out2 = out2;
  d.num_outputs = static_cast<uint32_t>(num_out);
  d.num_reduce = static_cast<uint32_t>(num_red);
  d.kept = math::OffsetCalculator<3>(nk, ksize, kstr);
  d.reduced = math::OffsetCalculator<1>(nr, rsize, rstr);
  rows = min_red < min_kept;
  return DescStatus::Ok;
}

/// Runs a reduction over dims[0, n) (in, out, out2 as for make_reduce_desc, which must not
/// say TooManyDims) as descriptions within `limits`, calling leaf(desc, rows, second) for each.
/// Note [32-bit indexing] in src/cuda/CUDAElementwise.cpp: a kept dim is split in two (the
/// one spanning most bytes), each half with its pointers moved; a single output whose reduced
/// range alone is too large reduces two halves of its largest reduced dim into the two
/// elements of out_elem bytes at pair() (the output's dtype; alive until the reduction's work
/// is done), then leaf(pair description, rows, true) reduces the pair into the output, reading
/// the output's dtype (`second`). An argmax/argmin (`arg`) cannot combine indices that way:
/// returns false there (the caller falls back); true when everything ran.
template <class Leaf, class Pair>
bool run_within_limits(const ReduceDim* dims, int n, const char* in, char* out, char* out2, bool arg,
                       int64_t out_elem, const Leaf& leaf, const Pair& pair, const ReduceLimits& limits = {}) {
  ReduceDesc d;
  bool rows = false;
  if (make_reduce_desc(dims, n, in, out, out2, d, rows, limits) == DescStatus::Ok) {
    leaf(d, rows, false);
    return true;
  }
  constexpr int kMax = 64;
  if (n > kMax) return false;
  auto span = [](const ReduceDim& r) {
    int64_t s = r.in > r.out ? r.in : r.out;
    s = s > r.out2 ? s : r.out2;
    return (r.size - 1) * (s > 1 ? s : 1);
  };
  auto widest = [&](bool reduced) {
    int best = -1;
    for (int k = 0; k < n; ++k)
      if (dims[k].reduced == reduced && dims[k].size > 1 && (best < 0 || span(dims[k]) > span(dims[best]))) best = k;
    return best;
  };
  ReduceDim lo[kMax], hi[kMax];
  for (int k = 0; k < n; ++k) lo[k] = hi[k] = dims[k];
  int k = widest(false);
  if (k >= 0) {
    const int64_t half = dims[k].size / 2;
    lo[k].size = half;
    hi[k].size = dims[k].size - half;
    const bool a = run_within_limits(lo, n, in, out, out2, arg, out_elem, leaf, pair, limits);
    const bool b = run_within_limits(hi, n, in + half * dims[k].in, out ? out + half * dims[k].out : nullptr,
                                     out2 ? out2 + half * dims[k].out2 : nullptr, arg, out_elem, leaf, pair, limits);
    return a && b;
  }
  if (arg) return false;
  k = widest(true);
  if (k < 0) return false;  // nothing left to split: cannot happen with sane limits
  // One output (every kept dim has size 1).
  char* pp = pair();
  const int64_t half = dims[k].size / 2;
  lo[k].size = half;
  hi[k].size = dims[k].size - half;
  const bool a = run_within_limits(lo, n, in, pp, nullptr, arg, out_elem, leaf, pair, limits);
  const bool b = run_within_limits(hi, n, in + half * dims[k].in, pp + out_elem, nullptr, arg, out_elem, leaf, pair,
                                   limits);
  ReduceDim two;
  two.size = 2, two.in = out_elem, two.reduced = true;
  ReduceDesc pd;
  bool pair_rows = false;
  if (make_reduce_desc(&two, 1, pp, out, nullptr, pd, pair_rows, limits) != DescStatus::Ok) return false;
  leaf(pd, pair_rows, true);
  return a && b;
}

// ---- the launch plan ----

constexpr int kReduceBlockThreads = 256;   // a block per output: threads stride the reduced range
constexpr int kReduceThreadBlock = 128;    // a thread per output: outputs per block
constexpr uint32_t kPartialsPerThread = 64;  // second pass: a thread per output up to this many slices
constexpr int kMaxAccBytes = 16;           // the largest accumulator (ValueIndex<double, int64_t>)

/// How a reduction is launched: a block per output (rows) or a thread per output, and in how
/// many slices its reduced range is cut. slices > 1 writes one partial accumulator per
/// (output, slice) and a second pass combines them in slice order; the plan depends on the
/// shape alone, so a reduction is deterministic (Note [Deterministic reductions]).
struct ReducePlan {
  bool block_per_output = false;
  uint32_t slices = 1;
  uint32_t chunk = 0;  // reduced elements per slice
};

// Note [Deterministic reductions]
// No float atomics: every output is combined in an order fixed by the shape. A block folds its
// slice with each thread striding by the block size, then CUB's BlockReduce combines the
// threads in a fixed tree; partials of several slices go to scratch memory and a second kernel
// combines them in slice order. The same input on the same shape therefore gives the same bits.

/// The plan for `num_outputs` outputs of `num_reduce` elements each; `rows` from
/// make_reduce_desc. Enough blocks to fill a GPU (about 1024 blocks or 128K threads in flight),
/// and at least 32 elements per thread and slice so that partials stay a small fraction.
inline ReducePlan plan_reduce(uint32_t num_outputs, uint32_t num_reduce, bool rows) {
  ReducePlan p;
  const uint64_t R = num_reduce, outs = num_outputs > 0 ? num_outputs : 1;
  uint64_t slices;
  if (rows && R >= 64) {
    p.block_per_output = true;
    const uint64_t want = 1024 / outs, most = (R + kReduceBlockThreads * 16 - 1) / (kReduceBlockThreads * 16);
    slices = want < most ? want : most;
  } else {
    const uint64_t want = (uint64_t(1) << 17) / outs, most = R / 32;
    slices = want < most ? want : most;
  }
  if (slices < 1) slices = 1;
  if (slices > 65535) slices = 65535;
  uint64_t chunk = (R + slices - 1) / slices;
  if (chunk < 1) chunk = 1;
  slices = (R + chunk - 1) / chunk;  // no empty slice
  p.slices = static_cast<uint32_t>(slices < 1 ? 1 : slices);
  p.chunk = static_cast<uint32_t>(chunk);
  return p;
}

/// Scratch bytes the plan's partials need (0 with one slice).
inline uint64_t reduce_scratch_bytes(const ReduceDesc& d, const ReducePlan& p) {
  return p.slices > 1 ? uint64_t(d.num_outputs) * p.slices * kMaxAccBytes : 0;
}

// ---- the reduce ops: acc_t, identity, fold one element, combine two partials, store ----

template <class T>
constexpr bool is_int_like_v = std::is_integral_v<T>;  // bool included

/// Loads an element as a wrapping integer accumulator: integer sums and products wrap modulo
/// 2^64 as on the CPU, instead of signed overflow.
template <class in_t>
TENSOR_HD_INLINE uint64_t to_wrapping(in_t v) {
  if constexpr (std::is_same_v<in_t, bool>) return v ? 1u : 0u;
  else return static_cast<uint64_t>(static_cast<int64_t>(v));
}

/// Stores an accumulator: integers through int64 (so a wrapped sum casts as the CPU's does).
template <class out_t, class acc_t>
TENSOR_HD_INLINE void store_value(char* p, acc_t a) {
  if constexpr (std::is_same_v<acc_t, uint64_t>) *reinterpret_cast<out_t*>(p) = math::cast<out_t>(static_cast<int64_t>(a));
  else *reinterpret_cast<out_t*>(p) = math::cast<out_t>(a);
}

/// Sum (kProd false) or product: integers and bool in wrapping uint64, floating types in opmath
/// (float for the half types and float32, double for float64).
template <class in_t_, class out_t, bool kProd>
struct SumProdOp {
  using in_t = in_t_;
  using acc_t = std::conditional_t<is_int_like_v<in_t>, uint64_t, math::opmath_t<in_t>>;
  static TENSOR_HD_INLINE acc_t identity() { return acc_t(kProd ? 1 : 0); }
  static TENSOR_HD_INLINE acc_t load(in_t v) {
    if constexpr (is_int_like_v<in_t>) return to_wrapping(v);
    else return static_cast<acc_t>(v);
  }
  static TENSOR_HD_INLINE acc_t reduce(acc_t a, in_t v, uint32_t) { return combine(a, load(v)); }
  static TENSOR_HD_INLINE acc_t combine(acc_t a, acc_t b) { return kProd ? a * b : a + b; }
  static TENSOR_HD_INLINE void store(char* out, char*, acc_t a) { store_value<out_t>(out, a); }
};

/// max (kMax) or min, NaN-propagating, in opmath; the output has the input's dtype.
template <class in_t_, bool kMax>
struct MinMaxOp {
  using in_t = in_t_;
  using acc_t = math::opmath_t<in_t>;
  static TENSOR_HD_INLINE acc_t identity() {
    if constexpr (std::is_floating_point_v<acc_t>) return kMax ? -math::infinity<acc_t>() : math::infinity<acc_t>();
    else return kMax ? std::numeric_limits<acc_t>::lowest() : std::numeric_limits<acc_t>::max();
  }
  static TENSOR_HD_INLINE acc_t reduce(acc_t a, in_t v, uint32_t) { return combine(a, static_cast<acc_t>(v)); }
  static TENSOR_HD_INLINE acc_t combine(acc_t a, acc_t b) { return math::minmax_propagate_nan<kMax>(a, b); }
  static TENSOR_HD_INLINE void store(char* out, char*, acc_t a) { store_value<in_t>(out, a); }
};

/// any (kAny) or all: whether some or every element is nonzero (NaN counts as nonzero); bool out.
template <class in_t_, bool kAny>
struct AnyAllOp {
  using in_t = in_t_;
  using acc_t = bool;
  static TENSOR_HD_INLINE bool identity() { return !kAny; }
  static TENSOR_HD_INLINE bool reduce(bool a, in_t v, uint32_t) { return combine(a, math::cast<bool>(v)); }
  static TENSOR_HD_INLINE bool combine(bool a, bool b) { return kAny ? (a || b) : (a && b); }
  static TENSOR_HD_INLINE void store(char* out, char*, bool a) { *reinterpret_cast<bool*>(out) = a; }
};

/// argmax (kMax) or argmin with its value: NaN wins, ties go to the lower index
/// (math::arg_combine). The identity loses to every element (the worst value, the largest index).
template <class in_t_, bool kMax>
struct ArgOp {
  using in_t = in_t_;
  using value_t = math::opmath_t<in_t>;
  using acc_t = math::ValueIndex<value_t, int64_t>;
  static TENSOR_HD_INLINE acc_t identity() { return {MinMaxOp<in_t, kMax>::identity(), INT64_MAX}; }
  static TENSOR_HD_INLINE acc_t reduce(acc_t a, in_t v, uint32_t r) {
    return combine(a, acc_t{static_cast<value_t>(v), static_cast<int64_t>(r)});
  }
  static TENSOR_HD_INLINE acc_t combine(acc_t a, acc_t b) { return math::arg_combine<kMax>(a, b); }
  static TENSOR_HD_INLINE void store(char* out, char* out2, acc_t a) {
    if (out) store_value<in_t>(out, a.value);
    *reinterpret_cast<int64_t*>(out2) = a.index;
  }
};

static_assert(sizeof(ArgOp<double, true>::acc_t) <= kMaxAccBytes, "partials are kMaxAccBytes apart at most");

// ---- the bodies ----

/// Folds the reduce indices begin, begin + step, ... (< end) of output `o` into Op's identity.
template <class Op>
TENSOR_HD_INLINE typename Op::acc_t reduce_slice(const ReduceDesc& d, uint32_t o, uint32_t begin, uint32_t end,
                                                 uint32_t step) {
  using in_t = typename Op::in_t;
  typename Op::acc_t acc = Op::identity();
  const char* base = d.in + d.kept.get(o)[0];
  if (d.reduced.dims <= 1) {
    // One reduced dim (the common case, merged where possible): r * stride, no division. Four
    // independent accumulators keep four loads in flight per thread; they combine in a fixed
    // order, so the result stays deterministic. (r + 3 * step cannot wrap: end < 2^31 and
    // step <= kReduceBlockThreads.)
    const uint32_t stride = d.reduced.dims == 1 ? d.reduced.strides_[0][0] : 0;
    auto at = [&](uint32_t r) { return *reinterpret_cast<const in_t*>(base + r * stride); };
    typename Op::acc_t a1 = Op::identity(), a2 = Op::identity(), a3 = Op::identity();
    uint32_t r = begin;
    for (; r + 3 * step < end; r += 4 * step) {
      const in_t v0 = at(r), v1 = at(r + step), v2 = at(r + 2 * step), v3 = at(r + 3 * step);
      acc = Op::reduce(acc, v0, r);
      a1 = Op::reduce(a1, v1, r + step);
      a2 = Op::reduce(a2, v2, r + 2 * step);
      a3 = Op::reduce(a3, v3, r + 3 * step);
    }
    for (; r < end; r += step) acc = Op::reduce(acc, at(r), r);
    return Op::combine(Op::combine(acc, a1), Op::combine(a2, a3));
  }
  for (uint32_t r = begin; r < end; r += step)
    acc = Op::reduce(acc, *reinterpret_cast<const in_t*>(base + d.reduced.get(r)[0]), r);
  return acc;
}

/// Stores output `o`'s final accumulator.
template <class Op>
TENSOR_HD_INLINE void reduce_store(const ReduceDesc& d, uint32_t o, typename Op::acc_t acc) {
  const math::Offsets<3> off = d.kept.get(o);
  Op::store(d.out ? d.out + off[1] : nullptr, d.out2 ? d.out2 + off[2] : nullptr, acc);
}

/// Slice `s` of output `o` under plan `p`: [s * chunk, min(num_reduce, (s + 1) * chunk)),
/// folded by the thread `lane` of `lanes` (lane, lane + lanes, ...).
template <class Op>
TENSOR_HD_INLINE typename Op::acc_t reduce_slice_of(const ReduceDesc& d, const ReducePlan& p, uint32_t o, uint32_t s,
                                                    uint32_t lane, uint32_t lanes) {
  const uint64_t b = uint64_t(s) * p.chunk, e64 = b + p.chunk;
  const uint32_t e = static_cast<uint32_t>(e64 < d.num_reduce ? e64 : d.num_reduce);
  return reduce_slice<Op>(d, o, static_cast<uint32_t>(b) + lane, e, lanes);
}

/// Combines partials[begin], partials[begin + step], ... (< end) into Op's identity, in order.
template <class Op>
TENSOR_HD_INLINE typename Op::acc_t combine_partials(const typename Op::acc_t* partials, uint32_t begin, uint32_t end,
                                                     uint32_t step) {
  typename Op::acc_t acc = Op::identity();
  for (uint32_t i = begin; i < end; i += step) acc = Op::combine(acc, partials[i]);
  return acc;
}

// ---- scans and softmax along one dim of a contiguous tensor: (outer, size, inner) ----

/// cumsum / cumprod accumulators: integers wrap in uint64 (as the CPU's), the half types and
/// float32 in float, float64 in double.
template <class T, bool kProd>
struct ScanOp {
  using acc_t = std::conditional_t<is_int_like_v<T>, uint64_t, math::opmath_t<T>>;
  static TENSOR_HD_INLINE acc_t identity() { return acc_t(kProd ? 1 : 0); }
  static TENSOR_HD_INLINE acc_t load(T v) { return SumProdOp<T, T, kProd>::load(v); }
  static TENSOR_HD_INLINE acc_t combine(acc_t a, acc_t b) { return kProd ? a * b : a + b; }
  static TENSOR_HD_INLINE T project(acc_t a) {
    if constexpr (std::is_same_v<acc_t, uint64_t>) return math::cast<T>(static_cast<int64_t>(a));
    else return math::cast<T>(a);
  }
};

/// The inclusive scan of column `c` (in [0, outer * inner)) of a contiguous (outer, R, inner)
/// tensor, element by element; the CUDA kernel's thread-per-column body (inner > 1).
template <class T, bool kProd>
TENSOR_HD_INLINE void scan_column(const T* in, T* out, uint32_t c, uint32_t R, uint32_t inner) {
  using Op = ScanOp<T, kProd>;
  const uint64_t o = c / inner, j = c % inner;
  const uint64_t base = o * uint64_t(R) * inner + j;
  typename Op::acc_t acc = Op::identity();
  for (uint32_t r = 0; r < R; ++r) {
    acc = Op::combine(acc, Op::load(in[base + uint64_t(r) * inner]));
    out[base + uint64_t(r) * inner] = Op::project(acc);
  }
}

/// The softmax statistics of a row or column, folded by math::logsumexp_update / combine
/// (Note [Online logsumexp]).
template <class T>
using SoftmaxState = math::LogSumExp<T>;

/// Softmax's statistics after folding x[begin], x[begin + step], ... (< end), elements `stride`
/// apart.
template <class T>
TENSOR_HD_INLINE SoftmaxState<T> softmax_fold(const T* x, uint32_t begin, uint32_t end, uint32_t step, uint32_t stride) {
  SoftmaxState<T> s = math::logsumexp_init<T>();
  for (uint32_t r = begin; r < end; r += step) s = math::logsumexp_update(s, x[uint64_t(r) * stride]);
  return s;
}

/// Prepares the final statistics for softmax_value: as the CPU's max-then-sum, a row holding
/// +inf sums a NaN (exp(inf - inf)), so every output of it is NaN.
template <class T>
TENSOR_HD_INLINE SoftmaxState<T> softmax_finish(SoftmaxState<T> s) {
  if (s.max == math::infinity<T>()) s.sum = s.max - s.max;  // NaN
  return s;
}

/// One output of softmax (exp(x - max) / sum) or log_softmax ((x - max) - log(sum)).
template <class T>
TENSOR_HD_INLINE T softmax_value(T x, SoftmaxState<T> s, bool is_log) {
  using std::exp;
  using std::log;
  return is_log ? (x - s.max) - log(s.sum) : exp(x - s.max) / s.sum;
}

// ---- launchers (kernels/cuda/Reduce*.cu); status as ElementwiseLaunch.h's ----

/// 0 (cudaSuccess) or a cudaError_t; -1: no kernel for the dtype.
using ReduceStatus = int;
constexpr ReduceStatus kReduceNoKernel = -1;

/// A reduction with `plan` over `d`; `scratch` holds reduce_scratch_bytes(d, plan) bytes.
/// Sum/Prod: out is in's dtype, int64 for bool/integer inputs or float32 for half inputs;
/// Max/Min: in's dtype; Any/All: bool.
ReduceStatus launch_reduce(ReduceKind op, ScalarType in_t, ScalarType out_t, const ReduceDesc& d,
                           const ReducePlan& plan, void* scratch, void* stream);
/// argmax (is_max) / argmin over `d`'s single reduced dim; out (values, may be null) has `t`.
ReduceStatus launch_arg_reduce(bool is_max, ScalarType t, const ReduceDesc& d, const ReducePlan& plan, void* scratch,
                               void* stream);
/// Inclusive cumsum / cumprod along the middle dim of contiguous (outer, R, inner) tensors.
ReduceStatus launch_cumulative(bool is_prod, ScalarType t, const void* in, void* out, int64_t outer, int64_t R,
                               int64_t inner, void* stream);
/// softmax / log_softmax (float32/float64) along the middle dim of contiguous (outer, R, inner).
ReduceStatus launch_softmax(bool log, ScalarType t, const void* in, void* out, int64_t outer, int64_t R, int64_t inner,
                            void* stream);

}  // namespace tensor::cuda_kernels
