"""Small helpers shared by the stage tests."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst

from vjp_migrate.imports import ImportTable, import_table
from vjp_migrate.model import VjpSite
from vjp_migrate.sites import find_sites


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
