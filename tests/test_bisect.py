"""``dlperf bisect``: the search and its resume with an injected probe, the steps file, the git items
of a real repository, the "ab" section of a results.json as docs/ab.md shows it, and the session
probe's subprocess handling with a stand-in interpreter (no real A/B session runs here)."""
from __future__ import annotations

import io
import json
import os
import shlex
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_dlperf import cli
from pytest_dlperf.bisect import ProbeError, UsageError
from pytest_dlperf.bisect.command import Request, identity_args, run
from pytest_dlperf.bisect.evidence import CaseEvidence, EvidenceError, ItemVerdict, parse_ab, read_ab
from pytest_dlperf.bisect.items import Item, git_items, python_items
from pytest_dlperf.bisect.probe import ProbeOutcome, SessionProbe
from pytest_dlperf.bisect.steps import Found, Next, NotBad, next_step

G, B, U = ItemVerdict.GOOD, ItemVerdict.BAD, ItemVerdict.UNDECIDED

# docs/ab.md's example "ab" section (contract 1), as a session writes it into results.json
AB_DOC = {
    "contract": 1,
    "sides": {"reference": {"name": "reference", "spec": "current", "python": None, "env": {},
                            "rev": None, "repo": None, "commit": None},
              "candidate": {"name": "candidate", "spec": "rev=HEAD", "python": None, "env": {},
                            "rev": "HEAD", "repo": "/path/to/repo", "commit": "0123456789abcdef"}},
    "method": {"alpha": 0.05, "tolerance": 0.02, "min_pairs": 3, "max_pairs": 20, "undecided": "pass"},
    "cases": {
        "ddp/resnet50-fp32-bs64-224px-1n2g": {
            "verdict": "slower", "ratio": 0.951, "low": 0.932, "high": 0.970, "pairs": 7,
            "complete": True, "reason": "...",
            "differences": ["torch 2.13.0 -> 2.14.0", "env NCCL_ALGO: (unset) -> Tree"],
            "pairs_taken": [{"index": 0, "first": "reference", "ratio": 0.95,
                             "reference": {"throughput": 14.1, "started_at": 1764150000.0, "run_dir": "..."},
                             "candidate": {"throughput": 13.4, "started_at": 1764150012.0, "run_dir": "..."}}]},
    },
    "scaling": {"ddp/resnet50-fp32-bs64-224px-1n2g": {"verdict": "same", "ratio": 1.0, "low": 0.98, "high": 1.02,
                                                      "pairs": 7}},
}


def case(verdict: str, ratio: float | None = 1.0, pairs: int = 5) -> CaseEvidence:
    if ratio is None:
        return CaseEvidence(verdict, None, None, None, pairs)
    return CaseEvidence(verdict, ratio, ratio - 0.01, ratio + 0.01, pairs)


# --- the search itself ------------------------------------------------------------------------------

def test_the_bad_end_is_probed_first_and_a_good_one_means_nothing_to_bisect():
    assert next_step(9, {}) == Next(8)
    assert next_step(9, {8: U}) == Next(8)  # undecided decides nothing: probed again
    assert next_step(9, {8: G}) == NotBad()


def test_binary_search_walks_to_the_first_bad_item():
    assert next_step(9, {8: B}) == Next(4)
    assert next_step(9, {8: B, 4: G}) == Next(6)
    assert next_step(9, {8: B, 4: G, 6: B}) == Next(5)
    assert next_step(9, {8: B, 4: G, 6: B, 5: G}) == Found(first_bad=6, last_good=5)
    assert next_step(2, {1: B}) == Found(first_bad=1, last_good=0)
    assert next_step(9, {8: B, 4: B, 2: B, 1: B}) == Found(first_bad=1, last_good=0)


# --- the loop with an injected probe -------------------------------------------------------------

@dataclass
class FakeProbe:
    """Items at index >= ``first_bad`` are slower; ``undecided`` items are undecided (once each when
    ``undecided_once``); every call is kept."""

    items: list[str]
    first_bad: int
    undecided: set[int] = field(default_factory=set)
    max_pairs: int | None = 20
    calls: list[int] = field(default_factory=list)

    def __call__(self, item: Item) -> ProbeOutcome:
        i = self.items.index(item.key)
        self.calls.append(i)
        if i in self.undecided:
            cases = {"ddp/a": case("same", 1.0), "ddp/b": case("undecided", 0.985, self.max_pairs or 9)}
            return ProbeOutcome(U, cases, self.max_pairs)
        cases = {"ddp/a": case("same", 1.0), "ddp/b": case("slower" if i >= self.first_bad else "faster",
                                                             0.9 if i >= self.first_bad else 1.05)}
        return ProbeOutcome(B if i >= self.first_bad else G, cases, self.max_pairs)


PYTHONS = [f"/envs/n{i}/bin/python" for i in range(10)]


def bisect(tmp_path: Path, probe: FakeProbe, args: list[str] | None = None, steps: str = "steps.json",
           pythons: list[str] = PYTHONS) -> tuple[int, str, str]:
    request = Request(tmp_path / steps, list(args or ["suites/", "-k", "resnet"]), pythons=pythons, cwd=tmp_path)
    out, err = io.StringIO(), io.StringIO()
    code = run(request, probe, out, err)
    return code, out.getvalue(), err.getvalue()


def test_finds_the_first_bad_item_with_its_evidence_and_writes_every_probe(tmp_path):
    probe = FakeProbe(PYTHONS, first_bad=7)
    code, out, err = bisect(tmp_path, probe)
    assert (code, err) == (0, "")
    assert probe.calls == [9, 4, 6, 7]  # the bad end first, then halving 0..9
    assert f"dlperf bisect: first bad: {PYTHONS[7]}\n    ddp/a: same: ratio 1.000 [0.990, 1.010], 5 pairs\n" \
           f"    ddp/b: slower: ratio 0.900 [0.890, 0.910], 5 pairs\n" in out
    assert f"dlperf bisect: last good: {PYTHONS[6]}\n" in out
    assert len([line for line in out.splitlines() if line.startswith("dlperf bisect: probe ")]) == 4
    doc = json.loads((tmp_path / "steps.json").read_text())
    assert doc["command"] == {"kind": "pythons", "pythons": PYTHONS, "pytest_args": ["suites/", "-k", "resnet"],
                              "cwd": str(tmp_path)}
    assert [i["item"] for i in doc["items"]] == PYTHONS
    assert [(p["index"], p["verdict"]) for p in doc["probes"]] == [(9, "bad"), (4, "good"), (6, "good"), (7, "bad")]
    assert doc["probes"][3]["cases"]["ddp/b"] == {"verdict": "slower", "ratio": 0.9, "low": 0.89, "high": 0.91,
                                                  "pairs": 5, "complete": True}
    assert all(p["started_at"] <= p["finished_at"] for p in doc["probes"])
    # run again: the answer from the steps file, no probe
    again = FakeProbe(PYTHONS, first_bad=7)
    code, out2, _ = bisect(tmp_path, again)
    assert (code, again.calls) == (0, []) and f"first bad: {PYTHONS[7]}" in out2


def test_the_first_item_after_good_can_be_the_first_bad(tmp_path):
    code, out, _ = bisect(tmp_path, FakeProbe(PYTHONS[:2], first_bad=1), pythons=PYTHONS[:2])
    assert code == 0
    assert f"first bad: {PYTHONS[1]}" in out and f"last good: {PYTHONS[0]} (--good, every probe's reference)" in out


def test_a_bad_end_that_is_not_slower_stops_after_one_probe(tmp_path):
    probe = FakeProbe(PYTHONS, first_bad=99)
    code, out, _ = bisect(tmp_path, probe)
    assert code == 1 and probe.calls == [9]
    assert f"nothing to bisect: {PYTHONS[9]} (the bad end) is not slower than {PYTHONS[0]}" in out
    assert "first bad:" not in out


def test_an_undecided_probe_stops_the_search_and_names_no_first_bad(tmp_path):
    probe = FakeProbe(PYTHONS, first_bad=7, undecided={6})
    code, out, _ = bisect(tmp_path, probe)
    assert code == 1 and probe.calls == [9, 4, 6]
    assert "first bad:" not in out and "last good:" not in out
    assert f"stopped undecided at item 6/9 {PYTHONS[6]}" in out
    assert "    ddp/b: undecided: ratio 0.985 [0.975, 0.995], 20 pairs\n" in out
    assert "ddp/a" not in out.split("stopped undecided")[1]  # only the undecided case is named there
    rerun = out.splitlines()[-1].strip()
    assert rerun == (f"dlperf bisect --pythons {','.join(PYTHONS)} --steps {tmp_path / 'steps.json'} -- suites/ "
                     "-k resnet --dlperf-ab-max-pairs=40")
    doc = json.loads((tmp_path / "steps.json").read_text())
    assert [p["verdict"] for p in doc["probes"]] == ["bad", "good", "undecided"]


def test_resume_with_more_pairs_skips_the_decided_probes_and_reprobes_the_undecided(tmp_path):
    bisect(tmp_path, FakeProbe(PYTHONS, first_bad=7, undecided={6}))
    probe = FakeProbe(PYTHONS, first_bad=7)
    code, out, err = bisect(tmp_path, probe, ["suites/", "-k", "resnet", "--dlperf-ab-max-pairs", "40"])
    assert (code, err) == (0, "")
    assert probe.calls == [6, 7]  # 9 and 4 were decided in the first run
    assert "(2 decided already)" in out and f"first bad: {PYTHONS[7]}" in out
    doc = json.loads((tmp_path / "steps.json").read_text())
    assert [(p["index"], p["verdict"]) for p in doc["probes"]] == [(9, "bad"), (4, "good"), (6, "undecided"),
                                                                   (6, "good"), (7, "bad")]
    assert doc["probes"][3]["pytest_args"] == ["suites/", "-k", "resnet", "--dlperf-ab-max-pairs", "40"]


def test_a_steps_file_of_another_command_is_refused_and_left_as_it_was(tmp_path):
    bisect(tmp_path, FakeProbe(PYTHONS, first_bad=7, undecided={6}))
    before = (tmp_path / "steps.json").read_text()
    probe = FakeProbe(PYTHONS, first_bad=7)
    code, out, err = bisect(tmp_path, probe, ["suites/", "-k", "bert"])
    assert code == 2 and probe.calls == [] and out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"dlperf bisect: the steps file {tmp_path / 'steps.json'} is another bisect's")
    assert err.rstrip().endswith("give --steps another file, or delete it")
    code, _, err = bisect(tmp_path, probe, pythons=PYTHONS[:5])
    assert code == 2 and "another bisect's" in err
    assert (tmp_path / "steps.json").read_text() == before
    # another steps file runs it
    code, _, _ = bisect(tmp_path, probe, ["suites/", "-k", "bert"], steps="bert.json")
    assert code == 0 and probe.calls == [9, 4, 6, 7]


def test_a_damaged_steps_file_is_refused_in_one_line(tmp_path):
    (tmp_path / "steps.json").write_text("{not json")
    code, _, err = bisect(tmp_path, FakeProbe(PYTHONS, first_bad=7))
    assert code == 2 and err.count("\n") == 1 and "cannot be read" in err and "delete it" in err
    (tmp_path / "steps.json").write_text(json.dumps({"results": []}))
    code, _, err = bisect(tmp_path, FakeProbe(PYTHONS, first_bad=7))
    assert code == 2 and "is not a dlperf bisect steps file" in err
    bisect(tmp_path, FakeProbe(PYTHONS, first_bad=7, undecided={4}), steps="ok.json")
    doc = json.loads((tmp_path / "ok.json").read_text())
    doc["probes"][0]["verdict"] = "maybe"
    (tmp_path / "ok.json").write_text(json.dumps(doc))
    code, _, err = bisect(tmp_path, FakeProbe(PYTHONS, first_bad=7), steps="ok.json")
    assert code == 2 and "is damaged" in err and "'maybe'" in err


def test_a_failed_probe_is_one_line_and_keeps_the_decided_ones(tmp_path):
    def probe(item: Item) -> ProbeOutcome:
        if item.key == PYTHONS[4]:
            raise ProbeError("probe-2 (x): pytest exited 4 (usage error); see log")
        return FakeProbe(PYTHONS, first_bad=7)(item)

    request = Request(tmp_path / "steps.json", ["suites/"], pythons=PYTHONS, cwd=tmp_path)
    out, err = io.StringIO(), io.StringIO()
    assert run(request, probe, out, err) == 3
    assert err.getvalue() == "dlperf bisect: probe-2 (x): pytest exited 4 (usage error); see log\n"
    assert out.getvalue().splitlines()[-1].endswith("... failed")
    doc = json.loads((tmp_path / "steps.json").read_text())
    assert [(p["index"], p["verdict"]) for p in doc["probes"]] == [(9, "bad")]


def test_an_unwritable_steps_directory_is_refused_before_any_probe(tmp_path):
    (tmp_path / "file").write_text("")
    probe = FakeProbe(PYTHONS, first_bad=7)
    code, _, err = bisect(tmp_path, probe, steps="file/steps.json")
    assert code == 2 and probe.calls == [] and "give --steps a writable path" in err


def test_identity_leaves_out_max_pairs_and_the_options_a_probe_sets_are_refused(tmp_path, capsys):
    assert identity_args(["a", "--dlperf-ab-max-pairs", "40", "-x", "--dlperf-ab-max-pairs=9"]) == ["a", "-x"]
    code = cli.main(["bisect", "--pythons", "a,b", "--steps", str(tmp_path / "s.json"), "--", "suites/",
                     "--dlperf-candidate=python=/x"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "--dlperf-candidate=python=/x: dlperf bisect sets --dlperf-candidate for each probe" in err
    assert not (tmp_path / "s.json").exists()


@pytest.mark.parametrize("argv, message", [
    (["--pythons", "/a"], "--pythons: give at least 2 interpreters"),
    (["--pythons", "/a,/b,/a"], "--pythons: /a given twice"),
    (["--pythons", "/a,,/b"], "an empty path"),
    (["--pythons", "/a,/b", "--repo", "."], "give either --pythons or --repo/--good/--bad, not both"),
    (["--repo", ".", "--good", "HEAD"], "give --repo PATH --good REF --bad REF"),
    (["--pythons", "/a,/b", "--install", "."], "--install PATH goes with --repo/--good/--bad"),
])
def test_usage_errors_are_one_line_exit_2(argv, message, tmp_path, capsys):
    assert cli.main(["bisect", *argv, "--steps", str(tmp_path / "s.json"), "--", "-x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_help_shows_both_usages():
    r = subprocess.run([sys.executable, "-m", "pytest_dlperf.cli", "bisect", "--help"], capture_output=True,
                       text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    assert r.returncode == 0
    assert "dlperf bisect --repo PATH --good REF --bad REF [--install PATH] [--steps FILE] -- <pytest arguments>" in r.stdout
    assert "dlperf bisect --pythons PY1,PY2,... [--steps FILE] -- <pytest arguments>" in r.stdout


# --- git items ------------------------------------------------------------------------------------

def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@localhost", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def commit(repo: Path, subject: str) -> str:
    (repo / "bench.txt").write_text(subject)
    git(repo, "add", "bench.txt")
    git(repo, "commit", "-q", "-m", subject)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """main: c0 c1 c2 M(merge of side: s1 s2) c3; returns the hashes by subject."""
    r = tmp_path / "repo with space"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    h = {s: commit(r, s) for s in ("c0", "c1", "c2")}
    git(r, "checkout", "-q", "-b", "side", h["c1"])
    h.update({s: commit(r, s) for s in ("s1", "s2")})
    git(r, "checkout", "-q", "main")
    git(r, "merge", "-q", "--no-ff", "-X", "theirs", "-m", "M", "side")
    h["M"] = git(r, "rev-parse", "HEAD")
    h["c3"] = commit(r, "c3")
    git(r, "tag", "v0", h["c0"])
    return r, h


def test_git_items_are_good_then_the_first_parent_commits_to_bad(repo):
    r, h = repo
    items = git_items(r, "v0", "main")
    assert [i.key for i in items] == [h["c0"], h["c1"], h["c2"], h["M"], h["c3"]]  # not s1, s2
    expected = git(r, "rev-list", "--first-parent", "--reverse", f"{h['c0']}..main").split()
    assert [i.key for i in items[1:]] == expected
    assert [i.label for i in items] == ["c0", "c1", "c2", "M", "c3"]
    assert shlex.split(items[3].spec) == [f"rev={h['M']}", f"repo={r}"]  # quoted: the path has a space
    assert items[4].full() == f"{h['c3']} c3" and items[4].describe() == f"{h['c3'][:12]} c3"


@pytest.mark.parametrize("good, bad, message", [
    ("v9", "main", "--good v9: no such commit in"),
    ("v0", "nope", "--bad nope: no such commit in"),
    ("main", "v0", "--good main is not an ancestor of --bad v0"),
    ("main", "main", "are the same commit"),
    ("--all", "main", "--good --all: not a commit"),
])
def test_git_items_refuse_bad_refs(repo, good, bad, message):
    with pytest.raises(UsageError) as info:
        git_items(repo[0], good, bad)
    assert message in str(info.value)


def test_the_cli_refuses_a_directory_that_is_no_repository_and_a_missing_one(tmp_path, capsys):
    for path, message in ((tmp_path, "not a git repository"), (tmp_path / "nope", "no such directory")):
        assert cli.main(["bisect", "--repo", str(path), "--good", "a", "--bad", "b", "--steps",
                         str(tmp_path / "s.json"), "--", "-x"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err


def test_python_items_keep_the_order_given():
    items = python_items(["/e/a b/python", "/e/c/python"])
    assert [i.key for i in items] == ["/e/a b/python", "/e/c/python"]
    assert shlex.split(items[0].spec) == ["python=/e/a b/python"] and items[0].describe() == "/e/a b/python"


# --- the "ab" section of results.json ---------------------------------------------------------------

def test_reads_the_ab_section_as_docs_ab_md_shows_it(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"cases": [], "environment": {}, "ab": AB_DOC}))
    ev = read_ab(path)
    assert ev.max_pairs == 20 and ev.verdict is B
    assert ev.cases == {"ddp/resnet50-fp32-bs64-224px-1n2g": CaseEvidence("slower", 0.951, 0.932, 0.970, 7, True)}
    assert ev.cases["ddp/resnet50-fp32-bs64-224px-1n2g"].describe() == "slower: ratio 0.951 [0.932, 0.970], 7 pairs"


def with_cases(**verdicts: str) -> dict:
    cases = {}
    for name, v in verdicts.items():
        cases[name] = {"verdict": v, "ratio": 0.99, "low": 0.95, "high": 1.03, "pairs": 20, "complete": True}
    return {"ab": {**AB_DOC, "cases": cases}}


@pytest.mark.parametrize("verdicts, item", [
    ({"a": "same", "b": "faster"}, G),
    ({"a": "same", "b": "undecided"}, U),
    ({"a": "undecided", "b": "slower"}, B),
    ({"a": "faster", "b": "slower"}, B),
])
def test_any_slower_case_makes_the_item_bad_else_any_undecided_undecided(verdicts, item):
    assert parse_ab(with_cases(**verdicts)).verdict is item


def test_an_undecided_case_may_have_no_ratio_yet_a_decided_one_must():
    doc = with_cases(a="undecided")
    doc["ab"]["cases"]["a"].update(ratio=None, low=None, high=None, pairs=0, complete=False)
    ev = parse_ab(doc)
    assert ev.verdict is U and ev.cases["a"].describe() == "undecided: no ratio, 0 pairs (interrupted)"
    doc = with_cases(a="slower")
    doc["ab"]["cases"]["a"]["ratio"] = None
    with pytest.raises(EvidenceError, match=r"'ab.cases.a': 'ratio' is None, not a positive number"):
        parse_ab(doc)


@pytest.mark.parametrize("doc, message", [
    ({"cases": []}, "no 'ab' section"),
    ({"ab": {**AB_DOC, "contract": 2}}, "'ab.contract' is 2"),
    ({"ab": {**AB_DOC, "cases": {}}}, "'ab.cases' is empty"),
    ({"ab": {**AB_DOC, "cases": {"x": {"verdict": "worse"}}}}, "'ab.cases.x': 'verdict' is 'worse'"),
])
def test_a_results_json_without_a_readable_ab_section_is_refused(doc, message):
    with pytest.raises(EvidenceError) as info:
        parse_ab(doc)
    assert message in str(info.value)


def test_a_missing_or_broken_results_json_names_the_file(tmp_path):
    with pytest.raises(EvidenceError, match="results.json: missing"):
        read_ab(tmp_path / "results.json")
    (tmp_path / "results.json").write_text("{")
    with pytest.raises(EvidenceError, match="results.json: not JSON"):
        read_ab(tmp_path / "results.json")


# --- the session probe, with a stand-in interpreter -------------------------------------------------

STAND_IN = """#!{python}
import json, os, sys
from pathlib import Path
args = sys.argv[1:]
report = Path(next(a.split("=", 1)[1] for a in args if a.startswith("--dlperf-report=")))
Path(os.environ["BISECT_ARGV"]).write_text(json.dumps(args))
print("collected 1 item")
mode = os.environ["BISECT_MODE"]
if mode == "sleep":  # a session being measured: SIGTERM unwinds it (as the plugin does) and it says so
    import signal, time
    def unwind(signum, frame):
        (report.parent / "unwound").write_text(str(signum))
        sys.exit(2)
    signal.signal(signal.SIGTERM, unwind)
    print("measuring", flush=True)
    time.sleep(60)
if mode.startswith("exit"):
    sys.exit(int(mode[4:]))
if mode != "none":
    report.mkdir(parents=True)
    case = {{"verdict": mode, "ratio": 0.9, "low": 0.88, "high": 0.92, "pairs": 6, "complete": True}}
    (report / "results.json").write_text(json.dumps({{"ab": {{"contract": 1, "cases": {{"ddp/x": case}}}}}}))
sys.exit(1 if mode == "slower" else 0)
"""


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    exe = tmp_path / "python"
    exe.write_text(STAND_IN.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("BISECT_ARGV", str(tmp_path / "argv.json"))
    return exe


def test_the_session_probe_runs_pytest_with_both_sides_and_reads_its_verdict(tmp_path, stand_in, monkeypatch):
    good = Item("a" * 40, "c0", "rev=" + "a" * 40 + " repo='/r r'")
    probed = Item("b" * 40, "c1", "rev=" + "b" * 40 + " repo='/r r'")
    probes = tmp_path / "steps-probes"
    probe = SessionProbe(good, ["suites/", "-k", "resnet"], probes, cwd=tmp_path, python=str(stand_in))
    monkeypatch.setenv("BISECT_MODE", "slower")
    outcome = probe(probed)
    assert outcome.verdict is B and outcome.cases["ddp/x"].ratio == 0.9
    assert (outcome.report_dir, outcome.log) == (probes / "probe-1", probes / "probe-1.log")
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert argv == ["-m", "pytest", "suites/", "-k", "resnet", f"--dlperf-reference={good.spec}",
                    f"--dlperf-candidate={probed.spec}", f"--dlperf-report={probes / 'probe-1'}"]
    log = (probes / "probe-1.log").read_text()
    assert log.startswith(f"# dlperf bisect probe-1: {probed.describe()}\n$ ") and "collected 1 item" in log
    monkeypatch.setenv("BISECT_MODE", "same")
    again = probe(probed)  # a fresh report directory: never the previous probe's results.json
    assert again.verdict is G and again.report_dir == probes / "probe-2"


@pytest.mark.parametrize("mode, message", [
    ("exit4", "pytest exited 4 (usage error); see {log} (report dir {dir})"),
    ("exit2", "pytest exited 2 (interrupted)"),
    ("none", "{dir}/results.json: missing: the session wrote no results; see {log}"),
])
def test_a_session_that_measured_nothing_is_a_probe_error_naming_its_log(tmp_path, stand_in, monkeypatch, mode,
                                                                          message):
    monkeypatch.setenv("BISECT_MODE", mode)
    probe = SessionProbe(Item("/g", "", "python=/g"), [], tmp_path / "p", python=str(stand_in))
    with pytest.raises(ProbeError) as info:
        probe(Item("/b", "", "python=/b"))
    text = str(info.value)
    assert text.startswith("probe-1 (/b): ") and "\n" not in text
    assert message.format(log=tmp_path / "p" / "probe-1.log", dir=tmp_path / "p" / "probe-1") in text


BISECT_SCRIPT = """
import sys
from pathlib import Path
from pytest_dlperf.bisect.command import Request, run
from pytest_dlperf.bisect.items import python_items
from pytest_dlperf.bisect.probe import SessionProbe
tmp, stand_in = Path(sys.argv[1]), sys.argv[2]
request = Request(tmp / "steps.json", [], pythons=["/g", "/b"], cwd=tmp)
sys.exit(run(request, SessionProbe(python_items(["/g", "/b"])[0], [], tmp / "steps-probes", python=stand_in)))
"""


def test_sigterm_ends_the_probes_session_cleanly_and_the_bisect_with_130(tmp_path, stand_in):
    env = {**os.environ, "BISECT_MODE": "sleep", "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.Popen([sys.executable, "-c", BISECT_SCRIPT, str(tmp_path), str(stand_in)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = tmp_path / "steps-probes" / "probe-1.log"
    deadline = time.monotonic() + 30
    while not (log.exists() and "measuring" in log.read_text()):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.terminate()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, (out, err)
    assert (tmp_path / "steps-probes" / "unwound").read_text() == str(int(signal.SIGTERM))  # not killed
    assert err == "dlperf bisect: interrupted; no probe was decided\n"  # and no steps file written
    assert out.splitlines()[-1].endswith("... interrupted")
    assert not (tmp_path / "steps.json").exists()
