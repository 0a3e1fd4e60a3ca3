// Joining and splitting: cat, stack (copies into one new tensor), split, chunk, unbind (views).
//
// cat and stack are front ends (Note [Front ends and backend kernels], src/ops/ElementwiseOps.cpp):
// the checks, dtype promotion and the output's allocation, where the Meta instance stops; the
// CPU and CUDA instances then copy each input into its slab of the output with their backend's
// CatSlabKernel (CPU's: kernels/cpu/CatKernels.cpp).
#include "kernels/cpu/CatKernels.h"
#include "src/autograd/Functions.h"
#include "src/dispatch/BackendKernels.h"
#include "src/ops/IndexOps.h"
#include "tensor/ops.h"

namespace tensor {
namespace ops {

namespace {
using detail::shape_str;
using detail::wrap_dim;

// The per-backend kernels: CPU's built in, CUDA's registered.
dispatch::BackendKernels<CatSlabKernel> g_cat_kernels{{&cpu::cat_copy_slab, nullptr}};

// Note [Legacy empty tensors in cat]
// PyTorch once used a 1-D tensor of shape [0] as "no tensor", and cat still skips such
// inputs whatever the other inputs' ranks are: cat({zeros({0}), x}, 1) == x for a 2-D x.
// They still take part in dtype promotion.
bool is_legacy_empty(const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }

// `kernel`: the backend's, looked up by the caller before any work (null for Meta).
template <DispatchKey K>
Tensor cat_impl(CatSlabKernel kernel, TensorList tensors, int64_t dim, const char* op) {
  TENSOR_CHECK(!tensors.empty(), "{}: expected a non-empty list of tensors", op);
  ScalarType dtype = ScalarType::Undefined;
  Device device = Device(kCPU);
  int64_t ref = -1;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    TENSOR_CHECK(t.defined(), "{}: tensor {} in the list is undefined", op, i);
    TENSOR_CHECK(t.dim() > 0,
                 "{}: zero-dimensional tensor (at position {}) cannot be concatenated; unsqueeze it or use stack", op,
                 i);
    if (i == 0) {
      dtype = t.dtype();
      device = t.device();
    }
    TENSOR_CHECK(t.device() == device,
                 "{}: expected all tensors on the same device, but tensor 0 is on {} and tensor {} is on {}", op,
                 device.str(), i, t.device().str());
    dtype = promote_types(dtype, t.dtype());
    if (ref < 0 && !is_legacy_empty(t)) ref = static_cast<int64_t>(i);
  }
  index_detail::check_backend_device<K>(tensors[0], op, "the input");
  TensorOptions opts = TensorOptions().dtype(dtype).device(device);
  if (ref < 0) return empty({0}, opts);  // only legacy empty tensors
  const Tensor& r = tensors[ref];
  dim = wrap_dim(dim, r.dim(), op);
  DimVector shape(r.sizes());
  shape[dim] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (is_legacy_empty(t)) continue;
    TENSOR_CHECK(t.dim() == r.dim(),
                 "{}: tensors must have the same number of dims, but tensor {} has shape {} and tensor {} has shape {}",
                 op, ref, shape_str(r.sizes()), i, shape_str(t.sizes()));
    for (int64_t d = 0; d < r.dim(); ++d)
      TENSOR_CHECK(
          d == dim || t.size(d) == r.size(d),
          "{}: sizes of tensors must match except in dim {}: expected size {} but got size {} at dim {} for tensor "
          "number {} in the list (shapes {} and {})",
          op, dim, r.size(d), t.size(d), d, i, shape_str(r.sizes()), shape_str(t.sizes()));
    shape[dim] += t.size(dim);
  }
  Tensor out = empty(shape, opts);
  if (K == DispatchKey::Meta || out.numel() == 0) return out;
  if constexpr (K == DispatchKey::CPU) {
    // One pass over the output's rows when every input allows it (Note [Cat by output rows]).
    std::vector<Tensor> parts;
    for (const Tensor& t : tensors)
      if (!is_legacy_empty(t)) parts.push_back(t);
    if (cpu::cat_rows(out, parts, dim)) return out;
  }
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    if (is_legacy_empty(t)) continue;
    kernel(out, t, dim, offset);
    offset += t.size(dim);
  }
  return out;
}

template <DispatchKey K>
Tensor cat_fn(TensorList tensors, int64_t dim) {
  return cat_impl<K>(g_cat_kernels.get<K>("cat"), tensors, dim, "cat");
}

template <DispatchKey K>
Tensor stack_fn(TensorList tensors, int64_t dim) {
  const CatSlabKernel kernel = g_cat_kernels.get<K>("stack");
  TENSOR_CHECK(!tensors.empty(), "stack: expected a non-empty list of tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    TENSOR_CHECK(tensors[i].defined(), "stack: tensor {} in the list is undefined", i);
    TENSOR_CHECK(tensors[i].sizes() == tensors[0].sizes(),
                 "stack: expects each tensor to be equal size, but got {} at entry 0 and {} at entry {}",
                 shape_str(tensors[0].sizes()), shape_str(tensors[i].sizes()), i);
  }
  dim = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> expanded;
  expanded.reserve(tensors.size());
  for (const Tensor& t : tensors) expanded.push_back(t.unsqueeze(dim));
  return cat_impl<K>(kernel, expanded, dim, "stack");
}

// Constant-initialized: CPU and Meta slots hold their front-end instances; CUDA's are filled by
// register_kernel.
dispatch::OpDef<CatFn> g_cat = TENSOR_FRONT_END_DEF(CatFn, "cat", cat_fn);
dispatch::OpDef<StackFn> g_stack = TENSOR_FRONT_END_DEF(StackFn, "stack", stack_fn);

}  // namespace

dispatch::OpDef<CatFn>& cat_op() { return g_cat; }
dispatch::OpDef<StackFn>& stack_op() { return g_stack; }

void register_kernel(DispatchKey backend, CatSlabKernel kernel) {
  dispatch::check_kernel_backend(backend, "cat/stack");
  g_cat_kernels.set(backend, kernel);
  g_cat.set(backend, &cat_fn<DispatchKey::CUDA>);
  g_stack.set(backend, &stack_fn<DispatchKey::CUDA>);
}

}  // namespace ops

// The list is checked before dispatch: an empty list (or undefined tensors) has no dispatch key.
static void check_list(TensorList tensors, const char* op) {
  TENSOR_CHECK(!tensors.empty(), "{}: expected a non-empty list of tensors", op);
  for (size_t i = 0; i < tensors.size(); ++i)
    TENSOR_CHECK(tensors[i].defined(), "{}: tensor {} in the list is undefined", op, i);
}
Tensor cat(TensorList tensors, int64_t dim) {
  check_list(tensors, "cat");
  return ops::cat_op()(tensors, dim);
}
Tensor stack(TensorList tensors, int64_t dim) {
  check_list(tensors, "stack");
  return ops::stack_op()(tensors, dim);
}

namespace {
// split, chunk and unbind: composites of views (narrow, select), dispatched so that wrapping
// layers see them; their pieces record, and Note [Multi-output views] marks them as one
// multi-output view.
std::vector<Tensor> split_composite(const Tensor& a, int64_t split_size, int64_t dim) {
  TENSOR_CHECK(a.defined(), "split: tensor is undefined");
  TENSOR_CHECK(a.dim() > 0, "split: cannot split a 0-dim tensor");
  dim = detail::wrap_dim(dim, a.dim(), "split");
  const int64_t n = a.size(dim);
  TENSOR_CHECK(split_size >= 0, "split: split_size must be non-negative, but got {} (shape {})", split_size,
               detail::shape_str(a.sizes()));
  TENSOR_CHECK(split_size > 0 || n == 0,
               "split: split_size can only be 0 if dim {} has size 0, but it has size {} (shape {})", dim, n,
               detail::shape_str(a.sizes()));
  // An empty dim still yields one (empty) piece, as PyTorch.
  const int64_t pieces = split_size > 0 ? std::max<int64_t>((n + split_size - 1) / split_size, 1) : 1;
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(pieces));
  for (int64_t i = 0; i < pieces; ++i) {
    int64_t start = i * split_size;
    out.push_back(a.narrow(dim, start, std::min(split_size, n - start)));
  }
  autograd::mark_multi_output_views(out, "SplitBackward0");  // Note [Multi-output views]
  return out;
}

std::vector<Tensor> split_with_sizes_composite(const Tensor& a, IntArrayRef split_sizes, int64_t dim) {
  TENSOR_CHECK(a.defined(), "split: tensor is undefined");
  TENSOR_CHECK(a.dim() > 0, "split: cannot split a 0-dim tensor");
  dim = detail::wrap_dim(dim, a.dim(), "split");
  const int64_t n = a.size(dim);
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    TENSOR_CHECK(s >= 0, "split: split_sizes {} contains a negative size", detail::shape_str(split_sizes));
    total += s;
  }
  TENSOR_CHECK(total == n, "split: split_sizes {} sum to {}, but dim {} has size {} (shape {})",
               detail::shape_str(split_sizes), total, dim, n, detail::shape_str(a.sizes()));
  std::vector<Tensor> out;
  out.reserve(split_sizes.size());
  int64_t start = 0;
  for (int64_t s : split_sizes) {
    out.push_back(a.narrow(dim, start, s));
    start += s;
  }
  autograd::mark_multi_output_views(out, "SplitWithSizesBackward0");  // Note [Multi-output views]
  return out;
}

std::vector<Tensor> chunk_composite(const Tensor& a, int64_t chunks, int64_t dim) {
  TENSOR_CHECK(a.defined(), "chunk: tensor is undefined");
  TENSOR_CHECK(a.dim() > 0, "chunk: cannot chunk a 0-dim tensor");
  TENSOR_CHECK(chunks > 0, "chunk: number of chunks must be greater than 0, but got {}", chunks);
  dim = detail::wrap_dim(dim, a.dim(), "chunk");
  const int64_t n = a.size(dim);
  const int64_t split_size = (n + chunks - 1) / chunks;
  // An empty dim gives `chunks` empty pieces rather than one (PyTorch's special case).
  if (split_size == 0 && n == 0) return split(a, std::vector<int64_t>(static_cast<size_t>(chunks), 0), dim);
  return split(a, split_size, dim);
}

std::vector<Tensor> unbind_composite(const Tensor& a, int64_t dim) {
  TENSOR_CHECK(a.defined(), "unbind: tensor is undefined");
  const int64_t nd = a.dim();
  TENSOR_CHECK(nd > 0, "unbind: cannot unbind a 0-dim tensor (shape {}, {}, dim {})", detail::shape_str(a.sizes()),
               a.dtype(), dim);
  TENSOR_CHECK(dim >= -nd && dim < nd,
               "unbind: dim {} is out of range for a tensor of shape {} ({}) with {} dims (expected a dim in [{}, {}])",
               dim, detail::shape_str(a.sizes()), a.dtype(), nd, -nd, nd - 1);
  if (dim < 0) dim += nd;
  const int64_t n = a.size(dim);
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(n));
  // Each piece is a select view with its own SelectBackward, so unused pieces contribute no
  // gradient (zeros), which is what libtorch's UnbindBackward (a stack of the grads) gives.
  for (int64_t i = 0; i < n; ++i) out.push_back(a.select(dim, i));
  autograd::mark_multi_output_views(out, "UnbindBackward0");  // Note [Multi-output views]
  return out;
}

dispatch::OpDef<ops::SplitFn> g_split = dispatch::view_composite_def<ops::SplitFn>("split", &split_composite);
dispatch::OpDef<ops::SplitWithSizesFn> g_split_with_sizes =
    dispatch::view_composite_def<ops::SplitWithSizesFn>("split_with_sizes", &split_with_sizes_composite);
dispatch::OpDef<ops::SplitFn> g_chunk = dispatch::view_composite_def<ops::SplitFn>("chunk", &chunk_composite);
dispatch::OpDef<ops::UnbindFn> g_unbind = dispatch::view_composite_def<ops::UnbindFn>("unbind", &unbind_composite);
}  // namespace

namespace ops {
dispatch::OpDef<SplitFn>& split_op() { return g_split; }
dispatch::OpDef<SplitWithSizesFn>& split_with_sizes_op() { return g_split_with_sizes; }
dispatch::OpDef<SplitFn>& chunk_op() { return g_chunk; }
dispatch::OpDef<UnbindFn>& unbind_op() { return g_unbind; }
}  // namespace ops

std::vector<Tensor> split(const Tensor& a, int64_t split_size, int64_t dim) {
  TENSOR_CHECK(a.defined(), "split: tensor is undefined");
  return g_split(a, split_size, dim);
}
std::vector<Tensor> split(const Tensor& a, IntArrayRef split_sizes, int64_t dim) {
  TENSOR_CHECK(a.defined(), "split: tensor is undefined");
  return g_split_with_sizes(a, split_sizes, dim);
}
std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim) {
  TENSOR_CHECK(a.defined(), "chunk: tensor is undefined");
  return g_chunk(a, chunks, dim);
}
std::vector<Tensor> unbind(const Tensor& a, int64_t dim) {
  TENSOR_CHECK(a.defined(), "unbind: tensor is undefined");
  return g_unbind(a, dim);
}

std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim) const {
  return tensor::split(*this, split_size, dim);
}
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const { return tensor::chunk(*this, chunks, dim); }
std::vector<Tensor> Tensor::unbind(int64_t dim) const { return tensor::unbind(*this, dim); }

}  // namespace tensor
