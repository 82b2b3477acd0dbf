"""The scaffold every node-side workload shares (standard library only; copied beside each one, as
``steplog.py`` is): the flags the harness gives every workload (``add_arguments``; the launchers'
``workload_flags``), the base of a real-data feed (``Feed``: epoch after epoch, each batch's wait, the
loader timed alone, one error line naming what did not read) and the meta line's ``input`` record
(``input_facts``). A new engine's workload adds only its own flags, model and step, and its loader only
how it reads (docs/writing-a-workload.md). Imports nothing from the harness."""
from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

SYNTHETIC = "synthetic"
LOADER_SECONDS = 1.0  # a loader alone is timed over about this long (LOADER_BATCHES at least) before training
LOADER_BATCHES = 3


def add_arguments(p: argparse.ArgumentParser, models: Sequence[str], sources: Mapping[str, str],
                  engines: Sequence[str] = ()) -> None:
    """The flags every workload takes. ``sources``: the data sources it reads besides synthetic, each with
    how (for --help); ``engines``: its --engine choices, the first the default (none: no --engine flag)."""
    p.add_argument("--model", choices=tuple(models), required=True)
    if engines:
        p.add_argument("--engine", choices=tuple(engines), default=engines[0],
                       help="how gradients are synchronised (horovod, perseus: started by horovodrun/perseusrun)")
    p.add_argument("--precision", choices=("fp32", "amp"), default="fp32")
    p.add_argument("--batch-size", type=int, required=True, help="samples per device per step")
    p.add_argument("--image-size", type=int, required=True, help="image side; sequence length for token models")
    p.add_argument("--num-classes", type=int, default=1000, help="classes (ArcFace: identities)")
    p.add_argument("--warmup-iters", type=int, default=5, help="warm-up steps, at least")
    p.add_argument("--max-warmup-iters", type=int, default=0,
                   help="warm-up steps at most, until two agree (0: exactly --warmup-iters)")
    p.add_argument("--iters", type=int, default=20, help="measured steps (the least, with --window-seconds)")
    p.add_argument("--window-seconds", type=float, default=0.0,
                   help="size the window to about this many seconds at the warm-up's pace (0: --iters)")
    p.add_argument("--max-iters", type=int, default=0, help="measured steps at most (0: no cap)")
    p.add_argument("--threads", type=int, default=0, help="intra-op threads per process (0: the framework's default)")
    p.add_argument("--seed", type=int, default=0)
    said = "; ".join(f"{name}: {how}" for name, how in sources.items())
    p.add_argument("--data", choices=(SYNTHETIC, *sources), default=SYNTHETIC,
                   help=f"{SYNTHETIC}: one batch made once, trained on every step; {said}")
    p.add_argument("--data-dir", default="", help="real data: the dataset's directory")
    p.add_argument("--data-workers", type=int, default=0,
                   help="real data: the loader's worker processes (or threads) per rank")
    p.add_argument("--drop-caches", action="store_true",
                   help="real data: empty the page cache before reading (root), so that the first epoch reads the disk")
    p.add_argument("--checkpoint-dir", default="",
                   help="after the window, save the model's and optimizer's state in this directory (one every rank "
                        "reaches), load it back, each timed on every rank, then remove it ('': no checkpoint)")
    p.add_argument("--output", required=True, help="the step log (JSON lines), written by rank 0")


@contextlib.contextmanager
def failing(errors: type[BaseException] | tuple[type[BaseException], ...], fail: Callable[[str], None]) -> Iterator[None]:
    """An error of ``errors`` (a dataset that is not there, too small, unreadable) stops the rank with its
    message as the one error line (``steplog.fail``), and goes on up."""
    try:
        yield
    except errors as exc:
        fail(str(exc))
        raise


def input_facts(args: argparse.Namespace, fmt: str, workers: int | str, size: int, counted: Mapping[str, int],
                source: str = "real", **more: object) -> dict:
    """The meta line's ``input`` record of a real-data feed: its source, format, directory, loader workers, what
    it holds (``counted``: samples or shards), its bytes and whether they fit in the page cache, and
    ``more`` of the source's own."""
    import dataset  # copied beside every workload that reads real data

    return {"source": source, "format": fmt, "dir": args.data_dir, "workers": workers, **counted, "bytes": size,
            "page_cache": dataset.page_cache(size, args.drop_caches), **more}


class Feed:
    """A rank's real batches, epoch after epoch (``epoch(k)``: the loader's iterable for epoch k); each
    call's wait for the loader is kept (``waits``, seconds), and an error of ``errors`` stops the rank with
    the line ``said`` makes of it. A loader says only how it reads: its ``epoch``, its errors, and
    ``prepare`` (a host batch made the step's input: on the device, normalised)."""

    errors: tuple[type[BaseException], ...] = ()

    def __init__(self, epoch: Callable[[int], Iterable], fail: Callable[[str], None], ahead: int = 1) -> None:
        """``ahead``: the batches its workers hold ready from their start (workers x prefetch, and one)."""
        self.epoch_iter, self.fail, self.ahead = epoch, fail, ahead
        self.epoch, self.waits = 0, []
        self.it = iter(epoch(0))

    def said(self, exc: BaseException) -> str:
        """The error line for a batch that did not come."""
        return f"the data loader failed: {' '.join(str(exc).split())[:500]}"

    def prepare(self, batch):  # noqa: ANN001, ANN201 - the loader's batch
        return batch

    def _next(self):  # noqa: ANN202 - the loader's batch
        try:
            return next(self.it)
        except StopIteration:
            self.epoch += 1
            self.it = iter(self.epoch_iter(self.epoch))
            return next(self.it)

    def fetch(self):  # noqa: ANN201 - the loader's batch, on the host
        t0 = time.perf_counter()
        try:
            batch = self._next()
        except self.errors as exc:
            self.fail(self.said(exc))
            raise
        self.waits.append(time.perf_counter() - t0)
        return batch

    def __call__(self):  # noqa: ANN204 - the step's input
        return self.prepare(self.fetch())

    def alone(self, batch_size: int, seconds: float = LOADER_SECONDS) -> float:
        """Decoded samples/s of the loader with nothing training beside it, after the ``ahead`` batches its
        workers hold ready from their start: the loader's own steady speed, not its queue's, whatever engine
        reads it. Its waits are not kept."""
        for _ in range(max(1, self.ahead)):
            self.fetch()
        n, t0 = 0, time.perf_counter()
        while n < LOADER_BATCHES or time.perf_counter() - t0 < seconds:
            self.fetch()
            n += 1
        rate = n * batch_size / (time.perf_counter() - t0)
        self.waits.clear()
        return rate

    def window_waits(self, warmup: int, iters: int) -> list[float]:
        """The waits of the window's steps (after ``warmup`` steps)."""
        return self.waits[warmup:warmup + iters]
