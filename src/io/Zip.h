// Internal: a small, bounds-checked reader of zip archives held in memory, enough for the
// archives torch.save writes (Note [Reading torch.save zip archives] in src/io/Zip.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tensor::io::detail {

/// One file of a zip archive, as its central directory describes it.
struct ZipEntry {
  std::string name;
  uint16_t method = 0;  // 0: stored, 8: deflated
  uint64_t compressed_size = 0;
  uint64_t size = 0;         // uncompressed
  uint64_t data_offset = 0;  // where the (compressed) bytes start in the archive
  uint32_t crc32 = 0;
};

/// The entries of the archive `data[0, size)`; throws tensor::Error ("<what>: ...") when the
/// archive is malformed. Every returned entry's bytes lie inside `data`.
std::vector<ZipEntry> zip_entries(const unsigned char* data, size_t size, const std::string& what);

/// The uncompressed bytes of `entry`, CRC checked: for a stored entry (what torch.save writes) a
/// view into `data`, for a deflated one the bytes inflated into `scratch`.
std::string_view zip_read(const unsigned char* data, size_t size, const ZipEntry& entry, std::string& scratch,
                          const std::string& what);

}  // namespace tensor::io::detail
