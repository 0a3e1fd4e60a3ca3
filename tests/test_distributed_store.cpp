// TCPStore and PrefixStore: set/get/add/check/wait/delete, timeouts, a dead server.
#include "tests/distributed_harness.h"

using namespace tensor;
namespace dist = tensor::distributed;
using std::chrono::milliseconds;

namespace {

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string str(const std::vector<uint8_t>& v) { return {v.begin(), v.end()}; }

dist::TCPStoreOptions master_opts(milliseconds timeout) {
  dist::TCPStoreOptions o;
  o.port = 0;
  o.is_master = true;
  o.timeout = timeout;
  return o;
}
dist::TCPStoreOptions client_opts(uint16_t port, milliseconds timeout) {
  dist::TCPStoreOptions o;
  o.port = port;
  o.timeout = timeout;
  return o;
}

}  // namespace

TEST(DistributedStore, SetGetAddCheckDeleteBetweenTwoClients) {
  dist::TCPStore server("127.0.0.1", master_opts(milliseconds(5000)));
  ASSERT_NE(server.port(), 0);
  dist::TCPStore client("127.0.0.1", client_opts(server.port(), milliseconds(5000)));
  server.set("a", bytes("hello"));
  EXPECT_EQ(str(client.get("a")), "hello");
  client.set("a", std::string("over"));  // overwrite
  EXPECT_EQ(str(server.get("a")), "over");
  client.set("empty", std::vector<uint8_t>{});
  EXPECT_TRUE(server.get("empty").empty());
  std::vector<uint8_t> binary = {0, 255, 10, 0, 7};
  server.set("bin", binary);
  EXPECT_EQ(client.get("bin"), binary);

  EXPECT_EQ(client.add("n", 5), 5);
  EXPECT_EQ(server.add("n", -2), 3);
  EXPECT_EQ(client.add("n", 0), 3);
  EXPECT_EQ(str(client.get("n")), "3");

  EXPECT_TRUE(client.check({"a", "n"}));
  EXPECT_FALSE(client.check({"a", "nope"}));
  EXPECT_TRUE(client.delete_key("a"));
  EXPECT_FALSE(client.delete_key("a"));
  EXPECT_FALSE(server.check({"a"}));
  client.wait({"n", "bin"});  // already there: returns at once
}

TEST(DistributedStore, WaitReturnsOnceAnotherThreadSetsTheKeys) {
  dist::TCPStore server("127.0.0.1", master_opts(milliseconds(10000)));
  dist::TCPStore client("127.0.0.1", client_opts(server.port(), milliseconds(10000)));
  std::thread t([&] {
    std::this_thread::sleep_for(milliseconds(50));
    server.set("k1", std::string("1"));
    server.set("k2", std::string("2"));
  });
  client.wait({"k1", "k2"});
  EXPECT_EQ(str(client.get("k2")), "2");
  t.join();
}

TEST(DistributedStore, MissingKeyRaisesNamingTheKeyAndTimeout) {
  dist::TCPStore server("127.0.0.1", master_opts(milliseconds(300)));
  try {
    server.get("no_such_key");
    FAIL() << "expected tensor::Error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("no_such_key"), std::string::npos) << m;
    EXPECT_NE(m.find("300 ms"), std::string::npos) << m;
  }
  try {
    server.wait({"present", "absent"}, milliseconds(200));
    FAIL() << "expected tensor::Error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("absent"), std::string::npos) << m;
    EXPECT_NE(m.find("200 ms"), std::string::npos) << m;
  }
}

TEST(DistributedStore, NoServerRaisesInsteadOfHanging) {
  int port = dist_test::free_port();  // nobody listens there
  try {
    dist::TCPStore client("127.0.0.1", client_opts(static_cast<uint16_t>(port), milliseconds(300)));
    FAIL() << "expected tensor::Error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("could not connect"), std::string::npos) << m;
    EXPECT_NE(m.find("300 ms"), std::string::npos) << m;
  }
}

TEST(DistributedStore, PrefixStoreSeparatesKeySpaces) {
  auto base = std::make_shared<dist::TCPStore>("127.0.0.1", master_opts(milliseconds(300)));
  dist::PrefixStore a("ga", base), b("gb", base);
  a.set("x", std::string("from a"));
  b.set("x", std::string("from b"));
  EXPECT_EQ(str(a.get("x")), "from a");
  EXPECT_EQ(str(b.get("x")), "from b");
  EXPECT_EQ(str(base->get("ga/x")), "from a");
  EXPECT_EQ(a.add("c", 2), 2);
  EXPECT_EQ(b.add("c", 7), 7);
  EXPECT_TRUE(a.check({"x", "c"}));
  EXPECT_FALSE(a.check({"y"}));
  EXPECT_THROW(a.wait({"y"}, milliseconds(100)), Error);
}

// Every rank adds rank+1 to one counter and publishes a key; each then reads all others' keys.
DIST_SCENARIO(store_multiprocess) {
  dist::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(dist_test::master_port());
  o.is_master = rank == 0;
  o.timeout = milliseconds(10000);
  dist::TCPStore store("127.0.0.1", o);
  store.add("counter", rank + 1);
  store.set("key" + std::to_string(rank), std::string("value of ") + std::to_string(rank));
  std::vector<std::string> keys;
  for (int r = 0; r < world; ++r) keys.push_back("key" + std::to_string(r));
  store.wait(keys);
  for (int r = 0; r < world; ++r)
    DIST_CHECK(str(store.get(keys[r])) == "value of " + std::to_string(r), "key " << r);
  // Everyone has added once the "added" counter reaches world.
  store.add("added", 1);
  while (store.add("added", 0) < world) std::this_thread::sleep_for(milliseconds(2));
  int64_t total = store.add("counter", 0);
  DIST_CHECK(total == world * (world + 1) / 2, "counter " << total);
  // Rank 0 (the server) must outlive the others' last request.
  store.add("finished", 1);
  if (rank == 0)
    while (store.add("finished", 0) < world) std::this_thread::sleep_for(milliseconds(2));
}

TEST(DistributedStore, CounterIsAtomicAcrossProcesses) { dist_test::expect_all_ok("store_multiprocess", 4, 60); }

// Rank 0 runs the server and exits once rank 1 is connected and waiting: rank 1's wait must
// fail with an error naming the key, not hang.
DIST_SCENARIO(store_dead_server) {
  dist::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(dist_test::master_port());
  o.is_master = rank == 0;
  o.timeout = milliseconds(20000);
  dist::TCPStore store("127.0.0.1", o);
  if (rank == 0) {
    store.wait({"connected"});
    std::this_thread::sleep_for(milliseconds(100));
    ::_exit(0);  // the server dies with its process
  }
  store.set("connected", std::string("1"));
  auto t0 = std::chrono::steady_clock::now();
  try {
    store.get("never_set");
    DIST_CHECK(false, "get of a key on a dead server returned");
  } catch (const Error& e) {
    std::string m = e.what();
    DIST_CHECK(m.find("never_set") != std::string::npos, m);
    DIST_CHECK(m.find("closed the connection or died") != std::string::npos, m);
  }
  // A dead server is noticed at once, long before the 20 s timeout.
  DIST_CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(15), "too slow");
}

TEST(DistributedStore, DeadServerRaisesNamingTheKey) { dist_test::expect_all_ok("store_dead_server", 2, 60); }

// Note [Store run ids]: a client of another job is refused before it reads or writes a key.
TEST(DistributedStore, ClientOfAnotherRunIsRefused) {
  dist::TCPStoreOptions mo = master_opts(milliseconds(2000));
  mo.run_id = "job-a/0";
  dist::TCPStore server("127.0.0.1", mo);
  server.set("k", std::string("a's value"));
  dist::TCPStoreOptions co;
  co.port = server.port();
  co.timeout = milliseconds(2000);
  co.run_id = "job-b/0";
  try {
    dist::TCPStore other("127.0.0.1", co);
    FAIL() << "expected tensor::Error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("belongs to another job (its run id 'job-a/0', this process's 'job-b/0')"), std::string::npos) << m;
  }
  co.run_id = "";  // empty is an id too: it matches only empty
  EXPECT_THROW(dist::TCPStore("127.0.0.1", co), Error);
  co.run_id = "job-a/0";
  dist::TCPStore same("127.0.0.1", co);
  auto v = same.get("k");
  EXPECT_EQ(std::string(v.begin(), v.end()), "a's value");
}

TEST(DistributedStore, PortInUseRaisesNamingThePort) {
  dist::TCPStore first("127.0.0.1", master_opts(milliseconds(1000)));
  dist::TCPStoreOptions o = master_opts(milliseconds(1000));
  o.port = first.port();
  try {
    dist::TCPStore second("127.0.0.1", o);
    FAIL() << "expected tensor::Error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("cannot listen on port " + std::to_string(first.port())), std::string::npos) << m;
  }
}
