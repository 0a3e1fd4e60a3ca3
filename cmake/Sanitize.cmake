# TENSOR_SANITIZE=address,undefined (or thread, ...) instruments the whole build: the library,
# tests, examples and benchmarks (Note [Sanitizer builds] in docs/testing.md).
# The flags are set before any target exists, so every target in the tree gets them; CUDA
# sources (compiled by nvcc) are left alone.

# Note [Fuzz builds]: TENSOR_BUILD_FUZZERS adds the libFuzzer targets of tests/fuzz. libFuzzer
# ships with clang only. Every C++ source gets coverage instrumentation
# (-fsanitize=fuzzer-no-link) so the fuzzers see the branches taken inside the library, and the
# build is sanitized as TENSOR_SANITIZE says, address,undefined when left empty, so an
# out-of-bounds read or an overflow is a crash the fuzzer reports rather than a silent wrong
# value. Only the fuzz targets link libFuzzer itself (-fsanitize=fuzzer, which brings main()).
set(TENSOR_FUZZING OFF)
if(TENSOR_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(WARNING "TENSOR_BUILD_FUZZERS needs clang (libFuzzer); with ${CMAKE_CXX_COMPILER_ID} no fuzzers are built "
                    "(configure with CXX=clang++-14)")
  else()
    set(TENSOR_FUZZING ON)
    if(NOT TENSOR_SANITIZE)
      set(TENSOR_SANITIZE address,undefined)
    endif()
    if(TENSOR_SANITIZE MATCHES "thread")
      message(FATAL_ERROR "TENSOR_BUILD_FUZZERS: libFuzzer does not run under ThreadSanitizer; use address,undefined")
    endif()
    add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>")
    message(STATUS "libtensor: fuzzers ON (coverage-instrumented build)")
  endif()
endif()

if(NOT TENSOR_SANITIZE)
  return()
endif()
if(TENSOR_SANITIZE MATCHES "thread" AND TENSOR_SANITIZE MATCHES "address")
  message(FATAL_ERROR "TENSOR_SANITIZE=${TENSOR_SANITIZE}: ThreadSanitizer cannot be combined with AddressSanitizer")
endif()
set(_tensor_san -fsanitize=${TENSOR_SANITIZE} -fno-omit-frame-pointer)
if(TENSOR_SANITIZE MATCHES "undefined")
  # A report fails the test that triggered it, instead of scrolling past in its output.
  list(APPEND _tensor_san -fno-sanitize-recover=undefined)
endif()
add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${_tensor_san}>")
add_link_options(-fsanitize=${TENSOR_SANITIZE})
message(STATUS "libtensor: sanitizers ON (${TENSOR_SANITIZE})")
