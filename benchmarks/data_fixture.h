// Shared by bench_data.cpp and torch_data.cpp: files both libraries read, prepared once.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace bench {

/// A directory holding Fashion-MNIST's IDX files uncompressed (libtorch's MNIST reads only
/// plain files), made from Debian's dataset-fashion-mnist on first use; "" when not installed.
inline std::string plain_mnist_dir() {
  static const std::string dir = [] {
    const std::string src = "/usr/share/datasets/fashion-mnist";
    const std::string dst = "/tmp/libtensor_bench_mnist";
    struct stat st;
    if (::stat((src + "/train-images-idx3-ubyte.gz").c_str(), &st) != 0) return std::string();
    const char* names[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                           "t10k-labels-idx1-ubyte"};
    ::mkdir(dst.c_str(), 0755);
    for (const char* n : names) {
      std::string out = dst + "/" + n;
      if (::stat(out.c_str(), &st) == 0) continue;
      std::string cmd = "gzip -dc '" + src + "/" + n + ".gz' > '" + out + ".part' && mv '" + out + ".part' '" + out + "'";
      if (std::system(cmd.c_str()) != 0) return std::string();
    }
    return dst;
  }();
  return dir;
}

/// Where the checkpoint cases write (beside the MNIST copy, on the same disk).
inline std::string checkpoint_path(const char* name) { return std::string("/tmp/libtensor_bench_") + name; }

constexpr int kCheckpointTensors = 16;
constexpr long kCheckpointNumel = 1 << 20;  // 16 x 4 MB = 64 MB of float32

}  // namespace bench
