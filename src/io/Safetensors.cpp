// safetensors reader and writer (tensor::io::save / load). Format, ordering and the atomic write
// are described in docs/io_data.md.
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "src/core/Check.h"
#include "src/io/Checksum.h"
#include "src/core/Sizes.h"
#include "tensor/autograd/autograd.h"
#include "tensor/io.h"
#include "tensor/ops.h"
#include "tensor/quantized.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian; a big-endian host needs byte swapping in Safetensors.cpp");

namespace tensor::io {
namespace {

// The reference implementation rejects headers above 100 MB; so do we, which also bounds what a
// corrupt length field can make us allocate.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct DtypeInfo {
  const char* name;
  ScalarType type;
  // Position in the reference implementation's Dtype enum (which is ordered by alignment).
  // Note [safetensors tensor order]: the reference writer lays tensors out by descending rank,
  // then by name, so that every tensor's data is aligned to its element size; we follow it so
  // that our files are byte-identical to its files for the same input.
  int rank;
};
constexpr DtypeInfo kDtypes[] = {
    {"BOOL", kBool, 0},     {"U8", kUInt8, 1},   {"I8", kInt8, 2},      {"I16", kInt16, 5},
    {"F16", kFloat16, 7},   {"BF16", kBFloat16, 8}, {"I32", kInt32, 9}, {"F32", kFloat32, 11},
    {"F64", kFloat64, 12},  {"I64", kInt64, 13},
};
// safetensors dtypes that libtensor has no dtype for: named in the error instead of "unknown".
constexpr const char* kUnsupportedDtypes[] = {"U16", "U32", "U64", "F8_E5M2", "F8_E4M3", "F8_E8M0",
                                              "F4", "F6_E2M3", "F6_E3M2", "C64"};

const DtypeInfo* info_of(ScalarType t) {
  for (const auto& d : kDtypes)
    if (d.type == t) return &d;
  return nullptr;
}
const DtypeInfo* info_of(const std::string& name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

std::string errno_str(int e) { return std::strerror(e); }

// ---- JSON writing (by hand: the exact bytes matter, see Note [safetensors tensor order]) ----

// Escapes as serde_json does: \" \\ \b \f \n \r \t, other control bytes as \u00xx, the rest raw.
void append_json_string(std::string& out, const std::string& s) {
  static const char hex[] = "0123456789abcdef";
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

// JSON text must be UTF-8; readers (ours and the reference) reject anything else.
bool valid_utf8(const std::string& s) {
  size_t i = 0, n = s.size();
  while (i < n) {
    unsigned char c = s[i];
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > n) return false;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
    for (int k = 1; k < len; ++k) {
      unsigned char cc = s[i + k];
      if ((cc >> 6) != 2) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    static const uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += len;
  }
  return true;
}

// ---- file helpers ----

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { if (fd_ >= 0) ::close(fd_); }
  int get() const { return fd_; }
  int release() { int f = fd_; fd_ = -1; return f; }

 private:
  int fd_;
};

void write_all(int fd, const void* data, size_t n, const std::string& tmp) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    // Linux writes at most ~2 GiB per call.
    ssize_t w = ::write(fd, p, std::min<size_t>(n, size_t(1) << 30));
    if (w < 0) {
      if (errno == EINTR) continue;
      TENSOR_ERROR("tensor::io::save: writing '{}' failed: {}", tmp, errno_str(errno));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// Reads exactly n bytes at `offset`; false when the file ends first.
bool pread_all(int fd, void* data, size_t n, uint64_t offset, const std::string& path) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = ::pread(fd, p, std::min<size_t>(n, size_t(1) << 30), static_cast<off_t>(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      TENSOR_ERROR("tensor::io::load: reading '{}' failed: {}", path, errno_str(errno));
    }
    if (r == 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
  return true;
}

std::string directory_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// ---- header parsing and validation ----

struct Entry {
  std::string name;
  const DtypeInfo* dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

struct Header {
  uint64_t header_bytes = 0;  // n: the JSON length after the 8-byte prefix
  std::vector<Entry> entries;  // sorted by data offset
  Metadata metadata;           // without kChecksumKey
  std::vector<uint32_t> checksums;  // per entry, when the file has them (Note [Checkpoint checksums])
};

[[noreturn]] void corrupt(const std::string& path, const std::string& problem) {
  TENSOR_ERROR("tensor::io::load: '{}' is not a valid safetensors file: {}", path, problem);
}

uint64_t read_u64_le(const unsigned char* b) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b[i];
  return v;
}

Entry parse_entry(const std::string& path, const std::string& name, const nlohmann::json& j) {
  if (!j.is_object()) corrupt(path, fmt::format("the header entry of tensor '{}' is not a JSON object", name));
  auto field = [&](const char* key) -> const nlohmann::json& {
    auto it = j.find(key);
    if (it == j.end()) corrupt(path, fmt::format("tensor '{}' has no \"{}\" field", name, key));
    return *it;
  };
  const auto& jd = field("dtype");
  const auto& js = field("shape");
  const auto& jo = field("data_offsets");
  Entry e;
  e.name = name;
  if (!jd.is_string()) corrupt(path, fmt::format("the \"dtype\" of tensor '{}' is not a string", name));
  std::string dt = jd.get<std::string>();
  e.dtype = info_of(dt);
  if (!e.dtype) {
    for (const char* u : kUnsupportedDtypes)
      if (dt == u)
        TENSOR_ERROR("tensor::io::load: '{}': tensor '{}' has safetensors dtype {}, which libtensor does not support "
                     "(supported: BOOL U8 I8 I16 I32 I64 F16 BF16 F32 F64)",
                     path, name, dt);
    corrupt(path, fmt::format("tensor '{}' has unknown dtype \"{}\"", name, dt));
  }
  if (!js.is_array()) corrupt(path, fmt::format("the \"shape\" of tensor '{}' is not an array", name));
  for (size_t i = 0; i < js.size(); ++i) {
    const auto& d = js[i];
    // Never dump() a value that is not a number: nlohmann's dump() recurses, and a header of
    // nested arrays ("[[[[...") would overflow the stack.
    if (!d.is_number_unsigned() || d.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      corrupt(path, fmt::format("the shape of tensor '{}' is not a list of non-negative integers (element {} is {})",
                                name, i, d.is_number() ? d.dump() : std::string("a JSON ") + d.type_name()));
    e.shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
  }
  const std::string shape = tensor::detail::shape_str(e.shape);
  // The strides must fit in int64 even when a size is 0 (Note [Sizes that fit] in Factories.cpp).
  if (!tensor::detail::contiguous_strides_fit(e.shape))
    corrupt(path,
            fmt::format("the shape {} of tensor '{}' overflows int64 (its element count or strides)", shape, name));
  uint64_t numel = 1;
  for (int64_t v : e.shape) numel *= static_cast<uint64_t>(v);  // fits: at most the product checked above
  uint64_t nbytes;
  if (__builtin_mul_overflow(numel, static_cast<uint64_t>(element_size(e.dtype->type)), &nbytes))
    corrupt(path, fmt::format("the shape {} of tensor '{}' overflows 64 bits", shape, name));
  if (!jo.is_array() || jo.size() != 2 || !jo[0].is_number_unsigned() || !jo[1].is_number_unsigned())
    corrupt(path, fmt::format("the \"data_offsets\" of tensor '{}' are not two non-negative integers [begin, end]", name));
  e.begin = jo[0].get<uint64_t>();
  e.end = jo[1].get<uint64_t>();
  if (e.end < e.begin)
    corrupt(path, fmt::format("tensor '{}' has data_offsets [{}, {}) with end before begin", name, e.begin, e.end));
  if (e.end - e.begin != nbytes)
    corrupt(path, fmt::format("tensor '{}' has data_offsets [{}, {}) ({} bytes), but shape {} of dtype {} needs {} bytes",
                              name, e.begin, e.end, e.end - e.begin, shape, dt, nbytes));
  return e;
}

// Note [Recognizing .pt files]: torch.save (since PyTorch 1.6) and libtorch's torch::save write a
// zip archive ("PK\x03\x04"); older torch.save writes a pickle (0x80, protocol 2..5). Read as a
// safetensors length, those bytes give a length that usually fails with a puzzling message, so
// they are recognized first. A safetensors file starts its JSON header with '{' at byte 8, which
// neither format has there, so no valid safetensors file is mistaken for one.
bool is_torch_file(const unsigned char* b, uint64_t file_size) {
  if (file_size >= 9 && b[8] == '{') return false;
  if (b[0] == 'P' && b[1] == 'K' && b[2] == 3 && b[3] == 4) return true;
  return b[0] == 0x80 && b[1] >= 2 && b[1] <= 5;
}

// Reads and validates the header of an open file of `file_size` bytes. After it returns, every
// entry's byte range lies inside the file and the ranges tile the data buffer exactly.
Header read_header(int fd, uint64_t file_size, const std::string& path) {
  Header h;
  if (file_size < 8) corrupt(path, fmt::format("the file has {} bytes, fewer than the 8-byte header length", file_size));
  unsigned char prefix[9] = {};
  if (!pread_all(fd, prefix, file_size >= 9 ? 9 : 8, 0, path)) corrupt(path, "the file ended inside the 8-byte header length");
  if (is_torch_file(prefix, file_size))
    TENSOR_ERROR("tensor::io::load: '{}' is a PyTorch/libtorch .pt file ({}), not safetensors: tensor::io reads "
                 "only safetensors. Load a torch.save state_dict with tensor::load(module, path), any torch.save file "
                 "with tensor::pickle_load_file(path) (docs/io_data.md)",
                 path, prefix[0] == 'P' ? "a zip archive, as torch.save and torch::save write" : "a pickle, as the legacy torch.save writes");
  uint64_t n = read_u64_le(prefix);
  if (n > file_size - 8)
    corrupt(path, fmt::format("the header length {} is larger than the {} bytes that follow it (truncated file?)", n,
                              file_size - 8));
  if (n > kMaxHeaderBytes) corrupt(path, fmt::format("the header length {} exceeds the limit of {} bytes", n, kMaxHeaderBytes));
  if (n < 2) corrupt(path, fmt::format("the header length {} is too small for a JSON object", n));
  std::string text(n, '\0');
  if (!pread_all(fd, text.data(), n, 8, path)) corrupt(path, "the file ended inside the JSON header");
  h.header_bytes = n;

  // Duplicate top-level keys are silently merged by JSON parsers; a tensor named twice is corrupt.
  std::set<std::string> seen;
  std::string duplicate;
  nlohmann::json::parser_callback_t cb = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && depth == 1 && parsed.is_string()) {
      if (!seen.insert(parsed.get<std::string>()).second && duplicate.empty()) duplicate = parsed.get<std::string>();
    }
    return true;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text, cb);
  } catch (const nlohmann::json::exception& e) {
    corrupt(path, fmt::format("the header is not valid JSON ({})", e.what()));
  }
  if (!j.is_object()) corrupt(path, "the JSON header is not an object");
  if (!duplicate.empty()) corrupt(path, fmt::format("the header names '{}' twice", duplicate));

  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) corrupt(path, "\"__metadata__\" is not a JSON object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) corrupt(path, fmt::format("the metadata value of '{}' is not a string", m.key()));
        h.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    h.entries.push_back(parse_entry(path, it.key(), *it));
  }

  // The byte ranges must tile [0, data_size) exactly: no gap, no overlap, nothing past the end.
  uint64_t data_size = file_size - 8 - n;
  std::sort(h.entries.begin(), h.entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  uint64_t pos = 0;
  const Entry* prev = nullptr;
  for (const auto& e : h.entries) {
    if (e.end > data_size)
      corrupt(path, fmt::format("tensor '{}' has data_offsets [{}, {}) past the end of the {}-byte data buffer "
                                "(truncated file?)",
                                e.name, e.begin, e.end, data_size));
    if (e.begin < pos)
      corrupt(path, fmt::format("the data of tensor '{}' [{}, {}) overlaps that of tensor '{}' [{}, {})", e.name,
                                e.begin, e.end, prev->name, prev->begin, prev->end));
    if (e.begin > pos) corrupt(path, fmt::format("bytes [{}, {}) of the data buffer belong to no tensor", pos, e.begin));
    pos = e.end;
    prev = &e;
  }
  if (pos != data_size)
    corrupt(path, fmt::format("the tensors cover {} bytes but the data buffer has {} (trailing bytes)", pos, data_size));
  auto sums = h.metadata.find(detail::kChecksumKey);
  if (sums != h.metadata.end()) {
    auto parsed = detail::parse_checksums(sums->second, h.entries.size());
    if (!parsed)
      corrupt(path, fmt::format("the checksum list \"{}\" does not hold 8 hex digits for each of its {} tensors",
                                detail::kChecksumKey, h.entries.size()));
    h.checksums = std::move(*parsed);
    h.metadata.erase(sums);
  }
  return h;
}

// Opens a regular file for reading; *size receives its length.
Fd open_for_read(const std::string& path, uint64_t* size) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) TENSOR_ERROR("tensor::io::load: cannot open '{}': {}", path, errno_str(errno));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) TENSOR_ERROR("tensor::io::load: cannot stat '{}': {}", path, errno_str(errno));
  if (!S_ISREG(st.st_mode)) TENSOR_ERROR("tensor::io::load: '{}' is not a regular file", path);
  *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

void check_savable(const std::string& name, const Tensor& t) {
  TENSOR_CHECK(t.defined(), "tensor::io::save: tensor '{}' is undefined", name);
  TENSOR_CHECK(!t.is_complex(),
               "tensor::io::save: tensor '{}' ({}) is complex, which the safetensors format cannot store; save its "
               "real() and imag() as two float tensors",
               name, t.describe());
  TENSOR_CHECK(info_of(t.dtype()) != nullptr, "tensor::io::save: tensor '{}' has unsupported dtype {}", name, t.dtype());
  TENSOR_CHECK(!t.is_meta(), "tensor::io::save: tensor '{}' ({}) is on the meta device and has no data", name,
               t.describe());
}

// Note [Quantized tensors in safetensors]
// safetensors has no quantized dtype, so a quantized tensor `w` is written as plain tensors a
// Python reader can use: `w` holds the integers (I8 for qint8, U8 for quint8, I32 for qint32),
// `w.q_scale` the scale(s) (F64) and `w.q_zero_point` the zero point(s) (I64), each 0-dim for a
// per-tensor tensor and 1-D (one per channel) for a per-channel one; the metadata entry
// "libtensor.quantized.w" says which ("per_tensor_affine", or "per_channel_affine axis=K") and
// marks the three as one tensor, which load() puts back together (docs/io_data.md).
constexpr const char* kQuantizedPrefix = "libtensor.quantized.";
constexpr const char* kScaleSuffix = ".q_scale";
constexpr const char* kZeroPointSuffix = ".q_zero_point";

// The tensors and metadata to write for `tensors`, quantized ones split into three.
void split_quantized(const NamedTensors& tensors, const Metadata& metadata, NamedTensors& out, Metadata& meta) {
  meta = metadata;
  std::set<std::string> names;
  for (const auto& [name, t] : tensors) names.insert(name);
  for (const auto& [k, v] : metadata)
    TENSOR_CHECK(k.rfind(kQuantizedPrefix, 0) != 0,
                 "tensor::io::save: metadata key '{}' is reserved (it describes a quantized tensor)", k);
  for (const auto& [name, t] : tensors) {
    if (!t.defined() || !t.is_quantized()) {
      out.emplace_back(name, t);
      continue;
    }
    for (const char* suffix : {kScaleSuffix, kZeroPointSuffix})
      TENSOR_CHECK(!names.count(name + suffix),
                   "tensor::io::save: tensor '{}' is quantized, so its parameters are saved as '{}{}', which another "
                   "tensor is also named", name, name, suffix);
    out.emplace_back(name, t.int_repr());
    if (t.qscheme() == kPerTensorAffine) {
      out.emplace_back(name + kScaleSuffix, scalar_tensor(t.q_scale(), TensorOptions().dtype(kFloat64)));
      out.emplace_back(name + kZeroPointSuffix, scalar_tensor(t.q_zero_point(), TensorOptions().dtype(kInt64)));
      meta[kQuantizedPrefix + name] = "per_tensor_affine";
    } else {
      out.emplace_back(name + kScaleSuffix, t.q_per_channel_scales());
      out.emplace_back(name + kZeroPointSuffix, t.q_per_channel_zero_points());
      meta[kQuantizedPrefix + name] = fmt::format("per_channel_affine axis={}", t.q_per_channel_axis());
    }
  }
}

// Puts the quantized tensors described in `meta` back together (Note [Quantized tensors in
// safetensors]) and drops their metadata entries.
void join_quantized(NamedTensors& tensors, Metadata& meta, const std::string& path) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < tensors.size(); ++i) index[tensors[i].first] = i;
  std::set<std::string> absorbed;
  for (auto it = meta.begin(); it != meta.end();) {
    if (it->first.rfind(kQuantizedPrefix, 0) != 0) {
      ++it;
      continue;
    }
    const std::string name = it->first.substr(std::strlen(kQuantizedPrefix));
    const std::string& scheme = it->second;
    auto find = [&](const std::string& n) -> const Tensor& {
      auto f = index.find(n);
      if (f == index.end())
        corrupt(path, fmt::format("the metadata says '{}' is quantized, but the file has no tensor '{}'", name, n));
      return tensors[f->second].second;
    };
    const Tensor& ints = find(name);
    const Tensor& scale = find(name + kScaleSuffix);
    const Tensor& zero_point = find(name + kZeroPointSuffix);
    Tensor q;
    try {
      if (scheme == "per_tensor_affine") {
        TENSOR_CHECK(scale.numel() == 1 && zero_point.numel() == 1 && scale.is_floating_point() &&
                         is_integral(zero_point.dtype(), false),
                     "expected a floating scale and an integer zero point of one element each, got {} and {}",
                     scale.describe(), zero_point.describe());
        q = _make_per_tensor_quantized_tensor(ints, scale.item<double>(), zero_point.item<int64_t>());
      } else if (scheme.rfind("per_channel_affine axis=", 0) == 0) {
        const std::string axis = scheme.substr(std::strlen("per_channel_affine axis="));
        TENSOR_CHECK(!axis.empty() && axis.size() < 19 && std::all_of(axis.begin(), axis.end(), ::isdigit),
                     "the axis in \"{}\" is not a non-negative integer", scheme);
        q = _make_per_channel_quantized_tensor(ints, scale, zero_point, std::stoll(axis));
      } else {
        TENSOR_ERROR("unknown quantization scheme \"{}\" (expected per_tensor_affine or per_channel_affine axis=K)",
                     scheme);
      }
    } catch (const Error& e) {
      corrupt(path, fmt::format("quantized tensor '{}': {}", name, e.what()));
    }
    tensors[index[name]].second = std::move(q);
    absorbed.insert(name + kScaleSuffix);
    absorbed.insert(name + kZeroPointSuffix);
    it = meta.erase(it);
  }
  if (absorbed.empty()) return;
  tensors.erase(std::remove_if(tensors.begin(), tensors.end(), [&](const auto& kv) { return absorbed.count(kv.first) > 0; }),
                tensors.end());
}

void save_plain(const NamedTensors& tensors, const std::string& path, const Metadata& metadata);
NamedTensors load_plain(const std::string& path, Metadata* metadata);

}  // namespace

void save(const NamedTensors& tensors, const std::string& path, const Metadata& metadata) {
  NamedTensors plain;
  Metadata meta;
  split_quantized(tensors, metadata, plain, meta);
  save_plain(plain, path, meta);
}

NamedTensors load(const std::string& path, Metadata* metadata) {
  Metadata meta;
  NamedTensors out = load_plain(path, &meta);
  join_quantized(out, meta, path);
  if (metadata) *metadata = std::move(meta);
  return out;
}

namespace {
std::atomic<bool>& verify_flag() {
  static std::atomic<bool> flag{[] {
    const char* v = std::getenv("TENSOR_IO_VERIFY");
    return !(v && std::string(v) == "0");
  }()};
  return flag;
}
}  // namespace

void set_verify_checksums(bool verify) { verify_flag().store(verify); }
bool verify_checksums() { return verify_flag().load(); }
bool detail::checksums_enabled() { return verify_flag().load(); }

namespace {
void save_plain(const NamedTensors& tensors, const std::string& path, const Metadata& metadata) {
  // Validate everything before touching the disk.
  std::set<std::string> names;
  for (const auto& [name, t] : tensors) {
    TENSOR_CHECK(name != "__metadata__", "tensor::io::save: '__metadata__' is reserved and cannot name a tensor");
    TENSOR_CHECK(valid_utf8(name), "tensor::io::save: tensor name '{}' is not valid UTF-8", name);
    TENSOR_CHECK(names.insert(name).second, "tensor::io::save: tensor name '{}' appears twice", name);
    check_savable(name, t);
  }
  for (const auto& [k, v] : metadata)
    TENSOR_CHECK(valid_utf8(k) && valid_utf8(v), "tensor::io::save: metadata entry '{}' is not valid UTF-8", k);
  TENSOR_CHECK(!metadata.count(detail::kChecksumKey),
               "tensor::io::save: metadata key '{}' is reserved for the tensors' checksums", detail::kChecksumKey);
  // The checksums' placeholder, patched after the data is written (Note [Checkpoint checksums]).
  Metadata meta = metadata;
  if (!tensors.empty()) {
    std::string zeros;
    for (size_t i = 0; i < tensors.size(); ++i) zeros += (i ? ",00000000" : "00000000");
    meta[detail::kChecksumKey] = zeros;
  }
  size_t checksum_pos = 0;  // where the placeholder's digits start in the header

  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    int ra = info_of(tensors[a].second.dtype())->rank, rb = info_of(tensors[b].second.dtype())->rank;
    return ra != rb ? ra > rb : tensors[a].first < tensors[b].first;
  });

  // Header: compact JSON, "__metadata__" first, then the tensors in data order.
  std::string header = "{";
  if (!meta.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : meta) {
      if (!first) header += ',';
      first = false;
      append_json_string(header, k);
      header += ':';
      if (k == detail::kChecksumKey) checksum_pos = header.size() + 1;  // after the opening quote
      append_json_string(header, v);
    }
    header += '}';
    if (!tensors.empty()) header += ',';
  }
  uint64_t offset = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const auto& [name, t] = tensors[order[k]];
    if (k) header += ',';
    append_json_string(header, name);
    header += ":{\"dtype\":\"";
    header += info_of(t.dtype())->name;
    header += "\",\"shape\":[";
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (d) header += ',';
      header += std::to_string(t.size(d));
    }
    uint64_t nbytes = static_cast<uint64_t>(t.nbytes());
    header += fmt::format("],\"data_offsets\":[{},{}]}}", offset, offset + nbytes);
    offset += nbytes;
  }
  header += '}';
  header.append((8 - header.size() % 8) % 8, ' ');  // the data starts 8-byte aligned

  // Note [Atomic save]: write a temporary file beside `path`, fsync it, rename it over `path`,
  // then fsync the directory so that the rename itself is durable. rename() is atomic on POSIX
  // filesystems: a reader (or a crash) sees the complete old file or the complete new one.
  static std::atomic<uint64_t> counter{0};
  std::string tmp = fmt::format("{}.tmp.{}.{}", path, ::getpid(), counter.fetch_add(1));
  int raw = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  TENSOR_CHECK(raw >= 0, "tensor::io::save: cannot create '{}' (the temporary file for '{}'): {}", tmp, path,
               errno_str(errno));
  Fd fd(raw);
  try {
    unsigned char prefix[8];
    for (int i = 0; i < 8; ++i) prefix[i] = static_cast<unsigned char>(static_cast<uint64_t>(header.size()) >> (8 * i));
    write_all(fd.get(), prefix, 8, tmp);
    write_all(fd.get(), header.data(), header.size(), tmp);
    NoGradGuard no_grad;
    std::string sums;
    for (size_t i : order) {
      const Tensor& t = tensors[i].second;
      if (!sums.empty()) sums += ',';
      if (t.numel() == 0) {
        sums += detail::crc_hex(detail::crc32_of(nullptr, 0));
        continue;
      }
      // One contiguous CPU copy at a time: memory stays bounded by the largest tensor.
      Tensor c = t.is_cpu() ? t.contiguous() : t.to(Device(kCPU)).contiguous();
      write_all(fd.get(), c.data_ptr(), static_cast<size_t>(c.nbytes()), tmp);
      sums += detail::crc_hex(detail::crc32_of(c.data_ptr(), static_cast<uint64_t>(c.nbytes())));
    }
    if (!sums.empty()) {
      TENSOR_CHECK(::pwrite(fd.get(), sums.data(), sums.size(), static_cast<off_t>(8 + checksum_pos)) ==
                       static_cast<ssize_t>(sums.size()),
                   "tensor::io::save: writing the checksums into '{}' failed: {}", tmp, errno_str(errno));
    }
    TENSOR_CHECK(::fsync(fd.get()) == 0, "tensor::io::save: fsync of '{}' failed: {}", tmp, errno_str(errno));
    TENSOR_CHECK(::close(fd.release()) == 0, "tensor::io::save: closing '{}' failed: {}", tmp, errno_str(errno));
    TENSOR_CHECK(::rename(tmp.c_str(), path.c_str()) == 0, "tensor::io::save: renaming '{}' to '{}' failed: {}", tmp,
                 path, errno_str(errno));
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  std::string dir = directory_of(path);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    int rc = ::fsync(dfd);
    int err = errno;
    ::close(dfd);
    // Some filesystems cannot fsync a directory (EINVAL); the rename is done either way.
    TENSOR_CHECK(rc == 0 || err == EINVAL, "tensor::io::save: fsync of directory '{}' failed: {}", dir, errno_str(err));
  }
}

// Note [Parallel checkpoint reads]
// Loading is reading the data and, when the file has them, checking its CRC-32s (Note
// [Checkpoint checksums]); zlib's CRC-32 runs at about 2.7 GB/s on one core, slower than the
// read from the page cache, so it set the load's speed. The data of all tensors is cut into
// chunks of kReadChunk bytes that the threads share: each reads its chunk (pread, into the
// tensor's memory) and checksums it at once, while the bytes are still in its cache; a
// tensor's CRC is then put together from its chunks' with crc32_combine, in file order, so it
// is the same CRC as of one pass. A failed read is recorded and raised after the loop. Without
// checksums to check, each tensor is one read on the calling thread, as before: the copy out of
// the page cache alone gained nothing from a second thread on a loaded 2-core machine.
constexpr uint64_t kReadChunk = uint64_t(1) << 20;

NamedTensors load_plain(const std::string& path, Metadata* metadata) {
  uint64_t size = 0;
  Fd fd = open_for_read(path, &size);
  Header h = read_header(fd.get(), size, path);
  const uint64_t data_start = 8 + h.header_bytes;
  const bool check = !h.checksums.empty() && detail::checksums_enabled();
  std::vector<Tensor> data(h.entries.size());
  struct Chunk {
    size_t entry;
    uint64_t begin, bytes;  // within the entry's data
    uint32_t crc = 0;
    int status = 0;  // 0 read, 1 the file ended first, else errno + 2
  };
  std::vector<Chunk> chunks;
  for (size_t i = 0; i < h.entries.size(); ++i) {
    const Entry& e = h.entries[i];
    data[i] = empty(e.shape, TensorOptions().dtype(e.dtype->type));
    const uint64_t nbytes = e.end - e.begin;
    const uint64_t step = check ? kReadChunk : std::max<uint64_t>(nbytes, 1);  // unchecked: one read each
    for (uint64_t b = 0; b < nbytes; b += step) chunks.push_back({i, b, std::min(step, nbytes - b)});
  }
  const int64_t nc = static_cast<int64_t>(chunks.size());
#pragma omp parallel for schedule(dynamic, 1) if (check && nc > 1 && !omp_in_parallel())
  for (int64_t k = 0; k < nc; ++k) {
    Chunk& c = chunks[static_cast<size_t>(k)];
    char* p = static_cast<char*>(data[c.entry].data_ptr()) + c.begin;
    uint64_t at = data_start + h.entries[c.entry].begin + c.begin, left = c.bytes;
    while (left > 0 && c.status == 0) {
      const ssize_t r = ::pread(fd.get(), p, static_cast<size_t>(left), static_cast<off_t>(at));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        c.status = r == 0 ? 1 : errno + 2;
        break;
      }
      p += r;
      at += static_cast<uint64_t>(r);
      left -= static_cast<uint64_t>(r);
    }
    if (c.status == 0 && check) c.crc = detail::crc32_of(static_cast<char*>(data[c.entry].data_ptr()) + c.begin, c.bytes);
  }
  NamedTensors out;
  out.reserve(h.entries.size());
  size_t k = 0;
  for (size_t i = 0; i < h.entries.size(); ++i) {
    const Entry& e = h.entries[i];
    Tensor t = std::move(data[i]);
    uint64_t nbytes = e.end - e.begin;
    uint32_t got = 0;  // the CRC-32 of no bytes
    for (; k < chunks.size() && chunks[k].entry == i; ++k) {
      const Chunk& c = chunks[k];
      if (c.status > 1) TENSOR_ERROR("tensor::io::load: reading '{}' failed: {}", path, errno_str(c.status - 2));
      if (c.status == 1)
        corrupt(path, fmt::format("the file ended inside the data of tensor '{}' (was it truncated while loading?)", e.name));
      got = detail::crc32_combine(got, c.crc, c.bytes);
    }
    if (check) {
      if (got != h.checksums[i])
        TENSOR_ERROR("tensor::io::load: '{}' is corrupt: the data of tensor '{}' ({}) does not match its checksum "
                     "(CRC-32 {} when saved, {} now); the file changed after it was written",
                     path, e.name, tensor::detail::shape_str(e.shape), detail::crc_hex(h.checksums[i]),
                     detail::crc_hex(got));
    }
    if (e.dtype->type == kBool) {
      // A C++ bool must hold 0 or 1; other writers may store any nonzero byte for true.
      auto* p = static_cast<uint8_t*>(t.data_ptr());
      for (uint64_t i = 0; i < nbytes; ++i) p[i] = p[i] != 0;
    }
    out.emplace_back(e.name, std::move(t));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  if (metadata) *metadata = std::move(h.metadata);
  return out;
}
}  // namespace

void load(const NamedTensors& tensors, const std::string& path, bool strict) {
  NamedTensors file = load(path);
  std::unordered_map<std::string, const Tensor*> by_name;
  for (const auto& [name, t] : file) by_name[name] = &t;

  std::vector<std::string> missing, unexpected;
  std::set<std::string> wanted;
  for (const auto& [name, t] : tensors) {
    wanted.insert(name);
    if (!by_name.count(name)) missing.push_back(name);
  }
  for (const auto& [name, t] : file)
    if (!wanted.count(name)) unexpected.push_back(name);
  if (strict && (!missing.empty() || !unexpected.empty())) {
    std::string msg = fmt::format("tensor::io::load: the tensors of '{}' do not match the ones to load into", path);
    if (!missing.empty()) msg += fmt::format("; missing from the file: {}", fmt::join(missing, ", "));
    if (!unexpected.empty()) msg += fmt::format("; in the file but not expected: {}", fmt::join(unexpected, ", "));
    TENSOR_ERROR("{} (pass strict=false to load only the common names)", msg);
  }
  // Check every pair before writing any, so a mismatch leaves all targets untouched.
  for (const auto& [name, dst] : tensors) {
    auto it = by_name.find(name);
    if (it == by_name.end()) continue;
    const Tensor& src = *it->second;
    TENSOR_CHECK(dst.defined(), "tensor::io::load: the target tensor '{}' is undefined", name);
    TENSOR_CHECK(dst.sizes() == src.sizes() && dst.dtype() == src.dtype(),
                 "tensor::io::load: tensor '{}' is {} in '{}' but the target is {}", name, src.describe(), path,
                 dst.describe());
  }
  NoGradGuard no_grad;
  for (const auto& [name, dst] : tensors) {
    auto it = by_name.find(name);
    if (it == by_name.end()) continue;
    Tensor target = dst;
    target.copy_(*it->second);
  }
}

Metadata load_metadata(const std::string& path) {
  uint64_t size = 0;
  Fd fd = open_for_read(path, &size);
  return read_header(fd.get(), size, path).metadata;
}

}  // namespace tensor::io
