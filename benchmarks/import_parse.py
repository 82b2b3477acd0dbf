#!/usr/bin/env python3
"""How fast ``dlperf import`` parses a large log, per format (issue #48: parsing must be linear).

For each format a log of about ``--lines`` lines is made from the shapes of the real logs in
tests/data (the figure lines the parser reads, a header and the end line the tool prints), parsed
``--repeats`` times with ``formats.FORMATS[fmt]``, and the best time printed as lines per second.
The logs are consistent (each interval's seconds x rate is its samples), so a parser that checks
them reads them whole. ``--code DIR`` parses with another checkout's ``pytest_dlperf`` (a before
measurement); ``--budget S`` stops growing a format's log once one parse takes longer than S.

    python3 benchmarks/import_parse.py --lines 1000000
    python3 benchmarks/import_parse.py --lines 20000 50000 --code /tmp/head
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def tf2(n: int) -> str:
    """DLPerf's TimeHistory lines, 100 steps of 128 samples each (39.13 s x 327.08/s = 12,799.6)."""
    head = "# a DLPerf TF2 run's TimeHistory lines, repeated\n"
    rows = [f"I0826 15:13:29.256277 140405777909504 keras_utils.py:133] TimeHistory: 39.13 seconds, 327.08 "
            f"examples/second between steps {100 * i} and {100 * (i + 1)}" for i in range(n)]
    return head + "\n".join(rows) + "\n"


def tf_cnn(n: int) -> str:
    """tf_cnn_benchmarks: header, one step line per step, the total."""
    head = ("Model:       resnet50\nBatch size:  448 global\n             448 per device\n"
            f"Num batches: {n}\nDevices:     ['/gpu:0']\n==========\nStep\tImg/sec\ttotal_loss\n")
    steps = "".join(f"{i}\timages/sec: 2083.0 +/- 0.0 (jitter = 0.0)\t7.904 1604266000\n" for i in range(1, n + 1))
    return head + steps + "-" * 64 + "\ntotal images/sec: 2075.05\n" + "-" * 64 + "\n"


def horovod(n: int) -> str:
    """Horovod's synthetic benchmark: header, one ``Iter #i`` line per iteration, its totals."""
    head = "Model: resnet50\nBatch size: 32\nNumber of GPUs: 4\nRunning warmup...\nRunning benchmark...\n"
    iters = "".join(f"Iter #{i}: 108.3 img/sec per GPU\n" for i in range(n))
    return head + iters + "Img/sec per GPU: 108.3 +-0.0\nTotal img/sec on 4 GPU(s): 433.2 +-0.0\n"


def ddp_bench(n: int) -> str:
    """PyTorch's DDP benchmark: one block of ``n`` rows (one per GPU count), the 8-GPU row read."""
    head = "-" * 35 + "\nPyTorch distributed benchmark suite\n" + "-" * 35 + "\n\nBenchmark: resnet50 with batch size 32\n\n"
    row = "  p50:  0.100s     319/s  p75:  0.100s     319/s  p90:  0.100s     319/s  p95:  0.100s     319/s\n"
    return head + "".join(f"{g:4d} GPUs --    1M/{g}G:{row}" for g in range(1, n + 1))


def dllogger(n: int) -> str:
    """DLLogger: a PARAMETER record, one record per iteration, the run's summary."""
    rec = 'DLLL {{"timestamp": "1570716921.842053", "type": "LOG", "step": {step}, "data": {data}}}\n'
    params = rec.format(step='"PARAMETER"', data=json.dumps({"arch": "resnet50", "batch_size": 128, "amp": True,
                                                               "world_size": 1}))
    iters = "".join(rec.format(step=f"[0, {i}]", data='{"train.loss": 8.5, "train.total_ips": 674.7}')
                    for i in range(1, n + 1))
    return params + iters + rec.format(step="[]", data='{"train.total_ips": 674.7}')


def plsc(n: int) -> str:
    """PaddleClas / PLSC: one ``ips:`` line per logged interval (batch_cost x ips = 512 samples)."""
    line = ("[2022/08/05 01:29:15] ppcls INFO: [Train][Epoch 3/360][Iter: {i}/2503]lr(LinearWarmup): 0.32070316, "
            "top1: 0.22106, CELoss: 4.46500, loss: 4.46500, batch_cost: 0.77438s, reader_cost: 0.47391, "
            "ips: 661.17681 samples/s, eta: 8 days, 0:44:51\n")
    return "".join(line.format(i=i) for i in range(n))


# format -> (log maker, warm-up, the layout's hints)
MAKERS: dict[str, tuple[Callable[[int], str], int | None, dict]] = {
    "dlperf-tf2": (tf2, None, {}), "tf_cnn": (tf_cnn, None, {}), "horovod": (horovod, None, {}),
    "ddp-bench": (ddp_bench, None, {"devices": 8, "nodes": 1, "model": "resnet50", "row": "1M/8G"}),
    "dllogger": (dllogger, None, {}), "plsc": (plsc, None, {}),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, nargs="+", default=[1_000_000], help="log sizes to parse (lines)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--budget", type=float, default=60.0, help="seconds one parse may take before larger sizes are skipped")
    ap.add_argument("--code", type=Path, default=ROOT, help="the checkout whose pytest_dlperf parses")
    ap.add_argument("--format", dest="formats", nargs="+", default=list(MAKERS), choices=list(MAKERS))
    args = ap.parse_args()
    sys.path.insert(0, str(args.code.resolve()))
    from pytest_dlperf import formats

    print(f"parsers of {Path(formats.__file__).resolve().parent}")
    print(f"{'format':<11} {'lines':>9} {'seconds':>8} {'lines/s':>11}  figure")
    for fmt in args.formats:
        make, warmup, hints = MAKERS[fmt]
        for n in args.lines:
            text = make(n)
            lines = text.count("\n")
            best = float("inf")
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                run = formats.FORMATS[fmt](text, warmup, formats.Hints(**hints))
                best = min(best, time.perf_counter() - t0)
                if best > args.budget:
                    break
            print(f"{fmt:<11} {lines:>9} {best:>8.3f} {lines / best:>11,.0f}  {run.throughput:.2f}", flush=True)
            if best > args.budget:
                print(f"{fmt:<11} larger sizes skipped: one parse took more than --budget {args.budget:g} s")
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
