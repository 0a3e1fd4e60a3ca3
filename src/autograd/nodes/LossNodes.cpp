// Hand-written node of _ctc_loss (Note [Hand-written nodes] in Views.cpp): the op returns
// (neg_log_likelihood, log_alpha) and the recording template makes nodes for single-output ops
// only. neg_log_likelihood gets the node, differentiable in log_probs alone (targets are
// integers, the lengths are not tensors); log_alpha is not differentiable. The node runs
// _ctc_loss_backward, which is not differentiable itself (as libtorch's), so there is no
// double backward.
#include "src/autograd/Functions.h"
#include "src/ops/LossOps.h"

namespace tensor::autograd {

namespace {

// saved: log_probs, targets, neg_log_likelihood, log_alpha; ints: N, input_lengths,
// target_lengths, blank; scalars: zero_infinity.
std::tuple<Tensor, Tensor> ag_ctc_loss(const Tensor& log_probs, const Tensor& targets, IntArrayRef input_lengths,
                                       IntArrayRef target_lengths, int64_t blank, bool zero_infinity) {
  std::tuple<Tensor, Tensor> r;
  {
    BelowAutograd below;
    r = ops::loss_ops().ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity);
  }
  const Tensor& nll = std::get<0>(r);
  if (!is_differentiable(nll.dtype()) || !any_requires_grad({&log_probs})) return r;
  auto node = std::make_shared<FormulaNode>("CtcLossBackward0", TENSOR_GRAD(
      const int64_t nb = n.ints[0];
      IntArrayRef il(n.ints.data() + 1, static_cast<size_t>(nb));
      IntArrayRef tl(n.ints.data() + 1 + nb, static_cast<size_t>(nb));
      return {ops::loss_ops().ctc_loss_backward(g, n.saved(0), n.saved(1), il, tl, n.saved(2), n.saved(3),
                                                n.ints[static_cast<size_t>(1 + 2 * nb)], n.scalars[0].to_bool())};));
  node->add_input(log_probs);
  node->save(log_probs);
  node->save(targets);
  node->save(nll, /*is_output=*/true);
  node->save(std::get<1>(r));
  node->ints.push_back(static_cast<int64_t>(input_lengths.size()));
  for (int64_t v : input_lengths) node->ints.push_back(v);
  for (int64_t v : target_lengths) node->ints.push_back(v);
  node->ints.push_back(blank);
  node->scalars.push_back(zero_infinity);
  set_history(nll, node, 0);
  return r;
}

}  // namespace

void register_loss_nodes();
void register_loss_nodes() { ops::loss_ops().ctc_loss.set(DispatchKey::Autograd, &ag_ctc_loss); }

}  // namespace tensor::autograd
