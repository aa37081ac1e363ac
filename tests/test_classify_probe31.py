"""classify on probe31's static places it missed, each a wrong safe VJP001 that broke
`jax.jit(lambda x: f(x, 2))`: an index or key into a Python container (S3: `_SCALES[level]`,
`{1: a, 2: b}[order]`), the decimals of `x.round(decimals)` and builtin `round(x, ndigits)` (S4),
and the static parameters of `jax.ops.segment_sum` and the other calls of
``vocabulary.STATIC_PARAMETERS_OF`` given by position (S5)."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from test_classify import classify, lines

from vjp_migrate.model import ArgKind
from vjp_migrate.vocabulary import STATIC_PARAMETERS_OF

IMPORTS = (
    "import numpy as np\nfrom jax.experimental import pallas as pl\nfrom jax.experimental.shard_map import shard_map\n"
)


def _static(primal: str, shown: str, extra: str = "", bwd: str = "return (g * a,)") -> None:
    """The argument is static, for the reason ``shown``, though bwd does arithmetic with it."""
    kind, reasons, _ = classify(primal, bwd, extra=IMPORTS + extra)
    assert kind is ArgKind.STATIC, reasons
    assert any(shown in r for r in reasons), reasons


@pytest.mark.parametrize(
    ("extra", "primal", "shown"),
    [
        pytest.param(
            "_SCALES = (1.0, 0.5)\n",
            "return x * _SCALES[a]",
            "used as an index of the module-level tuple `_SCALES`, which takes only a concrete int",
            id="module-level tuple",
        ),
        pytest.param(
            "_SCALES = [1.0, 0.5]\n", "return x * _SCALES[a]", "of the module-level list `_SCALES`", id="module list"
        ),
        pytest.param(
            "_SCALES = list(range(4))\n", "return x * _SCALES[a]", "of the module-level list `_SCALES`", id="list()"
        ),
        pytest.param(
            "_SCALES: tuple[float, ...] = tuple(s / 2 for s in range(4))\n",
            "return x * _SCALES[a]",
            "of the module-level tuple `_SCALES`",
            id="annotated tuple()",
        ),
        pytest.param("_AXES = 'xyz'\n", "return x * len(_AXES[a])", "of the module-level string `_AXES`", id="string"),
        pytest.param("_SCALES = (1.0, 0.5)\n", "return x * _SCALES[a - 1]", "through `a - 1`", id="a value from it"),
        pytest.param("", "return x * (1.0, 0.5)[a]", "used as an index of a tuple literal", id="tuple literal"),
        pytest.param(
            "", lines("scales = [1.0, 0.5]", "return x * scales[a]"), "of the list `scales` that `f` binds", id="local"
        ),
        pytest.param(
            "", "return x * {1: 1.0, 2: 0.5}[a]", "used as a key of a dict literal (a subscript)", id="dict literal"
        ),
        pytest.param(
            "",
            "return x * {k: k / 2 for k in range(3)}[a]",
            "used as a key of a dict comprehension",
            id="dict comprehension",
        ),
        pytest.param(
            "",
            lines("coeffs = {1: 1.0, 2: 0.5}", "return x * coeffs[a]"),
            "used as a key of the dict `coeffs` that `f` binds (a subscript)",
            id="local dict",
        ),
        pytest.param(
            "",
            lines("coeffs = dict(one=1.0)", "return x * coeffs.get(a, 0.5)"),
            "used as a key of the dict `coeffs` that `f` binds (`.get`)",
            id="local dict's get",
        ),
    ],
)
def test_an_index_or_key_into_a_python_container_is_static(extra: str, primal: str, shown: str) -> None:
    _static(primal, shown, extra)


@pytest.mark.parametrize(
    ("extra", "primal"),
    [
        pytest.param("", "return x[a]", id="an array parameter"),
        pytest.param("_TABLE = jnp.array([1.0, 0.5])\n", "return x * _TABLE[a]", id="a module-level jnp array"),
        pytest.param(
            "_TABLE = (1.0, 0.5)\n", lines("_TABLE = jnp.asarray(_TABLE)", "return x * _TABLE[a]"), id="local"
        ),
        pytest.param("", lines("for w in [x, 2 * x]:", "    x = w[a]", "return x"), id="a loop's item"),
        pytest.param("", lines("t = (x, x)", "t = t + (x,)", "return x * t[0][a]"), id="a local bound twice"),
        pytest.param("_TABLE = (1.0, 0.5)\n", "return x * _TABLE[0] * a", id="not the index"),
    ],
)
def test_an_index_into_an_array_is_no_static_use(extra: str, primal: str) -> None:
    # JAX indexes a JAX array with a Tracer: the argument stays the array data bwd's arithmetic
    # says. (A host NumPy array does not, and a name bound twice may be a list: both were listed
    # here once; see test_classify_module_tables.py.)
    kind, reasons, _ = classify(primal, "return (g * a,)", extra=IMPORTS + extra)
    assert kind is ArgKind.ARRAY, reasons


def test_a_python_container_takes_no_tracer_as_its_index_or_key_while_an_array_does() -> None:
    x = jnp.arange(3.0)
    assert float(jax.jit(lambda i: x[i])(2)) == 2.0
    with pytest.raises(jax.errors.TracerIntegerConversionError):
        jax.jit(lambda i: x * (1.0, 0.5, 0.25)[i])(2)
    with pytest.raises(TypeError, match="unhashable"):
        jax.jit(lambda i: x * {1: 1.0, 2: 0.5}[i])(2)


@pytest.mark.parametrize(
    ("primal", "shown"),
    [
        pytest.param("return x.round(a)", "(argument 1) to the array method `.round` (as to `jnp.round`)", id="round"),
        pytest.param("return x.round(decimals=a)", "(`decimals=`) to the array method `.round`", id="decimals="),
        pytest.param("return x.take(0, a)", "(argument 2) to the array method `.take`", id="take's axis"),
        pytest.param("return x.argsort(a) * x", "(argument 1) to the array method `.argsort`", id="argsort"),
        pytest.param("return x.cumprod(a)", "(argument 1) to the array method `.cumprod`", id="cumprod"),
        pytest.param("return x.diagonal(a)", "(argument 1) to the array method `.diagonal`", id="diagonal"),
        pytest.param("return round(x, a)", "passed as `ndigits` to `round`", id="builtin round"),
        pytest.param("return x * round(0.123, ndigits=a)", "passed as `ndigits=` to `round`", id="ndigits="),
        pytest.param("return jnp.round(x, a)", "passed as a static setting (argument 2) to `jnp.round`", id="jnp"),
        pytest.param("return jnp.around(x, a)", "passed as a static setting (argument 2) to `jnp.around`", id="around"),
    ],
)
def test_the_decimals_of_round_and_other_array_method_settings_are_static(primal: str, shown: str) -> None:
    _static(primal, shown)


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param("return x * round(a)", id="what builtin round rounds"),
        pytest.param("return x.at[0].min(a)", id="an indexed update's values, under a reduction's name"),
        pytest.param("return x.clip(a)", id="a method's data place"),
    ],
)
def test_a_data_place_of_round_or_an_array_method_is_no_static_use(primal: str) -> None:
    kind, reasons, _ = classify(primal, "return (g * a,)")
    assert kind is not ArgKind.STATIC, reasons


def test_round_takes_no_tracer_as_its_decimals() -> None:
    x = jnp.array([0.123, 1.456])
    assert jax.jit(lambda v: round(v, 2))(x).tolist() == pytest.approx([0.12, 1.46])
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        jax.jit(lambda d: x.round(d))(2)
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(lambda d: round(x, d))(2)


@pytest.mark.parametrize(
    ("primal", "shown"),
    [
        pytest.param(
            "return jax.ops.segment_sum(x, ids, a)",
            "passed as `num_segments` to `jax.ops.segment_sum`, which needs a static value there",
            id="segment_sum",
        ),
        pytest.param("return segment_max(x, ids, a)", "`num_segments` to `segment_max`", id="imported"),
        pytest.param("return jax.ops.segment_prod(x, ids, 3, a)", "`indices_are_sorted` to", id="indices_are_sorted"),
        pytest.param("return jax.ops.segment_min(x, ids, num_segments=a)", "`num_segments=` to", id="keyword"),
        pytest.param("return pl.pallas_call(k, a)(x)", "passed as `out_shape` to `pl.pallas_call`", id="out_shape"),
        pytest.param(
            "return shard_map(k, mesh, specs, specs, a)(x)", "passed as `check_rep` to `shard_map`", id="check_rep"
        ),
    ],
)
def test_a_static_parameter_given_by_position_is_static(primal: str, shown: str) -> None:
    extra = "from jax.ops import segment_max\nids = jnp.array([0, 0, 1])\n"
    _static(primal, shown, extra)


def test_a_segment_reductions_data_is_no_static_use() -> None:
    kind, reasons, _ = classify("return jax.ops.segment_sum(a, ids, 2) * x", "return (g * a,)", extra="ids = (0, 1)\n")
    assert kind is not ArgKind.STATIC, reasons


def test_segment_sum_takes_no_tracer_as_its_number_of_segments() -> None:
    data, ids = jnp.arange(4.0), jnp.array([0, 0, 1, 2])
    assert jax.jit(lambda d: jax.ops.segment_sum(d, ids, 3))(data).tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(lambda n: jax.ops.segment_sum(data, ids, n))(3)


def _installed(qname: str) -> Callable[..., Any] | None:
    module, _, name = qname.rpartition(".")
    try:
        function: Callable[..., Any] = getattr(importlib.import_module(module), name)
        return function
    except (ImportError, AttributeError):
        return None


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("qname", sorted(STATIC_PARAMETERS_OF))
def test_the_static_parameters_positions_are_the_installed_signatures(qname: str) -> None:
    # A position listed is where the installed function takes that parameter by position; a
    # parameter listed with none is keyword-only there, or missing (an older JAX's).
    function = _installed(qname)
    if function is None:
        pytest.skip(f"{qname} is not installed")
    params = list(inspect.signature(function).parameters.values())
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for position, name in STATIC_PARAMETERS_OF[qname]:
        if position is None:
            assert name not in positional, (qname, name)
        else:
            assert positional[position] == name, (qname, position, positional)
