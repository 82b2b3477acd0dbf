"""A user's own training script as the tiny engine plays one (tests of the external-benchmark mechanisms): a
standard-library loop that prints its throughput the way NVIDIA's DeepLearningExamples do (DLLogger ``DLLL {json}``
records), as examples/external/user_train.py does for ResNet-18 on torch. One process, launched on the node as it
is (``launch="per-node"``). A step takes a fixed time (a sleep), as a step bound by its device does, so that a
slower release is slower whatever the host's speed does between two sessions.

USER_TRAIN_SLOWDOWN=f (0 <= f < 1) makes every step slower by that fraction, as a slower release of the user's
software would be."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

STEP_SECONDS = 0.01  # a step of batch 8 at 32 px; more for larger ones


def dllogger(step, data: dict) -> None:  # noqa: ANN001
    print("DLLL " + json.dumps({"timestamp": f"{time.time()}", "type": "LOG", "step": step, "data": data}), flush=True)


def train_step(seconds: float) -> float:
    """One training step: its time, and a loss."""
    time.sleep(seconds)
    return 1.0


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--arch", default="resnet18")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--iters", type=int, default=5)
    args = p.parse_args()
    slow = float(os.environ.get("USER_TRAIN_SLOWDOWN", "0"))
    seconds = STEP_SECONDS * args.batch_size / 8 * max(1, (args.image_size // 32) ** 2)
    rates = []
    for i in range(args.warmup + args.iters):
        t0 = time.perf_counter()
        loss = train_step(seconds)
        if slow:
            time.sleep((time.perf_counter() - t0) * slow / (1 - slow))
        rate = args.batch_size / (time.perf_counter() - t0)
        if i >= args.warmup:
            rates.append(rate)
        dllogger([0, i], {"train.loss": loss, "train.total_ips": rate})
    dllogger([], {"train.total_ips": statistics.fmean(rates)})


if __name__ == "__main__":
    main()
