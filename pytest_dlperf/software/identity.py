"""What software a case ran, completely enough to say "nothing differs" (docs/gate.md, "Software identity").

Per node of the case: the interpreter (path and version), every distribution it imports (name ->
version, and their digest) and the environment variables that change training; the files that run
(the workload's and the suite's, by digest); the repository's commit and a digest of its uncommitted
changes (the baseline store left out: a recording is not software); pytest-dlperf's version; and the
stack the workload reports (communication backend, CUDA, cuDNN, NCCL, driver).

Stored with every baseline entry (the file's ``software`` table, by id) and every session's results,
and compared field by field. Plain data: the probes that fill it are ``nodechecks/software.py`` and
``provenance``.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

CONTRACT = 1  # the stored form's version (``to_dict``); a stored identity of another is "not recorded"
# A variable whose name says it holds a secret arrives from the node's probe as this mark and a digest of
# its value (node/workloads/nodefacts.py, software contract 1): a change is seen, the value never kept.
SECRET_MARK = "secret:sha256:"
# what the workload's meta line reports of the stack beneath the framework (``stack_of``)
STACK_KEYS = ("backend", "cuda", "cudnn", "nccl", "driver")


def digest(data: Any, length: int = 16) -> str:
    """A short sha256 of ``data``'s canonical JSON (keys sorted): equal data, equal digest."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def file_digest(path: Path) -> str:
    """A short sha256 of a file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


class Change(str, Enum):
    """What kind of software differs: it says which reference can run the recorded software again."""

    PYTHON = "python"  # the interpreter's path or version
    DISTRIBUTIONS = "distributions"  # installed packages
    ENV = "env"  # a variable that changes training
    FILES = "files"  # a workload or suite file
    REPOSITORY = "repository"  # the commit, or uncommitted changes
    HARNESS = "harness"  # pytest-dlperf's version
    STACK = "stack"  # what the workload reports beneath the framework (driver, CUDA, ...)
    NODES = "nodes"  # the case ran on another number of nodes

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Difference:
    """One thing that differs between the recorded software and this session's, said in a line."""

    kind: Change
    text: str


@dataclass(frozen=True)
class NodeSoftware:
    """One node's interpreter as its launches run it: path, version, distributions, training variables."""

    executable: str
    python: str
    distributions: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def packages(self) -> str:
        """The digest of the distributions: equal digests, the same packages at the same versions."""
        return digest(dict(self.distributions))

    def to_dict(self) -> dict:
        return {"executable": self.executable, "python": self.python, "distributions": dict(self.distributions),
                "packages": self.packages, "env": dict(self.env)}

    @classmethod
    def from_dict(cls, d: Any) -> NodeSoftware:
        """ValueError names the field that is wrong."""
        if not isinstance(d, dict):
            raise ValueError("a node's software must be an object")
        executable, python = d.get("executable"), d.get("python")
        if not (isinstance(executable, str) and isinstance(python, str)):
            raise ValueError("a node's software needs 'executable' and 'python' strings")
        return cls(executable, python, _str_map(d.get("distributions", {}), "distributions"),
                   _str_map(d.get("env", {}), "env"))


@dataclass(frozen=True)
class Repository:
    """The repository under test: its commit and a digest of its uncommitted changes (None: clean)."""

    commit: str
    changes: str | None = None

    def short(self) -> str:
        return self.commit[:12] + (f" with uncommitted changes ({self.changes})" if self.changes else "")

    def to_dict(self) -> dict:
        return {"commit": self.commit, "changes": self.changes}

    @classmethod
    def from_dict(cls, d: Any) -> Repository:
        if not (isinstance(d, dict) and isinstance(d.get("commit"), str)):
            raise ValueError("'repository' needs a 'commit' string")
        changes = d.get("changes")
        if changes is not None and not isinstance(changes, str):
            raise ValueError("'repository.changes' must be a digest string or null")
        return cls(d["commit"], changes)


@dataclass(frozen=True)
class Software:
    """A case's software identity (see the module doc)."""

    nodes: tuple[NodeSoftware, ...]
    files: Mapping[str, str] = field(default_factory=dict)  # "workload:torch_ddp.py" -> digest
    repository: Repository | None = None
    harness: str | None = None  # pytest-dlperf's version
    stack: Mapping[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        """The identity's digest: the key a baseline file and results.json keep it under."""
        return digest(self.to_dict(), 12)

    def summary(self) -> str:
        """What was compared, in a few words: "commit 4e957a9c1b2d, 172 distributions, 2 variables, 3 files"."""
        parts = [f"commit {self.repository.short()}" if self.repository else "no repository"]
        n = self.nodes[0] if self.nodes else None
        if n is not None:
            parts += [f"python {n.python} at {n.executable}", f"{len(n.distributions)} distributions",
                      f"{len(n.env)} training variable(s)"]
        parts.append(f"{len(self.files)} file(s) that run")
        return ", ".join(parts)

    def to_dict(self) -> dict:
        return {"contract": CONTRACT, "nodes": [n.to_dict() for n in self.nodes], "files": dict(sorted(self.files.items())),
                "repository": self.repository.to_dict() if self.repository else None, "harness": self.harness,
                "stack": dict(sorted(self.stack.items()))}

    @classmethod
    def from_dict(cls, d: Any) -> Software:
        """ValueError names the field that is wrong (the caller names the file)."""
        if not isinstance(d, dict):
            raise ValueError("must be an object")
        if d.get("contract") != CONTRACT:
            raise ValueError(f"contract {d.get('contract')!r} is not {CONTRACT}")
        nodes = d.get("nodes")
        if not isinstance(nodes, list) or not nodes:
            raise ValueError("'nodes' must be a non-empty list")
        harness = d.get("harness")
        if harness is not None and not isinstance(harness, str):
            raise ValueError("'harness' must be a version string or null")
        return cls(tuple(NodeSoftware.from_dict(n) for n in nodes), _str_map(d.get("files", {}), "files"),
                   Repository.from_dict(d["repository"]) if d.get("repository") is not None else None,
                   harness, _str_map(d.get("stack", {}), "stack"))


def pack(identities: Mapping[str, Software]) -> tuple[dict[str, dict], dict[str, dict[str, str]]]:
    """The identities as a baseline file keeps them: each node's distributions replaced by their digest
    (``packages``), and the distributions once per digest (nodes and cases mostly share one environment)."""
    table: dict[str, dict] = {}
    packages: dict[str, dict[str, str]] = {}
    for sid, sw in sorted(identities.items()):
        d = sw.to_dict()
        for node, n in zip(d["nodes"], sw.nodes):
            packages[n.packages] = dict(node.pop("distributions"))
        table[sid] = d
    return table, dict(sorted(packages.items()))


def unpack(table: Mapping[str, Any], packages: Mapping[str, Any]) -> dict[str, Software]:
    """``pack``'s inverse; ValueError names the identity or the digest that is wrong."""
    out = {}
    for sid, d in table.items():
        if not isinstance(d, dict) or not isinstance(d.get("nodes"), list):
            raise ValueError(f"software[{sid!r}] must be an object with a 'nodes' list")
        nodes = []
        for node in d["nodes"]:
            if isinstance(node, dict) and "distributions" in node:  # kept inline, as files before packing did
                nodes.append(node)
                continue
            key = node.get("packages") if isinstance(node, dict) else None
            if not isinstance(key, str) or key not in packages:
                raise ValueError(f"software[{sid!r}]: a node's packages {key!r} name no entry of 'distributions'")
            nodes.append({**node, "distributions": packages[key]})
        try:
            sw = Software.from_dict({**d, "nodes": nodes})
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise ValueError(f"software[{sid!r}]: {exc}") from None
        for node, n in zip(d["nodes"], sw.nodes):
            if "packages" in node and n.packages != node["packages"]:
                raise ValueError(f"distributions[{node['packages']!r}] do not match their digest {n.packages!r} "
                                 "(edited by hand?)")
        out[sid] = sw
    return out


def _str_map(d: Any, name: str) -> dict[str, str]:
    if not (isinstance(d, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in d.items())):
        raise ValueError(f"'{name}' must map names to strings")
    return dict(d)


def stack_of(versions: Mapping[str, str]) -> dict[str, str]:
    """The stack a run reports (``provenance.run_versions``): backend, CUDA, cuDNN, NCCL, driver."""
    return {k: str(versions[k]) for k in STACK_KEYS if versions.get(k)}


def differences(old: Software, new: Software,
                same_tree: Callable[[str, str], bool] = lambda a, b: a == b) -> list[Difference]:
    """Everything that differs from ``old`` (the recording's) to ``new`` (this session's), one line each.
    ``same_tree(a, b)``: whether two commits hold the same files outside the baseline store (a commit that
    only adds a recording changes no software)."""
    out: list[Difference] = []
    if len(old.nodes) != len(new.nodes):
        out.append(Difference(Change.NODES, f"nodes {len(old.nodes)} -> {len(new.nodes)}"))
    out += _node_differences(old.nodes, new.nodes)
    for name in sorted(set(old.files) | set(new.files)):
        a, b = old.files.get(name), new.files.get(name)
        if a != b:
            out.append(Difference(Change.FILES, f"file {name} {a or '(none)'} -> {b or '(none)'}"))
    out += _repository_differences(old.repository, new.repository, same_tree)
    if old.harness != new.harness:
        out.append(Difference(Change.HARNESS, f"pytest-dlperf {old.harness or '(none)'} -> {new.harness or '(none)'}"))
    for k in STACK_KEYS:
        a, b = old.stack.get(k), new.stack.get(k)
        if a != b:
            out.append(Difference(Change.STACK, f"{k} {a or '(none)'} -> {b or '(none)'}"))
    return out


def _node_differences(old: Sequence[NodeSoftware], new: Sequence[NodeSoftware]) -> list[Difference]:
    """Per node in order (node 0 is the first of the case's nodes); a difference every node shares is
    said once, for "every node"."""
    said: dict[tuple[Change, str], list[int]] = {}
    for i, (a, b) in enumerate(zip(old, new)):
        for kind, text in _one_node(a, b):
            said.setdefault((kind, text), []).append(i)
    n = min(len(old), len(new))
    out = []
    for (kind, text), where in said.items():
        on = "every node" if len(where) == n and n > 1 else ", ".join(f"node {i}" for i in where)
        out.append(Difference(kind, f"{text} on {on}" if n > 1 else text))
    return out


def _one_node(a: NodeSoftware, b: NodeSoftware) -> list[tuple[Change, str]]:
    out = []
    if a.executable != b.executable:
        out.append((Change.PYTHON, f"python {a.executable} -> {b.executable}"))
    if a.python != b.python:
        out.append((Change.PYTHON, f"python version {a.python} -> {b.python}"))
    if a.packages != b.packages:
        changed = [f"{k} {a.distributions.get(k, '(none)')} -> {b.distributions.get(k, '(removed)')}"
                   for k in sorted(set(a.distributions) | set(b.distributions))
                   if a.distributions.get(k) != b.distributions.get(k)]
        shown = "; ".join(changed[:8]) + (f"; and {len(changed) - 8} more" if len(changed) > 8 else "")
        out.append((Change.DISTRIBUTIONS, f"distributions ({len(changed)} differ): {shown}"))
    for k in sorted(set(a.env) | set(b.env)):
        x, y = a.env.get(k), b.env.get(k)
        if x != y:
            out.append((Change.ENV, f"env {k}: {x if x is not None else '(unset)'} -> {y if y is not None else '(unset)'}"))
    return out


def _repository_differences(a: Repository | None, b: Repository | None,
                            same_tree: Callable[[str, str], bool]) -> list[Difference]:
    if a is None and b is None:
        return []
    if a is None or b is None:
        return [Difference(Change.REPOSITORY, f"repository {a.short() if a else '(none)'} -> {b.short() if b else '(none)'}")]
    out = []
    if a.commit != b.commit and not same_tree(a.commit, b.commit):
        out.append(Difference(Change.REPOSITORY, f"commit {a.commit[:12]} -> {b.commit[:12]}"))
    if a.changes != b.changes:
        out.append(Difference(Change.REPOSITORY, f"uncommitted changes {a.changes or '(none)'} -> {b.changes or '(none)'}"))
    return out
