// libtensor version. The SONAME carries the major version.
#pragma once

#define TENSOR_VERSION_MAJOR 0
#define TENSOR_VERSION_MINOR 1
#define TENSOR_VERSION_PATCH 0
#define TENSOR_VERSION_STRING "0.1.0"
