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
#include <type_traits>
#include <vector>

#include "kernels/cpu/Reduce.h"
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

// ---- fused losses (Note [Fused CPU losses]) ----

namespace {

/// Sum of f(i) for i in [b, e): sixteen independent float (or double) partial sums, which the
/// compiler keeps in vector registers, flushed into a double total every block of 1024.
template <class T, class F>
double block_sum(int64_t b, int64_t e, const F& f) {
  constexpr int64_t kLanes = 16, kBlock = 1024;
  double total = 0;
  for (int64_t i = b; i < e;) {
    const int64_t be = std::min(e, i + kBlock);
    T acc[kLanes] = {};
    for (; i + kLanes <= be; i += kLanes)
      for (int64_t j = 0; j < kLanes; ++j) acc[j] += f(i + j);
    T s = 0;
    for (; i < be; ++i) s += f(i);
    for (int64_t j = 0; j < kLanes; ++j) s += acc[j];
    total += static_cast<double>(s);
  }
  return total;
}

/// Sum of f(i) over [0, n), split over threads (partials added in order).
template <class T, class F>
double parallel_sum(int64_t n, int64_t work_per_item, const F& f) {
  const int nt = detail::threads_for(n * work_per_item);
  if (nt <= 1) return block_sum<T>(0, n, f);
  std::vector<double> part(static_cast<size_t>(nt), 0.0);
  detail::parallel_range(n, nt, [&](int64_t b, int64_t e) { part[static_cast<size_t>(omp_get_thread_num())] = block_sum<T>(b, e, f); });
  double total = 0;
  for (double v : part) total += v;
  return total;
}

/// Whether every target of a class-target loss is ignore_index or a class in [0, C).
bool targets_in_range(const int64_t* t, int64_t N, int64_t C, int64_t ignore_index) {
  for (int64_t n = 0; n < N; ++n)
    if (t[n] != ignore_index && (t[n] < 0 || t[n] >= C)) return false;
  return true;
}

template <class T>
void store_reduced(const Tensor& out, double sum, double count, int64_t reduction) {
  T* o = out.data_ptr<T>();
  o[0] = static_cast<T>(reduction == 1 ? sum / count : sum);
}

}  // namespace

bool nll_loss_forward(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t reduction,
                      int64_t ignore_index, const Tensor& out) {
  const int64_t N = target.numel(), C = input.numel() / std::max<int64_t>(N, 1);
  const int64_t* t = target.data_ptr<int64_t>();
  if (!targets_in_range(t, N, C, ignore_index)) return false;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* x = input.data_ptr<T>();
    const T* w = weight.defined() ? weight.data_ptr<T>() : nullptr;
    auto wt = [&](int64_t n) { return t[n] == ignore_index ? T(0) : w ? w[t[n]] : T(1); };
    // An ignored row reads class 0 (times weight 0), as the composite's `safe` target.
    auto picked = [&](int64_t n) { return x[n * C + (t[n] == ignore_index ? 0 : t[n])]; };
    if (reduction == 0) {
      T* o = out.data_ptr<T>();
      for (int64_t n = 0; n < N; ++n) o[n] = -(picked(n) * wt(n));
      return;
    }
    double sum = 0, wsum = 0;
    for (int64_t n = 0; n < N; ++n) {
      sum += static_cast<double>(-(picked(n) * wt(n)));
      wsum += static_cast<double>(wt(n));
    }
    // All targets ignored: 0 / 0 = NaN, as the composite and libtorch.
    store_reduced<T>(out, sum, wsum, reduction);
  };
  if (input.dtype() == kFloat32) run(float{});
  else run(double{});
  return true;
}

bool cross_entropy_forward(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t reduction,
                           int64_t ignore_index, const Tensor& out) {
  const int64_t N = target.numel(), C = input.numel() / std::max<int64_t>(N, 1);
  const int64_t* t = target.data_ptr<int64_t>();
  if (!targets_in_range(t, N, C, ignore_index)) return false;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* x = input.data_ptr<T>();
    const T* w = weight.defined() ? weight.data_ptr<T>() : nullptr;
    auto wt = [&](int64_t n) { return t[n] == ignore_index ? T(0) : w ? w[t[n]] : T(1); };
    // The composite's -(log_softmax(x)[n, safe_n] * w_n): an ignored row reads class 0 (times
    // weight 0, so a row whose entry is infinite or NaN gives NaN there too, as the composite).
    // rows(b, e, f): f(n, loss of row n) for n in [b, e), the log_softmax entries taken 64
    // rows at a time (log_softmax_at shares one vector log among a group of rows).
    auto rows = [&](int64_t b, int64_t e, auto&& f) {
      constexpr int64_t kBlock = 64;
      int64_t safe[kBlock];
      T lsm[kBlock];
      for (int64_t n0 = b; n0 < e; n0 += kBlock) {
        const int64_t k = std::min(kBlock, e - n0);
        for (int64_t j = 0; j < k; ++j) safe[j] = t[n0 + j] == ignore_index ? 0 : t[n0 + j];
        log_softmax_at(x + n0 * C, k, C, safe, lsm);
        for (int64_t j = 0; j < k; ++j) f(n0 + j, -(lsm[j] * wt(n0 + j)));
      }
    };
    // exp costs about as much as a few memory passes: threads start at a quarter of the grain,
    // as for softmax.
    const int nt = detail::threads_for(N * C * 4);
    if (reduction == 0) {
      T* o = out.data_ptr<T>();
      detail::parallel_range(N, nt, [&](int64_t b, int64_t e) { rows(b, e, [&](int64_t n, T v) { o[n] = v; }); });
      return;
    }
    std::vector<double> part(static_cast<size_t>(std::max(nt, 1)), 0.0);
    detail::parallel_range(N, nt, [&](int64_t b, int64_t e) {
      double s = 0;
      rows(b, e, [&](int64_t, T v) { s += static_cast<double>(v); });
      // One chunk runs inline, perhaps on a thread of an outer team (whose number may be > 0).
      part[static_cast<size_t>(nt > 1 ? omp_get_thread_num() : 0)] = s;
    });
    double sum = 0, wsum = 0;
    for (double v : part) sum += v;
    for (int64_t n = 0; n < N; ++n) wsum += static_cast<double>(wt(n));
    // All targets ignored: 0 / 0 = NaN, as the composite and libtorch.
    store_reduced<T>(out, sum, wsum, reduction);
  };
  if (input.dtype() == kFloat32) run(float{});
  else run(double{});
  return true;
}

void huber_loss_forward(const Tensor& input, const Tensor& target, double delta, int64_t reduction,
                        const Tensor& out, bool smooth_l1) {
  const int64_t n = input.numel();
  auto run = [&](auto tag, auto smooth) {
    using T = decltype(tag);
    const T* x = input.data_ptr<T>();
    const T* y = target.data_ptr<T>();
    const T dl = static_cast<T>(delta), half_dl = static_cast<T>(0.5 * delta);
    const T half_over = static_cast<T>(0.5 / delta);
    auto f = [=](int64_t i) {
      const T d = std::abs(x[i] - y[i]);
      if constexpr (decltype(smooth)::value) return d < dl ? d * d * half_over : d - half_dl;
      else return d < dl ? d * d * T(0.5) : (d - half_dl) * dl;
    };
    if (reduction == 0) {
      T* o = out.data_ptr<T>();
      detail::parallel_range(n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = f(i);
      });
      return;
    }
    store_reduced<T>(out, parallel_sum<T>(n, 1, f), static_cast<double>(n), reduction);
  };
  auto by_dtype = [&](auto smooth) {
    if (input.dtype() == kFloat32) run(float{}, smooth);
    else run(double{}, smooth);
  };
  if (smooth_l1) by_dtype(std::true_type{});
  else by_dtype(std::false_type{});
}

void bce_with_logits_forward(const Tensor& input, const Tensor& target, const Tensor& weight,
                             const Tensor& pos_weight, int64_t reduction, const Tensor& out) {
  const int64_t n = input.numel();
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* x = input.data_ptr<T>();
    const T* t = target.data_ptr<T>();
    const T* w = weight.defined() ? weight.data_ptr<T>() : nullptr;
    const T* pw = pos_weight.defined() ? pos_weight.data_ptr<T>() : nullptr;
    // Chunks of kChunk elements: log(1 + e^-x) into a buffer by the vector loop (scalar exp and
    // log1p took 2-3x the composite's time at 4K elements), then the composite's terms in its
    // order, (1 - t) x + log_weight sp, times the weight. Returns the chunk's sum unless o.
    constexpr int64_t kChunk = 1024;
    auto chunk = [&](int64_t b, int64_t e, T* o) {
      T sp[kChunk];
      rows::softplus_neg(x + b, sp, e - b);
      auto f = [&](int64_t j) {
        const int64_t i = b + j;
        const T lw = pw ? (pw[i] - T(1)) * t[i] + T(1) : T(1);
        const T l = (T(1) - t[i]) * x[i] + lw * sp[j];
        return w ? l * w[i] : l;
      };
      if (o == nullptr) return block_sum<T>(0, e - b, f);
      for (int64_t j = 0; j < e - b; ++j) o[b + j] = f(j);
      return 0.0;
    };
    auto range = [&](int64_t b, int64_t e, T* o) {
      double s = 0;
      for (int64_t c = b; c < e; c += kChunk) s += chunk(c, std::min(e, c + kChunk), o);
      return s;
    };
    // exp and log1p cost about as much as a few memory passes: threads start at a quarter of the
    // grain, as for softmax.
    const int nt = detail::threads_for(n * 4);
    if (reduction == 0) {
      T* o = out.data_ptr<T>();
      detail::parallel_range(n, nt, [&](int64_t b, int64_t e) { range(b, e, o); });
      return;
    }
    std::vector<double> part(static_cast<size_t>(std::max(nt, 1)), 0.0);
    detail::parallel_range(n, nt, [&](int64_t b, int64_t e) {
      // One chunk runs inline, perhaps on a thread of an outer team (whose number may be > 0).
      part[static_cast<size_t>(nt > 1 ? omp_get_thread_num() : 0)] = range(b, e, nullptr);
    });
    double sum = 0;
    for (double v : part) sum += v;
    store_reduced<T>(out, sum, static_cast<double>(n), reduction);
  };
  if (input.dtype() == kFloat32) run(float{});
  else run(double{});
}

bool multi_margin_loss_forward(const Tensor& input, const Tensor& target, int64_t p, double margin,
                               const Tensor& weight, int64_t reduction, const Tensor& out) {
  const int64_t N = target.numel(), C = input.numel() / std::max<int64_t>(N, 1);
  const int64_t* t = target.data_ptr<int64_t>();
  for (int64_t r = 0; r < N; ++r)
    if (t[r] < 0 || t[r] >= C) return false;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* x = input.data_ptr<T>();
    const T* w = weight.defined() ? weight.data_ptr<T>() : nullptr;
    const T mg = static_cast<T>(margin), inv_c = static_cast<T>(C);
    // Row r's loss: the composite's (margin - x_y + x_c).clamp_min(0), squared for p = 2, summed
    // over c != y, times w[y], over C.
    auto row = [&](int64_t r) {
      const T* xr = x + r * C;
      const int64_t y = t[r];
      const T base = mg - xr[y];
      auto term = [&](int64_t c) {
        const T m = std::max(base + xr[c], T(0));
        return p == 2 ? m * m : m;
      };
      const double s = block_sum<T>(0, y, term) + block_sum<T>(y + 1, C, term);
      const T ws = w ? static_cast<T>(s) * w[y] : static_cast<T>(s);
      return ws / inv_c;
    };
    if (reduction == 0) {
      T* o = out.data_ptr<T>();
      detail::parallel_range(N, detail::threads_for(N * C), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) o[r] = row(r);
      });
      return;
    }
    const int nt = detail::threads_for(N * C);
    std::vector<double> part(static_cast<size_t>(std::max(nt, 1)), 0.0);
    detail::parallel_range(N, nt, [&](int64_t b, int64_t e) {
      double s = 0;
      for (int64_t r = b; r < e; ++r) s += static_cast<double>(row(r));
      // One chunk runs inline, perhaps on a thread of an outer team (whose number may be > 0).
      part[static_cast<size_t>(nt > 1 ? omp_get_thread_num() : 0)] = s;
    });
    double sum = 0;
    for (double v : part) sum += v;
    store_reduced<T>(out, sum, static_cast<double>(N), reduction);
  };
  if (input.dtype() == kFloat32) run(float{});
  else run(double{});
  return true;
}

namespace {

// The incoming gradient of row n: grad[n] without a reduction, else the scalar grad (over
// denom for the mean).
template <class T>
struct RowGrad {
  const T* g;
  int64_t reduction;
  T scalar;
  RowGrad(const Tensor& grad, int64_t r, double denom) : g(grad.data_ptr<T>()), reduction(r) {
    scalar = r == 1 ? static_cast<T>(static_cast<double>(g[0]) / denom) : g[0];
  }
  T operator()(int64_t n) const { return reduction == 0 ? g[n] : scalar; }
};

}  // namespace

void nll_loss_backward(const Tensor& grad, const Tensor& target, const Tensor& weight, int64_t reduction,
                       int64_t ignore_index, const Tensor& grad_input) {
  const int64_t N = target.numel(), C = grad_input.numel() / std::max<int64_t>(N, 1);
  const int64_t* t = target.data_ptr<int64_t>();
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* w = weight.defined() ? weight.data_ptr<T>() : nullptr;
    auto wt = [&](int64_t n) { return t[n] == ignore_index ? T(0) : w ? w[t[n]] : T(1); };
    double wsum = 0;
    if (reduction == 1)
      for (int64_t n = 0; n < N; ++n) wsum += static_cast<double>(wt(n));
    const RowGrad<T> g(grad, reduction, wsum);
    T* gi = grad_input.data_ptr<T>();
    // The zeroing is the whole cost (one write of N x C); each thread zeroes its rows and sets
    // their targets while they are in cache.
    detail::parallel_range(N, detail::threads_for(N * C), [&](int64_t b, int64_t e) {
      std::fill(gi + b * C, gi + e * C, T(0));
      for (int64_t n = b; n < e; ++n)
        if (t[n] != ignore_index) gi[n * C + t[n]] = -(wt(n) * g(n));
    });
  };
  if (grad_input.dtype() == kFloat32) run(float{});
  else run(double{});
}

void multi_margin_loss_backward(const Tensor& grad, const Tensor& input, const Tensor& target, int64_t p,
                                double margin, const Tensor& weight, int64_t reduction, const Tensor& grad_input) {
  const int64_t N = target.numel(), C = input.numel() / std::max<int64_t>(N, 1);
  const int64_t* t = target.data_ptr<int64_t>();
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* x = input.data_ptr<T>();
    const T* w = weight.defined() ? weight.data_ptr<T>() : nullptr;
    const RowGrad<T> g(grad, reduction, static_cast<double>(N));
    T* gi = grad_input.data_ptr<T>();
    const T mg = static_cast<T>(margin);
    detail::parallel_range(N, detail::threads_for(N * C), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* xr = x + r * C;
        T* gr = gi + r * C;
        const int64_t y = t[r];
        const T s = g(r) * (w ? w[y] : T(1)) / static_cast<T>(C);
        const T base = mg - xr[y];
        // Each class's share in a vector loop (p a constant in each), then class y's (whose own
        // term is not part of the loss) as minus the row's sum, read back from L1 by the
        // blocked sum: one loop that also summed ran scalar (a float sum cannot be reordered),
        // 12 ms for [4096, 1000].
        auto fill = [&](auto p2) {
          const T s2 = decltype(p2)::value ? T(2) * s : s;
          for (int64_t c = 0; c < C; ++c) {
            const T m = base + xr[c];
            gr[c] = m > T(0) ? (decltype(p2)::value ? m * s2 : s2) : T(0);
          }
        };
        if (p == 2) fill(std::true_type{});
        else fill(std::false_type{});
        gr[y] = T(0);
        gr[y] = static_cast<T>(-block_sum<T>(0, C, [gr](int64_t c) { return gr[c]; }));
      }
    });
  };
  if (input.dtype() == kFloat32) run(float{});
  else run(double{});
}

}  // namespace tensor::cpu
