"""Make a side's environment on every node of a case at once, through the cluster's own channel
(``Cluster.run_everywhere``), before the case's first launch: the node script ``node/makeenv.py`` makes it
(or finds it in the node's cache) and says where it is, what it holds and how long it took."""
from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..clusters.base import Cluster, Node, NodeCommand
from ..node.makeenv import ERROR_MARK, MARK
from .options import EnvOptions

__all__ = ["EnvError", "MadeEnv", "NodeEnv", "dry_run", "make_everywhere"]

SCRIPT = Path(__file__).resolve().parents[1] / "node" / "makeenv.py"
TIMEOUT = 1800.0  # a make that downloads a framework takes minutes; one that hangs is stopped here


class EnvError(RuntimeError):
    """A side's environment could not be made: names the option, the node and the installer's last lines."""


@dataclass(frozen=True)
class NodeEnv:
    """One node's environment: its interpreter, its key, who made it and how long it took (0: reused)."""

    python: str
    digest: str
    builder: str
    seconds: float
    reused: bool
    added: dict[str, str] = field(default_factory=dict)  # distribution -> version installed in it
    hidden: dict[str, str] = field(default_factory=dict)  # distribution of the base it hides -> its version
    moved: dict[str, list[str]] = field(default_factory=dict)  # of those, held by the base at another version
    kept: dict[str, str] = field(default_factory=dict)  # the base's local builds it takes as they are: "editable"|"local"


@dataclass(frozen=True)
class MadeEnv:
    """A side's environment on each of its nodes, and the time it took to have them all ready."""

    requirements: tuple[str, ...]
    hide: tuple[str, ...]
    nodes: dict[str, NodeEnv]
    seconds: float

    def python(self, node: str) -> str:
        return self.nodes[node].python

    def changes(self) -> str:
        """What it holds over the base, as a verdict names it: asked, and what the installer had to move."""
        first = next(iter(self.nodes.values()))
        moved = [f"{k} {a} -> {b}" for k, (a, b) in sorted(first.moved.items())]
        new = [f"{k} (none) -> {v}" for k, v in sorted(first.added.items()) if k not in first.moved]
        hidden = [f"{k} {v} -> (hidden)" for k, v in sorted(first.hidden.items())]
        said = "; ".join(moved + new + hidden) or "nothing the base did not already hold"
        kept = [f"{k} ({v})" for k, v in sorted(first.kept.items())]
        return said + (f"; the base's local builds as it has them: {', '.join(kept)}" if kept else "")

    def to_dict(self) -> dict:
        return {"requirements": list(self.requirements), "hide": list(self.hide), "seconds": self.seconds,
                "nodes": {name: asdict(env) for name, env in self.nodes.items()}}


def command(node: Node, run_dir: str, script: str, requirements: Sequence[str], hide: Sequence[str],
            options: EnvOptions) -> NodeCommand:
    """The node's command: its own python runs the script, which makes the environment over that python."""
    argv = [node.python, script, "make", "--cache", options.cache, "--base", node.python, "--installer",
            options.installer, *(["--index-url", options.index_url] if options.index_url else []),
            *(["--find-links", options.find_links] if options.find_links else []),
            *(w for name in hide for w in ("--hide", name)), "--", *requirements]
    return NodeCommand(node, argv, cwd=run_dir)


def make_everywhere(cluster: Cluster, nodes: Sequence[Node], requirements: Sequence[str], hide: Sequence[str],
                    options: EnvOptions, log_dir: Path, where: str, say: Callable[[str], None]) -> MadeEnv:
    """The environment of ``requirements`` (without the distributions ``hide``) over each node's python, made
    (or found) on all of ``nodes`` at once; ``where`` names the option in errors; ``say`` takes a line per
    node and the total."""
    t0 = time.monotonic()
    runs = cluster.run_everywhere(nodes, lambda node, run_dir, script: command(node, run_dir, script, requirements,
                                                                             hide, options),
                                  log_dir, TIMEOUT, name="env", tag="dlperf-env", script=SCRIPT, expect=MARK)
    if runs.error:
        raise EnvError(f"{where}: the environment could not be made: {runs.error}")
    made: dict[str, NodeEnv] = {}
    for name, out in runs.outputs.items():
        lines = out.text.splitlines()
        got = [ln[len(MARK):] for ln in lines if ln.startswith(MARK)]
        if out.returncode != 0 or not got:
            why = next((ln[len(ERROR_MARK):] for ln in reversed(lines) if ln.startswith(ERROR_MARK)), None)
            if out.returncode is None:
                why = f"still making it after {TIMEOUT:.0f} s (stopped)"
            raise EnvError(f"{where}: on node {name}: {why or ' '.join(out.tail(5).split()) or 'no output'} "
                           f"(log: {out.log_path})")
        info = json.loads(got[-1])
        made[name] = NodeEnv(info["python"], info["digest"], info["builder"], float(info["seconds"]),
                             bool(info["reused"]), dict(info.get("added", {})), dict(info.get("hidden", {})),
                             dict(info.get("moved", {})), dict(info.get("kept", {})))
        env = made[name]
        say(f"dlperf env {where}: node {name}: " + (f"reused {env.python}" if env.reused else
                                                      f"made {env.python} with {env.builder} in {env.seconds:.1f} s"))
    if runs.sweep_errors:
        raise EnvError(f"{where}: " + "; ".join(runs.sweep_errors))
    result = MadeEnv(tuple(requirements), tuple(hide), made, round(time.monotonic() - t0, 2))
    say(f"dlperf env {where}: ready on {len(made)} node(s) in {result.seconds:.1f} s ({result.changes()}); "
        "not counted in any measurement")
    return result


def dry_run(requirements: Sequence[str], hide: Sequence[str], options: EnvOptions) -> str:
    """The make command each node runs, for the dry-run (PYTHON: the node's own)."""
    node = Node("NODE", "", 1, 1, python="PYTHON")
    return shlex.join(command(node, "RUN_DIR", "makeenv.py", requirements, hide, options).argv)
