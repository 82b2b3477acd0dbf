"""What got slower: two sides' profiled launches (a trace per rank) diffed operator by operator (GPU:
kernel by kernel) and rank by rank (issue #57; docs/explain.md)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .block import lines
from .diff import Diff, diff
from .read import from_dir, from_meta
from .summary import mismatch, problem, summarize, unmatched
from .profile import RankProfile, TraceError

MODES = ("auto", "always", "never")

__all__ = ["MODES", "Diff", "compared", "RankProfile", "TraceError", "diff", "explanation", "from_dir", "from_meta", "lines", "of_confirmation", "of_regression", "problem",
           "summarize"]


def of_confirmation(confirmation: dict | None) -> dict | None:
    """A stored-baseline verdict's explanation: its side-by-side pairs' (``pairs.explanation``), or one made
    against the recording's profile (``explanation``); None: not explained."""
    c = confirmation or {}
    return c.get("explanation") or (c.get("pairs") or {}).get("explanation")


def of_regression(verdicts: Iterable[Any]) -> dict | None:
    """A case's explanation for its test and summary: the first REGRESSION verdict's (``of_confirmation``)."""
    for v in verdicts:
        found = of_confirmation(v.confirmation)
        if found is not None and v.status == "regression":
            return found
    return None


def explanation(reference: tuple[list[RankProfile], list[str]], candidate: tuple[list[RankProfile], list[str]],
                launch_noise: float, throughput_ratio: float | None = None, **said: object) -> dict:
    """The explanation results.json keeps (``lines`` renders it): the diff of both sides' ranks, with the
    problems met reading them; without a rank on either side, why not. ``said``: what, traces, launches."""
    (ref, ref_problems), (cand, cand_problems) = reference, candidate
    out: dict = {**said, "problems": ref_problems + cand_problems}
    if not ref or not cand:
        missing = " and ".join(role for role, got in (("reference", ref), ("candidate", cand)) if not got)
        out["why"] = f"no trace of the {missing} could be read"
        return out
    return compared(out, summarize(ref), summarize(cand), launch_noise, cand, throughput_ratio)


def compared(out: dict, reference: dict, candidate: dict, launch_noise: float,
             candidate_ranks: list[RankProfile], throughput_ratio: float | None = None) -> dict:
    """``out`` with the diff of two summaries, or why they cannot be diffed; ranks on one side only named."""
    why = mismatch(reference, candidate)
    if why is not None:
        return {**out, "why": why}
    out["problems"] = list(out.get("problems", [])) + unmatched(reference, candidate)
    out["diff"] = diff(reference, candidate, launch_noise, candidate_ranks, throughput_ratio).to_dict()
    return out
