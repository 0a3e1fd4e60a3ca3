// nn::EmbeddingBag and F::embedding_bag.
//
// Note [EmbeddingBag as a composite]
// embedding_bag is a composite of dispatched ops rather than a kernel of its own: the bag
// structure (which entry goes to which bag, which entries padding_idx drops, each bag's count
// and, for kMax, the row holding each column's maximum) is integer bookkeeping done once on the
// host from the indices, and the values and gradients then flow through index_select, mul,
// index_add and gather, whose derivatives are already checked. That gives libtorch's values and
// its gradients for weight and per_sample_weights (gradgradcheck included) without a new
// backward: kSum and kMean are index_add of the selected rows into (bags, dim) zeros (kMean
// divided by the bag's count), kMax gathers each column's first maximum (libtorch keeps the
// first on ties). scale_grad_by_freq scales a row's gradient by 1 / (its count in the input)
// while leaving the value exact: rows = (r - r.detach()) * scale + r.detach(). The bookkeeping
// reads the indices and offsets on the host, so inputs on other devices are copied for it.
#include "tensor/nn/embedding_bag.h"

#include <cmath>
#include <ostream>
#include <unordered_map>
#include <vector>

#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/nn/init.h"
#include "tensor/ops.h"

namespace tensor::nn {

namespace F = functional;

namespace functional {

namespace {

std::vector<int64_t> host_ints(const Tensor& t) {
  Tensor c = t.to(Device(kCPU)).to(kInt64).contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

/// libtorch's embedding_renorm_: each row the input names whose norm exceeds max_norm is
/// scaled in place (without recording) to max_norm / (norm + 1e-7) times itself.
void renorm_rows(const Tensor& weight, const std::vector<int64_t>& idx, double max_norm, double norm_type) {
  NoGradGuard no_grad;
  std::vector<bool> done(static_cast<size_t>(weight.size(0)), false);
  for (int64_t i : idx) {
    if (done[static_cast<size_t>(i)]) continue;
    done[static_cast<size_t>(i)] = true;
    Tensor row = weight.select(0, i);
    const double norm = row.norm(norm_type).item<double>();
    if (norm > max_norm) row.mul_(max_norm / (norm + 1e-7));
  }
}

}  // namespace

Tensor embedding_bag(const Tensor& input, const Tensor& weight, const EmbeddingBagFuncOptions& options) {
  const char* mode = options.mode().name();
  TENSOR_CHECK(input.defined() && weight.defined(), "embedding_bag: input and weight must be defined tensors");
  TENSOR_CHECK(weight.dim() == 2 && weight.is_floating_point(),
               "embedding_bag: weight must be a 2-D floating point tensor [num_embeddings, embedding_dim], got {}",
               weight.describe());
  TENSOR_CHECK(input.scalar_type() == kInt64 || input.scalar_type() == kInt32,
               "embedding_bag: expected input (indices) of dtype int64 or int32, got {}", input.describe());
  TENSOR_CHECK(!options.sparse(), "embedding_bag: sparse gradients are not supported (sparse=true); use dense "
                                  "gradients (sparse=false)");
  TENSOR_CHECK(input.dim() == 1 || input.dim() == 2,
               "embedding_bag: input has to be 1D or 2D Tensor, but got Tensor of dimension {} (shape {})",
               input.dim(), tensor::detail::shape_str(input.sizes()));
  TENSOR_CHECK(!(options.scale_grad_by_freq() && options.mode() == kMax),
               "embedding_bag: max mode does not support scaling the gradient by the frequency");
  const Tensor& psw = options.per_sample_weights();
  if (psw.defined()) {
    TENSOR_CHECK(options.mode() == kSum,
                 "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for "
                 "mode='sum' (got mode='{}'). Please open a feature request on GitHub.",
                 mode);
    TENSOR_CHECK(psw.sizes() == input.sizes(),
                 "embedding_bag: per_sample_weights {} must have the shape of input {}", psw.describe(),
                 input.describe());
    TENSOR_CHECK(psw.dtype() == weight.dtype(), "embedding_bag: per_sample_weights {} must have weight's dtype {}",
                 psw.describe(), weight.dtype());
  }
  const int64_t num = weight.size(0), dim = weight.size(1);
  std::vector<int64_t> idx = host_ints(input), offs;
  const int64_t n = static_cast<int64_t>(idx.size());
  if (input.dim() == 2) {
    TENSOR_CHECK(!options.offsets().defined(),
                 "embedding_bag: if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                 "fixed length sequences. However, found offsets of type {}",
                 options.offsets().describe());
    for (int64_t b = 0; b < input.size(0); ++b) offs.push_back(b * input.size(1));
  } else {
    const Tensor& o = options.offsets();
    TENSOR_CHECK(o.defined() && o.dim() == 1, "embedding_bag: offsets has to be a 1D Tensor but got {}",
                 o.defined() ? o.describe() : std::string("null"));
    TENSOR_CHECK(o.scalar_type() == kInt64 || o.scalar_type() == kInt32,
                 "embedding_bag: expected offsets of dtype int64 or int32, got {}", o.describe());
    offs = host_ints(o);
    TENSOR_CHECK(offs.empty() || offs[0] == 0,
                 "embedding_bag: offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                 "position 0. However, got {}",
                 offs.empty() ? 0 : offs[0]);
    TENSOR_CHECK(offs.empty() || offs.back() <= n,
                 "embedding_bag: offsets[-1] can not be greater than input's length ({}), but got offsets[-1] of {}",
                 n, offs.empty() ? 0 : offs.back());
    for (size_t b = 1; b < offs.size(); ++b)
      TENSOR_CHECK(offs[b] >= offs[b - 1], "embedding_bag: offsets must be non-decreasing, got offsets {}",
                   tensor::detail::shape_str(offs));
  }
  const int64_t nbags = std::max<int64_t>(0, static_cast<int64_t>(offs.size()) - (options.include_last_offset() ? 1 : 0));
  for (int64_t i : idx)
    TENSOR_CHECK(i >= 0 && i < num, "embedding_bag: index {} is out of range for {} embeddings (input {})", i, num,
                 input.describe());
  std::optional<int64_t> pad = options.padding_idx();
  if (pad) {
    TENSOR_CHECK(*pad >= -num && *pad < num, "embedding_bag: padding_idx {} must be within num_embeddings = {}", *pad,
                 num);
    if (*pad < 0) *pad += num;
  }
  if (options.max_norm()) renorm_rows(weight, idx, *options.max_norm(), options.norm_type());

  // The kept entries (in bags, not padding): their positions in the input, rows and bags.
  std::vector<int64_t> pos, rows, bag_of, count(static_cast<size_t>(nbags), 0);
  for (int64_t b = 0; b < nbags; ++b) {
    const int64_t end = b + 1 < static_cast<int64_t>(offs.size()) ? offs[static_cast<size_t>(b + 1)] : n;
    for (int64_t i = offs[static_cast<size_t>(b)]; i < end; ++i) {
      if (pad && idx[static_cast<size_t>(i)] == *pad) continue;
      pos.push_back(i);
      rows.push_back(idx[static_cast<size_t>(i)]);
      bag_of.push_back(b);
      ++count[static_cast<size_t>(b)];
    }
  }
  const TensorOptions io = TensorOptions().dtype(kInt64).device(weight.device());
  Tensor out = zeros({nbags, dim}, weight.options());
  if (rows.empty()) return out;
  Tensor r = weight.index_select(0, tensor::tensor(rows, io));
  if (options.scale_grad_by_freq()) {
    // As libtorch, each row's gradient is divided by its index's count in the whole input.
    std::unordered_map<int64_t, int64_t> freq;
    for (int64_t i : idx) ++freq[i];
    std::vector<double> scale;
    for (int64_t i : rows) scale.push_back(1.0 / static_cast<double>(freq[i]));
    Tensor s = tensor::tensor(scale, TensorOptions().dtype(weight.dtype()).device(weight.device())).unsqueeze(1);
    Tensor fixed = r.detach();
    r = (r - fixed) * s + fixed;
  }
  if (psw.defined()) r = r * psw.reshape({-1}).index_select(0, tensor::tensor(pos, io)).unsqueeze(1);
  if (options.mode() == kMax) {
    // Each (bag, column): the kept row with the first maximum (strictly greater replaces).
    Tensor v = r.detach().to(Device(kCPU)).to(kFloat64).contiguous();
    const double* vd = v.data_ptr<double>();
    std::vector<int64_t> arg(static_cast<size_t>(nbags * dim), 0);
    std::vector<double> nonempty(static_cast<size_t>(nbags), 0.0);
    for (size_t k = 0; k < bag_of.size(); ++k) {
      const int64_t b = bag_of[k];
      const bool first = k == 0 || bag_of[k - 1] != b;
      nonempty[static_cast<size_t>(b)] = 1.0;
      for (int64_t d = 0; d < dim; ++d) {
        int64_t& a = arg[static_cast<size_t>(b * dim + d)];
        if (first || vd[k * dim + d] > vd[a * dim + d]) a = static_cast<int64_t>(k);
      }
    }
    Tensor g = r.gather(0, tensor::tensor(arg, io).reshape({nbags, dim}));
    // Empty bags gathered row 0: zero them (and their gradient).
    return g * tensor::tensor(nonempty, TensorOptions().dtype(weight.dtype()).device(weight.device())).unsqueeze(1);
  }
  out = out.index_add(0, tensor::tensor(bag_of, io), r);
  if (options.mode() == kMean) {
    std::vector<double> inv;
    for (int64_t c : count) inv.push_back(c > 0 ? 1.0 / static_cast<double>(c) : 0.0);
    out = out * tensor::tensor(inv, TensorOptions().dtype(weight.dtype()).device(weight.device())).unsqueeze(1);
  }
  return out;
}

}  // namespace functional

// ---- the module ----

EmbeddingBagImpl::EmbeddingBagImpl(EmbeddingBagOptions options_)
    : Module("tensor::nn::EmbeddingBag"), options(std::move(options_)) {
  reset();
}

void EmbeddingBagImpl::reset() {
  const int64_t n = options.num_embeddings(), d = options.embedding_dim();
  TENSOR_CHECK(n >= 0 && d >= 0, "EmbeddingBag: num_embeddings and embedding_dim must be non-negative, got {} and {}",
               n, d);
  TENSOR_CHECK(!options.sparse(), "EmbeddingBag: sparse gradients are not supported (sparse=true)");
  if (options.padding_idx().has_value()) {
    int64_t& pad = *options.padding_idx();
    TENSOR_CHECK(pad >= -n && pad < n, "EmbeddingBag: padding_idx must be within num_embeddings ({}), got {}", n, pad);
    if (pad < 0) pad += n;
  }
  if (parameters_.contains("weight")) parameters_.erase("weight");
  if (options._weight().defined()) {
    TENSOR_CHECK(options._weight().sizes() == IntArrayRef({n, d}),
                 "EmbeddingBag: _weight {} does not match [num_embeddings, embedding_dim] = [{}, {}]",
                 options._weight().describe(), n, d);
    weight = register_parameter("weight", options._weight());
  } else {
    weight = register_parameter("weight", tensor::empty({n, d}));
    reset_parameters();
  }
}

void EmbeddingBagImpl::reset_parameters() {
  init::normal_(weight);
  if (options.padding_idx().has_value()) {
    NoGradGuard no_grad;
    weight.select(0, *options.padding_idx()).fill_(0);
  }
}

Tensor EmbeddingBagImpl::forward(const Tensor& input, const Tensor& offsets, const Tensor& per_sample_weights) {
  return F::embedding_bag(input, weight,
                          F::EmbeddingBagFuncOptions()
                              .offsets(offsets)
                              .max_norm(options.max_norm())
                              .norm_type(options.norm_type())
                              .scale_grad_by_freq(options.scale_grad_by_freq())
                              .mode(options.mode())
                              .sparse(options.sparse())
                              .per_sample_weights(per_sample_weights)
                              .include_last_offset(options.include_last_offset())
                              .padding_idx(options.padding_idx()));
}

void EmbeddingBagImpl::pretty_print(std::ostream& stream) const {
  stream << "tensor::nn::EmbeddingBag(num_embeddings=" << options.num_embeddings()
         << ", embedding_dim=" << options.embedding_dim();
  if (options.max_norm()) stream << ", max_norm=" << *options.max_norm();
  if (options.norm_type() != 2) stream << ", norm_type=" << options.norm_type();
  if (options.scale_grad_by_freq()) stream << ", scale_grad_by_freq=true";
  if (options.mode() != kMean) stream << ", mode=" << options.mode().name();
  if (options.include_last_offset()) stream << ", include_last_offset=true";
  if (options.padding_idx()) stream << ", padding_idx=" << *options.padding_idx();
  stream << ")";
}

EmbeddingBag EmbeddingBag::from_pretrained(const Tensor& embeddings, const EmbeddingBagFromPretrainedOptions& options) {
  TENSOR_CHECK(embeddings.defined() && embeddings.dim() == 2,
               "EmbeddingBag::from_pretrained: embeddings parameter is expected to be 2-dimensional, got {}",
               embeddings.defined() ? embeddings.describe() : std::string("an undefined tensor"));
  EmbeddingBag bag(EmbeddingBagOptions(embeddings.size(0), embeddings.size(1))
                       ._weight(embeddings)
                       .max_norm(options.max_norm())
                       .norm_type(options.norm_type())
                       .scale_grad_by_freq(options.scale_grad_by_freq())
                       .mode(options.mode())
                       .sparse(options.sparse())
                       .include_last_offset(options.include_last_offset())
                       .padding_idx(options.padding_idx()));
  bag->weight.requires_grad_(!options.freeze());
  return bag;
}

}  // namespace tensor::nn
