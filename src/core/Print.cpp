// operator<< for tensors, in libtorch's layout: values, then "[ CPUFloatType{2,3} ]".
#include <cmath>
#include <ostream>

#include "src/core/Check.h"
#include "tensor/ops.h"

namespace tensor {

namespace {
const char* type_name(ScalarType t) {
  static const char* names[] = {"Bool", "Byte", "Char", "Short", "Int", "Long", "Half", "BFloat16",
                                "Float", "Double", "ComplexFloat", "ComplexDouble", "Undefined"};
  return names[static_cast<int>(t)];
}

struct Formatter {
  bool integral = false, sci = false;
  int width = 1;
  std::string fmt_real(double v) const {
    if (integral) return fmt::format("{}", static_cast<int64_t>(v));
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return sci ? fmt::format("{:.4e}", v) : fmt::format("{:.4f}", v);
  }
};

void print_matrix(std::ostream& os, const Tensor& m, const Formatter& f, bool complex) {
  // m is 2-D float64 (or complex128) on CPU.
  int64_t rows = m.size(0), cols = m.size(1);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      std::string s;
      if (complex) {
        auto z = m.select(0, r).select(0, c).item<complex128>();
        s = f.fmt_real(z.real()) + (z.imag() < 0 ? "-" : "+") + f.fmt_real(std::abs(z.imag())) + "j";
      } else {
        s = f.fmt_real(m.select(0, r).select(0, c).item<double>());
      }
      os << fmt::format(" {:>{}}", s, f.width);
    }
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
  bool complex = t.is_complex();
  Tensor v = t.cpu().resolve_conj().to(complex ? kComplex128 : kFloat64);
  Formatter f;
  f.integral = is_integral(t.dtype(), true);
  if (!complex && !f.integral) {
    Tensor finite = v.abs().masked_select(v.isnan().logical_not().logical_and(v.abs().ne(INFINITY)));
    if (finite.numel() > 0) {
      double mx = finite.max().item<double>(), mn = finite.min().item<double>();
      f.sci = mx >= 1e5 || (mn > 0 && mn < 1e-4);
    }
  }
  // Width: the longest formatted element.
  Tensor flat = v.reshape({-1});
  for (int64_t i = 0; i < flat.numel(); ++i) {
    std::string s;
    if (complex) {
      auto z = flat[i].item<complex128>();
      s = f.fmt_real(z.real()) + "+" + f.fmt_real(std::abs(z.imag())) + "j";
    } else {
      s = f.fmt_real(flat[i].item<double>());
    }
    f.width = std::max<int>(f.width, static_cast<int>(s.size()));
  }
  if (t.dim() == 0) {
    os << (complex ? fmt::format("{}", flat[0].item<complex128>().real()) : f.fmt_real(flat[0].item<double>())) << "\n";
  } else if (t.dim() == 1) {
    print_matrix(os, v.unsqueeze(1), f, complex);
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
      print_matrix(os, m3[i], f, complex);
      if (t.dim() > 2 && i + 1 < m3.size(0)) os << "\n";
    }
  }
  return os << "[ " << tag << "{" << shape << "} ]";
}

}  // namespace tensor
