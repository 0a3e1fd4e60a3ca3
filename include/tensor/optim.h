// The optim umbrella: Optimizer, SGD, Adam, AdamW and the lr schedulers.
#pragma once

#include "tensor/optim/adam.h"
#include "tensor/optim/optimizer.h"
#include "tensor/optim/schedulers.h"
#include "tensor/optim/sgd.h"
