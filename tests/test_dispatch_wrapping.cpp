// The data movement ops (copy_, fill_/zero_, clone, to(), resolve_conj; Note [Copy through the
// dispatcher]) and advanced indexing (index, index_put_) as dispatcher ops: a wrapping key, as
// the profiler's will be, sees every one of them, Meta runs their front ends alone, and their
// autograd follows libtorch's (hand values below).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "src/dispatch/Dispatcher.h"
#include "src/ops/CopyOps.h"
#include "tensor/tensor.h"

using namespace tensor;

namespace {

std::vector<std::string>& seen() {
  static std::vector<std::string> s;
  return s;
}

// Profiler-key kernels that log the op and redispatch below themselves, as the profiler will.
Tensor& log_copy(Tensor& self, const Tensor& src, bool nb) {
  seen().push_back("copy_");
  return ops::copy_ops().copy_.redispatch(DispatchKey::Profiler, self, src, nb);
}
Tensor& log_fill(Tensor& self, const Scalar& v) {
  seen().push_back("fill_");
  return ops::copy_ops().fill_.redispatch(DispatchKey::Profiler, self, v);
}
Tensor log_clone(const Tensor& self) {
  seen().push_back("clone");
  return ops::copy_ops().clone.redispatch(DispatchKey::Profiler, self);
}
Tensor log_to_copy(const Tensor& self, ScalarType t, Device d, bool nb) {
  seen().push_back("_to_copy");
  return ops::copy_ops().to_copy.redispatch(DispatchKey::Profiler, self, t, d, nb);
}
Tensor log_resolve_conj(const Tensor& self) {
  seen().push_back("resolve_conj");
  return ops::copy_ops().resolve_conj.redispatch(DispatchKey::Profiler, self);
}

// Installs the logging kernels and turns the Profiler key on for this thread, for one scope.
struct LogDataMovement {
  LogDataMovement() {
    seen().clear();
    auto& t = ops::copy_ops();
    t.copy_.set(DispatchKey::Profiler, &log_copy);
    t.fill_.set(DispatchKey::Profiler, &log_fill);
    t.clone.set(DispatchKey::Profiler, &log_clone);
    t.to_copy.set(DispatchKey::Profiler, &log_to_copy);
    t.resolve_conj.set(DispatchKey::Profiler, &log_resolve_conj);
    dispatch::local_keys().included = dispatch::local_keys().included | DispatchKeySet(DispatchKey::Profiler);
  }
  ~LogDataMovement() {
    dispatch::local_keys().included = dispatch::local_keys().included.remove(DispatchKey::Profiler);
    auto& t = ops::copy_ops();
    t.copy_.set(DispatchKey::Profiler, nullptr);
    t.fill_.set(DispatchKey::Profiler, nullptr);
    t.clone.set(DispatchKey::Profiler, nullptr);
    t.to_copy.set(DispatchKey::Profiler, nullptr);
    t.resolve_conj.set(DispatchKey::Profiler, nullptr);
  }
};

using Names = std::vector<std::string>;

// Turns the Profiler key on for this thread for one scope (off again even when a check throws).
struct ProfilerKeyOn {
  ProfilerKeyOn() { dispatch::local_keys().included = dispatch::local_keys().included | DispatchKeySet(DispatchKey::Profiler); }
  ~ProfilerKeyOn() { dispatch::local_keys().included = dispatch::local_keys().included.remove(DispatchKey::Profiler); }
};

}  // namespace

TEST(CopyDispatch, AWrappingKeySeesEveryDataMovementOp) {
  Tensor x = arange(6, TensorOptions(kFloat32)).view({2, 3});
  Tensor y = empty({2, 3});
  Tensor c = tensor::tensor({1.0, 2.0}).to(kComplex64) * complex128(0, 1);
  LogDataMovement log;
  y.copy_(x);
  EXPECT_EQ(seen(), Names({"copy_"}));
  seen().clear();
  y.fill_(2.5);
  y.zero_();
  EXPECT_EQ(seen(), Names({"fill_", "fill_"}));
  seen().clear();
  Tensor z = x.clone();
  EXPECT_EQ(seen(), Names({"clone", "copy_"}));  // a composite: its copy_ dispatches too
  seen().clear();
  Tensor d = x.to(kFloat64);
  EXPECT_EQ(seen(), Names({"_to_copy", "copy_"}));
  seen().clear();
  (void)x.to(kFloat32);  // nothing to do: no op, as libtorch
  (void)x.contiguous();
  EXPECT_TRUE(seen().empty());
  Tensor t = x.t().contiguous();  // contiguous() of a strided tensor is a clone
  EXPECT_EQ(seen(), Names({"clone", "copy_"}));
  seen().clear();
  Tensor r = c.conj().resolve_conj();
  ASSERT_FALSE(seen().empty());
  EXPECT_EQ(seen()[0], "resolve_conj");
  seen().clear();
  // The values are right through the wrapping kernels.
  EXPECT_TRUE(equal(t, tensor::tensor({{0.f, 3.f}, {1.f, 4.f}, {2.f, 5.f}})));
  EXPECT_TRUE(equal(d, tensor::tensor({{0.0, 1.0, 2.0}, {3.0, 4.0, 5.0}})));
  EXPECT_FALSE(r.is_conj());
  EXPECT_EQ(r[0].item().to<complex128>(), complex128(0, -1));
  EXPECT_EQ(r[1].item().to<complex128>(), complex128(0, -2));
}

TEST(CopyDispatch, CopyConvertsBroadcastsAndWritesStridedDestinations) {
  // dst is a transposed view (3x4 over 4x3 memory); src broadcasts a row and converts dtype.
  Tensor base = zeros({4, 3}, TensorOptions(kInt32));
  Tensor dst = base.t();
  dst.copy_(tensor::tensor({1.9, -2.5, 3.0, 40.0}));  // float64 -> int32 truncates toward zero
  const int expected[4] = {1, -2, 3, 40};
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(base[r][c].item<int>(), expected[r]) << r << "," << c;
  EXPECT_THROW(dst.copy_(zeros({2, 4})), Error);  // [2, 4] does not broadcast to [3, 4]
}

TEST(CopyDispatch, MetaRunsTheFrontEndsAlone) {
  Tensor m = empty({2, 3}, TensorOptions().device(Device("meta")));
  Tensor c = m.clone();
  EXPECT_TRUE(c.is_meta());
  EXPECT_EQ(c.sizes().vec(), std::vector<int64_t>({2, 3}));
  Tensor d = m.to(kFloat64);
  EXPECT_TRUE(d.is_meta());
  EXPECT_EQ(d.dtype(), kFloat64);
  EXPECT_NO_THROW(m.fill_(1));
  EXPECT_NO_THROW(m.copy_(ones({3})));  // CPU into meta: shapes checked only
  EXPECT_THROW(m.copy_(ones({4})), Error);
  try {
    Tensor cpu = empty({2, 3});
    cpu.copy_(m);
    FAIL() << "copying from a meta tensor must raise";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("copy_"), std::string::npos) << e.what();
  }
}

TEST(CopyAutograd, NodeNamesFollowLibtorch) {
  Tensor x = randn({2, 3}).requires_grad_(true);
  EXPECT_EQ(x.clone().grad_fn()->name(), "CloneBackward0");
  EXPECT_EQ(x.to(kFloat64).grad_fn()->name(), "ToCopyBackward0");
  EXPECT_EQ(x.t().contiguous().grad_fn()->name(), "CloneBackward0");
  Tensor c = (x.to(kComplex64) * complex128(0, 1)).conj();
  EXPECT_EQ(c.resolve_conj().grad_fn()->name(), "ResolveConjBackward0");
  Tensor y = x * 2;
  y.fill_(1);
  EXPECT_EQ(y.grad_fn()->name(), "FillBackward0");
}

TEST(CopyAutograd, ToGivesTheGradientBackInTheSourceDtype) {
  Tensor x = tensor::tensor({1.5f, -2.0f, 0.25f}).requires_grad_(true);
  Tensor y = x.to(kFloat64);
  (y * y).sum().backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().dtype(), kFloat32);
  EXPECT_TRUE(allclose(x.grad(), tensor::tensor({3.0f, -4.0f, 0.5f})));
  // Real to complex: l = sum(real(z * (0.5 + 2i))) = sum(0.5 x), so dl/dx = 0.5.
  Tensor a = tensor::tensor({1.0, 2.0}, TensorOptions(kFloat64)).requires_grad_(true);
  (a.to(kComplex128) * complex128(0.5, 2)).real().sum().backward();
  EXPECT_EQ(a.grad().dtype(), kFloat64);
  EXPECT_TRUE(allclose(a.grad(), tensor::tensor({0.5, 0.5}, TensorOptions(kFloat64))));
}

TEST(CopyAutograd, FillRecordsAndRejectsLeaves) {
  Tensor x = tensor::tensor({1.0, 2.0, 3.0}).requires_grad_(true);
  try {
    x.fill_(0);
    FAIL() << "fill_ on a leaf that requires grad must raise, as in libtorch";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fill_"), std::string::npos) << e.what();
  }
  {
    NoGradGuard no_grad;
    EXPECT_NO_THROW(x.detach().fill_(1));  // allowed without recording (x is now all 1)
  }
  Tensor w = tensor::tensor({1.0, 2.0, 3.0}).requires_grad_(true);
  // y = 2w, then y[0:2] = 5: l = sum(y * w) = 5 w0 + 5 w1 + 2 w2^2, dl/dw = [5, 5, 4 w2].
  Tensor y = w * 2;
  y.narrow(0, 0, 2).fill_(5);
  (y * w).sum().backward();
  EXPECT_TRUE(allclose(w.grad(), tensor::tensor({5.0, 5.0, 12.0}))) << w.grad();
  // zero_ is fill_(0): the old values get no gradient.
  Tensor v = tensor::tensor({1.0, -1.0}).requires_grad_(true);
  Tensor u = v * 3;
  u.zero_();
  (u + v).sum().backward();
  EXPECT_TRUE(allclose(v.grad(), tensor::tensor({1.0, 1.0})));
}

TEST(CopyAutograd, CopyIntoANonLeafSendsTheGradientToTheSource) {
  // dst = 3a, dst[1] = b (copy_ through a view): l = sum(dst * [1, 2]) = 3 a0 + 2 b.
  Tensor a = tensor::tensor({1.0, 1.0}).requires_grad_(true);
  Tensor b = tensor::tensor(4.0).requires_grad_(true);
  Tensor dst = a * 3;
  dst.select(0, 1).copy_(b);
  (dst * tensor::tensor({1.0, 2.0})).sum().backward();
  EXPECT_TRUE(allclose(a.grad(), tensor::tensor({3.0, 0.0})));
  EXPECT_NEAR(b.grad().item<double>(), 2.0, 1e-12);
}

// ---- advanced indexing: index and index_put_ are dispatcher ops too ----
#include "src/ops/AdvancedIndexing.h"

namespace {
Tensor log_index(const Tensor& self, TensorList indices) {
  seen().push_back("index");
  return ops::advanced_index_ops().index.redispatch(DispatchKey::Profiler, self, indices);
}
Tensor& log_index_put(Tensor& self, TensorList indices, const Tensor& value) {
  seen().push_back("index_put_");
  return ops::advanced_index_ops().index_put_.redispatch(DispatchKey::Profiler, self, indices, value);
}
}  // namespace

TEST(IndexDispatch, AWrappingKeySeesIndexAndIndexPut) {
  using indexing::Slice;
  Tensor x = arange(12, TensorOptions(kFloat32)).view({3, 4});
  auto& t = ops::advanced_index_ops();
  t.index.set(DispatchKey::Profiler, &log_index);
  t.index_put_.set(DispatchKey::Profiler, &log_index_put);
  seen().clear();
  Tensor picked, y = zeros({3, 4});
  {
    ProfilerKeyOn on;
    // x[[2, 0], 1:3]: the slice is a view, the index tensor the dispatched op.
    picked = x.index({tensor::tensor({2, 0}), Slice(1, 3)});
    y.index_put_({tensor::tensor({true, false, true})}, tensor::tensor({5.0f}));
  }
  t.index.set(DispatchKey::Profiler, nullptr);
  t.index_put_.set(DispatchKey::Profiler, nullptr);
  EXPECT_EQ(seen(), Names({"index", "index_put_"}));
  EXPECT_TRUE(equal(picked, tensor::tensor({{9.f, 10.f}, {1.f, 2.f}})));
  EXPECT_TRUE(equal(y.sum(1), tensor::tensor({20.f, 0.f, 20.f})));
}

TEST(IndexDispatch, MetaGivesTheShapeWithoutData) {
  Tensor m = empty({5, 6, 7}, TensorOptions().device(Device("meta")));
  // Separated index tensors: their broadcast shape [2, 3] leads, then the dim they skip (NumPy).
  Tensor out = m.index({tensor::tensor({{0}, {4}}), indexing::Slice(), tensor::tensor({1, 2, 3})});
  EXPECT_TRUE(out.is_meta());
  EXPECT_EQ(out.sizes().vec(), std::vector<int64_t>({2, 3, 6}));
  // A meta index over CPU data dispatches to Meta too.
  Tensor cpu = zeros({4, 2});
  Tensor idx = empty({3}, TensorOptions(kInt64).device(Device("meta")));
  Tensor o2 = cpu.index({idx});
  EXPECT_TRUE(o2.is_meta());
  EXPECT_EQ(o2.sizes().vec(), std::vector<int64_t>({3, 2}));
  EXPECT_THROW(m.index({empty({5}, TensorOptions(kBool).device(Device("meta")))}), Error);
}

// ---- factories dispatch on the device their options name ----
#include "src/ops/FactoryOps.h"

namespace {
Tensor log_empty(IntArrayRef sizes, const TensorOptions& o) {
  seen().push_back("empty");
  return ops::factory_ops().empty.redispatch_on(o.device(), DispatchKey::Profiler, sizes, o);
}
Tensor log_randn(IntArrayRef sizes, const TensorOptions& o) {
  seen().push_back("randn");
  return ops::factory_ops().randn.redispatch_on(o.device(), DispatchKey::Profiler, sizes, o);
}
Tensor log_arange(const Scalar& a, const Scalar& b, const Scalar& c, const TensorOptions& o) {
  seen().push_back("arange");
  return ops::factory_ops().arange.redispatch_on(o.device(), DispatchKey::Profiler, a, b, c, o);
}
}  // namespace

TEST(FactoryDispatch, AWrappingKeySeesFactories) {
  auto& f = ops::factory_ops();
  f.empty.set(DispatchKey::Profiler, &log_empty);
  f.randn.set(DispatchKey::Profiler, &log_randn);
  f.arange.set(DispatchKey::Profiler, &log_arange);
  seen().clear();
  Tensor e, r, a;
  {
    ProfilerKeyOn on;
    e = empty({2, 3});
    r = randn({4});
    a = arange(5);  // arange(end) calls arange(0, end, 1)
  }
  f.empty.set(DispatchKey::Profiler, nullptr);
  f.randn.set(DispatchKey::Profiler, nullptr);
  f.arange.set(DispatchKey::Profiler, nullptr);
  ASSERT_GE(seen().size(), 3u);
  EXPECT_EQ(seen()[0], "empty");
  EXPECT_EQ(seen()[1], "randn");  // randn allocates inside itself: its empty calls follow
  EXPECT_NE(std::find(seen().begin() + 2, seen().end(), "arange"), seen().end());
  EXPECT_EQ(e.sizes().vec(), std::vector<int64_t>({2, 3}));
  EXPECT_EQ(r.numel(), 4);
  EXPECT_TRUE(equal(a, tensor::tensor({0, 1, 2, 3, 4}, TensorOptions(kInt64))));
}

TEST(FactoryDispatch, MetaFactoriesAllocateNothing) {
  const TensorOptions meta = TensorOptions().device(Device("meta"));
  Tensor z = zeros({3, 4}, meta);
  EXPECT_TRUE(z.is_meta());
  EXPECT_EQ(z.sizes().vec(), std::vector<int64_t>({3, 4}));
  Tensor s = empty_strided({2, 3}, {1, 2}, meta);
  EXPECT_TRUE(s.is_meta());
  EXPECT_EQ(s.strides().vec(), std::vector<int64_t>({1, 2}));
}

// ---- split, chunk and unbind dispatch as composites of views ----
#include "src/ops/IndexOps.h"

namespace {
std::vector<Tensor> log_unbind(const Tensor& self, int64_t dim) {
  seen().push_back("unbind");
  return ops::unbind_op().redispatch(DispatchKey::Profiler, self, dim);
}
std::vector<Tensor> log_chunk(const Tensor& self, int64_t chunks, int64_t dim) {
  seen().push_back("chunk");
  return ops::chunk_op().redispatch(DispatchKey::Profiler, self, chunks, dim);
}
}  // namespace

TEST(SplitDispatch, AWrappingKeySeesUnbindAndChunk) {
  Tensor x = arange(6, TensorOptions(kFloat32)).view({2, 3});
  ops::unbind_op().set(DispatchKey::Profiler, &log_unbind);
  ops::chunk_op().set(DispatchKey::Profiler, &log_chunk);
  seen().clear();
  std::vector<Tensor> rows, cols;
  {
    ProfilerKeyOn on;
    rows = x.unbind(0);
    cols = x.chunk(2, 1);
  }
  ops::unbind_op().set(DispatchKey::Profiler, nullptr);
  ops::chunk_op().set(DispatchKey::Profiler, nullptr);
  EXPECT_EQ(seen(), Names({"unbind", "chunk"}));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(equal(rows[1], tensor::tensor({3.f, 4.f, 5.f})));
  ASSERT_EQ(cols.size(), 2u);  // 3 columns in chunks of 2: [2, 2] then [2, 1]
  EXPECT_TRUE(equal(cols[1], tensor::tensor({{2.f}, {5.f}})));
}
