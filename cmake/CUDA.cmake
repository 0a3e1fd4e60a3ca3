# The CUDA backend, libtensor_cuda (Note [CUDA hooks] in src/core/CUDAHooks.h): compiled whenever
# nvcc is found (sm_90 SASS plus PTX by default), as a shared library that libtensor opens on
# first use, or a static archive beside a static libtensor. libtensor itself links no CUDA
# library. Without nvcc there is no libtensor_cuda, and libtensor's stand-in raises a clear
# tensor::Error for anything that needs CUDA.
include(CheckLanguage)
set(TENSOR_HAVE_CUDA OFF)
set(TENSOR_CUDA_INSTALL_TARGETS "")
if(TENSOR_USE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(TENSOR_HAVE_CUDA ON)
  endif()
endif()

# A program that may use CUDA tensors: with a shared libtensor, libtensor_cuda is built with it
# (libtensor opens it at run time); with a static one, the program links it.
function(tensor_uses_cuda target)
  if(TARGET tensor_cuda)
    if(TENSOR_BUILD_SHARED)
      add_dependencies(${target} tensor_cuda)
    else()
      target_link_libraries(${target} PRIVATE tensor_cuda)
    endif()
  endif()
endfunction()

if(NOT TENSOR_HAVE_CUDA)
  message(STATUS "libtensor: CUDA backend OFF (nvcc not found)")
  return()
endif()

if(NOT CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90)  # "90": sm_90 SASS and compute_90 PTX
endif()
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
file(GLOB TENSOR_CUDA_SOURCES CONFIGURE_DEPENDS src/cuda/*.cpp kernels/cuda/*.cu)
if(TENSOR_BUILD_SHARED)
  add_library(tensor_cuda SHARED ${TENSOR_CUDA_SOURCES})
  set_target_properties(tensor_cuda PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})
else()
  add_library(tensor_cuda STATIC ${TENSOR_CUDA_SOURCES})
  # libtensor references the entry point weakly; this pulls it (and the kernels) into a program.
  target_link_options(tensor_cuda INTERFACE "LINKER:--undefined=tensor_cuda_hooks")
endif()
add_library(libtensor::tensor_cuda ALIAS tensor_cuda)
target_include_directories(tensor_cuda PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(tensor_cuda PUBLIC tensor PRIVATE CUDA::cudart CUDA::cublasLt fmt::fmt)
target_compile_options(tensor_cuda PRIVATE
  # The host code reads TensorIterators but never runs their OpenMP loops: no -fopenmp here.
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter -Wno-unknown-pragmas -fno-math-errno>
  # Warnings are errors in .cu files (issue 21); -Xcompiler passes the host compiler's.
  $<$<COMPILE_LANGUAGE:CUDA>:--Werror=all-warnings -Xcompiler=-Wall,-Wextra,-Wno-unused-parameter --expt-relaxed-constexpr>)
set_target_properties(tensor_cuda PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON CUDA_VISIBILITY_PRESET hidden
  CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}")

# NCCL (the "nccl" process-group backend) from the CUDA toolkit's folders, when present.
find_path(TENSOR_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
find_library(TENSOR_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
if(TENSOR_NCCL_INCLUDE_DIR AND TENSOR_NCCL_LIBRARY)
  target_sources(tensor_cuda PRIVATE src/distributed/nccl/ProcessGroupNCCL.cpp)
  target_include_directories(tensor_cuda PRIVATE ${TENSOR_NCCL_INCLUDE_DIR})
  target_link_libraries(tensor_cuda PRIVATE ${TENSOR_NCCL_LIBRARY})
  target_compile_definitions(tensor_cuda PRIVATE TENSOR_WITH_NCCL=1)
  message(STATUS "libtensor: NCCL backend ON (${TENSOR_NCCL_LIBRARY})")
else()
  message(STATUS "libtensor: NCCL backend OFF")
endif()

# kernels/math compiled as device code: every shared header builds under nvcc with warnings
# as errors (tests/test_math_shared.cpp runs them on the CPU).
add_library(tensor_math_device_check OBJECT tests/cuda/math_device_check.cu)
target_include_directories(tensor_math_device_check PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/include)
target_compile_options(tensor_math_device_check PRIVATE --Werror=all-warnings)
set_target_properties(tensor_math_device_check PROPERTIES CUDA_STANDARD 17 CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}")

set(TENSOR_CUDA_INSTALL_TARGETS tensor_cuda)
message(STATUS "libtensor: CUDA backend ON (libtensor_cuda, architectures ${CMAKE_CUDA_ARCHITECTURES})")
