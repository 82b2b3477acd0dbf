"""The history as the pages need it: each case's points per line (profile and machine), each
model's ladder per line, each run's previous run on the same machine."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from ..results.cases import CaseResult
from ..specs import CaseSpec
from .changepoints import Finder, Segmentation
from .charts import Failed, Point
from .runs import NO_PROFILE, Run
from .sources import Bisection, Skipped

Group = tuple[str, str]  # (profile, machine key)


@lru_cache(maxsize=None)  # a run's page is named once per point that links to it
def slug(text: str) -> str:
    """A file name for a case key, model or run id, one to one: letters, digits, "-" and "." stay,
    "/" becomes "__", any other character "_" and its code in hex (so no two keys share a page)."""
    out = []
    for i, ch in enumerate(text):
        if ch.isascii() and (ch.isalnum() or ch == "-" or (ch == "." and i > 0)):
            out.append(ch)
        elif ch == "/":
            out.append("__")
        else:
            out.append(f"_{ord(ch):02x}" if ord(ch) < 0x100 else f"_u{ord(ch):06x}")
    return "".join(out) or "_"


def family(case: CaseSpec) -> str:
    """A model's cases at every topology: the case key without the topology."""
    return case.key.removesuffix(f"-{case.topology.name}")


@dataclass
class History:
    """Every run read, in the order its lines are read (``order``), and the files left out."""

    runs: list[Run]
    skipped: list[Skipped] = field(default_factory=list)
    bisections: list[Bisection] = field(default_factory=list)
    finder: Finder = Segmentation()  # how a line's level changes are found (``changepoints``)
    order: str = "time order"  # the order of ``runs``, as a line says it (``order.by_commit``)

    def __post_init__(self) -> None:
        self.labels: dict[Group, str] = {}
        self.cases: dict[str, dict[Group, list[Point]]] = {}
        self.specs: dict[str, CaseSpec] = {}
        for run in self.runs:
            if run.ab:  # an A/B session's cases are its candidate's: a change under test, not the line's next point
                continue
            for r in run.results:
                g = run.group_of(r)
                self.labels.setdefault(g, f"{g[0]} on {run.machine.label} [{run.machine.key}]")
                self.cases.setdefault(r.case.key, {}).setdefault(g, []).append(Point(run, r))
                self.specs[r.case.key] = r.case
        self.failed = self._failed()

    def _failed(self) -> dict[str, dict[Group, list[Failed]]]:
        """Per case and line, the runs in which the case failed (a gap in its line, never joined over):
        a failure is named by the case's id, after its backend where a session ran several; it falls
        on the line of the run's machine and of the profile the run's other cases used (one drawn on
        no chart, where the case has no such line, is still listed on the case's page)."""
        by_name: dict[str, list[str]] = {}
        for key, spec in self.specs.items():
            for n in dict.fromkeys((spec.id, f"{spec.backend}-{spec.id}")):
                by_name.setdefault(n, []).append(key)
        out: dict[str, dict[Group, list[Failed]]] = {}
        for run in self.runs:
            measured = {r.case.key for r in run.results}
            profiles = [r.profile for r in run.results if r.profile]
            profile = max(set(profiles), key=profiles.count) if profiles else NO_PROFILE
            backends = {r.case.backend for r in run.results}
            for name, why in (run.failures or {}).items() if not run.ab else ():
                keys = by_name.get(name, [])
                key = next((k for k in keys if self.specs[k].backend in backends), keys[0] if len(keys) == 1 else None)
                if key is None or key in measured:
                    continue  # a case never measured has no line (its run page names it); one measured has its point
                lines = [g for g in self.cases[key] if g[1] == run.machine.key]
                g = next((g for g in lines if g[0] == profile), lines[0] if len(lines) == 1 else (profile, run.machine.key))
                out.setdefault(key, {}).setdefault(g, []).append(Failed(run, str(why)))
        return out

    @cached_property
    def families(self) -> dict[str, dict[Group, list[tuple[Run, list[CaseResult]]]]]:
        """Per model (family) and line: each run's results of that model, for its ladder."""
        out: dict[str, dict[Group, dict[str, tuple[Run, list[CaseResult]]]]] = {}
        for key, groups in self.cases.items():
            fam = family(self.specs[key])
            for g, points in groups.items():
                per_run = out.setdefault(fam, {}).setdefault(g, {})
                for p in points:
                    per_run.setdefault(p.run.id, (p.run, []))[1].append(p.result)
        return {fam: {g: list(rs.values()) for g, rs in gs.items()} for fam, gs in out.items()}

    def previous(self, run: Run) -> Run | None:
        """The run before this one on the same machine (an A/B session's build is not the line's)."""
        before = [r for r in self.runs if r.machine.key == run.machine.key and r.created < run.created and not r.ab]
        return before[-1] if before else None
