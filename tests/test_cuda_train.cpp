// The first training step on the GPU (issue 21): the MLP 784-1024-1024-10 with batch 128,
// cross_entropy and SGD with momentum (then Adam), on CUDA tensors against the same run on the
// CPU. Without a device the comparison skips; what still runs is the check that every
// dispatcher op the CPU step calls has a CUDA kernel registered, so a missing kernel shows up
// on a machine without a GPU too.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "src/ops/AllOps.h"
#include "tests/test_util.h"

using namespace tensor;

namespace {

nn::Sequential make_mlp() {
  manual_seed(0);
  nn::Sequential s;
  s->push_back(nn::Linear(784, 1024));
  s->push_back(nn::ReLU());
  s->push_back(nn::Linear(1024, 1024));
  s->push_back(nn::ReLU());
  s->push_back(nn::Linear(1024, 10));
  return s;
}

struct Batch {
  Tensor x, y;
};

// Fixed synthetic batches (drawn on the CPU, so both runs see the same numbers).
std::vector<Batch> make_batches(int n) {
  manual_seed(1);
  std::vector<Batch> b;
  for (int i = 0; i < n; ++i) b.push_back({randn({128, 784}), randint(0, 10, {128})});
  return b;
}

enum class Opt { SgdMomentum, Adam };

// The losses of `steps` train steps of a fresh MLP on `device`.
std::vector<double> train_losses(Device device, Opt which, int steps, const std::vector<Batch>& batches) {
  nn::Sequential net = make_mlp();
  net->to(device);
  std::unique_ptr<optim::Optimizer> opt;
  if (which == Opt::SgdMomentum) opt = std::make_unique<optim::SGD>(net->parameters(), optim::SGDOptions(0.01).momentum(0.9));
  else opt = std::make_unique<optim::Adam>(net->parameters(), optim::AdamOptions(1e-3));
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    const Batch& b = batches[static_cast<size_t>(s) % batches.size()];
    opt->zero_grad();
    Tensor loss = nn::functional::cross_entropy(net->forward(b.x.to(device)), b.y.to(device));
    loss.backward();
    opt->step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

// Whether libtensor_cuda was built and loads here (it loads without a device, and registers
// its kernels when it does).
bool cuda_backend_loaded() {
  (void)cuda::device_count();  // opens the backend on first use (Note [CUDA hooks])
  for (const ops::OpSummary& op : ops::builtin_ops())
    if (std::string(op.name) == "add" && op.slots.has(DispatchKey::CUDA)) return true;
  return false;
}

}  // namespace

// Every op the CPU train step dispatches (forward, loss, backward, optimizer step) has a kernel
// in its CUDA slot, so the same step on CUDA tensors cannot stop at "no CUDA kernel". Ops that
// share a name (overloads) count as covered when one of them has a CUDA kernel.
TEST(CudaTrain, MlpStepDispatchesOnlyOpsWithCudaKernels) {
#if !defined(TENSOR_TEST_HAVE_CUDA_BACKEND)
  GTEST_SKIP() << "this build has no CUDA backend (nvcc not found)";
#endif
  ASSERT_TRUE(cuda_backend_loaded()) << "libtensor_cuda was built but did not load or register its kernels";
  std::set<std::string> with_cuda, builtin;
  for (const ops::OpSummary& op : ops::builtin_ops()) {
    builtin.insert(op.name);
    if (op.slots.has(DispatchKey::CUDA)) with_cuda.insert(op.name);
  }
  const std::vector<Batch> batches = make_batches(1);
  for (Opt which : {Opt::SgdMomentum, Opt::Adam}) {
    std::vector<std::string> called;
    {
      profiler::Profile prof;
      (void)train_losses(Device(kCPU), which, 2, batches);
      for (const profiler::EventAverage& e : prof.key_averages()) called.push_back(e.name);
    }
    std::vector<std::string> dispatched, missing;
    for (const std::string& name : called) {
      if (!builtin.count(name)) continue;  // autograd nodes, user ranges
      dispatched.push_back(name);
      if (!with_cuda.count(name)) missing.push_back(name);
    }
    // The step really went through the dispatcher (a profile of the right thing).
    for (const char* op : {"linear", "relu", "log_softmax", "sum", "_fused_sgd_"})
      if (which == Opt::SgdMomentum || std::string(op) != "_fused_sgd_")
        EXPECT_NE(std::find(dispatched.begin(), dispatched.end(), op), dispatched.end()) << op << " not profiled";
    std::string list;
    for (const std::string& m : missing) list += " " + m;
    EXPECT_TRUE(missing.empty()) << (which == Opt::Adam ? "Adam" : "SGD")
                                 << " train step: ops without a CUDA kernel:" << list;
  }
}

// Float32 on both: oneDNN and cuBLASLt sum in different orders, so the losses drift apart by a
// few float ulps per step; after 20 steps they agree to 1e-4 relative (2.3 +- 2.3e-4).
TEST(CudaTrain, MlpFirst20LossesMatchCpu) {
  REQUIRE_CUDA();
  const std::vector<Batch> batches = make_batches(4);
  for (Opt which : {Opt::SgdMomentum, Opt::Adam}) {
    const std::vector<double> cpu = train_losses(Device(kCPU), which, 20, batches);
    const std::vector<double> gpu = train_losses(Device(kCUDA, 0), which, 20, batches);
    ASSERT_EQ(cpu.size(), gpu.size());
    // The run learns (on 4 fixed batches): the comparison is of a real trajectory. Each window
    // of 4 steps sees every batch once; SGD at lr 0.01 gains ~4% in 20 steps (2.306 -> 2.204),
    // Adam far more. (The first GPU run found the earlier check, last loss < 0.9 x first,
    // comparing two different batches: SGD's step 19 is 2.225 against 2.311 at step 0.)
    auto window = [&](size_t first) { return (cpu[first] + cpu[first + 1] + cpu[first + 2] + cpu[first + 3]) / 4; };
    EXPECT_LT(window(16), window(0) * 0.97) << (which == Opt::Adam ? "Adam" : "SGD");
    for (size_t i = 0; i < cpu.size(); ++i)
      EXPECT_NEAR(gpu[i], cpu[i], 1e-4 * (1 + std::abs(cpu[i])))
          << (which == Opt::Adam ? "Adam" : "SGD") << " step " << i;
  }
}
