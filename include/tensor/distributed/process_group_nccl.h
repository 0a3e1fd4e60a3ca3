// ProcessGroupNCCL: the CUDA backend (c10d's ProcessGroupNCCL), present when libtensor was
// built with CUDA and NCCL; otherwise its constructor raises tensor::Error.
#pragma once

#include "tensor/distributed/process_group.h"

namespace tensor::distributed {

/// Options of the NCCL backend.
struct TENSOR_API ProcessGroupNCCLOptions {
  /// How long Work::wait waits for a collective before aborting the communicator and raising.
  TENSOR_ARG(std::chrono::milliseconds, timeout) = kProcessGroupDefaultTimeout;
  /// The CUDA device of this rank (-1: LOCAL_RANK when set, else rank % device_count()).
  TENSOR_ARG(int, device) = -1;
};

/// Collectives on CUDA tensors of one device per rank, on a stream of the group's own that
/// waits for the work already queued on the current stream. Work::wait blocks the calling
/// thread until the collective finished on the GPU, and raises tensor::Error (and aborts the
/// communicator) when it does not within the timeout. Keep the tensors alive until wait().
/// send/recv ignore the tag and run in issue order on the group's stream.
class TENSOR_API ProcessGroupNCCL : public ProcessGroup {
 public:
  /// Rendezvous through `store` (rank 0 publishes the NCCL unique id there).
  ProcessGroupNCCL(std::shared_ptr<Store> store, int rank, int size,
                   ProcessGroupNCCLOptions opts = ProcessGroupNCCLOptions());
  ~ProcessGroupNCCL() override;

  /// True when this libtensor was built with NCCL.
  static bool is_available();

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

  /// The CUDA device of this rank.
  int device() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensor::distributed
