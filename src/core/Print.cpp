// operator<< for tensors, in libtorch's layout: values, then "[ CPUFloatType{2,3} ]".
#include <algorithm>
#include <cmath>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "src/core/Check.h"
#include "tensor/ops.h"

namespace tensor {

namespace {
const char* type_name(ScalarType t) {
  static const char* names[] = {"Bool", "Byte", "Char", "Short", "Int", "Long", "Half", "BFloat16",
                                "Float", "Double", "ComplexFloat", "ComplexDouble", "QInt8", "QUInt8", "QInt32",
                                "Undefined"};
  return names[static_cast<int>(t)];
}

// Complex tensors: both parts fixed with four decimals (or scientific), in columns as wide as
// the widest element.
struct ComplexFormatter {
  bool sci = false;
  int width = 1;
  std::string fmt_real(double v) const {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return sci ? fmt::format("{:.4e}", v) : fmt::format("{:.4f}", v);
  }
  std::string fmt(complex128 z) const {
    return fmt_real(z.real()) + (z.imag() < 0 ? "-" : "+") + fmt_real(std::abs(z.imag())) + "j";
  }
};

// Note [Printing as libtorch]
// Real tensors print byte for byte as libtorch's operator<< does (checked against libtorch 1.13's
// output, tests/test_print.cpp), since programs print tensors into logs and tests that people
// compare. The format is chosen per 1-D tensor or per 2-D slice: if all finite values are whole,
// the default float format (`1`, not `1.0000`) in columns expMax + 1 wide, scientific past 9
// integer digits; otherwise four decimals, scientific when the magnitudes span more than 4
// orders, or scaled by a printed power of ten (`0.01 *`) when they are all large or all small.
// expMin/expMax are the number of integer digits of the smallest/largest magnitude; as in
// libtorch, the largest magnitude only moves for values greater than it as signed numbers, so a
// negative value wider than the first one can overflow its column. 2-D slices wrap at 80
// columns ("Columns 1 to 10", with libtorch's spacing), and slices of 3-d and larger tensors are
// numbered from 1 with the first index fastest, as libtorch numbers them.
struct RealFormat {
  enum Style { Default, Fixed, Sci } style = Fixed;
  double scale = 1;
  int width = 1;
  std::string fmt(double v) const {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    v /= scale;
    if (style == Sci) return fmt::format("{:.4e}", v);
    if (style == Fixed) return fmt::format("{:.4f}", v);
    std::ostringstream ss;  // the stream's default float format, precision 6
    ss << v;
    return ss.str();
  }
};

RealFormat real_format(const double* p, int64_t n) {
  bool whole = true;
  int64_t first = 0;
  while (first < n && !std::isfinite(p[first])) ++first;
  double exp_min = 1, exp_max = 1;
  if (first < n) {
    double mn = std::fabs(p[first]), mx = mn;
    for (int64_t i = first; i < n; ++i) {
      if (!std::isfinite(p[i])) continue;
      whole = whole && p[i] == std::ceil(p[i]);
      mn = std::min(mn, std::fabs(p[i]));
      if (p[i] > mx) mx = std::fabs(p[i]);  // signed, as libtorch compares (Note [Printing as libtorch])
    }
    exp_min = mn != 0 ? std::floor(std::log10(mn)) + 1 : 1;
    exp_max = mx != 0 ? std::floor(std::log10(mx)) + 1 : 1;
  }
  RealFormat f;
  if (whole) {
    if (exp_max > 9) {
      f.style = RealFormat::Sci;
      f.width = 11;
    } else {
      f.style = RealFormat::Default;
      f.width = static_cast<int>(exp_max) + 1;
    }
  } else if (exp_max - exp_min > 4) {
    f.style = RealFormat::Sci;
    f.width = std::fabs(exp_max) > 99 || std::fabs(exp_min) > 99 ? 12 : 11;
  } else if (exp_max > 5 || exp_max < 0) {
    f.style = RealFormat::Fixed;
    f.width = 7;
    f.scale = std::pow(10.0, exp_max - 1);
  } else {
    f.style = RealFormat::Fixed;
    f.width = exp_max == 0 ? 7 : static_cast<int>(exp_max) + 6;
  }
  return f;
}

void print_scale(std::ostream& os, double scale) {
  if (scale == 1) return;
  std::ostringstream ss;
  ss.precision(4);  // libtorch's stream still has the values' precision when it prints the scale
  ss << scale;
  os << ss.str() << " *\n";
}

// A rows x cols row-major float64 matrix at p, wrapped at 80 columns, each line after the
// first row prefixed by `indent` spaces (one more after a scale line), as libtorch lays it out.
void print_real_matrix(std::ostream& os, const double* p, int64_t rows, int64_t cols, int indent) {
  constexpr int kLineSize = 80;
  const RealFormat f = real_format(p, rows * cols);
  const std::string pad(indent, ' ');
  os << pad;
  const int64_t per_line = std::max<int64_t>(1, (kLineSize - indent) / (f.width + 1));
  for (int64_t first = 0; first < cols;) {
    const int64_t last = std::min(first + per_line, cols) - 1;
    if (per_line < cols) {
      if (first != 0) os << "\n";
      os << "Columns " << first + 1 << " to " << last + 1 << pad;
    }
    if (f.scale != 1) {
      print_scale(os, f.scale);
      os << pad;
    }
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = first; c <= last; ++c) {
        os << fmt::format("{:>{}}", f.fmt(p[r * cols + c]), f.width);
        if (c != last) {
          os << " ";
        } else {
          os << "\n";
          if (r != rows - 1) os << pad << (f.scale != 1 ? " " : "");
        }
      }
    first = last + 1;
  }
}

// m: 2-D complex128 on CPU.
void print_complex_matrix(std::ostream& os, const Tensor& m, const ComplexFormatter& f) {
  for (int64_t r = 0; r < m.size(0); ++r) {
    for (int64_t c = 0; c < m.size(1); ++c)
      os << fmt::format(" {:>{}}", f.fmt(m.select(0, r).select(0, c).item<complex128>()), f.width);
    os << "\n";
  }
}
// Calls print(m) for each trailing 2-D slice m of t (3 dims or more), after its header
// "(i,j,.,.) = ": numbered from 1 with the first index fastest, libtorch's order. The slices of a
// contiguous t are contiguous.
template <class F>
void for_each_slice(std::ostream& os, const Tensor& t, const F& print) {
  std::vector<int64_t> counter(static_cast<size_t>(t.dim() - 2), 0);
  const int64_t n = t.numel() / std::max<int64_t>(1, t.size(-2) * t.size(-1));
  for (int64_t k = 0; k < n; ++k) {
    if (k) os << "\n";
    os << "(";
    Tensor m = t;
    for (int64_t i : counter) {
      os << i + 1 << ",";
      m = m.select(0, i);
    }
    os << ".,.) = \n";
    print(m);
    for (size_t d = 0; d < counter.size() && ++counter[d] == t.size(static_cast<int64_t>(d)); ++d) counter[d] = 0;
  }
}
}  // namespace

namespace detail {
void accessor_rank_error(size_t expected, int64_t got) {
  TENSOR_ERROR("accessor: expected a {}-dim tensor, but got {} dims", expected, got);
}
}  // namespace detail

std::ostream& operator<<(std::ostream& os, IntArrayRef a) {
  os << '[';
  for (size_t i = 0; i < a.size(); ++i) os << (i ? ", " : "") << a[i];
  return os << ']';
}

// Note [Printing quantized tensors]
// As libtorch: the dequantized values, a QuantizedCPU type tag, then the parameters inside the
// closing bracket: "[ QuantizedCPUQInt8Type{2}, qscheme: per_tensor_affine, scale: 0.1,
// zero_point: 10 ]"; per-channel tensors print their scales and zero points as tensors, then
// the axis.
static std::string quantized_suffix(const Tensor& t) {
  std::ostringstream ss;
  ss << ", qscheme: " << to_string(t.qscheme());
  if (t.qscheme() == kPerTensorAffine) {
    ss << ", scale: " << t.q_scale() << ", zero_point: " << t.q_zero_point();
  } else {
    ss << ", scales: " << t.q_per_channel_scales() << ", zero_points: " << t.q_per_channel_zero_points()
       << ", axis: " << t.q_per_channel_axis();
  }
  return ss.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "[ Tensor (undefined) ]";
  const bool quantized = t.is_quantized();
  std::string tag = fmt::format("{}{}{}Type", quantized ? "Quantized" : "",
                                t.is_cuda() ? "CUDA" : t.is_meta() ? "Meta" : "CPU", type_name(t.dtype()));
  std::string shape = fmt::format("{}", fmt::join(t.sizes().begin(), t.sizes().end(), ","));
  const std::string suffix = quantized ? quantized_suffix(t) : std::string();
  if (t.is_meta() || t.numel() == 0) return os << "[ " << tag << "{" << shape << "}" << suffix << " ]";
  const bool complex = t.is_complex();
  Tensor v = (quantized ? t.dequantize() : t).cpu().resolve_conj().to(complex ? kComplex128 : kFloat64);
  if (t.dim() == 0) {
    // A 0-dim tensor prints its value in the default float format, as libtorch does.
    std::ostringstream ss;
    if (complex) ss << v.item<complex128>();
    else ss << v.item<double>();
    return os << ss.str() << "\n[ " << tag << "{}" << suffix << " ]";
  }
  if (!complex) {
    const Tensor c = v.contiguous();
    const double* p = c.data_ptr<double>();
    if (t.dim() == 1) {
      const RealFormat f = real_format(p, c.numel());
      print_scale(os, f.scale);
      for (int64_t i = 0; i < c.numel(); ++i) os << fmt::format("{:>{}}", f.fmt(p[i]), f.width) << "\n";
    } else if (t.dim() == 2) {
      print_real_matrix(os, p, c.size(0), c.size(1), 0);
    } else {
      for_each_slice(os, c, [&](const Tensor& m) { print_real_matrix(os, m.data_ptr<double>(), m.size(0), m.size(1), 1); });
    }
    return os << "[ " << tag << "{" << shape << "}" << suffix << " ]";
  }
  // Complex tensors: libtorch prints only their real parts; here both parts print, one 2-D
  // slice at a time.
  ComplexFormatter cf;
  {
    Tensor parts = tensor::cat({v.real().reshape({-1}), v.imag().reshape({-1})});
    Tensor finite = parts.abs().masked_select(parts.isnan().logical_not().logical_and(parts.abs().ne(INFINITY)));
    if (finite.numel() > 0) {
      const double mx = finite.max().item<double>(), mn = finite.min().item<double>();
      cf.sci = mx >= 1e5 || (mn > 0 && mn < 1e-4);
    }
    Tensor flat = v.reshape({-1});
    for (int64_t i = 0; i < flat.numel(); ++i)
      cf.width = std::max<int>(cf.width, static_cast<int>(cf.fmt(flat[i].item<complex128>()).size()));
  }
  if (t.dim() <= 2) {
    print_complex_matrix(os, t.dim() == 1 ? v.unsqueeze(1) : v, cf);
  } else {
    for_each_slice(os, v, [&](const Tensor& m) { print_complex_matrix(os, m, cf); });
  }
  return os << "[ " << tag << "{" << shape << "} ]";
}

}  // namespace tensor
