"""A side's profile summarized (the diff's input, and what a baseline keeps of its recording's profiled
launch instead of the raw traces): per operator (GPU: kernel) its mean time per step, the variance of that
time over the profiled steps of every rank, and its mean calls per step; per rank its step time, its share in
collectives and, on GPUs, its breakdown. Versioned (``CONTRACT``) and checked field by field when read back."""
from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from .profile import RankProfile

CONTRACT = 1


def summarize(ranks: Sequence[RankProfile]) -> dict:
    """The summary of one side's ranks (at least one rank with a step)."""
    gpu = any(r.on_gpu for r in ranks)
    steps = [s for r in ranks for s in r.steps]
    tables = [s.kernels if gpu else s.ops for s in steps]
    names = sorted({n for t in tables for n in t})
    ops = {}
    for n in names:
        ms = [1e3 * t[n].seconds if n in t else 0.0 for t in tables]
        calls = [float(t[n].count) if n in t else 0.0 for t in tables]
        ops[n] = {"ms": statistics.fmean(ms), "var": statistics.variance(ms) if len(ms) > 1 else 0.0,
                  "calls": statistics.fmean(calls)}
    return {"contract": CONTRACT, "unit": "kernels" if gpu else "operators", "steps": len(steps),
            "step_ms": 1e3 * statistics.fmean(s.seconds for s in steps), "ops": ops,
            "ranks": [_rank(r) for r in ranks]}


def _rank(r: RankProfile) -> dict:
    total = sum(s.seconds for s in r.steps)
    shares = [s.shares for s in r.steps if s.shares]
    return {"rank": r.rank, "step_ms": 1e3 * total / len(r.steps),
            "collective": sum(s.collective for s in r.steps) / total if total > 0 else 0.0,
            "breakdown": {k: statistics.fmean(s.get(k, 0.0) for s in shares) for k in shares[0]} if shares else {}}


def problem(summary: Any) -> str | None:
    """What is wrong with a summary read back (a baseline's), or None."""
    if not isinstance(summary, Mapping):
        return "not a profile summary (not an object)"
    if summary.get("contract") != CONTRACT:
        return f"profile summary contract {summary.get('contract')!r}, this harness reads {CONTRACT}"
    if summary.get("unit") not in ("operators", "kernels"):
        return "its unit is neither operators nor kernels"
    if not isinstance(summary.get("steps"), int) or summary["steps"] < 1 or not _number(summary.get("step_ms")):
        return "no profiled steps"
    ops = summary.get("ops")
    if not isinstance(ops, Mapping) or not all(
            isinstance(v, Mapping) and all(_number(v.get(k)) for k in ("ms", "var", "calls")) for v in ops.values()):
        return "an operator without its ms, var and calls"
    ranks = summary.get("ranks")
    if not isinstance(ranks, list) or not all(
            isinstance(r, Mapping) and isinstance(r.get("rank"), int) and _number(r.get("step_ms"))
            and _number(r.get("collective")) and isinstance(r.get("breakdown", {}), Mapping) for r in ranks):
        return "a rank without its rank, step_ms and collective"
    return None


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and v >= 0


def mismatch(reference: Mapping[str, Any], candidate: Mapping[str, Any]) -> str | None:
    """Why two summaries cannot be diffed (None: they can): one side's operators against the other's kernels."""
    if reference["unit"] != candidate["unit"]:
        return (f"the reference's profile has {reference['unit']}, the candidate's {candidate['unit']} (a GPU trace "
                "without its kernels, or a CPU recording against a GPU launch): they cannot be diffed")
    return None


def unmatched(reference: Mapping[str, Any], candidate: Mapping[str, Any]) -> list[str]:
    """The ranks one side profiled and the other did not, said (their shares are left out of the rank lines)."""
    ref, cand = {r["rank"] for r in reference["ranks"]}, {r["rank"] for r in candidate["ranks"]}
    return ([f"rank {r} was profiled on the reference only" for r in sorted(ref - cand)]
            + [f"rank {r} was profiled on the candidate only" for r in sorted(cand - ref)])
