// The CTC loss on CPU (Graves et al., "Connectionist Temporal Classification", 2006), in log
// space. Sample b's extended target l' has 2 S + 1 symbols: blanks at even s, the labels at odd
// s. alpha_t(s) is the log-probability of all partial alignments of the first t + 1 steps that
// end at l'_s; beta_t(s) that of the alignments of steps t.. starting at l'_s. The loss is
// -log(alpha_{L-1}(2S) + alpha_{L-1}(2S - 1)).
//
// Note [CTC gradient]
// d(-log p) / d log_probs[t, c] = -exp(log sum_{s: l'_s = c} alpha_t(s) beta_t(s) - log_probs[t, c] + nll),
// the exact derivative, for t < L (zero for padded steps). libtorch's kernel adds exp(log_probs[t, c]):
// the term that cancels through log_softmax (its backward subtracts softmax times the gradient's
// sum over C, and each step's true gradient sums to -1). So both agree on ctc_loss(log_softmax(x))
// (the documented use); on unnormalized log_probs this one is the derivative gradcheck checks.
// With zero_infinity an infinite loss gets a zero gradient.
//
// Internals run in double whatever the dtype (a log-sum-exp of up to 3 terms per symbol); the
// batch is split across threads.
#include "kernels/cpu/LossKernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "src/core/Check.h"
#include "src/core/Parallel.h"

namespace tensor::cpu {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

double lse2(double a, double b) {
  const double m = std::max(a, b);
  if (m == kNegInf) return kNegInf;
  return m + std::log(std::exp(a - m) + std::exp(b - m));
}
double lse3(double a, double b, double c) {
  const double m = std::max(a, std::max(b, c));
  if (m == kNegInf) return kNegInf;
  return m + std::log(std::exp(a - m) + std::exp(b - m) + std::exp(c - m));
}

// log_probs[t, b, c] read through strides.
template <class T>
struct LogProbs {
  const T* p;
  int64_t st, sb, sc;
  double operator()(int64_t t, int64_t b, int64_t c) const { return static_cast<double>(p[t * st + b * sb + c * sc]); }
};

// l'_s of sample b, and whether l'_s may be reached from l'_{s-2} (skipping the blank between
// two labels is allowed unless they repeat); built once per sample.
struct Extended {
  std::vector<int64_t> label;
  std::vector<char> skip;
  void build(const int64_t* tg, int64_t offset, int64_t stride, int64_t blank, int64_t S) {
    const size_t n = static_cast<size_t>(2 * S + 1);
    label.assign(n, blank);
    skip.assign(n, 0);
    for (size_t s = 1; s < n; s += 2) {
      label[s] = tg[offset + static_cast<int64_t>(s / 2) * stride];
      skip[s] = s > 1 && label[s - 2] != label[s];
    }
  }
  int64_t operator()(int64_t s) const { return label[static_cast<size_t>(s)]; }
  bool skips(int64_t s) const { return skip[static_cast<size_t>(s)] != 0; }
};

// Fills alpha_t(s) for t < L, s <= 2S (rows `row` apart) and returns the negative
// log-likelihood; an input of length 0 aligns only the empty target.
template <class T>
double alpha_of(const LogProbs<T>& lp, int64_t b, int64_t L, int64_t S, const Extended& ext, double* alpha,
                int64_t row) {
  const int64_t n = 2 * S + 1;
  if (L == 0) return S == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  alpha[0] = lp(0, b, ext(0));
  if (S > 0) alpha[1] = lp(0, b, ext(1));
  for (int64_t s = 2; s < n; ++s) alpha[s] = kNegInf;
  for (int64_t t = 1; t < L; ++t) {
    const double* prev = alpha + (t - 1) * row;
    double* cur = alpha + t * row;
    for (int64_t s = 0; s < n; ++s) {
      const int64_t l = ext(s);
      const double x = prev[s];
      const double y = s > 0 ? prev[s - 1] : kNegInf;
      cur[s] = (ext.skips(s) ? lse3(x, y, prev[s - 2]) : lse2(x, y)) + lp(t, b, l);
    }
  }
  const double* last = alpha + (L - 1) * row;
  return -(S > 0 ? lse2(last[n - 1], last[n - 2]) : last[n - 1]);
}

void check_targets(const int64_t* tg, const CtcArgs& a) {
  for (int64_t b = 0; b < a.N; ++b)
    for (int64_t i = 0; i < a.target_lengths[static_cast<size_t>(b)]; ++i) {
      const int64_t v = tg[a.tg_offsets[static_cast<size_t>(b)] + i * a.tg_stride];
      TENSOR_CHECK(v >= 0 && v < a.C,
                   "_ctc_loss: target value {} of sample {} (position {}) is outside the {} classes [0, {}) of "
                   "log_probs",
                   v, b, i, a.C, a.C);
    }
}

template <class T>
void forward_impl(const Tensor& log_probs, const Tensor& targets, const CtcArgs& a, const Tensor& nll_t,
                  const Tensor& log_alpha) {
  const LogProbs<T> lp{log_probs.data_ptr<T>(), log_probs.stride(0), log_probs.stride(1), log_probs.stride(2)};
  const int64_t* tg = targets.data_ptr<int64_t>();
  check_targets(tg, a);
  T* nll = nll_t.data_ptr<T>();
  T* la = log_alpha.data_ptr<T>();
  const int64_t width = 2 * a.max_target_length + 1;
  const int64_t per_sample = a.T * width;
  std::fill(la, la + a.N * per_sample, static_cast<T>(kNegInf));
  detail::parallel_range(a.N, detail::threads_for(a.N * per_sample * 8), [&](int64_t b0, int64_t b1) {
    std::vector<double> alpha;
    Extended ext;
    for (int64_t b = b0; b < b1; ++b) {
      const size_t bi = static_cast<size_t>(b);
      const int64_t L = a.input_lengths[bi], S = a.target_lengths[bi];
      alpha.assign(static_cast<size_t>(std::max<int64_t>(L, 1) * width), kNegInf);
      ext.build(tg, a.tg_offsets[bi], a.tg_stride, a.blank, S);
      nll[b] = static_cast<T>(alpha_of(lp, b, L, S, ext, alpha.data(), width));
      for (int64_t i = 0; i < L * width; ++i) la[b * per_sample + i] = static_cast<T>(alpha[static_cast<size_t>(i)]);
    }
  });
}

template <class T>
void backward_impl(const Tensor& grad, const Tensor& log_probs, const Tensor& targets, const CtcArgs& a,
                   const Tensor& nll_t, const Tensor& log_alpha, const Tensor& grad_input) {
  const LogProbs<T> lp{log_probs.data_ptr<T>(), log_probs.stride(0), log_probs.stride(1), log_probs.stride(2)};
  const int64_t* tg = targets.data_ptr<int64_t>();
  const T* nll = nll_t.data_ptr<T>();
  const T* la = log_alpha.data_ptr<T>();
  const T* gout = grad.data_ptr<T>();
  const int64_t gstride = grad.dim() == 0 ? 0 : grad.stride(0);
  T* gi = grad_input.data_ptr<T>();
  const int64_t C = a.C, N = a.N;
  const int64_t width = 2 * a.max_target_length + 1;
  std::fill(gi, gi + a.T * N * C, T(0));
  detail::parallel_range(N, detail::threads_for(N * a.T * width * 8), [&](int64_t b0, int64_t b1) {
    std::vector<double> beta, lcab;
    Extended ext;
    for (int64_t b = b0; b < b1; ++b) {
      const size_t bi = static_cast<size_t>(b);
      const int64_t L = a.input_lengths[bi], S = a.target_lengths[bi];
      const double nl = static_cast<double>(nll[b]);
      const double g = static_cast<double>(gout[b * gstride]);
      if (L == 0 || (a.zero_infinity && std::isinf(nl))) continue;  // no step, or zeroed
      const int64_t n = 2 * S + 1;
      ext.build(tg, a.tg_offsets[bi], a.tg_stride, a.blank, S);
      beta.assign(static_cast<size_t>(L * n), kNegInf);
      double* last = beta.data() + (L - 1) * n;
      last[n - 1] = lp(L - 1, b, a.blank);
      if (S > 0) last[n - 2] = lp(L - 1, b, ext(n - 2));
      for (int64_t t = L - 2; t >= 0; --t) {
        const double* next = beta.data() + (t + 1) * n;
        double* cur = beta.data() + t * n;
        for (int64_t s = 0; s < n; ++s) {
          const int64_t l = ext(s);
          const double x = next[s];
          const double y = s + 1 < n ? next[s + 1] : kNegInf;
          cur[s] = (s + 2 < n && ext.skips(s + 2) ? lse3(x, y, next[s + 2]) : lse2(x, y)) + lp(t, b, l);
        }
      }
      const T* alpha = la + b * a.T * width;
      lcab.resize(static_cast<size_t>(C));
      for (int64_t t = 0; t < L; ++t) {
        std::fill(lcab.begin(), lcab.end(), kNegInf);
        for (int64_t s = 0; s < n; ++s) {
          double& v = lcab[static_cast<size_t>(ext(s))];
          v = lse2(v, static_cast<double>(alpha[t * width + s]) + beta[static_cast<size_t>(t * n + s)]);
        }
        T* row = gi + (t * N + b) * C;
        for (int64_t c = 0; c < C; ++c) {
          const double v = lcab[static_cast<size_t>(c)];
          // v = -inf (c never on an alignment) gives 0 unless the loss is infinite (then NaN, as libtorch).
          row[c] = static_cast<T>(-g * std::exp(v - lp(t, b, c) + nl));
        }
      }
    }
  });
}

}  // namespace

void ctc_loss(const Tensor& log_probs, const Tensor& targets, const CtcArgs& a, const Tensor& neg_log_likelihood,
              const Tensor& log_alpha) {
  if (log_probs.dtype() == kFloat64)
    forward_impl<double>(log_probs, targets, a, neg_log_likelihood, log_alpha);
  else
    forward_impl<float>(log_probs, targets, a, neg_log_likelihood, log_alpha);
}

void ctc_loss_backward(const Tensor& grad, const Tensor& log_probs, const Tensor& targets, const CtcArgs& a,
                       const Tensor& neg_log_likelihood, const Tensor& log_alpha, const Tensor& grad_input) {
  if (log_probs.dtype() == kFloat64)
    backward_impl<double>(grad, log_probs, targets, a, neg_log_likelihood, log_alpha, grad_input);
  else
    backward_impl<float>(grad, log_probs, targets, a, neg_log_likelihood, log_alpha, grad_input);
}

}  // namespace tensor::cpu
