// optim::LBFGS: torch::optim::LBFGS (libtorch 1.13, itself torch.optim.LBFGS, after minFunc),
// written from the algorithm (Nocedal & Wright, Algorithms 7.4 and 3.5/3.6) with the same
// decisions, so that a run takes the same iterations and evaluations as libtorch's.
#include "tensor/optim/lbfgs.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <tuple>

#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/ops.h"

namespace tensor::optim {

// ---- options and state ----

LBFGSOptions::LBFGSOptions(double lr) : lr_(lr) {}
double LBFGSOptions::get_lr() const { return lr_; }
void LBFGSOptions::set_lr(double lr) { lr_ = lr; }

std::vector<std::pair<std::string, double>> LBFGSOptions::named_values() const {
  std::vector<std::pair<std::string, double>> out = {{"lr", lr_}, {"max_iter", static_cast<double>(max_iter_)}};
  if (max_eval_) out.emplace_back("max_eval", static_cast<double>(*max_eval_));
  out.insert(out.end(), {{"tolerance_grad", tolerance_grad_},
                         {"tolerance_change", tolerance_change_},
                         {"history_size", static_cast<double>(history_size_)},
                         {"line_search_fn", line_search_fn_ ? 1.0 : 0.0}});
  return out;
}

void LBFGSOptions::set_named_value(const std::string& name, double value) {
  if (name == "lr")
    lr_ = value;
  else if (name == "max_iter")
    max_iter_ = static_cast<int64_t>(value);
  else if (name == "max_eval")
    max_eval_ = static_cast<int64_t>(value);
  else if (name == "tolerance_grad")
    tolerance_grad_ = value;
  else if (name == "tolerance_change")
    tolerance_change_ = value;
  else if (name == "history_size")
    history_size_ = static_cast<int64_t>(value);
  else if (name == "line_search_fn") {
    TENSOR_CHECK(value == 0 || value == 1, "LBFGSOptions: line_search_fn must be 0 (none) or 1 (strong_wolfe), got {}",
                 value);
    line_search_fn_ = value == 1 ? std::optional<std::string>("strong_wolfe") : std::nullopt;
  } else {
    TENSOR_ERROR("LBFGSOptions: unknown hyperparameter '{}'", name);
  }
}

NamedTensors LBFGSParamState::named_tensors() const {
  NamedTensors out;
  out.emplace_back("func_evals", tensor::scalar_tensor(func_evals_, kInt64));
  out.emplace_back("n_iter", tensor::scalar_tensor(n_iter_, kInt64));
  out.emplace_back("t", tensor::scalar_tensor(t_, kFloat64));
  out.emplace_back("prev_loss", tensor::scalar_tensor(prev_loss_, kFloat64));
  if (d_.defined()) out.emplace_back("d", d_);
  if (H_diag_.defined()) out.emplace_back("H_diag", H_diag_);
  if (prev_flat_grad_.defined()) out.emplace_back("prev_flat_grad", prev_flat_grad_);
  auto list = [&](const char* name, const std::deque<Tensor>& l) {
    for (size_t i = 0; i < l.size(); ++i) out.emplace_back(std::string(name) + "." + std::to_string(i), l[i]);
  };
  list("old_dirs", old_dirs_);
  list("old_stps", old_stps_);
  list("ro", ro_);
  return out;
}

void LBFGSParamState::set_named_tensor(const std::string& name, const Tensor& value) {
  auto one = [&](const char* what) {
    TENSOR_CHECK(value.numel() == 1, "LBFGSParamState: '{}' must be a one-element tensor, got {}", what,
                 value.describe());
  };
  // "old_dirs.3" and the like: entry 3 of a history list, in any order.
  auto list_entry = [&](const std::string& prefix, std::deque<Tensor>& l) {
    if (name.compare(0, prefix.size(), prefix) != 0) return false;
    const std::string digits = name.substr(prefix.size());
    TENSOR_CHECK(!digits.empty() && digits.size() < 10 && digits.find_first_not_of("0123456789") == std::string::npos,
                 "LBFGSParamState: unknown state '{}'", name);
    const size_t i = std::stoul(digits);
    if (l.size() <= i) l.resize(i + 1);
    l[i] = value;
    return true;
  };
  if (name == "func_evals") {
    one("func_evals");
    func_evals_ = value.item<int64_t>();
  } else if (name == "n_iter") {
    one("n_iter");
    n_iter_ = value.item<int64_t>();
  } else if (name == "t") {
    one("t");
    t_ = value.item<double>();
  } else if (name == "prev_loss") {
    one("prev_loss");
    prev_loss_ = value.item<double>();
  } else if (name == "d") {
    d_ = value;
  } else if (name == "H_diag") {
    H_diag_ = value;
  } else if (name == "prev_flat_grad") {
    prev_flat_grad_ = value;
  } else if (!list_entry("old_dirs.", old_dirs_) && !list_entry("old_stps.", old_stps_) && !list_entry("ro.", ro_)) {
    TENSOR_ERROR("LBFGSParamState: unknown state '{}'", name);
  }
}

bool LBFGSParamState::shaped_like_param(const std::string&) const { return false; }

// ---- line search ----

namespace {

// The minimizer of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2, clamped to
// [lo, hi] (by default the interval between x1 and x2); the bounds' midpoint when the cubic has
// no minimizer (Nocedal & Wright, eq. 3.59).
double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2,
                         std::optional<std::pair<double, double>> bounds = std::nullopt) {
  const auto [lo, hi] = bounds ? *bounds : (x1 <= x2 ? std::make_pair(x1, x2) : std::make_pair(x2, x1));
  const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  const double d2_square = d1 * d1 - g1 * g2;
  if (d2_square < 0) return (lo + hi) / 2;
  const double d2 = std::sqrt(d2_square);
  const double min_pos = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                                  : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
  return std::min(std::max(min_pos, lo), hi);
}

struct LineSearch {
  double loss;
  Tensor flat_grad;
  double t;
  int64_t evals;
};

// One point of the line search: the loss and flat gradient at step length t along d.
using Objective = std::function<std::pair<double, Tensor>(double t)>;

// Finds a step length t along d satisfying the strong Wolfe conditions
//   f(t) <= f + c1 t gtd  and  |g(t).d| <= -c2 gtd
// by bracketing (growing t by cubic extrapolation) and then zooming into the bracket (cubic
// interpolation kept at least a tenth of the bracket from its ends once progress stalls), at
// most max_ls evaluations after the first. Returns the best point found. f, g, gtd: the loss,
// flat gradient and directional derivative at t = 0.
LineSearch strong_wolfe(const Objective& obj, double t, const Tensor& d, double f, const Tensor& g, double gtd,
                        double c1 = 1e-4, double c2 = 0.9, double tolerance_change = 1e-9, int max_ls = 25) {
  const double d_norm = d.abs().max().item<double>();
  // Plain variables, not a structured binding: the lambdas below capture them (C++17).
  double f_new;
  Tensor g_new;
  std::tie(f_new, g_new) = obj(t);
  int64_t evals = 1;
  double gtd_new = g_new.dot(d).item<double>();

  // Every flat gradient here is a fresh tensor (gather_flat_grad concatenates), so they are
  // kept without the clones an in-place gradient buffer would need.
  double t_prev = 0, f_prev = f, gtd_prev = gtd;
  Tensor g_prev = g;
  bool done = false;
  int ls_iter = 0;
  // The bracket: one point (done) or two; bracket_gtd is unset only after max_ls, when the
  // zoom below does not run.
  int n = 0;
  std::array<double, 2> bracket{}, bracket_f{}, bracket_gtd{};
  std::array<Tensor, 2> bracket_g;
  auto set_two = [&] {
    n = 2;
    bracket = {t_prev, t};
    bracket_f = {f_prev, f_new};
    bracket_g = {g_prev, g_new};
    bracket_gtd = {gtd_prev, gtd_new};
  };
  while (ls_iter < max_ls) {
    if (f_new > f + c1 * t * gtd || (ls_iter > 1 && f_new >= f_prev)) {
      set_two();  // sufficient decrease failed, or the loss rose: the minimum lies before t
      break;
    }
    if (std::abs(gtd_new) <= -c2 * gtd) {
      n = 1;
      bracket[0] = t;
      bracket_f[0] = f_new;
      bracket_g[0] = g_new;
      done = true;
      break;
    }
    if (gtd_new >= 0) {
      set_two();  // the slope turned: a minimum lies between t_prev and t
      break;
    }
    // Extrapolate: a cubic step within [t + 0.01 (t - t_prev), 10 t].
    const double min_step = t + 0.01 * (t - t_prev);
    const double max_step = t * 10;
    const double tmp = t;
    t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, std::make_pair(min_step, max_step));
    t_prev = tmp;
    f_prev = f_new;
    g_prev = g_new;
    gtd_prev = gtd_new;
    std::tie(f_new, g_new) = obj(t);
    ++evals;
    gtd_new = g_new.dot(d).item<double>();
    ++ls_iter;
  }
  if (ls_iter == max_ls) {
    n = 2;
    bracket = {0, t};
    bracket_f = {f, f_new};
    bracket_g = {g, g_new};
  }

  // Zoom: shrink the bracket, keeping bracket[low] the lowest point that satisfies sufficient
  // decrease, until the curvature condition holds.
  bool insuf_progress = false;
  int low = bracket_f[0] <= bracket_f[n - 1] ? 0 : 1, high = 1 - low;
  while (!done && ls_iter < max_ls) {
    if (std::abs(bracket[1] - bracket[0]) * d_norm < tolerance_change) break;  // bracket too small
    t = cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1]);
    const double b_max = std::max(bracket[0], bracket[1]), b_min = std::min(bracket[0], bracket[1]);
    const double eps = 0.1 * (b_max - b_min);
    if (std::min(b_max - t, t - b_min) < eps) {
      // Close to an end: accept once, but on the second time in a row (or outside the bracket)
      // move to a tenth of the bracket from the nearer end.
      if (insuf_progress || t >= b_max || t <= b_min) {
        t = std::abs(t - b_max) < std::abs(t - b_min) ? b_max - eps : b_min + eps;
        insuf_progress = false;
      } else {
        insuf_progress = true;
      }
    } else {
      insuf_progress = false;
    }
    std::tie(f_new, g_new) = obj(t);
    ++evals;
    gtd_new = g_new.dot(d).item<double>();
    ++ls_iter;
    if (f_new > f + c1 * t * gtd || f_new >= bracket_f[low]) {
      // No sufficient decrease, or not below the low end: t becomes the high end.
      bracket[high] = t;
      bracket_f[high] = f_new;
      bracket_g[high] = g_new;
      bracket_gtd[high] = gtd_new;
      low = bracket_f[0] <= bracket_f[1] ? 0 : 1;
      high = 1 - low;
    } else {
      if (std::abs(gtd_new) <= -c2 * gtd) {
        done = true;
      } else if (gtd_new * (bracket[high] - bracket[low]) >= 0) {
        // The slope at t points away from the high end: the old low end becomes the high end.
        bracket[high] = bracket[low];
        bracket_f[high] = bracket_f[low];
        bracket_g[high] = bracket_g[low];
        bracket_gtd[high] = bracket_gtd[low];
      }
      bracket[low] = t;
      bracket_f[low] = f_new;
      bracket_g[low] = g_new;
      bracket_gtd[low] = gtd_new;
    }
  }
  return {bracket_f[low], bracket_g[low], bracket[low], evals};
}

void check_options(const LBFGSOptions& o) {
  TENSOR_CHECK(o.lr() >= 0, "LBFGS: Invalid learning rate: {}", o.lr());
  TENSOR_CHECK(o.max_iter() >= 1, "LBFGS: max_iter must be at least 1, got {}", o.max_iter());
  TENSOR_CHECK(!o.max_eval() || *o.max_eval() >= 1, "LBFGS: max_eval must be at least 1, got {}",
               o.max_eval().value_or(0));
  TENSOR_CHECK(o.history_size() >= 1, "LBFGS: history_size must be at least 1, got {}", o.history_size());
  TENSOR_CHECK(!o.line_search_fn() || *o.line_search_fn() == "strong_wolfe",
               "LBFGS: only 'strong_wolfe' is supported as line_search_fn, got '{}'", o.line_search_fn().value_or(""));
}

}  // namespace

// ---- the optimizer ----

LBFGS::LBFGS(std::vector<OptimizerParamGroup> param_groups, LBFGSOptions defaults)
    : Optimizer(std::move(param_groups), std::make_unique<LBFGSOptions>(defaults)) {
  TENSOR_CHECK(param_groups_.size() == 1,
               "LBFGS doesn't support per-parameter options (parameter groups); got {} groups", param_groups_.size());
  check_options(defaults);
  auto& group_options = static_cast<LBFGSOptions&>(param_groups_[0].options());
  check_options(group_options);
  // As libtorch: an unset max_eval becomes max_iter * 5 / 4, in the defaults and in the group
  // (from the defaults' max_iter, as libtorch).
  if (!defaults.max_eval()) {
    const int64_t max_eval = defaults.max_iter() * 5 / 4;
    static_cast<LBFGSOptions&>(*defaults_).max_eval(max_eval);
    group_options.max_eval(max_eval);
  }
  const Tensor& p0 = param_groups_[0].params().empty() ? Tensor() : param_groups_[0].params()[0];
  for (const Tensor& p : param_groups_[0].params()) {
    TENSOR_CHECK(p.is_floating_point() && p.dtype() == p0.dtype() && p.device() == p0.device(),
                 "LBFGS: the parameters must be floating point and share one dtype and device (they are flattened "
                 "into one vector), got {} and {}",
                 p0.describe(), p.describe());
  }
}

LBFGS::LBFGS(std::vector<Tensor> params, LBFGSOptions defaults)
    : LBFGS(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, std::move(defaults)) {}

std::unique_ptr<OptimizerParamState> LBFGS::make_param_state() const { return std::make_unique<LBFGSParamState>(); }

Tensor LBFGS::gather_flat_grad() const {
  std::vector<Tensor> views;
  for (const Tensor& p : param_groups_[0].params())
    views.push_back(p.grad().defined() ? p.grad().reshape({-1}) : tensor::zeros({p.numel()}, p.options()));
  return tensor::cat(views, 0);
}

void LBFGS::add_grad(double step_size, const Tensor& update) {
  int64_t offset = 0;
  for (const Tensor& p : param_groups_[0].params()) {
    p.add_(update.narrow(0, offset, p.numel()).view_as(p), step_size);
    offset += p.numel();
  }
}

Tensor LBFGS::step(LossClosure closure) {
  TENSOR_CHECK(closure != nullptr, "LBFGS requires closure to be passed");
  TENSOR_CHECK(param_groups_.size() == 1,
               "LBFGS doesn't support per-parameter options (parameter groups); got {} groups", param_groups_.size());
  auto& params = param_groups_[0].params();
  TENSOR_CHECK(!params.empty(), "LBFGS: the optimizer has no parameters");
  const auto& o = static_cast<const LBFGSOptions&>(param_groups_[0].options());
  check_options(o);
  const double lr = o.lr(), tolerance_grad = o.tolerance_grad(), tolerance_change = o.tolerance_change();
  const int64_t max_iter = o.max_iter(), history_size = o.history_size();
  const int64_t max_eval = o.max_eval().value_or(max_iter * 5 / 4);

  auto& slot = state_[params[0].unsafeGetTensorImpl()];
  if (!slot) slot = std::make_unique<LBFGSParamState>();
  auto& st = static_cast<LBFGSParamState&>(*slot);
  TENSOR_CHECK(st.old_dirs().size() == st.old_stps().size() && st.old_dirs().size() == st.ro().size(),
               "LBFGS: the state's history lists differ in length (old_dirs {}, old_stps {}, ro {})",
               st.old_dirs().size(), st.old_stps().size(), st.ro().size());
  for (size_t i = 0; i < st.old_dirs().size(); ++i)
    TENSOR_CHECK(st.old_dirs()[i].defined() && st.old_stps()[i].defined() && st.ro()[i].defined(),
                 "LBFGS: the state's history entry {} is missing", i);

  auto evaluate = [&] {
    autograd::AutoGradMode enable(true);
    return closure();
  };
  Tensor orig_loss;
  // The closure runs many times inside the update, so run_step gets none; it still runs the
  // hooks and the profiler range around the whole step.
  run_step(nullptr, [&] {
    orig_loss = evaluate();
    double loss = orig_loss.item<double>();
    int64_t current_evals = 1;
    st.func_evals(st.func_evals() + 1);
    Tensor flat_grad = gather_flat_grad();
    bool opt_cond = flat_grad.abs().max().item<double>() <= tolerance_grad;
    if (opt_cond) return;  // already optimal

    Tensor& d = st.d();
    Tensor& H_diag = st.H_diag();
    Tensor& prev_flat_grad = st.prev_flat_grad();
    auto& old_dirs = st.old_dirs();
    auto& old_stps = st.old_stps();
    auto& ro = st.ro();
    double& t = st.t();
    int64_t n_iter = 0;
    while (n_iter < max_iter) {
      ++n_iter;
      st.n_iter(st.n_iter() + 1);

      // The direction: steepest descent on the very first iteration, else -H g with H from the
      // two-loop recursion over the stored pairs (Nocedal & Wright, Algorithm 7.4).
      if (st.n_iter() == 1) {
        d = flat_grad.neg();
        H_diag = tensor::scalar_tensor(1.0, flat_grad.options());
        old_dirs.clear();
        old_stps.clear();
        ro.clear();
      } else {
        Tensor y = flat_grad.sub(prev_flat_grad);
        Tensor s = d.mul(t);
        Tensor ys = y.dot(s);
        // Keep the pair only with positive curvature, so that H stays positive definite.
        if (ys.item<double>() > 1e-10) {
          // Drop the oldest (a while, not an if: history_size may have shrunk since the last step).
          while (static_cast<int64_t>(old_dirs.size()) >= history_size) {
            old_dirs.pop_front();
            old_stps.pop_front();
            ro.pop_front();
          }
          old_dirs.push_back(y);
          old_stps.push_back(s);
          ro.push_back(1.0 / ys);
          H_diag = ys / y.dot(y);
        }
        const int64_t num_old = static_cast<int64_t>(old_dirs.size());
        if (!st.al() || static_cast<int64_t>(st.al()->size()) < num_old)
          st.al(std::vector<Tensor>(static_cast<size_t>(std::max(history_size, num_old))));
        auto& al = *st.al();
        Tensor q = flat_grad.neg();
        for (int64_t i = num_old - 1; i >= 0; --i) {
          al[i] = old_stps[i].dot(q) * ro[i];
          q.add_(old_dirs[i], -al[i].item<double>());
        }
        // r (the new d) = H0 q, then the second loop, in place on r.
        Tensor r = q.mul(H_diag);
        d = r;
        for (int64_t i = 0; i < num_old; ++i) {
          Tensor be_i = old_dirs[i].dot(r) * ro[i];
          r.add_(old_stps[i], (al[i] - be_i).item<double>());
        }
      }
      if (!prev_flat_grad.defined())
        prev_flat_grad = flat_grad.clone();
      else
        prev_flat_grad.copy_(flat_grad);
      st.prev_loss(loss);

      // The step length: lr, shrunk on the very first iteration where nothing says how far to go.
      t = st.n_iter() == 1 ? std::min(1.0, 1.0 / flat_grad.abs().sum().item<double>()) * lr : lr;
      const double gtd = flat_grad.dot(d).item<double>();
      if (gtd > -tolerance_change) break;  // not a descent direction (any more)

      int64_t ls_func_evals = 0;
      if (o.line_search_fn()) {
        std::vector<Tensor> x_init;
        for (const Tensor& p : params) x_init.push_back(p.clone());
        // Evaluates at x_init + t d and puts the parameters back.
        Objective obj = [&](double step) {
          add_grad(step, d);
          const double f = evaluate().item<double>();
          Tensor g = gather_flat_grad();
          for (size_t i = 0; i < params.size(); ++i) params[i].copy_(x_init[i]);
          return std::make_pair(f, g);
        };
        LineSearch ls = strong_wolfe(obj, t, d, loss, flat_grad, gtd);
        loss = ls.loss;
        flat_grad = ls.flat_grad;
        t = ls.t;
        ls_func_evals = ls.evals;
        add_grad(t, d);
        opt_cond = flat_grad.abs().max().item<double>() <= tolerance_grad;
      } else {
        add_grad(t, d);
        // Re-evaluate except after the last iteration: the next step() starts with an
        // evaluation anyway (in a stochastic setting on a new batch).
        if (n_iter != max_iter) {
          loss = evaluate().item<double>();
          flat_grad = gather_flat_grad();
          opt_cond = flat_grad.abs().max().item<double>() <= tolerance_grad;
          ls_func_evals = 1;
        }
      }
      current_evals += ls_func_evals;
      st.func_evals(st.func_evals() + ls_func_evals);

      if (n_iter == max_iter) break;
      if (current_evals >= max_eval) break;
      if (opt_cond) break;
      if (d.mul(t).abs().max().item<double>() <= tolerance_change) break;  // no progress in x
      if (std::abs(loss - st.prev_loss()) < tolerance_change) break;       // nor in the loss
    }
  });
  return orig_loss;
}

}  // namespace tensor::optim
