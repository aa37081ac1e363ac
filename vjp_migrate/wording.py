"""Counted nouns for messages ("1 file", "2 findings"); light, so every stage may import it."""

from __future__ import annotations


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, with an ``s`` (or ``plural``) unless ``n`` is 1."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
