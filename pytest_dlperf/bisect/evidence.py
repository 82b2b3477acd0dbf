"""Reading a probe session's verdicts: the "ab" section of its results.json (docs/ab.md, contract 1),
and the item's verdict from its cases: any "slower" makes the item bad."""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from enum import Enum
from pathlib import Path

CONTRACT = 1
CASE_VERDICTS = ("slower", "faster", "same", "undecided")


class ItemVerdict(Enum):
    """What a probe says of an item against the known-good one."""

    GOOD = "good"
    BAD = "bad"
    UNDECIDED = "undecided"


class EvidenceError(ValueError):
    """A results.json whose "ab" section cannot be read: the message is one line."""


@dataclass(frozen=True)
class CaseEvidence:
    """One case's paired verdict: candidate/reference ratio, its interval, and the pairs it took."""

    verdict: str
    ratio: float | None
    low: float | None
    high: float | None
    pairs: int
    complete: bool = True

    def describe(self) -> str:
        """``slower: ratio 0.951 [0.932, 0.970], 7 pairs`` (the figures the session gave, nothing more)."""
        if self.ratio is None or self.low is None or self.high is None:
            figures = "no ratio"
        else:
            figures = f"ratio {self.ratio:.3f} [{self.low:.3f}, {self.high:.3f}]"
        tail = "" if self.complete else " (interrupted)"
        return f"{self.verdict}: {figures}, {self.pairs} pair{'' if self.pairs == 1 else 's'}{tail}"

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: object) -> CaseEvidence:
        """Checked: raises EvidenceError naming the field that is wrong."""
        if not isinstance(d, Mapping):
            raise EvidenceError(f"{d!r} is not an object")
        verdict = d.get("verdict")
        if verdict not in CASE_VERDICTS:
            raise EvidenceError(f"'verdict' is {verdict!r}, not one of {', '.join(CASE_VERDICTS)}")
        figures = {}
        for name in ("ratio", "low", "high"):
            v = d.get(name)
            if v is None and verdict == "undecided":
                figures[name] = None
            elif isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0:
                figures[name] = float(v)
            else:
                raise EvidenceError(f"{name!r} is {v!r}, not a positive number (verdict {verdict})")
        pairs, complete = d.get("pairs"), d.get("complete", True)
        if not isinstance(pairs, int) or isinstance(pairs, bool) or pairs < 0:
            raise EvidenceError(f"'pairs' is {pairs!r}, not a count")
        if not isinstance(complete, bool):
            raise EvidenceError(f"'complete' is {complete!r}, not true or false")
        return cls(verdict, figures["ratio"], figures["low"], figures["high"], pairs, complete)


@dataclass(frozen=True)
class AbEvidence:
    """A session's A/B cases, and the most pairs it was allowed per case (``method.max_pairs``)."""

    cases: dict[str, CaseEvidence]
    max_pairs: int | None = None

    @property
    def verdict(self) -> ItemVerdict:
        return item_verdict(self.cases)


def item_verdict(cases: Mapping[str, CaseEvidence]) -> ItemVerdict:
    """Any case slower: BAD; else any undecided: UNDECIDED; all same or faster: GOOD."""
    if not cases:
        raise EvidenceError("no A/B cases: nothing was compared")
    verdicts = {c.verdict for c in cases.values()}
    if "slower" in verdicts:
        return ItemVerdict.BAD
    if "undecided" in verdicts:
        return ItemVerdict.UNDECIDED
    return ItemVerdict.GOOD


def parse_ab(doc: object) -> AbEvidence:
    """The "ab" section of a results.json document, checked."""
    ab = doc.get("ab") if isinstance(doc, Mapping) else None
    if not isinstance(ab, Mapping):
        raise EvidenceError("no 'ab' section: the session ran no A/B (see its log)")
    if ab.get("contract") != CONTRACT:
        raise EvidenceError(f"'ab.contract' is {ab.get('contract')!r}; this dlperf bisect reads contract "
                            f"{CONTRACT}: run it from the same pytest-dlperf as the sessions")
    cases = ab.get("cases")
    if not isinstance(cases, Mapping) or not cases:
        raise EvidenceError("'ab.cases' is empty or not an object: no case was compared")
    read = {}
    for name, case in cases.items():
        try:
            read[str(name)] = CaseEvidence.from_dict(case)
        except EvidenceError as exc:
            raise EvidenceError(f"'ab.cases.{name}': {exc}") from None
    method = ab.get("method")
    max_pairs = method.get("max_pairs") if isinstance(method, Mapping) else None
    if not isinstance(max_pairs, int) or isinstance(max_pairs, bool) or max_pairs < 1:
        max_pairs = None
    return AbEvidence(read, max_pairs)


def read_ab(path: Path) -> AbEvidence:
    """Read and check ``path`` (a results.json); EvidenceError names what is missing or wrong."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise EvidenceError(f"{path}: missing: the session wrote no results") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise EvidenceError(f"{path}: unreadable ({getattr(exc, 'strerror', None) or exc})") from None
    except json.JSONDecodeError as exc:
        raise EvidenceError(f"{path}: not JSON ({exc.msg}, line {exc.lineno})") from None
    try:
        return parse_ab(doc)
    except EvidenceError as exc:
        raise EvidenceError(f"{path}: {exc}") from None
