"""classify on what probe25 found in real code: uses that need a concrete value and were taken for
array uses (a truth test by `or`/`and`, `.item()`, a format spec), and what JAX does with each."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from test_classify import HEADER, classified, classify, lines, site_module

from vjp_migrate.model import ArgKind


@pytest.mark.parametrize(
    ("primal", "shown"),
    [
        # probe25a G1 (EasyDeL flash attention): `softmax_scale = softmax_scale or 1 / sqrt(d)`.
        pytest.param(lines("a = a or 1.0 / x.shape[-1]", "return x * a"), "`... or ...`", id="or default"),
        pytest.param("return x * (a and 2.0)", "`... and ...`", id="and"),
        pytest.param(lines("s = a * 2.0", "return x * (s or 1.0)"), "`... or ...`", id="a value from it"),
        pytest.param("return x * ((a and a) or 0.5)", "`... and ...`", id="nested"),
        pytest.param("return x * ((a > 0) or 0.5)", "`... or ...`", id="a comparison"),
    ],
)
def test_an_operand_truth_tested_by_or_and_is_static(primal: str, shown: str) -> None:
    kind, reasons, _ = classify(primal, "return (g * a,)")
    assert kind is ArgKind.STATIC, reasons
    assert any(f"used as a truth value ({shown})" in r for r in reasons), reasons


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param("return x * (None or a)", id="the last operand"),
        pytest.param("return x * (a is not None and a)", id="a test of None"),
        pytest.param("return x * (x.shape[0] > 1 or a)", id="another value tested"),
        pytest.param("return jax.debug.callback(print, a) or x * a", id="what a call makes of it"),
    ],
)
def test_an_operand_handed_on_by_or_and_is_no_truth_test(primal: str) -> None:
    kind, reasons, _ = classify(primal, "return (g * a,)")
    assert kind is ArgKind.ARRAY, reasons


@pytest.mark.parametrize(
    ("primal", "shown"),
    [
        # probe25a G2: a value read on the host, for a log line or a Python number.
        pytest.param(lines("print(a.item())", "return x * a"), "has its method `.item()` called", id="item"),
        pytest.param("return x * len(a.tolist())", "has its method `.tolist()` called", id="tolist"),
        pytest.param(lines("key = a.tobytes()", "return x * a"), "has its method `.tobytes()` called", id="tobytes"),
        pytest.param(lines("s = a * 2", "print(s.item())", "return x * a"), "has its method", id="a value from it"),
        pytest.param(lines("print(f'{a:.3f}')", "return x * a"), "formatted with a format spec", id="format spec"),
    ],
)
def test_a_use_that_reads_the_value_on_the_host_is_static(primal: str, shown: str) -> None:
    kind, reasons, _ = classify(primal, "return (g * a,)")
    assert kind is ArgKind.STATIC, reasons
    assert any(shown in r for r in reasons), reasons


def test_an_f_string_without_a_format_spec_is_no_static_use() -> None:
    kind, reasons, _ = classify(lines("print(f'{a}')", "return x * a"), "return (g * a,)")
    assert kind is ArgKind.ARRAY, reasons


@pytest.mark.parametrize(
    ("use", "error"),
    [
        pytest.param(lambda x, a: x * (a or 1.0), jax.errors.TracerBoolConversionError, id="or"),
        pytest.param(lambda x, a: x * (a and 2.0), jax.errors.TracerBoolConversionError, id="and"),
        pytest.param(lambda x, a: x * a.item(), jax.errors.ConcretizationTypeError, id="item"),
        pytest.param(lambda x, a: x * a.tolist(), jax.errors.ConcretizationTypeError, id="tolist"),
        pytest.param(lambda x, a: (f"{a:.3f}", x)[1], TypeError, id="format spec"),
    ],
)
def test_each_use_needs_a_concrete_value(use: Callable[[jax.Array, jax.Array], jax.Array], error: type) -> None:
    x, a = jnp.ones(2), jnp.float32(0.5)
    assert use(x, a).shape == (2,)  # concrete: fine
    with pytest.raises(error):
        jax.jit(use)(x, a)  # traced, as the migration would make it: it raises
    assert jax.jit(lambda x: (f"{x}", x)[1])(x).shape == (2,)  # no format spec: a Tracer prints


# probe25b G1: `attend(q, k=keys)`, a function not analysed, made `keys` static by the keyword's
# name alone, over `jnp.dot(q, keys.T)` in bwd: no finding at all, not even under ALL.
_NOT_ANALYSED = "from elsewhere import attend\n"


@pytest.mark.parametrize("keyword", ["k", "size", "n", "order", "padding", "length"])
def test_a_setting_name_given_to_a_function_not_analysed_is_a_doubt(keyword: str) -> None:
    kind, reasons, _ = classify(f"return attend(x, {keyword}=a)", "return (jnp.dot(g, a.T),)", extra=_NOT_ANALYSED)
    assert kind is ArgKind.UNKNOWN, reasons
    shown = f"passed as `{keyword}=` to `attend`, which is not analysed: a size or setting there needs it concrete"
    assert any(r.startswith(shown) for r in reasons), reasons


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param("return attend(x, axis=a)", id="a keyword any function needs concrete"),
        pytest.param("return jnp.fft.fft(x, n=a)", id="a library function's size"),
        pytest.param("return jnp.argsort(x, kind=a)", id="a library function's mode"),
    ],
)
def test_a_static_keyword_stays_static(primal: str) -> None:
    kind, reasons, _ = classify(primal, "return (jnp.dot(g, a.T),)", extra=_NOT_ANALYSED)
    assert kind is ArgKind.STATIC, reasons


def test_a_module_helper_given_a_setting_name_is_followed() -> None:
    helper = "def attend(x, k):\n    return x @ k.T\n"
    kind, reasons, _ = classify("return attend(x, k=a)", extra=helper)
    assert kind is ArgKind.ARRAY, reasons
    assert any("in helper `attend`" in r for r in reasons), reasons


def test_an_array_given_as_k_to_a_function_breaks_in_nondiff_argnums() -> None:
    def attend(q: jax.Array, k: jax.Array) -> jax.Array:
        return q @ k.T

    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def f(q: jax.Array, keys: jax.Array) -> jax.Array:
        return attend(q, k=keys).sum()

    f.defvjp(lambda q, keys: (f(q, keys), q), lambda keys, q, g: (g * (q @ keys.T).sum(1, keepdims=True) * q,))
    q, keys = jnp.ones((2, 3)), jnp.arange(12.0).reshape(4, 3)
    assert jax.grad(f)(q, keys).shape == (2, 3)  # concrete keys: fine
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.jit(jax.grad(f))(q, keys)


# probe25a G4 / probe25b G4 (an n-body FFI module, fmdj): the module jits the site with
# `static_argnames`, bound to an attribute or another name instead of the site's own name.
@pytest.mark.parametrize(
    ("binding", "shown"),
    [
        pytest.param("f.jit = jax.jit(f, static_argnames=('a',))", "bound to `f.jit`", id="attribute"),
        pytest.param("f_jit = jax.jit(f, static_argnums=(0,))", "bound to `f_jit`", id="another name"),
        pytest.param("f = jax.jit(f, static_argnames=('a',))", "that `f` is rebound to", id="the name itself"),
    ],
)
def test_a_jit_of_the_site_marks_it_static_wherever_it_is_bound(binding: str, shown: str) -> None:
    info = classified(site_module("return cfg_apply(x, a)", extra="from elsewhere import cfg_apply\n") + binding + "\n")
    assert info.kind is ArgKind.STATIC, info.evidence
    assert any(e.text == f"static in the `jax.jit` {shown}" for e in info.evidence), info.evidence


def test_a_jit_bound_to_another_name_makes_array_uses_no_safe_fix() -> None:
    # The site may still be called traced without that jit: array uses win, but not safely.
    info = classified(site_module("return x * a", "return (g * a,)") + "f_jit = jax.jit(f, static_argnums=(0,))\n")
    assert info.kind is ArgKind.ARRAY and not info.fixable, info
    rebound = classified(site_module("return x * a", "return (g * a,)") + "f = jax.jit(f, static_argnums=(0,))\n")
    assert rebound.kind is ArgKind.STATIC, rebound


def test_a_jit_of_the_def_a_call_form_site_wraps_marks_it_static() -> None:
    code = HEADER + (
        "from elsewhere import cfg_apply\n"
        "def run(a, x):\n    return cfg_apply(x, a)\n"
        "run.jit = jax.jit(run, static_argnames=('a',))\n"
        "run.vjp = jax.custom_vjp(run, nondiff_argnums=(0,))\n"
        "def run_fwd(a, x):\n    return run(a, x), None\n"
        "def run_bwd(a, _, g):\n    return (g,)\n"
        "run.vjp.defvjp(run_fwd, run_bwd)\n"
    )
    info = classified(code)
    assert info.kind is ArgKind.STATIC, info.evidence


def test_another_wrapper_bound_to_another_name_proves_nothing() -> None:
    extra = "from elsewhere import wrap\n"
    binding = "f_w = wrap(f, static_argnames=('a',))\n"
    info = classified(site_module("return x * a", "return (g * a,)", extra=extra) + binding)
    assert info.kind is ArgKind.ARRAY, info.evidence


def test_jit_refuses_an_array_where_static_argnames_names_it() -> None:
    jitted = jax.jit(lambda a, x: x * a, static_argnames=("a",))
    assert jitted(2.0, jnp.ones(2)).tolist() == [2.0, 2.0]
    with pytest.raises(ValueError, match="hashable"):
        jitted(jnp.ones(2), jnp.ones(2))


# probe25b G6 (microsoft/folx): `pallas_call` imported from its private module.
@pytest.mark.parametrize(
    "spelling",
    ["from jax.experimental.pallas import pallas_call", "from jax._src.pallas.pallas_call import pallas_call"],
)
def test_pallas_call_from_its_private_module_is_pallas_call(spelling: str) -> None:
    primal = "return pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), interpret=a)(x)"
    kind, reasons, _ = classify(primal, extra=f"{spelling}\nfrom elsewhere import kernel\n")
    assert kind is ArgKind.STATIC, reasons
    assert any("pallas_call" in r for r in reasons), reasons


def test_the_private_pallas_names_are_the_public_ones() -> None:
    from jax._src.pallas import core, pallas_call
    from jax.experimental import pallas

    from vjp_migrate.vocabulary import public_name

    assert public_name("jax._src.pallas.pallas_call.pallas_call") == "jax.experimental.pallas.pallas_call"
    assert pallas_call.pallas_call is pallas.pallas_call
    assert public_name("jax._src.pallas.core.BlockSpec") == "jax.experimental.pallas.BlockSpec"
    assert core.BlockSpec is pallas.BlockSpec
    assert public_name("jax.numpy.dot") == "jax.numpy.dot"


THROUGH_JIT = """\
import jax
import jax.numpy as jnp


def simulate(x, scale: float, steps):
    for _ in range(steps):
        x = x * scale
    return x


simulate.jit = jax.jit(simulate, static_argnames=("steps",))
simulate.vjp = jax.custom_vjp(simulate, nondiff_argnums=(1, 2))


def simulate_fwd(x, scale: float, steps):
    return simulate(x, scale, steps), None


def simulate_bwd(scale: float, steps, _, g):
    for _ in range(steps):
        g = g * scale
    return (g,)


simulate.vjp.defvjp(simulate_fwd, simulate_bwd)


def run(x):
    return {call}
"""


@pytest.mark.parametrize(
    ("call", "strong"),
    [
        # probe25b G2 (fmdj): `simulate.jit(p, tend=t1, ...)` with `t1 = jnp.float32(...)`.
        pytest.param("simulate.jit(x, scale=jnp.float32(2.0), steps=3)", True, id="through the jit"),
        pytest.param("simulate.jit.lower(x, jnp.float32(2.0), 3)", True, id="lowered"),
        pytest.param("simulate(x, jnp.float32(2.0), 3)", True, id="the primal itself"),
        pytest.param("x", False, id="no call"),
    ],
)
def test_calls_through_a_jit_of_the_primal_bound_to_an_attribute_are_its_call_sites(call: str, strong: bool) -> None:
    """`scale: float` alone leaves arithmetic unproven; an array passed at a call of the primal,
    through the jit the module binds to `simulate.jit`, is decisive. `steps`, static in that
    jit, stays."""
    from vjp_migrate.api import check_source, fix_source
    from vjp_migrate.codes import BY_CODE
    from vjp_migrate.model import Settings

    found = check_source(THROUGH_JIT.format(call=call), settings=Settings(frozenset(BY_CODE)))
    assert [(d.code, d.argument, d.fixable) for d in found] == [("VJP001" if strong else "VJP002", "scale", strong)]
    if strong:  # the safe fix runs under jit with `scale` traced (real JAX on CPU)
        fixed = fix_source(THROUGH_JIT.format(call=call), settings=Settings(frozenset(BY_CODE)))
        namespace: dict[str, Any] = {}
        exec(compile(fixed.source, "through_jit.py", "exec"), namespace)
        vjp = namespace["simulate"].vjp
        grad = jax.jit(jax.grad(lambda x, s: vjp(x, s, 3).sum()))(jnp.ones(2), jnp.float32(2.0))
        assert grad.tolist() == [8.0, 8.0]
