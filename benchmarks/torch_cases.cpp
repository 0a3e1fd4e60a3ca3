// libtorch twins of the cases in bench_ops.cpp: same shapes, same threads, same harness.
#include <torch/torch.h>
#include <torch/version.h>

#include "harness.h"

namespace bench {

bool torch_available() {
  // libtorch's own intra-op setting, beside omp_set_num_threads; set once before any twin runs.
  static const bool ready = (torch::set_num_threads(2), true);
  return ready;
}
// From the numeric parts: TORCH_VERSION is a string in 1.13 but a packed integer in 2.x.
std::string torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

namespace {
TwinTable op_twins() {
  TwinTable t;
  t["eager_add_1elem"] = [] {
    auto a = torch::rand({1}), b = torch::rand({1});
    return median_seconds([&] { auto c = a + b; }, 15, 20000);
  };
  t["autograd_overhead"] = [] {
    auto x = torch::rand({1}, torch::requires_grad()), y = torch::rand({1}, torch::requires_grad());
    return median_seconds([&] { (x * y + x).sum().backward(); }, 15, 2000);
  };
  t["view_overhead"] = [] {
    auto x = torch::rand({4, 4});
    return median_seconds([&] {
      auto v = x.view({16});
      auto tr = x.transpose(0, 1);
      auto s = x.select(0, 1);
    }, 15, 20000);
  };
  t["view_autograd_overhead"] = [] {
    auto x = torch::rand({4, 4}, torch::requires_grad());
    return median_seconds([&] {
      auto v = x.view({16});
      auto tr = x.transpose(0, 1);
      auto s = x.select(0, 1);
    }, 15, 5000);
  };
  t["add_16M_out"] = [] {
    auto a = torch::rand({16 << 20}), b = torch::rand({16 << 20}), c = torch::empty({16 << 20});
    return median_seconds([&] { torch::add_out(c, a, b); });
  };
  t["exp_16M"] = [] {
    auto a = torch::rand({16 << 20});
    return median_seconds([&] { auto c = torch::exp(a); });
  };
  t["broadcast_add_4096"] = [] {
    auto a = torch::rand({4096, 4096}), b = torch::rand({4096});
    return median_seconds([&] { auto c = a + b; });
  };
  t["transpose_copy_4096"] = [] {
    auto a = torch::rand({4096, 4096});
    return median_seconds([&] { auto c = a.t().contiguous(); });
  };
  t["sum_16M"] = [] {
    auto a = torch::rand({16 << 20});
    return median_seconds([&] { auto s = a.sum(); });
  };
  t["sum_dim0_4096"] = [] {
    auto a = torch::rand({4096, 4096});
    return median_seconds([&] { auto s = a.sum(0); });
  };
  t["log_softmax_128x10"] = [] {
    torch::Tensor a = torch::randn({128, 10});
    return median_seconds([&] { auto s = torch::log_softmax(a, 1); }, 15, 2000);
  };
  t["softmax_rows_4096"] = [] {
    auto a = torch::rand({4096, 4096});
    return median_seconds([&] { auto s = torch::softmax(a, 1); });
  };
  return t;
}
const AddTwins kOpTwins(op_twins());
}  // namespace

}  // namespace bench
