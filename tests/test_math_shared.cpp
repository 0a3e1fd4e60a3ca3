// The shared host/device math of kernels/math (Note [Shared kernel math]), run on the CPU:
// half/bfloat16 conversions against independent decoders and roundings, IntDivider and
// OffsetCalculator against plain division, Philox against Random123's published answers and
// an independent implementation, the generator's pinned output, and the reduction steps
// against float64 references and hand-written expectations.
#include <gtest/gtest.h>
#include <tensor/tensor.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/math/Binary.h"
#include "kernels/math/Half.h"
#include "kernels/math/IntDivider.h"
#include "kernels/math/OffsetCalculator.h"
#include "kernels/math/Philox.h"
#include "kernels/math/Reduce.h"

using namespace tensor;
namespace km = tensor::math;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Python's (and NumPy's) integer floor division and modulo, written without the hardware
// dividing MIN by -1: the reference for Note [Integer division by -1].
template <class T>
T py_floordiv(T a, T b) {
  const long double q = std::floor(static_cast<long double>(a) / static_cast<long double>(b));
  // Wraps like NumPy for the one quotient that does not fit (MIN // -1 == MIN).
  return q > static_cast<long double>(std::numeric_limits<T>::max()) ? std::numeric_limits<T>::min() : static_cast<T>(q);
}

// ---- half / bfloat16 ----

// The value that binary16 bits encode, by the definition: (-1)^s 2^(e-15) (1 + m/1024), or
// (-1)^s 2^-14 (m/1024) for e = 0; e = 31 is inf (m = 0) or NaN.
double decode_half(uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  const double sign = s ? -1.0 : 1.0;
  if (e == 31) return m == 0 ? sign * kInf : kNaN;
  if (e == 0) return sign * std::ldexp(m / 1024.0, -14);
  return sign * std::ldexp(1.0 + m / 1024.0, e - 15);
}
// The same for bfloat16: 8 exponent bits (bias 127), 7 mantissa bits.
double decode_bf16(uint16_t b) {
  const int s = b >> 15, e = (b >> 7) & 255, m = b & 127;
  const double sign = s ? -1.0 : 1.0;
  if (e == 255) return m == 0 ? sign * kInf : kNaN;
  if (e == 0) return sign * std::ldexp(m / 128.0, -126);
  return sign * std::ldexp(1.0 + m / 128.0, e - 127);
}

TEST(MathHalf, EveryHalfDecodesExactly) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = km::half_bits_to_float(static_cast<uint16_t>(h));
    const double want = decode_half(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(f)) << h;
      ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << h;
    } else {
      ASSERT_EQ(static_cast<double>(f), want) << h;
      ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << h;  // -0 stays -0
    }
    ASSERT_EQ(bits_of(static_cast<float>(Half::from_bits(static_cast<uint16_t>(h)))), bits_of(f));
  }
}

TEST(MathHalf, EveryBFloat16DecodesExactly) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = km::bf16_bits_to_float(static_cast<uint16_t>(b));
    const double want = decode_bf16(static_cast<uint16_t>(b));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(f)) << b;
    } else {
      ASSERT_EQ(static_cast<double>(f), want) << b;
      ASSERT_EQ(std::signbit(f), (b & 0x8000) != 0) << b;
    }
    ASSERT_EQ(bits_of(static_cast<float>(BFloat16::from_bits(static_cast<uint16_t>(b)))), bits_of(f));
  }
}

// g++'s _Float16 conversion (libgcc's soft-float or F16C/AVX512-FP16: IEEE round to nearest
// even either way) is the reference for float -> half.
uint16_t gcc_half(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
void check_half(float f) {
  const uint16_t got = km::float_to_half_bits(f);
  ASSERT_EQ(Half(f).x, got);
  if (std::isnan(f)) {
    // The implementation's NaN: quiet, sign kept (the payload is not).
    ASSERT_EQ(got, static_cast<uint16_t>((bits_of(f) >> 16 & 0x8000u) | 0x7e00u)) << std::hex << bits_of(f);
    return;
  }
  ASSERT_EQ(got, gcc_half(f)) << std::hex << "float bits 0x" << bits_of(f) << " value " << f;
}

// bfloat16 reference: the candidates below and above |f| in double (exact: both are floats),
// the nearer one wins, a tie goes to the even mantissa; above the largest finite bfloat16 the
// upper candidate is 2^128, which is inf. Arithmetic on values, unlike the implementation's
// add-and-truncate on bits.
uint16_t ref_bf16(float f) {
  const uint32_t u = bits_of(f);
  if (std::isnan(f)) return 0x7fc0;
  const uint16_t sign = static_cast<uint16_t>(u >> 16 & 0x8000u);
  const uint16_t lo_bits = static_cast<uint16_t>((u & 0x7fffffffu) >> 16);  // truncation of |f|
  if ((u & 0x7fffffffu) == 0x7f800000u) return sign | 0x7f80;
  const double a = std::fabs(static_cast<double>(f)), lo = decode_bf16(lo_bits);
  const int e = (lo_bits >> 7) & 255;
  const double ulp = std::ldexp(1.0, (e == 0 ? 1 : e) - 127 - 7);
  const double below = a - lo, above = lo + ulp - a;
  const bool up = above < below || (above == below && (lo_bits & 1));
  return sign | static_cast<uint16_t>(lo_bits + (up ? 1 : 0));  // 0x7f7f + 1 is inf's bits
}
void check_bf16(float f) {
  const uint16_t got = km::float_to_bf16_bits(f);
  ASSERT_EQ(BFloat16(f).x, got);
  ASSERT_EQ(got, ref_bf16(f)) << std::hex << "float bits 0x" << bits_of(f) << " value " << f;
}

// Every 997th float bit pattern (an odd stride: every exponent, both signs, scattered mantissas,
// NaNs and infinities among them) plus the listed specials.
template <class Check>
void sweep_floats(const Check& check) {
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 997) check(float_of(static_cast<uint32_t>(u)));
  for (uint32_t u : {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7f800001u,
                     0x00000001u, 0x007fffffu, 0x00800000u, 0x7f7fffffu, 0xff7fffffu})
    check(float_of(u));
}

TEST(MathHalf, FloatToHalfRoundsToNearestEven) {
  sweep_floats([](float f) { check_half(f); });
  // Every tie between neighbouring halves, and the floats just beside it, with both signs.
  // Midpoints have 12 significant bits, so they are floats; the one above 65504 is 65520.
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const double v = decode_half(static_cast<uint16_t>(h));
    const double next = h + 1 < 0x7c00 ? decode_half(static_cast<uint16_t>(h + 1)) : 65536.0;
    const float mid = static_cast<float>((v + next) / 2);
    ASSERT_EQ(static_cast<double>(mid), (v + next) / 2);
    for (float f : {mid, std::nextafter(mid, 0.f), std::nextafter(mid, std::numeric_limits<float>::infinity()), static_cast<float>(v)}) {
      check_half(f);
      check_half(-f);
    }
  }
  // Spot values: ties to even, overflow, underflow.
  EXPECT_EQ(km::float_to_half_bits(1.0f + 1.0f / 2048), 0x3c00);      // tie -> 1.0 (even)
  EXPECT_EQ(km::float_to_half_bits(1.0f + 3.0f / 2048), 0x3c02);      // tie -> 1 + 2/1024 (even)
  EXPECT_EQ(km::float_to_half_bits(65520.0f), 0x7c00);               // tie above the max -> inf
  EXPECT_EQ(km::float_to_half_bits(std::nextafter(65520.0f, 0.f)), 0x7bff);
  EXPECT_EQ(km::float_to_half_bits(std::ldexp(1.0f, -25)), 0x0000);  // half the smallest subnormal: tie -> 0
  EXPECT_EQ(km::float_to_half_bits(std::nextafter(std::ldexp(1.0f, -25), 1.f)), 0x0001);
}

TEST(MathHalf, FloatToBFloat16RoundsToNearestEven) {
  sweep_floats([](float f) { check_bf16(f); });
  for (uint32_t b = 0; b < 0x7f80; ++b) {
    const double v = decode_bf16(static_cast<uint16_t>(b));
    const double next = b + 1 < 0x7f80 ? decode_bf16(static_cast<uint16_t>(b + 1)) : std::ldexp(1.0, 128);
    const float mid = static_cast<float>((v + next) / 2);
    ASSERT_EQ(static_cast<double>(mid), (v + next) / 2);
    for (float f : {mid, std::nextafter(mid, 0.f), std::nextafter(mid, std::numeric_limits<float>::max()),
                    static_cast<float>(v)}) {
      check_bf16(f);
      check_bf16(-f);
    }
  }
  EXPECT_EQ(km::float_to_bf16_bits(float_of(0x3f808000u)), 0x3f80);  // tie -> even
  EXPECT_EQ(km::float_to_bf16_bits(float_of(0x3f818000u)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(km::float_to_bf16_bits(float_of(0x7f7fffffu)), 0x7f80);  // float max rounds to inf
  EXPECT_EQ(km::float_to_bf16_bits(float_of(0xffc12345u)), 0x7fc0);  // NaN -> the quiet NaN
}

// ---- IntDivider ----

void check_div(const km::IntDivider<uint32_t>& div, uint32_t d, uint32_t n) {
  const km::DivMod<uint32_t> qr = div.divmod(n);
  ASSERT_EQ(qr.div, n / d) << "n=" << n << " d=" << d;
  ASSERT_EQ(qr.mod, n % d) << "n=" << n << " d=" << d;
  ASSERT_EQ(div.div(n), n / d);
  ASSERT_EQ(div.mod(n), n % d);
}
void check_edges(uint32_t d) {
  const km::IntDivider<uint32_t> div(d);
  const uint32_t kmax = UINT32_MAX / d;
  for (uint32_t n : {0u, 1u, d - 1, d, d + 1, 2 * d - 1, kmax * d - 1, kmax * d, UINT32_MAX - 1, UINT32_MAX,
                     0x7fffffffu, 0x80000000u, 0x80000001u})
    check_div(div, d, n);
}

TEST(MathIntDivider, ExhaustiveSmallNumerators) {
  std::vector<uint32_t> ds;
  for (uint32_t d = 1; d <= 40; ++d) ds.push_back(d);
  for (uint32_t d : {64u, 97u, 100u, 127u, 255u, 641u, 1000u, 4095u, 65535u, 65536u, 65537u, 999983u, 1u << 20,
                     (1u << 20) + 1, 0x7fffffffu, 0x80000000u})
    ds.push_back(d);
  for (uint32_t d : ds) {
    const km::IntDivider<uint32_t> div(d);
    for (uint32_t n = 0; n < (1u << 20); ++n) {
      // Plain compares here: ASSERT's bookkeeping would dominate 60 million checks.
      const km::DivMod<uint32_t> qr = div.divmod(n);
      if (qr.div != n / d || qr.mod != n % d) {
        ADD_FAILURE() << "n=" << n << " d=" << d << " got " << qr.div << " r " << qr.mod;
        return;
      }
    }
  }
}

TEST(MathIntDivider, RandomNumeratorsOverTheFullRange) {
  std::mt19937_64 rng(21);
  for (uint32_t d = 1; d <= 65536; ++d) {
    const km::IntDivider<uint32_t> div(d);
    for (int k = 0; k < 32; ++k) check_div(div, d, static_cast<uint32_t>(rng()));
    check_edges(d);
  }
  // Large divisors, uniform in (2^16, 2^31], and every power of two and its neighbours.
  for (int k = 0; k < 20000; ++k) {
    const uint32_t d = 65537u + static_cast<uint32_t>(rng() % ((uint64_t(1) << 31) - 65536));
    const km::IntDivider<uint32_t> div(d);
    for (int j = 0; j < 32; ++j) check_div(div, d, static_cast<uint32_t>(rng()));
    check_edges(d);
  }
  for (int s = 1; s <= 31; ++s)
    for (uint32_t d : {(1u << s) - 1, 1u << s, (1u << s) + 1})
      if (d <= 0x80000000u) check_edges(d);
}

TEST(MathIntDivider, RejectsOutOfRangeDivisorsAndFallbackDivides) {
  EXPECT_THROW(km::IntDivider<uint32_t>(0u), std::invalid_argument);
  EXPECT_THROW(km::IntDivider<uint32_t>(0x80000001u), std::invalid_argument);
  EXPECT_THROW(km::IntDivider<uint64_t>(0u), std::invalid_argument);
  const km::IntDivider<uint64_t> d64(1000000007ull);
  const uint64_t n = 0xfedcba9876543210ull;
  EXPECT_EQ(d64.div(n), n / 1000000007ull);
  EXPECT_EQ(d64.mod(n), n % 1000000007ull);
  EXPECT_EQ(d64.divmod(n).div, n / 1000000007ull);
}

// ---- OffsetCalculator ----

// Offsets by the definition: peel dims innermost first with / and %.
std::vector<uint64_t> naive_offsets(int ndim, const int64_t* sizes, const std::vector<std::vector<int64_t>>& strides,
                                    uint64_t linear) {
  std::vector<uint64_t> off(strides.size(), 0);
  for (int d = 0; d < ndim; ++d) {
    const uint64_t i = linear % static_cast<uint64_t>(sizes[d]);
    linear /= static_cast<uint64_t>(sizes[d]);
    for (size_t a = 0; a < strides.size(); ++a) off[a] += i * static_cast<uint64_t>(strides[a][d]);
  }
  return off;
}

TEST(MathOffsetCalculator, MatchesDivModForRandomShapes) {
  std::mt19937 rng(7);
  constexpr int kArgs = 3;
  for (int trial = 0; trial < 400; ++trial) {
    const int ndim = 1 + trial % 8;
    int64_t sizes[8];
    int64_t numel = 1;
    for (int d = 0; d < ndim; ++d) numel *= (sizes[d] = 1 + static_cast<int64_t>(rng() % (ndim <= 3 ? 12 : 4)));
    std::vector<std::vector<int64_t>> strides(kArgs, std::vector<int64_t>(ndim));
    for (auto& s : strides)
      for (int d = 0; d < ndim; ++d) s[d] = rng() % 5 == 0 ? 0 : static_cast<int64_t>(rng() % 4096);  // 0: broadcast
    const int64_t* sp[kArgs] = {strides[0].data(), strides[1].data(), strides[2].data()};
    const km::OffsetCalculator<kArgs> calc(ndim, sizes, sp);
    for (int64_t i = 0; i < numel; ++i) {
      const km::Offsets<kArgs> got = calc.get(static_cast<uint32_t>(i));
      const std::vector<uint64_t> want = naive_offsets(ndim, sizes, strides, static_cast<uint64_t>(i));
      for (int a = 0; a < kArgs; ++a) ASSERT_EQ(got[a], want[a]) << "trial " << trial << " index " << i;
    }
  }
}

TEST(MathOffsetCalculator, LargeIndicesAndZeroDims) {
  // 65535 x 65536 elements (just under 2^32): float32 contiguous and its transpose.
  const int64_t sizes[2] = {65536, 65535};
  const std::vector<std::vector<int64_t>> strides = {{1, 65536}, {65535, 1}};
  const int64_t* sp[2] = {strides[0].data(), strides[1].data()};
  const km::OffsetCalculator<2> calc(2, sizes, sp);
  std::mt19937_64 rng(3);
  for (int k = 0; k < 100000; ++k) {
    const uint32_t i = static_cast<uint32_t>(rng() % (uint64_t(65536) * 65535));
    const std::vector<uint64_t> want = naive_offsets(2, sizes, strides, i);
    const km::Offsets<2> got = calc.get(i);
    ASSERT_EQ(got[0], want[0]);
    ASSERT_EQ(got[1], want[1]);
  }
  // A 0-dim tensor: every offset is 0.
  const km::OffsetCalculator<1> scalar(0, nullptr, nullptr);
  EXPECT_EQ(scalar.get(0)[0], 0u);
  const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  const int64_t* nine_p[1] = {nine};
  EXPECT_THROW(km::OffsetCalculator<1>(9, nine, nine_p), std::invalid_argument);
}

// ---- Philox ----

// An independent Philox4x32-10, written from the paper's description in the order Random123's
// reference uses (the key is bumped before every round but the first), with the round as
// one 64-bit product per multiplier split by shifts and masks.
void ref_philox(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t x0 = ctr[0], x1 = ctr[1], x2 = ctr[2], x3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const uint64_t a = 0xD2511F53ull * x0, b = 0xCD9E8D57ull * x2;
    const uint32_t y0 = static_cast<uint32_t>(b >> 32) ^ x1 ^ k0;
    const uint32_t y1 = static_cast<uint32_t>(b & 0xffffffffu);
    const uint32_t y2 = static_cast<uint32_t>(a >> 32) ^ x3 ^ k1;
    const uint32_t y3 = static_cast<uint32_t>(a & 0xffffffffu);
    x0 = y0, x1 = y1, x2 = y2, x3 = y3;
  }
  out[0] = x0, out[1] = x1, out[2] = x2, out[3] = x3;
}

TEST(MathPhilox, Random123KnownAnswers) {
  // Random123 1.14, tests/kat_vectors, the three "philox4x32 10" lines: counter, key, output.
  struct Kat {
    uint32_t ctr[4], key[2], want[4];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
       {0xffffffffu, 0xffffffffu},
       {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
       {0xa4093822u, 0x299f31d0u},
       {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (const Kat& k : kats) {
    uint32_t got[4], ref[4];
    km::philox::raw(k.ctr, k.key, got);
    ref_philox(k.ctr, k.key, ref);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(got[i], k.want[i]) << "word " << i;
      EXPECT_EQ(ref[i], k.want[i]) << "reference, word " << i;
    }
  }
}

TEST(MathPhilox, DrawIsRawOfTheCounterLayout) {
  // draw(seed, counter) is Philox of counter {lo, hi, 0, 0} under key {lo(seed), hi(seed)}.
  std::mt19937_64 rng(11);
  for (int k = 0; k < 10000; ++k) {
    const uint64_t seed = k < 5000 ? rng() : static_cast<uint64_t>(k), counter = k % 3 ? rng() : uint64_t(k);
    const uint32_t c[4] = {static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0, 0};
    const uint32_t key[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
    uint32_t got[4], want[4];
    km::philox::draw(seed, counter, got);
    ref_philox(c, key, want);
    for (int i = 0; i < 4; ++i) ASSERT_EQ(got[i], want[i]);
  }
}

TEST(MathPhilox, Transforms) {
  // u01_53: the 53-bit integer (hi << 21) ^ (lo >> 11) over 2^53.
  EXPECT_EQ(km::philox::u01_53(0, 0), 0.0);
  EXPECT_EQ(km::philox::u01_53(0xffffffffu, 0xffffffffu), 1.0 - std::ldexp(1.0, -53));
  EXPECT_EQ(km::philox::u01_53(0x80000000u, 0), 0.5);
  EXPECT_EQ(km::philox::u01_53(0, 0x800u), std::ldexp(1.0, -53));
  EXPECT_EQ(km::philox::u01_53(0, 0x7ffu), 0.0);  // the low 11 bits of lo are dropped
  // Box-Muller: radius sqrt(-2 log(1 - u1)), angle 2 pi u2.
  double out[2];
  km::philox::box_muller(0.0, 0.25, out);  // radius 0
  EXPECT_EQ(out[0], 0.0);
  EXPECT_EQ(out[1], 0.0);
  km::philox::box_muller(1.0 - std::exp(-0.5), 0.0, out);  // radius 1, angle 0
  EXPECT_NEAR(out[0], 1.0, 1e-15);
  EXPECT_EQ(out[1], 0.0);
  km::philox::box_muller(1.0 - std::exp(-2.0), 0.25, out);  // radius 2, angle pi/2
  EXPECT_NEAR(out[0], 0.0, 1e-15);
  EXPECT_NEAR(out[1], 2.0, 1e-15);
  // uniform_int: low + (hi:lo) mod range, wrapping in uint64.
  EXPECT_EQ(km::philox::uniform_int(0, 17, 3, 10), 10);
  EXPECT_EQ(km::philox::uniform_int(1, 0, -5, 7), -5 + static_cast<int64_t>((uint64_t(1) << 32) % 7));
  EXPECT_EQ(km::philox::uniform_int(0xffffffffu, 0xffffffffu, std::numeric_limits<int64_t>::min(),
                                    std::numeric_limits<uint64_t>::max()),
            std::numeric_limits<int64_t>::min());  // 2^64 - 1 mod (2^64 - 1) = 0
}

// The first draws after manual_seed(0), recorded from the generator before it moved into
// kernels/math/Philox.h: the move, and any later change, must keep them bit for bit.
TEST(MathPhilox, GeneratorOutputIsPinned) {
  // Bits of rand: 0.3990464708489645, 0.73571278448344246, ...; of randn: 2.1823927982744475, ...
  const uint64_t rand_bits[8] = {0x3fd989fa35785a70ull, 0x3fe78af58993601bull, 0x3fef1c99948b9640ull,
                                 0x3fe634ae9d612fdfull, 0x3f93ea8ca5471cc0ull, 0x3fc20a89d6a2c898ull,
                                 0x3fe9321de52d488eull, 0x3fe3592269eda827ull};
  const uint64_t randn_bits[8] = {0x4001758a5afceadcull, 0xbfea93316f593083ull, 0xbfe0cfd41cc6cf90ull,
                                  0xbfeeb51b86064382ull, 0x3fe846dc9e1ab9a7ull, 0xbff6335d4f4124e8ull,
                                  0xbfd18c110d03a18eull, 0xbff70e53cb6c1086ull};
  const int64_t randint_want[8] = {196, 834, -206, -102, -301, 507, 406, 260};
  auto as_bits = [](double v) {
    uint64_t u;
    std::memcpy(&u, &v, 8);
    return u;
  };
  manual_seed(0);
  Tensor u = rand({8}, kFloat64);
  Tensor n = randn({8}, kFloat64);
  Tensor r = randint(-1000, 1000, {8});
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(as_bits(u[i].item<double>()), rand_bits[i]) << i;
    EXPECT_EQ(as_bits(n[i].item<double>()), randn_bits[i]) << i;
    EXPECT_EQ(r[i].item<int64_t>(), randint_want[i]) << i;
  }
  // And they are the shared functions of counters 0..3 (rand), 4..7 (randn), 8..15 (randint).
  for (uint64_t c = 0; c < 4; ++c) {
    uint32_t w[4];
    km::philox::draw(0, c, w);
    EXPECT_EQ(u[2 * c].item<double>(), km::philox::u01_53(w[0], w[1]));
    EXPECT_EQ(u[2 * c + 1].item<double>(), km::philox::u01_53(w[2], w[3]));
    km::philox::draw(0, 4 + c, w);
    double z[2];
    km::philox::box_muller(km::philox::u01_53(w[0], w[1]), km::philox::u01_53(w[2], w[3]), z);
    EXPECT_EQ(n[2 * c].item<double>(), z[0]);
    EXPECT_EQ(n[2 * c + 1].item<double>(), z[1]);
  }
  for (uint64_t c = 0; c < 8; ++c) {
    uint32_t w[4];
    km::philox::draw(0, 8 + c, w);
    EXPECT_EQ(r[c].item<int64_t>(), km::philox::uniform_int(w[0], w[1], -1000, 2000));
  }
}

// ---- reductions ----

TEST(MathReduce, MaxMinPropagateNaN) {
  EXPECT_EQ(km::max_propagate_nan(1.0, 2.0), 2.0);
  EXPECT_EQ(km::max_propagate_nan(2.0, 1.0), 2.0);
  EXPECT_EQ(km::min_propagate_nan(2.0, 1.0), 1.0);
  EXPECT_EQ(km::min_propagate_nan(-kInf, 1.0), -kInf);
  EXPECT_TRUE(std::isnan(km::max_propagate_nan(kNaN, 5.0)));
  EXPECT_TRUE(std::isnan(km::max_propagate_nan(5.0, kNaN)));
  EXPECT_TRUE(std::isnan(km::min_propagate_nan(kNaN, -kInf)));
  EXPECT_TRUE(std::isnan(km::min_propagate_nan(-kInf, kNaN)));
  EXPECT_EQ(km::max_propagate_nan<int>(-3, 7), 7);
  EXPECT_EQ((km::minmax_propagate_nan<false, int64_t>(-3, 7)), -3);
  // A NaN anywhere in a fold wins, whatever comes after it.
  const float xs[] = {1.f, 3.f, static_cast<float>(kNaN), 9.f, -2.f};
  float mx = -static_cast<float>(kInf), mn = static_cast<float>(kInf);
  for (float x : xs) mx = km::max_propagate_nan(mx, x), mn = km::min_propagate_nan(mn, x);
  EXPECT_TRUE(std::isnan(mx));
  EXPECT_TRUE(std::isnan(mn));
}

// The argmax/argmin of xs by arg_better (a left-to-right scan) and by arg_combine in a few
// tree shapes; all must give `want`.
template <bool kMax>
void check_arg(const std::vector<double>& xs, int64_t want) {
  int64_t scan = 0;
  for (size_t i = 1; i < xs.size(); ++i)
    if (km::arg_better<kMax>(xs[i], xs[scan])) scan = static_cast<int64_t>(i);
  EXPECT_EQ(scan, want);
  using VI = km::ValueIndex<double, int64_t>;
  VI fwd{xs[0], 0}, bwd{xs.back(), static_cast<int64_t>(xs.size()) - 1};
  for (size_t i = 1; i < xs.size(); ++i) fwd = km::arg_combine<kMax>(fwd, VI{xs[i], static_cast<int64_t>(i)});
  for (size_t i = xs.size() - 1; i-- > 0;) bwd = km::arg_combine<kMax>(VI{xs[i], static_cast<int64_t>(i)}, bwd);
  EXPECT_EQ(fwd.index, want);
  EXPECT_EQ(bwd.index, want);
  // Pairwise tree, combining the right half first as a GPU warp shuffle might.
  std::vector<VI> level;
  for (size_t i = 0; i < xs.size(); ++i) level.push_back({xs[i], static_cast<int64_t>(i)});
  while (level.size() > 1) {
    std::vector<VI> next;
    for (size_t i = 0; i + 1 < level.size(); i += 2) next.push_back(km::arg_combine<kMax>(level[i + 1], level[i]));
    if (level.size() % 2) next.push_back(level.back());
    level = next;
  }
  EXPECT_EQ(level[0].index, want);
}

TEST(MathReduce, ArgMaxMinTiesAndNaN) {
  check_arg<true>({1, 3, 3, 2}, 1);                      // tie: the lower index
  check_arg<false>({4, 1, 2, 1, 1}, 1);
  check_arg<true>({1, kNaN, 5, kNaN}, 1);                // the first NaN
  check_arg<false>({1, -kInf, kNaN, -kInf, kNaN}, 2);
  check_arg<true>({-kInf, -kInf, -kInf}, 0);
  check_arg<true>({2, 7, 0, 7, 7, 1, 7, 3, 7}, 1);
  check_arg<false>({kNaN, kNaN}, 0);
  // The CPU argmax/argmin kernels agree (they call arg_better): ties and NaNs, row and column.
  Tensor t = tensor::tensor({1.0, 3.0, 3.0, 2.0, 5.0, kNaN, 0.0, kNaN}).view({2, 4});
  EXPECT_EQ(argmax(t, 1)[0].item<int64_t>(), 1);
  EXPECT_EQ(argmax(t, 1)[1].item<int64_t>(), 1);
  EXPECT_EQ(argmin(t, 1)[1].item<int64_t>(), 1);
  Tensor c = tensor::tensor({2.0, 2.0, kNaN, 2.0}).view({4, 1}).expand({4, 20}).contiguous();
  EXPECT_EQ(argmax(c, 0)[7].item<int64_t>(), 2);
}

// Var by two passes in long double: the reference for Welford.
long double two_pass_var(const std::vector<double>& xs, int64_t correction) {
  long double mean = 0, m2 = 0;
  for (double x : xs) mean += x;
  mean /= static_cast<long double>(xs.size());
  for (double x : xs) m2 += (x - mean) * (x - mean);
  return m2 / static_cast<long double>(static_cast<int64_t>(xs.size()) - correction);
}

TEST(MathReduce, WelfordMatchesTwoPassAndCombines) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> dist(1e4, 3.0);  // a large mean: where the naive formula cancels
  std::vector<double> xs(100001);
  for (double& x : xs) x = dist(rng);
  km::Welford<double> one = km::welford_init<double>();
  for (double x : xs) one = km::welford_update(one, x);
  EXPECT_EQ(one.n, static_cast<int64_t>(xs.size()));
  const double want_var = static_cast<double>(two_pass_var(xs, 1));
  EXPECT_NEAR(km::welford_var(one, 1), want_var, 1e-10 * want_var);
  EXPECT_NEAR(km::welford_var(one, 0), static_cast<double>(two_pass_var(xs, 0)), 1e-10 * want_var);
  EXPECT_NEAR(km::welford_std(one, 1), std::sqrt(want_var), 1e-10 * std::sqrt(want_var));
  long double mean = 0;
  for (double x : xs) mean += x;
  EXPECT_NEAR(one.mean, static_cast<double>(mean / xs.size()), 1e-12 * 1e4);

  // Uneven partitions (empty ones included), combined in order and as a tree.
  const size_t cuts[] = {0, 0, 1, 2, 999, 50000, 50000, 77777, xs.size()};
  std::vector<km::Welford<double>> parts;
  for (size_t k = 0; k + 1 < std::size(cuts); ++k) {
    km::Welford<double> w{};
    for (size_t i = cuts[k]; i < cuts[k + 1]; ++i) w = km::welford_update(w, xs[i]);
    parts.push_back(w);
  }
  km::Welford<double> seq = km::welford_init<double>();
  for (const auto& p : parts) seq = km::welford_combine(seq, p);
  const km::Welford<double> tree =
      km::welford_combine(km::welford_combine(km::welford_combine(parts[0], parts[1]), km::welford_combine(parts[2], parts[3])),
                          km::welford_combine(km::welford_combine(parts[4], parts[5]), km::welford_combine(parts[6], parts[7])));
  for (const auto& w : {seq, tree}) {
    EXPECT_EQ(w.n, one.n);
    EXPECT_NEAR(w.mean, one.mean, 1e-12 * 1e4);
    EXPECT_NEAR(km::welford_var(w, 1), want_var, 1e-10 * want_var);
  }

  // float32 states: within float's precision of the reference.
  km::Welford<float> f = km::welford_init<float>();
  for (size_t i = 0; i < 10000; ++i) f = km::welford_update(f, static_cast<float>(xs[i] - 1e4));
  const std::vector<double> head(xs.begin(), xs.begin() + 10000);
  EXPECT_NEAR(km::welford_var(f, 1), static_cast<double>(two_pass_var(head, 1)), 1e-3 * want_var);

  // Exact small cases and the correction edge: n <= correction divides by 0.
  km::Welford<double> small{};
  for (double x : {2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0}) small = km::welford_update(small, x);
  EXPECT_DOUBLE_EQ(small.mean, 5.0);
  EXPECT_DOUBLE_EQ(km::welford_var(small, 0), 4.0);
  EXPECT_DOUBLE_EQ(km::welford_std(small, 0), 2.0);
  EXPECT_DOUBLE_EQ(km::welford_var(small, 1), 32.0 / 7);
  const km::Welford<double> single = km::welford_update(km::welford_init<double>(), 3.0);
  EXPECT_TRUE(std::isnan(km::welford_var(single, 1)));  // 0 / 0, as torch.var of one element
  EXPECT_EQ(km::welford_var(small, 8), kInf);             // 32 / 0
  EXPECT_TRUE(std::isnan(km::welford_var(km::welford_init<double>(), 0)));
}

double lse_seq(const std::vector<double>& xs) {
  km::LogSumExp<double> s = km::logsumexp_init<double>();
  for (double x : xs) s = km::logsumexp_update(s, x);
  return km::logsumexp_project(s);
}
// Each element its own state, then combined pairwise.
double lse_tree(const std::vector<double>& xs) {
  std::vector<km::LogSumExp<double>> level;
  for (double x : xs) level.push_back(km::logsumexp_update(km::logsumexp_init<double>(), x));
  if (level.empty()) return km::logsumexp_project(km::logsumexp_init<double>());
  while (level.size() > 1) {
    std::vector<km::LogSumExp<double>> next;
    for (size_t i = 0; i + 1 < level.size(); i += 2) next.push_back(km::logsumexp_combine(level[i], level[i + 1]));
    if (level.size() % 2) next.push_back(km::logsumexp_combine(km::logsumexp_init<double>(), level.back()));
    level = next;
  }
  return km::logsumexp_project(level[0]);
}

TEST(MathReduce, LogSumExp) {
  struct Case {
    std::vector<double> xs;
    double want;
  };
  const Case cases[] = {
      {{0.0, 0.0}, std::log(2.0)},
      {{1.0, 2.0, 3.0}, 3.0 + std::log(1.0 + std::exp(-1.0) + std::exp(-2.0))},
      {{1000.0, 1000.0}, 1000.0 + std::log(2.0)},  // no overflow
      {{-1000.0, -1000.0, -1000.0}, -1000.0 + std::log(3.0)},
      {{5.0}, 5.0},
      {{}, -kInf},
      {{-kInf, -kInf}, -kInf},
      {{-kInf, 1.0}, 1.0},
      {{1.0, -kInf, 1.0}, 1.0 + std::log(2.0)},
      {{kInf, 1.0}, kInf},
      {{1.0, kInf, kInf}, kInf},
      {{-kInf, kInf}, kInf},
      {{kInf, -kInf}, kInf},
      {{kNaN, 1.0}, kNaN},
      {{1.0, kNaN, kInf}, kNaN},
      {{kInf, kNaN}, kNaN},
      {{-kInf, kNaN}, kNaN},
  };
  auto expect_lse = [](double got, double want, const std::vector<double>& xs) {
    if (std::isnan(want)) EXPECT_TRUE(std::isnan(got)) << ::testing::PrintToString(xs);
    else if (std::isinf(want)) EXPECT_EQ(got, want) << ::testing::PrintToString(xs);
    else EXPECT_NEAR(got, want, 1e-12 * std::max(1.0, std::fabs(want))) << ::testing::PrintToString(xs);
  };
  for (const Case& c : cases) {
    expect_lse(lse_seq(c.xs), c.want, c.xs);
    expect_lse(lse_tree(c.xs), c.want, c.xs);
    // torch.logsumexp (the composite front end) agrees, empty input included.
    expect_lse(tensor::logsumexp(tensor::tensor(c.xs, TensorOptions().dtype(kFloat64)), {0}).item<double>(), c.want,
               c.xs);
  }
  // Random data: the online forms against log(sum(exp(x - max))) + max in long double.
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> dist(-50, 50);
  std::vector<double> xs(1001);
  for (double& x : xs) x = dist(rng);
  long double m = -kInf, s = 0;
  for (double x : xs) m = std::max<long double>(m, x);
  for (double x : xs) s += std::exp(static_cast<long double>(x) - m);
  const double want = static_cast<double>(std::log(s) + m);
  EXPECT_NEAR(lse_seq(xs), want, 1e-13 * std::fabs(want));
  EXPECT_NEAR(lse_tree(xs), want, 1e-13 * std::fabs(want));
  km::LogSumExp<float> f = km::logsumexp_init<float>();
  for (double x : xs) f = km::logsumexp_update(f, static_cast<float>(x));
  EXPECT_NEAR(km::logsumexp_project(f), want, 1e-5 * std::fabs(want));
}

// ---- integer division (Note [Integer division by -1]) ----

template <class T>
void check_int_division_by_minus_one() {
  using L = std::numeric_limits<T>;
  const T mn = L::min(), mx = L::max();
  // MIN / -1 trapped (SIGFPE) on x86; the shared functor answers before dividing.
  EXPECT_EQ(km::binary_op<km::BinaryOp::DivTrunc>(mn, T(-1)), mn);
  EXPECT_EQ(km::binary_op<km::BinaryOp::DivFloor>(mn, T(-1)), mn);
  EXPECT_EQ(km::binary_op<km::BinaryOp::Remainder>(mn, T(-1)), T(0));
  EXPECT_EQ(km::binary_op<km::BinaryOp::Fmod>(mn, T(-1)), T(0));
  // Around the extremes, against Python's floor division and modulo (long double exact for
  // these magnitudes only up to 2^64, so compare where the reference is exact).
  const T as[] = {mn, static_cast<T>(mn + 1), T(-7), T(-1), T(0), T(1), T(7), static_cast<T>(mx - 1), mx};
  const T bs[] = {T(-1), T(1), T(-2), T(2), T(3), T(-3), mn, mx};
  for (T a : as)
    for (T b : bs) {
      const T trunc = km::binary_op<km::BinaryOp::DivTrunc>(a, b), floor = km::binary_op<km::BinaryOp::DivFloor>(a, b);
      const T rem = km::binary_op<km::BinaryOp::Remainder>(a, b), fmod = km::binary_op<km::BinaryOp::Fmod>(a, b);
      if (!(a == mn && b == T(-1))) {
        EXPECT_EQ(trunc, static_cast<T>(a / b)) << +a << " / " << +b;
        EXPECT_EQ(fmod, static_cast<T>(a % b)) << +a << " fmod " << +b;
      }
      if (sizeof(T) < 8) {
        EXPECT_EQ(floor, py_floordiv(a, b)) << +a << " // " << +b;
      }
      // Python's identity a == (a // b) * b + a % b, in wraparound arithmetic; a % b takes b's sign.
      // In uint64_t: narrower unsigned operands would promote to int, whose product can overflow.
      using U = std::make_unsigned_t<T>;
      const auto wide = [](T v) { return static_cast<uint64_t>(static_cast<U>(v)); };
      EXPECT_EQ(static_cast<T>(wide(floor) * wide(b) + wide(rem)), a) << +a << " % " << +b;
      EXPECT_TRUE(rem == 0 || (rem < 0) == (b < 0)) << +a << " % " << +b;
    }
}

TEST(MathBinary, IntegerMinDividedByMinusOneWraps) {
  check_int_division_by_minus_one<int64_t>();
  check_int_division_by_minus_one<int32_t>();
  check_int_division_by_minus_one<int16_t>();
  check_int_division_by_minus_one<int8_t>();
  // Unsigned: 255 is not -1.
  EXPECT_EQ(km::binary_op<km::BinaryOp::DivTrunc>(uint8_t{254}, uint8_t{255}), uint8_t{0});
  EXPECT_EQ(km::binary_op<km::BinaryOp::Remainder>(uint8_t{254}, uint8_t{255}), uint8_t{254});
  EXPECT_EQ(km::binary_op<km::BinaryOp::Fmod>(uint8_t{7}, uint8_t{255}), uint8_t{7});
}

}  // namespace
