"""Small helpers shared by the stage tests."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any

import libcst as cst
import pytest

from vjp_migrate.imports import ImportTable, import_table
from vjp_migrate.model import VjpSite
from vjp_migrate.sites import find_sites


def executed(source: str, filename: str) -> dict[str, Any]:
    """The globals of ``source`` run as a module named ``filename`` (a before or after of a test)."""
    namespace: dict[str, Any] = {}
    exec(compile(source, filename, "exec"), namespace)
    return namespace


def parse(code: str) -> tuple[cst.Module, ImportTable]:
    module = cst.parse_module(textwrap.dedent(code))
    return module, import_table(module)


def sites_of(code: str) -> list[VjpSite]:
    module, imports = parse(code)
    return find_sites(module, imports)


RULES = """
def {name}_fwd(a, b):
    return {name}(a, b), None

def {name}_bwd(a, _, g):
    return (g * a,)

{name}.defvjp({name}_fwd, {name}_bwd)
"""


def write(root: Path, files: dict[str, str]) -> Path:
    """Write a small project: relative file name -> source (dedented)."""
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def durability_log(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every ``os.fsync`` (the path its descriptor is open on) and ``os.replace`` (the path
    renamed) from now on, in order: what makes a write survive a power cut is not observable
    otherwise."""
    log: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(descriptor: int) -> None:
        log.append(("fsync", os.readlink(f"/proc/self/fd/{descriptor}")))
        real_fsync(descriptor)

    def replace(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
        log.append(("replace", os.fspath(source)))
        real_replace(source, target)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return log
