"""The migration as a LibCST codemod, for LibCST's own runner:

    python -m libcst.tool codemod vjp_migrate.codemod.MigrateCustomVjp src/

(with `vjp_migrate` importable and listed under `modules` in `.libcst.codemod.yaml`, or run as
`codemod.MigrateCustomVjp` once `modules: [vjp_migrate]` is configured). A thin adapter over
api.fix_source: the output is byte for byte what `vjp-migrate fix` writes.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import libcst as cst
from libcst.codemod import CodemodContext, SkipFile, VisitorBasedCodemodCommand

from vjp_migrate.codes import expand_selection
from vjp_migrate.model import Settings


class MigrateCustomVjp(VisitorBasedCodemodCommand):
    DESCRIPTION = "Move array-valued arguments of jax.custom_vjp functions out of nondiff_argnums (JAX PR #4008)."

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument("--unsafe-fixes", action="store_true", help="Also apply fixes marked unsafe.")
        arg_parser.add_argument(
            "--select", default=None, help="Comma-separated codes or prefixes (default: the default set)."
        )

    def __init__(self, context: CodemodContext, unsafe_fixes: bool = False, select: str | None = None) -> None:
        super().__init__(context)
        codes = [c for c in (select or "").split(",") if c.strip()] or None
        self.select = expand_selection(codes, None) if codes else None
        self.unsafe_fixes = unsafe_fixes

    def _settings(self, filename: str | None) -> Settings:
        """The file's `[tool.vjp-migrate]` settings, as `fix` reads them, with this command's options."""
        from vjp_migrate.config import settings_for

        settings = settings_for(Path(filename)) if filename else Settings(expand_selection(None, None))
        if settings is None:
            raise SkipFile("excluded by the configuration")
        return dataclasses.replace(
            settings,
            select=self.select if self.select is not None else settings.select,
            unsafe_fixes=self.unsafe_fixes or settings.unsafe_fixes,
        )

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        from vjp_migrate.api import fix_source
        from vjp_migrate.source import SourceError

        filename = self.context.filename
        try:
            result = fix_source(tree.code, path=filename or "<string>", settings=self._settings(filename))
        except SourceError as error:
            raise SkipFile(str(error)) from None
        for d in result.remaining:
            self.warn(f"{d.line}:{d.column}: {d.code} {d.message}")
        if not result.changed:
            return tree
        return cst.parse_module(result.source).with_changes(encoding=tree.encoding)  # its cookie's, or its BOM
