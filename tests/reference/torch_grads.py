#!/usr/bin/env python3
"""Reference gradients from real PyTorch, printed as C++ initializer lines.

Complex unary:  x = [0.3+0.2j, 0.7-0.4j], w = [1-0.3j, 0.5+0.2j],
                y = f(x) * w, l = sum(real(y) + imag(y)), print x.grad.
Complex binary: z = [0.4-0.1j, -0.2+0.6j], y = f(x, z) * w, same loss,
                print x.grad and z.grad.
Real float64:   loss = sum(f(a, b) * wr), print f(a, b), a.grad, b.grad.

Non-finite numbers print as NAN / INFINITY (<cmath>), -0.0 keeps its sign.
"""
import math
import sys

import torch

torch.set_printoptions(precision=17)
C = torch.complex128
R = torch.float64


def fmt(v):
    v = float(v)
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    if v == 0.0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    s = "%.17g" % v
    if "e" not in s and "." not in s:
        s += ".0"
    return s


def cvec(t):
    return "{" + ", ".join("{%s, %s}" % (fmt(c.real), fmt(c.imag))
                           for c in t.detach().tolist()) + "}"


def rvec(t):
    return "{" + ", ".join(fmt(v) for v in t.detach().tolist()) + "}"


X0 = [0.3 + 0.2j, 0.7 - 0.4j]
Z0 = [0.4 - 0.1j, -0.2 + 0.6j]
W = torch.tensor([1 - 0.3j, 0.5 + 0.2j], dtype=C)


def closs(y):
    y = y * W
    return (y.real + y.imag).sum()


print("// torch %s, complex128" % torch.__version__)
print("// x = {0.3+0.2i, 0.7-0.4i}, w = {1-0.3i, 0.5+0.2i}, "
      "l = sum(re(f(x)*w) + im(f(x)*w))")
print("// unary: {name, x.grad}")

unary = [
    ("log", torch.log), ("sin", torch.sin), ("log2", torch.log2),
    ("log10", torch.log10), ("log1p", torch.log1p), ("expm1", torch.expm1),
    ("exp2", torch.exp2), ("rsqrt", torch.rsqrt), ("tan", torch.tan),
    ("asin", torch.asin), ("acos", torch.acos), ("atan", torch.atan),
    ("sinh", torch.sinh), ("cosh", torch.cosh),
    ("exp", torch.exp), ("sqrt", torch.sqrt), ("cos", torch.cos),
    ("tanh", torch.tanh), ("sigmoid", torch.sigmoid),
    ("reciprocal", torch.reciprocal), ("square", torch.square),
    ("neg", torch.neg), ("abs", torch.abs), ("sgn", torch.sgn),
    ("sign", torch.sign),
    # extras, not in the original list
    ("asinh", torch.asinh), ("acosh", torch.acosh), ("atanh", torch.atanh),
]

skipped = []
results = {}
for name, f in unary:
    x = torch.tensor(X0, dtype=C, requires_grad=True)
    try:
        closs(f(x)).backward()
    except Exception as e:  # torch rejects some ops for complex
        skipped.append((name, str(e).splitlines()[0]))
        continue
    results[name] = x.grad.clone()
    print('{"%s", %s},' % (name, cvec(x.grad)))

for name, msg in skipped:
    print("// skipped %s: %s" % (name, msg))

g = results["log2"][0]
assert abs(g.real - (-0.554883)) < 1e-6 and abs(g.imag - 5.881757) < 1e-6, g
print("// check: log2 grad[0] = %.6f%+.6fi (expected -0.554883+5.881757i) OK"
      % (g.real, g.imag))

print()
print("// binary: z = {0.4-0.1i, -0.2+0.6i}; {name, x.grad, z.grad}")
alpha = 0.5 + 0.25j
binary = [
    ("mul", lambda a, b: a * b),
    ("div", lambda a, b: a / b),
    ("pow", lambda a, b: a ** b),
    ("add_alpha", lambda a, b: torch.add(a, b, alpha=alpha)),
    ("sub_alpha", lambda a, b: torch.sub(a, b, alpha=alpha)),
]
print("// add_alpha/sub_alpha: alpha = 0.5+0.25i")
for name, f in binary:
    x = torch.tensor(X0, dtype=C, requires_grad=True)
    z = torch.tensor(Z0, dtype=C, requires_grad=True)
    try:
        closs(f(x, z)).backward()
    except Exception as e:
        print("// skipped %s: %s" % (name, str(e).splitlines()[0]))
        continue
    print('{"%s", %s, %s},' % (name, cvec(x.grad), cvec(z.grad)))


def real_case(label, f, a0, b0, wr):
    a = torch.tensor(a0, dtype=R, requires_grad=True)
    b = torch.tensor(b0, dtype=R, requires_grad=True)
    out = f(a, b)
    (out * torch.tensor(wr, dtype=R)).sum().backward()
    ga = a.grad if a.grad is not None else torch.zeros_like(a)
    gb = b.grad if b.grad is not None else torch.zeros_like(b)
    print('{"%s", %s, %s, %s},' % (label, rvec(out), rvec(ga), rvec(gb)))


print()
print("// real float64: {name, f(a,b), a.grad, b.grad}; loss = sum(f(a,b) * wr)")
A = [0.3, -1.2, 2.0, 0.0]
B = [0.5, 0.7, -1.5, 2.0]
WR4 = [1.0, -2.0, 0.5, 3.0]
WR3 = [1.0, -2.0, 0.5]
print("// a = {0.3, -1.2, 2.0, 0.0}, b = {0.5, 0.7, -1.5, 2.0}, "
      "wr = {1.0, -2.0, 0.5, 3.0}")
for name, f in [("hypot", torch.hypot), ("logaddexp", torch.logaddexp),
                ("xlogy", torch.xlogy), ("copysign", torch.copysign)]:
    real_case(name, f, A, B, WR4)

print("// edge cases, 3 elements use wr = {1.0, -2.0, 0.5}")
print("// xlogy: a = {0.0, 0.0, 1.5}, b = {0.0, 2.0, 0.0}")
real_case("xlogy_zeros", torch.xlogy, [0.0, 0.0, 1.5], [0.0, 2.0, 0.0], WR3)
print("// copysign: a = {0.3, -1.2, 2.0, 0.0}, b = {-0.0, 0.0, -0.0, -0.0}, "
      "wr = {1.0, -2.0, 0.5, 3.0}")
real_case("copysign_signed_zero", torch.copysign,
          A, [-0.0, 0.0, -0.0, -0.0], WR4)
print("// copysign: a = {0.3, -1.2, 2.0, -0.0}, b = {0.0, -0.0, 0.0, 0.0}, "
      "wr = {1.0, -2.0, 0.5, 3.0}")
real_case("copysign_signed_zero2", torch.copysign,
          [0.3, -1.2, 2.0, -0.0], [0.0, -0.0, 0.0, 0.0], WR4)
print("// logaddexp: a = {-inf, 1000, -1000}, b = {-inf, 1000, -999}")
real_case("logaddexp_inf", torch.logaddexp,
          [-math.inf, 1000.0, -1000.0], [-math.inf, 1000.0, -999.0], WR3)
