# Dependencies come from Debian packages (scripts/setup.sh installs them).
find_package(fmt REQUIRED)
find_package(hwy REQUIRED)
find_package(OpenMP REQUIRED)
find_package(dnnl REQUIRED)
# zlib reads gzipped IDX files (data::datasets::MNIST); nlohmann_json (header-only) parses
# safetensors headers. Both stay private: no public header includes them.
find_package(ZLIB REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
# ISA-L's CRC-32 (carry-less multiply folding, AVX-512 where the CPU has VPCLMULQDQ) checks
# checkpoint data faster than memory copies it (Note [Fast CRC-32]). Debian ships no CMake
# package for it: the library's path is linked directly, which a static libtensor's exported
# link line carries as is.
find_library(TENSOR_ISAL isal REQUIRED)
find_path(TENSOR_ISAL_INCLUDE isa-l/crc.h REQUIRED)
# Gloo (Debian's libgloo-dev) runs the CPU collectives of tensor::distributed over TCP.
find_package(Gloo CONFIG REQUIRED)
find_package(Threads REQUIRED)
