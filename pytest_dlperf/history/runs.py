"""One session's results as the history sees it (a Run), and the machine it ran on: runs are drawn
as one line only where both the baseline profile and the machine's identity agree."""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ..results.cases import CaseResult
from ..software.provenance import run_versions

NO_PROFILE = "(profile not recorded)"


@dataclass(frozen=True)
class Machine:
    """The hardware a run measured: ``key`` hashes the identity facts of its nodes' fingerprints (CPU,
    cores, quota, memory, GPUs), never the probes' figures, which move from hour to hour."""

    key: str
    label: str


def _node_facts(fp: Mapping[str, Any]) -> dict:
    cpu = fp.get("cpu") or {}
    gpus = [(g.get("name"), g.get("memory_mib"), g.get("power_limit_w")) for g in fp.get("gpus") or []
            if isinstance(g, Mapping)]
    memory = fp.get("memory_gib")
    return {"cpu": cpu.get("model_name"), "fms": [cpu.get(k) for k in ("family", "model", "stepping")],
            "cpus": cpu.get("cpus"), "quota": cpu.get("cpu_quota"),
            "memory_gib": round(memory) if isinstance(memory, (int, float)) else None, "gpus": gpus}


def _node_label(facts: dict) -> str:
    if facts["gpus"]:
        names = [g[0] or "GPU" for g in facts["gpus"]]
        return f"{len(names)}x {names[0]}" + ("" if len(set(names)) == 1 else " (mixed)")
    cpus = f", {facts['cpus']} CPU{'s' if facts['cpus'] != 1 else ''}" if facts["cpus"] else ""
    return f"{facts['cpu'] or 'CPU'}{cpus}"


def machine_of(environment: Mapping[str, Any]) -> Machine:
    """The machine of a results.json's environment, from its hardware fingerprints; a run without them
    is keyed by the devices its workloads reported (and says it was not fingerprinted)."""
    nodes = ((environment.get("hardware_fingerprints") or {}).get("nodes") or {})
    if isinstance(nodes, Mapping) and nodes:
        facts = sorted((_node_facts(fp) for fp in nodes.values() if isinstance(fp, Mapping)),
                       key=lambda f: json.dumps(f, sort_keys=True, default=str))  # node order is not the machine
        labels = [_node_label(f) for f in facts]
        label = (f"{len(labels)} nodes of {labels[0]}" if len(set(labels)) == 1 and len(labels) > 1
                 else " + ".join(labels))
        return Machine(_digest(facts), label)
    devices = environment.get("node_devices") or []
    cluster = environment.get("cluster") or {}
    count = len(cluster.get("nodes") or []) if isinstance(cluster, Mapping) else 0
    label = f"{' + '.join(map(str, devices)) or 'unknown devices'} (not fingerprinted)"
    return Machine("nofp-" + _digest([devices, count]), label)


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:8]


@dataclass
class Run:
    """One results.json: when it was written, from which commit, on which machine, its cases."""

    path: Path
    created: _dt.datetime
    environment: dict
    results: list[CaseResult]
    failures: dict[str, str] = field(default_factory=dict)
    ab: dict | None = None
    dated: str = ""  # where an imported run's time comes from (its logs, or the import); "" for pytest's own
    digest: str = ""  # sha256 of the file's bytes: two files of one content are one run
    machine: Machine = field(init=False)

    def __post_init__(self) -> None:
        self.machine = machine_of(self.environment)

    @cached_property  # asked for at every point of every chart
    def id(self) -> str:
        """Unique and sortable: the time it was written, then a hash of its path."""
        stamp = self.created.astimezone(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        return f"{stamp}-{hashlib.sha256(str(self.path).encode()).hexdigest()[:6]}"

    @cached_property  # asked for at every point of every chart
    def when(self) -> str:
        return self.created.astimezone(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

    @cached_property  # asked for at every point of every chart
    def commit(self) -> str | None:
        """The repository's commit the session ran at (12 hex, "+dirty"), None where not recorded."""
        git = self.environment.get("git")
        if not isinstance(git, Mapping) or not git.get("commit"):
            return None
        return str(git["commit"])[:12] + ("+dirty" if git.get("dirty") else "")

    @cached_property
    def place(self) -> tuple[str, list[str]] | None:
        """The repository's top and the session's test paths in it, as recorded (None: not recorded)."""
        git = self.environment.get("git")
        if not isinstance(git, Mapping) or not isinstance(git.get("top"), str) or not isinstance(git.get("paths"), list):
            return None
        return git["top"], [str(p) for p in git["paths"]]

    @cached_property
    def versions(self) -> dict[str, str]:
        """What the run ran on (frameworks, Python, CUDA, device, commit), as the gate compares them."""
        out: dict[str, str] = {}
        for r in self.results:
            for run in r.runs[:1]:
                out.update(run_versions(run.meta, None))
        out.pop("pytest_dlperf", None)  # run_versions adds the installed one: the run's is its environment's
        if self.environment.get("pytest_dlperf"):
            out["pytest_dlperf"] = str(self.environment["pytest_dlperf"])
        if self.commit:
            out["git"] = self.commit
        return out

    def group_of(self, result: CaseResult) -> tuple[str, str]:
        """(profile, machine key): a case's line on its charts."""
        return (result.profile or NO_PROFILE, self.machine.key)
