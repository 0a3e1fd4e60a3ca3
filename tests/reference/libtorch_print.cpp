// Prints tests/reference/print_cases.inc with libtorch: its output is libtorch_print.txt, which
// tests/test_print.cpp compares libtensor's printing against. The ctest print.libtorch_reference
// (built when libtorch is installed) checks that the stored file is still what libtorch prints.
#include <torch/torch.h>

#include <cmath>
#include <iostream>

namespace T = torch;
#include "print_cases.inc"

int main() {
  print_cases(std::cout);
  return 0;
}
