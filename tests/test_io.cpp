// tensor::io: safetensors bytes against the format spec and the reference writer's layout, round
// trips of every dtype, in-place loading, corrupt and truncated files, and crash-safe saving.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <dirent.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <tensor/tensor.h>
#include <thread>

#include "tests/temp_dir_util.h"
#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::expect_error;

namespace {

using tensor::testing::temp_path;

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
void write_bytes(const std::string& path, const std::string& bytes) {
  // A fresh file rather than a truncated one: ext4 flushes truncate-and-rewrite on close, which
  // makes the fuzz loop below disk-bound.
  ::unlink(path.c_str());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Little-endian encodings, written out byte by byte (independent of the host and of the library).
std::string le(uint64_t v, int bytes) {
  std::string s;
  for (int i = 0; i < bytes; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}
std::string le64(uint64_t v) { return le(v, 8); }
uint32_t f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
uint64_t f64_bits(double f) { uint64_t u; std::memcpy(&u, &f, 8); return u; }

// A safetensors file from a JSON header (padded with spaces to a multiple of 8 unless told not
// to) and a data buffer, as the spec lays it out.
std::string st_file(std::string json, const std::string& data, bool pad = true) {
  if (pad) json.append((8 - json.size() % 8) % 8, ' ');
  return le64(json.size()) + json + data;
}

// CRC-32 (IEEE, reflected polynomial 0xEDB88320), bit by bit: independent of zlib, which the
// library uses (Note [Checkpoint checksums]).
uint32_t crc32_ref(const std::string& bytes) {
  uint32_t c = 0xffffffffu;
  for (unsigned char b : bytes) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return c ^ 0xffffffffu;
}
// The "__crc32__" metadata value of data slices in data order: 8 hex digits each, comma-separated.
std::string crc_list(const std::vector<std::string>& slices) {
  std::string out;
  char buf[16];
  for (const auto& s : slices) {
    std::snprintf(buf, sizeof buf, "%08x", crc32_ref(s));
    out += (out.empty() ? "" : ",") + std::string(buf);
  }
  return out;
}

// Raw bytes of a tensor's values in row-major order.
std::string tensor_bytes(const Tensor& t) {
  Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.nbytes()));
}

const Tensor& find(const io::NamedTensors& named, const std::string& name) {
  for (const auto& [n, t] : named)
    if (n == name) return t;
  throw std::runtime_error("no tensor named " + name);
}

}  // namespace

// ---- bytes on disk ----

TEST(SafetensorsFormat, SingleTensorBytesFollowTheSpec) {
  // The exact layout the reference writer produces: compact JSON, dtype/shape/data_offsets.
  std::string path = temp_path("single.safetensors");
  Tensor t = tensor::arange(6, kFloat32).reshape({1, 2, 3});
  io::save({{"attn.0", t}}, path);
  std::string data;
  for (int i = 0; i < 6; ++i) data += le(f32_bits(static_cast<float>(i)), 4);
  EXPECT_EQ(data.substr(4, 4), std::string("\x00\x00\x80\x3f", 4));  // 1.0f, little-endian
  // libtensor adds the data's CRC-32 to the metadata (Note [Checkpoint checksums]).
  std::string json = R"({"__metadata__":{"__crc32__":")" + crc_list({data}) +
                     R"("},"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})";
  EXPECT_EQ(read_bytes(path), st_file(json, data));
  EXPECT_TRUE(io::load_metadata(path).empty());  // the checksums are not user metadata
}

TEST(SafetensorsFormat, HeaderIsPaddedWithSpacesToEightBytes) {
  std::string path = temp_path("pad.safetensors");
  io::save({{"attn0", tensor::arange(6, kFloat32).reshape({1, 1, 2, 3})}}, path);
  std::string bytes = read_bytes(path);
  std::string data = tensor_bytes(tensor::arange(6, kFloat32));
  std::string json = R"({"__metadata__":{"__crc32__":")" + crc_list({data}) +
                     R"("},"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})";
  ASSERT_EQ(json.size(), 105u);
  EXPECT_EQ(bytes.substr(0, 8), le64(112));
  EXPECT_EQ(bytes.substr(8, 112), json + std::string(7, ' '));
  EXPECT_EQ(bytes.size(), 8u + 112u + 24u);
}

TEST(SafetensorsFormat, EmptyFileAndMetadataBytes) {
  std::string path = temp_path("empty.safetensors");
  io::save(io::NamedTensors{}, path);
  EXPECT_EQ(read_bytes(path), le64(8) + "{}      ");
  io::save(io::NamedTensors{}, path, {{"framework", "pt"}});
  EXPECT_EQ(read_bytes(path), le64(40) + R"({"__metadata__":{"framework":"pt"}})" + "     ");
  EXPECT_TRUE(io::load(path).empty());
  EXPECT_EQ(io::load_metadata(path), (io::Metadata{{"framework", "pt"}}));
}

TEST(SafetensorsFormat, TensorsAreOrderedByAlignmentThenName) {
  // The reference writer sorts by dtype (widest first, its enum order) and then by name, which
  // keeps every tensor aligned to its element size. Saving in another order changes nothing.
  std::string path = temp_path("order.safetensors");
  Tensor a = tensor::tensor({true, false, true});                             // BOOL
  Tensor b = tensor::tensor({1.5, -2.0}, kFloat32);                           // F32
  Tensor c = tensor::tensor({int64_t(-3)}, kInt64);                           // I64
  Tensor d = tensor::tensor({1.0, -2.0}, kFloat16);                           // F16
  Tensor e = tensor::tensor({0.25}, kFloat32);                                // F32
  Tensor f = tensor::tensor({1.0}, kFloat64);                                 // F64
  Tensor g = tensor::empty({0, 2}, TensorOptions().dtype(kUInt8));            // U8, empty
  io::save({{"a", a}, {"e", e}, {"b", b}, {"g", g}, {"d", d}, {"c", c}, {"f", f}}, path, {{"epoch", "3"}});
  const std::vector<std::string> slices = {le(static_cast<uint64_t>(int64_t(-3)), 8), le(f64_bits(1.0), 8),
                                           le(f32_bits(1.5f), 4) + le(f32_bits(-2.0f), 4), le(f32_bits(0.25f), 4),
                                           le(0x3c00, 2) + le(0xc000, 2), "", std::string("\x01\x00\x01", 3)};
  std::string json = std::string("{") + R"("__metadata__":{"__crc32__":")" + crc_list(slices) + R"(","epoch":"3"},)" +
                     R"("c":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},)" +
                     R"("f":{"dtype":"F64","shape":[1],"data_offsets":[8,16]},)" +
                     R"("b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]},)" +
                     R"("e":{"dtype":"F32","shape":[1],"data_offsets":[24,28]},)" +
                     R"("d":{"dtype":"F16","shape":[2],"data_offsets":[28,32]},)" +
                     R"("g":{"dtype":"U8","shape":[0,2],"data_offsets":[32,32]},)" +
                     R"("a":{"dtype":"BOOL","shape":[3],"data_offsets":[32,35]}})";
  std::string data = le(static_cast<uint64_t>(int64_t(-3)), 8) + le(f64_bits(1.0), 8) + le(f32_bits(1.5f), 4) +
                     le(f32_bits(-2.0f), 4) + le(f32_bits(0.25f), 4) + le(0x3c00, 2) + le(0xc000, 2) +
                     std::string("\x01\x00\x01", 3);
  EXPECT_EQ(read_bytes(path), st_file(json, data));
}

TEST(SafetensorsFormat, NamesAreEscapedAsJson) {
  std::string path = temp_path("escape.safetensors");
  std::string name = "a\"b\\c\nd\x01\xc3\xa9";  // quote, backslash, newline, control byte, UTF-8 é
  io::save({{name, tensor::tensor({int64_t(7)}, kInt64)}}, path);
  std::string bytes = read_bytes(path);
  std::string json = R"({"__metadata__":{"__crc32__":")" + crc_list({le(7, 8)}) + R"("},"a\"b\\c\nd\u0001)" +
                     std::string("\xc3\xa9") + R"(":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})";
  EXPECT_EQ(bytes, st_file(json, le(7, 8)));
  auto loaded = io::load(path);
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0].first, name);
  EXPECT_EQ(loaded[0].second.item<int64_t>(), 7);
  EXPECT_THROW(io::save({{std::string("\xff\xfe"), tensor::zeros({1})}}, path), tensor::Error);  // not UTF-8
}

// ---- reading files other writers made ----

TEST(SafetensorsRead, HandBuiltFileFromAnotherWriter) {
  // Keys in any order (not sorted by offset), whitespace in the JSON, unknown extra fields, a
  // header padded to 8 bytes, every dtype we read, bool bytes other than 0 and 1.
  std::string data;
  data += le(f64_bits(-0.5), 8);                                   // [0, 8)   f64 "x" 0-dim
  data += le(static_cast<uint64_t>(int64_t(-9000000000)), 8);      // [8, 16)  i64 "i64"
  data += le(f32_bits(3.25f), 4) + le(f32_bits(-1.0f), 4);         // [16, 24) f32 "w" [2,1]
  data += le(static_cast<uint32_t>(int32_t(-7)), 4);               // [24, 28) i32 "i32"
  data += le(0x3c00, 2) + le(0xc000, 2) + le(0x3555, 2);           // [28, 34) f16 "h" 1, -2, 0.33325
  data += le(0x3f80, 2) + le(0xc040, 2);                           // [34, 38) bf16 "bf" 1, -3
  data += le(static_cast<uint16_t>(int16_t(-300)), 2);             // [38, 40) i16 "i16"
  data += std::string("\xfe\x05", 2);                              // [40, 42) i8 "i8" -2, 5
  data += std::string("\xff\x00", 2);                              // [42, 44) u8 "u8" 255, 0
  data += std::string("\x00\x01\x02", 3);                          // [44, 47) bool "flags"
  std::string json = R"({
    "u8": {"dtype": "U8", "shape": [2], "data_offsets": [42, 44]},
    "w": {"shape": [2, 1], "dtype": "F32", "data_offsets": [16, 24], "extra": "ignored"},
    "__metadata__": {"format": "pt", "epoch": "12"},
    "x": {"dtype": "F64", "shape": [], "data_offsets": [0, 8]},
    "flags": {"dtype": "BOOL", "shape": [3], "data_offsets": [44, 47]},
    "i64": {"dtype": "I64", "shape": [1], "data_offsets": [8, 16]},
    "h": {"dtype": "F16", "shape": [3], "data_offsets": [28, 34]},
    "bf": {"dtype": "BF16", "shape": [2], "data_offsets": [34, 38]},
    "i32": {"dtype": "I32", "shape": [1], "data_offsets": [24, 28]},
    "i16": {"dtype": "I16", "shape": [1], "data_offsets": [38, 40]},
    "i8": {"dtype": "I8", "shape": [2], "data_offsets": [40, 42]},
    "empty": {"dtype": "F32", "shape": [3, 0], "data_offsets": [47, 47]}
  })";
  std::string path = temp_path("foreign.safetensors");
  write_bytes(path, st_file(json, data));
  io::Metadata meta;
  auto named = io::load(path, &meta);
  EXPECT_EQ(meta, (io::Metadata{{"epoch", "12"}, {"format", "pt"}}));
  std::vector<std::string> names;
  for (const auto& [n, t] : named) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"bf", "empty", "flags", "h", "i16", "i32", "i64", "i8", "u8", "w", "x"}));

  const Tensor& x = find(named, "x");
  EXPECT_EQ(x.dim(), 0);
  EXPECT_EQ(x.item<double>(), -0.5);
  EXPECT_EQ(find(named, "i64").item<int64_t>(), -9000000000LL);
  const Tensor& w = find(named, "w");
  EXPECT_EQ(w.sizes(), IntArrayRef({2, 1}));
  EXPECT_EQ(w.dtype(), kFloat32);
  EXPECT_EQ(w[0][0].item<float>(), 3.25f);
  EXPECT_EQ(w[1][0].item<float>(), -1.0f);
  EXPECT_EQ(find(named, "i32").item<int64_t>(), -7);
  const Tensor& h = find(named, "h");
  EXPECT_EQ(h.dtype(), kFloat16);
  EXPECT_EQ(h[0].item<float>(), 1.0f);
  EXPECT_EQ(h[1].item<float>(), -2.0f);
  EXPECT_EQ(h[2].item<float>(), 0.333251953125f);  // 0x3555 = 1365/4096
  const Tensor& bf = find(named, "bf");
  EXPECT_EQ(bf.dtype(), kBFloat16);
  EXPECT_EQ(bf[0].item<float>(), 1.0f);
  EXPECT_EQ(bf[1].item<float>(), -3.0f);
  EXPECT_EQ(find(named, "i16").item<int64_t>(), -300);
  EXPECT_EQ(find(named, "i8")[0].item<int64_t>(), -2);
  EXPECT_EQ(find(named, "i8")[1].item<int64_t>(), 5);
  EXPECT_EQ(find(named, "u8")[0].item<int64_t>(), 255);
  const Tensor& flags = find(named, "flags");
  EXPECT_EQ(flags.dtype(), kBool);
  EXPECT_EQ(tensor_bytes(flags), std::string("\x00\x01\x01", 3));  // nonzero bytes read as true
  EXPECT_EQ(find(named, "empty").sizes(), IntArrayRef({3, 0}));
  for (const auto& [n, t] : named) {
    EXPECT_TRUE(t.is_contiguous()) << n;
    EXPECT_FALSE(t.requires_grad()) << n;
  }
}

// ---- round trips ----

TEST(SafetensorsRoundTrip, EveryDtypeAndShapeIsBitExact) {
  manual_seed(5);
  io::NamedTensors in = {
      {"bool", tensor::randint(0, 2, {3, 4}).to(kBool)},
      {"u8", tensor::randint(0, 256, {7}, kUInt8)},
      {"i8", tensor::randint(-128, 128, {2, 3}, kInt8)},
      {"i16", tensor::randint(-32768, 32768, {5}, kInt16)},
      {"i32", tensor::randint(-2147483648LL, 2147483647LL, {4, 1}, kInt32)},
      {"i64", tensor::randint(-(int64_t(1) << 62), int64_t(1) << 62, {3}, kInt64)},
      {"f16", tensor::randn({2, 3, 2}).to(kFloat16)},
      {"bf16", tensor::randn({9}).to(kBFloat16)},
      {"f32", tensor::randn({3, 5})},
      {"f64", tensor::randn({2, 2}, kFloat64)},
      {"scalar", tensor::scalar_tensor(2.5, kFloat64)},
      {"scalar_bool", tensor::scalar_tensor(true, kBool)},
      {"empty", tensor::empty({0}, TensorOptions().dtype(kFloat32))},
      {"empty2d", tensor::empty({4, 0}, TensorOptions().dtype(kInt16))},
      {"nan_inf", tensor::tensor({std::nan(""), INFINITY, -INFINITY, -0.0}, kFloat32)},
  };
  std::string path = temp_path("roundtrip.safetensors");
  io::save(in, path, {{"step", "100"}, {"note", "{\"json\": \"inside\"}"}});
  io::Metadata meta;
  auto out = io::load(path, &meta);
  EXPECT_EQ(meta, (io::Metadata{{"step", "100"}, {"note", "{\"json\": \"inside\"}"}}));
  ASSERT_EQ(out.size(), in.size());
  for (const auto& [name, t] : in) {
    const Tensor& u = find(out, name);
    EXPECT_EQ(u.dtype(), t.dtype()) << name;
    EXPECT_EQ(u.sizes(), t.sizes()) << name;
    EXPECT_EQ(tensor_bytes(u), tensor_bytes(t)) << name;  // bit-exact, NaN and -0 included
  }
  // The file size is exactly 8 + header + the sum of the tensors' bytes.
  uint64_t data_bytes = 0;
  for (const auto& [name, t] : in) data_bytes += static_cast<uint64_t>(t.nbytes());
  std::string bytes = read_bytes(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + n + data_bytes);
}

TEST(SafetensorsRoundTrip, NonContiguousTensorsAreSavedAsTheirValues) {
  Tensor base = tensor::arange(24, kFloat64).reshape({4, 6});
  Tensor transposed = base.t();                              // strides (1, 6)
  Tensor stepped = base.slice(1, 1, 6, 2);                   // [4, 3] with a step
  Tensor expanded = tensor::tensor({1.0, 2.0, 3.0}, kFloat32).expand({2, 3});  // stride 0
  Tensor offset = base[2];                                   // storage offset 12
  ASSERT_FALSE(transposed.is_contiguous());
  ASSERT_FALSE(stepped.is_contiguous());
  ASSERT_FALSE(expanded.is_contiguous());
  std::string path = temp_path("noncontig.safetensors");
  io::save({{"t", transposed}, {"s", stepped}, {"e", expanded}, {"o", offset}}, path);
  auto out = io::load(path);
  // Reference values, element by element.
  const Tensor& t = find(out, "t");
  ASSERT_EQ(t.sizes(), IntArrayRef({6, 4}));
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(t[i][j].item<double>(), j * 6 + i);
  const Tensor& s = find(out, "s");
  ASSERT_EQ(s.sizes(), IntArrayRef({4, 3}));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(s[i][j].item<double>(), i * 6 + 1 + 2 * j);
  EXPECT_EQ(tensor_bytes(find(out, "e")), le(f32_bits(1), 4) + le(f32_bits(2), 4) + le(f32_bits(3), 4) +
                                              le(f32_bits(1), 4) + le(f32_bits(2), 4) + le(f32_bits(3), 4));
  const Tensor& o = find(out, "o");
  for (int j = 0; j < 6; ++j) EXPECT_EQ(o[j].item<double>(), 12 + j);
}

TEST(SafetensorsRoundTrip, MapsAndOrderedDictsSaveAndLoad) {
  // Overloads for std::map and for any ordered dict with key()/value() items (as
  // nn::Module::named_parameters() returns).
  struct Item {
    std::string k;
    Tensor v;
    const std::string& key() const { return k; }
    const Tensor& value() const { return v; }
  };
  struct Dict {
    std::vector<Item> items;
    auto begin() const { return items.begin(); }
    auto end() const { return items.end(); }
  };
  std::map<std::string, Tensor> m = {{"w", tensor::tensor({1.0, 2.0})}, {"b", tensor::tensor({3.0})}};
  std::string path = temp_path("map.safetensors");
  io::save(m, path);
  Dict dict{{{"w", tensor::zeros({2})}, {"b", tensor::zeros({1})}}};
  io::load(dict, path);
  EXPECT_EQ(dict.items[0].v[1].item<float>(), 2.0f);
  EXPECT_EQ(dict.items[1].v[0].item<float>(), 3.0f);
  io::save(dict, path);
  std::map<std::string, Tensor> m2 = {{"w", tensor::zeros({2})}, {"b", tensor::zeros({1})}};
  io::load(m2, path);
  EXPECT_TRUE(m2["w"].equal(m["w"]));
  EXPECT_TRUE(m2["b"].equal(m["b"]));
}

// ---- in-place loading ----

TEST(SafetensorsLoadInPlace, CopiesValuesWithoutRecordingAutograd) {
  Tensor w = tensor::zeros({2, 3}, dtype(kFloat32).requires_grad(true));
  Tensor b = tensor::zeros({3}, dtype(kFloat32).requires_grad(true));
  Tensor storage = tensor::zeros({3, 2}, kFloat64);
  Tensor view = storage.t();  // a non-contiguous target: the values land in `storage`
  std::string path = temp_path("inplace.safetensors");
  Tensor w_src = tensor::arange(6, kFloat32).reshape({2, 3});
  io::save({{"w", w_src}, {"b", tensor::tensor({7.0, 8.0, 9.0})}, {"v", tensor::arange(6, kFloat64).reshape({2, 3})}},
           path);
  void* w_data = w.data_ptr();
  io::load({{"w", w}, {"b", b}, {"v", view}}, path);
  EXPECT_EQ(w.data_ptr(), w_data);  // in place: same memory
  EXPECT_TRUE(w.equal(w_src));
  EXPECT_EQ(b[2].item<float>(), 9.0f);
  EXPECT_TRUE(w.is_leaf());
  EXPECT_TRUE(w.requires_grad());
  EXPECT_EQ(w.grad_fn(), nullptr);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) EXPECT_EQ(storage[i][j].item<double>(), j * 3 + i);
  // The loaded leaves still train: gradients flow to them.
  (w * w).sum().backward();
  EXPECT_TRUE(w.grad().equal(w_src * 2));
}

TEST(SafetensorsLoadInPlace, MismatchesRaiseWithNamesAndChangeNothing) {
  std::string path = temp_path("mismatch.safetensors");
  io::save({{"a", tensor::ones({2})}, {"b", tensor::ones({3})}, {"c", tensor::ones({1})}}, path);
  Tensor a = tensor::zeros({2}), b = tensor::zeros({3}), c = tensor::zeros({1});
  Tensor b_wrong_shape = tensor::zeros({4}), b_wrong_dtype = tensor::zeros({3}, kFloat64);
  expect_error([&] { io::load({{"a", a}, {"b", b_wrong_shape}, {"c", c}}, path); },
               {"'b'", "[3] float32", "[4] float32", path});
  expect_error([&] { io::load({{"a", a}, {"b", b_wrong_dtype}, {"c", c}}, path); }, {"'b'", "float64"});
  EXPECT_EQ(a.sum().item<float>(), 0.0f);  // all-or-nothing: 'a' was not written
  EXPECT_EQ(c.sum().item<float>(), 0.0f);
  Tensor d = tensor::zeros({5});
  expect_error([&] { io::load({{"a", a}, {"b", b}, {"d", d}}, path); },
               {"missing from the file: d", "in the file but not expected: c"});
  EXPECT_EQ(a.sum().item<float>(), 0.0f);
  io::load({{"a", a}, {"d", d}}, path, /*strict=*/false);  // only the common names
  EXPECT_EQ(a.sum().item<float>(), 2.0f);
  EXPECT_EQ(d.sum().item<float>(), 0.0f);
  expect_error([&] { io::load({{"a", Tensor()}, {"b", b}, {"c", c}}, path); }, {"'a'", "undefined"});
}

// ---- bad input to save ----

TEST(SafetensorsSave, RejectsWhatTheFormatCannotHold) {
  std::string path = temp_path("bad_save.safetensors");
  io::save({{"keep", tensor::ones({2})}}, path);
  std::string before = read_bytes(path);
  Tensor z = tensor::ones({2}, kComplex64);
  expect_error([&] { io::save({{"z", z}}, path); }, {"'z'", "complex", "real() and imag()"});
  expect_error([&] { io::save({{"x", tensor::ones({1})}, {"x", tensor::ones({2})}}, path); }, {"'x'", "twice"});
  expect_error([&] { io::save({{"__metadata__", tensor::ones({1})}}, path); }, {"__metadata__", "reserved"});
  expect_error([&] { io::save({{"u", Tensor()}}, path); }, {"'u'", "undefined"});
  expect_error([&] { io::save({{"m", tensor::empty({2}, TensorOptions().device(kMeta))}}, path); }, {"'m'", "meta"});
  EXPECT_EQ(read_bytes(path), before);  // a rejected save leaves the old file alone
  expect_error([&] { io::save({{"a", tensor::ones({1})}}, temp_path("no/such/dir/x.safetensors")); },
               {"cannot create", "no/such/dir"});
  expect_error([&] { io::load(temp_path("does_not_exist.safetensors")); }, {"cannot open", "does_not_exist"});
}

TEST(SafetensorsSave, LeavesNoTemporaryFiles) {
  std::string dir = temp_path("clean");
  ::mkdir(dir.c_str(), 0755);
  for (int i = 0; i < 3; ++i) io::save({{"a", tensor::full({4}, static_cast<double>(i))}}, dir + "/m.safetensors");
  std::vector<std::string> files;
  DIR* d = ::opendir(dir.c_str());
  ASSERT_NE(d, nullptr);
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') files.push_back(e->d_name);
  ::closedir(d);
  EXPECT_EQ(files, std::vector<std::string>{"m.safetensors"});
  EXPECT_EQ(find(io::load(dir + "/m.safetensors"), "a")[0].item<float>(), 2.0f);
}

// ---- corrupt and truncated files ----

namespace {
void expect_corrupt(const std::string& name, const std::string& bytes, const std::string& problem) {
  std::string path = temp_path(name);
  write_bytes(path, bytes);
  expect_error([&] { io::load(path); }, {path, problem});
}
const std::string kGoodEntry = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
const std::string kGoodData = std::string(8, '\x01');
}  // namespace

TEST(SafetensorsCorrupt, ShortFilesAndBadHeaderLengths) {
  expect_corrupt("c_zero.st", "", "fewer than the 8-byte header length");
  expect_corrupt("c_seven.st", std::string(7, '\0'), "fewer than the 8-byte header length");
  expect_corrupt("c_hlen.st", le64(1000) + "{}", "header length 1000 is larger");
  expect_corrupt("c_hlen_huge.st", le64(~uint64_t(0)) + "{}      ", "is larger");
  expect_corrupt("c_hlen_small.st", le64(0), "too small");
}

TEST(SafetensorsCorrupt, BadJson) {
  expect_corrupt("c_json.st", st_file(R"({"a":{"dtype":)", ""), "not valid JSON");
  expect_corrupt("c_json_array.st", st_file("[1,2]", ""), "not an object");
  expect_corrupt("c_json_entry.st", st_file(R"({"a":5})", ""), "not a JSON object");
  expect_corrupt("c_json_dup.st",
                 st_file("{" + kGoodEntry + "," + R"("a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                         kGoodData + kGoodData),
                 "names 'a' twice");
  expect_corrupt("c_json_meta.st", st_file(R"({"__metadata__":{"k":1}})", ""), "not a string");
  expect_corrupt("c_json_missing.st", st_file(R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", kGoodData),
                 "no \"shape\" field");
  expect_corrupt("c_json_utf8.st", st_file("{\"\xff\":{}}", ""), "not valid JSON");
}

TEST(SafetensorsCorrupt, BadDtypesAndShapes) {
  expect_corrupt("c_dtype.st", st_file(R"({"a":{"dtype":"F12","shape":[2],"data_offsets":[0,8]}})", kGoodData),
                 "unknown dtype \"F12\"");
  expect_corrupt("c_u16.st", st_file(R"({"a":{"dtype":"U16","shape":[4],"data_offsets":[0,8]}})", kGoodData),
                 "dtype U16, which libtensor does not support");
  expect_corrupt("c_negshape.st", st_file(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", kGoodData),
                 "non-negative integers");
  expect_corrupt("c_floatshape.st", st_file(R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", kGoodData),
                 "non-negative integers");
  expect_corrupt("c_overflow.st",
                 st_file(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", kGoodData),
                 "overflows");
  expect_corrupt("c_size.st", st_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", kGoodData),
                 "needs 12 bytes");
  expect_corrupt("c_size64.st", st_file(R"({"a":{"dtype":"F64","shape":[2],"data_offsets":[0,8]}})", kGoodData),
                 "needs 16 bytes");
}

// The gap tests/fuzz/fuzz_idx found in the IDX reader, here by construction (corpus:
// regression_zero_size_huge_dims.safetensors): a shape with a 0 has no bytes, so every size
// check passed, but the strides of [0, 2^40, 2^40] overflowed int64 when the tensor was made
// (UBSan: signed integer overflow). Note [Sizes that fit].
TEST(SafetensorsCorrupt, ZeroSizeShapesWhoseStridesOverflow) {
  expect_corrupt("c_zero_huge.st",
                 st_file(R"({"a":{"dtype":"U8","shape":[0,1099511627776,1099511627776],"data_offsets":[0,0]}})", ""),
                 "the shape [0, 1099511627776, 1099511627776] of tensor 'a' overflows int64");
  // 2^32 * (2^31 + 1) fits in uint64 but not in int64.
  expect_corrupt("c_zero_int64.st",
                 st_file(R"({"a":{"dtype":"F32","shape":[4294967296,2147483649,0],"data_offsets":[0,0]}})", ""),
                 "overflows int64");
  std::string path = temp_path("zero_big.st");
  write_bytes(path, st_file(R"({"a":{"dtype":"F64","shape":[0,4611686018427387904,1],"data_offsets":[0,0]}})", ""));
  auto named = io::load(path);
  EXPECT_EQ(find(named, "a").sizes(), IntArrayRef({0, int64_t(1) << 62, 1}));
}

// Found while writing tests/fuzz/fuzz_safetensors (its inputs are too short to reach it; the
// fuzz binary crashes on a 600 KB file): the message for a bad "shape" printed it with
// nlohmann's dump(), which recurses, so a shape nested 300000 arrays deep overflowed the stack
// instead of raising.
TEST(SafetensorsCorrupt, DeeplyNestedShapeRaises) {
  const std::string nested = std::string(300000, '[') + std::string(300000, ']');
  expect_corrupt("c_nested.st", st_file(R"({"a":{"dtype":"F32","shape":)" + nested + R"(,"data_offsets":[0,0]}})", ""),
                 "(element 0 is a JSON array)");
  expect_corrupt("c_nested2.st",
                 st_file(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,)" + nested + R"(],"data_offsets":[0,0]}})",
                         ""),
                 "(element 2 is a JSON array)");
  expect_corrupt("c_shape_string.st", st_file(R"({"a":{"dtype":"F32","shape":[1,"2"],"data_offsets":[0,4]}})", "abcd"),
                 "(element 1 is a JSON string)");
  expect_corrupt("c_shape_negative.st", st_file(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,4]}})", "abcd"),
                 "(element 0 is -2)");
}

TEST(SafetensorsCorrupt, BadOffsets) {
  expect_corrupt("c_range.st", st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", kGoodData),
                 "past the end of the 8-byte data buffer");
  expect_corrupt("c_backwards.st", st_file(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", kGoodData),
                 "end before begin");
  expect_corrupt("c_offsets.st", st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", kGoodData),
                 "two non-negative integers");
  expect_corrupt("c_overlap.st",
                 st_file("{" + kGoodEntry + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                         kGoodData + std::string(4, '\0')),
                 "overlaps");
  expect_corrupt("c_gap.st", st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", kGoodData),
                 "bytes [0, 4) of the data buffer belong to no tensor");
  expect_corrupt("c_trailing.st", st_file("{" + kGoodEntry + "}", kGoodData + "xx"), "trailing bytes");
  expect_corrupt("c_truncated_data.st", st_file("{" + kGoodEntry + "}", kGoodData.substr(0, 5)),
                 "past the end of the 5-byte data buffer");
}

TEST(SafetensorsCorrupt, EveryTruncationAndByteFlipRaisesOrLoads) {
  // A real file cut at every length must raise a tensor::Error (never crash or read past the
  // end); a file with any one header byte changed must raise or load (never crash).
  std::string path = temp_path("fuzz_src.safetensors");
  manual_seed(1);
  io::save({{"w", tensor::randn({3, 4})}, {"b", tensor::randn({4}, kFloat64)}, {"m", tensor::tensor({true, false})},
            {"h", tensor::randn({5}).to(kBFloat16)}},
           path, {{"epoch", "7"}});
  std::string good = read_bytes(path);
  std::string cut = temp_path("fuzz_cut.safetensors");
  for (size_t len = 0; len < good.size(); ++len) {
    write_bytes(cut, good.substr(0, len));
    EXPECT_THROW(io::load(cut), tensor::Error) << "truncated to " << len << " of " << good.size() << " bytes";
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(good[i]);
  std::mt19937 rng(3);
  int raised = 0, loaded = 0;
  for (size_t pos = 0; pos < 8 + n; ++pos) {
    for (int trial = 0; trial < 3; ++trial) {
      std::string bad = good;
      bad[pos] = static_cast<char>(bad[pos] ^ (1 + rng() % 255));
      write_bytes(cut, bad);
      try {
        auto out = io::load(cut);
        ++loaded;  // e.g. a changed name or metadata value is still a valid file
        size_t total = 0;
        for (const auto& [name, t] : out) total += static_cast<size_t>(t.nbytes());
        EXPECT_LE(total, bad.size());
      } catch (const tensor::Error&) {
        ++raised;
      }
    }
  }
  std::cout << "[ info ] byte flips: " << raised << " raised, " << loaded << " loaded\n";
  EXPECT_GT(raised, 0);
  EXPECT_GT(loaded, 0);
}

// ---- crash safety ----

TEST(SafetensorsAtomic, KilledSaveLeavesThePreviousCheckpointIntact) {
  // A child process saves a ~32 MB checkpoint in a loop, each iteration with new values, and is
  // SIGKILLed while a save is in progress (its temporary file exists). The checkpoint at `path`
  // must then be a complete earlier one: it loads, and every tensor holds the values of the
  // iteration its metadata names. When the temporary file survives the kill, the rename had not
  // happened, so the checkpoint must be exactly the previous iteration's.
  std::string dir = temp_path("atomic");
  ::mkdir(dir.c_str(), 0755);
  std::string path = dir + "/ckpt.safetensors";
  constexpr int kTensors = 8;
  constexpr int64_t kNumel = 1 << 20;
  io::NamedTensors ckpt;
  for (int j = 0; j < kTensors; ++j) ckpt.emplace_back("layer" + std::to_string(j), tensor::zeros({kNumel}));
  auto fill = [&](int iteration) {
    for (int j = 0; j < kTensors; ++j) {
      float* p = ckpt[j].second.data_ptr<float>();
      for (int64_t i = 0; i < kNumel; ++i) p[i] = static_cast<float>(iteration * 100 + j);
    }
  };
  fill(0);
  io::save(ckpt, path, {{"iteration", "0"}});

  int mid_save_kills = 0;
  for (int round = 0; round < 6 && mid_save_kills < 2; ++round) {
    int pipefd[2];
    ASSERT_EQ(::pipe(pipefd), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    // Never leave the child running, whichever way this round ends.
    struct Reaper {
      pid_t pid;
      ~Reaper() {
        if (pid > 0) { ::kill(pid, SIGKILL); ::waitpid(pid, nullptr, 0); }
      }
    } reaper{child};
    if (child == 0) {
      // Child: only raw memory writes and io::save (no threads, no gtest).
      ::close(pipefd[0]);
      try {
        for (int it = 1;; ++it) {
          fill(it);
          if (::write(pipefd[1], &it, sizeof it) != sizeof it) ::_exit(3);  // "starting iteration it"
          io::save(ckpt, path, {{"iteration", std::to_string(it)}});
        }
      } catch (...) {
      }
      ::_exit(2);
    }
    ::close(pipefd[1]);
    // Let the child complete a few saves (more each round), then kill it while it writes.
    int target = 2 + round, started = 0;
    while (started < target) ASSERT_EQ(::read(pipefd[0], &started, sizeof started), (ssize_t)sizeof started);
    std::string tmp_prefix = "ckpt.safetensors.tmp." + std::to_string(child) + ".";
    auto tmp_exists = [&] {
      DIR* d = ::opendir(dir.c_str());
      bool found = false;
      while (dirent* e = ::readdir(d))
        if (std::string(e->d_name).rfind(tmp_prefix, 0) == 0) found = true;
      ::closedir(d);
      return found;
    };
    for (int spin = 0; spin < 100000 && !tmp_exists(); ++spin) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(round % 3));  // land at different points of the write
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    reaper.pid = -1;
    ASSERT_TRUE(WIFSIGNALED(status));
    // The last iteration the child announced before dying.
    int last = started, v;
    ::fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
    while (::read(pipefd[0], &v, sizeof v) == (ssize_t)sizeof v) last = v;
    ::close(pipefd[0]);

    io::Metadata meta;
    io::NamedTensors loaded;
    ASSERT_NO_THROW(loaded = io::load(path, &meta)) << "round " << round;
    int iteration = std::stoi(meta.at("iteration"));
    bool mid_save = tmp_exists();
    if (mid_save) {
      ++mid_save_kills;
      EXPECT_EQ(iteration, last - 1) << "the save of iteration " << last << " had not been renamed";
    } else {
      EXPECT_TRUE(iteration == last || iteration == last - 1) << iteration << " vs " << last;
    }
    ASSERT_EQ(loaded.size(), static_cast<size_t>(kTensors));
    for (int j = 0; j < kTensors; ++j) {
      const Tensor& t = find(loaded, "layer" + std::to_string(j));
      ASSERT_EQ(t.numel(), kNumel);
      const float* p = t.data_ptr<float>();
      const float want = static_cast<float>(iteration * 100 + j);
      int64_t bad = 0;
      for (int64_t i = 0; i < kNumel; ++i) bad += p[i] != want;
      EXPECT_EQ(bad, 0) << "layer" << j << " mixes iterations";
    }
    // Clean up the dead child's temporary file, as an operator would.
    DIR* d = ::opendir(dir.c_str());
    while (dirent* e = ::readdir(d))
      if (std::string(e->d_name).rfind(tmp_prefix, 0) == 0) ::unlink((dir + "/" + e->d_name).c_str());
    ::closedir(d);
  }
  std::cout << "[ info ] kills during a save: " << mid_save_kills << "\n";
  EXPECT_GE(mid_save_kills, 1) << "no kill landed during a save; the test did not exercise a torn write";
}

// ---- checksums (Note [Checkpoint checksums]) ----

TEST(SafetensorsChecksums, EveryFlippedDataByteIsRefusedNamingTheTensor) {
  std::string path = temp_path("flip.safetensors");
  io::save({{"weight", tensor::arange(6, kFloat32)}, {"step", tensor::tensor({int64_t(9)}, kInt64)},
            {"mask", tensor::tensor({true, false})}},
           path, {{"epoch", "2"}});
  const std::string good = read_bytes(path);
  const uint64_t header = 8 + static_cast<uint64_t>(static_cast<unsigned char>(good[0])) +
                          256 * static_cast<uint64_t>(static_cast<unsigned char>(good[1]));
  ASSERT_EQ(good.size(), header + 8 + 24 + 2);
  // Data order: step (I64), weight (F32), mask (BOOL).
  for (size_t i = header; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x01;
    write_bytes(path, bad);
    const char* name = i < header + 8 ? "'step'" : i < header + 32 ? "'weight'" : "'mask'";
    expect_error([&] { io::load(path); }, {"is corrupt", name, "does not match its checksum"});
  }
  // A damaged checksum digit is refused too, and so is a malformed list.
  std::string bad = good;
  const size_t digits = good.find("\"__crc32__\":\"") + 13;
  bad[digits] = bad[digits] == '0' ? '1' : '0';
  write_bytes(path, bad);
  expect_error([&] { io::load(path); }, {"does not match its checksum"});
  bad = good;
  bad[digits] = 'x';
  write_bytes(path, bad);
  expect_error([&] { io::load(path); }, {"__crc32__", "8 hex digits"});
  // Verification can be turned off: the damaged data then loads as it is.
  bad = good;
  bad[good.size() - 1] ^= 0x02;  // mask[1]: false -> true
  write_bytes(path, bad);
  EXPECT_TRUE(io::verify_checksums());
  io::set_verify_checksums(false);
  auto unchecked = io::load(path);
  io::set_verify_checksums(true);
  EXPECT_TRUE(find(unchecked, "mask").equal(tensor::tensor({true, true})));
  expect_error([&] { io::load(path); }, {"does not match its checksum"});
  // The intact file loads, and its checksums are not user metadata.
  write_bytes(path, good);
  io::Metadata meta;
  auto loaded = io::load(path, &meta);
  EXPECT_EQ(meta, (io::Metadata{{"epoch", "2"}}));
  EXPECT_TRUE(find(loaded, "weight").equal(tensor::arange(6, kFloat32)));
}

// Note [Fast CRC-32]: the stored checksum is zlib's and zip's CRC-32 whatever computes it. Its
// standard check value: CRC-32("123456789") = 0xcbf43926; of no bytes, 0.
TEST(SafetensorsChecksums, TheChecksumIsTheStandardCrc32) {
  std::string path = temp_path("crc.safetensors");
  const std::string text = "123456789";
  Tensor bytes = tensor::empty({9}, kUInt8);
  std::memcpy(bytes.data_ptr(), text.data(), 9);
  io::save({{"digits", bytes}, {"none", tensor::empty({0}, kUInt8)}}, path);
  const std::string file = read_bytes(path);
  // Data order is by alignment then name: digits, then none.
  EXPECT_NE(file.find("\"__crc32__\":\"cbf43926,00000000\""), std::string::npos) << file.substr(0, 200);
  EXPECT_TRUE(find(io::load(path), "digits").equal(bytes));
}

// Note [Clean upper vector state after ISA-L]: the CRC's AVX-512 code must not leave the upper
// halves of the vector registers in use, or every SSE instruction the thread runs afterwards
// pays for it. XGETBV(1) reports which state components are not in their initial state: bit 2
// is the upper 128 bits of YMM0-15, bit 6 the upper 256 bits of ZMM0-15.
#if defined(__x86_64__)
namespace {
bool xinuse_readable() {
  unsigned a, b, c, d;
  __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0), "c"(0));
  if (a < 0xD) return false;
  __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
  if (!(c & (1u << 27))) return false;  // OSXSAVE
  __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0xD), "c"(1));
  return (a & (1u << 2)) != 0;  // XGETBV with ECX = 1
}
uint64_t xinuse() {
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
  return (uint64_t(hi) << 32) | lo;
}
}  // namespace

TEST(SafetensorsChecksums, SaveAndLoadLeaveTheUpperVectorStateClean) {
  if (!xinuse_readable()) GTEST_SKIP() << "this CPU cannot report the state components in use (XGETBV 1)";
  const std::string path = temp_path("upper.safetensors");
  const Tensor t = tensor::rand({int64_t(1) << 20});  // 4 MB: the CRC's vector loops run
  io::save({{"t", t}}, path);
  const uint64_t after_save = xinuse();
  EXPECT_EQ(after_save & ((1u << 2) | (1u << 6)), 0u) << std::hex << after_save;
  const int threads = get_num_threads();
  set_num_threads(1);  // the checked load's chunks on this thread
  auto loaded = io::load(path);
  const uint64_t after_load = xinuse();
  set_num_threads(threads);
  EXPECT_EQ(after_load & ((1u << 2) | (1u << 6)), 0u) << std::hex << after_load;
  EXPECT_TRUE(find(loaded, "t").equal(t));
}
#endif

TEST(SafetensorsChecksums, TensorsOfManyReadChunksLoadAndAFlipInAnyChunkIsRefused) {
  // Tensors larger than one read chunk (1 MB, Note [Parallel checkpoint reads] in
  // src/io/Safetensors.cpp), of sizes that are no multiple of it: their chunks are read and
  // checksummed on several threads and the CRCs combined.
  std::string path = temp_path("chunks.safetensors");
  manual_seed(7);
  const int64_t n = (int64_t(5) << 20) / 8 + 13;  // 2.5 MB + 52 bytes of float32
  Tensor big = randn({n});
  io::save({{"big", big}}, path);
  const std::string good = read_bytes(path);
  const uint64_t header = 8 + static_cast<uint64_t>(static_cast<unsigned char>(good[0])) +
                          256 * static_cast<uint64_t>(static_cast<unsigned char>(good[1]));
  ASSERT_EQ(good.size(), header + 4 * static_cast<uint64_t>(n));
  EXPECT_TRUE(find(io::load(path), "big").equal(big));
  for (uint64_t at : {uint64_t(3), (uint64_t(1) << 20) - 1, uint64_t(1) << 20, (uint64_t(3) << 19) + 7,
                      4 * static_cast<uint64_t>(n) - 1}) {
    std::string bad = good;
    bad[header + at] ^= 0x10;
    write_bytes(path, bad);
    expect_error([&] { io::load(path); }, {"is corrupt", "'big'", "does not match its checksum"});
  }
  // Several tensors, each of several chunks: every one loads with its own values.
  Tensor a = randn({3, 100000}), b = randn({70000}).to(kFloat64), c = randint(0, 100, {300000}, kInt64);
  io::save({{"a", a}, {"b", b}, {"c", c}}, path);
  auto loaded = io::load(path);
  EXPECT_TRUE(find(loaded, "a").equal(a));
  EXPECT_TRUE(find(loaded, "b").equal(b));
  EXPECT_TRUE(find(loaded, "c").equal(c));
}

TEST(SafetensorsChecksums, TheChecksumKeyIsReserved) {
  std::string path = temp_path("reserved.safetensors");
  expect_error([&] { io::save({{"x", tensor::ones({1})}}, path, {{"__crc32__", "0"}}); }, {"__crc32__", "reserved"});
}
