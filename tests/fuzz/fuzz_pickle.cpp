// libFuzzer target: the torch.save reader, tensor::pickle_load(bytes) (zip archive, legacy
// format or plain pickle) and state_dict_from() on what it returns. The input is the whole file.
// Every input must load or throw tensor::Error; every tensor it returns must be a CPU tensor
// whose every reachable element lies inside its allocation (the walk below touches the first
// and the last one, which AddressSanitizer checks).
#include <unordered_set>

#include "tests/fuzz/fuzz_util.h"

using namespace tensor;
using tensor::fuzz::ok_or_error;

namespace {

// Touches the lowest and the highest byte the tensor can reach (its strides are non-negative).
void touch(const Tensor& t) {
  FUZZ_CHECK(t.defined() && t.is_cpu(), "a loaded tensor is undefined or not on the CPU");
  if (t.numel() == 0) return;
  int64_t last = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    FUZZ_CHECK(t.stride(d) >= 0, "a loaded tensor has a negative stride");
    last += (t.size(d) - 1) * t.stride(d);
  }
  const auto* p = static_cast<const volatile unsigned char*>(t.data_ptr());
  unsigned char sink = p[0];
  sink ^= p[last * t.element_size() + t.element_size() - 1];
  (void)sink;
}

// Visits every value once (a list or dict shared through the memo is walked once).
void walk(const PickleValue& v, std::unordered_set<const void*>& seen) {
  switch (v.kind()) {
    case PickleValue::Kind::Tensor:
      touch(v.to_tensor());
      break;
    case PickleValue::Kind::List:
    case PickleValue::Kind::Tuple:
      if (seen.insert(&v.to_list()).second)
        for (const auto& x : v.to_list()) walk(x, seen);
      break;
    case PickleValue::Kind::Dict:
      if (seen.insert(&v.to_dict()).second)
        for (const auto& [k, x] : v.to_dict()) {
          walk(k, seen);
          walk(x, seen);
        }
      break;
    case PickleValue::Kind::String:
    case PickleValue::Kind::Bytes:
      (void)v.to_string().size();
      break;
    default:
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  PickleValue value;
  if (!ok_or_error([&] { value = pickle_load(data, size, "fuzz"); })) return 0;
  std::unordered_set<const void*> seen;
  walk(value, seen);
  std::vector<std::pair<std::string, Tensor>> sd;
  if (ok_or_error([&] { sd = state_dict_from(value); })) {
    FUZZ_CHECK(value.is_dict() && sd.size() == value.to_dict().size(), "state_dict_from lost or invented entries");
  }
  return 0;
}
