"""The flake8 plugin (entry point `flake8.extension`, name `VJP`): a thin adapter over the api.

It reports exactly what `vjp-migrate check` reports for the file (same configuration, positions
and messages; nothing for a file its `exclude` patterns leave out). Files that do not mention
`nondiff_arg` return before anything else is imported, so the plugin adds almost nothing to a
flake8 run; neither JAX nor rich is ever imported.

flake8 applies a `# noqa` on a finding's own line itself (so `--disable-noqa` and noqa audits see
the finding); the plugin drops only what this tool's wider rule silences and flake8's would not,
a `# noqa` on another line of the site's decorator or signature, and under `--disable-noqa`
reports every finding as if no comment were there.

A `[tool.vjp-migrate]` table that cannot be used stops flake8 the way its own configuration
errors do (ExecutionError: "There was a critical error during execution of Flake8:" and the
one-line reason), once: the tables above the named paths are read before any file is checked,
and one found below them stops the run at the first file it applies to.
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vjp_migrate import __version__

if TYPE_CHECKING:
    from vjp_migrate.model import Diagnostic, Settings

STDIN = ("-", "stdin")


def _settings(filename: str) -> Settings | None:
    from vjp_migrate.config import ConfigError, settings_for

    try:
        return settings_for(Path(filename if filename not in STDIN else "."))
    except ConfigError as error:
        from flake8.exceptions import ExecutionError  # type: ignore[import-untyped]

        raise ExecutionError(str(error)) from None


def _flake8_silences(line: str, d: Diagnostic) -> bool:
    """Whether flake8 drops ``d`` for the `# noqa` of its physical ``line``, by its own test."""
    try:
        from flake8.violation import Violation  # type: ignore[import-untyped]
    except ImportError:  # a flake8 before 6: the plugin applies every comment itself
        return False
    return bool(Violation(d.code, "", d.line, d.column, d.message, line).is_inline_ignored(False))


class Plugin:
    name = "vjp-migrate"
    version = __version__
    disable_noqa = False  # flake8's --disable-noqa, read by parse_options

    def __init__(self, tree: ast.AST, filename: str, lines: Sequence[str]) -> None:
        self.tree = tree
        self.filename = filename
        self.lines = lines

    @classmethod
    def parse_options(cls, option_manager: object, options: argparse.Namespace, args: Sequence[str]) -> None:
        """Read the configuration of the named paths once, before flake8 checks any file."""
        cls.disable_noqa = bool(getattr(options, "disable_noqa", False))
        named = [Path(name if name not in STDIN else ".") for name in options.filenames or ["."]]
        for folder in dict.fromkeys(path if path.is_dir() else path.parent for path in named):
            _settings(str(folder))

    def run(self) -> Iterator[tuple[int, int, str, type[Any]]]:
        text = "".join(self.lines)
        if "nondiff_arg" not in text:
            return
        from vjp_migrate.api import analyze
        from vjp_migrate.screen import may_report
        from vjp_migrate.source import SourceError

        settings = _settings(self.filename)
        if settings is None:  # excluded by [tool.vjp-migrate], as `check` skips it
            return
        try:
            if not may_report(text, settings, self.tree):  # the ast screen, as `check` runs it: no LibCST
                return
            from vjp_migrate.project import Project

            # One file at a time: a rule imported from another file is VJP003 naming its module.
            project = Project.for_file(Path(self.filename))
            analysis = analyze(text, self.filename, settings, project=project, noqa=not self.disable_noqa)
        except SourceError:  # flake8 reports syntax errors itself (E999)
            return
        lines = self.lines
        own = [d for d in analysis.silenced if d.line <= len(lines) and _flake8_silences(lines[d.line - 1], d)]
        for d in (*analysis.diagnostics, *own):
            yield d.line, d.column - 1, f"{d.code} {d.message}", type(self)
