// Autocast (Note [Autocast policy], src/amp/AutocastPolicy.cpp): the policy table names real
// ops, each policy class gives its dtype, lower-precision results match float64 references
// within bf16's precision, guards nest and disable, the weight cast cache casts a weight once
// per region, and gradients reach float32 parameters in float32.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "src/amp/AutocastPolicy.h"
#include "src/ops/AllOps.h"
#include "tensor/amp.h"
#include "tensor/nn.h"
#include "tensor/optim.h"
#include "tensor/tensor.h"

using namespace tensor;
using autocast::AutocastGuard;
using autocast::CastPolicy;

namespace {

// Names of every dispatcher op: ops::builtin_ops() is ops::for_each_op's list, exported.
std::set<std::string> dispatched_names() {
  std::set<std::string> names;
  for (const auto& op : ops::builtin_ops()) names.insert(op.name);
  return names;
}

// Largest |a - b| - rel * |b| over the elements (<= atol means within atol + rel * |b|).
double excess(const Tensor& a, const Tensor& b, double rel) {
  Tensor d = (a.to(kFloat64) - b.to(kFloat64)).abs() - b.to(kFloat64).abs() * rel;
  return d.max().item<double>();
}

// bf16 keeps 8 significant bits: one rounding is within 2^-9 relative; the tests allow 2^-8.
constexpr double kBf16Rel = 1.0 / 256;

}  // namespace

// ---- the table ----

TEST(AutocastPolicy, EveryRowNamesARealOpOrAPendingOne) {
  const std::set<std::string> ops = dispatched_names();
  size_t n_pending = 0;
  const std::string_view* pending = autocast::pending_ops(&n_pending);
  const std::set<std::string> pend(pending, pending + n_pending);
  size_t n = 0;
  const autocast::PolicyRow* rows = autocast::policy_rows(&n);
  ASSERT_GT(n, 40u);
  std::set<std::string> seen;
  for (size_t i = 0; i < n; ++i) {
    const std::string name(rows[i].name);
    EXPECT_TRUE(seen.insert(name).second) << name << " has two rows";
    EXPECT_TRUE(ops.count(name) || pend.count(name))
        << name << " is neither a dispatcher op (ops::for_each_op) nor listed as pending: a typo?";
  }
  // Pending names are rows of the table (a pending list of names without a policy is a typo too).
  for (const std::string& p : pend) EXPECT_TRUE(seen.count(p)) << p << " is pending but has no row";
  // ... and not real ops: a pending name that became an op leaves the list, so it is checked above.
  for (const std::string& p : pend) EXPECT_FALSE(ops.count(p)) << p << " is a dispatcher op now: remove it from kPending";
  // The ops the brief promises are real ops with the right policy here.
  for (const char* op : {"mm", "bmm", "addmm", "linear", "matmul", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                         "conv_transpose2d", "conv_transpose3d"}) {
    EXPECT_TRUE(ops.count(op)) << op;
    EXPECT_EQ(autocast::policy_for(op, kCPU), CastPolicy::LowerPrecision) << op;
    EXPECT_EQ(autocast::policy_for(op, kCUDA), CastPolicy::LowerPrecision) << op;
  }
  for (const char* op : {"softmax", "log_softmax", "exp", "log", "pow", "sum", "prod", "cumsum", "layer_norm",
                         "group_norm", "batch_norm", "norm"}) {
    EXPECT_TRUE(ops.count(op)) << op;
    EXPECT_EQ(autocast::policy_for(op, kCPU), CastPolicy::Fp32) << op;
  }
  for (const char* op : {"cat", "stack"}) EXPECT_EQ(autocast::policy_for(op, kCPU), CastPolicy::Promote) << op;
  EXPECT_EQ(autocast::policy_for("binary_cross_entropy", kCUDA), CastPolicy::Banned);
  EXPECT_EQ(autocast::policy_for("add", kCPU), CastPolicy::None);
  EXPECT_EQ(autocast::policy_for("scaled_dot_product_attention", kCPU), CastPolicy::LowerPrecision);
}

TEST(AutocastPolicy, ExactlyTheListedOpsGetAnAutocastKernel) {
  autocast::ensure_autocast_kernels();
  size_t filled = 0;
  for (const auto& op : ops::builtin_ops()) {
    const bool listed =
        autocast::policy_for(op.name, kCPU) != CastPolicy::None || autocast::policy_for(op.name, kCUDA) != CastPolicy::None;
    EXPECT_EQ(op.slots.has(DispatchKey::Autocast), listed) << op.name;
    filled += op.slots.has(DispatchKey::Autocast);
  }
  EXPECT_EQ(filled, autocast::ensure_autocast_kernels());
}

// ---- dtypes per policy class ----

TEST(Autocast, OutputDtypesFollowThePolicy) {
  manual_seed(0);
  Tensor a = randn({4, 8}), b = randn({8, 3}), bias = randn({3});
  Tensor x16 = randn({4, 8}).to(kBFloat16);
  Tensor img = randn({1, 2, 5, 5}), k = randn({3, 2, 3, 3});
  {
    AutocastGuard ac(kCPU, kBFloat16);
    // lower precision
    EXPECT_EQ(mm(a, b).dtype(), kBFloat16);
    EXPECT_EQ(matmul(a, b).dtype(), kBFloat16);
    EXPECT_EQ(linear(a, b.t(), bias).dtype(), kBFloat16);
    EXPECT_EQ(addmm(bias, a, b).dtype(), kBFloat16);
    EXPECT_EQ(bmm(a.unsqueeze(0), b.unsqueeze(0)).dtype(), kBFloat16);
    EXPECT_EQ(conv2d(img, k).dtype(), kBFloat16);
    EXPECT_EQ(conv_transpose2d(img, k.transpose(0, 1).contiguous()).dtype(), kBFloat16);
    Tensor q = randn({1, 2, 5, 4});  // float32 in, the fused kernel's bf16 path out
    EXPECT_EQ(nn::functional::scaled_dot_product_attention(q, q, q).dtype(), kBFloat16);
    // float32
    EXPECT_EQ(softmax(x16, 1).dtype(), kFloat32);
    EXPECT_EQ(log_softmax(x16, 1).dtype(), kFloat32);
    EXPECT_EQ(tensor::exp(x16).dtype(), kFloat32);
    EXPECT_EQ(tensor::log(x16.abs()).dtype(), kFloat32);
    EXPECT_EQ(x16.pow(2).dtype(), kFloat32);
    EXPECT_EQ(x16.sum().dtype(), kFloat32);
    EXPECT_EQ(x16.cumsum(1).dtype(), kFloat32);
    EXPECT_EQ(layer_norm(x16, {8}).dtype(), kFloat32);
    // 3-d pools, unpooling, fractional pools and CTC run in float32, as libtorch's CPU list has them
    Tensor vol16 = randn({1, 2, 4, 4, 4}).to(kBFloat16);
    EXPECT_EQ(max_pool3d(vol16, {2, 2, 2}).dtype(), kFloat32);
    EXPECT_EQ(avg_pool3d(vol16, {2, 2, 2}).dtype(), kFloat32);
    EXPECT_EQ(adaptive_avg_pool3d(vol16, {2, 2, 2}).dtype(), kFloat32);
    EXPECT_EQ(std::get<0>(adaptive_max_pool3d(vol16, {2, 2, 2})).dtype(), kFloat32);
    auto [pooled, idx] = max_pool2d_with_indices(img.to(kBFloat16), {2, 2});
    EXPECT_EQ(max_unpool2d(pooled, idx, {5, 5}).dtype(), kFloat32);
    EXPECT_EQ(std::get<0>(fractional_max_pool2d(img.to(kBFloat16), {2, 2}, {3, 3},
                                                tensor::full({1, 2, 2}, 0.5, TensorOptions(kBFloat16))))
                  .dtype(),
              kFloat32);
    Tensor lp16 = log_softmax(randn({6, 1, 3}), 2).to(kBFloat16);
    EXPECT_EQ(ctc_loss(lp16, tensor::tensor({{1, 2}}, TensorOptions(kInt64)), std::vector<int64_t>{6},
                       std::vector<int64_t>{2})
                  .dtype(),
              kFloat32);
    // a composite loss runs its pieces under the policy: log_softmax makes it float32
    EXPECT_EQ(nn::functional::cross_entropy(x16, tensor::tensor({0, 1, 2, 3}, TensorOptions(kInt64))).dtype(), kFloat32);
    // the whole chain: bf16 logits from linear, float32 softmax
    EXPECT_EQ(softmax(linear(a, b.t()), 1).dtype(), kFloat32);
    // promote: the widest input
    EXPECT_EQ(cat({x16, a}).dtype(), kFloat32);
    EXPECT_EQ(cat({x16, x16}).dtype(), kBFloat16);
    EXPECT_EQ(stack({x16, a}).dtype(), kFloat32);
    // not listed: the op's own promotion
    EXPECT_EQ((x16 + x16).dtype(), kBFloat16);
    EXPECT_EQ(relu(x16).dtype(), kBFloat16);
    EXPECT_EQ((x16 * a).dtype(), kFloat32);
    // not eligible: float64, integers and in-place/out= variants are left alone
    EXPECT_EQ(mm(a.to(kFloat64), b.to(kFloat64)).dtype(), kFloat64);
    EXPECT_EQ(mm(a.to(kInt64), b.to(kInt64)).dtype(), kInt64);
    Tensor y = x16.clone();
    y.exp_();
    EXPECT_EQ(y.dtype(), kBFloat16);
  }
  EXPECT_EQ(mm(a, b).dtype(), kFloat32);  // outside the region
  EXPECT_EQ(softmax(x16, 1).dtype(), kBFloat16);
}

// ---- values against float64 references ----

TEST(Autocast, LowerPrecisionResultsMatchFloat64References) {
  manual_seed(1);
  Tensor x = randn({32, 64}), w = randn({24, 64}), bias = randn({24});
  Tensor img = randn({2, 3, 9, 9}), k = randn({4, 3, 3, 3}), kb = randn({4});
  Tensor y, c, m;
  {
    AutocastGuard ac(kCPU, kBFloat16);
    y = linear(x, w, bias);
    c = conv2d(img, k, kb, {1, 1}, {1, 1});
    m = matmul(x, w.t());
  }
  ASSERT_EQ(y.dtype(), kBFloat16);
  auto r = [](const Tensor& t) { return t.to(kBFloat16).to(kFloat64); };  // the rounded inputs
  // Against the float64 product of the bf16-rounded inputs only the output's rounding differs
  // (float32 accumulation adds far less): within one bf16 rounding.
  Tensor y_ref = linear(r(x), r(w), r(bias));
  EXPECT_LE(excess(y, y_ref, kBf16Rel), 1e-3);
  Tensor m_ref = matmul(r(x), r(w).t());
  EXPECT_LE(excess(m, m_ref, kBf16Rel), 1e-3);
  Tensor c_ref = conv2d(r(img), r(k), r(kb), {1, 1}, {1, 1});
  EXPECT_LE(excess(c, c_ref, kBf16Rel), 1e-3);
  // Against the exact float64 result, the inputs' rounding adds ~2^-9 sqrt(K) |x||w| per element.
  Tensor y_exact = linear(x.to(kFloat64), w.to(kFloat64), bias.to(kFloat64));
  const double scale = (x.to(kFloat64).abs().matmul(w.to(kFloat64).abs().t())).max().item<double>();
  EXPECT_LE((y.to(kFloat64) - y_exact).abs().max().item<double>(), 4 * kBf16Rel * scale);
  // ... and a float32 op in the region is as exact as outside it.
  Tensor s16 = y;  // bf16
  Tensor s;
  {
    AutocastGuard ac(kCPU, kBFloat16);
    s = softmax(s16, 1);
  }
  EXPECT_LE(excess(s, softmax(s16.to(kFloat64), 1), 1e-6), 1e-7);
}

// ---- guards ----

TEST(Autocast, GuardsNestDisableAndRestore) {
  Tensor a = randn({3, 4}), b = randn({4, 2});
  EXPECT_FALSE(autocast::is_autocast_enabled(kCPU));
  {
    AutocastGuard outer(kCPU, kBFloat16);
    EXPECT_TRUE(autocast::is_autocast_enabled(kCPU));
    EXPECT_EQ(autocast::get_autocast_dtype(kCPU), kBFloat16);
    EXPECT_EQ(mm(a, b).dtype(), kBFloat16);
    {
      AutocastGuard off(kCPU, kBFloat16, /*enabled=*/false);
      EXPECT_FALSE(autocast::is_autocast_enabled(kCPU));
      EXPECT_EQ(mm(a, b).dtype(), kFloat32);
      {
        AutocastGuard again(kCPU, kBFloat16);
        EXPECT_EQ(mm(a, b).dtype(), kBFloat16);
      }
      EXPECT_EQ(mm(a, b).dtype(), kFloat32);
    }
    {
      AutocastGuard half(kCPU, kFloat16, /*enabled=*/true);
      EXPECT_EQ(autocast::get_autocast_dtype(kCPU), kFloat16);
    }
    EXPECT_EQ(autocast::get_autocast_dtype(kCPU), kBFloat16);
    EXPECT_EQ(mm(a, b).dtype(), kBFloat16);
  }
  EXPECT_FALSE(autocast::is_autocast_enabled(kCPU));
  EXPECT_EQ(mm(a, b).dtype(), kFloat32);
}

TEST(Autocast, CpuAndCudaStatesAreSeparate) {
  Tensor a = randn({3, 4}), b = randn({4, 2});
  {
    // CUDA autocast does not touch CPU tensors (no GPU is needed to check that).
    AutocastGuard cuda(kCUDA, kFloat16);
    EXPECT_TRUE(autocast::is_autocast_enabled(kCUDA));
    EXPECT_FALSE(autocast::is_autocast_enabled(kCPU));
    EXPECT_EQ(autocast::get_autocast_dtype(kCUDA), kFloat16);
    EXPECT_EQ(mm(a, b).dtype(), kFloat32);
    {
      AutocastGuard cpu(kCPU, kBFloat16);
      EXPECT_EQ(mm(a, b).dtype(), kBFloat16);
      EXPECT_EQ(autocast::get_autocast_dtype(kCUDA), kFloat16);
    }
    EXPECT_TRUE(autocast::is_autocast_enabled(kCUDA));
    EXPECT_FALSE(autocast::is_autocast_enabled(kCPU));
  }
  {
    AutocastGuard cuda(kCUDA, kBFloat16);
    EXPECT_EQ(autocast::get_autocast_dtype(kCUDA), kBFloat16);
  }
  EXPECT_FALSE(autocast::is_autocast_enabled(kCUDA));
  EXPECT_EQ(autocast::get_autocast_dtype(kCUDA), kFloat16);  // libtorch's default again
}

TEST(Autocast, UnsupportedDtypesAndDevicesRaise) {
  for (ScalarType t : {kInt32, kFloat32, kFloat64, kBool}) {
    try {
      AutocastGuard g(kCPU, t);
      FAIL() << "AutocastGuard(kCPU, " << t << ") must raise";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("AutocastGuard"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("kBFloat16"), std::string::npos) << e.what();
    }
    EXPECT_THROW(AutocastGuard(kCUDA, t), Error);
  }
  EXPECT_THROW(AutocastGuard(kMeta, kBFloat16), Error);
  EXPECT_NO_THROW(AutocastGuard(kCPU, kInt32, /*enabled=*/false));  // libtorch checks enabled guards only
  EXPECT_FALSE(autocast::is_autocast_enabled(kCPU));                // a failed guard leaves nothing on
  EXPECT_EQ(mm(randn({2, 2}), randn({2, 2})).dtype(), kFloat32);
}

// ---- the cast cache ----

namespace {
// The node that cast `weight_use`'s weight input: ToCopyBackward0 among the op's next edges.
const autograd::Node* cast_node(const Tensor& out) {
  for (const auto& e : out.grad_fn()->next_edges())
    if (e.function && e.function->name() == "ToCopyBackward0") return e.function.get();
  return nullptr;
}
}  // namespace

TEST(Autocast, AWeightIsCastOncePerRegion) {
  manual_seed(2);
  Tensor w = randn({5, 6}).requires_grad_(true);
  Tensor x1 = randn({3, 6}), x2 = randn({4, 6});
  Tensor y1, y2, y3;
  {
    AutocastGuard ac(kCPU, kBFloat16);
    EXPECT_EQ(autocast::autocast_cache_size(), 0u);
    y1 = linear(x1, w);
    y2 = linear(x2, w);
    EXPECT_EQ(autocast::autocast_cache_size(), 1u);
    {
      AutocastGuard inner(kCPU, kBFloat16);
      y3 = mm(x1, w.t());  // w.t() is a view, not the leaf: cast on its own
    }
    EXPECT_EQ(autocast::autocast_cache_size(), 1u);  // an inner guard's exit keeps the cache
    Tensor nonleaf = w * 2;
    (void)linear(x1, nonleaf);
    EXPECT_EQ(autocast::autocast_cache_size(), 1u);  // only leaves are cached
    {
      NoGradGuard no_grad;
      (void)linear(x1, randn({5, 6}).requires_grad_(true));
    }
    EXPECT_EQ(autocast::autocast_cache_size(), 1u);  // casts without history are not cached
  }
  EXPECT_EQ(autocast::autocast_cache_size(), 0u);  // the outermost guard's exit clears it
  const autograd::Node* c1 = cast_node(y1);
  const autograd::Node* c2 = cast_node(y2);
  ASSERT_NE(c1, nullptr);
  EXPECT_EQ(c1, c2) << "the second use must reuse the first cast";
  // Gradients of both uses meet at the one cast and reach w in float32:
  // d/dw sum(x1 w^T) + sum(x2 w^T) = column sums of x1 and x2, in every row.
  (y1.to(kFloat32).sum() + y2.to(kFloat32).sum()).backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().dtype(), kFloat32);
  Tensor expect = (x1.to(kFloat64).sum(0) + x2.to(kFloat64).sum(0)).unsqueeze(0).expand({5, 6});
  EXPECT_LE(excess(w.grad(), expect, 2 * kBf16Rel), 1e-2);

  // With the cache off each use casts again.
  Tensor z1, z2;
  {
    AutocastGuard ac(kCPU, kBFloat16, true, /*cache_enabled=*/false);
    z1 = linear(x1, w);
    z2 = linear(x2, w);
    EXPECT_EQ(autocast::autocast_cache_size(), 0u);
  }
  EXPECT_NE(cast_node(z1), cast_node(z2));
}

// ---- autograd through casts ----

TEST(Autocast, GradientsReachFloat32ParametersInFloat32) {
  manual_seed(3);
  Tensor w = randn({4, 3}, TensorOptions(kFloat32)).requires_grad_(true);
  Tensor b = randn({4}).requires_grad_(true);
  Tensor x = randn({5, 3});
  Tensor loss;
  {
    AutocastGuard ac(kCPU, kBFloat16);
    Tensor h = linear(x, w, b);             // bf16
    loss = softmax(h, 1).pow(2).sum();      // softmax, pow and sum in float32
  }
  EXPECT_EQ(loss.dtype(), kFloat32);
  loss.backward();
  EXPECT_EQ(w.grad().dtype(), kFloat32);
  EXPECT_EQ(b.grad().dtype(), kFloat32);
  // The same loss in float64 from the bf16-rounded weights: gradients agree to bf16 precision.
  Tensor w64 = w.detach().to(kBFloat16).to(kFloat64).requires_grad_(true);
  Tensor b64 = b.detach().to(kBFloat16).to(kFloat64).requires_grad_(true);
  softmax(linear(x.to(kBFloat16).to(kFloat64), w64, b64), 1).pow(2).sum().backward();
  const double gmax = w64.grad().abs().max().item<double>();
  EXPECT_LE((w.grad().to(kFloat64) - w64.grad()).abs().max().item<double>(), 0.05 * gmax + 1e-3);
  EXPECT_LE((b.grad().to(kFloat64) - b64.grad()).abs().max().item<double>(), 0.05 * gmax + 1e-3);
}

// ---- a small MLP trained in bf16 autocast with a GradScaler ----

namespace {
// Trains y = a 2-layer MLP on a fixed regression task; returns the final loss (float64).
double train_mlp(bool amp, int steps) {
  manual_seed(7);
  Tensor x = randn({256, 16});
  Tensor true_w = randn({16, 1});
  Tensor y = tensor::tanh(x.matmul(true_w)) + 0.05 * randn({256, 1});
  Tensor w1 = (randn({32, 16}) * 0.25).requires_grad_(true);
  Tensor b1 = zeros({32}).requires_grad_(true);
  Tensor w2 = (randn({1, 32}) * 0.18).requires_grad_(true);
  Tensor b2 = zeros({1}).requires_grad_(true);
  optim::SGD opt({w1, b1, w2, b2}, optim::SGDOptions(0.1).momentum(0.9));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0).growth_interval(50).enabled(amp));
  double last = 0;
  for (int i = 0; i < steps; ++i) {
    opt.zero_grad();
    Tensor loss;
    {
      AutocastGuard ac(kCPU, kBFloat16, /*enabled=*/amp);
      Tensor h = relu(linear(x, w1, b1));
      Tensor out = linear(h, w2, b2);
      loss = nn::functional::mse_loss(out.to(kFloat32), y);
    }
    scaler.scale(loss).backward();
    scaler.step(opt);
    scaler.update();
    last = loss.item<double>();
  }
  return last;
}
}  // namespace

TEST(Autocast, AnMlpTrainedWithBf16AutocastReachesTheFloat32Loss) {
  const double initial = train_mlp(false, 1);
  const double f32 = train_mlp(false, 150);
  const double bf16 = train_mlp(true, 150);
  EXPECT_LT(f32, 0.2 * initial);  // it did learn
  EXPECT_LT(bf16, 0.2 * initial);
  EXPECT_NEAR(bf16, f32, 0.25 * f32 + 5e-3) << "float32 " << f32 << ", bf16 autocast " << bf16;
}

// A recurrent layer after an autocast layer gets bf16 input while its weights stay float32: it
// runs (its projections are autocast's linear), in bf16, close to the float32 result, and its
// gradients reach the float32 parameters.
TEST(Autocast, RecurrentLayersTakeLowerPrecisionInputInARegion) {
  manual_seed(3);
  nn::LSTM lstm(nn::LSTMOptions(8, 16).num_layers(2));
  nn::GRU gru(nn::GRUOptions(8, 16));
  Tensor x = randn({5, 3, 8});
  auto [ref_lstm, ref_state] = lstm->forward(x);
  auto [ref_gru, ref_h] = gru->forward(x);
  AutocastGuard ac(kCPU, kBFloat16);
  Tensor x16 = x.to(kBFloat16);
  auto [out, state] = lstm->forward(x16);
  EXPECT_EQ(out.dtype(), kBFloat16);
  EXPECT_LT((out.to(kFloat32) - ref_lstm).abs().max().item<double>(), 0.05);
  auto [g, h] = gru->forward(x16, tensor::zeros({1, 3, 16}));  // a float32 h0 is cast to the input's dtype
  EXPECT_EQ(g.dtype(), kBFloat16);
  EXPECT_LT((g.to(kFloat32) - ref_gru).abs().max().item<double>(), 0.05);
  out.to(kFloat32).sum().backward();
  for (const auto& p : lstm->parameters()) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_EQ(p.grad().dtype(), kFloat32);
  }
}

// ---- what passes through ----

TEST(Autocast, MetaTensorsAndCustomOpsPassThrough) {
  dispatch::Library lib("autocast_test");
  lib.def("autocast_test::twice(Tensor x) -> Tensor");
  lib.impl("twice", DispatchKey::CPU, +[](const Tensor& x) { return x * 2; });
  const TensorOptions meta = TensorOptions().device(Device("meta"));
  AutocastGuard ac(kCPU, kBFloat16);
  // Meta tensors are not on the region's device: shapes and dtypes as without autocast.
  Tensor m = mm(empty({2, 3}, meta), empty({3, 4}, meta));
  EXPECT_TRUE(m.is_meta());
  EXPECT_EQ(m.dtype(), kFloat32);
  // A custom op has no Autocast kernel: the key falls through to its CPU kernel.
  Tensor y = dispatch::call("autocast_test::twice", tensor::tensor({1.5f, -2.0f}));
  EXPECT_EQ(y.dtype(), kFloat32);
  EXPECT_TRUE(equal(y, tensor::tensor({3.0f, -4.0f})));
}

// cross_entropy on bf16 logits from an autocast region: its fused Function (Note [Fused
// cross_entropy]) computes in float32 and hands back a bf16 gradient, which must match the
// float32 run's gradient to bf16 precision. The amp benchmarks' train steps once raised here.
TEST(Autocast, CrossEntropyOnBf16LogitsBackpropagates) {
  manual_seed(3);
  Tensor x = randn({64, 20});
  Tensor y = randint(7, {64}, TensorOptions(kInt64));
  Tensor w = (randn({7, 20}) * 0.3).requires_grad_(true);
  Tensor b = zeros({7}).requires_grad_(true);
  auto grads = [&](bool amp, const nn::functional::CrossEntropyFuncOptions& opts) {
    w.mutable_grad() = Tensor();
    b.mutable_grad() = Tensor();
    Tensor loss;
    {
      AutocastGuard ac(kCPU, kBFloat16, /*enabled=*/amp);
      Tensor logits = linear(x, w, b);
      EXPECT_EQ(logits.dtype(), amp ? kBFloat16 : kFloat32);
      loss = nn::functional::cross_entropy(logits, y, opts);
    }
    EXPECT_EQ(loss.dtype(), kFloat32);
    loss.sum().backward();
    return std::make_pair(w.grad().clone(), b.grad().clone());
  };
  for (const auto& opts : {nn::functional::CrossEntropyFuncOptions(),
                           nn::functional::CrossEntropyFuncOptions().reduction(kSum),
                           nn::functional::CrossEntropyFuncOptions().reduction(kNone).ignore_index(2)}) {
    auto [w32, b32] = grads(false, opts);
    auto [w16, b16] = grads(true, opts);
    ASSERT_EQ(w16.dtype(), kFloat32);
    const double scale = w32.abs().max().item<double>();
    EXPECT_LT((w16 - w32).abs().max().item<double>(), 0.03 * scale);
    EXPECT_LT((b16 - b32).abs().max().item<double>(), 0.03 * b32.abs().max().item<double>() + 1e-6);
  }
}
