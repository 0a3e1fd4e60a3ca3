// tensor::io: named tensors on disk in the safetensors format (docs/io_data.md).
#pragma once

#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor/core/Tensor.h"

namespace tensor::io {

/// Named tensors in a chosen order: what save() takes and load() returns.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
/// The optional "__metadata__" string map of a safetensors file (epoch, optimizer settings...).
using Metadata = std::map<std::string, std::string>;

/// Writes `tensors` to `path` as a safetensors file, atomically: the bytes go to a temporary file
/// next to `path`, which is fsynced and renamed over `path` (then the directory is fsynced), so
/// a crash leaves either the old file or the new one, never a mix. Tensors may live on any
/// device and be non-contiguous (a contiguous CPU copy is written). Names must be unique, valid
/// UTF-8 and not "__metadata__"; metadata must be valid UTF-8. Dtypes: bool uint8 int8 int16
/// int32 int64 float16 bfloat16 float32 float64; complex tensors throw (safetensors has no
/// complex dtype: save real() and imag() as two tensors). The file is byte-identical to what
/// the reference `safetensors` writer produces for the same tensors and metadata.
TENSOR_API void save(const NamedTensors& tensors, const std::string& path, const Metadata& metadata = {});

/// Reads every tensor of a safetensors file, as contiguous CPU tensors that do not require grad,
/// sorted by name. Fills `*metadata` with the file's "__metadata__" map when given. A missing,
/// truncated or corrupt file throws tensor::Error naming the file and the problem.
TENSOR_API NamedTensors load(const std::string& path, Metadata* metadata = nullptr);

/// Reads a safetensors file into existing tensors, in place and without autograd recording
/// (as load_state_dict): each tensor named in `tensors` is overwritten with the file's values.
/// Shapes and dtypes must match exactly. With `strict`, names missing from the file and names
/// in the file that `tensors` lacks are errors (the message lists them); without it they are
/// skipped. Nothing is written unless every check passes.
TENSOR_API void load(const NamedTensors& tensors, const std::string& path, bool strict = true);

/// Only the "__metadata__" map of a safetensors file (the header is read; data is not).
TENSOR_API Metadata load_metadata(const std::string& path);

/// Whether loads check each tensor's stored CRC-32 (docs/io_data.md, "Checksums"); on by default,
/// and off when the environment sets TENSOR_IO_VERIFY=0. Turning it off (for a file damaged on
/// purpose, or to save the pass over the bytes) applies to every thread's later loads, plain and
/// sharded.
TENSOR_API void set_verify_checksums(bool verify);
/// The current setting of set_verify_checksums.
TENSOR_API bool verify_checksums();

namespace detail {
template <class T, class = void> struct has_key_value : std::false_type {};
template <class T>
struct has_key_value<T, std::void_t<decltype(std::declval<const T&>().key()), decltype(std::declval<const T&>().value())>>
    : std::true_type {};
/// Name and tensor of one item of a named collection: pair-like (.first/.second) or
/// OrderedDict-like (.key()/.value()).
template <class Item> std::pair<std::string, Tensor> named_item(const Item& item) {
  if constexpr (has_key_value<Item>::value) return {std::string(item.key()), Tensor(item.value())};
  else return {std::string(item.first), Tensor(item.second)};
}
template <class T, class = void> struct has_first_second : std::false_type {};
template <class T>
struct has_first_second<T, std::void_t<decltype(std::declval<const T&>().first), decltype(std::declval<const T&>().second)>>
    : std::true_type {};
/// True for iterable collections whose items carry a name and a tensor.
template <class T, class = void> struct is_named_collection : std::false_type {};
template <class T>
struct is_named_collection<T, std::void_t<decltype(*std::declval<const T&>().begin())>> {
  using Item = std::decay_t<decltype(*std::declval<const T&>().begin())>;
  static constexpr bool value = !std::is_same_v<T, NamedTensors> && (has_key_value<Item>::value || has_first_second<Item>::value);
};
template <class Named> NamedTensors to_named_tensors(const Named& named) {
  NamedTensors out;
  for (const auto& item : named) out.push_back(named_item(item));
  return out;
}
}  // namespace detail

/// save() for any other collection of named tensors: std::map<std::string, Tensor>, an
/// unordered_map, or the ordered dict nn::Module::named_parameters() returns.
template <class Named, class = std::enable_if_t<detail::is_named_collection<Named>::value>>
void save(const Named& tensors, const std::string& path, const Metadata& metadata = {}) {
  save(detail::to_named_tensors(tensors), path, metadata);
}
/// load() in place for any other collection of named tensors (see save() above).
template <class Named, class = std::enable_if_t<detail::is_named_collection<Named>::value>>
void load(const Named& tensors, const std::string& path, bool strict = true) {
  load(detail::to_named_tensors(tensors), path, strict);
}

}  // namespace tensor::io
