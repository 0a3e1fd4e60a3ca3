// The nn layers available today, as libtorch's torch::nn modules: each `XImpl` is a Module and
// `X` its holder (TENSOR_MODULE). Conv, pooling, normalization and attention modules come in
// their own headers next to this one once their ops are merged.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor/nn/module.h"
#include "tensor/nn/options.h"

namespace tensor::nn {

// ---- activations ----

/// max(x, 0) elementwise.
class TENSOR_API ReLUImpl : public Module {
 public:
  explicit ReLUImpl(const ReLUOptions& options = {});
  Tensor forward(Tensor input);
  void pretty_print(std::ostream& stream) const override;
  ReLUOptions options;
};
TENSOR_MODULE(ReLU);

/// x * Phi(x), exact (approximate "none") or with the tanh approximation ("tanh").
class TENSOR_API GELUImpl : public Module {
 public:
  explicit GELUImpl(GELUOptions options = {});
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  GELUOptions options;
};
TENSOR_MODULE(GELU);

/// x * sigmoid(x).
class TENSOR_API SiLUImpl : public Module {
 public:
  SiLUImpl();
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
};
TENSOR_MODULE(SiLU);

class TENSOR_API TanhImpl : public Module {
 public:
  TanhImpl();
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
};
TENSOR_MODULE(Tanh);

class TENSOR_API SigmoidImpl : public Module {
 public:
  SigmoidImpl();
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
};
TENSOR_MODULE(Sigmoid);

/// softmax over options.dim().
class TENSOR_API SoftmaxImpl : public Module {
 public:
  explicit SoftmaxImpl(int64_t dim) : SoftmaxImpl(SoftmaxOptions(dim)) {}
  explicit SoftmaxImpl(const SoftmaxOptions& options);
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  SoftmaxOptions options;
};
TENSOR_MODULE(Softmax);

class TENSOR_API LogSoftmaxImpl : public Module {
 public:
  explicit LogSoftmaxImpl(int64_t dim) : LogSoftmaxImpl(LogSoftmaxOptions(dim)) {}
  explicit LogSoftmaxImpl(const LogSoftmaxOptions& options);
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  LogSoftmaxOptions options;
};
TENSOR_MODULE(LogSoftmax);

// ---- layers ----

/// y = x W^T + b. weight [out_features, in_features] ~ kaiming_uniform_(a = sqrt(5)) and
/// bias [out_features] ~ U(-1/sqrt(in_features), 1/sqrt(in_features)), as libtorch.
class TENSOR_API LinearImpl : public Module {
 public:
  LinearImpl(int64_t in_features, int64_t out_features) : LinearImpl(LinearOptions(in_features, out_features)) {}
  explicit LinearImpl(const LinearOptions& options);
  /// Re-creates and re-initializes the parameters.
  void reset();
  /// Re-initializes the parameters in place.
  void reset_parameters();
  /// input [..., in_features] -> [..., out_features].
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;

  LinearOptions options;
  Tensor weight;
  /// Undefined when options.bias() is false.
  Tensor bias;
};
TENSOR_MODULE(Linear);

/// A lookup table: indices [*] (int64 or int32) -> [*, embedding_dim]. weight ~ N(0, 1), with
/// the padding_idx row zeroed; that row never receives gradient.
class TENSOR_API EmbeddingImpl : public Module {
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingImpl(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingImpl(EmbeddingOptions options);
  void reset();
  void reset_parameters();
  Tensor forward(const Tensor& indices);
  void pretty_print(std::ostream& stream) const override;

  EmbeddingOptions options;
  Tensor weight;
};

/// The holder of EmbeddingImpl, with libtorch's from_pretrained.
class TENSOR_API Embedding : public ModuleHolder<EmbeddingImpl> {
 public:
  using ModuleHolder<EmbeddingImpl>::ModuleHolder;
  using Impl = EmbeddingImpl;
  /// An Embedding whose weight is `embeddings` [num_embeddings, embedding_dim] (shared, not
  /// copied), frozen (requires_grad false) unless options.freeze(false).
  static Embedding from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& options = {});
};

/// In training, zeroes each element with probability p and scales the rest by 1 / (1 - p);
/// the identity in eval mode.
class TENSOR_API DropoutImpl : public Module {
 public:
  explicit DropoutImpl(const DropoutOptions& options = {});
  Tensor forward(Tensor input);
  void pretty_print(std::ostream& stream) const override;
  DropoutOptions options;
};
TENSOR_MODULE(Dropout);

/// Flattens dims start_dim..end_dim into one.
class TENSOR_API FlattenImpl : public Module {
 public:
  explicit FlattenImpl(const FlattenOptions& options = {});
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  FlattenOptions options;
};
TENSOR_MODULE(Flatten);

/// Wraps a function Tensor -> Tensor as a module (for Sequential): nn::Functional(tensor::relu),
/// or with bound trailing arguments: nn::Functional(tensor::softmax, 1, std::nullopt).
class TENSOR_API FunctionalImpl : public Module {
 public:
  using Function = std::function<Tensor(Tensor)>;
  explicit FunctionalImpl(Function function);
  template <typename SomeFunction, typename... Args, typename = std::enable_if_t<(sizeof...(Args) > 0)>>
  explicit FunctionalImpl(SomeFunction original, Args&&... args)
      : FunctionalImpl(Function([original, args...](Tensor input) { return original(input, args...); })) {}
  Tensor forward(Tensor input);
  Tensor operator()(Tensor input) { return forward(std::move(input)); }
  void pretty_print(std::ostream& stream) const override;

 private:
  Function function_;
};
TENSOR_MODULE(Functional);

// ---- containers ----

namespace detail {
template <typename T>
using forward_result_t = decltype(std::declval<T&>().forward(std::declval<Tensor>()));
template <typename T, typename = void>
struct has_tensor_forward : std::false_type {};
template <typename T>
struct has_tensor_forward<T, std::void_t<forward_result_t<T>>> : std::is_convertible<forward_result_t<T>, Tensor> {};

/// The shared_ptr behind a module argument: a holder, a shared_ptr, or a module by value.
template <typename M>
auto module_ptr(M&& m) {
  using D = std::decay_t<M>;
  if constexpr (is_module_holder_v<D>) {
    return m.ptr();
  } else if constexpr (std::is_base_of_v<Module, D>) {
    return std::make_shared<D>(std::forward<M>(m));
  } else {
    static_assert(std::is_base_of_v<Module, typename D::element_type>,
                  "expected an nn::Module, a module holder or a std::shared_ptr to a module");
    return D(m);
  }
}
}  // namespace detail

namespace detail {
template <typename T, typename Seq, typename = void>
struct has_forward_n : std::false_type {};
template <typename T, size_t... I>
struct has_forward_n<T, std::index_sequence<I...>,
                     std::enable_if_t<std::is_convertible_v<
                         decltype(std::declval<T&>().forward(((void)I, std::declval<const Tensor&>())...)), Tensor>>>
    : std::true_type {};
/// The most Tensor arguments (1..8) T::forward accepts, 0 if none.
template <typename T>
constexpr size_t forward_arity() {
  size_t n = 0;
  if constexpr (has_forward_n<T, std::make_index_sequence<1>>::value) n = 1;
  if constexpr (has_forward_n<T, std::make_index_sequence<2>>::value) n = 2;
  if constexpr (has_forward_n<T, std::make_index_sequence<3>>::value) n = 3;
  if constexpr (has_forward_n<T, std::make_index_sequence<4>>::value) n = 4;
  if constexpr (has_forward_n<T, std::make_index_sequence<5>>::value) n = 5;
  if constexpr (has_forward_n<T, std::make_index_sequence<6>>::value) n = 6;
  if constexpr (has_forward_n<T, std::make_index_sequence<7>>::value) n = 7;
  if constexpr (has_forward_n<T, std::make_index_sequence<8>>::value) n = 8;
  return n;
}
template <typename T, size_t... I>
Tensor call_forward(T& m, const std::vector<Tensor>& a, std::index_sequence<I...>) {
  return m.forward(a[I]...);
}
}  // namespace detail

class AnyModule {
 public:
  /// An empty AnyModule (is_empty()).
  AnyModule() = default;
  /// Holds a module (a holder such as nn::LayerNorm, a shared_ptr to a module, or a module by
  /// value) whose forward takes Tensors and returns a Tensor.
  template <typename M, typename = std::enable_if_t<!std::is_same_v<std::decay_t<M>, AnyModule>>>
  /* implicit */ AnyModule(M&& module) {
    auto ptr = detail::module_ptr(std::forward<M>(module));
    using T = typename decltype(ptr)::element_type;
    constexpr size_t n = detail::forward_arity<T>();
    static_assert(n > 0, "AnyModule here holds modules whose forward takes Tensors and returns a Tensor");
    module_ = ptr;
    arity_ = n;
    forward_ = [ptr](const std::vector<Tensor>& args) -> Tensor {
      if constexpr (n == 1) {
        if (ptr->intercepts_forward())
          return ptr->call_intercepted(args[0], [p = ptr.get()](const Tensor& x) -> Tensor { return p->forward(x); });
      }
      return detail::call_forward(*ptr, args, std::make_index_sequence<n>());
    };
  }

  bool is_empty() const noexcept { return module_ == nullptr; }
  /// The held module (raises tensor::Error when empty).
  std::shared_ptr<Module> ptr() const {
    if (!module_) ::tensor::detail::throw_error("AnyModule::ptr: the AnyModule is empty");
    return module_;
  }
  /// The held module as T (null if it is not one).
  template <typename T>
  std::shared_ptr<T> ptr() const {
    return std::dynamic_pointer_cast<T>(ptr());
  }
  /// True when the held module is a T (a module class or a holder type such as nn::Linear).
  template <typename T>
  bool is() const noexcept {
    if constexpr (detail::is_module_holder_v<T>) {
      return dynamic_cast<typename T::ContainedType*>(module_.get()) != nullptr;
    } else {
      return dynamic_cast<T*>(module_.get()) != nullptr;
    }
  }
  /// The held module as a T (a module class, or a holder type sharing it); tensor::Error if it
  /// is not one.
  template <typename T>
  decltype(auto) get() const {
    if constexpr (detail::is_module_holder_v<T>) {
      auto p = ptr<typename T::ContainedType>();
      if (!p) ::tensor::detail::throw_error("AnyModule::get<T>: the held module is not of the requested type");
      return T(std::move(p));
    } else {
      T* p = dynamic_cast<T*>(ptr().get());
      if (!p) ::tensor::detail::throw_error("AnyModule::get<T>: the held module is not of the requested type");
      return static_cast<T&>(*p);
    }
  }
  /// Calls the held module's forward; arguments left out are passed as undefined Tensors.
  template <typename... Ts>
  Tensor forward(const Tensor& first, const Ts&... rest) const {
    if (!forward_) ::tensor::detail::throw_error("AnyModule::forward: the AnyModule is empty");
    std::vector<Tensor> args{first, Tensor(rest)...};
    if (args.size() > arity_)
      ::tensor::detail::throw_error("AnyModule::forward: too many arguments for the held module's forward");
    args.resize(arity_);
    return forward_(args);
  }
  /// libtorch's typed spelling `any.forward<Tensor>(x)`.
  template <typename ReturnType, typename... Ts>
  ReturnType forward(const Tensor& first, const Ts&... rest) const {
    static_assert(std::is_same_v<ReturnType, Tensor>, "AnyModule here returns Tensor only");
    return forward(first, rest...);
  }

 private:
  std::shared_ptr<Module> module_;
  size_t arity_ = 0;
  std::function<Tensor(const std::vector<Tensor>&)> forward_;
};

/// Runs its modules in order, each one's output feeding the next. Children are named "0", "1",
/// ... unless given a name: nn::Sequential seq(nn::Linear(4, 8), nn::ReLU(), nn::Linear(8, 1)).
class TENSOR_API SequentialImpl : public Module {
 public:
  SequentialImpl();
  template <typename First, typename... Rest,
            typename = std::enable_if_t<!std::is_base_of_v<SequentialImpl, std::decay_t<First>>>>
  explicit SequentialImpl(First&& first, Rest&&... rest) : SequentialImpl() {
    push_back(std::forward<First>(first));
    (push_back(std::forward<Rest>(rest)), ...);
  }

  /// Appends a module whose forward takes and returns a Tensor, named by its position.
  template <typename M>
  void push_back(M&& module) {
    push_back(std::to_string(size()), std::forward<M>(module));
  }
  /// Appends a module under `name`.
  template <typename M>
  void push_back(std::string name, M&& module) {
    auto ptr = detail::module_ptr(std::forward<M>(module));
    using T = typename decltype(ptr)::element_type;
    static_assert(detail::has_tensor_forward<T>::value,
                  "Sequential: a module needs forward(Tensor) -> Tensor to be chained");
    append(std::move(name), AnyModule(ptr), [ptr](Tensor x) -> Tensor {
      if (ptr->intercepts_forward())
        return ptr->call_intercepted(x, [p = ptr.get()](const Tensor& t) -> Tensor { return p->forward(t); });
      return ptr->forward(std::move(x));
    });
  }
  /// Appends every module of another Sequential (sharing them).
  void extend(const SequentialImpl& other);

  /// Chains the modules; an empty Sequential raises tensor::Error.
  Tensor forward(Tensor input);
  /// Runs only the module at `index` (bounds-checked): what forward does for that step, for
  /// wrappers that act between steps (FSDP's auto-wrapping).
  Tensor forward_at(size_t index, Tensor input);

  /// The module at `index` (bounds-checked).
  std::shared_ptr<Module> operator[](size_t index) const { return ptr(index); }
  std::shared_ptr<Module> ptr(size_t index) const;
  /// The module at `index` as T (tensor::Error if it is not one).
  template <typename T>
  std::shared_ptr<T> ptr(size_t index) const {
    auto p = std::dynamic_pointer_cast<T>(ptr(index));
    if (!p) ::tensor::detail::throw_error("Sequential::ptr<T>: the module at this index is not of the requested type");
    return p;
  }
  template <typename T>
  T& at(size_t index) const { return *ptr<T>(index); }
  size_t size() const noexcept { return modules_.size(); }
  bool is_empty() const noexcept { return modules_.empty(); }
  /// Iterating yields the modules as AnyModules, as libtorch's: `for (auto& m : *seq)
  /// m.ptr()->name()`, `m.is<nn::Linear>()`, `m.forward(x)`.
  using Iterator = std::vector<AnyModule>::iterator;
  using ConstIterator = std::vector<AnyModule>::const_iterator;
  Iterator begin() { return items_.begin(); }
  ConstIterator begin() const { return items_.begin(); }
  Iterator end() { return items_.end(); }
  ConstIterator end() const { return items_.end(); }
  void pretty_print(std::ostream& stream) const override;

 private:
  void append(std::string name, AnyModule item, std::function<Tensor(Tensor)> forward);
  std::vector<std::shared_ptr<Module>> modules_;
  std::vector<AnyModule> items_;
  // Each module's forward(Tensor) -> Tensor, called directly (AnyModule's forward packs its
  // arguments into a vector on every call).
  std::vector<std::function<Tensor(Tensor)>> forwards_;
};
TENSOR_MODULE(Sequential);

/// Holds modules in a list (children "0", "1", ...); it has no forward of its own.
class TENSOR_API ModuleListImpl : public Module {
 public:
  ModuleListImpl();
  template <typename First, typename... Rest,
            typename = std::enable_if_t<!std::is_base_of_v<ModuleListImpl, std::decay_t<First>>>>
  explicit ModuleListImpl(First&& first, Rest&&... rest) : ModuleListImpl() {
    push_back(std::forward<First>(first));
    (push_back(std::forward<Rest>(rest)), ...);
  }
  template <typename M>
  void push_back(M&& module) {
    append(detail::module_ptr(std::forward<M>(module)));
  }
  /// Appends every module of another list (sharing them).
  void extend(const ModuleListImpl& other);
  /// Inserts at `index`, renaming the children after it.
  template <typename M>
  void insert(size_t index, M&& module) {
    insert_at(index, detail::module_ptr(std::forward<M>(module)));
  }

  std::shared_ptr<Module> operator[](size_t index) const { return ptr(index); }
  std::shared_ptr<Module> ptr(size_t index) const;
  template <typename T>
  std::shared_ptr<T> ptr(size_t index) const {
    auto p = std::dynamic_pointer_cast<T>(ptr(index));
    if (!p) ::tensor::detail::throw_error("ModuleList::ptr<T>: the module at this index is not of the requested type");
    return p;
  }
  template <typename T>
  T& at(size_t index) const { return *ptr<T>(index); }
  size_t size() const noexcept { return modules_.size(); }
  bool is_empty() const noexcept { return modules_.empty(); }
  std::vector<std::shared_ptr<Module>>::const_iterator begin() const { return modules_.begin(); }
  std::vector<std::shared_ptr<Module>>::const_iterator end() const { return modules_.end(); }
  void pretty_print(std::ostream& stream) const override;

 private:
  void append(std::shared_ptr<Module> module);
  void insert_at(size_t index, std::shared_ptr<Module> module);
  std::vector<std::shared_ptr<Module>> modules_;
};
TENSOR_MODULE(ModuleList);

// ---- losses (modules over nn::functional) ----

class TENSOR_API CrossEntropyLossImpl : public Module {
 public:
  explicit CrossEntropyLossImpl(const CrossEntropyLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& stream) const override;
  CrossEntropyLossOptions options;
  Tensor weight;
};
TENSOR_MODULE(CrossEntropyLoss);

class TENSOR_API NLLLossImpl : public Module {
 public:
  explicit NLLLossImpl(const NLLLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& stream) const override;
  NLLLossOptions options;
  Tensor weight;
};
TENSOR_MODULE(NLLLoss);

class TENSOR_API MSELossImpl : public Module {
 public:
  explicit MSELossImpl(const MSELossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& stream) const override;
  MSELossOptions options;
};
TENSOR_MODULE(MSELoss);

class TENSOR_API L1LossImpl : public Module {
 public:
  explicit L1LossImpl(const L1LossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& stream) const override;
  L1LossOptions options;
};
TENSOR_MODULE(L1Loss);

class TENSOR_API BCEWithLogitsLossImpl : public Module {
 public:
  explicit BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  void pretty_print(std::ostream& stream) const override;
  BCEWithLogitsLossOptions options;
  Tensor weight, pos_weight;
};
TENSOR_MODULE(BCEWithLogitsLoss);

}  // namespace tensor::nn
