"""classify on probe32's P3: an argument also passed to a function whose body is not read (imported
from a file not checked, a module attribute bound to a name, a third-party function) got a safe
fix from arithmetic elsewhere, and jit(grad) then failed in that function (an `lru_cache` key,
a Python `if`). A fix is safe only when every use is known to take a Tracer: such a call leaves
VJP001 with an unsafe fix, and a reason naming the call."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import write
from test_classify import classified, classify, site_module

from vjp_migrate.api import check_paths, fix_paths
from vjp_migrate.model import ArgKind, FixSafety


@pytest.mark.parametrize(
    ("extra", "primal", "shown"),
    [
        pytest.param(
            "from scipy.signal import get_window\n",
            "return x * get_window('hann', a) * a",
            "passed to `get_window`, which is not analysed (imported from `scipy.signal`), in the primal `f`",
            id="third-party function",
        ),
        pytest.param(
            "from .helpers import window\n",
            "return x * window(a) * a",
            "passed to `window`, which is not analysed (imported from `.helpers`)",
            id="helper of a file not checked",
        ),
        pytest.param(
            "from mypkg import helpers\nwindow = helpers.window\n",
            "return x * window(a) * a",
            "passed to `helpers.window`, which is not analysed, in the primal `f`",
            id="module attribute bound to a name",
        ),
        pytest.param("", "return x * cfg.scale(a) * a", "passed to `cfg.scale`, which is not analysed", id="a method"),
    ],
)
def test_an_argument_a_function_not_read_gets_is_no_safe_fix(extra: str, primal: str, shown: str) -> None:
    kind, reasons, strong = classify(primal, "return (g * a,)", extra=extra)
    assert kind is ArgKind.ARRAY and not strong, reasons
    assert any(shown in r and r.endswith("it may need a concrete value there") for r in reasons), reasons


@pytest.mark.parametrize(
    ("primal", "extra"),
    [
        pytest.param("return x * a", "", id="arithmetic only"),
        pytest.param("return x * jnp.tanh(a)", "", id="a JAX function"),
        pytest.param("return x * _scale(a)", "def _scale(v):\n    return 2.0 * v\n", id="a module helper"),
        pytest.param("return x * g2(a)", "def _scale(v):\n    return 2.0 * v\ng2 = _scale\n", id="a helper's alias"),
        pytest.param("ws = []\n    ws.append(a)\n    return x * ws[0]", "", id="appended to a local list"),
    ],
)
def test_uses_the_tool_reads_keep_the_safe_fix(primal: str, extra: str) -> None:
    kind, reasons, strong = classify(primal, "return (g * a,)", extra=extra)
    assert kind is ArgKind.ARRAY and strong, reasons


def test_a_traced_value_at_a_call_site_keeps_the_safe_fix() -> None:
    # The code means the function to take a Tracer (fixture jitted_helper_scales_warp_offset).
    module = site_module("return shrink(x, a)", "return (g * a,)", extra="from lib import shrink\n")
    alone = classified(module)
    assert alone.kind is ArgKind.ARRAY and not alone.strong, alone.evidence
    traced = classified(module + "\n\n@jax.jit\ndef run(x, w):\n    return f(w, x)\n")
    assert traced.kind is ArgKind.ARRAY and traced.strong, traced.evidence


HELPERS = """\
import functools

import numpy as np


@functools.lru_cache(maxsize=None)
def window(n):
    return np.hanning(n + 2)[1:-1].astype(np.float32)
"""
OPS = """\
from functools import partial

import jax
import jax.numpy as jnp

{imports}


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def smooth(x, n):
    return x * window(n) * n


def smooth_fwd(x, n):
    return smooth(x, n), None


def smooth_bwd(n, res, g):
    return (g * window(n) * n,)


smooth.defvjp(smooth_fwd, smooth_bwd)
"""


def _package(tmp_path: Path, imports: str) -> Path:
    files = {"mypkg/__init__.py": "from .ops import smooth\n", "mypkg/helpers.py": HELPERS}
    return write(tmp_path / "t", {**files, "mypkg/ops.py": OPS.format(imports=imports)})


ALIASED = "from mypkg import helpers\n\nwindow = helpers.window"


@pytest.mark.parametrize(
    ("imports", "shown"),
    [
        pytest.param("from .helpers import window", "window", id="imported"),
        pytest.param(ALIASED, "helpers.window", id="module attribute alias"),
    ],
)
def test_verify_a_helper_not_read_leaves_the_file_working_under_jit_grad(
    tmp_path: Path, imports: str, shown: str
) -> None:
    # probe32 cases 10 and 51: fix migrated `n` (ops.py checked alone, as pre-commit does; case 51
    # over the folder too), and jit(grad) then failed in the lru_cache helper (`TypeError:
    # unhashable type: 'DynamicJaxprTracer'`).
    tree = _package(tmp_path, imports)
    checked = tree / "mypkg" / "ops.py"
    (found,) = [d for r in check_paths([checked]) for d in r.diagnostics]
    assert found.code == "VJP001" and found.fix_safety is FixSafety.UNSAFE, found
    assert any(f"passed to `{shown}`, which is not analysed" in r.text for r in found.reasons), found.reasons
    before = {p: p.read_bytes() for p in tree.rglob("*.py")}
    fix_paths([checked])
    assert {p: p.read_bytes() for p in tree.rglob("*.py")} == before
    run = (
        "import jax, jax.numpy as jnp\nfrom mypkg import smooth\n"
        "grad = jax.jit(jax.grad(lambda x: smooth(x, 4).sum()))(jnp.ones(4))\nprint(grad.shape)\n"
    )
    done = subprocess.run([sys.executable, "-c", run], cwd=tree, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(4,)"


@pytest.mark.parametrize(
    "imports",
    [pytest.param("from .helpers import window", id="imported"), pytest.param(ALIASED, id="module attribute alias")],
)
def test_a_helper_of_a_file_in_the_run_is_read_there(tmp_path: Path, imports: str) -> None:
    # The folder run reads `window`: its lru_cache hashes `n`, which is then static.
    tree = _package(tmp_path, imports)
    assert not [d for r in check_paths([tree / "mypkg"]) for d in r.diagnostics]
