// libFuzzer target: the IDX reader, data::read_idx(path). The input is the whole file, plain or
// gzipped (read_idx tells them apart by the gzip magic). A plain input is also gzipped here and
// read again: both must give the same tensor or both throw tensor::Error, so the IDX checks are
// fuzzed through the gzip path too (mutating a gzip seed mostly exercises zlib's own checks).
#include <zlib.h>

#include <cstring>
#include <vector>

#include "tests/fuzz/fuzz_util.h"

using namespace tensor;
using tensor::fuzz::ok_or_error;

namespace {

std::vector<uint8_t> gzip(const uint8_t* data, size_t size) {
  z_stream z{};
  // windowBits 15 + 16: a gzip wrapper (header and CRC), as the gzip tool writes.
  FUZZ_CHECK(deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK, "deflateInit2");
  std::vector<uint8_t> out(deflateBound(&z, size));
  z.next_in = const_cast<uint8_t*>(data);
  z.avail_in = static_cast<uInt>(size);
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  FUZZ_CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END, "deflate");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

bool same(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.sizes() == b.sizes() &&
         (a.nbytes() == 0 || std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchFile file("idx");
  Tensor plain;
  bool ok = ok_or_error([&] { plain = data::read_idx(file.write(data, size)); });
  bool is_gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  if (ok) {
    FUZZ_CHECK(plain.is_cpu() && plain.is_contiguous() && !plain.requires_grad(), "read_idx returned an odd tensor");
    // 4 bytes of magic and 4 per dim precede the data; a header cannot make it invent bytes.
    if (!is_gzip) FUZZ_CHECK(4 + 4 * uint64_t(plain.dim()) + plain.nbytes() == size, "read_idx size mismatch");
  }
  if (is_gzip) return 0;

  std::vector<uint8_t> gz = gzip(data, size);
  Tensor unzipped;
  bool gz_ok = ok_or_error([&] { unzipped = data::read_idx(file.write(gz.data(), gz.size())); });
  FUZZ_CHECK(ok == gz_ok, "read_idx accepts the plain file but not its gzipped copy, or the other way round");
  if (ok) FUZZ_CHECK(same(plain, unzipped), "read_idx reads a plain file and its gzipped copy differently");
  return 0;
}
