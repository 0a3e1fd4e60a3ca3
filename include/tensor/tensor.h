// The umbrella header: everything public in libtensor. Cheap to compile on purpose: no
// oneDNN, Highway, CUDA or OpenMP headers reach users.
#pragma once

#include "tensor/autograd/Function.h"
#include "tensor/autograd/autograd.h"
#include "tensor/conv.h"
#include "tensor/core/Device.h"
#include "tensor/core/Error.h"
#include "tensor/core/Scalar.h"
#include "tensor/core/ScalarType.h"
#include "tensor/core/Tensor.h"
#include "tensor/core/TensorOptions.h"
#include "tensor/cuda/cuda.h"
#include "tensor/dispatch/Library.h"
#include "tensor/indexing.h"
#include "tensor/onednn.h"
#include "tensor/ops.h"
#include "tensor/version.h"
