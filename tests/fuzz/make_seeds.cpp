// Writes the seed corpus of the fuzz targets: fuzz_make_seeds <dir> fills <dir>/fuzz_safetensors,
// <dir>/fuzz_idx and <dir>/fuzz_schema. The safetensors seeds come from io::save (plus two files
// laid out by hand the way other writers do), the IDX seeds from the layout read_idx documents
// (and, when the Debian package dataset-fashion-mnist is installed, the first Fashion-MNIST
// records), each plain and gzipped; the schema seeds are the schemas of the tests, the examples
// and docs/custom_ops.md, valid and malformed. Seeds stay small: libFuzzer mutates them.
#include <sys/stat.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <tensor/tensor.h>

using namespace tensor;

namespace {

std::string g_root;

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

std::string subdir(const std::string& name) {
  std::string d = g_root + "/" + name;
  ::mkdir(d.c_str(), 0755);
  return d;
}

std::string le64(uint64_t v) {
  std::string s;
  for (int i = 0; i < 8; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

void write_gzip(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb9");
  if (!f || gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) != static_cast<int>(bytes.size()))
    throw std::runtime_error("cannot write " + path);
  gzclose(f);
}

void safetensors_seeds() {
  std::string d = subdir("fuzz_safetensors");
  manual_seed(0);
  io::save(io::NamedTensors{}, d + "/empty.safetensors");
  io::save(io::NamedTensors{}, d + "/metadata_only.safetensors", {{"epoch", "7"}, {"format", "pt"}});
  io::save({{"weight", randn({2, 3})}, {"bias", randn({2})}}, d + "/linear.safetensors", {{"format", "pt"}});
  io::save({{"flags", tensor::tensor({true, false, true})},
            {"u8", arange(0, 4, TensorOptions().dtype(kUInt8))},
            {"i8", arange(-2, 2, TensorOptions().dtype(kInt8)).reshape({2, 2})},
            {"i16", arange(-1, 2, TensorOptions().dtype(kInt16))},
            {"i32", arange(0, 2, TensorOptions().dtype(kInt32))},
            {"i64", arange(0, 2, TensorOptions().dtype(kInt64))},
            {"f16", randn({2}).to(kFloat16)},
            {"bf16", randn({2}).to(kBFloat16)},
            {"f32", scalar_tensor(1.5, kFloat32)},
            {"f64", randn({1, 1, 2}, kFloat64)}},
           d + "/every_dtype.safetensors");
  io::save({{"empty", zeros({0})}, {"empty3d", zeros({2, 0, 3}, kInt64)}, {"one", ones({1})}},
           d + "/zero_size.safetensors");
  io::save(
      {{"a\"b\\c", ones({1})}, {"layer.0/weight", ones({1}, kFloat64)}, {"\xc3\xbc\xe2\x82\xac", ones({1}, kInt8)}},
      d + "/escaped_names.safetensors", {{"note", "line\nbreak \"quoted\""}});
  // The layouts another writer may use: whitespace, keys out of offset order, extra fields,
  // "__metadata__" in the middle, a bool byte of 2; one header unpadded.
  std::string json = R"({
  "w": {"shape": [2, 1], "dtype": "F32", "data_offsets": [8, 16], "extra": "ignored"},
  "__metadata__": {"format": "pt"},
  "x": {"dtype": "F64", "shape": [], "data_offsets": [0, 8]},
  "flags": {"dtype": "BOOL", "shape": [3], "data_offsets": [16, 19]}
})";
  std::string data = std::string("\0\0\0\0\0\0\xe0\xbf", 8) + std::string("\0\0\x50\x40\0\0\x80\xbf", 8) +
                     std::string("\x00\x01\x02", 3);
  std::string padded = json + std::string((8 - json.size() % 8) % 8, ' ');
  write_bytes(d + "/other_writer.safetensors", le64(padded.size()) + padded + data);
  std::string compact = R"({"a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}})";
  write_bytes(d + "/unpadded.safetensors", le64(compact.size()) + compact + "abc");
}

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}
std::string idx(uint8_t code, const std::vector<uint32_t>& dims, const std::string& data) {
  std::string s = {0, 0, static_cast<char>(code), static_cast<char>(dims.size())};
  for (uint32_t dim : dims) s += be32(dim);
  return s + data;
}

void idx_seeds() {
  std::string d = subdir("fuzz_idx");
  auto both = [&](const std::string& name, const std::string& bytes) {
    write_bytes(d + "/" + name, bytes);
    write_gzip(d + "/" + name + ".gz", bytes);
  };
  // Every element type (byte widths 1, 1, 2, 4, 4, 8), 1 to 4 dims.
  both("ubyte_3d", idx(0x08, {2, 2, 3}, std::string("\x00\x01\x02\x7f\x80\xff\x10\x20\x30\x40\x50\x60", 12)));
  both("sbyte_1d", idx(0x09, {4}, std::string("\x00\x01\x80\xff", 4)));
  both("short_2d", idx(0x0B, {2, 2}, std::string("\x01\x02\xff\xfe\x80\x00\x7f\xff", 8)));
  both("int_1d", idx(0x0C, {2}, be32(1) + be32(0xfffffffe)));
  both("float_2d", idx(0x0D, {1, 2}, be32(0x3fc00000) + be32(0xbe800000)));
  both("double_4d", idx(0x0E, {1, 1, 1, 1}, std::string("\x3f\xf8\0\0\0\0\0\0", 8)));
  both("empty", idx(0x08, {0, 28, 28}, ""));
  // The first records of the real Fashion-MNIST test set: images 0x803 [N, 28, 28], labels 0x801.
  const std::string fm = "/usr/share/datasets/fashion-mnist/";
  struct stat st;
  if (::stat((fm + "t10k-labels-idx1-ubyte.gz").c_str(), &st) == 0) {
    Tensor images = data::read_idx(fm + "t10k-images-idx3-ubyte.gz").narrow(0, 0, 2).contiguous();
    Tensor labels = data::read_idx(fm + "t10k-labels-idx1-ubyte.gz").narrow(0, 0, 8).contiguous();
    both("fashion_mnist_images",
         idx(0x08, {2, 28, 28}, std::string(static_cast<const char*>(images.data_ptr()), images.nbytes())));
    both("fashion_mnist_labels", idx(0x08, {8}, std::string(static_cast<const char*>(labels.data_ptr()), 8)));
  } else {
    std::cerr << "fuzz_make_seeds: no Fashion-MNIST in " << fm << "; its seeds are left out\n";
  }
}

void schema_seeds() {
  std::string d = subdir("fuzz_schema");
  // A line before the first newline is the default namespace (see fuzz_schema.cpp).
  const char* seeds[] = {
      // Valid: tests/test_custom_op.cpp, examples/custom_op, docs/custom_ops.md.
      "testops::axpby(Tensor x, Tensor y, float a, float b) -> Tensor",
      "testops\nminmax(Tensor x) -> (Tensor min, Tensor max)",
      "testops::mixed(Tensor x, Tensor? bias, int k, bool flip, int[] sizes, Tensor[] extras, float? scale) -> Tensor",
      "testops::touch(Tensor x, int n) -> ()",
      "testops::iota(int n) -> Tensor",
      "explicitops::scale(Tensor x, float s, int times) -> Tensor",
      "demo::softplus(Tensor x, float beta) -> Tensor",
      "myops::axpby(Tensor x, Tensor y, float a, float b) -> Tensor",
      "  ns::g.out( Tensor? a ,int[]? b,Tensor[] c )->( Tensor , Tensor ) ",
      "ns::h() -> ()",
      "ns::four(bool? a) -> (Tensor, Tensor, Tensor, Tensor)",
      // Malformed: the cases of CustomOpErrors.MalformedSchemas.
      "bad::f(Tensor x",
      "bad::f(Tensor x) ->",
      "bad::f(Tensor x)",
      "bad::f(double a) -> Tensor",
      "bad::f(Tensor) -> Tensor",
      "bad::f(Tensor x, Tensor x) -> Tensor",
      "bad::f(Tensor x y) -> Tensor",
      "bad::f(float a=1.0) -> Tensor",
      "bad::f(float[] a) -> Tensor",
      "bad::f(Tensor x) -> float",
      "bad::f(Tensor x) -> Tensor extra",
      "(Tensor x) -> Tensor",
      "bad::(Tensor x) -> Tensor",
      "bad::f(Tensor x) -> (Tensor, Tensor, Tensor, Tensor, Tensor)",
      "bad::f(Tensor(a!) x) -> Tensor",
      "f(Tensor x) -> Tensor",
      "bad::f(int[2] x) -> Tensor",
      "bad::f(*, Tensor x) -> Tensor",
  };
  int i = 0;
  for (const char* s : seeds) {
    char name[32];
    std::snprintf(name, sizeof name, "/schema_%02d", i++);
    write_bytes(d + name, s);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_make_seeds <dir>  (writes <dir>/fuzz_safetensors, fuzz_idx, fuzz_schema)\n";
    return 2;
  }
  g_root = argv[1];
  ::mkdir(g_root.c_str(), 0755);
  safetensors_seeds();
  idx_seeds();
  schema_seeds();
  return 0;
}
