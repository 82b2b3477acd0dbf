"""The ``dlperf`` command: work with saved results outside pytest.

    dlperf import LOGDIR --format dlperf-tf2 -o results.json [--record PROFILE]   # peers' logs
    dlperf report results.json [-o DIR]      # summary.md, plots/*.png, benchmark.json again
    dlperf compare A/results.json B/results.json   # per case: A, B and A/B, as the AIACC tables
    dlperf history RESULTS... -o SITE/      # a static site of every run: lines over time, ladders, run pages
    dlperf bisect --repo PATH --good REF --bad REF -- <pytest args>   # the first slower commit (A/B probes)
    dlperf cluster ls|create|ssh|tmux|scp|stop|start|kill|addip|rename ...   # ECS instances (FastGPU's ecluster)
    dlperf data make imagenet DIR [--images N] [--classes C] [--shards S] [--tokens T] [--vocab V] [--seed K]
    dlperf data index DIR        # a deterministic ImageNet-shaped dataset (JPEG, TFRecord, tokens); its index
    dlperf env list|prune [--cache DIR] [--older-than 7d] [-- <pytest args>]   # the side environments (pip=)
                                 # cached here, or on every node of the cluster pytest's arguments name
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from .oneline import OneLineParser


def _load(path: Path, command: str):  # noqa: ANN202 - (ResultSet, document)
    from .results.file import ResultsFileError, load

    try:
        return load(path)
    except ResultsFileError as exc:
        raise SystemExit(f"dlperf {command}: {exc}") from None


def _whole_number(least: int, meaning: str) -> Callable[[str], int]:
    """An argparse type: a whole number, ``least`` or more (``meaning`` says what it counts)."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if n < least:
            raise argparse.ArgumentTypeError(f"{n}: {meaning}")
        return n
    return parse


_warmup = _whole_number(0, "a count of steps or intervals to drop, 0 or more")  # --warmup-iters
_positive = _whole_number(1, "give 1 or more")  # --batch-size, --image-size


def cmd_report(args: argparse.Namespace) -> int:
    from . import reporting
    from .files import OutputPathError, check_target

    results, doc = _load(args.results, "report")
    out = args.output or args.results.parent
    if out.exists() and not out.is_dir():
        raise SystemExit(f"dlperf report: {out}: not a directory (-o names the directory to write into)")
    try:
        for target in reporting.readable_paths(out, results, doc.get("ab")):
            check_target(target)
    except OutputPathError as exc:
        raise SystemExit(f"dlperf report: {exc}") from None
    try:
        out.mkdir(parents=True, exist_ok=True)
        path = reporting.write_readable(out, results, doc.get("environment") or {}, doc.get("failures") or {},
                                        doc.get("ab"))
    except (FileExistsError, NotADirectoryError):
        raise SystemExit(f"dlperf report: {out}: not a directory (-o names the directory to write into)") from None
    except OSError as exc:
        raise SystemExit(f"dlperf report: cannot write into {out} ({exc.strerror or exc}): give -o a "
                         "writable directory") from None
    print(f"dlperf: wrote {path}, {out / 'plots'}/ and {out / 'benchmark.json'}")
    return 0


def _said(logdir: Path, lines: list[str], kind: str) -> None:
    """Notes and warnings on stderr, one line each; a message many logs share once, with their names."""
    by_text: dict[str, list[str]] = {}
    for line in lines:
        path, sep, text = line.partition(": ")
        if sep and path.startswith(str(logdir)):
            by_text.setdefault(text, []).append(str(Path(path).relative_to(logdir)) if Path(path).is_relative_to(logdir)
                                                else path)
        else:
            by_text.setdefault(line, [])
    for text, paths in by_text.items():
        where = ("" if not paths else f"{paths[0]}: " if len(paths) == 1
                 else f"{len(paths)} logs ({', '.join(paths[:3])}{', ...' if len(paths) > 3 else ''}): ")
        print(f"dlperf import: {kind}{where}{text}", file=sys.stderr)


def _origin(r) -> str:  # noqa: ANN001 - a CaseResult
    """Where the case's figures come from, beside its median: read from the logs, the mean of figures
    they print, or derived (never shown as if a log printed it)."""
    parsed = [run.meta.get("parsed") or {} for run in r.runs]
    origins = {p.get("origin", "read") for p in parsed}
    kind = "derived: " if "derived" in origins else "" if "mean" in origins else "read: "
    first = parsed[0].get("source", "") if parsed else ""
    several = len(parsed) > 1
    return f" [{'run 1, the others alike: ' if several else ''}{kind}{first}]" if first else ""


def cmd_import(args: argparse.Namespace) -> int:
    from . import reporting
    from .baselines import BaselineError
    from .baselines.store import BaselineStore, Entry
    from .files import OutputPathError, atomic_write_text, check_target
    from .importers import Overrides, load

    over = Overrides(backend=args.backend, model=args.model, precision=args.precision, batch_size=args.batch_size,
                     image_size=args.image_size, per_device_rates=args.per_device_rates, row=args.row,
                     force=args.override_header)
    if args.output.is_dir() and not args.output.is_symlink():
        raise SystemExit(f"dlperf import: -o {args.output}: a directory; give the file to write, e.g. "
                         f"{args.output / 'results.json'}")
    try:
        check_target(args.output)
    except OutputPathError as exc:
        raise SystemExit(f"dlperf import: -o {exc}") from None
    notes: list[str] = []
    warnings: list[str] = []
    try:
        results = load(args.logdir, args.format, args.warmup_iters, over, notes, warnings)
    except ValueError as exc:
        raise SystemExit(f"dlperf import: {exc}") from None
    _said(args.logdir, notes, "")
    _said(args.logdir, warnings, "warning: ")
    env = {"imported_from": str(args.logdir.resolve()), "format": args.format,
           "import": {"notes": notes, "warnings": warnings}}
    doc = reporting.results_document(results, env, {"format": args.format, "warmup_iters": args.warmup_iters,
                                                    "override_header": args.override_header}, {})
    try:
        atomic_write_text(args.output, json.dumps(doc, indent=1, default=str, allow_nan=False) + "\n",
                          regular_only=True)
    except OutputPathError as exc:
        raise SystemExit(f"dlperf import: -o {exc}") from None
    except OSError as exc:
        raise SystemExit(f"dlperf import: cannot write {args.output} ({exc.strerror or exc}): give -o a "
                         "writable file path") from None
    for r in sorted(results.results, key=lambda r: (r.case.key.rsplit("-", 1)[0], r.case.topology)):
        sp = "-" if r.speedup is None else f"{r.speedup:.2f}"
        print(f"{r.case.backend}/{r.case.id}: median {r.median:.2f} {r.case.unit}, mean {r.mean:.2f}, speedup {sp}, "
              f"{len(r.throughputs)} run(s){_origin(r)}")
    print(f"dlperf import: wrote {args.output}" + (f" ({len(warnings)} warning(s), above and in its "
                                                   "environment.import)" if warnings else ""))
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


def cmd_compare(args: argparse.Namespace) -> int:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from .reporting.compare import compare_rows, unmatched_notes

    a, _ = _load(args.a, "compare")
    b, _ = _load(args.b, "compare")
    console = Console(width=200, color_system=None)
    console.print(f"A = {args.a}\nB = {args.b}\nmedians of repeats in each case's unit; A/B > 1: A is faster")
    units = {r.case.key: r.case.unit for r in (*a.results, *b.results)}
    table = Table(box=box.SIMPLE_HEAD)
    for col in ("case", "A", "B", "unit", "A/B"):
        table.add_column(col, justify="left" if col in ("case", "unit") else "right", no_wrap=True)
    rows = compare_rows(a, b)
    for key, va, vb, ratio in rows:
        table.add_row(key, "-" if va is None else f"{va:.2f}", "-" if vb is None else f"{vb:.2f}", units[key],
                      "-" if ratio is None else f"{ratio:.3f}")
    console.print(table)
    for note in unmatched_notes(a, b):
        console.print(note)
    if not any(ratio is not None for *_, ratio in rows):
        raise SystemExit(f"dlperf compare: {args.a} ({len(a.results)} case(s)) and {args.b} ({len(b.results)}) have "
                         "no case in common: nothing was compared; give two results of the same cases (the notes "
                         "above name each side's nearest case)")
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from . import history as h

    if args.output is None and not args.check and args.since is None:
        print("dlperf history: give -o SITE (the site to write), --check (the nightly's alarm), --since REF (the drift "
              "since a pinned run), or several", file=sys.stderr)
        return 2
    try:
        finder = h.make(args.change_points, h.Thresholds(args.pvalue, args.min_change, args.window, args.min_segment))
        history = h.read(args.results, finder, args.repo)
        since = h.pinned(history, args.since, args.repo) if args.since is not None else None
        built = h.build(history, args.output) if args.output is not None else None
    except (h.HistoryError, h.FinderError) as exc:
        raise SystemExit(f"dlperf history: {exc}") from None
    for s in history.skipped:
        print(f"dlperf history: left out {s.path}: {s.reason}", file=sys.stderr)
    if built is not None:
        print(f"dlperf history: {len(history.runs)} runs, {len(history.cases)} cases, {built.pages} pages: open "
              f"{built.index}" + (f" ({len(history.skipped)} file(s) left out, named above and on the index page)"
                                  if history.skipped else ""))
    found_changes = h.changes(history) if args.check or since is not None else []
    if since is not None:
        for drift in h.drifts(history, found_changes, since):
            print(f"dlperf history --since: {drift.text(args.since)}")
    if not args.check:
        return 0
    found = h.alarms(history, found_changes, args.last, args.found_nights)
    for alarm in found:
        print(f"dlperf history: {alarm.text()}")
    print(f"dlperf history --check: {len(found) or 'no'} new worse level change(s) (found {args.found_nights} run(s) "
          f"running, not before) among each line's last {args.last} run(s) of {len(history.runs)}, in {history.order}, "
          f"by {finder.describe()}")
    return 1 if found else 0


def cmd_options(args: argparse.Namespace) -> int:
    """docs/options.md from the option registry (optionsdoc): printed, or written to -o FILE."""
    from .options.doc import render

    page = render()
    if args.output is None:
        sys.stdout.write(page)
        return 0
    from .files import OutputPathError, atomic_write_text, check_target

    try:
        check_target(args.output)
        atomic_write_text(args.output, page)
    except OutputPathError as exc:
        raise SystemExit(f"dlperf options: -o {exc}") from None
    except OSError as exc:
        raise SystemExit(f"dlperf options: -o {args.output}: cannot be written ({exc.strerror or exc}): give a file "
                         "in a directory you can write") from None
    print(f"dlperf options: wrote {args.output}")
    return 0


def cmd_bisect(args: argparse.Namespace) -> int:
    from .bisect import UsageError
    from .bisect.command import Request, run

    try:
        request = Request.from_args(args, args.remote)
    except UsageError as exc:
        print(f"dlperf bisect: {exc}", file=sys.stderr)
        return exc.code
    return run(request)


def cmd_data(args: argparse.Namespace) -> int:
    """``data make``: the node-side builder (node/workloads/datamake.py) run here; ``data index``: its index."""
    import subprocess

    from .node.workloads import dataset

    if args.data_command is None:
        print("dlperf data: give a command: make (build a dataset) or index (print one's index)", file=sys.stderr)
        return 2
    if args.data_command == "index":
        if not args.dir.is_dir():
            print(f"dlperf data index: {args.dir}: no such directory: give a dataset's directory (or make one with "
                  f"`dlperf data make imagenet {args.dir}`)", file=sys.stderr)
            return 2
        print(json.dumps(dataset.index(str(args.dir))))
        return 0
    builder = Path(__file__).parent / "node" / "workloads" / "datamake.py"
    opts = [f"--{k}={getattr(args, k)}" for k in ("images", "classes", "shards", "tokens", "vocab", "seed")
            if getattr(args, k) is not None]
    with subprocess.Popen([sys.executable, str(builder), args.kind, str(args.dir), *opts], stderr=subprocess.PIPE,
                          text=True) as p:
        try:
            err = p.communicate()[1]
        except KeyboardInterrupt:  # the builder, interrupted too, removes its partial directory: wait for it
            err = p.communicate()[1]
    for line in err.splitlines():  # the builder's one-line problems, said as this command's
        print(f"dlperf data make: {line.removeprefix('datamake.py: ')}", file=sys.stderr)
    return p.returncode


def cmd_explain(args: argparse.Namespace) -> int:
    """Two saved profiled launches' traces diffed: the "what got slower" block, or its JSON."""
    from . import explain

    got = explain.explanation(explain.from_dir(args.a, "reference"), explain.from_dir(args.b, "candidate"),
                              args.launch_noise, args.throughput_ratio, what=f"{args.a} against {args.b}",
                              traces={"reference": str(args.a), "candidate": str(args.b)})
    print(json.dumps(got, indent=1) if args.json else "\n".join(explain.lines(got)))
    return 0 if got.get("diff") else 1


def _add_explain_parser(sub: argparse._SubParsersAction) -> None:
    from .options.argtypes import fraction, positive_ratio

    e = sub.add_parser("explain", help="what got slower: two profiled launches' traces (rank<R>.json) diffed")
    e.add_argument("a", type=Path, metavar="REFERENCE",
                   help="a directory of rank<R>.json traces, or a launch's run directory holding trace/")
    e.add_argument("b", type=Path, metavar="CANDIDATE", help="the same, of the side judged against the reference")
    e.add_argument("--launch-noise", type=fraction, default=0.02, metavar="FRAC",
                   help="the launch-to-launch spread of the case's throughput (an A/B session's pairs say it; "
                        "default %(default)s)")
    e.add_argument("--throughput-ratio", type=positive_ratio, default=None, metavar="R",
                   help="candidate over reference throughput as the measured launches found it (an A/B case's ratio): "
                        "the profiled launches' move beyond it widens the noise")
    e.add_argument("--json", action="store_true", help="print the explanation as results.json keeps it")
    e.set_defaults(fn=cmd_explain)


def cmd_env(args: argparse.Namespace) -> int:
    """The side environments cached on this machine (every node of the local cluster), or with pytest's
    arguments after ``--`` on every node of the cluster they name: listed, or pruned."""
    from .node import makeenv

    if args.env_command is None:
        print("dlperf env: give a command: list (the cached environments) or prune (remove those unused)",
              file=sys.stderr)
        return 2
    if args.remote:  # through the cluster's own channel, as a session reaches its nodes (envs.cache)
        import subprocess

        verb = "--dlperf-env-list" if args.env_command == "list" else f"--dlperf-env-prune={args.older_than}"
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args.remote, verb,
                               f"--dlperf-env-cache={args.cache}"]).returncode
    cache = Path(args.cache).expanduser()
    if not cache.is_dir():
        print(f"dlperf env {args.env_command}: {cache}: no environment cached there (give --cache DIR as the "
              "session's --dlperf-env-cache)", file=sys.stderr)
        return 0 if args.env_command == "list" else 2
    if args.env_command == "list":
        for env in makeenv.listed(cache):
            used = time.strftime("%Y-%m-%d %H:%M", time.localtime(env["last_used"]))
            print(f"{env['path']}  {env['builder']}  {' '.join(env['requirements'])}  {env['bytes'] / 2**20:.1f} MiB  "
                  f"last used {used}")
        return 0
    for env in makeenv.prune(cache, args.older_than):
        print(f"removed {env['path']} ({' '.join(env['requirements'])})")
    return 0


def _add_change_point_options(h: argparse.ArgumentParser) -> None:
    """How dlperf history finds a line's level changes, and its --check (docs/history.md, "Change points")."""
    from .history import FINDERS, Thresholds
    from .history.check import DEFAULT_LAST, NIGHTS_FOUND
    from .options.argtypes import fraction, positive_int

    t = Thresholds()
    h.add_argument("--check", action="store_true",
                   help="exit 1 when a level change in the worse direction is new tonight: among a line's last --last "
                        "runs, and found by no history up to an earlier run (so each change alarms once), naming it "
                        "and the dlperf bisect command that would find its commit")
    h.add_argument("--last", type=positive_int, default=DEFAULT_LAST, metavar="N",
                   help="how far back a new change may have started (default %(default)s: a change point becomes "
                        "significant some nights after it happened)")
    h.add_argument("--found-nights", type=positive_int, default=NIGHTS_FOUND, metavar="N",
                   help="the runs running a new change must be found at before --check alarms (default %(default)s: one "
                        "night's find alone is often noise; docs/history.md has the trade of misses for false alarms)")
    h.add_argument("--since", default=None, metavar="REF",
                   help="each line's move in each figure since the run REF names (a run id, a commit, or a tag that "
                        "--repo resolves), with an interval and the change points between")
    h.add_argument("--repo", type=Path, default=Path("."), metavar="PATH",
                   help="the repository whose commit order the lines are read in, where it holds every run's commit "
                        "(else time order, said), and that resolves --since's tag or branch (default: here)")
    h.add_argument("--change-points", choices=FINDERS, default="auto",
                   help="otava: Apache Otava's change points; steps: the history's own segmentation (moves of at least "
                        "the tolerance); auto (default): otava where installed")
    h.add_argument("--pvalue", type=fraction, default=t.pvalue, metavar="P",
                   help="Otava: a change point's most p-value (default %(default)s)")
    h.add_argument("--min-change", type=fraction, default=t.min_change, metavar="F",
                   help="Otava: a change point's least relative size (default %(default)s)")
    h.add_argument("--window", type=positive_int, default=t.window, metavar="W",
                   help="Otava: its sliding window, in runs (default %(default)s)")
    h.add_argument("--min-segment", type=positive_int, default=t.min_segment, metavar="S",
                   help="Otava: the fewest runs on each side of a change point (default %(default)s)")


def _add_env_parser(sub: argparse._SubParsersAction) -> None:
    from .envs.options import DEFAULT_CACHE
    from .options.argtypes import duration

    e = sub.add_parser("env", help="the side environments (pip=) cached on this machine, or after -- pytest's "
                                   "arguments, on every node of the cluster they name: list, prune")
    esub = e.add_subparsers(dest="env_command", parser_class=OneLineParser)
    for verb, what in (("list", "each cached environment: its path, installer, requirements, size, last use"),
                       ("prune", "remove the environments not used for --older-than (none in use is removed)")):
        v = esub.add_parser(verb, help=what)
        v.add_argument("--cache", default=DEFAULT_CACHE, metavar="DIR", help="the --dlperf-env-cache (default %(default)s)")
        if verb == "prune":
            v.add_argument("--older-than", type=duration, default=0.0, metavar="D",
                           help="only those unused this long (7d, 12h, 30m; default: every one not in use)")
    e.set_defaults(fn=cmd_env)


def _add_data_parser(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("data", help="a deterministic ImageNet-shaped dataset (JPEG, TFRecord, tokens): make, index")
    dsub = d.add_subparsers(dest="data_command", parser_class=OneLineParser)
    m = dsub.add_parser("make", help="build DIR atomically (nothing to do where it is already built)")
    m.add_argument("kind", choices=["imagenet"])
    m.add_argument("dir", type=Path, metavar="DIR")
    for name, least, what in (("images", 1, "default 512"), ("classes", 1, "default 16"), ("shards", 1, "default 4"),
                              ("tokens", 1, "default 1048576"), ("vocab", 2, "default 32000"),
                              ("seed", 0, "default 0")):
        m.add_argument(f"--{name}", type=_whole_number(least, f"give {least} or more"), default=None,
                       help=what)
    x = dsub.add_parser("index", help="print DIR's index as JSON (formats, files, bytes, digest)")
    x.add_argument("dir", type=Path, metavar="DIR")
    d.set_defaults(fn=cmd_data)


def main(argv: list[str] | None = None) -> int:
    from .formats import FORMATS

    p = argparse.ArgumentParser(prog="dlperf", description="pytest-dlperf's saved results and ECS instances")
    sub = p.add_subparsers(dest="command", required=True)
    i = sub.add_parser("import", help="turn a peer's logs (<NnMg>/<name>_<run>.log) into results.json")
    i.add_argument("logdir", type=Path)
    i.add_argument("--format", required=True, choices=sorted(FORMATS))
    i.add_argument("-o", "--output", type=Path, default=Path("results.json"))
    i.add_argument("--warmup-iters", type=_warmup, default=None,
                   help="steps (dlperf-tf2: default 100) or logged records/intervals to drop as warm-up")
    i.add_argument("--backend", default=None, help="the backend name the cases get (default: after the format)")
    i.add_argument("--model", default=None)
    i.add_argument("--precision", default=None, choices=("fp32", "amp"))
    i.add_argument("--batch-size", type=_positive, default=None, help="per device")
    i.add_argument("--image-size", type=_positive, default=None)
    i.add_argument("--per-device-rates", action="store_true",
                   help="the log's rates are per device (PaddleClas' ips): multiply by the devices")
    i.add_argument("--row", default=None, metavar="LABEL",
                   help="ddp-bench: the row to read by its label, e.g. 'no ddp' or '1M/8G' (default: the DDP row "
                        "of the directory's GPUs)")
    i.add_argument("--override-header", action="store_true",
                   help="use --model/--batch-size/--precision/--image-size where they contradict a log's own header "
                        "(said as a warning; without it, a contradiction is an error)")
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
    h = sub.add_parser("history", help="a static site over many runs (opens from disk): lines, ladders, run pages")
    h.add_argument("results", nargs="+", metavar="RESULTS",
                   help="results.json files, report directories (every results.json under them) or globs")
    h.add_argument("-o", "--output", type=Path, default=None, metavar="SITE", help="the directory to write the site into")
    _add_change_point_options(h)
    h.set_defaults(fn=cmd_history)
    o = sub.add_parser("options", help="docs/options.md: every option of pytest --help, from the plugin's registry")
    o.add_argument("-o", "--output", type=Path, default=None, metavar="FILE", help="write it here (default: print it)")
    o.set_defaults(fn=cmd_options)
    from .bisect.command import add_parser as add_bisect_parser
    from .clusters.aliyun import ecluster

    add_bisect_parser(sub).set_defaults(fn=cmd_bisect)
    ecluster.add_parser(sub)
    _add_data_parser(sub)
    _add_env_parser(sub)
    _add_explain_parser(sub)
    from .init.command import add_parser as add_init_parser

    add_init_parser(sub)
    argv = list(sys.argv[1:] if argv is None else argv)
    remote: list[str] = []
    # dlperf cluster ssh TASK ... -- a command to run there; dlperf bisect|env ... -- pytest's arguments
    if argv[:1] in (["cluster"], ["bisect"], ["env"]) and "--" in argv:
        argv, remote = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    args = p.parse_args(argv)
    args.remote = remote
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
