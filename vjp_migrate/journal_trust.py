"""Stage 10c, recovery: whether a journal left by an interrupted migration may be completed.

Completing a journal writes the bytes it holds, and a journal is only a file: one shipped in a
cloned repository, or left in a shared folder above the paths (journals are looked for up to
``/``), may have been planted there to write anything. So a journal is completed only when
vjp-migrate could have written it: a regular file of the user running the tool, naming Python
files and notebooks (``.py``, ``.pyi``, ``.ipynb``) of its own folder, reached without a symbolic
link (write_together records each file's real path) and outside version-control folders.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from vjp_migrate.discover import SUFFIXES

__all__ = ["untrusted_files", "untrusted_journal"]

VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", ".jj", ".pijul"})


def untrusted_journal(journal: Path) -> str | None:
    """Why the journal file itself cannot be one this user's vjp-migrate wrote, or None."""
    try:
        status = os.lstat(journal)
    except OSError as error:
        return f"it cannot be examined: {error.strerror or error}"
    if stat.S_ISLNK(status.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISREG(status.st_mode):
        return "it is not a regular file"
    # The owner of a file this process creates is its effective user.
    if hasattr(os, "geteuid") and status.st_uid != os.geteuid():
        return f"it belongs to another user (uid {status.st_uid})"
    return None


def untrusted_files(folder: Path, paths: Sequence[Path]) -> str | None:
    """Why one of the journal's files (``folder`` is the journal's) must not be written, or None."""
    real_folder = Path(os.path.realpath(folder))
    for path in paths:
        name = os.path.relpath(path, folder)
        real = Path(os.path.realpath(path))
        if path.suffix not in SUFFIXES:
            return f"{name} is not a Python file or notebook"
        if real_folder not in real.parents:
            return f"{name} resolves outside the journal's folder"
        if real != real_folder / os.path.relpath(path, folder):
            return f"{name} passes through a symbolic link"
        if vcs := next((part for part in real.parts if part in VCS_DIRS), None):
            return f"{name} is inside a {vcs} folder"
    return None
