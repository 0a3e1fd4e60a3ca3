// The CUDA reductions' bodies (kernels/cuda/ReduceBody.h), run on the CPU (Note [Kernel bodies
// run on the CPU]): the description built from the tensors' public sizes and strides, every
// output folded slice by slice as the kernels do (a block's threads combined in a tree, the
// partials of several slices in order), under the chosen plan and forced plans of both kernel
// shapes, against the CPU kernels through the public ops. Contiguous, transposed and expanded
// inputs, several dim sets, keepdim, every real dtype each op takes, NaN and ties; the scan and
// softmax bodies likewise; the description's merging and 32-bit limits and the plan's slicing.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/ReduceBody.h"
#include "tests/test_util.h"

using namespace tensor;
namespace ck = tensor::cuda_kernels;
using tensor::testing::random_input;
using tensor::testing::vals;

namespace {

using tensor::testing::visit_real_dtype;
const std::vector<ScalarType>& kRealTypes = tensor::testing::kRealDtypes;

std::vector<int64_t> dims_of_mask(uint64_t mask, int64_t nd) {
  std::vector<int64_t> v;
  for (int64_t d = 0; d < nd; ++d)
    if ((mask >> d) & 1) v.push_back(d);
  return v;
}

// The host's description of a reduction, from public sizes and strides (as src/cuda does).
std::vector<ck::ReduceDim> describe(const Tensor& in, uint64_t mask, const Tensor& out, const Tensor& out2) {
  const Tensor& ref = out2.defined() ? out2 : out;
  const bool keep = ref.dim() == in.dim();
  std::vector<ck::ReduceDim> dims;
  int64_t j = 0;
  for (int64_t d = 0; d < in.dim(); ++d) {
    ck::ReduceDim r;
    r.size = in.size(d);
    r.in = in.stride(d) * in.element_size();
    r.reduced = (mask >> d) & 1;
    if (!r.reduced) {
      if (out.defined()) r.out = out.stride(j) * out.element_size();
      if (out2.defined()) r.out2 = out2.stride(j) * 8;
    }
    if (!r.reduced || keep) ++j;
    dims.push_back(r);
  }
  return dims;
}

ck::ReducePlan forced_plan(uint32_t R, bool block, uint32_t slices) {
  ck::ReducePlan p;
  p.block_per_output = block;
  p.chunk = (R + slices - 1) / slices;
  if (p.chunk == 0) p.chunk = 1;
  p.slices = (R + p.chunk - 1) / p.chunk;
  return p;
}

// The plans a case runs under: the chosen one, and both kernel shapes with one and several slices.
std::vector<ck::ReducePlan> plans_for(const ck::ReduceDesc& d, bool rows) {
  return {ck::plan_reduce(d.num_outputs, d.num_reduce, rows), forced_plan(d.num_reduce, true, 1),
          forced_plan(d.num_reduce, false, 1), forced_plan(d.num_reduce, true, 3), forced_plan(d.num_reduce, false, 7),
          forced_plan(d.num_reduce, true, 70)};
}

// A block's threads combined pairwise in halving steps, as a shuffle tree does.
template <class Op>
typename Op::acc_t tree(std::vector<typename Op::acc_t> lanes) {
  for (size_t w = lanes.size(); w > 1;) {
    const size_t half = (w + 1) / 2;
    for (size_t i = 0; i + half < w; ++i) lanes[i] = Op::combine(lanes[i], lanes[i + half]);
    w = half;
  }
  return lanes[0];
}

// Every output of `d` under plan `p`, as the kernels of kernels/cuda/ReduceKernels.cuh run it.
template <class Op>
void run_plan(const ck::ReduceDesc& d, const ck::ReducePlan& p) {
  using acc_t = typename Op::acc_t;
  constexpr uint32_t B = ck::kReduceBlockThreads;
  // Not a std::vector, whose bool specialization has no data().
  std::unique_ptr<acc_t[]> partials(new acc_t[size_t(d.num_outputs) * p.slices]);
  for (uint32_t o = 0; o < d.num_outputs; ++o) {
    for (uint32_t s = 0; s < p.slices; ++s) {
      acc_t acc;
      if (p.block_per_output) {
        std::vector<acc_t> lanes(B);
        for (uint32_t t = 0; t < B; ++t) lanes[t] = ck::reduce_slice_of<Op>(d, p, o, s, t, B);
        acc = tree<Op>(lanes);
      } else {
        acc = ck::reduce_slice_of<Op>(d, p, o, s, 0, 1);
      }
      if (p.slices == 1) ck::reduce_store<Op>(d, o, acc);
      else partials[size_t(o) * p.slices + s] = acc;
    }
  }
  if (p.slices == 1) return;
  for (uint32_t o = 0; o < d.num_outputs; ++o) {
    const acc_t* part = partials.get() + size_t(o) * p.slices;
    if (p.slices <= ck::kPartialsPerThread) {
      ck::reduce_store<Op>(d, o, ck::combine_partials<Op>(part, 0, p.slices, 1));
    } else {
      std::vector<acc_t> lanes(B);
      for (uint32_t t = 0; t < B; ++t) lanes[t] = ck::combine_partials<Op>(part, t, p.slices, B);
      ck::reduce_store<Op>(d, o, tree<Op>(lanes));
    }
  }
}

// got == want (NaN equal to NaN, infinities exact), or within tol * (1 + |want|) when tol > 0.
void compare(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  const std::vector<double> g = vals(got), w = vals(want);
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) || std::isnan(g[i]) || std::isinf(w[i]) || tol == 0) {
      if (!(std::isnan(w[i]) && std::isnan(g[i]))) ASSERT_EQ(g[i], w[i]) << what << " at " << i;
      continue;
    }
    ASSERT_NEAR(g[i], w[i], tol * (1 + std::fabs(w[i]))) << what << " at " << i;
  }
}

// Runs Op's body over `in` reduced by `mask` into an output shaped and typed as `want` (the CPU
// result), under every plan, and compares.
template <class Op>
void check_reduce(const Tensor& in, uint64_t mask, const Tensor& want, double tol, const std::string& what) {
  Tensor out = empty(want.sizes(), TensorOptions(want.dtype()));
  const std::vector<ck::ReduceDim> dims = describe(in, mask, out, Tensor());
  ck::ReduceDesc d;
  bool rows = false;
  ASSERT_EQ(ck::make_reduce_desc(dims.data(), static_cast<int>(dims.size()), static_cast<const char*>(in.data_ptr()),
                                 static_cast<char*>(out.data_ptr()), nullptr, d, rows),
            ck::DescStatus::Ok)
      << what;
  int k = 0;
  for (const ck::ReducePlan& p : plans_for(d, rows)) {
    out.fill_(is_floating_point(out.dtype()) ? Scalar(NAN) : Scalar(7));  // a stale value shows
    run_plan<Op>(d, p);
    compare(out, want, tol, what + " plan " + std::to_string(k++) + (p.block_per_output ? " (block, " : " (thread, ") +
                                std::to_string(p.slices) + " slices)");
  }
}

Tensor with_nans(Tensor t) {
  if (!is_floating_point(t.dtype())) return t;
  Tensor flat = t.view({t.numel()});
  flat.narrow(0, 3, 1).fill_(NAN);
  flat.narrow(0, t.numel() - 11, 1).fill_(NAN);
  return t;
}

/// Inputs of shape (6, 5, 7): contiguous, transposed (a permuted contiguous tensor) and
/// expanded (stride 0 along dim 0). `nan`: floating inputs get NaNs at two positions.
Tensor make_input(int layout, ScalarType dt, double lo, double hi, uint64_t seed, bool nan) {
  auto base = [&](std::vector<int64_t> shape) {
    Tensor t = random_input(shape, dt, lo, hi, seed);
    return nan ? with_nans(t) : t;
  };
  switch (layout) {
    case 0: return base({6, 5, 7});
    case 1: return base({7, 5, 6}).permute({2, 1, 0});
    default: return base({1, 5, 7}).expand({6, 5, 7});
  }
}
const char* kLayoutNames[] = {"contiguous", "transposed", "expanded"};

// Dim sets of a 3-dim input: each dim, pairs, all.
const std::vector<uint64_t> kMasks = {0b001, 0b010, 0b100, 0b101, 0b110, 0b111};
const std::vector<uint64_t> kOneDimMasks = {0b001, 0b010, 0b100, 0b111};

double sum_tol(ScalarType t) {
  switch (t) {
    case kFloat16: return 2e-3;
    case kBFloat16: return 1.6e-2;
    case kFloat32: return 1e-5;
    case kFloat64: return 1e-12;
    default: return 0;
  }
}

std::string name_of(const char* op, int layout, ScalarType dt, uint64_t mask, bool keep) {
  return std::string(op) + " " + kLayoutNames[layout] + " " + to_string(dt) + " mask " + std::to_string(mask) +
         (keep ? " keepdim" : "");
}

}  // namespace

TEST(ReduceBodies, SumEveryDtypeLayoutAndDimSet) {
  for (ScalarType dt : kRealTypes) {
    const double lo = dt == kUInt8 || dt == kBool ? 0 : -3, hi = dt == kBool ? 1 : 3;
    for (int layout = 0; layout < 3; ++layout) {
      const Tensor x = make_input(layout, dt, lo, hi, 11 + layout, false);
      for (uint64_t mask : kMasks)
        for (bool keep : {false, true}) {
          const auto dims = dims_of_mask(mask, 3);
          const std::string what = name_of("sum", layout, dt, mask, keep);
          visit_real_dtype(dt, [&](auto tag) {
            using T = typename decltype(tag)::type;
            // In the input's dtype, and in the default output dtype (int64 / float32) where it differs.
            check_reduce<ck::SumProdOp<T, T, false>>(x, mask, tensor::sum(x, dims, keep, dt), sum_tol(dt), what);
            if constexpr (std::is_integral_v<T> && !std::is_same_v<T, int64_t>)
              check_reduce<ck::SumProdOp<T, int64_t, false>>(x, mask, tensor::sum(x, dims, keep), 0, what + " ->int64");
            if constexpr (math::is_half_v<T>)
              check_reduce<ck::SumProdOp<T, float, false>>(x, mask, tensor::sum(x, dims, keep, kFloat32), 1e-5,
                                                           what + " ->float32");
          });
        }
    }
  }
}

TEST(ReduceBodies, ProdEveryDtype) {
  for (ScalarType dt : kRealTypes) {
    const bool fl = is_floating_point(dt);
    const double lo = fl ? 0.5 : (dt == kUInt8 || dt == kBool ? 0 : -2), hi = fl ? 1.5 : 2;
    for (int layout = 0; layout < 3; ++layout) {
      const Tensor x = make_input(layout, dt, lo, hi, 21 + layout, false);
      for (uint64_t mask : kOneDimMasks)
        for (bool keep : {false, true}) {
          if (mask == 0b111 && keep) continue;  // prod over all dims has no keepdim
          const std::string what = name_of("prod", layout, dt, mask, keep);
          auto cpu = [&](std::optional<ScalarType> t) {
            return mask == 0b111 ? tensor::prod(x, t) : tensor::prod(x, __builtin_ctzll(mask), keep, t);
          };
          visit_real_dtype(dt, [&](auto tag) {
            using T = typename decltype(tag)::type;
            check_reduce<ck::SumProdOp<T, T, true>>(x, mask, cpu(dt), sum_tol(dt), what);
            if constexpr (std::is_integral_v<T> && !std::is_same_v<T, int64_t>)
              check_reduce<ck::SumProdOp<T, int64_t, true>>(x, mask, cpu(std::nullopt), 0, what + " ->int64");
          });
        }
    }
  }
}

TEST(ReduceBodies, MaxMinPropagateNaN) {
  for (ScalarType dt : kRealTypes) {
    const double lo = dt == kUInt8 || dt == kBool ? 0 : -50, hi = dt == kBool ? 1 : 50;
    for (int layout = 0; layout < 3; ++layout)
      for (bool nan : {false, true}) {
        if (nan && !is_floating_point(dt)) continue;
        const Tensor x = make_input(layout, dt, lo, hi, 31 + layout, nan);
        for (uint64_t mask : kMasks)
          for (bool keep : {false, true}) {
            const auto dims = dims_of_mask(mask, 3);
            const std::string what = name_of(nan ? "amax/amin with NaN" : "amax/amin", layout, dt, mask, keep);
            visit_real_dtype(dt, [&](auto tag) {
              using T = typename decltype(tag)::type;
              check_reduce<ck::MinMaxOp<T, true>>(x, mask, tensor::amax(x, dims, keep), 0, what);
              check_reduce<ck::MinMaxOp<T, false>>(x, mask, tensor::amin(x, dims, keep), 0, what);
            });
          }
      }
  }
}

// The full max/min of a contiguous run takes four vectors per step, then two, then single
// elements (MinMaxRun in kernels/cpu/ReduceKernels.cpp): a NaN or the extreme value in each of
// those parts must be found, for lengths that end in each part.
TEST(ReduceBodies, MaxMinRunFindsNaNAndExtremesInEveryPart) {
  for (ScalarType dt : {kFloat32, kFloat64})
    for (int64_t n : {32, 33, 48, 64, 95, 96, 100, 130, 1000}) {
      const Tensor base = tensor::rand({n}, TensorOptions().dtype(dt));
      for (int64_t at : {int64_t{0}, int64_t{17}, int64_t{40}, int64_t{70}, n / 2, n - 1}) {
        if (at >= n) continue;
        Tensor hi = base.clone(), lo = base.clone(), nan = base.clone();
        hi.index_put_({at}, 5.0);
        lo.index_put_({at}, -5.0);
        nan.index_put_({at}, std::nan(""));
        const std::string what =
            "n=" + std::to_string(n) + " at=" + std::to_string(at) + (dt == kFloat32 ? " float32" : " float64");
        EXPECT_EQ(hi.max().item<double>(), 5.0) << what;
        EXPECT_EQ(lo.min().item<double>(), -5.0) << what;
        EXPECT_TRUE(std::isnan(nan.max().item<double>())) << what;
        EXPECT_TRUE(std::isnan(nan.min().item<double>())) << what;
      }
    }
}

TEST(ReduceBodies, AnyAll) {
  for (ScalarType dt : kRealTypes)
    for (int layout = 0; layout < 3; ++layout)
      for (bool nan : {false, true}) {
        if (nan && !is_floating_point(dt)) continue;
        // Values in {-1, 0, 1, 2, 3}: a quarter zeros, so some rows are all nonzero and some not.
        Tensor x = make_input(layout, kInt8, -1, 3, 41 + layout, false).to(dt);
        if (nan) x = with_nans(x.contiguous());
        for (uint64_t mask : kOneDimMasks)
          for (bool keep : {false, true}) {
            if (mask == 0b111 && keep) continue;
            const std::string what = name_of("any/all", layout, dt, mask, keep);
            const int64_t dim = __builtin_ctzll(mask);
            // any/all of uint8 give uint8 on the CPU; the kernel's contract is bool.
            const Tensor want_any = (mask == 0b111 ? tensor::any(x) : tensor::any(x, dim, keep)).to(kBool);
            const Tensor want_all = (mask == 0b111 ? tensor::all(x) : tensor::all(x, dim, keep)).to(kBool);
            visit_real_dtype(dt, [&](auto tag) {
              using T = typename decltype(tag)::type;
              check_reduce<ck::AnyAllOp<T, true>>(x, mask, want_any, 0, what + " any");
              check_reduce<ck::AnyAllOp<T, false>>(x, mask, want_all, 0, what + " all");
            });
          }
      }
}

namespace {

// Runs the arg body along `dim` (mask 0 for a 0-dim input) and compares values and indices.
template <bool kMax, class T>
void check_arg(const Tensor& in, int64_t dim, bool keep, bool with_values, const std::string& what) {
  Tensor want_v, want_i;
  if (in.dim() == 1 && !with_values) {
    want_i = kMax ? tensor::argmax(in) : tensor::argmin(in);
  } else {
    std::tie(want_v, want_i) = kMax ? tensor::max(in, dim, keep) : tensor::min(in, dim, keep);
  }
  Tensor idx = empty(want_i.sizes(), TensorOptions(kInt64));
  Tensor val = with_values ? empty(want_v.sizes(), TensorOptions(in.dtype())) : Tensor();
  const uint64_t mask = in.dim() == 0 ? 0 : uint64_t(1) << dim;
  const std::vector<ck::ReduceDim> dims = describe(in, mask, val, idx);
  ck::ReduceDesc d;
  bool rows = false;
  ASSERT_EQ(ck::make_reduce_desc(dims.data(), static_cast<int>(dims.size()), static_cast<const char*>(in.data_ptr()),
                                 with_values ? static_cast<char*>(val.data_ptr()) : nullptr,
                                 static_cast<char*>(idx.data_ptr()), d, rows),
            ck::DescStatus::Ok);
  int k = 0;
  for (const ck::ReducePlan& p : plans_for(d, rows)) {
    idx.fill_(-5);
    run_plan<ck::ArgOp<T, kMax>>(d, p);
    const std::string w = what + (kMax ? " max" : " min") + " plan " + std::to_string(k++);
    compare(idx, want_i, 0, w + " indices");
    if (with_values) compare(val, want_v, 0, w + " values");
  }
}

}  // namespace

TEST(ReduceBodies, ArgMaxMinNaNWinsTiesToLowerIndex) {
  for (ScalarType dt : kRealTypes) {
    // A narrow range: many ties.
    const double lo = dt == kUInt8 || dt == kBool ? 0 : -2, hi = dt == kBool ? 1 : 2;
    for (int layout = 0; layout < 3; ++layout)
      for (bool nan : {false, true}) {
        if (nan && !is_floating_point(dt)) continue;
        Tensor x = make_input(layout, dt, lo, hi, 51 + layout, nan);
        if (is_floating_point(dt)) x = tensor::round(x);  // ties in floating types too
        visit_real_dtype(dt, [&](auto tag) {
          using T = typename decltype(tag)::type;
          for (int64_t dim = 0; dim < 3; ++dim)
            for (bool keep : {false, true}) {
              const std::string what = name_of("max/min(dim)", layout, dt, uint64_t(1) << dim, keep);
              check_arg<true, T>(x, dim, keep, true, what);
              check_arg<false, T>(x, dim, keep, true, what);
            }
          // argmax without dim: the front end reduces the flattened input, indices only.
          const Tensor flat = x.reshape({x.numel()});
          check_arg<true, T>(flat, 0, false, false, name_of("argmax", layout, dt, 1, false));
          check_arg<false, T>(flat, 0, false, false, name_of("argmin", layout, dt, 1, false));
        });
      }
  }
}

TEST(ReduceBodies, LargeAllReduceUsesManySlices) {
  // 2^20 + 3 elements: the chosen plan cuts the range into more slices than a thread combines,
  // so the block-per-output second pass runs too.
  const Tensor x = random_input({1048579}, kFloat32, -1, 1, 61);
  const Tensor out = empty({}, TensorOptions(kFloat32));
  const std::vector<ck::ReduceDim> dims = describe(x, 1, out, Tensor());
  ck::ReduceDesc d;
  bool rows = false;
  ASSERT_EQ(ck::make_reduce_desc(dims.data(), 1, static_cast<const char*>(x.data_ptr()),
                                 static_cast<char*>(out.data_ptr()), nullptr, d, rows),
            ck::DescStatus::Ok);
  EXPECT_TRUE(rows);
  const ck::ReducePlan p = ck::plan_reduce(d.num_outputs, d.num_reduce, rows);
  EXPECT_TRUE(p.block_per_output);
  EXPECT_GT(p.slices, ck::kPartialsPerThread);
  run_plan<ck::SumProdOp<float, float, false>>(d, p);
  // Against a float64 loop.
  double want = 0;
  for (double v : vals(x)) want += v;
  EXPECT_NEAR(out.item<float>(), want, 1e-3);
  run_plan<ck::MinMaxOp<float, true>>(d, p);
  EXPECT_EQ(out.item<float>(), tensor::amax(x).item<float>());
}

TEST(ReduceBodies, DescriptionMergesDimsAndChecksLimits) {
  ck::ReduceDesc d;
  bool rows = false;
  // Contiguous (4, 5, 6) summed over dims 1 and 2: one kept and one reduced dim, rows.
  {
    std::vector<ck::ReduceDim> dims = {{4, 120, 4, 0, false}, {5, 24, 0, 0, true}, {6, 4, 0, 0, true}};
    ASSERT_EQ(ck::make_reduce_desc(dims.data(), 3, nullptr, nullptr, nullptr, d, rows), ck::DescStatus::Ok);
    EXPECT_EQ(d.kept.dims, 1);
    EXPECT_EQ(d.reduced.dims, 1);
    EXPECT_EQ(d.num_outputs, 4u);
    EXPECT_EQ(d.num_reduce, 30u);
    EXPECT_TRUE(rows);
  }
  // Over dim 0 of the same: columns (neighbouring outputs are neighbours in memory).
  {
    std::vector<ck::ReduceDim> dims = {{4, 120, 0, 0, true}, {5, 24, 24, 0, false}, {6, 4, 4, 0, false}};
    ASSERT_EQ(ck::make_reduce_desc(dims.data(), 3, nullptr, nullptr, nullptr, d, rows), ck::DescStatus::Ok);
    EXPECT_EQ(d.kept.dims, 1);
    EXPECT_FALSE(rows);
  }
  // An element count or a byte span beyond 32 bits.
  {
    std::vector<ck::ReduceDim> dims = {{int64_t(1) << 32, 1, 0, 0, true}};
    EXPECT_EQ(ck::make_reduce_desc(dims.data(), 1, nullptr, nullptr, nullptr, d, rows), ck::DescStatus::Over32Bit);
    dims = {{int64_t(1) << 30, 8, 8, 0, false}};
    EXPECT_EQ(ck::make_reduce_desc(dims.data(), 1, nullptr, nullptr, nullptr, d, rows), ck::DescStatus::Over32Bit);
  }
  // 9 kept and 9 reduced dims that cannot merge (alternating).
  {
    std::vector<ck::ReduceDim> dims;
    int64_t stride = 4;
    for (int k = 17; k >= 0; --k) {
      const bool red = k % 2 == 0;
      dims.insert(dims.begin(), ck::ReduceDim{2, stride, red ? 0 : stride, 0, red});
      stride *= 2;
    }
    EXPECT_EQ(ck::make_reduce_desc(dims.data(), 18, nullptr, nullptr, nullptr, d, rows), ck::DescStatus::TooManyDims);
  }
}

TEST(ReduceBodies, PlanCutsRangeIntoNonEmptySlices) {
  for (uint32_t outs : {1u, 3u, 100u, 4096u, 1u << 20})
    for (uint32_t R : {1u, 7u, 63u, 64u, 1000u, 4096u, 1u << 24, (1u << 31) - 1})
      for (bool rows : {false, true}) {
        const ck::ReducePlan p = ck::plan_reduce(outs, R, rows);
        EXPECT_GE(p.slices, 1u);
        EXPECT_LE(p.slices, 65535u);
        EXPECT_GE(uint64_t(p.slices) * p.chunk, R) << outs << " " << R;
        EXPECT_LT(uint64_t(p.slices - 1) * p.chunk, R) << outs << " " << R;  // the last slice is not empty
      }
}

TEST(ReduceBodies, ScanColumnMatchesCumsumCumprod) {
  for (ScalarType dt : kRealTypes) {
    const bool fl = is_floating_point(dt);
    const double lo = dt == kUInt8 || dt == kBool ? 0 : -2, hi = fl ? 1.5 : 2;
    const Tensor x = random_input({4, 5, 6}, dt, lo, hi, 71);
    for (int64_t dim = 0; dim < 3; ++dim) {
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < dim; ++d) outer *= x.size(d);
      for (int64_t d = dim + 1; d < 3; ++d) inner *= x.size(d);
      const uint32_t R = static_cast<uint32_t>(x.size(dim));
      for (bool prod : {false, true}) {
        const Tensor want = prod ? tensor::cumprod(x, dim, dt) : tensor::cumsum(x, dim, dt);
        Tensor out = empty(x.sizes(), TensorOptions(dt));
        visit_real_dtype(dt, [&](auto tag) {
          using T = typename decltype(tag)::type;
          for (uint32_t c = 0; c < outer * inner; ++c) {
            if (prod) ck::scan_column<T, true>(x.data_ptr<T>(), out.data_ptr<T>(), c, R, static_cast<uint32_t>(inner));
            else ck::scan_column<T, false>(x.data_ptr<T>(), out.data_ptr<T>(), c, R, static_cast<uint32_t>(inner));
          }
        });
        compare(out, want, sum_tol(dt), std::string(prod ? "cumprod " : "cumsum ") + to_string(dt) + " dim " +
                                            std::to_string(dim));
      }
    }
  }
}

namespace {

template <class T>
void check_softmax(const Tensor& x, int64_t dim, bool log, double tol) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.size(d);
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
  const uint32_t R = static_cast<uint32_t>(x.size(dim));
  const Tensor want = log ? tensor::log_softmax(x, dim) : tensor::softmax(x, dim);
  Tensor out = empty(x.sizes(), TensorOptions(x.dtype()));
  const T* in = x.data_ptr<T>();
  T* o = out.data_ptr<T>();
  const std::string what = std::string(log ? "log_softmax " : "softmax ") + to_string(x.dtype()) + " dim " +
                           std::to_string(dim);
  if (inner == 1) {
    // Rows: a block of 32 or 256 threads folds, a tree combines, every thread writes.
    for (uint32_t lanes : {32u, 256u}) {
      for (int64_t r = 0; r < outer; ++r) {
        const T* row = in + r * R;
        std::vector<ck::SoftmaxState<T>> part(lanes);
        for (uint32_t t = 0; t < lanes; ++t) part[t] = ck::softmax_fold(row, t, R, lanes, 1);
        for (size_t w = lanes; w > 1;) {
          const size_t half = (w + 1) / 2;
          for (size_t i = 0; i + half < w; ++i) part[i] = math::logsumexp_combine(part[i], part[i + half]);
          w = half;
        }
        const ck::SoftmaxState<T> st = ck::softmax_finish(part[0]);
        for (uint32_t i = 0; i < R; ++i) o[r * R + i] = ck::softmax_value(row[i], st, log);
      }
      compare(out, want, tol, what + " rows, " + std::to_string(lanes) + " threads");
    }
  } else {
    for (int64_t c = 0; c < outer * inner; ++c) {
      const int64_t base = (c / inner) * R * inner + c % inner;
      const ck::SoftmaxState<T> st = ck::softmax_finish(ck::softmax_fold(in + base, 0, R, 1, static_cast<uint32_t>(inner)));
      for (uint32_t i = 0; i < R; ++i) o[base + i * inner] = ck::softmax_value(in[base + i * inner], st, log);
    }
    compare(out, want, tol, what + " columns");
  }
}

}  // namespace

TEST(ReduceBodies, SoftmaxMatchesCpuWithInfAndNaNRows) {
  for (ScalarType dt : {kFloat32, kFloat64}) {
    Tensor x = random_input({5, 300, 7}, dt, -20, 20, 81);
    // Special rows along the last dim, and along dim 1: all -inf, one +inf, one NaN, one -inf.
    x.select(0, 1).select(0, 2).fill_(-INFINITY);
    x.select(0, 2).select(0, 3).narrow(0, 4, 1).fill_(INFINITY);
    x.select(0, 3).select(0, 5).narrow(0, 1, 1).fill_(NAN);
    x.select(0, 4).select(0, 6).narrow(0, 0, 1).fill_(-INFINITY);
    const double tol = dt == kFloat32 ? 2e-6 : 1e-13;
    for (int64_t dim = 0; dim < 3; ++dim)
      for (bool log : {false, true}) {
        if (dt == kFloat32) check_softmax<float>(x, dim, log, tol);
        else check_softmax<double>(x, dim, log, tol);
      }
  }
}

namespace {

// ck::run_within_limits with small limits: every piece a description within them, run as the
// CUDA backend launches it (its chosen plan; a pair of partials with PairOp), against the CPU.
template <class Op, class PairOp>
void check_split(const Tensor& in, uint64_t mask, const Tensor& want, double tol, const ck::ReduceLimits& lim,
                 const std::string& what) {
  Tensor out = empty(want.sizes(), TensorOptions(want.dtype()));
  out.fill_(is_floating_point(out.dtype()) ? Scalar(NAN) : Scalar(7));
  const std::vector<ck::ReduceDim> dims = describe(in, mask, out, Tensor());
  std::vector<std::unique_ptr<char[]>> pairs;
  int leaves = 0, seconds = 0;
  auto pair = [&]() -> char* {
    pairs.emplace_back(new char[2 * out.element_size()]);
    return pairs.back().get();
  };
  auto leaf = [&](const ck::ReduceDesc& d, bool rows, bool second) {
    EXPECT_LE(d.num_outputs, lim.count) << what;
    EXPECT_LE(d.num_reduce, lim.count) << what;
    const ck::ReducePlan p = ck::plan_reduce(d.num_outputs, d.num_reduce, rows);
    if (second) run_plan<PairOp>(d, p);
    else run_plan<Op>(d, p);
    ++leaves;
    seconds += second;
  };
  ASSERT_TRUE(ck::run_within_limits(dims.data(), static_cast<int>(dims.size()), static_cast<const char*>(in.data_ptr()),
                                    static_cast<char*>(out.data_ptr()), nullptr, false, out.element_size(), leaf, pair,
                                    lim))
      << what;
  EXPECT_GT(leaves, 1) << what << ": the limits should have split it";
  compare(out, want, tol, what + " (" + std::to_string(leaves) + " pieces, " + std::to_string(seconds) + " pairs)");
}

}  // namespace

TEST(ReduceBodies, SplitsPastTheIndexingLimits) {
  // All 210 elements into one output, at most 50 per piece: halves of halves, each pair reduced.
  const Tensor f = random_input({6, 5, 7}, kFloat32, -3, 3, 91);
  check_split<ck::SumProdOp<float, float, false>, ck::SumProdOp<float, float, false>>(f, 0b111, tensor::sum(f), 1e-5,
                                                                                     {50, 1 << 20}, "sum all");
  // Transposed int16 into int64 over dim 1, operands spanning at most 100 bytes: kept dims split.
  const Tensor t = random_input({7, 5, 6}, kInt16, -100, 100, 92).permute({2, 1, 0});
  check_split<ck::SumProdOp<int16_t, int64_t, false>, ck::SumProdOp<int64_t, int64_t, false>>(
      t, 0b010, tensor::sum(t, {1}), 0, {1 << 20, 100}, "sum int16 transposed dim 1");
  check_split<ck::SumProdOp<int16_t, int64_t, false>, ck::SumProdOp<int64_t, int64_t, false>>(
      t, 0b101, tensor::sum(t, {0, 2}, true), 0, {4, 1 << 20}, "sum int16 transposed dims 0, 2 keepdim");
  // amax with NaN of an expanded input, at most 4 per piece: kept splits, then range splits.
  Tensor e = random_input({1, 5, 7}, kFloat64, -3, 3, 93);
  e.view({35}).narrow(0, 20, 1).fill_(NAN);
  const Tensor ex = e.expand({6, 5, 7});
  check_split<ck::MinMaxOp<double, true>, ck::MinMaxOp<double, true>>(ex, 0b101, tensor::amax(ex, {0, 2}), 0,
                                                                      {4, 1 << 20}, "amax expanded dims 0, 2");
  const Tensor b = random_input({6, 5, 7}, kInt8, -1, 3, 94).to(kBool);
  check_split<ck::AnyAllOp<bool, false>, ck::AnyAllOp<bool, false>>(b, 0b111, tensor::all(b).reshape({}), 0,
                                                                    {16, 1 << 20}, "all bool");
}

TEST(ReduceBodies, ArgSplitsKeptDimsOrSaysItCannot) {
  const Tensor x = tensor::round(random_input({6, 5, 7}, kFloat32, -2, 2, 95));
  auto [want_v, want_i] = tensor::max(x, 1, false);
  Tensor val = empty(want_v.sizes(), TensorOptions(kFloat32)), idx = empty(want_i.sizes(), TensorOptions(kInt64));
  const std::vector<ck::ReduceDim> dims = describe(x, 0b010, val, idx);
  auto run = [&](const ck::ReduceLimits& lim, int& leaves) {
    leaves = 0;
    return ck::run_within_limits(
        dims.data(), 3, static_cast<const char*>(x.data_ptr()), static_cast<char*>(val.data_ptr()),
        static_cast<char*>(idx.data_ptr()), true, 4,
        [&](const ck::ReduceDesc& d, bool rows, bool) {
          run_plan<ck::ArgOp<float, true>>(d, ck::plan_reduce(d.num_outputs, d.num_reduce, rows));
          ++leaves;
        },
        []() -> char* { return nullptr; }, lim);
  };
  int leaves = 0;
  // At most 8 outputs per piece: the kept dims split; indices stay positions along dim 1.
  ASSERT_TRUE(run({8, 1 << 20}, leaves));
  EXPECT_GT(leaves, 1);
  compare(idx, want_i, 0, "max(dim 1) indices, split");
  compare(val, want_v, 0, "max(dim 1) values, split");
  // A reduced range of 5 over a limit of 4: indices of halves cannot be combined this way.
  EXPECT_FALSE(run({4, 1 << 20}, leaves));
}
