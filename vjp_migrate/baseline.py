"""Baselines: record today's findings (--write-baseline), report only new ones (--baseline).

A finding is recorded by file (relative to the baseline's folder), code, function and argument,
not by line, so edits elsewhere in a file do not bring recorded findings back. Each entry hides
one finding: a second finding with the same key is new.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from vjp_migrate.model import Diagnostic, FileResult

Key = tuple[str, str, str, str]
VERSION = 1


class BaselineError(ValueError):
    """A baseline that cannot be read or written; the message is one line."""


def _relative(path: str, root: Path) -> str:
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(root.resolve()).as_posix()
    except ValueError:
        return absolute.as_posix()


def _key(d: Diagnostic, root: Path) -> Key:
    return (_relative(d.path, root), d.code, d.function, d.argument or "")


def render_baseline(results: Sequence[FileResult], root: Path) -> str:
    """The baseline file's text for these findings, sorted so it diffs well."""
    keys = sorted(_key(d, root) for r in results for d in r.diagnostics)
    entries = [{"path": p, "code": c, "function": f, "argument": a or None} for p, c, f, a in keys]
    return json.dumps({"tool": "vjp-migrate", "version": VERSION, "findings": entries}, indent=2) + "\n"


def write_baseline(results: Sequence[FileResult], path: Path) -> int:
    """Write the baseline; returns the number of findings recorded."""
    text = render_baseline(results, path.parent)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise BaselineError(f"{path}: cannot be written: {error.strerror or error}") from None
    return sum(len(r.diagnostics) for r in results)


def read_baseline(path: Path) -> Counter[Key]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        entries = data["findings"]
        return Counter(
            (str(e["path"]), str(e["code"]), str(e["function"]), str(e.get("argument") or "")) for e in entries
        )
    except OSError as error:
        raise BaselineError(f"{path}: cannot be read: {error.strerror or error}") from None
    except (ValueError, LookupError, TypeError, AttributeError, RecursionError) as error:
        raise BaselineError(f"{path}: not a vjp-migrate baseline ({error})") from None


def filter_results(results: Sequence[FileResult], baseline: Counter[Key], root: Path) -> list[FileResult]:
    """The results without the findings the baseline records."""
    left = Counter(baseline)
    filtered = []
    for result in results:
        kept = []
        for d in result.diagnostics:
            key = _key(d, root)
            if left[key] > 0:
                left[key] -= 1
            else:
                kept.append(d)
        filtered.append(dataclasses.replace(result, diagnostics=tuple(kept)))
    return filtered
