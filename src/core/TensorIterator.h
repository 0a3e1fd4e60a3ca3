// Internal: the elementwise iteration engine (Note [TensorIterator]).
#pragma once

#include <omp.h>

#include <optional>

#include "src/core/Check.h"
#include "src/core/Parallel.h"
#include "tensor/core/Tensor.h"

namespace tensor {

// Note [TensorIterator]
// Every elementwise op goes through one engine that, once per call: broadcasts the inputs,
// computes the common dtype by PyTorch's promotion rules, allocates or checks the outputs,
// casts inputs whose dtype differs from the common one, turns sizes into byte strides,
// orders dims so the output is walked in memory order, and merges dims that are contiguous
// with each other. Kernels then see at most a 2-D loop of (data pointers, byte strides),
// and a fully contiguous op is a single 1-D loop that SIMD code handles. Outputs are operands
// 0..noutputs-1, inputs follow.

class TensorIterator {
 public:
  static constexpr int kMaxOperands = 5;
  static constexpr int64_t kGrainSize = detail::kGrain;  // the library-wide grain (src/core/Parallel.h)

  TensorIterator& name(const char* n) { name_ = n; return *this; }
  // Operands are held by pointer, not copied (Note [Iterator operands are borrowed]): the
  // caller's tensors must outlive the iterator, so temporaries are refused at compile time.
  /// An output to allocate.
  TensorIterator& add_output() { ops_[nops_++].tensor = nullptr; ++noutputs_; return *this; }
  /// An output; undefined means "allocate it".
  TensorIterator& add_output(const Tensor& t) {
    ops_[nops_++].tensor = t.defined() ? &t : nullptr;
    ++noutputs_;
    return *this;
  }
  TensorIterator& add_input(const Tensor& t) { ops_[nops_++].tensor = &t; return *this; }
  TensorIterator& add_output(Tensor&&) = delete;
  TensorIterator& add_input(Tensor&&) = delete;
  /// Integer inputs compute in the default float dtype (true division, exp of ints).
  TensorIterator& promote_integer_inputs_to_float(bool v = true) { int_to_float_ = v; return *this; }
  /// The outputs get this dtype regardless of the inputs (bool for comparisons).
  TensorIterator& output_dtype(ScalarType t) { static_out_dtype_ = t; return *this; }
  /// Inputs are cast to this dtype instead of the promoted one.
  TensorIterator& common_dtype(ScalarType t) { forced_common_ = t; return *this; }
  /// Do not cast inputs (kernel reads each in its own dtype, e.g. copy, where's condition).
  TensorIterator& no_input_cast(int op) { ops_[op].no_cast = true; return *this; }
  /// Output 0 is also input `op` (in-place): its shape must equal the broadcast shape.
  TensorIterator& inplace() { inplace_ = true; return *this; }
  /// Output keeps its shape and inputs must broadcast to it (copy_, fill).
  TensorIterator& resize_outputs(bool v) { resize_outputs_ = v; return *this; }

  /// Runs the analysis described in Note [TensorIterator]. Throws tensor::Error naming the op.
  void build();

  int ntensors() const { return nops_; }
  int noutputs() const { return noutputs_; }
  ScalarType common_dtype() const { return common_; }
  ScalarType dtype(int op) const { return ops_[op].compute().dtype(); }
  Device device() const { return device_; }
  int ndim() const { return ndim_; }
  int64_t numel() const { return numel_; }
  IntArrayRef shape() const { return IntArrayRef(shape_, ndim_); }
  const Tensor& output(int i = 0) const { return ops_[i].user(); }
  char* data(int op) const { return ops_[op].data; }
  int64_t stride(int op, int dim) const { return ops_[op].stride[dim]; }
  /// True when every operand is contiguous in the iteration order (one 1-D loop covers all).
  bool is_contiguous() const;
  /// True when operand `op` has stride 0 everywhere (a broadcast scalar).
  bool is_scalar(int op) const;
  /// True when input `op` is a 0-dim CPU tensor in an op on another device: data(op) is host
  /// memory, which the backend's kernel reads on the host and passes by value.
  bool is_cpu_scalar(int op) const { return ops_[op].cpu_scalar; }
  bool is_meta() const { return device_.is_meta(); }

  /// Calls loop(data, strides, size0, size1): data[op] points at the first element,
  /// strides[op] is the inner byte stride and strides[ntensors + op] the outer one.
  /// Calls it over the whole range, in parallel above the grain.
  template <class F>
  void for_each(const F& loop, int64_t grain = kGrainSize) const;
  /// Same, single-threaded over linear range [begin, end).
  template <class F>
  void serial_for_each(const F& loop, int64_t begin, int64_t end) const;

  /// Copies computed temporaries back into outputs whose dtype differed (out= with casting).
  void finish();

 private:
  // Note [Iterator operands are borrowed]
  // Copying a Tensor costs an atomic increment and decrement; an iterator built per op call
  // would pay a dozen of them for a 1-element add. Operands therefore point at the caller's
  // tensors, and own only what the iterator itself creates: an allocated output, a cast copy
  // of an input, or a temporary output of the kernel's dtype.
  struct Operand {
    const Tensor* tensor = nullptr;  // the caller's tensor; null for an output to allocate
    Tensor owned;                    // the allocated output
    Tensor temp;                     // cast input or temp output, when the kernel can't use the user's
    char* data = nullptr;
    int64_t stride[8] = {};
    bool no_cast = false;
    bool cpu_scalar = false;  // a 0-dim CPU input of a CUDA op (Note [CPU scalars in CUDA ops])
    const Tensor& user() const { return tensor ? *tensor : owned; }
    const Tensor& compute() const { return temp.defined() ? temp : user(); }
  };
  void compute_shape();
  void check_overlap() const;
  void compute_types();
  void allocate_outputs();
  void compute_strides();
  void reorder_and_coalesce();

  const char* name_ = "op";
  Operand ops_[kMaxOperands];
  int nops_ = 0;
  int noutputs_ = 0;
  bool int_to_float_ = false;
  bool inplace_ = false;
  bool resize_outputs_ = true;
  std::optional<ScalarType> static_out_dtype_;
  std::optional<ScalarType> forced_common_;
  ScalarType common_ = ScalarType::Undefined;
  Device device_ = Device(kCPU);
  int64_t shape_[8] = {};
  int ndim_ = 0;
  int64_t numel_ = 0;
  DimVector bshape_;
};

template <class F>
void TensorIterator::serial_for_each(const F& loop, int64_t begin, int64_t end) const {
  if (begin >= end) return;
  char* ptrs[kMaxOperands];
  int64_t strides[2 * kMaxOperands];
  const int n = nops_;
  for (int op = 0; op < n; ++op) {
    strides[op] = ndim_ > 0 ? ops_[op].stride[0] : 0;
    strides[n + op] = ndim_ > 1 ? ops_[op].stride[1] : 0;
  }
  if (ndim_ <= 1) {
    for (int op = 0; op < n; ++op) ptrs[op] = ops_[op].data + begin * strides[op];
    loop(ptrs, strides, end - begin, int64_t(1));
    return;
  }
  int64_t idx[8];
  int64_t rem = begin;
  for (int d = 0; d < ndim_; ++d) {
    idx[d] = rem % shape_[d];
    rem /= shape_[d];
  }
  int64_t linear = begin;
  while (linear < end) {
    for (int op = 0; op < n; ++op) {
      char* p = ops_[op].data;
      for (int d = 0; d < ndim_; ++d) p += idx[d] * ops_[op].stride[d];
      ptrs[op] = p;
    }
    int64_t left = end - linear;
    int64_t step;
    if (idx[0] == 0 && left >= shape_[0]) {
      int64_t rows = std::min(shape_[1] - idx[1], left / shape_[0]);
      loop(ptrs, strides, shape_[0], rows);
      step = rows * shape_[0];
    } else {
      int64_t cols = std::min(shape_[0] - idx[0], left);
      loop(ptrs, strides, cols, int64_t(1));
      step = cols;
    }
    linear += step;
    // Advance the multi-index by `step` elements.
    int64_t carry = step;
    for (int d = 0; d < ndim_ && carry; ++d) {
      int64_t v = idx[d] + carry;
      idx[d] = v % shape_[d];
      carry = v / shape_[d];
    }
  }
}

template <class F>
void TensorIterator::for_each(const F& loop, int64_t grain) const {
  if (numel_ == 0) return;
  int nthreads = omp_get_max_threads();
  if (numel_ < grain || nthreads <= 1 || omp_in_parallel()) {
    serial_for_each(loop, 0, numel_);
    return;
  }
  int64_t chunks = std::min<int64_t>(nthreads, (numel_ + grain - 1) / grain);
#pragma omp parallel num_threads(static_cast<int>(chunks))
  {
    int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t per = (numel_ + nt - 1) / nt;
    int64_t b = t * per, e = std::min(numel_, b + per);
    serial_for_each(loop, b, e);
  }
}

/// Throws like PyTorch when `out` has internal overlap (a stride-0 dim of size > 1).
void check_no_internal_overlap(const Tensor& out, const char* op);
/// Throws like PyTorch when `in` partially overlaps `out` in memory (identical layouts, i.e.
/// in-place ops, are fine).
void check_no_partial_overlap(const Tensor& out, const Tensor& in, const char* op);

/// PyTorch's result_type over tensors (wrapped numbers and 0-dim tensors as weak types).
ScalarType result_type_of(const Tensor* tensors, int n);
/// Can a value of dtype `from` be stored in `to` without changing category (float into int, ...)?
bool can_cast(ScalarType from, ScalarType to);
/// A 0-dim CPU tensor holding s, flagged as a wrapped number (weak type).
Tensor wrapped_scalar(const Scalar& s);

}  // namespace tensor
