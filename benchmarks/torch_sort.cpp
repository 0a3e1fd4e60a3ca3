// libtorch twins of bench_sort.cpp.
#include <torch/torch.h>

#include "harness.h"

namespace bench {
namespace {

const AddTwins kSortTwins({
    {"sort_1M_rows1024",
     [] {
       auto a = torch::randn({1024, 1024});
       return median_seconds([&] { auto r = torch::sort(a, 1); }, 15);
     }},
    {"topk10_64x32768",
     [] {
       auto a = torch::randn({64, 32768});
       return median_seconds([&] { auto r = torch::topk(a, 10, 1); }, 15);
     }},
});

}  // namespace
}  // namespace bench
