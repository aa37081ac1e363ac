"""sites at the edges of jit's static arguments: numbers that count from the end, and those out
of range, which JAX refuses (notes/mut17-findings.md)."""

from __future__ import annotations

import libcst as cst
import pytest
from helpers import parse
from test_sites import REEXPORTED

from vjp_migrate.api import check_source
from vjp_migrate.imports import ImportTable
from vjp_migrate.sites import jit_static_names


def _run(static_argnums: str) -> tuple[cst.FunctionDef, ImportTable]:
    module, imports = parse(
        f"import jax\nfrom functools import partial\n@partial(jax.jit, static_argnums={static_argnums})\n"
        "def run(x, w, n):\n    return x\n"
    )
    (func,) = (s for s in module.body if isinstance(s, cst.FunctionDef))
    return func, imports


@pytest.mark.parametrize(
    ("static_argnums", "names"),
    [
        pytest.param("-1", {"n"}, id="-1"),
        pytest.param("(-3,)", {"x"}, id="-3"),
        pytest.param("(-4,)", set(), id="-4, out of range"),
        pytest.param("(1, -6)", {"w"}, id="one in range, one far out"),
    ],
)
def test_a_negative_jit_static_argnums_counts_from_the_end_within_range(static_argnums: str, names: set[str]) -> None:
    # JAX raises ValueError for an out-of-range one ("only accepts 3 positional arguments"):
    # it marks nothing, and must never be read as another parameter nor crash the analysis.
    func, imports = _run(static_argnums)
    assert jit_static_names(func, imports) == names


# A module a project module re-exports under its conventional name (vocabulary.imported_name).


@pytest.mark.parametrize("module", [".jax", "..jax.compat", ".numpy"])
def test_a_project_subpackage_named_like_jax_re_exports_jax(module: str) -> None:
    text = REEXPORTED.replace("from .impl import", f"from {module} import")
    assert [d.code for d in check_source(text, path="ops.py")] == ["VJP001"]


def test_a_package_module_named_jax_re_exports_jax() -> None:
    # `mylib.jax` is no module of JAX: `from mylib.jax import jax, jnp` binds what it re-exports.
    text = REEXPORTED.replace("from .impl import", "from mylib.jax import")
    assert [d.code for d in check_source(text, path="ops.py")] == ["VJP001"]
