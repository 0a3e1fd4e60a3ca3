// The nn layers, containers and loss modules (include/tensor/nn/modules.h).
#include "tensor/nn/modules.h"

#include <cmath>
#include <ostream>

#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/nn/functional.h"
#include "tensor/nn/init.h"
#include "tensor/ops.h"

namespace tensor::nn {

namespace F = functional;

namespace {
const char* b(bool v) { return v ? "true" : "false"; }
}  // namespace

// ---- activations ----

ReLUImpl::ReLUImpl(const ReLUOptions& options_) : Module("tensor::nn::ReLU"), options(options_) {}
Tensor ReLUImpl::forward(Tensor input) { return F::relu(std::move(input), options); }
void ReLUImpl::pretty_print(std::ostream& stream) const {
  stream << "tensor::nn::ReLU(";
  if (options.inplace()) stream << "inplace=true";
  stream << ")";
}

GELUImpl::GELUImpl(GELUOptions options_) : Module("tensor::nn::GELU"), options(std::move(options_)) {
  TENSOR_CHECK(options.approximate() == "none" || options.approximate() == "tanh",
               "GELU: approximate must be \"none\" or \"tanh\", got \"{}\"", options.approximate());
}
Tensor GELUImpl::forward(const Tensor& input) { return F::gelu(input, options); }
void GELUImpl::pretty_print(std::ostream& stream) const {
  stream << "tensor::nn::GELU(";
  if (options.approximate() != "none") stream << "approximate='" << options.approximate() << "'";
  stream << ")";
}

SiLUImpl::SiLUImpl() : Module("tensor::nn::SiLU") {}
Tensor SiLUImpl::forward(const Tensor& input) { return F::silu(input); }
void SiLUImpl::pretty_print(std::ostream& stream) const { stream << "tensor::nn::SiLU()"; }

TanhImpl::TanhImpl() : Module("tensor::nn::Tanh") {}
Tensor TanhImpl::forward(const Tensor& input) { return tensor::tanh(input); }
void TanhImpl::pretty_print(std::ostream& stream) const { stream << "tensor::nn::Tanh()"; }

SigmoidImpl::SigmoidImpl() : Module("tensor::nn::Sigmoid") {}
Tensor SigmoidImpl::forward(const Tensor& input) { return tensor::sigmoid(input); }
void SigmoidImpl::pretty_print(std::ostream& stream) const { stream << "tensor::nn::Sigmoid()"; }

SoftmaxImpl::SoftmaxImpl(const SoftmaxOptions& options_) : Module("tensor::nn::Softmax"), options(options_) {}
Tensor SoftmaxImpl::forward(const Tensor& input) { return tensor::softmax(input, options.dim()); }
void SoftmaxImpl::pretty_print(std::ostream& stream) const {
  stream << "tensor::nn::Softmax(dim=" << options.dim() << ")";
}

LogSoftmaxImpl::LogSoftmaxImpl(const LogSoftmaxOptions& options_)
    : Module("tensor::nn::LogSoftmax"), options(options_) {}
Tensor LogSoftmaxImpl::forward(const Tensor& input) { return tensor::log_softmax(input, options.dim()); }
void LogSoftmaxImpl::pretty_print(std::ostream& stream) const {
  stream << "tensor::nn::LogSoftmax(dim=" << options.dim() << ")";
}

// ---- Linear ----

LinearImpl::LinearImpl(const LinearOptions& options_) : Module("tensor::nn::Linear"), options(options_) {
  TENSOR_CHECK(options.in_features() >= 0 && options.out_features() >= 0,
               "Linear: in_features and out_features must be non-negative, got {} and {}", options.in_features(),
               options.out_features());
  reset();
}

void LinearImpl::reset() {
  if (parameters_.contains("weight")) parameters_.erase("weight");
  if (parameters_.contains("bias")) parameters_.erase("bias");
  weight = register_parameter("weight", tensor::empty({options.out_features(), options.in_features()}));
  // Without bias the name is still registered, with an undefined tensor (as libtorch).
  bias = options.bias() ? register_parameter("bias", tensor::empty({options.out_features()}))
                        : register_parameter("bias", Tensor(), /*requires_grad=*/false);
  reset_parameters();
}

void LinearImpl::reset_parameters() {
  // kaiming_uniform_(a = sqrt(5)) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = std::get<0>(init::_calculate_fan_in_and_fan_out(weight));
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor LinearImpl::forward(const Tensor& input) { return F::linear(input, weight, bias); }

void LinearImpl::pretty_print(std::ostream& stream) const {
  stream << "tensor::nn::Linear(in_features=" << options.in_features() << ", out_features=" << options.out_features()
         << ", bias=" << b(options.bias()) << ")";
}

// ---- Embedding ----

EmbeddingImpl::EmbeddingImpl(EmbeddingOptions options_) : Module("tensor::nn::Embedding"), options(std::move(options_)) {
  reset();
}

void EmbeddingImpl::reset() {
  const int64_t n = options.num_embeddings(), d = options.embedding_dim();
  TENSOR_CHECK(n >= 0 && d >= 0, "Embedding: num_embeddings and embedding_dim must be non-negative, got {} and {}", n,
               d);
  if (options.padding_idx().has_value()) {
    int64_t& pad = *options.padding_idx();
    TENSOR_CHECK(pad >= -n && pad < n, "Embedding: padding_idx {} must be within num_embeddings = {}", pad, n);
    if (pad < 0) pad += n;
  }
  if (parameters_.contains("weight")) parameters_.erase("weight");
  if (options._weight().defined()) {
    TENSOR_CHECK(options._weight().sizes() == IntArrayRef({n, d}),
                 "Embedding: _weight {} does not match [num_embeddings, embedding_dim] = [{}, {}]",
                 options._weight().describe(), n, d);
    weight = register_parameter("weight", options._weight());
  } else {
    weight = register_parameter("weight", tensor::empty({n, d}));
    reset_parameters();
  }
}

void EmbeddingImpl::reset_parameters() {
  init::normal_(weight);
  if (options.padding_idx().has_value()) {
    NoGradGuard no_grad;
    weight.select(0, *options.padding_idx()).fill_(0);
  }
}

Tensor EmbeddingImpl::forward(const Tensor& indices) {
  return F::embedding(indices, weight,
                      F::EmbeddingFuncOptions()
                          .padding_idx(options.padding_idx())
                          .max_norm(options.max_norm())
                          .norm_type(options.norm_type())
                          .scale_grad_by_freq(options.scale_grad_by_freq())
                          .sparse(options.sparse()));
}

void EmbeddingImpl::pretty_print(std::ostream& stream) const {
  stream << "tensor::nn::Embedding(num_embeddings=" << options.num_embeddings()
         << ", embedding_dim=" << options.embedding_dim();
  if (options.padding_idx().has_value()) stream << ", padding_idx=" << *options.padding_idx();
  stream << ")";
}

Embedding Embedding::from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& options) {
  TENSOR_CHECK(embeddings.defined() && embeddings.dim() == 2,
               "Embedding::from_pretrained: embeddings parameter is expected to be 2-dimensional, got {}",
               embeddings.defined() ? embeddings.describe() : std::string("an undefined tensor"));
  Embedding embedding(EmbeddingOptions(embeddings.size(0), embeddings.size(1))
                          ._weight(embeddings)
                          .padding_idx(options.padding_idx())
                          .max_norm(options.max_norm())
                          .norm_type(options.norm_type())
                          .scale_grad_by_freq(options.scale_grad_by_freq())
                          .sparse(options.sparse()));
  embedding->weight.requires_grad_(!options.freeze());
  return embedding;
}

// ---- Dropout, Flatten, Functional ----

DropoutImpl::DropoutImpl(const DropoutOptions& options_) : Module("tensor::nn::Dropout"), options(options_) {
  TENSOR_CHECK(options.p() >= 0 && options.p() <= 1, "Dropout: probability has to be between 0 and 1, but got {}",
               options.p());
}
Tensor DropoutImpl::forward(Tensor input) {
  return F::dropout(std::move(input),
                    F::DropoutFuncOptions().p(options.p()).training(is_training()).inplace(options.inplace()));
}
void DropoutImpl::pretty_print(std::ostream& stream) const {
  stream << "tensor::nn::Dropout(p=" << options.p() << ", inplace=" << b(options.inplace()) << ")";
}

FlattenImpl::FlattenImpl(const FlattenOptions& options_) : Module("tensor::nn::Flatten"), options(options_) {}
Tensor FlattenImpl::forward(const Tensor& input) { return input.flatten(options.start_dim(), options.end_dim()); }
void FlattenImpl::pretty_print(std::ostream& stream) const {
  stream << "tensor::nn::Flatten(start_dim=" << options.start_dim() << ", end_dim=" << options.end_dim() << ")";
}

FunctionalImpl::FunctionalImpl(Function function) : Module("tensor::nn::Functional"), function_(std::move(function)) {
  TENSOR_CHECK(static_cast<bool>(function_), "Functional: the function is empty");
}
Tensor FunctionalImpl::forward(Tensor input) { return function_(std::move(input)); }
void FunctionalImpl::pretty_print(std::ostream& stream) const { stream << "tensor::nn::Functional()"; }

// ---- containers ----

SequentialImpl::SequentialImpl() : Module("tensor::nn::Sequential") {}

void SequentialImpl::append(std::string name, AnyModule item, std::function<Tensor(Tensor)> forward) {
  register_module(std::move(name), item.ptr());
  modules_.push_back(item.ptr());
  items_.push_back(std::move(item));
  forwards_.push_back(std::move(forward));
}

void SequentialImpl::extend(const SequentialImpl& other) {
  TENSOR_CHECK(&other != this, "Sequential::extend: cannot extend a Sequential with itself");
  for (size_t i = 0; i < other.modules_.size(); ++i)
    append(std::to_string(size()), other.items_[i], other.forwards_[i]);
}

Tensor SequentialImpl::forward(Tensor input) {
  TENSOR_CHECK(!modules_.empty(), "Sequential::forward: cannot call forward() on an empty Sequential");
  for (auto& f : forwards_) input = f(std::move(input));
  return input;
}

Tensor SequentialImpl::forward_at(size_t index, Tensor input) {
  TENSOR_CHECK(index < forwards_.size(), "Sequential::forward_at: index {} is out of range for a Sequential of {} modules",
               index, forwards_.size());
  return forwards_[index](std::move(input));
}

std::shared_ptr<Module> SequentialImpl::ptr(size_t index) const {
  TENSOR_CHECK(index < modules_.size(), "Sequential: index {} is out of range for a Sequential of {} modules", index,
               modules_.size());
  return modules_[index];
}

void SequentialImpl::pretty_print(std::ostream& stream) const { stream << "tensor::nn::Sequential"; }

ModuleListImpl::ModuleListImpl() : Module("tensor::nn::ModuleList") {}

void ModuleListImpl::append(std::shared_ptr<Module> module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

void ModuleListImpl::extend(const ModuleListImpl& other) {
  TENSOR_CHECK(&other != this, "ModuleList::extend: cannot extend a ModuleList with itself");
  for (const auto& m : other.modules_) append(m);
}

void ModuleListImpl::insert_at(size_t index, std::shared_ptr<Module> module) {
  TENSOR_CHECK(index <= modules_.size(), "ModuleList::insert: index {} is out of range for a list of {} modules", index,
               modules_.size());
  modules_.insert(modules_.begin() + static_cast<std::ptrdiff_t>(index), std::move(module));
  // Children are named by position: re-register them all in order.
  children_.clear();
  for (size_t i = 0; i < modules_.size(); ++i) register_module(std::to_string(i), modules_[i]);
}

std::shared_ptr<Module> ModuleListImpl::ptr(size_t index) const {
  TENSOR_CHECK(index < modules_.size(), "ModuleList: index {} is out of range for a list of {} modules", index,
               modules_.size());
  return modules_[index];
}

void ModuleListImpl::pretty_print(std::ostream& stream) const { stream << "tensor::nn::ModuleList"; }

// ---- losses ----

namespace {
void print_reduction(std::ostream& stream, LossReduction r, bool& first) {
  if (r != kMean) {
    stream << (first ? "" : ", ") << "reduction=" << r.name();
    first = false;
  }
}
}  // namespace

CrossEntropyLossImpl::CrossEntropyLossImpl(const CrossEntropyLossOptions& options_)
    : Module("tensor::nn::CrossEntropyLoss"), options(options_) {
  weight = register_buffer("weight", options.weight());
}
Tensor CrossEntropyLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::cross_entropy(input, target, CrossEntropyLossOptions(options).weight(weight));
}
void CrossEntropyLossImpl::pretty_print(std::ostream& stream) const {
  stream << "tensor::nn::CrossEntropyLoss(";
  bool first = true;
  print_reduction(stream, options.reduction(), first);
  if (options.ignore_index() != -100) { stream << (first ? "" : ", ") << "ignore_index=" << options.ignore_index(); first = false; }
  if (options.label_smoothing() != 0) stream << (first ? "" : ", ") << "label_smoothing=" << options.label_smoothing();
  stream << ")";
}

NLLLossImpl::NLLLossImpl(const NLLLossOptions& options_) : Module("tensor::nn::NLLLoss"), options(options_) {
  weight = register_buffer("weight", options.weight());
}
Tensor NLLLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::nll_loss(input, target, NLLLossOptions(options).weight(weight));
}
void NLLLossImpl::pretty_print(std::ostream& stream) const {
  stream << "tensor::nn::NLLLoss(";
  bool first = true;
  print_reduction(stream, options.reduction(), first);
  if (options.ignore_index() != -100) stream << (first ? "" : ", ") << "ignore_index=" << options.ignore_index();
  stream << ")";
}

MSELossImpl::MSELossImpl(const MSELossOptions& options_) : Module("tensor::nn::MSELoss"), options(options_) {}
Tensor MSELossImpl::forward(const Tensor& input, const Tensor& target) { return F::mse_loss(input, target, options); }
void MSELossImpl::pretty_print(std::ostream& stream) const {
  stream << "tensor::nn::MSELoss(";
  bool first = true;
  print_reduction(stream, options.reduction(), first);
  stream << ")";
}

L1LossImpl::L1LossImpl(const L1LossOptions& options_) : Module("tensor::nn::L1Loss"), options(options_) {}
Tensor L1LossImpl::forward(const Tensor& input, const Tensor& target) { return F::l1_loss(input, target, options); }
void L1LossImpl::pretty_print(std::ostream& stream) const {
  stream << "tensor::nn::L1Loss(";
  bool first = true;
  print_reduction(stream, options.reduction(), first);
  stream << ")";
}

BCEWithLogitsLossImpl::BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& options_)
    : Module("tensor::nn::BCEWithLogitsLoss"), options(options_) {
  weight = register_buffer("weight", options.weight());
  pos_weight = register_buffer("pos_weight", options.pos_weight());
}
Tensor BCEWithLogitsLossImpl::forward(const Tensor& input, const Tensor& target) {
  return F::binary_cross_entropy_with_logits(input, target,
                                             BCEWithLogitsLossOptions(options).weight(weight).pos_weight(pos_weight));
}
void BCEWithLogitsLossImpl::pretty_print(std::ostream& stream) const {
  stream << "tensor::nn::BCEWithLogitsLoss(";
  bool first = true;
  print_reduction(stream, options.reduction(), first);
  stream << ")";
}

}  // namespace tensor::nn
