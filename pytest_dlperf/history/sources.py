"""What ``dlperf history`` reads: results.json files, ``dlperf bisect`` steps files, report
directories (each results.json and dlperf-bisect*.json under them) and globs over CI artifacts. A
file that cannot be read is named with its reason and left out; the rest of the site still builds."""
from __future__ import annotations

import datetime as _dt
import glob
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ..baselines.schema import positive_number
from ..bisect import UsageError
from ..bisect.steps import Steps
from ..reporting import SCHEMA
from ..results.file import ResultsFileError, from_document, read_document
from .logtimes import imported_date
from .runs import Run


class HistoryError(ValueError):
    """Input that gives no site at all: the message is the one line to show."""


@dataclass(frozen=True)
class Skipped:
    """A results.json left out of the site, and why (shown by the command and on the index page);
    ``same_as``: the file of the same content counted in its place (a copy is not a second run)."""

    path: Path
    reason: str
    same_as: Path | None = None


def expand(arguments: list[str]) -> list[Path]:
    """Every results.json the arguments name, each once, in the order given; HistoryError names an
    argument that names none."""
    found: dict[Path, None] = {}
    for arg in arguments:
        matches = sorted(glob.glob(arg, recursive=True)) if glob.has_magic(arg) else [arg]
        paths = [p for m in matches for p in _results_under(Path(m))]
        if not paths:
            what = "matches no results.json" if glob.has_magic(arg) else (
                "holds no results.json" if Path(arg).is_dir() else "does not exist")
            raise HistoryError(f"{arg}: {what}: give results.json files, report directories or globs over them")
        found.update(dict.fromkeys(p.resolve() for p in paths))
    return list(found)


def _results_under(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted([*path.rglob("results.json"), *path.rglob("dlperf-bisect*.json")])
    return [path] if path.exists() else []


@dataclass(frozen=True)
class Bisection:
    """A ``dlperf bisect`` steps file: its items and every probe so far."""

    path: Path
    steps: Steps

    @property
    def id(self) -> str:
        return "bisect-" + hashlib.sha256(str(self.path).encode()).hexdigest()[:8]


def _bisection(path: Path) -> Bisection | Skipped | None:
    """The steps file at ``path``, or why it is left out; None when the file is not one."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # read again as a results.json, which names what is wrong
    if not isinstance(doc, dict) or "dlperf_bisect" not in doc:
        return None
    try:
        return Bisection(path, Steps.load(path))
    except UsageError as exc:
        return Skipped(path, str(exc))


def read(path: Path) -> Run | Bisection | Skipped:
    """The run a results.json holds (or the bisection of a steps file), or why it is left out."""
    if path.name != "results.json" and (bisection := _bisection(path)) is not None:
        return bisection
    try:
        doc = read_document(path)
        schema = doc.get("schema", SCHEMA)  # checked before the cases: a newer schema may have new fields
        if not isinstance(schema, int) or isinstance(schema, bool):
            return Skipped(path, f"'schema' is {schema!r}, not a whole number: not a results.json pytest-dlperf wrote")
        if schema > SCHEMA:
            return Skipped(path, f"results.json schema {schema} is newer than this pytest-dlperf reads ({SCHEMA}): "
                                 "build the site with the pytest-dlperf that wrote it, or a newer one")
        results = from_document(path, doc)
    except ResultsFileError as exc:
        return Skipped(path, str(exc).removeprefix(f"{path}: "))
    try:
        created = _dt.datetime.fromisoformat(str(doc.get("created")))
    except ValueError:
        return Skipped(path, f"'created' is {doc.get('created')!r}, not an ISO time: the run has no place in time")
    if created.tzinfo is None:
        created = created.replace(tzinfo=_dt.timezone.utc)
    wrong = _check_environment(doc.get("environment") or {}) or _check_ab(doc.get("ab"))
    if wrong:
        return Skipped(path, f"{wrong}: write it again (pytest, or dlperf import) or mend that entry")
    env, cases = doc.get("environment") or {}, list(results.results)
    dated = imported_date(env, cases, created)
    return Run(path=path, created=(dated.when if dated else created).astimezone(_dt.timezone.utc), environment=env,
               results=cases, failures=doc.get("failures") or {}, ab=doc.get("ab"), dated=dated.said if dated else "",
               digest=hashlib.sha256(path.read_bytes()).hexdigest())


def _check_environment(env: dict) -> str | None:
    """What is wrong with the environment facts the pages read (fingerprints, git, lists), or None."""
    fps = env.get("hardware_fingerprints")
    if fps is not None:
        nodes = fps.get("nodes") if isinstance(fps, dict) else None
        if not isinstance(nodes, dict) or not all(isinstance(fp, dict) and isinstance(fp.get("cpu") or {}, dict)
                                                  and isinstance(fp.get("gpus") or [], list)
                                                  and all(isinstance(g, dict) for g in fp.get("gpus") or [])
                                                  for fp in nodes.values()):
            return "'environment.hardware_fingerprints' is not an object of nodes' fingerprints"
    if env.get("git") is not None and not isinstance(env["git"], dict):
        return "'environment.git' is not an object"
    for name in ("frameworks", "node_devices"):
        if not isinstance(env.get(name) or [], list):
            return f"'environment.{name}' is not a list"
    return None


def _check_ab(ab: object) -> str | None:
    """What is wrong with an A/B section's cases and pairs as its page reads them, or None."""
    if ab is None:
        return None
    cases = ab.get("cases") if isinstance(ab, dict) else None
    method, sides = (ab.get("method", {}), ab.get("sides", {})) if isinstance(ab, dict) else (None, None)
    if not isinstance(cases, dict) or not isinstance(method, dict) or not isinstance(sides, dict) \
            or not all(isinstance(x, dict) for x in sides.values()) \
            or (method and not isinstance(method.get("tolerance"), (int, float))):
        return "'ab' is not an A/B section (docs/ab.md)"
    for name, c in cases.items():
        if not isinstance(c, dict) or not all(c.get(k) is None or isinstance(c[k], (int, float))
                                              for k in ("ratio", "low", "high")) \
                or not isinstance(c.get("differences", []), list):
            return f"'ab.cases.{name}' is not an A/B case (ratio, low, high: numbers or null)"
        pairs = c.get("pairs_taken", [])
        if not isinstance(pairs, list) or not all(
                isinstance(p, dict) and positive_number(p.get("ratio"))
                and all(isinstance(p.get(side), dict) and positive_number(p[side].get("throughput"))
                        for side in ("reference", "candidate")) for p in pairs):
            return (f"'ab.cases.{name}': its pairs are not pairs of a reference's and a candidate's throughput "
                    "with their ratio")
    return None


def read_all(paths: list[Path]) -> tuple[list[Run], list[Bisection], list[Skipped]]:
    """The runs in time order, the bisections, and the files left out: a results.json whose bytes
    are another's (a report copied into two artifact folders) is one run, the copy left out by name."""
    runs, bisections, skipped, first = [], [], [], {}
    for p in paths:
        got = read(p)
        if isinstance(got, Run) and (same := first.setdefault(got.digest, got)) is not got:
            got = Skipped(p, f"the same content as {same.path}: one run, counted once", same_as=same.path)
        {Run: runs, Bisection: bisections, Skipped: skipped}[type(got)].append(got)
    runs.sort(key=lambda r: (r.created, str(r.path)))
    return runs, bisections, skipped
