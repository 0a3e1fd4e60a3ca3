// Internal: the per-tensor checksums of libtensor's safetensors files (Note [Checkpoint
// checksums]), shared by io::load and the sharded checkpoint reader.
#pragma once

#include <isa-l/crc.h>
#include <zlib.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tensor::io::detail {

// Note [Checkpoint checksums]
// A flipped byte in a checkpoint's data used to load silently (a NaN in an Adam state trained a
// job to 10% accuracy, then overwrote the good checkpoint). io::save now stores the CRC-32 of
// every tensor's bytes in the file's "__metadata__" under kChecksumKey: 8 hex digits per tensor,
// comma-separated, in data order. Fixed-width digits let save() write the header first and
// patch the values in after streaming the data, so saving still makes one pass over each
// tensor. io::load, load_metadata and checkpoint::load check them and strip the key; a file
// without it (another writer's, or an older libtensor's) loads unchecked, as safetensors allows.
// CRC-32 is zlib's: it detects every burst of up to 32 flipped bits, so any single flipped byte.
//
// Note [Fast CRC-32]
// The checksum is the CRC-32 of zlib and zip, and files from every libtensor version agree on
// it; what computes it is Intel's ISA-L (crc32_gzip_refl: the same polynomial, reflected, as
// zlib's; Debian's libisal-dev), whose folding uses 512-bit carry-less multiplies (VPCLMULQDQ)
// where the CPU has them and 128-bit PCLMULQDQ elsewhere. On one core of an AMD EPYC with
// AVX-512 it ran 68 GB/s over a 1 MB buffer, against 17 for libdeflate 1.14 (sessions 14-16,
// 128-bit folding only) and 4.2 for zlib 1.2.13's table-driven crc32_z, all giving the same
// value. At libdeflate's speed the checks were 38% of safetensors_load_64MB's samples and the
// load 1.16-1.30x torch 2.15's time (which checks nothing); crc32_combine stays zlib's.
inline constexpr const char* kChecksumKey = "__crc32__";

/// Whether loads check checksums (io::set_verify_checksums; Safetensors.cpp holds the flag).
bool checksums_enabled();

// Note [Clean upper vector state after ISA-L]
// ISA-L's AVX-512 CRC returns without VZEROUPPER, leaving the upper halves of the vector
// registers in use; every legacy-SSE instruction the thread ran afterwards then paid for it
// (libtensor's baseline code is SSE2): MNIST's reader took 60 ms instead of 38 after one
// io::save on the same thread (bench_ops mnist_read_train 1.03-1.08x torch in the whole suite,
// 0.5x alone). crc32_of clears that state itself, on every thread that computes a CRC; the
// test SafetensorsChecksums.SaveAndLoadLeaveTheUpperVectorStateClean reads it with XGETBV.
inline void clear_upper_vector_state() {
#if defined(__x86_64__)
  static const bool avx = __builtin_cpu_supports("avx");
  if (avx)
    __asm__ volatile("vzeroupper" ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
                     "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
#endif
}

/// The CRC-32 of n bytes (zlib's and zip's CRC; computed by ISA-L, Note [Fast CRC-32]).
inline uint32_t crc32_of(const void* data, uint64_t n) {
  const uint32_t crc = ::crc32_gzip_refl(0, static_cast<const unsigned char*>(data), n);
  clear_upper_vector_state();
  return crc;
}

/// The CRC-32 of a then b, from a's CRC, b's CRC and b's length (zlib's crc32_combine).
inline uint32_t crc32_combine(uint32_t crc_a, uint32_t crc_b, uint64_t bytes_b) {
  return static_cast<uint32_t>(::crc32_combine(crc_a, crc_b, static_cast<z_off_t>(bytes_b)));
}

/// The 8 lowercase hex digits of a checksum.
inline std::string crc_hex(uint32_t c) {
  static const char* digits = "0123456789abcdef";
  std::string s(8, '0');
  for (int i = 7; i >= 0; --i, c >>= 4) s[static_cast<size_t>(i)] = digits[c & 15];
  return s;
}

/// The checksums of a kChecksumKey value for `count` tensors; nullopt when it is malformed.
inline std::optional<std::vector<uint32_t>> parse_checksums(const std::string& v, size_t count) {
  if (count == 0 ? !v.empty() : v.size() != count * 9 - 1) return std::nullopt;
  std::vector<uint32_t> out;
  for (size_t i = 0; i < count; ++i) {
    uint32_t c = 0;
    for (size_t k = 0; k < 8; ++k) {
      const char ch = v[i * 9 + k];
      const int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
      if (d < 0) return std::nullopt;
      c = (c << 4) | static_cast<uint32_t>(d);
    }
    if (i + 1 < count && v[i * 9 + 8] != ',') return std::nullopt;
    out.push_back(c);
  }
  return out;
}

}  // namespace tensor::io::detail
