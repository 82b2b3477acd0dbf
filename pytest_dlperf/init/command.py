"""``dlperf init [DIR]``: its arguments, and what it prints (the files written and the next commands).

Exit status: 0 written; 2 a usage error or nothing written (a file already there, not a repository)."""
from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

from ..formats import FORMATS
from ..oneline import one_line_error

EPILOG = """\
Writes, under DIR (a git repository's root): SUITE/pytest.ini, SUITE/conftest.py (your command as an external
benchmark), SUITE/dlperf_train.py, SUITE/baselines/ and .github/workflows/dlperf-nightly.yml, and, where a pull
request changes what runs (--workload, or --builtin with --library), .github/workflows/dlperf-pull-request.yml.
It never overwrites a file: one already there is named and nothing is written.
Placeholders in --workload: {model_name} {model} {batch_size} {image_size} {precision} {iters} {warmup_iters}
{world_size} {nnodes} {node_rank} {nproc_per_node} {master_addr} {master_port} {run_dir} {threads}."""


def add_parser(sub) -> argparse.ArgumentParser:  # noqa: ANN001 - argparse's subparsers
    p = sub.add_parser("init", help="write a benchmark suite and its CI workflows into your repository",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("root", nargs="?", type=Path, default=Path("."), metavar="DIR",
                   help="the repository's root (default: here)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--workload", metavar="COMMAND",
                      help='your training command, e.g. "python train.py --arch {model_name} --batch-size {batch_size}"')
    what.add_argument("--builtin", action="store_true", help="the built-in suite (resnet50, vgg16, ...) instead")
    p.add_argument("--format", choices=sorted(FORMATS), default=None,
                   help="the parser of the command's output (dllogger: NVIDIA DeepLearningExamples' DLLL lines)")
    p.add_argument("--library", action="store_true",
                   help="the repository is a library: each side of the pull-request recipe installs it at its "
                        "commit (rev=REF install=.)")
    p.add_argument("--model", dest="models", action="append", default=None, metavar="NAME",
                   help="a model the command trains ({model_name}); repeat for more (default: the script's name)")
    p.add_argument("--batch-size", type=int, default=8, metavar="N", help="per device (default 8)")
    p.add_argument("--size", type=int, default=32, metavar="N", help="image side or sequence length (default 32)")
    p.add_argument("--launch", choices=("torchrun", "per-node"), default=None,
                   help="torchrun on every node (default), or the script itself on every node")
    p.add_argument("--framework", default="torch", metavar="PACKAGE",
                   help="the package every node must have, in one version (default torch)")
    p.add_argument("--suite-dir", default="perf", metavar="NAME", help="the suite's folder (default perf)")
    p.add_argument("--dlperf-from", default=None, metavar="SPEC",
                   help="the pip requirement the workflows install pytest-dlperf with (default: how this one was "
                        "installed, from its PEP 610 record: a VCS URL at its commit, or an index's version)")
    p.set_defaults(fn=cmd_init)
    p.error = functools.partial(one_line_error, p)  # type: ignore[method-assign]
    return p


# the options of --workload, by their attribute and their default (one given differs from it)
WORKLOAD_DEFAULTS = {"format": None, "models": None, "batch_size": 8, "size": 32, "launch": None, "framework": "torch"}


def _given(args: argparse.Namespace) -> list[str]:
    """The --workload options given a value of their own (for those --builtin has no use for)."""
    flag = {"models": "--model"}
    return [flag.get(k, "--" + k.replace("_", "-")) for k, d in WORKLOAD_DEFAULTS.items() if getattr(args, k) != d]


def cmd_init(args: argparse.Namespace) -> int:
    from .plan import InitError, InitRequest, plan  # here: every dlperf command builds this parser
    from .write import write

    req = InitRequest(root=args.root, workload=args.workload, format=args.format, builtin=args.builtin,
                      library=args.library, models=tuple(args.models or ()), batch_size=args.batch_size,
                      size=args.size, launch=args.launch, framework=args.framework, suite_dir=args.suite_dir,
                      dlperf_from=args.dlperf_from, given=tuple(_given(args)))
    try:
        p = plan(req)
        written = write(p)
    except InitError as exc:
        print(f"dlperf init: {exc}", file=sys.stderr)
        return 2
    print(f"dlperf init: wrote {', '.join(str(w.relative_to(p.root)) for w in written)} in {p.root}")
    for note in p.notes:
        print(f"dlperf init: {note}")
    print(f"Next, in {p.root}:")
    width = max(len(c) for c, why in p.next_commands if why)
    for c, why in p.next_commands:
        print(f"  {c:<{width}}  # {why}" if why else f"  {c}")
    return 0
