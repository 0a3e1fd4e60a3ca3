// The op list (kernels/OpList.h, Note [One op list]) against the op table (tests/op_table.h,
// Note [Op table]): every public elementwise op has a row, so the value tests, the gradient
// checks and the complex gradient checks, which iterate the table, reach every op.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <set>
#include <string>

#include "kernels/OpList.h"
#include "tests/op_table.h"

using namespace tensor;

TEST(OpList, EveryPublicOpHasATestRow) {
  std::set<std::string> unary, binary;
  for (const auto& c : optable::unary_cases()) unary.insert(c.name);
  for (const auto& c : optable::binary_cases()) binary.insert(c.name);
  for (const auto& o : oplist::kUnary)
    if (o.api != oplist::Api::Internal) EXPECT_TRUE(unary.count(o.name)) << o.name << " has no row in unary_cases()";
  for (const auto& o : oplist::kBinary)
    if (o.api != oplist::Api::Internal) EXPECT_TRUE(binary.count(o.name)) << o.name << " has no row in binary_cases()";
}

TEST(OpList, TableRowsNameOpsOfTheList) {
  // A row whose name is not in the list would test nothing the list knows of (a typo).
  std::set<std::string> names;
  for (const auto& o : oplist::kUnary) names.insert(o.name);
  for (const auto& o : oplist::kBinary) names.insert(o.name);
  for (const auto& c : optable::unary_cases()) EXPECT_TRUE(names.count(c.name)) << c.name;
  for (const auto& c : optable::binary_cases())
    EXPECT_TRUE(names.count(c.name) || c.name == "add_alpha") << c.name;
}

TEST(OpList, DtypeColumnMatchesTheKernels) {
  // The dtype column is what the kernels accept: one dtype inside and one outside each op's set.
  for (const auto& c : optable::unary_cases()) {
    const oplist::OpInfo* info = nullptr;
    for (const auto& o : oplist::kUnary)
      if (c.name == o.name) info = &o;  // unary names are unique (internal ones included)
    ASSERT_NE(info, nullptr) << c.name;
    Tensor z = tensor::ones({2}, kComplex64);
    if (info->dtypes & oplist::C) EXPECT_NO_THROW((void)c.fn(z)) << c.name << " accepts complex";
    else EXPECT_THROW((void)c.fn(z), Error) << c.name << " rejects complex";
  }
  for (const auto& c : optable::binary_cases()) {
    const oplist::OpInfo* info = nullptr;
    for (const auto& o : oplist::kBinary)
      if (c.name == o.name && o.api != oplist::Api::Internal) info = &o;
    if (!info) continue;  // add_alpha
    Tensor z = tensor::ones({2}, kComplex64);
    if (info->dtypes & oplist::C) EXPECT_NO_THROW((void)c.fn(z, z)) << c.name << " accepts complex";
    else EXPECT_THROW((void)c.fn(z, z), Error) << c.name << " rejects complex";
  }
}

// Every row of the derivatives table (autograd::derivative_rows()) names an op that a row of the
// op table gradient-checks: an op cannot gain a derivative without a gradient check.
TEST(DerivativesTable, EveryRowIsGradientChecked) {
  std::set<std::string> checked;
  for (const auto& c : optable::unary_cases()) checked.insert(c.name);
  for (const auto& c : optable::binary_cases()) checked.insert(c.name);
  for (const auto& c : optable::structured_cases())
    for (const std::string& op : optable::covered_ops(c)) checked.insert(op);
  const auto rows = autograd::derivative_rows();
  EXPECT_GE(rows.size(), 40u);
  for (const auto& r : rows)
    EXPECT_TRUE(checked.count(r.op)) << r.op << " (" << r.node << ") has no gradcheck row in tests/op_table.h";
}

// Every built-in dispatcher op (src/ops/AllOps.h, Note [Every op, once]): listed once, with the
// kernels its kind of op needs, and the recording the list claims.
#include "src/ops/AllOps.h"

namespace {
std::set<std::string> gradient_checked() {
  std::set<std::string> checked;
  for (const auto& c : optable::unary_cases()) checked.insert(c.name);
  for (const auto& c : optable::binary_cases()) checked.insert(c.name);
  for (const auto& c : optable::structured_cases())
    for (const std::string& op : optable::covered_ops(c)) checked.insert(op);
  return checked;
}
}  // namespace

TEST(EveryOp, ListedOnceWithItsKernelsAndRecording) {
  (void)autograd::derivative_rows();  // fills the Autograd slots (Note [Lazy autograd registration])
  const auto all = ops::builtin_ops();
  EXPECT_GE(all.size(), 200u);
  std::set<std::string> names;
  std::set<const void*> tables;
  for (const auto& op : all) {
    SCOPED_TRACE(op.name);
    names.insert(op.name);  // overloads share a name, as libtorch's (max and max.dim: "max")
    EXPECT_TRUE(tables.insert(op.table).second) << op.name << " is listed twice";
    EXPECT_TRUE(op.slots.has(DispatchKey::CPU)) << op.name << " has no CPU kernel";
    EXPECT_TRUE(op.slots.has(DispatchKey::Meta)) << op.name << " has no Meta kernel";
    const bool records = op.recording == ops::Recording::Row || op.recording == ops::Recording::Node;
    EXPECT_EQ(op.slots.has(DispatchKey::Autograd), records)
        << op.name << ": the list says it " << (records ? "records" : "does not record")
        << ", but its Autograd slot disagrees";
  }
  // The derivatives table names only listed ops.
  for (const auto& r : autograd::derivative_rows()) EXPECT_TRUE(names.count(r.op)) << r.op << " is not listed";
}

TEST(EveryOp, EveryRecordingStructuredOpIsGradientChecked) {
  // Hand-written nodes too, not only the table's rows (elementwise ops: EveryPublicOpHasATestRow).
  const std::set<std::string> checked = gradient_checked();
  std::set<std::string> elementwise;
  for (const auto& o : oplist::kUnary) elementwise.insert(o.name);
  for (const auto& o : oplist::kBinary) elementwise.insert(o.name);
  for (const auto& op : ops::builtin_ops()) {
    const std::string name = op.name;
    const std::string base = name.size() > 1 && name.back() == '_' ? name.substr(0, name.size() - 1) : name;
    if (elementwise.count(base) || (name.size() > 4 && elementwise.count(name.substr(0, name.size() - 4)))) continue;
    if (op.recording != ops::Recording::Row && op.recording != ops::Recording::Node) continue;
    EXPECT_TRUE(checked.count(name)) << name << " records gradients but no row of tests/op_table.h checks them";
  }
}
