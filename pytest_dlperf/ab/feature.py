"""The A/B feature of a session: its two sides, each case's pairs and verdict, and what the
session's test, report and terminal get from them. Made by the session when --dlperf-candidate
is given; the measuring order (``order.PairedOrder``) takes the pairs."""
from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from .. import explain, metrics
from ..clusters.base import Node
from ..envs import make as envs
from ..measure import Bench
from ..metrics import DeviceKind, Metric
from ..software.provenance import changes, run_versions
from ..specs import CaseSpec, Topology
from . import sequential, worktree
from .explain import Explainer
from .interpreter import SideNotReady, check_side
from .judges import JUDGES, assessment_dict
from .options import ABOptions
from .pairs import PairedCase
from .sides import RECORDED, ROLES, Side, parse_side

METHOD_TEXT = ("paired t on the log ratios, a repeated-significance confidence sequence calibrated by "
               "simulation (one nominal level at every look from the first to the cap)")


def _packages(side: Side) -> str:
    """A side's packages for the differences: its made environment's over the base, or the nodes' own."""
    if side.made is not None:
        return f"{side.environment_words} ({side.made.changes()})"
    return "(the nodes' own)"


class ABSession:
    """Sides, records and verdicts of one A/B session."""

    def __init__(self, options: ABOptions, bench: Bench, workload_files: list[Path],
                 probed: Callable[[CaseSpec], dict[str, str]], tolerances: Mapping[str, float | None],
                 recorded: Callable[[CaseSpec], list[str]] | None = None) -> None:
        """``workload_files``: each engine's entry script (a rev side checks them out at its commit);
        ``probed(case)``: the case's framework versions the session's readiness probe found on node 0;
        ``tolerances``: the command line's per metric (the other metrics' paired verdicts use them);
        ``recorded(case)``: the spec words of the case's recorded software, after its readiness check (a ``recorded``
        side's; SideNotReady says why there are none)."""
        self.options, self.bench, self.workload_files = options, bench, workload_files
        self.probed, self.tolerances, self.recorded = probed, tolerances, recorded
        self._recorded_words: dict[str, tuple[str, list[str]]] = {}  # role -> (the first case, its words)
        self.method = sequential.Method(alpha=options.alpha, tolerance=options.tolerance,
                                        min_pairs=options.min_pairs, max_pairs=options.max_pairs)
        self.records: dict[str, PairedCase] = {}
        self._sides: dict[str, Side] | None = None
        self._side_error: str | None = None
        self._checked: dict[tuple, str | None] = {}
        self.explain = Explainer(bench, options.explain, lambda: self.sides)

    # ------------------------------------------------------------------ sides
    @property
    def sides(self) -> dict[str, Side]:
        """Both sides, made ready on first use (a rev's worktree); SideNotReady names what is wrong."""
        if self._side_error is not None:
            raise SideNotReady(self._side_error)
        if self._sides is None:
            made: dict[str, Side] = {}
            try:
                for spec in (self.options.reference, self.options.candidate):
                    made[spec.role] = worktree.make_ready(spec, self.workload_files)
            except worktree.WorktreeError as exc:
                for side in made.values():
                    worktree.remove(side)
                self._side_error = str(exc)
                raise SideNotReady(self._side_error) from None
            self._sides = made
        return self._sides

    def check_sides(self, case: CaseSpec) -> None:
        """Each side with pip= words has its environment made on the case's nodes (once), and each side
        with its own python has it, and the case's frameworks, there."""
        b = self.bench
        nodes = b.cluster().nodes()[:case.topology.nodes]
        fws = b.launcher(case).frameworks_for(case)
        for role in [r for r in ROLES if r in self._recorded_words or self.sides[r].spec.recorded]:
            self._as_recorded(role, case)
        for role, side in self.sides.items():
            key = (role, fws, tuple(n.name for n in nodes))
            if key not in self._checked:
                try:
                    self._make_env(side, nodes)
                    check_side(b.cluster(), side, nodes, fws, b.report_dir / "sides" / role)
                    self._checked[key] = None
                except (SideNotReady, envs.EnvError) as exc:
                    self._checked[key] = str(exc)
            if self._checked[key] is not None:
                raise SideNotReady(self._checked[key])

    def _as_recorded(self, role: str, case: CaseSpec) -> None:
        """A ``recorded`` side becomes the words of its first case's recorded software (``ab.recorded``); one side
        runs every case, so each later case must have been recorded with the same software."""
        side = self.sides[role]
        where = f"--dlperf-{role} {side.spec.text}"
        if self.recorded is None:
            raise SideNotReady(f"{where}: this session keeps no recording to run again")
        try:
            words = self.recorded(case)
        except SideNotReady as exc:
            raise SideNotReady(f"{where}: {case.id}: {exc}") from None
        first, want = self._recorded_words.setdefault(role, (case.id, words))
        said = shlex.join(words) or "as this session runs"
        if words != want:
            raise SideNotReady(f"{where}: {case.id} was recorded with other software than {first} ({said}, against "
                               f"{shlex.join(want) or 'as this session runs'}): select the cases of one recording (-k), "
                               "or name the side's software")
        if side.spec.recorded:
            spec = parse_side(shlex.join([*words, f"name={side.label}"]), role)
            self._sides = {**self.sides, role: Side(replace(spec, text=f"{RECORDED} ({said})"))}
            self.bench.live.tell(f"dlperf A/B: {side.label}: the recorded software of {case.id}: {said}")

    def _make_env(self, side: Side, nodes: list[Node]) -> None:
        """The side's pip= environment on ``nodes`` (those it lacks it on), before their first launch."""
        need = [side.base(n) for n in nodes if not side.made or n.name not in side.made.nodes]
        if not side.spec.makes_environment or not need:
            return
        got = envs.make_everywhere(self.bench.cluster(), need, side.requirements, side.spec.hide, self.options.env,
                                   self.bench.report_dir / "sides" / side.spec.role / "env", side.where,
                                   self.bench.live.tell)
        side.made = got if side.made is None else replace(got, nodes={**side.made.nodes, **got.nodes},
                                                           seconds=side.made.seconds + got.seconds)

    def frameworks_of(self, role: str, case: CaseSpec) -> dict[str, str]:
        """The case's framework versions on the side's python (node 0), for runs that report none:
        the side's own probe where it names a python, else the session's readiness probe."""
        side = self.sides[role]
        if not side.own_python:
            return self.probed(case)
        wanted = self.bench.launcher(case).frameworks_for(case)  # the side's probes of other cases too
        return {fw: side.frameworks[fw] for fw in wanted if fw in side.frameworks}

    def launches_text(self) -> str:
        """For the dry-run: how many times each side's commands run."""
        m = self.method
        return (f"each case runs in pairs, one launch of each side adjacent in time, reference or candidate "
                f"first in turn (ABBA BAAB ...): {m.min_pairs}-{m.max_pairs} pairs, until the paired test decides; "
                "every undecided case takes one pair a round")

    def close(self) -> None:
        """Remove the sides' worktrees."""
        for side in (self._sides or {}).values():
            worktree.remove(side)

    # ------------------------------------------------------------------ verdicts
    def record(self, case: CaseSpec, name: str) -> PairedCase:
        """The case's record (made on first use: a case measured again keeps adding pairs to it)."""
        return self.records.setdefault(name, PairedCase(case, name))

    def conclude(self, rec: PairedCase, final: bool, why: str = "") -> None:
        """Look at the case's pairs: its verdict so far, final at the cap or when the session stops."""
        got = sequential.decide(rec.throughputs(), self.method, final=final)
        rec.verdict = assessment_dict(got)
        if final and why and got.status is sequential.Decision.UNDECIDED:
            rec.verdict["reason"] += f" (stopped by {why})"
        rec.complete = got.status is not sequential.Decision.CONTINUE
        self._other_metrics(rec, final=rec.complete)
        if len(rec.pairs) == 1:  # both sides have run once: what differs between them is known
            rec.differences = self.differences(rec)

    def _other_metrics(self, rec: PairedCase, final: bool) -> None:
        """Each other gated metric's paired verdict from the same pairs (peak memory, graph breaks, ...), asked of
        its judge (``judges``), on its own tolerance (the pairs stop when throughput decides); a ratio's comes
        from both ladders (``scaling``)."""
        kind = self._device_kind()
        for m in metrics.gated():
            if m is metrics.PRIMARY or m.judging is None or not m.judged_on(kind, self.tolerances.get(m.name) is not None):
                continue
            got = JUDGES[m.judging].verdict(m, rec, self._method_for, final)
            if got is not None:
                rec.metrics[m.name] = got

    def _method_for(self, metric: Metric) -> sequential.Method:
        """The paired test for another metric: the session's, at that metric's tolerance (its option, else
        its declared default for the nodes' device kind)."""
        given = self.tolerances.get(metric.name)
        return replace(self.method, tolerance=given if given is not None else metric.default_tolerance(self._device_kind()))

    def _device_kind(self) -> DeviceKind:
        return DeviceKind.GPU if any(n.gpus > 0 for n in self.bench.cluster().nodes()) else DeviceKind.CPU

    def differences(self, rec: PairedCase) -> list[str]:
        """What differs between the sides: the spec (python, files' commit, variables) and what the
        runs report (framework versions, CUDA, NCCL, ...), as the baseline gate's "what changed"."""
        sides = self._sides or {}
        ref, cand = sides.get("reference"), sides.get("candidate")
        out = []
        if ref is not None and cand is not None:
            own = "(the nodes' own)"
            if ref.spec.python != cand.spec.python:
                out.append(f"python {ref.spec.python or own} -> {cand.spec.python or own}")
            if (ref.requirements, ref.spec.hide) != (cand.requirements, cand.spec.hide):
                out.append(f"packages {_packages(ref)} -> {_packages(cand)}")
            if ref.commit != cand.commit:
                out.append(f"files {ref.commit[:12] if ref.commit else '(as checked out)'} -> "
                           f"{cand.commit[:12] if cand.commit else '(as checked out)'}")
            ref_env, cand_env = ref.environ(), cand.environ()
            for k in sorted(set(ref_env) | set(cand_env)):
                a, b = ref_env.get(k, own), cand_env.get(k, own)
                if a != b:  # a side that leaves a variable to the nodes has it unset, as far as the other says
                    shown = [own if x is own and None in (a, b) else "(unset)" if x in (None, own) else x for x in (a, b)]
                    out.append(f"env {k}: {shown[0]} -> {shown[1]}")
        runs = {role: rec.runs(role)[:1] for role in ROLES}
        if all(runs.values()):
            out += changes(*(run_versions(runs[role][0].meta) for role in ROLES))
        return out

    def scaling(self, rec: PairedCase) -> dict | None:
        """A multi-device case's scaling efficiency, candidate against reference, from both ladders."""
        if rec.case.topology.world_size == 1 or len(rec.pairs) < 2:
            return None
        single = self.records.get(self.bench.name(replace(rec.case, topology=Topology(1, 1))))
        if single is None or len(single.pairs) < 2:
            return None
        got = sequential.compare_scaling([p.ratio for p in rec.pairs], [p.ratio for p in single.pairs], self.method)
        return assessment_dict(got)

    def judge(self, rec: PairedCase) -> tuple[bool, str]:
        """(fails, message) for the case's test: SLOWER fails, UNDECIDED with --dlperf-undecided fail."""
        status = rec.status
        said = f"{rec.case.id}: A/B {str(status).upper()}: {rec.verdict['reason'] if rec.verdict else 'no pairs'}"
        if rec.differences:
            said += "; the sides differ in: " + "; ".join(rec.differences)
        scaling = self.scaling(rec)
        fails = status == "slower" or (status == "undecided" and self.options.undecided_fails)
        for name, v in rec.metrics.items():
            said += f"; {metrics.get(name).title} {v['verdict'].upper()}: {v['reason']}"
            fails = fails or v["verdict"] == "worse" or (v["verdict"] == "undecided" and self.options.undecided_fails)
        if scaling is not None:
            said += f"; scaling efficiency {scaling['verdict'].upper()}: {scaling['reason']}"
            fails = fails or scaling["verdict"] == "slower"
        if rec.explanation is not None:
            said += "\n" + "\n".join(explain.lines(rec.explanation))
        return fails, said

    def section(self) -> dict:
        """results.json's ``ab`` section (docs/ab.md, contract 1)."""
        sides = self._sides or {}
        return {
            "contract": 1,
            "sides": {role: (sides[role].to_dict() if role in sides else Side(spec).to_dict())
                      for role, spec in (("reference", self.options.reference), ("candidate", self.options.candidate))},
            "explain": {"mode": self.options.explain.mode, "steps": self.options.explain.steps},
            "method": {"alpha": self.method.alpha, "tolerance": self.method.tolerance,
                       "min_pairs": self.method.min_pairs, "max_pairs": self.method.max_pairs,
                       "undecided": "fail" if self.options.undecided_fails else "pass",
                       "test": METHOD_TEXT},
            "cases": {name: rec.to_dict() for name, rec in self.records.items()},
            "scaling": {name: got for name, rec in self.records.items() if (got := self.scaling(rec)) is not None},
        }
