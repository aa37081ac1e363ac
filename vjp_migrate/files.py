"""Stage 10b: the files themselves: read them, and replace them atomically.

Each write goes through a temporary file in the same folder (fsynced, given the file's mode,
owner and extended attributes, renamed over it only if the file still holds what was read and
is not read-only), so a run killed at any moment leaves every file either untouched or complete.
``write_batch`` makes the writes of many files durable together (see WriteBatch); transaction.py
builds multi-file migrations on ``write_temporary``.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vjp_migrate.source import SourceError


def read_bytes(path: Path) -> bytes:
    """The file's bytes; SourceError for a pipe, socket or device (opened without blocking)."""
    # O_NONBLOCK: a named pipe or device that took a file's place since discovery must not
    # block the run; it is refused after fstat. (No effect on regular files.)
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise SourceError("not a regular file (a pipe, socket or device); skipped")
        return handle.read()


class WriteError(OSError):
    """An OSError of a write itself (its folder not writable, a full disk), not of a read."""


@contextmanager
def _writing() -> Iterator[None]:
    try:
        yield
    except WriteError:
        raise
    except OSError as error:
        raise WriteError(error.errno, error.strerror, error.filename) from None


TEMPORARY_SUFFIX = ".vjp-migrate.tmp"
READ_ONLY = "is read-only"


def read_only(path: Path) -> bool:
    """Whether a file must not be written: we may not write it, or no write bit is set (a file
    made read-only by chmod is refused even when root, who may write anything, runs the fix)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False  # gone: the read before the rename says so
    return not mode & 0o222 or not os.access(path, os.W_OK)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    # A killed run's workers can linger as zombies nobody reaps (PID 1 of a container): dead.
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            state = stat_file.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):  # no /proc (macOS): trust kill()
        return True
    return state not in (b"Z", b"X")


def remove_stray_temporaries(folder: Path) -> list[Path]:
    """Delete the temporary files that a killed run left in ``folder``; return them.

    Temporaries are named ``.<file>.<pid>.<random>.vjp-migrate.tmp``; one whose process is
    still running belongs to a concurrent run and is left alone.
    """
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        if not (name.startswith(".") and name.endswith(TEMPORARY_SUFFIX)):
            continue
        parts = name[: -len(TEMPORARY_SUFFIX)].split(".")
        if len(parts) >= 4 and parts[-2].isdigit() and pid_alive(int(parts[-2])):
            continue
        try:
            if entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            pass
    return removed


def write_atomically(path: Path, data: bytes, expected: bytes) -> None:
    """Replace a file's bytes via a temporary file in its folder, keeping its mode, owner and
    extended attributes.

    A run killed at any moment leaves the file either untouched or complete: the new bytes
    are written and fsynced to a temporary file, which ``os.replace`` renames over the file.
    A symbolic link is written through (the link stays a link). Temporaries left by a killed
    run in the same folder are removed first. Raises SourceError when the file changed on
    disk since it was read, or is read-only (``read_only``: refused, never replaced); an
    OSError of the write itself (its folder not writable, a full disk) is a WriteError.
    """
    staged = _stage(path, data, clean=True)
    try:
        _fsync(staged.temporary)
        _commit(staged, expected)
    finally:
        staged.discard()
    fsync_folder(staged.target.parent)


@dataclass
class _Staged:
    """New bytes written (not yet fsynced) to a closed temporary file next to the target."""

    target: Path
    status: os.stat_result
    temporary: str

    def discard(self) -> None:
        if os.path.exists(self.temporary):
            os.unlink(self.temporary)


def _stage(path: Path, data: bytes, clean: bool) -> _Staged:
    target = Path(os.path.realpath(path))
    if clean:
        remove_stray_temporaries(target.parent)
    status = target.stat()  # a file gone since it was read: an OSError of the read, as read_bytes says it
    with _writing():
        handle, temporary = tempfile.mkstemp(
            prefix=f".{target.name}.{os.getpid()}.", suffix=TEMPORARY_SUFFIX, dir=target.parent
        )
    staged = _Staged(target, status, temporary)
    try:  # closed at once: a batch of thousands of files must not hold as many descriptors
        with _writing(), os.fdopen(handle, "wb") as out:
            out.write(data)
    except BaseException:
        staged.discard()
        raise
    return staged


def _fsync(temporary: str) -> None:
    """Make a closed file's bytes durable (fsync flushes the file, whichever descriptor wrote it)."""
    with _writing():
        descriptor = os.open(temporary, os.O_RDWR)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def _take_owner(staged: _Staged) -> None:
    """Give the closed temporary its target's mode, owner and extended attributes."""
    status, temporary = staged.status, staged.temporary
    with _writing():
        os.chmod(temporary, stat.S_IMODE(status.st_mode))
    if (status.st_uid, status.st_gid) != (os.getuid(), os.getgid()):
        # Not allowed unless root: then the file becomes ours, as with any editor.
        with contextlib.suppress(OSError):
            os.chown(temporary, status.st_uid, status.st_gid)
    _copy_extended_attributes(staged.target, temporary)  # after chown, which clears some of them


def _copy_extended_attributes(target: Path, temporary: str) -> None:
    """The target's extended attributes (user.* tags, POSIX ACLs, security labels) on the
    temporary, each that may be set: one we may not set (security.* without the privilege, a
    file system without them) is left behind rather than failing the write."""
    if not hasattr(os, "listxattr"):  # not Linux
        return
    try:
        names = os.listxattr(target)
    except OSError:
        return
    for name in names:
        with contextlib.suppress(OSError):
            os.setxattr(temporary, name, os.getxattr(target, name))


def write_temporary(target: Path, data: bytes) -> str:
    """A fsynced temporary file beside ``target`` holding ``data``, with target's mode, owner and
    extended attributes."""
    staged = _stage(target, data, clean=False)
    try:
        _fsync(staged.temporary)
        _take_owner(staged)
    except BaseException:
        staged.discard()
        raise
    return staged.temporary


def _commit(staged: _Staged, expected: bytes) -> None:
    """Rename a staged (and fsynced) temporary over its target, unless the target changed."""
    _take_owner(staged)
    temporary, target = staged.temporary, staged.target
    if read_bytes(target) != expected:
        raise SourceError("changed on disk while it was being fixed; left untouched")
    if read_only(target):
        raise SourceError(f"{READ_ONLY}; left untouched")
    with _writing():
        os.replace(temporary, target)


class WriteBatch:
    """The writes of a group of files, made durable together.

    Each file is still replaced atomically (temporary file, fsync, checked rename), but the
    writes wait for ``finish``: then every temporary is written (and closed: a batch never holds
    a descriptor per file), all their fsyncs run at once in threads (the file system commits
    them together instead of one journal commit per file), the renames follow, and each folder
    is fsynced once. Until ``finish`` returns, a power cut can only bring back old files, never
    half ones.
    """

    def __init__(self) -> None:
        self._pending: list[tuple[Path, bytes, bytes]] = []
        self._pool: Any = None

    def write(self, path: Path, data: bytes, expected: bytes) -> None:
        self._pending.append((path, data, expected))

    def finish(self) -> dict[Path, Exception]:
        """Do the writes; why each file that could not be written was not."""
        failed: dict[Path, Exception] = {}
        staged: list[tuple[Path, _Staged, bytes]] = []
        folders: set[Path] = set()
        try:
            for path, data, expected in self._pending:
                folder = Path(os.path.realpath(path)).parent
                try:
                    staged.append((path, _stage(path, data, clean=folder not in folders), expected))
                except Exception as error:
                    failed[path] = error
                folders.add(folder)
            if self._pool is None and staged:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="vjp-migrate-fsync")
            synced = list(self._pool.map(_fsync_or_error, [s.temporary for _, s, _ in staged])) if staged else []
            for (path, one, expected), problem in zip(staged, synced, strict=True):
                try:
                    if problem is not None:
                        raise problem
                    _commit(one, expected)
                except Exception as error:
                    failed[path] = error
            for folder in sorted(folders):
                fsync_folder(folder)
        finally:
            for _, one, _ in staged:
                one.discard()  # nothing left after a rename
            self._pending.clear()
        return failed

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


def _fsync_or_error(temporary: str) -> OSError | None:
    try:
        _fsync(temporary)
    except OSError as error:
        return error
    return None


_BATCH: list[WriteBatch] = []


def write_file(path: Path, data: bytes, expected: bytes) -> None:
    """Write ``data`` over ``path`` if it still holds ``expected``: now, or inside ``write_batch``
    through the batch (a failure then comes back from WriteBatch.finish)."""
    if _BATCH:
        _BATCH[-1].write(path, data, expected)
    else:
        write_atomically(path, data, expected)


@contextmanager
def write_batch() -> Iterator[WriteBatch]:
    """Inside the block, ``write_file`` hands its writes to the batch (see WriteBatch)."""
    batch = WriteBatch()
    _BATCH.append(batch)
    try:
        yield batch
    finally:
        _BATCH.pop()
        batch.finish()
        batch.close()


def fsync_folder(folder: Path) -> None:
    """Make the rename itself durable (a power cut after it must not bring the old file back)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
