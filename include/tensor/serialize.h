// tensor::save and tensor::load: libtorch's one-call serialization of a module, an optimizer, a
// tensor or a list of tensors, as torch::save/torch::load spell it (docs/io_data.md).
//
//   tensor::save(model, "model.safetensors");       // std::shared_ptr<Net>, or a holder (nn::Linear)
//   tensor::save(optimizer, "optim.safetensors");   // hyperparameters and state (moments, steps)
//   tensor::load(model, "model.safetensors");       // in place, names/shapes checked
//
// The files are safetensors (tensor::io), written atomically, so a Python user opens them with
// the `safetensors` package. The load functions also read what Python's torch.save writes (zip
// archive or legacy pickle, recognized by their first bytes; tensor/pickle.h): a state_dict into
// a module, a tensor, a list of tensors.
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "tensor/core/Tensor.h"
#include "tensor/nn/pimpl.h"

namespace tensor {
namespace nn {
class Module;
}
namespace optim {
class Optimizer;
}

/// Writes `tensor` to `path` (safetensors, one tensor named "0"), atomically.
TENSOR_API void save(const Tensor& tensor, const std::string& path);
/// Writes `tensors` to `path` (safetensors, named "0", "1", ...), atomically.
TENSOR_API void save(const std::vector<Tensor>& tensors, const std::string& path);
/// Replaces `tensor` with the one tensor of the safetensors file `path` (a new CPU tensor), or
/// with the tensor of a torch.save file (torch.save(t, path) in Python).
TENSOR_API void load(Tensor& tensor, const std::string& path);
/// Replaces `tensors` with the tensors of `path`: in numeric order when every name is an integer
/// ("0", "1", ... as save writes them), else in name order. A torch.save file must hold a list
/// or tuple of tensors.
TENSOR_API void load(std::vector<Tensor>& tensors, const std::string& path);

/// Writes the module's state_dict() (parameters, then buffers, by dotted name) to `path`.
TENSOR_API void save(const nn::Module& module, const std::string& path);
/// Copies the tensors of `path` into the module's parameters and buffers, in place
/// (load_state_dict, strict): missing or unexpected names and shape mismatches throw
/// tensor::Error listing them, before anything is written. Reads any safetensors state_dict,
/// e.g. one exported from PyTorch with safetensors.torch.save_file(model.state_dict(), path), or
/// the file of torch.save(model.state_dict(), path) (Note [Loading PyTorch state_dicts]).
TENSOR_API void load(nn::Module& module, const std::string& path);

/// Writes the optimizer's state_dict(): every group's hyperparameters and every parameter's state.
TENSOR_API void save(const optim::Optimizer& optimizer, const std::string& path);
/// Restores hyperparameters and state saved from an optimizer of the same type over the same
/// parameter layout, so that training continues exactly as if never interrupted.
TENSOR_API void load(optim::Optimizer& optimizer, const std::string& path);

/// save() for a module held by std::shared_ptr (libtorch's usual spelling).
template <typename M, typename = std::enable_if_t<std::is_class_v<M> && !std::is_same_v<std::decay_t<M>, Tensor>>>
void save(const std::shared_ptr<M>& module, const std::string& path) {
  save(static_cast<const nn::Module&>(*module), path);
}
/// load() for a module held by std::shared_ptr.
template <typename M, typename = std::enable_if_t<std::is_class_v<M> && !std::is_same_v<std::decay_t<M>, Tensor>>>
void load(const std::shared_ptr<M>& module, const std::string& path) {
  load(static_cast<nn::Module&>(*module), path);
}
/// save() for a module holder (nn::Linear, nn::Sequential, TORCH_MODULE-style holders).
template <typename M>
void save(const nn::ModuleHolder<M>& module, const std::string& path) {
  save(static_cast<const nn::Module&>(*module.ptr()), path);
}
/// load() for a module holder.
template <typename M>
void load(const nn::ModuleHolder<M>& module, const std::string& path) {
  load(static_cast<nn::Module&>(*module.ptr()), path);
}

}  // namespace tensor
