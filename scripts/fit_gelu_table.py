#!/usr/bin/env python3
"""Fits the gelu table of kernels/cpu/VecMath-inl.h (Note [Gelu by table]) and checks it.

g(u) = u Phi(-u) on [0, 4) is split into 16 intervals of width 1/4; on interval k a degree-5
polynomial in s = 4u - k, s in [0, 1), is fitted for least maximum relative error (Lawson-
weighted least squares on Chebyshev nodes). Interval 0 keeps g's slope at 0 exactly (1/8 in s),
so gelu(x) = x / 2 rounds once for tiny x. The float32 coefficients are then evaluated as the
kernel does (fma Horner, then max(x, 0) - g) on random float32 inputs in (-4, 4), against
0.5 x erfc(-x / sqrt 2) in float64, and the max ulp error is printed.

Needs numpy (pip install numpy); a developer tool, not part of the build.
Usage: python3 scripts/fit_gelu_table.py [--check N]
"""
import math
import sys

import numpy as np

WIDTH, DEG, NINT = 0.25, 5, 16


def g(u):
    return u * 0.5 * np.vectorize(math.erfc)(u / math.sqrt(2))


def fit():
    m = 4000
    s = 0.5 - 0.5 * np.cos(np.pi * (np.arange(m) + 0.5) / m)  # Chebyshev nodes on [0, 1]
    table = np.zeros((DEG + 1, NINT), dtype=np.float32)
    for k in range(NINT):
        y = g((k + s) * WIDTH)
        first = 2 if k == 0 else 0  # interval 0: c0 = 0, c1 = 1/8 exactly
        target = y - (0.125 * s if k == 0 else 0)
        basis = np.stack([s**j for j in range(first, DEG + 1)], 1)
        w, lw = 1 / np.abs(y), np.ones(m)
        for _ in range(60):
            ww = w * np.sqrt(lw)
            c, *_ = np.linalg.lstsq(basis * ww[:, None], target * ww, rcond=None)
            err = np.abs((basis @ c - target) / y)
            lw = lw * err
            lw /= lw.sum()
        if k == 0:
            c = np.concatenate([[0.0, 0.125], c])
        table[:, k] = c.astype(np.float32)
    return table


def check(table, n):
    rng = np.random.default_rng(1)
    xs = rng.integers(0, 0x40800000, size=n, dtype=np.int64).astype(np.uint32).view(np.float32)
    xs = np.concatenate([xs, -xs])
    t = np.abs(xs) * np.float32(1 / WIDTH)
    f = np.floor(t)
    k = f.astype(np.int32)
    s = (t - f).astype(np.float32)
    p = table[DEG, k]
    for j in range(DEG - 1, -1, -1):  # fma: exact product, one rounding
        p = (p.astype(np.float64) * s + table[j, k]).astype(np.float32)
    y = (np.maximum(np.float32(0), xs) - p).astype(np.float32)
    x64 = xs.astype(np.float64)
    ref = x64 * 0.5 * np.vectorize(math.erfc)(-x64 / math.sqrt(2))
    ulp = np.maximum(np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64), 2.0**-149)
    e = np.abs(y - ref) / ulp * (np.abs(ref) >= 2.0**-126)
    i = int(np.argmax(e))
    print(f"max {e[i]:.3f} ulp at x = {float(xs[i])!r} over {2 * n} normal-result inputs in (-4, 4)")


def main():
    table = fit()
    print("  static constexpr float kG[%d][%d] = {" % (DEG + 1, NINT))
    for j in range(DEG + 1):
        print("      {" + ", ".join("%.9e" % float(v) for v in table[j]) + "},")
    print("  };")
    n = int(sys.argv[sys.argv.index("--check") + 1]) if "--check" in sys.argv else 1_000_000
    check(table, n)


if __name__ == "__main__":
    main()
