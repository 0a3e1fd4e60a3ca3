#!/usr/bin/env python3
"""ctest bench_ops.cli: bench_ops's options, and its --json output read by bench_report.py.

--help prints usage and runs nothing (no hardware reference line, which every run prints
first); --list names the registered cases with their areas, and --sweep --list the sweep's,
which has four cases for every public elementwise op of kernels/OpList.h; an unknown option
exits 2 with usage; --json on three fast cases writes the documented fields, with shares
consistent with the same-run limits and the declared work, and ratios against the faster peer.
Passes with or without the torch wheel's peer (bench_torch_peer); without it (or when it
cannot start) every wheel figure is null.
Usage: bench_cli_test.py BENCH_OPS REPORT_SCRIPT
"""
import json
import os
import re
import subprocess
import sys
import tempfile

CASE_KEYS = {"name", "area", "goal", "ours", "libtorch", "libtorch_wheel", "ratio", "ratio_libtorch",
             "ratio_libtorch_wheel", "faster_peer", "flops_per_call", "bytes_per_call", "limit", "share_of_limit"}


def run(*args, timeout=300, env=None):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout,
                          env=None if env is None else dict(os.environ, **env))


def public_elementwise_ops(root):
    """Names of the op list's public unary and binary ops (api other than Internal)."""
    text = open(os.path.join(root, "kernels", "OpList.h"), encoding="utf-8").read()
    rows = re.findall(r"X\((\w+), (\w+), [^,]+, (\w+), (\w+)\)", text)
    assert len(rows) > 50, rows  # both lists parsed
    return sorted({name for enum, name, _, api in rows if api != "Internal" and enum != "Enum"})  # not the legend


def check_peers(doc, cases):
    """Peer fields: null without a peer; ratios are time ratios, `ratio` against the faster."""
    for c in cases.values():
        assert set(c) == CASE_KEYS, set(c) ^ CASE_KEYS
        assert c["ours"]["seconds"] > 0
        peers = {k: c[k]["seconds"] for k in ("libtorch", "libtorch_wheel") if c[k] is not None}
        for k in ("libtorch", "libtorch_wheel"):
            if doc[k] is None:
                assert c[k] is None and c["ratio_" + k] is None, c
            if c[k] is None:
                assert c["ratio_" + k] is None, c
            else:
                assert close(c["ratio_" + k], c["ours"]["seconds"] / c[k]["seconds"]), c
        if peers:
            faster = min(peers, key=peers.get)
            assert c["faster_peer"] == faster, c
            assert close(c["ratio"], c["ours"]["seconds"] / peers[faster]), c
        else:
            assert c["ratio"] is None and c["faster_peer"] is None, c


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def main():
    bench, report = sys.argv[1], sys.argv[2]
    root = os.path.dirname(os.path.dirname(os.path.abspath(report)))

    for flag in ("--help", "-h"):
        r = run(bench, flag, timeout=120)
        assert r.returncode == 0, (flag, r.returncode, r.stderr)
        assert r.stdout.startswith("Usage: bench_ops"), r.stdout
        assert "(ref)" not in r.stdout and "libtensor vs libtorch" not in r.stdout, r.stdout

    r = run(bench, "--list", timeout=120)
    assert r.returncode == 0, r.stderr
    listed = {}
    for line in r.stdout.splitlines():
        area, name = line.split(None, 1)
        listed[name] = area
    for name, area in [("eager_add_1elem", "ops"), ("sum_16M", "ops"), ("matmul_64", "linalg"),
                       ("conv3x3_fwd", "conv"), ("avg_pool_7x7_64x512 (oneDNN)", "pool_norm")]:
        assert listed.get(name) == area, (name, listed.get(name))
    assert "(ref)" not in r.stdout, r.stdout
    r = run(bench, "--list", "matmul_", timeout=120)
    assert r.returncode == 0 and r.stdout and all("matmul_" in l for l in r.stdout.splitlines()), r.stdout
    assert not any(n.startswith("sweep:") for n in listed), "the sweep runs only with --sweep"

    # The sweep: every public elementwise op of the op list at both sizes, fresh and out=, and
    # the other ops' rows; nothing of the default run.
    r = run(bench, "--sweep", "--list", timeout=120)
    assert r.returncode == 0, r.stderr
    sweep = dict(reversed(line.split(None, 1)) for line in r.stdout.splitlines())
    assert set(sweep.values()) == {"sweep"}, set(sweep.values())
    for op in public_elementwise_ops(root):
        for suffix in ("_16M", "_16M_out", "_4K", "_4K_out"):
            assert "sweep:" + op + suffix in sweep, op + suffix
    for name in ("sweep:gelu_tanh_16M", "sweep:div_floor_4K", "sweep:sum_dim1_16M", "sweep:softmax_dim1_4K",
                 "sweep:log_softmax_dim1_16M", "sweep:layer_norm_4K", "sweep:cross_entropy_16M",
                 "sweep:gather_dim1_4K", "sweep:index_put__16M"):
        assert name in sweep, name
    assert "eager_add_1elem" not in sweep and "sweep:sum_dim1_16M_out" not in sweep

    for bad in (["--bogus"], ["--json"], ["sum_16M", "--bogus"]):
        r = run(bench, *bad, timeout=120)
        assert r.returncode == 2, (bad, r.returncode)
        assert "Usage: bench_ops" in r.stderr and r.stdout == "", (bad, r.stdout, r.stderr)
    r = run(bench, "no_case_has_this_name", timeout=120)
    assert r.returncode == 1 and "no case name contains" in r.stderr, (r.returncode, r.stderr)

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.json")
        r = run(bench, "--json", out, "eager_add_1elem", "matmul_64", "sum_16M")
        assert r.returncode == 0, r.stderr
        doc = json.load(open(out, encoding="utf-8"))
        assert doc["threads"] == 2
        hw = doc["hardware"]
        assert hw["stream_triad_gbytes_per_s"] > 0
        assert (hw["fma_peak_gflops"] is None) == (hw["fma_isa"] is None)
        cases = {c["name"]: c for c in doc["cases"]}
        assert list(cases) == ["matmul_64", "eager_add_1elem", "sum_16M"], list(cases)  # registration order
        for k in ("libtorch", "libtorch_wheel"):
            assert (doc[k] is None) == (doc[k + "_version"] is None), doc
        check_peers(doc, cases)
        if doc["libtorch_wheel"] is not None:
            assert doc["libtorch_wheel_version"] in doc["libtorch_wheel"], doc
            assert cases["matmul_64"]["libtorch_wheel"] is not None, "bench_torch_peer has matmul_64's twin"

        add = cases["eager_add_1elem"]
        assert add["area"] == "ops" and add["ours"]["unit"] == "us"
        assert close(add["ours"]["value"], add["ours"]["seconds"] * 1e6)
        assert add["flops_per_call"] is None and add["bytes_per_call"] is None
        assert add["limit"] is None and add["share_of_limit"] is None

        mm = cases["matmul_64"]
        assert mm["area"] == "linalg" and mm["flops_per_call"] == 2.0 * 64 ** 3 and mm["bytes_per_call"] is None
        assert close(mm["ours"]["gflops"], 2.0 * 64 ** 3 / mm["ours"]["seconds"] / 1e9)
        if hw["fma_peak_gflops"] is not None:
            assert mm["limit"] == "fma_peak"
            assert close(mm["share_of_limit"], mm["ours"]["gflops"] / hw["fma_peak_gflops"]), mm

        s = cases["sum_16M"]
        assert s["ours"]["unit"] == "ms" and s["bytes_per_call"] == 4.0 * (16 << 20) and s["flops_per_call"] is None
        assert s["limit"] == "stream_bandwidth"
        assert close(s["share_of_limit"], s["ours"]["gbytes_per_s"] / hw["stream_triad_gbytes_per_s"]), s

        # The report script reads what bench_ops writes.
        svg = os.path.join(tmp, "c.svg")
        r = run(sys.executable, report, out, "--svg", svg, timeout=60)
        assert r.returncode == 0, r.stderr
        assert "| matmul_64 | linalg |" in r.stdout and "| sum_16M | ops |" in r.stdout, r.stdout
        # Without the wheel's peer, or with one that cannot start (its CUDA runtime missing, say):
        # the run goes on, every wheel figure null. Two sweep cases at 4K: the sweep's fields.
        for peer, said in (("", None), ("/bin/false", "torch wheel peer unavailable")):
            r = run(bench, "--sweep", "--json", out, "sweep:exp_4K", "sweep:sum_dim1_4K",
                    env={"TENSOR_BENCH_TORCH_PEER": peer})
            assert r.returncode == 0, r.stderr
            assert said is None or said in r.stdout, r.stdout
            doc = json.load(open(out, encoding="utf-8"))
            assert doc["libtorch_wheel"] is None and doc["libtorch_wheel_version"] is None, doc
            cases = {c["name"]: c for c in doc["cases"]}
            assert sorted(cases) == ["sweep:exp_4K", "sweep:exp_4K_out", "sweep:sum_dim1_4K"], list(cases)
            check_peers(doc, cases)
            e = cases["sweep:exp_4K"]
            assert e["area"] == "sweep" and e["ours"]["unit"] == "GB/s" and e["bytes_per_call"] == 8.0 * 4096, e
            assert close(e["ours"]["gbytes_per_s"], 8.0 * 4096 / e["ours"]["seconds"] / 1e9), e
            assert cases["sweep:sum_dim1_4K"]["bytes_per_call"] == 4.0 * 4096
            if doc["libtorch"] is not None:
                assert e["libtorch"] is not None and e["faster_peer"] == "libtorch", e
    print("bench_ops: --help, --list, --sweep, bad options, peers and --json as expected")


if __name__ == "__main__":
    main()
