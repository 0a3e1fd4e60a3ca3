// The nn umbrella: modules, functional, init and utils (`namespace nn = tensor::nn;`).
#pragma once

#include "tensor/nn/attention.h"
#include "tensor/nn/conv.h"
#include "tensor/nn/enum.h"
#include "tensor/nn/expanding_array.h"
#include "tensor/nn/functional.h"
#include "tensor/nn/init.h"
#include "tensor/nn/module.h"
#include "tensor/nn/modules.h"
#include "tensor/nn/norm_pool.h"
#include "tensor/nn/options.h"
#include "tensor/nn/ordered_dict.h"
#include "tensor/nn/pimpl.h"
#include "tensor/nn/utils.h"
