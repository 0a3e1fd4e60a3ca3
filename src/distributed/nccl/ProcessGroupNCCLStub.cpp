// ProcessGroupNCCL without NCCL (libtensor built without CUDA or without NCCL): constructing
// one raises a clear tensor::Error; the other members are unreachable.
#include "src/core/Check.h"
#include "tensor/distributed/process_group_nccl.h"

namespace tensor::distributed {

struct ProcessGroupNCCL::Impl {};

namespace {
[[noreturn]] void unavailable() {
  TENSOR_ERROR("ProcessGroupNCCL: this libtensor was built without NCCL (it needs the CUDA toolkit and nccl.h / libnccl "
               "at configure time); use the \"gloo\" backend");
}
}  // namespace

bool ProcessGroupNCCL::is_available() { return false; }
ProcessGroupNCCL::ProcessGroupNCCL(std::shared_ptr<Store>, int rank, int size, ProcessGroupNCCLOptions)
    : ProcessGroup(rank, size) {
  unavailable();
}
ProcessGroupNCCL::~ProcessGroupNCCL() = default;
int ProcessGroupNCCL::device() const { unavailable(); }
std::shared_ptr<Work> ProcessGroupNCCL::allreduce(const Tensor&, const AllreduceOptions&) { unavailable(); }
std::shared_ptr<Work> ProcessGroupNCCL::broadcast(const Tensor&, const BroadcastOptions&) { unavailable(); }
std::shared_ptr<Work> ProcessGroupNCCL::allgather(const std::vector<Tensor>&, const Tensor&, const AllgatherOptions&) {
  unavailable();
}
std::shared_ptr<Work> ProcessGroupNCCL::reduce_scatter(const Tensor&, const std::vector<Tensor>&, const ReduceScatterOptions&) {
  unavailable();
}
std::shared_ptr<Work> ProcessGroupNCCL::all_to_all(const Tensor&, const Tensor&, const AllToAllOptions&) { unavailable(); }
std::shared_ptr<Work> ProcessGroupNCCL::barrier(const BarrierOptions&) { unavailable(); }
std::shared_ptr<Work> ProcessGroupNCCL::send(const Tensor&, int, int) { unavailable(); }
std::shared_ptr<Work> ProcessGroupNCCL::recv(const Tensor&, int, int) { unavailable(); }

}  // namespace tensor::distributed
