// Ported-program test for max unpooling and fractional max pooling (issue 14): code in
// libtorch's spelling (nn::MaxUnpool2d, F::max_unpool1d, tensor::fractional_max_pool2d, ...).
// Values, indices and gradients are compared with PyTorch's (tests/reference/torch_unpool.py
// generated tests/reference/torch_unpool_ref.h) on contiguous and strided inputs, and with
// float64 reference loops written here from the definitions; plus gradchecks, meta tensors and
// the errors bad input raises.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/grad_test_util.h"
#include "tests/reference/torch_unpool_ref.h"
#include "tests/port_util.h"
#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::det;
using tensor::testing::strided;
namespace nn = tensor::nn;
namespace F = tensor::nn::functional;
using autograd::variable_list;
using tensor::testing::check;
using tensor::testing::expect_error;
using tensor::testing::expect_near;
using tensor::testing::vals;

namespace {

// The script's hand_indices: element i of plane p goes to (i * 7 + p * 3) % out_plane.
Tensor hand_indices(const std::vector<int64_t>& shape, int64_t out_plane, size_t dims) {
  int64_t plane = 1, n = 1;
  for (size_t d = shape.size() - dims; d < shape.size(); ++d) plane *= shape[d];
  for (int64_t s : shape) n *= s;
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = ((k % plane) * 7 + (k / plane) * 3) % out_plane;
  return tensor::tensor(v).reshape(shape);
}

std::vector<int64_t> ints(const Tensor& t) {
  Tensor c = t.contiguous().reshape({-1});
  std::vector<int64_t> v(static_cast<size_t>(c.numel()));
  for (int64_t i = 0; i < c.numel(); ++i) v[static_cast<size_t>(i)] = c[i].item<int64_t>();
  return v;
}

using Fn = std::function<Tensor(const Tensor&)>;

// f(x) and the gradient of sum(f(x) * det(out.shape, 7)) against PyTorch's, on x as given and
// on a strided copy.
void expect_case(const std::string& what, const Fn& f, const Tensor& x, const std::vector<double>& out_ref,
                 const std::vector<double>& grad_ref, double tol = 1e-12) {
  for (bool s : {false, true}) {
    const std::string name = what + (s ? " (strided)" : "");
    Tensor in = (s ? strided(x) : x.clone()).requires_grad_(true);
    Tensor out = f(in);
    expect_near(vals(out), out_ref, tol, name + " output");
    Tensor loss = (out * det(out.sizes().vec(), 7).to(out.dtype())).sum();
    auto g = autograd::grad({loss}, {in});
    expect_near(vals(g[0]), grad_ref, tol, name + " grad");
  }
}

// ---- float64 reference loops, from the definitions ----

/// max_unpool: zeros of (planes, out_plane), x's values written at the indices.
std::vector<double> unpool_reference(const Tensor& x, const Tensor& idx, int64_t out_plane, int64_t dims) {
  int64_t in_plane = 1;
  for (int64_t d = x.dim() - dims; d < x.dim(); ++d) in_plane *= x.size(d);
  const std::vector<double> xv = vals(x);
  const std::vector<int64_t> iv = ints(idx);
  const int64_t planes = x.numel() / in_plane;
  std::vector<double> out(static_cast<size_t>(planes * out_plane), 0.0);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < in_plane; ++i)
      out[static_cast<size_t>(p * out_plane + iv[static_cast<size_t>(p * in_plane + i)])] =
          xv[static_cast<size_t>(p * in_plane + i)];
  return out;
}

/// The window starts of fractional max pooling in double arithmetic.
std::vector<int64_t> starts_reference(double u, int64_t in, int64_t out, int64_t k) {
  std::vector<int64_t> s(static_cast<size_t>(out));
  if (out > 1) {
    const double alpha = static_cast<double>(in - k) / static_cast<double>(out - 1);
    for (int64_t i = 0; i < out - 1; ++i)
      s[static_cast<size_t>(i)] = static_cast<int64_t>((static_cast<double>(i) + u) * alpha) -
                                  static_cast<int64_t>(u * alpha);
  }
  s[static_cast<size_t>(out - 1)] = in - k;
  return s;
}

/// fractional_max_pool2d of a float64 (N, C, H, W) x: (values, indices) flat.
std::pair<std::vector<double>, std::vector<int64_t>> frac2d_reference(const Tensor& x, const Tensor& samples,
                                                                      int64_t kh, int64_t kw, int64_t oh, int64_t ow) {
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const std::vector<double> xv = vals(x), sv = vals(samples);
  std::vector<double> out;
  std::vector<int64_t> idx;
  for (int64_t p = 0; p < N * C; ++p) {
    // samples (N, C, 2): [0] drives the width, [1] the height (libtorch's order).
    const auto sw = starts_reference(sv[static_cast<size_t>(p * 2)], W, ow, kw);
    const auto sh = starts_reference(sv[static_cast<size_t>(p * 2 + 1)], H, oh, kh);
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xo = 0; xo < ow; ++xo) {
        double best = -INFINITY;
        int64_t bi = -1;
        for (int64_t a = sh[static_cast<size_t>(y)]; a < sh[static_cast<size_t>(y)] + kh; ++a)
          for (int64_t b = sw[static_cast<size_t>(xo)]; b < sw[static_cast<size_t>(xo)] + kw; ++b) {
            const double v = xv[static_cast<size_t>(p * H * W + a * W + b)];
            if (bi < 0 || v > best) best = v, bi = a * W + b;
          }
        out.push_back(best);
        idx.push_back(bi);
      }
  }
  return {out, idx};
}

}  // namespace

// ---- max_unpool ----

TEST(PortNNUnpool, MaxUnpool2dRoundTripsMaxPool2dWithIndices) {
  using namespace torch_unpool_ref;
  auto [o, i] = tensor::max_pool2d_with_indices(det({2, 3, 6, 5}, 1), {2, 2});
  EXPECT_EQ(ints(i), pool2d_indices);
  expect_case("F::max_unpool2d output_size {6, 5}",
              [&](const Tensor& t) { return F::max_unpool2d(t, i, F::MaxUnpool2dFuncOptions(2).output_size(
                                                                     std::vector<int64_t>{6, 5})); },
              o, unpool2d_explicit_out, unpool2d_explicit_grad);
  expect_case("F::max_unpool2d output_size (N, C, 6, 5)",
              [&](const Tensor& t) { return F::max_unpool2d(t, i, F::MaxUnpool2dFuncOptions(2).output_size(
                                                                     std::vector<int64_t>{2, 3, 6, 5})); },
              o, unpool2d_full_size_out, unpool2d_full_size_grad);
  expect_case("tensor::max_unpool2d", [&](const Tensor& t) { return tensor::max_unpool2d(t, i, {6, 5}); }, o,
              unpool2d_explicit_out, unpool2d_explicit_grad);
  // The round trip keeps each window's maximum where it was and zeroes the rest.
  EXPECT_EQ(unpool_reference(o, i, 30, 2), unpool2d_explicit_out);

  auto [o2, i2] = tensor::max_pool2d_with_indices(det({2, 3, 6, 4}, 2), {2, 2});
  EXPECT_EQ(ints(i2), pool2d_default_indices);
  nn::MaxUnpool2d unpool(2);
  expect_case("nn::MaxUnpool2d(2) default size", [&](const Tensor& t) { return unpool(t, i2); }, o2,
              unpool2d_default_out, unpool2d_default_grad);
  EXPECT_EQ(unpool->forward(o2, i2).sizes(), IntArrayRef({2, 3, 6, 4}));

  auto [o3, i3] = tensor::max_pool2d_with_indices(det({1, 2, 7, 8}, 3), {2, 2}, {3, 3});
  EXPECT_EQ(ints(i3), pool2d_stride3_indices);
  nn::MaxUnpool2d unpool3(nn::MaxUnpool2dOptions(2).stride(3));
  expect_case("nn::MaxUnpool2d stride 3", [&](const Tensor& t) { return unpool3(t, i3, std::vector<int64_t>{7, 8}); },
              o3, unpool2d_stride3_out, unpool2d_stride3_grad);

  Tensor hi = hand_indices({3, 3, 4}, 30, 2);
  nn::MaxUnpool2d unpool_p(nn::MaxUnpool2dOptions(3).stride(2).padding(1));
  expect_case("nn::MaxUnpool2d unbatched", [&](const Tensor& t) { return unpool_p(t, hi, std::vector<int64_t>{5, 6}); },
              det({3, 3, 4}, 4), unpool2d_unbatched_out, unpool2d_unbatched_grad);
}

TEST(PortNNUnpool, MaxUnpool1dAnd3dMatchPyTorch) {
  using namespace torch_unpool_ref;
  // max_pool1d's indices are max_pool2d's over a (N, C, 1, L) view.
  auto [o, i4] = tensor::max_pool2d_with_indices(det({2, 3, 8}, 5).unsqueeze(2), {1, 2});
  Tensor i = i4.squeeze(2);
  EXPECT_EQ(ints(i), pool1d_indices);
  nn::MaxUnpool1d unpool1(2);
  expect_case("nn::MaxUnpool1d", [&](const Tensor& t) { return unpool1(t, i); }, o.squeeze(2), unpool1d_out,
              unpool1d_grad);
  Tensor hi1 = hand_indices({3, 4}, 9, 1);
  expect_case("F::max_unpool1d unbatched",
              [&](const Tensor& t) { return F::max_unpool1d(t, hi1, F::MaxUnpool1dFuncOptions(2).output_size(
                                                                       std::vector<int64_t>{9})); },
              det({3, 4}, 6), unpool1d_unbatched_out, unpool1d_unbatched_grad);

  Tensor hi3 = hand_indices({1, 2, 2, 2, 3}, 60, 3);
  nn::MaxUnpool3d unpool3(2);
  expect_case("nn::MaxUnpool3d", [&](const Tensor& t) { return unpool3(t, hi3, std::vector<int64_t>{3, 4, 5}); },
              det({1, 2, 2, 2, 3}, 8), unpool3d_out, unpool3d_grad);
  EXPECT_EQ(unpool_reference(det({1, 2, 2, 2, 3}, 8), hi3, 60, 3), unpool3d_out);
  expect_case("tensor::max_unpool3d",
              [&](const Tensor& t) { return tensor::max_unpool3d(t, hi3, {3, 4, 5}, {2, 2, 2}, {0, 0, 0}); },
              det({1, 2, 2, 2, 3}, 8), unpool3d_out, unpool3d_grad);
  Tensor hu = hand_indices({2, 2, 2, 2}, 64, 3);
  expect_case("F::max_unpool3d unbatched",
              [&](const Tensor& t) { return F::max_unpool3d(t, hu, F::MaxUnpool3dFuncOptions(2)); },
              det({2, 2, 2, 2}, 9), unpool3d_unbatched_out, unpool3d_unbatched_grad);
}

TEST(PortNNUnpool, MaxUnpoolMatchesReferenceLoopInEveryDtype) {
  Tensor x = det({2, 3, 4, 5}, 20);
  Tensor idx = hand_indices({2, 3, 4, 5}, 7 * 9, 2);
  const std::vector<double> want = unpool_reference(x, idx, 63, 2);
  for (ScalarType dt : {kFloat64, kFloat32, kBFloat16, kFloat16}) {
    Tensor out = tensor::max_unpool2d(x.to(dt), idx, {7, 9});
    EXPECT_EQ(out.scalar_type(), dt);
    expect_near(vals(out.to(kFloat64)), vals(tensor::tensor(want, kFloat64).to(dt).to(kFloat64)), 0.0,
                std::string("max_unpool2d ") + std::string(to_string(dt)));
  }
  // Non-contiguous indices too (a transposed view of transposed indices).
  Tensor it = idx.transpose(2, 3).contiguous().transpose(2, 3);
  EXPECT_FALSE(it.is_contiguous());
  expect_near(vals(tensor::max_unpool2d(x, it, {7, 9})), want, 0.0, "max_unpool2d strided indices");
}

TEST(PortNNUnpool, MaxUnpoolRecordsPyTorchsNodesAndGradchecks) {
  Tensor x = det({1, 2, 3, 3}, 21).requires_grad_(true);
  Tensor idx = hand_indices({1, 2, 3, 3}, 25, 2);
  EXPECT_EQ(tensor::max_unpool2d(x, idx, {5, 5}).grad_fn()->name(), "MaxUnpool2DBackward0");
  Tensor x3 = det({1, 2, 1, 2, 2}, 22).requires_grad_(true);
  Tensor idx3 = hand_indices({1, 2, 1, 2, 2}, 12, 3);
  EXPECT_EQ(tensor::max_unpool3d(x3, idx3, {1, 3, 4}, {1, 1, 1}, {0, 0, 0}).grad_fn()->name(), "MaxUnpool3DBackward0");
  auto f2 = [&](const variable_list& in) { return tensor::max_unpool2d(in[0], idx, {5, 5}); };
  check("max_unpool2d gradcheck", [&] { return autograd::gradcheck(f2, {x}); });
  check("max_unpool2d gradgradcheck", [&] { return autograd::gradgradcheck(f2, {x}); });
  auto f3 = [&](const variable_list& in) { return tensor::max_unpool3d(in[0], idx3, {1, 3, 4}, {1, 1, 1}, {0, 0, 0}); };
  check("max_unpool3d gradcheck", [&] { return autograd::gradcheck(f3, {x3}); });
  check("max_unpool3d gradgradcheck", [&] { return autograd::gradgradcheck(f3, {x3}); });
}

TEST(PortNNUnpool, MaxUnpoolBadInputRaisesErrorsNamingTheOp) {
  Tensor x = det({1, 1, 2, 2}, 1);
  Tensor idx = hand_indices({1, 1, 2, 2}, 16, 2);
  expect_error([&] { tensor::max_unpool2d(x, idx + 100, {4, 4}); },
               {"max_unpool2d", "invalid max index 100", "4x4"});
  expect_error([&] { tensor::max_unpool2d(x, idx - 10, {4, 4}); }, {"max_unpool2d", "invalid max index"});
  expect_error([&] { tensor::max_unpool2d(x, idx, {2, 2}); }, {"max_unpool2d", "invalid max index", "2x2"});
  expect_error([&] { tensor::max_unpool2d(x, idx.to(kInt32), {4, 4}); }, {"max_unpool2d", "int64", "int32"});
  expect_error([&] { tensor::max_unpool2d(x, idx.slice(3, 0, 1), {4, 4}); }, {"max_unpool2d", "[1, 1, 2, 2]", "[1, 1, 2, 1]"});
  expect_error([&] { tensor::max_unpool2d(x.reshape({4}), idx.reshape({4}), {4, 4}); }, {"max_unpool2d", "3-d or 4-d"});
  expect_error([&] { tensor::max_unpool2d(x, idx, {4, 4, 4}); }, {"max_unpool2d", "output_size"});
  expect_error([&] { tensor::max_unpool2d(x.to(kInt64), idx, {4, 4}); }, {"max_unpool2d", "floating point"});
  expect_error([&] { tensor::max_unpool3d(x.unsqueeze(2), idx.unsqueeze(2), {1, 4, 4}, {0, 2, 2}, {0, 0, 0}); },
               {"max_unpool3d", "stride", "[0, 2, 2]"});
  expect_error([&] { tensor::max_unpool3d(x.unsqueeze(2), idx.unsqueeze(2) + 50, {1, 4, 4}, {1, 2, 2}, {0, 0, 0}); },
               {"max_unpool3d", "invalid max index 50", "1x4x4"});
  expect_error([&] { F::max_unpool2d(x, idx, F::MaxUnpool2dFuncOptions(2).output_size(std::vector<int64_t>{9, 9})); },
               {"max_unpool2d", "invalid output_size", "between 2 and 6"});
  expect_error([&] { F::max_unpool2d(x, idx, F::MaxUnpool2dFuncOptions(2).output_size(std::vector<int64_t>{4})); },
               {"max_unpool2d", "2 or 4 elements"});
}

TEST(PortNNUnpool, MetaTensorsGiveShapesOnly) {
  const TensorOptions meta = TensorOptions().dtype(kFloat32).device(kMeta);
  Tensor x = empty({2, 3, 4, 5}, meta);
  Tensor idx = empty({2, 3, 4, 5}, meta.dtype(kInt64));
  Tensor out = tensor::max_unpool2d(x, idx, {8, 10});
  EXPECT_TRUE(out.is_meta());
  EXPECT_EQ(out.sizes(), IntArrayRef({2, 3, 8, 10}));
  Tensor out3 = tensor::max_unpool3d(x.unsqueeze(2), idx.unsqueeze(2), {2, 8, 10}, {2, 2, 2}, {0, 0, 0});
  EXPECT_EQ(out3.sizes(), IntArrayRef({2, 3, 2, 8, 10}));
  auto [fo, fi] = tensor::fractional_max_pool2d(x, {2, 2}, {3, 3}, empty({2, 3, 2}, meta));
  EXPECT_TRUE(fo.is_meta());
  EXPECT_EQ(fo.sizes(), IntArrayRef({2, 3, 3, 3}));
  EXPECT_EQ(fi.scalar_type(), kInt64);
  auto [go, gi] = tensor::fractional_max_pool3d(empty({3, 5, 6, 7}, meta), {2, 2, 2}, {2, 3, 4}, empty({1, 3, 3}, meta));
  EXPECT_EQ(go.sizes(), IntArrayRef({3, 2, 3, 4}));
  EXPECT_EQ(gi.sizes(), IntArrayRef({3, 2, 3, 4}));
}

TEST(PortNNUnpool, ModulesPrintAsLibtorch) {
  std::ostringstream s;
  s << *nn::MaxUnpool2d(nn::MaxUnpool2dOptions({2, 3}).stride(1).padding(1));
  EXPECT_EQ(s.str(), "tensor::nn::MaxUnpool2d(kernel_size=[2, 3], stride=[1, 1], padding=[1, 1])");
  std::ostringstream f;
  f << *nn::FractionalMaxPool3d(nn::FractionalMaxPool3dOptions(2).output_size(3));
  EXPECT_EQ(f.str(), "tensor::nn::FractionalMaxPool3d()");
}

// ---- fractional max pooling ----

TEST(PortNNUnpool, FractionalMaxPool2dMatchesPyTorchWithTheSameSamples) {
  using namespace torch_unpool_ref;
  Tensor s = det({2, 3, 2}, 10, 0.0, 1.0);
  Tensor x = det({2, 3, 9, 8}, 11);
  auto [o, i] = tensor::fractional_max_pool2d(x, {2, 3}, {4, 3}, s);
  EXPECT_EQ(ints(i), frac2d_indices);
  auto [ro, ri] = frac2d_reference(x, s, 2, 3, 4, 3);
  EXPECT_EQ(ints(i), ri);
  expect_near(vals(o), ro, 0.0, "fractional_max_pool2d vs reference loop");
  // The indices unpool back: max_unpool2d puts each window's maximum where it was.
  expect_near(vals(tensor::max_unpool2d(o, i, {9, 8}).flatten(2).gather(2, i.flatten(2))), vals(o), 0.0,
              "unpooled fractional maxima");

  expect_case("F::fractional_max_pool2d",
              [&](const Tensor& t) {
                return F::fractional_max_pool2d(
                    t, F::FractionalMaxPool2dFuncOptions({2, 3}).output_size({4, 3})._random_samples(s));
              },
              x, frac2d_out, frac2d_grad);
  nn::FractionalMaxPool2d pool(nn::FractionalMaxPool2dOptions(2).output_ratio({0.5, 0.6})._random_samples(s));
  expect_case("nn::FractionalMaxPool2d output_ratio", [&](const Tensor& t) { return pool(t); }, x, frac2d_ratio_out,
              frac2d_ratio_grad);
  EXPECT_TRUE(pool->named_buffers().contains("_random_samples"));
  Tensor s1 = det({1, 3, 2}, 12, 0.0, 1.0);
  nn::FractionalMaxPool2d pool1(nn::FractionalMaxPool2dOptions(3).output_size(5)._random_samples(s1));
  expect_case("nn::FractionalMaxPool2d unbatched", [&](const Tensor& t) { return std::get<0>(pool1->forward_with_indices(t)); },
              det({3, 8, 7}, 13), frac2d_unbatched_out, frac2d_unbatched_grad);
}

TEST(PortNNUnpool, FractionalMaxPool2dFloat32WindowsAreLibtorchs) {
  // The windows' starts follow float32 arithmetic for float32 inputs (40 planes of samples).
  Tensor s = det({1, 40, 2}, 18, 0.0, 1.0, kFloat32);
  Tensor x = det({1, 40, 7, 97}, 19, -1.0, 1.0, kFloat32);
  auto [o, i] = tensor::fractional_max_pool2d(x, {2, 3}, {3, 33}, s);
  EXPECT_EQ(ints(i), torch_unpool_ref::frac2d_f32_indices);
  EXPECT_EQ(o.scalar_type(), kFloat32);
  expect_near(vals(o), vals(x.flatten(2).gather(2, i.flatten(2))), 0.0, "float32 values at the indices");
  // bfloat16 and float16 round each step of the window arithmetic to the dtype, as libtorch.
  for (ScalarType dt : {kBFloat16, kFloat16}) {
    auto [oh, ih] = tensor::fractional_max_pool2d(x.to(dt), {2, 3}, {3, 33}, s.to(dt));
    EXPECT_EQ(oh.scalar_type(), dt);
    EXPECT_EQ(ints(ih), dt == kBFloat16 ? torch_unpool_ref::frac2d_bf16_indices : torch_unpool_ref::frac2d_f16_indices)
        << to_string(dt);
    expect_near(vals(oh), vals(x.to(dt).flatten(2).gather(2, ih.flatten(2))), 0.0, "half values at the indices");
  }
}

TEST(PortNNUnpool, FractionalMaxPool3dMatchesPyTorch) {
  using namespace torch_unpool_ref;
  Tensor s = det({1, 2, 3}, 14, 0.0, 1.0);
  Tensor x = det({1, 2, 5, 6, 7}, 15);
  auto [o, i] = tensor::fractional_max_pool3d(x, {2, 2, 2}, {3, 4, 5}, s);
  EXPECT_EQ(ints(i), frac3d_indices);
  expect_case("F::fractional_max_pool3d",
              [&](const Tensor& t) {
                return std::get<0>(F::fractional_max_pool3d_with_indices(
                    t, F::FractionalMaxPool3dFuncOptions(2).output_size({3, 4, 5})._random_samples(s)));
              },
              x, frac3d_out, frac3d_grad);
  Tensor s1 = det({1, 2, 3}, 16, 0.0, 1.0);
  nn::FractionalMaxPool3d pool(nn::FractionalMaxPool3dOptions({2, 1, 2}).output_ratio(0.5)._random_samples(s1));
  expect_case("nn::FractionalMaxPool3d unbatched", [&](const Tensor& t) { return pool(t); }, det({2, 6, 5, 8}, 17),
              frac3d_unbatched_out, frac3d_unbatched_grad);
  // The round trip through max_unpool3d.
  expect_near(vals(tensor::max_unpool3d(o, i, {5, 6, 7}, {1, 1, 1}, {0, 0, 0}).flatten(2).gather(2, i.flatten(2))),
              vals(o), 0.0, "unpooled fractional 3-d maxima");
}

TEST(PortNNUnpool, FractionalMaxPoolDrawsSamplesFromTheGenerator) {
  Tensor x = det({2, 3, 10, 9}, 23);
  nn::FractionalMaxPool2d pool(nn::FractionalMaxPool2dOptions(2).output_size({4, 5}));
  EXPECT_FALSE(pool->_random_samples.defined());
  tensor::manual_seed(7);
  auto [o1, i1] = pool->forward_with_indices(x);
  tensor::manual_seed(7);
  // libtorch's draw: rand({N, C, 2}) in the input's dtype, then the op with those samples.
  Tensor s = rand({2, 3, 2}, kFloat64);
  auto [o2, i2] = tensor::fractional_max_pool2d(x, {2, 2}, {4, 5}, s);
  EXPECT_EQ(ints(i1), ints(i2));
  expect_near(vals(o1), vals(o2), 0.0, "generator samples");
  EXPECT_EQ(o1.sizes(), IntArrayRef({2, 3, 4, 5}));
  Tensor o3 = F::fractional_max_pool3d(det({4, 5, 6, 7}, 24), F::FractionalMaxPool3dFuncOptions(2).output_ratio(0.5));
  EXPECT_EQ(o3.sizes(), IntArrayRef({4, 2, 3, 3}));
}

TEST(PortNNUnpool, FractionalMaxPoolRecordsPyTorchsNodesAndGradchecks) {
  Tensor s = det({1, 2, 2}, 25, 0.0, 1.0);
  Tensor x = det({1, 2, 5, 6}, 26).requires_grad_(true);
  Tensor out = std::get<0>(tensor::fractional_max_pool2d(x, {2, 2}, {3, 4}, s));
  EXPECT_EQ(out.grad_fn()->name(), "FractionalMaxPool2DBackward0");
  // Overlapping windows (kernel 3 over 5 rows into 3): a shared maximum sums its gradients.
  auto f2 = [&](const variable_list& in) { return std::get<0>(tensor::fractional_max_pool2d(in[0], {3, 2}, {3, 4}, s)); };
  check("fractional_max_pool2d gradcheck", [&] { return autograd::gradcheck(f2, {x}); });
  check("fractional_max_pool2d gradgradcheck", [&] { return autograd::gradgradcheck(f2, {x}); });
  Tensor s3 = det({1, 2, 3}, 27, 0.0, 1.0);
  Tensor x3 = det({1, 2, 4, 3, 5}, 28).requires_grad_(true);
  Tensor out3 = std::get<0>(tensor::fractional_max_pool3d(x3, {2, 2, 2}, {2, 2, 3}, s3));
  EXPECT_EQ(out3.grad_fn()->name(), "FractionalMaxPool3DBackward0");
  auto f3 = [&](const variable_list& in) { return std::get<0>(tensor::fractional_max_pool3d(in[0], {2, 2, 2}, {2, 2, 3}, s3)); };
  check("fractional_max_pool3d gradcheck", [&] { return autograd::gradcheck(f3, {x3}); });
  check("fractional_max_pool3d gradgradcheck", [&] { return autograd::gradgradcheck(f3, {x3}); });
  // The public backward: the gradient summed at the indices.
  auto [o, idx] = tensor::fractional_max_pool2d(x.detach(), {3, 2}, {3, 4}, s);
  Tensor g = det({1, 2, 3, 4}, 29);
  Tensor gi = tensor::fractional_max_pool2d_backward(g, x.detach(), {3, 2}, {3, 4}, idx);
  Tensor want = zeros({1, 2, 30}, kFloat64).scatter_add(2, idx.flatten(2), g.flatten(2)).view({1, 2, 5, 6});
  expect_near(vals(gi), vals(want), 1e-15, "fractional_max_pool2d_backward");
}

TEST(PortNNUnpool, FractionalMaxPoolBadInputRaisesErrorsNamingTheOp) {
  Tensor x = det({2, 3, 9, 9}, 30);
  Tensor s = det({2, 3, 2}, 31, 0.0, 1.0);
  expect_error([&] { tensor::fractional_max_pool2d(x, {2, 2}, {9, 3}, s); },
               {"fractional_max_pool2d", "pool height 2 too large relative to input height 9"});
  expect_error([&] { tensor::fractional_max_pool2d(x, {2, 2}, {4, 3}, det({2, 3, 3}, 1)); },
               {"fractional_max_pool2d", "random_samples", "[2, 3, 3]"});
  expect_error([&] { tensor::fractional_max_pool2d(x, {2, 2}, {4, 3}, det({1, 3, 2}, 1)); },
               {"fractional_max_pool2d", "random_samples", "N >= 2"});
  expect_error([&] { tensor::fractional_max_pool2d(x, {2, 2}, {4, 3}, s.to(kFloat32)); },
               {"fractional_max_pool2d", "same dtype", "float32", "float64"});
  expect_error([&] { tensor::fractional_max_pool2d(x.flatten(1), {2, 2}, {4, 3}, s); },
               {"fractional_max_pool2d", "3-d or 4-d", "[2, 243]"});
  expect_error([&] { tensor::fractional_max_pool2d(x, {2, 2, 2}, {4, 3}, s); },
               {"fractional_max_pool2d", "kernel_size"});
  expect_error([&] { tensor::fractional_max_pool3d(x, {2, 2, 2}, {3, 2, 2}, det({1, 2, 3}, 1)); },
               {"fractional_max_pool3d", "pool time 2 too large"});
  expect_error([&] { nn::FractionalMaxPool2d(nn::FractionalMaxPool2dOptions(2)); },
               {"FractionalMaxPool2d", "either an output size, or a pooling ratio"});
  expect_error([&] { nn::FractionalMaxPool2d(nn::FractionalMaxPool2dOptions(2).output_size(3).output_ratio(0.5)); },
               {"only one of output_size and output_ratio"});
  expect_error([&] { nn::FractionalMaxPool3d(nn::FractionalMaxPool3dOptions(2).output_ratio(1.5)); },
               {"FractionalMaxPool3d", "output_ratio must be between 0 and 1"});
  Tensor idx = std::get<1>(tensor::fractional_max_pool2d(x, {2, 2}, {4, 3}, s));
  expect_error([&] { tensor::fractional_max_pool2d_backward(det({2, 3, 4, 3}, 1), x, {2, 2}, {4, 3}, idx + 81); },
               {"fractional_max_pool2d_backward", "invalid index"});
  expect_error([&] { tensor::fractional_max_pool2d_backward(det({2, 3, 4, 4}, 1), x, {2, 2}, {4, 3}, idx); },
               {"fractional_max_pool2d_backward", "[2, 3, 4, 3]"});
}

TEST(PortNNUnpool, FractionalMaxPoolPicksAsLibtorchOnNaNInfinityAndTies) {
  // NaN wins its windows, a window of -inf keeps its first position, ties pick the first.
  Tensor x = det({1, 1, 6, 7}, 20);
  x.select(0, 0).select(0, 0).select(0, 1).select(0, 2).fill_(NAN);
  x.narrow(2, 4, 2).fill_(-INFINITY);
  x.select(0, 0).select(0, 0).select(0, 0).narrow(0, 5, 2).fill_(3.0);
  auto [o, i] = tensor::fractional_max_pool2d(x, {2, 2}, {4, 5}, det({1, 1, 2}, 21, 0.0, 1.0));
  EXPECT_EQ(ints(i), torch_unpool_ref::frac2d_special_indices);
  const std::vector<double> got = vals(o), want = torch_unpool_ref::frac2d_special_out;
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    if (std::isnan(want[k])) EXPECT_TRUE(std::isnan(got[k])) << k;
    else EXPECT_EQ(got[k], want[k]) << k;
  }
}

TEST(PortNNUnpool, EmptyBatchGivesEmptyResults) {
  Tensor x = empty({0, 2, 3, 3}, kFloat64);
  Tensor idx = empty({0, 2, 3, 3}, kInt64);
  EXPECT_EQ(tensor::max_unpool2d(x, idx, {6, 6}).sizes(), IntArrayRef({0, 2, 6, 6}));
  auto [o, i] = tensor::fractional_max_pool2d(x, {2, 2}, {2, 2}, empty({0, 2, 2}, kFloat64));
  EXPECT_EQ(o.sizes(), IntArrayRef({0, 2, 2, 2}));
  EXPECT_EQ(i.sizes(), IntArrayRef({0, 2, 2, 2}));
  expect_error([&] { tensor::max_unpool2d(empty({2, 0, 3, 3}), empty({2, 0, 3, 3}, kInt64), {6, 6}); },
               {"max_unpool2d", "non-zero size", "[2, 0, 3, 3]"});
}
