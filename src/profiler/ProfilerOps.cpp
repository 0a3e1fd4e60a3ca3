// The Profiler-key kernels: one per built-in op (src/ops/AllOps.h) and a boxed fallback for
// custom ops. Each opens an event named as the op, records its tensor arguments' shapes and
// dtypes when asked, and redispatches below the Profiler key.
#include <mutex>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "src/dispatch/Dispatcher.h"
#include "src/ops/AllOps.h"
#include "src/profiler/ProfilerHooks.h"
#include "tensor/dispatch/Library.h"

namespace tensor::profiler::detail {
namespace {

void add_arg(Event& ev, const Tensor& t) {
  if (!t.defined()) return;
  ev.shapes.emplace_back(t.sizes().vec());
  ev.dtypes.push_back(t.scalar_type());
}
void add_arg(Event& ev, const std::optional<Tensor>& t) {
  if (t) add_arg(ev, *t);
}
void add_arg(Event& ev, TensorList ts) {
  for (const Tensor& t : ts) add_arg(ev, t);
}
void add_arg(Event& ev, const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts) add_arg(ev, t);
}
template <class T>
void add_arg(Event&, const T&) {}

// Note [One event per op call]
// An op's Autograd kernel runs the op again below Autograd (BelowAutograd excludes that key
// and calls the op's entry point), and the Profiler key, still included, would record that
// inner call as a second event of the same op nested in the first. A Profiler kernel entered
// while the innermost open event is a call of the same op therefore records nothing: an op
// never directly contains itself otherwise.
inline bool reentered(const ThreadBuffer* b, const void* op) { return !b->stack.empty() && b->stack.back().op == op; }

// One op call's event: opened before the redispatch, closed after it (or when it throws).
class OpScope {
 public:
  template <class... A>
  OpScope(const void* op, const char* name, const A&... a) {
    b_ = thread_buffer();
    if (!b_) return;  // the profile stopped: thread_buffer() turned this thread's key off
    if (reentered(b_, op)) {
      b_ = nullptr;
      return;
    }
    Event& ev = open(b_, name, Kind::Op);
    b_->stack.back().op = op;
    if (b_->record_shapes) (add_arg(ev, a), ...);
  }
  ~OpScope() {
    if (b_) close(b_);
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  ThreadBuffer* b_ = nullptr;
};

template <class T>
constexpr bool is_tensor_arg = std::is_same_v<std::decay_t<T>, Tensor> ||
                               std::is_same_v<std::decay_t<T>, std::optional<Tensor>> ||
                               std::is_same_v<std::decay_t<T>, TensorList> ||
                               std::is_same_v<std::decay_t<T>, std::vector<Tensor>>;

template <class... A>
const TensorOptions& last_options(const A&... a) {
  return std::get<sizeof...(A) - 1>(std::forward_as_tuple(a...));
}

// The kernel of op number N (a distinct N per op, so that each has its own table pointer).
template <int N, class Sig>
struct Slot;
template <int N, class R, class... A>
struct Slot<N, R(A...)> {
  static inline dispatch::OpDef<R(A...)>* def = nullptr;
  static R kernel(A... a) {
    OpScope scope(def, def->name, a...);
    if constexpr (!(is_tensor_arg<A> || ...) && sizeof...(A) > 0 &&
                  std::is_same_v<std::decay_t<std::tuple_element_t<sizeof...(A) - 1, std::tuple<A...>>>, TensorOptions>) {
      // A factory: no tensor argument to take the backend from, so the options' device names it.
      return def->redispatch_on(last_options(a...).device(), DispatchKey::Profiler, std::forward<A>(a)...);
    } else {
      return def->redispatch(DispatchKey::Profiler, std::forward<A>(a)...);
    }
  }
};

template <int N, class Sig>
void install(dispatch::OpDef<Sig>& d) {
  Slot<N, Sig>::def = &d;
  d.set(DispatchKey::Profiler, &Slot<N, Sig>::kernel);
}

template <size_t... I>
void install_elementwise(std::index_sequence<I...>) {
  ((install<100000 + 3 * static_cast<int>(I)>(ops::unary_op(static_cast<ops::UnaryOp>(I)).functional),
    install<100001 + 3 * static_cast<int>(I)>(ops::unary_op(static_cast<ops::UnaryOp>(I)).inplace),
    install<100002 + 3 * static_cast<int>(I)>(ops::unary_op(static_cast<ops::UnaryOp>(I)).out)),
   ...);
}
template <size_t... I>
void install_binary(std::index_sequence<I...>) {
  ((install<200000 + 3 * static_cast<int>(I)>(ops::binary_op(static_cast<ops::BinaryOp>(I)).functional),
    install<200001 + 3 * static_cast<int>(I)>(ops::binary_op(static_cast<ops::BinaryOp>(I)).inplace),
    install<200002 + 3 * static_cast<int>(I)>(ops::binary_op(static_cast<ops::BinaryOp>(I)).out)),
   ...);
}

// The profiler's kernel for every custom op (dispatch::set_fallback).
dispatch::OpResult custom_op_fallback(const dispatch::OpHandle& op, DispatchKey self, const dispatch::IValue* args,
                                      size_t n) {
  ThreadBuffer* b = thread_buffer();
  const void* id = &op.name();  // the op's registry entry
  if (!b || reentered(b, id)) return op.redispatch_boxed(self, args, n);
  Event& ev = open(b, op.name(), Kind::Op);
  b->stack.back().op = id;
  if (b->record_shapes)
    for (size_t i = 0; i < n; ++i) {
      if (args[i].is_tensor()) add_arg(ev, args[i].to_tensor());
      else if (args[i].is_tensor_list()) add_arg(ev, args[i].to_tensor_list());
    }
  struct Closer {
    ThreadBuffer* b;
    ~Closer() { close(b); }
  } closer{b};
  return op.redispatch_boxed(self, args, n);
}

}  // namespace

// Re-installed by every Profile: a slot another layer cleared (tests do) is filled again.
void install_op_kernels() {
  install_elementwise(std::make_index_sequence<ops::kNumUnaryOps>{});
  install_binary(std::make_index_sequence<ops::kNumBinaryOps>{});
#define TENSOR_PROFILE_OP(table, recording) install<__COUNTER__>(ops::table);
  TENSOR_STRUCTURED_OPS(TENSOR_PROFILE_OP)
#undef TENSOR_PROFILE_OP
  dispatch::set_fallback(DispatchKey::Profiler, &custom_op_fallback);
}

}  // namespace tensor::profiler::detail
