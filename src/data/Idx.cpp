// IDX files (the MNIST format), plain or gzipped, and the MNIST dataset over them.
#include <sys/stat.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "src/core/Check.h"
#include "src/core/Sizes.h"
#include "src/data/Gather.h"
#include "tensor/data.h"
#include "tensor/ops.h"

namespace tensor::data {
namespace {

// IDX layout: a 4-byte magic {0, 0, type code, number of dims}, one big-endian uint32 per dim,
// then the elements, big-endian, row-major.
struct IdxType {
  uint8_t code;
  ScalarType dtype;
  const char* name;
};
constexpr IdxType kIdxTypes[] = {{0x08, kUInt8, "unsigned byte"}, {0x09, kInt8, "signed byte"},
                                 {0x0B, kInt16, "short"},         {0x0C, kInt32, "int"},
                                 {0x0D, kFloat32, "float"},       {0x0E, kFloat64, "double"}};

struct IdxFile {
  const IdxType* type = nullptr;
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;  // the elements as stored (big-endian)
};

class GzFile {
 public:
  explicit GzFile(gzFile f) : f_(f) {}
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;
  ~GzFile() { if (f_) gzclose(f_); }
  gzFile get() const { return f_; }

 private:
  gzFile f_;
};

// Reads up to n bytes; returns how many it got. A damaged gzip stream raises; the end of the
// data (a short count) is left to the caller, which knows how much it expected.
size_t gz_read(gzFile f, uint8_t* dst, size_t n, const std::string& path) {
  size_t got = 0;
  while (got < n) {
    unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - got, 1u << 24));
    int r = gzread(f, dst + got, chunk);
    if (r < 0) {
      int err = 0;
      const char* msg = gzerror(f, &err);
      TENSOR_ERROR("read_idx: '{}' is corrupt: {}", path, err == Z_ERRNO ? std::strerror(errno) : msg);
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  // zlib reports a gzip stream cut short as a clean end of data plus this error.
  int err = 0;
  const char* msg = gzerror(f, &err);
  if (err != Z_OK && err != Z_STREAM_END)
    TENSOR_ERROR("read_idx: '{}' is corrupt or truncated: {}", path, msg);
  return got;
}

IdxFile read_idx_file(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) TENSOR_ERROR("read_idx: cannot open '{}': {}", path, std::strerror(errno));
  TENSOR_CHECK(S_ISREG(st.st_mode), "read_idx: '{}' is not a regular file", path);
  // gzopen reads gzip streams and, transparently, files that are not gzipped.
  GzFile f(gzopen(path.c_str(), "rb"));
  if (!f.get()) TENSOR_ERROR("read_idx: cannot open '{}': {}", path, errno ? std::strerror(errno) : "out of memory");
  gzbuffer(f.get(), 1 << 17);

  IdxFile out;
  uint8_t magic[4];
  size_t got = gz_read(f.get(), magic, 4, path);
  TENSOR_CHECK(got == 4, "read_idx: '{}' is truncated: it has {} bytes, fewer than the 4-byte IDX magic number", path,
               got);
  uint32_t magic_value = (uint32_t(magic[0]) << 24) | (uint32_t(magic[1]) << 16) | (uint32_t(magic[2]) << 8) | magic[3];
  for (const auto& t : kIdxTypes)
    if (magic[2] == t.code) out.type = &t;
  TENSOR_CHECK(magic[0] == 0 && magic[1] == 0 && out.type != nullptr && magic[3] >= 1,
               "read_idx: '{}' is not an IDX file: bad magic number 0x{:08x} (expected 0x0000TTDD with type code TT "
               "in 08 09 0B 0C 0D 0E and DD >= 1 dims, e.g. 0x00000803 for MNIST images)",
               path, magic_value);
  int ndims = magic[3];
  std::vector<uint8_t> dim_bytes(4 * static_cast<size_t>(ndims));
  got = gz_read(f.get(), dim_bytes.data(), dim_bytes.size(), path);
  TENSOR_CHECK(got == dim_bytes.size(), "read_idx: '{}' is truncated: it ended inside the sizes of its {} dims", path,
               ndims);
  uint64_t numel = 1;
  for (int d = 0; d < ndims; ++d) {
    const uint8_t* b = &dim_bytes[4 * d];
    uint64_t v = (uint64_t(b[0]) << 24) | (uint64_t(b[1]) << 16) | (uint64_t(b[2]) << 8) | b[3];
    out.dims.push_back(static_cast<int64_t>(v));
    TENSOR_CHECK(!__builtin_mul_overflow(numel, v, &numel), "read_idx: '{}' declares sizes {} whose product overflows",
                 path, tensor::detail::shape_str(out.dims));
  }
  // The strides must fit in int64 even when a size is 0 (Note [Sizes that fit] in Factories.cpp).
  TENSOR_CHECK(tensor::detail::contiguous_strides_fit(out.dims), "read_idx: '{}' declares sizes {} too large to hold",
               path, tensor::detail::shape_str(out.dims));
  uint64_t expected;
  TENSOR_CHECK(!__builtin_mul_overflow(numel, uint64_t(element_size(out.type->dtype)), &expected) &&
                   expected <= uint64_t(std::numeric_limits<int64_t>::max()),
               "read_idx: '{}' declares sizes {} too large to hold", path, tensor::detail::shape_str(out.dims));

  // Grow the buffer as data arrives, doubling from 64 KiB, so a corrupt header cannot make us
  // allocate much more than the file actually holds: a 20-byte file that claims gigabytes costs
  // 64 KiB, not a first 16 MiB chunk (zeroed by resize(); it dominated tests/fuzz/fuzz_idx).
  size_t have = 0, chunk = size_t(1) << 16;
  while (have < expected) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(expected - have, chunk));
    out.bytes.resize(have + want);
    size_t r = gz_read(f.get(), out.bytes.data() + have, want, path);
    have += r;
    if (r < want) break;
    chunk *= 2;
  }
  out.bytes.resize(have);
  TENSOR_CHECK(have == expected,
               "read_idx: '{}' is truncated: its header declares {} elements of type {} with sizes {} ({} bytes of "
               "data) but only {} bytes follow",
               path, numel, out.type->name, tensor::detail::shape_str(out.dims), expected, have);
  uint8_t extra;
  TENSOR_CHECK(gz_read(f.get(), &extra, 1, path) == 0,
               "read_idx: '{}' has bytes after the {} declared by its header (sizes {}): wrong sizes or a corrupt file",
               path, expected, tensor::detail::shape_str(out.dims));
  return out;
}

std::string find_file(const std::string& root, const std::string& prefix, const std::string& kind) {
  // The canonical names, the variant with a dot (train-images.idx3-ubyte), each plain or gzipped.
  std::vector<std::string> tried;
  for (const char* sep : {"-", "."})
    for (const char* ext : {"", ".gz"}) {
      std::string p = root + "/" + prefix + "-" + kind + sep + (kind == "images" ? "idx3-ubyte" : "idx1-ubyte") + ext;
      struct stat st;
      if (::stat(p.c_str(), &st) == 0) return p;
      tried.push_back(p);
    }
  TENSOR_ERROR("datasets::MNIST: no {} file in '{}' (tried {})", kind, root, fmt::join(tried, ", "));
}

}  // namespace

Tensor read_idx(const std::string& path) {
  IdxFile f = read_idx_file(path);
  Tensor t = empty(f.dims, TensorOptions().dtype(f.type->dtype));
  int64_t es = element_size(f.type->dtype);
  auto* dst = static_cast<uint8_t*>(t.data_ptr());
  size_t n = f.bytes.size();
  // Big-endian to the host's (little-endian) order.
  for (size_t i = 0; i < n; i += es)
    for (int64_t b = 0; b < es; ++b) dst[i + b] = f.bytes[i + es - 1 - b];
  return t;
}

namespace datasets {

MNIST::MNIST(const std::string& root, bool train) : train_(train) {
  const std::string prefix = train ? "train" : "t10k";
  std::string image_path = find_file(root, prefix, "images");
  std::string label_path = find_file(root, prefix, "labels");
  IdxFile img = read_idx_file(image_path);
  TENSOR_CHECK(img.type->dtype == kUInt8 && img.dims.size() == 3,
               "datasets::MNIST: '{}' holds {} dims of type {} (sizes {}), but MNIST images are 3 dims [N, rows, cols] "
               "of unsigned bytes (magic 0x00000803)",
               image_path, img.dims.size(), img.type->name, tensor::detail::shape_str(img.dims));
  TENSOR_CHECK(img.dims[1] > 0 && img.dims[2] > 0, "datasets::MNIST: '{}' has images of size {}x{}", image_path,
               img.dims[1], img.dims[2]);
  IdxFile lab = read_idx_file(label_path);
  TENSOR_CHECK(lab.type->dtype == kUInt8 && lab.dims.size() == 1,
               "datasets::MNIST: '{}' holds {} dims of type {} (sizes {}), but MNIST labels are 1 dim [N] of unsigned "
               "bytes (magic 0x00000801)",
               label_path, lab.dims.size(), lab.type->name, tensor::detail::shape_str(lab.dims));
  TENSOR_CHECK(img.dims[0] == lab.dims[0], "datasets::MNIST: '{}' has {} images but '{}' has {} labels", image_path,
               img.dims[0], label_path, lab.dims[0]);

  const int64_t n = img.dims[0], h = img.dims[1], w = img.dims[2];
  images_ = empty({n, 1, h, w}, TensorOptions().dtype(kFloat32));
  float* px = images_.data_ptr<float>();
  for (size_t i = 0; i < img.bytes.size(); ++i) px[i] = static_cast<float>(img.bytes[i]) / 255.0f;
  targets_ = empty({n}, TensorOptions().dtype(kInt64));
  int64_t* lb = targets_.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) lb[i] = lab.bytes[static_cast<size_t>(i)];
}

size_t MNIST::size() const { return static_cast<size_t>(images_.size(0)); }

Example<> MNIST::get(size_t index) {
  TENSOR_CHECK(index < size(), "datasets::MNIST::get: index {} is out of range for {} samples", index, size());
  int64_t i = static_cast<int64_t>(index);
  return {images_.select(0, i), targets_.select(0, i)};
}

Example<> MNIST::get_batch(const std::vector<size_t>& indices) {
  for (size_t i : indices)
    TENSOR_CHECK(i < size(), "datasets::MNIST::get_batch: index {} is out of range for {} samples", i, size());
  return {data::detail::gather_rows(images_, indices), data::detail::gather_rows(targets_, indices)};
}

}  // namespace datasets
}  // namespace tensor::data
