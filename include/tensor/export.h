// Symbol export for libtensor. Everything is hidden by default (-fvisibility=hidden);
// the public API is exported through TENSOR_API.
#pragma once

#if defined(TENSOR_STATIC)
#define TENSOR_API
#else
#define TENSOR_API __attribute__((visibility("default")))
#endif
