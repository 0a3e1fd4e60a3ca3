// libFuzzer target: the custom-op schema parser, dispatch::parse_schema(text, default_ns). The
// input is the schema text; when it holds a newline, the part before the first one is the
// default namespace instead. Every input must parse or throw tensor::Error, and a parsed
// schema printed with Schema::to_string() must parse back to the same schema.
#include <string_view>

#include "tests/fuzz/fuzz_util.h"

using namespace tensor;
using tensor::fuzz::ok_or_error;

namespace {

bool same(const dispatch::Schema& a, const dispatch::Schema& b) {
  if (a.ns != b.ns || a.name != b.name || a.num_returns != b.num_returns || a.args.size() != b.args.size())
    return false;
  for (size_t i = 0; i < a.args.size(); ++i)
    if (a.args[i].name != b.args[i].name || a.args[i].type != b.args[i].type) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t newline = input.find('\n');
  std::string_view default_ns = newline == std::string_view::npos ? std::string_view() : input.substr(0, newline);
  std::string_view text = newline == std::string_view::npos ? input : input.substr(newline + 1);

  dispatch::Schema schema;
  if (!ok_or_error([&] { schema = dispatch::parse_schema(text, default_ns); })) return 0;
  FUZZ_CHECK(!schema.ns.empty() && !schema.name.empty(), "a parsed schema has no namespace or name");
  FUZZ_CHECK(schema.num_returns <= dispatch::kMaxReturns, "a parsed schema returns too many tensors");

  // The canonical text is qualified, so it parses without a default namespace.
  std::string printed = schema.to_string();
  dispatch::Schema again;
  FUZZ_CHECK(ok_or_error([&] { again = dispatch::parse_schema(printed); }), "a printed schema does not parse");
  FUZZ_CHECK(same(schema, again), "a printed schema parses to a different schema");
  FUZZ_CHECK(again.to_string() == printed, "printing is not stable");
  return 0;
}
