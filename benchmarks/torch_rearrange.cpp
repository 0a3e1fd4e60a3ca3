// libtorch twins of bench_rearrange.cpp.
#include <torch/torch.h>

#include "harness.h"

namespace bench {
namespace {

constexpr int64_t kR = 2048, kC = 2048;

const AddTwins kRearrangeTwins({
    {"tril_2048x2048",
     [] {
       auto a = torch::randn({kR, kC});
       return median_seconds([&] { auto y = torch::tril(a); }, 15);
     }},
    {"repeat_1024x2048_x2x1",
     [] {
       auto a = torch::randn({kR / 2, kC});
       return median_seconds([&] { auto y = a.repeat({2, 1}); }, 15);
     }},
    {"roll_2048x2048_dim1",
     [] {
       auto a = torch::randn({kR, kC});
       return median_seconds([&] { auto y = torch::roll(a, {7}, {1}); }, 15);
     }},
    {"flip_2048x2048_dim1",
     [] {
       auto a = torch::randn({kR, kC});
       return median_seconds([&] { auto y = torch::flip(a, {1}); }, 15);
     }},
    {"flip_2048x2048_dim0",
     [] {
       auto a = torch::randn({kR, kC});
       return median_seconds([&] { auto y = torch::flip(a, {0}); }, 15);
     }},
});

}  // namespace
}  // namespace bench
