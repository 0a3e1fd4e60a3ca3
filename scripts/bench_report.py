#!/usr/bin/env python3
"""Turns the JSON of `bench_ops --json FILE` into a Markdown table and an SVG bar chart.

    python3 scripts/bench_report.py /tmp/bench.json --markdown table.md --svg docs/bench_chart.svg

Without --markdown the table goes to stdout. When the run had the torch wheel's libtorch as a
second peer (bench_ops's child process), the table has a column for each peer and says which
was faster; the ratio is always against the faster one. --slower-than PEER keeps only the cases
slower than that peer ("libtorch", "libtorch_wheel", or "any": the faster of the two).
The chart has one horizontal bar per case that has the plotted figure: the time ratio against
the faster peer (log scale, clipped to 1/8..8, a line at 1.0) when any case has a peer figure,
otherwise the share of the same-run hardware limit (FMA peak or streaming bandwidth; clipped at
200%, a line at 100%), and its title says which. Python 3 standard library only.
"""
import argparse
import json
import math
import sys
from xml.sax.saxutils import escape

RATIO_CLIP = 8.0   # the ratio axis spans 1/8 .. 8
SHARE_CLIP = 2.0   # the share axis spans 0 .. 200%
SHARE_LEGEND = ("blue: compute-bound (FMA peak); orange: memory-bound (streaming bandwidth); "
                "above 100%: the data stayed in cache")
LIMIT_NAMES = {"fma_peak": "FMA peak", "stream_bandwidth": "stream", "device_copy": "device copy"}


def fmt_figure(fig):
    """One figure in its unit, as bench_ops prints it; '-' when absent."""
    if not fig:
        return "-"
    unit, value = fig["unit"], fig["value"]
    if unit == "us":
        return f"{value:.3f} us"
    if unit == "ms":
        return f"{value:.2f} ms"
    return f"{value:.1f} {unit}"


def fmt_ratio(ratio):
    return "-" if ratio is None else f"{ratio:.2f}x"


def fmt_share(case):
    share = case.get("share_of_limit")
    if share is None:
        return "-"
    return f"{100 * share:.0f}% of {LIMIT_NAMES.get(case.get('limit'), case.get('limit'))}"


def md_cell(text):
    """Text safe inside a Markdown table cell."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def has_wheel(doc):
    """Whether the run had the torch wheel's libtorch as a second peer."""
    return doc.get("libtorch_wheel") is not None or any(c.get("libtorch_wheel") for c in doc["cases"])


def peer_label(doc, key):
    """A peer's column heading: 'torch 1.13', 'torch 2.15', or its key without a version."""
    version = doc.get(key + "_version")
    if not version:
        return {"libtorch": "libtorch", "libtorch_wheel": "torch wheel"}[key]
    return "torch " + ".".join(str(version).split(".")[:2])


def hardware_line(doc):
    hw = doc.get("hardware", {})
    parts = []
    if hw.get("fma_peak_gflops") is not None:
        parts.append(f"FMA peak {hw['fma_peak_gflops']:.1f} GFLOP/s ({hw.get('fma_isa') or '?'})")
    if hw.get("stream_triad_gbytes_per_s") is not None:
        parts.append(f"STREAM triad {hw['stream_triad_gbytes_per_s']:.1f} GB/s")
    if hw.get("device_copy_gbytes_per_s") is not None:
        parts.append(f"device copy {hw['device_copy_gbytes_per_s']:.0f} GB/s")
    peer = doc.get("libtorch") or "not installed"
    line = (f"{doc.get('threads', '?')} threads; same-run limits: {', '.join(parts) or 'none'}; "
            f"libtorch: {peer}")
    if has_wheel(doc):
        line += f"; second peer: {doc.get('libtorch_wheel') or 'torch wheel'}"
    return line


def markdown(doc):
    wheel = has_wheel(doc)
    if wheel:
        heading = ["case", "area", "ours", peer_label(doc, "libtorch"), peer_label(doc, "libtorch_wheel"),
                   "ratio", "vs", "share of limit"]
    else:
        heading = ["case", "area", "ours", "libtorch", "ratio", "share of limit"]
    lines = [hardware_line(doc), "", "| " + " | ".join(heading) + " |", "|" + "---|" * len(heading)]
    for c in doc["cases"]:
        # A case that did not run (bench_ops: skipped without a GPU, or raised) says which.
        ours = fmt_figure(c.get("ours")) if c.get("ours") else c.get("skipped") or ("error" if c.get("error") else "-")
        cells = [c["name"], c.get("area", ""), ours, fmt_figure(c.get("libtorch"))]
        if wheel:
            faster = c.get("faster_peer")
            cells += [fmt_figure(c.get("libtorch_wheel")), fmt_ratio(c.get("ratio")),
                      peer_label(doc, faster).replace("torch ", "") if faster else "-"]
        else:
            cells += [fmt_ratio(c.get("ratio"))]
        cells.append(fmt_share(c))
        lines.append("| " + " | ".join(md_cell(x) for x in cells) + " |")
    return "\n".join(lines) + "\n"


def peer_ratio(case, peer):
    """libtensor time / `peer`'s time; 'any' is the faster peer."""
    if peer == "any" or (peer == "libtorch" and "ratio_libtorch" not in case):
        return case.get("ratio")  # runs before the second peer: ratio was against libtorch
    return case.get("ratio_" + peer)


def slower_than(doc, peer):
    """The run with only the cases slower than `peer`."""
    return dict(doc, cases=[c for c in doc["cases"] if (peer_ratio(c, peer) or 0) > 1.0])


def chart_mode(doc):
    """'ratio' when any case has a peer's figure, else 'share'."""
    return "ratio" if any(c.get("ratio") is not None for c in doc["cases"]) else "share"


def svg(doc):
    mode = chart_mode(doc)
    cases = doc["cases"]
    row_h, top, plot_w, right = 18, 58, 520, 200
    label_w = int(16 + 7.5 * max([len(c["name"]) for c in cases] + [10]))
    height = top + row_h * len(cases) + 40

    if mode == "ratio":
        lo, hi = -math.log2(RATIO_CLIP), math.log2(RATIO_CLIP)

        def x_of(v):
            v = min(max(v, 1 / RATIO_CLIP), RATIO_CLIP)
            return label_w + (math.log2(v) - lo) / (hi - lo) * plot_w
        ticks = [(2.0 ** e, f"{2.0 ** e:g}x" if e >= 0 else f"1/{2 ** -e}x") for e in range(-3, 4)]
        if has_wheel(doc):
            ref, ref_label = 1.0, "1.0 = the faster peer"
            title = (f"libtensor time / the faster peer's time ({peer_label(doc, 'libtorch')} or "
                     f"{peer_label(doc, 'libtorch_wheel')}), same run (below 1: libtensor faster; log scale, "
                     f"clipped at 1/8 and 8)")
        else:
            ref, ref_label = 1.0, "1.0 = libtorch"
            title = ("libtensor time / libtorch time, same run (below 1: libtensor faster; log scale, "
                     "clipped at 1/8 and 8)")
    else:
        def x_of(v):
            return label_w + min(max(v, 0.0), SHARE_CLIP) / SHARE_CLIP * plot_w
        ticks = [(v, f"{100 * v:.0f}%") for v in (0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)]
        ref, ref_label = 1.0, "100% = limit"
        title = ("No libtorch figures in this run: share of the same-run hardware limit "
                 "(FMA peak or STREAM triad; clipped at 200%)")

    # Monospace at 12-13 px is about 8 px a character: wide enough for the longest line of text.
    width = int(max(label_w + plot_w + right, 16 + 8 * max(len(title), len(hardware_line(doc)), len(SHARE_LEGEND))))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="monospace" font-size="12">',
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>',
           f'<text x="8" y="18" font-size="13" font-weight="bold">{escape(title)}</text>',
           f'<text x="8" y="36" fill="#555">{escape(hardware_line(doc))}</text>']
    axis_bottom = top + row_h * len(cases)
    for v, label in ticks:
        x = x_of(v)
        out.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{axis_bottom}" stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{axis_bottom + 14}" text-anchor="middle" fill="#555">{escape(label)}</text>')

    x_ref = x_of(ref)
    for i, c in enumerate(cases):
        y = top + i * row_h
        out.append(f'<text x="{label_w - 8}" y="{y + 13}" text-anchor="end">{escape(c["name"])}</text>')
        value = c.get("ratio") if mode == "ratio" else c.get("share_of_limit")
        if value is None:
            out.append(f'<text x="{x_ref + 4:.1f}" y="{y + 13}" fill="#999">'
                       f'{"no libtorch twin" if mode == "ratio" else "no work declared"}</text>')
            continue
        x = x_of(value)
        if mode == "ratio":
            color = "#2e7d32" if value <= 1.0 else "#c62828"
            x0, x1 = sorted((x_ref, x))
            text = fmt_ratio(value)
        else:
            color = "#1565c0" if c.get("limit") == "fma_peak" else "#ef6c00"
            x0, x1 = label_w, x
            text = fmt_share(c)
        if (value > SHARE_CLIP) if mode == "share" else not (1 / RATIO_CLIP <= value <= RATIO_CLIP):
            text += " (clipped)"
        out.append(f'<rect class="bar" x="{x0:.1f}" y="{y + 3}" width="{max(x1 - x0, 1.0):.1f}" '
                   f'height="{row_h - 6}" fill="{color}"><title>{escape(c["name"] + ": " + text)}</title></rect>')
        out.append(f'<text x="{max(x0, x1) + 4:.1f}" y="{y + 13}" fill="#333">{escape(text)}</text>')

    out.append(f'<line x1="{x_ref:.1f}" y1="{top - 8}" x2="{x_ref:.1f}" y2="{axis_bottom}" stroke="black" '
               f'stroke-width="1.5"/>')
    out.append(f'<text x="{x_ref:.1f}" y="{top - 12}" text-anchor="middle">{escape(ref_label)}</text>')
    if mode == "share":
        out.append(f'<text x="8" y="{height - 8}" fill="#555">{escape(SHARE_LEGEND)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description="Markdown table and SVG chart from bench_ops --json output")
    ap.add_argument("json", help="the file bench_ops --json wrote")
    ap.add_argument("--markdown", help="write the Markdown table here (default: stdout)")
    ap.add_argument("--svg", help="write the SVG chart here")
    ap.add_argument("--slower-than", choices=["any", "libtorch", "libtorch_wheel"],
                    help="only the cases slower than this peer (any: than the faster peer)")
    args = ap.parse_args(argv)
    with open(args.json, encoding="utf-8") as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
        sys.exit(f"bench_report: {args.json} has no 'cases' list (is it bench_ops --json output?)")
    if args.slower_than:
        doc = slower_than(doc, args.slower_than)
    table = markdown(doc)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(table)
    else:
        sys.stdout.write(table)
    if args.svg:
        with open(args.svg, "w", encoding="utf-8") as f:
            f.write(svg(doc))


if __name__ == "__main__":
    main()
