"""Stage 14 (the edges): SIGTERM and SIGHUP end a run the way Ctrl-C does.

A supervisor, an editor, ``Popen.terminate()`` or ``docker stop`` stops a process with SIGTERM,
a closed terminal with SIGHUP. At their default they end the process on the spot, and the run
has no say. Handled here, they raise ``Stopped`` (a KeyboardInterrupt), so the run unwinds as it
does for Ctrl-C: its worker processes and the command ``record`` runs are ended, a multi-file
migration caught between its renames keeps its journal (the next ``fix`` completes it), and the
exit status is 128 plus the signal's number, as a shell reports a process that signal ended.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["Stopped", "default_stops", "exit_status", "interrupted", "stops_interrupt"]

STOPS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP (``signum``) arrived: the run stops as for Ctrl-C."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise(signum: int, frame: FrameType | None) -> None:
    raise Stopped(signum)


@contextmanager
def stops_interrupt() -> Iterator[None]:
    """Inside the block, SIGTERM and SIGHUP raise Stopped; one whose disposition is not the default
    is left alone (``nohup`` ignores SIGHUP, and so must the run)."""
    previous = {}
    if threading.current_thread() is threading.main_thread():  # the only thread handlers may be set in
        for signum in STOPS:
            if signal.getsignal(signum) is signal.SIG_DFL:
                previous[signum] = signal.signal(signum, _raise)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def default_stops() -> None:
    """In a forked worker: the default dispositions back, in place of the parent's handler."""
    for signum in STOPS:
        if signal.getsignal(signum) is _raise:
            signal.signal(signum, signal.SIG_DFL)


def exit_status(interrupt: KeyboardInterrupt) -> int:
    """128 + the signal's number: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP."""
    return 128 + (interrupt.signum if isinstance(interrupt, Stopped) else signal.SIGINT)


def interrupted(interrupt: KeyboardInterrupt) -> str:
    """The line that ends an interrupted run."""
    if isinstance(interrupt, Stopped):
        return f"Interrupted by {signal.Signals(interrupt.signum).name}."
    return "\nInterrupted."  # after the terminal's ^C
