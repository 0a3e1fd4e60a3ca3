// libtorch twins of bench_where.cpp.
#include <torch/torch.h>

#include "harness.h"

namespace bench {
namespace {

constexpr int64_t kN = 16 << 20;

const AddTwins kWhereTwins({
    {"where_16M",
     [] {
       auto a = torch::randn({kN}), b = torch::randn({kN});
       auto c = torch::rand({kN}).gt(0.5);
       return median_seconds([&] { auto y = torch::where(c, a, b); }, 15);
     }},
    {"where_scalar_16M",
     [] {
       auto a = torch::randn({kN});
       auto c = torch::rand({kN}).gt(0.5);
       return median_seconds([&] { auto y = torch::where(c, a, 0.0); }, 15);
     }},
    {"masked_fill_16M",
     [] {
       auto a = torch::randn({kN});
       auto c = torch::rand({kN}).gt(0.5);
       return median_seconds([&] { auto y = a.masked_fill(c, -1.0); }, 15);
     }},
});

}  // namespace
}  // namespace bench
