// where / masked_fill on 16M floats with a random (unpredictable) bool mask, beside their
// libtorch twins (torch_where.cpp). Both run the Highway select in kernels/cpu/CopyKernels.cpp.
#include <tensor/tensor.h>

#include "harness.h"

using namespace tensor;
using bench::median_seconds;

namespace {

constexpr int64_t kN = 16 << 20;

const bench::AddCases kWhereCases({
    // Bytes: mask (1) + a (4) + b (4) + out (4) per element.
    {"where_16M", "GB/s", 13.0 * kN, "<= 1.0x",
     [] {
       Tensor a = randn({kN}), b = randn({kN});
       Tensor c = rand({kN}).gt(0.5);
       return median_seconds([&] { Tensor y = where(c, a, b); }, 15);
     }},
    // b a broadcast scalar (relu's double backward: where(y > 0, g, 0)).
    {"where_scalar_16M", "GB/s", 9.0 * kN, "<= 1.0x",
     [] {
       Tensor a = randn({kN});
       Tensor c = rand({kN}).gt(0.5);
       return median_seconds([&] { Tensor y = where(c, a, 0.0); }, 15);
     }},
    // Out of place: copy self (4 + 4) then select with the mask (1 + 4 + 4).
    {"masked_fill_16M", "GB/s", 17.0 * kN, "<= 1.0x",
     [] {
       Tensor a = randn({kN});
       Tensor c = rand({kN}).gt(0.5);
       return median_seconds([&] { Tensor y = a.masked_fill(c, -1.0); }, 15);
     }},
});

}  // namespace
