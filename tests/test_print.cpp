// operator<< prints real tensors byte for byte as libtorch does (Note [Printing as libtorch]):
// tests/reference/print_cases.inc printed here must equal tests/reference/libtorch_print.txt,
// the same cases printed by libtorch 1.13.1 (tests/reference/libtorch_print.cpp).
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace T = tensor;
#include "tests/reference/print_cases.inc"

namespace {
std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}
}  // namespace

TEST(Print, EveryCasePrintsAsLibtorch) {
  std::ifstream ref_file(TENSOR_PRINT_REFERENCE);
  ASSERT_TRUE(ref_file) << "cannot read " << TENSOR_PRINT_REFERENCE;
  std::stringstream ref;
  ref << ref_file.rdbuf();
  std::ostringstream ours;
  print_cases(ours);
  const auto want = lines_of(ref.str()), got = lines_of(ours.str());
  for (size_t i = 0; i < std::max(want.size(), got.size()); ++i) {
    const std::string w = i < want.size() ? want[i] : "<end>", g = i < got.size() ? got[i] : "<end>";
    ASSERT_EQ(g, w) << "line " << i + 1 << " differs from libtorch's output (shown as expected)";
  }
}

// libtorch prints complex tensors' real parts only; libtensor prints both parts, right-aligned.
TEST(Print, ComplexPrintsBothParts) {
  auto z = T::tensor({1.0, -2.5}, T::kF64).to(T::kComplex128) * T::complex128(1, 1);
  EXPECT_EQ(T::str(z), "  1.0000+1.0000j\n -2.5000-2.5000j\n[ CPUComplexDoubleType{2} ]");
  auto z3 = T::zeros({2, 1, 1}, T::kComplex64);
  EXPECT_EQ(T::str(z3), "(1,.,.) = \n 0.0000+0.0000j\n\n(2,.,.) = \n 0.0000+0.0000j\n[ CPUComplexFloatType{2,1,1} ]");
}
