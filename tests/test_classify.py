"""classify: static evidence wins; arrays need evidence; unknown otherwise; reasons are kept."""

from __future__ import annotations

import pytest
from helpers import parse

from vjp_migrate.classify import Context, classify_site, module_helpers
from vjp_migrate.model import ArgKind
from vjp_migrate.sites import find_sites

HEADER = "import jax\nimport jax.numpy as jnp\nfrom functools import partial\nfrom typing import Callable\n"


def classify(
    primal_body: str, bwd_body: str = "return (g,)", signature: str = "a, x", extra: str = ""
) -> tuple[ArgKind, tuple[str, ...], bool]:
    code = HEADER + extra
    code += f"@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef f({signature}):\n    {primal_body}\n"
    code += f"def f_fwd({signature}):\n    return f(a, x), None\n"
    code += f"def f_bwd(a, _, g):\n    {bwd_body}\n"
    code += "f.defvjp(f_fwd, f_bwd)\n"
    module, imports = parse(code)
    (site,) = find_sites(module, imports)
    (info,) = classify_site(site, module, Context(imports, module_helpers(module), lambda node: None))
    return info.kind, tuple(e.text for e in info.evidence), info.strong


@pytest.mark.parametrize(
    ("primal", "bwd", "reason"),
    [
        pytest.param("return a(x)", "return (g,)", "called as a function", id="called"),
        pytest.param("return x.reshape(a)", "return (g.reshape(a),)", "passed", id="reshape target"),
        pytest.param("return jnp.zeros(a) + x", "return (g,)", "shape/axis/size", id="jnp.zeros shape"),
        pytest.param("return jnp.sum(x, axis=a)", "return (g,)", "`axis=`", id="axis keyword"),
        pytest.param("return x if a == 'relu' else -x", "return (g,)", "compared with a string", id="string compare"),
        pytest.param("return sum(x for _ in range(a))", "return (g,)", "`range`", id="range"),
        pytest.param("return jax.lax.scan(a, x, None, length=3)", "return (g,)", "as a function", id="scan body"),
        pytest.param("return jax.vjp(a, x)[0]", "return (g,)", "the function", id="vjp function"),
    ],
)
def test_static_uses(primal: str, bwd: str, reason: str) -> None:
    kind, reasons, _ = classify(primal, bwd)
    assert kind is ArgKind.STATIC
    assert any(reason in r for r in reasons), reasons


@pytest.mark.parametrize(
    ("bwd", "reason"),
    [
        pytest.param("return (g * float(a) + g * a,)", "passed to `float`", id="float()"),
        pytest.param("return (g * np.float32(a) + g * a,)", "concrete NumPy value by `np.float32`", id="np.float32"),
        pytest.param("return (g * np.asarray(a),)", "concrete NumPy value by `np.asarray`", id="np.asarray"),
    ],
)
def test_concrete_conversions_are_static(bwd: str, reason: str) -> None:
    kind, reasons, _ = classify("return x", bwd, extra="import numpy as np\n")
    assert kind is ArgKind.STATIC
    assert any(reason in r for r in reasons), reasons


def test_other_numpy_functions_are_still_array_data() -> None:
    kind, reasons, _ = classify("return x", "return (g * np.tanh(a),)", extra="import numpy as np\n")
    assert kind is ArgKind.ARRAY, reasons


def test_if_on_the_value_is_static_but_is_none_check_is_not() -> None:
    body = "if a:\n        return x\n    return -x"
    assert classify(body)[0] is ArgKind.STATIC
    kind, _, _ = classify("return x if a is None else x * a")
    assert kind is ArgKind.ARRAY


def test_static_wins_over_numeric_use() -> None:
    kind, reasons, _ = classify("return x * a", "return (jnp.sum(g, axis=a),)")
    assert kind is ArgKind.STATIC and any("axis" in r for r in reasons)


@pytest.mark.parametrize(
    ("primal", "bwd", "reason"),
    [
        pytest.param(
            "return x", "return (jnp.clip(g, a, 1.0),)", "used as array data by `jnp.clip` in bwd", id="jnp op in bwd"
        ),
        pytest.param("return x * a", "return (g * a,)", "used in arithmetic", id="arithmetic"),
        pytest.param("return x @ a.T", "return (g,)", "used in arithmetic", id="matmul with .T"),
        pytest.param("return x + a['w']", "return (g,)", "used in arithmetic", id="pytree item"),
        pytest.param("return x.astype(a.dtype)", "return (g,)", "`.dtype`", id="dtype attribute"),
    ],
)
def test_array_uses(primal: str, bwd: str, reason: str) -> None:
    kind, reasons, strong = classify(primal, bwd)
    assert kind is ArgKind.ARRAY and strong
    assert any(reason in r for r in reasons), reasons


@pytest.mark.parametrize(
    ("signature", "expected"),
    [
        pytest.param("a: jax.Array, x", ArgKind.ARRAY, id="jax.Array"),
        pytest.param("a: Callable[[int], int], x", ArgKind.STATIC, id="Callable"),
        pytest.param("a: str, x", ArgKind.STATIC, id="str"),
        pytest.param("a: tuple[int, ...], x", ArgKind.STATIC, id="shape tuple"),
        pytest.param("a='relu', x=None", ArgKind.STATIC, id="string default"),
        pytest.param("a: float, x", ArgKind.UNKNOWN, id="float, no use"),
    ],
)
def test_annotations_and_defaults(signature: str, expected: ArgKind) -> None:
    assert classify("return x", signature=signature)[0] is expected


def test_float_annotation_with_numeric_use_is_unknown() -> None:
    kind, reasons, _ = classify("return x * a", signature="a: float, x")
    assert kind is ArgKind.UNKNOWN and any("Python number" in r for r in reasons)


def test_opaque_helper_is_unknown_but_local_helpers_are_followed() -> None:
    kind, reasons, _ = classify("return helper(a, x)", extra="from elsewhere import helper\n")
    assert kind is ArgKind.UNKNOWN and any("not analysed" in r for r in reasons)
    local = "def scale(s, v):\n    return jnp.multiply(s, v)\n"
    kind, reasons, _ = classify("return scale(a, x)", extra=local)
    assert kind is ArgKind.ARRAY and any("helper `scale`" in r for r in reasons)


def test_call_sites_decide() -> None:
    caller = "\n@partial(jax.jit, static_argnums=(0,))\ndef run(tol, y):\n    return f(tol, y)\n"
    array_caller = "def use(x):\n    return f(jnp.ones(3), x)\n"
    assert classify("return x")[0] is ArgKind.UNKNOWN  # no call site: nothing to go on
    module_code = HEADER + "@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef f(a, x):\n    return x\n"
    module_code += (
        "def f_fwd(a, x):\n    return x, None\ndef f_bwd(a, _, g):\n    return (g,)\nf.defvjp(f_fwd, f_bwd)\n"
    )
    for extra, expected, reason in (
        (caller, ArgKind.STATIC, "jit-static parameter of `run`"),
        (array_caller, ArgKind.ARRAY, "an array is passed"),
        ("def use(x):\n    return f(lambda v: v, x)\n", ArgKind.STATIC, "a function is passed"),
    ):
        module, imports = parse(module_code + extra)
        (site,) = find_sites(module, imports)
        (info,) = classify_site(site, module, Context(imports, module_helpers(module), lambda node: None))
        assert info.kind is expected
        assert any(reason in e.text for e in info.evidence)


def test_the_same_reason_on_the_same_line_is_given_once() -> None:
    kind, reasons, _ = classify("return x * a + x / a")
    assert kind is ArgKind.ARRAY
    assert len(reasons) == len(set(reasons)) and any("arithmetic" in r for r in reasons), reasons


@pytest.mark.parametrize(
    ("primal", "bwd", "signature", "expected"),
    [
        pytest.param("return a.dot(x)", "return (a.rmatvec(g),)", "a, x", ArgKind.UNKNOWN, id="object with .dot"),
        pytest.param("return a.solve(x) * a", "return (g,)", "a, x", ArgKind.UNKNOWN, id="arithmetic on an object"),
        pytest.param(
            "return a.dot(x)", "return (a.rmatvec(g),)", "a: jax.Array, x", ArgKind.ARRAY, id="annotated wins"
        ),
        pytest.param("return a.get('w') * x", "return (g * a['w'],)", "a, x", ArgKind.ARRAY, id="dict of arrays"),
        pytest.param("return a._replace(w=x)", "return (g * a,)", "a, x", ArgKind.ARRAY, id="namedtuple"),
        pytest.param("return a.sum() + a.argsort()[0] * x", "return (g,)", "a, x", ArgKind.ARRAY, id="array methods"),
    ],
)
def test_a_method_arrays_lack_makes_array_like_use_unknown(
    primal: str, bwd: str, signature: str, expected: ArgKind
) -> None:
    kind, reasons, _ = classify(primal, bwd, signature=signature)
    assert kind is expected, reasons
    if expected is ArgKind.UNKNOWN:
        assert any("which arrays do not have" in r for r in reasons), reasons


def test_the_array_methods_are_every_public_name_of_jax_array() -> None:
    import jax

    from vjp_migrate.vocabulary import ARRAY_METHODS

    assert {n for n in dir(jax.Array) if not n.startswith("_")} <= ARRAY_METHODS
