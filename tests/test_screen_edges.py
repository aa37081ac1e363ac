"""The ast screen keeps what classify reports at the edges the last sessions added, under every
selection of codes (notes/mut17-findings.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_prefilter import _KERNEL_SITE, _POSITION_IN_STAR_ARGS, ALIASED_ANNOTATION, _findings
from test_sites import REEXPORTED

from vjp_migrate import screen
from vjp_migrate.codes import DEFAULT_SELECT
from vjp_migrate.model import Settings


def test_screen_keeps_a_position_in_star_args_when_only_vjp002_is_selected() -> None:
    # `--select VJP002`: the argument `args[0]` is unknown, reported as VJP002 with no fix.
    text = _POSITION_IN_STAR_ARGS.replace("x * args[0]", "log(args[0], x)").replace("(g * w,)", "(g,)")
    settings = Settings(frozenset({"VJP002"}))
    assert _findings(text, "case.py", settings) == ["VJP002"]
    assert screen.may_report(text, settings)


_SITE = """\
from functools import partial
import jax
from lib import helper

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def f(a, x):
    return helper(x, a)

def f_fwd(a, x):
    return f(a, x), None

def f_bwd(a, _, g):
    return (g,)

f.defvjp(f_fwd, f_bwd)

"""


@pytest.mark.parametrize(
    "caller",
    [
        pytest.param(
            "@jax.jit\ndef run(x, w):\n    s = w * 2.0\n    t = s + 1.0\n    return f(t, x)\n", id="two locals"
        ),
        pytest.param(
            "@jax.jit\ndef run(x, w):\n    def inner():\n        s = w * 2.0\n        t = s + 1.0\n"
            "        return f(t, x)\n    return inner()\n",
            id="two locals of a nested def",
        ),
    ],
)
def test_screen_keeps_a_traced_value_through_a_chain_of_locals(caller: str) -> None:
    # classify follows `t = s + 1.0` back to `s = w * 2.0` and the traced `w`: an array is passed.
    text = _SITE + caller
    settings = Settings(DEFAULT_SELECT)
    assert _findings(text, "case.py", settings) == ["VJP001"]
    assert screen.may_report(text, settings)


@pytest.mark.parametrize(
    "caller",
    [
        pytest.param("@jax.jit\ndef run(x, w):\n    return f(2.0 * w, x)\n", id="right operand"),
        pytest.param("def run(x, *, w):\n    return f(w, x)\nfast = jax.jit(run)\n", id="keyword-only, jax.jit(run)"),
    ],
)
def test_screen_keeps_a_traced_parameter_passed_in_any_spelling(caller: str) -> None:
    text = _SITE + caller
    settings = Settings(DEFAULT_SELECT)
    assert _findings(text, "case.py", settings) == ["VJP001"]
    assert screen.may_report(text, settings)


# What the lead's screen changes of this session read (notes/mut19-findings.md).


@pytest.mark.parametrize(
    "annotation",
    [
        pytest.param('" jax.Array"', id="spaces around the string"),
        pytest.param('tuple["jax.Array", int]', id="a static-looking outer name over a string array"),
    ],
)
def test_screen_keeps_an_array_annotation_held_in_a_string(annotation: str) -> None:
    text = ALIASED_ANNOTATION.replace("a: JaxArray", f"a: {annotation}")
    assert _findings(text, "case.py", Settings(DEFAULT_SELECT)) == ["VJP001"]
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


@pytest.mark.parametrize(
    "unpacked",
    [pytest.param("a, b = [w1, w2]", id="a list"), pytest.param("a, b = [w1 * 2.0, w2]", id="a list of arithmetic")],
)
def test_screen_keeps_a_traced_value_unpacked_from_a_literal(unpacked: str) -> None:
    # classify reads `a` as w1 (VJP001): the screen reads the items of a list literal as of a tuple.
    text = _KERNEL_SITE + f"@jax.jit\ndef run(x, w1, w2):\n    {unpacked}\n    return f(a, x)\n"
    assert _findings(text, "traced.py", Settings(DEFAULT_SELECT)) == ["VJP001"]
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


@pytest.mark.parametrize(
    ("module", "primal"),
    [
        pytest.param("jnp", "x * jnp.sum(w)", id="jnp"),
        pytest.param("lax", "lax.mul(x, w)", id="lax"),
        pytest.param("jnp", "jnp.where(x > 0, w, x)", id="jnp, the argument passed on"),
    ],
)
def test_screen_keeps_an_array_use_through_a_module_a_project_module_re_exports(module: str, primal: str) -> None:
    # `from .impl import jnp` is jax.numpy for classify and the screen alike (vocabulary.imported_name).
    text = REEXPORTED.replace("from .impl import jax, jnp", f"import jax\nfrom .impl import {module}")
    text = text.replace("return jnp.dot(x, w)", f"return {primal}").replace("jnp.dot(g, w.T)", "g")
    assert _findings(text, "ops.py", Settings(DEFAULT_SELECT)) == ["VJP001"]
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


_WRAPPED_POSITIONS = """\
from functools import partial
import jax

@partial(jax.custom_vjp, nondiff_argnums=SPEC)
def f(x, block: int, LAST):
    return USE

def f_fwd(x, block, LAST):
    return f(x, block, LAST), None

def f_bwd(block, LAST, _, g):
    return (g,)

f.defvjp(f_fwd, f_bwd)
"""


@pytest.mark.parametrize(
    ("spec", "last", "findings"),
    [
        pytest.param("tuple(range(1, 3))", "interpret: bool", [], id="tuple(range(1, 3)): both static"),
        pytest.param("list((1, 2))", "interpret: bool", [], id="list((1, 2))"),
        pytest.param("tuple(range(1, 3))", "w", ["VJP001"], id="tuple(range(1, 3)): w is an array"),
        pytest.param("tuple((1, -1))", "interpret: bool", ["VJP004"], id="a negative position in tuple()"),
    ],
)
def test_screen_reads_positions_wrapped_in_tuple_or_list_as_the_sites_stage_does(
    spec: str, last: str, findings: list[str]
) -> None:
    # ejkernel: `nondiff_argnums=tuple(range(4, 9))` kept every such file for LibCST.
    name = last.split(":")[0]
    use = "x * w" if name == "w" else "x"
    text = _WRAPPED_POSITIONS.replace("SPEC", spec).replace("USE", use)
    text = text.replace("def f(x, block: int, LAST)", f"def f(x, block: int, {last})").replace("LAST", name)
    settings = Settings(DEFAULT_SELECT)
    assert _findings(text, "case.py", settings) == findings
    assert screen.may_report(text, settings) is bool(findings)


@pytest.mark.parametrize(
    ("spelling", "kept"),
    [
        pytest.param("from ._helpers import soft_cap", True, id="relative import"),
        pytest.param("from . import _helpers\nsoft_cap = _helpers.soft_cap", False, id="bound by assignment"),
        pytest.param("from helpers import soft_cap", False, id="absolute import"),
    ],
)
def test_screen_keeps_an_argument_passed_to_a_helper_of_a_sibling_module(spelling: str, kept: bool) -> None:
    # A run over the package follows `soft_cap` into `_helpers.py` (project.py); the screen
    # cannot see there, so a relative import keeps the file.
    text = _SITE.replace("from lib import helper", spelling).replace("helper(x, a)", "soft_cap(x, a)")
    assert screen.may_report(text, Settings(DEFAULT_SELECT)) is kept


def test_screen_keeps_a_call_form_of_custom_vjp_parametrized_as_a_generic() -> None:
    # probe27 G3: `jax.custom_vjp[jax.Array](f, ...)` is the callable itself, as imports.is_one_of reads it.
    text = (Path(__file__).parent.parent / "fixtures" / "partial_subscripted_generic" / "before.py").read_text()
    call_form = text[text.index("def _shift(") :]
    text = text[: text.index("@partial[Any]")] + call_form
    assert _findings(text, "case.py", Settings(DEFAULT_SELECT)) == ["VJP001"]
    assert screen.may_report(text, Settings(DEFAULT_SELECT))
