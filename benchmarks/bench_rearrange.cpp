// tril, repeat, roll and flip on 4M floats (src/ops/RearrangeOps.cpp), beside their libtorch
// twins (torch_rearrange.cpp). Bytes: each reads and writes every output element once.
#include <tensor/tensor.h>

#include "harness.h"

using namespace tensor;
using bench::median_seconds;

namespace {

constexpr int64_t kR = 2048, kC = 2048;
constexpr double kBytes = 8.0 * kR * kC;

const bench::AddCases kRearrangeCases({
    {"tril_2048x2048", "GB/s", kBytes, "<= 1.5x",
     [] {
       Tensor a = randn({kR, kC});
       return median_seconds([&] { Tensor y = tril(a); }, 15);
     }},
    {"repeat_1024x2048_x2x1", "GB/s", kBytes, "<= 1.5x",
     [] {
       Tensor a = randn({kR / 2, kC});
       return median_seconds([&] { Tensor y = a.repeat({2, 1}); }, 15);
     }},
    {"roll_2048x2048_dim1", "GB/s", kBytes, "<= 1.5x",
     [] {
       Tensor a = randn({kR, kC});
       return median_seconds([&] { Tensor y = roll(a, {7}, {1}); }, 15);
     }},
    {"flip_2048x2048_dim1", "GB/s", kBytes, "<= 1.5x",
     [] {
       Tensor a = randn({kR, kC});
       return median_seconds([&] { Tensor y = flip(a, {1}); }, 15);
     }},
    {"flip_2048x2048_dim0", "GB/s", kBytes, "<= 1.5x",
     [] {
       Tensor a = randn({kR, kC});
       return median_seconds([&] { Tensor y = flip(a, {0}); }, 15);
     }},
});

}  // namespace
