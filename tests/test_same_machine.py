"""The same machine at another speed is the same machine (issue #63): the gate judges a case whose host's
hardware probe moved since the recording, and the attribution says the probe's figures beside the
throughput's; another machine (an identity fact differs) is not judged, every measured metric's figures kept.
No launch: the gate and the attribution on a real session's results.json (tests/data/history) against a
baseline file written here with known runs and the recording machine's fingerprint."""
from __future__ import annotations

import copy
import dataclasses
import json
import types
from pathlib import Path

import pytest

from pytest_dlperf.ab.options import ConfirmOptions
from pytest_dlperf.baselines import BaselineStore, Entry
from pytest_dlperf.clusters.base import Node
from pytest_dlperf.nodechecks.hardware import Fingerprints
from pytest_dlperf.results.cases import CaseResult, result_from_dict
from pytest_dlperf.results.verdict import Outcome, VerdictStatus
from pytest_dlperf.session import confirm
from pytest_dlperf.session.confirm import Confirmation, Lookups
from pytest_dlperf.session.gate import Gate
from pytest_dlperf.session.gate_options import GateOptions
from pytest_dlperf.software.identity import NodeSoftware, Repository, Software

DATA = Path(__file__).parent / "data" / "history" / "results.json"
NODES = [Node("local0", "127.0.0.1", 1, cpus=1, extra={"cpu_model": "AMD EPYC"})]  # the recording's node
ITEM = types.SimpleNamespace(nodeid="suite::test_train[resnet50-1n1g]", get_closest_marker=lambda name: None)
NODE_SW = NodeSoftware("/usr/bin/python3", "3.11.7", {"torch": "2.13.0+cpu", "numpy": "2.1.0"}, {"OMP_NUM_THREADS": "1"})
SOFTWARE = Software((NODE_SW,), {"workload:torch_ddp.py": "aaaa"}, Repository("1" * 40), "0.1.0", {"backend": "gloo"})
# the recording: 5 runs at 11.2-11.3 samples/s, peak memory 1.50-1.51 GiB
BASE_RUNS = [11.22, 11.31, 11.25, 11.28, 11.20]
BASE_PEAK = [1.50 * 2 ** 30, 1.51 * 2 ** 30, 1.50 * 2 ** 30, 1.505 * 2 ** 30, 1.50 * 2 ** 30]
HALF = [5.62, 5.66, 5.60]  # this session: half the throughput ...
PEAK = [1.50 * 2 ** 30, 1.505 * 2 ** 30, 1.50 * 2 ** 30]  # ... the same peak memory


def session_case(throughputs: list[float], peaks: list[float]) -> CaseResult:
    """The recorded session's 1n1g case (tests/data/history) with these runs, judged as measured (no pace:
    the pace probe's own HOST path is tests/test_local_training.py's)."""
    doc = json.loads(DATA.read_text())
    d = copy.deepcopy(doc["cases"][0])
    assert d["case"]["topology"] == "1n1g"
    d["runs"] = [{**d["runs"][0], "repeat": i, "pace": None, "node_paces": {}} for i in range(len(throughputs))]
    d.pop("paces", None)
    d["throughputs"], d["median"] = throughputs, sorted(throughputs)[len(throughputs) // 2]
    d["mean"] = sum(throughputs) / len(throughputs)
    d["verdict"] = None
    d["metrics"] = {"peak_memory": {"values": peaks}}
    return result_from_dict(d)


def recorded_fingerprint() -> dict[str, dict]:
    """The recording machine's hardware fingerprint, as its session probed it (a 1-core AMD EPYC VM)."""
    doc = json.loads(DATA.read_text())
    return {"local0": doc["environment"]["hardware_fingerprints"]["nodes"]["local0"]}


def at_speed(fps: dict[str, dict], factor: float) -> dict[str, dict]:
    """The same fingerprints with the matmul probe's figures scaled by ``factor`` (the host's speed)."""
    out = copy.deepcopy(fps)
    for fp in out.values():
        c = fp["compute"]
        c["trials"] = [t * factor for t in c["trials"]]
        c["median"] *= factor
        c["best"] *= factor
    return out


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A baseline file of the case with known runs, the recording machine's fingerprint and its software."""
    result = session_case(BASE_RUNS, BASE_PEAK)
    entry = Entry.from_result(result, None, {"torch": "2.13.0+cpu", "pytest_dlperf": "0.1.0"})
    assert entry.values("throughput") == BASE_RUNS and entry.values("peak_memory") == BASE_PEAK
    fingerprints = Fingerprints(recorded_fingerprint())
    entry.machine, entry.software = fingerprints.machine_id, SOFTWARE.id
    directory = tmp_path / "baselines"
    profile = "cpu-amd-epyc-1c-torch2"
    BaselineStore(directory).update(profile, {entry.key: entry}, description="written by the test",
                                    machines={entry.machine: fingerprints.nodes}, software={SOFTWARE.id: SOFTWARE})
    assert [p.name for p in directory.glob("*.json")] == [f"{profile}.json"]
    return directory


def gate_of(directory: Path) -> Gate:
    return Gate(GateOptions(update=False, profile=None, directory=directory, tolerance={}, missing="fail",
                            noisy_fails=True, hardware_fails=True), lambda case: ("torch",))


def test_the_same_machine_at_half_its_probe_speed_is_judged_and_the_verdict_carries_its_speed(store):
    gate = gate_of(store)
    result = session_case(HALF, PEAK)
    judged = gate.judge(result, NODES, ITEM, Fingerprints(at_speed(recorded_fingerprint(), 0.5)), software=SOFTWARE)
    first = judged.verdicts[0]
    assert first.metric == "throughput" and first.status is VerdictStatus.REGRESSION, judged.message
    assert judged.outcome is Outcome.FAIL  # the screen's failure, for the attribution to settle
    assert first.change == pytest.approx(5.62 / 11.25 - 1)
    assert first.host_speed == ["local0: matmul probe 50% slower than at the recording (42.9 vs 85.9 GFLOP/s per core)"]
    assert result.verdict["throughput"].host_speed == first.host_speed  # results.json's verdict carries it too
    assert "HARDWARE" not in judged.message and "not the one that recorded" not in judged.message
    assert not any("NOT JUDGED" in n or "hardware differs" in n for n in gate.notes), gate.notes
    (peak,) = [v for v in judged.verdicts if v.metric == "peak_memory"]
    assert peak.status is VerdictStatus.PASS and peak.host_speed == []  # said once, on the primary verdict
    # faster by half, passing: judged as well, and its speed kept beside the pass
    faster = gate_of(store).judge(session_case(BASE_RUNS[:3], PEAK), NODES, ITEM,
                                  Fingerprints(at_speed(recorded_fingerprint(), 1.5)), software=SOFTWARE)
    assert faster.outcome is Outcome.PASS and faster.verdicts[0].status is VerdictStatus.PASS, faster.message
    assert faster.verdicts[0].host_speed == [
        "local0: matmul probe 50% faster than at the recording (128.8 vs 85.9 GFLOP/s per core)"]
    # at the recording's speed: nothing to say
    same = gate_of(store).judge(session_case(HALF, PEAK), NODES, ITEM, Fingerprints(recorded_fingerprint()),
                                software=SOFTWARE)
    assert same.verdicts[0].status is VerdictStatus.REGRESSION and same.verdicts[0].host_speed == []


def test_another_machine_is_not_judged_and_every_measured_metric_keeps_its_figures(store):
    gate = gate_of(store)
    other = at_speed(recorded_fingerprint(), 0.5)
    other["local0"]["cpu"]["model_name"] = "Intel Xeon Platinum 8369B"
    result = session_case(HALF, PEAK)
    judged = gate.judge(result, NODES, ITEM, Fingerprints(other), software=SOFTWARE)
    assert judged.outcome is Outcome.FAIL  # --dlperf-hardware fail
    assert [v.metric for v in judged.verdicts] == ["throughput", "peak_memory"]
    assert all(v.status is VerdictStatus.HARDWARE for v in judged.verdicts), judged.verdicts
    assert sorted(result.verdict) == ["peak_memory", "throughput"]
    first, peak = judged.verdicts
    for v in judged.verdicts:
        assert v.message.startswith(f"HARDWARE {result.case.id} {v.metric}: not judged: this machine is not the one "
                                    "that recorded the baseline (local0: CPU Intel Xeon Platinum 8369B vs AMD EPYC; "
                                    "local0: matmul probe 50% slower than at the recording"), v.message
        assert v.fails() is False and v.host_speed == []  # not judged: no attribution to say it in
    # the figures as measured, change and spread kept
    assert first.measured_median == pytest.approx(5.62) and first.baseline_median == pytest.approx(11.25)
    assert first.change == pytest.approx(5.62 / 11.25 - 1) and first.measured_n == 3 and first.baseline_n == 5
    assert first.p_value is not None and first.interval is not None
    assert peak.measured_median == pytest.approx(1.50 * 2 ** 30) and peak.baseline_median == pytest.approx(1.50 * 2 ** 30)
    assert peak.change == pytest.approx(0.0) and peak.measured_n == 3
    assert "Measured 1.611e+09 vs baseline 1.611e+09 (+0.0%)" in peak.message
    assert any("NOT JUDGED (hardware differs from the machine that recorded" in n for n in gate.notes), gate.notes
    # skipped where --dlperf-hardware skip, the same verdicts
    skip = Gate(GateOptions(update=False, profile=None, directory=store, tolerance={}, missing="fail",
                            noisy_fails=True, hardware_fails=False), lambda case: ("torch",))
    skipped = skip.judge(session_case(HALF, PEAK), NODES, ITEM, Fingerprints(other), software=SOFTWARE)
    assert skipped.outcome is Outcome.SKIP and [v.status for v in skipped.verdicts] == [VerdictStatus.HARDWARE] * 2


def test_the_attribution_says_the_probes_figures_beside_the_throughputs(store):
    gate = gate_of(store)
    result = session_case(HALF, PEAK)
    judged = gate.judge(result, NODES, ITEM, Fingerprints(at_speed(recorded_fingerprint(), 0.5)), software=SOFTWARE)
    base = gate.recorded(result, NODES, ITEM, None)
    assert base is not None and base.software == SOFTWARE
    v = confirm.host(judged.verdicts[0], base)
    assert v.status is VerdictStatus.HOST and v.confirmation["outcome"] == "host"
    assert v.message.startswith(f"HOST {result.case.id} throughput: nothing recorded differs from the recording")
    assert "this host ran 50.0% slower than when it recorded (throughput -50.0%)" in v.message
    probes = ("The same machine (its identity as recorded) at another speed: the hardware probe: local0: matmul "
              "probe 50% slower than at the recording (42.9 vs 85.9 GFLOP/s per core).")
    assert probes in v.message and v.confirmation["probes"] == probes
    assert v.message.index("throughput -50.0%") < v.message.index(probes)  # beside the throughput's change
    assert "not the one that recorded" not in v.message and "HARDWARE" not in v.message

    # the whole attribution (session.confirm.Confirmation): nothing recorded differs, so HOST with no launch,
    # failing under --dlperf-hardware fail
    said, notes = [], []
    lookups = Lookups(recorded=lambda r, item: gate.recorded(r, NODES, item, None), reachable=lambda c: True,
                      same_tree=lambda a, b: a == b, interpreter=lambda path, n: "not asked")
    options = ConfirmOptions(reference=None, max_pairs=0, min_pairs=0, alpha=0.05, undecided_fails=False)
    settled = Confirmation(options, None, lookups, hardware_fails=True, noisy_fails=True, say=said.append,
                           note=notes.append).settle(None, ITEM, result, judged, SOFTWARE, None)
    assert settled.outcome is Outcome.FAIL and settled.message.endswith("The case fails (--dlperf-hardware fail).")
    first = settled.verdicts[0]
    assert first.status is VerdictStatus.HOST and first.confirmation["probes"] == probes and said == []
    assert result.verdict["throughput"].status is VerdictStatus.HOST
    # a host at its recorded speed: HOST without a probe sentence (nothing moved beyond its noise)
    plain = gate_of(store).judge(session_case(HALF, PEAK), NODES, ITEM, Fingerprints(recorded_fingerprint()),
                                 software=SOFTWARE)
    v = confirm.host(plain.verdicts[0], base)
    assert "at another speed" not in v.message and v.confirmation["probes"] is None


def test_a_host_verdict_from_a_screen_too_noisy_to_judge_leads_with_that_not_a_speed(store):
    """A screen that failed as too noisy to judge (NOISY) becomes HOST where nothing recorded differs: its first
    sentence gives that reason, not "this host ran 0.5% slower", a speed the screen did not find."""
    gate = gate_of(store)
    result = session_case(HALF, PEAK)
    judged = gate.judge(result, NODES, ITEM, Fingerprints(recorded_fingerprint()), software=SOFTWARE)
    base = gate.recorded(result, NODES, ITEM, None)
    assert base is not None
    noisy = dataclasses.replace(judged.verdicts[0], status=VerdictStatus.NOISY, change=-0.005)
    v = confirm.host(noisy, base)
    assert v.status is VerdictStatus.HOST and "slower than when it recorded" not in v.message
    assert v.message.startswith(f"HOST {result.case.id} throughput: nothing recorded differs from the recording (")
    assert ("this session's launches disagreed more than the recording's did, so its screen could not judge "
            "throughput (-0.5% at the median): this host ran unsteadily, or something") in v.message
