// Internal to libtensor_cuda: streams, the per-thread current stream, the stream pool and
// events (Note [CUDA streams] in src/cuda/CUDAStream.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include "tensor/cuda/cuda.h"

namespace tensor::cuda_detail {

inline cudaStream_t as_stream(cuda::StreamId id) { return reinterpret_cast<cudaStream_t>(id); }
inline cuda::StreamId as_id(cudaStream_t s) { return reinterpret_cast<cuda::StreamId>(s); }

cuda::StreamId current_stream_id(int device);
void set_current_stream(int device, cuda::StreamId stream);
cuda::StreamId stream_from_pool(int device, bool high_priority);
bool stream_query(int device, cuda::StreamId stream);
void stream_synchronize(int device, cuda::StreamId stream);
int stream_priority(int device, cuda::StreamId stream);

void* event_create(int device, bool enable_timing, bool blocking);
void event_destroy(void* event, int device);
void event_record(void* event, int device, cuda::StreamId stream);
bool event_query(void* event, int device);
void event_synchronize(void* event, int device);
/// `stream_device`: the device of `stream` (made current for the wait), not the event's.
void event_block(void* event, int stream_device, cuda::StreamId stream);
float event_elapsed_ms(void* start, void* end, int device);

}  // namespace tensor::cuda_detail
