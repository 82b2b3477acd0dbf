"""The A/B options (--dlperf-reference, --dlperf-candidate, --dlperf-ab-*) and the side-by-side
confirmation's (--dlperf-confirm-*), this feature's plugin's ``pytest_addoption``, and :class:`ABOptions`
and :class:`ConfirmOptions`, their typed values read once per session. Light on purpose: loaded into
every pytest session, it imports nothing heavy and touches nothing."""
from __future__ import annotations

import argparse
from dataclasses import dataclass

import pytest

from ..envs.options import EnvOptions
from ..options.argtypes import count_or_env, fraction, non_negative_int, positive_int
from ..options.groups import OptionGroup
from .sides import SideSpec, SpecError, parse_side

UNDECIDED = ("pass", "fail")
CONFIRM_WHEN = ("flagged", "weak", "differs")
CONFIRM_PAIRS = 20  # the most pairs a side-by-side confirmation takes (Pinpoint: 10 a side, 10 more while unknown)
CONFIRM_PAIRS_ENV = "DLPERF_CONFIRM_PAIRS"  # a CI image's own default for --dlperf-confirm-pairs


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)
    add_explain_options(parser)


EXPLAIN_MODES = ("auto", "always", "never")
EXPLAIN_STEPS = 5


@dataclass(frozen=True)
class ExplainOptions:
    """--dlperf-explain: which paired cases get one profiled launch a side, diffed (auto: a SLOWER or WORSE
    verdict, in an A/B session or a stored-baseline failure's confirmation), and how many steps it profiles."""

    mode: str = "auto"
    steps: int = EXPLAIN_STEPS

    @classmethod
    def from_config(cls, config: pytest.Config) -> ExplainOptions:
        return cls(config.getoption("dlperf_explain"), config.getoption("dlperf_explain_steps"))


def add_explain_options(parser: pytest.Parser) -> None:
    """--dlperf-explain and its steps (docs/explain.md)."""
    e = OptionGroup(parser, "dlperf-explain", "pytest-dlperf: what got slower, from a profiled launch of each side "
                    "(docs/explain.md)")
    e("--dlperf-explain", choices=EXPLAIN_MODES, default="auto",
      help="auto (default): a case whose paired verdict is SLOWER or WORSE (an A/B session, or a stored-baseline "
           "failure confirmed side by side) takes one profiled launch a side, never counted, and its verdict says "
           "which operators and ranks changed; always: every paired case; never: none")
    e("--dlperf-explain-steps", type=positive_int, default=EXPLAIN_STEPS, metavar="N",
      help="steps a profiled launch profiles after its window, on every rank (default %(default)s)")


def _alpha(text: str) -> float:
    value = fraction(text)
    if not 0 < value < 0.5:
        raise argparse.ArgumentTypeError(f"expected an error rate in (0, 0.5) such as 0.05, got {text!r}")
    return value


def add_options(parser: pytest.Parser) -> None:
    """--dlperf-candidate turns A/B on: every selected case runs on both sides in interleaved pairs."""
    a = OptionGroup(parser, "dlperf-ab", "pytest-dlperf: A/B, the candidate against a reference in one session "
                    "(docs/ab.md)")
    a("--dlperf-candidate", default=None, metavar="SPEC",
      help="run every case on this side and on the reference, in interleaved pairs, and judge the candidate "
           "against it. SPEC: 'current', 'recorded' (each case's recorded software, from its baseline), or words "
           "python=PATH env=NAME=VALUE unset=NAME pip=REQ hide=DIST rev=REF repo=PATH install=PATH name=LABEL, "
           "e.g. \"pip=torch==2.12.0\" (an environment made on every node) or "
           "\"python=/opt/new/bin/python env=NCCL_ALGO=Tree\"")
    a("--dlperf-reference", default="current", metavar="SPEC",
      help="the side the candidate is judged against, same SPEC words (default: current, this session's "
           "own environment; recorded after an upgrade in place)")
    a("--dlperf-ab-tolerance", type=fraction, default=0.02, metavar="FRAC",
      help="a change smaller than this is not called SLOWER or FASTER; SAME needs the interval inside "
           "+-FRAC (default %(default)s)")
    a("--dlperf-ab-alpha", type=_alpha, default=0.05, metavar="P",
      help="the error rate of the sequential paired test over all its looks (default %(default)s)")
    a("--dlperf-ab-min-pairs", type=positive_int, default=3, metavar="N",
      help="pairs before the first look (at least 3; default %(default)s)")
    a("--dlperf-ab-max-pairs", type=positive_int, default=20, metavar="N",
      help="pairs at most per case; a case not decided then is UNDECIDED (default %(default)s)")
    a("--dlperf-undecided", choices=UNDECIDED, default="pass",
      help="an UNDECIDED case (an A/B case, or a stored-baseline failure confirmed side by side): pass with a "
           "warning (default) or fail")
    c = OptionGroup(parser, "dlperf-confirm", "pytest-dlperf: a stored-baseline failure confirmed side by side "
                    "with the recorded software (docs/gate.md)")
    c("--dlperf-confirm-reference", default=None, metavar="SPEC",
      help="the recorded software, for confirming a case that failed its stored baseline side by side, in the "
           "A/B SPEC words (e.g. \"python=/opt/old/bin/python\" or \"rev=v1.2\"; recorded: the default); a bad "
           "one is a usage error before any launch. Default: found from what the baseline recorded (its commit, its "
           "python, with its recorded packages made again where it was upgraded in place, its variables)")
    c("--dlperf-confirm-pairs", type=non_negative_int, default=None, metavar="N",
      help=f"the most pairs a side-by-side confirmation takes (default {CONFIRM_PAIRS}, or {CONFIRM_PAIRS_ENV}); "
           "0: none, a failure with a software difference fails as REGRESSION, not confirmed. Its other "
           "settings are the A/B session's (--dlperf-ab-alpha, --dlperf-ab-min-pairs, --dlperf-undecided)")
    c("--dlperf-confirm-when", choices=CONFIRM_WHEN, default="flagged",
      help="which cases whose software differs from the recording's run side by side: flagged (default): those "
           "that failed their screen; weak: those too, and any whose recording catches a 10%% slow-down in under "
           "half of sessions (a noisy host's screen misses it); differs: every one (docs/gate.md)")


@dataclass(frozen=True)
class ABOptions:
    """The A/B options of a session; ``None`` from ``from_config`` when A/B is off."""

    reference: SideSpec
    candidate: SideSpec
    tolerance: float
    alpha: float
    min_pairs: int
    max_pairs: int
    undecided_fails: bool
    explain: ExplainOptions = ExplainOptions()
    env: EnvOptions = EnvOptions()

    @classmethod
    def from_config(cls, config: pytest.Config) -> ABOptions | None:
        get = config.getoption
        candidate = get("dlperf_candidate")
        if candidate is None:
            reference = get("dlperf_reference")
            if reference not in (None, "current"):
                raise pytest.UsageError("--dlperf-reference without --dlperf-candidate: give the candidate side "
                                        "too (--dlperf-candidate current for the session's own environment)")
            return None
        if getattr(config, "workerinput", None) is not None or \
                getattr(config.option, "numprocesses", None) not in (None, 0, "0"):
            raise pytest.UsageError("--dlperf-candidate with pytest-xdist (-n): the two launches of a pair must "
                                    "not share the machine with another case's; run the A/B session without -n")
        try:
            ref, cand = parse_side(get("dlperf_reference"), "reference"), parse_side(candidate, "candidate")
        except SpecError as exc:
            raise pytest.UsageError(str(exc)) from None
        if ref.label == cand.label:
            raise pytest.UsageError(f"--dlperf-reference and --dlperf-candidate are both named {ref.label!r}: "
                                    "give one another name=LABEL")
        lo, hi = get("dlperf_ab_min_pairs"), get("dlperf_ab_max_pairs")
        if lo < 3 or hi < lo or hi > 200:
            raise pytest.UsageError(f"--dlperf-ab-min-pairs {lo} / --dlperf-ab-max-pairs {hi}: need "
                                    "3 <= min <= max <= 200")
        return cls(ref, cand, tolerance=get("dlperf_ab_tolerance"), alpha=get("dlperf_ab_alpha"),
                   min_pairs=lo, max_pairs=hi, undecided_fails=get("dlperf_undecided") == "fail",
                   explain=ExplainOptions.from_config(config), env=EnvOptions.from_config(config))


@dataclass(frozen=True)
class ConfirmOptions:
    """How a stored-baseline failure with a software difference is confirmed side by side: the reference
    the user named (None: found from the recording), and the paired test's settings (``max_pairs`` 0: no
    confirmation)."""

    reference: SideSpec | None
    max_pairs: int
    min_pairs: int
    alpha: float
    undecided_fails: bool
    explain: ExplainOptions = ExplainOptions()
    env: EnvOptions = EnvOptions()
    when: str = "flagged"  # which cases whose software differs are confirmed: CONFIRM_WHEN

    @property
    def on(self) -> bool:
        return self.max_pairs > 0

    @classmethod
    def from_config(cls, config: pytest.Config) -> ConfirmOptions:
        """The options read once; a bad value is a usage error, before any launch."""
        get = config.getoption
        text = get("dlperf_confirm_reference")
        try:
            reference = parse_side(text, "reference", "--dlperf-confirm-reference") if text is not None else None
        except SpecError as exc:
            raise pytest.UsageError(str(exc)) from None
        if reference is not None and reference.recorded:  # what the confirmation finds by default
            reference = None
        if reference is not None and not (reference.python or reference.env or reference.unset or reference.rev
                                          or reference.pip):
            raise pytest.UsageError(f"--dlperf-confirm-reference {text!r} names no software: give python=PATH, pip=REQ, "
                                    "rev=REF, env=NAME=VALUE or unset=NAME (this session's own is the candidate)")
        most = confirm_pairs(get("dlperf_confirm_pairs"))
        least = get("dlperf_ab_min_pairs")
        if most and (least < 3 or most < least or most > 200):
            raise pytest.UsageError(f"--dlperf-confirm-pairs {most} with --dlperf-ab-min-pairs {least}: need "
                                    "3 <= min <= max <= 200 (or --dlperf-confirm-pairs 0 for no confirmation)")
        return cls(reference, most, least, get("dlperf_ab_alpha"), get("dlperf_undecided") == "fail",
                   ExplainOptions.from_config(config), EnvOptions.from_config(config), get("dlperf_confirm_when"))


def confirm_pairs(given: int | None) -> int:
    """--dlperf-confirm-pairs, else DLPERF_CONFIRM_PAIRS, else CONFIRM_PAIRS."""
    return count_or_env(given, CONFIRM_PAIRS_ENV, CONFIRM_PAIRS, "pairs")
