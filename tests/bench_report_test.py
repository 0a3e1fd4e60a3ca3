#!/usr/bin/env python3
"""ctest bench_report.script: scripts/bench_report.py on tests/bench_report_fixture.json.

Checks every Markdown row against figures worked out by hand from the fixture, and that the SVG
parses as XML with one bar per case that has the plotted figure: the libtorch ratio when the
run has libtorch figures, else (the same fixture with libtorch removed) the share of the limit.
With a second peer (the torch wheel's figures added to the fixture) the table has a column per
peer and the faster one's version, and --slower-than keeps the cases slower than a peer.
Usage: bench_report_test.py SCRIPT FIXTURE
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SVG_NS = "{http://www.w3.org/2000/svg}"


def run(script, *args):
    return subprocess.run([sys.executable, script, *args], capture_output=True, text=True, timeout=60)


def bars(svg_path):
    root = ET.parse(svg_path).getroot()
    assert root.tag == SVG_NS + "svg", root.tag
    return root, [r for r in root.iter(SVG_NS + "rect") if r.get("class") == "bar"]


def all_text(root):
    return " ".join(t.text or "" for t in root.iter(SVG_NS + "text"))


def main():
    script, fixture = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        md, svg = os.path.join(tmp, "t.md"), os.path.join(tmp, "c.svg")
        r = run(script, fixture, "--markdown", md, "--svg", svg)
        assert r.returncode == 0, r.stderr
        lines = open(md, encoding="utf-8").read().splitlines()
        assert lines[0] == ("2 threads; same-run limits: FMA peak 500.0 GFLOP/s (AVX-512), STREAM triad "
                            "40.0 GB/s; libtorch: Debian libtorch-dev"), lines[0]
        rows = [l for l in lines if l.startswith("| ")]
        expected = [
            "| case | area | ours | libtorch | ratio | share of limit |",
            "| matmul_1024 | linalg | 429.5 GFLOP/s | 390.5 GFLOP/s | 0.91x | 86% of FMA peak |",
            "| sum_16M | ops | 2.00 ms | 1.00 ms | 2.00x | 84% of stream |",
            "| eager_add_1elem | ops | 0.150 us | 0.430 us | 0.35x | - |",
            "| odd\\|name (oneDNN) | pool_norm | 12.00 ms | 1.00 ms | 12.00x | 250% of stream |",
            "| sort_1M_rows1024 | sort | 30.50 ms | - | - | - |",
        ]
        assert rows == expected, "\n".join(rows)

        # Ratio chart: four cases have a libtorch figure; the fifth gets a note, not a bar.
        root, bs = bars(svg)
        assert len(bs) == 4, len(bs)
        text = all_text(root)
        assert "libtensor time / libtorch time" in text and "1.0 = libtorch" in text, text
        assert "12.00x (clipped)" in text and "no libtorch twin" in text, text
        # Below 1 grows left of the 1.0 line, above 1 right of it: widths are log2 distances.
        w = {b.find(SVG_NS + "title").text.split(":")[0]: float(b.get("width")) for b in bs}
        assert abs(w["sum_16M"] / w["eager_add_1elem"] - 1 / -math.log2(0.3488372)) < 0.01, w
        assert abs(w["odd|name (oneDNN)"] / w["sum_16M"] - 3.0) < 0.01, w  # clipped at 8 = 2^3

        # Without libtorch figures the bars show the share of the limit, and the chart says so.
        doc = json.load(open(fixture, encoding="utf-8"))
        doc["libtorch"] = None
        for c in doc["cases"]:
            c["libtorch"] = c["ratio"] = None
        nolt = os.path.join(tmp, "nolt.json")
        json.dump(doc, open(nolt, "w", encoding="utf-8"))
        r = run(script, nolt, "--svg", svg)
        assert r.returncode == 0, r.stderr
        assert "| matmul_1024 | linalg | 429.5 GFLOP/s | - | - | 86% of FMA peak |" in r.stdout, r.stdout
        root, bs = bars(svg)
        assert len(bs) == 3, len(bs)  # matmul, sum, odd|name declare work
        text = all_text(root)
        assert "No libtorch figures" in text and "100% = limit" in text and "250% of stream (clipped)" in text, text

        # A second peer, the torch wheel's: its column, the faster peer's version, the ratio
        # against the faster one; --slower-than keeps the cases slower than the named peer.
        doc = json.load(open(fixture, encoding="utf-8"))
        doc.update({"libtorch_version": "1.13.0", "libtorch_wheel": "torch 2.15.0 wheel (bench_torch_peer)",
                    "libtorch_wheel_version": "2.15.0"})
        wheel_seconds = {"matmul_1024": 0.004, "sum_16M": 0.0025}  # ours: 0.005 and 0.002
        for c in doc["cases"]:
            sec = wheel_seconds.get(c["name"])
            c["ratio_libtorch"] = c["ratio"]
            c["faster_peer"] = "libtorch" if c["ratio"] is not None else None
            c["libtorch_wheel"] = c["ratio_libtorch_wheel"] = None
            if sec:
                c["libtorch_wheel"] = dict(c["ours"], seconds=sec)
                scale = {"ms": 1e3, "us": 1e6}.get(c["ours"]["unit"])  # a time, or a throughput
                c["libtorch_wheel"]["value"] = sec * scale if scale else c["ours"]["value"] * c["ours"]["seconds"] / sec
                c["ratio_libtorch_wheel"] = c["ours"]["seconds"] / sec
                if sec < c["libtorch"]["seconds"]:
                    c["faster_peer"], c["ratio"] = "libtorch_wheel", c["ratio_libtorch_wheel"]
        two = os.path.join(tmp, "two.json")
        json.dump(doc, open(two, "w", encoding="utf-8"))
        r = run(script, two, "--svg", svg)
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert lines[0].endswith("; libtorch: Debian libtorch-dev; second peer: torch 2.15.0 wheel (bench_torch_peer)"), lines[0]
        rows = [l for l in lines if l.startswith("| ")]
        expected = [
            "| case | area | ours | torch 1.13 | torch 2.15 | ratio | vs | share of limit |",
            "| matmul_1024 | linalg | 429.5 GFLOP/s | 390.5 GFLOP/s | 536.9 GFLOP/s | 1.25x | 2.15 | 86% of FMA peak |",
            "| sum_16M | ops | 2.00 ms | 1.00 ms | 2.50 ms | 2.00x | 1.13 | 84% of stream |",
            "| eager_add_1elem | ops | 0.150 us | 0.430 us | - | 0.35x | 1.13 | - |",
            "| odd\\|name (oneDNN) | pool_norm | 12.00 ms | 1.00 ms | - | 12.00x | 1.13 | 250% of stream |",
            "| sort_1M_rows1024 | sort | 30.50 ms | - | - | - | - | - |",
        ]
        assert rows == expected, "\n".join(rows)
        root, bs = bars(svg)
        assert len(bs) == 4, len(bs)
        text = all_text(root)
        assert "the faster peer's time (torch 1.13 or torch 2.15)" in text and "1.25x" in text, text
        r = run(script, two, "--slower-than", "libtorch_wheel")
        assert [l.split(" | ")[0] for l in r.stdout.splitlines()[4:]] == ["| matmul_1024"], r.stdout
        r = run(script, two, "--slower-than", "any")
        names = [l.split(" | ")[0][2:] for l in r.stdout.splitlines()[4:]]
        assert names == ["matmul_1024", "sum_16M", "odd\\|name (oneDNN)"], names
        r = run(script, fixture, "--slower-than", "libtorch")  # a run before the second peer
        names = [l.split(" | ")[0][2:] for l in r.stdout.splitlines()[4:]]
        assert names == ["sum_16M", "odd\\|name (oneDNN)"], names

        # Not bench_ops output: an error, not a traceback or an empty report.
        bad = os.path.join(tmp, "bad.json")
        open(bad, "w").write('{"rows": []}')
        r = run(script, bad)
        assert r.returncode != 0 and "no 'cases' list" in r.stderr, (r.returncode, r.stderr)
    print("bench_report.py: Markdown rows and SVG bars as expected")


if __name__ == "__main__":
    main()
