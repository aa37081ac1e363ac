"""Helpers imported from another module of the run (project.py, pkgprobe23 G5): a run over several
files follows them as it follows the helpers of the site's own module, with their module's imports."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import write

from vjp_migrate.api import check_file, check_paths, fix_paths
from vjp_migrate.codes import BY_CODE
from vjp_migrate.model import Settings

ALL = Settings(frozenset(BY_CODE))

HELPERS = """
import jax.numpy as J
import numpy as onp

from .deeper import times


def _inner(logits, cap):
    return cap * J.tanh(logits / cap)


def soft_cap(logits, cap):
    return _inner(logits, cap)


def via_third_module(logits, cap):
    return times(logits, cap)


def chunked(x, n):
    return x.reshape(n, -1)


def counted(x, n):
    for _ in range(n):
        x = x + 1
    return x


def on_host(x, grid):
    return x + onp.append(onp.zeros(3), grid.ravel())
"""
DEEPER = """
def times(a, b):
    return a * b
"""
SITE = """
from functools import partial

import jax

{spelling}


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def capped(x, cap):
    return {call}(x, cap)


def capped_fwd(x, cap):
    return {call}(x, cap), x


def capped_bwd(cap, x, g):
    del cap
    return (g,)


capped.defvjp(capped_fwd, capped_bwd)
"""


def _tree(tmp_path: Path, spelling: str, call: str, init: str = "") -> Path:
    return write(
        tmp_path / "t",
        {
            "pkg/__init__.py": init,
            "pkg/_helpers.py": HELPERS,
            "pkg/deeper.py": DEEPER,
            "pkg/ops.py": SITE.format(spelling=spelling, call=call),
        },
    )


def _codes(results: list, argument: str = "cap") -> list[str]:  # type: ignore[type-arg]
    return [d.code for r in results for d in r.diagnostics if d.argument == argument]


@pytest.mark.parametrize(
    ("spelling", "call", "init"),
    [
        pytest.param("from ._helpers import soft_cap", "soft_cap", "", id="relative"),
        pytest.param("from . import _helpers", "_helpers.soft_cap", "", id="module-attribute"),
        pytest.param("from pkg._helpers import soft_cap as sc", "sc", "", id="absolute-alias"),
        pytest.param("import pkg._helpers", "pkg._helpers.soft_cap", "", id="dotted"),
        pytest.param("from pkg import cap_it", "cap_it", "from ._helpers import soft_cap as cap_it\n", id="reexport"),
        pytest.param("from ._helpers import via_third_module", "via_third_module", "", id="two-modules-deep"),
    ],
)
def test_an_imported_helper_that_uses_the_argument_as_array_data(
    tmp_path: Path, spelling: str, call: str, init: str
) -> None:
    tree = _tree(tmp_path, spelling, call, init)
    results = check_paths([tree], settings=ALL)
    assert _codes(results) == ["VJP001"]
    (finding,) = (d for r in results for d in r.diagnostics)
    assert finding.fixable
    assert any(f"helper `{call}` from `pkg._helpers`" in reason.text for reason in finding.reasons)
    written = {r.path.name for r in fix_paths([tree], settings=ALL) if r.written}
    assert written == {"ops.py"}  # the helpers take the same values as before


def test_a_file_checked_alone_keeps_the_helper_unanalysed(tmp_path: Path) -> None:
    tree = _tree(tmp_path, "from ._helpers import soft_cap", "soft_cap")
    alone = check_file(tree / "pkg" / "ops.py", ALL)
    assert [d.code for d in alone.diagnostics] == ["VJP002"]
    assert any("passed to `soft_cap`, which is not analysed" in r.text for r in alone.diagnostics[0].reasons)
    assert alone.imported_helpers == ("pkg._helpers",)  # phase 1 asks a run over the package for phase 2
    assert alone.imported_rules == ()
    assert _codes(check_paths([tree / "pkg" / "ops.py"], settings=ALL)) == ["VJP002"]


@pytest.mark.parametrize("helper", ["chunked", "counted", "on_host"])
def test_an_imported_helper_that_needs_the_argument_concrete(tmp_path: Path, helper: str) -> None:
    """A reshape size, a `range` bound, host NumPy (pyscfad's `_intor_impl`): static, as in one file."""
    tree = _tree(tmp_path, f"from ._helpers import {helper}", helper)
    assert _codes(check_paths([tree / "pkg" / "ops.py"], settings=ALL)) == ["VJP002"]
    assert _codes(check_paths([tree], settings=ALL)) == []


def test_a_helper_from_a_module_outside_the_run_stays_unanalysed(tmp_path: Path) -> None:
    tree = _tree(tmp_path, "from otherpkg import soft_cap", "soft_cap")
    assert _codes(check_paths([tree], settings=ALL)) == ["VJP002"]
    alone = check_file(tree / "pkg" / "ops.py", ALL)
    assert alone.imported_rules == alone.imported_helpers == ()  # no second phase for it


def test_a_name_the_helper_module_binds_otherwise_is_not_trusted(tmp_path: Path) -> None:
    """`J` means jax.numpy in _helpers.py and NumPy in ops.py: neither meaning is trusted there."""
    helpers = "import jax.numpy as J\n\n\ndef h(x, n):\n    return x + J.ones(n)\n"
    tree = write(
        tmp_path / "t",
        {
            "pkg/__init__.py": "",
            "pkg/_helpers.py": helpers,
            "pkg/ops.py": "import numpy as J\n" + SITE.format(spelling="from ._helpers import h", call="h"),
        },
    )
    assert _codes(check_paths([tree], settings=ALL)) == ["VJP002"]
    (tree / "pkg" / "ops.py").write_text(SITE.format(spelling="from ._helpers import h", call="h"), encoding="utf-8")
    assert _codes(check_paths([tree], settings=ALL)) == []  # `J.ones(n)`: a shape


def test_the_fix_is_the_one_file_version(tmp_path: Path) -> None:
    """ops.py (helper imported) and ops_local.py (the same helper defined in it) get the same
    rewrite, line for line."""
    helper = "def soft_cap(logits, cap):\n    return cap * jnp.tanh(logits / cap)\n"
    site = SITE.format(spelling="import jax.numpy as jnp\n{helper}", call="soft_cap")
    tree = write(
        tmp_path / "t",
        {
            "pkg/__init__.py": "",
            "pkg/_helpers.py": "import jax.numpy as jnp\n\n\n" + helper,
            "pkg/ops.py": site.format(helper="from ._helpers import soft_cap"),
            "pkg/ops_local.py": site.format(helper="\n\n" + helper),
        },
    )
    results = fix_paths([tree], settings=ALL)
    assert {r.path.name for r in results if r.written} == {"ops.py", "ops_local.py"}
    imported = (tree / "pkg" / "ops.py").read_text(encoding="utf-8")
    local = (tree / "pkg" / "ops_local.py").read_text(encoding="utf-8")
    assert "nondiff_argnums" not in imported
    assert local.replace("\n\n" + helper, "from ._helpers import soft_cap") == imported


def test_default_codes_find_the_array_used_only_in_an_imported_helper(tmp_path: Path) -> None:
    tree = _tree(tmp_path, "from ._helpers import soft_cap", "soft_cap")
    assert _codes(check_paths([tree])) == ["VJP001"]
