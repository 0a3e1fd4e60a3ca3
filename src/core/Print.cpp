// operator<< for tensors, in libtorch's layout: values, then "[ CPUFloatType{2,3} ]".
#include <cmath>
#include <ostream>
#include <sstream>

#include "src/core/Check.h"
#include "tensor/ops.h"

namespace tensor {

namespace {
const char* type_name(ScalarType t) {
  static const char* names[] = {"Bool", "Byte", "Char", "Short", "Int", "Long", "Half", "BFloat16",
                                "Float", "Double", "ComplexFloat", "ComplexDouble", "Undefined"};
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

// Real tensors follow libtorch's layout rules (reimplemented from its documented output):
// look at the finite values' magnitudes; if all are whole numbers, print them in the default
// float format (`1`, not `1.0000`) in columns expMax + 1 wide, switching to scientific past 9
// integer digits; otherwise four decimals, in scientific when the magnitudes span more than 4
// orders, or scaled by a printed power of ten (`0.01 *`) when they are all large or all small.
// expMin/expMax are the number of integer digits of the smallest/largest magnitude.
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

RealFormat real_format(const Tensor& v) {  // v: float64 on CPU
  Tensor finite = v.masked_select(v.isnan().logical_not().logical_and(v.abs().ne(INFINITY)));
  bool whole = true;
  double exp_min = 1, exp_max = 1;
  if (finite.numel() > 0) {
    whole = finite.eq(finite.floor()).all().item<bool>();
    Tensor mag = finite.abs();
    const double mn = mag.min().item<double>(), mx = mag.max().item<double>();
    if (mn != 0) exp_min = std::floor(std::log10(mn)) + 1;
    if (mx != 0) exp_max = std::floor(std::log10(mx)) + 1;
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
  ss << scale;
  os << ss.str() << " *\n";
}

// m: 2-D float64 on CPU. Columns right-aligned to f.width, separated by one space.
void print_real_matrix(std::ostream& os, const Tensor& m, const RealFormat& f) {
  print_scale(os, f.scale);
  for (int64_t r = 0; r < m.size(0); ++r) {
    for (int64_t c = 0; c < m.size(1); ++c)
      os << (c ? " " : "") << fmt::format("{:>{}}", f.fmt(m.select(0, r).select(0, c).item<double>()), f.width);
    os << "\n";
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

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "[ Tensor (undefined) ]";
  std::string tag = fmt::format("{}{}Type", t.is_cuda() ? "CUDA" : t.is_meta() ? "Meta" : "CPU", type_name(t.dtype()));
  std::string shape = fmt::format("{}", fmt::join(t.sizes().begin(), t.sizes().end(), ","));
  if (t.is_meta() || t.numel() == 0) return os << "[ " << tag << "{" << shape << "} ]";
  const bool complex = t.is_complex();
  Tensor v = t.cpu().resolve_conj().to(complex ? kComplex128 : kFloat64);
  if (t.dim() == 0) {
    // A 0-dim tensor prints its value in the default float format, as libtorch does.
    std::ostringstream ss;
    if (complex) ss << v.item<complex128>();
    else ss << v.item<double>();
    return os << ss.str() << "\n[ " << tag << "{} ]";
  }
  RealFormat rf;
  ComplexFormatter cf;
  if (complex) {
    Tensor parts = tensor::cat({v.real().reshape({-1}), v.imag().reshape({-1})});
    Tensor finite = parts.abs().masked_select(parts.isnan().logical_not().logical_and(parts.abs().ne(INFINITY)));
    if (finite.numel() > 0) {
      const double mx = finite.max().item<double>(), mn = finite.min().item<double>();
      cf.sci = mx >= 1e5 || (mn > 0 && mn < 1e-4);
    }
    Tensor flat = v.reshape({-1});
    for (int64_t i = 0; i < flat.numel(); ++i)
      cf.width = std::max<int>(cf.width, static_cast<int>(cf.fmt(flat[i].item<complex128>()).size()));
  } else {
    rf = real_format(v);
  }
  auto print_matrix = [&](const Tensor& m) {
    if (complex) print_complex_matrix(os, m, cf);
    else print_real_matrix(os, m, rf);
  };
  if (t.dim() == 1) {
    print_matrix(v.unsqueeze(1));
  } else {
    // Print each trailing 2-D slice with its leading index, as libtorch does.
    Tensor m3 = v.reshape({-1, v.size(-2), v.size(-1)});
    for (int64_t i = 0; i < m3.size(0); ++i) {
      if (t.dim() > 2) {
        std::string idx;
        int64_t rem = i;
        std::vector<int64_t> lead(t.dim() - 2);
        for (int64_t d = t.dim() - 3; d >= 0; --d) {
          lead[d] = rem % t.size(d);
          rem /= t.size(d);
        }
        for (int64_t l : lead) idx += fmt::format("{},", l);
        os << "(" << idx << ".,.) = \n";
      }
      print_matrix(m3[i]);
      if (t.dim() > 2 && i + 1 < m3.size(0)) os << "\n";
    }
  }
  return os << "[ " << tag << "{" << shape << "} ]";
}

}  // namespace tensor
