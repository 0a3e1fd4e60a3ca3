# TENSOR_SANITIZE=address,undefined (or thread, ...) instruments the whole build: the library,
# tests, examples and benchmarks (Note [Sanitizer builds] in docs/testing.md).
# The flags are set before any target exists, so every target in the tree gets them; CUDA
# sources (compiled by nvcc) are left alone.
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
