// overhead_counts: fixed-count loops of the per-call overhead cases, for counting instructions
// per call under callgrind (scripts/count_overhead.sh). Instruction counts do not move with the
// load of a shared machine, so they compare two builds of the dispatch path where wall-clock
// timings of a few tens of nanoseconds cannot. bench_ops keeps the timed cases and the ratios
// against libtorch.
#include <tensor/tensor.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
using namespace tensor;
int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: overhead_counts {add|autograd|view|clone|zeros|mlp} ITERATIONS\n");
    return 2;
  }
  const char* c = argv[1];
  long n = std::atol(argv[2]);
  Tensor a = ones({1}), b = ones({1}), out;
  Tensor m = ones({4, 4});
  if (!std::strcmp(c, "add")) {
    for (long i = 0; i < n; ++i) out = a + b;
  } else if (!std::strcmp(c, "autograd")) {
    Tensor w = ones({1}).requires_grad_(true);
    for (long i = 0; i < n; ++i) {
      Tensor y = (w * b + a).sum();
      y.backward();
    }
  } else if (!std::strcmp(c, "view")) {
    for (long i = 0; i < n; ++i) out = m.view({16}).view({4, 4}).transpose(0, 1).select(0, 1);
  } else if (!std::strcmp(c, "clone")) {
    for (long i = 0; i < n; ++i) out = m.clone();
  } else if (!std::strcmp(c, "zeros")) {
    for (long i = 0; i < n; ++i) out = zeros({4, 4});
  } else if (!std::strcmp(c, "mlp")) {
    Tensor x = ones({8, 16}), w1 = ones({32, 16}).requires_grad_(true), w2 = ones({4, 32}).requires_grad_(true);
    for (long i = 0; i < n; ++i) {
      Tensor h = relu(matmul(x, w1.t()));
      Tensor l = matmul(h, w2.t()).sum();
      l.backward();
    }
  }
  return 0;
}
