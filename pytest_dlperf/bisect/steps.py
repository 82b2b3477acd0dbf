"""The search state and the steps file that keeps it.

The search is a function of the verdicts decided so far (``next_step``), so a steps file that keeps
them lets the same command resume where it stopped: decided items are not probed again, an
undecided one is. The file is rewritten atomically after each probe; one from another command
(other repository, refs, interpreters, pytest arguments or directory) is refused."""
from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..files import atomic_write_text
from . import UsageError
from .evidence import CaseEvidence, EvidenceError, ItemVerdict
from .items import Item

FORMAT = 1
FIX = "give --steps another file, or delete it"


@dataclass(frozen=True)
class Next:
    """The next item to probe (its index)."""

    index: int


@dataclass(frozen=True)
class Found:
    """The first bad item and the last good one before it (indexes; 0 is the known-good item)."""

    first_bad: int
    last_good: int


@dataclass(frozen=True)
class NotBad:
    """The bad endpoint is not slower than the good one: nothing to bisect."""


def next_step(count: int, decided: Mapping[int, ItemVerdict]) -> Next | Found | NotBad:
    """Binary search between item 0 (good, by the user's word) and the last item (bad, once a probe
    has said so). Only GOOD and BAD in ``decided`` count; anything else is probed (again)."""
    last = count - 1
    verdict = decided.get(last)
    if verdict not in (ItemVerdict.GOOD, ItemVerdict.BAD):
        return Next(last)
    if verdict is ItemVerdict.GOOD:
        return NotBad()
    lo, hi = 0, last
    while hi - lo > 1:
        mid = (lo + hi) // 2
        verdict = decided.get(mid)
        if verdict is ItemVerdict.GOOD:
            lo = mid
        elif verdict is ItemVerdict.BAD:
            hi = mid
        else:
            return Next(mid)
    return Found(hi, lo)


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class ProbeRecord:
    """One probe as the steps file keeps it."""

    index: int
    item: str
    verdict: ItemVerdict
    cases: dict[str, CaseEvidence]
    report_dir: str | None
    log: str | None
    pytest_args: list[str]
    started_at: str
    finished_at: str

    def to_dict(self) -> dict[str, object]:
        return {"index": self.index, "item": self.item, "verdict": self.verdict.value,
                "cases": {k: c.to_dict() for k, c in self.cases.items()}, "report_dir": self.report_dir,
                "log": self.log, "pytest_args": self.pytest_args, "started_at": self.started_at,
                "finished_at": self.finished_at}

    @classmethod
    def from_dict(cls, d: object, items: list[Item]) -> ProbeRecord:
        """Checked against the file's items; ValueError names what is wrong."""
        if not isinstance(d, Mapping):
            raise ValueError(f"{d!r} is not an object")
        index = d.get("index")
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(items):
            raise ValueError(f"'index' is {index!r}, not an index of its items")
        if d.get("item") != items[index].key:
            raise ValueError(f"'item' is {d.get('item')!r}, not item {index} ({items[index].key})")
        try:
            verdict = ItemVerdict(d.get("verdict"))
            cases = {str(k): CaseEvidence.from_dict(c) for k, c in dict(d.get("cases") or {}).items()}
        except (EvidenceError, ValueError, TypeError) as exc:
            raise ValueError(f"'verdict' or 'cases': {exc}") from None
        texts = {k: d.get(k) for k in ("report_dir", "log", "started_at", "finished_at")}
        if not all(v is None or isinstance(v, str) for v in texts.values()):
            raise ValueError("'report_dir', 'log', 'started_at' and 'finished_at' must be strings")
        args = d.get("pytest_args")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ValueError(f"'pytest_args' is {args!r}, not a list of strings")
        return cls(index, items[index].key, verdict, cases, texts["report_dir"], texts["log"], args,
                   texts["started_at"] or "", texts["finished_at"] or "")


@dataclass
class Steps:
    """The steps file: the command's identity, its items, and every probe so far (oldest first)."""

    path: Path
    command: dict[str, object]
    items: list[Item]
    probes: list[ProbeRecord] = field(default_factory=list)

    def decided(self) -> dict[int, ItemVerdict]:
        """Per item, its latest GOOD or BAD verdict (an undecided probe decides nothing)."""
        return {p.index: p.verdict for p in self.probes if p.verdict is not ItemVerdict.UNDECIDED}

    def latest(self, index: int) -> ProbeRecord | None:
        """The probe that decided item ``index`` (the latest decided one), if any."""
        return next((p for p in reversed(self.probes) if p.index == index
                     and p.verdict is not ItemVerdict.UNDECIDED), None)

    def record(self, probe: ProbeRecord) -> None:
        self.probes.append(probe)
        self.save()

    def save(self) -> None:
        doc = {"dlperf_bisect": FORMAT, "command": self.command,
               "items": [{"item": i.key, "label": i.label} for i in self.items],
               "probes": [p.to_dict() for p in self.probes], "updated_at": now()}
        try:
            atomic_write_text(self.path, json.dumps(doc, indent=1) + "\n")
        except OSError as exc:
            raise UsageError(f"cannot write the steps file {self.path} ({exc.strerror or exc}): "
                             "give --steps a writable path") from None

    @classmethod
    def open(cls, path: Path, command: dict[str, object], items: list[Item]) -> Steps:
        """The steps of this command: read from ``path`` if it holds them, new if ``path`` does not
        exist (written with the first probe; its directory is checked now); UsageError where it is
        damaged or another command's."""
        if not path.exists():
            _check_writable(path)
            return cls(path, command, items)
        doc = _read(path)
        if doc.get("command") != command:
            raise UsageError(f"the steps file {path} is another bisect's (its command: "
                             f"{json.dumps(doc.get('command'))}): {FIX}")
        keys = [i.get("item") if isinstance(i, Mapping) else None for i in doc.get("items") or []]
        if keys != [i.key for i in items]:
            raise UsageError(f"the steps file {path} lists other items ({len(keys)}) than this command now "
                             f"gives ({len(items)}): has --good or --bad moved? {FIX}")
        return cls(path, command, items, _probes(path, doc, items))

    @classmethod
    def load(cls, path: Path) -> Steps:
        """A steps file as it stands, whichever command wrote it (``dlperf history`` draws it);
        UsageError where it is damaged. Its items' A/B specs are not kept in the file: ``spec`` is ""."""
        doc = _read(path)
        raw = doc.get("items")
        if not isinstance(raw, list) or not all(isinstance(i, Mapping) and isinstance(i.get("item"), str) for i in raw):
            raise UsageError(f"the steps file {path} is damaged: 'items' is not a list of items: {FIX}")
        items = [Item(i["item"], str(i.get("label") or ""), "") for i in raw]
        command = doc.get("command") if isinstance(doc.get("command"), dict) else {}
        return cls(path, command, items, _probes(path, doc, items))


def _probes(path: Path, doc: Mapping[str, object], items: list[Item]) -> list[ProbeRecord]:
    try:
        return [ProbeRecord.from_dict(p, items) for p in doc.get("probes") or []]
    except ValueError as exc:
        raise UsageError(f"the steps file {path} is damaged: a probe: {exc}: {FIX}") from None


def _check_writable(path: Path) -> None:
    """Before any probe: a steps file that could not be written would lose every verdict."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {path.parent} for the steps file ({exc.strerror or exc}): "
                         "give --steps a writable path") from None
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write the steps file {path} (its directory is not writable): "
                         "give --steps a writable path")


def _read(path: Path) -> dict[str, object]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        why = getattr(exc, "strerror", None) or getattr(exc, "msg", None) or exc
        raise UsageError(f"the steps file {path} cannot be read ({why}): {FIX}") from None
    if not isinstance(doc, dict) or doc.get("dlperf_bisect") != FORMAT:
        raise UsageError(f"{path} is not a dlperf bisect steps file (format {FORMAT}): {FIX}")
    return doc
