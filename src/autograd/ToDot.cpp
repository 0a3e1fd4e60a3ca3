// autograd::to_dot: the backward graph as Graphviz DOT text.
#include <string>
#include <unordered_map>
#include <vector>

#include "src/autograd/Functions.h"
#include "tensor/autograd/dot.h"

namespace tensor::autograd {
namespace {

std::string shape_str(IntArrayRef s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// DOT strings are double-quoted; node names are identifiers but may hold anything.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string label_of(const Node& n) {
  std::string label = n.name();
  if (const Tensor* leaf = accumulate_grad_leaf(n)) {
    if (leaf->defined()) label += "\\nleaf " + shape_str(leaf->sizes()) + " " + to_string(leaf->scalar_type());
    return label;
  }
  if (const auto* f = dynamic_cast<const FormulaNode*>(&n)) {
    std::vector<const SavedVariable*> saved;
    f->list_saved(saved);
    for (const SavedVariable* v : saved) {
      const Tensor& t = v->peek();
      label += "\\nsaved " + (t.defined() ? shape_str(t.sizes()) : std::string("(freed)"));
    }
  }
  return label;
}

}  // namespace

std::string to_dot(const Tensor& t) {
  std::string out = "digraph backward {\n  node [shape=box, fontname=\"monospace\"];\n";
  const std::shared_ptr<Node>& root = t.defined() ? t.grad_fn() : std::shared_ptr<Node>();
  if (!root) {
    out += "  note [label=\"no backward graph: the tensor has no grad_fn\", shape=note];\n}\n";
    return out;
  }
  // Iterative walk (graphs can be 100,000 nodes deep); ids in discovery order.
  std::unordered_map<const Node*, size_t> id;
  std::vector<const Node*> order{root.get()}, stack{root.get()};
  id[root.get()] = 0;
  std::string edges;
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges()) {
      if (!e.valid()) continue;
      const Node* m = e.function.get();
      auto [it, fresh] = id.emplace(m, order.size());
      if (fresh) {
        order.push_back(m);
        stack.push_back(m);
      }
      edges += "  n" + std::to_string(id[n]) + " -> n" + std::to_string(it->second) + ";\n";
    }
  }
  out += "  out [label=" + quoted("output " + shape_str(t.sizes())) + ", shape=ellipse];\n";
  for (size_t i = 0; i < order.size(); ++i) {
    const bool leaf = accumulate_grad_leaf(*order[i]) != nullptr;
    out += "  n" + std::to_string(i) + " [label=" + quoted(label_of(*order[i])) +
           (leaf ? ", style=filled, fillcolor=lightblue" : "") + "];\n";
  }
  out += "  out -> n0;\n" + edges + "}\n";
  return out;
}

}  // namespace tensor::autograd
