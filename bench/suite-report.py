#!/usr/bin/env python3
"""Turns a bench/run-suite.sh results directory into docs/benchmarks/.

    bench/suite-report.py RESULTS_DIR DOCS_DIR

For each workload it writes DOCS_DIR/<workload>/ with the comparison charts
of throughput and p99 (the p50 and p99.9 charts and the per-run charts stay
in RESULTS_DIR, to keep the repository small), each backend's summary.json,
and a table in DOCS_DIR/results.md. Nothing is measured here.
"""

import json
import shutil
import sys
from pathlib import Path

KEEP = ("_throughput.png", "_p99.png")


def ms(us):
    return f"{us / 1000:.2f}"


def rows(workload_dir):
    for run in sorted(p for p in workload_dir.iterdir() if p.is_dir() and p.name != "compare"):
        summary = json.loads((run / "summary.json").read_text())
        for op in summary["ops"]:
            yield run.name, summary, op


def table(workload_dir):
    out = [
        "| backend | op | ops/s | p50 ms | p99 ms | p99.9 ms | max ms | errors |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for backend, summary, op in rows(workload_dir):
        out.append(
            f"| {backend} | {op['op']} | {op['ops_per_s']:,.0f} | {ms(op['p50_us'])} | "
            f"{ms(op['p99_us'])} | {ms(op['p99_9_us'])} | {ms(op['max_us'])} | {op['errors']} |"
        )
    return "\n".join(out)


def echo_table(workload_dir):
    """Each backend's total ops/s against the loopback echo its run measured
    first (empty when no run measured one)."""
    out = [
        "| backend | total ops/s | echo ops/s | echo p99 ms | total of echo |",
        "|---|---:|---:|---:|---:|",
    ]
    seen = set()
    for backend, summary, _ in rows(workload_dir):
        echo = summary.get("baseline")
        if backend in seen or not echo:
            continue
        seen.add(backend)
        total = sum(op["ops_per_s"] for op in summary["ops"])
        out.append(
            f"| {backend} | {total:,.0f} | {echo['ops_per_s']:,.0f} | {ms(echo['p99_us'])} | "
            f"{100 * total / echo['ops_per_s']:.1f} % |"
        )
    return "\n".join(out) + "\n" if seen else ""


def header(config):
    lines = []
    for line in Path(config).read_text().splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("# ").rstrip())
    return " ".join(lines)


def main(results, docs):
    results, docs = Path(results), Path(docs)
    docs.mkdir(parents=True, exist_ok=True)
    parts = []
    for workload in sorted(p for p in results.iterdir() if p.is_dir()):
        target = docs / workload.name
        target.mkdir(exist_ok=True)
        for chart in sorted((workload / "compare").glob("*.png")):
            if chart.name.endswith(KEEP):
                shutil.copy(chart, target / chart.name)
        for run in workload.iterdir():
            if run.is_dir() and run.name != "compare":
                shutil.copy(run / "summary.json", target / f"{run.name}-summary.json")
        any_run = next(r for r in workload.iterdir() if r.is_dir() and r.name != "compare")
        config = json.loads((any_run / "summary.json").read_text())["config"]
        charts = " ".join(
            f"![{c.stem}]({workload.name}/{c.name})" for c in sorted(target.glob("*.png"))
        )
        s = json.loads((any_run / "summary.json").read_text())
        ran = (
            f"Ran {s['elapsed_s']:.0f} s per backend with {s['concurrent']} workers over "
            f"{s['protocol']} (the file's duration overridden), from {s['started_at']}."
        )
        parts.append(
            f"## {workload.name}\n\n{header(config)}\n\n{ran}\n\n{table(workload)}\n\n"
            f"{echo_table(workload)}\n{charts}\n"
        )
    (docs / "results.md").write_text("# Suite results\n\n" + "\n".join(parts))


if __name__ == "__main__":
    main(*sys.argv[1:3])
