// tensor::data: IDX reading (plain and gzipped, real Fashion-MNIST and hand-written files, corrupt
// and truncated files), datasets, samplers, and the DataLoader (batches, order, determinism across
// worker counts, drop_last, exceptions from workers, early destruction, bounded prefetch, seek).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <tensor/tensor.h>
#include <thread>

#include "tests/temp_dir_util.h"
#include "tests/test_util.h"

using namespace tensor;
namespace fs = std::filesystem;
using tensor::testing::expect_error;

namespace {

using tensor::testing::temp_path;

// A fresh empty directory per test.
std::string fresh_dir(const std::string& name) {
  std::string d = temp_path(name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}
std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
// Output of a shell command (gzip is independent of the zlib the library uses).
std::string run(const std::string& cmd) {
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("popen failed: " + cmd);
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (::pclose(p) != 0) throw std::runtime_error("command failed: " + cmd);
  return out;
}
void gzip_file(const std::string& path) { run("gzip -f -n '" + path + "'"); }  // path -> path.gz

std::string be32(uint32_t v) {
  return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                     static_cast<char>(v)};
}
// An IDX file: magic {0, 0, type, ndims}, big-endian dims, then `data` (already big-endian).
std::string idx(uint8_t type, std::vector<uint32_t> dims, const std::string& data) {
  std::string s{0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) s += be32(d);
  return s + data;
}
std::string bytes_of(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += static_cast<char>(x);
  return s;
}

// Writes a tiny MNIST-format pair: n images of h x w with pixel (i, y, x) = (i * 31 + y * w + x) % 256.
void write_tiny_mnist(const std::string& dir, const std::string& prefix, int n, int h, int w, bool gz) {
  std::string px, labels;
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < h * w; ++k) px += static_cast<char>((i * 31 + k) % 256);
    labels += static_cast<char>((i * 7) % 10);
  }
  std::string ip = dir + "/" + prefix + "-images-idx3-ubyte", lp = dir + "/" + prefix + "-labels-idx1-ubyte";
  write_bytes(ip, idx(0x08, {uint32_t(n), uint32_t(h), uint32_t(w)}, px));
  write_bytes(lp, idx(0x08, {uint32_t(n)}, labels));
  if (gz) {
    gzip_file(ip);
    gzip_file(lp);
  }
}

}  // namespace

// ---- IDX files ----

TEST(Idx, ReadsEveryElementTypeBigEndian) {
  std::string dir = fresh_dir("idx_types");
  struct Case {
    uint8_t code;
    ScalarType dtype;
    std::string data;
    std::vector<double> want;
  };
  auto f32 = [](float f) { uint32_t u; std::memcpy(&u, &f, 4); return be32(u); };
  auto f64 = [](double d) { uint64_t u; std::memcpy(&u, &d, 8); return be32(uint32_t(u >> 32)) + be32(uint32_t(u)); };
  std::vector<Case> cases = {
      {0x08, kUInt8, bytes_of({0, 1, 200, 255}), {0, 1, 200, 255}},
      {0x09, kInt8, bytes_of({0, 1, 0x80, 0xff}), {0, 1, -128, -1}},
      {0x0B, kInt16, bytes_of({0x01, 0x02, 0xff, 0xfe, 0x80, 0x00, 0x7f, 0xff}), {258, -2, -32768, 32767}},
      {0x0C, kInt32, be32(1) + be32(0xfffffffe) + be32(0x01020304) + be32(0x80000000),
       {1, -2, 16909060, -2147483648.0}},
      {0x0D, kFloat32, f32(1.5f) + f32(-0.25f) + f32(3e10f) + f32(0.0f), {1.5, -0.25, 3e10f, 0}},
      {0x0E, kFloat64, f64(1.5) + f64(-1e300) + f64(0.1) + f64(-0.0), {1.5, -1e300, 0.1, -0.0}},
  };
  for (const auto& c : cases) {
    std::string path = dir + "/t" + std::to_string(c.code);
    write_bytes(path, idx(c.code, {2, 2}, c.data));
    for (bool gz : {false, true}) {
      std::string p = path;
      if (gz) {
        gzip_file(path);
        p += ".gz";
      }
      Tensor t = data::read_idx(p);
      EXPECT_EQ(t.dtype(), c.dtype) << p;
      ASSERT_EQ(t.sizes(), IntArrayRef({2, 2})) << p;
      for (int i = 0; i < 4; ++i) EXPECT_EQ(t[i / 2][i % 2].item<double>(), c.want[i]) << p << " element " << i;
    }
  }
  // One and four dims.
  write_bytes(dir + "/d1", idx(0x08, {3}, bytes_of({7, 8, 9})));
  EXPECT_EQ(data::read_idx(dir + "/d1").sizes(), IntArrayRef({3}));
  write_bytes(dir + "/d4", idx(0x08, {1, 2, 1, 3}, bytes_of({1, 2, 3, 4, 5, 6})));
  Tensor d4 = data::read_idx(dir + "/d4");
  EXPECT_EQ(d4.sizes(), IntArrayRef({1, 2, 1, 3}));
  EXPECT_EQ(d4[0][1][0][2].item<int64_t>(), 6);
}

TEST(Idx, CorruptAndTruncatedFilesRaise) {
  std::string dir = fresh_dir("idx_bad");
  auto bad = [&](const std::string& name, const std::string& bytes, std::vector<std::string> msg) {
    std::string p = dir + "/" + name;
    write_bytes(p, bytes);
    msg.insert(msg.begin(), p);
    expect_error([&] { data::read_idx(p); }, msg);
  };
  std::string good = idx(0x08, {2, 3}, bytes_of({1, 2, 3, 4, 5, 6}));
  bad("empty", "", {"fewer than the 4-byte IDX magic"});
  bad("short_magic", std::string("\0\0", 2), {"fewer than the 4-byte IDX magic"});
  bad("magic", "\x12\x34\x08\x02" + good.substr(4), {"bad magic number 0x12340802"});
  bad("type", std::string("\0\0\x0a\x02", 4) + good.substr(4), {"bad magic number 0x00000a02"});
  bad("zero_dims", std::string("\0\0\x08\x00", 4), {"bad magic number 0x00000800"});
  bad("in_dims", good.substr(0, 9), {"truncated", "ended inside the sizes of its 2 dims"});
  bad("data", good.substr(0, good.size() - 2), {"truncated", "6 elements", "[2, 3]", "only 4 bytes follow"});
  bad("trailing", good + "x", {"bytes after the 6 declared"});
  bad("overflow", idx(0x08, {0xffffffff, 0xffffffff, 0xffffffff}, ""), {"product overflows"});
  bad("huge", idx(0x0E, {0xffffffff, 0xffffffff}, ""), {"too large"});
  bad("big_claim", idx(0x08, {100000, 100000}, "abc"), {"truncated", "only 3 bytes follow"});
  expect_error([&] { data::read_idx(dir + "/missing"); }, {"cannot open", "missing", "No such file"});

  // Gzipped: a stream cut short, and a stream whose compressed bytes are damaged.
  std::string big;
  std::mt19937 rng(1);
  for (int i = 0; i < 20000; ++i) big += static_cast<char>(rng() % 7);
  write_bytes(dir + "/z", idx(0x08, {100, 200}, big));
  gzip_file(dir + "/z");
  std::string gz = read_bytes(dir + "/z.gz");
  bad("z_cut", gz.substr(0, gz.size() / 2), {"truncated"});
  std::string damaged = gz;
  for (size_t i = gz.size() / 3; i < gz.size() / 3 + 16; ++i) damaged[i] = static_cast<char>(damaged[i] ^ 0x5a);
  bad("z_damaged", damaged, {"corrupt"});
  std::string bad_crc = gz;
  bad_crc[gz.size() - 6] = static_cast<char>(bad_crc[gz.size() - 6] ^ 1);  // the CRC32 trailer
  bad("z_crc", bad_crc, {"corrupt"});
  // Every truncation of the gzipped file raises (never crashes or returns short data).
  for (size_t len = 0; len < gz.size(); len += 97) {
    write_bytes(dir + "/z_each", gz.substr(0, len));
    EXPECT_THROW(data::read_idx(dir + "/z_each"), tensor::Error) << len;
  }
}

// Found by tests/fuzz/fuzz_idx (corpus: regression_zero_size_huge_dims): sizes with a 0 hold no
// data, so the size checks passed, but the strides of [0, 4294966695, 2416181248, 0] overflowed
// int64 when the tensor was made (UBSan: signed integer overflow). Note [Sizes that fit].
TEST(Idx, ZeroSizeWithOverflowingStridesRaises) {
  std::string dir = fresh_dir("idx_zero_huge");
  write_bytes(dir + "/fuzz", std::string("\0\0\x0e\x04\0\0\0\0\xff\xff\xfd\xa7\x90\x04\0\0\0\0\0\0", 20));
  expect_error([&] { data::read_idx(dir + "/fuzz"); }, {"sizes [0, 4294966695, 2416181248, 0] too large to hold"});
  // (2^32 - 1)^2 fits in uint64 but not in int64.
  write_bytes(dir + "/int64", idx(0x08, {0xffffffff, 0xffffffff, 0}, ""));
  expect_error([&] { data::read_idx(dir + "/int64"); }, {"too large to hold"});
  write_bytes(dir + "/ok", idx(0x08, {0, 0x7fffffff, 2}, ""));
  EXPECT_EQ(data::read_idx(dir + "/ok").sizes(), IntArrayRef({0, 0x7fffffff, 2}));
}

// ---- MNIST ----

TEST(MNIST, LibtorchPipelineMapNormalizeStack) {
  // libtorch's MNIST idiom: MNIST(root).map(Normalize).map(Stack) into make_data_loader.
  std::string dir = fresh_dir("mnist_port");
  write_tiny_mnist(dir, "train", 5, 4, 3, false);
  auto ds = data::datasets::MNIST(dir)
                .map(data::transforms::Normalize<>(0.5, 0.25))
                .map(data::transforms::Stack<>());
  EXPECT_EQ(ds.size().value(), 5u);
  auto loader = data::make_data_loader<data::samplers::SequentialSampler>(std::move(ds),
                                                                          data::DataLoaderOptions(2).workers(2));
  int i = 0;
  for (auto& batch : *loader) {
    ASSERT_EQ(batch.data.dim(), 4);
    for (int64_t k = 0; k < batch.data.size(0); ++k, ++i) {
      EXPECT_EQ(batch.target[k].item<int64_t>(), (i * 7) % 10);
      for (int y = 0; y < 4; ++y)
        for (int x = 0; x < 3; ++x)
          EXPECT_FLOAT_EQ(batch.data[k][0][y][x].item<float>(),
                          (static_cast<float>((i * 31 + y * 3 + x) % 256) / 255.0f - 0.5f) / 0.25f);
    }
  }
  EXPECT_EQ(i, 5);
}

TEST(MNIST, TinyFilesPlainAndGzipped) {
  for (bool gz : {false, true}) {
    std::string dir = fresh_dir(gz ? "mnist_gz" : "mnist_plain");
    write_tiny_mnist(dir, "train", 5, 4, 3, gz);
    write_tiny_mnist(dir, "t10k", 2, 4, 3, gz);
    data::datasets::MNIST train(dir, true);
    data::datasets::MNIST test(dir, data::datasets::MNIST::Mode::kTest);
    EXPECT_TRUE(train.is_train());
    EXPECT_FALSE(test.is_train());
    ASSERT_EQ(train.size(), 5u);
    ASSERT_EQ(test.size(), 2u);
    EXPECT_EQ(train.images().sizes(), IntArrayRef({5, 1, 4, 3}));
    EXPECT_EQ(train.images().dtype(), kFloat32);
    EXPECT_EQ(train.targets().sizes(), IntArrayRef({5}));
    EXPECT_EQ(train.targets().dtype(), kInt64);
    for (int i = 0; i < 5; ++i) {
      data::Example<> e = train.get(i);
      EXPECT_EQ(e.data.sizes(), IntArrayRef({1, 4, 3}));
      EXPECT_EQ(e.target.dim(), 0);
      EXPECT_EQ(e.target.item<int64_t>(), (i * 7) % 10);
      for (int y = 0; y < 4; ++y)
        for (int x = 0; x < 3; ++x)
          EXPECT_EQ(e.data[0][y][x].item<float>(), static_cast<float>((i * 31 + y * 3 + x) % 256) / 255.0f);
    }
    data::Example<> b = train.get_batch({4, 0});
    EXPECT_EQ(b.data.sizes(), IntArrayRef({2, 1, 4, 3}));
    EXPECT_TRUE(b.data[0].equal(train.get(4).data));
    EXPECT_EQ(b.target[1].item<int64_t>(), 0);
    EXPECT_THROW(train.get(5), tensor::Error);
  }
}

TEST(MNIST, BadFilesRaiseClearErrors) {
  std::string dir = fresh_dir("mnist_bad");
  expect_error([&] { data::datasets::MNIST m(dir, true); }, {"no images file", "train-images-idx3-ubyte.gz"});
  // Count mismatch between images and labels.
  write_tiny_mnist(dir, "train", 5, 4, 3, false);
  write_bytes(dir + "/train-labels-idx1-ubyte", idx(0x08, {4}, bytes_of({1, 2, 3, 4})));
  expect_error([&] { data::datasets::MNIST m(dir, true); }, {"has 5 images", "has 4 labels"});
  // Images with the wrong number of dims, or the labels file in place of the images.
  write_bytes(dir + "/train-labels-idx1-ubyte", idx(0x08, {5}, bytes_of({1, 2, 3, 4, 5})));
  write_bytes(dir + "/train-images-idx3-ubyte", idx(0x08, {5, 12}, std::string(60, 'a')));
  expect_error([&] { data::datasets::MNIST m(dir, true); }, {"holds 2 dims", "3 dims [N, rows, cols]"});
  write_bytes(dir + "/train-images-idx3-ubyte", idx(0x0D, {5, 2, 2}, std::string(80, '\0')));
  expect_error([&] { data::datasets::MNIST m(dir, true); }, {"of type float", "unsigned bytes"});
  write_bytes(dir + "/train-images-idx3-ubyte", idx(0x08, {5, 2, 2}, std::string(20, 'a')));
  write_bytes(dir + "/train-labels-idx1-ubyte", idx(0x08, {5, 1}, bytes_of({1, 2, 3, 4, 5})));
  expect_error([&] { data::datasets::MNIST m(dir, true); }, {"labels are 1 dim"});
  // A truncated gzipped images file.
  std::string gdir = fresh_dir("mnist_bad_gz");
  write_tiny_mnist(gdir, "train", 50, 28, 28, true);
  std::string gz = read_bytes(gdir + "/train-images-idx3-ubyte.gz");
  write_bytes(gdir + "/train-images-idx3-ubyte.gz", gz.substr(0, gz.size() - 40));
  expect_error([&] { data::datasets::MNIST m(gdir, true); }, {"train-images-idx3-ubyte.gz", "truncated"});
}

namespace {
const std::string kFashion = "/usr/share/datasets/fashion-mnist";
}

TEST(MNIST, RealFashionMnistMatchesItsRawBytes) {
  if (!fs::exists(kFashion + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)";
  for (bool train : {true, false}) {
    std::string prefix = kFashion + (train ? "/train" : "/t10k");
    // Independent reference: gzip's own decompressor and the raw IDX bytes.
    std::string raw_images = run("gzip -dc '" + prefix + "-images-idx3-ubyte.gz'");
    std::string raw_labels = run("gzip -dc '" + prefix + "-labels-idx1-ubyte.gz'");
    const size_t n = train ? 60000 : 10000;
    ASSERT_EQ(raw_images.size(), 16 + n * 784);
    ASSERT_EQ(raw_labels.size(), 8 + n);

    data::datasets::MNIST ds(kFashion, train);
    ASSERT_EQ(ds.size(), n);
    ASSERT_EQ(ds.images().sizes(), IntArrayRef({int64_t(n), 1, 28, 28}));
    ASSERT_EQ(ds.targets().sizes(), IntArrayRef({int64_t(n)}));
    const float* px = ds.images().data_ptr<float>();
    const int64_t* lb = ds.targets().data_ptr<int64_t>();
    size_t bad_px = 0, bad_lb = 0;
    for (size_t i = 0; i < n * 784; ++i)
      bad_px += px[i] != static_cast<float>(static_cast<unsigned char>(raw_images[16 + i])) / 255.0f;
    for (size_t i = 0; i < n; ++i) bad_lb += lb[i] != static_cast<unsigned char>(raw_labels[8 + i]);
    EXPECT_EQ(bad_px, 0u);
    EXPECT_EQ(bad_lb, 0u);
    // The published first labels of Fashion-MNIST (9 = ankle boot, 0 = T-shirt, ...).
    std::vector<int64_t> first(lb, lb + 10);
    if (train)
      EXPECT_EQ(first, (std::vector<int64_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}));
    else
      EXPECT_EQ(first, (std::vector<int64_t>{9, 2, 1, 1, 6, 1, 4, 6, 5, 7}));
    EXPECT_GE(ds.images().min().item<float>(), 0.0f);
    EXPECT_EQ(ds.images().max().item<float>(), 1.0f);
    // Ten classes, each with exactly a tenth of the samples.
    std::vector<size_t> counts(10);
    for (size_t i = 0; i < n; ++i) ++counts.at(static_cast<size_t>(lb[i]));
    for (size_t c : counts) EXPECT_EQ(c, n / 10);
  }
}

TEST(MNIST, RealFashionMnistThroughADataLoader) {
  if (!fs::exists(kFashion + "/t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "Fashion-MNIST is not installed";
  auto ds = std::make_shared<data::datasets::MNIST>(kFashion, false);
  data::DataLoader loader(ds, data::DataLoaderOptions(64).num_workers(2));
  EXPECT_EQ(loader.size(), (10000u + 63) / 64);
  size_t batches = 0, samples = 0;
  for (data::Example<>& batch : loader) {
    if (batches == 0) {
      EXPECT_EQ(batch.data.sizes(), IntArrayRef({64, 1, 28, 28}));
      EXPECT_TRUE(batch.data.equal(ds->images().slice(0, 0, 64)));
      EXPECT_TRUE(batch.target.equal(ds->targets().slice(0, 0, 64)));
    }
    ++batches;
    samples += static_cast<size_t>(batch.data.size(0));
  }
  EXPECT_EQ(batches, loader.size());
  EXPECT_EQ(samples, 10000u);
}

// ---- samplers ----

TEST(Samplers, SequentialAndRandomOrders) {
  data::SequentialSampler seq;
  EXPECT_EQ(seq.indices(4, 3), (std::vector<size_t>{0, 1, 2, 3}));
  data::RandomSampler a(42), b(42), c(43);
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    auto pa = a.indices(100, epoch);
    EXPECT_EQ(pa, b.indices(100, epoch)) << "same seed, same epoch: same order";
    EXPECT_NE(pa, c.indices(100, epoch)) << "another seed: another order";
    EXPECT_NE(pa, a.indices(100, epoch + 1)) << "another epoch: another order";
    std::vector<size_t> sorted = pa;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < 100; ++i) ASSERT_EQ(sorted[i], i) << "not a permutation";
  }
  EXPECT_TRUE(a.indices(0, 0).empty());
  EXPECT_EQ(a.indices(1, 5), std::vector<size_t>{0});
}

TEST(Samplers, RandomPermutationsAreUniform) {
  // All 120 orders of 5 elements over 24000 epochs: a chi-square test with 119 degrees of
  // freedom (mean 119, sd 15.4); a biased shuffle (e.g. modulo bias or an off-by-one in
  // Fisher-Yates) lands far above the bound.
  data::RandomSampler s(2024);
  std::map<std::vector<size_t>, int> counts;
  const int epochs = 24000;
  for (int e = 0; e < epochs; ++e) ++counts[s.indices(5, static_cast<uint64_t>(e))];
  ASSERT_EQ(counts.size(), 120u);
  double expected = epochs / 120.0, chi2 = 0;
  for (const auto& [perm, k] : counts) chi2 += (k - expected) * (k - expected) / expected;
  EXPECT_LT(chi2, 119 + 6 * 15.4) << "chi-square " << chi2;
}

// ---- DataLoader ----

namespace {
// Sample i: data = [i, i + 0.5] (float64), target = i (int64); optionally slow or failing, and
// counting calls. get() is thread-safe.
struct CountingDataset : data::Dataset {
  size_t n;
  int sleep_us;
  int64_t fail_at;
  std::atomic<size_t> calls{0};
  CountingDataset(size_t n, int sleep_us = 0, int64_t fail_at = -1) : n(n), sleep_us(sleep_us), fail_at(fail_at) {}
  data::Example<> get(size_t i) override {
    ++calls;
    if (sleep_us) {
      // Jitter so that workers finish out of order.
      std::this_thread::sleep_for(std::chrono::microseconds(sleep_us * static_cast<int>(1 + (i * 7919) % 5)));
    }
    if (static_cast<int64_t>(i) == fail_at) throw std::runtime_error("sample " + std::to_string(i) + " is unreadable");
    double v = static_cast<double>(i);
    return {tensor::tensor({v, v + 0.5}, kFloat64), tensor::scalar_tensor(static_cast<int64_t>(i), kInt64)};
  }
  size_t size() const override { return n; }
};

std::vector<int64_t> targets_of(const Tensor& t) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t[i].item<int64_t>());
  return v;
}

// One epoch's batches, as (target list) per batch, checking data against targets.
std::vector<std::vector<int64_t>> run_epoch(data::DataLoader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (data::Example<>& b : loader) {
    auto t = targets_of(b.target);
    EXPECT_EQ(b.data.sizes(), IntArrayRef({static_cast<int64_t>(t.size()), 2}));
    for (size_t k = 0; k < t.size(); ++k) {
      EXPECT_EQ(b.data[k][0].item<double>(), static_cast<double>(t[k]));
      EXPECT_EQ(b.data[k][1].item<double>(), static_cast<double>(t[k]) + 0.5);
    }
    out.push_back(t);
  }
  return out;
}
}  // namespace

TEST(DataLoader, SequentialBatchesAndDropLast) {
  auto ds = std::make_shared<CountingDataset>(10);
  data::DataLoader loader(ds, data::DataLoaderOptions(4));
  EXPECT_EQ(loader.size(), 3u);
  auto batches = run_epoch(loader);
  EXPECT_EQ(batches, (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
  data::DataLoader dropping(ds, data::DataLoaderOptions(4).drop_last(true));
  EXPECT_EQ(dropping.size(), 2u);
  EXPECT_EQ(run_epoch(dropping), (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  data::DataLoader exact(ds, data::DataLoaderOptions(5).drop_last(true));
  EXPECT_EQ(run_epoch(exact).size(), 2u);
  data::DataLoader big(ds, data::DataLoaderOptions(64).drop_last(true));
  EXPECT_EQ(big.size(), 0u);
  EXPECT_TRUE(big.begin() == big.end());
  data::DataLoader one_batch(ds, data::DataLoaderOptions(64));
  EXPECT_EQ(run_epoch(one_batch).size(), 1u);
}

TEST(DataLoader, TensorDatasetBatchesAndShapes) {
  Tensor x = tensor::arange(60, kFloat32).reshape({10, 3, 2});
  Tensor y = tensor::arange(10, kInt64) * 3;
  auto ds = std::make_shared<data::TensorDataset>(x, y);
  data::DataLoader loader(ds, data::DataLoaderOptions(4).num_workers(2));
  int k = 0;
  for (auto& b : loader) {
    int64_t rows = k < 2 ? 4 : 2;
    EXPECT_EQ(b.data.sizes(), IntArrayRef({rows, 3, 2}));
    EXPECT_EQ(b.target.sizes(), IntArrayRef({rows}));
    EXPECT_TRUE(b.data.equal(x.slice(0, 4 * k, 4 * k + rows)));
    EXPECT_TRUE(b.target.equal(y.slice(0, 4 * k, 4 * k + rows)));
    ++k;
  }
  EXPECT_EQ(k, 3);
  EXPECT_THROW(data::TensorDataset(x, tensor::zeros({9})), tensor::Error);
  // A non-contiguous source (rows of a transposed matrix) batches to the same values.
  Tensor xt = tensor::arange(30, kFloat64).reshape({3, 10}).t();
  data::TensorDataset tds(xt, y);
  data::Example<> picked = tds.get_batch({7, 2, 7});
  ASSERT_EQ(picked.data.sizes(), IntArrayRef({3, 3}));
  for (int r = 0; r < 3; ++r) {
    int64_t i = r == 1 ? 2 : 7;
    for (int c = 0; c < 3; ++c) EXPECT_EQ(picked.data[r][c].item<double>(), c * 10 + i);
    EXPECT_EQ(picked.target[r].item<int64_t>(), 3 * i);
  }
  EXPECT_THROW(tds.get_batch({10}), tensor::Error);
  // Batches carry no autograd history even when the source requires grad.
  auto grad_ds = std::make_shared<data::TensorDataset>(tensor::randn({6, 2}, dtype(kFloat64).requires_grad(true)),
                                                       Tensor());
  data::DataLoader grad_loader(grad_ds, data::DataLoaderOptions(3));
  for (auto& b : grad_loader) {
    EXPECT_FALSE(b.data.requires_grad());
    EXPECT_FALSE(b.target.defined());
  }
}

TEST(DataLoader, ShuffledOrderDependsOnlyOnTheSeed) {
  // The same seed gives the same batches, epoch after epoch, with 0, 1 or 3 workers (and a
  // dataset whose jitter makes workers finish out of order).
  std::vector<std::vector<std::vector<int64_t>>> epochs_by_workers[3];
  const size_t workers[] = {0, 1, 3};
  for (int w = 0; w < 3; ++w) {
    auto ds = std::make_shared<CountingDataset>(37, /*sleep_us=*/50);
    data::DataLoader loader(ds, data::DataLoaderOptions(5).shuffle(true).seed(11).num_workers(workers[w]));
    for (int epoch = 0; epoch < 3; ++epoch) epochs_by_workers[w].push_back(run_epoch(loader));
    EXPECT_EQ(loader.epoch(), 3u);
  }
  EXPECT_EQ(epochs_by_workers[0], epochs_by_workers[1]);
  EXPECT_EQ(epochs_by_workers[0], epochs_by_workers[2]);
  const auto& e = epochs_by_workers[0];
  EXPECT_NE(e[0], e[1]);
  EXPECT_NE(e[1], e[2]);
  for (const auto& epoch : e) {
    std::vector<int64_t> all;
    for (const auto& b : epoch) all.insert(all.end(), b.begin(), b.end());
    EXPECT_EQ(all.size(), 37u);
    std::vector<int64_t> sorted = all;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < 37; ++i) EXPECT_EQ(sorted[i], i);
    EXPECT_NE(all, sorted) << "shuffled";
  }
  // The epoch order is the RandomSampler's for that seed.
  data::RandomSampler sampler(11);
  std::vector<int64_t> first;
  for (const auto& b : e[0]) first.insert(first.end(), b.begin(), b.end());
  auto want = sampler.indices(37, 0);
  EXPECT_EQ(first, std::vector<int64_t>(want.begin(), want.end()));
  // Another seed, another order.
  auto ds = std::make_shared<CountingDataset>(37);
  data::DataLoader other(ds, data::DataLoaderOptions(5).shuffle(true).seed(12));
  EXPECT_NE(run_epoch(other), e[0]);
}

TEST(DataLoader, WorkerExceptionsReachTheConsumerInOrder) {
  for (size_t workers : {0, 1, 3}) {
    auto ds = std::make_shared<CountingDataset>(20, /*sleep_us=*/20, /*fail_at=*/13);
    data::DataLoader loader(ds, data::DataLoaderOptions(4).num_workers(workers));
    std::vector<std::vector<int64_t>> got;
    try {
      for (auto& b : loader) got.push_back(targets_of(b.target));
      ADD_FAILURE() << "no exception with " << workers << " workers";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "sample 13 is unreadable");
    }
    // Batches 0..2 arrived; batch 3 (samples 12..15) failed.
    EXPECT_EQ(got.size(), 3u) << workers << " workers";
    // The loader is usable again: a new epoch runs until the same failure.
    size_t before = 0;
    try {
      for (auto& b : loader) {
        (void)b;
        ++before;
      }
    } catch (const std::runtime_error&) {
    }
    EXPECT_EQ(before, 3u);
  }
}

TEST(DataLoader, EarlyDestructionAndRestartAreClean) {
  // A slow dataset: breaking out after one batch and destroying the loader must not wait for the
  // epoch, and the workers must not have run further ahead than the prefetch bound.
  auto ds = std::make_shared<CountingDataset>(4000, /*sleep_us=*/200);
  auto start = std::chrono::steady_clock::now();
  {
    data::DataLoader loader(ds, data::DataLoaderOptions(8).num_workers(3));  // prefetch 6 batches
    for (auto& b : loader) {
      (void)b;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let the workers fill the queue
      break;
    }
    // Consumed 1 batch, plus at most 6 ahead (ready or being built).
    EXPECT_LE(ds->calls.load(), 7u * 8u);
    EXPECT_GE(ds->calls.load(), 2u * 8u) << "workers should have prefetched";
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0) << "destruction waited for the epoch";  // the epoch would take ~40 s with 3 workers
  EXPECT_LE(ds->calls.load(), 7u * 8u);

  // Starting a new epoch mid-epoch stops the old one and runs the new one to the end.
  auto small = std::make_shared<CountingDataset>(30, /*sleep_us=*/20);
  data::DataLoader loader(small, data::DataLoaderOptions(4).num_workers(2).prefetch(3));
  size_t seen = 0;
  for (auto& b : loader) {
    (void)b;
    if (++seen == 2) break;
  }
  auto full = run_epoch(loader);
  EXPECT_EQ(full.size(), 8u);
  EXPECT_EQ(full[0], (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(loader.epoch(), 2u);
  // An iterator from a replaced epoch is at its end and refuses to move.
  auto it = loader.begin();
  auto stale = it;
  loader.begin();
  EXPECT_TRUE(stale == loader.end());
  EXPECT_THROW(*stale, tensor::Error);
  EXPECT_THROW(++stale, tensor::Error);
}

TEST(DataLoader, SeekResumesAnEpochWithoutBuildingTheSkippedBatches) {
  // An uninterrupted run's epochs 0..2 (37 samples, batches of 5: 8 batches, the last of 2).
  auto ds = std::make_shared<CountingDataset>(37, /*sleep_us=*/20);
  data::DataLoader straight(ds, data::DataLoaderOptions(5).shuffle(true).seed(3));
  using Batches = std::vector<std::vector<int64_t>>;
  std::vector<Batches> want;
  for (int e = 0; e < 3; ++e) want.push_back(run_epoch(straight));
  for (size_t workers : {0, 1, 3}) {
    for (size_t batch : {0, 1, 5, 7, 8}) {
      // A fresh loader, as in a resumed process: epoch 1 from `batch` on, then epoch 2.
      data::DataLoader resumed(ds, data::DataLoaderOptions(5).shuffle(true).seed(3).num_workers(workers));
      resumed.seek(1, batch);
      EXPECT_EQ(resumed.epoch(), 1u);
      ds->calls = 0;
      auto rest = run_epoch(resumed);
      EXPECT_EQ(rest, Batches(want[1].begin() + static_cast<long>(batch), want[1].end()))
          << workers << " workers, batch " << batch;
      size_t built = 0;
      for (const auto& b : rest) built += b.size();
      EXPECT_EQ(ds->calls.load(), built) << "skipped batches were built";
      EXPECT_EQ(resumed.epoch(), 2u);
      EXPECT_EQ(run_epoch(resumed), want[2]);
    }
  }
  // Seeking mid-epoch stops the epoch in progress; then the sought epoch runs.
  data::DataLoader loader(ds, data::DataLoaderOptions(5).shuffle(true).seed(3).num_workers(2));
  auto it = loader.begin();
  loader.seek(0, 6);
  EXPECT_TRUE(it == loader.end());
  EXPECT_EQ(run_epoch(loader), Batches(want[0].begin() + 6, want[0].end()));
  // Past the last batch: begin() throws, and the loader goes on from the following epoch.
  loader.seek(2, 9);
  expect_error([&] { loader.begin(); }, {"seek to batch 9 of epoch 2", "only 8 batches"});
  EXPECT_EQ(loader.epoch(), 3u);
  data::RandomSampler sampler(3);
  auto order = sampler.indices(37, 3);
  EXPECT_EQ(run_epoch(loader)[0], std::vector<int64_t>(order.begin(), order.begin() + 5));
}

TEST(DataLoader, OptionsAndSamplersAreChecked) {
  auto ds = std::make_shared<CountingDataset>(5);
  EXPECT_THROW(data::DataLoader(ds, data::DataLoaderOptions(0)), tensor::Error);
  EXPECT_THROW(data::DataLoader(nullptr, data::DataLoaderOptions(1)), tensor::Error);
  struct BadSampler : data::Sampler {
    std::vector<size_t> indices(size_t size, uint64_t) override { return {0, size}; }
  };
  data::DataLoader loader(ds, std::make_shared<BadSampler>(), data::DataLoaderOptions(1));
  expect_error([&] { loader.begin(); }, {"sampler returned index 5", "5 samples"});
  // A custom sampler: every other sample, backwards.
  struct EveryOther : data::Sampler {
    std::vector<size_t> indices(size_t size, uint64_t) override {
      std::vector<size_t> v;
      for (size_t i = size; i-- > 0;)
        if (i % 2 == 0) v.push_back(i);
      return v;
    }
  };
  data::DataLoader custom(ds, std::make_shared<EveryOther>(), data::DataLoaderOptions(2).num_workers(1));
  EXPECT_EQ(run_epoch(custom), (std::vector<std::vector<int64_t>>{{4, 2}, {0}}));
  // make_data_loader takes the dataset by value and batches it as libtorch's does: without a
  // Stack mapped, a batch is a std::vector of examples (tests/test_port_data.cpp has the rest).
  auto owned = data::make_data_loader(data::TensorDataset(tensor::arange(6).reshape({3, 2}), tensor::arange(3)),
                                      data::DataLoaderOptions(2));
  size_t rows = 0, batches = 0;
  for (auto& b : *owned) {
    rows += b.size();
    ++batches;
  }
  EXPECT_EQ(batches, 2u);
  EXPECT_EQ(rows, 3u);
}
