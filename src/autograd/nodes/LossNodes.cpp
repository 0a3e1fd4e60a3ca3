// Hand-written node of _ctc_loss (Note [Hand-written nodes] in Views.cpp): the op returns
// (neg_log_likelihood, log_alpha) and the recording template makes nodes for single-output ops
// only. neg_log_likelihood gets the node, differentiable in log_probs alone (targets are
// integers, the lengths are not tensors); log_alpha is not differentiable. The node runs
// _ctc_loss_backward, which is not differentiable itself (as libtorch's): under create_graph its
// result records a node that raises if a double backward reaches it, rather than a silently
// zero second derivative.
#include "src/autograd/Functions.h"
#include "src/core/Check.h"
#include "src/ops/LossOps.h"

namespace tensor::autograd {

namespace {

variable_list ctc_backward(FormulaNode& n, const Tensor& g) {
  const int64_t nb = n.ints[0];
  IntArrayRef il(n.ints.data() + 1, static_cast<size_t>(nb));
  IntArrayRef tl(n.ints.data() + 1 + nb, static_cast<size_t>(nb));
  Tensor log_probs = n.saved(0);
  Tensor r = ops::loss_ops().ctc_loss_backward(g, log_probs, n.saved(1), il, tl, n.saved(2), n.saved(3),
                                               n.ints[static_cast<size_t>(1 + 2 * nb)], n.scalars[0].to_bool());
  if (GradMode::is_enabled() && any_requires_grad({&g, &log_probs})) {
    auto nd = std::make_shared<FormulaNode>("CtcLossBackwardBackward0", TENSOR_GRAD(
        TENSOR_ERROR("the derivative for '_ctc_loss_backward' is not implemented: ctc_loss has no double "
                     "backward (as libtorch's); grad shape {}", detail::shape_str(g.sizes()));
        return {};));
    nd->add_input(g);
    nd->add_input(log_probs);
    set_history(r, nd);
  }
  return {r};
}

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
  auto node = std::make_shared<FormulaNode>("CtcLossBackward0", &ctc_backward);
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
