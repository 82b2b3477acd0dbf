"""A history of nightly runs made from one recorded results.json, for the history site's tests and
benchmark: each night's figures are the recording's times a drift with a planted regression, the
gate's verdicts of each night against the recording as its baseline, and a machine change."""
from __future__ import annotations

import copy
import datetime as _dt
import hashlib
import json
import math
import random
from dataclasses import dataclass
from pathlib import Path

from pytest_dlperf.results.cases import ResultSet, result_from_dict

TEMPLATE = Path(__file__).resolve().parent / "data" / "history" / "results.json"
OTHER_CPU = "Intel(R) Xeon(R) Platinum 8369B CPU @ 2.70GHz"


@dataclass(frozen=True)
class Plan:
    """``nights`` runs from ``start``, one a day; from ``regression_at`` the throughput is ``drop``
    times lower; from ``machine_at`` the runs are on another CPU (its own profile and baseline)."""

    nights: int
    regression_at: int | None = None
    drop: float = 0.75
    machine_at: int | None = None
    start: _dt.datetime = _dt.datetime(2026, 1, 1, 2, 0, tzinfo=_dt.timezone.utc)
    noise: float = 0.01
    seed: int = 7
    models: tuple[str, ...] = ()  # the recording's cases again under these model names (a bigger matrix)
    precisions: tuple[str, ...] = ()  # ... and these precisions
    topologies: tuple[str, ...] = ()  # ... at these topologies (the multi-device case's rate scaled by devices)
    regressed: tuple[str, ...] = ()  # the case ids the drop is planted in (none named: every case)
    failed: tuple[tuple[int, str], ...] = ()  # (night, case id): the case failed that night (in 'failures')
    commits: tuple[str, ...] = ()  # each night's commit (none given: commit_of), the template's repository kept


def commit_of(night: int) -> str:
    """A commit every two nights."""
    return hashlib.sha1(f"commit {night // 2}".encode()).hexdigest()[:12]


def _status(ratio: float, tolerance: float) -> str:
    return "regression" if ratio < 1 - tolerance else "improvement" if ratio > 1 + tolerance else "pass"


def _judge(verdict: dict, metric: str, measured: float, baseline: float) -> dict:
    v = dict(verdict, metric=metric, measured_median=measured, baseline_median=baseline, change=measured / baseline - 1)
    v["status"] = _status(measured / baseline, v["tolerance"])
    # the gate's messages run to some 450 characters (the recording's own, after this night's verdict)
    v["message"] = (f"{v['case']} {metric}: {v['status']} ({v['change']:+.1%} vs baseline {baseline:.4g}); "
                    f"as recorded: {verdict['message']}")
    return v


def _night_case(case: dict, factor: float, base_factor: float, profile: str, rng: random.Random,
                noise: float) -> dict:
    c = copy.deepcopy(case)
    c["throughputs"] = [t * factor * (1 + rng.uniform(-noise, noise)) for t in case["throughputs"]]
    for run, t in zip(c.get("runs") or [], c["throughputs"]):  # an external run's figure, as read from its log
        parsed = (run.get("meta") or {}).get("parsed")
        if isinstance(parsed, dict) and "throughput" in parsed:
            parsed["throughput"] = t
    ordered = sorted(c["throughputs"])
    c["median"] = ordered[len(ordered) // 2]
    c["mean"] = sum(ordered) / len(ordered)
    c["profile"] = profile
    template = next(iter((case.get("verdict") or {}).values()))
    c["verdict"] = {"throughput": _judge(template, "throughput", c["median"], case["median"] * base_factor)}
    return c


def _judge_scaling(cases: list[dict], recorded: list[dict]) -> None:
    """Speedup and efficiency as results.json's reader derives them (median over the one-device
    case's), judged against the recording's where it judged them."""
    one = {(c["case"]["backend"], c["case"]["id"].rsplit("-", 1)[0]): c["median"] for c in cases
           if c["case"]["topology"] == "1n1g"}
    one_then = {(c["case"]["backend"], c["case"]["id"].rsplit("-", 1)[0]): c["median"] for c in recorded
                if c["case"]["topology"] == "1n1g"}
    for c, then in zip(cases, recorded):
        family = (c["case"]["backend"], c["case"]["id"].rsplit("-", 1)[0])
        nodes, per_node = (int(x) for x in c["case"]["topology"].rstrip("g").split("n"))
        if nodes * per_node == 1 or family not in one:
            continue
        speedup, speedup_then = c["median"] / one[family], then["median"] / one_then[family]
        for metric, now, before in (("speedup", speedup, speedup_then),
                                    ("efficiency", speedup / (nodes * per_node), speedup_then / (nodes * per_node))):
            if metric in (then.get("verdict") or {}):
                c["verdict"][metric] = _judge(then["verdict"][metric], metric, now, before)


def _derive(cases: list[dict]) -> None:
    """Each case's speedup and efficiencies as its group's medians give them (results.json's reader
    refuses a file whose stored figures contradict its medians)."""
    results = ResultSet()
    for c in cases:
        results.add(result_from_dict(c))
    for c, r in zip(cases, results.results):
        c["speedup"], c["efficiency"], c["multi_node_efficiency"] = r.speedup, r.efficiency, r.multi_node_efficiency


def _as_case(case: dict, model: str, precision: str, topology: str | None = None) -> dict:
    """The recorded case under another model name and precision (and, from the multi-device case, at
    another topology: its rates times the devices over its own, at 95% per doubling)."""
    c = copy.deepcopy(case)
    c["case"]["id"] = c["case"]["id"].replace(c["case"]["model"], model, 1).replace(c["case"]["precision"], precision, 1)
    c["case"]["model"], c["case"]["precision"] = model, precision
    if topology is not None and topology != c["case"]["topology"]:
        own = c["case"]["topology"]
        ratio = _devices(topology) / _devices(own) * 0.95 ** math.log2(_devices(topology) / _devices(own))
        c["throughputs"] = [t * ratio for t in c["throughputs"]]
        c["median"], c["mean"] = c["median"] * ratio, c["mean"] * ratio
        c["case"]["id"] = c["case"]["id"].removesuffix(own) + topology
        c["case"]["topology"] = topology
        for v in (c.get("verdict") or {}).values():
            v["case"] = c["case"]["id"]
    return c


def _devices(topology: str) -> int:
    nodes, per_node = topology.rstrip("g").split("n")
    return int(nodes) * int(per_node)


def _matrix(cases: list[dict], plan: Plan) -> list[dict]:
    if not (plan.models or plan.precisions or plan.topologies):
        return cases
    one = next(c for c in cases if c["case"]["topology"] == "1n1g")
    many = next(c for c in cases if c["case"]["topology"] != "1n1g")
    topologies = plan.topologies or tuple(c["case"]["topology"] for c in cases)
    return [_as_case(one if t == "1n1g" else many, m, p, t) for m in plan.models or (one["case"]["model"],)
            for p in plan.precisions or (one["case"]["precision"],) for t in topologies]


def write(plan: Plan, out: Path, template: Path = TEMPLATE) -> list[Path]:
    """One report directory per night under ``out`` (night-000/results.json, ...)."""
    doc = json.loads(template.read_text(encoding="utf-8"))
    doc["cases"] = _matrix(doc["cases"], plan)
    rng = random.Random(plan.seed)
    paths = []
    for night in range(plan.nights):
        other = plan.machine_at is not None and night >= plan.machine_at
        dropped = plan.regression_at is not None and night >= plan.regression_at
        machine = 1.3 if other else 1.0
        d = copy.deepcopy(doc)
        d["created"] = (plan.start + _dt.timedelta(days=night)).isoformat(timespec="seconds")
        d["environment"]["git"] = {**(d["environment"].get("git") or {}), "dirty": False,
                                   "commit": plan.commits[night] if plan.commits else commit_of(night)}
        if other:
            for fp in d["environment"]["hardware_fingerprints"]["nodes"].values():
                fp["cpu"]["model_name"] = OTHER_CPU
            d["environment"]["node_devices"] = [OTHER_CPU]
        profile = "cpu-intel-xeon-platinum-8369b-1c" if other else doc["cases"][0]["profile"]
        d["cases"] = [_night_case(c, machine * (plan.drop if dropped and (not plan.regressed or
                                                                c["case"]["id"] in plan.regressed) else 1.0),
                                  machine, profile, rng, plan.noise) for c in doc["cases"]]
        _judge_scaling(d["cases"], doc["cases"])
        gone = {case for n, case in plan.failed if n == night}
        d["failures"] = {c["case"]["id"]: f"night {night}: the workload exited 1 (planted failure)"
                         for c in d["cases"] if c["case"]["id"] in gone}
        d["cases"] = [c for c in d["cases"] if c["case"]["id"] not in gone]
        _derive(d["cases"])
        path = out / f"night-{night:03d}" / "results.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(d), encoding="utf-8")
        paths.append(path)
    return paths
