// The bodies of the CUDA kernels of where, clamp, threshold_backward (and so masked_fill and
// relu's backward) and of the indexing ops (index_select, gather, scatter, scatter_add,
// index_add), run per index on the CPU (Note [Kernel bodies run on the CPU] in
// kernels/cuda/ElementwiseBody.h) against the CPU ops, for each dtype the CUDA kernels serve, on
// contiguous, transposed and broadcast inputs and with CPU scalar operands. The layouts are
// computed here from the tensors' public sizes and strides, without merging dims, independently
// of the host code that plans the CUDA launches.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cuda/ElementwiseBody.h"
#include "kernels/cuda/IndexBody.h"
#include "kernels/cuda/SelectBody.h"
#include "kernels/math/Select.h"
#include "src/ops/ElementwiseOps.h"
#include "tests/test_util.h"

using namespace tensor;
namespace ck = tensor::cuda_kernels;
using tensor::testing::random_input;

namespace {

using tensor::testing::visit_real_dtype;

template <size_t N> struct Bits;
template <> struct Bits<1> { using type = uint8_t; };
template <> struct Bits<2> { using type = uint16_t; };
template <> struct Bits<4> { using type = uint32_t; };
template <> struct Bits<8> { using type = uint64_t; };
template <class T> using bits_t = typename Bits<sizeof(T)>::type;

const std::vector<ScalarType> kFloating = {kFloat16, kBFloat16, kFloat32, kFloat64};
const std::vector<ScalarType>& kAll = tensor::testing::kRealDtypes;

// Byte strides, innermost dim first, of `t` broadcast to `shape`.
void byte_strides(const Tensor& t, IntArrayRef shape, int64_t* out) {
  const int64_t nd = static_cast<int64_t>(shape.size()), off = nd - t.dim();
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t ld = nd - 1 - d, td = ld - off;
    out[d] = (td < 0 || t.size(td) == 1) ? 0 : t.stride(td) * t.element_size();
  }
}

std::string dims(IntArrayRef v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

int g_compared = 0;  // comparisons made, so that a test that silently skipped everything fails

// Bitwise equal (NaN payloads included): these kernels move values or compute them with the
// very functor the CPU loop runs, in the same order.
void expect_identical(const Tensor& body, const Tensor& cpu, const std::string& what) {
  ++g_compared;
  ASSERT_EQ(body.dtype(), cpu.dtype()) << what;
  ASSERT_EQ(body.sizes(), cpu.sizes()) << what;
  Tensor b = body.contiguous(), c = cpu.contiguous();
  EXPECT_EQ(0, std::memcmp(b.data_ptr(), c.data_ptr(), static_cast<size_t>(b.numel() * b.element_size())))
      << what << "\nbody:\n" << body << "\ncpu:\n" << cpu;
}

// ---- the elementwise engine's bodies (clamp, threshold_backward) ----

// Runs an engine body over every index of `out` (contiguous, the broadcast shape): vectorized
// when every memory input is contiguous with out's shape, else strided. A CPU scalar input k
// has its value in scalars[k].
template <class T, int NIN, class F>
void run_engine(const Tensor& out, const std::vector<Tensor>& in, const std::vector<bool>& cpu_scalar,
                const std::vector<double>& scalars, const F& f) {
  using op_t = math::opmath_t<T>;
  ck::ElementwiseArgs<T, NIN> a{};
  a.out = static_cast<char*>(out.data_ptr());
  bool contiguous = true;
  for (int k = 0; k < NIN; ++k) {
    a.in[k] = static_cast<const char*>(in[k].data_ptr());
    if (cpu_scalar[k]) {
      a.scalar_mask |= 1u << k;
      a.scalar[k] = static_cast<op_t>(scalars[k]);
    } else if (!(in[k].is_contiguous() && in[k].sizes() == out.sizes())) {
      contiguous = false;
    }
  }
  const uint32_t n = static_cast<uint32_t>(out.numel());
  if (contiguous) {
    constexpr int VEC = ck::vec_size<T, T>();
    for (uint32_t vi = 0; vi * VEC < n; ++vi) ck::vectorized_body<VEC, T>(a, vi, n, f);
    return;
  }
  const int nd = static_cast<int>(out.dim());
  int64_t sizes[8], strides[NIN + 1][8] = {};
  for (int d = 0; d < nd; ++d) sizes[d] = out.size(nd - 1 - d);
  byte_strides(out, out.sizes(), strides[0]);
  for (int k = 0; k < NIN; ++k)
    if (!cpu_scalar[k]) byte_strides(in[k], out.sizes(), strides[k + 1]);
  const int64_t* sp[NIN + 1];
  for (int k = 0; k <= NIN; ++k) sp[k] = strides[k];
  a.offsets = math::OffsetCalculator<NIN + 1>(nd, sizes, sp);
  for (uint32_t i = 0; i < n; ++i) ck::strided_body<T>(a, i, f);
}

double item_f64(const Tensor& t) { return t.to(kFloat64).item<double>(); }

Tensor threshold_backward_cpu(const Tensor& g, const Tensor& y, double th) {
  return ops::threshold_backward_op()(g, y, th);
}

// Edge values in self: the threshold itself, NaN (passes grad), +-inf, -0.
Tensor with_edges(Tensor y, double th) {
  Tensor flat = y.view({-1});
  const double edges[] = {th, std::nan(""), INFINITY, -INFINITY, -0.0};
  for (int i = 0; i < 5 && i < flat.numel(); ++i) flat.narrow(0, 3 * i, 1).fill_(edges[i]);
  return y;
}

TEST(SelectBodies, ThresholdBackwardMatchesTheCpuKernelAndAFloat64Loop) {
  g_compared = 0;
  for (ScalarType dt : kFloating) {
    visit_real_dtype(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using op_t = math::opmath_t<T>;
      for (double th : {0.0, 0.5, -1.25}) {
        const math::ThresholdBackwardOp<op_t> f{static_cast<op_t>(th)};
        struct Case { Tensor g, y; bool y_scalar; };
        const std::vector<Case> cases = {
            {random_input({37}, dt, -2, 2, 1), with_edges(random_input({37}, dt, -2, 2, 2), th), false},
            {random_input({7, 5}, dt, -2, 2, 3).t(), random_input({5, 7}, dt, -2, 2, 4), false},
            {random_input({5, 1}, dt, -2, 2, 5), random_input({7}, dt, -2, 2, 6), false},
            {random_input({3, 6}, dt, -2, 2, 7), tensor::full({}, 0.75, TensorOptions(dt)), true},
        };
        for (const Case& c : cases) {
          Tensor cpu = threshold_backward_cpu(c.g, c.y, th);
          Tensor body = tensor::empty(cpu.sizes(), TensorOptions(dt));
          run_engine<T, 2>(body, {c.g, c.y}, {false, c.y_scalar}, {0.0, (c.y_scalar ? item_f64(c.y) : 0.0)}, f);
          const std::string what = "threshold_backward " + std::string(to_string(dt)) + " th " + std::to_string(th) +
                                   " g " + dims(c.g.sizes()) + " strides " + dims(c.g.strides());
          expect_identical(body, cpu, what);
          // The CPU kernel against a float64 loop (the inputs are exact in float64).
          Tensor g64 = c.g.to(kFloat64).expand(cpu.sizes()).contiguous(), y64 = c.y.to(kFloat64).expand(cpu.sizes()).contiguous();
          Tensor want = tensor::empty(cpu.sizes(), TensorOptions(kFloat64));
          const double thr = static_cast<double>(static_cast<op_t>(th));
          for (int64_t i = 0; i < want.numel(); ++i) {
            const double y = y64.data_ptr<double>()[i];
            want.data_ptr<double>()[i] = y <= thr ? 0.0 : g64.data_ptr<double>()[i];
          }
          EXPECT_TRUE(tensor::allclose(cpu.to(kFloat64), want, 0, 0, /*equal_nan=*/true)) << what;
        }
      }
    });
  }
  EXPECT_EQ(g_compared, 4 * 3 * 4);
}

TEST(SelectBodies, ThresholdBackwardDispatchesAndChecksItsArguments) {
  Tensor g = tensor::ones({2, 3}, TensorOptions(kFloat32).device(Device(DeviceType::Meta)));
  Tensor m = ops::threshold_backward_op()(g, g, 0);
  EXPECT_TRUE(m.is_meta());
  EXPECT_EQ(m.sizes(), g.sizes());
  tensor::testing::expect_error(
      [] { threshold_backward_cpu(tensor::ones({2}), tensor::ones({2}, TensorOptions(kFloat64)), 0); },
      {"threshold_backward", "float32", "float64"});
  tensor::testing::expect_error(
      [] { threshold_backward_cpu(tensor::ones({2}, TensorOptions(kInt32)), tensor::ones({2}, TensorOptions(kInt32)), 0); },
      {"threshold_backward", "floating"});
  tensor::testing::expect_error([] { threshold_backward_cpu(tensor::ones({2}), tensor::ones({3}), 0); },
                                {"threshold_backward"});
}

TEST(SelectBodies, ClampMatchesTheCpuKernel) {
  g_compared = 0;
  for (ScalarType dt : kAll) {
    if (dt == kBool) continue;  // clamp refuses bool
    visit_real_dtype(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using op_t = math::opmath_t<T>;
      const double lo = is_floating_point(dt) ? -1.5 : -3, hi = is_floating_point(dt) ? 2.25 : 4;
      const double range_lo = dt == kUInt8 ? 0 : -8;
      Tensor contiguous = random_input({37}, dt, range_lo, 8, 11);
      if (is_floating_point(dt)) contiguous.narrow(0, 5, 1).fill_(std::nan(""));
      const std::vector<Tensor> inputs = {contiguous, random_input({7, 5}, dt, range_lo, 8, 12).t(),
                                          random_input({1, 5}, dt, range_lo, 8, 13).expand({4, 5})};
      const double ulo = dt == kUInt8 ? 2 : lo;
      for (int bounds = 0; bounds < 3; ++bounds) {
        const bool has_lo = bounds != 1, has_hi = bounds != 0;
        const math::ClampOp<op_t> f{static_cast<op_t>(ulo), static_cast<op_t>(hi), has_lo, has_hi};
        for (const Tensor& x : inputs) {
          // Integral bounds for integer tensors (a float bound would promote them to float).
          auto bound = [&](double v) { return is_floating_point(dt) ? Scalar(v) : Scalar(static_cast<int64_t>(v)); };
          Tensor cpu = tensor::clamp(x, has_lo ? std::optional<Scalar>(bound(ulo)) : std::nullopt,
                                     has_hi ? std::optional<Scalar>(bound(hi)) : std::nullopt);
          ASSERT_EQ(cpu.dtype(), dt);
          Tensor body = tensor::empty(cpu.sizes(), TensorOptions(dt));
          run_engine<T, 1>(body, {x}, {false}, {0.0}, f);
          expect_identical(body, cpu, "clamp " + std::string(to_string(dt)) + " bounds " + std::to_string(bounds) +
                                          " strides " + dims(x.strides()));
        }
      }
    });
  }
  EXPECT_EQ(g_compared, 9 * 3 * 3);
}

// ---- where's bodies (where, masked_fill) ----

// Runs the where bodies over every index of `out`; a_scalar / b_scalar: a or b is a CPU scalar
// (a 0-dim tensor holding its value), cond_scalar likewise for cond.
template <class T>
void run_where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b, bool cond_scalar,
               bool a_scalar, bool b_scalar) {
  using U = bits_t<T>;
  ck::WhereArgs<U> w{};
  w.out = static_cast<char*>(out.data_ptr());
  w.cond = static_cast<const char*>(cond.data_ptr());
  w.a = static_cast<const char*>(a.data_ptr());
  w.b = static_cast<const char*>(b.data_ptr());
  w.scalar_mask = (cond_scalar ? 1u : 0u) | (a_scalar ? 2u : 0u) | (b_scalar ? 4u : 0u);
  if (cond_scalar) w.cond_scalar = cond.item<bool>();
  if (a_scalar) std::memcpy(&w.a_scalar, a.data_ptr(), sizeof(U));
  if (b_scalar) std::memcpy(&w.b_scalar, b.data_ptr(), sizeof(U));
  const bool is_scalar[3] = {cond_scalar, a_scalar, b_scalar};
  const Tensor* ins[3] = {&cond, &a, &b};
  bool contiguous = true;
  for (int k = 0; k < 3; ++k)
    if (!is_scalar[k] && !(ins[k]->is_contiguous() && ins[k]->sizes() == out.sizes())) contiguous = false;
  const uint32_t n = static_cast<uint32_t>(out.numel());
  if (contiguous) {
    constexpr int VEC = static_cast<int>(16 / sizeof(U));
    for (uint32_t vi = 0; vi * VEC < n; ++vi) ck::where_vectorized_body<VEC>(w, vi, n);
    return;
  }
  const int nd = static_cast<int>(out.dim());
  int64_t sizes[8], strides[4][8] = {};
  for (int d = 0; d < nd; ++d) sizes[d] = out.size(nd - 1 - d);
  byte_strides(out, out.sizes(), strides[0]);
  for (int k = 0; k < 3; ++k)
    if (!is_scalar[k]) byte_strides(*ins[k], out.sizes(), strides[k + 1]);
  const int64_t* sp[4] = {strides[0], strides[1], strides[2], strides[3]};
  w.offsets = math::OffsetCalculator<4>(nd, sizes, sp);
  for (uint32_t i = 0; i < n; ++i) ck::where_strided_body(w, i);
}

Tensor random_mask(IntArrayRef shape, uint64_t seed) { return random_input(shape, kFloat64, 0, 1, seed).gt(0.5); }

TEST(SelectBodies, WhereMatchesTheCpuKernel) {
  g_compared = 0;
  for (ScalarType dt : kAll) {
    visit_real_dtype(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const TensorOptions o(dt);
      struct Case { Tensor c, a, b; bool cs, as, bs; };
      const std::vector<Case> cases = {
          // 37 elements: a partial last vector for every vector width.
          {random_mask({37}, 21), random_input({37}, dt, -9, 9, 22), random_input({37}, dt, -9, 9, 23), false, false, false},
          {random_mask({5, 7}, 24).t(), random_input({7, 5}, dt, -9, 9, 25), random_input({5, 7}, dt, -9, 9, 26).t(), false, false, false},
          {random_mask({5, 1}, 27), random_input({7}, dt, -9, 9, 28), random_input({5, 7}, dt, -9, 9, 29), false, false, false},
          // relu's backward with a graph: where(y <= 0, 0.0, g), a CPU scalar a.
          {random_mask({3, 6}, 30), tensor::full({}, 0, o), random_input({3, 6}, dt, -9, 9, 31), false, true, false},
          {random_mask({40}, 32), random_input({40}, dt, -9, 9, 33), tensor::full({}, 1, o), false, false, true},
          {tensor::full({}, true, TensorOptions(kBool)), random_input({2, 9}, dt, -9, 9, 34), random_input({2, 9}, dt, -9, 9, 35), true, false, false},
      };
      for (const Case& c : cases) {
        Tensor cpu = tensor::where(c.c, c.a, c.b);
        ASSERT_EQ(cpu.dtype(), dt);
        Tensor body = tensor::empty(cpu.sizes(), o);
        run_where<T>(body, c.c, c.a, c.b, c.cs, c.as, c.bs);
        expect_identical(body, cpu, "where " + std::string(to_string(dt)) + " a " + dims(c.a.sizes()) + " strides " +
                                        dims(c.a.strides()) + (c.as ? " (scalar a)" : "") + (c.bs ? " (scalar b)" : "") +
                                        (c.cs ? " (scalar cond)" : ""));
      }
    });
  }
  EXPECT_EQ(g_compared, 10 * 6);
}

// masked_fill on CUDA is where(mask, value, self) in place, the value a CPU scalar.
TEST(SelectBodies, MaskedFillMatchesTheCpuKernel) {
  g_compared = 0;
  for (ScalarType dt : kAll) {
    visit_real_dtype(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (bool transposed : {false, true}) {
        Tensor self = transposed ? random_input({6, 5}, dt, -9, 9, 41).t() : random_input({5, 6}, dt, -9, 9, 41);
        Tensor mask = random_mask({6}, 42);  // broadcast along dim 0
        Tensor cpu = self.masked_fill(mask, 3);
        Tensor body = self.clone();
        Tensor value = tensor::full({}, 3, TensorOptions(dt));
        run_where<T>(body, mask.expand(self.sizes()), value, body, false, true, false);
        expect_identical(body, cpu, "masked_fill " + std::string(to_string(dt)) + (transposed ? " transposed" : ""));
      }
    });
  }
  EXPECT_EQ(g_compared, 10 * 2);
}

// ---- the indexing bodies ----

// Note [Test index geometry]: per-dim, unmerged, innermost first: operand 0 dense (its own
// strides), 1 the index (the given element strides), 2 self (0 along dim).
template <class I>
ck::IndexArgs<I> index_args(IntArrayRef shape, const Tensor& dense, const std::vector<int64_t>& index_strides,
                            const Tensor& index, const Tensor& self, int64_t dim) {
  ck::IndexArgs<I> a{};
  a.dense = static_cast<char*>(dense.data_ptr());
  a.index = static_cast<const char*>(index.data_ptr());
  a.self = static_cast<char*>(self.data_ptr());
  a.dim_size = self.size(dim);
  a.dim_stride = self.stride(dim) * self.element_size();
  const int nd = static_cast<int>(shape.size());
  int64_t sizes[8], strides[3][8] = {};
  for (int d = 0; d < nd; ++d) {
    const int ld = nd - 1 - d;
    sizes[d] = shape[ld];
    strides[0][d] = dense.stride(ld) * dense.element_size();
    strides[1][d] = index_strides[ld] * index.element_size();
    strides[2][d] = ld == dim ? 0 : self.stride(ld) * self.element_size();
  }
  const int64_t* sp[3] = {strides[0], strides[1], strides[2]};
  a.offsets = math::OffsetCalculator<3>(nd, sizes, sp);
  return a;
}

int64_t numel_of(IntArrayRef s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

// Indices in [0, size) of the given dtype and shape.
Tensor random_index(IntArrayRef shape, int64_t size, uint64_t seed, ScalarType dt = kInt64) {
  return random_input(shape, kFloat64, -0.49, static_cast<double>(size) - 0.51, seed).to(dt);
}

std::vector<int64_t> strides_vec(const Tensor& t) { return std::vector<int64_t>(t.strides().begin(), t.strides().end()); }
std::vector<int64_t> along(const Tensor& index, int64_t nd, int64_t dim) {
  std::vector<int64_t> s(static_cast<size_t>(nd), 0);
  s[static_cast<size_t>(dim)] = index.dim() == 1 ? index.stride(0) : 0;
  return s;
}

template <class I>
struct IndexType;
template <> struct IndexType<int32_t> { static constexpr ScalarType value = kInt32; };
template <> struct IndexType<int64_t> { static constexpr ScalarType value = kInt64; };

// self layouts: contiguous (4, 5, 6) and a permuted view of the same shape.
std::vector<Tensor> selves(ScalarType dt, uint64_t seed) {
  return {random_input({4, 5, 6}, dt, -9, 9, seed), random_input({6, 4, 5}, dt, -9, 9, seed + 1).permute({1, 2, 0})};
}

TEST(IndexBodies, GatherAndIndexSelectMatchTheCpuKernels) {
  g_compared = 0;
  for (ScalarType dt : kAll) {
    visit_real_dtype(dt, [&](auto tag) {
      using E = bits_t<typename decltype(tag)::type>;
      for (const Tensor& self : selves(dt, 51)) {
        for (int64_t dim = 0; dim < 3; ++dim) {
          // gather: an index of a smaller shape, contiguous and transposed (dims 0 and 2 swapped).
          std::vector<int64_t> ishape = {3, 4, 5};
          ishape[static_cast<size_t>(dim)] = 7;  // more positions than self has along dim
          Tensor idx_c = random_index(ishape, self.size(dim), 52 + dim);
          Tensor idx_t = random_index({ishape[2], ishape[1], ishape[0]}, self.size(dim), 55 + dim).permute({2, 1, 0});
          for (const Tensor& idx : {idx_c, idx_t}) {
            Tensor cpu = tensor::gather(self, dim, idx);
            Tensor body = tensor::empty(idx.sizes(), TensorOptions(dt));
            auto a = index_args<int64_t>(idx.sizes(), body, strides_vec(idx), idx, self, dim);
            for (uint32_t i = 0; i < numel_of(idx.sizes()); ++i) ck::gather_body<E>(a, i);
            expect_identical(body, cpu, "gather " + std::string(to_string(dt)) + " dim " + std::to_string(dim) +
                                            " self strides " + dims(self.strides()) + " index strides " + dims(idx.strides()));
          }
          // index_select: int32 and int64 indices, strided (every other element of a longer one).
          auto select_with = [&](auto itag) {
            using I = typename decltype(itag)::type;
            Tensor index = random_index({18}, self.size(dim), 58 + dim, IndexType<I>::value).slice(0, 0, 18, 2);
            Tensor cpu = tensor::index_select(self, dim, index);
            Tensor body = tensor::empty(cpu.sizes(), TensorOptions(dt));
            auto a = index_args<I>(body.sizes(), body, along(index, 3, dim), index, self, dim);
            for (uint32_t i = 0; i < body.numel(); ++i) ck::gather_body<E>(a, i);
            expect_identical(body, cpu, "index_select " + std::string(to_string(dt)) + " dim " + std::to_string(dim) +
                                            " index " + std::string(to_string(index.dtype())));
          };
          select_with(tensor::testing::TypeTag<int32_t>{});
          select_with(tensor::testing::TypeTag<int64_t>{});
        }
      }
    });
  }
  EXPECT_EQ(g_compared, 10 * 2 * 3 * 4);
}

// scatter, scatter_add and index_add run serially on the host in row-major order, the CPU
// loops' order, so even repeated indices (which collide on purpose here) give identical bits.
TEST(IndexBodies, ScatterScatterAddAndIndexAddMatchTheCpuKernels) {
  g_compared = 0;
  for (ScalarType dt : kAll) {
    visit_real_dtype(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using E = bits_t<T>;
      using op_t = math::opmath_t<T>;
      for (const Tensor& self : selves(dt, 61)) {
        for (int64_t dim = 0; dim < 3; ++dim) {
          std::vector<int64_t> ishape = {3, 4, 5};
          ishape[static_cast<size_t>(dim)] = 9;
          Tensor idx = random_index(ishape, self.size(dim), 62 + dim);
          // A src larger than the index (allowed) and transposed.
          Tensor src = random_input({ishape[2] + 1, ishape[1], ishape[0] + 2}, dt, -9, 9, 65 + dim).permute({2, 1, 0});
          const std::string what = std::string(to_string(dt)) + " dim " + std::to_string(dim) + " self strides " +
                                   dims(self.strides());
          {
            Tensor cpu = tensor::scatter(self, dim, idx, src);
            Tensor body = self.clone();
            auto a = index_args<int64_t>(idx.sizes(), src, strides_vec(idx), idx, body, dim);
            for (uint32_t i = 0; i < idx.numel(); ++i) ck::scatter_body<E>(a, i);
            expect_identical(body, cpu, "scatter " + what);
          }
          {
            Tensor cpu = tensor::scatter_add(self, dim, idx, src);
            Tensor body = self.clone();
            auto a = index_args<int64_t>(idx.sizes(), src, strides_vec(idx), idx, body, dim);
            for (uint32_t i = 0; i < idx.numel(); ++i) ck::index_add_body<T>(a, i, op_t(1));
            expect_identical(body, cpu, "scatter_add " + what);
          }
          auto index_add_with = [&](auto itag) {
            using I = typename decltype(itag)::type;
            Tensor index = random_index({8}, self.size(dim), 68 + dim, IndexType<I>::value);
            std::vector<int64_t> sshape(self.sizes().begin(), self.sizes().end());
            sshape[static_cast<size_t>(dim)] = 8;
            Tensor source = random_input(sshape, dt, -9, 9, 71 + dim);
            const double alpha = dt == kBool ? 1 : is_floating_point(dt) ? 0.5 : 3;
            const Scalar alpha_s = is_floating_point(dt) ? Scalar(alpha) : Scalar(static_cast<int64_t>(alpha));
            Tensor cpu = tensor::index_add(self, dim, index, source, alpha_s);
            Tensor body = self.clone();
            auto a = index_args<I>(source.sizes(), source, along(index, 3, dim), index, body, dim);
            for (uint32_t i = 0; i < source.numel(); ++i) ck::index_add_body<T>(a, i, static_cast<op_t>(alpha));
            expect_identical(body, cpu, "index_add " + what + " index " + std::string(to_string(index.dtype())));
          };
          index_add_with(tensor::testing::TypeTag<int32_t>{});
          index_add_with(tensor::testing::TypeTag<int64_t>{});
        }
      }
    });
  }
  EXPECT_EQ(g_compared, 10 * 2 * 3 * 4);
}

// add_scaled (what the device's atomic add computes per step) against float64 and hand values.
TEST(IndexBodies, AddScaledRoundsOnceAsTheCpuLoops) {
  EXPECT_EQ(ck::add_scaled<float>(1.5f, 2.0f, 0.5f), 2.5f);
  EXPECT_EQ(ck::add_scaled<int32_t>(7, -3, 4), -5);
  EXPECT_EQ(ck::add_scaled<bool>(false, true, true), true);
  EXPECT_EQ(ck::add_scaled<bool>(false, true, false), false);
  EXPECT_EQ(ck::add_scaled<bool>(true, false, true), true);
  EXPECT_EQ(ck::add_scaled<int8_t>(int8_t(100), int8_t(27), int8_t(1)), int8_t(127));
  // Half: 2048 + 1 is not representable; the float sum 2049 rounds to even (2048).
  EXPECT_EQ(static_cast<float>(ck::add_scaled<Half>(Half(2048.f), Half(1.f), 1.f)), 2048.f);
  EXPECT_EQ(static_cast<float>(ck::add_scaled<Half>(Half(2048.f), Half(3.f), 1.f)), 2052.f);
  EXPECT_EQ(static_cast<float>(ck::add_scaled<BFloat16>(BFloat16(1.f), BFloat16(1.f), 0.25f)), 1.25f);
}

// The guard and the range check: an index outside [0, size) touches nothing, and the check
// flags exactly those positions.
TEST(IndexBodies, OutOfRangeIndicesAreFlaggedAndTouchNothing) {
  Tensor self = tensor::arange(12, TensorOptions(kFloat32)).view({3, 4});
  Tensor idx = tensor::tensor(std::vector<int64_t>{0, -1, 3, 2, 4, 1, 3, 100}, kInt64).view({2, 4});
  const std::vector<bool> bad = {false, true, true, false, true, false, true, true};  // size along dim 0 is 3
  for (int64_t i = 0; i < 8; ++i)
    EXPECT_EQ(ck::index_out_of_range<int64_t>(static_cast<const char*>(idx.data_ptr()), static_cast<uint32_t>(i * 8), 3),
              bad[static_cast<size_t>(i)])
        << i;
  Tensor out = tensor::full({2, 4}, -7.0, TensorOptions(kFloat32));
  auto a = index_args<int64_t>(idx.sizes(), out, strides_vec(idx), idx, self, 0);
  for (uint32_t i = 0; i < 8; ++i) ck::gather_body<uint32_t>(a, i);
  // In-range positions gather self[idx][col]; the rest keep -7.
  const std::vector<float> want = {0, -7, -7, 11, -7, 5, -7, -7};
  Tensor wt = tensor::tensor(want, kFloat32).view({2, 4});
  EXPECT_TRUE(tensor::equal(out, wt)) << out;
  Tensor target = self.clone();
  auto s = index_args<int64_t>(idx.sizes(), out, strides_vec(idx), idx, target, 0);
  for (uint32_t i = 0; i < 8; ++i) ck::index_add_body<float>(s, i, 1.f);
  // self[0][0] += 0, self[2][3] += 11, self[1][1] += 5.
  Tensor expect = tensor::tensor(std::vector<float>{0, 1, 2, 3, 4, 10, 6, 7, 8, 9, 10, 22}, kFloat32).view({3, 4});
  EXPECT_TRUE(tensor::equal(target, expect)) << target;
}

}  // namespace
