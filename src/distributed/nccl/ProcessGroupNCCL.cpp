// NCCLGroup, the NCCL process group behind ProcessGroupNCCL: collectives on CUDA tensors
// (part of libtensor_cuda when NCCL is found; Note [NCCL in the CUDA library]).
//
// Note [NCCL streams and Work]
// Each group owns one non-blocking stream. A collective first makes that stream wait for an
// event recorded on the current stream (so it sees every kernel already queued on the
// tensors), then runs NCCL on it and records an end event. Work::wait polls the end event and
// the communicator's asynchronous error; past the timeout it aborts the communicator (NCCL's
// only way to unblock a kernel waiting on a dead peer) and raises tensor::Error naming the
// collective and the timeout. The group is unusable after an abort, as in c10d.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "src/core/Check.h"
#include "src/cuda/CUDAKernels.h"
#include "tensor/core/TensorImpl.h"
#include "src/distributed/nccl/NCCLGroup.h"
#include "tensor/ops.h"

namespace tensor::distributed {

namespace {

using ms = std::chrono::milliseconds;

#define TENSOR_NCCL_CHECK(expr, what)                                                                    \
  do {                                                                                                   \
    ncclResult_t tensor_nccl_res_ = (expr);                                                              \
    if (tensor_nccl_res_ != ncclSuccess && tensor_nccl_res_ != ncclInProgress)                           \
      TENSOR_ERROR("ProcessGroupNCCL: {}: {} failed: {} ({})", what, #expr, ncclGetErrorString(tensor_nccl_res_), \
                   ncclGetLastError(nullptr));                                                           \
  } while (0)

ncclDataType_t nccl_dtype(ScalarType st, const char* op) {
  switch (st) {
    case kFloat32: return ncclFloat32;
    case kFloat64: return ncclFloat64;
    case kFloat16: return ncclFloat16;
    case kBFloat16: return ncclBfloat16;
    case kInt8: return ncclInt8;
    case kUInt8: return ncclUint8;
    case kInt32: return ncclInt32;
    case kInt64: return ncclInt64;
    default:
      TENSOR_ERROR("ProcessGroupNCCL::{}: dtype {} is not supported (float32, float64, float16, bfloat16, int8, uint8, "
                   "int32, int64 are)",
                   op, st);
  }
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return ncclSum;
    case ReduceOp::AVG: return ncclAvg;
    case ReduceOp::PRODUCT: return ncclProd;
    case ReduceOp::MIN: return ncclMin;
    case ReduceOp::MAX: return ncclMax;
  }
  return ncclSum;
}

// In-place outputs bump their version counters when issued (see ProcessGroupGloo.cpp).
void mark_written(const Tensor& t) { t.unsafeGetTensorImpl()->bump_version(); }

std::string describe(const Tensor& t) {
  return fmt::format("{}, shape {}", t.scalar_type(), detail::shape_str(t.sizes()));
}

// The communicator, shared with the Works so that a timed-out wait can abort it.
struct Comm {
  ncclComm_t comm = nullptr;
  std::atomic<bool> aborted{false};
  std::mutex abort_mu;
  void abort() {
    std::lock_guard<std::mutex> g(abort_mu);
    if (!aborted.exchange(true)) ncclCommAbort(comm);
  }
  ~Comm() {
    if (comm && !aborted) ncclCommDestroy(comm);
  }
};

class NCCLWork : public Work {
 public:
  NCCLWork(const char* op, std::string what, std::vector<Tensor> outputs, std::vector<Tensor> keep,
           std::shared_ptr<Comm> comm, cudaEvent_t end, int device, int rank, int size, ms timeout)
      : Work(op, std::move(outputs)), what_(std::move(what)), keep_(std::move(keep)), comm_(std::move(comm)),
        end_(end), device_(device), rank_(rank), size_(size), timeout_(timeout) {}
  ~NCCLWork() override { cudaEventDestroy(end_); }

  bool is_completed() override {
    if (Work::is_completed()) return true;
    return cudaEventQuery(end_) == cudaSuccess;
  }

  bool wait(ms timeout) override {
    std::lock_guard<std::mutex> once(wait_mu_);
    if (!Work::is_completed()) {
      ms t = timeout.count() > 0 ? std::min(timeout, timeout_) : timeout_;
      auto deadline = std::chrono::steady_clock::now() + t;
      for (;;) {
        cudaError_t q = cudaEventQuery(end_);
        if (q == cudaSuccess) {
          finish();
          break;
        }
        std::string why;
        if (q != cudaErrorNotReady) {
          (void)cudaGetLastError();
          why = fmt::format("CUDA error {}", cudaGetErrorString(q));
        }
        ncclResult_t async = ncclSuccess;
        if (why.empty() && comm_->aborted) why = "the communicator was aborted by an earlier timeout";
        if (why.empty() && ncclCommGetAsyncError(comm_->comm, &async) == ncclSuccess && async != ncclSuccess &&
            async != ncclInProgress)
          why = fmt::format("NCCL error {}", ncclGetErrorString(async));
        if (why.empty() && std::chrono::steady_clock::now() >= deadline) why = "it did not complete in time";
        if (!why.empty()) {
          comm_->abort();
          finish(std::make_exception_ptr(Error(fmt::format(
              "ProcessGroupNCCL: {} ({}) failed on rank {} of {} (timeout {} ms): {}; the communicator is aborted",
              op_, what_, rank_, size_, t.count(), why))));
          break;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    }
    return Work::wait(kNoTimeout);
  }

 private:
  std::mutex wait_mu_;
  std::string what_;
  std::vector<Tensor> keep_;  // inputs and scratch buffers, alive until the collective ran
  std::shared_ptr<Comm> comm_;
  cudaEvent_t end_;
  int device_, rank_, size_;
  ms timeout_;
};

}  // namespace

struct NCCLGroup::Impl {
  int rank = 0, size = 0, device = 0;
  ms timeout{};
  std::shared_ptr<Comm> comm;
  cudaStream_t stream = nullptr;
  std::mutex mu;  // one launch sequence at a time: NCCL calls on a communicator are not thread-safe

  ms effective(ms t) const { return t.count() > 0 ? t : timeout; }

  void check(const Tensor& t, const char* op, const char* what) const {
    TENSOR_CHECK(t.defined(), "ProcessGroupNCCL::{}: {} is an undefined tensor", op, what);
    TENSOR_CHECK(t.is_cuda() && t.device().index() == device,
                 "ProcessGroupNCCL::{}: {} is on {}; this rank's group runs on cuda:{}", op, what, t.device().str(), device);
    TENSOR_CHECK(t.is_contiguous(), "ProcessGroupNCCL::{}: {} (shape {}) must be contiguous", op, what,
                 detail::shape_str(t.sizes()));
  }

  // Orders the group's stream after the current stream, runs `launch`, returns the Work.
  template <class F>
  std::shared_ptr<Work> run(const char* op, std::string what, ms t, std::vector<Tensor> outputs, std::vector<Tensor> keep,
                            F&& launch) {
    TENSOR_CHECK(!comm->aborted, "ProcessGroupNCCL::{}: the communicator was aborted after an earlier failure", op);
    std::lock_guard<std::mutex> g(mu);
    int prev = -1;
    TENSOR_CUDA_CHECK(cudaGetDevice(&prev));
    if (prev != device) TENSOR_CUDA_CHECK(cudaSetDevice(device));
    cudaEvent_t start = nullptr, end = nullptr;
    try {
      TENSOR_CUDA_CHECK(cudaEventCreateWithFlags(&start, cudaEventDisableTiming));
      TENSOR_CUDA_CHECK(cudaEventCreateWithFlags(&end, cudaEventDisableTiming));
      TENSOR_CUDA_CHECK(cudaEventRecord(start, cuda_detail::current_stream(device)));
      TENSOR_CUDA_CHECK(cudaStreamWaitEvent(stream, start, 0));
      launch();
      TENSOR_CUDA_CHECK(cudaEventRecord(end, stream));
    } catch (...) {
      if (start) cudaEventDestroy(start);
      if (end) cudaEventDestroy(end);
      if (prev != device) cudaSetDevice(prev);
      throw;
    }
    cudaEventDestroy(start);  // released once the wait on it is done; the wait stays queued
    if (prev != device) cudaSetDevice(prev);
    return std::make_shared<NCCLWork>(op, std::move(what), std::move(outputs), std::move(keep), comm, end, device, rank,
                                      size, t);
  }
};

NCCLGroup::NCCLGroup(std::shared_ptr<Store> store, int rank, int size, ProcessGroupNCCLOptions opts)
    : NCCLBackend(rank, size), impl_(std::make_unique<Impl>()) {
  TENSOR_CHECK(store != nullptr, "ProcessGroupNCCL: the store is null");
  TENSOR_CHECK(size >= 1 && rank >= 0 && rank < size, "ProcessGroupNCCL: rank {} is not in [0, world_size = {})", rank, size);
  TENSOR_CHECK(opts.timeout().count() > 0, "ProcessGroupNCCL: the timeout must be positive (got {} ms)", opts.timeout().count());
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    count = 0;
  }
  TENSOR_CHECK(count > 0, "ProcessGroupNCCL: no CUDA device is available (use the \"gloo\" backend for CPU tensors)");
  int device = opts.device();
  if (device < 0) {
    const char* lr = std::getenv("LOCAL_RANK");
    device = (lr && *lr) ? std::atoi(lr) : rank % count;
  }
  TENSOR_CHECK(device >= 0 && device < count, "ProcessGroupNCCL: device {} is not in [0, {})", device, count);
  impl_->rank = rank;
  impl_->size = size;
  impl_->device = device;
  impl_->timeout = opts.timeout();

  ncclUniqueId id;
  if (rank == 0) {
    TENSOR_NCCL_CHECK(ncclGetUniqueId(&id), "rendezvous");
    store->set("nccl_unique_id", std::vector<uint8_t>(reinterpret_cast<uint8_t*>(&id), reinterpret_cast<uint8_t*>(&id) + sizeof(id)));
  } else {
    auto v = store->get("nccl_unique_id");
    TENSOR_CHECK(v.size() == sizeof(id), "ProcessGroupNCCL: the store's nccl_unique_id has {} bytes, expected {}", v.size(),
                 sizeof(id));
    std::memcpy(&id, v.data(), sizeof(id));
  }
  int prev = -1;
  TENSOR_CUDA_CHECK(cudaGetDevice(&prev));
  TENSOR_CUDA_CHECK(cudaSetDevice(device));
  impl_->comm = std::make_shared<Comm>();
  TENSOR_NCCL_CHECK(ncclCommInitRank(&impl_->comm->comm, size, id, rank), "rendezvous");
  TENSOR_CUDA_CHECK(cudaStreamCreateWithFlags(&impl_->stream, cudaStreamNonBlocking));
  cudaSetDevice(prev);
}

NCCLGroup::~NCCLGroup() {
  if (impl_->stream) {
    if (!impl_->comm->aborted) cudaStreamSynchronize(impl_->stream);
    cudaStreamDestroy(impl_->stream);
  }
}

int NCCLGroup::device() const { return impl_->device; }

std::shared_ptr<Work> NCCLGroup::allreduce(const Tensor& tensor, const AllreduceOptions& opts) {
  impl_->check(tensor, "allreduce", "the tensor");
  ncclDataType_t dt = nccl_dtype(tensor.scalar_type(), "allreduce");
  mark_written(tensor);
  auto* c = impl_.get();
  return c->run("allreduce", fmt::format("{}, {}", to_string(opts.op()), describe(tensor)), c->effective(opts.timeout()),
                {tensor}, {}, [&] {
                  TENSOR_NCCL_CHECK(ncclAllReduce(tensor.data_ptr(), tensor.data_ptr(), static_cast<size_t>(tensor.numel()),
                                                  dt, nccl_op(opts.op()), c->comm->comm, c->stream),
                                    "allreduce");
                });
}

std::shared_ptr<Work> NCCLGroup::broadcast(const Tensor& tensor, const BroadcastOptions& opts) {
  impl_->check(tensor, "broadcast", "the tensor");
  int root = opts.root_rank();
  TENSOR_CHECK(root >= 0 && root < size_, "ProcessGroupNCCL::broadcast: root_rank {} is not in [0, {})", root, size_);
  mark_written(tensor);
  auto* c = impl_.get();
  return c->run("broadcast", fmt::format("root {}, {}", root, describe(tensor)), c->effective(opts.timeout()), {tensor}, {},
                [&] {
                  TENSOR_NCCL_CHECK(ncclBroadcast(tensor.data_ptr(), tensor.data_ptr(), static_cast<size_t>(tensor.nbytes()),
                                                  ncclUint8, root, c->comm->comm, c->stream),
                                    "broadcast");
                });
}

std::shared_ptr<Work> NCCLGroup::allgather(const std::vector<Tensor>& outputs, const Tensor& input,
                                                  const AllgatherOptions& opts) {
  impl_->check(input, "allgather", "the input");
  TENSOR_CHECK(static_cast<int>(outputs.size()) == size_,
               "ProcessGroupNCCL::allgather: expected {} output tensors (one per rank), got {}", size_, outputs.size());
  for (const auto& o : outputs) {
    impl_->check(o, "allgather", "an output");
    TENSOR_CHECK(o.sizes() == input.sizes() && o.scalar_type() == input.scalar_type(),
                 "ProcessGroupNCCL::allgather: every output must match the input ({}), got {}", describe(input), describe(o));
  }
  for (const auto& o : outputs) mark_written(o);
  size_t nb = static_cast<size_t>(input.nbytes());
  Tensor scratch = empty({static_cast<int64_t>(nb) * size_}, TensorOptions().dtype(kUInt8).device(input.device()));
  auto* c = impl_.get();
  return c->run("allgather", describe(input), c->effective(opts.timeout()), outputs, {input, scratch}, [&] {
    TENSOR_NCCL_CHECK(ncclAllGather(input.data_ptr(), scratch.data_ptr(), nb, ncclUint8, c->comm->comm, c->stream),
                      "allgather");
    for (int r = 0; r < size_; ++r)
      TENSOR_CUDA_CHECK(cudaMemcpyAsync(outputs[r].data_ptr(), static_cast<uint8_t*>(scratch.data_ptr()) + r * nb, nb,
                                        cudaMemcpyDeviceToDevice, c->stream));
  });
}

std::shared_ptr<Work> NCCLGroup::reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                                       const ReduceScatterOptions& opts) {
  impl_->check(output, "reduce_scatter", "the output");
  TENSOR_CHECK(static_cast<int>(inputs.size()) == size_,
               "ProcessGroupNCCL::reduce_scatter: expected {} input tensors (one per rank), got {}", size_, inputs.size());
  for (const auto& i : inputs) {
    impl_->check(i, "reduce_scatter", "an input");
    TENSOR_CHECK(i.sizes() == output.sizes() && i.scalar_type() == output.scalar_type(),
                 "ProcessGroupNCCL::reduce_scatter: every input must match the output ({}), got {}", describe(output),
                 describe(i));
  }
  ncclDataType_t dt = nccl_dtype(output.scalar_type(), "reduce_scatter");
  mark_written(output);
  size_t nb = static_cast<size_t>(output.nbytes());
  Tensor scratch = empty({static_cast<int64_t>(nb) * size_}, TensorOptions().dtype(kUInt8).device(output.device()));
  std::vector<Tensor> keep = inputs;
  keep.push_back(scratch);
  auto* c = impl_.get();
  return c->run("reduce_scatter", fmt::format("{}, {}", to_string(opts.op()), describe(output)), c->effective(opts.timeout()),
                {output}, std::move(keep), [&] {
                  for (int r = 0; r < size_; ++r)
                    TENSOR_CUDA_CHECK(cudaMemcpyAsync(static_cast<uint8_t*>(scratch.data_ptr()) + r * nb, inputs[r].data_ptr(),
                                                      nb, cudaMemcpyDeviceToDevice, c->stream));
                  TENSOR_NCCL_CHECK(ncclReduceScatter(scratch.data_ptr(), output.data_ptr(),
                                                      static_cast<size_t>(output.numel()), dt, nccl_op(opts.op()),
                                                      c->comm->comm, c->stream),
                                    "reduce_scatter");
                });
}

std::shared_ptr<Work> NCCLGroup::all_to_all(const Tensor& output, const Tensor& input, const AllToAllOptions& opts) {
  impl_->check(input, "all_to_all", "the input");
  impl_->check(output, "all_to_all", "the output");
  TENSOR_CHECK(input.sizes() == output.sizes() && input.scalar_type() == output.scalar_type(),
               "ProcessGroupNCCL::all_to_all: the output ({}) must match the input ({})", describe(output), describe(input));
  TENSOR_CHECK(input.dim() >= 1 && input.size(0) % size_ == 0,
               "ProcessGroupNCCL::all_to_all: the input's dim 0 ({}) must split evenly over {} ranks", describe(input), size_);
  TENSOR_CHECK(input.data_ptr() != output.data_ptr(), "ProcessGroupNCCL::all_to_all: the output must not alias the input");
  size_t chunk = static_cast<size_t>(input.nbytes()) / static_cast<size_t>(size_);
  mark_written(output);
  auto* c = impl_.get();
  return c->run("all_to_all", describe(input), c->effective(opts.timeout()), {output}, {input}, [&] {
    TENSOR_NCCL_CHECK(ncclGroupStart(), "all_to_all");
    for (int r = 0; r < size_; ++r) {
      TENSOR_NCCL_CHECK(ncclSend(static_cast<uint8_t*>(input.data_ptr()) + r * chunk, chunk, ncclUint8, r, c->comm->comm,
                                 c->stream),
                        "all_to_all");
      TENSOR_NCCL_CHECK(ncclRecv(static_cast<uint8_t*>(output.data_ptr()) + r * chunk, chunk, ncclUint8, r, c->comm->comm,
                                 c->stream),
                        "all_to_all");
    }
    TENSOR_NCCL_CHECK(ncclGroupEnd(), "all_to_all");
  });
}

std::shared_ptr<Work> NCCLGroup::barrier(const BarrierOptions& opts) {
  // NCCL has no barrier: an allreduce of one element, as c10d.
  Tensor one = zeros({1}, TensorOptions().dtype(kFloat32).device(Device(kCUDA, static_cast<int8_t>(impl_->device))));
  auto* c = impl_.get();
  return c->run("barrier", fmt::format("{} ranks", size_), c->effective(opts.timeout()), {}, {one}, [&] {
    TENSOR_NCCL_CHECK(ncclAllReduce(one.data_ptr(), one.data_ptr(), 1, ncclFloat32, ncclSum, c->comm->comm, c->stream),
                      "barrier");
  });
}

std::shared_ptr<Work> NCCLGroup::send(const Tensor& tensor, int dst, int tag) {
  impl_->check(tensor, "send", "the tensor");
  TENSOR_CHECK(dst >= 0 && dst < size_ && dst != rank_, "ProcessGroupNCCL::send: dst {} must be another rank in [0, {}) (this is rank {})",
               dst, size_, rank_);
  auto* c = impl_.get();
  return c->run("send", fmt::format("to rank {}, {}", dst, describe(tensor)), c->timeout, {tensor}, {}, [&] {
    TENSOR_NCCL_CHECK(ncclSend(tensor.data_ptr(), static_cast<size_t>(tensor.nbytes()), ncclUint8, dst, c->comm->comm, c->stream),
                      "send");
  });
}

std::shared_ptr<Work> NCCLGroup::recv(const Tensor& tensor, int src, int tag) {
  impl_->check(tensor, "recv", "the tensor");
  TENSOR_CHECK(src >= 0 && src < size_ && src != rank_, "ProcessGroupNCCL::recv: src {} must be another rank in [0, {}) (this is rank {})",
               src, size_, rank_);
  mark_written(tensor);
  auto* c = impl_.get();
  return c->run("recv", fmt::format("from rank {}, {}", src, describe(tensor)), c->timeout, {tensor}, {}, [&] {
    TENSOR_NCCL_CHECK(ncclRecv(tensor.data_ptr(), static_cast<size_t>(tensor.nbytes()), ncclUint8, src, c->comm->comm, c->stream),
                      "recv");
  });
}

void register_nccl() {
  set_nccl_factory([](std::shared_ptr<Store> store, int rank, int size, ProcessGroupNCCLOptions opts) {
    return std::unique_ptr<NCCLBackend>(std::make_unique<NCCLGroup>(std::move(store), rank, size, opts));
  });
}

}  // namespace tensor::distributed
