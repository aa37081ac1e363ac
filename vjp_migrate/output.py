"""Stage 14 (the edges): standard output whose failures are told apart from every other OSError.

A report that cannot be written (a full disk, a closed descriptor, a reader that went away)
must end the run with one line and exit 2, as ruff does, never a traceback or exit 1 (the
findings code). ``guarded`` puts a thin wrapper in place of ``sys.stdout`` that raises
OutputError for what the stream refuses; an OSError from anywhere else stays what it is.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["OutputError", "guarded", "silence", "standard_descriptors"]


class OutputError(Exception):
    """Standard output cannot be written; ``reason`` says why, ``broken_pipe`` when its reader left."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error.strerror or str(error))
        self.reason = error.strerror or str(error)
        self.broken_pipe = error.errno == errno.EPIPE


class _Guarded:
    """``stream`` (text or its binary buffer), with write and flush errors turned into OutputError."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, data: Any) -> int:
        try:
            return int(self._stream.write(data))
        except OSError as error:
            raise OutputError(error) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as error:
            raise OutputError(error) from None

    @property
    def buffer(self) -> _Guarded:
        return _Guarded(self._stream.buffer)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Closed:
    """Standard output when the process started without one (``>&-``: Python's ``sys.stdout`` is None)."""

    encoding, errors = "utf-8", "strict"

    def write(self, data: str | bytes) -> int:
        if data:
            raise OutputError(OSError(errno.EBADF, "standard output is closed"))
        return 0

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    @property
    def buffer(self) -> _Closed:
        return self


@contextmanager
def guarded() -> Iterator[None]:
    """Inside the block, ``sys.stdout`` raises OutputError when it cannot be written; what is still
    buffered is flushed before the block ends, so that a failure surfaces here, not at exit."""
    original = sys.stdout
    sys.stdout = _Closed() if original is None else _Guarded(original)
    try:
        try:
            yield
        finally:
            sys.stdout.flush()
    finally:
        sys.stdout = original


def silence() -> None:
    """Send what is left of standard output nowhere, so that Python's own flush at exit cannot
    fail again (the Python documentation's advice for a broken pipe)."""
    with contextlib.suppress(AttributeError, OSError, ValueError), open(os.devnull, "wb") as devnull:
        os.dup2(devnull.fileno(), sys.stdout.fileno())


def standard_descriptors() -> None:
    """Open the standard descriptors the process started without (``2>&-``) on /dev/null.

    Otherwise the next file the run opens takes the number, and whatever writes to it (a native
    parser's panic, faulthandler, a library's warning) lands in that file, which may be one
    being written. A closed stderr then writes nowhere; a closed stdout stays closed for
    ``guarded`` (one line, exit 2), since the report the user asked for cannot be written.
    """
    for descriptor in (0, 1, 2):
        try:
            os.fstat(descriptor)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != descriptor:
                os.dup2(null, descriptor)
                os.close(null)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - for the rest of the run
