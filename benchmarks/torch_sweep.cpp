// libtorch twins of the per-op sweep (bench_sweep.cpp), generated from the same lists
// (Note [Op sweep] in sweep_ops.h); compiled into bench_ops against Debian's libtorch and into
// bench_torch_peer against the wheel's (Note [Two libtorch peers] in peer.h).
#include <torch/torch.h>

#include <cstddef>
#include <tuple>
#include <type_traits>

#include "harness.h"
#include "sweep_ops.h"

namespace bench {
namespace {

using namespace sweep;
using tensor::oplist::Result;

TwinTable& sweep_twins() {
  static TwinTable t;
  return t;
}

torch::Tensor elementwise_input(bool is_float, int64_t rows) {
  torch::Tensor r = torch::rand({rows, rows});
  return is_float ? r * 0.8 + 0.1 : (r * 1000).to(torch::kInt32);
}

template <class Fn, class OutFn>
void add_unary(const char* name, unsigned dtypes, Result, Fn fn, OutFn out_fn) {
  for (bool big : {true, false}) {
    const int64_t rows = big ? kBigRows : kSmallRows;
    sweep_twins()[case_name(name, big, false)] = [=] {
      torch::Tensor a = elementwise_input(takes_float(dtypes), rows);
      return median_seconds([&] { torch::Tensor c = fn(a); }, kReps, inner_calls(big), 2);
    };
    if constexpr (!std::is_same_v<OutFn, std::nullptr_t>)
      sweep_twins()[case_name(name, big, true)] = [=] {
        torch::Tensor a = elementwise_input(takes_float(dtypes), rows);
        torch::Tensor c = fn(a);
        return median_seconds([&] { out_fn(c, a); }, kReps, inner_calls(big), 2);
      };
  }
}

template <class Fn, class OutFn>
void add_binary(const char* name, unsigned dtypes, Result, Fn fn, OutFn out_fn) {
  for (bool big : {true, false}) {
    const int64_t rows = big ? kBigRows : kSmallRows;
    sweep_twins()[case_name(name, big, false)] = [=] {
      torch::Tensor a = elementwise_input(takes_float(dtypes), rows), b = elementwise_input(takes_float(dtypes), rows);
      return median_seconds([&] { torch::Tensor c = fn(a, b); }, kReps, inner_calls(big), 2);
    };
    if constexpr (!std::is_same_v<OutFn, std::nullptr_t>)
      sweep_twins()[case_name(name, big, true)] = [=] {
        torch::Tensor a = elementwise_input(takes_float(dtypes), rows), b = elementwise_input(takes_float(dtypes), rows);
        torch::Tensor c = fn(a, b);
        return median_seconds([&] { out_fn(c, a, b); }, kReps, inner_calls(big), 2);
      };
  }
}

// NOLINTBEGIN(cppcoreguidelines-macro-usage)
#define NS torch
#define SWEEP_ADD_UNARY add_unary
#define SWEEP_ADD_BINARY add_binary
#define SWEEP_OP(name, bytes, expr)                                                   \
  for (bool big : {true, false})                                                      \
    sweep_twins()[case_name(#name, big, false)] = [big] {                             \
      const int64_t rows = big ? kBigRows : kSmallRows;                               \
      SWEEP_INPUTS(torch, torch::Tensor, rows)                                        \
      return median_seconds([&] { auto r = (expr); (void)r; }, kReps, inner_calls(big), 2); \
    };
// NOLINTEND(cppcoreguidelines-macro-usage)

const bool kRegistered = [] {
  using namespace tensor::oplist;  // the dtype groups B, I, F, C of the op list's rows
  TENSOR_UNARY_OPS(SWEEP_UNARY)
  TENSOR_BINARY_OPS(SWEEP_BINARY)
  TENSOR_SWEEP_OPS(SWEEP_OP)
  AddTwins(std::move(sweep_twins()));
  return true;
}();

}  // namespace
}  // namespace bench
