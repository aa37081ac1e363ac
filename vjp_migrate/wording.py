"""Counted nouns for messages ("1 file", "2 findings") and paths in the commands they suggest;
light, so every stage may import it."""

from __future__ import annotations

import shlex
from collections.abc import Sequence


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, with an ``s`` (or ``plural``) unless ``n`` is 1."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def spoken(names: Sequence[str]) -> str:
    """``lo``, ``lo and hi``, ``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def shell_path(path: str) -> str:
    """``path`` as a command's argument: quoted for the shell, and ``./-x.py`` for ``-x.py``,
    which would be read as an option."""
    return shlex.quote(f"./{path}" if path.startswith("-") else path)
