// sort and topk on float32 rows, beside their libtorch twins (torch_sort.cpp).
#include <tensor/tensor.h>

#include "harness.h"

using namespace tensor;
using bench::median_seconds;

namespace {

const bench::AddCases kSortCases({
    // 1M floats as 1024 rows of 1024, each row sorted (values and indices).
    {"sort_1M_rows1024", "ms", 0, "no target (new op)",
     [] {
       Tensor a = randn({1024, 1024});
       return median_seconds([&] { auto r = sort(a, 1); }, 15);
     }},
    // The 10 largest of each of 64 rows of 32768 floats.
    {"topk10_64x32768", "ms", 0, "no target (new op)",
     [] {
       Tensor a = randn({64, 32768});
       return median_seconds([&] { auto r = topk(a, 10, 1); }, 15);
     }},
});

}  // namespace
