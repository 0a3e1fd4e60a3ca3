// tensor::save / tensor::load (libtorch's spelling) over tensor::io's safetensors files.
#include "tensor/serialize.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <typeinfo>

#include "src/core/Check.h"
#include "tensor/io.h"
#include "tensor/nn/module.h"
#include "tensor/optim/optimizer.h"
#include "tensor/pickle.h"

namespace tensor {
namespace {

// Note [What a tensor::save file holds]: the "__metadata__" entry "libtensor" says what was saved
// ("tensor", "tensors", "module", "optimizer"; for an optimizer also "libtensor.optimizer", its
// type), so that loading one kind of file into another kind of object fails with a message
// saying so rather than with a list of unmatched names. Files without it (written by Python's
// safetensors, or by io::save) are accepted by every load.
constexpr const char* kKind = "libtensor";
constexpr const char* kOptimizerType = "libtensor.optimizer";

std::string demangled(const std::type_info& t) {
  int status = 0;
  char* d = abi::__cxa_demangle(t.name(), nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : t.name();
  std::free(d);
  return out;
}

// "a module", "an optimizer", ... for messages.
std::string described(const std::string& kind) {
  if (kind == "optimizer") return "an optimizer";
  if (kind == "tensors") return "a tensor list";
  return "a " + kind;
}

io::NamedTensors load_kind(const std::string& path, const char* want, const char* op, io::Metadata* meta_out = nullptr) {
  io::Metadata meta;
  io::NamedTensors all = io::load(path, &meta);
  auto it = meta.find(kKind);
  if (it != meta.end()) {
    // A tensor list and a single tensor are interchangeable (a file of one tensor is a list of one).
    bool tensors = (it->second == "tensor" || it->second == "tensors") &&
                   (std::string(want) == "tensor" || std::string(want) == "tensors");
    TENSOR_CHECK(it->second == want || tensors, "{}: '{}' was written by tensor::save of {}; it cannot be loaded as {}",
                 op, path, described(it->second), described(want));
  }
  if (meta_out) *meta_out = std::move(meta);
  return all;
}

bool is_index(const std::string& s) {
  return !s.empty() && s.size() < 19 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

void save(const Tensor& tensor, const std::string& path) {
  TENSOR_CHECK(tensor.defined(), "tensor::save: the tensor to save to '{}' is undefined", path);
  io::save(io::NamedTensors{{"0", tensor}}, path, {{kKind, "tensor"}});
}

void save(const std::vector<Tensor>& tensors, const std::string& path) {
  io::NamedTensors named;
  named.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    TENSOR_CHECK(tensors[i].defined(), "tensor::save: tensor {} of the {} to save to '{}' is undefined", i,
                 tensors.size(), path);
    named.emplace_back(std::to_string(i), tensors[i]);
  }
  io::save(named, path, {{kKind, "tensors"}});
}

void load(Tensor& tensor, const std::string& path) {
  if (is_torch_file(path)) {  // torch.save(tensor, path) in Python
    PickleValue v = pickle_load_file(path);
    TENSOR_CHECK(v.is_tensor(), "tensor::load(Tensor&): '{}' holds a {}, not a tensor", path, v.kind_name());
    tensor = v.to_tensor();
    return;
  }
  io::NamedTensors all = load_kind(path, "tensor", "tensor::load(Tensor&)");
  TENSOR_CHECK(all.size() == 1,
               "tensor::load(Tensor&): '{}' holds {} tensors, expected exactly one (load a std::vector<Tensor> to get "
               "them all)",
               path, all.size());
  tensor = std::move(all[0].second);
}

void load(std::vector<Tensor>& tensors, const std::string& path) {
  if (is_torch_file(path)) {  // torch.save([a, b], path) in Python: a list or tuple of tensors
    PickleValue v = pickle_load_file(path);
    TENSOR_CHECK(v.is_list(), "tensor::load(std::vector<Tensor>&): '{}' holds a {}, not a list of tensors", path,
                 v.kind_name());
    std::vector<Tensor> out;
    for (const auto& item : v.to_list()) {
      TENSOR_CHECK(item.is_tensor(), "tensor::load(std::vector<Tensor>&): '{}' holds a list with a {} in it", path,
                   item.kind_name());
      out.push_back(item.to_tensor());
    }
    tensors = std::move(out);
    return;
  }
  io::NamedTensors all = load_kind(path, "tensors", "tensor::load(std::vector<Tensor>&)");
  // io::load sorts by name, which puts "10" before "2"; save's names are indices, so order by value.
  if (std::all_of(all.begin(), all.end(), [](const auto& kv) { return is_index(kv.first); }))
    std::stable_sort(all.begin(), all.end(),
                     [](const auto& a, const auto& b) { return std::stoll(a.first) < std::stoll(b.first); });
  std::vector<Tensor> out;
  out.reserve(all.size());
  for (auto& kv : all) out.push_back(std::move(kv.second));
  tensors = std::move(out);
}

void save(const nn::Module& module, const std::string& path) {
  io::save(module.state_dict(), path, {{kKind, "module"}});
}

void load(nn::Module& module, const std::string& path) {
  // Note [Loading PyTorch state_dicts]: a file from Python's torch.save(model.state_dict(), path)
  // is recognized by its first bytes and read by the restricted unpickler; its names follow
  // PyTorch's, which libtensor's modules share, so it loads like a safetensors state_dict
  // (strict, shapes checked, values copied and converted to the parameters' dtypes).
  if (is_torch_file(path)) {
    module.load_state_dict(state_dict_from(pickle_load_file(path), "tensor::load(module, '" + path + "')"), /*strict=*/true);
    return;
  }
  io::NamedTensors all = load_kind(path, "module", "tensor::load(module)");
  module.load_state_dict(all, /*strict=*/true);
}

void save(const optim::Optimizer& optimizer, const std::string& path) {
  io::save(optimizer.state_dict(), path, {{kKind, "optimizer"}, {kOptimizerType, demangled(typeid(optimizer))}});
}

void load(optim::Optimizer& optimizer, const std::string& path) {
  io::Metadata meta;
  io::NamedTensors all = load_kind(path, "optimizer", "tensor::load(optimizer)", &meta);
  auto it = meta.find(kOptimizerType);
  const std::string type = demangled(typeid(optimizer));
  TENSOR_CHECK(it == meta.end() || it->second == type,
               "tensor::load(optimizer): '{}' holds the state of a {}, which a {} cannot load", path,
               it == meta.end() ? std::string() : it->second, type);
  optimizer.load_state_dict(all);
}

}  // namespace tensor
