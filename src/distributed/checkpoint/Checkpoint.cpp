// Distributed checkpoint: per-rank safetensors shards plus one JSON metadata file, committed
// atomically by rank 0, loaded with resharding (docs/distributed.md).
#include "tensor/distributed/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "src/core/Check.h"
#include "src/io/Checksum.h"
#include "tensor/autograd/autograd.h"
#include "tensor/io.h"
#include "tensor/nn/module.h"
#include "tensor/ops.h"

namespace tensor::distributed::checkpoint {

namespace fs = std::filesystem;
using nlohmann::json;
using Shape = std::vector<int64_t>;

namespace {

const char* kMetadataFile = ".metadata";
const char* kFormat = "libtensor-distributed-checkpoint";

std::string shape_str(const Shape& s) { return ::tensor::detail::shape_str(s); }

int64_t volume(const Shape& sizes) {
  int64_t v = 1;
  for (int64_t s : sizes) v *= s;
  return v;
}

// The dtypes safetensors stores, with its names (the file) and libtensor's (the metadata).
struct DtypeName {
  ScalarType type;
  const char* safetensors;
};
const DtypeName kDtypes[] = {{kBool, "BOOL"},   {kUInt8, "U8"},    {kInt8, "I8"},      {kInt16, "I16"},
                             {kInt32, "I32"},   {kInt64, "I64"},   {kFloat16, "F16"}, {kBFloat16, "BF16"},
                             {kFloat32, "F32"}, {kFloat64, "F64"}};

const DtypeName* dtype_entry(ScalarType t) {
  for (const auto& d : kDtypes)
    if (d.type == t) return &d;
  return nullptr;
}
ScalarType dtype_from_name(const std::string& name, const std::string& where) {
  for (const auto& d : kDtypes)
    if (name == ::tensor::to_string(d.type)) return d.type;
  TENSOR_ERROR("checkpoint: {}: unknown dtype \"{}\"", where, name);
}

std::mutex g_hook_mu;
std::function<void(const std::string&, int)> g_hook;
void fault_point(const std::string& phase, int rank) {
  std::function<void(const std::string&, int)> hook;
  {
    std::lock_guard<std::mutex> lock(g_hook_mu);
    hook = g_hook;
  }
  if (hook) hook(phase, rank);
}

std::string shard_file_name(int rank, int64_t generation) {
  return "__" + std::to_string(rank) + "_0.g" + std::to_string(generation) + ".safetensors";
}

// Writes `text` to `path` atomically: a temporary file next to it, fsynced, renamed over
// `path`, then the directory fsynced (as io::save does for safetensors files).
void write_file_atomically(const std::string& path, const std::string& text, const std::function<void()>& before_rename) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  TENSOR_CHECK(fd >= 0, "checkpoint::save: cannot create '{}': {}", tmp, std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int e = errno;
      ::close(fd);
      TENSOR_ERROR("checkpoint::save: writing '{}' failed: {}", tmp, std::strerror(e));
    }
    done += static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0)
    TENSOR_ERROR("checkpoint::save: flushing '{}' failed: {}", tmp, std::strerror(errno));
  if (before_rename) before_rename();
  TENSOR_CHECK(::rename(tmp.c_str(), path.c_str()) == 0, "checkpoint::save: renaming '{}' to '{}' failed: {}", tmp, path,
               std::strerror(errno));
  std::string dir = fs::path(path).parent_path().string();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

// Every rank's string, in rank order (two allgathers: the lengths, then the padded bytes).
std::vector<std::string> exchange(ProcessGroup* pg, const std::string& mine) {
  if (!pg || pg->size() == 1) return {mine};
  const int world = pg->size();
  Tensor len = full({1}, static_cast<int64_t>(mine.size()), TensorOptions().dtype(kInt64));
  std::vector<Tensor> lens;
  for (int r = 0; r < world; ++r) lens.push_back(zeros({1}, TensorOptions().dtype(kInt64)));
  pg->allgather(lens, len)->wait();
  int64_t longest = 1;
  for (auto& l : lens) longest = std::max(longest, l.data_ptr<int64_t>()[0]);
  Tensor buf = zeros({longest}, TensorOptions().dtype(kUInt8));
  std::memcpy(buf.data_ptr(), mine.data(), mine.size());
  std::vector<Tensor> bufs;
  for (int r = 0; r < world; ++r) bufs.push_back(zeros({longest}, TensorOptions().dtype(kUInt8)));
  pg->allgather(bufs, buf)->wait();
  std::vector<std::string> out;
  for (int r = 0; r < world; ++r)
    out.emplace_back(static_cast<const char*>(bufs[r].data_ptr()), static_cast<size_t>(lens[r].data_ptr<int64_t>()[0]));
  return out;
}

// The box [offsets, offsets + sizes) of what a state-dict value holds, checked.
struct Box {
  Shape offsets, sizes;
};

struct Entry {
  bool sharded;
  Tensor tensor;  // the whole tensor, or the local shard
  Shape global_shape;
  Box box;
};

Entry describe(const std::string& key, const StateDictValue& value, const char* op) {
  Entry e;
  if (const Tensor* t = std::get_if<Tensor>(&value)) {
    TENSOR_CHECK(t->defined(), "{}: key '{}' holds an undefined tensor", op, key);
    e.sharded = false;
    e.tensor = *t;
    e.global_shape = t->sizes().vec();
    e.box = {Shape(t->dim(), 0), e.global_shape};
  } else {
    const auto& s = std::get<ShardedTensor>(value);
    TENSOR_CHECK(s.local.defined(), "{}: key '{}': the ShardedTensor's local tensor is undefined", op, key);
    const size_t nd = s.global_shape.size();
    TENSOR_CHECK(s.offsets.size() == nd && static_cast<size_t>(s.local.dim()) == nd,
                 "{}: key '{}': the ShardedTensor has a global shape of {} dims, offsets {} and a local tensor of shape "
                 "{}: all three need the same number of dims",
                 op, key, nd, shape_str(s.offsets), shape_str(s.local.sizes().vec()));
    for (size_t d = 0; d < nd; ++d)
      TENSOR_CHECK(s.offsets[d] >= 0 && s.offsets[d] + s.local.size(d) <= s.global_shape[d],
                   "{}: key '{}': the shard at offsets {} with shape {} does not fit in the global shape {}", op, key,
                   shape_str(s.offsets), shape_str(s.local.sizes().vec()), shape_str(s.global_shape));
    e.sharded = true;
    e.tensor = s.local;
    e.global_shape = s.global_shape;
    e.box = {s.offsets, s.local.sizes().vec()};
  }
  TENSOR_CHECK(dtype_entry(e.tensor.dtype()) != nullptr,
               "{}: key '{}' has dtype {}, which a safetensors shard cannot hold", op, key,
               ::tensor::to_string(e.tensor.dtype()));
  return e;
}

bool overlap(const Box& a, const Box& b, Box* out) {
  Box r;
  for (size_t d = 0; d < a.offsets.size(); ++d) {
    int64_t lo = std::max(a.offsets[d], b.offsets[d]);
    int64_t hi = std::min(a.offsets[d] + a.sizes[d], b.offsets[d] + b.sizes[d]);
    if (hi <= lo) return false;
    r.offsets.push_back(lo);
    r.sizes.push_back(hi - lo);
  }
  if (out) *out = r;
  return true;
}

json metadata_to_json(const Metadata& m) {
  json j;
  j["format"] = kFormat;
  j["version"] = 1;
  j["generation"] = m.generation;
  j["world_size"] = m.world_size;
  json tensors = json::object();
  for (const auto& [key, t] : m.tensors) {
    json chunks = json::array();
    for (const auto& c : t.chunks) chunks.push_back({{"file", c.file}, {"offsets", c.offsets}, {"sizes", c.sizes}});
    tensors[key] = {{"dtype", ::tensor::to_string(t.dtype)}, {"shape", t.global_shape}, {"chunks", chunks}};
  }
  j["tensors"] = tensors;
  return j;
}

}  // namespace

ShardedTensor::ShardedTensor(Tensor local_, std::vector<int64_t> offsets_, std::vector<int64_t> global_shape_)
    : global_shape(std::move(global_shape_)), offsets(std::move(offsets_)), local(std::move(local_)) {}

ShardedTensor ShardedTensor::rows(Tensor local, int64_t row_offset, std::vector<int64_t> global_shape) {
  TENSOR_CHECK(!global_shape.empty(), "ShardedTensor::rows: the global shape needs at least one dim");
  Shape offsets(global_shape.size(), 0);
  offsets[0] = row_offset;
  return ShardedTensor(std::move(local), std::move(offsets), std::move(global_shape));
}

StateDict module_state_dict(const nn::Module& module) {
  StateDict out;
  for (const auto& item : module.state_dict()) out[item.key()] = item.value();
  return out;
}

namespace detail {
void set_save_fault_hook(std::function<void(const std::string&, int)> hook) {
  std::lock_guard<std::mutex> lock(g_hook_mu);
  g_hook = std::move(hook);
}
}  // namespace detail

namespace {
// Note [Shard files stay in their folder]
// A chunk's "file" is joined to the checkpoint folder and opened, so a crafted `.metadata`
// naming "../../etc/passwd" or "/etc/shadow" would read any file the process can. save()
// writes only plain names (`__<rank>_0.g<generation>.safetensors`), so every name read back
// must be one path component: not empty, no '/' (nor a backslash, a separator elsewhere), not "." or "..".
void check_shard_file_name(const std::string& file, const std::string& key, const std::string& metadata_path) {
  const bool plain = !file.empty() && file != "." && file != ".." && file.find('/') == std::string::npos &&
                     file.find('\\') == std::string::npos && file.find('\0') == std::string::npos;
  TENSOR_CHECK(plain,
               "checkpoint: the metadata file '{}' names the shard file '{}' for key '{}', which is not a plain file "
               "name inside the checkpoint folder (no '/', '..' or absolute paths); refusing to read it (the "
               "checkpoint is corrupt or crafted)",
               metadata_path, file, key);
}
}  // namespace

Metadata read_metadata(const std::string& checkpoint_dir) {
  std::string path = (fs::path(checkpoint_dir) / kMetadataFile).string();
  std::ifstream in(path, std::ios::binary);
  TENSOR_CHECK(in.good(), "checkpoint: no checkpoint in '{}' (its metadata file '{}' cannot be read)", checkpoint_dir,
               path);
  std::stringstream ss;
  ss << in.rdbuf();
  Metadata m;
  try {
    json j = json::parse(ss.str());
    TENSOR_CHECK(j.value("format", "") == kFormat, "checkpoint: '{}' is not a libtensor distributed checkpoint's metadata",
                 path);
    m.generation = j.at("generation").get<int64_t>();
    m.world_size = j.at("world_size").get<int>();
    for (const auto& [key, t] : j.at("tensors").items()) {
      TensorMetadata tm;
      tm.dtype = dtype_from_name(t.at("dtype").get<std::string>(), path);
      tm.global_shape = t.at("shape").get<Shape>();
      for (const auto& c : t.at("chunks")) {
        std::string file = c.at("file").get<std::string>();
        check_shard_file_name(file, key, path);
        tm.chunks.push_back({std::move(file), c.at("offsets").get<Shape>(), c.at("sizes").get<Shape>()});
      }
      m.tensors[key] = std::move(tm);
    }
  } catch (const json::exception& e) {
    TENSOR_ERROR("checkpoint: the metadata file '{}' is corrupt: {}", path, e.what());
  }
  return m;
}

// Note [Checkpoint commit protocol]
// 1. Every rank describes its entries (key, kind, dtype, global shape, box) in JSON; rank 0
//    also creates the directory and adds the generation of the committed checkpoint there.
//    The descriptions are allgathered, so every rank runs the same checks on the same data
//    and raises the same error (nobody is left waiting in a collective).
// 2. Each rank writes its file under the new generation's name (io::save: temp file, fsync,
//    rename). Files of the committed generation are never touched.
// 3. The write statuses are allgathered; any failure makes every rank raise.
// 4. Rank 0 writes `.metadata` (temp, fsync, rename): the rename is the commit. Only then
//    does it remove files the new metadata does not name (older generations, leftovers of
//    crashed saves). Its status is allgathered, so all ranks return (or raise) together.
// A process killed anywhere before 4's rename leaves the old `.metadata`, which names only
// old files: the previous checkpoint loads unchanged.
void save(const StateDict& state_dict, const std::string& checkpoint_dir, std::shared_ptr<ProcessGroup> pg) {
  const int rank = pg ? pg->rank() : 0;
  const int world = pg ? pg->size() : 1;
  const char* op = "checkpoint::save";

  // 1. Describe.
  json plan;
  plan["entries"] = json::object();
  std::map<std::string, Entry> entries;
  std::string error;
  try {
    for (const auto& [key, value] : state_dict) {
      Entry e = describe(key, value, op);
      plan["entries"][key] = {{"sharded", e.sharded},
                              {"dtype", ::tensor::to_string(e.tensor.dtype())},
                              {"shape", e.global_shape},
                              {"offsets", e.box.offsets},
                              {"sizes", e.box.sizes}};
      entries.emplace(key, std::move(e));
    }
    if (rank == 0) {
      fs::create_directories(checkpoint_dir);
      int64_t previous = 0;
      if (fs::exists(fs::path(checkpoint_dir) / kMetadataFile)) previous = read_metadata(checkpoint_dir).generation;
      plan["previous_generation"] = previous;
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  plan["error"] = error;
  std::vector<json> plans;
  for (const auto& s : exchange(pg.get(), plan.dump())) plans.push_back(json::parse(s));
  for (int r = 0; r < world; ++r) {
    const std::string err = plans[r]["error"].get<std::string>();
    if (!err.empty()) {
      if (r == rank) TENSOR_ERROR("{}", err);
      TENSOR_ERROR("{}: rank {} failed: {}", op, r, err);
    }
  }
  const int64_t generation = plans[0]["previous_generation"].get<int64_t>() + 1;

  // Merge: the metadata every rank computes alike, and who writes the whole tensors.
  Metadata meta;
  meta.generation = generation;
  meta.world_size = world;
  std::map<std::string, bool> sharded;
  std::map<std::string, int> first_rank;
  for (int r = 0; r < world; ++r) {
    for (const auto& [key, p] : plans[r]["entries"].items()) {
      const bool is_sharded = p["sharded"].get<bool>();
      const ScalarType dtype = dtype_from_name(p["dtype"].get<std::string>(), op);
      const Shape shape = p["shape"].get<Shape>();
      auto it = meta.tensors.find(key);
      if (it == meta.tensors.end()) {
        meta.tensors[key] = TensorMetadata{dtype, shape, {}};
        sharded[key] = is_sharded;
        first_rank[key] = r;
      } else {
        const int r0 = first_rank[key];
        TENSOR_CHECK(sharded[key] == is_sharded, "{}: key '{}' is a {} on rank {} but a {} on rank {}", op, key,
                     sharded[key] ? "ShardedTensor" : "whole Tensor", r0, is_sharded ? "ShardedTensor" : "whole Tensor",
                     r);
        TENSOR_CHECK(it->second.dtype == dtype && it->second.global_shape == shape,
                     "{}: key '{}' is {} of global shape {} on rank {} but {} of global shape {} on rank {}", op, key,
                     ::tensor::to_string(it->second.dtype), shape_str(it->second.global_shape), r0,
                     ::tensor::to_string(dtype), shape_str(shape), r);
      }
      auto& tm = meta.tensors[key];
      if (!is_sharded) {
        if (tm.chunks.empty()) tm.chunks.push_back({shard_file_name(r, generation), Shape(shape.size(), 0), shape});
      } else {
        Shape sizes = p["sizes"].get<Shape>();
        if (volume(sizes) > 0) tm.chunks.push_back({shard_file_name(r, generation), p["offsets"].get<Shape>(), sizes});
      }
    }
  }
  // The shards of a key must tile its global shape: no overlap, nothing missing.
  for (const auto& [key, tm] : meta.tensors) {
    if (!sharded[key]) continue;
    int64_t covered = 0;
    for (size_t a = 0; a < tm.chunks.size(); ++a) {
      covered += volume(tm.chunks[a].sizes);
      for (size_t b = a + 1; b < tm.chunks.size(); ++b)
        TENSOR_CHECK(!overlap({tm.chunks[a].offsets, tm.chunks[a].sizes}, {tm.chunks[b].offsets, tm.chunks[b].sizes},
                              nullptr),
                     "{}: key '{}': the shards in {} (offsets {}, shape {}) and {} (offsets {}, shape {}) overlap", op,
                     key, tm.chunks[a].file, shape_str(tm.chunks[a].offsets), shape_str(tm.chunks[a].sizes),
                     tm.chunks[b].file, shape_str(tm.chunks[b].offsets), shape_str(tm.chunks[b].sizes));
    }
    TENSOR_CHECK(covered == volume(tm.global_shape),
                 "{}: key '{}': the shards of all ranks cover {} of the {} elements of its global shape {}", op, key,
                 covered, volume(tm.global_shape), shape_str(tm.global_shape));
  }

  // 2. Write this rank's file.
  io::NamedTensors mine;
  for (const auto& [key, e] : entries) {
    if (e.sharded ? e.tensor.numel() > 0 : first_rank[key] == rank) mine.emplace_back(key, e.tensor);
  }
  const std::string my_file = (fs::path(checkpoint_dir) / shard_file_name(rank, generation)).string();
  std::string write_error;
  try {
    if (!mine.empty()) io::save(mine, my_file, {{"rank", std::to_string(rank)}, {"generation", std::to_string(generation)}});
    fault_point("after_write", rank);
  } catch (const std::exception& e) {
    write_error = e.what();
  }
  // 3. Everyone learns whether every file is there.
  auto statuses = exchange(pg.get(), write_error);
  for (int r = 0; r < world; ++r)
    TENSOR_CHECK(statuses[r].empty(), "{}: rank {} failed to write its shard file (the checkpoint in '{}' is unchanged): {}",
                 op, r, checkpoint_dir, statuses[r]);

  // 4. Commit.
  std::string commit_error;
  if (rank == 0) {
    try {
      write_file_atomically((fs::path(checkpoint_dir) / kMetadataFile).string(), metadata_to_json(meta).dump(1),
                            [&] { fault_point("before_commit", rank); });
      std::set<std::string> keep;
      for (const auto& [key, tm] : meta.tensors)
        for (const auto& c : tm.chunks) keep.insert(c.file);
      static const std::regex shard_name(R"(__\d+_0\.g\d+\.safetensors)");
      for (const auto& f : fs::directory_iterator(checkpoint_dir)) {
        std::string name = f.path().filename().string();
        if (std::regex_match(name, shard_name) && !keep.count(name)) fs::remove(f.path());
      }
    } catch (const std::exception& e) {
      commit_error = e.what();
    }
  }
  auto committed = exchange(pg.get(), commit_error);
  TENSOR_CHECK(committed[0].empty(), "{}: rank 0 failed to commit the checkpoint in '{}': {}", op, checkpoint_dir,
               committed[0]);
}

namespace {

// One shard file, opened for reading rows of its tensors.
class ShardFile {
 public:
  explicit ShardFile(std::string path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    TENSOR_CHECK(fd_ >= 0, "checkpoint::load: cannot open the shard file '{}': {}", path_, std::strerror(errno));
    unsigned char len_bytes[8];
    read_at(len_bytes, 8, 0);
    uint64_t len = 0;
    for (int i = 7; i >= 0; --i) len = (len << 8) | len_bytes[i];
    struct stat st {};
    ::fstat(fd_, &st);
    TENSOR_CHECK(len > 0 && len + 8 <= static_cast<uint64_t>(st.st_size),
                 "checkpoint::load: the shard file '{}' is corrupt (header length {} in a file of {} bytes)", path_, len,
                 static_cast<int64_t>(st.st_size));
    std::string header(len, '\0');
    read_at(header.data(), len, 8);
    try {
      header_ = json::parse(header);
    } catch (const json::exception& e) {
      TENSOR_ERROR("checkpoint::load: the shard file '{}' has a corrupt header: {}", path_, e.what());
    }
    data_start_ = 8 + len;
    file_size_ = static_cast<uint64_t>(st.st_size);
    read_checksums();
  }
  ~ShardFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  ShardFile(const ShardFile&) = delete;
  ShardFile& operator=(const ShardFile&) = delete;

  // Rows [row0, row1) of tensor `key` (a chunk of shape `sizes`, dtype `dtype`), read from
  // disk without the other rows.
  Tensor read_rows(const std::string& key, ScalarType dtype, const Shape& sizes, int64_t row0, int64_t row1) {
    TENSOR_CHECK(header_.contains(key), "checkpoint::load: the shard file '{}' has no tensor '{}'", path_, key);
    const json& e = header_[key];
    const Shape file_shape = e.at("shape").get<Shape>();
    const std::string file_dtype = e.at("dtype").get<std::string>();
    TENSOR_CHECK(file_shape == sizes && file_dtype == dtype_entry(dtype)->safetensors,
                 "checkpoint::load: tensor '{}' in '{}' is {} {}, but the metadata says {} {}", key, path_, file_dtype,
                 shape_str(file_shape), dtype_entry(dtype)->safetensors, shape_str(sizes));
    const auto offs = e.at("data_offsets").get<std::vector<uint64_t>>();
    const uint64_t esize = static_cast<uint64_t>(element_size(dtype));
    TENSOR_CHECK(offs.size() == 2 && offs[1] - offs[0] == static_cast<uint64_t>(volume(sizes)) * esize &&
                     data_start_ + offs[1] <= file_size_,
                 "checkpoint::load: tensor '{}' in '{}' has data offsets that do not match its shape", key, path_);
    Shape out_shape = sizes;
    uint64_t row_bytes = esize;
    if (!sizes.empty()) {
      out_shape[0] = row1 - row0;
      for (size_t d = 1; d < sizes.size(); ++d) row_bytes *= static_cast<uint64_t>(sizes[d]);
    }
    auto sum = checksums_.find(key);
    if (sum != checksums_.end() && io::detail::checksums_enabled()) {
      // A checked read takes the whole chunk (a checksum covers all of it), then its rows.
      Tensor whole = empty(sizes, TensorOptions().dtype(dtype));
      const uint64_t all = static_cast<uint64_t>(whole.nbytes());
      if (all > 0) read_at(whole.data_ptr(), all, data_start_ + offs[0]);
      const uint32_t got = io::detail::crc32_of(whole.data_ptr(), all);
      TENSOR_CHECK(got == sum->second,
                   "checkpoint::load: the shard file '{}' is corrupt: the data of tensor '{}' does not match its "
                   "checksum (CRC-32 {} when saved, {} now); the file changed after it was written",
                   path_, key, io::detail::crc_hex(sum->second), io::detail::crc_hex(got));
      return sizes.empty() ? whole : whole.narrow(0, row0, row1 - row0).contiguous();
    }
    Tensor out = empty(out_shape, TensorOptions().dtype(dtype));
    uint64_t n = static_cast<uint64_t>(out.nbytes());
    if (n > 0) read_at(out.data_ptr(), n, data_start_ + offs[0] + static_cast<uint64_t>(row0) * row_bytes);
    return out;
  }

 private:
  // The per-tensor checksums io::save wrote (Note [Checkpoint checksums]), by tensor name.
  void read_checksums() {
    auto meta = header_.find("__metadata__");
    if (meta == header_.end() || !meta->is_object()) return;
    auto list = meta->find(io::detail::kChecksumKey);
    if (list == meta->end()) return;
    std::vector<std::pair<uint64_t, std::string>> by_offset;  // data order
    for (auto it = header_.begin(); it != header_.end(); ++it) {
      if (it.key() == "__metadata__") continue;
      auto offs = it->find("data_offsets");
      TENSOR_CHECK(offs != it->end() && offs->is_array() && !offs->empty() && (*offs)[0].is_number_unsigned(),
                   "checkpoint::load: the shard file '{}' is corrupt (tensor '{}' has no valid data_offsets)", path_,
                   it.key());
      by_offset.emplace_back((*offs)[0].get<uint64_t>(), it.key());
    }
    std::sort(by_offset.begin(), by_offset.end());
    auto sums = list->is_string() ? io::detail::parse_checksums(list->get<std::string>(), by_offset.size())
                                  : std::nullopt;
    TENSOR_CHECK(sums.has_value(), "checkpoint::load: the shard file '{}' is corrupt (its checksum list is malformed)",
                 path_);
    for (size_t i = 0; i < by_offset.size(); ++i) checksums_[by_offset[i].second] = (*sums)[i];
  }

  void read_at(void* dst, uint64_t n, uint64_t offset) {
    auto* p = static_cast<char*>(dst);
    while (n > 0) {
      ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(offset));
      if (r < 0 && errno == EINTR) continue;
      TENSOR_CHECK(r > 0, "checkpoint::load: reading the shard file '{}' failed: {}", path_,
                   r == 0 ? std::string("unexpected end of file") : std::string(std::strerror(errno)));
      p += r;
      n -= static_cast<uint64_t>(r);
      offset += static_cast<uint64_t>(r);
    }
  }

  std::string path_;
  int fd_ = -1;
  json header_;
  uint64_t data_start_ = 0, file_size_ = 0;
  std::map<std::string, uint32_t> checksums_;
};

}  // namespace

void load(const StateDict& state_dict, const std::string& checkpoint_dir, std::shared_ptr<ProcessGroup> pg) {
  const char* op = "checkpoint::load";
  const Metadata meta = read_metadata(checkpoint_dir);

  // Check every key before writing anything.
  std::vector<std::pair<std::string, Entry>> jobs;
  for (const auto& [key, value] : state_dict) {
    auto it = meta.tensors.find(key);
    if (it == meta.tensors.end()) {
      std::string known;
      for (const auto& [k, t] : meta.tensors) known += (known.empty() ? "" : ", ") + k;
      TENSOR_ERROR("{}: key '{}' is not in the checkpoint in '{}' (its keys: {})", op, key, checkpoint_dir, known);
    }
    Entry e = describe(key, value, op);
    const TensorMetadata& tm = it->second;
    TENSOR_CHECK(e.tensor.dtype() == tm.dtype, "{}: key '{}': the state dict's tensor is {} but the checkpoint's is {}",
                 op, key, ::tensor::to_string(e.tensor.dtype()), ::tensor::to_string(tm.dtype));
    TENSOR_CHECK(e.global_shape == tm.global_shape,
                 "{}: key '{}': the state dict's tensor has global shape {} but the checkpoint's has {}", op, key,
                 shape_str(e.global_shape), shape_str(tm.global_shape));
    int64_t covered = 0;
    for (const auto& c : tm.chunks) {
      Box part;
      if (overlap(e.box, {c.offsets, c.sizes}, &part)) covered += volume(part.sizes);
    }
    TENSOR_CHECK(covered == volume(e.box.sizes),
                 "{}: key '{}': the checkpoint's chunks cover {} of the {} elements needed (box at {} of shape {})", op,
                 key, covered, volume(e.box.sizes), shape_str(e.box.offsets), shape_str(e.box.sizes));
    jobs.emplace_back(key, std::move(e));
  }

  std::map<std::string, std::unique_ptr<ShardFile>> files;
  NoGradGuard no_grad;
  for (const auto& [key, e] : jobs) {
    const TensorMetadata& tm = meta.tensors.at(key);
    for (const auto& c : tm.chunks) {
      Box part;
      if (!overlap(e.box, {c.offsets, c.sizes}, &part)) continue;
      auto& file = files[c.file];
      if (!file) file = std::make_unique<ShardFile>((fs::path(checkpoint_dir) / c.file).string());
      const size_t nd = c.sizes.size();
      Tensor src, dst = e.tensor;
      if (nd == 0) {
        src = file->read_rows(key, tm.dtype, c.sizes, 0, 1);
      } else {
        // Only the overlapping rows come off the disk; the other dims are narrowed in memory.
        src = file->read_rows(key, tm.dtype, c.sizes, part.offsets[0] - c.offsets[0],
                              part.offsets[0] - c.offsets[0] + part.sizes[0]);
        for (size_t d = 1; d < nd; ++d)
          src = src.narrow(static_cast<int64_t>(d), part.offsets[d] - c.offsets[d], part.sizes[d]);
        for (size_t d = 0; d < nd; ++d)
          dst = dst.narrow(static_cast<int64_t>(d), part.offsets[d] - e.box.offsets[d], part.sizes[d]);
      }
      dst.copy_(src);
    }
  }
  files.clear();
  if (pg && pg->size() > 1) pg->barrier()->wait();
}

}  // namespace tensor::distributed::checkpoint
