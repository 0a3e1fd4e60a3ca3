// autograd::to_dot: the DOT text of a small known graph, parsed back into nodes and edges.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tensor/autograd/dot.h"
#include "tensor/tensor.h"

using namespace tensor;

namespace {

struct Dot {
  std::map<std::string, std::string> labels;  // node id -> label
  std::set<std::pair<std::string, std::string>> edges;
  size_t edge_lines = 0;
};

Dot parse(const std::string& text) {
  Dot d;
  static const std::regex node(R"re(^\s*(\w+) \[label="((?:[^"\\]|\\.)*)")re");
  static const std::regex edge(R"(^\s*(\w+) -> (\w+);)");
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    std::smatch m;
    if (std::regex_search(line, m, edge)) {
      d.edges.emplace(m[1], m[2]);
      ++d.edge_lines;
    } else if (std::regex_search(line, m, node)) {
      d.labels[m[1]] = m[2];
    }
    start = end + 1;
  }
  return d;
}

std::string id_of(const Dot& d, const std::string& label_prefix) {
  for (auto& [id, label] : d.labels)
    if (label.rfind(label_prefix, 0) == 0) return id;
  return {};
}

}  // namespace

TEST(ToDot, SmallGraphNodesEdgesShapesAndLeaves) {
  // y = sum(x * w + b): SumBackward0 -> AddBackward0 -> {MulBackward0 -> {x, w}, b}
  Tensor x = ones({2, 3}).requires_grad_(true);
  Tensor w = ones({2, 3}).requires_grad_(true);
  Tensor b = ones({3}).requires_grad_(true);
  Tensor y = (x * w + b).sum();
  std::string text = autograd::to_dot(y);
  ASSERT_EQ(text.rfind("digraph", 0), 0u) << text;
  Dot d = parse(text);
  // out + Sum + Add + Mul + 3 AccumulateGrad
  EXPECT_EQ(d.labels.size(), 7u) << text;
  const std::string sum = id_of(d, "SumBackward0"), add = id_of(d, "AddBackward0"), mul = id_of(d, "MulBackward0");
  ASSERT_FALSE(sum.empty());
  ASSERT_FALSE(add.empty());
  ASSERT_FALSE(mul.empty());
  EXPECT_EQ(d.labels["out"], "output []");
  std::vector<std::string> leaves;
  for (auto& [id, label] : d.labels)
    if (label.rfind("AccumulateGrad", 0) == 0) leaves.push_back(label);
  ASSERT_EQ(leaves.size(), 3u);
  std::multiset<std::string> leaf_labels(leaves.begin(), leaves.end());
  EXPECT_EQ(leaf_labels.count("AccumulateGrad\\nleaf [2, 3] float32"), 2u) << text;
  EXPECT_EQ(leaf_labels.count("AccumulateGrad\\nleaf [3] float32"), 1u) << text;
  // MulBackward0 saved both inputs, [2, 3] each.
  EXPECT_EQ(d.labels[mul], "MulBackward0\\nsaved [2, 3]\\nsaved [2, 3]") << text;
  // 1 (out) + 1 (sum->add) + 2 (add->mul, add->b) + 2 (mul->x, mul->w) = 6 edges, none twice.
  EXPECT_EQ(d.edge_lines, 6u) << text;
  EXPECT_EQ(d.edges.size(), 6u);
  EXPECT_TRUE(d.edges.count({"out", sum}));
  EXPECT_TRUE(d.edges.count({sum, add}));
  EXPECT_TRUE(d.edges.count({add, mul}));
  std::string b_leaf = id_of(d, "AccumulateGrad\\nleaf [3]");
  EXPECT_TRUE(d.edges.count({add, b_leaf}));
  int from_mul = 0;
  for (auto& [from, to] : d.edges)
    if (from == mul) {
      ++from_mul;
      EXPECT_EQ(d.labels[to], "AccumulateGrad\\nleaf [2, 3] float32");
    }
  EXPECT_EQ(from_mul, 2);
}

TEST(ToDot, SharedNodesAppearOnceAndFreedSavesSaySo) {
  Tensor x = ones({4}).requires_grad_(true);
  Tensor h = x * x;            // x used twice: one AccumulateGrad, two edges to it
  Tensor y = (h + h).sum();    // h used twice: one MulBackward0
  Dot d = parse(autograd::to_dot(y));
  int acc = 0, muls = 0;
  for (auto& [id, label] : d.labels) {
    acc += label.rfind("AccumulateGrad", 0) == 0;
    muls += label.rfind("MulBackward0", 0) == 0;
  }
  EXPECT_EQ(acc, 1);
  EXPECT_EQ(muls, 1);
  y.backward();  // frees the saved tensors
  Dot after = parse(autograd::to_dot(y));
  EXPECT_EQ(after.labels[id_of(after, "MulBackward0")], "MulBackward0\\nsaved (freed)\\nsaved (freed)");
}

TEST(ToDot, NoHistory) {
  std::string text = autograd::to_dot(ones({2}));
  EXPECT_NE(text.find("no backward graph"), std::string::npos);
  EXPECT_EQ(parse(text).edges.size(), 0u);
}

TEST(ToDot, TableRowsListTheirKeptArguments) {
  // mm keeps both operands for its backward (a derivatives-table row, not save()).
  Tensor a = ones({2, 3}).requires_grad_(true);
  Tensor b = ones({3, 4}).requires_grad_(true);
  Dot d = parse(autograd::to_dot(a.mm(b)));
  EXPECT_EQ(d.labels[id_of(d, "MmBackward0")], "MmBackward0\\nsaved [2, 3]\\nsaved [3, 4]");
  EXPECT_EQ(d.labels["out"], "output [2, 4]");
  EXPECT_EQ(d.labels.size(), 4u);  // out, mm, two leaves
  EXPECT_EQ(d.edges.size(), 3u);
}
