"""What ``--update-baselines`` (or ``--dlperf-baseline-missing record``) keeps during a session and
writes at its end: only the entries of cases whose test passed, one locked atomic update per
profile; with ``--dlperf-record-sittings``, this session's runs added to the recorded sittings."""
from __future__ import annotations

from collections.abc import Callable

from .. import metrics
from ..baselines import BaselineStore, Entry, Tolerances
from ..baselines.fingerprint import FingerprintComparison, robust_cv
from ..baselines.rules import catch_rate
from ..baselines.store import SittingsError, add_sitting
from ..clusters.base import Node
from ..nodechecks.hardware import Fingerprints
from ..results.cases import CaseResult, ResultSet
from ..software.identity import Software, differences
from ..specs import Topology, profile_of

CATCH_DROP = 0.10  # at recording, the slow-down a baseline should let a default session catch ...
CATCH_TARGET = 0.95  # ... at least this often (the gate's target: 19 in 20), else the recording says so


class BaselineRecorder:
    """The entries a session records, until its end; ``note`` says what a reviewer should know."""

    def __init__(self, store: BaselineStore, sittings: int, cv_bound: float, note: Callable[[str], None]) -> None:
        self.store, self.sittings, self.cv_bound, self.note = store, sittings, cv_bound, note
        # nodeid -> (profile, key, entry, the session's fingerprints, the entry's software)
        self.pending: dict[str, tuple[str, str, Entry, Fingerprints | None, Software | None]] = {}
        self.written: dict[str, int] = {}
        self.recorded: dict[str, Entry] = {}  # case key -> the entry this session records for it

    def keep(self, nodeid: str, profile: str, result: CaseResult, new: Entry, old: Entry | None,
             comp: FingerprintComparison | None, reference: CaseResult | None, fingerprints: Fingerprints | None,
             tol: Tolerances, nodes: list[Node], software: Software | None = None,
             old_software: Software | None = None) -> None:
        """Keep the case's new entry, to be written if its test passes (SittingsError: it cannot be), with
        the software it ran (``software``; ``old_software``: the recorded entry's, which a sitting must match)."""
        new.software = software.id if software is not None else ""
        if old is not None and comp is not None and comp.status != "differs" and comp.speed:
            self.note(f"{result.case.id}: recorded on the machine of its last recording, at another speed by the "
                      f"hardware probe ({comp.speed_said()}): a later session is judged against this recording's "
                      "runs, and its probe figures only say how fast the host was")
        if self.sittings > 1 and old is not None:
            new = self.add_sitting(old, new, comp, reference, (old_software, software))
            new.software = software.id if software is not None else ""
        self.pending[nodeid] = (profile, result.case.key, new, fingerprints, software)
        self.recorded[result.case.key] = new
        self._noisy_recording(result, new, tol, nodes)

    def add_sitting(self, old: Entry, new: Entry, comp: FingerprintComparison | None,
                    reference: CaseResult | None, software: tuple[Software | None, Software | None] = (None, None)) -> Entry:
        """--dlperf-record-sittings K: this session's runs added to the recorded entry's last K-1 sittings,
        speedup and efficiency from the merged medians of the case and of its 1n1g recorded in this session
        (else left to ``fill_scaling``). SittingsError where the runs would not be of one machine and software
        (``software``: the recorded entry's and this session's)."""
        if comp is not None and comp.status == "differs":
            raise SittingsError(f"the recorded runs were taken on other hardware ({comp.summary()}): adding this "
                                "session's would mix two machines in one baseline. Record it without "
                                "--dlperf-record-sittings to start over on this machine.")
        same_software(*software)
        merged = add_sitting(old, new, self.sittings)
        if merged.case.topology.world_size == 1:
            _set_scaling(merged, {m.name: new.figure(m.name) for m in _STORED_SCALING})
        else:
            _scale_sittings(merged, self.recorded.get(reference.case.key) if reference is not None else None)
        return merged

    def _noisy_recording(self, result: CaseResult, entry: Entry, tol: Tolerances, nodes: list[Node]) -> None:
        """Say so when the runs a baseline is recorded from disagree, or spread so much that a later 10%
        slow-down would often pass: later drops must clear that spread to be called significant, so the
        baseline gates less closely than its tolerance says. How often is modelled with the gate's own test
        (``catch_rate``) for a session of the node kind's default repeats."""
        rcv = robust_cv(result.throughputs)
        repeats = profile_of(nodes).repeats
        rate = catch_rate(entry, CATCH_DROP, repeats, tol.get(metrics.PRIMARY.name), cv_bound=self.cv_bound)
        disagree, weak = rcv > self.cv_bound, rate is not None and rate < CATCH_TARGET
        if not (disagree or weak):
            return
        runs = ", ".join(f"{t:.4g}" for t in result.throughputs)
        head = (f"recorded from runs that disagree (robust CV {rcv:.1%} above the bound {self.cv_bound:.0%}: "
                f"{runs} {result.case.unit}): a later drop must clear that spread to be called a regression." if disagree
                else f"recorded from runs of robust CV {rcv:.1%} ({runs} {result.case.unit}).")
        catch = (f" Against them a session of {repeats} runs as spread would catch a {CATCH_DROP:.0%} slow-down "
                 f"in about {rate:.0%} of sessions (the gate's own test on 200 modelled sessions)."
                 if rate is not None else "")
        more = "" if disagree else ", or with more --dlperf-repeats"  # a spread more launches do not narrow
        self.note(f"{result.case.id}: {head}{catch} Record it again at a quieter moment{more}; or tell a smaller "
                  "slow-down side by side (--dlperf-confirm-when weak, A/B).")

    def test_finished(self, nodeid: str, passed: bool) -> None:
        """Only a case whose test passed is recorded (and gives a later case of its group its speedup)."""
        if not passed:
            dropped = self.pending.pop(nodeid, None)
            if dropped is not None:
                self.recorded.pop(dropped[1], None)

    def flush(self) -> None:
        """Write what --update-baselines collected, one locked atomic update per profile."""
        by_profile: dict[str, dict[str, Entry]] = {}
        machines: dict[str, dict[str, dict[str, dict]]] = {}
        software: dict[str, dict[str, Software]] = {}
        for profile, key, entry, fingerprints, sw in self.pending.values():
            if fingerprints is not None and fingerprints.nodes:
                entry.machine = fingerprints.machine_id
                machines.setdefault(profile, {})[entry.machine] = fingerprints.nodes
            if sw is not None:
                software.setdefault(profile, {})[sw.id] = sw
            by_profile.setdefault(profile, {})[key] = entry
        self.pending.clear()
        for profile, entries in by_profile.items():
            self.store.update(profile, entries, description=None if self.store.exists(profile) else
                              f"recorded with pytest-dlperf on profile {profile}",
                              machines=machines.get(profile), software=software.get(profile))
            self.written[profile] = len(entries)

    def fill_scaling(self, results: ResultSet) -> int:
        """Under xdist each worker recorded its cases without the others' 1n1g, so without a
        speedup; the controller, which has every result, adds speedup and efficiency to the entries
        this session wrote (the same per-run throughputs; of several sittings, the last sitting's) that
        lack them: the session's own, or of several sittings from the merged medians. Returns how many."""
        filled = 0
        for profile in self.written:
            current = self.store.load(profile)
            add: dict[str, Entry] = {}
            for r in results.results:
                e = current.get(r.case.key)
                if e is None or e.figure(_FIRST.name) is not None or r.value(_FIRST.name) is None:
                    continue
                runs = e.values(metrics.PRIMARY.name)
                last = runs[-e.sittings[-1]["runs"]:] if e.sittings else runs
                if [float(x) for x in last] != [float(x) for x in r.throughputs]:
                    continue
                if len(e.sittings) > 1:
                    base = results.find(r.case, Topology(1, 1))
                    if not _scale_sittings(e, current.get(base.case.key) if base is not None else None):
                        continue
                else:
                    _set_scaling(e, {m.name: r.value(m.name) for m in _STORED_SCALING})
                add[r.case.key] = e
            if add:
                self.store.update(profile, add)
                filled += len(add)
        return filled


def same_software(recorded: Software | None, now: Software | None) -> None:
    """SittingsError where this session's runs would join runs of other software (or of software not
    recorded: nothing could then say the sittings ran one software)."""
    if recorded is None or now is None:
        which = "the recorded runs'" if recorded is None else "this session's"
        raise SittingsError(f"{which} software is not recorded (recorded before pytest-dlperf recorded software, or "
                            "a node's software probe failed), so the sittings cannot be shown to run one software. "
                            "Record it without --dlperf-record-sittings to start over")
    differ = differences(recorded, now)
    if differ:
        raise SittingsError(f"the recorded runs were taken with other software ({'; '.join(d.text for d in differ)}): "
                            "adding this session's would mix two software versions in one baseline. Record it "
                            "without --dlperf-record-sittings to start over with this software's runs")


def _scale_sittings(entry: Entry, reference: Entry | None) -> bool:
    """Speedup and efficiency of an entry of several sittings from its merged median and its 1n1g's,
    where that 1n1g holds as many sittings; else none (False)."""
    if reference is None or max(1, len(reference.sittings)) != len(entry.sittings):
        _set_scaling(entry, {})
        return False
    derived: dict[str, float | None] = {}
    at = {Topology(1, 1): reference.figure(metrics.PRIMARY.name)}
    for m in _STORED_SCALING:
        derived[m.name] = m.derive(metrics.ScalingInputs(entry.figure(metrics.PRIMARY.name), entry.case.topology,
                                                         at.get, derived))
    _set_scaling(entry, derived)
    return True


# the gated scaling metrics a baseline entry keeps as one figure (speedup, efficiency), in order
_STORED_SCALING = metrics.kept_as_figure()
_FIRST = _STORED_SCALING[0]


def _set_scaling(entry: Entry, values: dict[str, float | None]) -> None:
    """The entry's stored scaling figures (None: not known yet, as for a case recorded alone)."""
    for m in _STORED_SCALING:
        value = values.get(m.name)
        if value is None:
            entry.stated.pop(m.name, None)
        else:
            entry.stated[m.name] = float(value)
