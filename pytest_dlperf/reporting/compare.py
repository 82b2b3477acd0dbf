"""``dlperf compare``: two runs' cases side by side, and for every case only one side has, why: the
other side's nearest case and the fields in which they differ (a batch size, a precision...)."""
from __future__ import annotations

from dataclasses import fields

from ..results.cases import ResultSet
from ..specs import CaseSpec

_FIELDS = [f.name for f in fields(CaseSpec)]


def compare_rows(a: ResultSet, b: ResultSet) -> list[tuple[str, float | None, float | None, float | None]]:
    """(case key, A's median, B's median, A/B) for every case of either run, A's order first (medians in
    the case's unit: samples/s, tokens/s for a decoder)."""
    amap = {r.case.key: r.median for r in a.results}
    bmap = {r.case.key: r.median for r in b.results}
    keys = list(dict.fromkeys([*amap, *bmap]))
    return [(k, amap.get(k), bmap.get(k),
             amap[k] / bmap[k] if k in amap and k in bmap and bmap[k] > 0 else None) for k in keys]


def _differ(x: CaseSpec, y: CaseSpec) -> list[str]:
    return [f for f in _FIELDS if getattr(x, f) != getattr(y, f)]


def _why(case: CaseSpec, other: list[CaseSpec], side: str) -> str:
    """Why ``case`` has no counterpart in ``other``: the nearest case there and how it differs."""
    same_place = [o for o in other if o.topology == case.topology and o.model == case.model] or other
    if not same_place:
        return f"{case.key}: only in {'AB'[side == 'A']}, {side} has no cases"
    near = min(same_place, key=lambda o: len(_differ(case, o)))
    diff = ", ".join(f"{f} {getattr(case, f)} vs {getattr(near, f)}" for f in _differ(case, near))
    mine = "AB"[side == "A"]
    return f"{case.key}: only in {mine}; {side}'s nearest case {near.key} differs in {diff}: not compared"


def unmatched_notes(a: ResultSet, b: ResultSet) -> list[str]:
    """One line per case of one side without the same case on the other, saying why ("-" in the table)."""
    ka, kb = {r.case.key: r.case for r in a.results}, {r.case.key: r.case for r in b.results}
    notes = [_why(c, list(kb.values()), "B") for k, c in ka.items() if k not in kb]
    notes += [_why(c, list(ka.values()), "A") for k, c in kb.items() if k not in ka]
    return notes
