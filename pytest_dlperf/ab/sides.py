"""The two sides of an A/B session: what a side changes (its spec, parsed from the command line)
and the side made ready to launch (its worktree made, its revision resolved).

A spec is words split as a shell splits them: ``current`` alone, ``recorded`` (with ``name=`` at most: each
case's recorded software, found from its baseline before its first launch), or any of ``python=PATH``,
``env=NAME=VALUE``, ``unset=NAME``, ``pip=REQ`` and ``hide=DIST`` (repeatable), ``rev=REF``, ``repo=PATH``,
``install=PATH``, ``name=LABEL`` (docs/ab.md). ``pip=`` and ``hide=`` make the side an environment on every node (``envs``):
its python's packages with those requirements applied (a pin, a wheel, a project directory, or
``pip=-r FILE``), and without the distributions hidden (their modules and start-up hooks); ``install=PATH``
installs the project at PATH of the repository at ``rev=`` into it (asv's way of measuring a library's commit).
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..clusters.base import Node, NodeCommand
from ..launchers.base import RANKSTART
from ..node.makeenv import names_a_file

if TYPE_CHECKING:
    from ..envs.make import MadeEnv
    from ..launchers.base import Launcher

ROLES = ("reference", "candidate")
RECORDED = "recorded"  # the side word (and default label) of the recording's software
KEYS = ("python", "env", "unset", "pip", "hide", "rev", "repo", "install", "name")
WORDS = "recorded, python=PATH, env=NAME=VALUE, unset=NAME, pip=REQ, hide=DIST, rev=REF, repo=PATH, install=PATH, name=LABEL"
DIST_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class SpecError(ValueError):
    """A side's spec cannot be read: the message names the option, the word and the fix."""


@dataclass(frozen=True)
class SideSpec:
    """What one side changes against the session's own environment (nothing: ``current``)."""

    role: str  # "reference" or "candidate"
    text: str = "current"  # as given on the command line
    python: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    unset: tuple[str, ...] = ()  # variables the side's workers run without (the recording had them unset)
    pip: tuple[str, ...] = ()  # requirements applied over the side's python, as installer arguments
    hide: tuple[str, ...] = ()  # distributions of the side's python its environment hides
    rev: str | None = None
    repo: str | None = None
    install: str | None = None  # a project's path in the repository at rev, installed into the side's environment
    name: str = ""
    recorded: bool = False  # each case's recorded software, as words found from its baseline (``ab.recorded``)

    @property
    def label(self) -> str:
        return self.name or (RECORDED if self.recorded else self.role)

    @property
    def makes_environment(self) -> bool:
        """Whether the side's environment is made on the nodes (pip=, hide=, install=)."""
        return bool(self.pip or self.hide or self.install)

    def describe(self) -> str:
        """One line for the terminal: the label and what the side changes."""
        return f"{self.label}: {self.text}"


def parse_side(text: str, role: str, option: str | None = None) -> SideSpec:
    """The spec of ``--dlperf-<role>`` (or of ``option``); SpecError names the word that is wrong and the fix."""
    option = option or f"--dlperf-{role}"
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise SpecError(f"{option} {text!r}: {exc}; quote it as a shell would") from None
    if words in ([], ["current"]):
        return SideSpec(role, "current")
    got: dict[str, str] = {}
    env: dict[str, str] = {}
    unset: list[str] = []
    pip: list[str] = []
    hide: list[str] = []
    recorded = RECORDED in words
    words = iter(w for w in words if w != RECORDED)
    for word in words:
        key, eq, value = word.partition("=")
        if not eq or key not in KEYS:
            raise SpecError(f"{option}: {word!r} is not a spec word; use current, or {WORDS}")
        if not value:
            raise SpecError(f"{option}: {word!r} gives no value")
        if key == "env":
            name, eq2, val = value.partition("=")
            if not eq2 or not ENV_NAME.match(name):
                raise SpecError(f"{option}: {word!r}: expected env=NAME=VALUE, e.g. env=NCCL_ALGO=Tree")
            env[name] = val
            continue
        if key == "pip":
            pip += _requirement(value, words, option)
            continue
        if key == "hide":
            if not DIST_NAME.match(value):
                raise SpecError(f"{option}: {word!r}: expected hide=DIST, a distribution's name, e.g. hide=quicklog")
            hide.append(value.lower().replace("_", "-"))
            continue
        if key == "unset":
            if not ENV_NAME.match(value):
                raise SpecError(f"{option}: {word!r}: expected unset=NAME, e.g. unset=NCCL_ALGO")
            unset.append(value)
            continue
        if key in got:
            raise SpecError(f"{option}: {key}= given twice ({got[key]!r} and {value!r}); give it once")
        got[key] = value
    if recorded and (env or unset or pip or hide or set(got) - {"name"}):
        raise SpecError(f"{option}: recorded is the whole recorded software (its python, distributions and variables): "
                        "give it alone, or with name=LABEL")
    if "repo" in got and "rev" not in got:
        raise SpecError(f"{option}: repo={got['repo']} without rev=REF; repo names the repository REF is in")
    if "install" in got and "rev" not in got:
        raise SpecError(f"{option}: install={got['install']} without rev=REF; install names a project in the repository "
                        "at REF (install=. for its root)")
    if got.get("name") in ROLES and got["name"] != role:
        raise SpecError(f"{option}: name={got['name']} is the other side's role; choose another label")
    both = sorted(set(env) & set(unset))
    if both:
        raise SpecError(f"{option}: {', '.join(both)} both set (env=) and unset (unset=): give one")
    return SideSpec(role, text, python=got.get("python"), env=env, unset=tuple(dict.fromkeys(unset)), pip=tuple(pip),
                    hide=tuple(dict.fromkeys(hide)), rev=got.get("rev"), install=got.get("install"),
                    repo=str(Path(got["repo"]).expanduser().resolve()) if "repo" in got else None,
                    name=got.get("name", ""), recorded=recorded)


def _requirement(value: str, words: Iterator[str], option: str) -> list[str]:
    """A ``pip=`` word as installer arguments: ``-r FILE`` (the file may be the next word), a path made
    absolute (a wheel, a project directory: each node has it at that path), or a requirement as given."""
    if value in ("-r", "--requirement") or value.startswith("-r"):
        path = next(words, "") if value in ("-r", "--requirement") else value[2:]
        if not path:
            raise SpecError(f"{option}: pip={value} names no file: pip=-r FILE, e.g. \"pip=-r requirements-next.txt\"")
        return ["-r", str(Path(path).expanduser().resolve())]
    if value.startswith("-"):
        raise SpecError(f"{option}: pip={value}: an installer option is not a requirement; give a pin, a wheel, a "
                        "project directory or -r FILE (index options: --dlperf-env-index-url, --dlperf-env-find-links)")
    if names_a_file(value):
        return [str(Path(value).expanduser().resolve())]
    return [value]


@dataclass
class Side:
    """A side made ready: its spec, and where its benchmark files come from (a worktree at its
    revision, ``files_root`` standing in for ``repo_root``)."""

    spec: SideSpec
    commit: str | None = None  # the full hash rev resolved to
    repo_root: Path | None = None  # the repository whose files the worktree replaces
    files_root: Path | None = None  # the worktree at ``commit``
    frameworks: dict[str, str] = field(default_factory=dict)  # node 0's versions as this side's python has them
    made: MadeEnv | None = None  # its pip= environment on each node, once made
    project: Path | None = None  # install=: the project's directory in the worktree at ``commit``

    @property
    def label(self) -> str:
        return self.spec.label

    @property
    def own_python(self) -> bool:
        """Whether the side runs an interpreter other than the nodes' own (python=, or a pip= environment)."""
        return bool(self.spec.python or self.spec.makes_environment)

    @property
    def requirements(self) -> tuple[str, ...]:
        """What its environment installs: the pip= words', then the install= project at its commit."""
        return (*self.spec.pip, *([str(self.project)] if self.project else []))

    @property
    def environment_words(self) -> str:
        """The words that make its environment, as given (pip= and hide=)."""
        return " ".join([*(f"pip={r}" for r in self.spec.pip), *(f"hide={h}" for h in self.spec.hide),
                         *([f"install={self.spec.install}"] if self.spec.install else [])])

    @property
    def where(self) -> str:
        """The option and the words that give the side its interpreter, for its errors."""
        python = [f"python={self.spec.python}"] if self.spec.python else []
        return f"--dlperf-{self.spec.role} {' '.join([*python, self.environment_words]).strip()}"

    def node(self, node: Node) -> Node:
        """The node as this side launches on it: with the side's interpreter (its made environment's there)."""
        if self.made is not None and node.name in self.made.nodes:
            return replace(node, python=self.made.python(node.name))
        return replace(node, python=self.spec.python) if self.spec.python else node

    def base(self, node: Node) -> Node:
        """The node as the side's environment is made over it: with python= where given."""
        return replace(node, python=self.spec.python) if self.spec.python else node

    def nodes(self, nodes: list[Node]) -> list[Node]:
        return [self.node(n) for n in nodes]

    def workload_paths(self, launcher: Launcher) -> list[Path]:
        """The launcher's files, from this side's worktree where they are in the replaced repository. A file the
        side's commit does not hold yet is left out (its workload, of that commit, does not import it: the torch
        workload was one file before it was split); the entry script, the first, stays and is named if missing.
        The direct start (rankstart.py) starts the ranks, as torchrun would: always the harness's own."""
        files = [p if p.name == RANKSTART else self.file(p) for p in launcher.workload_paths()]
        return files[:1] + [f for f in files[1:] if self.files_root is None or f.exists()]

    def file(self, path: Path) -> Path:
        if self.repo_root is None or self.files_root is None:
            return path
        try:
            rel = Path(path).resolve().relative_to(self.repo_root)
        except ValueError:
            return path
        return self.files_root / rel

    def commands(self, cmds: list[NodeCommand]) -> list[NodeCommand]:
        """The commands with the side's variables for the workers (after the launcher's own), and those it
        unsets removed from what the node gives them (``env -u NAME``, ahead of the command)."""
        if not self.spec.env and not self.spec.unset:
            return cmds
        gone = self.spec.unset
        unset = [w for name in gone for w in ("-u", name)]
        return [replace(c, env={**{k: v for k, v in c.env.items() if k not in gone}, **self.spec.env},
                        argv=["env", *unset, *c.argv] if unset else c.argv) for c in cmds]

    def environ(self) -> dict[str, str | None]:
        """The variables the side sets (None: unsets) for its workers."""
        return {**{k: None for k in self.spec.unset}, **self.spec.env}

    def to_dict(self) -> dict:
        s = self.spec
        return {"name": s.label, "spec": s.text, "python": s.python, "env": dict(s.env), "unset": list(s.unset),
                "pip": list(s.pip), "hide": list(s.hide), "install": s.install, "environment": self.made.to_dict() if self.made else None, "rev": s.rev,
                "repo": str(self.repo_root) if self.repo_root else s.repo, "commit": self.commit,
                "frameworks": dict(self.frameworks)}
