// Ported-program test for issue 14's convolution, fold and embedding-bag modules, in libtorch's
// spelling (torch:: renamed to tensor::): nn::Conv3d, nn::ConvTranspose1d/3d (output_size),
// padding kSame and padding_mode, nn::Fold / nn::Unfold with tensor::im2col / tensor::col2im,
// nn::EmbeddingBag and their F:: forms. Values and gradients (input and parameters) are compared
// with PyTorch's (tests/reference/torch_conv_fold.py generated tests/reference/torch_conv_fold_ref.h)
// on contiguous and strided inputs; im2col/col2im also against float64 reference loops here,
// with gradcheck, meta tensors and bad inputs.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/grad_test_util.h"
#include "tests/reference/torch_conv_fold_ref.h"
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
using tensor::testing::random_tensor;
using tensor::testing::vals;
using namespace torch_conv_fold_ref;

namespace {

// The script's fill_params: parameter k (named_parameters() order) = det(shape, 100 + k, -0.5, 0.5).
void fill_params(nn::Module& m) {
  m.to(kFloat64);
  NoGradGuard g;
  int k = 0;
  for (auto& item : m.named_parameters()) {
    Tensor p = item.value();
    p.copy_(det(p.sizes().vec(), 100 + k++, -0.5, 0.5));
  }
}

std::vector<Tensor> params_of(nn::Module& m) {
  std::vector<Tensor> ps;
  for (auto& item : m.named_parameters()) ps.push_back(item.value());
  return ps;
}

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// Runs f(inputs) with the float inputs requiring grad; compares out, the gradients of
// sum(out * det(out.shape, 7)) for those inputs (input_grads[i] for input i, empty to skip)
// and for params (param_grads, in order) with PyTorch's.
void expect_case(const std::string& what, const Fn& f, const std::vector<Tensor>& inputs,
                 const std::vector<Tensor>& params, const std::vector<double>& out_ref,
                 const std::vector<const std::vector<double>*>& input_grads,
                 const std::vector<const std::vector<double>*>& param_grads, double tol = 1e-10) {
  std::vector<Tensor> ins, wrt;
  std::vector<const std::vector<double>*> refs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const bool g = i < input_grads.size() && input_grads[i] != nullptr;
    ins.push_back(g ? inputs[i].detach().requires_grad_(true) : inputs[i]);
    if (g) {
      wrt.push_back(ins.back());
      refs.push_back(input_grads[i]);
    }
  }
  for (size_t k = 0; k < param_grads.size(); ++k) {
    wrt.push_back(params[k]);
    refs.push_back(param_grads[k]);
  }
  for (const Tensor& p : params) p.mutable_grad() = Tensor();
  Tensor out = f(ins);
  expect_near(vals(out), out_ref, tol, what + " output");
  if (wrt.empty()) return;
  Tensor loss = (out * det(out.sizes().vec(), 7)).sum();
  auto g = autograd::grad({loss}, wrt, {}, false, false, /*allow_unused=*/true);
  for (size_t k = 0; k < wrt.size(); ++k) {
    std::vector<double> got = g[k].defined() ? vals(g[k]) : std::vector<double>(refs[k]->size(), 0.0);
    expect_near(got, *refs[k], tol, what + " grad " + std::to_string(k));
  }
}

// expect_case on the inputs as given and on strided copies of the float ones.
void expect_case_layouts(const std::string& what, const Fn& f, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& params, const std::vector<double>& out_ref,
                         const std::vector<const std::vector<double>*>& input_grads,
                         const std::vector<const std::vector<double>*>& param_grads, double tol = 1e-10) {
  expect_case(what, f, inputs, params, out_ref, input_grads, param_grads, tol);
  std::vector<Tensor> s;
  for (const Tensor& t : inputs) s.push_back(t.defined() && t.is_floating_point() ? strided(t) : t);
  expect_case(what + " (strided)", f, s, params, out_ref, input_grads, param_grads, tol);
}

template <class M>
Fn module_fn(M& m) {
  return [&m](const std::vector<Tensor>& in) { return m->forward(in[0]); };
}

}  // namespace

// ---- Conv3d, ConvTranspose1d/3d, padding kSame and padding_mode ----

TEST(PortNNConvFold, Conv3dMatchesPyTorch) {
  nn::Conv3d conv(nn::Conv3dOptions(4, 6, {2, 3, 2}).stride({1, 2, 1}).padding({1, 0, 1}).dilation({1, 1, 2}).groups(2));
  fill_params(*conv);
  auto ps = params_of(*conv);
  expect_case_layouts("Conv3d", module_fn(conv), {det({2, 4, 5, 6, 5}, 1)}, ps, conv3d_out, {&conv3d_grad0},
                      {&conv3d_pgrad0, &conv3d_pgrad1});
  expect_case_layouts("Conv3d unbatched", module_fn(conv), {det({4, 5, 6, 5}, 2)}, ps, conv3d_unbatched_out,
                      {&conv3d_unbatched_grad0}, {&conv3d_unbatched_pgrad0, &conv3d_unbatched_pgrad1});
  // F::conv3d with the module's arguments gives the same values.
  Tensor x = det({2, 4, 5, 6, 5}, 1);
  Tensor y = F::conv3d(x, conv->weight,
                       F::Conv3dFuncOptions().bias(conv->bias).stride({1, 2, 1}).padding({1, 0, 1}).dilation({1, 1, 2}).groups(2));
  expect_near(vals(y), conv3d_out, 1e-10, "F::conv3d");
  std::ostringstream s;
  s << *conv;
  EXPECT_EQ(s.str(), "tensor::nn::Conv3d(4, 6, kernel_size=(2, 3, 2), stride=(1, 2, 1), padding=(1, 0, 1), "
                     "dilation=(1, 1, 2), groups=2)");
}

TEST(PortNNConvFold, PaddingSameAndPaddingModesMatchPyTorch) {
  nn::Conv3d same(nn::Conv3dOptions(2, 3, {3, 2, 3}).padding(kSame).padding_mode(kReflect).bias(false));
  fill_params(*same);
  expect_case_layouts("Conv3d same reflect", module_fn(same), {det({1, 2, 4, 5, 4}, 3)}, params_of(*same),
                      conv3d_same_reflect_out, {&conv3d_same_reflect_grad0}, {&conv3d_same_reflect_pgrad0});
  nn::Conv2d circ(nn::Conv2dOptions(2, 3, 3).padding({1, 2}).padding_mode(kCircular));
  fill_params(*circ);
  expect_case_layouts("Conv2d circular", module_fn(circ), {det({2, 2, 5, 6}, 4)}, params_of(*circ),
                      conv2d_circular_out, {&conv2d_circular_grad0}, {&conv2d_circular_pgrad0, &conv2d_circular_pgrad1});
  nn::Conv1d rep(nn::Conv1dOptions(2, 2, 3).padding(2).dilation(2).padding_mode(kReplicate));
  fill_params(*rep);
  expect_case_layouts("Conv1d replicate", module_fn(rep), {det({2, 2, 7}, 5)}, params_of(*rep), conv1d_replicate_out,
                      {&conv1d_replicate_grad0}, {&conv1d_replicate_pgrad0, &conv1d_replicate_pgrad1});
  // Unbatched inputs pad the same way (F::pad of the spatial dims only).
  Tensor xb = det({2, 2, 7}, 5);
  expect_near(vals(rep->forward(xb.select(0, 1))), vals(rep->forward(xb).select(0, 1)), 1e-12,
              "Conv1d replicate unbatched");
  Tensor xc = det({2, 2, 5, 6}, 4);
  expect_near(vals(circ->forward(xc.select(0, 0))), vals(circ->forward(xc).select(0, 0)), 1e-12,
              "Conv2d circular unbatched");
  std::ostringstream s;
  s << *same;
  EXPECT_EQ(s.str(), "tensor::nn::Conv3d(2, 3, kernel_size=(3, 2, 3), stride=(1, 1, 1), padding='same', bias=false, "
                     "padding_mode=reflect)");
  // F::conv2d takes kSame and kValid too.
  Tensor x = det({1, 2, 5, 6}, 4), w = det({3, 2, 3, 3}, 9);
  EXPECT_EQ(F::conv2d(x, w, F::Conv2dFuncOptions().padding(kSame)).sizes(), IntArrayRef({1, 3, 5, 6}));
  EXPECT_EQ(F::conv2d(x, w, F::Conv2dFuncOptions().padding(kValid)).sizes(), IntArrayRef({1, 3, 3, 4}));
  expect_near(vals(F::conv2d(x, w, F::Conv2dFuncOptions().padding(kSame))),
              vals(tensor::conv2d(x, w, std::nullopt, 1, "same")), 1e-12, "F::conv2d kSame");
}

TEST(PortNNConvFold, ConvTranspose1dMatchesPyTorch) {
  nn::ConvTranspose1d ct(nn::ConvTranspose1dOptions(4, 6, 3).stride(2).padding(1).output_padding(1).groups(2).dilation(2));
  fill_params(*ct);
  auto ps = params_of(*ct);
  expect_case_layouts("ConvTranspose1d", module_fn(ct), {det({2, 4, 7}, 6)}, ps, convt1d_out, {&convt1d_grad0},
                      {&convt1d_pgrad0, &convt1d_pgrad1});
  expect_case_layouts("ConvTranspose1d unbatched", module_fn(ct), {det({4, 7}, 8)}, ps, convt1d_unbatched_out,
                      {&convt1d_unbatched_grad0}, {&convt1d_unbatched_pgrad0, &convt1d_unbatched_pgrad1});
  Tensor y = F::conv_transpose1d(det({2, 4, 7}, 6), ct->weight,
                                 F::ConvTranspose1dFuncOptions().bias(ct->bias).stride(2).padding(1).output_padding(1).groups(2).dilation(2));
  expect_near(vals(y), convt1d_out, 1e-10, "F::conv_transpose1d");

  nn::ConvTranspose1d sized(nn::ConvTranspose1dOptions(2, 3, 3).stride(3).padding(1).bias(false));
  fill_params(*sized);
  expect_case_layouts("ConvTranspose1d output_size",
                      [&](const std::vector<Tensor>& in) { return sized->forward(in[0], std::vector<int64_t>{14}); },
                      {det({2, 2, 5}, 9)}, params_of(*sized), convt1d_output_size_out, {&convt1d_output_size_grad0},
                      {&convt1d_output_size_pgrad0});
  // Sizes 13..15 are reachable (stride 3): 16 is not.
  expect_error([&] { sized->forward(det({2, 2, 5}, 9), std::vector<int64_t>{16}); },
               {"ConvTranspose1d", "requested an output size of [16]", "[13]", "[15]"});
  expect_error([&] { sized->forward(det({2, 2, 5}, 9), std::vector<int64_t>{14, 2}); },
               {"ConvTranspose1d", "output_size must have 1 or 3 elements (got 2)"});
}

TEST(PortNNConvFold, ConvTranspose3dMatchesPyTorch) {
  nn::ConvTranspose3d ct(nn::ConvTranspose3dOptions(2, 4, {2, 3, 2}).stride({2, 1, 2}).padding({0, 1, 1}).output_padding({1, 0, 0}));
  fill_params(*ct);
  auto ps = params_of(*ct);
  expect_case_layouts("ConvTranspose3d", module_fn(ct), {det({2, 2, 3, 4, 3}, 10)}, ps, convt3d_out, {&convt3d_grad0},
                      {&convt3d_pgrad0, &convt3d_pgrad1});
  expect_case_layouts("ConvTranspose3d unbatched", module_fn(ct), {det({2, 3, 4, 3}, 11)}, ps, convt3d_unbatched_out,
                      {&convt3d_unbatched_grad0}, {&convt3d_unbatched_pgrad0, &convt3d_unbatched_pgrad1});
  Tensor y = F::conv_transpose3d(det({2, 2, 3, 4, 3}, 10), ct->weight,
                                 F::ConvTranspose3dFuncOptions().bias(ct->bias).stride({2, 1, 2}).padding({0, 1, 1}).output_padding({1, 0, 0}));
  expect_near(vals(y), convt3d_out, 1e-10, "F::conv_transpose3d");

  nn::ConvTranspose3d sized(nn::ConvTranspose3dOptions(4, 2, 2).stride(2).groups(2).dilation({1, 2, 1}));
  fill_params(*sized);
  expect_case_layouts("ConvTranspose3d output_size (N, C first)",
                      [&](const std::vector<Tensor>& in) {
                        return sized->forward(in[0], std::vector<int64_t>{1, 2, 5, 7, 5});
                      },
                      {det({1, 4, 2, 3, 2}, 12)}, params_of(*sized), convt3d_output_size_out,
                      {&convt3d_output_size_grad0}, {&convt3d_output_size_pgrad0, &convt3d_output_size_pgrad1});
  // F::conv_transpose2d exists with the same options as the 2-D module.
  Tensor x2 = det({1, 2, 3, 3}, 3), w2 = det({2, 3, 2, 2}, 4);
  expect_near(vals(F::conv_transpose2d(x2, w2, F::ConvTranspose2dFuncOptions().stride(2).output_padding(1))),
              vals(tensor::conv_transpose2d(x2, w2, std::nullopt, 2, 0, 1)), 1e-12, "F::conv_transpose2d");
}

TEST(PortNNConvFold, ConvModuleArgumentErrors) {
  expect_error([] { nn::ConvTranspose1d(nn::ConvTranspose1dOptions(2, 2, 3).padding_mode(kReflect)); },
               {"Only \"zeros\" padding mode is supported for tensor::nn::ConvTranspose1d", "reflect"});
  expect_error([] { nn::ConvTranspose3d(nn::ConvTranspose3dOptions(2, 2, 3).padding(kSame)); },
               {"tensor::nn::ConvTranspose3d", "kValid and kSame"});
  expect_error([] { nn::Conv3d(nn::Conv3dOptions(2, 2, 3).padding(kSame).stride(2)); },
               {"tensor::nn::Conv3d", "padding='same' is not supported for strided convolutions"});
  expect_error([] { nn::Conv3d(nn::Conv3dOptions(3, 2, 3).groups(2)); },
               {"tensor::nn::Conv3d", "must be divisible by groups"});
  nn::Conv3d c(nn::Conv3dOptions(2, 2, 2));
  expect_error([&] { c->forward(zeros({1, 3, 4, 4, 4})); }, {"conv3d", "expected input with 2 channels", "[1, 3, 4, 4, 4]"});
  expect_error([&] { c->forward(zeros({4, 4})); }, {"conv3d", "4-D (unbatched) or 5-D (batched)", "[4, 4]"});
}

// ---- Fold / Unfold, tensor::im2col / tensor::col2im ----

namespace {

// Float64 reference loops, written from the definition: column row c * kh * kw + i * kw + j,
// position y * ow + x holds image (c, y * s - p + i * d, x * s - p + j * d), zero outside.
struct Geo {
  int64_t kh, kw, dh, dw, ph, pw, sh, sw;
};
int64_t blocks(int64_t size, int64_t k, int64_t d, int64_t p, int64_t s) { return (size + 2 * p - d * (k - 1) - 1) / s + 1; }

std::vector<double> im2col_ref(const std::vector<double>& x, int64_t n, int64_t c, int64_t h, int64_t w, const Geo& g) {
  const int64_t oh = blocks(h, g.kh, g.dh, g.ph, g.sh), ow = blocks(w, g.kw, g.dw, g.pw, g.sw);
  std::vector<double> out;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t j = 0; j < g.kw; ++j)
          for (int64_t y = 0; y < oh; ++y)
            for (int64_t xx = 0; xx < ow; ++xx) {
              const int64_t iy = y * g.sh - g.ph + i * g.dh, ix = xx * g.sw - g.pw + j * g.dw;
              out.push_back(iy >= 0 && iy < h && ix >= 0 && ix < w ? x[((b * c + ch) * h + iy) * w + ix] : 0.0);
            }
  return out;
}

std::vector<double> col2im_ref(const std::vector<double>& cols, int64_t n, int64_t c, int64_t h, int64_t w,
                               const Geo& g) {
  const int64_t oh = blocks(h, g.kh, g.dh, g.ph, g.sh), ow = blocks(w, g.kw, g.dw, g.pw, g.sw);
  std::vector<double> out(static_cast<size_t>(n * c * h * w), 0.0);
  size_t q = 0;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t j = 0; j < g.kw; ++j)
          for (int64_t y = 0; y < oh; ++y)
            for (int64_t xx = 0; xx < ow; ++xx, ++q) {
              const int64_t iy = y * g.sh - g.ph + i * g.dh, ix = xx * g.sw - g.pw + j * g.dw;
              if (iy >= 0 && iy < h && ix >= 0 && ix < w) out[static_cast<size_t>(((b * c + ch) * h + iy) * w + ix)] += cols[q];
            }
  return out;
}

}  // namespace

TEST(PortNNConvFold, UnfoldAndFoldMatchPyTorch) {
  auto unfold_opts = F::UnfoldFuncOptions({2, 3}).dilation({2, 1}).padding({1, 2}).stride({2, 1});
  expect_case_layouts("F::unfold", [&](const std::vector<Tensor>& in) { return F::unfold(in[0], unfold_opts); },
                      {det({2, 3, 6, 7}, 13)}, {}, unfold_out, {&unfold_grad0}, {});
  nn::Unfold unfold(nn::UnfoldOptions({2, 3}).dilation({2, 1}).padding({1, 2}).stride({2, 1}));
  expect_case_layouts("nn::Unfold unbatched", module_fn(unfold), {det({3, 6, 7}, 14)}, {}, unfold_unbatched_out,
                      {&unfold_unbatched_grad0}, {});
  auto fold_opts = F::FoldFuncOptions({6, 7}, {2, 3}).dilation({2, 1}).padding({1, 2}).stride({2, 1});
  expect_case_layouts("F::fold", [&](const std::vector<Tensor>& in) { return F::fold(in[0], fold_opts); },
                      {det({2, 18, fold_L}, 15)}, {}, fold_out, {&fold_grad0}, {});
  nn::Fold fold(nn::FoldOptions({6, 7}, {2, 3}).dilation({2, 1}).padding({1, 2}).stride({2, 1}));
  expect_case_layouts("nn::Fold unbatched", module_fn(fold), {det({18, fold_L}, 16)}, {}, fold_unbatched_out,
                      {&fold_unbatched_grad0}, {});
  expect_case_layouts("tensor::im2col",
                      [](const std::vector<Tensor>& in) { return tensor::im2col(in[0], {2, 2}, {1, 1}, {0, 0}, {1, 1}); },
                      {det({1, 2, 3, 4}, 17)}, {}, unfold_plain_out, {&unfold_plain_grad0}, {});
  std::ostringstream s;
  s << *fold << " " << *unfold;
  EXPECT_EQ(s.str(), "tensor::nn::Fold(output_size=[6, 7], kernel_size=[2, 3], dilation=[2, 1], padding=[1, 2], "
                     "stride=[2, 1]) tensor::nn::Unfold(kernel_size=[2, 3], dilation=[2, 1], padding=[1, 2], "
                     "stride=[2, 1])");
}

TEST(PortNNConvFold, Im2colCol2imMatchReferenceLoops) {
  const Geo geos[] = {{2, 3, 2, 1, 1, 2, 2, 1}, {3, 3, 1, 1, 1, 1, 1, 1}, {1, 2, 1, 3, 0, 2, 3, 2}, {4, 1, 1, 1, 3, 0, 1, 2}};
  for (const Geo& g : geos) {
    const int64_t n = 2, c = 3, h = 7, w = 6;
    const int64_t L = blocks(h, g.kh, g.dh, g.ph, g.sh) * blocks(w, g.kw, g.dw, g.pw, g.sw);
    Tensor x = random_tensor({n, c, h, w}, 3, -2, 2).to(kFloat64);
    Tensor cols = tensor::im2col(x, {g.kh, g.kw}, {g.dh, g.dw}, {g.ph, g.pw}, {g.sh, g.sw});
    ASSERT_EQ(cols.sizes(), IntArrayRef({n, c * g.kh * g.kw, L}));
    expect_near(vals(cols), im2col_ref(vals(x), n, c, h, w, g), 0, "im2col vs loop");
    Tensor y = random_tensor({n, c * g.kh * g.kw, L}, 4, -2, 2).to(kFloat64);
    Tensor img = tensor::col2im(y, {h, w}, {g.kh, g.kw}, {g.dh, g.dw}, {g.ph, g.pw}, {g.sh, g.sw});
    ASSERT_EQ(img.sizes(), IntArrayRef({n, c, h, w}));
    expect_near(vals(img), col2im_ref(vals(y), n, c, h, w, g), 1e-12, "col2im vs loop");
    // Adjoint: <im2col(x), y> = <x, col2im(y)>.
    EXPECT_NEAR((cols * y).sum().item<double>(), (x * img).sum().item<double>(), 1e-10);
    // float32 and bfloat16 against float64 (bfloat16: one rounding of the sum).
    for (ScalarType t : {kFloat32, kBFloat16, kFloat16}) {
      const double tol = t == kFloat32 ? 1e-5 : 0.05;
      expect_near(vals(tensor::im2col(x.to(t), {g.kh, g.kw}, {g.dh, g.dw}, {g.ph, g.pw}, {g.sh, g.sw}).to(kFloat64)),
                  vals(tensor::im2col(x.to(t).to(kFloat64), {g.kh, g.kw}, {g.dh, g.dw}, {g.ph, g.pw}, {g.sh, g.sw})), 0,
                  "im2col low precision");
      expect_near(vals(tensor::col2im(y.to(t), {h, w}, {g.kh, g.kw}, {g.dh, g.dw}, {g.ph, g.pw}, {g.sh, g.sw}).to(kFloat64)),
                  vals(img), tol * 4, "col2im low precision");
    }
  }
}

TEST(PortNNConvFold, Im2colCol2imGradcheck) {
  Tensor x = det({2, 2, 5, 4}, 20).requires_grad_(true);
  auto unf = [](const variable_list& in) { return tensor::im2col(in[0], {2, 3}, {2, 1}, {1, 2}, {2, 1}); };
  check("im2col gradcheck", [&] { return autograd::gradcheck(unf, {x}); });
  check("im2col gradgradcheck", [&] { return autograd::gradgradcheck(unf, {x}); });
  check("im2col gradcheck (strided)", [&] { return autograd::gradcheck(unf, {strided(x.detach()).requires_grad_(true)}); });
  Tensor y = det({3, 12, 18}, 21).requires_grad_(true);
  auto fld = [](const variable_list& in) { return tensor::col2im(in[0], {5, 4}, {2, 3}, {2, 1}, {1, 2}, {2, 1}); };
  check("col2im gradcheck", [&] { return autograd::gradcheck(fld, {y}); });
  check("col2im gradgradcheck", [&] { return autograd::gradgradcheck(fld, {y}); });
  check("col2im gradcheck (transposed)", [&] {
    return autograd::gradcheck(fld, {det({3, 18, 12}, 21).transpose(1, 2).requires_grad_(true)});
  });
  // The recorded nodes carry libtorch's names.
  Tensor a = tensor::im2col(x, {2, 2}, {1, 1}, {0, 0}, {1, 1});
  EXPECT_EQ(a.grad_fn()->name(), "Im2ColBackward0");
  EXPECT_EQ(tensor::col2im(a, {5, 4}, {2, 2}, {1, 1}, {0, 0}, {1, 1}).grad_fn()->name(), "Col2ImBackward0");
}

TEST(PortNNConvFold, Im2colCol2imMetaShapes) {
  const TensorOptions meta = TensorOptions().dtype(kFloat32).device(kMeta);
  Tensor c = tensor::im2col(empty({2, 3, 6, 7}, meta), {2, 3}, {2, 1}, {1, 2}, {2, 1});
  EXPECT_EQ(c.sizes(), IntArrayRef({2, 18, fold_L}));
  EXPECT_EQ(c.device().type(), kMeta);
  Tensor u = tensor::im2col(empty({3, 6, 7}, meta), {2, 3}, {2, 1}, {1, 2}, {2, 1});
  EXPECT_EQ(u.sizes(), IntArrayRef({18, fold_L}));
  Tensor f = tensor::col2im(empty({2, 18, fold_L}, meta), {6, 7}, {2, 3}, {2, 1}, {1, 2}, {2, 1});
  EXPECT_EQ(f.sizes(), IntArrayRef({2, 3, 6, 7}));
  EXPECT_EQ(tensor::col2im(empty({18, fold_L}, meta), {6, 7}, {2, 3}, {2, 1}, {1, 2}, {2, 1}).sizes(),
            IntArrayRef({3, 6, 7}));
  // A zero batch is allowed, as libtorch.
  EXPECT_EQ(tensor::im2col(zeros({0, 3, 4, 4}), {2, 2}, {1, 1}, {0, 0}, {1, 1}).sizes(), IntArrayRef({0, 12, 9}));
}

TEST(PortNNConvFold, Im2colCol2imBadInputs) {
  expect_error([] { tensor::im2col(zeros({4, 4}), {2, 2}, {1, 1}, {0, 0}, {1, 1}); }, {"im2col", "3D (unbatched) or 4D", "[4, 4]"});
  expect_error([] { tensor::im2col(zeros({1, 2, 3, 3}), {4, 2}, {1, 1}, {0, 0}, {1, 1}); },
               {"im2col", "spatial size (3, 3)", "kernel_size=[4, 2]", "at least one"});
  expect_error([] { tensor::im2col(zeros({1, 2, 3, 3}), {2}, {1, 1}, {0, 0}, {1, 1}); },
               {"im2col", "kernel_size equals to 2", "got size 1"});
  expect_error([] { tensor::im2col(zeros({1, 2, 3, 3}), {2, 2}, {1, 1}, {0, 0}, {0, 1}); },
               {"im2col", "stride should be greater than zero", "[0, 1]"});
  expect_error([] { tensor::im2col(zeros({1, 2, 3, 3}, kInt64), {2, 2}, {1, 1}, {0, 0}, {1, 1}); },
               {"im2col", "floating point", "int64", "[1, 2, 3, 3]"});
  expect_error([] { tensor::col2im(zeros({1, 7, 9}), {4, 4}, {2, 2}, {1, 1}, {0, 0}, {1, 1}); },
               {"col2im", "divisible by the product of kernel_size", "input.size(1)=7", "[1, 7, 9]"});
  expect_error([] { tensor::col2im(zeros({1, 8, 8}), {4, 4}, {2, 2}, {1, 1}, {0, 0}, {1, 1}); },
               {"col2im", "number of sliding blocks 3 * 3 = 9", "input.size(2)=8", "[1, 8, 8]"});
  expect_error([] { tensor::col2im(zeros({2, 3, 4, 4}), {4, 4}, {2, 2}, {1, 1}, {0, 0}, {1, 1}); },
               {"col2im", "2D (unbatched) or 3D", "[2, 3, 4, 4]"});
  expect_error([] { F::fold(zeros({1, 8, 9}), F::FoldFuncOptions({4, 4}, {2, 2}).padding(-1)); },
               {"col2im", "padding should be non-negative"});
}

// ---- EmbeddingBag ----

namespace {

nn::EmbeddingBag make_bag(nn::EmbeddingBagOptions o) {
  nn::EmbeddingBag bag(o);
  fill_params(*bag);
  return bag;
}

Tensor ints(std::vector<int64_t> v) { return tensor::tensor(v, kInt64); }

}  // namespace

TEST(PortNNConvFold, EmbeddingBagMatchesPyTorch) {
  const Tensor idx = ints({1, 2, 4, 5, 4, 3, 2, 9, 0, 2}), offs = ints({0, 3, 3, 7});
  const Tensor idx2 = ints({1, 2, 4, 5, 4, 3, 2, 9, 0, 2, 2, 7}).reshape({3, 4});
  const Tensor pidx = ints({1, 2, 2, 5, 2, 2, 2, 9, 0, 2}), poffs = ints({0, 3, 4, 7});
  auto two = [](nn::EmbeddingBag& b) {
    return [&b](const std::vector<Tensor>& in) { return b->forward(in[0], in[1]); };
  };
  {
    auto bag = make_bag(nn::EmbeddingBagOptions(10, 4).mode(kSum));
    expect_case_layouts("EmbeddingBag sum per_sample_weights",
                        [&](const std::vector<Tensor>& in) { return bag->forward(in[0], in[1], in[2]); },
                        {idx, offs, det({10}, 18, 0.1, 2.0)}, params_of(*bag), bag_sum_psw_out,
                        {nullptr, nullptr, &bag_sum_psw_grad2}, {&bag_sum_psw_pgrad0});
  }
  {
    auto bag = make_bag(nn::EmbeddingBagOptions(10, 4));  // kMean by default
    expect_case("EmbeddingBag mean", two(bag), {idx, offs}, params_of(*bag), bag_mean_out, {}, {&bag_mean_pgrad0});
    expect_case("EmbeddingBag 2-D mean", module_fn(bag), {idx2}, params_of(*bag), bag_2d_mean_out, {},
                {&bag_2d_mean_pgrad0});
  }
  {
    auto bag = make_bag(nn::EmbeddingBagOptions(10, 4).mode(kMax));
    expect_case("EmbeddingBag max (an empty bag)", two(bag), {idx, offs}, params_of(*bag), bag_max_out, {},
                {&bag_max_pgrad0});
    expect_case("EmbeddingBag 2-D max", module_fn(bag), {idx2}, params_of(*bag), bag_2d_max_out, {},
                {&bag_2d_max_pgrad0});
  }
  {
    auto bag = make_bag(nn::EmbeddingBagOptions(10, 4).mode(kSum));
    expect_case_layouts("EmbeddingBag 2-D sum per_sample_weights",
                        [&](const std::vector<Tensor>& in) { return bag->forward(in[0], Tensor(), in[1]); },
                        {idx2, det({3, 4}, 19, 0.1, 2.0)}, params_of(*bag), bag_2d_sum_psw_out,
                        {nullptr, &bag_2d_sum_psw_grad2}, {&bag_2d_sum_psw_pgrad0});
  }
  {
    auto bag = make_bag(nn::EmbeddingBagOptions(10, 4).mode(kSum).include_last_offset(true));
    expect_case("EmbeddingBag include_last_offset", two(bag), {idx, ints({0, 3, 3, 7, 10})}, params_of(*bag),
                bag_last_offset_out, {}, {&bag_last_offset_pgrad0});
  }
  {
    auto bag = make_bag(nn::EmbeddingBagOptions(10, 4).mode(kMean).padding_idx(2));
    expect_case("EmbeddingBag padding_idx mean", two(bag), {pidx, poffs}, params_of(*bag), bag_pad_mean_out, {},
                {&bag_pad_mean_pgrad0});
  }
  {
    auto bag = make_bag(nn::EmbeddingBagOptions(10, 4).mode(kMax).padding_idx(2));
    expect_case("EmbeddingBag padding_idx max", two(bag), {pidx, poffs}, params_of(*bag), bag_pad_max_out, {},
                {&bag_pad_max_pgrad0});
  }
  {
    auto bag = make_bag(nn::EmbeddingBagOptions(10, 4).mode(kSum).padding_idx(-8));
    expect_case("EmbeddingBag padding_idx -8 sum", two(bag), {pidx, poffs}, params_of(*bag), bag_pad_sum_neg_out, {},
                {&bag_pad_sum_neg_pgrad0});
  }
  {
    auto bag = make_bag(nn::EmbeddingBagOptions(10, 4).mode(kMean).scale_grad_by_freq(true));
    expect_case("EmbeddingBag scale_grad_by_freq mean", two(bag), {pidx, offs}, params_of(*bag), bag_freq_mean_out,
                {}, {&bag_freq_mean_pgrad0});
  }
  {
    auto bag = make_bag(nn::EmbeddingBagOptions(10, 4).mode(kSum).scale_grad_by_freq(true));
    expect_case("EmbeddingBag scale_grad_by_freq sum", two(bag), {pidx, offs}, params_of(*bag), bag_freq_sum_out, {},
                {&bag_freq_sum_pgrad0});
  }
  {
    auto bag = make_bag(nn::EmbeddingBagOptions(10, 4).mode(kSum).max_norm(0.6).norm_type(1.5));
    expect_case("EmbeddingBag max_norm", two(bag), {idx, offs}, params_of(*bag), bag_max_norm_out, {},
                {&bag_max_norm_pgrad0});
    expect_near(vals(bag->weight), bag_max_norm_weight_after, 1e-12, "EmbeddingBag max_norm renormed weight");
  }
}

TEST(PortNNConvFold, EmbeddingBagFunctionalFromPretrainedAndGradcheck) {
  const Tensor idx = ints({1, 2, 4, 5, 4, 3, 2, 9, 0, 2}), offs = ints({0, 3, 3, 7});
  Tensor w = det({10, 4}, 100, -0.5, 0.5);
  // F::embedding_bag on a strided weight gives the module's values.
  auto o = F::EmbeddingBagFuncOptions().offsets(offs).mode(kSum).per_sample_weights(det({10}, 18, 0.1, 2.0));
  expect_near(vals(F::embedding_bag(idx, strided(w), o)), bag_sum_psw_out, 1e-12, "F::embedding_bag strided weight");
  expect_near(vals(F::embedding_bag(idx.to(kInt32), w, F::EmbeddingBagFuncOptions().offsets(offs.to(kInt32)))),
              bag_mean_out, 1e-12, "F::embedding_bag int32 indices and offsets");
  nn::EmbeddingBag frozen = nn::EmbeddingBag::from_pretrained(w, nn::EmbeddingBagFromPretrainedOptions().mode(kMax));
  EXPECT_FALSE(frozen->weight.requires_grad());
  expect_near(vals(frozen(idx, offs)), bag_max_out, 1e-12, "from_pretrained max");
  nn::EmbeddingBag trainable = nn::EmbeddingBag::from_pretrained(w.clone(), nn::EmbeddingBagFromPretrainedOptions().freeze(false));
  EXPECT_TRUE(trainable->weight.requires_grad());
  std::ostringstream s;
  s << *nn::EmbeddingBag(nn::EmbeddingBagOptions(10, 4).mode(kSum).padding_idx(2));
  EXPECT_EQ(s.str(), "tensor::nn::EmbeddingBag(num_embeddings=10, embedding_dim=4, mode=sum, padding_idx=2)");

  // Gradients of weight and per_sample_weights by finite differences (and second order).
  Tensor psw = det({10}, 18, 0.1, 2.0);
  for (auto mode : {nn::EmbeddingBagMode(kSum), nn::EmbeddingBagMode(kMean), nn::EmbeddingBagMode(kMax)}) {
    auto fn = [&](const variable_list& in) {
      auto opts = F::EmbeddingBagFuncOptions().offsets(offs).mode(mode).padding_idx(4);
      if (mode == kSum) opts.per_sample_weights(in[1]);
      return F::embedding_bag(idx, in[0], opts);
    };
    const std::string name = std::string("embedding_bag ") + mode.name();
    variable_list ins = {w.detach().requires_grad_(true), psw.detach().requires_grad_(mode == kSum)};
    check(name + " gradcheck", [&] { return autograd::gradcheck(fn, ins); });
    check(name + " gradgradcheck", [&] { return autograd::gradgradcheck(fn, ins); });
  }
}

TEST(PortNNConvFold, EmbeddingBagBadInputs) {
  Tensor w = det({10, 4}, 100);
  const Tensor idx = ints({1, 2, 4}), offs = ints({0, 2});
  expect_error([] { nn::EmbeddingBag(nn::EmbeddingBagOptions(10, 4).sparse(true)); },
               {"EmbeddingBag", "sparse gradients are not supported"});
  expect_error([&] { F::embedding_bag(idx, w, F::EmbeddingBagFuncOptions().offsets(offs).sparse(true)); },
               {"embedding_bag", "sparse gradients are not supported"});
  expect_error([&] { F::embedding_bag(idx, w, F::EmbeddingBagFuncOptions().offsets(offs).per_sample_weights(det({3}, 1))); },
               {"embedding_bag", "per_sample_weights is only supported for mode='sum' (got mode='mean')"});
  expect_error([&] { F::embedding_bag(idx, w, F::EmbeddingBagFuncOptions().offsets(offs).mode(kSum).per_sample_weights(det({2}, 1))); },
               {"embedding_bag", "must have the shape of input"});
  expect_error([&] { F::embedding_bag(idx.reshape({1, 3}), w, F::EmbeddingBagFuncOptions().offsets(offs)); },
               {"embedding_bag", "if input is 2D, then offsets has to be None"});
  expect_error([&] { F::embedding_bag(idx, w); }, {"embedding_bag", "offsets has to be a 1D Tensor but got null"});
  expect_error([&] { F::embedding_bag(idx, w, F::EmbeddingBagFuncOptions().offsets(ints({1, 2}))); },
               {"embedding_bag", "offsets[0] has to be 0", "got 1"});
  expect_error([&] { F::embedding_bag(idx, w, F::EmbeddingBagFuncOptions().offsets(ints({0, 4}))); },
               {"embedding_bag", "offsets[-1] can not be greater than input's length (3)"});
  expect_error([&] { F::embedding_bag(ints({1, 12}), w, F::EmbeddingBagFuncOptions().offsets(offs)); },
               {"embedding_bag", "index 12 is out of range for 10 embeddings"});
  expect_error([&] { F::embedding_bag(idx, w, F::EmbeddingBagFuncOptions().offsets(offs).mode(kMax).scale_grad_by_freq(true)); },
               {"embedding_bag", "max mode does not support scaling the gradient by the frequency"});
  expect_error([&] { F::embedding_bag(idx.to(kFloat32), w, F::EmbeddingBagFuncOptions().offsets(offs)); },
               {"embedding_bag", "int64 or int32", "float32"});
  expect_error([&] { F::embedding_bag(idx, w, F::EmbeddingBagFuncOptions().offsets(offs).padding_idx(10)); },
               {"embedding_bag", "padding_idx 10 must be within num_embeddings = 10"});
}
