// Tensor core: factories, dtypes and conversions, views, copies, meta device, RNG, printing,
// the CPU allocator.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace tensor;

TEST(Factories, LiteralsFollowLibtorchDtypes) {
  Tensor a = tensor::tensor({0.5, 0.75});
  EXPECT_EQ(a.dtype(), kFloat32);
  EXPECT_EQ(a.sizes(), IntArrayRef({2}));
  Tensor b = tensor::tensor({1, 2, 3});
  EXPECT_EQ(b.dtype(), kInt64);
  Tensor m = tensor::tensor({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}}, kFloat64);
  EXPECT_EQ(m.sizes(), IntArrayRef({3, 2}));
  EXPECT_EQ(m[2][1].item<double>(), 6.0);
  EXPECT_EQ(tensor::tensor({true, false}).dtype(), kBool);
  EXPECT_EQ(tensor::tensor(2.5).dim(), 0);
  EXPECT_THROW(tensor::tensor({{1, 2}, {3}}), tensor::Error);
  Tensor g = tensor::tensor({0.5, 0.75}, dtype(kFloat64).requires_grad(true));
  EXPECT_TRUE(g.requires_grad());
  EXPECT_THROW(tensor::tensor({1, 2}, tensor::requires_grad()), tensor::Error);  // ints cannot require grad
}

TEST(Factories, FullZerosOnesArangeLinspaceEye) {
  EXPECT_EQ(tensor::full({2, 2}, 7.0).dtype(), kFloat32);
  EXPECT_EQ(tensor::full({2, 2}, 7).dtype(), kInt64);
  EXPECT_EQ(tensor::full({2, 2}, 7.0)[1][1].item<float>(), 7.0f);
  EXPECT_EQ(tensor::zeros({2, 3}).sum().item<float>(), 0.0f);
  EXPECT_EQ(tensor::ones({2, 3}, kFloat64).dtype(), kFloat64);
  Tensor r = tensor::arange(10);
  EXPECT_EQ(r.dtype(), kInt64);
  EXPECT_EQ(r.numel(), 10);
  EXPECT_EQ(r[9].item<int64_t>(), 9);
  Tensor rf = tensor::arange(0, 1, 0.25);
  EXPECT_EQ(rf.dtype(), kFloat32);
  EXPECT_EQ(rf.numel(), 4);
  EXPECT_FLOAT_EQ(rf[3].item<float>(), 0.75f);
  EXPECT_EQ(tensor::arange(10, 0, -3).numel(), 4);  // 10 7 4 1
  Tensor l = tensor::linspace(0, 1, 5);
  EXPECT_FLOAT_EQ(l[1].item<float>(), 0.25f);
  EXPECT_FLOAT_EQ(l[4].item<float>(), 1.0f);
  Tensor e = tensor::eye(3);
  EXPECT_EQ(e[1][1].item<float>(), 1.0f);
  EXPECT_EQ(e[1][2].item<float>(), 0.0f);
  EXPECT_EQ(tensor::eye(2, 4).sizes(), IntArrayRef({2, 4}));
  EXPECT_THROW(tensor::zeros({-1}), tensor::Error);
  EXPECT_EQ(tensor::empty({4}, TensorOptions().dtype(kInt64).device(kCPU)).dtype(), kInt64);
}

TEST(Factories, LikeFactoriesKeepDtype) {
  Tensor a = tensor::ones({2, 3}, kFloat64);
  EXPECT_EQ(tensor::zeros_like(a).dtype(), kFloat64);
  EXPECT_EQ(tensor::ones_like(a).sizes(), a.sizes());
  EXPECT_EQ(tensor::full_like(a, 3)[0][0].item<double>(), 3.0);
  EXPECT_EQ(tensor::empty_like(a, kInt32).dtype(), kInt32);
  EXPECT_EQ(tensor::randn_like(a).dtype(), kFloat64);
  EXPECT_EQ(tensor::rand_like(a).sizes(), a.sizes());
}

TEST(Random, SeededAndReproducible) {
  manual_seed(42);
  Tensor a = tensor::rand({1000});
  Tensor n = tensor::randn({100000});
  manual_seed(42);
  Tensor b = tensor::rand({1000});
  EXPECT_TRUE(a.equal(b));
  EXPECT_FALSE(a.equal(tensor::rand({1000})));
  EXPECT_GE(a.min().item<float>(), 0.0f);
  EXPECT_LT(a.max().item<float>(), 1.0f);
  EXPECT_NEAR(n.mean().item<double>(), 0.0, 0.02);
  EXPECT_NEAR(n.std().item<double>(), 1.0, 0.02);
  Tensor k = tensor::randint(0, 10, {8});
  EXPECT_EQ(k.dtype(), kInt64);
  EXPECT_GE(k.min().item<int64_t>(), 0);
  EXPECT_LT(k.max().item<int64_t>(), 10);
  Tensor p = tensor::randperm(10);
  std::vector<int> seen(10, 0);
  for (int64_t i = 0; i < 10; ++i) seen[p[i].item<int64_t>()]++;
  for (int c : seen) EXPECT_EQ(c, 1);
}

TEST(Dtypes, ConversionsAcrossAllTypes) {
  const ScalarType all[] = {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64, kComplex64, kComplex128};
  Tensor src = tensor::tensor({0.0, 1.0, 2.5, -3.0, 100.0}, kFloat64);
  for (ScalarType from : all)
    for (ScalarType to : all) {
      if (from == kBool || to == kBool) continue;
      if ((from == kUInt8 || to == kUInt8)) continue;  // -3 does not survive uint8; covered below
      Tensor x = src.to(from).to(to).to(kFloat64);
      double want2 = is_integral(from, false) || is_integral(to, false) ? 2.0 : 2.5;
      EXPECT_EQ(x[2].item<double>(), want2) << to_string(from) << " -> " << to_string(to);
      EXPECT_EQ(x[3].item<double>(), -3.0) << to_string(from) << " -> " << to_string(to);
      EXPECT_EQ(x[4].item<double>(), 100.0);
    }
  Tensor b = tensor::tensor({0.0, 0.5, -2.0}).to(kBool);
  EXPECT_FALSE(b[0].item<bool>());
  EXPECT_TRUE(b[1].item<bool>());
  EXPECT_TRUE(b[2].item<bool>());
  EXPECT_EQ(tensor::tensor({200}).to(kUInt8)[0].item<int64_t>(), 200);
  // Half rounding: 1 + 2^-11 is a tie and rounds to even (1.0); 65520 overflows to inf.
  EXPECT_EQ(tensor::tensor({1.0 + 1.0 / 2048}, kFloat64).to(kHalf).to(kFloat64).item<double>(), 1.0);
  EXPECT_TRUE(std::isinf(tensor::tensor({65520.0}, kFloat64).to(kHalf).to(kFloat32).item<float>()));
  EXPECT_EQ(tensor::tensor({1.00390625}, kFloat64).to(kBFloat16).to(kFloat64).item<double>(), 1.0);
  Tensor z = tensor::tensor({1.5}).to(kComplex64);
  EXPECT_EQ(z.item<complex64>(), complex64(1.5f, 0.0f));
  EXPECT_EQ(element_size(kComplex128), 16);
}

TEST(Views, ShareStorageAndVersion) {
  Tensor a = tensor::arange(12, kFloat32).view({3, 4});
  Tensor t = a.t();
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.sizes(), IntArrayRef({4, 3}));
  EXPECT_EQ(t.strides(), IntArrayRef({1, 4}));
  EXPECT_EQ(t[3][2].item<float>(), 11.0f);
  uint32_t v0 = a._version();
  t.select(0, 0).fill_(-1);
  EXPECT_EQ(a[2][0].item<float>(), -1.0f);
  EXPECT_GT(a._version(), v0);
  EXPECT_EQ(a._version(), t._version());
  Tensor s = a.slice(1, 1, 4, 2);
  EXPECT_EQ(s.sizes(), IntArrayRef({3, 2}));
  EXPECT_EQ(s.storage_offset(), 1);
  EXPECT_EQ(s[1][1].item<float>(), 7.0f);
  EXPECT_EQ(a.narrow(0, 1, 2).sizes(), IntArrayRef({2, 4}));
  EXPECT_EQ(a.unsqueeze(1).sizes(), IntArrayRef({3, 1, 4}));
  EXPECT_EQ(a.unsqueeze(-1).sizes(), IntArrayRef({3, 4, 1}));
  EXPECT_EQ(a.unsqueeze(0).squeeze().sizes(), IntArrayRef({3, 4}));
  EXPECT_EQ(a.unsqueeze(0).squeeze(0).sizes(), IntArrayRef({3, 4}));
  EXPECT_EQ(a.permute({1, 0}).strides(), IntArrayRef({1, 4}));
  EXPECT_EQ(a.flatten().sizes(), IntArrayRef({12}));
  EXPECT_EQ(a.view({2, -1}).sizes(), IntArrayRef({2, 6}));
  EXPECT_EQ(a.flatten().unflatten(0, {2, 2, 3}).sizes(), IntArrayRef({2, 2, 3}));
  EXPECT_EQ(a.reshape({4, 3}).data_ptr(), a.data_ptr());       // viewable: no copy
  EXPECT_NE(a.t().reshape({12}).data_ptr(), a.data_ptr());     // not viewable: copies
  EXPECT_THROW(a.t().view({12}), tensor::Error);
  Tensor e = tensor::tensor({1.0, 2.0}).view({2, 1}).expand({2, 3});
  EXPECT_EQ(e.strides(), IntArrayRef({1, 0}));
  EXPECT_EQ(e[1][2].item<float>(), 2.0f);
  Tensor d = tensor::arange(9, kFloat32).view({3, 3}).diagonal();
  EXPECT_EQ(d[2].item<float>(), 8.0f);
  EXPECT_EQ(tensor::arange(9, kFloat32).view({3, 3}).diagonal(1).numel(), 2);
  Tensor u = tensor::arange(7, kFloat32).unfold(0, 3, 2);
  EXPECT_EQ(u.sizes(), IntArrayRef({3, 3}));
  EXPECT_EQ(u[2][0].item<float>(), 4.0f);
  Tensor as = tensor::arange(6, kFloat32).as_strided({2, 2}, {3, 1}, 1);
  EXPECT_EQ(as[1][1].item<float>(), 5.0f);
  EXPECT_THROW(tensor::arange(6, kFloat32).as_strided({2, 2}, {3, 2}, 2), tensor::Error);
  auto parts = tensor::arange(10).split(4);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[2].numel(), 2);
  auto ch = tensor::arange(10).chunk(3);
  ASSERT_EQ(ch.size(), 3u);
  EXPECT_EQ(ch[0].numel(), 4);
}

TEST(Views, ComplexRealImagConj) {
  Tensor z = tensor::tensor({1.0, 2.0}).to(kComplex64) * complex64(0, 1) + 3.0;  // [3+1j, 3+2j]
  EXPECT_EQ(z.real()[1].item<float>(), 3.0f);
  EXPECT_EQ(z.imag()[1].item<float>(), 2.0f);
  Tensor c = z.conj();
  EXPECT_TRUE(c.is_conj());
  EXPECT_EQ(c.data_ptr(), z.data_ptr());  // lazy: no copy
  EXPECT_EQ(c[1].item<complex64>(), complex64(3, -2));
  EXPECT_FALSE(c.resolve_conj().is_conj());
  EXPECT_EQ((c + 0)[0].item<complex64>(), complex64(3, -1));
  EXPECT_FALSE(tensor::ones({2}).conj().is_conj());
  EXPECT_THROW(tensor::ones({2}).imag(), tensor::Error);
}

// copy_ and fill_ through a lazily conjugated view (Note [Writing through a conj view]): the
// view reads back the written values, and its memory (the plain alias) holds their conjugates,
// as libtorch's; complex and real sources, a broadcast one, and a strided view.
TEST(Views, CopyAndFillThroughAConjView) {
  Tensor z = tensor::zeros({2, 3}, kComplex128);
  Tensor src = tensor::tensor({1.0, 2.0, 3.0}).to(kComplex128) * complex128(1, 2);  // [1+2j, 2+4j, 3+6j]
  z.conj().copy_(src);  // broadcast over the rows
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      const double k = static_cast<double>(j + 1);
      EXPECT_EQ(z[i][j].item<complex128>(), complex128(k, -2 * k));
      EXPECT_EQ(z.conj()[i][j].item<complex128>(), complex128(k, 2 * k));
    }
  // A conj source into a conj destination: the memory holds the source's plain values.
  Tensor w = tensor::zeros({3}, kComplex128);
  w.conj().copy_(src.conj());
  EXPECT_EQ(w[2].item<complex128>(), complex128(3, 6));
  // A real source: the imaginary parts are 0 either way.
  w.conj().copy_(tensor::tensor({5.0, 6.0, 7.0}));
  EXPECT_EQ(w[1].item<complex128>(), complex128(6, 0));
  // fill_ through a strided conj view: only its column changes, to the conjugate in memory.
  Tensor f = tensor::zeros({2, 3}, kComplex64);
  f.conj().select(1, 1).fill_(complex128(1.5, -2));
  EXPECT_EQ(f[0][1].item<complex64>(), complex64(1.5f, 2.0f));
  EXPECT_EQ(f[1][1].item<complex64>(), complex64(1.5f, 2.0f));
  EXPECT_EQ(f[0][0].item<complex64>(), complex64(0, 0));
  EXPECT_EQ(f.conj()[1][1].item<complex64>(), complex64(1.5f, -2.0f));
  f.conj().fill_(3.0);  // a real value
  EXPECT_EQ(f[1][2].item<complex64>(), complex64(3, 0));
}

TEST(Copy, AcrossDtypesLayoutsAndBroadcast) {
  Tensor a = tensor::arange(6, kFloat32).view({2, 3});
  Tensor dst = tensor::zeros({3, 2}, kFloat64);
  dst.copy_(a.t());
  EXPECT_EQ(dst[2][1].item<double>(), 5.0);
  Tensor row = tensor::zeros({4, 3}, kInt32);
  row.copy_(tensor::tensor({1.5, 2.5, 3.5}));
  EXPECT_EQ(row[3][2].item<int64_t>(), 3);
  EXPECT_THROW(row.copy_(tensor::ones({2})), tensor::Error);
  Tensor big = tensor::rand({100, 70});
  EXPECT_TRUE(big.t().contiguous().equal(big.t()));
  EXPECT_TRUE(big.t().contiguous().t().equal(big));
  Tensor cl = a.clone();
  cl.fill_(3);
  EXPECT_EQ(a[0][0].item<float>(), 0.0f);
  std::vector<float> buf = {1, 2, 3, 4};
  Tensor blob = tensor::from_blob(buf.data(), {2, 2}, kFloat32);
  blob.mul_(2);
  EXPECT_EQ(buf[3], 8.0f);
}

TEST(Meta, ShapesWithoutMemory) {
  Tensor m = tensor::empty({1000, 1000}, TensorOptions().device(kMeta));
  EXPECT_TRUE(m.is_meta());
  Tensor r = (m + tensor::empty({1000}, TensorOptions().device(kMeta).dtype(kFloat64))).exp();
  EXPECT_EQ(r.sizes(), IntArrayRef({1000, 1000}));
  EXPECT_EQ(r.dtype(), kFloat64);
  EXPECT_TRUE(r.is_meta());
  EXPECT_EQ(m.t().reshape({-1}).numel(), 1000000);
  EXPECT_THROW(m.data_ptr(), tensor::Error);
  EXPECT_THROW(m.item<float>(), tensor::Error);
  EXPECT_THROW(m + tensor::ones({1000}), tensor::Error);  // meta and cpu do not mix
}

TEST(Printing, ValuesDtypeAndShape) {
  std::ostringstream os;
  os << tensor::tensor({0.5, 0.75});
  EXPECT_NE(os.str().find("0.5000"), std::string::npos);
  EXPECT_NE(os.str().find("CPUFloatType{2}"), std::string::npos);
  std::ostringstream os2;
  os2 << tensor::arange(6).view({2, 3});
  EXPECT_NE(os2.str().find("CPULongType{2,3}"), std::string::npos);
  EXPECT_NE(os2.str().find(" 5"), std::string::npos);
  // Sizes and strides print as libtorch prints them.
  std::ostringstream os3;
  Tensor t = tensor::zeros({2, 3, 4}).transpose(0, 2);
  os3 << t.sizes() << ' ' << t.strides() << ' ' << tensor::scalar_tensor(1.0).sizes();
  EXPECT_EQ(os3.str(), "[4, 3, 2] [1, 4, 12] []");
}

TEST(Threads, SetAndGet) {
  int before = get_num_threads();
  set_num_threads(1);
  EXPECT_EQ(get_num_threads(), 1);
  Tensor x = tensor::rand({1 << 20});
  Tensor one = x.exp();
  set_num_threads(2);
  EXPECT_TRUE(one.equal(x.exp()));  // results do not depend on the thread count
  set_num_threads(before);
  EXPECT_THROW(set_num_threads(0), tensor::Error);
}

TEST(Allocator, ReusesLargeBlocks) {
  void* first;
  {
    Tensor a = tensor::empty({1 << 22});
    first = a.data_ptr();
  }
  Tensor b = tensor::empty({1 << 22});
  EXPECT_EQ(b.data_ptr(), first);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(tensor::empty({3}).data_ptr()) % 64, 0u);
}

// Note [CPU caching allocator]: blocks between 64 KB and 1 MB are cached too, in 64 KB classes
// (they went to glibc, which returned the top of its heap to the kernel on every free).
TEST(Allocator, ReusesMediumBlocksWithinTheirClass) {
  void* first;
  {
    Tensor a = tensor::empty({(int64_t(200) << 10) / 4});  // 200 KB: the 256 KB class
    first = a.data_ptr();
  }
  Tensor b = tensor::empty({(int64_t(250) << 10) / 4});  // 250 KB: the same class
  EXPECT_EQ(b.data_ptr(), first);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data_ptr()) % 64, 0u);
  Tensor c = tensor::empty({(int64_t(300) << 10) / 4});  // the 320 KB class: another block
  EXPECT_NE(c.data_ptr(), first);
  c.fill_(1.0f);  // the whole block is writable
  EXPECT_EQ(c.sum().item<double>(), (300 << 10) / 4);
}

// Note [Reuse the warmest block]: with several free blocks of one size class cached, a request
// gets the one freed last (it used to get the oldest, so a loop cycled through cold blocks).
TEST(Allocator, LargeRequestGetsTheBlockFreedLast) {
  const int64_t n = (int64_t(3) << 20) / 4;  // 3 MB: one size class, a class no other test keeps
  Tensor a = tensor::empty({n}), b = tensor::empty({n}), c = tensor::empty({n});
  void* pa = a.data_ptr();
  void* pb = b.data_ptr();
  void* pc = c.data_ptr();
  a = Tensor();  // freed first
  c = Tensor();
  b = Tensor();  // freed last
  Tensor d = tensor::empty({n});
  EXPECT_EQ(d.data_ptr(), pb);
  Tensor e = tensor::empty({n});
  EXPECT_EQ(e.data_ptr(), pc);
  Tensor f = tensor::empty({n});
  EXPECT_EQ(f.data_ptr(), pa);
}

// Note [Aligned blocks from malloc]: small tensors kept across iterations that each make and
// free two 512 KB temporaries must not pin a 512 KB hole per iteration (with aligned_alloc the
// heap grew by 157 MB over these 300 iterations; now by what the kept tensors hold).
TEST(Allocator, HeapDoesNotGrowWithSmallLongLivedTensors) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizer's malloc is measured, not glibc's (ASan quarantines every freed block)";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  GTEST_SKIP() << "the sanitizer's malloc is measured, not glibc's (ASan quarantines every freed block)";
#endif
#endif
  auto rss_mb = [] {
    std::ifstream statm("/proc/self/statm");
    double pages = 0, resident = 0;
    statm >> pages >> resident;
    return resident * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1e6;
  };
  const int before = get_num_threads();
  set_num_threads(1);
  Tensor big = tensor::rand({1 << 17});  // 512 KB
  std::vector<Tensor> kept;
  const double start = rss_mb();
  for (int i = 0; i < 300; ++i) {
    { Tensor t = relu(big) * 2; }
    kept.push_back(tensor::ones({16}, kUInt8));
  }
  const double grown = rss_mb() - start;
  set_num_threads(before);
  EXPECT_LT(grown, 32.0) << "resident memory grew " << grown << " MB";
}

TEST(Errors, UndefinedTensorRaisesInsteadOfCrashing) {
  Tensor u;
  EXPECT_FALSE(u.defined());
  EXPECT_THROW(u.sizes(), tensor::Error);
  EXPECT_THROW(u.dim(), tensor::Error);
  EXPECT_THROW(u.select(0, 0), tensor::Error);
  EXPECT_THROW(u.exp(), tensor::Error);
  EXPECT_THROW(u + tensor::ones({2}), tensor::Error);
  EXPECT_THROW(u.sum(), tensor::Error);
  EXPECT_THROW(u.view({1}), tensor::Error);
  EXPECT_THROW(u.item<float>(), tensor::Error);
  Tensor x = tensor::ones({2}, dtype(kFloat64).requires_grad(true));
  EXPECT_THROW(x.grad().select(0, 0), tensor::Error);  // no backward yet: grad is undefined
}

// Note [Small block cache]: blocks move between threads' lists and survive thread exit, also
// when a thread_local tensor is destroyed after the thread's cache was reaped.
TEST(Allocator, SmallBlocksAcrossThreadsAndThreadExit) {
  std::vector<Tensor> made_elsewhere;
  std::thread t([&] {
    thread_local Tensor kept_until_exit;
    for (int64_t n : {1, 100, 1000, 4000, 16000}) {
      Tensor a = full({n}, 3.0);
      made_elsewhere.push_back(a);          // freed later on the main thread
      kept_until_exit = full({n}, 4.0);     // freed during this thread's exit
      Tensor tmp = a + 1;                   // freed here, into this thread's lists
      EXPECT_EQ(tmp.sum().item<double>(), 4.0 * n);
    }
  });
  t.join();
  for (Tensor& a : made_elsewhere) EXPECT_EQ(a.sum().item<double>(), 3.0 * a.numel());
  made_elsewhere.clear();  // joins the main thread's lists
  // Blocks recycled through the lists still hold fresh, correct results.
  for (int i = 0; i < 100; ++i) {
    Tensor b = full({16000}, static_cast<double>(i));
    EXPECT_EQ(b.sum().item<double>(), 16000.0 * i);
  }
}

// Only the CPU can be the default device (Note [Default device is the CPU]): a CUDA or meta
// default raises naming the function, and the default stays the CPU.
TEST(Devices, DefaultDeviceIsTheCpuOnly) {
  for (Device d : {Device(kCUDA), Device(kMeta)}) {
    try {
      set_default_device(d);
      ADD_FAILURE() << "expected tensor::Error for " << d.str();
    } catch (const tensor::Error& e) {
      EXPECT_NE(std::string(e.what()).find("set_default_device"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(d.str()), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(tensor::zeros({2}).is_cpu());
  set_default_device(Device(kCPU));
  EXPECT_TRUE(TensorOptions().device().is_cpu());
}
