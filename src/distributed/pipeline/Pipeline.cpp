// Pipeline parallelism: stages, the GPipe and 1F1B schedules (docs/distributed.md).
#include "tensor/distributed/pipeline.h"

#include <algorithm>
#include <limits>

#include "src/core/Check.h"
#include "tensor/autograd/autograd.h"
#include "tensor/ops.h"

namespace tensor::distributed::pipelining {

namespace {

void check_split_points(const std::vector<int64_t>& split_points, int stage_index, const char* who) {
  for (size_t i = 0; i < split_points.size(); ++i) {
    TENSOR_CHECK(split_points[i] > 0 && (i == 0 || split_points[i] > split_points[i - 1]),
                 "{}: split points must be positive and strictly increasing (got {})", who,
                 detail::shape_str(split_points));
  }
  TENSOR_CHECK(stage_index >= 0 && stage_index <= static_cast<int>(split_points.size()),
               "{}: stage_index {} is out of range: split points {} make {} stages", who, stage_index,
               detail::shape_str(split_points), split_points.size() + 1);
}

}  // namespace

std::pair<int64_t, int64_t> stage_layer_range(int64_t num_layers, const std::vector<int64_t>& split_points,
                                              int stage_index) {
  check_split_points(split_points, stage_index, "pipelining::stage_layer_range");
  TENSOR_CHECK(split_points.empty() || split_points.back() < num_layers,
               "pipelining::stage_layer_range: split point {} leaves stage {} without layers ({} layers in all)",
               split_points.empty() ? 0 : split_points.back(), split_points.size(), num_layers);
  int64_t begin = stage_index == 0 ? 0 : split_points[stage_index - 1];
  int64_t end = stage_index < static_cast<int>(split_points.size()) ? split_points[stage_index] : num_layers;
  return {begin, end};
}

StageBuilder::StageBuilder(std::vector<int64_t> split_points, int stage_index)
    : split_points_(std::move(split_points)), stage_index_(stage_index) {
  check_split_points(split_points_, stage_index_, "pipelining::build_stage");
}

bool StageBuilder::keeps(int64_t index) const {
  int64_t begin = stage_index_ == 0 ? 0 : split_points_[stage_index_ - 1];
  int64_t end = stage_index_ < static_cast<int>(split_points_.size()) ? split_points_[stage_index_]
                                                                      : std::numeric_limits<int64_t>::max();
  return index >= begin && index < end;
}

nn::Sequential StageBuilder::finish() {
  TENSOR_CHECK(split_points_.empty() || split_points_.back() < next_,
               "pipelining::build_stage: split point {} leaves the last stage without layers (the model has {} layers)",
               split_points_.empty() ? 0 : split_points_.back(), next_);
  return stage_;
}

// ---- PipelineStage ----

PipelineStage::PipelineStage(nn::Sequential stage_module, int stage_index, int num_stages,
                             std::shared_ptr<ProcessGroup> pg)
    : PipelineStage(stage_module.ptr(), [seq = stage_module.ptr()](Tensor x) { return seq->forward(std::move(x)); },
                    stage_index, num_stages, std::move(pg)) {}

PipelineStage::PipelineStage(std::shared_ptr<nn::Module> module, std::function<Tensor(Tensor)> forward,
                             int stage_index, int num_stages, std::shared_ptr<ProcessGroup> pg)
    : module_(std::move(module)), forward_(std::move(forward)), stage_index_(stage_index), num_stages_(num_stages),
      pg_(std::move(pg)) {
  TENSOR_CHECK(module_ && forward_, "PipelineStage: the stage module and its forward must be given");
  TENSOR_CHECK(pg_ != nullptr, "PipelineStage: the process group is null");
  TENSOR_CHECK(num_stages_ >= 1, "PipelineStage: num_stages must be at least 1 (got {})", num_stages_);
  TENSOR_CHECK(num_stages_ == pg_->size(),
               "PipelineStage: num_stages is {} but the process group has {} ranks (one stage per rank)", num_stages_,
               pg_->size());
  TENSOR_CHECK(stage_index_ >= 0 && stage_index_ < num_stages_,
               "PipelineStage: stage_index {} is out of range for {} stages", stage_index_, num_stages_);
  TENSOR_CHECK(stage_index_ == pg_->rank(),
               "PipelineStage: stage_index {} must equal this process's rank in the group ({}): stage i runs on "
               "group rank i",
               stage_index_, pg_->rank());
}

// ---- schedules ----

// Note [Pipeline wire protocol]
// Stage s sends to stage s + 1, before its first activation of a step, a header of
// kHeaderLen int64s: a magic number, num_stages, s, n_microbatches, the activation's dtype,
// its number of dims and its sizes. The receiver checks that the stages agree (a rank
// launched with another micro-batch count fails here with a clear error instead of exchanging
// mis-sized buffers) and allocates its receive buffers from it. Every micro-batch then has
// its own tags (forward activation 1 + 2m, backward gradient 2 + 2m), so Gloo matches them
// whatever order the schedule posts them in. Sends are asynchronous (the Work keeps the
// tensor alive) and waited at the end of the step; receives are waited when needed, so a
// dead or stalled peer surfaces as the group's timeout error.
namespace {
constexpr int64_t kHeaderMagic = 0x504950454c4e31;  // "PIPELN1"
constexpr int kMaxDims = 10;
constexpr int kHeaderLen = 6 + kMaxDims;
constexpr int kHeaderTag = 0;
int forward_tag(int m) { return 1 + 2 * m; }
int backward_tag(int m) { return 2 + 2 * m; }

// send / recv post at once on this thread and may raise there (a dead peer): a backend that
// raises something other than tensor::Error gets it turned into one naming the stage.
std::shared_ptr<Work> post(ProcessGroup& pg, bool send, const Tensor& t, int peer, int tag, const char* who,
                           int stage) {
  try {
    return send ? pg.send(t, peer, tag) : pg.recv(t, peer, tag);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    TENSOR_ERROR("{}: stage {}: {} of {} {} rank {} (tag {}) failed: {}", who, stage, send ? "send" : "recv",
                 detail::shape_str(t.sizes()), send ? "to" : "from", peer, tag, e.what());
  }
}
}  // namespace

PipelineSchedule::PipelineSchedule(PipelineStage& stage, int n_microbatches, LossFn loss_fn)
    : stage_(stage), n_microbatches_(n_microbatches), loss_fn_(std::move(loss_fn)) {
  TENSOR_CHECK(n_microbatches_ >= 1, "pipeline schedule: n_microbatches must be at least 1 (got {})", n_microbatches_);
  TENSOR_CHECK(!stage_.is_last() || loss_fn_, "pipeline schedule: the last stage needs a loss_fn");
}

PipelineSchedule::~PipelineSchedule() = default;

ScheduleGPipe::ScheduleGPipe(PipelineStage& stage, int n_microbatches, LossFn loss_fn)
    : PipelineSchedule(stage, n_microbatches, std::move(loss_fn)) {}

std::vector<PipelineSchedule::Action> ScheduleGPipe::actions() const {
  std::vector<Action> out;
  for (int m = 0; m < n_microbatches_; ++m) out.push_back({true, m});
  for (int m = 0; m < n_microbatches_; ++m) out.push_back({false, m});
  return out;
}

Schedule1F1B::Schedule1F1B(PipelineStage& stage, int n_microbatches, LossFn loss_fn)
    : PipelineSchedule(stage, n_microbatches, std::move(loss_fn)) {}

std::vector<PipelineSchedule::Action> Schedule1F1B::actions() const {
  const int n = n_microbatches_;
  const int warmup = std::min(stage_.num_stages() - stage_.stage_index() - 1, n);
  std::vector<Action> out;
  int f = 0, b = 0;
  for (; f < warmup; ++f) out.push_back({true, f});
  while (f < n) {  // steady state: one forward, one backward
    out.push_back({true, f++});
    out.push_back({false, b++});
  }
  while (b < n) out.push_back({false, b++});  // cool-down
  return out;
}

std::vector<Tensor> PipelineSchedule::step(const Tensor& input, const Tensor& target) {
  const int n = n_microbatches_;
  const int s = stage_.stage_index();
  const int num_stages = stage_.num_stages();
  const bool first = stage_.is_first(), last = stage_.is_last();
  ProcessGroup& pg = *stage_.group();
  const char* who = name();

  auto split = [&](const Tensor& t, const char* what) {
    TENSOR_CHECK(t.dim() >= 1, "{}::step: the {} must have a batch dim (got a 0-dim tensor)", who, what);
    TENSOR_CHECK(t.size(0) % n == 0,
                 "{}::step: the {}'s batch of {} rows (shape {}) does not split into {} equal micro-batches", who, what,
                 t.size(0), detail::shape_str(t.sizes()), n);
    return t.chunk(n, 0);
  };
  std::vector<Tensor> inputs, targets;
  if (first) {
    TENSOR_CHECK(input.defined(), "{}::step: stage 0 must be given the input batch", who);
    inputs = split(input, "input");
  } else {
    TENSOR_CHECK(!input.defined(), "{}::step: only stage 0 takes an input (this is stage {})", who, s);
  }
  if (last) {
    TENSOR_CHECK(target.defined(), "{}::step: the last stage ({}) must be given the target", who, s);
    targets = split(target, "target");
  } else {
    TENSOR_CHECK(!target.defined(), "{}::step: only the last stage ({}) takes a target (this is stage {})", who,
                 num_stages - 1, s);
  }

  // Per micro-batch state: the stage's input (a leaf requiring grad, except on stage 0), its
  // output (or the loss on the last stage); dropped after its backward.
  std::vector<Tensor> stage_in(n), stage_out(n);
  std::vector<Tensor> losses(last ? n : 0);
  std::vector<std::shared_ptr<Work>> sends;
  std::vector<int64_t> recv_shape, out_shape;
  ScalarType recv_dtype = kFloat32, out_dtype = kFloat32;
  bool have_header = false, sent_header = false;
  int live = 0;
  max_live_ = 0;

  auto receive_header = [&] {
    Tensor h = empty({kHeaderLen}, TensorOptions().dtype(kInt64));
    post(pg, false, h, s - 1, kHeaderTag, who, s)->wait();
    const int64_t* p = h.data_ptr<int64_t>();
    TENSOR_CHECK(p[0] == kHeaderMagic, "{}: stage {} got a malformed header from stage {}", who, s, s - 1);
    TENSOR_CHECK(p[1] == num_stages && p[2] == s - 1,
                 "{}: stage {} of {} got a header from a rank that is stage {} of {}: the ranks disagree on the "
                 "pipeline's stages",
                 who, s, num_stages, p[2], p[1]);
    TENSOR_CHECK(p[3] == n, "{}: stage {} runs {} micro-batches but stage {} runs {}: every stage needs the same "
                 "n_microbatches", who, s, n, s - 1, p[3]);
    TENSOR_CHECK(p[5] >= 0 && p[5] <= kMaxDims, "{}: stage {} got a malformed header from stage {}", who, s, s - 1);
    recv_dtype = static_cast<ScalarType>(p[4]);
    recv_shape.assign(p + 6, p + 6 + p[5]);
    have_header = true;
  };
  auto send_header = [&](const Tensor& y) {
    TENSOR_CHECK(y.dim() <= kMaxDims, "{}: stage {}'s output has {} dims; at most {} are supported", who, s, y.dim(),
                 kMaxDims);
    Tensor h = zeros({kHeaderLen}, TensorOptions().dtype(kInt64));
    int64_t* p = h.data_ptr<int64_t>();
    p[0] = kHeaderMagic;
    p[1] = num_stages;
    p[2] = s;
    p[3] = n;
    p[4] = static_cast<int64_t>(y.dtype());
    p[5] = y.dim();
    for (int64_t d = 0; d < y.dim(); ++d) p[6 + d] = y.size(d);
    sends.push_back(post(pg, true, h, s + 1, kHeaderTag, who, s));
  };

  auto run_forward = [&](int m) {
    Tensor x;
    if (first) {
      x = inputs[m];
    } else {
      if (!have_header) receive_header();
      x = empty(recv_shape, TensorOptions().dtype(recv_dtype));
      post(pg, false, x, s - 1, forward_tag(m), who, s)->wait();
      x.requires_grad_(true);
    }
    Tensor y = stage_.forward(x);
    if (last) {
      Tensor loss = loss_fn_(y, targets[m]);
      TENSOR_CHECK(loss.defined() && loss.numel() == 1,
                   "{}: the loss_fn must return a scalar (got shape {})", who,
                   loss.defined() ? detail::shape_str(loss.sizes()) : std::string("undefined"));
      losses[m] = loss.detach();
      stage_out[m] = loss;
    } else {
      if (!sent_header) {
        out_shape = y.sizes().vec();
        out_dtype = y.dtype();
        send_header(y);
        sent_header = true;
      }
      TENSOR_CHECK(y.sizes().vec() == out_shape && y.dtype() == out_dtype,
                   "{}: stage {}'s output of micro-batch {} has shape {} ({}), micro-batch 0's had {} ({}): every "
                   "micro-batch's activation must have the same shape",
                   who, s, m, detail::shape_str(y.sizes()), ::tensor::to_string(y.dtype()), detail::shape_str(out_shape),
                   ::tensor::to_string(out_dtype));
      sends.push_back(post(pg, true, y.detach().contiguous(), s + 1, forward_tag(m), who, s));
      stage_out[m] = y;
    }
    stage_in[m] = x;
    max_live_ = std::max(max_live_, ++live);
  };

  auto run_backward = [&](int m) {
    Tensor out = stage_out[m];
    if (last) {
      // The mean over micro-batches: each loss enters with weight 1 / n.
      autograd::backward({out}, {full_like(out, 1.0 / n)});
    } else {
      Tensor g = empty(out_shape, TensorOptions().dtype(out_dtype));
      post(pg, false, g, s + 1, backward_tag(m), who, s)->wait();
      if (out.requires_grad()) autograd::backward({out}, {g});
    }
    if (!first) {
      Tensor gx = stage_in[m].grad();
      // A stage whose output does not depend on its input passes zeros back.
      Tensor send_g = gx.defined() ? gx.contiguous() : zeros(stage_in[m].sizes(), TensorOptions().dtype(recv_dtype));
      sends.push_back(post(pg, true, send_g, s - 1, backward_tag(m), who, s));
    }
    stage_in[m] = Tensor();
    stage_out[m] = Tensor();
    --live;
  };

  for (const Action& a : actions()) {
    if (a.forward) run_forward(a.microbatch);
    else run_backward(a.microbatch);
  }
  for (auto& w : sends) w->wait();
  return losses;
}

}  // namespace tensor::distributed::pipelining
