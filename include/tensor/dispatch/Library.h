// Custom operator registration (TENSOR_LIBRARY, Library, dispatch::call).
//
//   Tensor axpby_cpu(const Tensor& x, const Tensor& y, double a, double b);
//   TENSOR_LIBRARY(myops, m) {
//     m.def("myops::axpby(Tensor x, Tensor y, float a, float b) -> Tensor");
//     m.impl("axpby", tensor::DispatchKey::CPU, &axpby_cpu);
//   }
//   Tensor out = tensor::dispatch::call("myops::axpby", x, y, 2.0f, 3.0f);
//
// Custom ops are boxed: call() packs its arguments into IValues, checks them against the
// schema, picks a kernel by dispatch key and unpacks them again for the typed kernel. That
// costs a few nanoseconds per argument, which built-in ops avoid with typed tables
// (src/dispatch/Dispatcher.h); custom ops trade it for registration by name at run time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor/core/Error.h"
#include "tensor/core/Scalar.h"
#include "tensor/core/Tensor.h"
#include "tensor/dispatch/DispatchKey.h"
#include "tensor/export.h"

namespace tensor::dispatch {

// ---------------------------------------------------------------------------------------
// Schema types
// ---------------------------------------------------------------------------------------

/// What a schema argument holds: Tensor, Tensor[], float, int, bool or int[].
enum class ArgKind : uint8_t { Tensor, TensorList, Float, Int, Bool, IntList };

/// A schema type: a kind, plus `?` when None is also accepted ("Tensor?", "int[]?").
struct ArgType {
  ArgKind kind = ArgKind::Tensor;
  bool optional = false;
  constexpr bool operator==(ArgType o) const { return kind == o.kind && optional == o.optional; }
  constexpr bool operator!=(ArgType o) const { return !(*this == o); }
};

/// The schema spelling of a type: "Tensor", "float?", "int[]".
TENSOR_API std::string type_name(ArgType t);

/// One named argument of a schema.
struct Argument {
  std::string name;
  ArgType type;
};

/// A parsed schema "ns::name(Type arg, ...) -> Returns". Every return is a Tensor; an op
/// returns none ("()"), one ("Tensor") or several ("(Tensor, Tensor)") of them.
struct TENSOR_API Schema {
  std::string ns;    ///< "myops"
  std::string name;  ///< "axpby" (may carry an overload suffix: "axpby.out")
  std::vector<Argument> args;
  size_t num_returns = 1;

  /// "myops::axpby".
  std::string qualified_name() const { return ns + "::" + name; }
  /// Canonical text: "myops::axpby(Tensor x, Tensor y, float a, float b) -> Tensor".
  std::string to_string() const;
};

/// Parses a schema string; throws tensor::Error quoting the schema and saying what is wrong
/// (and where) when it is malformed. `default_ns` is used when the name has no "ns::"; it must
/// be empty or an identifier.
TENSOR_API Schema parse_schema(std::string_view text, std::string_view default_ns = {});

// ---------------------------------------------------------------------------------------
// IValue: one boxed argument
// ---------------------------------------------------------------------------------------

/// A boxed value: None, Tensor, double, int64, bool, int[] or Tensor[]. Arguments of
/// dispatch::call are converted to IValues implicitly (float -> double, any integer ->
/// int64, std::nullopt -> None, std::optional<T> -> None or T).
class TENSOR_API IValue {
 public:
  enum class Tag : uint8_t { None, Tensor, Double, Int, Bool, IntList, TensorList };

  IValue() = default;
  IValue(std::nullopt_t) {}
  IValue(const Tensor& t) : tag_(Tag::Tensor), tensor_(t) {}
  IValue(Tensor&& t) : tag_(Tag::Tensor), tensor_(std::move(t)) {}
  IValue(double d) : tag_(Tag::Double) { d_ = d; }
  IValue(float f) : tag_(Tag::Double) { d_ = f; }
  IValue(bool b) : tag_(Tag::Bool) { b_ = b; }
  template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  IValue(I i) : tag_(Tag::Int) { i_ = static_cast<int64_t>(i); }
  IValue(std::vector<int64_t> v) : tag_(Tag::IntList), ints_(std::move(v)) {}
  IValue(IntArrayRef v) : tag_(Tag::IntList), ints_(v.vec()) {}
  IValue(std::vector<Tensor> v) : tag_(Tag::TensorList), tensors_(std::move(v)) {}
  IValue(TensorList v) : tag_(Tag::TensorList), tensors_(v.vec()) {}
  /// Bool, Int or Double by the scalar's kind; a complex Scalar throws (no complex args).
  IValue(const Scalar& s);
  template <class T>
  IValue(const std::optional<T>& o) : IValue(o ? IValue(*o) : IValue()) {}
  // Without these a string literal or pointer would silently become a bool.
  IValue(const char*) = delete;
  template <class T>
  IValue(T*) = delete;

  Tag tag() const { return tag_; }
  bool is_none() const { return tag_ == Tag::None; }
  bool is_tensor() const { return tag_ == Tag::Tensor; }
  bool is_double() const { return tag_ == Tag::Double; }
  bool is_int() const { return tag_ == Tag::Int; }
  bool is_bool() const { return tag_ == Tag::Bool; }
  bool is_int_list() const { return tag_ == Tag::IntList; }
  bool is_tensor_list() const { return tag_ == Tag::TensorList; }

  // The accessors assume the tag was checked (dispatch::call checks every argument against
  // the schema before a kernel unboxes it).
  const Tensor& to_tensor() const { return tensor_; }
  /// The number as a double; an Int is promoted (an int may be passed for a float argument).
  double to_double() const { return tag_ == Tag::Int ? static_cast<double>(i_) : d_; }
  int64_t to_int() const { return i_; }
  bool to_bool() const { return b_; }
  const std::vector<int64_t>& to_int_list() const { return ints_; }
  const std::vector<Tensor>& to_tensor_list() const { return tensors_; }
  // libtorch's spellings, so that ported code (ctx->saved_data["n"].toInt()) compiles as is.
  /// Same as to_tensor().
  const Tensor& toTensor() const { return tensor_; }
  /// Same as to_double().
  double toDouble() const { return to_double(); }
  /// Same as to_int().
  int64_t toInt() const { return i_; }
  /// Same as to_bool().
  bool toBool() const { return b_; }
  /// Same as to_int_list().
  const std::vector<int64_t>& toIntVector() const { return ints_; }
  /// Same as to_tensor_list().
  const std::vector<Tensor>& toTensorVector() const { return tensors_; }

  /// What the value holds, for messages: "Tensor", "float", "int", "bool", "int[]", "Tensor[]", "None".
  const char* type_name() const;

 private:
  Tag tag_ = Tag::None;
  union {
    double d_ = 0;
    int64_t i_;
    bool b_;
  };
  Tensor tensor_;
  std::vector<int64_t> ints_;
  std::vector<Tensor> tensors_;
};

// ---------------------------------------------------------------------------------------
// OpResult: what a custom op returned
// ---------------------------------------------------------------------------------------

/// The most tensors a custom op may return (kept inline so a call allocates nothing extra).
constexpr size_t kMaxReturns = 4;

/// The tensors a custom op returned. Converts to Tensor (one return) or to
/// std::tuple<Tensor, ...> (several); converting to the wrong count throws naming the op.
class TENSOR_API OpResult {
 public:
  OpResult() = default;
  size_t size() const { return size_; }
  const Tensor& operator[](size_t i) const { return values_[i]; }
  Tensor& operator[](size_t i) { return values_[i]; }

  /// The only returned tensor (throws when the op returns another count).
  Tensor tensor() const& {
    check_count(1);
    return values_[0];
  }
  Tensor tensor() && {
    check_count(1);
    return std::move(values_[0]);
  }
  operator Tensor() const& { return tensor(); }
  operator Tensor() && { return std::move(*this).tensor(); }

  /// All returned tensors as a tuple: `std::tuple<Tensor, Tensor> r = call(...)`.
  template <class... T, std::enable_if_t<(std::is_same_v<T, Tensor> && ...), int> = 0>
  operator std::tuple<T...>() && {
    check_count(sizeof...(T));
    return to_tuple<T...>(std::index_sequence_for<T...>{});
  }

  /// Used by kernels' boxed wrappers: sets the number of returns and the op name for messages.
  void reset(size_t n, const char* op) {
    size_ = static_cast<uint8_t>(n);
    op_ = op;
  }

 private:
  template <class... T, size_t... I>
  std::tuple<T...> to_tuple(std::index_sequence<I...>) {
    return std::tuple<T...>(std::move(values_[I])...);
  }
  void check_count(size_t n) const;

  Tensor values_[kMaxReturns];
  uint8_t size_ = 0;
  const char* op_ = "";
};

// ---------------------------------------------------------------------------------------
// Boxing of typed kernels (an implementation detail of Library::impl)
// ---------------------------------------------------------------------------------------

namespace detail {

/// A kernel's function pointer with its type erased; cast back by its boxed wrapper.
using ErasedFn = void (*)();
/// Unboxes `args`, calls the typed kernel `fn` and boxes its returns into `out`.
using BoxedKernel = void (*)(ErasedFn fn, const IValue* args, OpResult& out);

template <class T>
inline constexpr bool kAlwaysFalse = false;

/// How a kernel parameter type maps to a schema type and is unboxed from an IValue.
template <class T, class = void>
struct ArgTraits {
  static_assert(kAlwaysFalse<T>,
                "custom op kernels take Tensor, std::optional<Tensor>, std::vector<Tensor>, TensorList, "
                "double, float, integers, bool, std::vector<int64_t>, IntArrayRef or std::optional of those, "
                "by value or const reference");
};
template <>
struct ArgTraits<Tensor> {
  static constexpr ArgType type{ArgKind::Tensor, false};
  static const Tensor& unbox(const IValue& v) { return v.to_tensor(); }
};
template <>
struct ArgTraits<std::vector<Tensor>> {
  static constexpr ArgType type{ArgKind::TensorList, false};
  static const std::vector<Tensor>& unbox(const IValue& v) { return v.to_tensor_list(); }
};
template <>
struct ArgTraits<TensorList> {
  static constexpr ArgType type{ArgKind::TensorList, false};
  static TensorList unbox(const IValue& v) { return TensorList(v.to_tensor_list()); }
};
template <class F>
struct ArgTraits<F, std::enable_if_t<std::is_floating_point_v<F>>> {
  static constexpr ArgType type{ArgKind::Float, false};
  static F unbox(const IValue& v) { return static_cast<F>(v.to_double()); }
};
template <class I>
struct ArgTraits<I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>>> {
  static constexpr ArgType type{ArgKind::Int, false};
  static I unbox(const IValue& v) { return static_cast<I>(v.to_int()); }
};
template <>
struct ArgTraits<bool> {
  static constexpr ArgType type{ArgKind::Bool, false};
  static bool unbox(const IValue& v) { return v.to_bool(); }
};
template <>
struct ArgTraits<std::vector<int64_t>> {
  static constexpr ArgType type{ArgKind::IntList, false};
  static const std::vector<int64_t>& unbox(const IValue& v) { return v.to_int_list(); }
};
template <>
struct ArgTraits<IntArrayRef> {
  static constexpr ArgType type{ArgKind::IntList, false};
  static IntArrayRef unbox(const IValue& v) { return IntArrayRef(v.to_int_list()); }
};
template <class T>
struct ArgTraits<std::optional<T>> {
  static_assert(!ArgTraits<T>::type.optional, "nested std::optional is not a schema type");
  static constexpr ArgType type{ArgTraits<T>::type.kind, true};
  // An undefined Tensor passed for a Tensor? argument counts as None.
  static std::optional<T> unbox(const IValue& v) {
    if (v.is_none() || (v.is_tensor() && !v.to_tensor().defined())) return std::nullopt;
    return std::optional<T>(ArgTraits<T>::unbox(v));
  }
};

/// Kernel parameters are taken by value or const reference; a mutable or rvalue reference
/// could not bind to the boxed argument (which the caller still owns), so it is rejected at
/// compile time.
template <class P>
struct ParamTraits {
  static_assert(!std::is_reference_v<P> ||
                    (std::is_lvalue_reference_v<P> && std::is_const_v<std::remove_reference_t<P>>),
                "custom op kernel parameters must be taken by value or by const reference");
  using Traits = ArgTraits<std::remove_cv_t<std::remove_reference_t<P>>>;
};

/// How a kernel's return type maps to the schema's returns and is boxed.
template <class R>
struct RetTraits {
  static_assert(kAlwaysFalse<R>, "custom op kernels return void, Tensor or std::tuple<Tensor, ...>");
};
template <>
struct RetTraits<void> {
  static constexpr size_t count = 0;
};
template <>
struct RetTraits<Tensor> {
  static constexpr size_t count = 1;
  static void box(Tensor&& r, OpResult& out) { out[0] = std::move(r); }
};
template <class... T>
struct RetTraits<std::tuple<T...>> {
  static_assert((std::is_same_v<T, Tensor> && ...), "a custom op kernel's tuple return must hold only Tensors");
  static_assert(sizeof...(T) <= kMaxReturns, "a custom op returns at most kMaxReturns tensors");
  static constexpr size_t count = sizeof...(T);
  static void box(std::tuple<T...>&& r, OpResult& out) { box(std::move(r), out, std::index_sequence_for<T...>{}); }
  template <size_t... I>
  static void box(std::tuple<T...>&& r, OpResult& out, std::index_sequence<I...>) {
    ((out[I] = std::move(std::get<I>(r))), ...);
  }
};

template <class R, class... A, size_t... I>
R invoke_unboxed(R (*fn)(A...), const IValue* args, std::index_sequence<I...>) {
  return fn(ParamTraits<A>::Traits::unbox(args[I])...);
}

/// The boxed wrapper of a kernel of type R(A...); one instantiation per kernel signature.
template <class R, class... A>
void boxed_kernel(ErasedFn erased, const IValue* args, OpResult& out) {
  auto fn = reinterpret_cast<R (*)(A...)>(erased);
  if constexpr (std::is_void_v<R>) {
    invoke_unboxed(fn, args, std::index_sequence_for<A...>{});
  } else {
    RetTraits<std::remove_cv_t<R>>::box(invoke_unboxed(fn, args, std::index_sequence_for<A...>{}), out);
  }
}

/// What registration needs to know about a kernel to check it against the schema.
struct KernelInfo {
  const ArgType* arg_types;
  size_t num_args;
  size_t num_returns;
  ErasedFn fn;
  BoxedKernel boxed;
};

struct OpEntry;  // the registry's record of one op (src/dispatch/Library.cpp)

}  // namespace detail

// ---------------------------------------------------------------------------------------
// Ops and calls
// ---------------------------------------------------------------------------------------

/// A registered op, found once by name and then called without a name lookup. Cheap to copy;
/// valid for the life of the program (ops are never unregistered).
class TENSOR_API OpHandle {
 public:
  OpHandle() = default;
  /// False for a default-constructed handle.
  bool valid() const { return entry_ != nullptr; }
  /// The qualified name, "myops::axpby".
  const std::string& name() const;
  /// The parsed schema the op was defined with.
  const Schema& schema() const;
  /// True when a kernel is registered for `key`.
  bool has_kernel(DispatchKey key) const;

  /// Boxes the arguments, checks them against the schema and runs the kernel of the highest
  /// dispatch key (keys of the Tensor arguments plus the thread-local included keys, minus
  /// the excluded ones).
  template <class... Args>
  OpResult call(Args&&... args) const {
    IValue boxed[sizeof...(Args) + 1] = {IValue(std::forward<Args>(args))...};
    return call_boxed(boxed, sizeof...(Args));
  }
  /// For a wrapping kernel (Autograd, Autocast, Profiler) registered at `self`: runs the
  /// kernel of the highest key below `self`.
  template <class... Args>
  OpResult redispatch(DispatchKey self, Args&&... args) const {
    IValue boxed[sizeof...(Args) + 1] = {IValue(std::forward<Args>(args))...};
    return redispatch_boxed(self, boxed, sizeof...(Args));
  }
  /// call() on already boxed arguments.
  OpResult call_boxed(const IValue* args, size_t n) const;
  /// redispatch() on already boxed arguments.
  OpResult redispatch_boxed(DispatchKey self, const IValue* args, size_t n) const;
  /// Runs the kernel for exactly the keys in `ks` (no thread-local keys applied); the
  /// arguments are checked against the schema first.
  OpResult call_with_keys(DispatchKeySet ks, const IValue* args, size_t n) const;

 private:
  friend struct detail::OpEntry;
  explicit OpHandle(detail::OpEntry* e) : entry_(e) {}
  detail::OpEntry* entry_ = nullptr;
};

/// The op named `name` ("myops::axpby"); throws tensor::Error naming it when none is registered.
TENSOR_API OpHandle find_op(std::string_view name);
/// True when an op named `name` ("myops::axpby") is registered.
TENSOR_API bool has_op(std::string_view name);
/// Names of all registered custom ops, sorted ("myops::axpby", ...).
TENSOR_API std::vector<std::string> registered_ops();

/// call() on already boxed arguments: looks `name` up, checks `args` and dispatches.
TENSOR_API OpResult call_boxed(std::string_view name, const IValue* args, size_t n);
/// redispatch() on already boxed arguments.
TENSOR_API OpResult redispatch_boxed(std::string_view name, DispatchKey self, const IValue* args, size_t n);

/// Calls the custom op `name` ("myops::axpby") with `args`. Throws tensor::Error when the op
/// is unknown, the arguments do not match its schema, or no kernel serves their device.
template <class... Args>
OpResult call(std::string_view name, Args&&... args) {
  IValue boxed[sizeof...(Args) + 1] = {IValue(std::forward<Args>(args))...};
  return call_boxed(name, boxed, sizeof...(Args));
}

/// From a wrapping kernel registered at `self` (Autograd, Autocast, Profiler): calls the op
/// again with only the keys below `self`, e.g. from an Autograd kernel to the CPU kernel.
template <class... Args>
OpResult redispatch(std::string_view name, DispatchKey self, Args&&... args) {
  IValue boxed[sizeof...(Args) + 1] = {IValue(std::forward<Args>(args))...};
  return redispatch_boxed(name, self, boxed, sizeof...(Args));
}

/// A kernel for a wrapping key shared by every custom op (e.g. the profiler's, which records
/// the op's name and redispatches with `op.redispatch_boxed(self, args, n)`).
using BoxedFallback = OpResult (*)(const OpHandle& op, DispatchKey self, const IValue* args, size_t n);
/// Registers (or, with nullptr, removes) the fallback for a wrapping key (Autograd, Autocast,
/// Profiler). An op's own kernel for that key takes precedence over the fallback.
TENSOR_API void set_fallback(DispatchKey key, BoxedFallback fn);

// ---------------------------------------------------------------------------------------
// Library: registration
// ---------------------------------------------------------------------------------------

/// Registers the ops of one namespace. Registration is thread-safe; ops live until the
/// program exits. Use it directly or through TENSOR_LIBRARY.
class TENSOR_API Library {
 public:
  /// A library for the namespace `ns` (an identifier such as "myops").
  explicit Library(std::string ns);

  /// Declares an op from its schema, e.g. "myops::axpby(Tensor x, Tensor y, float a, float b)
  /// -> Tensor" (the "myops::" may be left out). Throws when the schema is malformed, names
  /// another namespace, or the op is already defined.
  Library& def(std::string_view schema);

  /// Registers `fn` as the kernel of op `name` ("axpby" or "myops::axpby") for `key`. Throws
  /// when the op is undefined, already has a kernel for `key`, or when fn's parameter and
  /// return types do not match the schema.
  template <class R, class... A>
  Library& impl(std::string_view name, DispatchKey key, R (*fn)(A...)) {
    static constexpr ArgType arg_types[sizeof...(A) + 1] = {detail::ParamTraits<A>::Traits::type...};
    detail::KernelInfo info{arg_types, sizeof...(A), detail::RetTraits<std::remove_cv_t<R>>::count,
                            reinterpret_cast<detail::ErasedFn>(fn), &detail::boxed_kernel<R, A...>};
    return impl_kernel(name, key, info);
  }
  /// impl() for a lambda without captures (converted to a function pointer).
  template <class F, std::enable_if_t<std::is_class_v<F>, int> = 0>
  Library& impl(std::string_view name, DispatchKey key, F fn) {
    return impl(name, key, +fn);
  }

  /// The namespace this library registers into.
  const std::string& ns() const { return ns_; }

 private:
  Library& impl_kernel(std::string_view name, DispatchKey key, const detail::KernelInfo& info);
  std::string ns_;
};

namespace detail {
/// Runs a TENSOR_LIBRARY body at static-initialization time of the user's translation unit.
struct LibraryRegistrar {
  LibraryRegistrar(const char* ns, void (*init)(Library&)) {
    Library lib(ns);
    init(lib);
  }
};
}  // namespace detail

}  // namespace tensor::dispatch

/// Defines the ops of namespace `ns`, registered when the program starts:
///   TENSOR_LIBRARY(myops, m) { m.def("myops::f(Tensor x) -> Tensor"); m.impl("f", DispatchKey::CPU, &f_cpu); }
/// The registration object lives in the translation unit that uses the macro, so that unit
/// must be linked into the program (an object file, or a static library linked whole).
#define TENSOR_LIBRARY(ns, m)                                                                     \
  static void TENSOR_LIBRARY_init_##ns(::tensor::dispatch::Library&);                              \
  static const ::tensor::dispatch::detail::LibraryRegistrar TENSOR_LIBRARY_registrar_##ns(#ns,     \
                                                                                          &TENSOR_LIBRARY_init_##ns); \
  static void TENSOR_LIBRARY_init_##ns(::tensor::dispatch::Library& m)
