// Mixed precision: autocast regions and GradScaler (docs/amp.md).
#pragma once

#include "tensor/amp/autocast.h"
#include "tensor/amp/grad_scaler.h"
