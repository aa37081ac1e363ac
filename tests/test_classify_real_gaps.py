"""classify on what probe19 found in real code (notes/probe19-findings.md, "Gaps"): helpers a
factory defines next to its site, and the other uses that prove an argument concrete."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import pytest
from conftest import FIXTURES
from test_classify import HEADER, classified, classify, lines, site_module

from vjp_migrate.api import check_source
from vjp_migrate.codes import BY_CODE
from vjp_migrate.model import ArgKind, Settings

_ALL = Settings(frozenset(BY_CODE))


def _factory(helpers: str, primal: str = "return _helper(x, w)", bwd: str = "return (g,)") -> str:
    """A site defined inside `make`, next to `helpers` (a block indented under `make`)."""
    return HEADER + (
        f"def make():\n{helpers}"
        "    @partial(jax.custom_vjp, nondiff_argnums=(1,))\n"
        f"    def layer(x, w):\n        {primal}\n"
        "    def layer_fwd(x, w):\n        return layer(x, w), None\n"
        f"    def layer_bwd(w, res, g):\n        {bwd}\n"
        "    layer.defvjp(layer_fwd, layer_bwd)\n    return layer\n"
    )


_DOT = "    def _helper(x, w):\n        return jnp.dot(x, w)\n"
_FLOAT = "    def _helper(x, w):\n        return x * float(w)\n"


def test_array_data_in_a_helper_next_to_a_nested_site_is_array() -> None:
    # probe19 s04c: the helper was "not analysed" and `w` a hidden VJP002, though it breaks.
    info = classified(_factory(_DOT))
    assert (info.kind, info.strong) == (ArgKind.ARRAY, True), info.evidence
    texts = [e.text for e in info.evidence]
    assert any(
        "used as array data by `jnp.dot` in helper `_helper` (called from the primal `layer`)" in t for t in texts
    )


def test_the_nested_helper_breaks_with_array_data_in_nondiff_argnums() -> None:
    def make() -> object:
        def _helper(x: jax.Array, w: jax.Array) -> jax.Array:
            return jnp.dot(x, w)

        @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
        def layer(x: jax.Array, w: jax.Array) -> jax.Array:
            return _helper(x, w)

        layer.defvjp(lambda x, w: (layer(x, w), None), lambda w, _, g: (jnp.dot(g, w.T),))
        return layer

    layer = make()
    x, w = jnp.ones((2, 3)), jnp.ones((3, 4))
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.jit(jax.grad(lambda x, w: layer(x, w).sum()))(x, w)  # type: ignore[operator]


def test_a_conversion_in_a_helper_next_to_a_nested_site_is_static() -> None:
    # probe19 r21 (ColabDesign): `float(scale)` in the factory's `_primal`.
    info = classified(_factory(_FLOAT))
    assert info.kind is ArgKind.STATIC, info.evidence


def test_a_helper_two_factories_deep_is_followed() -> None:
    code = HEADER + (
        "def outer():\n"
        "    def _inner(x, w):\n        return x * float(w)\n"
        "    def make():\n"
        "        def _helper(x, w):\n            return _inner(x, w)\n"
        "        @partial(jax.custom_vjp, nondiff_argnums=(1,))\n"
        "        def layer(x, w):\n            return _helper(x, w)\n"
        "        layer.defvjp(lambda x, w: (layer(x, w), None), lambda w, r, g: (g,))\n"
        "        return layer\n"
        "    return make\n"
    )
    info = classified(code)
    assert info.kind is ArgKind.STATIC, info.evidence


@pytest.mark.parametrize(
    "helpers",
    [
        pytest.param(_FLOAT + "    _helper = jax.jit(_helper)\n", id="rebound in the factory"),
        pytest.param(_FLOAT + _DOT, id="defined twice"),
        pytest.param(
            _FLOAT.replace("def _helper", "def _other") + "    _helper = pick()\n", id="a local of the factory"
        ),
    ],
)
def test_a_name_the_factory_binds_otherwise_is_not_followed(helpers: str) -> None:
    info = classified(_factory(helpers))
    assert info.kind is ArgKind.UNKNOWN, info.evidence
    assert any("passed to `_helper`, which is not analysed" in e.text for e in info.evidence), info.evidence


def test_a_factory_local_shadows_the_module_helper_of_its_name() -> None:
    module_helper = "def _helper(x, w):\n    return x * float(w)\n"
    code = _factory("    _helper = pick()\n").replace("def make():\n", module_helper + "def make():\n")
    info = classified(code)
    assert info.kind is ArgKind.UNKNOWN, info.evidence


def test_a_local_of_the_rule_shadows_the_factory_helper() -> None:
    info = classified(_factory(_FLOAT, primal="_helper = pick()\n        return _helper(x, w)"))
    assert info.kind is ArgKind.UNKNOWN, info.evidence


_TAGGED = HEADER + (
    "def _impl(x, key):\n    return x * 2.0 + key\n"
    "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef tagged(x, site):\n    return _impl(x, 8 + 4 * site)\n"
    "def tagged_fwd(x, site):\n    return tagged(x, site), None\n"
    "def tagged_bwd(site, res, g):\n    return (g * 2.0,)\n"
    "tagged.defvjp(tagged_fwd, tagged_bwd)\n"
)


@pytest.mark.parametrize(
    "caller",
    [
        pytest.param("def caller(x):\n    return tagged(x, 0) + tagged(x, -2)\n", id="literals"),
        pytest.param(
            "def caller(x):\n    def run(y, site):\n        return tagged(y, site)\n    return run(x, 0) + run(x, 2)\n",
            id="through a local def",
        ),
        pytest.param(
            "def run(y, *, site):\n    return tagged(y, site)\ndef caller(x):\n    return run(x, site=1)\n",
            id="keyword",
        ),
    ],
)
def test_arithmetic_on_a_call_site_tag_keeps_its_finding_with_no_safe_fix(caller: str) -> None:
    # probe19 r18 (`8 + 4 * site`): the safe fix made a working tag a Tracer (a hashed key fails).
    info = classified(_TAGGED + caller)
    assert (info.kind, info.strong, info.fixable) == (ArgKind.ARRAY, False, True), info.evidence
    assert any("passes it an int literal (`0`" in e.text or "(`1`)" in e.text for e in info.evidence), info.evidence


@pytest.mark.parametrize(
    "caller",
    [
        pytest.param("def caller(x):\n    return tagged(x, 0) + tagged(x, 0.5)\n", id="a float"),
        pytest.param("def caller(x, s):\n    return tagged(x, 0) + tagged(x, s)\n", id="a parameter"),
        pytest.param(
            "def caller(x):\n    def run(y, site):\n        return tagged(y, site)\n    return run(x, 0) + run(x, n)\n",
            id="a name through a local def",
        ),
        pytest.param("", id="no call"),
    ],
)
def test_a_tag_some_call_gives_a_non_literal_keeps_its_safe_fix(caller: str) -> None:
    info = classified(_TAGGED + caller)
    assert (info.kind, info.strong) == (ArgKind.ARRAY, True), info.evidence


def test_data_use_of_an_int_literal_argument_keeps_its_safe_fix() -> None:
    code = (
        _TAGGED.replace("return _impl(x, 8 + 4 * site)", "return jnp.multiply(x, site)")
        + "def caller(x):\n    return tagged(x, 0)\n"
    )
    info = classified(code)
    assert (info.kind, info.strong) == (ArgKind.ARRAY, True), info.evidence


def test_a_tag_made_a_tracer_breaks_a_hashed_key() -> None:
    buffers: dict[object, float] = {}

    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def tagged(x: jax.Array, site: int) -> jax.Array:
        return x * buffers.setdefault(8 + 4 * site, 2.0)

    tagged.defvjp(lambda x, site: (tagged(x, site), None), lambda site, _, g: (g * 2.0,))

    @jax.custom_vjp
    def moved(x: jax.Array, site: int) -> jax.Array:
        return x * buffers.setdefault(8 + 4 * site, 2.0)

    moved.defvjp(lambda x, site: (moved(x, site), None), lambda _, g: (g * 2.0, None))
    x = jnp.arange(3.0)
    assert jax.jit(jax.grad(lambda x: (tagged(x, 0) + tagged(x, 2)).sum()))(x).tolist() == [4.0, 4.0, 4.0]
    with pytest.raises(TypeError, match="unhashable"):
        jax.jit(jax.grad(lambda x: (moved(x, 0) + moved(x, 2)).sum()))(x)


@pytest.mark.parametrize(
    ("decorator", "shown"),
    [
        pytest.param("@functools.lru_cache(maxsize=4)", "functools.lru_cache", id="lru_cache called"),
        pytest.param("@functools.cache", "functools.cache", id="cache"),
        pytest.param("@lru_cache", "lru_cache", id="imported lru_cache"),
    ],
)
def test_an_argument_passed_to_a_cached_helper_is_static(decorator: str, shown: str) -> None:
    # probe19 r17 (KaRMMa): `nside` reaches an `@lru_cache` helper, which hashes it.
    extra = f"import functools\nfrom functools import lru_cache\n{decorator}\ndef _weights(n):\n    return make(n)\n"
    kind, reasons, _ = classify("return x * _weights(a)", "return (g * _weights(a),)", extra=extra)
    assert kind is ArgKind.STATIC, reasons
    assert f"passed to `_weights`, which `@{shown}` caches by its arguments (a Tracer is unhashable)" in reasons[0]


def test_a_value_from_the_argument_passed_to_a_cached_helper_is_needed_concretely() -> None:
    extra = "import functools\n@functools.cache\ndef _weights(n):\n    return make(n)\n"
    kind, reasons, _ = classify("return x * _weights(2 * a)", extra=extra)
    assert kind is ArgKind.STATIC, reasons
    assert reasons[0].startswith("its values are needed concretely through `2 * a`"), reasons


def test_a_cached_helper_rejects_a_tracer() -> None:
    @functools.lru_cache(maxsize=4)
    def weights(n: int) -> float:
        return 1.0 / n

    with pytest.raises(TypeError, match="unhashable"):
        jax.jit(weights)(4)


@pytest.mark.parametrize("call", ["min(a, 64)", "max(8, a)", "min(a * 2, x.shape[0])", "sorted(a)[0]"])
def test_an_argument_compared_by_builtin_min_max_or_sorted_is_static(call: str) -> None:
    # probe19 s03, r18's pair_rows: `min` compares with `<`, which needs a concrete truth value.
    kind, reasons, _ = classify(f"rows = {call}\n    return x * rows", "return (g * a,)")
    assert kind is ArgKind.STATIC, reasons


@pytest.mark.parametrize(
    "use", [lambda a: min(a, 64), lambda a: max(8, a), lambda a: sorted([a, 64])[0]], ids=["min", "max", "sorted"]
)
def test_builtin_min_max_and_sorted_reject_a_tracer(use: Callable[[jax.Array], jax.Array]) -> None:
    assert use(jnp.int32(3)) is not None
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(use)(jnp.int32(3))


def test_an_argument_with_no_telling_use_says_where_it_was_looked_for() -> None:
    # probe19 s05b: VJP002 with `"reasons": []`; a user could not tell why the tool gave up.
    kind, reasons, _ = classify("return x * 2.0")
    assert kind is ArgKind.UNKNOWN, reasons
    assert reasons == (
        "none of its uses in the primal `f`, fwd `f_fwd` and bwd `f_bwd` (or in the helpers they call), nor any "
        "value a call of `f` in the module passes, tells array data from a static setting",
    )


@pytest.mark.parametrize(
    ("primal", "reason"),
    [
        pytest.param(
            lines("n = x.shape[0]", "return x * route(n * a)"),
            "used in arithmetic with the size `n` (a size or count, likely), in the primal `f`",
            id="arithmetic with a size",
        ),
        pytest.param(
            lines("n = x.shape[0]", "return x * route(n * a)"),
            "a value computed from it, through `n * a`, is passed to `route`, which is not analysed, in the primal `f`",
            id="a value from it passed on",
        ),
    ],
)
def test_a_discounted_use_is_a_reason_when_nothing_decides(primal: str, reason: str) -> None:
    kind, reasons, _ = classify(primal)
    assert kind is ArgKind.UNKNOWN, reasons
    assert reason in reasons, reasons


def test_a_number_passed_at_a_call_site_is_a_reason_when_nothing_decides() -> None:
    code = site_module("return x * 2.0") + "def run(x):\n    return f(0.5, x)\n"
    info = classified(code)
    assert info.kind is ArgKind.UNKNOWN, info.evidence
    assert [e.text for e in info.evidence] == [
        "a number is passed at a call site (`0.5`), which says nothing either way"
    ]


def test_a_discounted_use_is_no_reason_once_something_decides() -> None:
    kind, reasons, _ = classify(lines("n = x.shape[0]", "return x * route(n * a)"), "return (g * a,)")
    assert kind is ArgKind.ARRAY, reasons
    assert not any("size or count" in r or "not analysed" in r for r in reasons), reasons


def test_no_fixture_is_reported_unknown_with_no_reason() -> None:
    for before in sorted(FIXTURES.glob("*/before.py")):
        for diagnostic in check_source(before.read_text(encoding="utf-8"), path=str(before), settings=_ALL):
            if diagnostic.code == "VJP002":
                assert diagnostic.reasons, f"{before}: {diagnostic.message}"


_BLOCKED = HEADER + (
    "@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef _op(block_size, x):\n    return x * 2.0\n"
    "def _op_fwd(block_size, x):\n    return _op(block_size, x), None\n"
    "def _op_bwd(block_size, res, g):\n    return (g * 2.0,)\n"
    "_op.defvjp(_op_fwd, _op_bwd)\n"
)


@pytest.mark.parametrize(
    "caller",
    [
        pytest.param(
            "def run(x, *, block_size=DEFAULT):\n    if block_size % 8:\n        raise ValueError\n"
            "    return _op(block_size, x)\n",
            id="own if",
        ),
        pytest.param(
            "def run(x, block_size=256):\n    assert block_size > 0\n    return _op(block_size, x)\n",
            id="assert, number default",
        ),
        pytest.param(
            "def _validate(x, block_size):\n    if block_size < 8 or block_size % 8:\n        raise ValueError\n"
            "def run(x, *, block_size):\n    _validate(x, block_size)\n    return _op(block_size, x)\n",
            id="in a helper it calls",
        ),
        pytest.param(
            "def make(block_size):\n    if block_size % 8:\n        raise ValueError\n"
            "    def run(x):\n        return _op(block_size, x)\n    return run\n",
            id="a def around the call",
        ),
    ],
)
def test_a_parameter_the_caller_tests_and_passes_on_is_static(caller: str) -> None:
    # probe19 s05b, s05c, r23 (mHC-lite): the caller's `if` on block_size proves it concrete.
    info = classified(_BLOCKED + caller)
    assert info.kind is ArgKind.STATIC, info.evidence
    assert any("decides Python control flow" in e.text and "passed on at a call site" in e.text for e in info.evidence)


@pytest.mark.parametrize(
    "caller",
    [
        pytest.param(
            "def run(x, block_size):\n    block_size = block_size * 2\n    if block_size % 8:\n        raise ValueError\n"
            "    return _op(block_size, x)\n",
            id="rebound",
        ),
        pytest.param(
            "def run(x, block_size):\n    if isinstance(block_size, int):\n        pass\n    return _op(block_size, x)\n",
            id="a type test",
        ),
        pytest.param("def run(x, block_size):\n    return _op(block_size + 1, x)\n", id="not passed as it came"),
    ],
)
def test_no_test_of_the_value_passed_proves_nothing(caller: str) -> None:
    info = classified(_BLOCKED + caller)
    assert info.kind is ArgKind.UNKNOWN, info.evidence


def test_a_caller_that_tests_its_parameter_cannot_be_jitted_over_it() -> None:
    def run(x: jax.Array, block_size: int) -> jax.Array:
        if block_size % 8:
            raise ValueError("block_size must be a multiple of 8")
        return x * 2.0

    assert run(jnp.ones(2), 16).tolist() == [2.0, 2.0]
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(run)(jnp.ones(2), 16)
