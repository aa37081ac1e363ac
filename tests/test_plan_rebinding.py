"""fwd rebinding a moved argument before the residual would save it: every statement that binds a
name counts (plain `import`, a nested `def`/`class`, `match` capture patterns), as assignments,
`for`, `with ... as` and `del` do."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from helpers import executed

from vjp_migrate.api import check_source, fix_source
from vjp_migrate.codes import BY_CODE
from vjp_migrate.model import Settings
from vjp_migrate.plan.bodies import bindings_of, names_in

_ALL = Settings(frozenset(BY_CODE), unsafe_fixes=True)

REBINDS = """\
from functools import partial
import jax
import jax.numpy as jnp

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, w):
    return x * w

def f_fwd(x, w):
    y = x * w
{rebinds}
    return y, None

def f_bwd(w, res, g):
    return (g * w,)

f.defvjp(f_fwd, f_bwd)
"""

_FORMS = [
    pytest.param("    import w", id="import w"),
    pytest.param("    import w.sub", id="import w.sub"),
    pytest.param("    def w():\n        return 1.0", id="nested def"),
    pytest.param("    class w:\n        pass", id="nested class"),
    pytest.param("    match y.shape:\n        case w:\n            pass", id="case w"),
    pytest.param("    match y.shape:\n        case [w, *_]:\n            pass", id="case [w, *_]"),
    pytest.param("    match y.shape:\n        case [_, *w]:\n            pass", id="case [_, *w]"),
    pytest.param('    match {"k": y}:\n        case {"k": w}:\n            pass', id='case {"k": w}'),
    pytest.param('    match {"k": y}:\n        case {**w}:\n            pass', id="case {**w}"),
    pytest.param("    match y.ndim:\n        case 1 as w:\n            pass", id="case 1 as w"),
]


@pytest.mark.parametrize("rebinds", _FORMS)
def test_a_fwd_binding_a_saved_argument_otherwise_is_vjp003(rebinds: str) -> None:
    code = REBINDS.format(rebinds=rebinds)
    (found,) = check_source(code, settings=_ALL)
    assert (found.code, found.argument, found.fixable) == ("VJP003", "w", False)
    assert found.message.endswith("fwd `f_fwd` assigns to `w` before saving it")
    assert fix_source(code, settings=_ALL).source == code


@pytest.mark.parametrize(
    "rebinds",
    [
        pytest.param("    import w as other", id="import as another name"),
        pytest.param("    match y.shape:\n        case [v, *_]:\n            pass", id="another capture"),
        pytest.param("    match y.shape:\n        case P(w=v):\n            pass", id="a class pattern's keyword"),
        pytest.param("    def helper(w):\n        return w", id="a nested def's parameter"),
    ],
)
def test_binding_another_name_leaves_the_argument_saved(rebinds: str) -> None:
    code = REBINDS.format(rebinds=rebinds)
    (found,) = check_source(code, settings=_ALL)
    assert (found.code, found.fixable) == ("VJP001", True)
    assert "    return y, w\n" in fix_source(code, settings=_ALL).source


def test_bindings_of_lists_the_match_captures() -> None:
    code = REBINDS.format(rebinds='    match y:\n        case {"k": [a, *b], **c} as d:\n            pass')
    fwd = next(s for s in cst.parse_module(code).body if isinstance(s, cst.FunctionDef) and s.name.value == "f_fwd")
    found = bindings_of(fwd)
    assert all(len(found[name]) == 1 for name in "abcd")
    assert {"a", "b", "c", "d"} <= names_in(fwd).bound


def test_jax_gives_another_gradient_for_the_residual_the_old_fix_saved() -> None:
    # The old fix saved `w` at fwd's return, after `case [w, *_]` had bound it to a size: plain
    # jax.grad then runs without error and gives a wrong gradient.
    jax = pytest.importorskip("jax")
    code = REBINDS.format(rebinds="    match y.shape:\n        case [w, *_]:\n            pass")
    wrong = (
        code.replace("@partial(jax.custom_vjp, nondiff_argnums=(1,))", "@jax.custom_vjp")
        .replace("return y, None", "return y, w")
        .replace("def f_bwd(w, res, g):\n    return (g * w,)", "def f_bwd(w, g):\n    return (g * w, None)")
    )
    x, w = jax.numpy.ones(3), jax.numpy.full(3, 2.0)
    before, after = executed(code, "before.py")["f"], executed(wrong, "after.py")["f"]
    assert jax.grad(lambda x: before(x, w).sum())(x).tolist() == [2.0, 2.0, 2.0]
    assert jax.grad(lambda x: after(x, w).sum())(x).tolist() == [3.0, 3.0, 3.0]


def test_jax_rejects_the_function_the_old_fix_saved() -> None:
    jax = pytest.importorskip("jax")
    code = REBINDS.format(rebinds=textwrap.indent("def w():\n    return 1.0", "    "))
    wrong = (
        code.replace("@partial(jax.custom_vjp, nondiff_argnums=(1,))", "@jax.custom_vjp")
        .replace("return y, None", "return y, w")
        .replace("def f_bwd(w, res, g):\n    return (g * w,)", "def f_bwd(w, g):\n    return (g * w, None)")
    )
    after = executed(wrong, "after.py")["f"]
    with pytest.raises(TypeError, match="is not a valid JAX type"):
        jax.grad(lambda x: after(x, 2.0).sum())(jax.numpy.ones(3))
