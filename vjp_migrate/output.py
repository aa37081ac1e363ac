"""Stage 14 (the edges): standard output whose failures are told apart from every other OSError,
and standard error whose failures change nothing.

A report that cannot be written (a full disk, a closed descriptor, a reader that went away)
must end the run with one line and exit 2, as ruff does, never a traceback or exit 1 (the
findings code). ``guarded`` puts a thin wrapper in place of ``sys.stdout`` that raises
OutputError for what the stream refuses; an OSError from anywhere else stays what it is.
Messages on stderr (errors, summaries, warnings) that cannot be written are lost, but the exit
code still says what the run found (``messages_may_fail``): a CI log on a full disk must not
turn an error into "findings", or ``--exit-zero`` into 1.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["OutputError", "guarded", "messages_may_fail", "silence", "standard_descriptors"]


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

    def _refused(self, error: OSError) -> None:
        raise OutputError(error) from None

    def write(self, data: Any) -> int:
        try:
            return int(self._stream.write(data))
        except OSError as error:
            self._refused(error)
            return len(data)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as error:
            self._refused(error)

    @property
    def buffer(self) -> _Guarded:
        return type(self)(self._stream.buffer)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Lossy(_Guarded):
    """Standard error: what it refuses is dropped, and from then on it writes to /dev/null (so that
    what is still buffered, flushed at exit, cannot fail again and make Python exit 120)."""

    def _refused(self, error: OSError) -> None:
        _to_null(self._stream)
        with contextlib.suppress(OSError, ValueError):
            self._stream.flush()


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
    with _in_place_of("stdout", _Closed() if sys.stdout is None else _Guarded(sys.stdout)):
        yield


@contextmanager
def messages_may_fail() -> Iterator[None]:
    """Inside the block, a write to ``sys.stderr`` that fails is dropped instead of raising."""
    with _in_place_of("stderr", _Lossy(sys.stderr)):
        yield


@contextmanager
def _in_place_of(name: str, stream: object) -> Iterator[None]:
    original = getattr(sys, name)
    setattr(sys, name, stream)
    try:
        try:
            yield
        finally:
            getattr(sys, name).flush()
    finally:
        setattr(sys, name, original)


def silence() -> None:
    """Send what is left of standard output nowhere, so that Python's own flush at exit cannot
    fail again (the Python documentation's advice for a broken pipe)."""
    _to_null(sys.stdout)


def _to_null(stream: Any) -> None:
    with contextlib.suppress(AttributeError, OSError, ValueError), open(os.devnull, "wb") as devnull:
        os.dup2(devnull.fileno(), stream.fileno())


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
