// The profiler's sessions, per-thread buffers, Chrome trace export, tables and analysis
// (docs/profiling.md).
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "src/core/Check.h"
#include "src/dispatch/Dispatcher.h"
#include "src/profiler/ProfilerHooks.h"
#include "tensor/autograd/Node.h"

namespace tensor::profiler {
namespace detail {

std::atomic<bool> g_active{false};
std::atomic<bool> g_memory{false};

// Note [Profiler threads]
// Each thread files its events into its own ThreadBuffer, registered with the recording
// Session the first time the thread records, so threads never contend on a shared list. The
// Profiler key is put in a thread's included set when the thread registers (the profiling
// thread at once; data loader workers and threads that open a RecordFunction when they first
// look; the engine's reentrant threads inherit their caller's keys) and taken out again by the
// first op that finds no profile recording. A generation counter, bumped when a profile starts
// or stops, tells a thread that its cached session is stale.
struct Session {
  ProfileOptions opts;
  std::chrono::steady_clock::time_point t0;
  std::atomic<bool> recording{true};
  std::mutex mu;
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  int32_t main_index = 0;
  int64_t end_ns = 0;
  // Steps (ProfilerStep#N), on the profiling thread.
  int64_t step_start_ns = 0;
  int64_t step_n = 0;
  std::vector<Event> steps;
  // Filled when recording stops: every buffer's events, and their thread of each.
  bool finished = false;
  std::vector<std::pair<const ThreadBuffer*, Event>> all;
};

namespace {
std::mutex g_mu;  // guards g_session
std::shared_ptr<Session> g_session;
std::atomic<uint64_t> g_gen{1};

// Set when this thread's ThreadState is destroyed at thread exit: tensors that other
// thread_local objects free afterwards must not touch it. A plain bool, readable throughout.
thread_local bool t_state_dead __attribute__((tls_model("initial-exec"))) = false;
struct ThreadState {
  uint64_t gen = 0;
  std::shared_ptr<Session> session;
  std::shared_ptr<ThreadBuffer> buffer;
  ~ThreadState() { t_state_dead = true; }
};
// initial-exec, as the dispatcher's keys (Note [Thread-local keys]): no __tls_get_addr per event.
thread_local ThreadState t_state __attribute__((tls_model("initial-exec")));

void set_key(bool on) {
  auto& lk = dispatch::local_keys();
  lk.included = on ? lk.included | DispatchKeySet(DispatchKey::Profiler) : lk.included.remove(DispatchKey::Profiler);
}

std::string current_thread_name() {
  char buf[32] = {0};
  if (pthread_getname_np(pthread_self(), buf, sizeof buf) != 0) return {};
  return buf;
}
}  // namespace

ThreadBuffer* thread_buffer() {
  if (__builtin_expect(t_state_dead, 0)) return nullptr;
  ThreadState& st = t_state;
  const uint64_t gen = g_gen.load(std::memory_order_acquire);
  if (__builtin_expect(st.gen != gen, 0)) {
    std::shared_ptr<Session> s;
    {
      std::lock_guard<std::mutex> g(g_mu);
      s = g_session;
      st.gen = g_gen.load(std::memory_order_acquire);
    }
    st.buffer.reset();
    st.session = s;
    if (s && s->recording.load()) {
      auto b = std::make_shared<ThreadBuffer>();
      b->os_tid = static_cast<int64_t>(syscall(SYS_gettid));
      b->thread_name = current_thread_name();
      b->record_shapes = s->opts.get_record_shapes();
      b->profile_memory = s->opts.get_profile_memory();
      b->t0 = s->t0;
      std::lock_guard<std::mutex> g(s->mu);
      b->index = static_cast<int32_t>(s->buffers.size());
      s->buffers.push_back(b);
      st.buffer = std::move(b);
    }
  }
  if (!st.buffer || !st.session->recording.load(std::memory_order_relaxed)) {
    set_key(false);
    return nullptr;
  }
  set_key(true);
  return st.buffer.get();
}

std::shared_ptr<ThreadBuffer> thread_buffer_shared() {
  return thread_buffer() ? t_state.buffer : nullptr;
}

Event& open(ThreadBuffer* b, std::string name, Kind kind) {
  OpenEvent& o = b->stack.emplace_back();
  o.ev.name = std::move(name);
  o.ev.kind = kind;
  o.ev.depth = static_cast<int32_t>(b->stack.size() - 1);
  o.ev.start_ns = now_ns(b);
  return o.ev;
}

void close(ThreadBuffer* b) {
  if (b->stack.empty()) return;
  OpenEvent o = std::move(b->stack.back());
  b->stack.pop_back();
  o.ev.dur_ns = now_ns(b) - o.ev.start_ns;
  o.ev.self_ns = o.ev.dur_ns - o.child_ns;
  o.ev.total_bytes = o.ev.bytes + o.child_bytes;
  if (!b->stack.empty()) {
    b->stack.back().child_ns += o.ev.dur_ns;
    b->stack.back().child_bytes += o.ev.total_bytes;
  }
  std::lock_guard<std::mutex> g(b->mu);
  b->events.push_back(std::move(o.ev));
}

ScopedRange::ScopedRange(Kind kind, const char* name) {
  if (!active()) return;
  b_ = thread_buffer();
  if (b_) open(b_, name, kind);
}
ScopedRange::ScopedRange(Kind kind, std::string name) {
  if (!active()) return;
  b_ = thread_buffer();
  if (b_) open(b_, std::move(name), kind);
}
ScopedRange::~ScopedRange() {
  if (b_) close(b_);
}

void on_node_created(uint64_t seq) {
  ThreadBuffer* b = thread_buffer();
  if (!b) return;
  for (auto it = b->stack.rbegin(); it != b->stack.rend(); ++it) {
    if (it->ev.kind != Kind::Op) continue;
    if (it->ev.seq < 0) it->ev.seq = static_cast<int64_t>(seq);
    return;
  }
}

void on_accumulate_grad_created(uint64_t seq) {
  ThreadBuffer* b = thread_buffer();
  if (!b) return;
  for (auto& o : b->stack)
    if (o.ev.seq == static_cast<int64_t>(seq)) o.ev.seq = -1;
}

namespace {
__attribute__((noinline)) std::vector<Tensor> apply_profiled(autograd::Node& n, std::vector<Tensor>&& inputs) {
  ThreadBuffer* b = thread_buffer();
  if (b) open(b, n.name(), Kind::Backward).seq = static_cast<int64_t>(n.sequence_nr());
  struct Closer {
    ThreadBuffer* b;
    ~Closer() {
      if (b) close(b);
    }
  } closer{b};
  return n.apply(std::move(inputs));
}
}  // namespace

std::vector<Tensor> apply_node(autograd::Node& n, std::vector<Tensor>&& inputs) {
  if (__builtin_expect(active(), 0)) return apply_profiled(n, std::move(inputs));
  return n.apply(std::move(inputs));
}

namespace {
// The record of a CPU allocation made while profile_memory recorded: the allocator's own
// deleter and context, and the bytes asked for.
struct AllocRecord {
  void* ctx;
  void (*deleter)(void*, void*);
  size_t nbytes;
};

void record_memory(int64_t bytes) {
  ThreadBuffer* b = thread_buffer();
  if (!b || !b->profile_memory) return;
  Event ev;
  ev.name = "[memory]";
  ev.kind = bytes >= 0 ? Kind::Alloc : Kind::Free;
  ev.bytes = bytes;
  ev.depth = static_cast<int32_t>(b->stack.size());
  ev.start_ns = now_ns(b);
  if (!b->stack.empty()) b->stack.back().ev.bytes += bytes;
  std::lock_guard<std::mutex> g(b->mu);
  b->events.push_back(std::move(ev));
}

void profiled_free(void* p, void* ctx) {
  auto* rec = static_cast<AllocRecord*>(ctx);
  if (memory_active()) record_memory(-static_cast<int64_t>(rec->nbytes));
  if (rec->deleter) rec->deleter(p, rec->ctx);
  delete rec;
}
}  // namespace

DataPtr on_alloc(DataPtr d, size_t nbytes) {
  if (!d.data || nbytes == 0) return d;
  record_memory(static_cast<int64_t>(nbytes));
  auto* rec = new AllocRecord{d.ctx, d.deleter, nbytes};
  return DataPtr{d.data, rec, &profiled_free};
}

namespace {

const char* cat_of(Kind k) {
  switch (k) {
    case Kind::Op: return "cpu_op";
    case Kind::Backward: return "backward";
    case Kind::User: return "user_annotation";
    case Kind::Optimizer: return "optimizer";
    case Kind::DataLoader: return "dataloader";
    case Kind::Step: return "step";
    default: return "cpu_instant_event";
  }
}

double us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

bool is_copy(const std::string& n) {
  return n == "copy_" || n == "_to_copy" || n == "to" || n == "clone" || n == "contiguous";
}
bool is_comm(const std::string& n) {
  return n.rfind("c10d::", 0) == 0 || n.rfind("distributed::", 0) == 0 || n.rfind("nccl:", 0) == 0 ||
         n.rfind("gloo:", 0) == 0;
}
bool timed(Kind k) { return k != Kind::Alloc && k != Kind::Free; }

void sort_rows(std::vector<EventAverage>& rows, SortBy by) {
  auto key = [by](const EventAverage& r) -> int64_t {
    switch (by) {
      case SortBy::SelfCpuTime: return r.self_cpu_ns;
      case SortBy::CpuTime: return r.cpu_total_ns;
      case SortBy::Calls: return r.calls;
      case SortBy::SelfCpuMemory: return r.self_memory_bytes;
      case SortBy::CpuMemory: return r.memory_bytes;
    }
    return 0;
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const EventAverage& a, const EventAverage& b) {
    int64_t ka = key(a), kb = key(b);
    return ka != kb ? ka > kb : a.name < b.name;
  });
}

std::string fmt_time(int64_t ns) {
  char buf[32];
  if (ns >= 1000000000) snprintf(buf, sizeof buf, "%.3fs", ns / 1e9);
  else if (ns >= 1000000) snprintf(buf, sizeof buf, "%.3fms", ns / 1e6);
  else snprintf(buf, sizeof buf, "%.3fus", ns / 1e3);
  return buf;
}
std::string fmt_bytes(int64_t b) {
  char buf[32];
  const double a = static_cast<double>(b < 0 ? -b : b);
  if (a >= 1 << 30) snprintf(buf, sizeof buf, "%.2f Gb", b / double(1 << 30));
  else if (a >= 1 << 20) snprintf(buf, sizeof buf, "%.2f Mb", b / double(1 << 20));
  else if (a >= 1 << 10) snprintf(buf, sizeof buf, "%.2f Kb", b / double(1 << 10));
  else snprintf(buf, sizeof buf, "%lld b", static_cast<long long>(b));
  return buf;
}

void finish(Session& s) {
  if (s.finished) return;
  {
    std::lock_guard<std::mutex> g(g_mu);
    if (g_session.get() == &s) {
      s.end_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - s.t0).count();
      s.recording.store(false);
      g_active.store(false);
      g_memory.store(false);
      dispatch::g_global_included.fetch_and(static_cast<uint16_t>(~DispatchKeySet(DispatchKey::Profiler).raw()));
      g_session.reset();
      g_gen.fetch_add(1, std::memory_order_acq_rel);
    }
  }
  // Steps close at step(): the stretch after the last one is no iteration (libtorch's too).
  std::lock_guard<std::mutex> g(s.mu);
  const ThreadBuffer* main = nullptr;
  for (auto& b : s.buffers)
    if (b->index == s.main_index) main = b.get();
  std::vector<std::pair<const ThreadBuffer*, Event>> all;
  for (auto& b : s.buffers) {
    std::lock_guard<std::mutex> gb(b->mu);
    for (Event& e : b->events) all.emplace_back(b.get(), std::move(e));
    b->events.clear();
  }
  for (Event& e : s.steps) all.emplace_back(main, std::move(e));
  // In start order; sorting indices moves each event once.
  std::vector<size_t> order(all.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return all[a].second.start_ns < all[b].second.start_ns; });
  s.all.reserve(all.size());
  for (size_t i : order) s.all.push_back(std::move(all[i]));
  s.finished = true;
}

}  // namespace
}  // namespace detail

using detail::Event;
using detail::Kind;

Profile::Profile(ProfileOptions options) {
  auto s = std::make_shared<detail::Session>();
  s->opts = options;
  {
    std::lock_guard<std::mutex> g(detail::g_mu);
    TENSOR_CHECK(!detail::g_session, "profiler::Profile: another Profile is already recording; stop it (or let it go "
                 "out of scope) before starting a new one");
    detail::install_op_kernels();
    s->t0 = std::chrono::steady_clock::now();
    detail::g_session = s;
    detail::g_memory.store(options.get_profile_memory());
    detail::g_active.store(true);
    // Every thread's ops reach the Profiler kernels, which register the thread on first use.
    dispatch::g_global_included.fetch_or(DispatchKeySet(DispatchKey::Profiler).raw());
    detail::g_gen.fetch_add(1, std::memory_order_acq_rel);
  }
  session_ = s;
  detail::ThreadBuffer* b = detail::thread_buffer();  // registers this thread and turns its key on
  s->main_index = b ? b->index : 0;
}

Profile::~Profile() {
  try {
    stop();
  } catch (...) {
  }
}

void Profile::stop() {
  detail::finish(*session_);
  detail::thread_buffer();  // turns this thread's key off now
}

void Profile::step() {
  detail::Session& s = *session_;
  if (!s.recording.load()) return;
  const int64_t t =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - s.t0).count();
  Event ev;
  ev.name = "ProfilerStep#" + std::to_string(s.step_n);
  ev.kind = Kind::Step;
  ev.start_ns = s.step_start_ns;
  ev.dur_ns = ev.self_ns = t - s.step_start_ns;
  s.steps.push_back(std::move(ev));
  s.step_start_ns = t;
  ++s.step_n;
}

std::string Profile::chrome_trace() {
  using nlohmann::json;
  detail::finish(*session_);
  const detail::Session& s = *session_;
  const int64_t pid = static_cast<int64_t>(getpid());
  json evs = json::array();
  evs.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", "libtensor"}}}});
  for (const auto& b : s.buffers) {
    std::string name = b->index == s.main_index ? "thread " + std::to_string(b->os_tid) + " (profiling thread)"
                                                : "thread " + std::to_string(b->os_tid);
    if (!b->thread_name.empty()) name += " " + b->thread_name;
    evs.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", b->os_tid}, {"args", {{"name", name}}}});
    evs.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", pid}, {"tid", b->os_tid},
                   {"args", {{"sort_index", b->index}}}});
  }
  // Forward ops by sequence number, for the flow arrows to their backward events.
  std::unordered_map<int64_t, std::pair<const detail::ThreadBuffer*, const Event*>> fwd;
  for (const auto& [b, e] : s.all)
    if (e.kind == Kind::Op && e.seq >= 0 && !fwd.count(e.seq)) fwd[e.seq] = {b, &e};
  int64_t total = 0;
  for (const auto& [b, e] : s.all) {
    const int64_t tid = b ? b->os_tid : 0;
    if (!detail::timed(e.kind)) {
      total += e.bytes;
      evs.push_back({{"ph", "i"}, {"s", "t"}, {"cat", "cpu_instant_event"}, {"name", "[memory]"}, {"pid", pid},
                     {"tid", tid}, {"ts", detail::us(e.start_ns)},
                     {"args", {{"Bytes", e.bytes}, {"Total Allocated", total}}}});
      evs.push_back({{"ph", "C"}, {"name", "Memory"}, {"pid", pid}, {"ts", detail::us(e.start_ns)},
                     {"args", {{"Total Allocated", total}}}});
      continue;
    }
    json args = json::object();
    if (e.seq >= 0 && (e.kind == Kind::Op || e.kind == Kind::Backward)) args["Sequence number"] = e.seq;
    if (s.opts.get_record_shapes() && e.kind == Kind::Op) {
      args["Input Dims"] = e.shapes;
      json types = json::array();
      for (ScalarType t : e.dtypes) types.push_back(tensor::to_string(t));
      args["Input type"] = types;
    }
    if (s.opts.get_profile_memory() && e.kind != Kind::Step) args["Self Memory (bytes)"] = e.bytes;
    evs.push_back({{"ph", "X"}, {"cat", detail::cat_of(e.kind)}, {"name", e.name}, {"pid", pid}, {"tid", tid},
                   {"ts", detail::us(e.start_ns)}, {"dur", detail::us(e.dur_ns)}, {"args", args}});
    if (e.kind == Kind::Backward && e.seq >= 0) {
      auto it = fwd.find(e.seq);
      if (it != fwd.end()) {
        const auto& [fb, fe] = it->second;
        evs.push_back({{"ph", "s"}, {"cat", "fwdbwd"}, {"name", "fwdbwd"}, {"id", e.seq}, {"pid", pid},
                       {"tid", fb->os_tid}, {"ts", detail::us(fe->start_ns)}});
        evs.push_back({{"ph", "f"}, {"bp", "e"}, {"cat", "fwdbwd"}, {"name", "fwdbwd"}, {"id", e.seq},
                       {"pid", pid}, {"tid", tid}, {"ts", detail::us(e.start_ns)}});
      }
    }
  }
  json doc = {{"traceEvents", evs}, {"displayTimeUnit", "ms"},
              {"otherData", {{"profiler", "libtensor"}, {"record_shapes", s.opts.get_record_shapes()},
                             {"profile_memory", s.opts.get_profile_memory()}}}};
  return doc.dump();
}

void Profile::export_chrome_trace(const std::string& path) {
  std::string text = chrome_trace();
  std::ofstream f(path, std::ios::binary);
  TENSOR_CHECK(f.good(), "profiler::Profile::export_chrome_trace: cannot open '{}' for writing", path);
  f << text;
  f.close();
  TENSOR_CHECK(!f.fail(), "profiler::Profile::export_chrome_trace: writing '{}' failed", path);
}

namespace {
// One event's share of its name's row (key_averages, the analysis's top ops).
void add_to_average(EventAverage& r, const Event& e) {
  r.name = e.name;
  ++r.calls;
  r.self_cpu_ns += e.self_ns;
  r.cpu_total_ns += e.dur_ns;
  r.self_memory_bytes += e.bytes;
  r.memory_bytes += e.total_bytes;
}
}  // namespace

std::vector<EventAverage> Profile::key_averages(SortBy sort_by) {
  detail::finish(*session_);
  std::map<std::string, EventAverage> by_name;
  for (const auto& [b, e] : session_->all) {
    if (!detail::timed(e.kind) || e.kind == Kind::Step) continue;
    add_to_average(by_name[e.name], e);
  }
  std::vector<EventAverage> rows;
  rows.reserve(by_name.size());
  for (auto& kv : by_name) rows.push_back(std::move(kv.second));
  detail::sort_rows(rows, sort_by);
  return rows;
}

std::string Profile::table(SortBy sort_by, int64_t row_limit) {
  std::vector<EventAverage> rows = key_averages(sort_by);
  int64_t self_sum = 0;
  size_t width = 4;
  for (const auto& r : rows) self_sum += r.self_cpu_ns;
  const size_t n = row_limit < 0 ? rows.size() : std::min(rows.size(), static_cast<size_t>(row_limit));
  for (size_t i = 0; i < n; ++i) width = std::max(width, std::min<size_t>(rows[i].name.size(), 60));
  const bool mem = session_->opts.get_profile_memory();
  std::string out;
  char line[512];
  auto sep = [&] {
    out += std::string(width + (mem ? 92 : 64), '-');
    out += '\n';
  };
  sep();
  snprintf(line, sizeof line, "%-*s  %10s  %12s  %12s  %12s", static_cast<int>(width), "Name", "Self CPU %", "Self CPU",
           "CPU total", "CPU time avg");
  out += line;
  if (mem) {
    snprintf(line, sizeof line, "  %12s  %12s", "CPU Mem", "Self CPU Mem");
    out += line;
  }
  snprintf(line, sizeof line, "  %10s\n", "# of Calls");
  out += line;
  sep();
  for (size_t i = 0; i < n; ++i) {
    const EventAverage& r = rows[i];
    std::string name = r.name.size() > 60 ? r.name.substr(0, 57) + "..." : r.name;
    const double pct = self_sum > 0 ? 100.0 * static_cast<double>(r.self_cpu_ns) / static_cast<double>(self_sum) : 0.0;
    char p[16];
    snprintf(p, sizeof p, "%.2f%%", pct);
    snprintf(line, sizeof line, "%-*s  %10s  %12s  %12s  %12s", static_cast<int>(width), name.c_str(), p,
             detail::fmt_time(r.self_cpu_ns).c_str(), detail::fmt_time(r.cpu_total_ns).c_str(),
             detail::fmt_time(r.calls ? r.cpu_total_ns / r.calls : 0).c_str());
    out += line;
    if (mem) {
      snprintf(line, sizeof line, "  %12s  %12s", detail::fmt_bytes(r.memory_bytes).c_str(),
               detail::fmt_bytes(r.self_memory_bytes).c_str());
      out += line;
    }
    snprintf(line, sizeof line, "  %10lld\n", static_cast<long long>(r.calls));
    out += line;
  }
  sep();
  out += "Self CPU time total: " + detail::fmt_time(self_sum) + "\n";
  return out;
}

Analysis Profile::analysis(size_t top_n) {
  detail::finish(*session_);
  const detail::Session& s = *session_;
  Analysis a;
  a.wall_ns = s.end_ns;
  // Busy time: the union of the profiling thread's top-level events (steps left out: they
  // cover everything).
  std::vector<std::pair<int64_t, int64_t>> top;
  std::map<std::string, EventAverage> ops;
  for (const auto& [b, e] : s.all) {
    if (!b || b->index != s.main_index || !detail::timed(e.kind) || e.kind == Kind::Step) continue;
    if (e.depth == 0) top.emplace_back(e.start_ns, e.start_ns + e.dur_ns);
    if (detail::is_comm(e.name)) a.comm_ns += e.self_ns;
    else if (detail::is_copy(e.name)) a.copy_ns += e.self_ns;
    else a.compute_ns += e.self_ns;
    if (e.kind == Kind::Op || e.kind == Kind::Backward) {
      add_to_average(ops[e.name], e);
    }
  }
  std::sort(top.begin(), top.end());
  int64_t busy = 0, cur_end = 0;
  for (auto [b, e] : top) {
    if (b >= cur_end) busy += e - b;
    else if (e > cur_end) busy += e - cur_end;
    cur_end = std::max(cur_end, e);
  }
  a.idle_ns = std::max<int64_t>(0, a.wall_ns - busy);
  for (auto& kv : ops) a.top_ops.push_back(std::move(kv.second));
  detail::sort_rows(a.top_ops, SortBy::SelfCpuTime);
  if (a.top_ops.size() > top_n) a.top_ops.resize(top_n);
  return a;
}

std::string Analysis::to_string() const {
  auto pct = [&](int64_t ns) { return wall_ns > 0 ? 100.0 * static_cast<double>(ns) / static_cast<double>(wall_ns) : 0.0; };
  char line[256];
  std::string out;
  snprintf(line, sizeof line, "Wall time %s: compute %.1f%%, copies %.1f%%, communication %.1f%%, idle %.1f%%\n",
           detail::fmt_time(wall_ns).c_str(), pct(compute_ns), pct(copy_ns), pct(comm_ns), pct(idle_ns));
  out += line;
  if (!top_ops.empty()) out += "Top ops by self time:\n";
  for (size_t i = 0; i < top_ops.size(); ++i) {
    snprintf(line, sizeof line, "  %2zu. %-40s %12s self, %6lld calls\n", i + 1, top_ops[i].name.c_str(),
             detail::fmt_time(top_ops[i].self_cpu_ns).c_str(), static_cast<long long>(top_ops[i].calls));
    out += line;
  }
  return out;
}

RecordFunction::RecordFunction(std::string_view name) {
  if (!detail::active()) return;
  buffer_ = detail::thread_buffer_shared();
  if (buffer_) detail::open(buffer_.get(), std::string(name), Kind::User);
}

RecordFunction::~RecordFunction() {
  if (buffer_) detail::close(buffer_.get());
}

}  // namespace tensor::profiler
