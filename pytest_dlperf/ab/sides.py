"""The two sides of an A/B session: what a side changes (its spec, parsed from the command line)
and the side made ready to launch (its worktree made, its revision resolved).

A spec is words split as a shell splits them: ``current`` alone, or any of ``python=PATH``,
``env=NAME=VALUE`` and ``unset=NAME`` (repeatable), ``rev=REF``, ``repo=PATH``, ``name=LABEL`` (docs/ab.md).
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..clusters.base import Node, NodeCommand

if TYPE_CHECKING:
    from ..launchers.base import Launcher

ROLES = ("reference", "candidate")
KEYS = ("python", "env", "unset", "rev", "repo", "name")
WORDS = "python=PATH, env=NAME=VALUE, unset=NAME, rev=REF, repo=PATH, name=LABEL"
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
    rev: str | None = None
    repo: str | None = None
    name: str = ""

    @property
    def label(self) -> str:
        return self.name or self.role

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
        if key == "unset":
            if not ENV_NAME.match(value):
                raise SpecError(f"{option}: {word!r}: expected unset=NAME, e.g. unset=NCCL_ALGO")
            unset.append(value)
            continue
        if key in got:
            raise SpecError(f"{option}: {key}= given twice ({got[key]!r} and {value!r}); give it once")
        got[key] = value
    if "repo" in got and "rev" not in got:
        raise SpecError(f"{option}: repo={got['repo']} without rev=REF; repo names the repository REF is in")
    if got.get("name") in ROLES and got["name"] != role:
        raise SpecError(f"{option}: name={got['name']} is the other side's role; choose another label")
    both = sorted(set(env) & set(unset))
    if both:
        raise SpecError(f"{option}: {', '.join(both)} both set (env=) and unset (unset=): give one")
    return SideSpec(role, text, python=got.get("python"), env=env, unset=tuple(dict.fromkeys(unset)), rev=got.get("rev"),
                    repo=str(Path(got["repo"]).expanduser().resolve()) if "repo" in got else None,
                    name=got.get("name", ""))


@dataclass
class Side:
    """A side made ready: its spec, and where its benchmark files come from (a worktree at its
    revision, ``files_root`` standing in for ``repo_root``)."""

    spec: SideSpec
    commit: str | None = None  # the full hash rev resolved to
    repo_root: Path | None = None  # the repository whose files the worktree replaces
    files_root: Path | None = None  # the worktree at ``commit``
    frameworks: dict[str, str] = field(default_factory=dict)  # node 0's versions as this side's python has them

    @property
    def label(self) -> str:
        return self.spec.label

    def node(self, node: Node) -> Node:
        """The node as this side launches on it: with the side's interpreter."""
        return replace(node, python=self.spec.python) if self.spec.python else node

    def nodes(self, nodes: list[Node]) -> list[Node]:
        return [self.node(n) for n in nodes]

    def workload_paths(self, launcher: Launcher) -> list[Path]:
        """The launcher's files, from this side's worktree where they are in the replaced repository."""
        return [self.file(p) for p in launcher.workload_paths()]

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
                "rev": s.rev,
                "repo": str(self.repo_root) if self.repo_root else s.repo, "commit": self.commit,
                "frameworks": dict(self.frameworks)}
