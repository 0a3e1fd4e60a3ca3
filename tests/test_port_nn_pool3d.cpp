// Ported-program test for the 3-d pools, adaptive max pools, LP pools and BatchNorm3d (issue
// 14): code in libtorch's spelling (torch:: renamed to tensor::) for the modules, their F::
// forms and the free functions tensor::max_pool3d, ... Values, indices and gradients are
// compared with PyTorch's (tests/reference/torch_pool3d.py generated
// tests/reference/torch_pool3d_ref.h) on contiguous and strided inputs; the two new kernels
// (max_pool3d_with_indices, adaptive_max_pool3d) are also compared with float64 reference loops
// here, in float32 and float64; plus meta tensors and bad input.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/grad_test_util.h"
#include "tests/reference/torch_pool3d_ref.h"
#include "tests/port_util.h"
#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::det;
using tensor::testing::strided;
namespace nn = tensor::nn;
namespace F = tensor::nn::functional;
using tensor::testing::check;
using tensor::testing::expect_error;
using tensor::testing::expect_near;
using tensor::testing::vals;
using namespace torch_pool3d_ref;

namespace {

using Pooled = std::tuple<Tensor, Tensor>;
using Fn = std::function<Pooled(const Tensor&)>;
Fn values(std::function<Tensor(const Tensor&)> f) {
  return [f](const Tensor& x) { return Pooled{f(x), Tensor()}; };
}

// Runs f on x (contiguous, then strided) and compares the output, the indices (when f returns
// them and idx is given) and the gradient of sum(out * det(out.shape, 7)) with PyTorch's.
void expect_case(const std::string& what, const Fn& f, const Tensor& x, const std::vector<double>& out_ref,
                 const std::vector<double>& grad_ref, const std::vector<double>* idx_ref = nullptr,
                 double tol = 1e-12) {
  for (bool s : {false, true}) {
    const std::string name = what + (s ? " (strided)" : "");
    Tensor in = (s ? strided(x) : x).detach().requires_grad_(true);
    auto [out, idx] = f(in);
    expect_near(vals(out), out_ref, tol, name + " output");
    if (idx_ref) {
      ASSERT_TRUE(idx.defined()) << name;
      EXPECT_EQ(idx.dtype(), kInt64) << name;
      EXPECT_EQ(idx.sizes(), out.sizes()) << name;
      expect_near(vals(idx), *idx_ref, 0, name + " indices");
    }
    Tensor loss = (out * det(out.sizes().vec(), 7)).sum();
    auto g = autograd::grad({loss}, {in});
    expect_near(vals(g[0]), grad_ref, tol, name + " grad");
  }
}

// ---- float64 reference loops of the two new kernels (any rank-5 input, batch first) ----
// Max over windows in row-major tap order; the first maximum wins, NaN wins (libtorch's rule).
struct RefPool {
  std::vector<double> out, idx;
};
RefPool ref_max_pool3d(const Tensor& x5, std::array<int64_t, 3> k, std::array<int64_t, 3> s, std::array<int64_t, 3> p,
                       std::array<int64_t, 3> d, std::array<int64_t, 3> o) {
  const std::vector<double> xv = vals(x5);
  const int64_t P = x5.size(0) * x5.size(1), D = x5.size(2), H = x5.size(3), W = x5.size(4);
  RefPool r;
  for (int64_t pl = 0; pl < P; ++pl)
    for (int64_t z = 0; z < o[0]; ++z)
      for (int64_t y = 0; y < o[1]; ++y)
        for (int64_t w = 0; w < o[2]; ++w) {
          double best = -std::numeric_limits<double>::infinity();
          int64_t bi = -1;
          for (int64_t a = 0; a < k[0]; ++a)
            for (int64_t b = 0; b < k[1]; ++b)
              for (int64_t c = 0; c < k[2]; ++c) {
                const int64_t iz = z * s[0] - p[0] + a * d[0], iy = y * s[1] - p[1] + b * d[1],
                              ix = w * s[2] - p[2] + c * d[2];
                if (iz < 0 || iz >= D || iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                const int64_t i = (iz * H + iy) * W + ix;
                const double v = xv[static_cast<size_t>(pl * D * H * W + i)];
                if (bi < 0 || v > best || std::isnan(v)) best = v, bi = i;
              }
          r.out.push_back(best);
          r.idx.push_back(static_cast<double>(bi));
        }
  return r;
}

RefPool ref_adaptive_max_pool3d(const Tensor& x5, std::array<int64_t, 3> o) {
  const std::vector<double> xv = vals(x5);
  const int64_t P = x5.size(0) * x5.size(1), D = x5.size(2), H = x5.size(3), W = x5.size(4);
  auto lo = [](int64_t i, int64_t out, int64_t in) { return static_cast<int64_t>(std::floor(double(i * in) / out)); };
  auto hi = [](int64_t i, int64_t out, int64_t in) {
    return static_cast<int64_t>(std::ceil(double((i + 1) * in) / out));
  };
  RefPool r;
  for (int64_t pl = 0; pl < P; ++pl)
    for (int64_t z = 0; z < o[0]; ++z)
      for (int64_t y = 0; y < o[1]; ++y)
        for (int64_t w = 0; w < o[2]; ++w) {
          double best = 0;
          int64_t bi = -1;
          for (int64_t iz = lo(z, o[0], D); iz < hi(z, o[0], D); ++iz)
            for (int64_t iy = lo(y, o[1], H); iy < hi(y, o[1], H); ++iy)
              for (int64_t ix = lo(w, o[2], W); ix < hi(w, o[2], W); ++ix) {
                const int64_t i = (iz * H + iy) * W + ix;
                const double v = xv[static_cast<size_t>(pl * D * H * W + i)];
                if (bi < 0 || v > best || std::isnan(v)) best = v, bi = i;
              }
          r.out.push_back(best);
          r.idx.push_back(static_cast<double>(bi));
        }
  return r;
}

}  // namespace

// ---- BatchNorm3d ----

TEST(PortNNPool3d, BatchNorm3dMatchesPyTorch) {
  const Tensor x = det({2, 3, 2, 3, 2}, 1, -2, 3);
  for (bool s : {false, true}) {
    SCOPED_TRACE(s ? "strided" : "contiguous");
    nn::BatchNorm3d bn(nn::BatchNormOptions(3).momentum(0.2));
    bn->to(kFloat64);
    {
      NoGradGuard no_grad;
      bn->weight.copy_(det({3}, 100, 0.5, 1.5).to(bn->weight.dtype()));
      bn->bias.copy_(det({3}, 101, -0.5, 0.5).to(bn->bias.dtype()));
    }
    Tensor in = (s ? strided(x) : x).detach().requires_grad_(true);
    Tensor out = bn->forward(in);
    expect_near(vals(out), bn3d_train_out, 1e-12, "train output");
    auto g = autograd::grad({(out * det(out.sizes().vec(), 7)).sum()}, {in, bn->weight, bn->bias});
    expect_near(vals(g[0]), bn3d_train_grad, 1e-11, "train grad input");
    expect_near(vals(g[1]), bn3d_train_pgrad0, 1e-11, "train grad weight");
    expect_near(vals(g[2]), bn3d_train_pgrad1, 1e-11, "train grad bias");
    expect_near(vals(bn->running_mean), bn3d_running_mean, 1e-12, "running_mean");
    expect_near(vals(bn->running_var), bn3d_running_var, 1e-12, "running_var");
    EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);

    bn->eval();
    Tensor ine = (s ? strided(x) : x).detach().requires_grad_(true);
    Tensor oute = bn->forward(ine);
    expect_near(vals(oute), bn3d_eval_out, 1e-12, "eval output");
    auto ge = autograd::grad({(oute * det(oute.sizes().vec(), 7)).sum()}, {ine, bn->weight, bn->bias});
    expect_near(vals(ge[0]), bn3d_eval_grad, 1e-11, "eval grad input");
    expect_near(vals(ge[1]), bn3d_eval_pgrad0, 1e-11, "eval grad weight");
    expect_near(vals(ge[2]), bn3d_eval_pgrad1, 1e-11, "eval grad bias");
  }
}

TEST(PortNNPool3d, BatchNorm3dWantsFiveDims) {
  nn::BatchNorm3d bn(3);
  EXPECT_EQ(bn->weight.sizes(), IntArrayRef({3}));
  expect_error([&] { bn->forward(zeros({2, 3, 4, 4})); }, {"BatchNorm3d", "5D", "[2, 3, 4, 4]"});
  expect_error([&] { bn->forward(zeros({2, 4, 2, 2, 2})); }, {"BatchNorm3d", "3 channels", "[2, 4, 2, 2, 2]"});
  std::ostringstream os;
  bn->pretty_print(os);
  EXPECT_EQ(os.str(), "tensor::nn::BatchNorm3d(3, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true)");
}

// ---- max pooling ----

TEST(PortNNPool3d, MaxPool3dMatchesPyTorch) {
  const Tensor x = det({2, 2, 4, 5, 6}, 2, -3, 3);
  auto o = nn::MaxPool3dOptions({2, 3, 2}).stride({2, 2, 1}).padding({1, 1, 0}).dilation({1, 1, 2}).ceil_mode(true);
  nn::MaxPool3d pool(o);
  expect_case("MaxPool3d::forward_with_indices", [&](const Tensor& t) { return pool->forward_with_indices(t); }, x,
              maxpool3d_a_out, maxpool3d_a_grad, &maxpool3d_a_idx);
  expect_case("MaxPool3d::forward", values([&](const Tensor& t) { return pool->forward(t); }), x, maxpool3d_a_out,
              maxpool3d_a_grad);
  expect_case("F::max_pool3d", values([&](const Tensor& t) { return F::max_pool3d(t, o); }), x, maxpool3d_a_out,
              maxpool3d_a_grad);
  expect_case("F::max_pool3d_with_indices", [&](const Tensor& t) { return F::max_pool3d_with_indices(t, o); }, x,
              maxpool3d_a_out, maxpool3d_a_grad, &maxpool3d_a_idx);
  expect_case("tensor::max_pool3d_with_indices",
              [](const Tensor& t) { return tensor::max_pool3d_with_indices(t, {2, 3, 2}, {2, 2, 1}, {1, 1, 0}, {1, 1, 2}, true); },
              x, maxpool3d_a_out, maxpool3d_a_grad, &maxpool3d_a_idx);
  // Unbatched (C, D, H, W), one value for every dim.
  const Tensor xu = det({2, 5, 4, 5}, 3, -3, 3);
  expect_case("tensor::max_pool3d unbatched", [](const Tensor& t) { return tensor::max_pool3d_with_indices(t, 3, 2, 1); },
              xu, maxpool3d_unbatched_out, maxpool3d_unbatched_grad, &maxpool3d_unbatched_idx);
  expect_case("nn::MaxPool3d(3) unbatched",
              values([](const Tensor& t) { return nn::MaxPool3d(nn::MaxPool3dOptions(3).stride(2).padding(1))->forward(t); }),
              xu, maxpool3d_unbatched_out, maxpool3d_unbatched_grad);
  std::ostringstream os;
  pool->pretty_print(os);
  EXPECT_EQ(os.str(), "tensor::nn::MaxPool3d(kernel_size=[2, 3, 2], stride=[2, 2, 1], padding=[1, 1, 0], "
                      "dilation=[1, 1, 2], ceil_mode=true)");
}

// The loops against a float64 reference on random data, in float32 and float64, with ties
// (values rounded to a coarse grid) and NaNs, over several geometries.
TEST(PortNNPool3d, MaxPool3dMatchesReferenceLoop) {
  struct Geo {
    std::array<int64_t, 3> k, s, p, d;
    bool ceil;
  };
  const std::vector<Geo> geos = {{{2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {1, 1, 1}, false},
                                 {{3, 3, 3}, {1, 2, 1}, {1, 1, 1}, {1, 1, 1}, true},
                                 {{3, 2, 3}, {2, 1, 2}, {1, 0, 0}, {2, 1, 2}, true},
                                 {{1, 3, 2}, {1, 3, 2}, {0, 1, 1}, {1, 1, 1}, false},
                                 // The unrolled fast path: cubic 2 or 3, no padding or dilation.
                                 {{3, 3, 3}, {2, 1, 2}, {0, 0, 0}, {1, 1, 1}, false},
                                 {{2, 2, 2}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, true}};
  Tensor base = tensor::testing::random_tensor({2, 3, 5, 6, 7}, 11).round();  // many ties
  for (int64_t j : {5, 77, 300}) base.data_ptr<double>()[j] = NAN;
  for (ScalarType dt : {kFloat64, kFloat32, kBFloat16}) {
    const Tensor x = base.to(dt);
    for (const Geo& g : geos) {
      SCOPED_TRACE(std::string(dt == kFloat64 ? "float64" : dt == kFloat32 ? "float32" : "bfloat16") + " k=" + std::to_string(g.k[0]) +
                   std::to_string(g.k[1]) + std::to_string(g.k[2]));
      auto [v, i] = max_pool3d_with_indices(x, IntArrayRef(g.k.data(), 3), IntArrayRef(g.s.data(), 3),
                                            IntArrayRef(g.p.data(), 3), IntArrayRef(g.d.data(), 3), g.ceil);
      EXPECT_EQ(v.dtype(), dt);
      std::array<int64_t, 3> o{v.size(2), v.size(3), v.size(4)};
      RefPool r = ref_max_pool3d(x, g.k, g.s, g.p, g.d, o);
      const std::vector<double> got = vals(v);
      ASSERT_EQ(got.size(), r.out.size());
      for (size_t j = 0; j < got.size(); ++j)
        if (!(std::isnan(r.out[j]) && std::isnan(got[j]))) EXPECT_EQ(got[j], r.out[j]) << j;
      EXPECT_EQ(vals(i), r.idx);
    }
  }
}

// ---- average pooling ----

TEST(PortNNPool3d, AvgPool3dMatchesPyTorch) {
  const Tensor x = det({2, 2, 5, 6, 4}, 4, -2, 2);
  auto a = nn::AvgPool3dOptions(3).stride(2).padding(1).ceil_mode(true);
  expect_case("AvgPool3d pad ceil", values([&](const Tensor& t) { return nn::AvgPool3d(a)->forward(t); }), x,
              avgpool3d_pad_ceil_out, avgpool3d_pad_ceil_grad);
  expect_case("F::avg_pool3d pad ceil", values([&](const Tensor& t) { return F::avg_pool3d(t, a); }), x,
              avgpool3d_pad_ceil_out, avgpool3d_pad_ceil_grad);
  auto b = nn::AvgPool3dOptions({3, 2, 3}).stride({2, 2, 1}).padding(1).ceil_mode(true).count_include_pad(false);
  expect_case("AvgPool3d count_include_pad=false", values([&](const Tensor& t) { return nn::AvgPool3d(b)->forward(t); }),
              x, avgpool3d_nopadcount_out, avgpool3d_nopadcount_grad);
  expect_case("tensor::avg_pool3d divisor_override",
              values([](const Tensor& t) { return tensor::avg_pool3d(t, {2, 3, 2}, {1, 2, 2}, {1, 0, 1}, false, true, 5); }),
              x, avgpool3d_divisor_out, avgpool3d_divisor_grad);
  auto c = nn::AvgPool3dOptions({2, 3, 2}).stride({1, 2, 2}).padding({1, 0, 1}).divisor_override(5);
  expect_case("F::avg_pool3d divisor_override", values([&](const Tensor& t) { return F::avg_pool3d(t, c); }), x,
              avgpool3d_divisor_out, avgpool3d_divisor_grad);
  expect_case("AvgPool3d unbatched", values([](const Tensor& t) { return nn::AvgPool3d(nn::AvgPool3dOptions(2).stride(1))->forward(t); }),
              det({3, 4, 5, 3}, 5, -2, 2), avgpool3d_unbatched_out, avgpool3d_unbatched_grad);
}

TEST(PortNNPool3d, AdaptiveAvgPool3dMatchesPyTorch) {
  expect_case("AdaptiveAvgPool3d", values([](const Tensor& t) { return nn::AdaptiveAvgPool3d(nn::AdaptiveAvgPool3dOptions({3, 4, 2}))->forward(t); }),
              det({2, 2, 5, 7, 6}, 6, -2, 2), adaptiveavg3d_out, adaptiveavg3d_grad);
  expect_case("F::adaptive_avg_pool3d unbatched",
              values([](const Tensor& t) { return F::adaptive_avg_pool3d(t, F::AdaptiveAvgPool3dFuncOptions({2, 3, 5})); }),
              det({2, 5, 7, 6}, 7, -2, 2), adaptiveavg3d_unbatched_out, adaptiveavg3d_unbatched_grad);
  expect_case("tensor::adaptive_avg_pool3d", values([](const Tensor& t) { return tensor::adaptive_avg_pool3d(t, {3, 4, 2}); }),
              det({2, 2, 5, 7, 6}, 6, -2, 2), adaptiveavg3d_out, adaptiveavg3d_grad);
}

// float32 runs the same composition; its values stay within float32 rounding of float64's.
TEST(PortNNPool3d, AvgPool3dFloat32) {
  Tensor x = tensor::testing::random_tensor({2, 3, 6, 5, 7}, 3);
  Tensor a64 = avg_pool3d(x, {3, 2, 3}, {2, 1, 2}, {1, 1, 1}, true, false);
  Tensor a32 = avg_pool3d(x.to(kFloat32), {3, 2, 3}, {2, 1, 2}, {1, 1, 1}, true, false);
  EXPECT_EQ(a32.dtype(), kFloat32);
  expect_near(vals(a32), vals(a64), 1e-6, "avg_pool3d float32");
  Tensor b64 = adaptive_avg_pool3d(x, {4, 3, 5}), b32 = adaptive_avg_pool3d(x.to(kFloat32), {4, 3, 5});
  expect_near(vals(b32), vals(b64), 1e-6, "adaptive_avg_pool3d float32");
}

// ---- adaptive max pooling ----

TEST(PortNNPool3d, AdaptiveMaxPoolMatchesPyTorch) {
  const Tensor x1 = det({2, 3, 11}, 8, -2, 2);
  nn::AdaptiveMaxPool1d m1(4);
  expect_case("AdaptiveMaxPool1d::forward_with_indices", [&](const Tensor& t) { return m1->forward_with_indices(t); },
              x1, adaptivemax1d_out, adaptivemax1d_grad, &adaptivemax1d_idx);
  expect_case("AdaptiveMaxPool1d::forward", values([&](const Tensor& t) { return m1->forward(t); }), x1,
              adaptivemax1d_out, adaptivemax1d_grad);
  expect_case("tensor::adaptive_max_pool1d unbatched", [](const Tensor& t) { return tensor::adaptive_max_pool1d(t, {5}); },
              det({3, 11}, 9, -2, 2), adaptivemax1d_unbatched_out, adaptivemax1d_unbatched_grad,
              &adaptivemax1d_unbatched_idx);
  expect_case("F::adaptive_max_pool1d_with_indices",
              [](const Tensor& t) { return F::adaptive_max_pool1d_with_indices(t, F::AdaptiveMaxPool1dFuncOptions(5)); },
              det({3, 11}, 9, -2, 2), adaptivemax1d_unbatched_out, adaptivemax1d_unbatched_grad,
              &adaptivemax1d_unbatched_idx);

  const Tensor x2 = det({2, 3, 7, 9}, 10, -2, 2);
  nn::AdaptiveMaxPool2d m2(nn::AdaptiveMaxPool2dOptions({3, 4}));
  expect_case("AdaptiveMaxPool2d::forward_with_indices", [&](const Tensor& t) { return m2->forward_with_indices(t); },
              x2, adaptivemax2d_out, adaptivemax2d_grad, &adaptivemax2d_idx);
  expect_case("F::adaptive_max_pool2d", values([](const Tensor& t) { return F::adaptive_max_pool2d(t, F::AdaptiveMaxPool2dFuncOptions({3, 4})); }),
              x2, adaptivemax2d_out, adaptivemax2d_grad);
  expect_case("tensor::adaptive_max_pool2d unbatched", [](const Tensor& t) { return tensor::adaptive_max_pool2d(t, {5, 2}); },
              det({3, 7, 9}, 11, -2, 2), adaptivemax2d_unbatched_out, adaptivemax2d_unbatched_grad,
              &adaptivemax2d_unbatched_idx);

  const Tensor x3 = det({2, 2, 5, 7, 6}, 12, -2, 2);
  nn::AdaptiveMaxPool3d m3(nn::AdaptiveMaxPool3dOptions({3, 4, 2}));
  expect_case("AdaptiveMaxPool3d::forward_with_indices", [&](const Tensor& t) { return m3->forward_with_indices(t); },
              x3, adaptivemax3d_out, adaptivemax3d_grad, &adaptivemax3d_idx);
  expect_case("AdaptiveMaxPool3d::forward", values([&](const Tensor& t) { return m3->forward(t); }), x3,
              adaptivemax3d_out, adaptivemax3d_grad);
  expect_case("F::adaptive_max_pool3d_with_indices unbatched",
              [](const Tensor& t) { return F::adaptive_max_pool3d_with_indices(t, F::AdaptiveMaxPool3dFuncOptions({2, 3, 5})); },
              det({2, 5, 7, 6}, 13, -2, 2), adaptivemax3d_unbatched_out, adaptivemax3d_unbatched_grad,
              &adaptivemax3d_unbatched_idx);
  std::ostringstream os;
  m3->pretty_print(os);
  EXPECT_EQ(os.str(), "tensor::nn::AdaptiveMaxPool3d(output_size=[3, 4, 2])");
}

TEST(PortNNPool3d, AdaptiveMaxPool3dMatchesReferenceLoop) {
  Tensor base = tensor::testing::random_tensor({2, 3, 7, 5, 9}, 5).round();  // many ties
  for (int64_t j : {3, 100}) base.data_ptr<double>()[j] = NAN;
  for (ScalarType dt : {kFloat64, kFloat32, kBFloat16}) {
    const Tensor x = base.to(dt);
    for (std::array<int64_t, 3> o : {std::array<int64_t, 3>{3, 2, 4}, {7, 5, 9}, {1, 1, 1}, {4, 3, 2}}) {
      SCOPED_TRACE(std::to_string(o[0]) + "x" + std::to_string(o[1]) + "x" + std::to_string(o[2]));
      auto [v, i] = adaptive_max_pool3d(x, IntArrayRef(o.data(), 3));
      RefPool r = ref_adaptive_max_pool3d(x, o);
      const std::vector<double> got = vals(v);
      ASSERT_EQ(got.size(), r.out.size());
      for (size_t j = 0; j < got.size(); ++j)
        if (!(std::isnan(r.out[j]) && std::isnan(got[j]))) EXPECT_EQ(got[j], r.out[j]) << j;
      EXPECT_EQ(vals(i), r.idx);
    }
  }
}

// ---- LP pooling ----

TEST(PortNNPool3d, LPPoolMatchesPyTorch) {
  expect_case("LPPool1d", values([](const Tensor& t) { return nn::LPPool1d(nn::LPPool1dOptions(2.0, 3).stride(2))->forward(t); }),
              det({2, 3, 10}, 14, -2, 2), lppool1d_out, lppool1d_grad, nullptr, 1e-11);
  expect_case("F::lp_pool1d ceil", values([](const Tensor& t) { return F::lp_pool1d(t, F::LPPool1dFuncOptions(3.0, 3).stride(2).ceil_mode(true)); }),
              det({3, 10}, 15, 0.1, 2), lppool1d_ceil_out, lppool1d_ceil_grad, nullptr, 1e-11);
  expect_case("LPPool2d", values([](const Tensor& t) { return nn::LPPool2d(nn::LPPool2dOptions(2.0, {3, 2}).stride(2))->forward(t); }),
              det({2, 2, 7, 6}, 16, -2, 2), lppool2d_out, lppool2d_grad, nullptr, 1e-11);
  expect_case("F::lp_pool2d ceil", values([](const Tensor& t) { return F::lp_pool2d(t, F::LPPool2dFuncOptions(3.0, 3).stride(2).ceil_mode(true)); }),
              det({2, 2, 7, 6}, 17, 0.1, 2), lppool2d_ceil_out, lppool2d_ceil_grad, nullptr, 1e-11);
  expect_case("LPPool3d", values([](const Tensor& t) { return nn::LPPool3d(nn::LPPool3dOptions(2.0, {2, 3, 2}).stride({2, 2, 1}))->forward(t); }),
              det({2, 2, 5, 6, 4}, 18, -2, 2), lppool3d_out, lppool3d_grad, nullptr, 1e-11);
  expect_case("F::lp_pool3d ceil unbatched",
              values([](const Tensor& t) { return F::lp_pool3d(t, F::LPPool3dFuncOptions(3.0, 2).stride(2).ceil_mode(true)); }),
              det({2, 5, 6, 5}, 19, 0.1, 2), lppool3d_ceil_out, lppool3d_ceil_grad, nullptr, 1e-11);
  std::ostringstream os;
  nn::LPPool2d(nn::LPPool2dOptions(2.0, {3, 2}).stride(2))->pretty_print(os);
  EXPECT_EQ(os.str(), "tensor::nn::LPPool2d(norm_type=2, kernel_size=[3, 2], stride=[2, 2], ceil_mode=false)");
}

// ---- gradients by finite differences (gradgradcheck where the backward is differentiable) ----

TEST(PortNNPool3d, Gradcheck) {
  // Distinct values: finite differences across a tie would be meaningless for max pooling.
  Tensor x = tensor::testing::random_tensor({1, 2, 4, 5, 4}, 21).requires_grad_(true);
  Tensor xu = tensor::testing::random_tensor({2, 3, 4, 5}, 22).requires_grad_(true);
  using autograd::variable_list;
  std::vector<std::pair<std::string, std::function<Tensor(const variable_list&)>>> fns = {
      {"max_pool3d", [](const variable_list& v) { return max_pool3d(v[0], {2, 3, 2}, {1, 2, 1}, {1, 1, 0}, 1, true); }},
      {"avg_pool3d", [](const variable_list& v) { return avg_pool3d(v[0], 3, 2, 1, true, false); }},
      {"adaptive_avg_pool3d", [](const variable_list& v) { return adaptive_avg_pool3d(v[0], {3, 2, 3}); }},
      {"adaptive_max_pool3d", [](const variable_list& v) { return std::get<0>(adaptive_max_pool3d(v[0], {3, 2, 3})); }},
      {"lp_pool3d", [](const variable_list& v) { return F::lp_pool3d(v[0], F::LPPool3dFuncOptions(2.0, 2).stride(1)); }},
  };
  for (auto& [name, fn] : fns) {
    check(name + " gradcheck", [&] { return autograd::gradcheck(fn, {x}); });
    check(name + " gradgradcheck", [&] { return autograd::gradgradcheck(fn, {x}); });
    check(name + " unbatched gradcheck", [&] { return autograd::gradcheck(fn, {xu}); });
  }
  Tensor x2 = tensor::testing::random_tensor({2, 3, 5, 7}, 23).requires_grad_(true);
  auto amp2 = [](const variable_list& v) { return std::get<0>(adaptive_max_pool2d(v[0], {3, 4})); };
  check("adaptive_max_pool2d gradgradcheck", [&] { return autograd::gradgradcheck(amp2, {x2}); });
  auto lp2 = [](const variable_list& v) { return F::lp_pool2d(v[0], F::LPPool2dFuncOptions(3.0, 2).stride(1)); };
  check("lp_pool2d gradcheck", [&] { return autograd::gradcheck(lp2, {x2.abs().detach().add(0.5).requires_grad_(true)}); });
}

// ---- meta tensors and bad input ----

TEST(PortNNPool3d, MetaShapesWithoutData) {
  const TensorOptions meta = TensorOptions().dtype(kFloat32).device(kMeta);
  Tensor big = empty({512, 64, 64, 112, 112}, meta);
  auto [v, i] = max_pool3d_with_indices(big, 3, 2, 1, 1, true);
  EXPECT_TRUE(v.is_meta());
  EXPECT_EQ(v.sizes(), IntArrayRef({512, 64, 33, 57, 57}));
  EXPECT_EQ(i.dtype(), kInt64);
  EXPECT_THROW(v.data_ptr(), Error);
  EXPECT_EQ(max_pool3d(big, 2).sizes(), IntArrayRef({512, 64, 32, 56, 56}));
  EXPECT_EQ(avg_pool3d(big, {3, 2, 3}, {2, 2, 1}, {1, 0, 1}, true).sizes(), IntArrayRef({512, 64, 33, 56, 112}));
  EXPECT_TRUE(avg_pool3d(big, 2).is_meta());
  EXPECT_EQ(adaptive_avg_pool3d(big, {3, 5, 7}).sizes(), IntArrayRef({512, 64, 3, 5, 7}));
  auto [av, ai] = adaptive_max_pool3d(big, {2, 3, 4});
  EXPECT_EQ(av.sizes(), IntArrayRef({512, 64, 2, 3, 4}));
  EXPECT_EQ(ai.dtype(), kInt64);
  EXPECT_EQ(std::get<0>(adaptive_max_pool2d(empty({64, 112, 112}, meta), {7, 7})).sizes(), IntArrayRef({64, 7, 7}));
  EXPECT_EQ(std::get<1>(adaptive_max_pool1d(empty({8, 64, 100}, meta), {10})).sizes(), IntArrayRef({8, 64, 10}));
  EXPECT_EQ(F::lp_pool3d(big, F::LPPool3dFuncOptions(2.0, 2)).sizes(), IntArrayRef({512, 64, 32, 56, 56}));
}

TEST(PortNNPool3d, EmptyBatch) {
  Tensor x = zeros({0, 2, 4, 4, 4});
  EXPECT_EQ(max_pool3d(x, 2).sizes(), IntArrayRef({0, 2, 2, 2, 2}));
  EXPECT_EQ(avg_pool3d(x, 2).sizes(), IntArrayRef({0, 2, 2, 2, 2}));
  EXPECT_EQ(adaptive_avg_pool3d(x, {3, 1, 2}).sizes(), IntArrayRef({0, 2, 3, 1, 2}));
  EXPECT_EQ(std::get<0>(adaptive_max_pool3d(x, {3, 1, 2})).sizes(), IntArrayRef({0, 2, 3, 1, 2}));
}

TEST(PortNNPool3d, BadInputNamesOpShapesAndDtypes) {
  expect_error([] { max_pool3d(zeros({2, 3, 16}), 2); },
               {"max_pool3d_with_indices", "4-d (C, D, H, W) or 5-d", "[2, 3, 16]"});
  expect_error([] { max_pool3d(zeros({1, 2, 4, 4, 4}), {2, 2}); }, {"max_pool3d_with_indices", "kernel_size", "[2, 2]"});
  expect_error([] { max_pool3d(zeros({1, 2, 4, 4, 4}), 2, 2, 2); }, {"max_pool3d_with_indices", "half of kernel size"});
  expect_error([] { max_pool3d(zeros({1, 2, 4, 4, 4}), 5); }, {"max_pool3d_with_indices", "too small", "[1, 2, 4, 4, 4]"});
  expect_error([] { max_pool3d(zeros({1, 2, 4, 4, 4}, kInt64), 2); }, {"max_pool3d_with_indices", "floating point", "int64"});
  expect_error([] { avg_pool3d(zeros({1, 2, 4, 4, 4}), 2, {}, 0, false, true, 0); }, {"avg_pool3d", "divisor_override"});
  expect_error([] { avg_pool3d(zeros({2, 4, 4}), 2); }, {"avg_pool3d", "[2, 4, 4]"});
  expect_error([] { avg_pool3d(zeros({1, 2, 4, 4, 4}, kInt32), 2); }, {"avg_pool3d", "floating point", "int32"});
  expect_error([] { adaptive_avg_pool3d(zeros({1, 2, 4, 4, 4}), {2, 2}); }, {"adaptive_avg_pool3d", "3 elements", "[2, 2]"});
  expect_error([] { adaptive_max_pool3d(zeros({1, 2, 0, 4, 4}), {2, 2, 2}); }, {"adaptive_max_pool3d", "non-zero", "[1, 2, 0, 4, 4]"});
  expect_error([] { adaptive_max_pool3d(zeros({1, 2, 4, 4, 4}, kInt64), {2, 2, 2}); }, {"adaptive_max_pool3d", "int64"});
  expect_error([] { adaptive_max_pool2d(zeros({1, 2, 4, 4, 4}), {2, 2}); }, {"adaptive_max_pool2d", "[1, 2, 4, 4, 4]"});
  expect_error([] { adaptive_max_pool2d(zeros({2, 4, 4}), {2, 2, 2}); }, {"adaptive_max_pool2d", "2 elements"});
  expect_error([] { adaptive_max_pool1d(zeros({2, 4, 4, 4}), {2}); }, {"adaptive_max_pool1d", "[2, 4, 4, 4]"});
  expect_error([] { F::lp_pool1d(zeros({2, 4, 4, 4}), F::LPPool1dFuncOptions(2.0, 2)); }, {"avg_pool1d", "[2, 4, 4, 4]"});
}
