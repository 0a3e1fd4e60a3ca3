// Custom operator registry: schema parsing, registration and boxed dispatch by name.
#include "tensor/dispatch/Library.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "src/core/Check.h"
#include "src/dispatch/Dispatcher.h"

namespace tensor::dispatch {

// ---------------------------------------------------------------------------------------
// Types and values
// ---------------------------------------------------------------------------------------

std::string type_name(ArgType t) {
  std::string s;
  switch (t.kind) {
    case ArgKind::Tensor: s = "Tensor"; break;
    case ArgKind::TensorList: s = "Tensor[]"; break;
    case ArgKind::Float: s = "float"; break;
    case ArgKind::Int: s = "int"; break;
    case ArgKind::Bool: s = "bool"; break;
    case ArgKind::IntList: s = "int[]"; break;
  }
  if (t.optional) s += '?';
  return s;
}

IValue::IValue(const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::Bool: tag_ = Tag::Bool; b_ = s.to_bool(); break;
    case Scalar::Kind::Int: tag_ = Tag::Int; i_ = s.to_long(); break;
    case Scalar::Kind::Double: tag_ = Tag::Double; d_ = s.to_double(); break;
    case Scalar::Kind::Complex:
      TENSOR_ERROR("custom op arguments cannot be complex numbers (schema types are float, int and bool); "
                   "pass the real and imaginary parts separately or as a tensor");
  }
}

const char* IValue::type_name() const {
  switch (tag_) {
    case Tag::None: return "None";
    case Tag::Tensor: return "Tensor";
    case Tag::Double: return "float";
    case Tag::Int: return "int";
    case Tag::Bool: return "bool";
    case Tag::IntList: return "int[]";
    case Tag::TensorList: return "Tensor[]";
  }
  return "?";
}

void OpResult::check_count(size_t n) const {
  if (__builtin_expect(n == size_, 1)) return;
  if (size_ == 1)
    TENSOR_ERROR("{} returns 1 tensor but the result was read as {} tensors; convert it to Tensor", op_, n);
  TENSOR_ERROR("{} returns {} tensors but the result was read as {}; {}", op_, size_, n,
               size_ == 0 ? "it returns nothing"
                          : "convert it to std::tuple<Tensor, ...> with one Tensor per return, or index it");
}

std::string Schema::to_string() const {
  std::string s = qualified_name() + "(";
  for (size_t i = 0; i < args.size(); ++i) {
    if (i) s += ", ";
    s += type_name(args[i].type) + " " + args[i].name;
  }
  s += ") -> ";
  if (num_returns == 1) return s + "Tensor";
  s += "(";
  for (size_t i = 0; i < num_returns; ++i) s += i ? ", Tensor" : "Tensor";
  return s + ")";
}

// ---------------------------------------------------------------------------------------
// Schema parsing
// ---------------------------------------------------------------------------------------

namespace {

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool is_identifier(std::string_view s) {
  if (s.empty() || !is_ident_start(s[0])) return false;
  return std::all_of(s.begin() + 1, s.end(), is_ident_char);
}

// A recursive-descent parser over one schema string. Every failure quotes the whole schema
// and the column, because schemas usually sit in a TENSOR_LIBRARY block far from the call
// that reports the error.
class SchemaParser {
 public:
  SchemaParser(std::string_view text, std::string_view default_ns) : text_(text), default_ns_(default_ns) {}

  Schema parse() {
    Schema s;
    skip_ws();
    parse_name(s);
    skip_ws();
    expect('(', "expected '(' after the op name");
    parse_args(s);
    skip_ws();
    if (!consume("->")) fail("expected '-> ReturnType' after the argument list (e.g. '-> Tensor' or '-> ()')");
    skip_ws();
    parse_returns(s);
    skip_ws();
    if (pos_ != text_.size()) fail("unexpected text after the return type");
    return s;
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    TENSOR_ERROR("malformed op schema \"{}\": {} (at column {})", text_, problem, pos_ + 1);
  }
  void skip_ws() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool peek(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  bool consume(std::string_view tok) {
    if (text_.substr(pos_, tok.size()) != tok) return false;
    pos_ += tok.size();
    return true;
  }
  void expect(char c, const char* problem) {
    if (!peek(c)) fail(problem);
    ++pos_;
  }
  std::string_view ident() {
    size_t start = pos_;
    if (pos_ < text_.size() && is_ident_start(text_[pos_]))
      while (pos_ < text_.size() && is_ident_char(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  void parse_name(Schema& s) {
    std::string_view first = ident();
    if (first.empty()) fail("expected the op name ('ns::name') at the start");
    if (consume("::")) {
      std::string_view second = ident();
      if (second.empty()) fail("expected an op name after '::'");
      s.ns = std::string(first);
      s.name = std::string(second);
    } else {
      if (default_ns_.empty()) fail("the op name must be qualified with a namespace ('ns::name')");
      s.ns = std::string(default_ns_);
      s.name = std::string(first);
    }
    // An overload name, as in libtorch ("add.out"), is part of the op's name.
    if (consume(".")) {
      std::string_view overload = ident();
      if (overload.empty()) fail("expected an overload name after '.'");
      s.name += "." + std::string(overload);
    }
  }

  ArgType parse_type(bool for_return) {
    size_t start = pos_;
    std::string_view base = ident();
    if (base.empty()) fail(for_return ? "expected a return type" : "expected an argument type");
    ArgType t;
    if (base == "Tensor") t.kind = ArgKind::Tensor;
    else if (base == "float") t.kind = ArgKind::Float;
    else if (base == "int") t.kind = ArgKind::Int;
    else if (base == "bool") t.kind = ArgKind::Bool;
    else {
      pos_ = start;
      std::string hint;
      if (base == "double" || base == "float32" || base == "float64") hint = " (schemas spell it 'float')";
      else if (base == "int64_t" || base == "long" || base == "int64" || base == "SymInt") hint = " (schemas spell it 'int')";
      fail("unknown type '" + std::string(base) + "'" + hint +
           "; supported types are Tensor, Tensor[], float, int, bool, int[], each optionally followed by '?'");
    }
    if (consume("[]")) {
      if (t.kind == ArgKind::Tensor) t.kind = ArgKind::TensorList;
      else if (t.kind == ArgKind::Int) t.kind = ArgKind::IntList;
      else {
        pos_ = start;
        fail("unsupported list type '" + std::string(base) + "[]'; only Tensor[] and int[] are supported");
      }
    } else if (peek('[')) {
      fail("sized lists such as 'int[2]' are not supported; write 'int[]'");
    }
    if (consume("?")) t.optional = true;
    if (peek('(')) fail("alias annotations such as 'Tensor(a!)' are not supported");
    return t;
  }

  void parse_args(Schema& s) {
    skip_ws();
    if (consume(")")) return;
    for (;;) {
      skip_ws();
      if (peek('*')) fail("keyword-only markers ('*') are not supported");
      ArgType t = parse_type(false);
      skip_ws();
      size_t name_pos = pos_;
      std::string_view name = ident();
      if (name.empty()) fail("expected an argument name after type '" + type_name(t) + "'");
      for (const Argument& a : s.args)
        if (a.name == name) {
          pos_ = name_pos;
          fail("duplicate argument name '" + std::string(name) + "'");
        }
      s.args.push_back(Argument{std::string(name), t});
      skip_ws();
      if (peek('=')) fail("default values are not supported (argument '" + std::string(name) + "')");
      if (consume(",")) continue;
      if (consume(")")) return;
      fail(pos_ == text_.size() ? "missing ')' at the end of the argument list"
                                : "expected ',' or ')' after argument '" + std::string(name) + "'");
    }
  }

  void parse_return_tensor(bool allow_name) {
    ArgType t = parse_type(true);
    if (t != ArgType{ArgKind::Tensor, false})
      fail("returns must be Tensor, not '" + type_name(t) + "'; return a tensor instead");
    if (!allow_name) return;
    skip_ws();
    ident();  // an optional return name inside a list, as in "(Tensor values, Tensor indices)"
  }

  void parse_returns(Schema& s) {
    if (!consume("(")) {
      parse_return_tensor(false);
      s.num_returns = 1;
      return;
    }
    s.num_returns = 0;
    skip_ws();
    if (consume(")")) return;
    for (;;) {
      skip_ws();
      parse_return_tensor(true);
      ++s.num_returns;
      skip_ws();
      if (consume(",")) continue;
      if (consume(")")) break;
      fail("expected ',' or ')' in the return list");
    }
    if (s.num_returns > kMaxReturns) fail("an op returns at most " + std::to_string(kMaxReturns) + " tensors");
  }

  std::string_view text_;
  std::string_view default_ns_;
  size_t pos_ = 0;
};

}  // namespace

Schema parse_schema(std::string_view text, std::string_view default_ns) {
  // The namespace becomes part of the op's qualified name and of to_string(), which must
  // parse back to the same schema; Library() checks its namespace the same way.
  TENSOR_CHECK(default_ns.empty() || is_identifier(default_ns),
               "parse_schema: the default namespace '{}' is not an identifier (letters, digits and '_')", default_ns);
  return SchemaParser(text, default_ns).parse();
}

// ---------------------------------------------------------------------------------------
// The registry
// ---------------------------------------------------------------------------------------

namespace detail {

struct Kernel {
  ErasedFn fn;
  BoxedKernel boxed;
};

// Created by def() and never destroyed, so OpHandles and the registry's string_view keys
// stay valid. Kernel slots are written once under the registry's unique lock and read
// lock-free by calls (release/acquire), so a call never takes a lock once it has the entry.
struct OpEntry {
  explicit OpEntry(Schema s) : schema(std::move(s)), name(schema.qualified_name()) {
    for (auto& k : kernels) k.store(nullptr, std::memory_order_relaxed);
  }
  OpHandle handle() { return OpHandle(this); }

  Schema schema;
  std::string name;
  std::atomic<const Kernel*> kernels[kNumDispatchKeys];
  std::unique_ptr<Kernel> owned[kNumDispatchKeys];
};

}  // namespace detail

namespace {

using detail::Kernel;
using detail::OpEntry;

struct Registry {
  std::shared_mutex mu;
  // Keys view the entries' own names, so lookups by string_view never allocate.
  std::unordered_map<std::string_view, std::unique_ptr<OpEntry>> ops;
};

// Leaked on purpose: ops may be called from other static destructors.
Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

std::atomic<BoxedFallback> g_fallbacks[kNumDispatchKeys];

bool is_wrapping_key(DispatchKey k) {
  return k == DispatchKey::Autograd || k == DispatchKey::Autocast || k == DispatchKey::Profiler;
}

// "CPU, CUDA" or "none".
std::string registered_keys(const OpEntry& e) {
  std::string s;
  for (int i = 1; i < kNumDispatchKeys; ++i)
    if (e.kernels[i].load(std::memory_order_acquire)) {
      if (!s.empty()) s += ", ";
      s += tensor::to_string(static_cast<DispatchKey>(i));
    }
  return s.empty() ? "none" : s;
}

std::string arg_list(const Schema& s) {
  std::string r;
  for (size_t i = 0; i < s.args.size(); ++i) {
    if (i) r += ", ";
    r += type_name(s.args[i].type) + " " + s.args[i].name;
  }
  return r;
}

[[noreturn]] void unknown_op(std::string_view name) {
  size_t sep = name.find("::");
  if (sep == std::string_view::npos)
    TENSOR_ERROR("unknown op '{}': custom op names are qualified with their namespace, as in 'myops::{}'", name, name);
  std::string_view ns = name.substr(0, sep + 2);
  std::vector<std::string> same_ns;
  {
    Registry& r = registry();
    std::shared_lock<std::shared_mutex> lock(r.mu);
    for (const auto& kv : r.ops)
      if (kv.first.substr(0, ns.size()) == ns) same_ns.emplace_back(kv.first);
  }
  std::sort(same_ns.begin(), same_ns.end());
  if (same_ns.empty())
    TENSOR_ERROR("unknown op '{}': no ops are registered in namespace '{}' (is the translation unit with its "
                 "TENSOR_LIBRARY block linked into the program?)",
                 name, ns.substr(0, sep));
  if (same_ns.size() > 20) same_ns.resize(20);
  TENSOR_ERROR("unknown op '{}'; ops registered in '{}': {}", name, ns.substr(0, sep), fmt::join(same_ns, ", "));
}

OpEntry* find_entry(std::string_view name) {
  Registry& r = registry();
  std::shared_lock<std::shared_mutex> lock(r.mu);
  auto it = r.ops.find(name);
  return it == r.ops.end() ? nullptr : it->second.get();
}

// Checks count and types before any kernel unboxes, so kernels can trust their arguments.
void check_args(const OpEntry& e, const IValue* args, size_t n) {
  const std::vector<Argument>& expected = e.schema.args;
  if (__builtin_expect(n != expected.size(), 0))
    TENSOR_ERROR("{}: expected {} argument{} ({}) but got {}", e.name, expected.size(),
                 expected.size() == 1 ? "" : "s", arg_list(e.schema), n);
  for (size_t i = 0; i < n; ++i) {
    const IValue& v = args[i];
    ArgType t = expected[i].type;
    bool ok;
    if (v.is_none()) {
      ok = t.optional;
    } else {
      switch (t.kind) {
        case ArgKind::Tensor:
          ok = v.is_tensor();
          if (ok && !t.optional && !v.to_tensor().defined())
            TENSOR_ERROR("{}: argument {} '{}' is an undefined Tensor; pass a defined tensor", e.name, i + 1,
                         expected[i].name);
          break;
        case ArgKind::TensorList:
          ok = v.is_tensor_list();
          if (ok)
            for (size_t j = 0; j < v.to_tensor_list().size(); ++j)
              if (!v.to_tensor_list()[j].defined())
                TENSOR_ERROR("{}: argument {} '{}' holds an undefined Tensor at index {}", e.name, i + 1,
                             expected[i].name, j);
          break;
        case ArgKind::Float: ok = v.is_double() || v.is_int(); break;  // ints promote, as in libtorch
        case ArgKind::Int: ok = v.is_int(); break;
        case ArgKind::Bool: ok = v.is_bool(); break;
        case ArgKind::IntList: ok = v.is_int_list(); break;
        default: ok = false;
      }
    }
    if (__builtin_expect(!ok, 0))
      TENSOR_ERROR("{}: argument {} '{}' must be {}{} but got {} (schema: {})", e.name, i + 1, expected[i].name,
                   type_name(ArgType{t.kind, false}), t.optional ? " or None" : "", v.type_name(),
                   e.schema.to_string());
  }
}

DispatchKeySet arg_key_set(const IValue* args, size_t n) {
  DispatchKeySet ks;
  for (size_t i = 0; i < n; ++i) {
    if (args[i].is_tensor()) {
      if (args[i].to_tensor().defined()) ks = ks | key_set_of(args[i].to_tensor().unsafeGetTensorImpl());
    } else if (args[i].is_tensor_list()) {
      for (const Tensor& t : args[i].to_tensor_list()) ks = ks | key_set_of(t.unsafeGetTensorImpl());
    }
  }
  // An op without tensor arguments (e.g. a factory taking sizes) runs on the CPU.
  if (ks.below(DispatchKey::Autograd).empty()) ks = ks | DispatchKeySet(DispatchKey::CPU);
  return from_local(ks, local_keys());
}

// Picks the kernel of the highest key in ks; wrapping keys without a kernel use the key's
// fallback if one is set, or else fall through to the next key down.
OpResult run(OpEntry& e, DispatchKeySet ks, const IValue* args, size_t n) {
  for (;;) {
    DispatchKey k = ks.highest();
    if (__builtin_expect(k == DispatchKey::Undefined, 0))
      TENSOR_ERROR("{}: no dispatch key left to run (the arguments' keys are all excluded on this thread); "
                   "registered: {}",
                   e.name, registered_keys(e));
    int idx = static_cast<int>(k);
    if (const Kernel* kern = e.kernels[idx].load(std::memory_order_acquire)) {
      OpResult out;
      out.reset(e.schema.num_returns, e.name.c_str());
      kern->boxed(kern->fn, args, out);
      return out;
    }
    if (!is_wrapping_key(k))
      TENSOR_ERROR("{}: no kernel registered for {}; registered: {} (register one with Library::impl(\"{}\", "
                   "DispatchKey::{}, fn), or move the inputs to a device that has one)",
                   e.name, tensor::to_string(k), registered_keys(e), e.schema.name, tensor::to_string(k));
    if (BoxedFallback fb = g_fallbacks[idx].load(std::memory_order_acquire)) return fb(e.handle(), k, args, n);
    ks = ks.below(k);
  }
}

OpEntry& entry_of(OpEntry* e) {
  if (!e) TENSOR_ERROR("dispatch::OpHandle: the handle is empty; get one with dispatch::find_op(name)");
  return *e;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Lookup and calls
// ---------------------------------------------------------------------------------------

const std::string& OpHandle::name() const { return entry_of(entry_).name; }
const Schema& OpHandle::schema() const { return entry_of(entry_).schema; }
bool OpHandle::has_kernel(DispatchKey key) const {
  int idx = static_cast<int>(key);
  if (idx <= 0 || idx >= kNumDispatchKeys) return false;
  return entry_of(entry_).kernels[idx].load(std::memory_order_acquire) != nullptr;
}

OpResult OpHandle::call_boxed(const IValue* args, size_t n) const {
  OpEntry& e = entry_of(entry_);
  check_args(e, args, n);
  return run(e, arg_key_set(args, n), args, n);
}

OpResult OpHandle::redispatch_boxed(DispatchKey self, const IValue* args, size_t n) const {
  OpEntry& e = entry_of(entry_);
  check_args(e, args, n);
  return run(e, arg_key_set(args, n).below(self), args, n);
}

OpResult OpHandle::call_with_keys(DispatchKeySet ks, const IValue* args, size_t n) const {
  OpEntry& e = entry_of(entry_);
  check_args(e, args, n);
  return run(e, ks, args, n);
}

OpHandle find_op(std::string_view name) {
  OpEntry* e = find_entry(name);
  if (!e) unknown_op(name);
  return e->handle();
}

bool has_op(std::string_view name) { return find_entry(name) != nullptr; }

std::vector<std::string> registered_ops() {
  std::vector<std::string> names;
  {
    Registry& r = registry();
    std::shared_lock<std::shared_mutex> lock(r.mu);
    names.reserve(r.ops.size());
    for (const auto& kv : r.ops) names.emplace_back(kv.first);
  }
  std::sort(names.begin(), names.end());
  return names;
}

OpResult call_boxed(std::string_view name, const IValue* args, size_t n) {
  return find_op(name).call_boxed(args, n);
}

OpResult redispatch_boxed(std::string_view name, DispatchKey self, const IValue* args, size_t n) {
  return find_op(name).redispatch_boxed(self, args, n);
}

void set_fallback(DispatchKey key, BoxedFallback fn) {
  TENSOR_CHECK(is_wrapping_key(key),
               "dispatch::set_fallback: fallbacks are for the wrapping keys Autograd, Autocast and Profiler, not {}",
               tensor::to_string(key));
  g_fallbacks[static_cast<int>(key)].store(fn, std::memory_order_release);
}

// ---------------------------------------------------------------------------------------
// Library
// ---------------------------------------------------------------------------------------

Library::Library(std::string ns) : ns_(std::move(ns)) {
  TENSOR_CHECK(is_identifier(ns_), "dispatch::Library: namespace '{}' is not an identifier (letters, digits and '_')",
               ns_);
}

Library& Library::def(std::string_view schema_text) {
  Schema schema = parse_schema(schema_text, ns_);
  TENSOR_CHECK(schema.ns == ns_,
               "Library({}).def: schema \"{}\" is in namespace '{}'; this library defines ops in '{}' only", ns_,
               schema_text, schema.ns, ns_);
  auto entry = std::make_unique<OpEntry>(std::move(schema));
  Registry& r = registry();
  std::unique_lock<std::shared_mutex> lock(r.mu);
  auto it = r.ops.find(entry->name);
  if (it != r.ops.end()) {
    std::string existing = it->second->schema.to_string();
    lock.unlock();
    TENSOR_ERROR("Library({}).def: op '{}' is already defined (as \"{}\"); each op is defined once", ns_,
                 entry->name, existing);
  }
  std::string_view key = entry->name;  // points into the entry, which the map now owns
  r.ops.emplace(key, std::move(entry));
  return *this;
}

Library& Library::impl_kernel(std::string_view name, DispatchKey key, const detail::KernelInfo& info) {
  std::string qualified;
  size_t sep = name.find("::");
  if (sep == std::string_view::npos) {
    qualified = ns_ + "::" + std::string(name);
  } else {
    TENSOR_CHECK(name.substr(0, sep) == ns_,
                 "Library({}).impl: op '{}' is outside this library's namespace '{}'", ns_, name, ns_);
    qualified = std::string(name);
  }
  int idx = static_cast<int>(key);
  TENSOR_CHECK(idx > 0 && idx < kNumDispatchKeys, "Library({}).impl: '{}' needs a real dispatch key, not {}", ns_,
               qualified, tensor::to_string(key));
  const char* key_name = tensor::to_string(key);

  Registry& r = registry();
  std::unique_lock<std::shared_mutex> lock(r.mu);
  auto it = r.ops.find(qualified);
  if (it == r.ops.end()) {
    lock.unlock();
    TENSOR_ERROR("Library({}).impl: op '{}' is not defined; call def() with its schema before impl()", ns_,
                 qualified);
  }
  OpEntry& e = *it->second;
  lock.unlock();  // the schema is immutable; only the kernel slot needs the lock (taken again below)

  const Schema& s = e.schema;
  TENSOR_CHECK(info.num_args == s.args.size(),
               "Library({}).impl: the {} kernel of '{}' takes {} parameter{} but the schema \"{}\" has {} argument{}",
               ns_, key_name, qualified, info.num_args, info.num_args == 1 ? "" : "s", s.to_string(), s.args.size(),
               s.args.size() == 1 ? "" : "s");
  for (size_t i = 0; i < info.num_args; ++i)
    TENSOR_CHECK(info.arg_types[i] == s.args[i].type,
                 "Library({}).impl: parameter {} of the {} kernel of '{}' is {} but schema argument '{}' is {} "
                 "(schema: \"{}\")",
                 ns_, i + 1, key_name, qualified, type_name(info.arg_types[i]), s.args[i].name,
                 type_name(s.args[i].type), s.to_string());
  TENSOR_CHECK(info.num_returns == s.num_returns,
               "Library({}).impl: the {} kernel of '{}' returns {} tensor{} but the schema \"{}\" returns {}", ns_,
               key_name, qualified, info.num_returns, info.num_returns == 1 ? "" : "s", s.to_string(),
               s.num_returns);

  lock.lock();
  TENSOR_CHECK(e.kernels[idx].load(std::memory_order_relaxed) == nullptr,
               "Library({}).impl: '{}' already has a {} kernel; each op has one kernel per dispatch key", ns_,
               qualified, key_name);
  e.owned[idx] = std::make_unique<Kernel>(Kernel{info.fn, info.boxed});
  e.kernels[idx].store(e.owned[idx].get(), std::memory_order_release);
  return *this;
}

}  // namespace tensor::dispatch
