"""dlperf history: the site built from recorded results (tests/data/history, a real gated run of two
ddp cases, made into nights by tests/history_runs.py), opened from disk by headless chromium."""
from __future__ import annotations

import datetime as dt
import json
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import plotly.graph_objects as go
import pytest
from PIL import Image

from pytest_dlperf import cli
from pytest_dlperf.history import HistoryError, build_site
from pytest_dlperf.history import changepoints, charts, overview
from pytest_dlperf.history.hrefs import run_href
from pytest_dlperf.history.logtimes import latest_time
from pytest_dlperf.history.model import History
from pytest_dlperf.history.sources import read_all
from pytest_dlperf.history.steps import find_steps

from . import browser
from .history_runs import Plan, commit_of, write

CASE = "cases/ddp__resnet50-fp32-bs2-32px-2n1g.html"
DATA = Path(__file__).resolve().parent / "data"
PEERS = DATA / "peers"
REGRESSION_RGB = (214, 39, 40)  # charts.MARKED["regression"]
BAND_RGB = (215, 231, 242)  # PALETTE[0] at 0.18 over white


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """12 nights: a 25% drop from night 6, another machine from night 9."""
    tmp = tmp_path_factory.mktemp("history")
    paths = write(Plan(nights=12, regression_at=6, machine_at=9), tmp / "ci")
    assert cli.main(["history", str(tmp / "ci"), "-o", str(tmp / "site")]) == 0
    return tmp / "site", paths


@pytest.fixture(scope="module")
def own_hosts(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    return browser.own_hosts(tmp_path_factory.mktemp("blank"))


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[browser.Devtools, browser.Requests]]:
    """One chromium for this module's tests, driven over DevTools, its network blocked: every request
    but a file:// load under the tests' directories (the sites they build) is failed and kept, and the
    proxy behind it answers nothing."""
    with browser.offline() as proxy:
        tools = browser.Devtools(tmp_path_factory.mktemp("chromium") / "profile", proxy,
                                 tmp_path_factory.getbasetemp())
        try:
            yield tools, proxy
        finally:
            tools.close()


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask


def _count(png: Path, rgb: tuple[int, int, int], within: int = 12) -> list[tuple[int, int]]:
    """The (x, y) of every pixel near the colour (each channel within ``within``)."""
    import numpy as np

    pixels = np.asarray(Image.open(png).convert("RGB"), dtype=int)
    ys, xs = np.nonzero((np.abs(pixels - np.array(rgb)) <= within).all(axis=2))
    return list(zip(xs.tolist(), ys.tolist()))


@pytest.mark.needs_setup  # opens pages in chromium (tests/setup.sh installs it): not in the quick tier
def test_a_case_page_shows_its_line_band_and_the_regression_marked(site, tools, own_hosts, tmp_path) -> None:
    root, _ = site
    devtools, proxy = tools
    devtools.resize(1300, 700)
    devtools.open(root / CASE)
    shot, page = devtools.screenshot(tmp_path / "case.png"), devtools.dom()
    assert devtools.attempted == [] and proxy.page_requests(own_hosts) == [], "the page asked the network"
    red, band = _count(shot, REGRESSION_RGB), _count(shot, BAND_RGB)
    assert len(band) > 3000, f"the tolerance band is not drawn ({len(band)} pixels of its colour)"
    assert len(red) > 400, f"no regression is marked ({len(red)} pixels of its colour)"
    # the marks are right of the band's first stretch: the nights before the drop passed
    assert min(x for x, _ in red) > min(x for x, _ in band) + 200
    assert re.search(r'class="legendtext"[^>]*>regression<', page), "no regression entry in the chart's legend"
    for said in ("tolerance band: cpu-amd-epyc", "baseline as judged", "machine change",
                 "Scaling efficiency", "over commits"):
        assert said in page, f"{said!r} is not on the case page"


@pytest.mark.needs_setup  # opens pages in chromium (tests/setup.sh installs it): not in the quick tier
def test_the_check_sees_a_page_that_asks_the_network(own_hosts, tmp_path) -> None:
    page = tmp_path / "remote.html"
    page.write_text('<!DOCTYPE html><html><body><script src="http://cdn.dlperf.test/plotly.js"></script></body></html>')
    with browser.offline() as proxy:
        browser.dom(page, proxy, tmp_path / "profile")
    assert any("cdn.dlperf.test" in line for line in proxy.page_requests(own_hosts))


@pytest.mark.needs_setup  # opens pages in chromium (tests/setup.sh installs it): not in the quick tier
def test_a_run_page_says_what_changed_its_percentiles_and_links_its_files(site, tools, own_hosts) -> None:
    root, paths = site
    night = 4  # its commit differs from night 3's (a commit every two nights)
    run_page = next(p for p in (root / "runs").glob("20260105T*.html"))
    devtools, proxy = tools
    devtools.open(run_page)
    page = devtools.dom()
    assert devtools.attempted == [] and proxy.page_requests(own_hosts) == []
    assert f"git {commit_of(night - 1)} -&gt; {commit_of(night)}" in page
    for said in ("step p50 (s)", "p95", "AMD EPYC, 1 CPUs", "matmul probe", "regression" if night >= 6 else "pass"):
        assert said in page
    href = re.search(r'<a href="([^"]+results\.json)"', page).group(1)
    assert (run_page.parent / href).resolve() == paths[night].resolve()


@pytest.mark.needs_setup  # opens pages in chromium (tests/setup.sh installs it): not in the quick tier
def test_the_ladder_sets_a_run_beside_another_with_the_ideal_line(site, tools, own_hosts) -> None:
    root, _ = site
    devtools, proxy = tools
    devtools.resize(1300, 900)
    devtools.open(root / "models" / "ddp__resnet50-fp32-bs2-32px.html")
    page = devtools.dom()
    assert devtools.attempted == [] and proxy.page_requests(own_hosts) == []
    assert "ideal (linear from 1n1g)" in page
    assert page.count("run: 2026-01-") and page.count("against: 2026-01-")
    lines = re.search(r'<select id="line">(.*?)</select>', page, re.S).group(1)
    assert lines.count("<option") == 2 and "Platinum 8369B" in lines  # the two machines' lines to choose from


def test_runs_of_two_machines_are_never_one_line(site) -> None:
    _, paths = site
    runs, _, _ = read_all(paths)
    history = History(runs)
    groups = history.cases["ddp/resnet50-fp32-bs2-32px-2n1g"]
    assert len(groups) == 2
    fig = charts.case_figure("throughput", "samples/s", groups, history.labels)
    go.Figure(fig)  # plotly's own check of every property
    measured = [t for t in fig["data"] if t.get("mode") == "lines+markers"]
    assert [len(t["x"]) for t in measured] == [9, 3]
    regressions = [t for t in fig["data"] if t.get("name") == "regression"]
    assert sum(len(t["x"]) for t in regressions) == 6  # nights 6-8 on the first machine, 9-11 on the other
    assert [s["x0"] for s in fig["layout"]["shapes"]] == [runs[9].created.isoformat()]
    # "over commits": every trace's x again, point for point, at its run's commit
    by_time, by_commit = fig["layout"]["updatemenus"][0]["buttons"]
    when = {r.created.isoformat(): r.commit for r in runs}
    assert [[when[x] for x in xs] for xs in by_time["args"][0]["x"]] == by_commit["args"][0]["x"]
    assert by_commit["args"][1]["shapes"][0]["x0"] == commit_of(9)
    for metric in charts.METRICS:
        if (f := charts.case_figure(metric, "samples/s", groups, history.labels)) is not None:
            go.Figure(f)


def test_a_damaged_or_newer_file_is_named_and_the_rest_builds(site, tmp_path, capsys) -> None:
    _, paths = site
    bad = tmp_path / "bad"
    (bad / "corrupt").mkdir(parents=True)
    (bad / "corrupt" / "results.json").write_text('{"cases": [', encoding="utf-8")
    doc = json.loads(paths[0].read_text())
    (bad / "newer").mkdir()
    (bad / "newer" / "results.json").write_text(json.dumps({**doc, "schema": 99}), encoding="utf-8")
    assert cli.main(["history", str(paths[1].parent), str(bad), "-o", str(tmp_path / "site")]) == 0
    err = capsys.readouterr().err
    assert f"left out {bad / 'corrupt' / 'results.json'}: not JSON" in err
    assert "schema 99 is newer than this pytest-dlperf reads (2)" in err
    index = (tmp_path / "site" / "index.html").read_text()
    assert "Left out (2)" in index and "1 runs, 2 cases" in index


def test_results_without_profile_or_commit_are_read(site, tmp_path) -> None:
    _, paths = site
    doc = json.loads(paths[0].read_text())
    del doc["environment"]["git"]
    for case in doc["cases"]:
        del case["profile"]
    old = tmp_path / "old" / "results.json"
    old.parent.mkdir()
    old.write_text(json.dumps(doc), encoding="utf-8")
    build_site([str(old)], tmp_path / "site")
    index = (tmp_path / "site" / "index.html").read_text()
    assert "(profile not recorded) on 2 nodes of AMD EPYC" in index and "(no commit)" in index


def test_bad_arguments_are_one_line_and_write_nothing(site, tmp_path) -> None:
    _, paths = site
    with pytest.raises(SystemExit, match=r"^dlperf history: .*nowhere: does not exist: give results.json files"):
        cli.main(["history", str(tmp_path / "nowhere"), "-o", str(tmp_path / "a")])
    with pytest.raises(SystemExit, match=r"matches no results.json"):
        cli.main(["history", str(tmp_path / "*.json"), "-o", str(tmp_path / "a")])
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    with pytest.raises(SystemExit, match=r"exists and is not a site dlperf history built: give -o a new or empty"):
        cli.main(["history", str(paths[0]), "-o", str(mine)])
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    junk = tmp_path / "junk" / "results.json"
    junk.parent.mkdir()
    junk.write_text("[]")
    with pytest.raises(HistoryError, match=r"no results.json could be read .*not a pytest-dlperf results.json"):
        build_site([str(junk)], tmp_path / "b")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_page_names_are_one_to_one() -> None:
    from pytest_dlperf.history.model import slug

    keys = ["ddp/a-b", "ddp_a-b", "ddp__a-b", "ddp/a b", "ddp/a_20b", ".hidden", "ddp/é"]
    assert len({slug(k) for k in keys}) == len(keys)
    assert slug("ddp/resnet50-fp32-bs2-32px-2n1g") == "ddp__resnet50-fp32-bs2-32px-2n1g"
    assert not slug(".hidden").startswith(".")


def test_a_second_build_replaces_the_first(site, tmp_path) -> None:
    _, paths = site
    out = tmp_path / "site"
    build_site([str(p) for p in paths], out)
    build_site([str(paths[0])], out)
    assert len(list((out / "runs").iterdir())) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["site"]  # nothing left beside it


@pytest.mark.needs_setup  # opens pages in chromium (tests/setup.sh installs it): not in the quick tier
def test_an_ab_session_has_its_own_page(tools, own_hosts, tmp_path) -> None:
    """tests/data/history/ab-results.json: a recorded A/B session with a 10% slowdown planted in the candidate."""
    recorded = Path(__file__).resolve().parent / "data" / "history" / "ab-results.json"
    built, history = build_site([str(recorded)], tmp_path / "site")
    (page_file,) = (tmp_path / "site" / "ab").glob("*.html")
    assert 'href="ab/' in built.index.read_text()
    assert history.cases == {}  # its cases are the candidate's: drawn on no case's line
    (run_page,) = (tmp_path / "site" / "runs").glob("*.html")
    assert "../cases/" not in run_page.read_text()  # so its run page links to no case page
    assert (tmp_path / "site").stat().st_mode & 0o055 == 0o055 & ~_umask()  # readable as any built directory
    devtools, proxy = tools
    devtools.open(page_file)
    page = devtools.dom()
    assert devtools.attempted == [] and proxy.page_requests(own_hosts) == []
    assert "<td>SLOWER</td>" in page and "DLPERF_PLANT_SLOWDOWN" in page
    assert "candidate / reference, pair by pair" in page  # the chart was drawn


@pytest.mark.needs_setup  # opens pages in chromium (tests/setup.sh installs it): not in the quick tier
def test_a_bisection_has_its_own_page_linking_its_probes_runs(site, tools, own_hosts, tmp_path) -> None:
    """A steps file as dlperf bisect writes it (its own Steps class): items 0-4, the bad end and the
    middle probed, item 3 found first bad; one probe's report is a run of the site."""
    from pytest_dlperf.bisect.evidence import CaseEvidence, ItemVerdict
    from pytest_dlperf.bisect.items import Item
    from pytest_dlperf.bisect.steps import ProbeRecord, Steps

    _, paths = site
    items = [Item(commit_of(2 * i) + "0" * 28, f"change {i}", "") for i in range(5)]
    steps = Steps(tmp_path / "ci" / "dlperf-bisect.json", {"kind": "git", "repo": "/src", "good": "v1", "bad": "v2",
                                                             "pytest_args": ["suites/", "-k", "resnet"]}, items)
    (tmp_path / "ci").mkdir()

    def probe(i: int, verdict: ItemVerdict, ratio: float, report: Path | None) -> ProbeRecord:
        case = CaseEvidence("slower" if verdict is ItemVerdict.BAD else "same", ratio, ratio - 0.01, ratio + 0.01, 6)
        return ProbeRecord(i, items[i].key, verdict, {"ddp/resnet50-fp32-bs2-32px-1n1g": case},
                           str(report) if report else None, None, ["suites/"], "2026-01-01T00:00:00+00:00",
                           "2026-01-01T00:10:00+00:00")

    for p in (probe(4, ItemVerdict.BAD, 0.75, paths[8].parent), probe(2, ItemVerdict.GOOD, 1.0, None),
              probe(3, ItemVerdict.BAD, 0.76, None)):
        steps.record(p)
    built, history = build_site([str(paths[8].parent), str(tmp_path / "ci")], tmp_path / "site")
    assert len(history.bisections) == 1 and "first bad: " + commit_of(6) in built.index.read_text()
    (page_file,) = (tmp_path / "site" / "bisect").glob("*.html")
    devtools, proxy = tools
    devtools.open(page_file)
    page = devtools.dom()
    assert devtools.attempted == [] and proxy.page_requests(own_hosts) == []
    assert f"first bad: {commit_of(6)} change 3; last good: {commit_of(4)} change 2" in page
    assert 'href="../runs/' in page and "candidate / known-good, by item" in page


def test_a_damaged_steps_file_is_named_and_left_out(site, tmp_path, capsys) -> None:
    _, paths = site
    (tmp_path / "dlperf-bisect.json").write_text('{"dlperf_bisect": 1, "items": "nope"}')
    assert cli.main(["history", str(paths[0]), str(tmp_path / "dlperf-bisect.json"), "-o", str(tmp_path / "s")]) == 0
    assert "'items' is not a list of items" in capsys.readouterr().err


def test_a_damaged_verdict_or_fingerprint_is_named_and_left_out(site, tmp_path, capsys) -> None:
    _, paths = site
    doc = json.loads(paths[0].read_text())
    damaged = {"tolerance": json.loads(json.dumps(doc)), "fingerprints": json.loads(json.dumps(doc))}
    damaged["tolerance"]["cases"][0]["verdict"]["throughput"]["tolerance"] = None
    damaged["fingerprints"]["environment"]["hardware_fingerprints"] = ["local0"]
    for name, d in damaged.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(d))
    assert cli.main(["history", str(paths[0]), str(tmp_path / "tolerance"), str(tmp_path / "fingerprints"),
                     "-o", str(tmp_path / "site")]) == 0
    err = capsys.readouterr().err
    assert "'verdict.throughput': 'tolerance' is None, not a fraction (0 or more)" in err
    assert "'environment.hardware_fingerprints' is not an object of nodes' fingerprints" in err


def test_a_pace_adjusted_verdict_is_drawn_at_the_figure_it_judged(site) -> None:
    """Where the pace probe brought the runs to the baseline's pace, the point against the band is
    the verdict's measured median, and its hover text gives the figure as measured."""
    _, paths = site
    runs, _, _ = read_all(paths[:2])
    v = runs[1].results[0].verdict["throughput"]
    v.measured_median, v.pace = runs[1].results[0].median * 1.1, {"applied": True}
    history = History(runs)
    fig = charts.case_figure("throughput", "samples/s", history.cases[runs[1].results[0].case.key], history.labels)
    measured = next(t for t in fig["data"] if t.get("mode") == "lines+markers")
    assert measured["y"][1] == v.measured_median and measured["y"][0] == runs[0].results[0].median
    assert "as measured" in measured["text"][1] and "as measured" not in measured["text"][0]


def test_alternating_machines_mark_one_change(site, tmp_path) -> None:
    """Two runners taking turns make two lines and one mark, where the second line begins."""
    _, paths = site
    turns = [p for i, p in enumerate(paths) if i < 8 and i % 2 == 0]  # the first machine on Jan 1, 3, 5, 7
    for k, p in enumerate(paths[9:]):  # the other on Jan 2, 4, 6
        doc = json.loads(p.read_text())
        doc["created"] = f"2026-01-0{2 * k + 2}T02:00:00+00:00"
        (tmp_path / f"b{k}").mkdir()
        (tmp_path / f"b{k}" / "results.json").write_text(json.dumps(doc))
        turns.append(tmp_path / f"b{k}" / "results.json")
    runs, _, _ = read_all(turns)
    assert [r.machine.key for r in runs] == [runs[0].machine.key, runs[1].machine.key] * 3 + [runs[0].machine.key]
    history = History(runs)
    fig = charts.case_figure("throughput", "samples/s", history.cases["ddp/resnet50-fp32-bs2-32px-2n1g"],
                             history.labels)
    assert len(fig["layout"]["shapes"]) == 1 and fig["layout"]["annotations"][0]["text"] == "machine change"


# --- issue #48: the overview, failed nights, copies, one-run cases, imported dates, and the pages in a
# person's browser (every control clicked, the network blocked, a phone's 420 px) ---------------------

PLANTED = "resnet50-fp32-bs2-32px-2n1g"  # the one case with a drop planted
ONCE = "ddp/vgg16-fp32-bs2-32px-1n1g"  # a case run once


@dataclass(frozen=True)
class Nights:
    root: Path
    paths: list[Path]
    copy: Path
    history: History


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> Nights:
    """The user's history: 30 nights, a 10% drop in one case from night 18, that case failed on night
    12, another machine from night 26; night 5's results.json copied into a second folder; a case
    (vgg16) run once."""
    tmp = tmp_path_factory.mktemp("nights")
    paths = write(Plan(nights=30, regression_at=18, drop=0.9, regressed=(PLANTED,), failed=((12, PLANTED),),
                       machine_at=26), tmp / "ci")
    copy = tmp / "ci" / "zz-copy" / "results.json"  # after night-005 in the walk: the night's own file is the run
    copy.parent.mkdir()
    shutil.copyfile(paths[5], copy)
    doc = json.loads(paths[3].read_text())
    case = doc["cases"][0]
    case["case"]["model"], case["case"]["id"] = "vgg16", case["case"]["id"].replace("resnet50", "vgg16")
    doc["cases"], doc["created"] = [case], "2026-01-20T03:00:00+00:00"
    (tmp / "ci" / "once").mkdir()
    (tmp / "ci" / "once" / "results.json").write_text(json.dumps(doc))
    _, history = build_site([str(tmp / "ci")], tmp / "site", changepoints.make("otava"))  # what a user gets
    return Nights(tmp / "site", paths, copy, history)


def test_steps_are_found_where_a_level_moved_and_stayed() -> None:
    flat = [100.0 + (i * 7 % 3) for i in range(20)]  # 1% night-to-night noise
    assert find_steps(flat, 0.05) == []
    dropped = flat[:10] + [v * 0.9 for v in flat[10:]]
    assert [(s.at, round(s.change, 2)) for s in find_steps(dropped, 0.05)] == [(10, -0.1)]
    assert find_steps(flat[:10] + [80.0] + flat[11:], 0.05) == []  # one night off its line is not a step
    assert find_steps(flat[:10] + [v * 0.97 for v in flat[10:]], 0.05) == []  # within the tolerance
    back = flat[:8] + [v * 0.8 for v in flat[8:14]] + flat[14:]
    assert [(s.at, round(s.change, 2)) for s in find_steps(back, 0.05)] == [(8, -0.2), (14, 0.25)]
    assert [s.at for s in find_steps(flat[:18] + [85.0, 86.0], 0.05)] == [18]  # two nights on the new level


@pytest.mark.needs_setup  # Apache Otava's change points (tests/setup.sh installs it --no-deps): not in the quick tier
def test_the_index_says_which_case_changed_where_since_when_and_by_how_much(nights) -> None:
    found = overview.changes(nights.history)
    assert [(c.key, c.before.run.when, c.after.run.when) for c in found] == [
        (f"ddp/{PLANTED}", "2026-01-18 02:00 UTC", "2026-01-19 02:00 UTC")]
    moves = dict(found[0].moves)
    assert -0.12 < moves["throughput"].change < -0.08 and found[0].until is None
    index = (nights.root / "index.html").read_text()
    row = re.search(r'<tr data-search="[^"]*" data-verdicts="step down">(.*?)</tr>', index, re.S).group(1)
    for said in (f"{PLANTED}", f"{commit_of(17)} &rarr; {commit_of(18)}", "2026-01-18 02:00 UTC",
                 f"{moves['throughput'].change:+.1%}", "still"):
        assert said in row, f"{said!r} is not in the step's row: {row}"
    lines = sum(len(groups) for groups in nights.history.cases.values())
    assert index.count('<svg class="spark"') == lines == 5  # a trend per case and line (3 cases, 2 on the other machine)
    assert "1 step change." in index
    page = (nights.root / f"cases/ddp__{PLANTED}.html").read_text()  # the case's chart marks it where it began
    assert f"level change: {moves['throughput'].change:+.1%}" in page


@pytest.mark.needs_setup  # Apache Otava's change points (tests/setup.sh installs it --no-deps): not in the quick tier
def test_a_failed_night_is_a_gap_in_its_line_and_a_mark(nights) -> None:
    h, key = nights.history, f"ddp/{PLANTED}"
    ((g, gone),) = h.failed[key].items()
    assert [f.run.when for f in gone] == ["2026-01-13 02:00 UTC"]
    fig = charts.case_figure("throughput", "samples/s", h.cases[key], h.labels, h.failed[key],
                             lambda run: "../" + run_href(run))
    go.Figure(fig)
    measured = next(t for t in fig["data"] if t.get("mode") == "lines+markers")
    i = measured["x"].index(gone[0].run.created.isoformat())
    assert measured["y"][i] is None and None not in measured["y"][i - 1:i] + measured["y"][i + 1:i + 2]
    assert measured["connectgaps"] is False and measured["customdata"][i] == "../" + run_href(gone[0].run)
    mark = next(t for t in fig["data"] if t.get("name") == "failed (no figure)")
    assert mark["x"] == [measured["x"][i]] and "exited 1 (planted<br>failure)" in mark["text"][0]
    assert "failed: night 12: the workload exited 1" in (nights.root / f"cases/ddp__{PLANTED}.html").read_text()
    assert "25 (1 failed)" in (nights.root / "index.html").read_text()  # nights 0-25 on the first machine


@pytest.mark.needs_setup  # Apache Otava's change points (tests/setup.sh installs it --no-deps): not in the quick tier
def test_a_copy_of_a_results_json_is_one_run_and_said_so(nights, tmp_path, capsys) -> None:
    h = nights.history
    assert len(h.runs) == 31 and len({r.digest for r in h.runs}) == 31  # 30 nights and the case run once
    (copy,) = h.skipped
    assert (copy.path, copy.same_as) == (nights.copy.resolve(), nights.paths[5].resolve())
    index = (nights.root / "index.html").read_text()
    assert "Counted once (1)" in index and str(nights.copy.resolve()) in index
    run = next(r for r in h.runs if r.path == nights.paths[5].resolve())
    assert f"also at: {nights.copy.resolve()}" in (nights.root / run_href(run)).read_text()
    assert cli.main(["history", str(nights.paths[5]), str(nights.copy), "-o", str(tmp_path / "s")]) == 0
    out = capsys.readouterr()
    assert f"the same content as {nights.paths[5].resolve()}: one run, counted once" in out.err
    assert "1 runs," in out.out


@pytest.mark.needs_setup  # Apache Otava's change points (tests/setup.sh installs it --no-deps): not in the quick tier
def test_a_case_run_once_gets_a_day_either_side(nights) -> None:
    h = nights.history
    fig = charts.case_figure("throughput", "samples/s", h.cases[ONCE], h.labels)
    low, high = (dt.datetime.fromisoformat(x) for x in fig["layout"]["xaxis"]["range"])
    assert high - low == dt.timedelta(days=2) and low < h.cases[ONCE][next(iter(h.cases[ONCE]))][0].run.created < high
    by_time = fig["layout"]["updatemenus"][0]["buttons"][0]["args"][1]["xaxis"]
    assert by_time["range"] == fig["layout"]["xaxis"]["range"]  # "over time" again keeps it


def test_imported_runs_are_dated_by_their_logs(tmp_path) -> None:
    """dllogger's example log (2019-10-10, epoch timestamps) and DLPerf's TF2 logs (absl lines: a time
    of day but no year), each imported with dlperf import today."""
    logs = tmp_path / "dllogger" / "1n1g"
    logs.mkdir(parents=True)
    shutil.copyfile(PEERS / "dllogger" / "nvidia_dllogger_example_resnet_log_2019.json.log",
                    logs / "rn50_b128_amp_1.log")
    for src, fmt, out in ((tmp_path / "dllogger", "dllogger", "a"), (DATA / "dlperf-tf2-resnet50", "dlperf-tf2", "b")):
        assert cli.main(["import", str(src), "--format", fmt, "-o", str(tmp_path / out / "results.json")]) == 0
    _, history = build_site([str(tmp_path / "a"), str(tmp_path / "b")], tmp_path / "site")
    a, b = sorted(history.runs, key=lambda r: r.path.parent.name)
    text = (logs / "rn50_b128_amp_1.log").read_text()
    last = max(float(t) for t in re.findall(r'"timestamp": "([\d.]+)"', text))
    assert a.created == dt.datetime.fromtimestamp(last, dt.timezone.utc)
    assert a.dated == "dated by its logs: the latest time in 1 of its 1 log(s)"
    assert b.created.date() == dt.datetime.now(dt.timezone.utc).date()
    assert b.dated == "dated by its import (its logs carry no time of day with a date)"
    assert "Imported with <code>dlperf import</code>: dated by its logs" in (tmp_path / "site" / run_href(a)).read_text()
    assert "(import date)" in (tmp_path / "site" / "index.html").read_text()
    (tmp_path / "dllogger").rename(tmp_path / "moved")
    (moved,) = read_all([tmp_path / "a" / "results.json"])[0]
    assert moved.dated == f"dated by its import (its logs are not at {logs / 'rn50_b128_amp_1.log'})"
    assert latest_time("[2022/08/05 01:28:59] ppcls INFO: ...\n# source (2023-01-01)\n", dt.datetime.now(dt.timezone.utc)) \
        == dt.datetime(2022, 8, 5, 1, 28, 59, tzinfo=dt.timezone.utc)


@pytest.mark.needs_setup  # Apache Otava's change points (tests/setup.sh installs it --no-deps): not in the quick tier
def test_every_page_names_only_the_sites_own_files(nights) -> None:
    """No page links, loads or points anywhere but into the site and the runs' own folders."""
    for page in nights.root.rglob("*.html"):
        for target in re.findall(r'(?:src|href)="([^"]*)"', page.read_text()):
            assert "://" not in target and not target.startswith("//"), f"{page}: {target}"


def _shown(tools: browser.Devtools) -> list[str]:
    return tools.evaluate("[...document.querySelectorAll('table.filterable tbody tr')].filter(r => !r.hidden)"
                          ".map(r => r.dataset.search.split(' ')[0])")


@pytest.mark.needs_setup  # chromium and Apache Otava (tests/setup.sh installs them): not in the quick tier
def test_the_index_filters_cases_and_steps_as_typed(nights, tools, own_hosts) -> None:
    devtools, proxy = tools
    devtools.open(nights.root / "index.html")
    assert sorted(_shown(devtools)) == sorted([f"ddp/{PLANTED}"] * 3 + ["ddp/resnet50-fp32-bs2-32px-1n1g"] * 2 + [ONCE])
    devtools.type_text("#filter", "2N1G")
    assert _shown(devtools) == [f"ddp/{PLANTED}"] * 3  # the step and the case's row on each machine
    devtools.pick("#verdict-filter", "step down")
    assert _shown(devtools) == [f"ddp/{PLANTED}"]
    assert devtools.evaluate("document.getElementById('line-0-count').textContent") == "(0 of 3 shown)"
    devtools.evaluate("document.getElementById('filter').value = ''")
    devtools.type_text("#filter", "vgg")
    devtools.pick("#verdict-filter", "pass")
    assert _shown(devtools) == [ONCE]
    assert devtools.attempted == [] and proxy.page_requests(own_hosts) == []


HOVER_AT = """(name => { const gd = document.getElementById("chart-throughput");
  const trace = [...gd.querySelectorAll(".scatterlayer .trace")].find(t => t.__data__[0].trace.name === name);
  const p = trace.querySelector(".point").getBoundingClientRect(); return [p.left + p.width / 2, p.top + p.height / 2];
})"""
HOVER_LABEL = """(() => { const h = document.querySelector("#chart-throughput .hoverlayer .hovertext");
  if (!h) return null; const r = h.getBoundingClientRect();
  return {lines: h.querySelectorAll("tspan.line").length, text: h.textContent, left: r.left, right: r.right}; })()"""


def _hover_label(devtools: browser.Devtools, trace: str) -> dict:
    devtools.evaluate(f"document.getElementById('chart-throughput').scrollIntoView()")
    x, y = devtools.evaluate(f"{HOVER_AT}({json.dumps(trace)})")
    devtools.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
    devtools.wait_for(HOVER_LABEL)
    return devtools.evaluate(HOVER_LABEL)


def _narrow(devtools: browser.Devtools) -> None:
    """A phone's 420 px: nothing wider than the window, no chart's toolbar over its title or menu, every
    legend entry inside its chart and below its axis, the plot not squeezed by the legend."""
    assert devtools.evaluate("document.scrollingElement.scrollWidth") <= 420
    for chart in ("throughput", "speedup", "efficiency"):
        boxes = devtools.evaluate(f"""(() => {{ const gd = document.getElementById("chart-{chart}");
            const box = e => {{ const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }};
            return {{chart: box(gd), toolbar: box(gd.querySelector(".modebar")), title: box(gd.querySelector(".gtitle")),
                     menu: [...gd.querySelectorAll(".updatemenu-button")].map(box), plot: box(gd.querySelector(".nsewdrag")),
                     axis: box(gd.querySelector(".g-xtitle")),
                     legend: [...gd.querySelectorAll(".legend .traces")].map(box)}}; }})()""")
        def apart(a: list[float], b: list[float]) -> bool:
            return a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]
        assert boxes["chart"][2] <= 420, f"{chart}: the chart is wider than the window: {boxes['chart']}"
        for other in (boxes["title"], *boxes["menu"]):
            assert apart(boxes["toolbar"], other), f"{chart}: the toolbar {boxes['toolbar']} covers {other}"
        assert boxes["plot"][3] - boxes["plot"][1] >= 250, f"{chart}: the legend squeezes the plot: {boxes['plot']}"
        for entry in boxes["legend"]:
            assert boxes["chart"][0] <= entry[0] and entry[2] <= boxes["chart"][2] and entry[3] <= boxes["chart"][3], \
                f"{chart}: a legend entry {entry} is cut (chart {boxes['chart']})"
            assert entry[1] >= boxes["axis"][3], f"{chart}: a legend entry {entry} is over the axis' title {boxes['axis']}"


@pytest.mark.needs_setup  # chromium and Apache Otava (tests/setup.sh installs them): not in the quick tier
def test_a_case_page_in_a_blocked_browser_on_a_phone(nights, tools, own_hosts) -> None:
    """The case with the drop on a phone's 420 px (the desk's width: the ladder's test, and the
    screenshot's above): its failed night breaks its line; a regression's whole message on hover,
    wrapped, inside the window; every control clicked with no request attempted; a click on the
    regression's point opens that run's page."""
    devtools, proxy = tools
    devtools.resize(420, 900)
    devtools.open(nights.root / f"cases/ddp__{PLANTED}.html")
    _narrow(devtools)
    message = json.loads(nights.paths[18].read_text())["cases"][1]["verdict"]["throughput"]["message"]
    label = _hover_label(devtools, "regression")
    assert re.sub(r"\s", "", message) in re.sub(r"\s", "", label["text"]), "the message is not whole"
    assert label["lines"] > 5 and 0 <= label["left"] and label["right"] <= 420, label
    pieces = devtools.evaluate("""(() => { const gd = document.getElementById("chart-throughput");
        const t = [...gd.querySelectorAll(".scatterlayer .trace")].find(t => t.__data__[0].trace.mode === "lines+markers");
        return [...t.querySelectorAll(".js-line")].map(l => l.getAttribute("d").split("M").length - 1)
                                                    .reduce((a, b) => a + b, 0); })()""")
    assert pieces == 2, f"the line is drawn in {pieces} piece(s): the failed night is joined over"
    entries = devtools.evaluate("document.querySelectorAll('.legend .traces').length")
    clicked = browser.click_every_control(devtools)
    assert not [k for k in clicked if re.search(r"Share|cloud|Download|Plotly", k, re.I)], clicked
    assert len([k for k in clicked if "toolbar" in k]) == 3 * 8 and len([k for k in clicked if " legend " in k]) == entries
    for again in ("chart-throughput menu over time", "chart-throughput toolbar Zoom"):  # as a person would, back
        at = devtools.evaluate(f"window.__locate({json.dumps(again)})")
        devtools.click(at["x"], at["y"])
    legend = next(k for k in clicked if k.startswith("chart-throughput legend") and k.endswith("regression"))
    at = devtools.evaluate(f"window.__locate({json.dumps(legend)})")
    devtools.click(at["x"], at["y"])  # the regressions shown again
    x, y = devtools.evaluate(f"{HOVER_AT}('regression')")
    devtools.click(x, y)
    devtools.wait_for("location.pathname.includes('/runs/')")
    assert devtools.evaluate("document.querySelector('h1').textContent") == "Run 2026-01-19 02:00 UTC"
    devtools.pump(0.3)
    assert devtools.attempted == [] and proxy.page_requests(own_hosts) == []


@pytest.mark.needs_setup  # chromium and Apache Otava (tests/setup.sh installs them): not in the quick tier
def test_the_ladder_in_a_blocked_browser_and_the_check_can_fail(nights, tools, own_hosts) -> None:
    """Every control of the ladder clicked, no request attempted; then, on the same page, a chart with
    plotly.js's own defaults (its "Share" uploads the chart to its cloud) and a button that fetches:
    clicking every control again catches both, so the check above can fail."""
    devtools, proxy = tools
    devtools.resize(1300, 900)
    devtools.open(nights.root / "models" / "ddp__resnet50-fp32-bs2-32px.html")
    devtools.pick("#run-a", "3")
    devtools.pick("#run-b", "-1")
    assert devtools.evaluate("document.getElementById('ladder').data.length") == 2  # the run and the ideal line
    clicked = browser.click_every_control(devtools)
    assert len([k for k in clicked if "toolbar" in k]) == 8, clicked
    devtools.pump(0.3)
    assert devtools.attempted == [] and proxy.page_requests(own_hosts) == []
    devtools.evaluate("""(() => { const div = document.createElement("div"), b = document.createElement("button");
        div.id = "defaults"; div.style = "width: 600px; height: 300px"; b.id = "fetch"; b.textContent = "go";
        b.onclick = () => fetch("http://cdn.dlperf.test/x"); document.body.append(div, b);
        return Plotly.newPlot(div, [{x: [1, 2], y: [3, 4]}], {}, {displaylogo: false}).then(() => true); })()""")
    browser.click_every_control(devtools)
    devtools.pump(0.3)
    assert any("cloud.plotly.com" in a for a in devtools.attempted), devtools.attempted
    assert any("cdn.dlperf.test" in a for a in devtools.attempted), devtools.attempted


@pytest.mark.needs_setup  # Apache Otava's change points (tests/setup.sh installs it --no-deps): not in the quick tier
def test_otava_finds_a_move_below_the_tolerance_where_the_steps_do_not() -> None:
    """Apache Otava's change points (issue #67): a 1.5% move over 0.5% night-to-night noise is found, with its
    p-value; the segmentation needs the tolerance (5%). A flat line has none; a move in the last two nights
    waits for a third (min_segment)."""
    rng = random.Random(3)
    flat = [100.0 * (1 + rng.gauss(0, 0.005)) for _ in range(40)]
    otava = changepoints.make("otava")
    assert otava.find(flat, 0.05) == [] and find_steps(flat, 0.05) == []
    crept = flat[:25] + [v * 0.985 for v in flat[25:]]
    (step,) = otava.find(crept, 0.05)
    assert step.at == 25 and -0.02 < step.change < -0.01 and step.pvalue < 0.001, step
    assert find_steps(crept, 0.05) == []
    late = flat[:38] + [v * 0.95 for v in flat[38:]]
    assert otava.find(late, 0.05) == []  # two nights on the new level: not yet
    assert [s.at for s in otava.find(late + [95.0], 0.05)] == [38]


def test_without_otava_the_history_keeps_its_steps_and_says_so(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "otava", None)  # as where it is not installed
    auto = changepoints.make("auto")
    assert auto.name == "steps" and "Apache Otava is not installed" in auto.describe()
    assert changepoints.OTAVA_INSTALL in auto.describe()
    with pytest.raises(changepoints.FinderError, match="--change-points otava: Apache Otava is not installed"):
        changepoints.make("otava")


@pytest.mark.needs_setup  # Apache Otava's change points (tests/setup.sh installs it --no-deps): not in the quick tier
def test_the_nightly_check_fails_on_a_new_worse_change_once_and_names_the_bisect(tmp_path, capsys) -> None:
    """``dlperf history --check`` after each night: a 1.5% drop from night 24 fails it once, the first night it is
    found two nights running (exit 1: the case, the figure, the size, the commit range and the bisect command),
    and never again; the same drop from night 10 is no longer new at night 31; a flat history never fails it."""
    nights = write(Plan(nights=34, regression_at=24, drop=0.985, noise=0.005, regressed=(PLANTED,)), tmp_path / "new")

    def check(night: int, *more: str) -> int:
        return cli.main(["history", *(str(p.parent) for p in nights[:night + 1]), "--check", *more])

    said: dict[int, list[str]] = {}
    for night in range(20, 34):
        code = check(night)
        said[night] = [ln for ln in capsys.readouterr().out.splitlines() if "WORSE" in ln]
        assert code == (1 if said[night] else 0)
    alarmed = [n for n, lines in said.items() if lines]
    assert len(alarmed) == 1 and 26 <= alarmed[0] <= 32, said  # once, within 8 nights of the drop
    lines = said[alarmed[0]]  # its throughput, and with it the 2n1g's scaling
    assert [re.search(r"\] (\w+(?: \w+)?) -1\.", ln).group(1) for ln in lines] == [
        "throughput", "speedup", "scaling efficiency"], lines
    assert all(f"WORSE ddp/{PLANTED} [" in ln and ", p " in ln for ln in lines), lines
    # the template's runs recorded no repository path: the line says what to give instead of a command that fails
    assert all(f"commits {commit_of(23)}..{commit_of(24)}: dlperf bisect --repo REPO --good {commit_of(23)} --bad "
               f"{commit_of(24)} -- SUITE -k {PLANTED} (the runs recorded no repository" in ln for ln in lines), lines
    check(alarmed[0])
    out = capsys.readouterr().out
    assert "3 new worse level change(s) (found 2 run(s) running, not before) among each line's last 10 run(s) of " in out
    assert "by change points by Apache Otava (p <= 0.001" in out
    assert check(alarmed[0], "--found-nights", "1") == 0  # found the night before: not new tonight
    assert check(alarmed[0], "--change-points", "steps") == 0  # below 5%
    write(Plan(nights=31, regression_at=10, drop=0.985, noise=0.005, regressed=(PLANTED,)), tmp_path / "old")
    assert cli.main(["history", str(tmp_path / "old"), "--check"]) == 0
    flat = write(Plan(nights=31, noise=0.005, seed=3), tmp_path / "flat")
    assert all(cli.main(["history", *(str(p.parent) for p in flat[:n + 1]), "--check"]) == 0 for n in range(6, 31))
    assert cli.main(["history", str(tmp_path / "old")]) == 2  # neither a site nor a check asked for
    assert "give -o SITE" in capsys.readouterr().err


@pytest.mark.needs_setup  # Apache Otava's change points (tests/setup.sh installs it --no-deps): not in the quick tier
def test_the_drift_since_a_pinned_release_is_one_line_with_its_interval_and_changes(tmp_path, capsys) -> None:
    """``dlperf history --since REF``: a 4% drop from night 20 of 30: the planted line is about 4% worse since
    night 4's commit, its interval apart from zero, with the one change point between; an untouched line's
    interval holds zero. A tag resolves through --repo; a ref no run ran at is one line."""
    paths = write(Plan(nights=30, regression_at=20, drop=0.96, noise=0.005, regressed=(PLANTED,)), tmp_path / "ci")
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@localhost"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "v1.2"], check=True)
    subprocess.run([*git, "tag", "v1.2"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    doc = json.loads(paths[4].read_text())
    doc["environment"]["git"]["commit"] = head  # night 4 ran at the release
    paths[4].write_text(json.dumps(doc))
    assert cli.main(["history", str(tmp_path / "ci"), "--since", "v1.2", "--repo", str(repo)]) == 0
    out = capsys.readouterr().out
    planted = next(ln for ln in out.splitlines() if f"ddp/{PLANTED} [" in ln and "] throughput:" in ln)
    change, low, high = (float(x) / 100 for x in re.search(
        r"throughput: ([-+][\d.]+)% \[([-+][\d.]+)%, ([-+][\d.]+)%\] \(worse\)", planted).groups())
    assert -0.05 < change < -0.03 and high < 0, planted
    assert "since v1.2 (2026-01-05 02:00 UTC)" in planted and "in 1 change(s): -4." in planted, planted
    other = next(ln for ln in out.splitlines() if "px-1n1g [" in ln and "] throughput:" in ln)
    low, high = (float(x) / 100 for x in re.search(r"\[([-+][\d.]+)%, ([-+][\d.]+)%\]", other).groups())
    assert low <= 0 <= high and "no change point between" in other, other
    assert "1n1g [" not in "".join(ln for ln in out.splitlines() if "speedup" in ln)  # always 1 there: left out
    with pytest.raises(SystemExit, match="--since v9: no run of the history has that id or ran at that commit"):
        cli.main(["history", str(tmp_path / "ci"), "--since", "v9", "--repo", str(repo)])


def test_the_lines_are_read_in_commit_order_where_the_repository_holds_every_commit(tmp_path) -> None:
    """Six nights that ran six commits newest first (a backfill): with the repository, the lines follow its
    commits; without it, or with a commit it lacks, time order, and the history says why."""
    from pytest_dlperf import history as h

    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@localhost"]
    subprocess.run([*git, "init", "-q"], check=True)
    commits = []
    for i in range(6):
        subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", f"c{i}"], check=True)
        commits.append(subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip())
    paths = write(Plan(nights=6), tmp_path / "ci")
    for night, path in enumerate(paths):
        doc = json.loads(path.read_text())
        doc["environment"]["git"]["commit"] = commits[5 - night]
        path.write_text(json.dumps(doc))
    ordered = h.read([str(tmp_path / "ci")], repo=repo)
    assert [r.commit for r in ordered.runs] == [c[:12] for c in commits] and ordered.order.startswith("commit order")
    timed = h.read([str(tmp_path / "ci")])
    assert [r.commit for r in timed.runs] == [c[:12] for c in reversed(commits)]
    assert timed.order == "time order (no repository given to order the commits: --repo PATH)"
    doc = json.loads(paths[0].read_text())
    doc["environment"]["git"]["commit"] = "f" * 40
    paths[0].write_text(json.dumps(doc))
    lacking = h.read([str(tmp_path / "ci")], repo=repo)
    assert lacking.order.startswith(f"time order (1 of the runs' 6 commits are not in {repo}, e.g. ffffffffffff")
