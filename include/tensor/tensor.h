// The umbrella header: everything public in libtensor. Cheap to compile on purpose: no
// oneDNN, Highway, CUDA or OpenMP headers reach users.
#pragma once

// libtorch's headers reach <numeric> (c10/core/TensorImpl.h includes it), so ported programs call
// std::accumulate and std::iota without including it (README "Porting from libtorch").
#include <numeric>

#include "tensor/autograd/Function.h"
#include "tensor/amp.h"
#include "tensor/autograd/autograd.h"
#include "tensor/autograd/dot.h"
#include "tensor/autograd/hooks.h"
#include "tensor/conv.h"
#include "tensor/core/Device.h"
#include "tensor/core/Error.h"
#include "tensor/core/Exception.h"
#include "tensor/core/Scalar.h"
#include "tensor/core/ScalarType.h"
#include "tensor/core/StrCat.h"
#include "tensor/core/Tensor.h"
#include "tensor/core/TensorOptions.h"
#include "tensor/cuda/cuda.h"
#include "tensor/data.h"
#include "tensor/dispatch/Library.h"
#include "tensor/indexing.h"
#include "tensor/io.h"
#include "tensor/linalg.h"
#include "tensor/nn.h"
#include "tensor/normalization.h"
#include "tensor/onednn.h"
#include "tensor/ops.h"
#include "tensor/optim.h"
#include "tensor/optional.h"
#include "tensor/pickle.h"
#include "tensor/pooling.h"
#include "tensor/ported_ops.h"
#include "tensor/profiler/profiler.h"
#include "tensor/quantized.h"
#include "tensor/serialize.h"
#include "tensor/version.h"
