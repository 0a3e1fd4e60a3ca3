"""Helpers shared by the tests/reference/torch_*.py scripts, which print PyTorch's values as C++
headers for the tests: det() makes the deterministic inputs the tests recompute in C++,
fmt()/emit() print values exactly (17 significant digits), fill_params() fills a module's
parameters with det() values in named_parameters() order (parameter k with seed 100 + k)."""
import math

import torch

D = torch.float64


def det(shape, seed, lo=-1.0, hi=1.0):
    n = 1
    for s in shape:
        n *= s
    v = [lo + (hi - lo) * (((i * 37 + seed * 11 + 5) % 101) + 0.5) / 101 for i in range(n)]
    return torch.tensor(v, dtype=D).reshape(shape)


def fmt(v):
    v = float(v)
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    s = "%.17g" % v
    if "e" not in s and "." not in s and "n" not in s:
        s += ".0"
    return s


def emit(name, t):
    vals = t.detach().reshape(-1).tolist()
    print("const std::vector<double> %s = {%s};" % (name, ", ".join(fmt(v) for v in vals)))


def fill_params(module):
    with torch.no_grad():
        for k, (n, p) in enumerate(module.named_parameters()):
            p.copy_(det(list(p.shape), 100 + k, -0.5, 0.5))
