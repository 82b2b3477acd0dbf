"""The recorded software as an A/B reference: which side spec runs again what a baseline was recorded
with, found from the software identity it stored (``software/identity.py``) and what differs now. In order: the
recorded commit (``rev=``) for what lies in the repository, the recorded interpreter (``python=``), with an
environment over it that brings back the recorded distributions where it was upgraded in place since
(``pip=`` their recorded versions, ``hide=`` those added: ``envs``), the recorded variables (``env=``,
``unset=``). Where a part cannot be run again (a commit not in this clone, another Python version, another
driver), no reference is found, and the reason and the option that would confirm it are said instead; a
recorded version the index no longer has fails the environment's make, which names it."""
from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..software.identity import SECRET_MARK, Change, Difference, NodeSoftware, Software
from .sides import RECORDED, SideSpec, SpecError, parse_side

OPTION = "--dlperf-confirm-reference"
NAME = RECORDED  # the reference's label in the verdicts and the report

# what an interpreter's side runs again (a package's files come with it); any difference no part of a reference
# can run again leaves the recorded software out of reach
_BY_PYTHON = {Change.PYTHON, Change.DISTRIBUTIONS}


@dataclass(frozen=True)
class Found:
    """A reference that runs the recorded software (``spec``), or why none does (``why``) and the option
    that would confirm the case (``option``)."""

    spec: SideSpec | None
    why: str = ""
    option: str = ""


def option_for(words: Sequence[str]) -> str:
    """The command-line option for a reference of these spec words (COMMIT, PATH: what the user fills in)."""
    return f"{OPTION} {shlex.quote(shlex.join(words))}"


def find(recorded: Software | None, now: Software, differences: Sequence[Difference], *,
         reachable: Callable[[str], bool], interpreter: Callable[[str], Mapping[int, NodeSoftware] | str],
         recorded_commit: str | None = None) -> Found:
    """The reference for a case whose recording ran ``recorded`` and this session ``now``.
    ``reachable(commit)``: whether the repository holds it; ``interpreter(path)``: that interpreter's software
    on each of the case's nodes (by node order), or why it cannot run there; ``recorded_commit``: the commit an
    entry recorded before software identities existed (its versions' ``git``), for the hint."""
    if recorded is None:
        hint = [f"rev={recorded_commit}"] if recorded_commit else ["rev=COMMIT"]
        return Found(None, "the baseline was recorded before pytest-dlperf recorded software, so what differs "
                           "cannot be known (record it again with --update-baselines to gate it side by side)",
                     option_for(hint))
    kinds = {d.kind for d in differences}
    words: list[str] = []
    problems: list[str] = []
    placeholders: list[str] = []
    if Change.REPOSITORY in kinds:
        word, problem = _by_rev(recorded, reachable)
        words += [word] if word else []
        problems += [problem] if problem else []
        placeholders += [] if word else ["rev=COMMIT"]
    elif Change.FILES in kinds:  # no commit holds the old files: an interpreter's side runs this session's
        problems.append("the files that run changed where no commit keeps them (outside the repository, not "
                        "tracked by it, or in an upgraded pytest-dlperf: a python= side runs this session's files)")
    if kinds & _BY_PYTHON or (Change.HARNESS in kinds and Change.REPOSITORY not in kinds):
        got, problem = _by_python(recorded, interpreter)
        words += got
        problems += [problem] if problem else []
        placeholders += [] if got else ["python=PATH"]
    if Change.ENV in kinds:
        got, problem = _by_env(recorded.nodes, now.nodes)
        words += got
        problems += [problem] if problem else []
    if Change.NODES in kinds:
        problems.append("the recording ran on another number of nodes")
    for d in differences:  # the stack beneath the framework comes with the distributions, but for the driver
        if d.kind is Change.STACK and (d.text.startswith("driver") or not kinds & _BY_PYTHON):
            problems.append(f"the {d.text.split()[0]} changed ({d.text}), and no reference runs the old one beside "
                            "this session's")
    if problems:
        return Found(None, "; ".join(problems), option_for(words + placeholders))
    try:
        spec = parse_side(shlex.join([*words, f"name={NAME}"]), "reference", OPTION)
    except SpecError as exc:  # a recorded value the spec language cannot carry
        return Found(None, f"the recorded software cannot be named as a reference: {exc}", option_for(words))
    return Found(spec, "", option_for(words))


def _by_rev(recorded: Software, reachable: Callable[[str], bool]) -> tuple[str | None, str | None]:
    repo = recorded.repository
    if repo is None:
        return None, "the recording was not made in a git repository, so no commit holds its files"
    if repo.changes:
        return None, (f"the recording was made with uncommitted changes ({repo.changes}), so no commit holds "
                      "its files")
    if not reachable(repo.commit):
        return None, (f"its commit {repo.commit[:12]} is not in this repository (a shallow clone?): fetch it "
                      "(git fetch --unshallow)")
    return f"rev={repo.commit}", None


def _by_python(recorded: Software, interpreter: Callable[[str], Mapping[int, NodeSoftware] | str]
               ) -> tuple[list[str], str | None]:
    """``python=`` the recorded interpreter; where it was upgraded in place since (or is a fresh environment
    at the recorded path), with the environment words that bring its distributions back to the recorded ones
    over it (``pip=`` the recorded versions of those that changed or went, ``hide=`` those added since)."""
    paths = {n.executable for n in recorded.nodes}
    if len(paths) != 1:
        return [], f"the recording ran other interpreters on its nodes ({', '.join(sorted(paths))})"
    path = paths.pop()
    got = interpreter(path)
    if isinstance(got, str):
        return [], f"the recorded python {path} cannot run: {got}"
    back: set[tuple[str, ...]] = set()
    for i, node in enumerate(recorded.nodes):
        have = got.get(i)
        if have is None:
            return [], f"the recorded python {path} did not answer on node {i}"
        if have.python != node.python:
            return [], (f"the recorded python {path} is now Python {have.python} on node {i} (recorded: "
                        f"{node.python}): keep the recorded environment beside the new one to confirm side by side")
        back.add(tuple(_words_back(node.distributions, have.distributions)))
    if len(back) > 1:
        return [], (f"the recorded python {path} was upgraded differently on the case's nodes, so no one "
                    "environment brings them all back")
    return [f"python={path}", *back.pop()], None


def _words_back(recorded: Mapping[str, str], now: Mapping[str, str]) -> list[str]:
    """pip= each distribution at its recorded version where it changed or went, hide= each one added since."""
    pins = [f"pip={k}=={v}" for k, v in sorted(recorded.items()) if now.get(k) != v]
    return pins + [f"hide={k}" for k in sorted(set(now) - set(recorded))]


def side_words(recorded: Software | None, now: Sequence[NodeSoftware] | None,
               interpreter: Callable[[str], Mapping[int, NodeSoftware] | str]) -> list[str]:
    """The words of an A/B side ``recorded`` for a case: its recording's interpreter with the recorded
    distributions at their recorded versions (an environment over it where it was upgraded in place since), and
    the recorded variables over the nodes' own (``now``: this session's nodes' software, by node order).
    ValueError says why the recorded software cannot run again."""
    if recorded is None:
        raise ValueError("its baseline was recorded before pytest-dlperf recorded software: record it again "
                         "(--update-baselines), or name the side's software (python=, pip=)")
    if now is None:
        raise ValueError("this session's software is not known (a node's software probe failed: see the notes)")
    if len(now) != len(recorded.nodes):
        raise ValueError(f"its baseline was recorded on {len(recorded.nodes)} node(s), this case runs on {len(now)}")
    words, problem = _by_python(recorded, interpreter)
    if problem is None:
        env, problem = _by_env(recorded.nodes, now)
        words += env
    if problem is not None:
        raise ValueError(problem)
    return words


def _by_env(recorded: Sequence[NodeSoftware], now: Sequence[NodeSoftware]) -> tuple[list[str], str | None]:
    """env=/unset= words that bring this session's variables back to the recorded ones: one word a variable
    for every node, so a variable that differs anywhere must have had one recorded value on every node; a
    secret's (kept as its digest) cannot be set again."""
    want = [dict(n.env) for n in recorded]
    have = [dict(n.env) for n in now]
    words: list[str] = []
    for k in sorted({k for rec, cur in zip(want, have) for k in set(rec) | set(cur) if rec.get(k) != cur.get(k)}):
        recorded_values = {rec.get(k) for rec in want}
        if len(recorded_values) != 1:
            return [], f"the recorded variable {k} differed between the recording's nodes"
        value = recorded_values.pop()
        if value is not None and value.startswith(SECRET_MARK):
            return [], (f"the variable {k} holds a secret, which the recording kept as a digest only, so no "
                        "reference can set its recorded value")
        words.append(f"env={k}={value}" if value is not None else f"unset={k}")
    return words, None
