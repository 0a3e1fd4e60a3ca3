// The per-op sweep, libtensor's side (Note [Op sweep] in sweep_ops.h): run by bench_ops --sweep.
// Its twins, from the same lists, are in torch_sweep.cpp.
#include <tensor/nn.h>
#include <tensor/normalization.h>
#include <tensor/tensor.h>

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <vector>

#include "harness.h"
#include "sweep_ops.h"

namespace {

using namespace bench::sweep;
using bench::median_seconds;
using tensor::Tensor;
using tensor::oplist::Result;

std::vector<bench::Case>& sweep_cases() {
  static std::vector<bench::Case> c;
  return c;
}

void add(const std::string& name, bool big, bool out, double bytes_per_elem, std::function<double()> fn) {
  const double n = big ? double(kBigRows * kBigRows) : double(kSmallRows * kSmallRows);
  bench::Case c{case_name(name, big, out), bytes_per_elem > 0 ? "GB/s" : "us", bytes_per_elem * n, "<= 1.0x",
                std::move(fn)};
  sweep_cases().push_back(std::move(c).in_sweep());
}

Tensor elementwise_input(bool is_float, int64_t rows) {
  Tensor r = tensor::rand({rows, rows});
  return is_float ? r * 0.8 + 0.1 : (r * 1000).to(tensor::kInt32);
}

template <class Fn, class OutFn>
void add_unary(const char* name, unsigned dtypes, Result result, Fn fn, OutFn out_fn) {
  for (bool big : {true, false}) {
    const int64_t rows = big ? kBigRows : kSmallRows;
    add(name, big, false, elementwise_bytes(1, result), [=] {
      Tensor a = elementwise_input(takes_float(dtypes), rows);
      return median_seconds([&] { Tensor c = fn(a); }, kReps, inner_calls(big), 2);
    });
    if constexpr (!std::is_same_v<OutFn, std::nullptr_t>)
      add(name, big, true, elementwise_bytes(1, result), [=] {
        Tensor a = elementwise_input(takes_float(dtypes), rows);
        Tensor c = fn(a);
        return median_seconds([&] { out_fn(c, a); }, kReps, inner_calls(big), 2);
      });
  }
}

template <class Fn, class OutFn>
void add_binary(const char* name, unsigned dtypes, Result result, Fn fn, OutFn out_fn) {
  for (bool big : {true, false}) {
    const int64_t rows = big ? kBigRows : kSmallRows;
    add(name, big, false, elementwise_bytes(2, result), [=] {
      Tensor a = elementwise_input(takes_float(dtypes), rows), b = elementwise_input(takes_float(dtypes), rows);
      return median_seconds([&] { Tensor c = fn(a, b); }, kReps, inner_calls(big), 2);
    });
    if constexpr (!std::is_same_v<OutFn, std::nullptr_t>)
      add(name, big, true, elementwise_bytes(2, result), [=] {
        Tensor a = elementwise_input(takes_float(dtypes), rows), b = elementwise_input(takes_float(dtypes), rows);
        Tensor c = fn(a, b);
        return median_seconds([&] { out_fn(c, a, b); }, kReps, inner_calls(big), 2);
      });
  }
}

// NOLINTBEGIN(cppcoreguidelines-macro-usage)
#define NS tensor
#define SWEEP_ADD_UNARY add_unary
#define SWEEP_ADD_BINARY add_binary
#define SWEEP_OP(name, bytes, expr)                                                   \
  for (bool big : {true, false})                                                      \
    add(#name, big, false, bytes, [big] {                                             \
      const int64_t rows = big ? kBigRows : kSmallRows;                               \
      SWEEP_INPUTS(tensor, Tensor, rows)                                              \
      return median_seconds([&] { auto r = (expr); (void)r; }, kReps, inner_calls(big), 2); \
    });
// NOLINTEND(cppcoreguidelines-macro-usage)

const bool kRegistered = [] {
  using namespace tensor::oplist;  // the dtype groups B, I, F, C of the op list's rows
  TENSOR_UNARY_OPS(SWEEP_UNARY)
  TENSOR_BINARY_OPS(SWEEP_BINARY)
  TENSOR_SWEEP_OPS(SWEEP_OP)
  bench::AddCases(std::move(sweep_cases()));
  return true;
}();

}  // namespace
