// The profiler (docs/profiling.md): every check parses the exported Chrome trace JSON, or reads
// key_averages(), and compares with what the code run under the profile must produce.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/dispatch/Dispatcher.h"
#include "src/ops/AllOps.h"
#include "tensor/data.h"
#include "tensor/dispatch/Library.h"
#include "tensor/optim.h"
#include "tensor/profiler/profiler.h"
#include "tensor/tensor.h"

using namespace tensor;
namespace prof = tensor::profiler;
using nlohmann::json;

namespace {

Tensor twice_cpu(const Tensor& x) { return x * 2.0; }

TENSOR_LIBRARY(proftest, m) {
  m.def("proftest::twice(Tensor x) -> Tensor");
  m.impl("twice", DispatchKey::CPU, &twice_cpu);
}

json trace_of(prof::Profile& p) { return json::parse(p.chrome_trace()); }

// The complete ("X") events named `name`.
std::vector<json> slices(const json& t, const std::string& name) {
  std::vector<json> out;
  for (const json& e : t["traceEvents"])
    if (e["ph"] == "X" && e["name"] == name) out.push_back(e);
  return out;
}
std::vector<json> of_phase(const json& t, const std::string& ph) {
  std::vector<json> out;
  for (const json& e : t["traceEvents"])
    if (e["ph"] == ph) out.push_back(e);
  return out;
}
// Times in the trace are microseconds with nanosecond digits; compare in nanoseconds.
int64_t ns(const json& v) { return static_cast<int64_t>(std::llround(v.get<double>() * 1000.0)); }
bool inside(const json& inner, const json& outer) {
  return inner["tid"] == outer["tid"] && ns(inner["ts"]) >= ns(outer["ts"]) &&
         ns(inner["ts"]) + ns(inner["dur"]) <= ns(outer["ts"]) + ns(outer["dur"]);
}
bool profiler_key_on() { return dispatch::local_keys().included.has(DispatchKey::Profiler); }

}  // namespace

TEST(Profiler, OpsAreEventsWithNamesShapesAndDtypes) {
  Tensor a = ones({2, 3}), b = ones({2, 3});
  Tensor i = arange(4, TensorOptions(kInt64));
  prof::Profile p(prof::ProfileOptions().record_shapes().profile_memory(false).with_stack(false));
  Tensor c = a + b;
  Tensor d = i.to(kFloat64);
  json t = trace_of(p);
  auto adds = slices(t, "add");
  ASSERT_EQ(adds.size(), 1u);
  EXPECT_EQ(adds[0]["cat"], "cpu_op");
  EXPECT_EQ(adds[0]["args"]["Input Dims"], json::parse("[[2,3],[2,3]]"));
  EXPECT_EQ(adds[0]["args"]["Input type"], json::parse(R"(["float32","float32"])"));
  auto tos = slices(t, "_to_copy");
  ASSERT_EQ(tos.size(), 1u);
  EXPECT_EQ(tos[0]["args"]["Input Dims"], json::parse("[[4]]"));
  EXPECT_EQ(tos[0]["args"]["Input type"], json::parse(R"(["int64"])"));
  EXPECT_GE(ns(adds[0]["dur"]), 0);
  // The values are right through the profiler's kernels.
  EXPECT_TRUE(equal(c, full({2, 3}, 2.0f)));
  EXPECT_TRUE(equal(d, tensor::tensor({0.0, 1.0, 2.0, 3.0})));
  // Without record_shapes there are no shapes.
}

TEST(Profiler, WithoutRecordShapesNoShapes) {
  Tensor a = ones({2});
  prof::Profile p;
  Tensor c = a + a;
  json t = trace_of(p);
  auto adds = slices(t, "add");
  ASSERT_EQ(adds.size(), 1u);
  EXPECT_FALSE(adds[0]["args"].contains("Input Dims"));
}

TEST(Profiler, NestedOpsAndSelfTime) {
  Tensor x = arange(6, TensorOptions(kFloat32)).view({2, 3}).t();  // clone of a strided view runs copy_
  prof::Profile p;
  Tensor y;
  {
    prof::RecordFunction r("my_region");
    y = x.clone();
  }
  json t = trace_of(p);
  auto clones = slices(t, "clone"), copies = slices(t, "copy_"), regions = slices(t, "my_region");
  ASSERT_EQ(clones.size(), 1u);
  ASSERT_EQ(copies.size(), 1u);
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[0]["cat"], "user_annotation");
  EXPECT_TRUE(inside(copies[0], clones[0]));
  EXPECT_TRUE(inside(clones[0], regions[0]));
  // Self time = total minus the events nested directly inside, on the same thread.
  int64_t children = 0;
  std::vector<json> all = of_phase(t, "X");
  for (const json& e : all) {
    if (e == clones[0] || !inside(e, clones[0])) continue;
    bool direct = true;
    for (const json& o : all)
      if (o != e && o != clones[0] && inside(e, o) && inside(o, clones[0])) direct = false;
    if (direct) children += ns(e["dur"]);
  }
  EXPECT_GT(children, 0);
  auto rows = p.key_averages();
  auto it = std::find_if(rows.begin(), rows.end(), [](const auto& r) { return r.name == "clone"; });
  ASSERT_NE(it, rows.end());
  EXPECT_EQ(it->calls, 1);
  EXPECT_NEAR(it->self_cpu_ns, ns(clones[0]["dur"]) - children, 3);
  EXPECT_NEAR(it->cpu_total_ns, ns(clones[0]["dur"]), 1);
}

TEST(Profiler, BackwardEventsLinkToTheirForwardOps) {
  Tensor x = tensor::tensor({1.0f, 2.0f, 3.0f}).requires_grad_(true);
  Tensor w = tensor::tensor({4.0f, 5.0f, 6.0f}).requires_grad_(true);
  prof::Profile p(prof::ProfileOptions().record_shapes());
  Tensor y = (x * w).sum();
  y.backward();
  json t = trace_of(p);
  auto mulb = slices(t, "MulBackward0"), sumb = slices(t, "SumBackward0"), acc = slices(t, "AccumulateGrad");
  // The forward ops: those outside every backward event (MulBackward0 runs two muls of its own).
  auto forward = [&](const std::string& name) {
    std::vector<json> out;
    for (const json& e : slices(t, name)) {
      bool in_backward = false;
      for (const json& b : of_phase(t, "X"))
        if (b["cat"] == "backward" && inside(e, b)) in_backward = true;
      if (!in_backward) out.push_back(e);
    }
    return out;
  };
  auto muls = forward("mul"), sums = forward("sum");
  ASSERT_EQ(muls.size(), 1u);
  ASSERT_EQ(sums.size(), 1u);
  ASSERT_EQ(mulb.size(), 1u);
  ASSERT_EQ(sumb.size(), 1u);
  EXPECT_EQ(acc.size(), 2u);
  EXPECT_EQ(mulb[0]["cat"], "backward");
  // The forward op carries the sequence number of the node it recorded (the lazily made
  // AccumulateGrad nodes of x and w do not count), and the backward event the same.
  ASSERT_TRUE(muls[0]["args"].contains("Sequence number"));
  ASSERT_TRUE(mulb[0]["args"].contains("Sequence number"));
  EXPECT_EQ(muls[0]["args"]["Sequence number"], mulb[0]["args"]["Sequence number"]);
  EXPECT_EQ(sums[0]["args"]["Sequence number"], sumb[0]["args"]["Sequence number"]);
  EXPECT_NE(muls[0]["args"]["Sequence number"], sums[0]["args"]["Sequence number"]);
  EXPECT_EQ(muls[0]["args"]["Sequence number"].get<uint64_t>(), y.grad_fn()->next_edges()[0].function->sequence_nr());
  // Flow arrows: a start ("s") at the forward op and a finish ("f", bound to the enclosing
  // slice) at the backward event, with the same id; one per linked pair.
  auto starts = of_phase(t, "s"), finishes = of_phase(t, "f");
  ASSERT_EQ(starts.size(), 2u);
  ASSERT_EQ(finishes.size(), 2u);
  std::map<int64_t, json> start_by_id, finish_by_id;
  for (auto& s : starts) start_by_id[s["id"].get<int64_t>()] = s;
  for (auto& f : finishes) finish_by_id[f["id"].get<int64_t>()] = f;
  const int64_t mul_id = muls[0]["args"]["Sequence number"].get<int64_t>();
  ASSERT_TRUE(start_by_id.count(mul_id));
  ASSERT_TRUE(finish_by_id.count(mul_id));
  EXPECT_EQ(ns(start_by_id[mul_id]["ts"]), ns(muls[0]["ts"]));
  EXPECT_EQ(start_by_id[mul_id]["tid"], muls[0]["tid"]);
  EXPECT_EQ(ns(finish_by_id[mul_id]["ts"]), ns(mulb[0]["ts"]));
  EXPECT_EQ(finish_by_id[mul_id]["bp"], "e");
  // Ops run by a backward node nest inside its event: MulBackward0 multiplies the gradient by
  // w and by x, and those muls record no node (backward runs without create_graph).
  int nested_muls = 0;
  for (auto& m : slices(t, "mul"))
    if (inside(m, mulb[0])) {
      ++nested_muls;
      EXPECT_FALSE(m["args"].contains("Sequence number"));
    }
  EXPECT_EQ(nested_muls, 2);
  EXPECT_TRUE(equal(x.grad(), w.detach()));
}

TEST(Profiler, MemoryEventsAndCounterTotals) {
  prof::Profile p(prof::ProfileOptions().profile_memory());
  Tensor a = empty({256});                         // 1024 bytes
  Tensor b = empty({10, 10}, TensorOptions(kFloat64));  // 800 bytes
  a.reset();                                       // frees 1024
  json t = trace_of(p);
  std::vector<int64_t> bytes, totals, counter;
  for (const json& e : t["traceEvents"]) {
    if (e["ph"] == "i" && e["name"] == "[memory]") {
      bytes.push_back(e["args"]["Bytes"].get<int64_t>());
      totals.push_back(e["args"]["Total Allocated"].get<int64_t>());
    }
    if (e["ph"] == "C" && e["name"] == "Memory") counter.push_back(e["args"]["Total Allocated"].get<int64_t>());
  }
  EXPECT_EQ(bytes, (std::vector<int64_t>{1024, 800, -1024}));
  EXPECT_EQ(totals, (std::vector<int64_t>{1024, 1824, 800}));
  EXPECT_EQ(counter, totals);
  // The allocation is charged to the op that made it.
  auto empties = slices(t, "empty");
  ASSERT_EQ(empties.size(), 2u);
  EXPECT_EQ(empties[0]["args"]["Self Memory (bytes)"], 1024);
  EXPECT_EQ(empties[1]["args"]["Self Memory (bytes)"], 800);
  auto rows = p.key_averages(prof::SortBy::SelfCpuMemory);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0].name, "empty");
  EXPECT_EQ(rows[0].self_memory_bytes, 1824);
  EXPECT_NE(p.table(prof::SortBy::SelfCpuMemory).find("Self CPU Mem"), std::string::npos);
}

TEST(Profiler, OptimizerStepsAndDataLoaderWaits) {
  Tensor w = tensor::tensor({1.0f, 2.0f}).requires_grad_(true);
  optim::SGD opt({w}, optim::SGDOptions(0.1));
  auto ds = std::make_shared<data::TensorDataset>(arange(16, TensorOptions(kFloat32)).view({8, 2}),
                                                  arange(8, TensorOptions(kInt64)));
  data::DataLoader loader(ds, data::DataLoaderOptions(4).num_workers(2));
  prof::Profile p;
  size_t batches = 0;
  for (data::Example<>& batch : loader) {
    opt.zero_grad();
    Tensor loss = (batch.data.sum(0) * w).sum();
    loss.backward();
    opt.step();
    ++batches;
  }
  EXPECT_EQ(batches, 2u);
  json t = trace_of(p);
  auto steps = slices(t, "Optimizer.step#SGD.step");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0]["cat"], "optimizer");
  // The step's update ops nest inside it.
  bool update_inside = false;
  for (auto& e : of_phase(t, "X"))
    if (e["cat"] == "cpu_op" && inside(e, steps[0])) update_inside = true;
  EXPECT_TRUE(update_inside);
  auto waits = slices(t, "DataLoader.next");
  EXPECT_GE(waits.size(), 2u);  // one per batch, and one that finds the epoch over
  EXPECT_EQ(waits[0]["cat"], "dataloader");
  // The workers built the batches with dispatched ops, recorded on their own threads.
  const json main_tid = steps[0]["tid"];
  std::set<int64_t> worker_tids;
  for (auto& e : of_phase(t, "X"))
    if (e["cat"] == "cpu_op" && e["tid"] != main_tid) worker_tids.insert(e["tid"].get<int64_t>());
  EXPECT_GE(worker_tids.size(), 1u);
  std::set<int64_t> named;
  for (auto& e : of_phase(t, "M"))
    if (e["name"] == "thread_name") named.insert(e["tid"].get<int64_t>());
  for (int64_t tid : worker_tids) EXPECT_TRUE(named.count(tid)) << tid;
}

TEST(Profiler, StepMarksIterations) {
  Tensor a = ones({4});
  prof::Profile p;
  for (int s = 0; s < 3; ++s) {
    Tensor b = a * 2.0;
    p.step();
  }
  json t = trace_of(p);
  for (int s = 0; s < 3; ++s) {
    auto r = slices(t, "ProfilerStep#" + std::to_string(s));
    ASSERT_EQ(r.size(), 1u) << s;
    EXPECT_EQ(r[0]["cat"], "step");
  }
  EXPECT_TRUE(slices(t, "ProfilerStep#3").empty());
  auto s0 = slices(t, "ProfilerStep#0")[0], s1 = slices(t, "ProfilerStep#1")[0];
  EXPECT_EQ(ns(s0["ts"]) + ns(s0["dur"]), ns(s1["ts"]));
  // Each iteration's mul lies in its step.
  auto muls = slices(t, "mul");
  ASSERT_EQ(muls.size(), 3u);
  for (int s = 0; s < 3; ++s) EXPECT_TRUE(inside(muls[s], slices(t, "ProfilerStep#" + std::to_string(s))[0])) << s;
  // Steps are not ops: the table leaves them out.
  for (auto& r : p.key_averages()) EXPECT_EQ(r.name.find("ProfilerStep"), std::string::npos);
}

TEST(Profiler, CustomOpsAreRecorded) {
  Tensor a = ones({3});
  prof::Profile p(prof::ProfileOptions().record_shapes());
  Tensor b = dispatch::call("proftest::twice", a);
  json t = trace_of(p);
  auto ev = slices(t, "proftest::twice");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0]["args"]["Input Dims"], json::parse("[[3]]"));
  EXPECT_EQ(ev[0]["args"]["Input type"], json::parse(R"(["float32"])"));
  auto muls = slices(t, "mul");
  ASSERT_EQ(muls.size(), 1u);
  EXPECT_TRUE(inside(muls[0], ev[0]));  // the kernel's own ops nest inside it
  EXPECT_TRUE(equal(b, full({3}, 2.0f)));
}

TEST(Profiler, TableSortsAndCounts) {
  Tensor a = ones({64, 64});
  prof::Profile p;
  for (int i = 0; i < 3; ++i) Tensor b = a + a;
  Tensor m = a.mm(a);
  auto by_calls = p.key_averages(prof::SortBy::Calls);
  std::map<std::string, int64_t> calls;
  for (auto& r : by_calls) calls[r.name] = r.calls;
  EXPECT_EQ(calls["add"], 3);
  EXPECT_EQ(calls["mm"], 1);
  EXPECT_EQ(calls["empty"], 4);  // the outputs of the three adds and the mm
  ASSERT_EQ(by_calls[0].name, "empty");
  ASSERT_EQ(by_calls[1].name, "add");
  for (size_t i = 1; i < by_calls.size(); ++i) EXPECT_GE(by_calls[i - 1].calls, by_calls[i].calls);
  for (auto by : {prof::SortBy::SelfCpuTime, prof::SortBy::CpuTime}) {
    auto rows = p.key_averages(by);
    for (size_t i = 1; i < rows.size(); ++i) {
      if (by == prof::SortBy::SelfCpuTime) EXPECT_GE(rows[i - 1].self_cpu_ns, rows[i].self_cpu_ns);
      else EXPECT_GE(rows[i - 1].cpu_total_ns, rows[i].cpu_total_ns);
    }
    for (auto& r : rows) EXPECT_LE(r.self_cpu_ns, r.cpu_total_ns) << r.name;
  }
  std::string tab = p.table(prof::SortBy::Calls, 1);
  EXPECT_NE(tab.find("Self CPU"), std::string::npos);
  EXPECT_NE(tab.find("# of Calls"), std::string::npos);
  // row_limit 1: the header and one row, which is empty's (most calls).
  EXPECT_NE(tab.find("empty "), std::string::npos) << tab;
  EXPECT_EQ(tab.find("add "), std::string::npos) << tab;
  EXPECT_EQ(tab.find("mm "), std::string::npos) << tab;
  std::string full_tab = p.table(prof::SortBy::SelfCpuTime, -1);
  EXPECT_NE(full_tab.find("mm "), std::string::npos) << full_tab;
}

TEST(Profiler, OffRecordsNothingAndLeavesDispatchAlone) {
  EXPECT_FALSE(profiler_key_on());
  Tensor a = ones({2});
  {
    prof::Profile p;
    EXPECT_TRUE(profiler_key_on());
    p.stop();
    EXPECT_FALSE(profiler_key_on());
    Tensor b = a + a;  // after stop: not recorded
    prof::RecordFunction r("after_stop");
    json t = trace_of(p);
    EXPECT_TRUE(of_phase(t, "X").empty());
    EXPECT_TRUE(slices(t, "after_stop").empty());
  }
  EXPECT_FALSE(profiler_key_on());
  // A RecordFunction with no profile does nothing, and turns no key on.
  {
    prof::RecordFunction r("nothing");
    Tensor b = a + a;
  }
  EXPECT_FALSE(profiler_key_on());
  // A second profile starts clean: nothing from before it.
  Tensor c = a * 3.0;
  prof::Profile p2;
  Tensor d = a - a;
  json t2 = trace_of(p2);
  EXPECT_TRUE(slices(t2, "mul").empty());
  EXPECT_EQ(slices(t2, "sub").size(), 1u);
}

TEST(Profiler, OneProfileAtATime) {
  prof::Profile p;
  EXPECT_THROW(prof::Profile q, Error);
}

TEST(Profiler, RecordsOtherThreads) {
  Tensor a = ones({8});
  prof::Profile p;
  std::thread th([&] {
    prof::RecordFunction r("worker_region");
    Tensor b = a * 4.0;
  });
  th.join();
  // A thread that only runs ops (no RecordFunction) is recorded too (Note [Global keys]).
  std::thread plain([&] { Tensor d = a - a; });
  plain.join();
  Tensor c = a + a;
  json t = trace_of(p);
  auto region = slices(t, "worker_region"), muls = slices(t, "mul"), adds = slices(t, "add");
  ASSERT_EQ(region.size(), 1u);
  ASSERT_EQ(muls.size(), 1u);
  ASSERT_EQ(adds.size(), 1u);
  EXPECT_TRUE(inside(muls[0], region[0]));
  EXPECT_NE(muls[0]["tid"], adds[0]["tid"]);
  auto subs = slices(t, "sub");
  ASSERT_EQ(subs.size(), 1u);
  EXPECT_NE(subs[0]["tid"], adds[0]["tid"]);
  EXPECT_NE(subs[0]["tid"], muls[0]["tid"]);
}

TEST(Profiler, ExportWritesChromeTraceJson) {
  Tensor a = ones({2});
  prof::Profile p(prof::ProfileOptions().record_shapes().profile_memory());
  Tensor b = a + a;
  const std::string path = ::testing::TempDir() + "profiler_trace.json";
  p.export_chrome_trace(path);
  std::ifstream f(path);
  json t = json::parse(f);
  ASSERT_TRUE(t.contains("traceEvents"));
  EXPECT_EQ(slices(t, "add").size(), 1u);
  bool process_named = false;
  for (auto& e : of_phase(t, "M")) process_named = process_named || e["name"] == "process_name";
  EXPECT_TRUE(process_named);
  std::remove(path.c_str());
  EXPECT_THROW(p.export_chrome_trace("/nonexistent-dir/x/trace.json"), Error);
}

TEST(Profiler, AnalysisSplitsWallTime) {
  Tensor a = ones({256, 256});
  prof::Profile p;
  for (int i = 0; i < 3; ++i) {
    Tensor b = a.mm(a);
    Tensor c = a.to(kFloat64);
  }
  prof::Analysis an = p.analysis(3);
  EXPECT_GT(an.wall_ns, 0);
  EXPECT_GT(an.compute_ns, 0);
  EXPECT_GT(an.copy_ns, 0);
  EXPECT_EQ(an.comm_ns, 0);
  EXPECT_GE(an.idle_ns, 0);
  // The four parts cover the wall time (the busy parts are the top-level events).
  EXPECT_NEAR(static_cast<double>(an.compute_ns + an.copy_ns + an.comm_ns + an.idle_ns),
              static_cast<double>(an.wall_ns), 10.0);
  ASSERT_EQ(an.top_ops.size(), 3u);
  for (size_t i = 1; i < an.top_ops.size(); ++i) EXPECT_GE(an.top_ops[i - 1].self_cpu_ns, an.top_ops[i].self_cpu_ns);
  EXPECT_NE(an.to_string().find("idle"), std::string::npos);
}

TEST(Profiler, EveryBuiltinOpHasAProfilerKernel) {
  { prof::Profile p; }
  size_t n = 0;
  for (const ops::OpSummary& op : ops::builtin_ops()) {
    EXPECT_TRUE(op.slots.has(DispatchKey::Profiler)) << op.name;
    ++n;
  }
  EXPECT_GT(n, 300u);
}

TEST(Profiler, AnOpThatThrowsStillClosesItsEvent) {
  Tensor a = ones({2, 3}), b = ones({4, 5});
  prof::Profile p(prof::ProfileOptions().record_shapes());
  EXPECT_THROW(a.mm(b), Error);  // [2, 3] @ [4, 5]
  Tensor c;
  {
    prof::RecordFunction r("after");
    c = a + a;
  }
  json t = trace_of(p);
  auto mms = slices(t, "mm"), after = slices(t, "after"), adds = slices(t, "add");
  ASSERT_EQ(mms.size(), 1u);
  EXPECT_EQ(mms[0]["args"]["Input Dims"], json::parse("[[2,3],[4,5]]"));
  ASSERT_EQ(after.size(), 1u);
  ASSERT_EQ(adds.size(), 1u);
  EXPECT_TRUE(inside(adds[0], after[0]));
  EXPECT_FALSE(inside(after[0], mms[0]));  // the failed mm's event ended: nothing nests in it later
  auto rows = p.key_averages();
  auto it = std::find_if(rows.begin(), rows.end(), [](const auto& r) { return r.name == "after"; });
  ASSERT_NE(it, rows.end());
  EXPECT_LT(it->self_cpu_ns, it->cpu_total_ns);  // add counted as its child
}
