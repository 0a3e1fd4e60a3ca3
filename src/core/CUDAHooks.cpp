// The CUDA backend's loader, its stand-in, and the public tensor::cuda API, which forwards to the
// hooks (Note [CUDA hooks] in src/core/CUDAHooks.h).
#include "src/core/CUDAHooks.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <utility>

#include "src/core/Check.h"
#include "tensor/version.h"

// Defined by libtensor_cuda (src/cuda/CUDAHooksImpl.cpp). Weak, so that a static link that
// includes libtensor_cuda.a resolves it and any other link leaves it null.
extern "C" __attribute__((weak)) tensor::cuda_detail::CUDAHooks* tensor_cuda_hooks();

namespace tensor::cuda_detail {

namespace {

// Used when the backend is absent: no devices, and a clear error for anything that needs one.
class NoCUDAHooks final : public CUDAHooks, public Allocator {
 public:
  explicit NoCUDAHooks(std::string why) : why_(std::move(why)) {}
  int device_count() override { return 0; }
  const char* unavailable_reason() override { return why_.c_str(); }
  [[noreturn]] void fail(const char* what) { TENSOR_ERROR("{}: {}", what, why_); }
  int current_device() override { fail("cuda::current_device"); }
  void set_device(int) override { fail("cuda::set_device"); }
  void synchronize(int) override { fail("cuda::synchronize"); }
  void check_available(const char* op, Device) override { fail(op); }
  Allocator* allocator() override { return this; }
  Allocator* host_allocator() override { return this; }
  DataPtr allocate(size_t, Device) override { fail("CUDA allocation"); }
  cuda::MemoryStats memory_stats(int) override { return {}; }
  void reset_peak_memory_stats(int) override {}
  void empty_cache() override {}
  void record_stream(void*, int, cuda::StreamId) override { fail("record_stream"); }
  void copy_kernel(const Tensor&, const Tensor&, bool) override { fail("copy_ to or from CUDA"); }
  void fill_kernel(const Tensor&, const Scalar&) override { fail("fill_ on CUDA"); }
  cuda::StreamId current_stream(int) override { fail("cuda::getCurrentCUDAStream"); }
  void set_current_stream(int, cuda::StreamId) override { fail("cuda::setCurrentCUDAStream"); }
  cuda::StreamId stream_from_pool(int, bool) override { fail("cuda::getStreamFromPool"); }
  bool stream_query(int, cuda::StreamId) override { fail("cuda::Stream::query"); }
  void stream_synchronize(int, cuda::StreamId) override { fail("cuda::Stream::synchronize"); }
  int stream_priority(int, cuda::StreamId) override { fail("cuda::Stream::priority"); }
  void* event_create(int, bool, bool) override { fail("cuda::Event::record"); }
  void event_destroy(void*, int) override {}
  void event_record(void*, int, cuda::StreamId) override { fail("cuda::Event::record"); }
  bool event_query(void*, int) override { fail("cuda::Event::query"); }
  void event_synchronize(void*, int) override { fail("cuda::Event::synchronize"); }
  void event_block(void*, int, cuda::StreamId) override { fail("cuda::Event::block"); }
  float event_elapsed_ms(void*, void*, int) override { fail("cuda::Event::elapsed_time"); }

 private:
  std::string why_;
};

// The folder of the loaded libtensor (found through one of its own symbols), with a slash.
std::string own_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&hooks), &info) == 0 || info.dli_fname == nullptr) return {};
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

std::atomic<CUDAHooks*> g_loaded{nullptr};

CUDAHooks* load() {
  using Entry = CUDAHooks* (*)();
  if (tensor_cuda_hooks != nullptr) return tensor_cuda_hooks();  // linked in statically
  const std::string name = "libtensor_cuda.so." + std::to_string(TENSOR_VERSION_MAJOR);
  std::string tried;
  void* lib = nullptr;
  auto try_open = [&](const std::string& path) {
    if (lib) return;
    lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      tried += fmt::format("\n  {}: {}", path, e ? e : "not found");
    }
  };
  if (const char* env = std::getenv("TENSOR_CUDA_LIBRARY"); env && *env) {
    try_open(env);
  } else {
    std::string here = own_folder();
    if (!here.empty()) try_open(here + name);
    try_open(name);  // the loader's search path (LD_LIBRARY_PATH, the program's RUNPATH)
  }
  if (!lib) {
    static NoCUDAHooks none(fmt::format(
        "libtensor's CUDA backend ({}) could not be loaded; libtensor was built without CUDA (nvcc was not found at "
        "configure time) or the library is not beside libtensor. Use CPU tensors, or rebuild on a machine with the "
        "CUDA toolkit. Tried:{}",
        name, tried));
    return &none;
  }
  auto entry = reinterpret_cast<Entry>(dlsym(lib, "tensor_cuda_hooks"));
  if (!entry) {
    static NoCUDAHooks bad(fmt::format("{} has no entry point tensor_cuda_hooks (a mismatched build?)", name));
    return &bad;
  }
  return entry();
}

}  // namespace

CUDAHooks& hooks() {
  // A function-local static: the first caller loads, concurrent callers wait for it.
  static CUDAHooks* const h = [] {
    CUDAHooks* p = load();
    g_loaded.store(p, std::memory_order_release);
    return p;
  }();
  return *h;
}

CUDAHooks* hooks_if_loaded() { return g_loaded.load(std::memory_order_acquire); }

}  // namespace tensor::cuda_detail

namespace tensor {

using cuda_detail::hooks;

Allocator* cuda_allocator() { return hooks().allocator(); }

namespace cuda {

bool is_available() { return hooks().device_count() > 0; }
int device_count() { return hooks().device_count(); }
int current_device() { return hooks().current_device(); }
void set_device(int index) { hooks().set_device(index); }
void synchronize(int device) { hooks().synchronize(device); }

// As libtorch's CUDAGuard: index -1 keeps the current device, and the destructor restores the
// device that was current at construction even if the scope changed it again.
CUDAGuard::CUDAGuard(int index) {
  hooks().check_available("cuda::CUDAGuard", Device(kCUDA, static_cast<int8_t>(index)));
  prev_ = hooks().current_device();
  if (index >= 0 && index != prev_) hooks().set_device(index);
}

CUDAGuard::~CUDAGuard() {
  try {
    if (hooks().current_device() != prev_) hooks().set_device(prev_);
  } catch (...) {  // never throw from a destructor
  }
}

namespace {
// The concrete device index; an error names `op` when there is no such device.
int resolve(const char* op, int device) {
  hooks().check_available(op, Device(kCUDA, static_cast<int8_t>(device)));
  return device < 0 ? hooks().current_device() : device;
}
}  // namespace

bool Stream::query() const { return hooks().stream_query(device_, id_); }
void Stream::synchronize() const { hooks().stream_synchronize(device_, id_); }
int Stream::priority() const { return hooks().stream_priority(device_, id_); }

Stream getCurrentCUDAStream(int device) {
  int d = resolve("cuda::getCurrentCUDAStream", device);
  return Stream(d, hooks().current_stream(d));
}
Stream getDefaultCUDAStream(int device) {
  int d = resolve("cuda::getDefaultCUDAStream", device);
  return Stream(d, 0);
}
Stream getStreamFromPool(bool high_priority, int device) {
  int d = resolve("cuda::getStreamFromPool", device);
  return Stream(d, hooks().stream_from_pool(d, high_priority));
}
void setCurrentCUDAStream(Stream stream) { hooks().set_current_stream(stream.device_index(), stream.id()); }

// As libtorch's CUDAStreamGuard: makes the stream's device current and the stream current on
// it; the destructor restores that device's previous stream, then the previous device. The
// current stream of the previously current device is left alone (it was never changed here).
StreamGuard::StreamGuard(Stream stream)
    : prev_device_((hooks().check_available("cuda::StreamGuard", stream.device()), hooks().current_device())),
      prev_stream_(getCurrentCUDAStream(stream.device_index())) {
  if (stream.device_index() != prev_device_) hooks().set_device(stream.device_index());
  try {
    hooks().set_current_stream(stream.device_index(), stream.id());
  } catch (...) {  // no destructor runs: undo the device change
    try {
      hooks().set_device(prev_device_);
    } catch (...) {
    }
    throw;
  }
}

StreamGuard::~StreamGuard() {
  try {
    hooks().set_current_stream(prev_stream_.device_index(), prev_stream_.id());
  } catch (...) {  // never throw from a destructor
  }
  try {
    if (hooks().current_device() != prev_device_) hooks().set_device(prev_device_);
  } catch (...) {
  }
}

Event::~Event() {
  if (event_) hooks().event_destroy(event_, device_);
}
Event::Event(Event&& o) noexcept
    : event_(std::exchange(o.event_, nullptr)), device_(o.device_), timing_(o.timing_), blocking_(o.blocking_) {}
Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (event_) hooks().event_destroy(event_, device_);
    event_ = std::exchange(o.event_, nullptr);
    device_ = o.device_;
    timing_ = o.timing_;
    blocking_ = o.blocking_;
  }
  return *this;
}
void Event::record() {
  hooks().check_available("cuda::Event::record", Device(kCUDA));
  record(getCurrentCUDAStream());
}
void Event::record(const Stream& stream) {
  if (!event_) {
    event_ = hooks().event_create(stream.device_index(), timing_, blocking_);
    device_ = stream.device_index();
  }
  TENSOR_CHECK(device_ == stream.device_index(),
               "cuda::Event::record: the event was created on cuda:{} and cannot record a stream of cuda:{}", device_,
               stream.device_index());
  hooks().event_record(event_, device_, stream.id());
}
// The stream's device, not the event's, is current for the wait: stream id 0 names the default
// stream of the current device, and a stream may wait for an event of another device.
void Event::block(const Stream& stream) {
  if (event_) hooks().event_block(event_, stream.device_index(), stream.id());
}
bool Event::query() const { return event_ ? hooks().event_query(event_, device_) : true; }
void Event::synchronize() const {
  if (event_) hooks().event_synchronize(event_, device_);
}
float Event::elapsed_time(const Event& end) const {
  TENSOR_CHECK(event_ && end.event_, "cuda::Event::elapsed_time: both events must be recorded first");
  TENSOR_CHECK(timing_ && end.timing_, "cuda::Event::elapsed_time: both events need enable_timing=true");
  TENSOR_CHECK(device_ == end.device_, "cuda::Event::elapsed_time: the events were recorded on cuda:{} and cuda:{}",
               device_, end.device_);
  return hooks().event_elapsed_ms(event_, end.event_, device_);
}

MemoryStats memory_stats(int device) { return hooks().memory_stats(device); }
void reset_peak_memory_stats(int device) { hooks().reset_peak_memory_stats(device); }
void empty_cache() {
  // Nothing can be cached before the backend was loaded; do not load it just to find that out.
  if (cuda_detail::hooks_if_loaded()) hooks().empty_cache();
}

}  // namespace cuda

// ---- Tensor members that reach the CUDA backend ----

Tensor Tensor::pin_memory() const {
  TENSOR_CHECK(defined() && is_cpu(), "pin_memory: only CPU tensors can be pinned, got {}",
               defined() ? device().str() : std::string("an undefined tensor"));
  if (is_pinned()) return *this;
  hooks().check_available("pin_memory", Device(kCUDA));  // page-locking needs the CUDA driver
  const size_t nbytes = static_cast<size_t>(numel() * element_size());
  auto storage = make_intrusive<StorageImpl>(nbytes, Device(kCPU), hooks().host_allocator());
  auto impl = make_intrusive<TensorImpl>(std::move(storage), dtype(), Device(kCPU));
  impl->set_sizes_contiguous(sizes());
  Tensor out(std::move(impl));
  out.copy_(*this);
  return out;
}

bool Tensor::is_pinned() const {
  cuda_detail::CUDAHooks* h = cuda_detail::hooks_if_loaded();
  if (!h || !defined() || !is_cpu()) return false;  // nothing is pinned before the backend is loaded
  const StorageImpl* s = unsafeGetTensorImpl()->storage().get();
  return s != nullptr && s->allocator() == h->host_allocator();
}

void Tensor::record_stream(const cuda::Stream& stream) const {
  TENSOR_CHECK(defined() && is_cuda(), "record_stream: expected a CUDA tensor, got {}",
               defined() ? device().str() : std::string("an undefined tensor"));
  TENSOR_CHECK(device().index() == stream.device_index(),
               "record_stream: the tensor is on {} but the stream belongs to cuda:{}", device().str(),
               stream.device_index());
  hooks().record_stream(unsafeGetTensorImpl()->storage()->data(), stream.device_index(), stream.id());
}

}  // namespace tensor
