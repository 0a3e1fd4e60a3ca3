// Reading what Python's torch.save writes: tensor::pickle_load and the value it returns
// (docs/io_data.md, "PyTorch .pt files"). tensor::load(module, "model.pt") (tensor/serialize.h)
// uses it to load a state_dict trained in Python.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tensor/core/Tensor.h"

namespace tensor {

/// A value unpickled from a torch.save file: None, a bool, an integer, a float, a string, bytes,
/// a tensor, a list, a tuple or a dict (an OrderedDict, such as a state_dict, is a dict whose
/// items keep their order). Accessors of the wrong kind throw tensor::Error naming both kinds.
class TENSOR_API PickleValue {
 public:
  enum class Kind { None, Bool, Int, Double, String, Bytes, Tensor, List, Tuple, Dict };
  using List = std::vector<PickleValue>;
  /// A dict's items in insertion order.
  using Dict = std::vector<std::pair<PickleValue, PickleValue>>;

  PickleValue() = default;
  /// Factories; the unpickler builds values with them.
  static PickleValue from_bool(bool b);
  static PickleValue from_int(int64_t i);
  static PickleValue from_double(double d);
  static PickleValue from_string(std::string s, bool bytes = false);
  static PickleValue from_tensor(Tensor t);
  static PickleValue from_list(List items, bool tuple = false);
  static PickleValue from_dict(Dict items);

  Kind kind() const { return kind_; }
  /// "None", "int", "tensor", "dict", ... for messages.
  const char* kind_name() const;
  bool is_none() const { return kind_ == Kind::None; }
  bool is_tensor() const { return kind_ == Kind::Tensor; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_list() const { return kind_ == Kind::List || kind_ == Kind::Tuple; }
  bool is_dict() const { return kind_ == Kind::Dict; }

  bool to_bool() const;
  int64_t to_int() const;
  /// A float, or an int converted.
  double to_double() const;
  /// A str (UTF-8) or the raw bytes of a bytes value.
  const std::string& to_string() const;
  const Tensor& to_tensor() const;
  /// The items of a list or a tuple.
  const List& to_list() const;
  const Dict& to_dict() const;
  /// The value of a dict under string key `key`, or nullptr when it has none.
  const PickleValue* find(const std::string& key) const;

 private:
  Kind kind_ = Kind::None;
  bool b_ = false;
  int64_t i_ = 0;
  double d_ = 0;
  std::shared_ptr<const std::string> s_;  // shared: one string may be referenced many times
  Tensor t_;
  std::shared_ptr<const List> list_;
  std::shared_ptr<const Dict> dict_;
};

/// Reads the bytes of a file written by Python's torch.save: the zip archive (PyTorch >= 1.6)
/// or the legacy format (`_use_new_zipfile_serialization=False`); a plain pickle (protocol 2 to
/// 5, no tensors) reads too. Tensors come back as CPU tensors that honor the file's storage
/// offsets and strides; tensors that shared a storage in Python are views of one storage here.
/// The unpickler is restricted: it runs no code and knows only the globals a state_dict needs
/// (torch._utils._rebuild_tensor_v2, _rebuild_parameter, collections.OrderedDict, the
/// torch.*Storage types, torch.device); any other global (a pickled nn.Module class, say) is a
/// tensor::Error naming it. Malformed or hostile bytes throw tensor::Error; allocations are
/// bounded by the input's size.
TENSOR_API PickleValue pickle_load(const std::vector<char>& data);
/// pickle_load() of `size` bytes at `data`; `what` names the source in error messages.
TENSOR_API PickleValue pickle_load(const void* data, size_t size, const std::string& what = "pickle_load");
/// pickle_load() of the file at `path` (errors name the path).
TENSOR_API PickleValue pickle_load_file(const std::string& path);

/// True when the file at `path` starts like a torch.save file (a zip archive or a legacy
/// pickle) rather than safetensors; tensor::load uses it to pick the reader.
TENSOR_API bool is_torch_file(const std::string& path);

/// The (name, tensor) pairs of a state_dict read by pickle_load: a dict whose keys are strings
/// and whose values are tensors, in the file's order. Anything else throws tensor::Error that
/// says what the value holds instead (`what` names the source).
TENSOR_API std::vector<std::pair<std::string, Tensor>> state_dict_from(const PickleValue& value,
                                                                       const std::string& what = "state_dict_from");

namespace jit {
/// TorchScript archives (torch.jit.save) are not supported: libtensor cannot run TorchScript
/// code. Always throws tensor::Error saying so and what to do instead (save the state_dict with
/// torch.save and load it with tensor::load(module, path)).
[[noreturn]] TENSOR_API void load(const std::string& path);
}  // namespace jit

}  // namespace tensor
