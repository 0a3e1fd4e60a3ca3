// nn::AdaptiveLogSoftmaxWithLoss (include/tensor/nn/adaptive.h), composed of public
// differentiable ops as libtorch's: the head scores the shortlist [0, cutoffs[0]) and one token
// per tail cluster; a class of cluster i has log-probability head(cluster token i) + the
// cluster's own log_softmax.
#include "tensor/nn/adaptive.h"

#include <cmath>
#include <ostream>
#include <set>
#include <utility>

#include "src/core/Check.h"
#include "tensor/ops.h"

namespace tensor::nn {

namespace {
using ::tensor::detail::shape_str;

template <typename Holder>
Holder put(Module& m, bool exists, const std::string& name, Holder holder) {
  if (exists)
    m.replace_module(name, holder);
  else
    m.register_module(name, holder);
  return holder;
}
}  // namespace

ASMoutput::ASMoutput(Tensor output_, double loss_) : output(std::move(output_)), loss(loss_) {}

AdaptiveLogSoftmaxWithLossImpl::AdaptiveLogSoftmaxWithLossImpl(AdaptiveLogSoftmaxWithLossOptions options_)
    : Module("tensor::nn::AdaptiveLogSoftmaxWithLoss"), options(std::move(options_)) {
  reset();
}

void AdaptiveLogSoftmaxWithLossImpl::reset() {
  const std::vector<int64_t>& c = options.cutoffs();
  const int64_t n_classes = options.n_classes();
  TENSOR_CHECK(!c.empty(), "AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of length larger than 0");
  bool ok = std::set<int64_t>(c.begin(), c.end()).size() == c.size();
  for (size_t i = 0; i < c.size(); ++i) ok = ok && c[i] > 0 && c[i] <= n_classes - 1 && (i == 0 || c[i] > c[i - 1]);
  TENSOR_CHECK(ok,
               "AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of unique, positive integers sorted in an "
               "increasing order, where each value is between 1 and n_classes-1 (n_classes = {}, cutoffs = [{}])",
               n_classes, fmt::join(c.begin(), c.end(), ", "));
  TENSOR_CHECK(options.in_features() > 0 && options.div_value() > 0,
               "AdaptiveLogSoftmaxWithLoss: in_features ({}) and div_value ({}) must be positive",
               options.in_features(), options.div_value());
  const bool exists = !named_children().is_empty();
  cutoffs = c;
  cutoffs.push_back(n_classes);
  shortlist_size = cutoffs[0];
  n_clusters = static_cast<int64_t>(cutoffs.size()) - 1;
  head_size = shortlist_size + n_clusters;
  head = put(*this, exists, "head", Linear(LinearOptions(options.in_features(), head_size).bias(options.head_bias())));
  tail = put(*this, exists, "tail", ModuleList());
  for (int64_t i = 0; i < n_clusters; ++i) {
    // libtorch: int64_t(in_features / div_value^(i + 1)), floored.
    const auto hsz = static_cast<int64_t>(std::floor(static_cast<double>(options.in_features()) /
                                                     std::pow(options.div_value(), static_cast<double>(i + 1))));
    const int64_t osz = cutoffs[static_cast<size_t>(i + 1)] - cutoffs[static_cast<size_t>(i)];
    tail->push_back(Sequential(Linear(LinearOptions(options.in_features(), hsz).bias(false)),
                               Linear(LinearOptions(hsz, osz).bias(false))));
  }
}

void AdaptiveLogSoftmaxWithLossImpl::reset_parameters() {
  head->reset_parameters();
  for (size_t i = 0; i < tail->size(); ++i) {
    auto& seq = tail->at<SequentialImpl>(i);
    seq.ptr<LinearImpl>(0)->reset_parameters();
    seq.ptr<LinearImpl>(1)->reset_parameters();
  }
}

ASMoutput AdaptiveLogSoftmaxWithLossImpl::forward(const Tensor& input_, const Tensor& target_) {
  const int64_t targ_dim = target_.dim();
  TENSOR_CHECK(targ_dim == 0 || targ_dim == 1,
               "AdaptiveLogSoftmaxWithLoss: 0D or 1D target tensor expected, multi-target not supported (target "
               "shape {}, input shape {})",
               shape_str(target_.sizes()), shape_str(input_.sizes()));
  if (targ_dim == 1) {
    TENSOR_CHECK(input_.dim() == 2 && input_.size(0) == target_.size(0),
                 "AdaptiveLogSoftmaxWithLoss: a 1D target expects a 2D input with the same batch size, got input "
                 "shape {} and target shape {}",
                 shape_str(input_.sizes()), shape_str(target_.sizes()));
  } else {
    TENSOR_CHECK(input_.dim() == 1, "AdaptiveLogSoftmaxWithLoss: a 0D target expects a 1D input, got input shape {}",
                 shape_str(input_.sizes()));
  }
  TENSOR_CHECK(is_integral(target_.dtype(), false),
               "AdaptiveLogSoftmaxWithLoss: target must be an integer tensor, got dtype {} (shape {})", target_.dtype(),
               shape_str(target_.sizes()));
  const bool is_batched = targ_dim > 0;
  Tensor input = is_batched ? input_ : input_.unsqueeze(0);
  Tensor target = (is_batched ? target_ : target_.unsqueeze(0)).to(kInt64);
  const int64_t batch_size = target.size(0);

  Tensor output = zeros({batch_size}, input.options());
  // The head's column of each sample: its class in the shortlist, else its cluster's token.
  Tensor gather_inds = target.clone();
  int64_t used_rows = 0;
  for (size_t i = 0; i < cutoffs.size(); ++i) {
    const int64_t low = i == 0 ? 0 : cutoffs[i - 1], high = cutoffs[i];
    Tensor mask = target.ge(low).logical_and(target.lt(high));
    Tensor rows = mask.nonzero().reshape({-1});
    if (rows.numel() == 0) continue;
    used_rows += rows.numel();
    if (i == 0) continue;
    Tensor relative = target.index_select(0, rows) - low;
    Tensor cluster_output = tail->at<SequentialImpl>(i - 1).forward(input.index_select(0, rows));
    gather_inds = gather_inds.masked_fill(mask, shortlist_size + static_cast<int64_t>(i) - 1);
    Tensor local = log_softmax(cluster_output, 1).gather(1, relative.unsqueeze(1)).squeeze(1);
    output = output.index_add(0, rows, local);
  }
  TENSOR_CHECK(used_rows == batch_size,
               "AdaptiveLogSoftmaxWithLoss: target values should be in [0, {}], but values in range [{}, {}] were "
               "found",
               options.n_classes() - 1, target.min().item<int64_t>(), target.max().item<int64_t>());
  Tensor head_logprob = log_softmax(head(input), 1);
  output = output + head_logprob.gather(1, gather_inds.unsqueeze(1)).squeeze(1);
  const double loss = (-output).mean().item<double>();
  return ASMoutput(is_batched ? output : output.squeeze(0), loss);
}

Tensor AdaptiveLogSoftmaxWithLossImpl::_get_full_log_prob(const Tensor& input, const Tensor& head_output) {
  Tensor head_logprob = log_softmax(head_output, 1);
  std::vector<Tensor> parts = {head_logprob.slice(1, 0, shortlist_size)};
  for (int64_t i = 0; i < n_clusters; ++i) {
    Tensor cluster_logprob = log_softmax(tail->at<SequentialImpl>(static_cast<size_t>(i)).forward(input), 1);
    parts.push_back(cluster_logprob + head_logprob.select(1, shortlist_size + i).unsqueeze(1));
  }
  return cat(parts, 1);
}

Tensor AdaptiveLogSoftmaxWithLossImpl::log_prob(const Tensor& input) {
  TENSOR_CHECK(input.dim() == 2 && input.size(1) == options.in_features(),
               "AdaptiveLogSoftmaxWithLoss::log_prob: expected an input of shape (N, {}), got shape {} (dtype {})",
               options.in_features(), shape_str(input.sizes()), input.dtype());
  return _get_full_log_prob(input, head(input));
}

Tensor AdaptiveLogSoftmaxWithLossImpl::predict(const Tensor& input) {
  TENSOR_CHECK(input.dim() == 2 && input.size(1) == options.in_features(),
               "AdaptiveLogSoftmaxWithLoss::predict: expected an input of shape (N, {}), got shape {} (dtype {})",
               options.in_features(), shape_str(input.sizes()), input.dtype());
  Tensor head_output = head(input);
  Tensor output = head_output.argmax(1);
  Tensor not_in_shortlist = output.ge(shortlist_size);
  if (!not_in_shortlist.any().item<bool>()) return output;
  // Some samples' best head entry is a cluster token: those need the full distribution.
  Tensor full = _get_full_log_prob(input, head_output).argmax(1);
  return where(not_in_shortlist, full, output);
}

void AdaptiveLogSoftmaxWithLossImpl::pretty_print(std::ostream& s) const {
  s << "tensor::nn::AdaptiveLogSoftmaxWithLoss";
}

}  // namespace tensor::nn
