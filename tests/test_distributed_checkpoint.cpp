// Distributed checkpoint: save on 2 ranks, load on 3, 2 and 1 (resharding, including a
// tensor sharded along dim 1 at save and along dim 0 at load), the metadata's contents, a
// save killed or failed midway (the previous checkpoint still loads with its old values),
// inconsistent shards at save and dtype / shape / key mismatches at load.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tensor/distributed/checkpoint.h"
#include "tests/distributed_harness.h"
#include "tests/temp_dir_util.h"

using namespace tensor;
namespace dist = tensor::distributed;
namespace dcp = tensor::distributed::checkpoint;
namespace fs = std::filesystem;
using std::chrono::milliseconds;

namespace {

std::shared_ptr<dist::ProcessGroup> init(int rank, int world, milliseconds timeout = milliseconds(20000)) {
  return dist::init_process_group("gloo", rank, world, dist_test::init_method(), timeout);
}

// The checkpoint directory, chosen by the test in the parent and inherited by the ranks.
std::string ckpt_dir() { return dist_test::env_or("DCP_TEST_DIR", ""); }
// The version of the values a scenario saves or expects (1, 2, ...).
int version() { return std::atoi(dist_test::env_or("DCP_TEST_VERSION", "1").c_str()); }

// The global tensors of version v, computable on any rank:
//   "w"    [7, 3] float32, sharded by rows
//   "grid" [4, 6] float64, sharded by columns at save
//   "bias" [5] float32, whole (replicated)
//   "step" [] int64, whole
//   "flat" [12] float32: a [3, 4] parameter flattened and split by element ranges, as FSDP's
//          flat shards map onto ShardedTensor::rows
Tensor global_w(int v) { return (arange(21, kFloat32).reshape({7, 3}) * 0.5 + v * 100).contiguous(); }
Tensor global_grid(int v) { return (arange(24, kFloat64).reshape({4, 6}) * -1.25 + v * 1000).contiguous(); }
Tensor global_bias(int v) { return (arange(5, kFloat32) + v * 10).contiguous(); }
Tensor global_step(int v) { return full({}, 41 + v, TensorOptions().dtype(kInt64)); }
Tensor global_flat(int v) { return (arange(12, kFloat32) * 3 - v).contiguous(); }

// Rows [begin, end) of n split over `world` ranks as evenly as possible (the first ranks get
// the extra rows): 7 over 2 -> 4, 3; 7 over 3 -> 3, 2, 2.
std::pair<int64_t, int64_t> even_split(int64_t n, int world, int rank) {
  int64_t base = n / world, extra = n % world;
  int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

// The state dict a rank saves: w by rows, grid by columns, bias and step whole.
dcp::StateDict saved_state(int rank, int world, int v) {
  auto [r0, r1] = even_split(7, world, rank);
  auto [c0, c1] = even_split(6, world, rank);
  dcp::StateDict sd;
  sd["w"] = dcp::ShardedTensor::rows(global_w(v).narrow(0, r0, r1 - r0).clone(), r0, {7, 3});
  sd["grid"] = dcp::ShardedTensor(global_grid(v).narrow(1, c0, c1 - c0).clone(), {0, c0}, {4, 6});
  sd["bias"] = global_bias(v);
  sd["step"] = global_step(v);
  auto [f0, f1] = even_split(12, world, rank);
  sd["flat"] = dcp::ShardedTensor::rows(global_flat(v).narrow(0, f0, f1 - f0).clone(), f0, {12});
  return sd;
}

std::string detail_shape(const Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

void expect_equal(const Tensor& got, const Tensor& want, const std::string& what) {
  DIST_CHECK(got.sizes() == want.sizes(), what << ": shape " << detail_shape(got) << " vs " << detail_shape(want));
  auto g = dist_test::values(got), w = dist_test::values(want);
  for (size_t i = 0; i < g.size(); ++i) DIST_CHECK(g[i] == w[i], what << ": element " << i << " is " << g[i] << ", expected " << w[i]);
}

// Loads into fresh tensors resharded for `world` ranks (w and grid both by rows) and checks
// them against version v.
void load_and_check(int rank, int world, int v, std::shared_ptr<dist::ProcessGroup> pg) {
  auto [r0, r1] = even_split(7, world, rank);
  auto [g0, g1] = even_split(4, world, rank);
  Tensor w = full({r1 - r0, 3}, -1.0, kFloat32);
  Tensor grid = full({g1 - g0, 6}, -1.0, kFloat64);
  Tensor bias = zeros({5}, kFloat32);
  Tensor step = zeros({}, TensorOptions().dtype(kInt64));
  auto [f0, f1] = even_split(12, world, rank);
  Tensor flat = zeros({f1 - f0}, kFloat32);
  dcp::StateDict sd;
  sd["flat"] = dcp::ShardedTensor::rows(flat, f0, {12});
  sd["w"] = dcp::ShardedTensor::rows(w, r0, {7, 3});
  sd["grid"] = dcp::ShardedTensor::rows(grid, g0, {4, 6});
  sd["bias"] = bias;
  sd["step"] = step;
  dcp::load(sd, ckpt_dir(), pg);
  expect_equal(w, global_w(v).narrow(0, r0, r1 - r0), "w rows of rank " + std::to_string(rank));
  expect_equal(grid, global_grid(v).narrow(0, g0, g1 - g0), "grid rows of rank " + std::to_string(rank));
  expect_equal(bias, global_bias(v), "bias");
  expect_equal(step, global_step(v), "step");
  expect_equal(flat, global_flat(v).narrow(0, f0, f1 - f0), "flat elements of rank " + std::to_string(rank));
}

}  // namespace

DIST_SCENARIO(dcp_save) {
  auto pg = init(rank, world);
  dcp::save(saved_state(rank, world, version()), ckpt_dir(), pg);
}

DIST_SCENARIO(dcp_load) {
  auto pg = init(rank, world);
  load_and_check(rank, world, version(), pg);
}

// Whole tensors take a whole saved tensor, whatever its sharding.
DIST_SCENARIO(dcp_load_whole) {
  Tensor w = zeros({7, 3}, kFloat32), grid = zeros({4, 6}, kFloat64);
  dcp::StateDict sd{{"w", w}, {"grid", grid}};
  dcp::load(sd, ckpt_dir());
  expect_equal(w, global_w(version()), "whole w");
  expect_equal(grid, global_grid(version()), "whole grid");
}

namespace {

struct DcpTest : ::testing::Test {
  std::string dir;
  void SetUp() override {
    dir = tensor::testing::temp_path(::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    ::setenv("DCP_TEST_DIR", dir.c_str(), 1);
    set_version(1);
  }
  void set_version(int v) { ::setenv("DCP_TEST_VERSION", std::to_string(v).c_str(), 1); }
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    for (const auto& f : fs::directory_iterator(dir)) out.push_back(f.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

}  // namespace

TEST_F(DcpTest, SaveOnTwoRanksLoadsOnThreeTwoAndOne) {
  dist_test::expect_all_ok("dcp_save", 2, 60);
  EXPECT_EQ(files(), (std::vector<std::string>{".metadata", "__0_0.g1.safetensors", "__1_0.g1.safetensors"}));
  dist_test::expect_all_ok("dcp_load", 3, 60);
  dist_test::expect_all_ok("dcp_load", 2, 60);
  dist_test::expect_all_ok("dcp_load", 1, 60);
  dist_test::expect_all_ok("dcp_load_whole", 1, 60);
}

TEST_F(DcpTest, MetadataRecordsEveryChunk) {
  dist_test::expect_all_ok("dcp_save", 2, 60);
  dcp::Metadata m = dcp::read_metadata(dir);
  EXPECT_EQ(m.generation, 1);
  EXPECT_EQ(m.world_size, 2);
  ASSERT_EQ(m.tensors.size(), 5u);
  const auto& w = m.tensors.at("w");
  EXPECT_EQ(w.dtype, kFloat32);
  EXPECT_EQ(w.global_shape, (std::vector<int64_t>{7, 3}));
  ASSERT_EQ(w.chunks.size(), 2u);
  EXPECT_EQ(w.chunks[0].file, "__0_0.g1.safetensors");
  EXPECT_EQ(w.chunks[0].offsets, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(w.chunks[0].sizes, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(w.chunks[1].file, "__1_0.g1.safetensors");
  EXPECT_EQ(w.chunks[1].offsets, (std::vector<int64_t>{4, 0}));
  EXPECT_EQ(w.chunks[1].sizes, (std::vector<int64_t>{3, 3}));
  const auto& grid = m.tensors.at("grid");
  EXPECT_EQ(grid.dtype, kFloat64);
  ASSERT_EQ(grid.chunks.size(), 2u);
  EXPECT_EQ(grid.chunks[1].offsets, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(grid.chunks[1].sizes, (std::vector<int64_t>{4, 3}));
  // A whole tensor is stored once, by rank 0.
  const auto& bias = m.tensors.at("bias");
  ASSERT_EQ(bias.chunks.size(), 1u);
  EXPECT_EQ(bias.chunks[0].file, "__0_0.g1.safetensors");
  EXPECT_EQ(m.tensors.at("step").dtype, kInt64);
  EXPECT_TRUE(m.tensors.at("step").global_shape.empty());
  // Each shard file is a plain safetensors file holding exactly its rank's pieces.
  auto f1 = io::load(dir + "/__1_0.g1.safetensors");
  ASSERT_EQ(f1.size(), 3u);
  EXPECT_EQ(f1[0].first, "flat");
  EXPECT_TRUE(f1[0].second.equal(global_flat(1).narrow(0, 6, 6)));
  EXPECT_EQ(f1[1].first, "grid");
  EXPECT_TRUE(f1[1].second.equal(global_grid(1).narrow(1, 3, 3)));
  EXPECT_EQ(f1[2].first, "w");
  EXPECT_TRUE(f1[2].second.equal(global_w(1).narrow(0, 4, 3)));
}

// A second save replaces the first: new generation, old files removed, new values load.
TEST_F(DcpTest, SecondSaveReplacesTheFirst) {
  dist_test::expect_all_ok("dcp_save", 2, 60);
  set_version(2);
  dist_test::expect_all_ok("dcp_save", 3, 60);
  EXPECT_EQ(files(), (std::vector<std::string>{".metadata", "__0_0.g2.safetensors", "__1_0.g2.safetensors",
                                               "__2_0.g2.safetensors"}));
  dist_test::expect_all_ok("dcp_load", 2, 60);
}

// Rank 1 is killed after writing its new shard, before the commit: rank 0 raises (no hang),
// the directory keeps the old metadata, and the old values still load. The next save
// succeeds and removes the leftovers.
DIST_SCENARIO(dcp_save_rank_killed) {
  auto pg = init(rank, world, milliseconds(3000));
  dcp::detail::set_save_fault_hook([](const std::string& phase, int r) {
    if (phase == "after_write" && r == 1) ::_exit(7);
  });
  try {
    dcp::save(saved_state(rank, world, version()), ckpt_dir(), pg);
  } catch (const Error& e) {
    DIST_CHECK(std::string(e.what()).find("ProcessGroupGloo") != std::string::npos, e.what());
    return;
  }
  DIST_CHECK(false, "rank " << rank << ": save succeeded although rank 1 died");
}

TEST_F(DcpTest, RankKilledMidSaveLeavesThePreviousCheckpoint) {
  dist_test::expect_all_ok("dcp_save", 2, 60);
  set_version(2);
  auto codes = dist_test::run_ranks("dcp_save_rank_killed", 2, 60);
  EXPECT_EQ(codes[0], 0);
  EXPECT_EQ(codes[1], 7);
  // Both new shards were written (the crash came after), but the metadata is the old one.
  auto names = files();
  EXPECT_NE(std::find(names.begin(), names.end(), "__1_0.g2.safetensors"), names.end());
  EXPECT_EQ(dcp::read_metadata(dir).generation, 1);
  set_version(1);
  dist_test::expect_all_ok("dcp_load", 3, 60);
  // The next save commits generation 2 and leaves only its own files.
  set_version(3);
  dist_test::expect_all_ok("dcp_save", 2, 60);
  EXPECT_EQ(files(), (std::vector<std::string>{".metadata", "__0_0.g2.safetensors", "__1_0.g2.safetensors"}));
  dist_test::expect_all_ok("dcp_load", 1, 60);
}

// Rank 0 fails right before renaming the metadata into place: every rank raises naming the
// commit, and the previous checkpoint is intact.
DIST_SCENARIO(dcp_save_commit_fails) {
  auto pg = init(rank, world);
  dcp::detail::set_save_fault_hook([](const std::string& phase, int) {
    if (phase == "before_commit") throw std::runtime_error("injected failure before the commit");
  });
  try {
    dcp::save(saved_state(rank, world, version()), ckpt_dir(), pg);
  } catch (const Error& e) {
    std::string msg = e.what();
    DIST_CHECK(msg.find("rank 0 failed to commit") != std::string::npos && msg.find("injected failure") != std::string::npos,
               msg);
    return;
  }
  DIST_CHECK(false, "rank " << rank << ": save succeeded although the commit failed");
}

TEST_F(DcpTest, FailedCommitLeavesThePreviousCheckpoint) {
  dist_test::expect_all_ok("dcp_save", 2, 60);
  set_version(2);
  dist_test::expect_all_ok("dcp_save_commit_fails", 2, 60);
  EXPECT_EQ(dcp::read_metadata(dir).generation, 1);
  set_version(1);
  dist_test::expect_all_ok("dcp_load", 2, 60);
}

// Shards that overlap or leave a gap, and ranks disagreeing on a key's shape: every rank
// raises the same error naming the key (nobody is left in a collective).
DIST_SCENARIO(dcp_save_inconsistent) {
  auto pg = init(rank, world);
  auto expect_error = [&](const dcp::StateDict& sd, const std::string& needle) {
    try {
      dcp::save(sd, ckpt_dir(), pg);
    } catch (const Error& e) {
      DIST_CHECK(std::string(e.what()).find(needle) != std::string::npos, "'" << e.what() << "' lacks '" << needle << "'");
      return;
    }
    DIST_CHECK(false, "no error (expected '" << needle << "')");
  };
  // Both ranks claim rows 0..3 of a 7-row tensor.
  expect_error({{"w", dcp::ShardedTensor::rows(zeros({4, 3}), 0, {7, 3})}}, "key 'w': the shards in __0_0.g1.safetensors");
  // Rows 0..2 and 4..6: row 3 is missing.
  expect_error({{"w", dcp::ShardedTensor::rows(zeros({3, 3}), rank == 0 ? 0 : 4, {7, 3})}},
               "key 'w': the shards of all ranks cover 18 of the 21 elements");
  // The ranks disagree on the global shape.
  expect_error({{"b", zeros({rank == 0 ? 5 : 6})}}, "key 'b' is float32 of global shape [5] on rank 0 but float32 of global shape [6] on rank 1");
  // A shard outside its global shape (only rank 1's is wrong; rank 0 hears of it).
  expect_error({{"w", dcp::ShardedTensor::rows(zeros({4, 3}), rank == 0 ? 0 : 4, {7, 3})}},
               "key 'w': the shard at offsets [4, 0] with shape [4, 3] does not fit in the global shape [7, 3]");
  pg->barrier()->wait();
}

TEST_F(DcpTest, InconsistentShardsRaiseOnEveryRank) {
  dist_test::expect_all_ok("dcp_save_inconsistent", 2, 60);
  EXPECT_FALSE(fs::exists(dir + "/.metadata"));
}

// Load errors name the key and what differs; nothing is written when a key fails.
TEST_F(DcpTest, LoadMismatchesNameTheKey) {
  dist_test::expect_all_ok("dcp_save", 2, 60);
  auto expect_error = [&](const dcp::StateDict& sd, const std::string& needle) {
    try {
      dcp::load(sd, dir);
      ADD_FAILURE() << "no error (expected '" << needle << "')";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error({{"bias", zeros({5}, kFloat64)}}, "key 'bias': the state dict's tensor is float64 but the checkpoint's is float32");
  expect_error({{"w", zeros({7, 4})}}, "key 'w': the state dict's tensor has global shape [7, 4] but the checkpoint's has [7, 3]");
  expect_error({{"w", dcp::ShardedTensor::rows(zeros({2, 3}), 0, {8, 3})}}, "key 'w': the state dict's tensor has global shape [8, 3]");
  expect_error({{"nope", zeros({1})}}, "key 'nope' is not in the checkpoint");
  // A good key next to a bad one stays untouched.
  Tensor bias = zeros({5});
  expect_error({{"bias", bias}, {"step", zeros({}, kFloat32)}}, "key 'step'");
  EXPECT_EQ(bias.abs().sum().item<double>(), 0.0);
  dcp::load({}, dir);  // an empty state dict loads nothing (and raises nothing)
}

TEST(DistributedCheckpoint, LoadWithoutCheckpointRaises) {
  try {
    dcp::load({{"x", zeros({1})}}, tensor::testing::temp_path("no_such_checkpoint"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no checkpoint in"), std::string::npos) << e.what();
  }
}

// A module's parameters round-trip through a single-process checkpoint, into another module.
TEST(DistributedCheckpoint, ModuleStateDictRoundTrip) {
  std::string dir = tensor::testing::temp_path("module_roundtrip");
  manual_seed(3);
  nn::Linear a(4, 3);
  nn::Linear b(4, 3);
  dcp::save(dcp::module_state_dict(*a), dir);
  EXPECT_FALSE(b->weight.equal(a->weight));
  dcp::load(dcp::module_state_dict(*b), dir);
  EXPECT_TRUE(b->weight.equal(a->weight));
  EXPECT_TRUE(b->bias.equal(a->bias));
  EXPECT_TRUE(b->weight.requires_grad());
}

// A crafted `.metadata` whose chunk names a file outside the checkpoint folder is refused
// (Note [Shard files stay in their folder]); it was followed, reading any file the process can.
TEST(DistributedCheckpoint, MetadataFileNamesOutsideTheFolderAreRefused) {
  const std::string root = tensor::testing::temp_path("crafted");
  const std::string dir = root + "/ckpt";
  dcp::save({{"x", full({3}, 1.0f)}}, dir);
  // A readable safetensors file outside the folder holding the same key: the escape loaded it.
  io::save({{"x", full({3}, 7.0f)}}, root + "/secret.safetensors");
  std::string meta;
  {
    std::ifstream in(dir + "/.metadata");
    std::stringstream ss;
    ss << in.rdbuf();
    meta = ss.str();
  }
  const std::string name = "__0_0.g1.safetensors";
  ASSERT_NE(meta.find(name), std::string::npos) << meta;
  for (const std::string bad : {std::string("../secret.safetensors"), root + "/secret.safetensors",
                                std::string("../../../../../../../../etc/passwd"), std::string(".."),
                                std::string("sub/") + name, std::string("")}) {
    std::string crafted = meta;
    crafted.replace(crafted.find(name), name.size(), bad);
    std::ofstream(dir + "/.metadata", std::ios::trunc) << crafted;
    Tensor x = zeros({3});
    for (int pass = 0; pass < 2; ++pass) {
      try {
        if (pass == 0) dcp::load({{"x", x}}, dir);
        else dcp::read_metadata(dir);
        ADD_FAILURE() << "no error for file '" << bad << "'";
      } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("'" + bad + "'"), std::string::npos) << msg;
        EXPECT_NE(msg.find("key 'x'"), std::string::npos) << msg;
        EXPECT_NE(msg.find("inside the checkpoint folder"), std::string::npos) << msg;
      }
    }
    EXPECT_TRUE(x.equal(zeros({3}))) << "read '" << bad << "'";
  }
  // The untouched metadata still loads.
  std::ofstream(dir + "/.metadata", std::ios::trunc) << meta;
  Tensor x = zeros({3});
  dcp::load({{"x", x}}, dir);
  EXPECT_TRUE(x.equal(full({3}, 1.0f)));
}

// A flipped byte in a shard's data used to load silently (a NaN in an Adam state ruined a run):
// every shard carries its tensors' CRC-32s (Note [Checkpoint checksums]), checked on load, also
// when the load reads only some rows of a chunk.
TEST(DistributedCheckpoint, FlippedByteInAShardIsRefused) {
  const std::string dir = tensor::testing::temp_path("flipped_shard");
  Tensor w = arange(12, kFloat32).reshape({4, 3});
  dcp::save({{"w", w}, {"b", full({2}, 0.5)}}, dir);
  const std::string shard = dir + "/__0_0.g1.safetensors";
  std::string bytes;
  {
    std::ifstream in(shard, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    bytes = ss.str();
  }
  ASSERT_GT(bytes.size(), 56u);
  // The last 48 + 8 bytes are the two tensors' data (b's 8 and w's 48, in some order).
  for (size_t back = 1; back <= 56; back += 5) {
    std::string bad = bytes;
    bad[bad.size() - back] ^= 0x10;
    std::ofstream(shard, std::ios::binary | std::ios::trunc) << bad;
    Tensor w2 = zeros({4, 3}), b2 = zeros({2});
    try {
      dcp::load({{"w", w2}, {"b", b2}}, dir);
      ADD_FAILURE() << "no error with byte -" << back << " flipped";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("does not match its checksum"), std::string::npos) << e.what();
    }
  }
  std::ofstream(shard, std::ios::binary | std::ios::trunc) << bytes;
  Tensor w2 = zeros({4, 3});
  dcp::load({{"w", w2}}, dir);
  EXPECT_TRUE(w2.equal(w));
}
