// ProcessGroupNCCL. Without a GPU only the clear errors are checked; the collectives skip.
#include "tensor/cuda/cuda.h"
#include "tests/distributed_harness.h"

using namespace tensor;
namespace dist = tensor::distributed;
using dist_test::values;
using std::chrono::milliseconds;

namespace {

std::shared_ptr<dist::TCPStore> local_store() {
  dist::TCPStoreOptions so;
  so.is_master = true;
  so.timeout = milliseconds(10000);
  return std::make_shared<dist::TCPStore>("127.0.0.1", so);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(DistributedNCCL, WithoutAGpuConstructionRaises) {
  if (cuda::is_available()) GTEST_SKIP() << "a GPU is present";
  auto store = local_store();
  std::string m = error_of([&] { dist::ProcessGroupNCCL pg(store, 0, 1); });
  if (dist::ProcessGroupNCCL::is_available())
    EXPECT_NE(m.find("no CUDA device is available"), std::string::npos) << m;
  else
    EXPECT_NE(m.find("built without NCCL"), std::string::npos) << m;
}

// One rank on one GPU: every collective is the identity (AVG divides by 1), which still runs
// each NCCL call, the stream ordering and Work::wait.
TEST(DistributedNCCL, OneRankCollectives) {
  if (!cuda::is_available() || !dist::ProcessGroupNCCL::is_available()) GTEST_SKIP() << "needs a GPU and NCCL";
  auto store = local_store();
  dist::ProcessGroupNCCL pg(store, 0, 1, dist::ProcessGroupNCCLOptions().device(0).timeout(milliseconds(20000)));
  EXPECT_EQ(pg.backend_name(), "nccl");
  for (ScalarType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kInt8, kUInt8}) {
    Tensor host = arange(6, kFloat64).to(dt);
    Tensor t = host.to(Device("cuda:0"));
    pg.allreduce(t, dist::AllreduceOptions().op(dist::ReduceOp::AVG))->wait();
    EXPECT_EQ(values(t.to(kCPU)), values(host)) << to_string(dt);
  }
  Tensor b = arange(5, kFloat32).to(Device("cuda:0"));
  pg.broadcast(b)->wait();
  EXPECT_EQ(values(b.to(kCPU)), values(arange(5, kFloat32)));
  std::vector<Tensor> outs = {zeros({5}, TensorOptions().dtype(kFloat32).device(Device("cuda:0")))};
  pg.allgather(outs, b)->wait();
  EXPECT_EQ(values(outs[0].to(kCPU)), values(arange(5, kFloat32)));
  Tensor rs = zeros({5}, TensorOptions().dtype(kFloat32).device(Device("cuda:0")));
  pg.reduce_scatter(rs, {b})->wait();
  EXPECT_EQ(values(rs.to(kCPU)), values(arange(5, kFloat32)));
  Tensor a2a = zeros({5}, TensorOptions().dtype(kFloat32).device(Device("cuda:0")));
  pg.all_to_all(a2a, b)->wait();
  EXPECT_EQ(values(a2a.to(kCPU)), values(arange(5, kFloat32)));
  pg.barrier()->wait();
  std::string m = error_of([&] { pg.allreduce(arange(3, kFloat32)); });
  EXPECT_NE(m.find("this rank's group runs on cuda:0"), std::string::npos) << m;
}

// Two ranks on two GPUs (rank r on cuda:r).
DIST_SCENARIO(nccl_two_gpus) {
  auto pg = dist::init_process_group("nccl", rank, world, dist_test::init_method(), milliseconds(30000));
  Device d("cuda:" + std::to_string(rank));
  Tensor t = (arange(4, kFloat32) * (rank + 1)).to(d);
  pg->allreduce(t)->wait();
  auto v = values(t.to(kCPU));
  for (int i = 0; i < 4; ++i) DIST_CHECK(v[i] == i * 3.0, "allreduce element " << i << " = " << v[i]);
  std::vector<Tensor> outs = {zeros({4}, TensorOptions().dtype(kFloat32).device(d)),
                              zeros({4}, TensorOptions().dtype(kFloat32).device(d))};
  pg->allgather(outs, (arange(4, kFloat32) + 10 * rank).to(d))->wait();
  for (int r = 0; r < 2; ++r) {
    auto o = values(outs[r].to(kCPU));
    for (int i = 0; i < 4; ++i) DIST_CHECK(o[i] == i + 10.0 * r, "allgather");
  }
  pg->barrier()->wait();
}

TEST(DistributedNCCL, TwoRanksOnTwoGpus) {
  if (!cuda::is_available() || !dist::ProcessGroupNCCL::is_available() || cuda::device_count() < 2)
    GTEST_SKIP() << "needs two GPUs and NCCL";
  dist_test::expect_all_ok("nccl_two_gpus", 2, 120);
}
