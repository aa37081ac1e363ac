"""The flake8 plugin (entry point `flake8.extension`, name `VJP`): a thin adapter over the api.

It reports exactly what `vjp-migrate check` reports for the file (same configuration, positions
and messages). Files that do not mention `nondiff_arg` return before anything else is imported,
so the plugin adds almost nothing to a flake8 run; neither JAX nor rich is ever imported.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from typing import Any

from vjp_migrate import __version__


class Plugin:
    name = "vjp-migrate"
    version = __version__

    def __init__(self, tree: ast.AST, filename: str, lines: Sequence[str]) -> None:
        self.tree = tree
        self.filename = filename
        self.lines = lines

    def run(self) -> Iterator[tuple[int, int, str, type[Any]]]:
        text = "".join(self.lines)
        if "nondiff_arg" not in text:
            return
        from pathlib import Path

        from vjp_migrate.api import analyze
        from vjp_migrate.config import ConfigError, settings_for
        from vjp_migrate.screen import may_report
        from vjp_migrate.source import SourceError

        try:
            settings = settings_for(Path(self.filename if self.filename not in ("-", "stdin") else "."))
            if not may_report(text, settings, self.tree):  # the ast screen, as `check` runs it: no LibCST
                return
            from vjp_migrate.project import Project

            # One file at a time: a rule imported from another file is VJP003 naming its module.
            project = Project.for_file(Path(self.filename))
            diagnostics = analyze(text, self.filename, settings, project=project).diagnostics
        except (SourceError, ConfigError):  # flake8 reports syntax errors itself (E999)
            return
        for d in diagnostics:
            yield d.line, d.column - 1, f"{d.code} {d.message}", type(self)
