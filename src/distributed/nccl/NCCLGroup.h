// Internal: the NCCL process group behind the public ProcessGroupNCCL (Note [NCCL in the CUDA
// library]). NCCLGroup lives in libtensor_cuda; libtensor holds only the public class, which
// forwards to one.
#pragma once

#include <memory>

#include "tensor/distributed/process_group_nccl.h"

namespace tensor::distributed {

// Note [NCCL in the CUDA library]
// NCCL needs the CUDA runtime, so it lives in libtensor_cuda with the rest of the backend
// (Note [CUDA hooks]). The public ProcessGroupNCCL stays in libtensor, so that a program that
// names it links against libtensor alone; constructing one loads the CUDA backend, whose entry
// point installed a factory here, and every member forwards to the NCCLGroup it made.
/// What libtensor's ProcessGroupNCCL sees: virtual calls only, so libtensor needs no symbol of
/// libtensor_cuda.
class NCCLBackend : public ProcessGroup {
 public:
  using ProcessGroup::ProcessGroup;
  /// The CUDA device of this rank.
  virtual int device() const = 0;
};

class NCCLGroup final : public NCCLBackend {
 public:
  NCCLGroup(std::shared_ptr<Store> store, int rank, int size, ProcessGroupNCCLOptions opts);
  ~NCCLGroup() override;
  std::string backend_name() const override { return "nccl"; }
  std::shared_ptr<Work> allreduce(const Tensor& tensor, const AllreduceOptions& opts = {}) override;
  std::shared_ptr<Work> broadcast(const Tensor& tensor, const BroadcastOptions& opts = {}) override;
  std::shared_ptr<Work> allgather(const std::vector<Tensor>& outputs, const Tensor& input,
                                  const AllgatherOptions& opts = {}) override;
  std::shared_ptr<Work> reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                       const ReduceScatterOptions& opts = {}) override;
  std::shared_ptr<Work> all_to_all(const Tensor& output, const Tensor& input, const AllToAllOptions& opts = {}) override;
  std::shared_ptr<Work> barrier(const BarrierOptions& opts = {}) override;
  std::shared_ptr<Work> send(const Tensor& tensor, int dst, int tag = 0) override;
  std::shared_ptr<Work> recv(const Tensor& tensor, int src, int tag = 0) override;
  int device() const override;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

using NCCLFactory = std::unique_ptr<NCCLBackend> (*)(std::shared_ptr<Store> store, int rank, int size,
                                                   ProcessGroupNCCLOptions opts);
/// Installed by libtensor_cuda when it loads with NCCL (null otherwise).
TENSOR_API void set_nccl_factory(NCCLFactory f);
/// libtensor_cuda's side: installs its factory (src/distributed/nccl/ProcessGroupNCCL.cpp).
void register_nccl();

}  // namespace tensor::distributed
