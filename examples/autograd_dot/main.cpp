// Writes the backward graph of a small two-layer network's loss as Graphviz DOT
// (autograd::to_dot) and, when Graphviz's `dot` is on PATH, renders it to SVG.
//   autograd_dot [out_dir]   -> out_dir/graph.dot (and out_dir/graph.svg)
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "tensor/autograd/dot.h"
#include "tensor/tensor.h"

using namespace tensor;

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  manual_seed(0);
  Tensor x = randn({4, 3});
  Tensor w1 = randn({3, 5}).requires_grad_(true);
  Tensor b1 = zeros({5}).requires_grad_(true);
  Tensor w2 = randn({5, 1}).requires_grad_(true);
  Tensor loss = (relu(x.mm(w1) + b1).mm(w2)).pow(2).mean();

  const std::string dot_path = dir + "/graph.dot";
  std::ofstream(dot_path) << autograd::to_dot(loss);
  std::cout << "wrote " << dot_path << "\n";

  // Rendering is optional: the example works without Graphviz.
  if (std::system("command -v dot >/dev/null 2>&1") == 0) {
    const std::string svg_path = dir + "/graph.svg";
    const std::string cmd = "dot -Tsvg '" + dot_path + "' -o '" + svg_path + "'";
    if (std::system(cmd.c_str()) != 0) {
      std::cerr << "dot failed on " << dot_path << "\n";
      return 1;
    }
    std::cout << "wrote " << svg_path << "\n";
  } else {
    std::cout << "graphviz's dot is not on PATH; render with: dot -Tsvg " << dot_path << " -o graph.svg\n";
  }
  return 0;
}
