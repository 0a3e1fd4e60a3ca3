// libFuzzer target: the safetensors reader through its public entry points, io::load(path,
// &metadata), io::load_metadata(path) and the in-place io::load(tensors, path, strict). The
// input is the whole file. Every input must load or throw tensor::Error, and the entry points
// must agree with each other on what they accept.
#include <algorithm>
#include <cstring>

#include "tests/fuzz/fuzz_util.h"

using namespace tensor;
using tensor::fuzz::ok_or_error;

namespace {

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && (a.nbytes() == 0 || std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0);
}

// Fresh zero tensors with the shapes and dtypes of `like`, for the in-place load to fill.
io::NamedTensors zero_targets(const io::NamedTensors& like) {
  io::NamedTensors out;
  for (const auto& [name, t] : like) out.emplace_back(name, zeros(t.sizes(), t.dtype()));
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchFile file("safetensors");
  const std::string& path = file.write(data, size);

  io::Metadata meta, meta_only;
  io::NamedTensors loaded;
  bool ok = ok_or_error([&] { loaded = io::load(path, &meta); });
  bool meta_ok = ok_or_error([&] { meta_only = io::load_metadata(path); });

  if (!ok) {
    // load() in place reads the file the same way: it must refuse it too, without writing.
    Tensor target = zeros({2});
    FUZZ_CHECK(!ok_or_error([&] { io::load({{"a", target}}, path, false); }), "in-place load accepted a bad file");
    FUZZ_CHECK(target.eq(0).all().item<bool>(), "a failed in-place load wrote into its target");
    return 0;
  }

  // load_metadata reads the same header, so it accepts every file load() accepts.
  FUZZ_CHECK(meta_ok, "load() accepted a file whose header load_metadata() refused");
  FUZZ_CHECK(meta_only == meta, "load() and load_metadata() read different metadata");

  // What load() returns: sorted unique names; contiguous CPU tensors that do not require grad;
  // no more data than the file holds (a header cannot make it invent bytes).
  uint64_t total = 0;
  for (size_t i = 0; i < loaded.size(); ++i) {
    const auto& [name, t] = loaded[i];
    FUZZ_CHECK(i == 0 || loaded[i - 1].first < name, "load() returned names unsorted or twice");
    FUZZ_CHECK(t.defined() && t.is_cpu() && t.is_contiguous() && !t.requires_grad(), "a loaded tensor is not plain");
    total += static_cast<uint64_t>(t.nbytes());
  }
  FUZZ_CHECK(total <= size, "load() returned more bytes than the file has");

  // In place, strict, into tensors of the file's shapes: succeeds, with load()'s bytes.
  io::NamedTensors targets = zero_targets(loaded);
  FUZZ_CHECK(ok_or_error([&] { io::load(targets, path, true); }), "strict in-place load refused a file load() read");
  for (size_t i = 0; i < loaded.size(); ++i)
    FUZZ_CHECK(same_bytes(targets[i].second, loaded[i].second), "in-place load read other bytes than load()");

  // A name the file lacks: strict refuses, non-strict loads the others.
  std::string missing = "missing";
  while (std::any_of(loaded.begin(), loaded.end(), [&](const auto& p) { return p.first == missing; })) missing += '_';
  io::NamedTensors more = zero_targets(loaded);
  more.emplace_back(missing, zeros({1}));
  FUZZ_CHECK(!ok_or_error([&] { io::load(more, path, true); }), "strict in-place load ignored a missing name");
  FUZZ_CHECK(ok_or_error([&] { io::load(more, path, false); }), "non-strict in-place load refused a missing name");

  // A shape mismatch raises and writes nothing.
  if (!loaded.empty()) {
    std::vector<int64_t> wrong = loaded[0].second.sizes().vec();
    wrong.push_back(1);
    Tensor target = zeros(wrong, loaded[0].second.dtype());
    FUZZ_CHECK(!ok_or_error([&] {
      io::load({{loaded[0].first, target}}, path, false);
    }),
               "in-place load accepted a shape mismatch");
    FUZZ_CHECK(!target.ne(0).any().item<bool>(), "a refused in-place load wrote into its target");
  }
  return 0;
}
