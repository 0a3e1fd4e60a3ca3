// DistributedDataParallel and its Reducer.
//
// Note [DDP reducer]
// As PyTorch's reducer.cpp, in a smaller form:
// - Construction checks that every rank has the same parameter names and shapes (a signature
//   string broadcast from rank 0, the first mismatch agreed on by an allreduce MIN so that every
//   rank raises, none waits), then broadcasts rank 0's parameters and buffers.
// - Parameters (those requiring grad) are assigned to buckets in reverse registration order, an
//   approximation of the order backward produces their gradients; one open bucket per dtype,
//   closed when it reaches its cap (the first at first_bucket_cap_mb, then bucket_cap_mb). A
//   bucket owns a flat contiguous buffer.
// - A post-accumulate-grad hook per parameter copies the accumulated gradient into its slice of
//   the bucket and, once a bucket has all its gradients, launches the bucket's communication
//   hook (an async allreduce by default). Buckets are launched strictly in index order, so all
//   ranks issue the same collectives in the same order even if gradients arrive in another one.
// - The first hook of a backward queues an end-of-backward callback (autograd::queue_callback)
//   that checks every parameter was reduced, waits for the buckets and writes the averaged
//   gradients back to param.grad(). Communication thus runs on the process group's thread while
//   backward computes the earlier layers.
// - find_unused_parameters: after forward, a walk of the autograd graph from the outputs finds
//   the parameters whose AccumulateGrad node it does not reach; the first hook of the backward
//   marks them ready with a zero contribution (or their locally accumulated gradient). A small
//   allreduce of "used on this rank" flags then tells which were used on no rank: their
//   gradients are left as they were (undefined stays undefined, as PyTorch).
// - Without find_unused_parameters, a parameter that got no gradient leaves its bucket
//   incomplete: the end-of-backward callback raises a tensor::Error naming the parameters (no
//   waiting on the incomplete bucket, so no hang), and fresh bucket buffers are made so that a
//   collective still in flight cannot write into the next iteration's.
// - no_sync: forward records that the coming backward must not synchronize; the hooks then do
//   nothing and gradients accumulate in param.grad() as usual. The next synchronized backward
//   copies the accumulated gradient into the bucket, so it reduces the sum of the micro-steps.
#include "tensor/nn/parallel/distributed.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>
#include <unordered_set>

#include "src/core/Check.h"
#include "tensor/autograd/Function.h"
#include "tensor/autograd/Node.h"
#include "tensor/autograd/autograd.h"
#include "tensor/autograd/hooks.h"
#include "tensor/tensor.h"

namespace tensor::nn::parallel {

namespace dist = ::tensor::distributed;
using Clock = std::chrono::steady_clock;

namespace {

std::string shape_string(const Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

// `s` of rank `root` on every rank (its length, then its bytes). Collective.
std::string broadcast_string(dist::ProcessGroup& pg, const std::string& s, int root) {
  Tensor len = full({1}, static_cast<int64_t>(s.size()), kInt64);
  pg.broadcast(len, dist::BroadcastOptions().root_rank(root))->wait();
  Tensor bytes = zeros({len.item<int64_t>()}, kUInt8);
  if (pg.rank() == root && !s.empty()) std::memcpy(bytes.data_ptr<uint8_t>(), s.data(), s.size());
  if (bytes.numel() > 0) pg.broadcast(bytes, dist::BroadcastOptions().root_rank(root))->wait();
  return std::string(reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>()), static_cast<size_t>(bytes.numel()));
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Works and default hooks

ChainedWork::ChainedWork(std::shared_ptr<dist::Work> inner, std::function<Tensor(const std::vector<Tensor>&)> then)
    : Work(inner ? inner->op() : std::string("chained")), inner_(std::move(inner)), then_(std::move(then)) {
  TENSOR_CHECK(inner_ != nullptr, "ChainedWork: the inner Work is null");
}

bool ChainedWork::is_completed() { return inner_->is_completed(); }

bool ChainedWork::wait(std::chrono::milliseconds timeout) {
  inner_->wait(timeout);
  std::lock_guard<std::mutex> g(mu_);
  if (!completed_) {
    outputs_ = {then_(inner_->result())};
    completed_ = true;
  }
  return true;
}

std::shared_ptr<dist::Work> completed_work(const Tensor& result) {
  auto w = std::make_shared<dist::Work>("completed", std::vector<Tensor>{result});
  w->finish();
  return w;
}

namespace default_hooks {

namespace {
const std::shared_ptr<dist::ProcessGroup>& checked_group(const std::shared_ptr<dist::ProcessGroup>& pg,
                                                         const char* hook) {
  TENSOR_CHECK(pg != nullptr, "{}: the state must be the process group to reduce over (got null)", hook);
  return pg;
}

std::shared_ptr<dist::Work> compress_hook(const std::shared_ptr<dist::ProcessGroup>& pg, GradBucket& bucket,
                                          ScalarType wire, const char* name) {
  const auto& g = checked_group(pg, name);
  Tensor buffer = bucket.buffer();
  Tensor compressed = buffer.to(wire).div_(g->size());
  auto work = g->allreduce(compressed);
  return std::make_shared<ChainedWork>(work, [buffer](const std::vector<Tensor>& out) {
    buffer.copy_(out.at(0));
    return buffer;
  });
}
}  // namespace

std::shared_ptr<dist::Work> allreduce_hook(const std::shared_ptr<dist::ProcessGroup>& pg, GradBucket& bucket) {
  const auto& g = checked_group(pg, "allreduce_hook");
  bucket.buffer().div_(g->size());
  return g->allreduce(bucket.buffer());
}

std::shared_ptr<dist::Work> bf16_compress_hook(const std::shared_ptr<dist::ProcessGroup>& pg, GradBucket& bucket) {
  return compress_hook(pg, bucket, kBFloat16, "bf16_compress_hook");
}

std::shared_ptr<dist::Work> fp16_compress_hook(const std::shared_ptr<dist::ProcessGroup>& pg, GradBucket& bucket) {
  return compress_hook(pg, bucket, kFloat16, "fp16_compress_hook");
}

}  // namespace default_hooks

// ---------------------------------------------------------------------------------------------
// Reducer

struct Reducer : std::enable_shared_from_this<Reducer> {
  struct Bucket {
    std::vector<size_t> vars;      // parameter indices, in bucket order
    std::vector<int64_t> offsets;  // element offset of each in the buffer
    ScalarType dtype = kFloat32;
    int64_t numel = 0;
    Tensor buffer;
    size_t pending = 0;
    std::shared_ptr<dist::Work> work;
  };

  std::shared_ptr<dist::ProcessGroup> pg;
  std::vector<Tensor> params;
  std::vector<std::string> names;
  std::vector<Bucket> buckets;
  std::vector<std::pair<size_t, size_t>> where;  // parameter -> (bucket, position in bucket)
  std::vector<unsigned> hook_handles;
  CommHook comm_hook;
  bool find_unused = false;
  bool bucket_view = false;  // gradient_as_bucket_view

  // Per-iteration state.
  bool expect = false;   // the last forward asked for a synchronized backward
  bool started = false;  // a hook of this backward ran (the callback is queued)
  size_t next_bucket = 0;
  std::vector<char> ready;
  std::vector<char> used;           // got a gradient on this rank this iteration
  std::vector<size_t> unused_found;  // by the graph walk after forward
  Clock::time_point t_first;
  DDPIterationStats stats;

  void make_buffers() {
    for (auto& b : buckets) b.buffer = zeros({b.numel}, TensorOptions().dtype(b.dtype).device(params[b.vars[0]].device()));
  }

  void reset_iteration() {
    started = false;
    expect = false;
    next_bucket = 0;
    std::fill(ready.begin(), ready.end(), 0);
    std::fill(used.begin(), used.end(), 0);
    for (auto& b : buckets) {
      b.pending = b.vars.size();
      b.work.reset();
    }
  }

  Tensor slice(size_t i) const {
    const auto& [bi, pos] = where[i];
    const Bucket& b = buckets[bi];
    return b.buffer.narrow(0, b.offsets[pos], params[i].numel()).view(params[i].sizes());
  }

  void on_grad_ready(size_t i) {
    if (!expect) return;  // inside no_sync, or a backward not through DDP's forward
    if (!started) {
      started = true;
      t_first = Clock::now();
      stats = DDPIterationStats();
      std::weak_ptr<Reducer> weak = shared_from_this();
      autograd::queue_callback([weak] {
        if (auto r = weak.lock()) r->finalize();
      });
      for (size_t u : unused_found) mark_ready(u, /*from_hook=*/false);
    }
    mark_ready(i, /*from_hook=*/true);
  }

  void mark_ready(size_t i, bool from_hook) {
    if (ready[i]) {
      TENSOR_ERROR(
          "DistributedDataParallel: parameter '{}' was marked ready twice in one backward: {}", names[i],
          from_hook ? "it received a gradient although the forward graph walk (find_unused_parameters) found it unused; "
                      "compute the loss only from the outputs of ddp->forward"
                    : "its gradient hook ran twice (a parameter used in two DDP forwards before one backward?)");
    }
    ready[i] = 1;
    NoGradGuard no_grad;
    const Tensor& g = params[i].grad();
    Tensor dst = slice(i);
    // With gradient_as_bucket_view the grad may already be this slice (backward accumulated
    // into it in place): nothing to copy.
    const bool is_view = g.defined() && g.data_ptr() == dst.data_ptr();
    if (g.defined()) {
      if (!is_view) dst.copy_(g);
      used[i] = 1;
    } else {
      dst.zero_();
    }
    if (from_hook) used[i] = 1;
    if (bucket_view && from_hook && !is_view) params[i].mutable_grad() = dst;
    Bucket& b = buckets[where[i].first];
    if (--b.pending == 0) launch_ready();
  }

  void launch_ready() {
    while (next_bucket < buckets.size() && buckets[next_bucket].pending == 0) {
      Bucket& b = buckets[next_bucket];
      std::vector<Tensor> ps, gs;
      for (size_t k = 0; k < b.vars.size(); ++k) {
        ps.push_back(params[b.vars[k]]);
        gs.push_back(slice(b.vars[k]));
      }
      GradBucket gb(next_bucket, b.buffer, std::move(ps), std::move(gs), next_bucket + 1 == buckets.size());
      stats.bucket_launch_s.push_back(seconds(t_first, Clock::now()));
      b.work = comm_hook ? comm_hook(gb) : default_hooks::allreduce_hook(pg, gb);
      TENSOR_CHECK(b.work != nullptr, "DistributedDataParallel: the communication hook returned a null Work for bucket {}",
                   next_bucket);
      ++next_bucket;
    }
  }

  void finalize() {
    auto t_end = Clock::now();
    stats.backward_s = seconds(t_first, t_end);
    std::vector<std::string> missing;
    for (size_t i = 0; i < params.size(); ++i)
      if (!ready[i]) missing.push_back(names[i]);
    if (!missing.empty()) {
      // Do not wait: a rank whose buckets differ would wait forever. Fresh buffers keep any
      // collective still in flight away from the next iteration's gradients.
      reset_iteration();
      make_buffers();
      std::string list;
      for (size_t k = 0; k < missing.size(); ++k) list += (k ? ", " : "") + std::string("'") + missing[k] + "'";
      TENSOR_ERROR(
          "DistributedDataParallel: backward finished but {} of {} parameters received no gradient, so their buckets "
          "were never reduced: {}. The forward output does not depend on them (a branch not taken, an unused "
          "module). Pass DDPOptions().find_unused_parameters(true) to reduce them as zero, or make the loss depend "
          "on every parameter.",
          missing.size(), params.size(), list);
    }
    // Every rank launches the same buckets in the same order, then (find_unused) the flags.
    Tensor used_global;
    std::shared_ptr<dist::Work> used_work;
    if (find_unused) {
      used_global = empty({static_cast<int64_t>(params.size())}, kInt32);
      int32_t* p = used_global.data_ptr<int32_t>();
      for (size_t i = 0; i < params.size(); ++i) p[i] = used[i] ? 1 : 0;
      used_work = pg->allreduce(used_global);
    }
    std::vector<std::shared_ptr<dist::Work>> works;
    for (auto& b : buckets) works.push_back(b.work);
    reset_iteration();
    NoGradGuard no_grad;
    for (size_t bi = 0; bi < buckets.size(); ++bi) {
      works[bi]->wait();
      auto out = works[bi]->result();
      TENSOR_CHECK(!out.empty() && out[0].defined(), "DistributedDataParallel: bucket {}'s Work has no result tensor", bi);
      Tensor r = out[0];
      Bucket& b = buckets[bi];
      if (!r.is_same(b.buffer)) {
        TENSOR_CHECK(r.numel() == b.numel,
                     "DistributedDataParallel: the communication hook's result for bucket {} has {} elements, the "
                     "bucket {}",
                     bi, r.numel(), b.numel);
        b.buffer.copy_(r.reshape({b.numel}));
      }
    }
    const int32_t* gused = nullptr;
    if (used_work) {
      used_work->wait();
      gused = used_global.data_ptr<int32_t>();
    }
    stats.wait_s = seconds(t_end, Clock::now());
    for (size_t i = 0; i < params.size(); ++i) {
      if (gused && gused[i] == 0) continue;  // used on no rank: leave its gradient alone
      Tensor& g = params[i].mutable_grad();
      Tensor s = slice(i);
      if (bucket_view) {
        if (!g.defined() || g.data_ptr() != s.data_ptr()) g = s;
      } else if (!g.defined()) {
        g = s.clone();
      } else {
        g.copy_(s);
      }
    }
  }

  ~Reducer() {
    for (size_t i = 0; i < hook_handles.size(); ++i) autograd::remove_post_accumulate_grad_hook(params[i], hook_handles[i]);
  }
};

// ---------------------------------------------------------------------------------------------
// DistributedDataParallelImpl

NoSyncGuard::NoSyncGuard(DistributedDataParallelImpl* ddp) : ddp_(ddp), prev_(ddp->require_sync_) {
  ddp_->require_sync_ = false;
}
NoSyncGuard::~NoSyncGuard() {
  if (ddp_) ddp_->require_sync_ = prev_;
}

DistributedDataParallelImpl::~DistributedDataParallelImpl() = default;

void DistributedDataParallelImpl::init(std::shared_ptr<Module> module, AnyModule any,
                                       std::shared_ptr<dist::ProcessGroup> pg, DDPOptions options) {
  TENSOR_CHECK(module != nullptr, "DistributedDataParallel: the module is null");
  TENSOR_CHECK(pg != nullptr, "DistributedDataParallel: the process group is null");
  TENSOR_CHECK(options.bucket_cap_mb() > 0 && options.first_bucket_cap_mb() > 0,
               "DistributedDataParallel: bucket_cap_mb ({}) and first_bucket_cap_mb ({}) must be positive",
               options.bucket_cap_mb(), options.first_bucket_cap_mb());
  module_ = module;
  any_ = std::move(any);
  pg_ = std::move(pg);
  options_ = options;
  register_module("module", module_);

  auto r = std::make_shared<Reducer>();
  r->pg = pg_;
  r->find_unused = options.find_unused_parameters();
  r->bucket_view = options.gradient_as_bucket_view();
  for (const auto& item : module_->named_parameters()) {
    if (!item.value().requires_grad()) continue;
    bool dup = false;  // a parameter shared by two modules is reduced once
    for (const Tensor& p : r->params) dup = dup || p.is_same(item.value());
    if (dup) continue;
    r->params.push_back(item.value());
    r->names.push_back(item.key());
  }

  // 1. Same parameters everywhere: rank 0's signature against ours, the first mismatch agreed
  //    on by every rank (allreduce MIN) so that all raise together.
  const int rank = pg_->rank();
  std::vector<std::string> mine;
  std::string sig;
  for (size_t i = 0; i < r->params.size(); ++i) {
    mine.push_back(r->names[i] + " " + shape_string(r->params[i]) + " " + to_string(r->params[i].scalar_type()));
    sig += (i ? "\n" : "") + mine.back();
  }
  const std::string theirs_s = broadcast_string(*pg_, sig, 0);
  std::vector<std::string> theirs = theirs_s.empty() ? std::vector<std::string>{} : split(theirs_s, '\n');
  int64_t first_bad = std::numeric_limits<int64_t>::max();
  size_t n = std::max(mine.size(), theirs.size());
  for (size_t i = 0; i < n; ++i)
    if (i >= mine.size() || i >= theirs.size() || mine[i] != theirs[i]) {
      first_bad = static_cast<int64_t>(i);
      break;
    }
  Tensor bad = full({1}, first_bad, kInt64);
  pg_->allreduce(bad, dist::AllreduceOptions().op(dist::ReduceOp::MIN))->wait();
  int64_t b = bad.item<int64_t>();
  if (b != std::numeric_limits<int64_t>::max()) {
    auto at = [](const std::vector<std::string>& v, int64_t i) {
      return i < static_cast<int64_t>(v.size()) ? "'" + v[i] + "'" : std::string("no parameter");
    };
    // Rank 0 agrees with itself: every rank names the lowest rank that differs from rank 0 at
    // #b, with that rank's entry and parameter count (sent by it), beside rank 0's.
    const std::string mine_b = at(mine, b) + "\n" + std::to_string(mine.size());
    const int64_t differs = at(mine, b) != at(theirs, b) ? rank : std::numeric_limits<int>::max();
    Tensor culprit = full({1}, differs, kInt64);
    pg_->allreduce(culprit, dist::AllreduceOptions().op(dist::ReduceOp::MIN))->wait();
    const int q = static_cast<int>(culprit.item<int64_t>());
    const std::vector<std::string> other = split(broadcast_string(*pg_, mine_b, q), '\n');
    TENSOR_ERROR(
        "DistributedDataParallel: the ranks' parameters differ at parameter #{} (name, shape, dtype): rank 0 has {}, "
        "rank {} has {} ({} parameters on rank 0, {} on rank {}){}. Every rank must wrap the same model.",
        b, at(theirs, b), q, other.at(0), theirs.size(), other.at(1), q,
        differs == rank && rank != q ? fmt::format("; this rank ({}) has {}", rank, at(mine, b)) : std::string());
  }

  // 2. Rank 0's parameters and buffers everywhere (issued together, waited together).
  {
    NoGradGuard no_grad;
    std::vector<std::shared_ptr<dist::Work>> works;
    for (const Tensor& p : module_->parameters()) works.push_back(pg_->broadcast(p));
    for (const Tensor& buf : module_->buffers())
      if (buf.defined() && buf.numel() > 0) works.push_back(pg_->broadcast(buf));
    for (auto& w : works) w->wait();
  }

  // 3. Buckets in reverse registration order, one open bucket per dtype.
  const double mb = 1024.0 * 1024.0;
  std::map<ScalarType, size_t> open;    // dtype -> index of its open bucket in r->buckets
  std::map<ScalarType, int64_t> bytes_in;
  std::map<ScalarType, int> closed;     // buckets of that dtype already closed
  std::vector<Reducer::Bucket> buckets;
  for (size_t k = r->params.size(); k-- > 0;) {
    const Tensor& p = r->params[k];
    ScalarType dt = p.scalar_type();
    if (!open.count(dt)) {
      open[dt] = buckets.size();
      buckets.emplace_back();
      buckets.back().dtype = dt;
      bytes_in[dt] = 0;
    }
    auto& bk = buckets[open[dt]];
    bk.vars.push_back(k);
    bk.offsets.push_back(bk.numel);
    bk.numel += p.numel();
    bytes_in[dt] += p.numel() * static_cast<int64_t>(p.element_size());
    double cap = (closed[dt] == 0 ? std::min(options.first_bucket_cap_mb(), options.bucket_cap_mb())
                                  : options.bucket_cap_mb()) * mb;
    if (static_cast<double>(bytes_in[dt]) >= cap) {
      open.erase(dt);
      closed[dt]++;
    }
  }
  r->buckets = std::move(buckets);
  r->where.resize(r->params.size());
  for (size_t bi = 0; bi < r->buckets.size(); ++bi)
    for (size_t pos = 0; pos < r->buckets[bi].vars.size(); ++pos) r->where[r->buckets[bi].vars[pos]] = {bi, pos};
  r->ready.assign(r->params.size(), 0);
  r->used.assign(r->params.size(), 0);
  r->make_buffers();
  r->reset_iteration();

  // 4. The gradient hooks.
  std::weak_ptr<Reducer> weak = r;
  for (size_t i = 0; i < r->params.size(); ++i)
    r->hook_handles.push_back(autograd::register_post_accumulate_grad_hook(r->params[i], [weak, i](const Tensor&) {
      if (auto rr = weak.lock()) rr->on_grad_ready(i);
    }));
  reducer_ = std::move(r);
}

void DistributedDataParallelImpl::set_comm_hook(CommHook hook) {
  TENSOR_CHECK(!reducer_->comm_hook, "DistributedDataParallel::register_comm_hook: a communication hook is already registered");
  TENSOR_CHECK(!reducer_->started, "DistributedDataParallel::register_comm_hook: called during backward");
  reducer_->comm_hook = std::move(hook);
}

void DistributedDataParallelImpl::pre_forward() {
  Reducer& r = *reducer_;
  if (r.started) {
    // The previous backward stopped before its end-of-backward callback (an exception in a node
    // or hook): drop its partial state; fresh buffers keep in-flight collectives away.
    r.reset_iteration();
    r.make_buffers();
  }
  r.unused_found.clear();
  r.expect = require_sync_ && GradMode::is_enabled();
  if (require_sync_ && options_.broadcast_buffers() && pg_->size() > 1) {
    NoGradGuard no_grad;
    std::vector<std::shared_ptr<dist::Work>> works;
    for (const Tensor& buf : module_->buffers())
      if (buf.defined() && buf.numel() > 0) works.push_back(pg_->broadcast(buf));
    for (auto& w : works) w->wait();
  }
}

void DistributedDataParallelImpl::post_forward(const std::vector<Tensor>& outputs) {
  Reducer& r = *reducer_;
  if (!r.expect || !options_.find_unused_parameters()) return;
  // Every node backward can reach from the outputs.
  std::unordered_set<const autograd::Node*> seen;
  std::vector<std::shared_ptr<autograd::Node>> stack;
  for (const Tensor& o : outputs)
    if (o.defined() && o.requires_grad()) {
      auto e = autograd::detail::gradient_edge(o);
      if (e.function && seen.insert(e.function.get()).second) stack.push_back(e.function);
    }
  while (!stack.empty()) {
    auto node = std::move(stack.back());
    stack.pop_back();
    for (const auto& e : node->next_edges())
      if (e.function && seen.insert(e.function.get()).second) stack.push_back(e.function);
  }
  for (size_t i = 0; i < r.params.size(); ++i) {
    auto e = autograd::detail::gradient_edge(r.params[i]);
    if (!e.function || !seen.count(e.function.get())) r.unused_found.push_back(i);
  }
}

std::vector<std::vector<size_t>> DistributedDataParallelImpl::bucket_indices() const {
  std::vector<std::vector<size_t>> out;
  for (const auto& b : reducer_->buckets) out.push_back(b.vars);
  return out;
}

DDPIterationStats DistributedDataParallelImpl::last_iteration_stats() const { return reducer_->stats; }

void DistributedDataParallelImpl::pretty_print(std::ostream& stream) const {
  stream << "DistributedDataParallel(world_size=" << pg_->size() << ", buckets=" << reducer_->buckets.size()
         << ", bucket_cap_mb=" << options_.bucket_cap_mb()
         << ", find_unused_parameters=" << (options_.find_unused_parameters() ? "true" : "false") << ")";
}

}  // namespace tensor::nn::parallel
