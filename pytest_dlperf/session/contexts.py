"""Each case's baseline, resolved once before its first launch: the profile its nodes and framework
versions name (the frameworks that name it are its launcher's), that profile's file, the case's entry
and the tolerances the file keeps for it."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..baselines import BaselineError, BaselineFile, BaselineStore, detect_profile
from ..baselines.schema import Tolerances
from ..baselines.store import Entry, check_software
from ..clusters.base import Node
from ..metrics import DeviceKind
from ..results.cases import CaseResult
from ..software.identity import Software
from ..software.provenance import own_version
from ..specs import CaseSpec
from .gate_options import GateOptions


def _version_key(frameworks: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(frameworks.items()))


@dataclass(frozen=True)
class Recorded:
    """What a case's baseline recorded, for the attribution of a screen failure (``confirm``): its entry,
    the software it ran, the case's tolerances in force, the metrics whose tolerance was given, and the
    device kind of its profile."""

    entry: Entry
    software: Software | None
    tolerances: Tolerances
    asked: frozenset[str]
    device: DeviceKind


@dataclass(frozen=True)
class BaselineContext:
    """A case's baseline as resolved once, before its first launch: the profile its nodes and
    framework versions name, that profile's file, the case's entry (None: not recorded) and the
    tolerances the file keeps for it (the command line's and the test marker's are laid over them
    when judging). ``versions``: the framework versions that named the profile."""

    profile: str
    file: BaselineFile
    entry: Entry | None
    tolerances: Tolerances
    versions: tuple[tuple[str, str], ...]

    def named_by(self, frameworks: Mapping[str, str]) -> bool:
        """Whether these framework versions are the ones the context was resolved from."""
        return self.versions == _version_key(frameworks)


def frameworks_of(result: CaseResult) -> dict[str, str]:
    """The framework versions the case's first run reports (its workload's meta line)."""
    meta = result.runs[0].meta if result.runs else {}
    return meta.get("frameworks") or {}


class BaselineContexts:
    """The session's baseline contexts, one per case and framework versions, and the files they read
    (each read once). ``wanted(case)``: the frameworks whose major versions name the case's profile
    (its launcher's); ``git()``: the repository's commit; ``note``: the session's notes."""

    def __init__(self, options: GateOptions, store: BaselineStore, wanted: Callable[[CaseSpec], Sequence[str]],
                 git: Callable[[], str | None], note: Callable[[str], None]) -> None:
        self.options, self.store, self.wanted, self.git, self.note = options, store, wanted, git, note
        self._files: dict[str, BaselineFile] = {}
        self._contexts: dict[tuple, BaselineContext] = {}  # (backend, case key, versions, nodes) -> context

    def profile_for(self, nodes: list[Node], case: CaseSpec, frameworks: Mapping[str, str]) -> str:
        """The named profile, else the one these nodes and framework versions (``{'torch': '2.13.0'}``)
        detect; a mismatch is said plainly once."""
        detected = detect_profile(nodes, [f"{name} {version}" for name, version in sorted(frameworks.items())],
                                  wanted=self.wanted(case))
        if self.options.profile is None:
            return detected
        if self.options.profile != detected:
            self.note(f"gating against profile {self.options.profile!r} (named with --dlperf-baseline-profile); "
                      f"this machine's profile is {detected!r}, so differences may be the hardware's")
        return self.options.profile

    def file(self, profile: str) -> BaselineFile:
        if profile not in self._files:
            self._files[profile] = self.store.load(profile)  # BaselineError: named file, never written
        return self._files[profile]

    def context(self, nodes: list[Node], case: CaseSpec, frameworks: Mapping[str, str]) -> BaselineContext:
        """The case's baseline context for these framework versions, resolved once per session:
        ValueError where the versions name no profile, BaselineError where its file is broken."""
        key = (case.backend, case.key, _version_key(frameworks), tuple(n.name for n in nodes))
        if key not in self._contexts:
            profile = self.profile_for(nodes, case, frameworks)
            bfile = self.file(profile)
            self._contexts[key] = BaselineContext(profile, bfile, bfile.get(case.key), bfile.tolerances_for(case.key),
                                                  key[2])
        return self._contexts[key]

    def context_of(self, result: CaseResult, nodes: list[Node], context: BaselineContext | None) -> BaselineContext:
        """The context the runs are judged by: the one resolved before the first launch, unless the runs
        report other framework versions than it was resolved from (a plugin's engine reports its own):
        then the profile the runs' versions name, as the judge always used."""
        frameworks = frameworks_of(result)
        if context is not None and context.named_by(frameworks):
            return context
        return self.context(nodes, result.case, frameworks)

    def check_file(self, nodes: list[Node], case: CaseSpec, frameworks: Mapping[str, str]) -> BaselineContext | None:
        """Read the file a case will be judged against (or recorded into) before it is measured:
        a broken file (a merge's conflict markers, a hand edit) raises BaselineError now, not after
        minutes of launches whose measurements it would then throw away. Versions that name no
        profile (a framework without a version) leave the check to the judging, as before.
        With --dlperf-record-sittings, what is known before a launch (the repository's commit,
        pytest-dlperf's version, a published entry) is refused now too (SittingsError); the rest
        (frameworks as the workload reports them, the machine) when the runs are added.
        Returns the case's baseline context for the later steps (None: no profile named yet)."""
        try:
            context = self.context(nodes, case, frameworks)
        except ValueError:
            return None
        entry = context.entry
        if entry is not None and self.options.update and self.options.sittings > 1:
            check_software(entry, {"git": self.git(), "pytest_dlperf": own_version()}, keys=("git", "pytest_dlperf"))
        return context

    def paced_baseline(self, nodes: list[Node], case: CaseSpec, frameworks: Mapping[str, str]) -> bool:
        """Whether the case's baseline was recorded with the pace probe, or it has none to judge
        against: what ``--dlperf-pace-probe``'s default (auto) probes by. A baseline recorded without
        it is met without it, so that both sides are measured alike (the probe costs about 3%)."""
        if self.options.update:
            return True
        try:
            entry = self.context(nodes, case, frameworks).entry
        except (ValueError, BaselineError):  # no versions to name a profile; a broken file fails the case anyway
            return True
        return entry is None or bool(entry.paces)
