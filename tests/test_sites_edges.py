"""sites at the edges of jit's static arguments: numbers that count from the end, and those out
of range, which JAX refuses (notes/mut17-findings.md)."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from helpers import parse
from test_sites import REEXPORTED

from vjp_migrate.api import check_source, fix_source
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


STAR_LIB = "from functools import partial\n"
STAR_SITE = """\
from starlib import *
import jax
from jax import custom_vjp


@partial(custom_vjp, nondiff_argnums=(0,))
def scale_grad(scale, x):
    return x


def scale_grad_fwd(scale, x):
    return x, None


def scale_grad_bwd(scale, _, g):
    return (g * scale,)


scale_grad.defvjp(scale_grad_fwd, scale_grad_bwd)
"""


def test_a_partial_only_a_star_import_can_bind_is_functools_partial(tmp_path: Path) -> None:
    """probe26 G5 (Sandia optimism: `from optimism.JaxConfig import *`, then `@partial(custom_vjp,
    ...)`): the site is found, and its fix runs under jit with `scale` traced (real JAX on CPU)."""
    import importlib
    import sys

    import jax
    import jax.numpy as jnp

    assert [(d.code, d.argument) for d in check_source(STAR_SITE)] == [("VJP001", "scale")]
    assert check_source(STAR_SITE.replace("from starlib import *\n", "")) == []  # an unbound `partial`: no site
    assert check_source(STAR_SITE.replace("import jax\n", "import jax\npartial = print\n")) == []  # bound otherwise
    (tmp_path / "starlib.py").write_text(STAR_LIB)
    (tmp_path / "star_site.py").write_text(fix_source(STAR_SITE).source)
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module("star_site")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("star_site", None)
        sys.modules.pop("starlib", None)
    grad = jax.jit(jax.grad(lambda s, x: (module.scale_grad(s, x) * x).sum(), argnums=1))
    assert grad(jnp.float32(3.0), jnp.ones(2)).tolist() == [4.0, 4.0]
