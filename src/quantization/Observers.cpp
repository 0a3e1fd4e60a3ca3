// Observers of tensor::quantization (PyTorch's torch/ao/quantization/observer.py).
#include <algorithm>
#include <cmath>
#include <limits>
#include <ostream>
#include <vector>

#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/ops.h"
#include "tensor/quantization.h"

namespace tensor::quantization {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// The observed tensor as contiguous float32 (PyTorch's x.detach().to(min_val.dtype)).
Tensor observed_values(const Tensor& x, const std::string& who) {
  TENSOR_CHECK(x.defined(), "{}: observed an undefined tensor", who);
  TENSOR_CHECK(is_floating_point(x.scalar_type()) && !x.is_quantized(),
               "{}: observes floating-point tensors, got dtype {} (observe before quantizing)", who, x.scalar_type());
  TENSOR_CHECK(x.device().is_cpu(), "{}: observes CPU tensors, got one on {} (call .cpu() first)", who,
               x.device().str());
  return x.detach().to(kFloat32).contiguous();
}

// Reads a 0-dim or one-element buffer as float (buffers may have been converted by Module::to).
float scalar_of(const Tensor& t) { return static_cast<float>(t.item<double>()); }

// A float32 tensor holding these values.
Tensor float_tensor(const std::vector<float>& v, IntArrayRef sizes) {
  Tensor t = empty(sizes, kFloat32);
  std::copy(v.begin(), v.end(), t.data_ptr<float>());
  return t;
}

// The float32 values of a buffer (any floating dtype, on any device: a prepared model may have
// been moved to CUDA) as a vector.
std::vector<float> values_of(const Tensor& t) {
  Tensor c = t.detach().to(Device(kCPU), kFloat32).contiguous();
  const float* p = c.data_ptr<float>();
  return std::vector<float>(p, p + c.numel());
}

// Python's floor division, for the symmetric zero point (quant_min + quant_max) // 2.
int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

}  // namespace

// ---- ObserverBase ----

ObserverBase::ObserverBase(std::string name, const ObserverOptions& o, bool per_channel) : nn::Module(std::move(name)) {
  const std::string& who = this->name();
  dtype_ = o.dtype();
  TENSOR_CHECK(dtype_ == kQUInt8 || dtype_ == kQInt8, "{}: dtype must be kQUInt8 or kQInt8, got {}", who, dtype_);
  qscheme_ = o.qscheme().value_or(per_channel ? kPerChannelAffine : kPerTensorAffine);
  if (per_channel) {
    TENSOR_CHECK(qscheme_ == kPerChannelAffine || qscheme_ == kPerChannelSymmetric,
                 "{}: qscheme must be per_channel_affine or per_channel_symmetric, got {}", who, to_string(qscheme_));
  } else {
    TENSOR_CHECK(qscheme_ == kPerTensorAffine || qscheme_ == kPerTensorSymmetric,
                 "{}: qscheme must be per_tensor_affine or per_tensor_symmetric, got {} (use a per-channel observer "
                 "for per-channel schemes)",
                 who, to_string(qscheme_));
  }
  reduce_range_ = o.reduce_range();
  const bool symmetric = qscheme_ == kPerTensorSymmetric || qscheme_ == kPerChannelSymmetric;
  TENSOR_CHECK(!(symmetric && reduce_range_ && dtype_ == kQUInt8),
               "{}: reduce_range is not supported for symmetric quantization to quint8", who);
  TENSOR_CHECK(o.quant_min().has_value() == o.quant_max().has_value(),
               "{}: give both quant_min and quant_max, or neither (got only {})", who,
               o.quant_min().has_value() ? "quant_min" : "quant_max");
  eps_ = o.eps();
  TENSOR_CHECK(std::isfinite(eps_) && eps_ > 0, "{}: eps must be positive and finite, got {}", who, eps_);
  has_customized_qrange_ = o.quant_min().has_value();
  const int64_t lo = dtype_ == kQUInt8 ? 0 : -128, hi = dtype_ == kQUInt8 ? 255 : 127;
  if (has_customized_qrange_) {
    int64_t qmin = *o.quant_min(), qmax = *o.quant_max();
    TENSOR_CHECK(qmin < qmax, "{}: quant_min ({}) must be less than quant_max ({})", who, qmin, qmax);
    TENSOR_CHECK(qmin <= 0 && 0 <= qmax, "{}: the range [quant_min, quant_max] = [{}, {}] must include 0", who, qmin,
                 qmax);
    TENSOR_CHECK(qmin >= lo && qmax <= hi, "{}: the range [{}, {}] does not fit dtype {} ([{}, {}])", who, qmin, qmax,
                 dtype_, lo, hi);
    // PyTorch's calculate_qmin_qmax: a custom range is halved too when reduce_range is set.
    quant_min_ = reduce_range_ ? floor_div(qmin, 2) : qmin;
    quant_max_ = reduce_range_ ? floor_div(qmax, 2) : qmax;
  } else if (dtype_ == kQInt8) {
    quant_min_ = reduce_range_ ? -64 : -128;
    quant_max_ = reduce_range_ ? 63 : 127;
  } else {
    quant_min_ = 0;
    quant_max_ = reduce_range_ ? 127 : 255;
  }
}

bool ObserverBase::is_per_channel() const noexcept {
  return qscheme_ == kPerChannelAffine || qscheme_ == kPerChannelSymmetric;
}

// Note [Observer qparams arithmetic]
// calculate_qparams_from follows PyTorch's UniformQuantizationObserverBase._calculate_qparams
// step by step in float32, as its tensor arithmetic runs: the range is widened to contain 0
// (min_neg = min(min, 0), max_pos = max(max, 0)) so that 0.0 is exactly representable;
// symmetric: scale = max(-min_neg, max_pos) / ((quant_max - quant_min) / 2), zero point 0
// (qint8), 128 (quint8) or the floored middle of a custom range; affine: scale =
// (max_pos - min_neg) / (quant_max - quant_min), zero point = quant_min - round(min_neg / scale)
// (ties to even, as torch.round) clamped to the range. The scale is floored at eps. An observer
// that saw nothing gives ([1.0], [0]). Zero points are int64 here (PyTorch's affine branch
// returns int32); they are the values quantize_per_tensor/per_channel take.
std::tuple<Tensor, Tensor> ObserverBase::calculate_qparams_from(const Tensor& min_val, const Tensor& max_val) const {
  const std::vector<float> mn = values_of(min_val), mx = values_of(max_val);
  if (mn.empty() || mx.empty() || (min_val.dim() == 0 && mn[0] == kInf && mx[0] == -kInf)) {
    return {full({1}, 1.0, kFloat32), zeros({1}, kInt64)};
  }
  TENSOR_CHECK(mn.size() == mx.size(), "{}: min_val has {} values but max_val {}", name(), mn.size(), mx.size());
  for (size_t i = 0; i < mn.size(); ++i) {
    TENSOR_CHECK(mn[i] <= mx[i], "{}: min {} should be less than max {}{}", name(), mn[i], mx[i],
                 mn.size() > 1 ? fmt::format(" (channel {})", i) : std::string());
  }
  const int64_t n = static_cast<int64_t>(mn.size());
  Tensor scale = empty({n}, kFloat32), zero_point = empty({n}, kInt64);
  float* s = scale.data_ptr<float>();
  int64_t* z = zero_point.data_ptr<int64_t>();
  const float eps = static_cast<float>(eps_);
  const bool symmetric = qscheme_ == kPerTensorSymmetric || qscheme_ == kPerChannelSymmetric;
  for (int64_t i = 0; i < n; ++i) {
    const float min_neg = std::min(mn[i], 0.0f), max_pos = std::max(mx[i], 0.0f);
    if (symmetric) {
      const float m = std::max(-min_neg, max_pos);
      s[i] = std::max(m / static_cast<float>(static_cast<double>(quant_max_ - quant_min_) / 2), eps);
      if (dtype_ == kQUInt8) {
        z[i] = has_customized_qrange_ ? floor_div(quant_min_ + quant_max_, 2) : 128;
      } else {
        z[i] = 0;
      }
    } else {
      s[i] = std::max((max_pos - min_neg) / static_cast<float>(quant_max_ - quant_min_), eps);
      const float r = std::nearbyint(min_neg / s[i]);  // the default rounding mode: ties to even
      z[i] = std::clamp<int64_t>(quant_min_ - static_cast<int64_t>(r), quant_min_, quant_max_);
    }
  }
  return {scale, zero_point};
}

// ---- MinMaxObserver ----

MinMaxObserver::MinMaxObserver(const ObserverOptions& options) : MinMaxObserver("MinMaxObserver", options) {}

MinMaxObserver::MinMaxObserver(std::string name, const ObserverOptions& options)
    : ObserverBase(std::move(name), options, /*per_channel=*/false) {
  min_val = register_buffer("min_val", full({}, kInf, kFloat32));
  max_val = register_buffer("max_val", full({}, -kInf, kFloat32));
}

Tensor MinMaxObserver::forward(const Tensor& x) {
  if (x.defined() && x.numel() == 0) return x;
  NoGradGuard no_grad;
  Tensor v = observed_values(x, name());
  const float* p = v.data_ptr<float>();
  float lo = scalar_of(min_val), hi = scalar_of(max_val);
  for (int64_t i = 0, n = v.numel(); i < n; ++i) {
    lo = std::min(lo, p[i]);
    hi = std::max(hi, p[i]);
  }
  min_val.fill_(lo);
  max_val.fill_(hi);
  return x;
}

std::tuple<Tensor, Tensor> MinMaxObserver::calculate_qparams() { return calculate_qparams_from(min_val, max_val); }

void MinMaxObserver::reset_min_max_vals() {
  NoGradGuard no_grad;
  min_val.fill_(kInf);
  max_val.fill_(-kInf);
}

void MinMaxObserver::pretty_print(std::ostream& stream) const {
  stream << name() << "(min_val=" << scalar_of(min_val) << ", max_val=" << scalar_of(max_val) << ")";
}

MovingAverageMinMaxObserver::MovingAverageMinMaxObserver(const ObserverOptions& options)
    : MinMaxObserver("MovingAverageMinMaxObserver", options), averaging_constant_(options.averaging_constant()) {
  TENSOR_CHECK(averaging_constant_ > 0 && averaging_constant_ <= 1,
               "MovingAverageMinMaxObserver: averaging_constant must be in (0, 1], got {}", averaging_constant_);
}

Tensor MovingAverageMinMaxObserver::forward(const Tensor& x) {
  if (x.defined() && x.numel() == 0) return x;
  NoGradGuard no_grad;
  Tensor v = observed_values(x, name());
  const float* p = v.data_ptr<float>();
  float cur_lo = kInf, cur_hi = -kInf;
  for (int64_t i = 0, n = v.numel(); i < n; ++i) {
    cur_lo = std::min(cur_lo, p[i]);
    cur_hi = std::max(cur_hi, p[i]);
  }
  float lo = scalar_of(min_val), hi = scalar_of(max_val);
  if (lo == kInf && hi == -kInf) {
    lo = cur_lo;
    hi = cur_hi;
  } else {
    // In float32 with the constant rounded to float32, as PyTorch's tensor arithmetic.
    const float c = static_cast<float>(averaging_constant_);
    lo = lo + c * (cur_lo - lo);
    hi = hi + c * (cur_hi - hi);
  }
  min_val.fill_(lo);
  max_val.fill_(hi);
  return x;
}

// ---- PerChannelMinMaxObserver ----

PerChannelMinMaxObserver::PerChannelMinMaxObserver(const ObserverOptions& options)
    : PerChannelMinMaxObserver("PerChannelMinMaxObserver", options) {}

PerChannelMinMaxObserver::PerChannelMinMaxObserver(std::string name, const ObserverOptions& options)
    : ObserverBase(std::move(name), options, /*per_channel=*/true), ch_axis_(options.ch_axis()) {
  min_val = register_buffer("min_val", empty({0}, kFloat32));
  max_val = register_buffer("max_val", empty({0}, kFloat32));
}

Tensor PerChannelMinMaxObserver::channels_first(const Tensor& x) const {
  Tensor v = observed_values(x, name());
  const int64_t nd = v.dim();
  TENSOR_CHECK(nd >= 1 && ch_axis_ >= -nd && ch_axis_ < nd,
               "{}: ch_axis {} is out of range for a {}-d input of shape {} (expected a dim in [{}, {}])", name(),
               ch_axis_, nd, detail::shape_str(v.sizes()), -std::max<int64_t>(nd, 1), std::max<int64_t>(nd, 1) - 1);
  const int64_t axis = ch_axis_ < 0 ? ch_axis_ + nd : ch_axis_;
  const int64_t channels = v.size(axis);
  return v.transpose(0, axis).contiguous().reshape({channels, v.numel() / std::max<int64_t>(channels, 1)});
}

void PerChannelMinMaxObserver::set_min_max(Tensor min, Tensor max) {
  if (min_val.sizes() == min.sizes()) {
    min_val.copy_(min);
    max_val.copy_(max);
  } else {
    // The first batch sets the channel count: the buffers are re-registered at the new size
    // (kept in the module's dtype, which to() may have changed).
    min_val = min.to(min_val.scalar_type());
    max_val = max.to(max_val.scalar_type());
    buffers_["min_val"] = min_val;
    buffers_["max_val"] = max_val;
  }
}

Tensor PerChannelMinMaxObserver::forward(const Tensor& x) {
  if (x.defined() && x.numel() == 0) return x;
  NoGradGuard no_grad;
  Tensor y = channels_first(x);
  const int64_t channels = y.size(0), per = y.size(1);
  const bool fresh = min_val.numel() == 0;
  TENSOR_CHECK(fresh || min_val.numel() == channels,
               "{}: the input has {} channels along ch_axis {} but earlier inputs had {}", name(), channels, ch_axis_,
               min_val.numel());
  std::vector<float> lo = fresh ? std::vector<float>(channels, kInf) : values_of(min_val);
  std::vector<float> hi = fresh ? std::vector<float>(channels, -kInf) : values_of(max_val);
  const float* p = y.data_ptr<float>();
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t i = 0; i < per; ++i) {
      lo[c] = std::min(lo[c], p[c * per + i]);
      hi[c] = std::max(hi[c], p[c * per + i]);
    }
  }
  set_min_max(float_tensor(lo, {channels}), float_tensor(hi, {channels}));
  return x;
}

std::tuple<Tensor, Tensor> PerChannelMinMaxObserver::calculate_qparams() {
  return calculate_qparams_from(min_val, max_val);
}

void PerChannelMinMaxObserver::reset_min_max_vals() {
  set_min_max(empty({0}, kFloat32), empty({0}, kFloat32));
}

void PerChannelMinMaxObserver::pretty_print(std::ostream& stream) const {
  stream << name() << "(ch_axis=" << ch_axis_ << ", channels=" << min_val.numel() << ")";
}

MovingAveragePerChannelMinMaxObserver::MovingAveragePerChannelMinMaxObserver(const ObserverOptions& options)
    : PerChannelMinMaxObserver("MovingAveragePerChannelMinMaxObserver", options),
      averaging_constant_(options.averaging_constant()) {
  TENSOR_CHECK(averaging_constant_ > 0 && averaging_constant_ <= 1,
               "MovingAveragePerChannelMinMaxObserver: averaging_constant must be in (0, 1], got {}",
               averaging_constant_);
}

Tensor MovingAveragePerChannelMinMaxObserver::forward(const Tensor& x) {
  if (x.defined() && x.numel() == 0) return x;
  NoGradGuard no_grad;
  Tensor y = channels_first(x);
  const int64_t channels = y.size(0), per = y.size(1);
  const bool fresh = min_val.numel() == 0;
  TENSOR_CHECK(fresh || min_val.numel() == channels,
               "{}: the input has {} channels along ch_axis {} but earlier inputs had {}", name(), channels, ch_axis_,
               min_val.numel());
  std::vector<float> cur_lo(channels, kInf), cur_hi(channels, -kInf);
  const float* p = y.data_ptr<float>();
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t i = 0; i < per; ++i) {
      cur_lo[c] = std::min(cur_lo[c], p[c * per + i]);
      cur_hi[c] = std::max(cur_hi[c], p[c * per + i]);
    }
  }
  if (!fresh) {
    std::vector<float> lo = values_of(min_val), hi = values_of(max_val);
    const float k = static_cast<float>(averaging_constant_);
    for (int64_t c = 0; c < channels; ++c) {
      cur_lo[c] = lo[c] + k * (cur_lo[c] - lo[c]);
      cur_hi[c] = hi[c] + k * (cur_hi[c] - hi[c]);
    }
  }
  set_min_max(float_tensor(cur_lo, {channels}), float_tensor(cur_hi, {channels}));
  return x;
}

// ---- HistogramObserver ----

// Note [Histogram observer]
// As PyTorch's HistogramObserver: the histogram spans [min_val, max_val] of everything seen in
// `bins` equal bins. A batch inside the current range is added bin by bin; one that widens it
// re-bins the old histogram into the new range by splitting each old bin into upsample_rate
// equal parts and moving each part's mass to the new bin holding its middle (PyTorch's
// _upscale_histogram). calculate_qparams then searches (PyTorch's _non_linear_param_search,
// after caffe2's NormMinimization) for the bin range [start_bin, end_bin] that minimizes the
// L2 error of quantizing the histogram into 2^8 levels spread over that range: it narrows the
// range from whichever side holds less mass (quantiles in steps of 1e-5) and stops when the
// error grows. The error of a range assumes a uniform density inside each source bin and
// integrates the squared distance to the nearest level's center (quantization_error). PyTorch
// runs this in float32 tensors; here it runs in double, which can pick a neighbouring bin when
// two candidates' errors tie to within float32 rounding.

HistogramObserver::HistogramObserver(const ObserverOptions& options)
    : ObserverBase("HistogramObserver", options, /*per_channel=*/false),
      bins_(options.bins()),
      upsample_rate_(options.upsample_rate()),
      dst_nbins_(256) {
  TENSOR_CHECK(bins_ > 0, "HistogramObserver: bins must be positive, got {}", bins_);
  TENSOR_CHECK(upsample_rate_ > 0, "HistogramObserver: upsample_rate must be positive, got {}", upsample_rate_);
  histogram = register_buffer("histogram", zeros({bins_}, kFloat32));
  min_val = register_buffer("min_val", full({}, kInf, kFloat32));
  max_val = register_buffer("max_val", full({}, -kInf, kFloat32));
}

namespace {

// torch.histc: `bins` equal bins over [lo, hi]; values outside are dropped, hi goes to the last
// bin; lo == hi widens the range by 1 on each side.
std::vector<double> histc(const std::vector<float>& v, int64_t bins, double lo, double hi) {
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  std::vector<double> h(static_cast<size_t>(bins), 0.0);
  for (float x : v) {
    if (!(x >= lo && x <= hi)) continue;
    auto b = static_cast<int64_t>((x - lo) / (hi - lo) * static_cast<double>(bins));
    h[static_cast<size_t>(std::clamp<int64_t>(b, 0, bins - 1))] += 1;
  }
  return h;
}

}  // namespace

Tensor HistogramObserver::forward(const Tensor& x) {
  if (x.defined() && x.numel() == 0) return x;
  NoGradGuard no_grad;
  Tensor t = observed_values(x, name());
  const float* p = t.data_ptr<float>();
  // Infinities are dropped (PyTorch warns and ignores them): they would make the range infinite.
  std::vector<float> v;
  v.reserve(static_cast<size_t>(t.numel()));
  for (int64_t i = 0, n = t.numel(); i < n; ++i) {
    if (std::isfinite(p[i])) v.push_back(p[i]);
  }
  if (v.empty()) return x;
  const auto [xmin_it, xmax_it] = std::minmax_element(v.begin(), v.end());
  const float x_min = *xmin_it, x_max = *xmax_it;
  const float cur_min = scalar_of(min_val), cur_max = scalar_of(max_val);
  const bool uninitialized = cur_min == kInf && cur_max == -kInf;
  const bool same_or_close = cur_min == cur_max || (cur_max - cur_min) < 1e-6f;
  std::vector<double> hist;
  float new_min, new_max;
  if (uninitialized || same_or_close) {
    new_min = x_min;
    new_max = x_max;
    hist = histc(v, bins_, x_min, x_max);
  } else {
    new_min = std::min(x_min, cur_min);
    new_max = std::max(x_max, cur_max);
    hist = histc(v, bins_, new_min, new_max);
    const std::vector<float> old = values_of(histogram);
    if (new_min == cur_min && new_max == cur_max) {
      for (int64_t i = 0; i < bins_; ++i) hist[i] += old[i];
    } else {
      // Re-bin the old histogram into [new_min, new_max] (Note [Histogram observer]).
      const int64_t fine = bins_ * upsample_rate_;
      const double fine_width = (static_cast<double>(cur_max) - cur_min) / static_cast<double>(fine);
      std::vector<double> edges(static_cast<size_t>(bins_ + 1));
      for (int64_t i = 0; i <= bins_; ++i) {
        edges[i] = new_min + (static_cast<double>(new_max) - new_min) * static_cast<double>(i) / static_cast<double>(bins_);
      }
      for (int64_t j = 0; j < fine; ++j) {
        const double mid = cur_min + fine_width * static_cast<double>(j) + 0.5 * fine_width;
        int64_t b = static_cast<int64_t>(std::upper_bound(edges.begin(), edges.end(), mid) - edges.begin()) - 1;
        b = std::clamp<int64_t>(b, 0, bins_ - 1);
        hist[b] += static_cast<double>(old[j / upsample_rate_]) / static_cast<double>(upsample_rate_);
      }
    }
  }
  std::vector<float> hf(hist.begin(), hist.end());
  histogram.copy_(float_tensor(hf, {bins_}));
  min_val.fill_(new_min);
  max_val.fill_(new_max);
  return x;
}

namespace {

// The L2 error of quantizing histogram `h` over [lo, hi] with the bins [start_bin, end_bin] as
// the range, into dst_nbins levels (Note [Histogram observer]).
double histogram_error(const std::vector<float>& h, double lo, double hi, int64_t dst_nbins, int64_t start_bin,
                       int64_t end_bin) {
  const auto bins = static_cast<int64_t>(h.size());
  const double bin_width = (hi - lo) / static_cast<double>(bins);
  const double dst_width = bin_width * static_cast<double>(end_bin - start_bin + 1) / static_cast<double>(dst_nbins);
  if (dst_width == 0.0) return 0.0;
  // density * integral of x^2 over [b, e].
  auto norm = [](double b, double e, double density) { return density * (e * e * e - b * b * b) / 3.0; };
  double total = 0;
  for (int64_t i = 0; i < bins; ++i) {
    const double density = h[i] / bin_width;
    const double src_begin = static_cast<double>(i - start_bin) * bin_width;
    const double src_end = src_begin + bin_width;
    const double dst_begin = std::clamp(std::floor(src_begin / dst_width), 0.0, static_cast<double>(dst_nbins - 1));
    const double dst_end = std::clamp(std::floor(src_end / dst_width), 0.0, static_cast<double>(dst_nbins - 1));
    const double dst_begin_center = (dst_begin + 0.5) * dst_width;
    const double dst_end_center = dst_end * dst_width + dst_width / 2;
    // From the bin's start to the end of its first level, the whole levels it covers, then from
    // the start of its last level to its end (the three overlap when it lies in one level and
    // sum to the right integral).
    total += norm(src_begin - dst_begin_center, dst_width / 2, density);
    total += (dst_end - dst_begin - 1) * norm(-dst_width / 2, dst_width / 2, density);
    total += norm(-dst_width / 2, src_end - dst_end_center, density);
  }
  return total;
}

}  // namespace

double HistogramObserver::quantization_error(int64_t start_bin, int64_t end_bin) const {
  TENSOR_CHECK(0 <= start_bin && start_bin <= end_bin && end_bin < bins_,
               "HistogramObserver::quantization_error: expected 0 <= start_bin <= end_bin < {}, got {} and {}", bins_,
               start_bin, end_bin);
  return histogram_error(values_of(histogram), scalar_of(min_val), scalar_of(max_val), dst_nbins_, start_bin, end_bin);
}

std::pair<double, double> HistogramObserver::non_linear_param_search() const {
  const double lo = scalar_of(min_val), hi = scalar_of(max_val);
  if (lo == kInf && hi == -kInf) return {lo, hi};
  const double bin_width = (hi - lo) / static_cast<double>(bins_);
  const std::vector<float> h = values_of(histogram);
  std::vector<double> csum(h.size());
  double total = 0;
  for (size_t i = 0; i < h.size(); ++i) csum[i] = total += h[i];

  const double stepsize = 1e-5;
  double alpha = 0.0, beta = 1.0, norm_min = std::numeric_limits<double>::infinity();
  int64_t start_bin = 0, end_bin = bins_ - 1;
  while (alpha < beta) {
    const double next_alpha = alpha + stepsize, next_beta = beta - stepsize;
    int64_t l = start_bin, r = end_bin;
    while (l < end_bin && csum[l] < next_alpha * total) ++l;
    while (r > start_bin && csum[r] > next_beta * total) --r;
    int64_t next_start = start_bin, next_end = end_bin;
    // Move whichever end crosses more bins for this quantile step.
    if ((l - start_bin) > (end_bin - r)) {
      next_start = l;
      alpha = next_alpha;
    } else {
      next_end = r;
      beta = next_beta;
    }
    if (next_start == start_bin && next_end == end_bin) continue;
    const double err = histogram_error(h, lo, hi, dst_nbins_, next_start, next_end);
    if (err > norm_min) break;
    norm_min = err;
    start_bin = next_start;
    end_bin = next_end;
  }
  return {lo + bin_width * static_cast<double>(start_bin), lo + bin_width * static_cast<double>(end_bin + 1)};
}

std::tuple<Tensor, Tensor> HistogramObserver::calculate_qparams() {
  const float lo = scalar_of(min_val), hi = scalar_of(max_val);
  if (lo == kInf && hi == -kInf) return {full({1}, 1.0, kFloat32), zeros({1}, kInt64)};
  auto [new_min, new_max] = non_linear_param_search();
  return calculate_qparams_from(full({}, static_cast<float>(new_min), kFloat32),
                                full({}, static_cast<float>(new_max), kFloat32));
}

void HistogramObserver::pretty_print(std::ostream& stream) const {
  stream << name() << "(bins=" << bins_ << ", min_val=" << scalar_of(min_val) << ", max_val=" << scalar_of(max_val)
         << ")";
}

// ---- PlaceholderObserver ----

PlaceholderObserver::PlaceholderObserver(const ObserverOptions& options, bool is_dynamic)
    : ObserverBase("PlaceholderObserver", options, /*per_channel=*/false), is_dynamic_(is_dynamic) {}

std::tuple<Tensor, Tensor> PlaceholderObserver::calculate_qparams() {
  TENSOR_ERROR(
      "PlaceholderObserver: records nothing, so it has no qparams (dynamic quantization computes the activations' "
      "qparams per batch at run time)");
}

}  // namespace tensor::quantization
