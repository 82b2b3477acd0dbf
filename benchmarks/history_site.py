#!/usr/bin/env python3
"""dlperf history at a year's scale (issue #39): 365 nightly runs of a default matrix made from the
recorded cases of tests/data/history, a 25% regression from night 200 and another machine from night
300 (the index's overview should find one step in each case's first line, and nothing else).
``--matrix local``: the local CPU default (5 models x 1n1g/2n1g, 10 cases); ``--matrix gpu``: a GPU
cluster's (5 models x fp32/amp x 1n1g..4n8g, 60 cases). Prints the build's time and size, the step
changes the overview finds, and the time headless chromium takes to load each kind of page from disk
(less a blank page's).

    python3 benchmarks/history_site.py --nights 365 --matrix local
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_dlperf.history import build_site  # noqa: E402
from pytest_dlperf.history.overview import changes  # noqa: E402
from tests import browser  # noqa: E402
from tests.history_runs import Plan, write  # noqa: E402

DEFAULT_MODELS = ("resnet50", "vgg16", "bert-base", "arcface", "llama")
MATRICES = {"local": {"models": DEFAULT_MODELS},
            "gpu": {"models": DEFAULT_MODELS, "precisions": ("fp32", "amp"),
                    "topologies": ("1n1g", "1n2g", "1n4g", "1n8g", "2n8g", "4n8g")}}


def _load_seconds(page: Path, profile: Path, trials: int) -> float:
    """Median wall time of chromium printing the page's DOM after its scripts ran."""
    times = []
    for _ in range(trials):
        t0 = time.perf_counter()
        subprocess.run([browser.executable(), *browser.FLAGS, f"--user-data-dir={profile}", "--dump-dom",
                        page.as_uri()], capture_output=True, check=True, timeout=300)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nights", type=int, default=365)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--matrix", choices=sorted(MATRICES), default="local")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        t0 = time.perf_counter()
        paths = write(Plan(nights=args.nights, regression_at=args.nights * 200 // 365,
                           machine_at=args.nights * 300 // 365, **MATRICES[args.matrix]), tmp_path / "ci")
        made = time.perf_counter() - t0
        t0 = time.perf_counter()
        built, history = build_site([str(tmp_path / "ci")], tmp_path / "site")
        build = time.perf_counter() - t0
        site = tmp_path / "site"
        size = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
        inputs = sum(p.stat().st_size for p in paths)
        print(f"history: {len(history.runs)} runs x {len(history.cases) // 1} cases; inputs {inputs / 1e6:.1f} MB "
              f"(written in {made:.1f} s)")
        print(f"build: {build:.1f} s, {built.pages} pages, {size / 1e6:.1f} MB (plotly.min.js "
              f"{(site / 'assets' / 'plotly.min.js').stat().st_size / 1e6:.1f} MB of it)")
        found = changes(history)
        lines = sum(len(groups) for groups in history.cases.values())
        planted = sum(1 for c in found if c.after.run.created == history.runs[args.nights * 200 // 365].created)
        print(f"overview: {len(found)} step changes over {lines} lines, {planted} of them at the planted drop "
              f"(night {args.nights * 200 // 365}, every case on the first machine)")
        blank = tmp_path / "blank.html"
        blank.write_text("<!DOCTYPE html><html><body>blank</body></html>")
        profile = tmp_path / "profile"
        base = _load_seconds(blank, profile, args.trials)
        pages = {"index": site / "index.html", "case (3 charts)": next((site / "cases").glob("ddp__llama*-2n*.html")),
                 "model ladder": next((site / "models").glob("ddp__llama*.html")),
                 "run": sorted((site / "runs").glob("*.html"))[-1]}
        print(f"page load (chromium --dump-dom, median of {args.trials}, less a blank page's {base:.2f} s):")
        for name, page in pages.items():
            secs = _load_seconds(page, profile, args.trials)
            print(f"  {name:16s} {secs - base:6.2f} s  ({page.stat().st_size / 1e3:.0f} kB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
