// tensor::pickle_load: a restricted unpickler for the files Python's torch.save writes, and the
// zip and legacy containers around it (docs/io_data.md, "PyTorch .pt files").
#include "tensor/pickle.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <unordered_map>

#include "src/core/Check.h"
#include "src/io/Zip.h"
#include "tensor/autograd/autograd.h"
#include "tensor/ops.h"

namespace tensor {

namespace {

// ---- the unpickler's own values ----

// Note [A restricted unpickler]: Python's pickle is a small stack machine whose GLOBAL and REDUCE
// opcodes can call anything importable; torch.load(weights_only=True) restricts them to an allow
// list, and so do we, more tightly: a global is resolved to one of the few callables a
// state_dict needs (below) when it is read, and REDUCE only "calls" those, by building a value
// here. No other code exists to run. Values live in an arena owned by one load (so a pickle
// that makes a list contain itself leaks nothing), at most kMaxNodes of them, which bounds the
// memory by a fixed cap however the opcodes are arranged; storages are only allocated after
// their bytes were found in the file.
enum class NK { None, Bool, Int, BigInt, Double, String, Bytes, List, Tuple, Dict, Global, Storage, Recipe };
enum class GK {
  RebuildTensorV2,
  RebuildTensor,
  RebuildParameter,
  RebuildParameterWithState,
  OrderedDict,
  StorageType,
  Device
};

constexpr size_t kMaxNodes = size_t{1} << 21;  // ~300 MB of nodes at most; ~100k tensors
constexpr int kMaxDepth = 512;                 // nesting of containers in the result
constexpr int64_t kMaxDims = 64;

struct Storage;

struct Node {
  NK k = NK::None;
  int64_t i = 0;             // Int, Bool; Recipe: storage offset
  double d = 0;              // Double
  std::string s;             // String, Bytes, BigInt (little-endian bytes), Global (its name)
  std::vector<Node*> items;  // List, Tuple; Dict: key, value, key, value...
  std::unique_ptr<std::unordered_map<std::string, size_t>> index;  // Dict: key -> item position
  GK g{};                                                          // Global
  ScalarType dtype{};                                              // Global StorageType
  Storage* storage = nullptr;                                      // Storage, Recipe
  std::vector<int64_t> sizes, strides;                             // Recipe
  bool requires_grad = false;                                      // Recipe
};

// A storage named by a persistent id; its bytes are found after unpickling.
struct Storage {
  std::string key;
  ScalarType dtype{};
  int64_t numel = 0;
  Tensor base;  // 1-D, numel elements, once read
};

const char* kind_name(NK k) {
  switch (k) {
    case NK::None:
      return "None";
    case NK::Bool:
      return "bool";
    case NK::Int:
    case NK::BigInt:
      return "int";
    case NK::Double:
      return "float";
    case NK::String:
      return "str";
    case NK::Bytes:
      return "bytes";
    case NK::List:
      return "list";
    case NK::Tuple:
      return "tuple";
    case NK::Dict:
      return "dict";
    case NK::Global:
      return "global";
    case NK::Storage:
      return "storage";
    case NK::Recipe:
      return "tensor";
  }
  return "?";
}

struct StorageName {
  const char* name;
  ScalarType dtype;
};
// The typed storage classes torch.save names in persistent ids (TypedStorage._pickle_storage_type).
constexpr StorageName kStorageNames[] = {
    {"DoubleStorage", kFloat64},
    {"FloatStorage", kFloat32},
    {"HalfStorage", kFloat16},
    {"BFloat16Storage", kBFloat16},
    {"LongStorage", kInt64},
    {"IntStorage", kInt32},
    {"ShortStorage", kInt16},
    {"CharStorage", kInt8},
    {"ByteStorage", kUInt8},
    {"BoolStorage", kBool},
    {"ComplexFloatStorage", kComplex64},
    {"ComplexDoubleStorage", kComplex128},
    {"UntypedStorage", kUInt8},
};

enum class Mode { Plain, Zip, Legacy };

struct Load {
  std::string what;
  Mode mode = Mode::Plain;
  std::deque<Node> arena;
  std::map<std::string, std::unique_ptr<Storage>> storages;

  [[noreturn]] void fail(const std::string& msg) const { TENSOR_ERROR("{}: {}", what, msg); }
  Node* make(NK k) {
    if (arena.size() >= kMaxNodes) fail(fmt::format("the pickle makes more than {} values", kMaxNodes));
    arena.emplace_back();
    arena.back().k = k;
    return &arena.back();
  }
};

// The canonical form of a hashable dict key, or "" for kinds a state_dict never uses as keys.
std::string key_of(const Node* n) {
  switch (n->k) {
    case NK::None:
      return "N";
    case NK::Bool:
      return n->i ? "i1" : "i0";  // True == 1 in Python
    case NK::Int:
      return "i" + std::to_string(n->i);
    case NK::BigInt:
      return "b" + n->s;
    case NK::String:
      return "s" + n->s;
    case NK::Bytes:
      return "y" + n->s;
    case NK::Double: {
      double d = n->d;
      // 2.0 and 2 are one key in Python; the range check comes first (casting an out-of-range
      // double to an integer is undefined behavior).
      if (d > -9e18 && d < 9e18 && d == static_cast<double>(static_cast<int64_t>(d)))
        return "i" + std::to_string(static_cast<int64_t>(d));
      return "d" + fmt::format("{}", d);
    }
    default:
      return "";
  }
}

class Unpickler {
 public:
  Unpickler(Load& load, const unsigned char* data, size_t size) : L_(load), p_(data), end_(data + size) {}

  /// Runs to STOP; returns the result. `consumed()` is then the pickle's length.
  Node* run() {
    const unsigned char* start = p_;
    while (true) {
      size_t at = static_cast<size_t>(p_ - start);
      unsigned char op = byte("an opcode");
      switch (op) {
        case 0x80: {  // PROTO
          unsigned char v = byte("PROTO");
          if (v < 2 || v > 5) fail(at, fmt::format("pickle protocol {} is not supported (2 to 5 are)", v));
          break;
        }
        case 0x95:
          take(8, "FRAME");
          break;  // FRAME: a length hint only
        case '.': {
          if (stack_.size() != 1 || !marks_.empty())
            fail(at, fmt::format("STOP with {} values on the stack (expected one)", stack_.size()));
          consumed_ = static_cast<size_t>(p_ - start);
          return stack_.back();
        }
        case '(':
          marks_.push_back(stack_.size());
          break;
        case '}':
          push(L_.make(NK::Dict));
          break;
        case ']':
          push(L_.make(NK::List));
          break;
        case ')':
          push(L_.make(NK::Tuple));
          break;
        case 't': {
          Node* t = L_.make(NK::Tuple);
          t->items = pop_mark(at);
          push(t);
          break;
        }
        case 0x85:
        case 0x86:
        case 0x87: {  // TUPLE1..3
          size_t n = op - 0x84u;
          need_stack(at, n);
          Node* t = L_.make(NK::Tuple);
          t->items.assign(stack_.end() - static_cast<ptrdiff_t>(n), stack_.end());
          stack_.resize(stack_.size() - n);
          push(t);
          break;
        }
        case 'N':
          push(L_.make(NK::None));
          break;
        case 0x88:
        case 0x89: {  // NEWTRUE NEWFALSE
          Node* b = L_.make(NK::Bool);
          b->i = op == 0x88;
          push(b);
          break;
        }
        case 'J':
          push_int(static_cast<int32_t>(le(take(4, "BININT"), 4)));
          break;
        case 'K':
          push_int(byte("BININT1"));
          break;
        case 'M':
          push_int(static_cast<int64_t>(le(take(2, "BININT2"), 2)));
          break;
        case 0x8a:
          long_int(byte("LONG1"));
          break;
        case 0x8b:
          long_int(le(take(4, "LONG4"), 4));
          break;
        case 'G': {
          const unsigned char* b = take(8, "BINFLOAT");
          uint64_t bits = 0;
          for (int i = 0; i < 8; ++i) bits = (bits << 8) | b[i];  // big-endian
          Node* d = L_.make(NK::Double);
          std::memcpy(&d->d, &bits, 8);
          push(d);
          break;
        }
        case 'X':
          str(NK::String, le(take(4, "BINUNICODE"), 4));
          break;
        case 0x8c:
          str(NK::String, byte("SHORT_BINUNICODE"));
          break;
        case 0x8d:
          str(NK::String, le(take(8, "BINUNICODE8"), 8));
          break;
        case 'T':
          str(NK::String, le(take(4, "BINSTRING"), 4));
          break;  // py2 str: latin-1 bytes
        case 'U':
          str(NK::String, byte("SHORT_BINSTRING"));
          break;
        case 'B':
          str(NK::Bytes, le(take(4, "BINBYTES"), 4));
          break;
        case 'C':
          str(NK::Bytes, byte("SHORT_BINBYTES"));
          break;
        case 0x8e:
          str(NK::Bytes, le(take(8, "BINBYTES8"), 8));
          break;
        case 'q':
          memo_put(byte("BINPUT"), at);
          break;
        case 'r':
          memo_put(le(take(4, "LONG_BINPUT"), 4), at);
          break;
        case 0x94:
          memo_put(memo_.size(), at);
          break;  // MEMOIZE
        case 'h':
          memo_get(byte("BINGET"), at);
          break;
        case 'j':
          memo_get(le(take(4, "LONG_BINGET"), 4), at);
          break;
        case '0':
          need_stack(at, 1);
          stack_.pop_back();
          break;  // POP
        case '1':
          pop_mark(at);
          break;  // POP_MARK
        case '2':
          need_stack(at, 1);
          push(stack_.back());
          break;     // DUP
        case 'c': {  // GLOBAL "module\nname\n"
          std::string module = line("GLOBAL"), name = line("GLOBAL");
          push(global(module, name, at));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          need_stack(at, 2);
          Node* name = stack_.back();
          Node* module = stack_[stack_.size() - 2];
          stack_.resize(stack_.size() - 2);
          if (module->k != NK::String || name->k != NK::String) fail(at, "STACK_GLOBAL expects two strings");
          push(global(module->s, name->s, at));
          break;
        }
        case 'R':
        case 0x81: {  // REDUCE, NEWOBJ: callable, args -> result
          need_stack(at, 2);
          Node* args = stack_.back();
          Node* fn = stack_[stack_.size() - 2];
          stack_.resize(stack_.size() - 2);
          push(reduce(fn, args, at));
          break;
        }
        case 'b': {  // BUILD: obj, state -> obj with state set
          need_stack(at, 2);
          Node* state = stack_.back();
          stack_.pop_back();
          Node* obj = stack_.back();
          // An OrderedDict's state is its instance __dict__ (a state_dict's `_metadata`, the
          // module versions), which loading weights does not need.
          if (obj->k != NK::Dict)
            fail(at, fmt::format("BUILD on a {} (with a {} state) is not supported", kind_name(obj->k),
                                 kind_name(state->k)));
          break;
        }
        case 's': {  // SETITEM
          need_stack(at, 3);
          Node* dict = stack_[stack_.size() - 3];
          set_item(dict, stack_[stack_.size() - 2], stack_.back(), at);
          stack_.resize(stack_.size() - 2);
          break;
        }
        case 'u': {  // SETITEMS
          std::vector<Node*> kv = pop_mark(at);
          if (kv.size() % 2) fail(at, "SETITEMS with an odd number of values");
          need_stack(at, 1);
          for (size_t i = 0; i < kv.size(); i += 2) set_item(stack_.back(), kv[i], kv[i + 1], at);
          break;
        }
        case 'a': {  // APPEND
          need_stack(at, 2);
          Node* v = stack_.back();
          stack_.pop_back();
          append(stack_.back(), {v}, at);
          break;
        }
        case 'e': {  // APPENDS
          std::vector<Node*> vs = pop_mark(at);
          need_stack(at, 1);
          append(stack_.back(), vs, at);
          break;
        }
        case 'Q': {  // BINPERSID
          need_stack(at, 1);
          Node* pid = stack_.back();
          stack_.pop_back();
          push(persistent_load(pid, at));
          break;
        }
        default:
          fail(at, fmt::format("opcode 0x{:02x} ('{}') is not supported by this restricted unpickler", op,
                               op >= 0x20 && op < 0x7f ? std::string(1, static_cast<char>(op)) : std::string("?")));
      }
    }
  }

  size_t consumed() const { return consumed_; }

 private:
  [[noreturn]] void fail(size_t at, const std::string& msg) const {
    L_.fail(fmt::format("at byte {} of the pickle: {}", at, msg));
  }
  [[noreturn]] void truncated(const char* where) const {
    L_.fail(fmt::format("the pickle ends inside {} (truncated file?)", where));
  }
  unsigned char byte(const char* where) {
    if (p_ >= end_) truncated(where);
    return *p_++;
  }
  const unsigned char* take(uint64_t n, const char* where) {
    if (n > static_cast<uint64_t>(end_ - p_)) truncated(where);
    const unsigned char* b = p_;
    p_ += n;
    return b;
  }
  static uint64_t le(const unsigned char* b, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | b[i];
    return v;
  }
  std::string line(const char* where) {
    const unsigned char* nl = static_cast<const unsigned char*>(std::memchr(p_, '\n', static_cast<size_t>(end_ - p_)));
    if (!nl) truncated(where);
    std::string s(reinterpret_cast<const char*>(p_), static_cast<size_t>(nl - p_));
    p_ = nl + 1;
    return s;
  }
  void push(Node* n) { stack_.push_back(n); }
  void need_stack(size_t at, size_t n) {
    size_t floor = marks_.empty() ? 0 : marks_.back();
    if (stack_.size() < floor + n) fail(at, "an opcode needs more values than the stack holds");
  }
  std::vector<Node*> pop_mark(size_t at) {
    if (marks_.empty()) fail(at, "no MARK to pop to");
    size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Node*> items(stack_.begin() + static_cast<ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  void push_int(int64_t v) {
    Node* n = L_.make(NK::Int);
    n->i = v;
    push(n);
  }
  // LONG1/LONG4: a little-endian two's-complement integer of n bytes.
  void long_int(uint64_t n) {
    const unsigned char* b = take(n, "LONG");
    if (n <= 8) {
      uint64_t v = le(b, static_cast<int>(n));
      if (n > 0 && n < 8 && (b[n - 1] & 0x80)) v |= ~uint64_t{0} << (8 * n);  // sign-extend
      push_int(static_cast<int64_t>(v));
      return;
    }
    Node* big = L_.make(NK::BigInt);
    big->s.assign(reinterpret_cast<const char*>(b), n);
    push(big);
  }
  void str(NK k, uint64_t n) {
    const unsigned char* b = take(n, k == NK::Bytes ? "a bytes value" : "a string");
    Node* s = L_.make(k);
    s->s.assign(reinterpret_cast<const char*>(b), n);
    push(s);
  }
  void memo_put(uint64_t idx, size_t at) {
    need_stack(at, 1);
    memo_[idx] = stack_.back();
  }
  void memo_get(uint64_t idx, size_t at) {
    auto it = memo_.find(idx);
    if (it == memo_.end()) fail(at, fmt::format("memo entry {} is read before it is written", idx));
    push(it->second);
  }

  Node* global(const std::string& module, const std::string& name, size_t at) {
    Node* g = L_.make(NK::Global);
    g->s = module + "." + name;
    if (module == "torch._utils" && name == "_rebuild_tensor_v2")
      g->g = GK::RebuildTensorV2;
    else if (module == "torch._utils" && name == "_rebuild_tensor")
      g->g = GK::RebuildTensor;
    else if (module == "torch._utils" && name == "_rebuild_parameter")
      g->g = GK::RebuildParameter;
    else if (module == "torch._utils" && name == "_rebuild_parameter_with_state")
      g->g = GK::RebuildParameterWithState;
    else if (module == "collections" && name == "OrderedDict")
      g->g = GK::OrderedDict;
    else if (module == "torch" && name == "device")
      g->g = GK::Device;
    else {
      bool storage = false;
      if (module == "torch" || module == "torch.storage") {
        for (const auto& s : kStorageNames) {
          if (name == s.name) {
            g->g = GK::StorageType;
            g->dtype = s.dtype;
            storage = true;
          }
        }
      }
      if (!storage) {
        std::string hint;
        if (module.rfind("__torch__", 0) == 0)
          hint = " (a TorchScript archive: see tensor::jit::load)";
        else if (module == "__main__" || module.rfind("torch.nn", 0) == 0)
          hint = " (a whole pickled module: save model.state_dict() instead of the model)";
        fail(at, fmt::format("global '{}.{}' is not allowed: this restricted unpickler only builds tensors, "
                             "storages and state_dicts, and runs no code{}",
                             module, name, hint));
      }
    }
    return g;
  }

  static bool is_int(const Node* n) { return n->k == NK::Int; }
  std::vector<int64_t> int_tuple(const Node* n, const char* what, size_t at) {
    if (n->k != NK::Tuple && n->k != NK::List)
      fail(at, fmt::format("the tensor's {} is a {}, not a tuple", what, kind_name(n->k)));
    if (static_cast<int64_t>(n->items.size()) > kMaxDims)
      fail(at, fmt::format("the tensor has {} dims, more than {}", n->items.size(), kMaxDims));
    std::vector<int64_t> out;
    for (const Node* x : n->items) {
      if (!is_int(x) || x->i < 0)
        fail(at, fmt::format("the tensor's {} holds a value that is not a non-negative int", what));
      out.push_back(x->i);
    }
    return out;
  }

  Node* reduce(Node* fn, Node* args, size_t at) {
    if (fn->k != NK::Global) fail(at, fmt::format("REDUCE calls a {}, not a global", kind_name(fn->k)));
    if (args->k != NK::Tuple)
      fail(at, fmt::format("REDUCE of '{}' with a {} of arguments, not a tuple", fn->s, kind_name(args->k)));
    const auto& a = args->items;
    switch (fn->g) {
      case GK::OrderedDict:
        if (!a.empty()) fail(at, "collections.OrderedDict called with arguments (only OrderedDict() is supported)");
        return L_.make(NK::Dict);
      case GK::Device: {
        if (a.empty() || a[0]->k != NK::String) fail(at, "torch.device without a device string");
        Node* s = L_.make(NK::String);
        s->s = a[0]->s;
        if (a.size() > 1 && is_int(a[1])) s->s += ":" + std::to_string(a[1]->i);
        return s;
      }
      case GK::RebuildTensor:
      case GK::RebuildTensorV2: {
        size_t lo = fn->g == GK::RebuildTensor ? 4 : 6, hi = fn->g == GK::RebuildTensor ? 4 : 7;
        if (a.size() < lo || a.size() > hi)
          fail(at,
               fmt::format("{} takes {} arguments, got {}", fn->s, lo == hi ? std::to_string(lo) : "6 or 7", a.size()));
        if (a[0]->k != NK::Storage)
          fail(at, fmt::format("{}'s first argument is a {}, not a storage", fn->s, kind_name(a[0]->k)));
        if (!is_int(a[1]) || a[1]->i < 0) fail(at, "the tensor's storage offset is not a non-negative int");
        Node* t = L_.make(NK::Recipe);
        t->storage = a[0]->storage;
        t->i = a[1]->i;
        t->sizes = int_tuple(a[2], "size", at);
        t->strides = int_tuple(a[3], "stride", at);
        if (t->sizes.size() != t->strides.size())
          fail(at, fmt::format("the tensor has {} sizes but {} strides", t->sizes.size(), t->strides.size()));
        if (a.size() > 4) {
          if (a[4]->k != NK::Bool) fail(at, "the tensor's requires_grad is not a bool");
          t->requires_grad = a[4]->i != 0;
        }
        check_extent(t, at);
        return t;
      }
      case GK::RebuildParameter:
      case GK::RebuildParameterWithState: {
        if (a.size() < 2 || a[0]->k != NK::Recipe || a[1]->k != NK::Bool)
          fail(at, fmt::format("{} expects (tensor, requires_grad, ...)", fn->s));
        Node* t = L_.make(NK::Recipe);
        t->storage = a[0]->storage;
        t->i = a[0]->i;
        t->sizes = a[0]->sizes;
        t->strides = a[0]->strides;
        t->requires_grad = a[1]->i != 0;
        return t;
      }
      case GK::StorageType:
        fail(at, fmt::format("'{}' is called directly; storages are only read through persistent ids", fn->s));
    }
    fail(at, "unknown global");
  }

  // Every element the view can reach must lie inside its storage: offset + sum((size-1)*stride)
  // < numel, computed without overflow.
  void check_extent(const Node* t, size_t at) {
    int64_t numel = 1, last = t->i;
    bool empty = false;
    for (size_t d = 0; d < t->sizes.size(); ++d) {
      if (t->sizes[d] == 0) empty = true;
      if (__builtin_mul_overflow(numel, t->sizes[d], &numel)) fail(at, "the tensor's size overflows");
    }
    const int64_t have = t->storage->numel;
    if (empty) {
      if (t->i > have) fail(at, fmt::format("storage offset {} is beyond the storage's {} elements", t->i, have));
      return;
    }
    for (size_t d = 0; d < t->sizes.size(); ++d) {
      int64_t step;
      if (__builtin_mul_overflow(t->sizes[d] - 1, t->strides[d], &step) || __builtin_add_overflow(last, step, &last))
        fail(at, "the tensor's extent overflows");
    }
    if (last >= have)
      fail(at, fmt::format(
                   "a tensor of size {} and stride {} at storage offset {} reads element {}, but storage '{}' has {}",
                   detail::shape_str(t->sizes), detail::shape_str(t->strides), t->i, last, t->storage->key, have));
  }

  // A persistent id names a storage: ('storage', storage_type, key, location, numel) in zip
  // archives, plus a sixth item (view metadata, None) in the legacy format.
  Node* persistent_load(Node* pid, size_t at) {
    if (L_.mode == Mode::Plain) fail(at, "a persistent id (a tensor storage) outside a torch.save file");
    const auto& a = pid->items;
    if (pid->k != NK::Tuple || a.size() < 5 || a[0]->k != NK::String || a[0]->s != "storage")
      fail(at, "a persistent id that is not ('storage', type, key, location, numel)");
    if (a[1]->k != NK::Global || a[1]->g != GK::StorageType)
      fail(at, "the persistent id's storage type is not a torch storage class");
    if (a[2]->k != NK::String) fail(at, "the persistent id's storage key is not a string");
    if (!is_int(a[4]) || a[4]->i < 0) fail(at, "the persistent id's element count is not a non-negative int");
    if (a.size() > 6 || (a.size() == 6 && a[5]->k != NK::None))
      fail(at, "storage views (legacy view metadata) are not supported");
    // Zip archives name the byte count's element count in the storage type's dtype.
    ScalarType dtype = a[1]->dtype;
    int64_t numel = a[4]->i;
    int64_t nbytes;
    if (__builtin_mul_overflow(numel, element_size(dtype), &nbytes)) fail(at, "the storage's byte size overflows");
    auto& slot = L_.storages[a[2]->s];
    if (!slot) {
      slot = std::make_unique<Storage>();
      slot->key = a[2]->s;
      slot->dtype = dtype;
      slot->numel = numel;
    } else if (slot->dtype != dtype || slot->numel != numel) {
      fail(at, fmt::format("storage '{}' is named as {} elements of {} and as {} elements of {}", slot->key,
                           slot->numel, slot->dtype, numel, dtype));
    }
    Node* s = L_.make(NK::Storage);
    s->storage = slot.get();
    return s;
  }

  void set_item(Node* dict, Node* key, Node* value, size_t at) {
    if (dict->k != NK::Dict) fail(at, fmt::format("SETITEM on a {}, not a dict", kind_name(dict->k)));
    std::string k = key_of(key);
    if (k.empty()) fail(at, fmt::format("a dict key of type {} is not supported", kind_name(key->k)));
    if (!dict->index) dict->index = std::make_unique<std::unordered_map<std::string, size_t>>();
    auto [it, fresh] = dict->index->emplace(k, dict->items.size());
    if (fresh) {
      dict->items.push_back(key);
      dict->items.push_back(value);
    } else {
      dict->items[it->second + 1] = value;  // Python keeps the first position, takes the last value
    }
  }
  void append(Node* list, const std::vector<Node*>& vs, size_t at) {
    if (list->k != NK::List) fail(at, fmt::format("APPEND to a {}, not a list", kind_name(list->k)));
    list->items.insert(list->items.end(), vs.begin(), vs.end());
  }

  Load& L_;
  const unsigned char* p_;
  const unsigned char* end_;
  std::vector<Node*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Node*> memo_;
  size_t consumed_ = 0;
};

// ---- turning nodes into PickleValues ----

class Converter {
 public:
  explicit Converter(Load& load) : L_(load) {}
  PickleValue convert(const Node* n, int depth = 0) {
    if (depth > kMaxDepth) L_.fail(fmt::format("the value nests deeper than {} levels", kMaxDepth));
    auto it = done_.find(n);
    if (it != done_.end()) {
      if (!it->second.second) L_.fail(fmt::format("the pickle holds a {} that contains itself", kind_name(n->k)));
      return it->second.first;
    }
    // Each node is converted once (a value referenced twice shares the result), which bounds the
    // work and the memory by the number of nodes however often the memo repeats them.
    done_[n] = {PickleValue(), false};
    PickleValue v = build(n, depth);
    done_[n] = {v, true};
    return v;
  }

 private:
  PickleValue build(const Node* n, int depth) {
    switch (n->k) {
      case NK::None:
        return PickleValue();
      case NK::Bool:
        return PickleValue::from_bool(n->i != 0);
      case NK::Int:
        return PickleValue::from_int(n->i);
      case NK::BigInt:
        L_.fail(fmt::format("an integer of {} bytes does not fit in 64 bits", n->s.size()));
      case NK::Double:
        return PickleValue::from_double(n->d);
      case NK::String:
        return PickleValue::from_string(n->s);
      case NK::Bytes:
        return PickleValue::from_string(n->s, true);
      case NK::List:
      case NK::Tuple: {
        PickleValue::List items;
        items.reserve(n->items.size());
        for (const Node* x : n->items) items.push_back(convert(x, depth + 1));
        return PickleValue::from_list(std::move(items), n->k == NK::Tuple);
      }
      case NK::Dict: {
        PickleValue::Dict items;
        items.reserve(n->items.size() / 2);
        for (size_t i = 0; i < n->items.size(); i += 2)
          items.emplace_back(convert(n->items[i], depth + 1), convert(n->items[i + 1], depth + 1));
        return PickleValue::from_dict(std::move(items));
      }
      case NK::Global:
        L_.fail(fmt::format("the value is the global '{}' itself, not a value it builds", n->s));
      case NK::Storage:
        return PickleValue::from_tensor(n->storage->base);
      case NK::Recipe: {
        Tensor t = n->storage->base.as_strided(n->sizes, n->strides, n->i).detach();
        if (n->requires_grad && (is_floating_point(t.scalar_type()) || is_complex(t.scalar_type())))
          t.requires_grad_(true);
        return PickleValue::from_tensor(std::move(t));
      }
    }
    L_.fail("unknown value");
  }

  Load& L_;
  std::unordered_map<const Node*, std::pair<PickleValue, bool>> done_;
};

// The bytes of storage `s` (numel elements of its dtype, little-endian) become its base tensor.
void fill_storage(Storage& s, const char* bytes, const Load& L) {
  Tensor base = empty({s.numel}, TensorOptions().dtype(s.dtype));
  const size_t n = static_cast<size_t>(s.numel * element_size(s.dtype));
  if (n) std::memcpy(base.data_ptr(), bytes, n);
  if (s.dtype == kBool) {  // any nonzero byte is True; a bool must hold 0 or 1
    auto* b = static_cast<unsigned char*>(base.data_ptr());
    for (size_t i = 0; i < n; ++i) b[i] = b[i] != 0;
  }
  s.base = base;
}

Node* unpickle(Load& L, const unsigned char* data, size_t size, size_t* consumed = nullptr) {
  Unpickler u(L, data, size);
  Node* n = u.run();
  if (consumed) *consumed = u.consumed();
  return n;
}

// The torch.save zip archive: <prefix>/data.pkl, <prefix>/data/<key> per storage, <prefix>/byteorder.
PickleValue load_zip(Load& L, const unsigned char* data, size_t size) {
  L.mode = Mode::Zip;
  std::vector<io::detail::ZipEntry> entries = io::detail::zip_entries(data, size, L.what);
  std::unordered_map<std::string, const io::detail::ZipEntry*> by_name;
  for (const auto& e : entries)
    if (!by_name.emplace(e.name, &e).second) L.fail(fmt::format("the zip archive holds '{}' twice", e.name));
  const io::detail::ZipEntry* pkl = nullptr;
  std::string prefix;
  for (const auto& e : entries) {
    size_t slash = e.name.find('/');
    if (slash != std::string::npos && e.name.compare(slash, std::string::npos, "/data.pkl") == 0) {
      if (pkl) L.fail(fmt::format("the archive holds two pickles, '{}' and '{}'", pkl->name, e.name));
      pkl = &e;
      prefix = e.name.substr(0, slash + 1);
    }
  }
  if (!pkl) L.fail("a zip archive without <name>/data.pkl is not a torch.save file");
  bool script = false;  // torch.jit.save writes TorchScript code and constants beside data.pkl
  for (const auto& e : entries)
    script = script || e.name == prefix + "constants.pkl" || e.name.rfind(prefix + "code/", 0) == 0;
  if (script)
    L.fail(
        "this is a TorchScript archive (torch.jit.save, or libtorch's torch::save), which libtensor cannot load: "
        "in Python, torch.save(model.state_dict(), path) and load that with tensor::load(module, path)");
  std::string scratch;
  auto bo = by_name.find(prefix + "byteorder");
  if (bo != by_name.end()) {
    std::string_view order = io::detail::zip_read(data, size, *bo->second, scratch, L.what);
    if (order != "little")
      L.fail(fmt::format("the archive's byte order is '{}'; only little-endian files are read", order));
  }
  std::string_view pickle = io::detail::zip_read(data, size, *pkl, scratch, L.what);
  std::string pickle_copy(pickle);  // scratch is reused for the storages
  Node* root = unpickle(L, reinterpret_cast<const unsigned char*>(pickle_copy.data()), pickle_copy.size());
  for (auto& [key, s] : L.storages) {
    auto it = by_name.find(prefix + "data/" + key);
    if (it == by_name.end())
      L.fail(fmt::format("storage '{}' has no entry '{}data/{}' in the archive", key, prefix, key));
    const uint64_t want = static_cast<uint64_t>(s->numel) * static_cast<uint64_t>(element_size(s->dtype));
    // Check the size before inflating or allocating anything.
    if (it->second->size != want)
      L.fail(fmt::format("storage '{}' should hold {} elements of {} ({} bytes), but its entry has {} bytes", key,
                         s->numel, s->dtype, want, it->second->size));
    std::string_view bytes = io::detail::zip_read(data, size, *it->second, scratch, L.what);
    fill_storage(*s, bytes.data(), L);
  }
  return Converter(L).convert(root);
}

// Note [The legacy torch.save format]: five pickles in a row (the magic number
// 0x1950a86a20f9469cfc6c, the protocol version 1001, a sys_info dict, the object, the list of
// storage keys), then per listed key an int64 element count and that many elements' bytes.
constexpr unsigned char kLegacyMagic[] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

bool is_legacy_magic(const Node* n) {
  return n->k == NK::BigInt && n->s.size() == sizeof(kLegacyMagic) &&
         std::memcmp(n->s.data(), kLegacyMagic, sizeof(kLegacyMagic)) == 0;
}

PickleValue load_legacy(Load& L, const unsigned char* data, size_t size, size_t pos) {
  L.mode = Mode::Legacy;
  size_t used = 0;
  Node* version = unpickle(L, data + pos, size - pos, &used);
  pos += used;
  if (version->k != NK::Int || version->i != 1001)
    L.fail("a legacy torch.save file whose protocol version is not 1001");
  Node* info = unpickle(L, data + pos, size - pos, &used);
  pos += used;
  if (info->k == NK::Dict) {
    for (size_t i = 0; i + 1 < info->items.size(); i += 2) {
      if (info->items[i]->k == NK::String && info->items[i]->s == "little_endian" &&
          info->items[i + 1]->k == NK::Bool && info->items[i + 1]->i == 0)
        L.fail("the file was saved on a big-endian machine; only little-endian files are read");
    }
  }
  Node* root = unpickle(L, data + pos, size - pos, &used);
  pos += used;
  Node* keys = unpickle(L, data + pos, size - pos, &used);
  pos += used;
  if (keys->k != NK::List) L.fail("the legacy file's storage key list is not a list");
  for (const Node* k : keys->items) {
    if (k->k != NK::String) L.fail("the legacy file's storage key list holds a non-string");
    if (size - pos < 8) L.fail(fmt::format("the file ends before storage '{}' (truncated file?)", k->s));
    uint64_t count = 0;
    for (int i = 7; i >= 0; --i) count = (count << 8) | data[pos + static_cast<size_t>(i)];
    pos += 8;
    auto it = L.storages.find(k->s);
    int64_t esize = it != L.storages.end() ? element_size(it->second->dtype) : 1;
    if (it != L.storages.end() && count != static_cast<uint64_t>(it->second->numel))
      L.fail(fmt::format("storage '{}' is named with {} elements but stored with {}", k->s, it->second->numel, count));
    if (it == L.storages.end()) L.fail(fmt::format("the file stores '{}', which no tensor uses", k->s));
    uint64_t nbytes = count * static_cast<uint64_t>(esize);  // count == numel, whose byte size was checked
    if (nbytes > size - pos)
      L.fail(fmt::format("storage '{}' needs {} bytes but the file has {} left (truncated file?)", k->s, nbytes,
                         size - pos));
    if (it->second->base.defined()) L.fail(fmt::format("the file stores '{}' twice", k->s));
    fill_storage(*it->second, reinterpret_cast<const char*>(data + pos), L);
    pos += nbytes;
  }
  for (const auto& [key, s] : L.storages)
    if (!s->base.defined()) L.fail(fmt::format("storage '{}' is used but not stored in the file", key));
  return Converter(L).convert(root);
}

std::vector<char> read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  TENSOR_CHECK(fd >= 0, "tensor::pickle_load_file: cannot open '{}': {}", path, std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    TENSOR_ERROR("tensor::pickle_load_file: '{}' is not a regular file", path);
  }
  std::vector<char> bytes(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < bytes.size()) {
    ssize_t r = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      ::close(fd);
      TENSOR_ERROR("tensor::pickle_load_file: reading '{}' failed after {} of {} bytes", path, got, bytes.size());
    }
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  return bytes;
}

}  // namespace

PickleValue pickle_load(const void* data, size_t size, const std::string& what) {
  Load L;
  L.what = what;
  const auto* b = static_cast<const unsigned char*>(data);
  if (size >= 4 && b[0] == 'P' && b[1] == 'K' && b[2] == 3 && b[3] == 4) return load_zip(L, b, size);
  if (size < 2 || b[0] != 0x80)
    L.fail("not a torch.save file: it starts neither with a zip header (PK\\x03\\x04) nor with a pickle (0x80)");
  size_t used = 0;
  Node* first = unpickle(L, b, size, &used);
  if (is_legacy_magic(first)) return load_legacy(L, b, size, used);
  return Converter(L).convert(first);
}

PickleValue pickle_load(const std::vector<char>& data) { return pickle_load(data.data(), data.size()); }

PickleValue pickle_load_file(const std::string& path) {
  std::vector<char> bytes = read_file(path);
  return pickle_load(bytes.data(), bytes.size(), "'" + path + "'");
}

bool is_torch_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  unsigned char b[9] = {};
  ssize_t n = ::pread(fd, b, sizeof(b), 0);
  ::close(fd);
  if (n >= 9 && b[8] == '{') return false;  // a safetensors header (Note [Recognizing .pt files])
  if (n >= 4 && b[0] == 'P' && b[1] == 'K' && b[2] == 3 && b[3] == 4) return true;
  return n >= 2 && b[0] == 0x80 && b[1] >= 2 && b[1] <= 5;
}

std::vector<std::pair<std::string, Tensor>> state_dict_from(const PickleValue& value, const std::string& what) {
  TENSOR_CHECK(value.is_dict(), "{}: expected a state_dict (a dict of tensors), but the file holds a {}", what,
               value.kind_name());
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [k, v] : value.to_dict()) {
    TENSOR_CHECK(k.is_string(), "{}: expected a state_dict, but a key is a {}, not a str", what, k.kind_name());
    TENSOR_CHECK(v.is_tensor(),
                 "{}: expected a state_dict, but '{}' is a {}, not a tensor (a checkpoint dict? save "
                 "model.state_dict() alone, or pick it with pickle_load_file(path).find(\"...\"))",
                 what, k.to_string(), v.kind_name());
    out.emplace_back(k.to_string(), v.to_tensor());
  }
  return out;
}

namespace jit {
void load(const std::string& path) {
  TENSOR_ERROR(
      "tensor::jit::load('{}'): TorchScript is not supported: libtensor cannot run TorchScript code or "
      "rebuild its modules. In Python, save the weights with torch.save(model.state_dict(), path), define "
      "the model as a libtensor nn::Module with the same parameter names, and load them with "
      "tensor::load(module, path)",
      path);
}
}  // namespace jit

}  // namespace tensor
