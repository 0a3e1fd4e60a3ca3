// A bounds-checked zip reader for torch.save archives (see Zip.h).
#include "src/io/Zip.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "src/core/Check.h"
#include "src/io/Checksum.h"

namespace tensor::io::detail {
namespace {

// Note [Reading torch.save zip archives]: torch.save writes an uncompressed (stored) zip with a
// zip64 end record; entries are aligned by padding their local headers' extra fields. We read
// the central directory (not the local headers' sizes, which a streaming writer may leave zero),
// take each entry's data offset from its local header's name and extra lengths, and check every
// offset and length against the buffer before touching it. Deflated entries (an archive
// re-zipped by another tool) are inflated with zlib, never beyond the size the directory
// declares, and the declared size itself is capped by deflate's best ratio (1032:1), so a tiny
// hostile archive cannot ask for gigabytes.
constexpr uint32_t kEocdSig = 0x06054b50, kEocd64Sig = 0x06064b50, kLocator64Sig = 0x07064b50;
constexpr uint32_t kCentralSig = 0x02014b50, kLocalSig = 0x04034b50;

struct Reader {
  const unsigned char* data;
  size_t size;
  const std::string& what;
  [[noreturn]] void fail(const std::string& msg) const { TENSOR_ERROR("{}: corrupt zip archive: {}", what, msg); }
  void need(uint64_t off, uint64_t n, const char* field) const {
    if (off > size || n > size - off)
      fail(fmt::format("the {} at byte {} ({} bytes) runs past the end of the {}-byte archive", field, off, n, size));
  }
  uint64_t le(uint64_t off, int n) const {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | data[off + static_cast<uint64_t>(i)];
    return v;
  }
  uint16_t u16(uint64_t off) const { return static_cast<uint16_t>(le(off, 2)); }
  uint32_t u32(uint64_t off) const { return static_cast<uint32_t>(le(off, 4)); }
  uint64_t u64(uint64_t off) const { return le(off, 8); }
};

}  // namespace

std::vector<ZipEntry> zip_entries(const unsigned char* data, size_t size, const std::string& what) {
  Reader r{data, size, what};
  if (size < 22) r.fail(fmt::format("{} bytes are too few for an end-of-central-directory record", size));
  // The end record is the last 22 bytes plus a comment of at most 65535 bytes.
  uint64_t eocd = UINT64_MAX;
  uint64_t lowest = size > 22 + 65535 ? size - 22 - 65535 : 0;
  for (uint64_t p = size - 22 + 1; p-- > lowest;) {
    if (r.u32(p) == kEocdSig && p + 22 + r.u16(p + 20) == size) {
      eocd = p;
      break;
    }
  }
  if (eocd == UINT64_MAX) r.fail("no end-of-central-directory record (truncated file?)");
  uint64_t count = r.u16(eocd + 10), cd_size = r.u32(eocd + 12), cd_offset = r.u32(eocd + 16);
  if (count == 0xffff || cd_size == 0xffffffff || cd_offset == 0xffffffff) {
    if (eocd < 20 || r.u32(eocd - 20) != kLocator64Sig) r.fail("a zip64 archive without its zip64 end locator");
    uint64_t e64 = r.u64(eocd - 20 + 8);
    r.need(e64, 56, "zip64 end record");
    if (r.u32(e64) != kEocd64Sig) r.fail("the zip64 end locator points at no zip64 end record");
    count = r.u64(e64 + 32);
    cd_size = r.u64(e64 + 40);
    cd_offset = r.u64(e64 + 48);
  }
  r.need(cd_offset, cd_size, "central directory");
  // Each central entry takes at least 46 bytes, which bounds the count by the file's size.
  if (count > cd_size / 46) r.fail(fmt::format("{} entries cannot fit in a {}-byte central directory", count, cd_size));

  std::vector<ZipEntry> out;
  out.reserve(count);
  uint64_t p = cd_offset, end = cd_offset + cd_size;
  for (uint64_t i = 0; i < count; ++i) {
    if (end - p < 46 || r.u32(p) != kCentralSig) r.fail(fmt::format("central directory entry {} is malformed", i));
    ZipEntry e;
    uint16_t flags = r.u16(p + 8);
    e.method = r.u16(p + 10);
    e.crc32 = r.u32(p + 16);
    e.compressed_size = r.u32(p + 20);
    e.size = r.u32(p + 24);
    uint64_t name_len = r.u16(p + 28), extra_len = r.u16(p + 30), comment_len = r.u16(p + 32);
    uint64_t local = r.u32(p + 42);
    if (end - p - 46 < name_len + extra_len + comment_len)
      r.fail(fmt::format("central directory entry {} runs past the directory", i));
    e.name.assign(reinterpret_cast<const char*>(data + p + 46), name_len);
    if (flags & 1) r.fail(fmt::format("entry '{}' is encrypted", e.name));
    // zip64 sizes and offset sit in extra field 0x0001, in this order, for the fields set to ~0.
    uint64_t x = p + 46 + name_len, xend = x + extra_len;
    while (xend - x >= 4) {
      uint16_t id = r.u16(x), len = r.u16(x + 2);
      if (xend - x - 4 < len) r.fail(fmt::format("entry '{}' has a truncated extra field", e.name));
      if (id == 1) {
        uint64_t q = x + 4, qend = q + len;
        auto take = [&](uint64_t& field) {
          if (field != 0xffffffff) return;
          if (qend - q < 8) r.fail(fmt::format("entry '{}' has a short zip64 extra field", e.name));
          field = r.u64(q);
          q += 8;
        };
        take(e.size);
        take(e.compressed_size);
        take(local);
      }
      x += 4 + len;
    }
    r.need(local, 30, "local file header");
    if (r.u32(local) != kLocalSig) r.fail(fmt::format("entry '{}' points at no local file header", e.name));
    e.data_offset = local + 30 + r.u16(local + 26) + r.u16(local + 28);
    r.need(e.data_offset, e.compressed_size, fmt::format("data of entry '{}'", e.name).c_str());
    if (e.method == 0 && e.size != e.compressed_size)
      r.fail(fmt::format("stored entry '{}' declares {} bytes but holds {}", e.name, e.size, e.compressed_size));
    if (e.method != 0 && e.method != 8)
      r.fail(fmt::format("entry '{}' uses compression method {} (only stored and deflated entries are read)", e.name,
                         e.method));
    if (e.method == 8 && e.size / 1032 > e.compressed_size + 1)
      r.fail(fmt::format("deflated entry '{}' claims {} bytes from {}, beyond deflate's ratio", e.name, e.size,
                         e.compressed_size));
    out.push_back(std::move(e));
    p += 46 + name_len + extra_len + comment_len;
  }
  return out;
}

std::string_view zip_read(const unsigned char* data, size_t size, const ZipEntry& e, std::string& scratch,
                          const std::string& what) {
  Reader r{data, size, what};
  r.need(e.data_offset, e.compressed_size, "entry data");
  std::string_view bytes(reinterpret_cast<const char*>(data + e.data_offset), e.compressed_size);
  if (e.method == 8) {
    scratch.assign(e.size, '\0');
    z_stream zs{};
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) r.fail("cannot start zlib");
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    zs.next_out = reinterpret_cast<Bytef*>(scratch.data());
    // zlib counts in uInt; the ratio check above keeps sizes of deflated entries modest, but
    // feed it in chunks anyway so that sizes above 4 GiB cannot wrap.
    uint64_t in_left = bytes.size(), out_left = scratch.size();
    int rc = Z_OK;
    while (rc == Z_OK) {
      uInt in_chunk = static_cast<uInt>(std::min<uint64_t>(in_left, 1u << 30));
      uInt out_chunk = static_cast<uInt>(std::min<uint64_t>(out_left, 1u << 30));
      zs.avail_in = in_chunk;
      zs.avail_out = out_chunk;
      rc = inflate(&zs, Z_NO_FLUSH);
      in_left -= in_chunk - zs.avail_in;
      out_left -= out_chunk - zs.avail_out;
      if (rc == Z_OK && zs.avail_in == in_chunk && zs.avail_out == out_chunk) break;  // no progress
      if (rc == Z_BUF_ERROR) break;
    }
    inflateEnd(&zs);
    if (rc != Z_STREAM_END || out_left != 0)
      r.fail(fmt::format("deflated entry '{}' does not inflate to its declared {} bytes", e.name, e.size));
    bytes = scratch;
  }
  if (crc32_of(bytes.data(), bytes.size()) != e.crc32) r.fail(fmt::format("entry '{}' fails its CRC-32 check", e.name));
  return bytes;
}

}  // namespace tensor::io::detail
