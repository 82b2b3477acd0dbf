"""SIGTERM in a dlperf session: a CI job's timeout unwinds like Ctrl-C while a cluster is held,
and a second SIGTERM cannot cut the cluster's clean-up short."""
from __future__ import annotations

import signal
import threading
from collections.abc import Callable


def _sigterm(handler) -> Callable[[], None]:  # noqa: ANN001 - a signal handler or SIG_IGN
    """Set SIGTERM's handler (main thread only); the returned function puts the previous one back."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.signal(signal.SIGTERM, handler)
    return lambda: signal.signal(signal.SIGTERM, previous)


def _interrupt(signum, frame):  # noqa: ANN001
    raise KeyboardInterrupt(f"signal {signum}")


def sigterm_until_restored() -> Callable[[], None]:
    """SIGTERM raises KeyboardInterrupt (pytest then ends the session through sessionfinish) until
    the returned function restores the previous handler."""
    return _sigterm(_interrupt)


def sigterm_ignored() -> Callable[[], None]:
    """Ignore SIGTERM until the returned function puts the previous handler back."""
    return _sigterm(signal.SIG_IGN)
