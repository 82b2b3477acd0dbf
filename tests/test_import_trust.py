"""Issue 48, item 1: what ``dlperf import``, ``report`` and ``compare`` say can be trusted. Real logs
(tests/data) and copies damaged here (cut, edited): a log cut short, contradicting its header or
itself, or holding an implausible figure is refused by file and line or imported with that said; a
derived figure is labelled derived; no two logs are merged; parsing is linear; outputs are regular
files; ``report`` refuses a file that contradicts itself and ``compare`` one with nothing to compare."""
from __future__ import annotations

import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_dlperf import formats
from pytest_dlperf.importers import Overrides, load

from .test_import_damaged import DATA, DLLOGGER, HOROVOD, HPC, PEERS, ROOT, TF2, TF_CNN_1, dlperf, layout, refused

TF_CNN_8 = PEERS / "tf_cnn/lambda_a100pcie_8gpu_resnet50_fp16_bs448.log"
PLSC = PEERS / "plsc/paddleclas_issue2186_pplcnet_x1_0_1gpu.log"
FULL_TF2 = PEERS / "dlperf-tf2"  # two whole logs of DLPerf's runs: header, TimeHistory lines, Run stats
FULL_TF2_4 = FULL_TF2 / "1n4g/rn50_b128_fp32_1.log"
HOROVODS = sorted((PEERS / "horovod").glob("*.log"))
# every real log, with the layout's hints its parser needs
REAL = [("tf_cnn", TF_CNN_8, formats.Hints()), ("tf_cnn", TF_CNN_1, formats.Hints()),
        *(("horovod", p, formats.Hints()) for p in HOROVODS),
        ("ddp-bench", HPC, formats.Hints(devices=8, nodes=2, model="resnet50")),
        ("ddp-bench", PEERS / "ddp-bench/pytorch_ddp_readme_example_v100_dgx.log",
         formats.Hints(devices=16, nodes=2, model="resnet101")),
        ("dllogger", DLLOGGER, formats.Hints()), ("plsc", PLSC, formats.Hints()),
        ("dlperf-tf2", FULL_TF2 / "1n1g/rn50_b128_fp32_1.log", formats.Hints()),
        ("dlperf-tf2", FULL_TF2_4, formats.Hints()),
        ("dlperf-tf2", TF2 / "1n2g/rn50_b128_fp32_3.log", formats.Hints())]


def _cuts(text: str) -> list[int]:
    """Where a log can be cut short: every line's end but the last, every line's middle, and three
    characters before every line's end (inside its last number: ``total images/sec: 15996.``)."""
    ends = [i + 1 for i, c in enumerate(text) if c == "\n"]
    inside = [(a + b) // 2 for a, b in zip([0, *ends], ends)] + [b - 4 for a, b in zip([0, *ends], ends) if b - a > 4]
    return sorted(set(ends[:-1] + inside))


@pytest.mark.parametrize("fmt, path, hints", REAL, ids=[f"{f}-{p.name}" for f, p, _ in REAL])
def test_a_log_cut_anywhere_is_refused_or_gives_its_whole_figure_or_says_so(fmt, path, hints):
    """The user's cases were single instances: a tf_cnn total cut to 21.00, a DLLogger log averaged
    without its summary, a TF2 run averaged over four windows of five. Here every cut of every log."""
    text = path.read_text()
    whole = formats.FORMATS[fmt](text, None, hints)
    refusals = 0
    for cut in _cuts(text):
        try:
            run = formats.FORMATS[fmt](text[:cut], None, hints)
        except ValueError:
            refusals += 1
            continue
        assert run.throughput == whole.throughput or run.warnings, (cut, run.throughput, whole.throughput)
    assert refusals > 0


def test_the_users_cut_logs_are_refused_by_file_and_line(tmp_path):
    text = TF_CNN_8.read_text()
    cut = text[:text.index("total images/sec: 15996.69") + len("total images/sec: 15")]
    logs = layout(tmp_path / "tf", {"1n8g/resnet50_fp16_1.log": cut})
    refused(dlperf("import", str(logs), "--format", "tf_cnn", "-o", str(tmp_path / "r.json")),
            "resnet50_fp16_1.log: line 36: the log ends inside this line ('total images/sec: 15'")
    # DLLogger: cut before its summary; the per-iteration records' mean only when asked, and said
    lines = DLLOGGER.read_text().splitlines(keepends=True)
    logs = layout(tmp_path / "dll", {"1n1g/rn50_1.log": "".join(lines[:-2])})
    refused(dlperf("import", str(logs), "--format", "dllogger", "-o", str(tmp_path / "r.json")),
            "rn50_1.log: line 51: no run summary record", "cut short", "--warmup-iters")
    out = tmp_path / "asked.json"
    r = dlperf("import", str(logs), "--format", "dllogger", "--warmup-iters", "0", "-o", str(out))
    assert r.returncode == 0 and "warning: " in r.stderr and "no run summary record" in r.stderr, r.stderr
    doc = json.loads(out.read_text())
    assert any("no run summary record" in w for w in doc["environment"]["import"]["warnings"])
    assert any("no run summary record" in w for w in doc["cases"][0]["runs"][0]["meta"]["parsed"]["warnings"])
    # a whole DLPerf TF2 log cut in its last window (DLPerf's five windows after the warm-up)
    text = FULL_TF2_4.read_text()
    logs = layout(tmp_path / "tf2", {"1n4g/rn50_b128_fp32_1.log": text[:text.index("between steps 500 and 600")]})
    refused(dlperf("import", str(logs), "--format", "dlperf-tf2", "-o", str(tmp_path / "r.json")),
            "rn50_b128_fp32_1.log: line 357: the log ends inside this line")
    logs = layout(tmp_path / "tf2b", {"1n4g/rn50_b128_fp32_1.log": "".join(text.splitlines(keepends=True)[:356])})
    refused(dlperf("import", str(logs), "--format", "dlperf-tf2", "-o", str(tmp_path / "r.json")),
            "line 356: the last TimeHistory interval ends at step 500 and no 'Run stats:' line follows")
    assert not (tmp_path / "r.json").exists()


def test_an_excerpt_whose_end_cannot_be_told_is_imported_with_that_said(tmp_path):
    out = tmp_path / "r.json"
    r = dlperf("import", str(TF2), "--format", "dlperf-tf2", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "warning: 15 logs (1n1g/rn50_b128_fp32_1.log, " in r.stderr and "cannot be told" in r.stderr
    assert len(json.loads(out.read_text())["environment"]["import"]["warnings"]) == 15
    logs = layout(tmp_path / "plsc", {"1n1g/resnet50_b512_1.log": PLSC})
    r = dlperf("import", str(logs), "--format", "plsc", "-o", str(out))
    assert r.returncode == 0 and "print no end-of-run line" in r.stderr, r.stderr


@pytest.mark.parametrize("fmt, src, topo, old, new, words", [
    ("tf_cnn", TF_CNN_1, "1n1g", "total images/sec: 2075.05", "total images/sec: 1e308", "not a plausible throughput"),
    ("tf_cnn", TF_CNN_1, "1n1g", "total images/sec: 2075.05", "total images/sec: 20.75", "against the running mean"),
    ("tf_cnn", TF_CNN_8, "1n8g", "3584 global", "3000 global", "a global batch of 3000 is not 448 per device"),
    ("dllogger", DLLOGGER, "1n1g", '"train.total_ips": 6', '"train.total_ips": 1e308, "x": 6',
     "is not a plausible throughput"),
    ("horovod", HOROVOD, "1n4g", "432.8 +-4.9", "1e308 +-4.9", "not a plausible throughput"),
    ("horovod", HOROVOD, "1n4g", "432.8 +-4.9", "532.8 +-4.9", "is not 4 x the 'Img/sec per GPU' 108.2"),
    ("horovod", HOROVOD, "1n4g", "Number of GPUs: 4", "Number of GPUs: 8", "the header's 'Number of GPUs'"),
    ("horovod", HOROVOD, "1n4g", "Iter #5:", "Iter #6:", "Iter #6 follows Iter #4"),
    ("ddp-bench", HPC, "1n4g", "Benchmark: resnet50 with batch size 32", "Benchmark: resnet50 with batch size 64",
     "is not the batch of 64 over"),
    ("dlperf-tf2", TF2 / "1n1g/rn50_b128_fp32_1.log", "1n1g", "327.08 examples", "1e308 examples",
     "not a plausible throughput"),
    ("dlperf-tf2", TF2 / "1n1g/rn50_b128_fp32_1.log", "1n1g", "327.40 examples", "372.40 examples",
     "is not the samples per step"),
    ("dlperf-tf2", FULL_TF2_4, "1n4g", "'use_per_replica_batch_size': True}}", "'use_per_replica_batch_size': True}",
     "the 'Final model parameters' header cannot be read"),
])
def test_a_figure_that_is_implausible_or_contradicts_the_log_is_refused_by_line(tmp_path, fmt, src, topo, old, new,
                                                                               words):
    text = src.read_text()
    assert old in text
    logs = layout(tmp_path / "logs", {f"{topo}/resnet50_1.log": text.replace(old, new)})
    out = tmp_path / "r.json"
    r = dlperf("import", str(logs), "--format", fmt, "-o", str(out))
    refused(r, "resnet50_1.log: ", words)
    assert not out.exists()


def test_two_implausible_figures_are_refused_not_an_overflow(tmp_path):
    """1e308 twice overflowed the mean into an OverflowError traceback."""
    text = (TF2 / "1n1g/rn50_b128_fp32_1.log").read_text()
    logs = layout(tmp_path / "logs", {"1n1g/rn50_1.log": text.replace("327.08 examples", "1e308 examples")
                                      .replace("324.90 examples", "1e308 examples")})
    refused(dlperf("import", str(logs), "--format", "dlperf-tf2", "-o", str(tmp_path / "r.json")),
            "line 3: 1e+308 samples/s is not a plausible throughput")
    good = tmp_path / "good.json"
    assert dlperf("import", str(TF2), "--format", "dlperf-tf2", "-o", str(good)).returncode == 0
    doc = json.loads(good.read_text())
    doc["cases"][0]["throughputs"] = [1e308] * 5
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    refused(dlperf("report", str(bad), "-o", str(tmp_path / "rep")), "'throughputs[0]' is 1e+308, not a plausible")


def test_a_dllogger_header_is_read_and_a_flag_against_it_needs_override(tmp_path):
    """The example log's PARAMETER record: resnet50, batch 128, amp true, world_size 1."""
    out = tmp_path / "r.json"
    logs = layout(tmp_path / "logs", {"1n1g/rn50_1.log": DLLOGGER})
    r = dlperf("import", str(logs), "--format", "dllogger", "-o", str(out))
    assert r.returncode == 0 and "dllogger/resnet50-amp-bs128-224px-1n1g: median 661.98" in r.stdout, r.stderr
    eight = layout(tmp_path / "eight", {"1n1g/rn50_1.log": DLLOGGER.read_text().replace('"world_size": 1',
                                                                                       '"world_size": 8')})
    refused(dlperf("import", str(eight), "--format", "dllogger", "-o", str(out)),
            "rn50_1.log: the log says 8 devices, its directory 1n1g (its line 2)")
    for flag, value, said in (("--model", "vgg16", "model resnet50"), ("--batch-size", "256", "batch size 128"),
                              ("--precision", "fp32", "precision amp")):
        refused(dlperf("import", str(logs), "--format", "dllogger", flag, value, "-o", str(out)),
                f"{flag} {value} contradicts the log's header (line 2: {said})", "pass --override-header")
    r = dlperf("import", str(logs), "--format", "dllogger", "--batch-size", "256", "--override-header", "-o", str(out))
    assert r.returncode == 0 and "--batch-size 256 used over the log's header (line 2: batch size 128)" in r.stderr
    doc = json.loads(out.read_text())
    assert doc["cases"][0]["case"]["batch_size"] == 256 and doc["options"]["override_header"] is True
    assert any("--batch-size 256 used over" in w for w in doc["environment"]["import"]["warnings"])
    named = layout(tmp_path / "named", {"1n1g/rn50_b64_fp32_1.log": DLLOGGER})
    refused(dlperf("import", str(named), "--format", "dllogger", "-o", str(out)),
            "the file name 'rn50_b64_fp32' says batch size 64, the log's header (line 2) 128: rename the log")


def test_a_tf2_header_is_read_and_checked_against_the_intervals(tmp_path):
    out = tmp_path / "r.json"
    r = dlperf("import", str(FULL_TF2), "--format", "dlperf-tf2", "-o", str(out))
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr  # whole logs: header and Run stats
    assert "tensorflow2/resnet50-fp32-bs128-224px-1n4g: median 1145.76" in r.stdout
    refused(dlperf("import", str(FULL_TF2), "--format", "dlperf-tf2", "--batch-size", "256", "-o", str(out)),
            "--batch-size 256 contradicts the log's header (line 113: batch size 128)")
    text = FULL_TF2_4.read_text()
    head = text.index("Final model parameters")
    edited = text[:head] + text[head:].replace("'num_gpus': 4", "'num_gpus': 2", 1)
    logs = layout(tmp_path / "logs", {"1n2g/rn50_b128_fp32_1.log": edited})
    refused(dlperf("import", str(logs), "--format", "dlperf-tf2", "-o", str(out)),
            "line 352: the intervals' seconds x examples/second make", "the header (line 113) 128 x 2 devices = 256")


def test_derived_figures_are_labelled_and_the_logs_own_are_kept(tmp_path):
    """ddp-bench prints per-GPU rates only: the throughput is derived, and said; the per-GPU figures
    and the ACSpeed line are the row's own, not the batch over its rounded seconds (32 / 0.026 = 1231)."""
    logs = layout(tmp_path / "logs", {"2n4g/resnet50_1.log": HPC})
    out = tmp_path / "r.json"
    r = dlperf("import", str(logs), "--format", "ddp-bench", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "ddp/resnet50-fp32-bs32-224px-2n4g: median 9864.00 samples/s" in r.stdout
    assert "[derived: p50's 1233/s per GPU x 8 GPUs, row '2M/8G' (line 40); the benchmark prints no total]" in r.stdout
    (case,) = json.loads(out.read_text())["cases"]
    assert case["runs"][0]["meta"]["parsed"]["origin"] == "derived"
    assert case["per_device_samples_per_s"] == {"p50": 1233, "p75": 1211, "p90": 1191, "p95": 1183}
    assert case["acspeed"].startswith("8 GPUs -- 2M/4G: p50: 0.026s 1233/s p75: 0.026s 1211/s")
    # DLLogger's per-iteration records every 5 iterations are intervals' figures: no step times from them
    dll = layout(tmp_path / "dll", {"1n1g/rn50_1.log": DLLOGGER})
    (res,) = load(dll, "dllogger", warmup=0).results
    assert res.step_time == {} and res.per_device == {} and len(res.throughputs) == 1
    assert not res.runs[0].meta["parsed"]["per_step"]


def test_no_two_logs_are_merged(tmp_path):
    src = TF2 / "1n1g"
    dashed = layout(tmp_path / "dashed", {"1n1g/rn50-b128_1.log": src / "rn50_b128_fp32_1.log",
                                          "1n1g/rn50_b128_1.log": src / "rn50_b128_fp32_2.log"})
    with pytest.raises(ValueError, match=r"logs named 'rn50-b128' and 'rn50_b128' in 1n1g would make one case "
                                         r"\(tensorflow2/resnet50-fp32-bs128-224px-rn50_b128-1n1g\).*rename one"):
        load(dashed, "dlperf-tf2", over=Overrides(batch_size=128))
    twice = layout(tmp_path / "twice", {"1n1g/rn50_b128_1.log": src / "rn50_b128_fp32_1.log",
                                        "1n1g/rn50_b128_01.log": src / "rn50_b128_fp32_2.log"})
    with pytest.raises(ValueError, match=r"rn50_b128_01.log: run 1 of 'rn50_b128' again \(as rn50_b128_1.log\)"):
        load(twice, "dlperf-tf2")
    linked = layout(tmp_path / "linked", {"1n1g/rn50_b128_1.log": src / "rn50_b128_fp32_1.log"})
    (linked / "1n1g/rn50_b128_2.log").symlink_to(linked / "1n1g/rn50_b128_1.log")
    with pytest.raises(ValueError, match=r"rn50_b128_2.log: the same file as .*rn50_b128_1.log \(a link\)"):
        load(linked, "dlperf-tf2")
    two_runs = layout(tmp_path / "two", {"1n4g/rn50_1.log": HOROVOD.read_text() * 2})
    with pytest.raises(ValueError, match="two 'Total img/sec' lines, one per run"):
        load(two_runs, "horovod")


def _no_dac(cmd: list[str]) -> list[str]:
    """The command without root's power to read what its permissions forbid (root reads a 000 directory)."""
    if os.geteuid() != 0:
        return cmd
    if not shutil.which("capsh"):
        pytest.skip("running as root without capsh: a directory root cannot read cannot be made")
    return ["capsh", "--drop=cap_dac_override,cap_dac_read_search", "--", "-c", "exec " + shlex.join(cmd)]


def test_an_unreadable_topology_directory_is_one_line(tmp_path):
    logs = layout(tmp_path / "logs", {"1n1g/rn50_b128_fp32_1.log": TF2 / "1n1g/rn50_b128_fp32_1.log"})
    (logs / "1n1g").chmod(0)
    try:
        r = subprocess.run(_no_dac([sys.executable, "-m", "pytest_dlperf.cli", "import", str(logs), "--format",
                                    "dlperf-tf2", "-o", str(tmp_path / "r.json")]),
                           capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        (logs / "1n1g").chmod(0o755)
    refused(r, f"{logs / '1n1g'}: cannot be listed (Permission denied): fix its permissions")


def _lines(path: Path, what: str) -> list[str]:
    return [ln for ln in path.read_text().splitlines(keepends=True) if what in ln]


@pytest.mark.parametrize("fmt", ["dlperf-tf2", "horovod", "ddp-bench", "plsc"])
def test_parsing_a_large_log_is_linear(fmt):
    """100k lines of horovod took 52 s (quadratic line numbering); 200k real figure lines in seconds."""
    n = 200_000
    if fmt == "dlperf-tf2":
        line = _lines(TF2 / "1n1g/rn50_b128_fp32_1.log", "between steps 100 and 200")[0]
        text = "".join(line.replace("steps 100 and 200", f"steps {100 * i} and {100 * (i + 1)}") for i in range(n))
        hints, figure = formats.Hints(), 327.08
    elif fmt == "horovod":
        lines = HOROVOD.read_text().splitlines(keepends=True)
        head, tail, it = lines[:6], lines[-2:], _lines(HOROVOD, "Iter #0:")[0]
        text = "".join(head + [it.replace("#0", f"#{i}") for i in range(n)] + tail)
        hints, figure = formats.Hints(), 432.8
    elif fmt == "ddp-bench":
        text = HPC.read_text()
        row = _lines(HPC, "no ddp")[0]
        at = text.index(row)
        text = text[:at] + row * n + text[at:]
        hints, figure = formats.Hints(devices=8, nodes=2, model="resnet50"), 8 * 1233
    else:
        line = _lines(PLSC, "Iter: 10/2503")[0]
        text = line * n
        hints, figure = formats.Hints(), 661.17681
    start = time.perf_counter()
    run = formats.FORMATS[fmt](text, None, hints)
    took = time.perf_counter() - start
    assert run.throughput == pytest.approx(figure)
    assert took < 10.0, f"{fmt}: {n} lines in {took:.1f} s"


def test_outputs_are_regular_files_and_nothing_else_is_replaced(tmp_path):
    target = tmp_path / "keep.json"
    target.write_text("mine\n")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    parent_file = tmp_path / "file"
    parent_file.write_text("")
    for out, words in ((link, "a symbolic link, not a regular file"), (fifo, "a FIFO, not a regular file"),
                       (Path("/dev/null"), "a character device, not a regular file"),
                       (parent_file / "r.json", f"{parent_file} is a file, not a directory")):
        refused(dlperf("import", str(TF2), "--format", "dlperf-tf2", "-o", str(out)), f"-o {out}: {words}")
    assert link.is_symlink() and target.read_text() == "mine\n" and fifo.is_fifo()
    good = tmp_path / "r.json"
    assert dlperf("import", str(TF2), "--format", "dlperf-tf2", "-o", str(good)).returncode == 0
    assert good.is_file() and not good.is_symlink() and not list(tmp_path.glob(".r.json.*"))  # no temporary left
    rep = tmp_path / "rep"
    rep.mkdir()
    (rep / "summary.md").symlink_to(target)
    refused(dlperf("report", str(good), "-o", str(rep)), f"{rep / 'summary.md'}: a symbolic link, not a regular file")
    assert sorted(p.name for p in rep.iterdir()) == ["summary.md"] and target.read_text() == "mine\n"


def test_report_and_compare_read_no_file_into_a_traceback(tmp_path):
    good = tmp_path / "good.json"
    assert dlperf("import", str(TF2), "--format", "dlperf-tf2", "-o", str(good)).returncode == 0
    text = good.read_text()
    for name, damaged in (("deep", text.replace('"failures": {}', '"failures": ' + "[" * 100_000 + "]" * 100_000)),
                          ("digits", re.sub(r'"schema": \d+', '"schema": ' + "9" * 5000, text, count=1))):
        bad = tmp_path / f"{name}.json"
        bad.write_text(damaged)
        refused(dlperf("report", str(bad), "-o", str(tmp_path / "rep")), f"{bad}: not a results.json")
        refused(dlperf("compare", str(good), str(bad)), f"{bad}: not a results.json")


def test_report_refuses_a_file_that_contradicts_itself(tmp_path):
    good = tmp_path / "good.json"
    assert dlperf("import", str(TF2), "--format", "dlperf-tf2", "-o", str(good)).returncode == 0
    for damage, words in (
            (lambda d: d["cases"][0].update(median=400.0), "'median' is 400.0, but the median of its 'throughputs' is "
                                                           "321.802"),
            (lambda d: d["cases"][1].update(speedup=2.5), "'speedup' is 2.5, but the medians of its cases give 1.78"),
            (lambda d: d["cases"][0]["runs"][2]["meta"]["parsed"].update(throughput=400.0),
             "runs[2] read 400.0 from its log, but throughputs[2] is"),
            (lambda d: d["cases"][0]["case"].update(id="vgg16-fp32-bs128-224px-1n1g"),
             "'case.id' is 'vgg16-fp32-bs128-224px-1n1g', but its fields make 'resnet50-fp32-bs128-224px-1n1g'")):
        doc = json.loads(good.read_text())
        damage(doc)
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps(doc))
        refused(dlperf("report", str(bad), "-o", str(tmp_path / "rep")), str(bad), words, "contradicts itself")
        refused(dlperf("compare", str(good), str(bad)), words)
    assert not (tmp_path / "rep").exists()


def _mutations(text: str, rng: random.Random, n: int) -> list[str]:
    """Damaged copies of a log: a character replaced, a span deleted, a line repeated or dropped, a
    number blown up, nested JSON, a 5000-digit number."""
    lines = text.splitlines(keepends=True)
    out = []
    for _ in range(n):
        kind, at = rng.randrange(7), rng.randrange(max(len(text), 1))
        if kind == 0:
            out.append(text[:at] + rng.choice("0123456789.-e x{}[]\"\n\t\x00é") + text[at + 1:])
        elif kind == 1:
            out.append(text[:at] + text[at + rng.randrange(1, 200):])
        elif kind == 2:
            i = rng.randrange(len(lines))
            out.append("".join(lines[:i] + [lines[i]] * 2 + lines[i + 1:]))
        elif kind == 3:
            i = rng.randrange(len(lines))
            out.append("".join(lines[:i] + lines[i + 1:]))
        elif kind == 4:
            out.append(text[:at] + "9" * 5000 + text[at:])
        elif kind == 5:
            out.append(text[:at] + "[" * 100_000 + text[at:])
        else:
            out.append(text[:at] + rng.choice(["nan", "inf", "-1", "1e999", "0", "1_000"]) + text[at:])
    return out


@pytest.mark.parametrize("fmt, path, hints", REAL, ids=[f"{f}-{p.name}" for f, p, _ in REAL])
def test_no_damage_to_a_log_ends_in_anything_but_a_refusal_naming_it(tmp_path, fmt, path, hints):
    """Fuzzed copies through the import: a ValueError naming the file (the command's one line), never
    another exception (a traceback)."""
    rng = random.Random(48)
    topo = {1: "1n1g", 4: "1n4g", 8: "2n4g", 16: "2n8g"}.get(hints.devices or 0) or (
        "1n4g" if "4gpu" in path.name or "1n4g" in str(path) else "1n8g" if "8gpu" in path.name else "1n1g")
    for i, text in enumerate(_mutations(path.read_text(), rng, 60)):
        logs = layout(tmp_path / str(i), {f"{topo}/{hints.model or 'resnet50'}_1.log": text})
        try:
            load(logs, fmt, over=Overrides(model=hints.model))
        except ValueError as exc:
            assert str(exc).startswith(str(logs)), str(exc)


def test_the_fuzzed_import_of_deep_json_and_huge_numbers_is_one_line(tmp_path):
    text = DLLOGGER.read_text()
    for i, bad in enumerate(('DLLL ' + "[" * 100_000 + "\n", 'DLLL {"step": [], "data": {"train.total_ips": '
                             + "9" * 5000 + "}}\n")):
        logs = layout(tmp_path / str(i), {"1n1g/rn50_1.log": text + bad})
        refused(dlperf("import", str(logs), "--format", "dllogger", "-o", str(tmp_path / "r.json")),
                "rn50_1.log: line 54: a DLLL record that is not JSON")
