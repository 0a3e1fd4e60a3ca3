// tensor::distributed: stores, process groups (Gloo, NCCL), init_process_group, new_group.
#pragma once

#include "tensor/distributed/process_group.h"
#include "tensor/distributed/process_group_nccl.h"
#include "tensor/distributed/store.h"
