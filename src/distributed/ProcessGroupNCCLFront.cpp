// The public ProcessGroupNCCL: forwards to the NCCLGroup that libtensor_cuda makes (Note [NCCL in
// the CUDA library]); without that library, or without NCCL in it, construction raises.
#include <atomic>

#include "src/core/CUDAHooks.h"
#include "src/core/Check.h"
#include "src/distributed/nccl/NCCLGroup.h"

namespace tensor::distributed {

namespace {
std::atomic<NCCLFactory> g_factory{nullptr};

NCCLFactory factory() {
  cuda_detail::hooks();  // loads the CUDA backend, which installs the factory when it has NCCL
  return g_factory.load(std::memory_order_acquire);
}
}  // namespace

void set_nccl_factory(NCCLFactory f) { g_factory.store(f, std::memory_order_release); }

struct ProcessGroupNCCL::Impl {
  std::unique_ptr<NCCLBackend> group;
};

bool ProcessGroupNCCL::is_available() { return factory() != nullptr; }

ProcessGroupNCCL::ProcessGroupNCCL(std::shared_ptr<Store> store, int rank, int size, ProcessGroupNCCLOptions opts)
    : ProcessGroup(rank, size), impl_(std::make_unique<Impl>()) {
  NCCLFactory f = factory();
  if (!f) {
    const char* why = cuda_detail::hooks().unavailable_reason();
    TENSOR_ERROR("ProcessGroupNCCL: this libtensor was built without NCCL ({}); use the \"gloo\" backend",
                 *why ? why : "its CUDA backend has no NCCL: nccl.h / libnccl were not found at configure time");
  }
  impl_->group = f(std::move(store), rank, size, opts);
}
ProcessGroupNCCL::~ProcessGroupNCCL() = default;
int ProcessGroupNCCL::device() const { return impl_->group->device(); }
std::shared_ptr<Work> ProcessGroupNCCL::allreduce(const Tensor& t, const AllreduceOptions& o) {
  return impl_->group->allreduce(t, o);
}
std::shared_ptr<Work> ProcessGroupNCCL::broadcast(const Tensor& t, const BroadcastOptions& o) {
  return impl_->group->broadcast(t, o);
}
std::shared_ptr<Work> ProcessGroupNCCL::allgather(const std::vector<Tensor>& out, const Tensor& in,
                                                  const AllgatherOptions& o) {
  return impl_->group->allgather(out, in, o);
}
std::shared_ptr<Work> ProcessGroupNCCL::reduce_scatter(const Tensor& out, const std::vector<Tensor>& in,
                                                       const ReduceScatterOptions& o) {
  return impl_->group->reduce_scatter(out, in, o);
}
std::shared_ptr<Work> ProcessGroupNCCL::all_to_all(const Tensor& out, const Tensor& in, const AllToAllOptions& o) {
  return impl_->group->all_to_all(out, in, o);
}
std::shared_ptr<Work> ProcessGroupNCCL::barrier(const BarrierOptions& o) { return impl_->group->barrier(o); }
std::shared_ptr<Work> ProcessGroupNCCL::send(const Tensor& t, int dst, int tag) { return impl_->group->send(t, dst, tag); }
std::shared_ptr<Work> ProcessGroupNCCL::recv(const Tensor& t, int src, int tag) { return impl_->group->recv(t, src, tag); }

}  // namespace tensor::distributed
