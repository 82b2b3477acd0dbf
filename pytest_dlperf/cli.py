"""The ``dlperf`` command: work with saved results outside pytest.

    dlperf import LOGDIR --format dlperf-tf2 -o results.json [--record PROFILE]   # peers' logs
    dlperf report results.json [-o DIR]      # summary.md, plots/*.png, benchmark.json again
    dlperf compare A/results.json B/results.json   # per case: A, B and A/B, as the AIACC tables
    dlperf cluster ls|create|ssh|tmux|scp|stop|start|kill|addip|rename ...   # ECS instances (FastGPU's ecluster)
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _load(path: Path):  # noqa: ANN202 - (ResultSet, document)
    from .results import ResultSet, result_from_dict

    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise SystemExit(f"dlperf: {path}: no such file (give a results.json of a run's report directory)") from None
    except json.JSONDecodeError as exc:
        raise SystemExit(f"dlperf: {path}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or "cases" not in doc:
        raise SystemExit(f"dlperf: {path}: not a pytest-dlperf results.json (no 'cases')")
    results = ResultSet()
    for case in doc["cases"]:
        results.add(result_from_dict(case))
    return results, doc


def cmd_report(args: argparse.Namespace) -> int:
    from . import reporting

    results, doc = _load(args.results)
    out = args.output or args.results.parent
    out.mkdir(parents=True, exist_ok=True)
    path = reporting.write_readable(out, results, doc.get("environment") or {}, doc.get("failures") or {})
    print(f"dlperf: wrote {path}, {out / 'plots'}/ and {out / 'benchmark.json'}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from . import reporting
    from .baselines import BaselineError
    from .baselines.store import BaselineStore, Entry
    from .files import atomic_write_text
    from .importers import Overrides, load

    over = Overrides(backend=args.backend, model=args.model, precision=args.precision, batch_size=args.batch_size,
                     image_size=args.image_size, per_device_rates=args.per_device_rates)
    try:
        results = load(args.logdir, args.format, args.warmup_iters, over)
    except ValueError as exc:
        raise SystemExit(f"dlperf import: {exc}") from None
    env = {"imported_from": str(args.logdir.resolve()), "format": args.format}
    doc = reporting.results_document(results, env, {"format": args.format, "warmup_iters": args.warmup_iters}, {})
    atomic_write_text(args.output, json.dumps(doc, indent=1, default=str) + "\n")
    for r in sorted(results.results, key=lambda r: (r.case.key.rsplit("-", 1)[0], r.case.topology)):
        sp = "-" if r.speedup is None else f"{r.speedup:.2f}"
        print(f"{r.case.backend}/{r.case.id}: median {r.median:.2f} samples/s, mean {r.mean:.2f}, speedup {sp}, "
              f"{len(r.throughputs)} run(s)")
    print(f"dlperf import: wrote {args.output}")
    if args.record:
        source = f"imported: {args.format} logs in {args.logdir.resolve()}"
        entries = {}
        for r in results.results:
            e = Entry.from_result(r, None, {"imported": args.format})
            e.source = source
            entries[r.case.key] = e
        try:
            store = BaselineStore(args.baseline_dir)
            bfile = store.update(args.record, entries, description=None if store.exists(args.record) else
                                 f"imported with dlperf import --format {args.format} from {args.logdir}")
        except (BaselineError, ValueError, OSError) as exc:
            raise SystemExit(f"dlperf import: baselines NOT recorded: {exc}") from None
        print(f"dlperf import: recorded {len(entries)} case(s) in {bfile.path}")
    return 0


def compare_rows(a, b) -> list[tuple[str, float | None, float | None, float | None]]:  # noqa: ANN001 - ResultSets
    """(case key, A samples/s, B samples/s, A/B) for every case of either run, A's order first."""
    amap = {r.case.key: r.median for r in a.results}
    bmap = {r.case.key: r.median for r in b.results}
    keys = list(dict.fromkeys([*amap, *bmap]))
    return [(k, amap.get(k), bmap.get(k),
             amap[k] / bmap[k] if k in amap and k in bmap and bmap[k] > 0 else None) for k in keys]


def cmd_compare(args: argparse.Namespace) -> int:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    a, _ = _load(args.a)
    b, _ = _load(args.b)
    console = Console(width=200, color_system=None)
    console.print(f"A = {args.a}\nB = {args.b}\nsamples/s, medians of repeats; A/B > 1: A is faster")
    table = Table(box=box.SIMPLE_HEAD)
    for col in ("case", "A", "B", "A/B"):
        table.add_column(col, justify="left" if col == "case" else "right", no_wrap=True)
    for key, va, vb, ratio in compare_rows(a, b):
        table.add_row(key, "-" if va is None else f"{va:.2f}", "-" if vb is None else f"{vb:.2f}",
                      "-" if ratio is None else f"{ratio:.3f}")
    console.print(table)
    return 0


def main(argv: list[str] | None = None) -> int:
    from .importers.parsers import FORMATS

    p = argparse.ArgumentParser(prog="dlperf", description="pytest-dlperf's saved results and ECS instances")
    sub = p.add_subparsers(dest="command", required=True)
    i = sub.add_parser("import", help="turn a peer's logs (<NnMg>/<name>_<run>.log) into results.json")
    i.add_argument("logdir", type=Path)
    i.add_argument("--format", required=True, choices=sorted(FORMATS))
    i.add_argument("-o", "--output", type=Path, default=Path("results.json"))
    i.add_argument("--warmup-iters", type=int, default=None,
                   help="steps (dlperf-tf2: default 100) or logged records/intervals to drop as warm-up")
    i.add_argument("--backend", default=None, help="the backend name the cases get (default: after the format)")
    i.add_argument("--model", default=None)
    i.add_argument("--precision", default=None, choices=("fp32", "amp"))
    i.add_argument("--batch-size", type=int, default=None, help="per device")
    i.add_argument("--image-size", type=int, default=None)
    i.add_argument("--per-device-rates", action="store_true",
                   help="the log's rates are per device (PaddleClas' ips): multiply by the devices")
    i.add_argument("--record", metavar="PROFILE", default=None, help="also store the cases as this baseline profile")
    i.add_argument("--baseline-dir", type=Path, default=Path("baselines"))
    i.set_defaults(fn=cmd_import)
    r = sub.add_parser("report", help="re-render summary.md, the plots and benchmark.json from a results.json")
    r.add_argument("results", type=Path)
    r.add_argument("-o", "--output", type=Path, default=None, help="directory (default: the results.json's)")
    r.set_defaults(fn=cmd_report)
    c = sub.add_parser("compare", help="two runs side by side: per case A, B and A/B")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    c.set_defaults(fn=cmd_compare)
    from .clusters.aliyun import ecluster

    ecluster.add_parser(sub)
    argv = list(sys.argv[1:] if argv is None else argv)
    remote: list[str] = []
    if argv[:1] == ["cluster"] and "--" in argv:  # dlperf cluster ssh TASK ... -- a command to run there
        argv, remote = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    args = p.parse_args(argv)
    args.remote = remote
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
