// The optim umbrella: Optimizer, SGD, Adam, AdamW, RMSprop, Adagrad, LBFGS and the lr schedulers.
#pragma once

#include "tensor/optim/adagrad.h"
#include "tensor/optim/adam.h"
#include "tensor/optim/lbfgs.h"
#include "tensor/optim/optimizer.h"
#include "tensor/optim/rmsprop.h"
#include "tensor/optim/schedulers.h"
#include "tensor/optim/sgd.h"
