#!/usr/bin/env python3
"""Fallback PyTorch twin of benchmarks/bench_cuda.cpp, for when torch_cuda_twin.cpp cannot be
built on the GPU machine: the same case names, sizes and byte counts, printed the same way
(tab-separated: case, seconds per call, GB/s or TFLOP/s for the products; or case, "error",
message).

Timed with CUDA events around batches of calls (about 2 ms of work at copy speed), so the
Python launch cost stays hidden behind the queued kernels as long as each kernel outlasts it.
Usage: python3 twin.py [SUBSTRING...]
"""
import math
import sys

import torch

K16M, K256M, K4K = 16 << 20, 256 << 20, 4096


def gpu_seconds(fn, expected_seconds, reps=15):
    """Median seconds per call; expected_seconds only sizes the batches (about 2 ms of work)."""
    inner = max(1, math.ceil(2e-3 / expected_seconds))
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / inner)
    return sorted(times)[len(times) // 2]


def gpu(*sizes, dtype=torch.float32):
    return torch.rand(*sizes, dtype=dtype, device="cuda")


def add_case(n, dtype):
    a, b, c = gpu(n, dtype=dtype), gpu(n, dtype=dtype), torch.empty(n, dtype=dtype, device="cuda")
    return lambda: torch.add(a, b, out=c)


def mul_case(n):
    a, b = gpu(n), gpu(n)
    return lambda: a * b


def exp_case(n):
    a = gpu(n)
    return lambda: torch.exp(a)


def copy_case():
    src, dst = gpu(K256M), torch.empty(K256M, device="cuda")
    return lambda: dst.copy_(src)


def sum_case():
    a = gpu(K256M)
    return lambda: a.sum()


def sum_lastdim_case():
    a = gpu(K4K, K4K)
    return lambda: a.sum(1)


def softmax_case():
    a = gpu(K4K, K4K)
    return lambda: torch.softmax(a, 1)


def mm_case(n, k, m, dtype):
    a, b = gpu(n, k, dtype=dtype), gpu(k, m, dtype=dtype)
    return lambda: torch.mm(a, b)


def linear_case():
    x, w, b = gpu(128, 784), gpu(1024, 784), gpu(1024)
    return lambda: torch.nn.functional.linear(x, w, b)


# Products (Note [GPU matmul cases] in bench_cuda.cpp): name, FLOPs per call, the FLOP rate
# assumed to size the batches, body. Their figure is TFLOP/s.
MM_FLOPS_4096 = 2.0 * K4K ** 3
MLP_FLOPS = 2.0 * 128 * 784 * 1024
PRODUCTS = [
    ("cuda_mm_4096", MM_FLOPS_4096, 50e12, lambda: mm_case(K4K, K4K, K4K, torch.float32)),
    ("cuda_mm_bf16_4096", MM_FLOPS_4096, 600e12, lambda: mm_case(K4K, K4K, K4K, torch.bfloat16)),
    ("cuda_mm_128x784x1024", MLP_FLOPS, 50e12, lambda: mm_case(128, 784, 1024, torch.float32)),
    ("cuda_linear_128x784x1024", MLP_FLOPS, 50e12, linear_case),
]

# name, bytes per call, body (allocates the inputs, returns the timed call)
CASES = [
    ("cuda_copy_256M", 2.0 * 4 * K256M, copy_case),
    ("cuda_add_16M", 3.0 * 4 * K16M, lambda: add_case(K16M, torch.float32)),
    ("cuda_add_256M", 3.0 * 4 * K256M, lambda: add_case(K256M, torch.float32)),
    ("cuda_mul_16M", 3.0 * 4 * K16M, lambda: mul_case(K16M)),
    ("cuda_mul_256M", 3.0 * 4 * K256M, lambda: mul_case(K256M)),
    ("cuda_exp_16M", 2.0 * 4 * K16M, lambda: exp_case(K16M)),
    ("cuda_exp_256M", 2.0 * 4 * K256M, lambda: exp_case(K256M)),
    ("cuda_add_bf16_16M", 3.0 * 2 * K16M, lambda: add_case(K16M, torch.bfloat16)),
    ("cuda_add_bf16_256M", 3.0 * 2 * K256M, lambda: add_case(K256M, torch.bfloat16)),
    ("cuda_add_f16_256M", 3.0 * 2 * K256M, lambda: add_case(K256M, torch.float16)),
    ("cuda_sum_256M", 4.0 * K256M, sum_case),
    ("cuda_sum_lastdim_4096", 4.0 * (K4K * K4K + K4K), sum_lastdim_case),
    ("cuda_softmax_4096", 4.0 * 2 * K4K * K4K, softmax_case),
]


def main():
    if not torch.cuda.is_available():
        print("# no GPU visible to PyTorch")
        return 2
    print(f"# twin.py: torch {torch.__version__} (Python), {torch.cuda.get_device_name()}")
    errors = 0
    # (name, expected seconds per call, figure from seconds, body)
    runs = [(n, b / 3e12, lambda s, b=b: b / s / 1e9, f) for n, b, f in CASES]
    runs += [(n, fl / rate, lambda s, fl=fl: fl / s / 1e12, f) for n, fl, rate, f in PRODUCTS]
    for name, expected, figure, body in runs:
        if len(sys.argv) > 1 and not any(s in name for s in sys.argv[1:]):
            continue
        try:
            sec = gpu_seconds(body(), expected)
            print(f"{name}\t{sec:.9g}\t{figure(sec):.1f}", flush=True)
        except Exception as e:  # noqa: BLE001 - one failing case must not hide the others
            print(f"{name}\terror\t{str(e).splitlines()[0] if str(e) else type(e).__name__}", flush=True)
            errors += 1
        torch.cuda.empty_cache()
    return 3 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
