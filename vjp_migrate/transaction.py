"""Stage 10c: write the files of one migration together (all or none), and finish interrupted ones.

A migration whose fwd and bwd live in other modules changes several files; a reader must never
find half of it. ``write_together`` does this:

1. each new text goes to a fsynced temporary beside its file (mode, owner and extended
   attributes copied; a symbolic link is written through), exactly as a single-file fix does;
2. each file is read again: it must still hold the bytes the change was planned from, and be
   writable (a read-only file is refused, not silently replaced);
3. a journal is written in the files' common folder, to a temporary first, fsynced and renamed
   into place, so it exists complete or not at all: ``.vjp-migrate-journal.<pid>.<random>.json``
   holding, for each file, its path and its temporary's (relative to the journal's folder), and
   its old and new bytes with their sha256;
4. each temporary is renamed over its file, then the folders are fsynced;
5. the journal is removed.

Any failure in steps 1-3 changes no file (SourceError naming the file). An error raised in step
4 puts the files already renamed back to their old bytes. A process killed in step 4 leaves the
journal, and ``recover`` (run first by every writing ``fix``) finishes it (a run that writes
nothing, ``check`` or ``fix --diff``, only warns about it: ``pending``):

- when every file still holds its old or its new bytes, the migration is completed (roll
  forward): the intent was recorded before the first rename, and every new text is known;
- when a file holds neither (edited or deleted since the kill), completing would overwrite that
  edit, so the migration is rolled back: the files holding the new bytes get their old bytes
  back, and the edited one is left as it is.

Only a journal vjp-migrate could have written (journal_trust: the user's own, naming Python
files of its folder, reached without symbolic links, outside version-control folders) is
finished, and only by a run given every file it names: any other gets one warning line instead.

The journal holds the bytes themselves, not just their hashes, so that neither direction needs
the temporaries: they belong to a dead process and the next write in their folder removes them
as strays (``remove_stray_temporaries``). Source files are small, and a journal lives only for
the few milliseconds of the renames. A journal whose process is still running belongs to a
concurrent run and is left alone; discovery never looks at it (not a ``.py`` file) and the
stray-temporary cleanup never matches its name.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import secrets
import signal
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from vjp_migrate.discover import SKIP_DIRS
from vjp_migrate.files import (
    READ_ONLY,
    TEMPORARY_SUFFIX,
    fsync_folder,
    pid_alive,
    read_bytes,
    read_only,
    remove_stray_temporaries,
    write_atomically,
    write_temporary,
)
from vjp_migrate.journal_trust import untrusted_files, untrusted_journal
from vjp_migrate.model import FileResult
from vjp_migrate.source import SourceError
from vjp_migrate.wording import count, shell_path

__all__ = ["JOURNAL_PREFIX", "FileChange", "pending", "recover", "write_together"]

JOURNAL_PREFIX = ".vjp-migrate-journal."
JOURNAL_SUFFIX = ".json"
# Test-only fault injection: "<renames>[:<signal name>]" sends this process SIGKILL (or that
# signal) after that many renames of write_together.
KILL_HOOK = "VJP_MIGRATE_TEST_KILL_AFTER_RENAMES"
UNCHANGED = "no file of this migration was changed"


@dataclass(frozen=True)
class FileChange:
    path: Path
    old: bytes  # the bytes the change was planned from (the file must still hold them)
    new: bytes


@dataclass(frozen=True)
class Outcome:
    """A run's results, and the files each multi-file migration changes (written together)."""

    results: list[FileResult]
    groups: list[list[FileChange]]


@dataclass(frozen=True)
class _Entry:
    change: FileChange
    target: Path  # the real file (a symbolic link is written through)
    temporary: str = ""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _why(error: OSError) -> str:
    return error.strerror or str(error)


def _resolve(changes: Sequence[FileChange]) -> list[_Entry]:
    entries, seen = [], set()
    for change in changes:
        target = Path(os.path.realpath(change.path))
        if target in seen:
            raise SourceError(f"{change.path}: listed twice in one migration; {UNCHANGED}")
        seen.add(target)
        entries.append(_Entry(change, target))
    return entries


def _check_target(entry: _Entry) -> None:
    path = entry.change.path
    try:
        current = read_bytes(entry.target)
    except SourceError as error:
        raise SourceError(f"{path}: {error}; {UNCHANGED}") from None
    except OSError as error:
        raise SourceError(f"{path}: cannot be read: {_why(error)}; {UNCHANGED}") from None
    if current != entry.change.old:
        raise SourceError(f"{path}: changed on disk since it was read; {UNCHANGED}")
    if read_only(entry.target):
        raise SourceError(f"{path}: {READ_ONLY}; {UNCHANGED}")


def _journal_body(folder: Path, entries: Sequence[_Entry]) -> bytes:
    files = [
        {
            "path": os.path.relpath(e.target, folder),
            "temporary": os.path.relpath(e.temporary, folder),
            "old_sha256": _sha256(e.change.old),
            "new_sha256": _sha256(e.change.new),
            "old": base64.b64encode(e.change.old).decode("ascii"),
            "new": base64.b64encode(e.change.new).decode("ascii"),
        }
        for e in entries
    ]
    return json.dumps({"version": 1, "pid": os.getpid(), "files": files}, indent=1).encode("utf-8")


def _write_journal(folder: Path, entries: Sequence[_Entry]) -> Path:
    """The journal, complete or absent: written to a temporary, fsynced, renamed into place."""
    name = f"{JOURNAL_PREFIX}{os.getpid()}.{secrets.token_hex(4)}"
    temporary = folder / f"{name}{TEMPORARY_SUFFIX}"
    journal = folder / f"{name}{JOURNAL_SUFFIX}"
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as out:
            out.write(_journal_body(folder, entries))
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, journal)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise SourceError(f"{folder}: cannot write the migration journal: {_why(error)}; {UNCHANGED}") from None
    fsync_folder(folder)
    return journal


def _kill_after() -> tuple[int, signal.Signals] | None:
    renames, _, name = os.environ.get(KILL_HOOK, "").partition(":")
    return (int(renames), signal.Signals[name or "SIGKILL"]) if renames.isdigit() else None


class _Interrupted(SourceError):
    """Renaming failed and so did putting the renamed files back: the journal must stay."""


def _rename_all(entries: Sequence[_Entry]) -> None:
    kill_after = _kill_after()
    renamed: list[_Entry] = []
    try:
        for entry in entries:
            if kill_after is not None and len(renamed) == kill_after[0]:
                os.kill(os.getpid(), kill_after[1])
            os.replace(entry.temporary, entry.target)
            renamed.append(entry)
    except OSError as error:
        failed = entries[len(renamed)].change.path
        try:
            for done in renamed:
                write_atomically(done.target, done.change.old, done.change.new)
        except (OSError, SourceError):
            raise _Interrupted(
                f"{failed}: cannot be written: {_why(error)}; the migration was interrupted and the "
                "next fix completes or rolls it back"
            ) from None
        raise SourceError(f"{failed}: cannot be written: {_why(error)}; {UNCHANGED}") from None


def write_together(changes: Sequence[FileChange]) -> None:
    """Write all files or none. Raises SourceError (vjp_migrate.source) with one line naming the
    file and the reason when any file cannot be written; then no file is changed."""
    entries = _resolve(changes)
    if not entries:
        return
    folders = sorted({e.target.parent for e in entries})
    for folder in folders:
        remove_stray_temporaries(folder)
    written: list[_Entry] = []
    journal: Path | None = None
    try:
        for entry in entries:
            try:
                written.append(_Entry(entry.change, entry.target, write_temporary(entry.target, entry.change.new)))
            except OSError as error:
                raise SourceError(f"{entry.change.path}: cannot be written: {_why(error)}; {UNCHANGED}") from None
        for entry in written:
            _check_target(entry)
        journal = _write_journal(Path(os.path.commonpath(folders)), written)
        _rename_all(written)
        for folder in folders:
            fsync_folder(folder)
        os.unlink(journal)
        fsync_folder(journal.parent)
    except _Interrupted:
        raise
    except SourceError:
        if journal is not None:
            with contextlib.suppress(OSError):
                os.unlink(journal)
        raise
    finally:
        for entry in written:
            with contextlib.suppress(OSError):
                os.unlink(entry.temporary)


# --- recovery ----------------------------------------------------------------------------------


def _journal_pid(name: str) -> int | None:
    if not (name.startswith(JOURNAL_PREFIX) and name.endswith(JOURNAL_SUFFIX)):
        return None
    parts = name[len(JOURNAL_PREFIX) : -len(JOURNAL_SUFFIX)].split(".")
    return int(parts[0]) if len(parts) == 2 and parts[0].isdigit() else None


def _stale(folder: Path, names: Iterable[str]) -> Iterator[Path]:
    for name in sorted(names):
        pid = _journal_pid(name)
        if pid is not None and not pid_alive(pid):
            yield folder / name


def _stale_journals(paths: Sequence[Path]) -> Iterator[Path]:
    """Journals of dead processes in every folder below the paths (pruned as discovery prunes)
    and every folder above them: a journal sits in the common folder of its files, which may be
    higher up."""
    for path in paths:
        real = Path(os.path.realpath(path))
        start = real if real.is_dir() else real.parent
        for folder in (start, *start.parents):
            with contextlib.suppress(OSError), os.scandir(folder) as entries:
                yield from _stale(folder, [e.name for e in entries if e.name.startswith(JOURNAL_PREFIX)])
        if real.is_dir():
            for root, dirs, files in os.walk(real):
                dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")]
                if root != str(real):
                    yield from _stale(Path(root), [f for f in files if f.startswith(JOURNAL_PREFIX)])


@dataclass(frozen=True)
class _Recorded:
    path: Path
    old: bytes
    new: bytes


def _load(journal: Path) -> list[_Recorded]:
    """The journal's files; ValueError when it is not a journal this version wrote intact."""
    body = json.loads(journal.read_bytes())
    if not isinstance(body, dict) or body.get("version") != 1 or not isinstance(body.get("files"), list):
        raise ValueError("unknown format")
    recorded = []
    for item in body["files"]:
        old, new = base64.b64decode(item["old"]), base64.b64decode(item["new"])
        if (_sha256(old), _sha256(new)) != (item["old_sha256"], item["new_sha256"]):
            raise ValueError("its contents do not match their checksums")
        recorded.append(_Recorded(journal.parent / item["path"], old, new))
    return recorded


def _under(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def _current(path: Path) -> bytes | None:
    try:
        return read_bytes(path)
    except (OSError, SourceError):
        return None


def _finish(journal: Path, recorded: Sequence[_Recorded]) -> str:
    names = ", ".join(os.path.relpath(r.path, journal.parent) for r in recorded)
    what = f"migration of {count(len(recorded), 'file')} in {journal.parent}: {names}"
    states = [_current(r.path) for r in recorded]
    edited = [r for r, now in zip(recorded, states, strict=True) if now not in (r.old, r.new)]
    try:
        if not edited:
            for r, now in zip(recorded, states, strict=True):
                if now == r.old:
                    write_atomically(r.path, r.new, r.old)
            message = f"completed an interrupted {what}"
        else:
            for r, now in zip(recorded, states, strict=True):
                if now == r.new and r.new != r.old:
                    write_atomically(r.path, r.old, r.new)
            changed = ", ".join(os.path.relpath(r.path, journal.parent) for r in edited)
            message = f"rolled back an interrupted {what} ({changed} changed since; left as it is)"
    except (OSError, SourceError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        return f"could not finish an interrupted {what}: {reason}; the journal {journal} is kept"
    try:
        journal.unlink()
    except OSError as error:
        return f"{message}; but its journal {journal} cannot be removed: {_why(error)}"
    fsync_folder(journal.parent)
    for r in recorded:
        remove_stray_temporaries(r.path.parent)
    return message


def _journals_for(paths: Sequence[Path]) -> Iterator[tuple[Path, list[_Recorded], str]]:
    """Each journal of a dead process that concerns ``paths`` (one of its files is at or below
    them), once, with its files and, when this run must not complete it, the warning that says
    why: a journal that cannot be read or that vjp-migrate cannot have written (journal_trust)
    comes wherever it is, and one whose files are not all below ``paths`` is left to a run given
    its folder (it may lie above them, up to ``/``)."""
    roots = [Path(os.path.realpath(p)) for p in paths]
    seen = set()
    for journal in _stale_journals(paths):
        if journal in seen:
            continue
        seen.add(journal)
        if why := untrusted_journal(journal):
            yield journal, [], _refused(journal, why)
            continue
        try:
            recorded = _load(journal)
        except (OSError, ValueError, LookupError, TypeError, AttributeError, RecursionError) as error:
            yield journal, [], _unreadable(journal, error)
            continue
        if not any(_under(r.path, roots) for r in recorded):
            continue
        if why := untrusted_files(journal.parent, [r.path for r in recorded]):
            yield journal, recorded, _refused(journal, why)
        elif outside := [r for r in recorded if not _under(r.path, roots)]:
            yield journal, recorded, _elsewhere(journal, recorded, outside)
        else:
            yield journal, recorded, ""


def _unreadable(journal: Path, error: Exception) -> str:
    return f"cannot read the migration journal {journal} ({error}); left it in place"


def _refused(journal: Path, why: str) -> str:
    return f"warning: not completing the migration journal {journal}: {why}; left it in place"


def _summary(journal: Path, recorded: Sequence[_Recorded]) -> str:
    names = ", ".join(os.path.relpath(r.path, journal.parent) for r in recorded)
    return (
        f"warning: an interrupted `vjp-migrate fix` left the journal {journal}: its migration of "
        f"{count(len(recorded), 'file')} in {journal.parent} ({names}) may be half-written"
    )


def _elsewhere(journal: Path, recorded: Sequence[_Recorded], outside: Sequence[_Recorded]) -> str:
    names = ", ".join(os.path.relpath(r.path, journal.parent) for r in outside)
    return (
        f"{_summary(journal, recorded)}, and this run does not complete it: {names} "
        f"{'is' if len(outside) == 1 else 'are'} not below the paths given; run "
        f"`vjp-migrate fix {shell_path(str(journal.parent))}` to complete it"
    )


def recover(paths: Sequence[Path]) -> list[str]:
    """Find journals left by interrupted write_together calls in the folders of/under ``paths``,
    complete (or, when completing is impossible, roll back) each whose files are all below
    ``paths``, and return one human message per journal, e.g. "completed an interrupted
    migration of 3 files: a.py, b.py, c.py", or the warning saying why one is left alone."""
    return [why or _finish(journal, recorded) for journal, recorded, why in _journals_for(paths)]


def pending(paths: Sequence[Path]) -> list[str]:
    """For a run that writes nothing (check, fix --diff): one warning per journal ``recover`` would
    finish, saying that its files may be half-written and how to finish them (or why ``recover``
    would not). Changes nothing."""
    return [
        why
        or f"{_summary(journal, recorded)}, and this run reports on the files as they are; "
        "run `vjp-migrate fix` to complete it (it recovers first)"
        for journal, recorded, why in _journals_for(paths)
    ]
