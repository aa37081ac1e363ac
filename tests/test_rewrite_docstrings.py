"""rewrite.docstrings: bwd's docstring loses the entries of the parameters that leave its
signature, where the docstring's layout makes them unambiguous (pkgprobe23 G11, ejkernel's
recurrent attention `_bwd_call`), and stays as it is otherwise."""

from __future__ import annotations

import textwrap

import jax
import jax.numpy as jnp
import libcst as cst
import pytest

from vjp_migrate.api import fix_source
from vjp_migrate.rewrite.docstrings import without_entries

SITE = """\
import jax
from functools import partial


@partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def f(x, decay, block):
    return x * decay


def f_fwd(x, decay, block):
    return f(x, decay, block), (x,)


def f_bwd(decay, block, res, g):
    DOCSTRING
    (x,) = res
    return (g * decay,)


f.defvjp(f_fwd, f_bwd)
"""


def _fixed_docstring(docstring: str) -> str:
    """The docstring of bwd once `decay` (traced: array data) leaves it; `block` stays."""
    code = SITE.replace("    DOCSTRING\n", textwrap.indent(textwrap.dedent(docstring), "    "))
    out = fix_source(code.replace("return x * decay", "return x * decay * jax.numpy.ones(block)")).source
    assert "def f_bwd(block, res, g):" in out, out
    return out[out.index('    """') : out.index('"""', out.index('    """') + 7) + 3]


def _entries_gone(docstring: str, names: tuple[str, ...]) -> str:
    return without_entries(cst.SimpleString(textwrap.dedent(docstring).strip("\n")), names).value


GOOGLE = '''\
    """Backward pass.

    Args:
        decay: Non-differentiable decay factor,
            one per head.
        block: Block size.
        res: Tensors saved by the forward pass.
        g: Cotangent.

    Returns:
        The cotangent of x.
    """
'''


def test_a_google_entry_of_a_parameter_that_goes_is_removed_with_its_continuation() -> None:
    gone = "        decay: Non-differentiable decay factor,\n            one per head.\n"
    assert _fixed_docstring(GOOGLE) == GOOGLE.replace(gone, "").rstrip("\n")


SPHINX = '''\
    """Backward pass.

    :param decay: Non-differentiable decay factor,
        one per head.
    :type decay: jax.Array

    :param block: Block size.
    :param res: Tensors saved by the forward pass.
    :param g: Cotangent.
    :returns: The cotangent of x.
    """
'''


def test_sphinx_fields_of_a_parameter_that_goes_are_removed() -> None:
    gone = "    :param decay: Non-differentiable decay factor,\n        one per head.\n    :type decay: jax.Array\n\n"
    assert _fixed_docstring(SPHINX) == SPHINX.replace(gone, "").rstrip("\n")


@pytest.mark.parametrize(
    ("docstring", "names", "expected"),
    [
        pytest.param(
            '''
            """Backward.

            Arguments:
              decay (jax.Array): the decay.
              res: saved.
            """''',
            ("decay",),
            '''"""Backward.

Arguments:
  res: saved.
"""''',
            id="Arguments, a typed entry",
        ),
        pytest.param(
            '''
            """Backward.

            Parameters
            ----------
            decay : jax.Array
                The decay,
                one per head.
            res : tuple
                Saved.

            Returns
            -------
            tuple
            """''',
            ("decay",),
            '''"""Backward.

Parameters
----------
res : tuple
    Saved.

Returns
-------
tuple
"""''',
            id="NumPy",
        ),
        pytest.param(
            '''
            """Backward.

            Parameters
            ----------
            res : tuple
                Saved.
            decay : jax.Array
                The decay.

            Returns
            -------
            tuple
            """''',
            ("decay",),
            '''"""Backward.

Parameters
----------
res : tuple
    Saved.

Returns
-------
tuple
"""''',
            id="NumPy, the last entry",
        ),
        pytest.param(
            '''
            """Backward.

            :param decay: the decay factor,
                one per head.
            :type decay: jax.Array
            :param res: saved by the forward pass.
            :returns: the cotangent of x.
            """''',
            ("decay",),
            '''"""Backward.

:param res: saved by the forward pass.
:returns: the cotangent of x.
"""''',
            id="Sphinx, with the type",
        ),
        pytest.param(
            '''
            """Backward.

            :param res: saved by the forward pass.
            :param jax.Array decay: the decay factor.

            :rtype: tuple
            """''',
            ("decay",),
            '''"""Backward.

:param res: saved by the forward pass.

:rtype: tuple
"""''',
            id="Sphinx, the type in the field",
        ),
        pytest.param(
            '''
            """Backward.

            :arg decay: the decay factor.
            """''',
            ("decay",),
            '''"""Backward.
"""''',
            id="Sphinx, its only field",
        ),
        pytest.param(
            '''
            """Backward.

            :param decay: the decay.

            :param res: saved.
            """''',
            ("decay",),
            '''"""Backward.

:param res: saved.
"""''',
            id="Sphinx, no two blank lines",
        ),
        pytest.param(
            '"""B.\n\n:param decay: a.\nMore text."""', ("decay",), '"""B.\n\nMore text."""', id="Sphinx, then text"
        ),
    ],
)
def test_entries_in_each_style_go(docstring: str, names: tuple[str, ...], expected: str) -> None:
    assert _entries_gone(docstring, names) == expected


@pytest.mark.parametrize(
    ("docstring", "names"),
    [
        pytest.param(
            '"""Backward pass; decay: the decay factor is read from the residuals."""', ("decay",), id="free text"
        ),
        pytest.param(
            '"""Backward.\n\nArgs:\n    res: saved.\n    decay: the decay."""', ("decay",), id="closing quotes"
        ),
        pytest.param(
            '"""Backward.\n\nArgs:\n    decay: the decay.\n    res: saved.\n"""', ("decay", "res"), id="left empty"
        ),
        pytest.param(
            '"""Backward.\n\nArgs:\n    decay: a.\n    decay: b.\n    res: c.\n"""', ("decay",), id="two entries"
        ),
        pytest.param(
            '"""Backward.\n\nArgs:\n    decay: a.\n  Note: b.\n    res: c.\n"""', ("decay",), id="out of layout"
        ),
        pytest.param(
            '"""B.\n\nParameters\n----------\ndecay, res : jax.Array\n    Both.\ng : jax.Array\n"""',
            ("decay",),
            id="shared",
        ),
        pytest.param('"""B.\n\nArgs:\n    decay: a.\n\nArgs:\n    res: b.\n"""', ("decay",), id="two sections"),
        pytest.param('"""B.\n\n:param decay: a.\n:param decay: b.\n"""', ("decay",), id="Sphinx, two fields"),
        pytest.param('"""B.\n\n:param res: saved.\n:param decay: the decay."""', ("decay",), id="Sphinx, quotes"),
        pytest.param('"""B.\n\n:type decay res: odd.\n:param decay: a.\n"""', ("decay",), id="Sphinx, odd type"),
    ],
)
def test_docstrings_whose_entry_is_not_clear_stay(docstring: str, names: tuple[str, ...]) -> None:
    node = cst.SimpleString(docstring)
    assert without_entries(node, names) is node


def _renamed(docstring: str, names: tuple[str, ...] = ()) -> str:
    return without_entries(cst.SimpleString(docstring), names, ("res", "residuals")).value


@pytest.mark.parametrize(
    ("docstring", "expected"),
    [
        pytest.param(
            '"""B.\n\n:arg tol: a.\n:arg res: saved by fwd.\n:type res: tuple\n"""',
            '"""B.\n\n:arg residuals: saved by fwd.\n:type residuals: tuple\n"""',
            id="Sphinx, with its type",
        ),
        pytest.param(
            '"""B.\n\nArgs:\n    tol: a.\n    res (tuple): saved by fwd.\n    g: c.\n"""',
            '"""B.\n\nArgs:\n    residuals (tuple): saved by fwd.\n    g: c.\n"""',
            id="Google",
        ),
        pytest.param(
            '"""B.\n\nParameters\n----------\ntol : float\n    a.\nres : tuple\n    saved.\n"""',
            '"""B.\n\nParameters\n----------\nresiduals : tuple\n    saved.\n"""',
            id="NumPy",
        ),
    ],
)
def test_the_renamed_residual_s_entry_takes_the_new_name(docstring: str, expected: str) -> None:
    assert _renamed(docstring, ("tol",)) == expected


@pytest.mark.parametrize(
    "docstring",
    [
        pytest.param('"""B.\n\n:arg res: a.\n:arg residuals: b.\n"""', id="the new name is documented"),
        pytest.param('"""B.\n\n:arg res: a.\n:arg res: b.\n"""', id="two entries"),
        pytest.param('"""B.\n\nParameters\n----------\nres, g : tuple\n    Both.\n"""', id="shared"),
        pytest.param('"""B: res is what fwd saved."""', id="free text"),
    ],
)
def test_a_residual_entry_that_is_not_clear_keeps_its_name(docstring: str) -> None:
    assert _renamed(docstring) == docstring


RENAMED_RESIDUAL = '''\
import jax
import jax.numpy as jnp


def solve_impl(a, grid, tol):
    return a * tol


def solve_fwd(a, grid, tol):
    return solve_impl(a, grid, tol), {residual}


def solve_bwd(grid, tol, res, g):
    """Backward solve

    :arg grid: grid specification
    :arg tol: tolerance for adjoint solve
    :arg res: {described}
    :arg g: cotangent
    """
    return (g * tol * {read},)


solve = jax.custom_vjp(solve_impl, nondiff_argnums=(1, 2))
solve.defvjp(solve_fwd, solve_bwd)
'''


@pytest.mark.parametrize(
    ("residual", "described", "read", "entry"),
    [
        # probe25b G10 (jaxmaterials): the residual read as a value is nested whole, bwd's parameter renamed.
        pytest.param("(a, a * 2)", "saved by solve_fwd()", "res[0]", ":arg residuals: saved by solve_fwd()", id="kept"),
        pytest.param("None", "unused", "1.0", None, id="a None residual's entry goes"),
    ],
)
def test_bwd_s_docstring_follows_the_residual_s_rename(
    residual: str, described: str, read: str, entry: str | None
) -> None:
    code = RENAMED_RESIDUAL.format(residual=residual, described=described, read=read)
    out = fix_source(code.replace("return a * tol", "return a * tol * jnp.ones(len(grid))")).source
    assert "def solve_bwd(grid, res, g)" not in out and "def solve_bwd(grid, tol, res, g)" not in out, out
    assert (entry in out and ":arg tol:" not in out) if entry else (described not in out and ":arg tol:" in out), out
    assert ":arg res:" not in out, out
    namespace: dict[str, object] = {}
    exec(compile(out, "solve.py", "exec"), namespace)  # the migrated module runs under jit (real JAX, CPU)
    solve = namespace["solve"]
    # the moved `tol` is traced; bwd runs with it
    grad = jax.jit(jax.grad(lambda a, t: solve(a, "ab", t).sum()))(jnp.ones(2), jnp.float32(3.0))  # type: ignore[operator]
    assert grad.tolist() == [3.0, 3.0]
