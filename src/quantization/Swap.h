// Internal: the module swap that fuse_modules and convert share (Note [Module swap by redirect]
// in src/quantization/Fuse.cpp).
#pragma once

#include <memory>
#include <string>

#include "tensor/nn/module.h"
#include "tensor/nn/pimpl.h"

namespace tensor::quantization::internal {

/// Puts `replacement` at the dotted `name` below `root` in the tree (the registry only; swap_in
/// also redirects the old module's calls, and convert's other callers redirect them their own way).
template <typename Impl>
void replace_in_tree(nn::Module& root, const std::string& name, std::shared_ptr<Impl> replacement) {
  const size_t dot = name.rfind('.');
  nn::Module* parent = &root;
  if (dot != std::string::npos) parent = root.named_modules()[name.substr(0, dot)].get();
  parent->replace_module(dot == std::string::npos ? name : name.substr(dot + 1), std::move(replacement));
}

/// Puts `replacement` at the dotted `name` below `root` in the tree and sends every call of the
/// old module (through a holder, a Sequential or an AnyModule) to it, through the replacement's
/// own holder so that its hooks and redirects run too.
template <typename Impl>
void swap_in(nn::Module& root, const std::string& name, const std::shared_ptr<nn::Module>& old,
             std::shared_ptr<Impl> replacement) {
  replace_in_tree(root, name, replacement);
  old->redirect_forward([replacement](const Tensor& x) -> Tensor { return nn::ModuleHolder<Impl>(replacement)(x); });
}

}  // namespace tensor::quantization::internal
