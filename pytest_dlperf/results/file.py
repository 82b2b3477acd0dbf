"""Reading a results.json back (``dlperf report``, ``dlperf compare``): every field the reports use is
checked first, so that a damaged or foreign file is refused in one line naming the file, the entry and
the fix, never half-read into a traceback or a report that leaves a case out; and so is a file that
contradicts itself (a median that is not its throughputs' median, a speedup its medians do not give)."""
from __future__ import annotations

import json
import math
from dataclasses import fields
from pathlib import Path

from .. import metrics
from ..baselines.schema import is_number, positive_number
from ..formats.base import MAX_SAMPLES_PER_S
from ..specs import CaseSpec, Measurement, Topology
from .cases import READS, CaseResult, ResultSet, result_from_dict
from .verdict import VerdictStatus

FIX = "write it again (pytest, or dlperf import) or mend that entry"
_CASE_FIELDS = {f.name: f.type for f in fields(CaseSpec)}


class ResultsFileError(ValueError):
    """A results.json that cannot be read: the message is the one line to show."""


def _check_case(c: object) -> str | None:
    """What is wrong with a case's ``case`` object, or None."""
    if not isinstance(c, dict):
        return "'case' is not an object"
    unknown = set(c) - set(_CASE_FIELDS) - {"id", "unit"}
    if unknown:
        return f"'case' has unknown field(s) {', '.join(sorted(unknown))}"
    for name in ("model", "precision", "batch_size", "image_size", "topology"):
        if name not in c:
            return f"'case' lacks {name!r}"
    for name in ("model", "precision", "topology", "backend", "variant"):
        if name in c and not isinstance(c[name], str):
            return f"'case.{name}' is {c[name]!r}, not a string"
    for name in ("batch_size", "image_size"):
        if not (isinstance(c[name], int) and not isinstance(c[name], bool) and c[name] > 0):
            return f"'case.{name}' is {c[name]!r}, not a positive whole number"
    try:
        Topology.parse(c["topology"])
    except ValueError as exc:
        return f"'case.topology': {exc}"
    return None


# a verdict's figures that the reports and dlperf history compute with: a number or null
_VERDICT_NUMBERS = ("measured_median", "baseline_median", "change", "measured_cv", "baseline_cv", "p_value")


def _check_verdict(v: dict) -> str | None:
    """What is wrong with one verdict's status, tolerance and figures, or None."""
    if v.get("status") not in {s.value for s in VerdictStatus}:
        return f"'status' is {v.get('status')!r}, not a verdict's status"
    tol = v.get("tolerance")
    if not (is_number(tol) and tol >= 0):
        return f"'tolerance' is {tol!r}, not a fraction (0 or more)"
    for name in _VERDICT_NUMBERS:
        x = v.get(name)
        if x is not None and not is_number(x):
            return f"{name!r} is {x!r}, not a number or null"
    if not isinstance(v.get("message", ""), str):
        return "'message' is not text"
    return None


def _check_figures(d: dict) -> str | None:
    """What is wrong with a case's figures, or None."""
    tp = d.get("throughputs")
    if not isinstance(tp, list) or not tp or not all(positive_number(x) for x in tp):
        return f"'throughputs' is {tp!r}, not a non-empty list of positive numbers (samples/s)"
    for name, x in [*((f"throughputs[{i}]", x) for i, x in enumerate(tp)), ("mean", d.get("mean")),
                    ("median", d.get("median"))]:
        if not positive_number(x):
            return f"{name!r} is {x!r}, not a positive number"
        if x > MAX_SAMPLES_PER_S:
            return f"{name!r} is {x!r}, not a plausible throughput (more than {MAX_SAMPLES_PER_S:.0e} a second)"
    for name in ("step_time", "per_device_samples_per_s"):
        v = d.get(name)
        if not isinstance(v, dict) or not all(isinstance(k, str) and positive_number(x) for k, x in v.items()):
            return f"{name!r} is {v!r}, not an object of positive numbers"
    if not (isinstance(d.get("world_size_seen"), int) and not isinstance(d.get("world_size_seen"), bool)):
        return f"'world_size_seen' is {d.get('world_size_seen')!r}, not a whole number"
    m = d.get("measurement")
    if not isinstance(m, dict) or set(m) - {f.name for f in fields(Measurement)}:
        return "'measurement' is not a pytest-dlperf measurement object"
    verdict = d.get("verdict")
    if verdict is not None and not (isinstance(verdict, dict) and all(isinstance(v, dict) for v in verdict.values())):
        return "'verdict' is not an object of verdicts"
    for metric, v in (verdict or {}).items():
        wrong = _check_verdict(v)
        if wrong:
            return f"'verdict.{metric}': {wrong}"
    if not isinstance(d.get("runs", []), list):
        return "'runs' is not a list"
    wrong = _check_metrics(d.get("metrics"))
    if wrong:
        return wrong
    mfu = d.get("mfu")
    if mfu is not None and not (isinstance(mfu, dict) and isinstance(mfu.get("peak"), dict)
                                and all(v is None or positive_number(v) for v in
                                        (mfu.get("mfu"), mfu.get("flops_per_sample"), mfu.get("peak", {}).get("flops")))):
        return "'mfu' is not null or an object with a 'peak' object and positive numbers (or nulls)"
    return None


def _check_metrics(section: object) -> str | None:
    """What is wrong with a case's ``metrics`` (contract 2; absent in contract 1), or None."""
    if section is None:
        return None
    if not isinstance(section, dict) or not all(isinstance(v, dict) for v in section.values()):
        return "'metrics' is not an object of objects"
    for name, d in section.items():
        try:
            metric = metrics.get(name)
        except ValueError:
            return f"'metrics.{name}' is not a metric this pytest-dlperf knows (a newer one wrote it?)"
        value, values = d.get("value"), d.get("values", [])
        if value is not None and not is_number(value):
            return f"'metrics.{name}.value' is {value!r}, not a number or null"
        figure = (lambda x: is_number(x) and x >= 0) if metric.counted else positive_number  # a count may be 0
        if not isinstance(values, list) or not all(figure(x) for x in values):
            kind = "counts" if metric.counted else "positive numbers"
            return f"'metrics.{name}.values' is {values!r}, not a list of {kind}"
        if value is None and not d.get("not_measured"):
            return f"'metrics.{name}' has neither a value nor why it was not measured"
        if metric.per_run and value is not None and not values:
            return f"'metrics.{name}' has a value but no per-launch values"
    return None


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _contradiction(d: dict, r: CaseResult) -> str | None:
    """What a case says against itself, or None: its mean and median must be its throughputs', its id
    and unit its fields', its runs one per throughput (an imported or external run's parsed figure
    that throughput), its per-device figures for the step-time percentiles it has."""
    mean, median = metrics.center(r.throughputs)
    for name, stored, own in (("median", d["median"], median), ("mean", d["mean"], mean)):
        if not _close(stored, own):
            return f"'{name}' is {stored!r}, but the {name} of its 'throughputs' is {own!r}"
    for name, own in (("id", r.case.id), ("unit", r.case.unit)):
        if name in d["case"] and d["case"][name] != own:
            return f"'case.{name}' is {d['case'][name]!r}, but its fields make {own!r}"
    if r.runs and len(r.runs) != len(r.throughputs):
        return f"{len(r.runs)} runs but {len(r.throughputs)} throughputs (one per run)"
    for i, run in enumerate(r.runs):
        parsed = run.meta.get("parsed") if isinstance(run.meta, dict) else None
        if isinstance(parsed, dict) and is_number(parsed.get("throughput")) \
                and not _close(parsed["throughput"], r.throughputs[i]):
            return f"runs[{i}] read {parsed['throughput']!r} from its log, but throughputs[{i}] is {r.throughputs[i]!r}"
    if set(r.per_device) != set(r.step_time):
        return (f"'per_device_samples_per_s' has {sorted(r.per_device)}, its 'step_time' {sorted(r.step_time)}: one "
                "per step-time percentile")
    return None


def _derived(docs: list[tuple[str, dict, CaseResult]]) -> None:
    """Each case's speedup and efficiencies, where it stores them, are those its group's medians give
    (``ResultSet``'s; the reports show those)."""
    for what, d, r in docs:
        for name in metrics.names(metrics.of_kind(metrics.Kind.SCALING)):
            stored, own = d.get(name), r.value(name)
            if stored is None:
                continue
            if not (is_number(stored) and own is not None and _close(stored, own)):
                raise ResultsFileError(f"{what}: {name!r} is {stored!r}, but the medians of its cases give "
                                       f"{own!r}: the file contradicts itself; {FIX}")


def _cases(path: Path, doc: dict) -> ResultSet:
    results, seen, docs = ResultSet(), {}, []
    for i, d in enumerate(doc["cases"]):
        what = f"{path}: cases[{i}]"
        if not isinstance(d, dict):
            raise ResultsFileError(f"{what} is not an object: {FIX}")
        what += f" ({d['case'].get('id')})" if isinstance(d.get("case"), dict) and d["case"].get("id") else ""
        wrong = _check_case(d.get("case")) or _check_figures(d)
        if wrong:
            raise ResultsFileError(f"{what}: {wrong}: {FIX}")
        try:
            r = result_from_dict(d)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ResultsFileError(f"{what}: its runs are not pytest-dlperf's ({type(exc).__name__}: {exc}): "
                                   f"{FIX}") from None
        if r.case in seen:
            raise ResultsFileError(f"{what}: the same case as cases[{seen[r.case]}] ({r.case.key}): keep one of them")
        wrong = _contradiction(d, r)
        if wrong:
            raise ResultsFileError(f"{what}: {wrong}: the file contradicts itself; {FIX}")
        seen[r.case] = i
        results.add(r)
        docs.append((what, d, r))
    _derived(docs)
    return results


def load(path: Path) -> tuple[ResultSet, dict]:
    """The results and the whole document of a results.json; ResultsFileError says what is wrong."""
    doc = read_document(path)
    return from_document(path, doc), doc


def read_document(path: Path) -> dict:
    """A results.json's JSON, unchecked but for being an object; ResultsFileError where it is not."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsFileError(f"{path}: no such file (give a results.json of a run's report directory)") from None
    except IsADirectoryError:
        hint = " (it holds a results.json: give that)" if (path / "results.json").is_file() else ""
        raise ResultsFileError(f"{path}: a directory, not a results.json{hint}") from None
    except UnicodeDecodeError:
        raise ResultsFileError(f"{path}: not text, so not a results.json (give a run's results.json)") from None
    except OSError as exc:
        raise ResultsFileError(f"{path}: cannot be read ({exc.strerror or exc}): fix its permissions") from None
    except json.JSONDecodeError as exc:
        raise ResultsFileError(f"{path}: not JSON ({exc}): give a results.json that pytest or dlperf import wrote") from None
    except (ValueError, RecursionError) as exc:  # a number of too many digits, nesting too deep to read
        raise ResultsFileError(f"{path}: not a results.json ({type(exc).__name__}: {str(exc)[:80]}): give one that "
                               "pytest or dlperf import wrote") from None
    if not isinstance(doc, dict):
        raise ResultsFileError(f"{path}: not a pytest-dlperf results.json (not an object): give one that pytest "
                               "or dlperf import wrote")
    return doc


def from_document(path: Path, doc: dict) -> ResultSet:
    """The results of a results.json's document (contract 1 or 2), every field the reports use checked first."""
    schema = doc.get("schema", 1)
    if not isinstance(schema, int) or isinstance(schema, bool) or schema not in READS:
        newer = isinstance(schema, int) and not isinstance(schema, bool) and schema > max(READS)
        raise ResultsFileError(f"{path}: results.json contract {schema!r} is "
                               + (f"newer than this pytest-dlperf reads ({', '.join(map(str, READS))}): upgrade "
                                  "pytest-dlperf" if newer else "not one pytest-dlperf wrote: give a run's results.json"))
    if not isinstance(doc.get("cases"), list):
        raise ResultsFileError(f"{path}: not a pytest-dlperf results.json (no 'cases' list): give one that pytest "
                               "or dlperf import wrote")
    for name in ("environment", "failures"):
        if doc.get(name) is not None and not isinstance(doc[name], dict):
            raise ResultsFileError(f"{path}: {name!r} is not an object: {FIX}")
    return _cases(path, doc)
