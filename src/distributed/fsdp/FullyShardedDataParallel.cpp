// FullyShardedDataParallel: flat parameter, shard, all-gather / free around forward and
// backward, gradient reduce-scatter, state dicts.
#include <algorithm>
#include <map>
#include <ostream>

#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/autograd/hooks.h"
#include "tensor/core/TensorImpl.h"
#include "tensor/distributed/fsdp.h"
#include "tensor/nn/modules.h"
#include "tensor/ops.h"

namespace tensor::distributed::fsdp {

// Note [FSDP design]
// A unit is one FullyShardedDataParallel module: the parameters of its wrapped module minus
// those under nested FSDP modules (units of their own), flattened in named_parameters() order
// into one flat parameter of numel_ elements, zero-padded to padded_numel_ (a multiple of the
// world size). Rank r keeps elements [r * S, (r + 1) * S) as shard_, a leaf registered as this
// module's parameter, so parameters() and any optimizer see only shards.
//
// The module keeps its own parameter tensors (its code reads them as always), but each one is
// re-pointed (TensorImpl::set_storage_and_dtype + geometry) at its offset in full_, one
// StorageImpl for the unit's unsharded flat parameter. full_ is freed between uses
// (StorageImpl::free_data keeps every tensor's metadata), so the parameter tensors, and every
// autograd node that saved them, hold no memory; unshard() reallocates full_ and all-gathers the
// shards into it, which makes the same tensors valid again for backward. The all-gather writes
// through an alias StorageImpl over full_'s memory: a collective bumps its outputs' version
// counter, and bumping full_'s would make autograd reject the parameters saved in forward.
//
// Order of events (PyTorch's FULL_SHARD):
//   forward:  unshard -> wrapped forward -> reshard; a hook on the output's gradient
//   backward: that hook (runs before any node of the unit) unshards again and queues the
//             end-of-backward callback; each parameter's post-accumulate-grad hook counts
//             gradients; once all are in, they are flattened, the full gradients dropped, the
//             flat gradient reduce-scattered (AVG, async) into a shard-sized gradient and full_
//             freed; the callback waits for the reduce-scatter and accumulates into shard_.grad().
// A parameter that got no gradient in this backward contributes zeros (the callback reduces
// whatever arrived), so every rank issues the same collectives in the same order.

namespace {

std::vector<int64_t> contiguous_strides(IntArrayRef sizes) {
  std::vector<int64_t> st(sizes.size(), 1);
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * std::max<int64_t>(sizes[i + 1], 1);
  return st;
}

// The FSDP modules directly below `m` (not below another FSDP module) and the parameters of
// `m`'s tree outside them, named relative to `m`.
// `wrapped` maps auto-wrapped children to their units.
void collect(const std::shared_ptr<nn::Module>& m, const std::string& prefix,
             const std::map<const nn::Module*, FullyShardedDataParallelImpl*>& wrapped,
             std::vector<std::pair<std::string, Tensor>>& params, std::vector<std::pair<std::string, Tensor>>& buffers,
             std::vector<std::pair<std::string, FullyShardedDataParallelImpl*>>& nested) {
  for (const auto& item : m->named_parameters(/*recurse=*/false)) params.emplace_back(prefix + item.key(), item.value());
  for (const auto& item : m->named_buffers(/*recurse=*/false)) buffers.emplace_back(prefix + item.key(), item.value());
  for (const auto& child : m->named_children()) {
    std::string path = prefix + child.key();
    auto w = wrapped.find(child.value().get());
    if (w != wrapped.end()) {
      nested.emplace_back(path, w->second);
      continue;
    }
    if (auto* f = dynamic_cast<FullyShardedDataParallelImpl*>(child.value().get())) {
      nested.emplace_back(path, f);
      continue;
    }
    collect(child.value(), path + ".", wrapped, params, buffers, nested);
  }
}

// The original parameter and buffer names of `m`'s tree in named_parameters() order, looking
// through FSDP modules into the modules they wrap.
void original_names(const std::shared_ptr<nn::Module>& m, const std::string& prefix, std::vector<std::string>& params,
                    std::vector<std::string>& buffers) {
  for (const auto& item : m->named_parameters(/*recurse=*/false)) params.push_back(prefix + item.key());
  for (const auto& item : m->named_buffers(/*recurse=*/false)) buffers.push_back(prefix + item.key());
  for (const auto& child : m->named_children()) {
    std::shared_ptr<nn::Module> c = child.value();
    if (auto* f = dynamic_cast<FullyShardedDataParallelImpl*>(c.get())) c = f->module();
    original_names(c, prefix + child.key() + ".", params, buffers);
  }
}

}  // namespace

struct MemoryCounter {
  int64_t current = 0;
  int64_t peak = 0;
};

void FullyShardedDataParallelImpl::init(std::shared_ptr<nn::Module> module, std::shared_ptr<ProcessGroup> pg) {
  TENSOR_CHECK(module != nullptr, "FullyShardedDataParallel: the module is null");
  TENSOR_CHECK(pg != nullptr, "FullyShardedDataParallel: the process group is null");
  module_ = std::move(module);
  pg_ = std::move(pg);
  counter_ = std::make_shared<MemoryCounter>();
  std::map<const nn::Module*, FullyShardedDataParallelImpl*> wrapped;
  if (options_.auto_wrap_children() || options_.auto_wrap_policy()) {
    auto_wrap();
    for (size_t i = 0; i < step_units_.size(); ++i)
      if (step_units_[i]) wrapped[step_units_[i]->module_.get()] = step_units_[i].get();
  }
  std::vector<std::pair<std::string, Tensor>> params;
  collect(module_, "", wrapped, params, buffers_, nested_);
  for (auto& [path, f] : nested_) {
    std::string name = path;
    std::replace(name.begin(), name.end(), '.', '_');
    register_module(name, f->shared_from_this());
    for (auto& [p, unit] : f->units_in_tree("")) unit->counter_ = counter_;
  }
  if (params.empty()) return;

  const int ws = pg_->size(), rank = pg_->rank();
  dtype_ = params[0].second.scalar_type();
  device_ = params[0].second.device();
  for (auto& [name, p] : params) {
    TENSOR_CHECK(p.scalar_type() == dtype_ && p.device() == device_,
                 "FullyShardedDataParallel: the parameters of one unit must share a dtype and device to form one flat "
                 "parameter; '{}' is {} on {} but '{}' is {} on {} (wrap them in separate FullyShardedDataParallel units)",
                 params[0].first, dtype_, device_.str(), name, p.scalar_type(), p.device().str());
    TENSOR_CHECK(p.is_leaf(), "FullyShardedDataParallel: parameter '{}' is not a leaf tensor", name);
    names_.push_back(name);
    params_.push_back(p);
    offsets_.push_back(numel_);
    numel_ += p.numel();
  }
  padded_numel_ = (numel_ + ws - 1) / ws * ws;
  shard_numel_ = padded_numel_ / ws;

  // The initial values: every rank's module was built the same way (same seed), as PyTorch
  // assumes unless sync_module_states; each keeps its slice.
  Tensor shard;
  {
    NoGradGuard ng;
    std::vector<Tensor> pieces;
    for (auto& p : params_) pieces.push_back(p.detach().reshape({-1}));
    if (padded_numel_ > numel_) pieces.push_back(zeros({padded_numel_ - numel_}, params_[0].options()));
    Tensor flat = cat(pieces, 0);
    shard = flat.narrow(0, rank * shard_numel_, shard_numel_).clone();
  }
  shard_ = register_parameter("flat_param", shard, /*requires_grad=*/true);

  const size_t es = element_size(dtype_);
  full_ = make_intrusive<StorageImpl>(static_cast<size_t>(padded_numel_) * es, device_, get_allocator(device_.type()));
  for (size_t i = 0; i < params_.size(); ++i) {
    TensorImpl* impl = params_[i].unsafeGetTensorImpl();
    std::vector<int64_t> sizes(params_[i].sizes().begin(), params_[i].sizes().end());
    impl->set_storage_and_dtype(full_, dtype_, device_);
    impl->set_sizes_and_strides(sizes, contiguous_strides(sizes), offsets_[i]);
  }
  full_->free_data();
  stats_.shard_bytes = shard_numel_ * static_cast<int64_t>(es);
  stats_.full_bytes = numel_ * static_cast<int64_t>(es);

  for (auto& p : params_) {
    if (!p.requires_grad()) continue;
    ++grads_expected_;
    hook_handles_.push_back(
        autograd::register_post_accumulate_grad_hook(p, [this](const Tensor&) { on_grad_accumulated(); }));
  }
}

FullyShardedDataParallelImpl::FullyShardedDataParallelImpl(std::shared_ptr<nn::Module> child,
                                                           std::shared_ptr<ProcessGroup> pg, FSDPOptions options, bool)
    : nn::Module("FullyShardedDataParallel"), options_(std::move(options)) {
  options_.auto_wrap_children(false).auto_wrap_policy(nullptr);
  init(std::move(child), std::move(pg));
}

void FullyShardedDataParallelImpl::auto_wrap() {
  auto seq = std::dynamic_pointer_cast<nn::SequentialImpl>(module_);
  TENSOR_CHECK(seq != nullptr,
               "FullyShardedDataParallel: auto_wrap_children / auto_wrap_policy need a Sequential (FSDP runs its steps "
               "one at a time), got a {}; wrap the children of other modules in FullyShardedDataParallel by hand",
               module_->name());
  auto children = seq->named_children();
  TENSOR_CHECK(children.size() == seq->size(), "FullyShardedDataParallel: the Sequential's children do not match its steps");
  step_units_.assign(seq->size(), nullptr);
  for (size_t i = 0; i < seq->size(); ++i) {
    const std::string& name = children[i].key();
    std::shared_ptr<nn::Module> child = seq->ptr(i);
    if (dynamic_cast<FullyShardedDataParallelImpl*>(child.get()) || child->parameters().empty()) continue;
    if (options_.auto_wrap_policy() && !options_.auto_wrap_policy()(name, *child)) continue;
    step_units_[i] = std::shared_ptr<FullyShardedDataParallelImpl>(new FullyShardedDataParallelImpl(child, pg_, options_, true));
  }
  auto_wrapped_ = true;
}

Tensor FullyShardedDataParallelImpl::forward_auto_wrapped(const Tensor& input) {
  auto seq = std::static_pointer_cast<nn::SequentialImpl>(module_);
  TENSOR_CHECK(seq->size() == step_units_.size(),
               "FullyShardedDataParallel: the wrapped Sequential changed size after wrapping ({} steps, {} when wrapped)",
               seq->size(), step_units_.size());
  Tensor x = input;
  for (size_t i = 0; i < step_units_.size(); ++i) {
    auto& u = step_units_[i];
    if (!u) {
      x = seq->forward_at(i, x);
      continue;
    }
    u->pre_forward();
    try {
      x = seq->forward_at(i, x);
    } catch (...) {
      u->reshard();
      throw;
    }
    x = u->post_forward(x);
  }
  return x;
}

FullyShardedDataParallelImpl::~FullyShardedDataParallelImpl() {
  for (size_t i = 0, h = 0; i < params_.size(); ++i)
    if (params_[i].requires_grad() && h < hook_handles_.size())
      autograd::remove_post_accumulate_grad_hook(params_[i], hook_handles_[h++]);
  if (rs_work_) rs_work_->wait();
}

std::vector<std::pair<std::string, FullyShardedDataParallelImpl*>> FullyShardedDataParallelImpl::units_in_tree(
    const std::string& prefix) {
  std::vector<std::pair<std::string, FullyShardedDataParallelImpl*>> out{{prefix, this}};
  for (auto& [path, f] : nested_)
    for (auto& u : f->units_in_tree(prefix + path + ".")) out.push_back(u);
  return out;
}

void FullyShardedDataParallelImpl::unshard() {
  if (numel_ == 0 || full_->data() != nullptr) return;
  const size_t nbytes = static_cast<size_t>(padded_numel_) * element_size(dtype_);
  full_->resize(nbytes);
  counter_->current += static_cast<int64_t>(nbytes);
  counter_->peak = std::max(counter_->peak, counter_->current);
  auto alias = make_intrusive<StorageImpl>(DataPtr{full_->data(), nullptr, nullptr}, nbytes, device_);
  auto impl = make_intrusive<TensorImpl>(alias, dtype_, device_);
  impl->set_sizes_contiguous({padded_numel_});
  Tensor flat(impl);
  NoGradGuard ng;
  pg_->allgather(flat.chunk(pg_->size(), 0), shard_.detach())->wait();
}

void FullyShardedDataParallelImpl::reshard() {
  if (numel_ == 0 || full_->data() == nullptr) return;
  counter_->current -= static_cast<int64_t>(full_->nbytes());
  full_->free_data();
}

void FullyShardedDataParallelImpl::pre_forward() { unshard(); }

Tensor FullyShardedDataParallelImpl::post_forward(const Tensor& out) {
  if (numel_ == 0) return out;
  if (options_.reshard_after_forward()) reshard();
  if (GradMode::is_enabled() && out.defined() && out.requires_grad() && grads_expected_ > 0)
    out.register_hook([this](Tensor grad) {
      pre_backward();
      return grad;
    });
  return out;
}

void FullyShardedDataParallelImpl::pre_backward() {
  if (backward_started_) return;
  backward_started_ = true;
  unshard();
  autograd::queue_callback([this] { finish_backward(); });
}

void FullyShardedDataParallelImpl::on_grad_accumulated() {
  if (++grads_ready_ == grads_expected_) reduce_grads();
}

void FullyShardedDataParallelImpl::reduce_grads() {
  if (reduced_) return;
  NoGradGuard ng;
  Tensor flat = zeros({padded_numel_}, shard_.options());
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& g = params_[i].mutable_grad();
    if (!g.defined()) continue;
    flat.narrow(0, offsets_[i], params_[i].numel()).copy_(g.reshape({-1}));
    g = Tensor();  // the full gradient is not kept: only the shard's survives
  }
  rs_input_ = flat;
  rs_output_ = empty({shard_numel_}, shard_.options());
  rs_work_ = pg_->reduce_scatter(rs_output_, flat.chunk(pg_->size(), 0), ReduceScatterOptions().op(ReduceOp::AVG));
  reduced_ = true;
  reshard();
}

void FullyShardedDataParallelImpl::finish_backward() {
  if (!reduced_) reduce_grads();
  rs_work_->wait();
  {
    NoGradGuard ng;
    Tensor& g = shard_.mutable_grad();
    if (g.defined())
      g.add_(rs_output_);
    else
      g = rs_output_;
  }
  rs_work_.reset();
  rs_input_ = Tensor();
  rs_output_ = Tensor();
  reshard();
  grads_ready_ = 0;
  reduced_ = false;
  backward_started_ = false;
}

FSDPMemoryStats FullyShardedDataParallelImpl::memory_stats() {
  FSDPMemoryStats s;
  for (auto& [path, u] : units_in_tree("")) {
    s.shard_bytes += u->stats_.shard_bytes;
    s.full_bytes += u->stats_.full_bytes;
  }
  s.unsharded_bytes = counter_->current;
  s.peak_unsharded_bytes = counter_->peak;
  return s;
}

void FullyShardedDataParallelImpl::reset_peak_memory_stats() { counter_->peak = counter_->current; }

std::vector<std::pair<std::string, Tensor>> FullyShardedDataParallelImpl::full_state_dict() {
  const bool keep = !options_.rank0_only() || pg_->rank() == 0;
  std::map<std::string, Tensor> by_name;
  NoGradGuard ng;
  for (auto& [prefix, u] : units_in_tree("")) {
    bool was_gathered = u->numel_ == 0 || u->full_->data() != nullptr;
    u->unshard();
    if (keep)
      for (size_t i = 0; i < u->params_.size(); ++i) by_name[prefix + u->names_[i]] = u->params_[i].detach().clone();
    if (!was_gathered) u->reshard();
    if (keep)
      for (const auto& [name, b] : u->buffers_) by_name[prefix + name] = b.detach().clone();
  }
  std::vector<std::pair<std::string, Tensor>> out;
  if (!keep) return out;
  // Parameters then buffers, in the wrapped module's own named_parameters() order.
  std::vector<std::string> params, buffers;
  original_names(module_, "", params, buffers);
  for (const auto* names : {&params, &buffers})
    for (const auto& n : *names) {
      auto it = by_name.find(n);
      if (it == by_name.end()) continue;
      out.emplace_back(n, it->second);
      by_name.erase(it);
    }
  for (auto& kv : by_name) out.emplace_back(kv.first, kv.second);
  return out;
}

void FullyShardedDataParallelImpl::load_full_state_dict(const std::vector<std::pair<std::string, Tensor>>& state) {
  std::map<std::string, Tensor> by_name(state.begin(), state.end());
  auto find = [&](const std::string& name) -> const Tensor& {
    auto it = by_name.find(name);
    TENSOR_CHECK(it != by_name.end(), "FullyShardedDataParallel::load_full_state_dict: missing key '{}'", name);
    return it->second;
  };
  NoGradGuard ng;
  for (auto& [prefix, u] : units_in_tree("")) {
    if (u->numel_ > 0) {
      Tensor flat = zeros({u->padded_numel_}, u->shard_.options());
      for (size_t i = 0; i < u->params_.size(); ++i) {
        const std::string name = prefix + u->names_[i];
        const Tensor& t = find(name);
        TENSOR_CHECK(t.sizes() == u->params_[i].sizes(),
                     "FullyShardedDataParallel::load_full_state_dict: '{}' has shape {} but the parameter has shape {}",
                     name, ::tensor::detail::shape_str(t.sizes()), ::tensor::detail::shape_str(u->params_[i].sizes()));
        flat.narrow(0, u->offsets_[i], u->params_[i].numel()).copy_(t.reshape({-1}));
      }
      u->shard_.copy_(flat.narrow(0, pg_->rank() * u->shard_numel_, u->shard_numel_));
      if (u->full_->data() != nullptr) {  // gathered right now: keep it consistent
        u->reshard();
        u->unshard();
      }
    }
    for (const auto& [name, b] : u->buffers_) b.copy_(find(prefix + name));
  }
}

ShardedStateDict FullyShardedDataParallelImpl::sharded_state_dict() {
  ShardedStateDict sd;
  sd.world_size = pg_->size();
  sd.rank = pg_->rank();
  for (auto& [prefix, u] : units_in_tree("")) {
    if (u->numel_ == 0) continue;
    FlatShard s;
    s.local = u->shard_.detach().clone();
    s.offset = pg_->rank() * u->shard_numel_;
    s.numel = u->numel_;
    s.padded_numel = u->padded_numel_;
    for (auto& n : u->names_) s.param_names.push_back(prefix + n);
    sd.shards.emplace_back(prefix, std::move(s));
  }
  return sd;
}

void FullyShardedDataParallelImpl::load_sharded_state_dict(const ShardedStateDict& state) {
  TENSOR_CHECK(state.world_size == pg_->size() && state.rank == pg_->rank(),
               "FullyShardedDataParallel::load_sharded_state_dict: the state was saved by rank {} of {} ranks, but this "
               "is rank {} of {} (load a full state dict to change the world size)",
               state.rank, state.world_size, pg_->rank(), pg_->size());
  std::map<std::string, const FlatShard*> by_unit;
  for (auto& [k, s] : state.shards) by_unit[k] = &s;
  NoGradGuard ng;
  for (auto& [prefix, u] : units_in_tree("")) {
    if (u->numel_ == 0) continue;
    auto it = by_unit.find(prefix);
    TENSOR_CHECK(it != by_unit.end(), "FullyShardedDataParallel::load_sharded_state_dict: no shard for unit '{}'", prefix);
    const FlatShard& s = *it->second;
    TENSOR_CHECK(s.numel == u->numel_ && s.padded_numel == u->padded_numel_ &&
                     s.offset == pg_->rank() * u->shard_numel_ && s.local.defined() && s.local.numel() == u->shard_numel_,
                 "FullyShardedDataParallel::load_sharded_state_dict: unit '{}' holds {} elements ({} padded, shard of {} at "
                 "offset {}), the saved shard {} ({} padded, {} at offset {})",
                 prefix, u->numel_, u->padded_numel_, u->shard_numel_, pg_->rank() * u->shard_numel_, s.numel,
                 s.padded_numel, s.local.defined() ? s.local.numel() : 0, s.offset);
    u->shard_.copy_(s.local);
    if (u->full_->data() != nullptr) {
      u->reshard();
      u->unshard();
    }
  }
}

void FullyShardedDataParallelImpl::train(bool on) {
  nn::Module::train(on);
  module_->train(on);
}

void FullyShardedDataParallelImpl::pretty_print(std::ostream& stream) const {
  stream << "FullyShardedDataParallel(world_size=" << pg_->size() << ", numel=" << numel_ << ", padded=" << padded_numel_
         << ", shard=" << shard_numel_ << ")";
}

}  // namespace tensor::distributed::fsdp
