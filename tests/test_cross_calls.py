"""Calls of a custom_vjp in the other files of a run (cross_calls.py): a static value passed where
the fix would move an argument counts as it does at a call in the site's own module (probe32 P2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import write

from vjp_migrate.api import check_paths, fix_paths
from vjp_migrate.model import ArgKind, Diagnostic, FixSafety

OPS = """\
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def scale(x, w):
    return x * w


def scale_fwd(x, w):
    return scale(x, w), None


def scale_bwd(w, res, g):
    return (g * w,)


scale.defvjp(scale_fwd, scale_bwd)


def use_local(x):
    return scale(x, jnp.array(3.0))
"""
# probe32 case 39: `_factor` handles a string, so the other file's call works as it is.
FACTOR = """\
def _factor(w):
    if isinstance(w, str):
        return {"double": 2.0, "half": 0.5}.get(w, 1.0)
    return w
"""


def _tree(tmp_path: Path, user: str, name: str = "pk/model.py") -> Path:
    return write(tmp_path / "t", {"pk/__init__.py": "", "pk/ops.py": OPS, name: user})


def _finding(results: list) -> Diagnostic:  # type: ignore[type-arg]
    (found,) = [d for r in results for d in r.diagnostics]
    return found


@pytest.mark.parametrize(
    ("user", "shown"),
    [
        pytest.param("from .ops import scale\n\nY = scale(1.0, 'double')\n", "'double'", id="imported by name"),
        pytest.param("from pk.ops import scale as s\n\nY = s(1.0, w=True)\n", "True", id="alias, by keyword"),
        pytest.param("from pk import ops\n\n\ndef f(x):\n    return ops.scale(x, (2, 3))\n", "(2, 3)", id="module"),
        pytest.param(
            "import jax.numpy as jnp\nimport pk.ops\n\nY = pk.ops.scale(1.0, jnp.tanh)\n", "jnp.tanh", id="dotted"
        ),
        pytest.param("from .ops import *\n\nY = scale(1.0, lambda v: v)\n", "lambda v: v", id="star import"),
    ],
)
def test_a_static_value_another_file_passes_removes_the_safe_fix(tmp_path: Path, user: str, shown: str) -> None:
    tree = _tree(tmp_path, user)
    before = {p: p.read_bytes() for p in tree.rglob("*.py")}
    found = _finding(check_paths([tree]))
    assert found.code == "VJP001" and found.fix_safety is FixSafety.NONE, found
    (static,) = [r for r in found.reasons if r.kind is ArgKind.STATIC]
    assert f"is passed at a call site (`{shown}`)" in static.text and static.path == str(tree / "pk" / "model.py")
    fix_paths([tree])
    assert {p: p.read_bytes() for p in tree.rglob("*.py")} == before


def test_a_package_reexport_of_the_custom_vjp_is_followed(tmp_path: Path) -> None:
    tree = write(
        tmp_path / "t",
        {"pk/__init__.py": "from .ops import scale\n", "pk/ops.py": OPS, "tests/test_model.py": USER_OF_PACKAGE},
    )
    found = _finding(check_paths([tree]))
    assert found.fix_safety is FixSafety.NONE and any(
        r.path and r.path.endswith("test_model.py") for r in found.reasons
    )


USER_OF_PACKAGE = "from pk import scale\n\n\ndef test_named():\n    assert scale(1.0, 'double') == 2.0\n"


@pytest.mark.parametrize(
    "user",
    [
        pytest.param("import jax.numpy as jnp\nfrom .ops import scale\n\nY = scale(1.0, jnp.ones(2))\n", id="an array"),
        pytest.param("from .ops import scale\n\nY = scale('double', 2.0)\n", id="a string at a kept position"),
        pytest.param("def scale(x, w):\n    return x\n\n\nY = scale(1.0, 'double')\n", id="a namesake"),
        pytest.param("from other import scale\n\nY = scale(1.0, 'double')\n", id="another module's namesake"),
        pytest.param("from .ops import scale\n\nARGS = ('double',)\nY = scale(1.0, *ARGS)\n", id="spread by star"),
    ],
)
def test_other_calls_leave_the_safe_fix(tmp_path: Path, user: str) -> None:
    tree = _tree(tmp_path, user)
    found = _finding(check_paths([tree]))
    assert found.fix_safety is FixSafety.SAFE, found.reasons
    assert not [r for r in found.reasons if r.path]


def test_a_file_checked_alone_does_not_see_the_other_files_call(tmp_path: Path) -> None:
    tree = _tree(tmp_path, "from .ops import scale\n\nY = scale(1.0, 'double')\n")
    assert _finding(check_paths([tree / "pk" / "ops.py"])).fix_safety is FixSafety.SAFE


def test_verify_the_other_file_still_runs_under_jit_grad_after_fix(tmp_path: Path) -> None:
    # probe32 case 39: `fix pk` migrated `w`, and model.py's `scale(x, "double")` then raised
    # `TypeError: Argument 'double' of type <class 'str'> is not a valid JAX type`.
    ops = OPS.replace("    return x * w\n", "    return x * _factor(w)\n").replace("(g * w,)", "(g * _factor(w),)")
    user = (
        "import jax\nimport jax.numpy as jnp\n\nfrom .ops import scale\n\n\n"
        "def loss(x):\n    return jnp.sum(scale(x, 'double'))\n\n\ngrad_loss = jax.jit(jax.grad(loss))\n"
    )
    tree = write(tmp_path / "t", {"pk/__init__.py": "", "pk/ops.py": FACTOR + "\n\n" + ops, "pk/model.py": user})
    fix_paths([tree])
    run = "import jax.numpy as jnp\nfrom pk.model import grad_loss\nprint(grad_loss(jnp.ones(3)).tolist())\n"
    done = subprocess.run([sys.executable, "-c", run], cwd=tree, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[2.0, 2.0, 2.0]"
