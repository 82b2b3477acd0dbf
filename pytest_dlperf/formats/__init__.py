"""Parsers of peers' benchmark output, one module per format: text of one run -> ParsedRun. Read by
``dlperf import`` (importers) and by external benchmarks' launcher (launchers/external) alike.

Each takes the figures the tool itself prints and applies the field's rule (DLPerf's): the
intervals or steps of the warm-up are dropped, the run's throughput is the mean of the remaining
rates (or the tool's own total where it prints one over its measured steps), and the case's
figure is the median over runs (``importers.load``). What a log lacks stays absent (no step-time
percentiles where it prints none). A log without the lines a format needs, cut short, contradicting
itself, or with a figure that is not a plausible throughput (NaN, inf, zero, negative, more than a
billion samples/s), raises ``ValueError`` saying which line and why; what a parser cannot vouch for
(a log whose end cannot be told) is in the run's ``warnings``. Each parser reads its log in one pass
(linear: ``benchmarks/import_parse.py`` measures it).
"""
from __future__ import annotations

from collections.abc import Callable

from . import ddp_bench, dllogger, dlperf_tf2, horovod, plsc, tf_cnn
from .base import MODEL_ALIASES, Hints, Origin, ParsedRun, our_model, same_model

FORMATS: dict[str, Callable[..., ParsedRun]] = {
    m.NAME: m.parse for m in (dlperf_tf2, tf_cnn, horovod, ddp_bench, dllogger, plsc)
}

__all__ = ["FORMATS", "MODEL_ALIASES", "Hints", "Origin", "ParsedRun", "our_model", "same_model"]
