// The profiler's cost while it records (docs/profiling.md): the cases of bench_ops.cpp's
// eager_add_1elem and autograd_overhead run inside a Profile. The cost when off is those cases
// themselves (and scripts/count_overhead.sh), compared with a build without the profiler.
#include <tensor/profiler/profiler.h>
#include <tensor/tensor.h>

#include "harness.h"

using namespace tensor;
using bench::median_seconds;
namespace prof = tensor::profiler;

namespace {

const bench::AddCases kProfilerCases({
    {"profiler_on_add_1elem", "us", 0, "-",
     [] {
       Tensor a = rand({1}), b = rand({1});
       prof::Profile p;
       return median_seconds([&] { Tensor c = a + b; }, 15, 20000);
     }},
    {"profiler_on_add_1elem_shapes_mem", "us", 0, "-",
     [] {
       Tensor a = rand({1}), b = rand({1});
       prof::Profile p(prof::ProfileOptions().record_shapes().profile_memory());
       return median_seconds([&] { Tensor c = a + b; }, 15, 20000);
     }},
    {"profiler_on_autograd", "us", 0, "-",
     [] {
       Tensor x = rand({1}, requires_grad()), y = rand({1}, requires_grad());
       prof::Profile p;
       return median_seconds([&] { (x * y + x).sum().backward(); }, 15, 2000);
     }},
});

}  // namespace
