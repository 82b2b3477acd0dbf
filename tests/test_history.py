"""dlperf history: the site built from recorded results (tests/data/history, a real gated run of two
ddp cases, made into nights by tests/history_runs.py), opened from disk by headless chromium."""
from __future__ import annotations

import json
import re
from pathlib import Path

import plotly.graph_objects as go
import pytest
from PIL import Image

from pytest_dlperf import cli
from pytest_dlperf.history import HistoryError, build_site
from pytest_dlperf.history import charts
from pytest_dlperf.history.model import History
from pytest_dlperf.history.sources import read_all

from . import browser
from .history_runs import Plan, commit_of, write

CASE = "cases/ddp__resnet50-fp32-bs2-32px-2n1g.html"
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


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask


def _near(pixel: tuple[int, ...], rgb: tuple[int, int, int], within: int = 12) -> bool:
    return all(abs(a - b) <= within for a, b in zip(pixel[:3], rgb))


def _count(png: Path, rgb: tuple[int, int, int]) -> list[tuple[int, int]]:
    img = Image.open(png).convert("RGB")
    return [(x, y) for y in range(img.height) for x in range(img.width) if _near(img.getpixel((x, y)), rgb)]


def test_a_case_page_shows_its_line_band_and_the_regression_marked(site, own_hosts, tmp_path) -> None:
    root, _ = site
    with browser.offline() as proxy:
        shot = browser.screenshot(root / CASE, proxy, tmp_path / "profile", tmp_path / "case.png", size=(1300, 700))
        page = browser.dom(root / CASE, proxy, tmp_path / "profile")
    assert proxy.page_requests(own_hosts) == [], "the page asked the network"
    red, band = _count(shot, REGRESSION_RGB), _count(shot, BAND_RGB)
    assert len(band) > 3000, f"the tolerance band is not drawn ({len(band)} pixels of its colour)"
    assert len(red) > 400, f"no regression is marked ({len(red)} pixels of its colour)"
    # the marks are right of the band's first stretch: the nights before the drop passed
    assert min(x for x, _ in red) > min(x for x, _ in band) + 200
    assert re.search(r'class="legendtext"[^>]*>regression<', page), "no regression entry in the chart's legend"
    for said in ("tolerance band: cpu-amd-epyc", "baseline as judged", "machine change",
                 "Scaling efficiency", "over commits"):
        assert said in page, f"{said!r} is not on the case page"


def test_the_check_sees_a_page_that_asks_the_network(own_hosts, tmp_path) -> None:
    page = tmp_path / "remote.html"
    page.write_text('<!DOCTYPE html><html><body><script src="http://cdn.dlperf.test/plotly.js"></script></body></html>')
    with browser.offline() as proxy:
        browser.dom(page, proxy, tmp_path / "profile")
    assert any("cdn.dlperf.test" in line for line in proxy.page_requests(own_hosts))


def test_a_run_page_says_what_changed_its_percentiles_and_links_its_files(site, own_hosts, tmp_path) -> None:
    root, paths = site
    night = 4  # its commit differs from night 3's (a commit every two nights)
    run_page = next(p for p in (root / "runs").glob("20260105T*.html"))
    with browser.offline() as proxy:
        page = browser.dom(run_page, proxy, tmp_path / "profile")
    assert proxy.page_requests(own_hosts) == []
    assert f"git {commit_of(night - 1)} -&gt; {commit_of(night)}" in page
    for said in ("step p50 (s)", "p95", "AMD EPYC, 1 CPUs", "matmul probe", "regression" if night >= 6 else "pass"):
        assert said in page
    href = re.search(r'<a href="([^"]+results\.json)"', page).group(1)
    assert (run_page.parent / href).resolve() == paths[night].resolve()


def test_the_ladder_sets_a_run_beside_another_with_the_ideal_line(site, own_hosts, tmp_path) -> None:
    root, _ = site
    with browser.offline() as proxy:
        page = browser.dom(root / "models" / "ddp__resnet50-fp32-bs2-32px.html", proxy, tmp_path / "profile")
    assert proxy.page_requests(own_hosts) == []
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


def test_an_ab_session_has_its_own_page(own_hosts, tmp_path) -> None:
    """tests/data/history/ab-results.json: a recorded A/B session with a 10% slowdown planted in the candidate."""
    recorded = Path(__file__).resolve().parent / "data" / "history" / "ab-results.json"
    built, history = build_site([str(recorded)], tmp_path / "site")
    (page_file,) = (tmp_path / "site" / "ab").glob("*.html")
    assert 'href="ab/' in built.index.read_text()
    assert history.cases == {}  # its cases are the candidate's: drawn on no case's line
    (run_page,) = (tmp_path / "site" / "runs").glob("*.html")
    assert "../cases/" not in run_page.read_text()  # so its run page links to no case page
    assert (tmp_path / "site").stat().st_mode & 0o055 == 0o055 & ~_umask()  # readable as any built directory
    with browser.offline() as proxy:
        page = browser.dom(page_file, proxy, tmp_path / "profile")
    assert proxy.page_requests(own_hosts) == []
    assert "<td>SLOWER</td>" in page and "DLPERF_PLANT_SLOWDOWN" in page
    assert "candidate / reference, pair by pair" in page  # the chart was drawn


def test_a_bisection_has_its_own_page_linking_its_probes_runs(site, own_hosts, tmp_path) -> None:
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
    with browser.offline() as proxy:
        page = browser.dom(page_file, proxy, tmp_path / "profile")
    assert proxy.page_requests(own_hosts) == []
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
