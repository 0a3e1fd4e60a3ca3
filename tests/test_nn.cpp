// nn: Module bookkeeping (names, order, train/eval, to(), zero_grad, printing, state dicts),
// holders and containers, the layers against float64 reference loops, the losses against
// float64 reference loops written here (weights, ignore_index, label smoothing, every
// reduction) plus gradcheck, the initializers' statistics and gradient clipping.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include "tests/grad_test_util.h"
#include "tests/test_util.h"

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using namespace tensor;
using tensor::testing::vals;
using tensor::testing::expect_near;
namespace F = tensor::nn::functional;
using autograd::variable_list;
using tensor::testing::check;
using tensor::testing::expect_error;

namespace {

std::vector<int64_t> ivals(const Tensor& t) {
  Tensor c = t.contiguous().to(kInt64);
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

Tensor leaf64(IntArrayRef shape, double lo = -1, double hi = 1) {
  return (tensor::rand(shape, kFloat64) * (hi - lo) + lo).detach().requires_grad_(true);
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}
double std_of(const std::vector<double>& v) {
  double m = mean_of(v), s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

struct Block : nn::Module {
  Block() : lin(register_module("lin", nn::Linear(3, 4))) {
    scale = register_parameter("scale", tensor::ones({4}));
    count = register_buffer("count", tensor::zeros({1}, kInt64));
    running = register_buffer("running", tensor::zeros({4}));
  }
  Tensor forward(Tensor x) { return lin(x) * scale; }
  nn::Linear lin;
  Tensor scale, count, running;
};

struct Net : nn::Module {
  Net()
      : fc1(register_module("fc1", nn::Linear(3, 5))),
        block(register_module("block", std::make_shared<Block>())),
        drop(register_module("drop", nn::Dropout(0.25))),
        fc2(register_module("fc2", nn::Linear(nn::LinearOptions(4, 2).bias(false)))) {}
  Tensor forward(Tensor x) { return fc2(drop(block->forward(tensor::relu(fc1(x)).narrow(-1, 0, 3)))); }
  nn::Linear fc1;
  std::shared_ptr<Block> block;
  nn::Dropout drop;
  nn::Linear fc2;
};

struct TwiceImpl : nn::Module {
  Tensor forward(const Tensor& x) { return x * 2; }
};
TENSOR_MODULE(Twice);

}  // namespace

// ---------------------------------------------------------------------------------------------
// Module bookkeeping

TEST(NNModule, NamedParametersOrderAndDottedNames) {
  auto net = std::make_shared<Net>();
  auto named = net->named_parameters();
  std::vector<std::string> want = {"fc1.weight", "fc1.bias", "block.scale", "block.lin.weight", "block.lin.bias",
                                   "fc2.weight"};
  EXPECT_EQ(named.keys(), want);
  // The handles are the modules' own tensors, all leaves requiring grad.
  EXPECT_TRUE(named["fc1.weight"].is_same(net->fc1->weight));
  EXPECT_TRUE(named["block.lin.bias"].is_same(net->block->lin->bias));
  for (const auto& [name, p] : named) {
    EXPECT_TRUE(p.requires_grad()) << name;
    EXPECT_TRUE(p.is_leaf()) << name;
  }
  EXPECT_EQ(named["fc1.weight"].sizes(), IntArrayRef({5, 3}));
  EXPECT_EQ(named["fc2.weight"].sizes(), IntArrayRef({2, 4}));
  EXPECT_EQ(net->parameters().size(), 6u);
  EXPECT_EQ(net->parameters(/*recurse=*/false).size(), 0u);
  EXPECT_EQ(net->block->named_parameters(false).keys(), (std::vector<std::string>{"scale"}));
  // fc2 has no bias: registered as undefined, not listed (as libtorch).
  EXPECT_FALSE(net->fc2->bias.defined());
  EXPECT_EQ(net->fc2->named_parameters().keys(), (std::vector<std::string>{"weight"}));
  // libtorch's item accessors.
  EXPECT_EQ(named[0].key(), "fc1.weight");
  EXPECT_TRUE(named[0].value().is_same(net->fc1->weight));
  EXPECT_EQ(named.find("nope"), nullptr);
  expect_error([&] { named["nope"]; }, {"nope"});
}

TEST(NNModule, BuffersChildrenModules) {
  auto net = std::make_shared<Net>();
  EXPECT_EQ(net->named_buffers().keys(), (std::vector<std::string>{"block.count", "block.running"}));
  EXPECT_EQ(net->buffers().size(), 2u);
  EXPECT_FALSE(net->buffers()[0].requires_grad());
  EXPECT_EQ(net->named_children().keys(), (std::vector<std::string>{"fc1", "block", "drop", "fc2"}));
  EXPECT_EQ(net->children().size(), 4u);
  EXPECT_EQ(net->named_modules().keys(), (std::vector<std::string>{"", "fc1", "block", "block.lin", "drop", "fc2"}));
  EXPECT_EQ(net->modules(/*include_self=*/false).size(), 5u);
  EXPECT_EQ(net->modules()[0].get(), net.get());
  // state_dict: parameters then buffers, the same handles.
  auto sd = net->state_dict();
  EXPECT_EQ(sd.size(), 8u);
  EXPECT_EQ(sd[6].key(), "block.count");
  EXPECT_TRUE(sd["block.running"].is_same(net->block->running));
  // Names reported by name(): given for library modules, demangled for user ones.
  EXPECT_EQ(net->name(), "Net");
  EXPECT_EQ(net->fc1->name(), "tensor::nn::Linear");
  EXPECT_EQ(net->block->name(), "Block");
  int visited = 0;
  net->apply([&](nn::Module&) { ++visited; });
  EXPECT_EQ(visited, 6);
  std::vector<std::string> names;
  net->apply([&](const std::string& n, nn::Module&) { names.push_back(n); }, "net");
  EXPECT_EQ(names, (std::vector<std::string>{"net", "net.fc1", "net.block", "net.block.lin", "net.drop", "net.fc2"}));
}

TEST(NNModule, RegistrationErrors) {
  nn::Module m;
  m.register_parameter("w", tensor::zeros({2}));
  expect_error([&] { m.register_parameter("w", tensor::zeros({2})); }, {"Parameter", "'w'", "already defined"});
  expect_error([&] { m.register_parameter("a.b", tensor::zeros({2})); }, {"register_parameter", "a.b", "dot"});
  expect_error([&] { m.register_buffer("", tensor::zeros({2})); }, {"register_buffer", "empty"});
  expect_error([&] { m.register_module("x", nn::Linear(nullptr)); }, {"register_module", "x"});
  expect_error([&] { m.register_parameter("i", tensor::zeros({2}, kInt64)); }, {"requires_grad", "int64"});
  // A non-floating tensor is fine as a parameter that does not train, and as a buffer.
  m.register_parameter("frozen", tensor::zeros({2}, kInt64), /*requires_grad=*/false);
  EXPECT_FALSE(m.named_parameters()["frozen"].requires_grad());
  // A parameter made from a recorded computation becomes a leaf.
  Tensor a = tensor::ones({2}).requires_grad_(true);
  Tensor& p = m.register_parameter("derived", a * 2);
  EXPECT_TRUE(p.is_leaf());
  EXPECT_TRUE(p.requires_grad());
  // replace / unregister keep the order and names consistent.
  m.register_module("child", nn::Linear(2, 2));
  m.register_module("other", nn::ReLU());
  m.replace_module("child", nn::Linear(2, 3));
  EXPECT_EQ(m.named_children().keys(), (std::vector<std::string>{"child", "other"}));
  EXPECT_EQ(m.named_parameters()["child.weight"].size(0), 3);
  m.unregister_module("other");
  EXPECT_EQ(m.named_children().keys(), (std::vector<std::string>{"child"}));
  expect_error([&] { m.unregister_module("other"); }, {"unregister_module", "other"});
}

TEST(NNModule, TrainEvalRecursive) {
  auto net = std::make_shared<Net>();
  for (const auto& m : net->modules()) EXPECT_TRUE(m->is_training());
  net->eval();
  for (const auto& m : net->modules()) EXPECT_FALSE(m->is_training()) << m->name();
  net->block->train();
  EXPECT_FALSE(net->is_training());
  EXPECT_TRUE(net->block->is_training());
  EXPECT_TRUE(net->block->lin->is_training());
  EXPECT_FALSE(net->fc1->is_training());
  net->train();
  for (const auto& m : net->modules()) EXPECT_TRUE(m->is_training());
  // Dropout inside follows the mode: identity in eval.
  net->eval();
  Tensor x = tensor::randn({4, 3});
  EXPECT_TRUE(net->forward(x).equal(net->forward(x)));
}

TEST(NNModule, ToFloat64ConvertsInPlace) {
  auto net = std::make_shared<Net>();
  Tensor w = net->fc1->weight;  // a handle taken before the conversion
  std::vector<double> before = vals(w);
  auto opt_before = optim::SGD(net->parameters(), optim::SGDOptions(0.1));
  net->to(kFloat64);
  // Every holder of the parameter sees the new dtype and the same values.
  EXPECT_EQ(w.dtype(), kFloat64);
  EXPECT_EQ(net->fc1->weight.dtype(), kFloat64);
  EXPECT_EQ(net->named_parameters()["fc1.weight"].dtype(), kFloat64);
  EXPECT_EQ(opt_before.parameters()[0].dtype(), kFloat64);
  EXPECT_EQ(vals(w), before);
  EXPECT_TRUE(w.requires_grad());
  EXPECT_TRUE(w.is_leaf());
  for (const auto& [name, p] : net->named_parameters()) EXPECT_EQ(p.dtype(), kFloat64) << name;
  // Floating buffers convert, integer ones keep their dtype.
  EXPECT_EQ(net->block->running.dtype(), kFloat64);
  EXPECT_EQ(net->block->count.dtype(), kInt64);
  // The model runs and trains in float64.
  Tensor y = net->forward(tensor::randn({2, 3}, kFloat64));
  EXPECT_EQ(y.dtype(), kFloat64);
  y.sum().backward();
  EXPECT_EQ(w.grad().dtype(), kFloat64);
  std::vector<double> w0 = vals(w), g0 = vals(w.grad());
  opt_before.step();
  std::vector<double> w1 = vals(w);
  for (size_t i = 0; i < w0.size(); ++i) EXPECT_DOUBLE_EQ(w1[i], w0[i] - 0.1 * g0[i]);
  // A gradient present at conversion time is converted with its parameter.
  net->to(kFloat32);
  EXPECT_EQ(w.dtype(), kFloat32);
  EXPECT_EQ(w.grad().dtype(), kFloat32);
  expect_error([&] { net->to(kInt32); }, {"Module::to", "int32"});
}

TEST(NNModule, ZeroGrad) {
  nn::Linear fc(3, 2);
  fc(tensor::randn({4, 3})).sum().backward();
  ASSERT_TRUE(fc->weight.grad().defined());
  fc->zero_grad(/*set_to_none=*/false);
  EXPECT_EQ(vals(fc->weight.grad()), std::vector<double>(6, 0.0));
  EXPECT_EQ(vals(fc->bias.grad()), std::vector<double>(2, 0.0));
  fc->zero_grad();
  EXPECT_FALSE(fc->weight.grad().defined());
  EXPECT_FALSE(fc->bias.grad().defined());
}

TEST(NNModule, PrettyPrint) {
  auto net = std::make_shared<Net>();
  std::ostringstream os;
  os << *net;
  EXPECT_EQ(os.str(),
            "Net(\n"
            "  (fc1): tensor::nn::Linear(in_features=3, out_features=5, bias=true)\n"
            "  (block): Block(\n"
            "    (lin): tensor::nn::Linear(in_features=3, out_features=4, bias=true)\n"
            "  )\n"
            "  (drop): tensor::nn::Dropout(p=0.25, inplace=false)\n"
            "  (fc2): tensor::nn::Linear(in_features=4, out_features=2, bias=false)\n"
            ")");
  nn::Sequential seq(nn::Linear(2, 3), nn::GELU(nn::GELUOptions().approximate("tanh")), nn::Flatten(),
                     nn::Embedding(nn::EmbeddingOptions(10, 4).padding_idx(0)), nn::SiLU(), nn::Tanh(),
                     nn::Sigmoid(), nn::ReLU());
  std::ostringstream os2;
  os2 << seq;
  EXPECT_EQ(os2.str(),
            "tensor::nn::Sequential(\n"
            "  (0): tensor::nn::Linear(in_features=2, out_features=3, bias=true)\n"
            "  (1): tensor::nn::GELU(approximate='tanh')\n"
            "  (2): tensor::nn::Flatten(start_dim=1, end_dim=-1)\n"
            "  (3): tensor::nn::Embedding(num_embeddings=10, embedding_dim=4, padding_idx=0)\n"
            "  (4): tensor::nn::SiLU()\n"
            "  (5): tensor::nn::Tanh()\n"
            "  (6): tensor::nn::Sigmoid()\n"
            "  (7): tensor::nn::ReLU()\n"
            ")");
}

TEST(NNModule, LoadStateDict) {
  nn::Linear a(3, 2), b(3, 2);
  Tensor w_before = b->weight;
  b->load_state_dict(a->state_dict());
  EXPECT_TRUE(b->weight.is_same(w_before));  // copied in place
  EXPECT_EQ(vals(b->weight), vals(a->weight));
  EXPECT_EQ(vals(b->bias), vals(a->bias));
  // float64 values are converted into the float32 parameters.
  std::vector<std::pair<std::string, Tensor>> sd = {{"weight", tensor::ones({2, 3}, kFloat64)},
                                                    {"bias", tensor::zeros({2}, kFloat64)}};
  b->load_state_dict(sd);
  EXPECT_EQ(b->weight.dtype(), kFloat32);
  EXPECT_EQ(vals(b->weight), std::vector<double>(6, 1.0));
  expect_error([&] { b->load_state_dict({{"weight", tensor::ones({2, 3})}}); }, {"missing keys", "bias"});
  expect_error([&] { b->load_state_dict({{"weight", tensor::ones({2, 3})}, {"bias", tensor::ones({2})}, {"x", tensor::ones({1})}}); },
               {"unexpected keys", "x"});
  expect_error([&] { b->load_state_dict({{"weight", tensor::ones({3, 2})}, {"bias", tensor::ones({2})}}); },
               {"size mismatch", "weight", "[2, 3]", "[3, 2]"});
  b->load_state_dict({{"bias", tensor::full({2}, 5.0)}}, /*strict=*/false);
  EXPECT_EQ(vals(b->bias), std::vector<double>(2, 5.0));
}

TEST(NNModule, SharedParametersListedOnce) {
  // Tied weights: a module registered twice and a tensor registered in two modules.
  struct Tied : nn::Module {
    Tied() {
      auto shared = nn::Linear(2, 2);
      register_module("a", shared);
      register_module("b", shared);
      register_module("c", nn::Linear(2, 2));
    }
  } tied;
  EXPECT_EQ(tied.named_parameters().keys(), (std::vector<std::string>{"a.weight", "a.bias", "c.weight", "c.bias"}));
}

TEST(NNModule, Holders) {
  nn::Linear empty(nullptr);
  EXPECT_TRUE(empty.is_empty());
  EXPECT_FALSE(static_cast<bool>(empty));
  expect_error([&] { empty->forward(tensor::ones({1, 2})); }, {"empty module holder"});
  nn::Linear fc = nn::Linear(4, 2);
  nn::Linear copy = fc;  // holders share the module
  EXPECT_EQ(copy.get(), fc.get());
  std::shared_ptr<nn::LinearImpl> impl = fc;  // code written for shared_ptr members keeps working
  EXPECT_EQ(impl.get(), fc.get());
  nn::Module& base = *fc;
  EXPECT_EQ(base.as<nn::Linear>(), fc.get());
  EXPECT_EQ(base.as<nn::LinearImpl>(), fc.get());
  EXPECT_EQ(base.as<nn::ReLU>(), nullptr);
  // TENSOR_MODULE for a user module.
  Twice t;
  EXPECT_EQ(vals(t(tensor::tensor({1.0, 2.0}))), (std::vector<double>{2.0, 4.0}));
}

// ---------------------------------------------------------------------------------------------
// Containers

TEST(NNContainers, SequentialNamingForwardIndexing) {
  manual_seed(3);
  nn::Sequential seq(nn::Linear(3, 4), nn::ReLU(), nn::Linear(4, 2));
  EXPECT_EQ(seq->size(), 3u);
  EXPECT_EQ(seq->named_parameters().keys(), (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  Tensor x = tensor::randn({5, 3});
  auto l0 = seq->ptr<nn::LinearImpl>(0);
  auto& l2 = seq->at<nn::LinearImpl>(2);
  Tensor manual = l2.forward(tensor::relu(l0->forward(x)));
  EXPECT_TRUE(seq->forward(x).allclose(manual));
  EXPECT_TRUE(seq(x).allclose(manual));
  EXPECT_EQ(seq[1]->name(), "tensor::nn::ReLU");
  EXPECT_NE(seq[1]->as<nn::ReLU>(), nullptr);
  expect_error([&] { seq->ptr(3); }, {"Sequential", "index 3", "3 modules"});
  expect_error([&] { seq->ptr<nn::ReLUImpl>(0); }, {"Sequential::ptr<T>"});
  // Named entries, a nested Sequential, a function, and extend.
  nn::Sequential outer;
  outer->push_back("embed", nn::Linear(2, 3));
  outer->push_back(seq.ptr());
  outer->push_back(nn::Functional(tensor::tanh));
  outer->push_back(nn::Functional(tensor::softmax, 1, std::optional<ScalarType>()));
  EXPECT_EQ(outer->named_children().keys(), (std::vector<std::string>{"embed", "1", "2", "3"}));
  EXPECT_EQ(outer->named_parameters().keys(),
            (std::vector<std::string>{"embed.weight", "embed.bias", "1.0.weight", "1.0.bias", "1.2.weight", "1.2.bias"}));
  Tensor z = tensor::randn({2, 2});
  Tensor want = tensor::softmax(tensor::tanh(seq(outer->at<nn::LinearImpl>(0).forward(z))), 1);
  EXPECT_TRUE(outer(z).allclose(want));
  nn::Sequential more(nn::ReLU{});
  more->extend(*seq);
  EXPECT_EQ(more->size(), 4u);
  EXPECT_EQ(more->named_parameters().keys(), (std::vector<std::string>{"1.weight", "1.bias", "3.weight", "3.bias"}));
  EXPECT_EQ(more[1].get(), seq[0].get());
  int n = 0;
  for (const auto& m : *more) n += !m.is_empty();  // AnyModules, as libtorch
  EXPECT_EQ(n, 4);
  nn::Sequential none;
  expect_error([&] { none->forward(x); }, {"empty Sequential"});
}

TEST(NNContainers, ModuleList) {
  nn::ModuleList list(nn::Linear(2, 2), nn::ReLU());
  list->push_back(nn::Linear(2, 3));
  EXPECT_EQ(list->size(), 3u);
  EXPECT_EQ(list->named_parameters().keys(), (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  list->insert(1, nn::Linear(2, 5));
  EXPECT_EQ(list->named_children().keys(), (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(list->ptr<nn::LinearImpl>(1)->options.out_features(), 5);
  EXPECT_EQ(list->named_parameters()["3.weight"].size(0), 3);
  EXPECT_NE(list[2]->as<nn::ReLU>(), nullptr);
  // Iterate and chain by hand.
  Tensor x = tensor::randn({1, 2});
  Tensor y = list->at<nn::LinearImpl>(0).forward(x);
  EXPECT_EQ(y.sizes(), IntArrayRef({1, 2}));
  size_t count = 0;
  for (const auto& m : *list) count += m->children().size() == 0;
  EXPECT_EQ(count, 4u);
  struct Holder : nn::Module {
    Holder() : layers(register_module("layers", nn::ModuleList(nn::Linear(1, 1), nn::Linear(1, 1)))) {}
    nn::ModuleList layers;
  } h;
  EXPECT_EQ(h.named_parameters().keys(),
            (std::vector<std::string>{"layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias"}));
  std::ostringstream os;
  os << h;
  EXPECT_EQ(os.str(),
            "Holder(\n  (layers): tensor::nn::ModuleList(\n"
            "    (0): tensor::nn::Linear(in_features=1, out_features=1, bias=true)\n"
            "    (1): tensor::nn::Linear(in_features=1, out_features=1, bias=true)\n  )\n)");
}

// ---------------------------------------------------------------------------------------------
// Layers

TEST(NNLayers, LinearMatchesFloat64Loop) {
  manual_seed(4);
  nn::Linear fc(5, 3);
  fc->to(kFloat64);
  // A non-contiguous 3-d input.
  Tensor x = tensor::randn({4, 5, 2}, kFloat64).transpose(1, 2);
  ASSERT_FALSE(x.is_contiguous());
  Tensor y = fc(x);
  ASSERT_EQ(y.sizes(), IntArrayRef({4, 2, 3}));
  std::vector<double> W = vals(fc->weight), B = vals(fc->bias), X = vals(x), Y = vals(y);
  for (int64_t r = 0; r < 8; ++r)
    for (int64_t o = 0; o < 3; ++o) {
      double acc = B[o];
      for (int64_t i = 0; i < 5; ++i) acc += X[r * 5 + i] * W[o * 5 + i];
      EXPECT_NEAR(Y[r * 3 + o], acc, 1e-12);
    }
  // 1-d input and no bias.
  nn::Linear nb(nn::LinearOptions(5, 3).bias(false));
  nb->to(kFloat64);
  Tensor v = tensor::randn({5}, kFloat64);
  std::vector<double> Wn = vals(nb->weight), V = vals(v), out = vals(nb(v));
  ASSERT_EQ(out.size(), 3u);
  for (int o = 0; o < 3; ++o) {
    double acc = 0;
    for (int i = 0; i < 5; ++i) acc += V[i] * Wn[o * 5 + i];
    EXPECT_NEAR(out[o], acc, 1e-12);
  }
  expect_error([&] { fc(tensor::randn({2, 4}, kFloat64)); }, {"linear", "[2, 4]", "in_features = 5"});
  expect_error([&] { fc(tensor::randn({2, 5})); }, {"linear", "same dtype", "float32", "float64"});
}

TEST(NNLayers, LinearGradcheck) {
  manual_seed(5);
  Tensor x = leaf64({3, 4}), w = leaf64({2, 4}), b = leaf64({2});
  auto f = [](const variable_list& in) { return F::linear(in[0], in[1], in[2]); };
  check("linear gradcheck", [&] { return autograd::gradcheck(f, {x, w, b}); });
  check("linear gradgradcheck", [&] { return autograd::gradgradcheck(f, {x, w, b}); });
}

TEST(NNLayers, LinearDefaultInitialization) {
  manual_seed(6);
  nn::Linear fc(400, 300);
  const double bound = 1.0 / std::sqrt(400.0);  // kaiming_uniform_(a = sqrt(5)) and the bias rule
  std::vector<double> w = vals(fc->weight), b = vals(fc->bias);
  for (double v : w) ASSERT_LE(std::fabs(v), bound);
  for (double v : b) ASSERT_LE(std::fabs(v), bound);
  EXPECT_NEAR(mean_of(w), 0.0, 0.02 * bound);
  EXPECT_NEAR(std_of(w), bound / std::sqrt(3.0), 0.01 * bound);
  EXPECT_NEAR(std_of(b), bound / std::sqrt(3.0), 0.15 * bound);
}

TEST(NNLayers, Activations) {
  manual_seed(7);
  Tensor x = tensor::randn({6, 7}, kFloat64).t() * 3;  // non-contiguous
  std::vector<double> X = vals(x);
  auto ref = [&](auto fn) {
    std::vector<double> r;
    for (double v : X) r.push_back(fn(v));
    return r;
  };
  const double k = std::sqrt(2.0 / M_PI);
  expect_near(vals(nn::ReLU()(x)), ref([](double v) { return v > 0 ? v : 0; }), 1e-15, "relu");
  expect_near(vals(nn::GELU()(x)), ref([](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }), 1e-12,
              "gelu");
  expect_near(vals(nn::GELU(nn::GELUOptions().approximate("tanh"))(x)),
              ref([&](double v) { return 0.5 * v * (1 + std::tanh(k * (v + 0.044715 * v * v * v))); }), 1e-12,
              "gelu tanh");
  expect_near(vals(nn::SiLU()(x)), ref([](double v) { return v / (1 + std::exp(-v)); }), 1e-12, "silu");
  expect_near(vals(nn::Tanh()(x)), ref([](double v) { return std::tanh(v); }), 1e-12, "tanh");
  expect_near(vals(nn::Sigmoid()(x)), ref([](double v) { return 1 / (1 + std::exp(-v)); }), 1e-12, "sigmoid");
  // In-place ReLU writes its input.
  Tensor y = x.clone();
  Tensor r = nn::ReLU(nn::ReLUOptions(true))(y);
  EXPECT_EQ(vals(y), vals(r));
  EXPECT_EQ(vals(r), ref([](double v) { return v > 0 ? v : 0; }));
  // softmax / log_softmax functionals and modules.
  Tensor s = F::softmax(x, F::SoftmaxFuncOptions(1));
  EXPECT_TRUE(s.allclose(tensor::softmax(x, 1)));
  EXPECT_TRUE(nn::LogSoftmax(0)(x).allclose(tensor::log_softmax(x, 0)));
  EXPECT_EQ(F::softmax(tensor::randn({2, 3}), F::SoftmaxFuncOptions(1).dtype(kFloat64)).dtype(), kFloat64);
  expect_error([&] { F::gelu(x, F::GELUFuncOptions().approximate("fast")); }, {"gelu", "fast"});
  Tensor g = leaf64({3, 4}, -3, 3);
  check("gelu tanh gradcheck", [&] {
    return autograd::gradcheck([](const variable_list& in) { return F::gelu(in[0], F::GELUFuncOptions().approximate("tanh")); }, {g});
  });
  check("gelu tanh gradgradcheck", [&] {
    return autograd::gradgradcheck([](const variable_list& in) { return F::gelu(in[0], F::GELUFuncOptions().approximate("tanh")); }, {g});
  });
}

TEST(NNLayers, Flatten) {
  Tensor x = tensor::randn({2, 3, 4, 5});
  EXPECT_EQ(nn::Flatten()(x).sizes(), IntArrayRef({2, 60}));
  EXPECT_EQ(nn::Flatten(nn::FlattenOptions().start_dim(0).end_dim(1))(x).sizes(), IntArrayRef({6, 4, 5}));
  EXPECT_EQ(nn::Flatten(nn::FlattenOptions().start_dim(-2))(x).sizes(), IntArrayRef({2, 3, 20}));
  EXPECT_EQ(vals(nn::Flatten()(x)), vals(x));
}

TEST(NNLayers, DropoutStatisticsAndEval) {
  manual_seed(8);
  const double p = 0.3;
  nn::Dropout drop(p);
  Tensor x = (tensor::rand({200, 500}, kFloat64) + 1).requires_grad_(true);  // no zeros in x
  Tensor y = drop(x);
  std::vector<double> X = vals(x), Y = vals(y);
  int64_t zeros = 0;
  for (size_t i = 0; i < X.size(); ++i) {
    if (Y[i] == 0) {
      ++zeros;
    } else {
      ASSERT_NEAR(Y[i], X[i] / (1 - p), 1e-12);  // kept elements are scaled by 1 / (1 - p)
    }
  }
  const double n = static_cast<double>(X.size());
  // Binomial(n, p): the fraction's std is sqrt(p (1 - p) / n) ~ 0.0014; allow 5 sigma.
  EXPECT_NEAR(zeros / n, p, 5 * std::sqrt(p * (1 - p) / n));
  // The gradient is the same mask, scaled.
  y.sum().backward();
  std::vector<double> G = vals(x.grad());
  for (size_t i = 0; i < X.size(); ++i) ASSERT_DOUBLE_EQ(G[i], Y[i] == 0 ? 0.0 : 1 / (1 - p));
  // Two calls draw different masks.
  EXPECT_FALSE(drop(x).equal(y));
  // Eval: the identity.
  drop->eval();
  Tensor e = drop(x);
  EXPECT_TRUE(e.equal(x));
  EXPECT_TRUE(F::dropout(x, F::DropoutFuncOptions().p(0.5).training(false)).equal(x));
  // p = 0 keeps everything, p = 1 drops everything.
  EXPECT_TRUE(F::dropout(x, F::DropoutFuncOptions().p(0)).equal(x));
  EXPECT_EQ(vals(F::dropout(x, F::DropoutFuncOptions().p(1))), std::vector<double>(X.size(), 0.0));
  // In place.
  Tensor z = tensor::ones({1000});
  F::dropout(z, F::DropoutFuncOptions().p(0.5).inplace(true));
  double s = 0;
  for (double v : vals(z)) {
    EXPECT_TRUE(v == 0 || v == 2);
    s += v;
  }
  EXPECT_NEAR(s / 1000, 1.0, 0.2);
  expect_error([&] { nn::Dropout(1.5); }, {"Dropout", "1.5"});
  expect_error([&] { F::dropout(x, F::DropoutFuncOptions().p(-0.1)); }, {"dropout", "-0.1"});
}

TEST(NNLayers, EmbeddingLookupAndPadding) {
  manual_seed(9);
  nn::Embedding emb(nn::EmbeddingOptions(6, 3).padding_idx(2));
  EXPECT_EQ(vals(emb->weight[2]), std::vector<double>(3, 0.0));  // the padding row starts at zero
  Tensor idx = tensor::tensor({{0, 2, 5}, {2, 2, 1}});
  Tensor out = emb(idx);
  ASSERT_EQ(out.sizes(), IntArrayRef({2, 3, 3}));
  std::vector<double> W = vals(emb->weight), O = vals(out);
  std::vector<int64_t> I = ivals(idx);
  for (size_t k = 0; k < I.size(); ++k)
    for (int d = 0; d < 3; ++d) EXPECT_EQ(O[k * 3 + d], W[I[k] * 3 + d]);
  // Gradient: each row gets the sum of its lookups' gradients, the padding row nothing even if
  // its value is nonzero.
  {
    NoGradGuard g;
    emb->weight[2].fill_(7.0);
  }
  Tensor up = tensor::arange(18, kFloat32).reshape({2, 3, 3});
  Tensor o2 = emb(idx);
  EXPECT_EQ(vals(o2[0][1]), std::vector<double>(3, 7.0));  // the forward still reads the row
  (o2 * up).sum().backward();
  std::vector<double> G = vals(emb->weight.grad()), U = vals(up);
  std::vector<double> want(18, 0.0);
  for (size_t k = 0; k < I.size(); ++k)
    if (I[k] != 2)
      for (int d = 0; d < 3; ++d) want[I[k] * 3 + d] += U[k * 3 + d];
  EXPECT_EQ(G, want);
  // Negative padding_idx counts from the end; int32 indices work; 0-dim indices give one row.
  nn::Embedding neg(nn::EmbeddingOptions(4, 2).padding_idx(-1));
  EXPECT_EQ(*neg->options.padding_idx(), 3);
  EXPECT_EQ(vals(neg->weight[3]), std::vector<double>(2, 0.0));
  EXPECT_EQ(vals(emb(tensor::tensor({1, 5}).to(kInt32))), vals(emb(tensor::tensor({1, 5}))));
  EXPECT_EQ(emb(tensor::tensor(4)).sizes(), IntArrayRef({3}));
  expect_error([&] { emb(tensor::tensor({1.0, 2.0})); }, {"embedding", "integer", "float32"});
  expect_error([&] { nn::Embedding(nn::EmbeddingOptions(4, 2).padding_idx(4)); }, {"Embedding", "padding_idx 4"});
  EXPECT_THROW(emb(tensor::tensor({6})), tensor::Error);  // out of range
  // Default init N(0, 1).
  nn::Embedding big(1000, 100);
  std::vector<double> bw = vals(big->weight);
  EXPECT_NEAR(mean_of(bw), 0.0, 0.02);
  EXPECT_NEAR(std_of(bw), 1.0, 0.02);
  // Given weights.
  Tensor w0 = tensor::arange(8, kFloat32).reshape({4, 2});
  nn::Embedding given(nn::EmbeddingOptions(4, 2)._weight(w0));
  EXPECT_EQ(vals(given(tensor::tensor({3}))), (std::vector<double>{6, 7}));
  // embedding gradcheck w.r.t. the weight (without padding: that row's zero gradient is by design).
  Tensor w = leaf64({5, 3});
  Tensor ix = tensor::tensor({{4, 0, 4}, {1, 1, 3}});
  check("embedding gradcheck", [&] {
    return autograd::gradcheck([&](const variable_list& in) {
      return F::embedding(ix, in[0]);
    }, {w});
  });
}

// ---------------------------------------------------------------------------------------------
// Losses: float64 reference loops

namespace {

// Shape [N, C, d...] (or [C]) laid out contiguously; S = prod(d...).
struct CEShape {
  int64_t N, C, S;
};
CEShape ce_shape(IntArrayRef s) {
  if (s.size() == 1) return {1, s[0], 1};
  int64_t S = 1;
  for (size_t i = 2; i < s.size(); ++i) S *= s[i];
  return {s[0], s[1], S};
}

std::vector<double> log_softmax_ref(const std::vector<double>& x, CEShape sh) {
  std::vector<double> out(x.size());
  for (int64_t n = 0; n < sh.N; ++n)
    for (int64_t s = 0; s < sh.S; ++s) {
      double mx = -INFINITY;
      for (int64_t c = 0; c < sh.C; ++c) mx = std::max(mx, x[(n * sh.C + c) * sh.S + s]);
      double z = 0;
      for (int64_t c = 0; c < sh.C; ++c) z += std::exp(x[(n * sh.C + c) * sh.S + s] - mx);
      for (int64_t c = 0; c < sh.C; ++c) out[(n * sh.C + c) * sh.S + s] = x[(n * sh.C + c) * sh.S + s] - mx - std::log(z);
    }
  return out;
}

// Per-position losses plus the mean's denominator.
struct Ref {
  std::vector<double> per;
  double den;
  double reduce(const std::string& r) const {
    double s = 0;
    for (double v : per) s += v;
    return r == "sum" ? s : s / den;
  }
};

// Class-index cross entropy (logp given: pass log_softmax for cross_entropy, the input for nll).
Ref nll_ref(const std::vector<double>& logp, CEShape sh, const std::vector<int64_t>& t, const std::vector<double>& w,
            int64_t ignore, double ls) {
  Ref r{{}, 0};
  for (int64_t n = 0; n < sh.N; ++n)
    for (int64_t s = 0; s < sh.S; ++s) {
      int64_t y = t[n * sh.S + s];
      if (y == ignore) {
        r.per.push_back(0);
        continue;
      }
      auto W = [&](int64_t c) { return w.empty() ? 1.0 : w[c]; };
      double nll = -W(y) * logp[(n * sh.C + y) * sh.S + s];
      double smooth = 0;
      for (int64_t c = 0; c < sh.C; ++c) smooth -= W(c) * logp[(n * sh.C + c) * sh.S + s];
      r.per.push_back((1 - ls) * nll + ls / sh.C * smooth);
      r.den += W(y);
    }
  return r;
}

Ref prob_ref(const std::vector<double>& logp, CEShape sh, const std::vector<double>& t, const std::vector<double>& w,
             double ls) {
  Ref r{{}, static_cast<double>(sh.N * sh.S)};
  for (int64_t n = 0; n < sh.N; ++n)
    for (int64_t s = 0; s < sh.S; ++s) {
      double l = 0;
      for (int64_t c = 0; c < sh.C; ++c) {
        int64_t k = (n * sh.C + c) * sh.S + s;
        double tt = t[k] * (1 - ls) + ls / sh.C;
        l -= (w.empty() ? 1.0 : w[c]) * logp[k] * tt;
      }
      r.per.push_back(l);
    }
  return r;
}

nn::LossReduction reduction_of(const std::string& r) {
  if (r == "none") return kNone;
  if (r == "sum") return kSum;
  return kMean;
}

const std::vector<std::string> kReductions = {"none", "mean", "sum"};

}  // namespace

TEST(NNLoss, CrossEntropyClassIndicesMatchesReference) {
  manual_seed(10);
  struct Case {
    std::vector<int64_t> shape;
    bool noncontig;
  };
  const std::vector<Case> cases = {{{5}, false}, {{6, 4}, false}, {{6, 4}, true}, {{3, 4, 2, 3}, false}, {{2, 5, 3}, true}};
  for (const auto& cs : cases) {
    CEShape sh = ce_shape(cs.shape);
    Tensor x = tensor::randn(cs.shape, kFloat64) * 2;
    if (cs.noncontig) x = (tensor::randn(std::vector<int64_t>(cs.shape.rbegin(), cs.shape.rend()), kFloat64) * 2)
                             .permute(cs.shape.size() == 2 ? std::vector<int64_t>{1, 0} : std::vector<int64_t>{2, 1, 0});
    std::vector<int64_t> tshape = cs.shape;
    tshape.erase(tshape.begin() + (cs.shape.size() == 1 ? 0 : 1));
    Tensor t = tensor::randint(0, sh.C, tshape);
    // Mark some targets ignored (index 1 of the flat targets, and with ignore_index = 2 below).
    std::vector<int64_t> T = ivals(t);
    Tensor w = tensor::rand({sh.C}, kFloat64) + 0.5;
    std::vector<double> W = vals(w), logp = log_softmax_ref(vals(x), sh);
    for (int64_t ignore : {int64_t{-100}, int64_t{2}}) {
      for (double ls : {0.0, 0.1, 0.35}) {
        for (bool weighted : {false, true}) {
          Ref ref = nll_ref(logp, sh, T, weighted ? W : std::vector<double>{}, ignore, ls);
          for (const auto& r : kReductions) {
            auto opts = F::CrossEntropyFuncOptions().ignore_index(ignore).label_smoothing(ls).reduction(reduction_of(r));
            if (weighted) opts.weight(w);
            Tensor got = F::cross_entropy(x, t, opts);
            std::string what = "cross_entropy shape " + std::to_string(cs.shape.size()) + "d ignore " +
                               std::to_string(ignore) + " ls " + std::to_string(ls) + (weighted ? " weighted " : " ") + r;
            if (r == "none") {
              EXPECT_EQ(got.sizes(), t.sizes()) << what;
              expect_near(vals(got), ref.per, 1e-12, what);
            } else {
              EXPECT_EQ(got.dim(), 0) << what;
              expect_near(vals(got), {ref.reduce(r)}, 1e-12, what);
            }
          }
        }
      }
    }
  }
}

TEST(NNLoss, CrossEntropyHandComputed) {
  // logits [0, ln 2, ln 5] -> probabilities [1/8, 2/8, 5/8]; target 2: loss = ln(8/5).
  Tensor x = tensor::tensor({{0.0, std::log(2.0), std::log(5.0)}}, kFloat64);
  Tensor t = tensor::tensor({2});
  EXPECT_NEAR(F::cross_entropy(x, t).item<double>(), std::log(8.0 / 5.0), 1e-14);
  // Label smoothing 0.3 over 3 classes: 0.7 * ln(8/5) + 0.1 * (ln 8 + ln 4 + ln(8/5)).
  double want = 0.7 * std::log(1.6) + 0.1 * (std::log(8.0) + std::log(4.0) + std::log(1.6));
  EXPECT_NEAR(F::cross_entropy(x, t, F::CrossEntropyFuncOptions().label_smoothing(0.3)).item<double>(), want, 1e-14);
  // The mean over non-ignored targets divides by their weights: (w0 l0 + w2 l2) / (w0 + w2).
  Tensor x2 = tensor::tensor({{0.0, 0.0}, {0.0, std::log(3.0)}, {std::log(3.0), 0.0}}, kFloat64);
  Tensor t2 = tensor::tensor({0, 1, 1});
  Tensor w = tensor::tensor({2.0, 3.0}, kFloat64);
  double l0 = std::log(2.0), l2 = std::log(4.0);
  auto o = F::CrossEntropyFuncOptions().weight(w).ignore_index(1);
  Tensor t2i = tensor::tensor({0, 1, 0});  // second target ignored
  double l2b = std::log(4.0 / 3.0);
  EXPECT_NEAR(F::cross_entropy(x2, t2i, o).item<double>(), (2 * l0 + 2 * l2b) / 4, 1e-14);
  EXPECT_NEAR(F::cross_entropy(x2, t2, F::CrossEntropyFuncOptions().weight(w)).item<double>(),
              (2 * l0 + 3 * std::log(4.0 / 3.0) + 3 * l2) / 8, 1e-14);
  // Every target ignored: the mean is 0/0 = NaN, as libtorch.
  EXPECT_TRUE(std::isnan(F::cross_entropy(x2, tensor::tensor({1, 1, 1}), o).item<double>()));
  EXPECT_EQ(F::cross_entropy(x2, tensor::tensor({1, 1, 1}), F::CrossEntropyFuncOptions(o).reduction(kSum)).item<double>(), 0.0);
}

TEST(NNLoss, CrossEntropyProbabilityTargets) {
  manual_seed(11);
  for (std::vector<int64_t> shape : {std::vector<int64_t>{4, 5}, std::vector<int64_t>{2, 3, 4}, std::vector<int64_t>{6}}) {
    CEShape sh = ce_shape(shape);
    Tensor x = tensor::randn(shape, kFloat64);
    int64_t cdim = shape.size() == 1 ? 0 : 1;
    Tensor t = tensor::softmax(tensor::randn(shape, kFloat64), cdim);
    Tensor w = tensor::rand({sh.C}, kFloat64) + 0.5;
    std::vector<double> logp = log_softmax_ref(vals(x), sh), T = vals(t), W = vals(w);
    for (double ls : {0.0, 0.2})
      for (bool weighted : {false, true}) {
        Ref ref = prob_ref(logp, sh, T, weighted ? W : std::vector<double>{}, ls);
        for (const auto& r : kReductions) {
          auto opts = F::CrossEntropyFuncOptions().label_smoothing(ls).reduction(reduction_of(r));
          if (weighted) opts.weight(w);
          Tensor got = F::cross_entropy(x, t, opts);
          std::string what = "cross_entropy probs ls " + std::to_string(ls) + (weighted ? " weighted " : " ") + r;
          if (r == "none") expect_near(vals(got), ref.per, 1e-12, what);
          else expect_near(vals(got), {ref.reduce(r)}, 1e-12, what);
        }
      }
  }
  expect_error([&] { F::cross_entropy(tensor::randn({2, 3}), tensor::zeros({2, 3}, kInt64)); },
               {"cross_entropy", "probabilities", "floating"});
  expect_error([&] {
    F::cross_entropy(tensor::randn({2, 3}), tensor::rand({2, 3}), F::CrossEntropyFuncOptions().ignore_index(1));
  }, {"cross_entropy", "ignore_index"});
}

TEST(NNLoss, CrossEntropyErrors) {
  Tensor x = tensor::randn({4, 3});
  expect_error([&] { F::cross_entropy(x, tensor::tensor({0, 1, 3, 0})); }, {"cross_entropy", "target 3", "out of bounds", "3 classes"});
  expect_error([&] { F::cross_entropy(x, tensor::tensor({0, -1, 0, 0})); }, {"cross_entropy", "target -1"});
  expect_error([&] { F::cross_entropy(x, tensor::tensor({0, 1, 2})); }, {"cross_entropy", "[3] int64", "[4, 3] float32", "[4]"});
  expect_error([&] { F::cross_entropy(x, tensor::tensor({0.0, 1.0, 2.0, 0.0})); }, {"cross_entropy", "integer", "float32"});
  expect_error([&] { F::cross_entropy(x, tensor::tensor({0, 1, 2, 0}), F::CrossEntropyFuncOptions().weight(tensor::ones({4}))); },
               {"cross_entropy", "weight", "3 classes", "[4] float32"});
  expect_error([&] { F::cross_entropy(x, tensor::tensor({0, 1, 2, 0}), F::CrossEntropyFuncOptions().label_smoothing(1.5)); },
               {"label_smoothing", "1.5"});
  expect_error([&] { F::cross_entropy(tensor::zeros({4, 3}, kInt64), tensor::tensor({0, 1, 2, 0})); },
               {"cross_entropy", "input", "floating", "int64"});
  // ignore_index may lie outside [0, C).
  EXPECT_NO_THROW(F::cross_entropy(x, tensor::tensor({0, -100, 2, 0})));
}

TEST(NNLoss, NLLLossMatchesReference) {
  manual_seed(12);
  Tensor x = tensor::log_softmax(tensor::randn({7, 4}, kFloat64), 1);
  CEShape sh = ce_shape(x.sizes());
  Tensor t = tensor::tensor({0, 3, 1, 1, 2, 3, 0});
  Tensor w = tensor::tensor({0.5, 1.0, 2.0, 1.5}, kFloat64);
  for (int64_t ignore : {int64_t{-100}, int64_t{1}})
    for (bool weighted : {false, true}) {
      Ref ref = nll_ref(vals(x), sh, ivals(t), weighted ? vals(w) : std::vector<double>{}, ignore, 0.0);
      for (const auto& r : kReductions) {
        auto o = F::NLLLossFuncOptions().ignore_index(ignore).reduction(reduction_of(r));
        if (weighted) o.weight(w);
        std::string what = "nll_loss " + r;
        Tensor got = F::nll_loss(x, t, o);
        if (r == "none") expect_near(vals(got), ref.per, 1e-13, what);
        else expect_near(vals(got), {ref.reduce(r)}, 1e-13, what);
      }
    }
  // The module form, with its weight as a buffer.
  nn::NLLLoss mod(nn::NLLLossOptions().weight(w).reduction(kSum));
  EXPECT_EQ(mod->named_buffers().keys(), (std::vector<std::string>{"weight"}));
  EXPECT_NEAR(mod(x, t).item<double>(), nll_ref(vals(x), sh, ivals(t), vals(w), -100, 0).reduce("sum"), 1e-13);
}

TEST(NNLoss, MSEAndL1) {
  manual_seed(13);
  Tensor a = tensor::randn({3, 5}, kFloat64).t(), b = tensor::randn({5, 3}, kFloat64);
  std::vector<double> A = vals(a), B = vals(b);
  std::vector<double> sq, ab;
  for (size_t i = 0; i < A.size(); ++i) {
    sq.push_back((A[i] - B[i]) * (A[i] - B[i]));
    ab.push_back(std::fabs(A[i] - B[i]));
  }
  auto sum = [](const std::vector<double>& v) { double s = 0; for (double x : v) s += x; return s; };
  expect_near(vals(F::mse_loss(a, b, kNone)), sq, 1e-14, "mse none");
  EXPECT_NEAR(F::mse_loss(a, b).item<double>(), sum(sq) / 15, 1e-14);
  EXPECT_NEAR(F::mse_loss(a, b, kSum).item<double>(), sum(sq), 1e-13);
  expect_near(vals(F::l1_loss(a, b, kNone)), ab, 1e-14, "l1 none");
  EXPECT_NEAR(F::l1_loss(a, b).item<double>(), sum(ab) / 15, 1e-14);
  EXPECT_NEAR(nn::L1Loss(kSum)(a, b).item<double>(), sum(ab), 1e-13);
  EXPECT_NEAR(nn::MSELoss()(a, b).item<double>(), sum(sq) / 15, 1e-14);
  // Broadcast target (a row).
  Tensor row = tensor::randn({3}, kFloat64);
  EXPECT_TRUE(F::mse_loss(a, row, kNone).allclose((a - row) * (a - row)));
  expect_error([&] { F::mse_loss(a, tensor::randn({4}, kFloat64)); }, {"mse_loss", "[5, 3]", "[4]", "broadcast"});
  expect_error([&] { F::l1_loss(a, tensor::ones({5, 3}, kInt64)); }, {"l1_loss", "target", "floating"});
}

TEST(NNLoss, BCEWithLogitsMatchesReference) {
  manual_seed(14);
  Tensor x = tensor::randn({4, 3}, kFloat64) * 4;
  Tensor y = tensor::rand({4, 3}, kFloat64);  // soft labels in [0, 1)
  Tensor w = tensor::rand({4, 3}, kFloat64) + 0.5;
  Tensor pw = tensor::tensor({0.5, 2.0, 3.0}, kFloat64);
  std::vector<double> X = vals(x), Y = vals(y), W = vals(w), PW = vals(pw);
  auto logsig = [](double v) { return v < 0 ? v - std::log1p(std::exp(v)) : -std::log1p(std::exp(-v)); };
  for (bool weighted : {false, true})
    for (bool pos : {false, true}) {
      std::vector<double> per;
      for (size_t i = 0; i < X.size(); ++i) {
        double p = pos ? PW[i % 3] : 1.0;
        double l = -(p * Y[i] * logsig(X[i]) + (1 - Y[i]) * logsig(-X[i]));
        per.push_back(weighted ? l * W[i] : l);
      }
      double s = 0;
      for (double v : per) s += v;
      auto o = F::BinaryCrossEntropyWithLogitsFuncOptions();
      if (weighted) o.weight(w);
      if (pos) o.pos_weight(pw);
      std::string what = std::string("bce") + (weighted ? " weighted" : "") + (pos ? " pos_weight" : "");
      expect_near(vals(F::binary_cross_entropy_with_logits(x, y, F::BinaryCrossEntropyWithLogitsFuncOptions(o).reduction(kNone))), per, 1e-13, what);
      EXPECT_NEAR(F::binary_cross_entropy_with_logits(x, y, o).item<double>(), s / 12, 1e-13) << what;
      EXPECT_NEAR(F::binary_cross_entropy_with_logits(x, y, F::BinaryCrossEntropyWithLogitsFuncOptions(o).reduction(kSum)).item<double>(), s, 1e-12) << what;
    }
  // Numerically stable for huge logits in float32: no inf or NaN, and the right limits.
  Tensor big = tensor::tensor({100.0f, -100.0f, 100.0f, -100.0f});
  Tensor lab = tensor::tensor({1.0f, 0.0f, 0.0f, 1.0f});
  std::vector<double> L = vals(F::binary_cross_entropy_with_logits(big, lab, F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(kNone)));
  EXPECT_NEAR(L[0], 0, 1e-6);
  EXPECT_NEAR(L[1], 0, 1e-6);
  EXPECT_NEAR(L[2], 100, 1e-4);
  EXPECT_NEAR(L[3], 100, 1e-4);
  Tensor bl = big.clone().requires_grad_(true);
  F::binary_cross_entropy_with_logits(bl, lab, F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(kSum)).backward();
  expect_near(vals(bl.grad()), {0, 0, 1, -1}, 1e-6, "bce grad at huge logits");
  nn::BCEWithLogitsLoss mod(nn::BCEWithLogitsLossOptions().pos_weight(pw));
  EXPECT_EQ(mod->named_buffers().keys(), (std::vector<std::string>{"pos_weight"}));
  expect_error([&] { F::binary_cross_entropy_with_logits(x, tensor::rand({4, 2}, kFloat64)); },
               {"binary_cross_entropy_with_logits", "[4, 2]", "[4, 3]"});
}

TEST(NNLoss, Gradcheck) {
  manual_seed(15);
  Tensor x = leaf64({4, 3}, -2, 2), x4 = leaf64({2, 3, 2, 2}, -2, 2);
  Tensor t = tensor::tensor({2, 0, 1, 2}), t4 = tensor::randint(0, 3, {2, 2, 2});
  Tensor w = tensor::tensor({0.7, 1.3, 2.0}, kFloat64);
  Tensor probs = tensor::softmax(tensor::randn({4, 3}, kFloat64), 1).detach().requires_grad_(true);
  Tensor y = tensor::rand({4, 3}, kFloat64).requires_grad_(true), other = leaf64({4, 3});
  Tensor pw = tensor::tensor({0.5, 2.0, 3.0}, kFloat64);
  struct G {
    std::string name;
    std::function<Tensor(const variable_list&)> f;
    variable_list in;
  };
  std::vector<G> gs = {
      {"cross_entropy mean", [&](const variable_list& in) { return F::cross_entropy(in[0], t); }, {x}},
      {"cross_entropy weighted ignore smoothed", [&](const variable_list& in) {
         return F::cross_entropy(in[0], t, F::CrossEntropyFuncOptions().weight(w).ignore_index(0).label_smoothing(0.2));
       }, {x}},
      {"cross_entropy 4-d none", [&](const variable_list& in) {
         return F::cross_entropy(in[0], t4, F::CrossEntropyFuncOptions().reduction(kNone).label_smoothing(0.1));
       }, {x4}},
      {"cross_entropy probabilities", [&](const variable_list& in) {
         return F::cross_entropy(in[0], in[1], F::CrossEntropyFuncOptions().weight(w).label_smoothing(0.1));
       }, {x, probs}},
      {"nll_loss sum", [&](const variable_list& in) {
         return F::nll_loss(in[0], t, F::NLLLossFuncOptions().weight(w).reduction(kSum));
       }, {x}},
      {"mse_loss", [&](const variable_list& in) { return F::mse_loss(in[0], in[1]); }, {x, other}},
      {"l1_loss", [&](const variable_list& in) { return F::l1_loss(in[0], in[1], kSum); }, {x, other}},
      {"bce_with_logits", [&](const variable_list& in) {
         return F::binary_cross_entropy_with_logits(in[0], in[1], F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(pw));
       }, {x, y}},
  };
  for (auto& g : gs) {
    EXPECT_TRUE(g.f(g.in).requires_grad()) << g.name;
    check(g.name + " gradcheck", [&] { return autograd::gradcheck(g.f, g.in); });
    if (g.name.rfind("l1", 0) != 0) check(g.name + " gradgradcheck", [&] { return autograd::gradgradcheck(g.f, g.in); });
  }
}

// ---------------------------------------------------------------------------------------------
// init

TEST(NNInit, GainsAndFans) {
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain(kLinear), 1.0);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain(kConv2D), 1.0);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain(kSigmoid), 1.0);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain(kTanh), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain(kReLU), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain(kLeakyReLU), std::sqrt(2.0 / (1 + 0.01 * 0.01)));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain(kLeakyReLU, 0.2), std::sqrt(2.0 / 1.04));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain(kSELU), 0.75);
  auto [fi, fo] = nn::init::_calculate_fan_in_and_fan_out(tensor::empty({16, 8, 3, 5}));
  EXPECT_EQ(fi, 8 * 15);
  EXPECT_EQ(fo, 16 * 15);
  auto [li, lo] = nn::init::_calculate_fan_in_and_fan_out(tensor::empty({7, 4}));
  EXPECT_EQ(li, 4);
  EXPECT_EQ(lo, 7);
  expect_error([&] { nn::init::kaiming_uniform_(tensor::empty({5})); }, {"fan in and fan out", "[5] float32"});
  expect_error([&] { nn::init::uniform_(tensor::empty({5}, kInt64)); }, {"uniform_", "floating", "int64"});
}

TEST(NNInit, Statistics) {
  manual_seed(16);
  auto stats = [](const Tensor& t) { return std::make_pair(mean_of(vals(t)), std::max(std_of(vals(t)), 0.0)); };
  const int64_t out = 256, in = 128, k = 3;  // a conv-shaped tensor: fan_in 1152, fan_out 2304
  const double fan_in = in * k * k, fan_out = out * k * k;
  // kaiming_uniform_ (relu, fan_in): U(-b, b), b = sqrt(2) * sqrt(3 / fan_in).
  Tensor t = tensor::empty({out, in, k, k});
  nn::init::kaiming_uniform_(t, 0, kFanIn, kReLU);
  double b = std::sqrt(2.0) * std::sqrt(3.0 / fan_in);
  EXPECT_LE(vals(t.abs().max())[0], b);
  EXPECT_GT(vals(t.abs().max())[0], 0.99 * b);
  auto [m1, s1] = stats(t);
  EXPECT_NEAR(m1, 0, 0.01 * b);
  EXPECT_NEAR(s1, std::sqrt(2.0 / fan_in), 0.01 * s1);
  // kaiming_normal_ (fan_out, leaky relu 0.2): std = gain / sqrt(fan_out).
  nn::init::kaiming_normal_(t, 0.2, kFanOut, kLeakyReLU);
  auto [m2, s2] = stats(t);
  double sd = std::sqrt(2.0 / 1.04) / std::sqrt(fan_out);
  EXPECT_NEAR(m2, 0, 0.01 * sd);
  EXPECT_NEAR(s2, sd, 0.01 * sd);
  // xavier_uniform_ with gain 2: bound = 2 sqrt(6 / (fan_in + fan_out)).
  nn::init::xavier_uniform_(t, 2.0);
  double xb = 2 * std::sqrt(6.0 / (fan_in + fan_out));
  EXPECT_LE(vals(t.abs().max())[0], xb);
  EXPECT_NEAR(stats(t).second, xb / std::sqrt(3.0), 0.01 * xb);
  // xavier_normal_: std = sqrt(2 / (fan_in + fan_out)).
  nn::init::xavier_normal_(t);
  EXPECT_NEAR(stats(t).second, std::sqrt(2.0 / (fan_in + fan_out)), 0.01 * std::sqrt(2.0 / (fan_in + fan_out)));
  // normal_ and uniform_ with arguments.
  nn::init::normal_(t, 3.0, 0.5);
  EXPECT_NEAR(stats(t).first, 3.0, 0.01);
  EXPECT_NEAR(stats(t).second, 0.5, 0.005);
  nn::init::uniform_(t, -2.0, 6.0);
  EXPECT_GE(vals(t.min())[0], -2.0);
  EXPECT_LT(vals(t.max())[0], 6.0);
  EXPECT_NEAR(stats(t).first, 2.0, 0.03);
  EXPECT_NEAR(stats(t).second, 8 / std::sqrt(12.0), 0.01);
  // Constants.
  Tensor c = tensor::empty({3, 4}, kFloat64);
  EXPECT_EQ(vals(nn::init::zeros_(c)), std::vector<double>(12, 0.0));
  EXPECT_EQ(vals(nn::init::ones_(c)), std::vector<double>(12, 1.0));
  EXPECT_EQ(vals(nn::init::constant_(c, 2.5)), std::vector<double>(12, 2.5));
  EXPECT_TRUE(nn::init::eye_(c).equal(tensor::eye(3, 4, kFloat64)));
  // On a parameter that requires grad: in place, recording nothing.
  nn::Linear fc(4, 4);
  Tensor w = fc->weight;
  nn::init::xavier_uniform_(fc->weight);
  EXPECT_TRUE(fc->weight.is_same(w));
  EXPECT_TRUE(fc->weight.is_leaf());
  EXPECT_TRUE(fc->weight.requires_grad());
  // float16 parameters are drawn in float32 and stored rounded.
  Tensor h = tensor::empty({200, 200}, kFloat16);
  nn::init::normal_(h, 0, 1);
  EXPECT_NEAR(stats(h).second, 1.0, 0.02);
}

// ---------------------------------------------------------------------------------------------
// utils

TEST(NNUtils, ClipGradNorm) {
  Tensor a = tensor::zeros({2}, kFloat64).requires_grad_(true), b = tensor::zeros({3}, kFloat64).requires_grad_(true);
  Tensor unused = tensor::zeros({2}, kFloat64).requires_grad_(true);
  auto set_grads = [&] {
    a.mutable_grad() = tensor::tensor({3.0, 4.0}, kFloat64);
    b.mutable_grad() = tensor::tensor({0.0, 12.0, 0.0}, kFloat64);
  };
  set_grads();
  // 2-norm: sqrt(9 + 16 + 144) = 13.
  double n = nn::utils::clip_grad_norm_({a, b, unused}, 6.5);
  EXPECT_DOUBLE_EQ(n, 13.0);
  double coef = 6.5 / (13.0 + 1e-6);
  expect_near(vals(a.grad()), {3 * coef, 4 * coef}, 1e-15, "clipped a");
  expect_near(vals(b.grad()), {0, 12 * coef, 0}, 1e-15, "clipped b");
  EXPECT_FALSE(unused.grad().defined());
  // Below the threshold nothing changes.
  set_grads();
  EXPECT_DOUBLE_EQ(nn::utils::clip_grad_norm_({a, b}, 20.0), 13.0);
  EXPECT_EQ(vals(a.grad()), (std::vector<double>{3, 4}));
  // inf norm: the largest magnitude; 1-norm: the sum of magnitudes.
  EXPECT_DOUBLE_EQ(nn::utils::clip_grad_norm_({a, b}, 100.0, INFINITY), 12.0);
  EXPECT_DOUBLE_EQ(nn::utils::clip_grad_norm_({a, b}, 100.0, 1.0), 19.0);
  nn::utils::clip_grad_norm_(b, 1.0, INFINITY);
  expect_near(vals(b.grad()), {0, 12 / (12 + 1e-6), 0}, 1e-15, "inf-clipped b");
  EXPECT_EQ(nn::utils::clip_grad_norm_({unused}, 1.0), 0.0);
  // Non-finite norms.
  a.mutable_grad() = tensor::tensor({NAN, 1.0}, kFloat64);
  expect_error([&] { nn::utils::clip_grad_norm_({a}, 1.0, 2.0, /*error_if_nonfinite=*/true); }, {"clip_grad_norm_", "non-finite"});
  // Mixed dtypes combine.
  Tensor f = tensor::zeros({1}).requires_grad_(true);
  f.mutable_grad() = tensor::tensor({5.0f});
  set_grads();
  EXPECT_NEAR(nn::utils::clip_grad_norm_({a, b, f}, 1e9), std::sqrt(169.0 + 25.0), 1e-12);
  // clip_grad_value_.
  set_grads();
  nn::utils::clip_grad_value_({a, b}, 3.5);
  EXPECT_EQ(vals(a.grad()), (std::vector<double>{3, 3.5}));
  EXPECT_EQ(vals(b.grad()), (std::vector<double>{0, 3.5, 0}));
}

TEST(NNUtils, ParametersToVectorRoundTrip) {
  nn::Linear fc(3, 2);
  Tensor v = nn::utils::parameters_to_vector(fc->parameters());
  EXPECT_EQ(v.sizes(), IntArrayRef({8}));
  std::vector<double> want = vals(fc->weight);
  for (double x : vals(fc->bias)) want.push_back(x);
  EXPECT_EQ(vals(v), want);
  nn::utils::vector_to_parameters(tensor::arange(8, kFloat32), fc->parameters());
  EXPECT_EQ(vals(fc->weight), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(vals(fc->bias), (std::vector<double>{6, 7}));
  expect_error([&] { nn::utils::vector_to_parameters(tensor::arange(7, kFloat32), fc->parameters()); },
               {"vector_to_parameters", "7", "8"});
}
