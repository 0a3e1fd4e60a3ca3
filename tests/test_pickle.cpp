// tensor::pickle_load and tensor::load of files written by Python's torch.save: the fixtures of
// tests/reference/torch_save.py (zip and legacy formats, written by PyTorch 2.15), a model
// trained in Python whose outputs must match PyTorch's, and hostile inputs built by hand.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "tensor/tensor.h"
#include "tests/temp_dir_util.h"
#include "tests/test_util.h"

using namespace tensor;
using tensor::testing::expect_error;

namespace {

const std::string kRef = TENSOR_TEST_REFERENCE_DIR "/torch_save/";

struct Net : nn::Module {
  Net()
      : fc1(register_module("fc1", nn::Linear(4, 8))),
        bn(register_module("bn", nn::BatchNorm1d(8))),
        fc2(register_module("fc2", nn::Linear(8, 2))) {}
  Tensor forward(Tensor x) { return fc2(relu(bn(fc1(x)))); }
  nn::Linear fc1;
  nn::BatchNorm1d bn;
  nn::Linear fc2;
};

std::vector<char> read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << path;
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

std::string write_bytes(const std::string& name, const std::string& bytes) {
  std::string path = tensor::testing::temp_path(name);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

const Tensor& at(const PickleValue& dict, const std::string& key) {
  const PickleValue* v = dict.find(key);
  EXPECT_NE(v, nullptr) << key;
  return v->to_tensor();
}

// ---- the fixtures ----

class TorchSave : public ::testing::TestWithParam<std::string> {};  // "" (zip) or "_legacy"

TEST_P(TorchSave, DtypesMatchTheirFormulas) {
  PickleValue v = pickle_load_file(kRef + "mixed" + GetParam() + ".pt");
  const PickleValue& d = *v.find("dtypes");
  Tensor k = arange(-3, 3, TensorOptions().dtype(kFloat64));  // what the script used: -3..2
  struct Case {
    const char* name;
    ScalarType dtype;
    Tensor want;
  };
  const Case cases[] = {
      {"f32", kFloat32, k * 0.5},   {"f64", kFloat64, k * 0.5}, {"f16", kFloat16, k * 0.5},
      {"bf16", kBFloat16, k * 0.5}, {"i8", kInt8, k},           {"i16", kInt16, k},
      {"i32", kInt32, k},           {"i64", kInt64, k},         {"u8", kUInt8, k + 3},
  };
  for (const auto& c : cases) {
    const Tensor& t = at(d, c.name);
    EXPECT_EQ(t.scalar_type(), c.dtype) << c.name;
    EXPECT_EQ(t.sizes().vec(), std::vector<int64_t>{6}) << c.name;
    EXPECT_TRUE(t.to(kFloat64).equal(c.want)) << c.name << ": " << t;
  }
  for (auto [name, dtype] : {std::pair{"c64", kComplex64}, std::pair{"c128", kComplex128}}) {
    const Tensor& t = at(d, name);
    EXPECT_EQ(t.scalar_type(), dtype);
    EXPECT_TRUE(t.real().to(kFloat64).equal(k)) << name;
    EXPECT_TRUE(t.imag().to(kFloat64).equal(k * -0.5)) << name;
  }
  const Tensor& b = at(d, "bool");
  EXPECT_EQ(b.scalar_type(), kBool);
  EXPECT_TRUE(b.equal(tensor::tensor({false, true, false, true, false, true})));  // -3..2 even
}

TEST_P(TorchSave, ViewsKeepTheirStridesOffsetsAndSharedStorage) {
  PickleValue v = pickle_load_file(kRef + "mixed" + GetParam() + ".pt");
  const Tensor& tr = at(v, "transposed");
  EXPECT_EQ(tr.sizes().vec(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(tr.strides().vec(), (std::vector<int64_t>{1, 4}));
  EXPECT_TRUE(tr.equal(arange(12, TensorOptions().dtype(kFloat32)).reshape({3, 4}).t()));

  const Tensor& sl = at(v, "sliced");
  EXPECT_EQ(sl.storage_offset(), 3);
  EXPECT_TRUE(sl.equal(arange(3, 7)));

  const Tensor& ex = at(v, "expanded");
  EXPECT_EQ(ex.strides().vec(), (std::vector<int64_t>{0, 1}));
  EXPECT_TRUE(ex.equal(tensor::tensor({1.5f, -2.0f}).expand({3, 2})));

  // Two views of one storage in Python are two views of one storage here.
  const Tensor& a = at(v, "shared_a");
  const Tensor& b = at(v, "shared_b");
  EXPECT_TRUE(a.equal(arange(2, 6, TensorOptions().dtype(kFloat64))));
  EXPECT_TRUE(b.equal(arange(8, TensorOptions().dtype(kFloat64)).view({2, 4})));
  EXPECT_EQ(a.data_ptr<double>(), b.data_ptr<double>() + 2);
  b.view({8}).narrow(0, 3, 1).fill_(-1.0);
  EXPECT_EQ(a[1].item<double>(), -1.0);

  const Tensor& p = at(v, "param");  // a Parameter: requires_grad survives
  EXPECT_TRUE(p.requires_grad());
  EXPECT_TRUE(p.equal(tensor::tensor({0.25f, 0.5f})));
  EXPECT_FALSE(tr.requires_grad());

  const Tensor& s = at(v, "scalar");
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<double>(), 3.25);
  EXPECT_EQ(at(v, "empty").sizes().vec(), (std::vector<int64_t>{0, 3}));
}

TEST_P(TorchSave, PlainValues) {
  PickleValue v = pickle_load_file(kRef + "mixed" + GetParam() + ".pt");
  const auto& vals = v.find("values")->to_list();
  ASSERT_EQ(vals.size(), 8u);
  EXPECT_EQ(vals[0].to_int(), 1);
  EXPECT_EQ(vals[1].to_int(), -2);
  EXPECT_EQ(vals[2].to_int(), int64_t{1} << 40);
  EXPECT_EQ(vals[3].to_double(), 0.125);
  EXPECT_EQ(vals[4].to_string(), "text");
  EXPECT_TRUE(vals[5].to_bool());
  EXPECT_TRUE(vals[6].is_none());
  EXPECT_EQ(vals[7].kind(), PickleValue::Kind::Tuple);
  EXPECT_EQ(vals[7].to_list()[0].to_int(), 7);
  EXPECT_EQ(vals[7].to_list()[1].to_string(), "x");
  const PickleValue& nested = *v.find("nested");
  EXPECT_EQ(nested.find("epoch")->to_int(), 3);
  EXPECT_EQ(nested.find("lr")->to_double(), 1e-3);
  EXPECT_EQ(v.find("absent"), nullptr);
  expect_error([&] { vals[4].to_int(); }, {"expected an int", "str"});
}

TEST_P(TorchSave, ModelTrainedInPythonGivesPyTorchsOutputs) {
  PickleValue mixed = pickle_load_file(kRef + "mixed" + GetParam() + ".pt");
  auto net = std::make_shared<Net>();
  tensor::load(net, kRef + "mlp" + GetParam() + ".pt");
  // The parameters and buffers are the file's, bit for bit (PyTorch orders a state_dict module
  // by module, libtensor parameters before buffers: the names match, the order need not).
  auto file_sd = state_dict_from(*mixed.find("state_dict"));
  auto own = net->state_dict();
  ASSERT_EQ(file_sd.size(), own.size());
  EXPECT_EQ(file_sd[0].first, "fc1.weight");
  for (const auto& [name, t] : file_sd) {
    const Tensor* mine = own.find(name);
    ASSERT_NE(mine, nullptr) << name;
    EXPECT_TRUE(mine->equal(t)) << name;
  }
  EXPECT_GT(net->bn->num_batches_tracked.item<int64_t>(), 0);
  net->eval();
  NoGradGuard g;
  Tensor y = net->forward(at(mixed, "input"));
  const Tensor& want = at(mixed, "output");
  EXPECT_TRUE(y.allclose(want, 1e-5, 1e-6)) << y << want;
}

INSTANTIATE_TEST_SUITE_P(Formats, TorchSave, ::testing::Values("", "_legacy"), [](const auto& info) {
  return info.param.empty() ? std::string("Zip") : std::string("Legacy");
});

TEST(Pickle, Protocol5StateDictMatchesProtocol2) {
  auto a = std::make_shared<Net>(), b = std::make_shared<Net>();
  tensor::load(a, kRef + "mlp.pt");
  tensor::load(b, kRef + "mlp_proto5.pt");
  auto sa = a->state_dict(), sb = b->state_dict();
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i) EXPECT_TRUE(sa[i].value().equal(sb[i].value())) << sa[i].key();
}

TEST(Pickle, LoadTensorAndTensorList) {
  Tensor t;
  tensor::load(t, kRef + "tensor.pt");
  EXPECT_TRUE(t.equal(arange(6, TensorOptions().dtype(kInt32)).reshape({2, 3})));
  std::vector<Tensor> ts;
  tensor::load(ts, kRef + "list.pt");
  ASSERT_EQ(ts.size(), 2u);
  EXPECT_TRUE(ts[0].equal(ones({2})));
  EXPECT_TRUE(ts[1].equal(arange(3)));
  // pickle_load of the bytes agrees with the file reader.
  PickleValue v = pickle_load(read_all(kRef + "tensor.pt"));
  EXPECT_TRUE(v.to_tensor().equal(t));
}

TEST(Pickle, WrongKindsOfFileForTheLoad) {
  auto net = std::make_shared<Net>();
  expect_error([&] { tensor::load(net, kRef + "tensor.pt"); }, {"expected a state_dict", "tensor"});
  expect_error([&] { tensor::load(net, kRef + "mixed.pt"); }, {"'state_dict' is a dict, not a tensor", "checkpoint"});
  Tensor t;
  expect_error([&] { tensor::load(t, kRef + "mlp.pt"); }, {"holds a dict, not a tensor"});
  std::vector<Tensor> ts;
  expect_error([&] { tensor::load(ts, kRef + "mlp.pt"); }, {"not a list of tensors"});
  // io::load stays a safetensors reader and says where .pt files go.
  expect_error([&] { io::load(kRef + "mlp.pt"); }, {".pt file", "tensor::load"});
  expect_error([&] { jit::load(kRef + "mlp.pt"); }, {"TorchScript is not supported", "state_dict"});
  // A torch.jit.save archive is recognized and refused with the same advice.
  expect_error([&] { tensor::load(net, kRef + "scripted.pt"); }, {"TorchScript archive", "state_dict()"});
  expect_error([&] { pickle_load_file(kRef + "scripted.pt"); }, {"TorchScript archive"});
}

// ---- hostile inputs ----

// A string literal's bytes, embedded zeros included.
template <size_t N>
std::string B(const char (&s)[N]) {
  return std::string(s, N - 1);
}

std::string le(uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}
std::string X(const std::string& s) { return "X" + le(s.size(), 4) + s; }
std::string I64(int64_t v) { return "\x8a\x08" + le(static_cast<uint64_t>(v), 8); }
std::string tuple_of(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (int64_t x : v) s += I64(x);
  return s + "t";
}

// One float32 tensor over storage "0" of `numel` elements, pickled as torch.save does.
std::string tensor_pickle(int64_t numel, int64_t offset, const std::vector<int64_t>& size,
                          const std::vector<int64_t>& stride, const std::string& storage = "FloatStorage") {
  return B("\x80\x02"
           "ctorch._utils\n_rebuild_tensor_v2\n((") +
         X("storage") + "ctorch\n" + storage + "\n" + X("0") + X("cpu") + I64(numel) + "NtQ" + I64(offset) +
         tuple_of(size) + tuple_of(stride) + "\x89}tR.";
}

// A legacy torch.save file around `main`, storing storage "0" with `count` elements and `bytes`.
std::string legacy_file(const std::string& main, uint64_t count, const std::string& bytes) {
  std::string magic = B("\x80\x02\x8a\x0a") + B("\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19") + ".";
  std::string version = B("\x80\x02M\xe9\x03.");
  std::string info = B("\x80\x02}.");
  std::string keys = B("\x80\x02]") + X("0") + "a.";
  return magic + version + info + main + keys + le(count, 8) + bytes;
}

std::string floats(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.begin(), s.size());
  return s;
}

PickleValue load_bytes(const std::string& b) { return pickle_load(b.data(), b.size(), "test"); }

TEST(PickleHostile, HandBuiltLegacyFileLoads) {
  // The builder itself is right: a 2x2 transposed view at offset 1 of a 5-element storage.
  PickleValue v = load_bytes(legacy_file(tensor_pickle(5, 1, {2, 2}, {1, 2}), 5, floats({0, 1, 2, 3, 4})));
  EXPECT_TRUE(v.to_tensor().equal(tensor::tensor({1.f, 2.f, 3.f, 4.f}).view({2, 2}).t()));
}

TEST(PickleHostile, OffsetsAndSizesOutsideTheStorage) {
  const std::string data = floats({0, 1, 2, 3});
  expect_error([&] { load_bytes(legacy_file(tensor_pickle(4, 2, {4}, {1}), 4, data)); },
               {"reads element 5", "storage '0' has 4"});
  expect_error([&] { load_bytes(legacy_file(tensor_pickle(4, 0, {2, 2}, {3, 1}), 4, data)); }, {"reads element 4"});
  expect_error(
      [&] {
        load_bytes(legacy_file(tensor_pickle(4, 0, {int64_t{1} << 62, 4}, {1, 1}), 4, data));
      },
      {"overflows"});
  expect_error([&] { load_bytes(legacy_file(tensor_pickle(4, 0, {3}, {int64_t{1} << 62}), 4, data)); }, {"overflows"});
  expect_error([&] { load_bytes(legacy_file(tensor_pickle(4, 0, {2}, {-1}), 4, data)); }, {"non-negative"});
  expect_error([&] { load_bytes(legacy_file(tensor_pickle(4, 9, {0}, {1}), 4, data)); }, {"offset 9 is beyond"});
  // A huge storage is refused before anything is allocated: the bytes are not in the file.
  expect_error([&] { load_bytes(legacy_file(tensor_pickle(int64_t{1} << 40, 0, {1}, {1}), uint64_t{1} << 40, data)); },
               {"needs 4398046511104 bytes", "truncated"});
  expect_error([&] { load_bytes(legacy_file(tensor_pickle(int64_t{1} << 62, 0, {1}, {1}), uint64_t{1} << 62, data)); },
               {"overflows"});
  // The element count stored beside the data must be the one the pickle named.
  expect_error([&] { load_bytes(legacy_file(tensor_pickle(4, 0, {1}, {1}), 3, data)); },
               {"named with 4", "stored with 3"});
  expect_error([&] { load_bytes(legacy_file(tensor_pickle(4, 0, {1}, {1}, "QInt8Storage"), 4, data)); },
               {"torch.QInt8Storage", "not allowed"});
}

TEST(PickleHostile, EveryTruncationThrows) {
  for (const char* name : {"mlp.pt", "mlp_legacy.pt"}) {
    std::vector<char> full = read_all(kRef + name);
    for (size_t n = 0; n < full.size(); ++n) {
      bool threw = false;
      try {
        pickle_load(full.data(), n, "truncated");
      } catch (const Error&) {
        threw = true;
      }
      EXPECT_TRUE(threw) << name << " cut to " << n << " bytes loaded";
    }
  }
}

TEST(PickleHostile, SingleByteCorruptionsLoadOrThrow) {
  // Every byte of both formats, three replacement values each: a load succeeds or raises
  // tensor::Error (anything else fails the test; a crash ends it).
  size_t loaded = 0, refused = 0;
  for (const char* name : {"mlp.pt", "mlp_legacy.pt"}) {
    const std::vector<char> full = read_all(kRef + name);
    for (size_t i = 0; i < full.size(); ++i) {
      for (unsigned char x : {0x00, 0xff, 0x80}) {
        std::vector<char> b = full;
        if (static_cast<unsigned char>(b[i]) == x) continue;
        b[i] = static_cast<char>(x);
        try {
          pickle_load(b);
          ++loaded;
        } catch (const Error&) {
          ++refused;
        }
      }
    }
  }
  EXPECT_GT(refused, 0u);
  EXPECT_GT(loaded, 0u);  // tensor data bytes may change freely
}

TEST(PickleHostile, UnknownGlobalsAreNamed) {
  expect_error(
      [] {
        load_bytes(B("\x80\x02"
                     "cos\nsystem\n") +
                   X("ls") + B("\x85R."));
      },
      {"'os.system' is not allowed", "runs no code"});
  expect_error(
      [] {
        load_bytes(
            B("\x80\x04"
              "\x8c\x08__main__\x8c\x03Net\x93)\x81."));
      },
      {"'__main__.Net'", "state_dict()"});
  expect_error(
      [] {
        load_bytes(
            B("\x80\x02"
              "cbuiltins\neval\n."));
      },
      {"builtins.eval"});
  expect_error(
      [] {
        load_bytes(
            B("\x80\x02"
              "c__torch__.Net\nfoo\n."));
      },
      {"TorchScript"});
}

TEST(PickleHostile, MalformedPickles) {
  const std::string deep = B("\x80\x02") + std::string(100000, ']') + std::string(99999, 'a') + ".";
  expect_error([&] { load_bytes(deep); }, {"nests deeper than 512"});
  expect_error(
      [] {
        load_bytes(
            B("\x80\x02]q\x00h\x00"
              "a."));
      },
      {"contains itself"});
  expect_error([] { load_bytes(B("\x80\x02h\x05.")); }, {"memo entry 5"});
  expect_error(
      [] {
        load_bytes(
            B("\x80\x02"
              "a."));
      },
      {"needs more values"});
  expect_error(
      [] {
        load_bytes(
            B("\x80\x02"
              "e."));
      },
      {"no MARK"});
  expect_error([] { load_bytes(B("\x80\x02NN.")); }, {"STOP with 2 values"});
  expect_error(
      [] {
        load_bytes(
            B("\x80\x02X\xff\xff\xff\x7f"
              "abc"));
      },
      {"truncated"});
  expect_error([] { load_bytes(B("\x80\x02\x8b\xff\xff\xff\xff.")); }, {"truncated"});
  expect_error(
      [] {
        load_bytes(
            B("\x80\x02"
              "I1\n."));
      },
      {"opcode 0x49 ('I')", "not supported"});
  expect_error([] { load_bytes(B("\x80\x09N.")); }, {"protocol 9"});
  expect_error([] { load_bytes(B("\x80\x02\x8a\x09") + std::string(9, '\x01') + "."); }, {"does not fit in 64 bits"});
  expect_error([] { load_bytes(B("\x80\x02(") + X("storage") + "N" + X("0") + X("cpu") + B("K\x01tQ.")); },
               {"persistent id", "outside"});
  expect_error([] { load_bytes("{\"a\": 1}"); }, {"not a torch.save file"});
  expect_error([] { load_bytes(""); }, {"not a torch.save file"});
  // Float dict keys: 2.0 and 2 are one key, as in Python; a huge float is a key of its own.
  PickleValue keys = load_bytes(B("\x80\x02}(G\x40\x00\x00\x00\x00\x00\x00\x00K\x01K\x02K\x02G\x4e\x80\x00\x00\x00\x00\x00\x00K\x03u."));
  ASSERT_EQ(keys.to_dict().size(), 2u);
  EXPECT_EQ(keys.to_dict()[0].first.to_double(), 2.0);
  EXPECT_EQ(keys.to_dict()[0].second.to_int(), 2);
  EXPECT_EQ(keys.to_dict()[1].second.to_int(), 3);
  // A plain pickle without tensors is fine.
  PickleValue v = load_bytes(B("\x80\x02}(") + X("a") + B("K\x01") + X("a") + B("K\x02u."));
  EXPECT_EQ(v.to_dict().size(), 1u);  // a key set twice keeps its last value, as in Python
  EXPECT_EQ(v.find("a")->to_int(), 2);
}

TEST(PickleHostile, CorruptZipArchives) {
  std::vector<char> full = read_all(kRef + "mlp.pt");
  std::string zip(full.begin(), full.end());
  expect_error([&] { load_bytes(zip.substr(0, 30)); }, {"corrupt zip archive", "end-of-central-directory"});
  // The end record's central-directory offset (bytes 16..19 of the last 22) pointing far away.
  std::string far = zip;
  size_t eocd = far.size() - 22;
  ASSERT_EQ(far.substr(eocd, 4), std::string("PK\x05\x06", 4));
  far.replace(eocd + 16, 4, le(0xfffffff0u, 4));
  expect_error([&] { load_bytes(far); }, {"corrupt zip archive"});
  // A storage whose data entry is missing.
  std::string renamed = zip;
  size_t pos = renamed.rfind("/data/0");
  ASSERT_NE(pos, std::string::npos);
  renamed[pos + 6] = 'x';
  expect_error([&] { load_bytes(renamed); }, {"storage '0'"});
}

}  // namespace
