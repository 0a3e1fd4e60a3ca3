# Dependencies come from Debian packages (scripts/setup.sh installs them).
find_package(fmt REQUIRED)
find_package(hwy REQUIRED)
find_package(OpenMP REQUIRED)
find_package(dnnl REQUIRED)
# zlib reads gzipped IDX files (data::datasets::MNIST); nlohmann_json (header-only) parses
# safetensors headers. Both stay private: no public header includes them.
find_package(ZLIB REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
# libdeflate's CRC-32 (carry-less multiply folding) checks checkpoint data at memory speed,
# 3-4x zlib's (Note [Checkpoint checksums]). Debian ships no CMake package for it: the library's
# path is linked directly, which a static libtensor's exported link line carries as is.
find_library(TENSOR_LIBDEFLATE deflate REQUIRED)
find_path(TENSOR_LIBDEFLATE_INCLUDE libdeflate.h REQUIRED)
# Gloo (Debian's libgloo-dev) runs the CPU collectives of tensor::distributed over TCP.
find_package(Gloo CONFIG REQUIRED)
find_package(Threads REQUIRED)
