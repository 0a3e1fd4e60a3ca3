// tensor::distributed: stores, process groups (Gloo, NCCL), init_process_group, new_group,
// DistributedDataParallel, FSDP, pipeline parallelism and distributed checkpoints.
#pragma once

#include "tensor/distributed/checkpoint.h"
#include "tensor/distributed/fsdp.h"
#include "tensor/distributed/pipeline.h"
#include "tensor/distributed/process_group.h"
#include "tensor/distributed/process_group_nccl.h"
#include "tensor/distributed/store.h"
#include "tensor/nn/parallel/distributed.h"
