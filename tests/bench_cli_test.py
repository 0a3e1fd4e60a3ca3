#!/usr/bin/env python3
"""ctest bench_ops.cli: bench_ops's options, and its --json output read by bench_report.py.

--help prints usage and runs nothing (no hardware reference line, which every run prints
first); --list names the registered cases with their areas; an unknown option exits 2 with
usage; --json on three fast cases writes the documented fields, with shares consistent with
the same-run limits and the declared work.
Usage: bench_cli_test.py BENCH_OPS REPORT_SCRIPT
"""
import json
import os
import subprocess
import sys
import tempfile


def run(*args, timeout=300):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def main():
    bench, report = sys.argv[1], sys.argv[2]

    for flag in ("--help", "-h"):
        r = run(bench, flag, timeout=30)
        assert r.returncode == 0, (flag, r.returncode, r.stderr)
        assert r.stdout.startswith("Usage: bench_ops"), r.stdout
        assert "(ref)" not in r.stdout and "libtensor vs libtorch" not in r.stdout, r.stdout

    r = run(bench, "--list", timeout=30)
    assert r.returncode == 0, r.stderr
    listed = {}
    for line in r.stdout.splitlines():
        area, name = line.split(None, 1)
        listed[name] = area
    for name, area in [("eager_add_1elem", "ops"), ("sum_16M", "ops"), ("matmul_64", "linalg"),
                       ("conv3x3_fwd", "conv"), ("avg_pool_7x7_64x512 (oneDNN)", "pool_norm")]:
        assert listed.get(name) == area, (name, listed.get(name))
    assert "(ref)" not in r.stdout, r.stdout
    r = run(bench, "--list", "matmul_", timeout=30)
    assert r.returncode == 0 and r.stdout and all("matmul_" in l for l in r.stdout.splitlines()), r.stdout

    for bad in (["--bogus"], ["--json"], ["sum_16M", "--bogus"]):
        r = run(bench, *bad, timeout=30)
        assert r.returncode == 2, (bad, r.returncode)
        assert "Usage: bench_ops" in r.stderr and r.stdout == "", (bad, r.stdout, r.stderr)
    r = run(bench, "no_case_has_this_name", timeout=30)
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
        keys = {"name", "area", "goal", "ours", "libtorch", "ratio", "flops_per_call", "bytes_per_call",
                "limit", "share_of_limit"}
        for c in cases.values():
            assert set(c) == keys, set(c) ^ keys
            assert c["ours"]["seconds"] > 0
            if doc["libtorch"] is None:
                assert c["libtorch"] is None and c["ratio"] is None, c
            if c["libtorch"] is not None:
                assert close(c["ratio"], c["ours"]["seconds"] / c["libtorch"]["seconds"]), c

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
    print("bench_ops: --help, --list, bad options and --json as expected")


if __name__ == "__main__":
    main()
