// The autograd engine (Note [Autograd engine]) and the Tensor autograd API.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include <pthread.h>

#include "src/autograd/Functions.h"
#include "src/dispatch/Dispatcher.h"
#include "src/ops/MemoryFormat.h"
#include "src/profiler/ProfilerHooks.h"
#include "tensor/autograd/hooks.h"
#include "tensor/ops.h"

namespace tensor {
namespace autograd {

// Note [Autograd engine]
// backward counts, for every node reachable from the roots, how many edges point at it, then
// runs nodes from a ready queue once all their incoming gradients have arrived, summing
// gradients that meet at a node (its input buffer). Among ready nodes the most recently
// created runs first, which frees saved tensors early and makes runs deterministic. Everything
// is iterative: a 100,000-node chain needs no deep stack, and a backward nested inside a node's
// backward keeps each stack shallow (Note [Reentrant backward depth]). autograd::grad marks the nodes of
// its inputs as capture points and runs only the nodes that lead to one of them.

namespace {
std::atomic<uint64_t> g_sequence_nr{0};
std::atomic<bool> g_anomaly{false};

// Note [Gradient layout contract]
// As libtorch: a leaf's .grad() has the leaf's strides when the leaf is dense and non-
// overlapping (a transposed or channels-last parameter gets a transposed or channels-last
// gradient), else row-major strides. The first gradient is stolen rather than copied when
// nothing else holds it or its storage (libtorch checks only the former) and it already has
// that layout (one copy of every parameter per step saved under zero_grad(set_to_none));
// otherwise, and always under create_graph, it is copied into that layout.

/// True when t's elements tile its storage span exactly once, in some order of its dims.
bool non_overlapping_and_dense(const Tensor& t) { return layout::non_overlapping_and_dense(t.sizes(), t.strides()); }

/// libtorch's obeys_layout_contract: grad's strides are those the contract gives var.
bool obeys_layout_contract(const Tensor& grad, const Tensor& var) {
  if (grad.dim() != var.dim()) return false;
  if (!non_overlapping_and_dense(var)) return grad.is_contiguous();
  for (int64_t d = 0; d < grad.dim(); ++d) {
    if (grad.size(d) != 1 ? grad.stride(d) != var.stride(d) : grad.stride(d) == 0) return false;
  }
  return true;
}

/// A copy of grad laid out as the contract gives var.
Tensor clone_obey_contract(const Tensor& grad, const Tensor& var) {
  if (var.numel() > 0 && non_overlapping_and_dense(var))
    return empty_strided(var.sizes(), var.strides(), grad.options()).copy_(grad);
  return grad.contiguous().clone();
}

class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor leaf) : leaf_(std::move(leaf)) {
    set_num_inputs(1);
    if (__builtin_expect(profiler::detail::active(), 0)) profiler::detail::on_accumulate_grad_created(sequence_nr());
  }
  /// The leaf whose .grad() this node accumulates into (to_dot shows its shape).
  const Tensor& leaf() const { return leaf_; }
  std::string name() const override { return "AccumulateGrad"; }
  variable_list apply(variable_list&& grads) override {
    Tensor g = std::move(grads[0]);
    if (!g.defined()) return {};
    AutogradMeta& m = materialize_meta(leaf_);
    for (auto& [handle, hook] : m.hooks_) {
      Tensor r = hook(g);
      if (r.defined()) g = r;
    }
    // Note [Concurrent backward]
    // Several threads may run backward at once through graphs that share a leaf (or through one
    // retained graph), so their gradients meet here; like libtorch, each leaf's meta carries a
    // mutex held while its .grad() is read and replaced or added to, and while its one
    // AccumulateGrad node is made (gradient_edge). Nodes other than AccumulateGrad write only
    // their own engine's buffers. The hooks above run unlocked: they may take locks of their own.
    std::unique_lock<std::mutex> lock(m.mutex_);
    if (!m.grad_.defined()) {
      // A gradient may be shared with other leaves' buffers or the caller: it is taken as it
      // is only when this is its one handle (Note [Gradient layout contract]).
      // The storage must be unshared too: a view (ViewBackward's reshape of a gradient that also
      // went to another leaf, of the caller's seed, of a tensor a hook kept) is the one handle of
      // its TensorImpl but aliases the other tensor; libtorch 1.13 steals it (pytorch#34082).
      // With create_graph the gradient is copied too (libtorch's clone_obey_contract): it may be
      // the caller's seed itself, and copy_ records history.
      TensorImpl* gi = g.unsafeGetTensorImpl();
      if (GradMode::is_enabled()) {
        m.grad_ = clone_obey_contract(g, leaf_);
      } else if (gi->use_count() == 1 && gi->storage().use_count() == 1 && !g.is_conj() &&
                 g.dtype() == leaf_.dtype() && obeys_layout_contract(g, leaf_)) {
        m.grad_ = g.requires_grad() ? g.detach() : std::move(g);
      } else {
        m.grad_ = clone_obey_contract(g.detach(), leaf_);
      }
    } else if (GradMode::is_enabled()) {
      m.grad_ = m.grad_ + g;
    } else {
      m.grad_.add_(g);
    }
    if (!m.post_acc_hooks_.empty()) {
      // Copied and run unlocked: a hook reads leaf.grad() (which takes the lock) and may
      // register or remove hooks.
      auto hooks = m.post_acc_hooks_;
      lock.unlock();
      for (auto& [handle, fn] : hooks) fn(leaf_);
    }
    return {};
  }

 private:
  Tensor leaf_;
};

// Note [Engine callbacks]
// autograd::queue_callback appends to the innermost engine run on the calling thread (a node's
// apply, a hook, or a post-accumulate hook runs on that thread); run_engine runs the list once
// its ready queue is empty, before it returns, as libtorch's final callbacks. DDP finishes its
// gradient reduction there.
thread_local std::vector<std::function<void()>>* t_engine_callbacks = nullptr;

// Pre-hooks of non-leaf tensors (register_hook, retain_grad) live on their grad_fn.
struct HookEntry {
  uint32_t input_nr;
  std::function<Tensor(Tensor)> fn;
  unsigned handle;  // 0: not removable (retain_grad's)
};
std::atomic<unsigned> g_next_hook_handle{1};
std::unordered_map<Node*, std::vector<HookEntry>>& node_hooks() {
  static std::unordered_map<Node*, std::vector<HookEntry>> h;
  return h;
}
std::mutex g_hooks_mu;
std::atomic<int> g_hooked_nodes{0};  // lets ~Node skip the lock when no hook was ever registered

struct ReadyCmp {
  bool operator()(const Node* a, const Node* b) const { return a->sequence_nr() < b->sequence_nr(); }
};

void check_nan(const Node& n, const variable_list& out) {
  for (const Tensor& t : out)
    if (t.defined() && (is_floating_point(t.dtype()) || is_complex(t.dtype())) && t.numel() > 0 &&
        t.isnan().any().item<bool>())
      TENSOR_ERROR("autograd anomaly: function {} returned NaN values in its output.{}", n.name(),
                   n.creation_trace().empty() ? "" : "\nIt was created at:\n" + n.creation_trace());
}

// Runs the graph from `roots` seeded with `grads`. When `captures` is non-empty, returns the
// gradients arriving at those edges (and runs only what leads to them); otherwise accumulates.
variable_list run_engine(const std::vector<Edge>& roots, const variable_list& grads, bool keep_graph,
                         bool create_graph, const std::vector<Edge>& captures) {
  std::unordered_map<Node*, int> deps;
  std::unordered_map<Node*, variable_list> buffers;
  // 1. Dependencies, by iterative DFS.
  std::vector<Node*> stack;
  std::unordered_set<Node*> seen;
  for (const Edge& r : roots)
    if (r.valid() && seen.insert(r.function.get()).second) stack.push_back(r.function.get());
  std::vector<Node*> order;  // every reachable node
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    order.push_back(n);
    for (const Edge& e : n->next_edges()) {
      if (!e.valid()) continue;
      deps[e.function.get()]++;
      if (seen.insert(e.function.get()).second) stack.push_back(e.function.get());
    }
  }
  // 2. For grad(): the nodes that lead to a capture point.
  std::unordered_map<Node*, std::vector<std::pair<uint32_t, size_t>>> capture_at;
  for (size_t i = 0; i < captures.size(); ++i)
    if (captures[i].valid()) capture_at[captures[i].function.get()].push_back({captures[i].input_nr, i});
  std::unordered_set<Node*> needed;
  const bool capturing = !captures.empty();
  if (capturing) {
    // Reverse topological fixpoint: a node is needed if a successor is a capture point or needed.
    bool changed = true;
    while (changed) {
      changed = false;
      for (Node* n : order) {
        if (needed.count(n)) continue;
        for (const Edge& e : n->next_edges())
          if (e.valid() && (capture_at.count(e.function.get()) || needed.count(e.function.get()))) {
            needed.insert(n);
            changed = true;
            break;
          }
      }
    }
  }
  variable_list captured(captures.size());
  // 3. Seed and run.
  for (size_t i = 0; i < roots.size(); ++i) {
    if (!roots[i].valid()) continue;
    variable_list& buf = buffers[roots[i].function.get()];
    buf.resize(roots[i].function->num_inputs());
    Tensor& slot = buf[roots[i].input_nr];
    slot = slot.defined() ? slot + grads[i] : grads[i];
  }
  std::priority_queue<Node*, std::vector<Node*>, ReadyCmp> ready;
  for (const Edge& r : roots)
    if (r.valid() && deps[r.function.get()] == 0 && seen.erase(r.function.get())) ready.push(r.function.get());
  AutoGradMode mode(create_graph);
  std::vector<std::function<void()>> callbacks;
  struct CallbackScope {
    std::vector<std::function<void()>>* saved;
    explicit CallbackScope(std::vector<std::function<void()>>* mine) : saved(t_engine_callbacks) { t_engine_callbacks = mine; }
    ~CallbackScope() { t_engine_callbacks = saved; }
  } callback_scope(&callbacks);
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    variable_list inputs = std::move(buffers[n]);
    buffers.erase(n);
    inputs.resize(n->num_inputs());
    if (g_hooked_nodes.load(std::memory_order_relaxed) > 0) {
      // The hooks are copied out and run unlocked: a hook may run a backward of its own (which
      // looks hooks up again) or drop the last reference to a hooked node (whose destructor
      // erases its hooks), and either would deadlock on g_hooks_mu.
      std::vector<HookEntry> hooks;
      {
        std::lock_guard<std::mutex> g(g_hooks_mu);
        auto it = node_hooks().find(n);
        if (it != node_hooks().end()) hooks = it->second;
      }
      for (auto& h : hooks)
        if (inputs[h.input_nr].defined()) {
          Tensor r = h.fn(inputs[h.input_nr]);
          if (r.defined()) inputs[h.input_nr] = r;
        }
    }
    auto cap = capture_at.find(n);
    if (cap != capture_at.end())
      for (auto& [input_nr, idx] : cap->second) captured[idx] = inputs[input_nr];
    if (capturing && !needed.count(n)) continue;
    bool any = false;
    for (const Tensor& t : inputs) any = any || t.defined();
    variable_list outputs;
    if (any) {
      // Through the profiler, which records the node run when a profile is on (Note [Profiler
      // off costs one branch]); a test here instead made GCC inline the rest of this file
      // differently, 176 more instructions per 4-node backward (callgrind).
      outputs = profiler::detail::apply_node(*n, std::move(inputs));
      if (g_anomaly.load()) check_nan(*n, outputs);
    }
    if (!keep_graph) n->release_variables();
    const auto& edges = n->next_edges();
    for (size_t i = 0; i < edges.size(); ++i) {
      const Edge& e = edges[i];
      if (!e.valid()) continue;
      if (i < outputs.size() && outputs[i].defined()) {
        variable_list& buf = buffers[e.function.get()];
        buf.resize(e.function->num_inputs());
        Tensor& slot = buf[e.input_nr];
        slot = slot.defined() ? slot + outputs[i] : outputs[i];
      }
      if (--deps[e.function.get()] == 0) ready.push(e.function.get());
    }
  }
  // A callback may queue another (it runs after this one).
  for (size_t i = 0; i < callbacks.size(); ++i) {
    std::function<void()> cb = std::move(callbacks[i]);
    cb();
  }
  return captured;
}

// Note [Reentrant backward depth]
// A backward() or grad() called from inside a running node (a custom Function's backward, a
// hook, checkpoint's recompute) re-enters the engine on the caller's C++ stack: every level adds
// run_engine, the node's apply, the user's backward and the ops it runs. Some thousand levels
// overflow an 8 MiB stack and the process dies (the issue saw it at 8,193). The engine stays
// synchronous (the calling node needs the nested result before it can return), but it bounds
// how much nesting one stack holds: each thread counts the engine runs active on it, and a run
// that would be the (kReentrantLevelsPerThread + 1)-th starts a fresh thread with a stack of
// kReentrantStackBytes, runs the nested graph there and joins it. The new thread starts at level
// 0, so nesting of any depth costs one parked thread per kReentrantLevelsPerThread levels (157
// for 10,000) and no stack holds more than that many levels. libtorch likewise moves reentrant
// backwards past a depth limit to another thread; we do it with a plain, joined thread because
// our engine has no worker pool.
// The worker must behave as the caller would: it inherits the thread-local dispatch keys (grad
// mode, and whatever wrapping keys the caller has included or excluded) and the intra-op thread
// count, and an exception thrown in it is carried back and rethrown in the caller. Thread-local
// graph teardown (Note [Iterative graph teardown]) needs nothing: whatever the worker drops it
// drains on its own stack.
constexpr int kReentrantLevelsPerThread = 64;
constexpr size_t kReentrantStackBytes = size_t{8} << 20;
thread_local int t_engine_depth = 0;   // engine runs active on this thread
thread_local int64_t t_depth_base = 0;  // levels below the first run on this thread (for messages)

struct ReentrantTask {
  std::function<variable_list()> body;
  dispatch::LocalKeys keys;
  int num_threads;
  int64_t depth_base;
  variable_list result;
  std::exception_ptr error;
};

void* run_reentrant_task(void* arg) {
  auto* task = static_cast<ReentrantTask*>(arg);
  try {
    dispatch::local_keys() = task->keys;
    if (get_num_threads() != task->num_threads) set_num_threads(task->num_threads);
    t_depth_base = task->depth_base;
    t_engine_depth = 1;  // this run is the first level of the fresh stack
    task->result = task->body();
  } catch (...) {
    task->error = std::current_exception();
  }
  return nullptr;
}

// Runs body as one engine run, on this thread unless it already holds
// kReentrantLevelsPerThread of them (Note [Reentrant backward depth]).
variable_list run_bounded(const std::function<variable_list()>& body) {
  if (t_engine_depth < kReentrantLevelsPerThread) {
    struct Level {
      Level() { ++t_engine_depth; }
      ~Level() { --t_engine_depth; }
    } level;
    return body();
  }
  ReentrantTask task{body, dispatch::local_keys(), get_num_threads(), t_depth_base + t_engine_depth, {}, nullptr};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kReentrantStackBytes);
  pthread_t worker;
  const int rc = pthread_create(&worker, &attr, run_reentrant_task, &task);
  pthread_attr_destroy(&attr);
  TENSOR_CHECK(rc == 0,
               "backward: a reentrant backward nested {} levels deep needs a new thread (one per {} levels), but "
               "the thread could not be started: {}", task.depth_base, kReentrantLevelsPerThread,
               std::strerror(rc));
  pthread_join(worker, nullptr);
  if (task.error) std::rethrow_exception(task.error);
  return std::move(task.result);
}

Tensor root_grad(const Tensor& out, const Tensor& given, size_t i) {
  if (given.defined()) {
    TENSOR_CHECK(given.sizes() == out.sizes(), "backward: gradient {} of output {} has shape {} but the output has shape {}",
                 i, i, detail::shape_str(given.sizes()), detail::shape_str(out.sizes()));
    return given.to(out.dtype());
  }
  TENSOR_CHECK(out.numel() == 1,
               "backward: grad can be implicitly created only for scalar outputs, but output {} has shape {}; pass a "
               "gradient of that shape", i, detail::shape_str(out.sizes()));
  return ones_like(out);
}

std::vector<Edge> root_edges(const variable_list& outputs, const char* op) {
  std::vector<Edge> roots;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& t = outputs[i];
    TENSOR_CHECK(t.defined(), "{}: output {} is undefined", op, i);
    TENSOR_CHECK(t.requires_grad(), "{}: element {} of tensors does not require grad and does not have a grad_fn ({})",
                 op, i, t.describe());
    roots.push_back(gradient_edge(t));
  }
  return roots;
}
}  // namespace

// Note [Iterative graph teardown]
// Dropping the last tensor of a 100,000-op chain destroys 100,000 nodes. Done naively, each
// node's destructor destroys the next (through its edges and saved tensors) and the stack
// overflows. Instead, a destructor that runs inside another moves what it owns into a
// thread-local graveyard, and only the outermost one empties it, in a loop.
namespace {
struct Graveyard {
  std::vector<std::shared_ptr<Node>> nodes;
  std::vector<Tensor> tensors;
  bool draining = false;
};
thread_local Graveyard t_grave;
}  // namespace

const Tensor* accumulate_grad_leaf(const Node& n) {
  const auto* a = dynamic_cast<const AccumulateGrad*>(&n);
  return a ? &a->leaf() : nullptr;
}

void defer_release(Tensor t) {
  if (t.defined()) t_grave.tensors.push_back(std::move(t));
}

Node::Node() : sequence_nr_(g_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {
  // The op being recorded when a node is made is its forward op: the profiler links the two.
  if (__builtin_expect(profiler::detail::active(), 0)) profiler::detail::on_node_created(sequence_nr_);
  if (g_anomaly.load(std::memory_order_relaxed)) trace_ = "(anomaly mode: node #" + std::to_string(sequence_nr_) + ")";
}
Node::~Node() {
  if (g_hooked_nodes.load(std::memory_order_relaxed) > 0) {
    std::lock_guard<std::mutex> g(g_hooks_mu);
    if (node_hooks().erase(this)) g_hooked_nodes.fetch_sub(1, std::memory_order_relaxed);
  }
  Graveyard& gy = t_grave;
  for (Edge& e : next_edges_)
    if (e.function) gy.nodes.push_back(std::move(e.function));
  if (gy.draining) return;
  gy.draining = true;
  while (!gy.nodes.empty() || !gy.tensors.empty()) {
    if (!gy.tensors.empty()) {
      Tensor t = std::move(gy.tensors.back());
      gy.tensors.pop_back();
    } else {
      std::shared_ptr<Node> n = std::move(gy.nodes.back());
      gy.nodes.pop_back();
    }
  }
  gy.draining = false;
}

bool GradMode::is_enabled() { return !dispatch::local_keys().excluded.has(DispatchKey::Autograd); }
void GradMode::set_enabled(bool enabled) {
  auto& lk = dispatch::local_keys();
  lk.excluded = enabled ? lk.excluded.remove(DispatchKey::Autograd) : lk.excluded | DispatchKeySet(DispatchKey::Autograd);
}
bool AnomalyMode::is_enabled() { return g_anomaly.load(); }
void AnomalyMode::set_enabled(bool e) { g_anomaly.store(e); }

AutogradMeta& materialize_meta(const Tensor& t) {
  TensorImpl* impl = t.unsafeGetTensorImpl();
  if (!impl->autograd_meta()) impl->set_autograd_meta(std::make_unique<AutogradMeta>());
  return *impl->autograd_meta();
}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* m = t.unsafeGetTensorImpl()->autograd_meta();
  if (!m) return {};
  if (m->view_base_.defined()) refresh_view_history(t);  // Note [In-place on views]
  if (m->grad_fn_) return {m->grad_fn_, m->output_nr_};
  if (!m->requires_grad_) return {};
  std::lock_guard<std::mutex> lock(m->mutex_);  // Note [Concurrent backward]
  std::shared_ptr<Node> acc = m->grad_accumulator_.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t);
    m->grad_accumulator_ = acc;
  }
  return {acc, 0};
}

void set_history(const Tensor& t, const std::shared_ptr<Node>& node, uint32_t nr) {
  AutogradMeta& m = materialize_meta(t);
  m.grad_fn_ = node;
  m.output_nr_ = nr;
  m.requires_grad_ = false;
}

void backward(const variable_list& tensors, const variable_list& grad_tensors, std::optional<bool> retain_graph,
              bool create_graph) {
  TENSOR_CHECK(grad_tensors.empty() || grad_tensors.size() == tensors.size(),
               "backward: got {} tensors but {} gradients", tensors.size(), grad_tensors.size());
  std::vector<Edge> roots = root_edges(tensors, "backward");
  variable_list grads;
  for (size_t i = 0; i < tensors.size(); ++i) grads.push_back(root_grad(tensors[i], i < grad_tensors.size() ? grad_tensors[i] : Tensor(), i));
  const bool keep = retain_graph.value_or(create_graph);
  run_bounded([&] { return run_engine(roots, grads, keep, create_graph, {}); });
}

variable_list grad(const variable_list& outputs, const variable_list& inputs, const variable_list& grad_outputs,
                   std::optional<bool> retain_graph, bool create_graph, bool allow_unused) {
  TENSOR_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(),
               "grad: got {} outputs but {} grad_outputs", outputs.size(), grad_outputs.size());
  std::vector<Edge> roots = root_edges(outputs, "grad");
  variable_list grads;
  for (size_t i = 0; i < outputs.size(); ++i) grads.push_back(root_grad(outputs[i], i < grad_outputs.size() ? grad_outputs[i] : Tensor(), i));
  std::vector<Edge> caps;
  for (size_t i = 0; i < inputs.size(); ++i) {
    TENSOR_CHECK(inputs[i].defined() && inputs[i].requires_grad(), "grad: input {} ({}) does not require grad", i,
                 inputs[i].describe());
    caps.push_back(gradient_edge(inputs[i]));
  }
  const bool keep = retain_graph.value_or(create_graph);
  variable_list res = run_bounded([&] { return run_engine(roots, grads, keep, create_graph, caps); });
  for (size_t i = 0; i < res.size(); ++i)
    TENSOR_CHECK(res[i].defined() || allow_unused,
                 "grad: one of the differentiated tensors (input {}, {}) appears to not have been used in the graph; "
                 "set allow_unused=true if this is the desired behavior", i, inputs[i].describe());
  if (!create_graph)
    for (auto& r : res)
      if (r.defined()) r = r.detach();
  return res;
}

void register_node_hook(Node* n, uint32_t input_nr, std::function<Tensor(Tensor)> fn, unsigned handle) {
  std::lock_guard<std::mutex> g(g_hooks_mu);
  auto& v = node_hooks()[n];
  if (v.empty()) g_hooked_nodes.fetch_add(1, std::memory_order_relaxed);
  v.push_back({input_nr, std::move(fn), handle});
}
bool remove_node_hook(Node* n, unsigned handle) {
  std::lock_guard<std::mutex> g(g_hooks_mu);
  auto it = node_hooks().find(n);
  if (it == node_hooks().end()) return false;
  auto& v = it->second;
  for (auto e = v.begin(); e != v.end(); ++e)
    if (e->handle == handle) {
      v.erase(e);
      if (v.empty()) {
        node_hooks().erase(it);
        g_hooked_nodes.fetch_sub(1, std::memory_order_relaxed);
      }
      return true;
    }
  return false;
}
unsigned next_hook_handle() { return g_next_hook_handle.fetch_add(1, std::memory_order_relaxed); }

}  // namespace autograd

// ---- Tensor's autograd API ----
using autograd::AutogradMeta;
using autograd::materialize_meta;

Tensor& Tensor::requires_grad_(bool r) const {
  TENSOR_CHECK(!r || is_floating_point() || is_complex(),
               "requires_grad_: only tensors of floating point or complex dtype can require gradients, got {}", dtype());
  AutogradMeta* m = impl_->autograd_meta();
  TENSOR_CHECK(!(m && m->grad_fn_) || r,
               "requires_grad_: you can only change requires_grad flags of leaf tensors; use detach() for a non-leaf");
  if (r) autograd::ensure_autograd_kernels();
  if (r || m) materialize_meta(*this).requires_grad_ = r;
  return const_cast<Tensor&>(*this);  // const member, as libtorch: the handle is const, the data is not
}

const Tensor& Tensor::grad() const {
  static const Tensor undefined;
  AutogradMeta* m = impl_->autograd_meta();
  if (m && m->retained_grad_) return *m->retained_grad_;
  return m ? m->grad_ : undefined;
}
Tensor& Tensor::mutable_grad() const {
  // A non-leaf that retains its gradient keeps it in the slot its hook writes: the same tensor
  // grad() returns, as in libtorch.
  AutogradMeta& m = materialize_meta(*this);
  return m.retained_grad_ ? *m.retained_grad_ : m.grad_;
}
bool Tensor::is_leaf() const {
  AutogradMeta* m = impl_->autograd_meta();
  if (m && m->view_base_.defined()) autograd::refresh_view_history(*this);
  return !m || !m->grad_fn_;
}
const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<autograd::Node> none;
  AutogradMeta* m = impl_->autograd_meta();
  if (m && m->view_base_.defined()) autograd::refresh_view_history(*this);
  return m ? m->grad_fn_ : none;
}
uint32_t Tensor::output_nr() const {
  AutogradMeta* m = impl_->autograd_meta();
  return m ? m->output_nr_ : 0;
}
bool Tensor::retains_grad() const {
  AutogradMeta* m = impl_->autograd_meta();
  return m && m->retains_grad_;
}
void Tensor::retain_grad() const {
  TENSOR_CHECK(requires_grad(), "retain_grad: can't retain_grad on a tensor that has requires_grad=False ({})", describe());
  if (is_leaf() || retains_grad()) return;
  AutogradMeta& m = materialize_meta(*this);
  m.retains_grad_ = true;
  m.retained_grad_ = std::make_shared<Tensor>();
  std::shared_ptr<Tensor> slot = m.retained_grad_;
  autograd::register_node_hook(m.grad_fn_.get(), m.output_nr_, [slot](Tensor g) {
    *slot = slot->defined() ? *slot + g : g.detach().clone();
    return Tensor();
  });
}
unsigned Tensor::register_hook(std::function<Tensor(Tensor)> hook) const {
  TENSOR_CHECK(requires_grad(), "register_hook: cannot register a hook on a tensor that doesn't require gradient ({})",
               describe());
  AutogradMeta& m = materialize_meta(*this);
  const unsigned handle = autograd::next_hook_handle();
  if (is_leaf()) {
    m.hooks_.emplace_back(handle, std::move(hook));
    return handle;
  }
  autograd::register_node_hook(m.grad_fn_.get(), m.output_nr_, std::move(hook), handle);
  return handle;
}
void Tensor::remove_hook(unsigned handle) const {
  bool removed = false;
  if (defined() && unsafeGetTensorImpl()->autograd_meta()) {
    AutogradMeta& m = materialize_meta(*this);
    if (is_leaf()) {
      for (auto it = m.hooks_.begin(); it != m.hooks_.end(); ++it)
        if (it->first == handle) {
          m.hooks_.erase(it);
          removed = true;
          break;
        }
    } else if (m.grad_fn_) {
      removed = autograd::remove_node_hook(m.grad_fn_.get(), handle);
    }
  }
  TENSOR_CHECK(removed, "remove_hook: no hook with handle {} on this tensor ({}); was it removed already?", handle,
               defined() ? describe() : std::string("undefined"));
}
namespace autograd {
unsigned register_post_accumulate_grad_hook(const Tensor& leaf, std::function<void(const Tensor&)> hook) {
  TENSOR_CHECK(leaf.defined() && leaf.is_leaf() && leaf.requires_grad(),
               "register_post_accumulate_grad_hook: only a leaf that requires grad accumulates a gradient, got {}",
               leaf.defined() ? leaf.describe() : std::string("an undefined tensor"));
  AutogradMeta& m = materialize_meta(leaf);
  std::lock_guard<std::mutex> lock(m.mutex_);
  unsigned handle = m.next_post_acc_handle_++;
  m.post_acc_hooks_.emplace_back(handle, std::move(hook));
  return handle;
}
bool remove_post_accumulate_grad_hook(const Tensor& leaf, unsigned handle) {
  if (!leaf.defined()) return false;
  AutogradMeta& m = materialize_meta(leaf);
  std::lock_guard<std::mutex> lock(m.mutex_);
  auto& hooks = m.post_acc_hooks_;
  for (auto it = hooks.begin(); it != hooks.end(); ++it)
    if (it->first == handle) {
      hooks.erase(it);
      return true;
    }
  return false;
}
void queue_callback(std::function<void()> callback) {
  TENSOR_CHECK(t_engine_callbacks != nullptr,
               "queue_callback: no backward pass is running on this thread; call it from a hook or a node's backward");
  t_engine_callbacks->push_back(std::move(callback));
}
}  // namespace autograd

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph) const {
  autograd::backward({*this}, {gradient}, retain_graph, create_graph);
}

}  // namespace tensor
