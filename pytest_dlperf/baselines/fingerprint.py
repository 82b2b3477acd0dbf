"""Is this the machine the baseline was recorded on? Compare two sets of hardware fingerprints.

A fingerprint is the JSON object ``pytest_dlperf/node/hwprobe.py`` prints on a node (its
module docstring is the contract). ``compare`` takes the fingerprints stored with a baseline and
the ones measured now, both mapping node name -> fingerprint, and tells ANOTHER MACHINE from the
same machine at another speed (issue #63):

- identity facts (CPU model, family/model/stepping, flags, CPU count, SMT, cgroup quota, memory;
  GPU model, memory, clocks, power limit, ECC, PCIe, driver, MIG, count) are compared exactly; a
  difference means the baseline was recorded on other hardware ("differs": HARDWARE, not judged);
- the probes' performance figures (matmul GFLOP/s per core) are compared as a ratio measured /
  recorded against a threshold that grows with the trials' own noise; a difference is ``speed``:
  the same machine ran faster or slower than when it recorded (a shared VM's host moves 6-50%
  between minutes), which is not another machine. It is said beside a failure's attribution (HOST)
  and the recording's notes, and decides nothing;
- a measured probe whose threads got markedly less CPU time than wall time (``cpu_wall``) ran
  on cores shared with other work: its figures are not compared ("busy"), unless the missing
  CPU time was a cgroup quota's throttling, which is reported as a difference.

Nodes are matched by position in the mappings' order (the names may differ between runs).
Every fact is worded "measured vs recorded".
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

STATUSES = ("same", "differs", "busy", "unknown")
THROTTLED_S = 0.05  # a quota that throttled the probe for longer than this capped its cores
MEMORY_GIB_TOLERANCE = 0.10
NOISE_FACTOR = 4.0
MAD_TO_SIGMA = 1.4826

# (key, label, smallest tolerance). The memory-copy probe is recorded but not compared: on a shared
# VM its median moved by up to 41% between sessions on one machine (the matmul's by about 5%).
_PERF_PROBES = (("compute", "matmul probe", 0.0),)
# (key, label, unit suffix) of the per-GPU facts compared exactly
_GPU_FACTS = (
    ("name", "GPU", ""),
    ("memory_mib", "GPU memory", " MiB"),
    ("sm_clock_max_mhz", "max SM clock", " MHz"),
    ("mem_clock_max_mhz", "max memory clock", " MHz"),
    ("power_limit_w", "power limit", " W"),
    ("ecc", "ECC", ""),
    ("pcie_gen", "PCIe gen", ""),
    ("pcie_width", "PCIe width", ""),
    ("driver", "driver", ""),
    ("mig", "MIG", ""),
)


def compute_rate(fp: Mapping[str, Any] | None) -> float:
    """A fingerprint's compute probe figure: its best trial, else its median, else 0 (none)."""
    c = (fp or {}).get("compute") or {}
    return _num(c.get("best")) or _num(c.get("median")) or 0.0


def best_of(a: Mapping[str, dict], b: Mapping[str, dict]) -> dict[str, dict]:
    """Per node, the fingerprint whose compute probe did best: a session probes before every case,
    and the machine's capability is the best it showed (transient host contention only lowers it)."""
    return {n: (b[n] if n in b and compute_rate(b[n]) > compute_rate(a.get(n)) else a[n]) if n in a else b[n]
            for n in list(dict.fromkeys([*a, *b]))}


@dataclass
class FingerprintComparison:
    """The verdict on two sets of fingerprints.

    ``status``: "same" (no identity fact differs, cores not busy), "differs" (an identity fact
    differs: another machine), "busy" (no identity fact differs, but a probe ran on cores shared
    with other work, so its speed was not compared), "unknown" (nothing to compare against).
    ``differences``: the identity facts, measured vs recorded. ``speed``: the probe figures that moved
    on the same machine, measured vs recorded (any status). ``notes``: why something was not compared.
    """

    status: str  # one of STATUSES
    differences: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    speed: list[str] = field(default_factory=list)
    # measured / recorded of each probe figure in ``speed``
    ratios: list[float] = field(default_factory=list)

    def summary(self) -> str:
        """One line: the identity differences (and probe figures) joined, else the notes, else that the
        machines match."""
        if self.differences:
            return "; ".join(self.differences + self.speed)
        if self.notes:
            return "; ".join(self.notes)
        return "same hardware as the recording machine"

    def speed_said(self) -> str:
        """The probe figures that moved on the same machine, in words ("" : none moved beyond its noise)."""
        return "; ".join(self.speed)


def _fmt(value: Any) -> str:
    """A number without a needless ".0"; anything else as str."""
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else f"{value:g}"
    return str(value)


def robust_cv(values: Sequence[float]) -> float:
    """1.4826 * MAD / median (0 when fewer than 2 values or a non-positive median)."""
    vals = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    if len(vals) < 2:
        return 0.0
    med = statistics.median(vals)
    if med <= 0:
        return 0.0
    return robust_sd(vals) / med


def robust_sd(values: Sequence[float]) -> float:
    """A standard deviation estimated robustly: 1.4826 x the median absolute deviation (one value a busy host
    disturbed does not widen it)."""
    mid = statistics.median(values)
    return MAD_TO_SIGMA * statistics.median(abs(x - mid) for x in values)


def pooled_cv(a: Sequence[float], b: Sequence[float]) -> float:
    """Both sides' robust CVs pooled, weighting each by its degrees of freedom."""
    na, nb = max(len(a) - 1, 0), max(len(b) - 1, 0)
    if na + nb == 0:
        return 0.0
    return math.sqrt((na * robust_cv(a) ** 2 + nb * robust_cv(b) ** 2) / (na + nb))


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _identity(node: str, m: Mapping[str, Any], r: Mapping[str, Any]) -> list[str]:
    """Exact facts about the CPU, memory and GPUs that differ, measured vs recorded."""
    out: list[str] = []
    mc, rc = m.get("cpu") or {}, r.get("cpu") or {}

    def both(key: str) -> bool:
        return mc.get(key) is not None and rc.get(key) is not None and mc[key] != rc[key]

    if both("model_name"):
        out.append(f"{node}: CPU {mc['model_name']} vs {rc['model_name']}")
    if both("vendor"):
        out.append(f"{node}: CPU vendor {mc['vendor']} vs {rc['vendor']}")
    fms = ("family", "model", "stepping")
    if all(mc.get(k) is not None and rc.get(k) is not None for k in fms) and \
            any(mc[k] != rc[k] for k in fms):
        out.append(f"{node}: CPU family/model/stepping {'/'.join(str(mc[k]) for k in fms)} vs "
                   f"{'/'.join(str(rc[k]) for k in fms)}")
    if mc.get("flags") is not None and rc.get("flags") is not None:
        missing = sorted(set(rc["flags"]) - set(mc["flags"]))
        extra = sorted(set(mc["flags"]) - set(rc["flags"]))
        parts = ([f"missing {', '.join(missing)}"] if missing else []) + \
                ([f"extra {', '.join(extra)}"] if extra else [])
        if parts:
            out.append(f"{node}: CPU flags {'; '.join(parts)} (vs the recording machine)")
    if both("cpus"):
        out.append(f"{node}: {mc['cpus']} CPUs vs {rc['cpus']}")
    if both("threads_per_core"):
        out.append(f"{node}: {mc['threads_per_core']} threads per core vs {rc['threads_per_core']}")
    if "cpu_quota" in mc and "cpu_quota" in rc and mc["cpu_quota"] != rc["cpu_quota"]:
        def quota(q: Any) -> str:
            return "unlimited" if q is None else f"{_fmt(q)} cores"
        out.append(f"{node}: cpu quota {quota(mc['cpu_quota'])} vs {quota(rc['cpu_quota'])}")
    mg, rg = _num(m.get("memory_gib")), _num(r.get("memory_gib"))
    if mg is not None and rg and abs(mg / rg - 1) > MEMORY_GIB_TOLERANCE:
        out.append(f"{node}: memory {mg:.1f} GiB vs {rg:.1f} GiB")
    out.extend(_gpus(node, m.get("gpus"), r.get("gpus")))
    return out


def _gpus(node: str, mg: Any, rg: Any) -> list[str]:
    """GPU count and per-GPU facts; a fact shared by every GPU is said once, without index."""
    if not isinstance(mg, list) or not isinstance(rg, list):
        return []
    out: list[str] = []
    if len(mg) != len(rg):
        out.append(f"{node}: {len(mg)} GPUs vs {len(rg)}")
    pairs = list(zip(mg, rg))
    found: dict[tuple[str, str, str], list[str]] = {}
    for i, (mgpu, rgpu) in enumerate(pairs):
        for key, label, unit in _GPU_FACTS:
            mv, rv = (mgpu or {}).get(key), (rgpu or {}).get(key)
            if mv is None or rv is None or mv == rv:
                continue
            fact = (label, f"{_fmt(mv)}{unit}", f"{_fmt(rv)}{unit}")
            found.setdefault(fact, []).append(str((mgpu or {}).get("index", i)))
    for (label, mv, rv), indexes in found.items():
        where = "" if len(indexes) == len(pairs) else f"GPU {','.join(indexes)} "
        out.append(f"{node}: {where}{label} {mv} vs {rv}")
    return out


def _busy(probe: Mapping[str, Any], busy_below: float) -> tuple[float | None, float | None, bool]:
    """(cpu_wall, throttled_s, shared cores) of one fingerprint."""
    cont = probe.get("contention") or {}
    cpu_wall = _num(cont.get("cpu_wall"))
    if cpu_wall is None:
        cpu_wall = _num((probe.get("compute") or {}).get("cpu_wall"))
    throttled = _num(cont.get("throttled_s"))
    shared = cpu_wall is not None and cpu_wall < busy_below and not (throttled or 0.0) > THROTTLED_S
    return cpu_wall, throttled, shared


def _performance(node: str, m: Mapping[str, Any], r: Mapping[str, Any],
                 perf_tolerance: float) -> tuple[list[str], list[str], list[float]]:
    """(differences, notes, ratio measured / recorded of each difference) of the probes' figures."""
    diffs: list[str] = []
    notes: list[str] = []
    ratios: list[float] = []
    for key, label, floor in _PERF_PROBES:
        mp, rp = m.get(key), r.get(key)
        if not isinstance(mp, Mapping) or not isinstance(rp, Mapping):
            continue
        if mp.get("kind") != rp.get("kind"):
            notes.append(f"{node}: {label} kinds differ ({mp.get('kind')} vs {rp.get('kind')}): "
                         "not compared")
            continue
        # "best" (the fastest trial, the cores' capability) where both sides have it: on a shared VM
        # the host slows whole seconds by 20-50% with no steal visible, which drags a median down
        field_ = "best" if mp.get("best") is not None and rp.get("best") is not None else "median"
        mv, rv = _num(mp.get(field_)), _num(rp.get(field_))
        if mv is None or rv is None or mv <= 0 or rv <= 0:
            continue
        ratio = mv / rv
        threshold = max(perf_tolerance, floor) if field_ == "best" else max(
            perf_tolerance, floor, NOISE_FACTOR * pooled_cv(mp.get("trials") or [], rp.get("trials") or []))
        if abs(ratio - 1) <= threshold:
            continue
        ratios.append(ratio)
        word = "slower" if ratio < 1 else "faster"
        unit = mp.get("unit") or ""
        diffs.append(f"{label} {round(abs(ratio - 1) * 100)}% {word} than at the recording "
                     f"({mv:.1f} vs {rv:.1f} {unit})".rstrip())
    return diffs, notes, ratios


@dataclass
class _Tally:
    """What the node-by-node comparison has found so far."""
    differences: list[str] = field(default_factory=list)  # identity facts
    notes: list[str] = field(default_factory=list)
    speed: list[str] = field(default_factory=list)  # probe figures that moved on the same identity
    ratios: list[float] = field(default_factory=list)  # measured / recorded of each of ``speed``
    busy: bool = False
    compared: bool = False


def compare(recorded: Mapping[str, dict] | None, measured: Mapping[str, dict], *,
            perf_tolerance: float = 0.25, busy_below: float = 0.85) -> FingerprintComparison:
    """Compare the fingerprints stored with a baseline (``recorded``) with ``measured`` ones."""
    if not recorded:
        return FingerprintComparison("unknown", notes=[
            "the baseline has no hardware fingerprint (recorded before fingerprints existed): "
            "machines not compared"])
    if not measured:
        return FingerprintComparison("unknown", notes=["no hardware fingerprint was measured: "
                                                       "machines not compared"])
    tally = _Tally()
    rec, mea = list(recorded.items()), list(measured.items())
    if len(rec) != len(mea):
        tally.differences.append(f"{len(mea)} nodes vs {len(rec)}")
    for (node, m), (_rnode, r) in zip(mea, rec):
        _compare_node(tally, node, m, r, perf_tolerance, busy_below)
    if not tally.compared and not tally.differences:
        return FingerprintComparison("unknown", tally.differences, tally.notes)
    status = "differs" if tally.differences else "busy" if tally.busy else "same"
    return FingerprintComparison(status, tally.differences, tally.notes, tally.speed, tally.ratios)


def _compare_node(tally: _Tally, node: str, m: dict, r: dict, perf_tolerance: float, busy_below: float) -> None:
    """One node's measured fingerprint ``m`` against its recorded ``r``: identity, then performance
    unless either probe ran on busy cores."""
    if not m or not r:
        tally.notes.append(f"{node}: no {'measured' if not m else 'recorded'} fingerprint: not compared")
        return
    tally.compared = True
    if m.get("probe_version") != r.get("probe_version"):
        tally.notes.append(f"{node}: probe version {m.get('probe_version')} vs "
                           f"{r.get('probe_version')}: compared where the fields agree")
    tally.differences.extend(_identity(node, m, r))
    cpu_wall, throttled, shared = _busy(m, busy_below)
    rec_wall, _, rec_shared = _busy(r, busy_below)
    if shared:
        tally.busy = True
        tally.notes.append(f"{node}: the cores were busy during the probe (cpu/wall {cpu_wall:.2f}): "
                           "performance not compared")
        return
    if rec_shared:
        tally.busy = True
        tally.notes.append(f"{node}: the recording machine's cores were busy during its probe "
                           f"(cpu/wall {rec_wall:.2f}): performance not compared")
        return
    perf, perf_notes, perf_ratios = _performance(node, m, r, perf_tolerance)
    tally.notes.extend(perf_notes)
    capped = throttled is not None and throttled > THROTTLED_S
    if perf and capped:  # the quota, not the host's moment, held the cores back: another machine's shape
        tally.differences.append(f"{node}: CPU time capped by a cgroup quota during the probe "
                                 f"(throttled {throttled:.2f} s); " + "; ".join(perf))
        return
    tally.speed.extend(f"{node}: {d}" for d in perf)
    tally.ratios.extend(perf_ratios)
    if capped:
        tally.notes.append(f"{node}: CPU time capped by a cgroup quota during the probe (throttled {throttled:.2f} s)")
