"""The step-log contract between a workload and the harness, version 1. Standard library only.

Every workload writes its results through this module, and the harness parses them with it: it is
copied to the nodes next to the workload (which imports it as ``steplog``). Rank 0 writes JSON
lines to the file given by ``--output``:

1. one ``meta`` line: ``{"kind": "meta", "contract": 1, ...}`` with at least the fields of
   ``META_FIELDS`` (what ran: model, sizes, world, the warm-up and window lengths actually run,
   the window's start and end on rank 0's clock, and ``frameworks``: package -> version);
2. one ``step`` line per step, warm-up included, numbered from 0: ``step``, ``warmup``,
   ``start``/``end`` (rank 0's clock, seconds), ``rank_times`` (the step's seconds on every rank),
   ``samples`` (global samples of the step) and optionally ``loss``;
3. one ``end`` line: ``steps`` (how many step lines) and ``param_digests``: per rank, after the
   last step, ``[sum, sum of squares]`` of the model's parameters in float64. Ranks whose
   parameters disagree stopped synchronising; such a run would look like perfect scaling, so the
   harness fails it.

A file that is empty, truncated, garbled or of another contract version is an error
(``StepLogError``) naming the file and the line. See the README's "Writing a workload".
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

VERSION = 1
FILE_NAME = "steps.jsonl"
META_FIELDS = ("model", "precision", "batch_size", "world_size", "warmup_iters", "iters", "window",
               "frameworks")
STEP_FIELDS = ("step", "warmup", "start", "end", "rank_times", "samples")
DIGEST_RTOL = 1e-6  # parameters of synchronised ranks are equal; this only absorbs summation order

# Fault hooks every workload gets through this module (for the harness's own tests):
# DLPERF_STEPLOG_FAULT=truncate stops the file in the middle of a step line, =garble writes a line
# that is not JSON. (DLPERF_FAULT and DLPERF_PLANT_SLOWDOWN are read by the workloads themselves.)
FAULT_ENV = "DLPERF_STEPLOG_FAULT"


class StepLogError(ValueError):
    """The step log cannot be used; the message names the file and what is wrong with it."""


class Writer:
    """Rank 0's writer: ``meta`` once, ``step`` per step, ``end`` last. A context manager."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fh = open(path, "w", encoding="utf-8")
        self._steps = 0
        self._fault = os.environ.get(FAULT_ENV, "")

    def _write(self, record: dict) -> None:
        self._fh.write(json.dumps(record, allow_nan=False) + "\n")

    def meta(self, **fields) -> None:
        missing = [f for f in META_FIELDS if f not in fields]
        if missing:
            raise ValueError(f"step log meta line lacks {', '.join(missing)} (contract v{VERSION})")
        self._write({"kind": "meta", "contract": VERSION, **fields})

    def step(self, *, step: int, warmup: bool, start: float, end: float, rank_times: list[float],
             samples: int, loss: float | None = None) -> None:
        record = {"kind": "step", "step": step, "warmup": warmup, "start": start, "end": end,
                  "rank_times": [float(t) for t in rank_times], "samples": int(samples)}
        if loss is not None and math.isfinite(loss):
            record["loss"] = float(loss)
        if self._fh.closed:  # truncated on purpose (the fault hook): the rest is lost
            return
        if self._fault and self._steps == 1:
            text = json.dumps(record)
            if self._fault == "truncate":
                self._fh.write(text[: len(text) // 2])
                self._fh.close()
                return
            if self._fault == "garble":
                self._fh.write(text.replace('"', "'") + "\n")
                self._steps += 1
                return
        self._write(record)
        self._steps += 1

    def end(self, param_digests: list[list[float]]) -> None:
        if not self._fh.closed:
            self._write({"kind": "end", "steps": self._steps,
                         "param_digests": [[float(v) for v in d] for d in param_digests]})

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass
class StepLog:
    """A parsed, complete step log."""

    meta: dict
    steps: list[dict]
    end: dict


def parse(text: str, source: str) -> StepLog:
    """Parse a whole step log; raise StepLogError naming ``source`` and the line at fault."""
    lines = text.splitlines()
    if not lines:
        raise StepLogError(f"{source}: the step log is empty (the workload wrote nothing)")
    if not text.endswith("\n"):
        raise StepLogError(f"{source}: line {len(lines)} is cut off (no newline): the step log is truncated")
    meta: dict | None = None
    steps: list[dict] = []
    end: dict | None = None
    for n, line in enumerate(lines, 1):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise StepLogError(f"{source}: line {n} is not JSON ({exc.msg}): {line[:80]!r}: "
                               "the step log is garbled") from None
        if not isinstance(rec, dict) or "kind" not in rec:
            raise StepLogError(f"{source}: line {n} is not a record with a 'kind': {line[:80]!r}")
        kind = rec["kind"]
        if end is not None:
            raise StepLogError(f"{source}: line {n}: {kind!r} after the 'end' line")
        if n == 1:
            if kind != "meta":
                raise StepLogError(f"{source}: line 1 is {kind!r}; the first line must be 'meta'")
            version = rec.get("contract")
            if version != VERSION:
                raise StepLogError(f"{source}: step-log contract version {version!r}; this harness reads "
                                   f"version {VERSION} (update the workload or pytest-dlperf)")
            _require(rec, META_FIELDS, source, n)
            meta = rec
        elif kind == "step":
            _require(rec, STEP_FIELDS, source, n)
            if rec["step"] != len(steps):
                raise StepLogError(f"{source}: line {n} is step {rec['step']}; expected step {len(steps)}")
            steps.append(rec)
        elif kind == "end":
            _require(rec, ("steps", "param_digests"), source, n)
            if rec["steps"] != len(steps):
                raise StepLogError(f"{source}: the 'end' line counts {rec['steps']} steps; the log has {len(steps)}")
            end = rec
        else:
            raise StepLogError(f"{source}: line {n}: unknown kind {kind!r}")
    if end is None:
        raise StepLogError(f"{source}: no 'end' line after {len(steps)} step(s): the step log is truncated "
                           "(did the workload stop early?)")
    assert meta is not None
    return StepLog(meta=meta, steps=steps, end=end)


def _require(rec: dict, fields: tuple[str, ...], source: str, n: int) -> None:
    missing = [f for f in fields if f not in rec]
    if missing:
        raise StepLogError(f"{source}: line {n} ({rec.get('kind')}) lacks {', '.join(missing)}")


def digests_disagree(digests: list[list[float]], rtol: float = DIGEST_RTOL) -> list[int]:
    """Ranks whose parameter digest differs from rank 0's (empty when all agree)."""
    if not digests:
        return []
    ref = digests[0]
    return [r for r, d in enumerate(digests[1:], 1)
            if len(d) != len(ref) or any(abs(a - b) > rtol * max(1.0, abs(b)) for a, b in zip(d, ref))]


def check_in_sync(log: StepLog, source: str) -> None:
    """Raise StepLogError when the ranks ended with different parameters."""
    digests = log.end["param_digests"]
    world = log.meta.get("world_size")
    if world is not None and len(digests) != world:
        raise StepLogError(f"{source}: {len(digests)} parameter digest(s) for {world} ranks")
    bad = digests_disagree(digests)
    if bad:
        shown = "; ".join(f"rank {r}: sum {digests[r][0]:.9g}" for r in [0, *bad[:3]])
        raise StepLogError(f"{source}: the ranks' parameters disagree after the last step ({shown}): "
                           "gradients were not synchronised, so this run's scaling is not real")
