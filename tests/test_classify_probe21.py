"""classify on what probe21 found in real code (notes/probe21-findings.md, "Gaps")."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_classify import HEADER, _unscreened, classified, classify, site_module

from vjp_migrate.model import ArgKind

_FIXED_POINT = HEADER + (
    "import equinox as eqx\nimport flax\nfrom flax import struct\n"
    "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef solve(x, rtol):\n    return x * rtol\n"
    "def solve_fwd(x, rtol):\n    return solve(x, rtol), None\n"
    "def solve_bwd(rtol, _, g):\n    return (g * rtol,)\nsolve.defvjp(solve_fwd, solve_bwd)\n"
)


def _solver(header: str, field: str, call: str = "solve(x, self.rtol)") -> str:
    return _FIXED_POINT + f"{header}\n    rtol: float = {field}\n    def run(self, x):\n        return {call}\n"


@pytest.mark.parametrize(
    ("header", "field", "shown"),
    [
        pytest.param("class Solver(eqx.Module):", "eqx.field(static=True, default=1e-6)", "eqx.field", id="eqx"),
        pytest.param("class Solver(eqx.Module):", "eqx.static_field()", "eqx.static_field()", id="eqx static_field"),
        pytest.param(
            "@flax.struct.dataclass\nclass Solver:", "struct.field(pytree_node=False)", "struct.field", id="flax"
        ),
        pytest.param(
            "class Solver(struct.PyTreeNode):", "struct.field(pytree_node=False)", "struct.field", id="PyTreeNode"
        ),
    ],
)
def test_a_static_field_a_method_passes_is_static(header: str, field: str, shown: str) -> None:
    # probe21 q08 (aquaflux): `_implicit_solve(..., self.rtol, ...)` from an `eqx.Module` whose
    # `rtol` is `eqx.field(static=True)`: arithmetic made it a VJP001 with a safe fix.
    info = classified(_solver(header, field))
    assert info.kind is ArgKind.STATIC, info.evidence
    text = info.evidence[0].text
    assert text.startswith("the field `rtol` that `Solver` declares static (`" + shown), text
    assert text.endswith("is passed at a call site (`self.rtol`)"), text


@pytest.mark.parametrize(
    "registration",
    [
        pytest.param(
            "@partial(jax.tree_util.register_dataclass, data_fields=['x'], meta_fields=['rtol'])\n"
            "@dataclasses.dataclass\nclass Solver:",
            id="decorator",
        ),
        pytest.param(
            "@dataclasses.dataclass\nclass Solver:",
            id="module-level call",
        ),
    ],
)
def test_a_meta_field_of_a_registered_dataclass_a_method_passes_is_static(registration: str) -> None:
    code = "import dataclasses\n" + _solver(registration, "1e-6").replace("    rtol:", "    x: jax.Array\n    rtol:")
    if "@partial" not in registration:
        code += "jax.tree_util.register_dataclass(Solver, ['x'], ['rtol'])\n"
    info = classified(code)
    assert info.kind is ArgKind.STATIC, info.evidence
    assert "in the `meta_fields` of `jax.tree_util.register_dataclass`" in info.evidence[0].text, info.evidence


def test_a_data_field_of_a_registered_dataclass_is_no_evidence() -> None:
    code = "import dataclasses\n" + _solver(
        "@partial(jax.tree_util.register_dataclass, data_fields=['rtol'], meta_fields=['x'])\n"
        "@dataclasses.dataclass\nclass Solver:",
        "1e-6",
    )
    info = classified(code)
    assert info.kind is ArgKind.ARRAY, info.evidence


def test_a_field_of_a_leafless_class_a_method_passes_is_static() -> None:
    code = _solver("@jax.tree_util.register_static\nclass Solver:", "1e-6")
    info = classified(code)
    assert info.kind is ArgKind.STATIC, info.evidence


@pytest.mark.parametrize(
    ("header", "field", "call"),
    [
        pytest.param("class Solver(eqx.Module):", "eqx.field(default=1e-6)", "solve(x, self.rtol)", id="a leaf"),
        pytest.param("class Solver(eqx.Module):", "eqx.field(static=False)", "solve(x, self.rtol)", id="static=False"),
        pytest.param("class Solver:", "eqx.field(static=True)", "solve(x, self.rtol)", id="no module"),
        pytest.param(
            "@flax.struct.dataclass\nclass Solver:",
            "struct.field(pytree_node=True)",
            "solve(x, self.rtol)",
            id="flax leaf",
        ),
        pytest.param(
            "class Solver(eqx.Module):", "eqx.field(static=True)", "solve(x, other.rtol)", id="another object"
        ),
        pytest.param(
            "class Solver(eqx.Module):",
            "eqx.field(static=True)",
            "(lambda self: solve(x, self.rtol))(y)",
            id="a lambda's own self",
        ),
    ],
)
def test_no_static_field_of_the_method_s_class_is_no_evidence(header: str, field: str, call: str) -> None:
    info = classified(_solver(header, field, call))
    assert info.kind is ArgKind.ARRAY, info.evidence


def test_a_static_field_is_no_tracer_under_jit() -> None:
    # eqx.Module keeps a `static=True` field as aux data, as `register_dataclass` meta_fields do.
    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def solve(x: jax.Array, rtol: float) -> jax.Array:
        return x * rtol

    solve.defvjp(lambda x, rtol: (solve(x, rtol), None), lambda rtol, _, g: (g * rtol,))

    @dataclasses.dataclass(frozen=True)
    class Solver:
        rtol: float = 0.5

        def run(self, x: jax.Array) -> jax.Array:
            return solve(x, self.rtol)

    jax.tree_util.register_dataclass(Solver, data_fields=[], meta_fields=["rtol"])
    loss = jax.jit(jax.grad(lambda x, s: s.run(x).sum()))
    assert loss(jnp.ones(2), Solver()).tolist() == [0.5, 0.5]


_OPAQUE_SITE = HEADER + (
    "import numpy as np\nfrom elsewhere import noise\n"
    "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef noisy(x, key):\n    return x + noise(key, x.shape)\n"
    "def noisy_fwd(x, key):\n    return noisy(x, key), None\n"
    "def noisy_bwd(key, _, g):\n    return (g,)\nnoisy.defvjp(noisy_fwd, noisy_bwd)\n"
)


@pytest.mark.parametrize(
    ("body", "made"),
    [
        pytest.param("k1, k2 = jax.random.split(key)\n    return noisy(x, k1)", "jax.random.split(key)", id="split"),
        pytest.param("k = jnp.ones(3)\n    return noisy(x, k)", "jnp.ones(3)", id="jnp.ones"),
        pytest.param(
            "out = x\n    for k in jax.random.split(key, 3):\n        out = noisy(out, k)\n    return out",
            "jax.random.split(key, 3)",
            id="a loop over keys",
        ),
    ],
)
def test_an_array_a_caller_makes_in_a_local_is_array_data(body: str, made: str) -> None:
    # probe21 G3 (s03b, AQT's context key): `key1, key2 = jax.random.split(key)` then `f(x, key1)`.
    # The screen does not keep these yet: strict xfails in test_prefilter.
    info = _unscreened(_OPAQUE_SITE + f"def quantize(x, key):\n    {body}\n")
    # Not strong: the key also goes to `noise`, whose body is not read (probe32 P3).
    assert (info.kind, info.strong) == (ArgKind.ARRAY, False), info.evidence
    assert info.evidence[0].text.endswith(f"made by `{made}`"), info.evidence


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("k = np.ones(3)\n    return noisy(x, k)", id="host NumPy"),
        pytest.param("k = jnp.shape(x)\n    return noisy(x, k)", id="metadata"),
        pytest.param("k = jnp.ones(3)\n    k = 'fast'\n    return noisy(x, k)", id="bound twice"),
        pytest.param("k = jnp.ones(3)\n    return (lambda k: noisy(x, k))('fast')", id="a lambda's own"),
        pytest.param("return noisy(x, key)", id="a parameter"),
    ],
)
def test_no_jax_array_made_in_a_local_is_no_call_site_array(body: str) -> None:
    info = classified(_OPAQUE_SITE + f"def quantize(x, key):\n    {body}\n")
    assert not any(e.text.startswith("an array is passed") for e in info.evidence), info.evidence


def test_a_split_key_passed_in_nondiff_argnums_breaks_under_jit() -> None:
    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def noisy(x: jax.Array, key: jax.Array) -> jax.Array:
        return x + jax.random.uniform(key, x.shape)

    noisy.defvjp(lambda x, key: (noisy(x, key), None), lambda key, _, g: (g,))

    def quantize(x: jax.Array, key: jax.Array) -> jax.Array:
        key1, _ = jax.random.split(key)
        return noisy(x, key1)

    x, key = jnp.ones(3), jax.random.PRNGKey(0)
    assert jax.grad(lambda x: quantize(x, key).sum())(x).tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.jit(jax.grad(lambda x, key: quantize(x, key).sum()))(x, key)


@pytest.mark.parametrize(
    "use",
    [
        pytest.param("np.array(a.recharge)", id="np.array"),
        pytest.param("np.asarray(a.forcing.recharge)", id="np.asarray, two attributes deep"),
        pytest.param("np.float32(a.scale)", id="np.float32"),
    ],
)
def test_an_attribute_of_the_argument_converted_by_host_numpy_is_static(use: str) -> None:
    # probe21 G1 (dGW groundwater q01): `np.array(forcings.recharge)` in the primal and bwd.
    kind, reasons, _ = classify(f"return x * jnp.asarray({use}).sum()", extra="import numpy as np\n")
    assert kind is ArgKind.STATIC, reasons
    assert "converted to a concrete NumPy value by `np." in reasons[0], reasons


@pytest.mark.parametrize(
    "use",
    [
        pytest.param("np.sum(a.recharge)", id="a NumPy reduction: dispatches to the Tracer's own method"),
        pytest.param("np.array(a.shape)", id="metadata"),
        pytest.param("jnp.array(a.recharge)", id="jnp"),
    ],
)
def test_no_host_conversion_of_an_attribute_is_no_static_proof(use: str) -> None:
    kind, reasons, _ = classify(f"return x * jnp.asarray({use}).sum()", extra="import numpy as np\n")
    assert kind is not ArgKind.STATIC, reasons


def test_host_numpy_cannot_convert_a_traced_attribute() -> None:
    forcings = {"recharge": jnp.ones(3)}
    assert np.array(forcings["recharge"]).sum() == 3.0
    with pytest.raises(jax.errors.TracerArrayConversionError):
        jax.jit(lambda f: np.array(f["recharge"]))(forcings)


@pytest.mark.parametrize(
    ("use", "shown"),
    [
        pytest.param("jax.pure_callback(host, jax.ShapeDtypeStruct(x.shape, x.dtype), x, a)", "jax.pure_callback"),
        pytest.param("io_callback(host, jax.ShapeDtypeStruct(x.shape, x.dtype), x, a)", "io_callback"),
        pytest.param("jax.debug.callback(host, a) or x", "jax.debug.callback"),
        pytest.param("nki_call(host, x, a, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))", "nki_call"),
    ],
)
def test_an_operand_of_a_host_callback_is_array_data(use: str, shown: str) -> None:
    # probe21 G9 (NPU simulator q27): `pure_callback(fn, shape, a, b, device_id)` was "not analysed";
    # AWS Neuron's `nki_call(kernel, *operands)` (probe23) likewise.
    extra = "from jax.experimental import io_callback\nfrom jax_neuronx import nki_call\nfrom elsewhere import host\n"
    info = _unscreened(site_module(f"return {use}", "return (g,)", extra=extra))
    assert (info.kind, info.strong) == (ArgKind.ARRAY, True), info.evidence
    text = info.evidence[0].text
    assert text.startswith(f"passed as an operand to `{shown}`, which takes it as array data"), text


@pytest.mark.parametrize(
    "use",
    [
        pytest.param("jax.pure_callback(host, a, x)", id="the result's shapes"),
        pytest.param("jax.pure_callback(a, jax.ShapeDtypeStruct(x.shape, x.dtype), x)", id="the host function"),
        pytest.param("jax.pure_callback(host, s, x, vmap_method=a)", id="a keyword"),
        pytest.param("nki_call(a, x, out_shape=s)", id="the NKI kernel"),
        pytest.param("nki_call(host, x, out_shape=a)", id="the NKI result's shapes"),
    ],
)
def test_no_operand_place_of_a_host_callback_is_no_array_data(use: str) -> None:
    extra = "from jax_neuronx import nki_call\nfrom elsewhere import host, s\n"
    kind, reasons, _ = classify(f"return {use}", "return (g,)", extra=extra)
    assert kind is not ArgKind.ARRAY, reasons


def test_a_traced_operand_of_pure_callback_runs_under_jit() -> None:
    def host(x: np.ndarray, factor: np.ndarray) -> np.ndarray:
        return np.asarray(x * factor, dtype=np.float32)

    def scaled(x: jax.Array, factor: jax.Array) -> jax.Array:
        return jax.pure_callback(host, jax.ShapeDtypeStruct(x.shape, jnp.float32), x, factor)

    assert jax.jit(scaled)(jnp.ones(2), jnp.float32(3.0)).tolist() == [3.0, 3.0]


_KEYED_SITE = HEADER + (
    "{helper}"
    "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef noisy(x, context):\n    return x + {use}\n"
    "def noisy_fwd(x, context):\n    return noisy(x, context), None\n"
    "def noisy_bwd(context, _, g):\n    return (g,)\nnoisy.defvjp(noisy_fwd, noisy_bwd)\n"
)
_NOISE = "def noise_fn(shape, key):\n    return jax.random.uniform(key, shape) - 0.5\n"


@pytest.mark.parametrize(
    "use",
    [
        pytest.param("noise_fn(x.shape, context.key)", id="by position"),
        pytest.param("noise_fn(key=context.key, shape=x.shape)", id="by keyword"),
    ],
)
def test_an_attribute_a_helper_uses_as_a_prng_key_is_array_data_with_no_safe_fix(use: str) -> None:
    # probe21 G8 (AQT's `Context.key`, s08b): as `jax.random.uniform(context.key, ...)` in place.
    info = _unscreened(_KEYED_SITE.format(helper=_NOISE, use=use))
    assert (info.kind, info.strong) == (ArgKind.ARRAY, False), info.evidence
    text = info.evidence[0].text
    assert text.startswith("has its attribute `.key` passed to `noise_fn`, which gives it to `jax.random.uniform`"), (
        text
    )


@pytest.mark.parametrize(
    "helper",
    [
        pytest.param("def noise_fn(shape, key):\n    return jnp.zeros(shape)\n", id="no key use"),
        pytest.param(
            "def noise_fn(shape, key):\n    return (lambda key: jax.random.uniform(key, shape))(KEY)\n",
            id="a lambda's own key",
        ),
        pytest.param("def noise_fn(key, shape):\n    return jax.random.uniform(key, shape)\n", id="another place"),
    ],
)
def test_an_attribute_no_helper_uses_as_a_key_is_no_evidence(helper: str) -> None:
    """(At another place, `shape`, the attribute is needed concrete: static, for that reason.)"""
    info = _unscreened(_KEYED_SITE.format(helper=helper, use="noise_fn(x.shape, context.key)"))
    assert info.kind is not ArgKind.ARRAY, info.evidence
    assert not any("PRNG key" in e.text or "gives it to" in e.text for e in info.evidence), info.evidence
    assert info.kind is ArgKind.UNKNOWN or all("its attribute `key`" in e.text for e in info.evidence)


_INTEGRATE = HEADER + (
    "@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef integrate(sdf, depths, weights):\n"
    "    return (depths * weights).sum()\n"
    "def integrate_fwd(sdf, depths, weights):\n    return integrate(sdf, depths, weights), (depths, weights)\n"
    "def integrate_bwd(sdf, res, g):\n    depths, weights = res\n    return g * weights, g * depths\n"
    "integrate.defvjp(integrate_fwd, integrate_bwd)\n"
)


@pytest.mark.parametrize(
    "caller",
    [
        pytest.param("def render(sdf, pts, depths):\n    return integrate(sdf, depths, sdf(pts))\n", id="called"),
        pytest.param(
            "def render(sdf, pts, depths):\n    weights = jax.vmap(lambda p: sdf(p))(pts)\n"
            "    return integrate(sdf, depths, weights)\n",
            id="called in a vmapped lambda",
        ),
    ],
)
def test_a_parameter_the_caller_calls_and_passes_on_is_static(caller: str) -> None:
    # probe21 G6 (SDF volume rendering q19): the rules never use `sdf`; the caller calls it.
    info = classified(_INTEGRATE + caller)
    assert info.kind is ArgKind.STATIC, info.evidence
    text = info.evidence[0].text
    assert text == "called as a function in the caller `render`, and passed on at a call site (`sdf`)", text


@pytest.mark.parametrize(
    "caller",
    [
        pytest.param(
            "def render(sdf, pts, depths):\n    return integrate(sdf, depths, jax.vmap(lambda sdf: sdf(pts))(depths))\n",
            id="a lambda's own",
        ),
        pytest.param(
            "def render(sdf, pts, depths):\n    sdf = make(sdf)\n    return integrate(sdf, depths, sdf(pts))\n",
            id="rebound",
        ),
    ],
)
def test_a_call_of_another_value_in_the_caller_proves_nothing(caller: str) -> None:
    info = classified(_INTEGRATE + caller)
    assert info.kind is ArgKind.UNKNOWN, info.evidence


_ENUM = "import enum\nclass Mode(enum.Enum):\n    FAST = 'fast'\n    EXACT = 'exact'\n"


@pytest.mark.parametrize("annotation", ["Mode", "Optional[Mode]", "Mode | None", "'Mode'"])
def test_a_parameter_annotated_with_an_enum_of_the_module_is_static(annotation: str) -> None:
    # probe21 G7 (q20): `mode: QuantizationMode`, only `mode.range` read: it was VJP002.
    extra = "from typing import Optional\n" + _ENUM
    kind, reasons, _ = classify("return x * a.scale", signature=f"a: {annotation}, x", extra=extra)
    assert kind is ArgKind.STATIC, reasons
    assert reasons[0].endswith("`Mode` is an enum of the module, whose members are no JAX values"), reasons


@pytest.mark.parametrize(
    ("extra", "annotation"),
    [
        pytest.param(_ENUM.replace("enum.Enum", "enum.IntEnum"), "Mode", id="IntEnum: ints"),
        pytest.param(_ENUM, "Mode | jax.Array", id="or an array"),
        pytest.param(_ENUM + "Mode = make()\n", "Mode", id="bound twice"),
    ],
)
def test_no_enum_annotation_alone_proves_nothing(extra: str, annotation: str) -> None:
    kind, reasons, _ = classify("return x * a.scale", signature=f"a: {annotation}, x", extra=extra)
    assert kind is not ArgKind.STATIC, reasons


def test_an_enum_member_cannot_be_a_traced_argument() -> None:
    import enum

    class Mode(enum.Enum):
        FAST = "fast"

    with pytest.raises(TypeError):
        jax.jit(lambda m: 1.0)(Mode.FAST)


_METHOD_SITE = HEADER + (
    "{decorators}class Layer{bases}:\n"
    "    def __init__(self, scale):\n        self.scale = scale\n"
    "    @partial(jax.custom_vjp, nondiff_argnums=(0,))\n    def apply(self, x):\n        return self.f(x) * x\n"
    "    def _fwd(self, x):\n        return self.apply(x), x\n"
    "    def _bwd(self, x, g):\n        return (g * self.f(x),)\n"
    "    apply.defvjp(_fwd, _bwd)\n"
)


@pytest.mark.parametrize("bases", ["", "()", "(object)"])
def test_self_of_a_method_site_of_a_plain_class_is_static(bases: str) -> None:
    # probe21 G5 (Firedrake operator q12): `self` of a class no pytree was a VJP002, and
    # `--unsafe-fixes` moved it ("not a valid JAX type" then).
    info = classified(_METHOD_SITE.format(decorators="", bases=bases))
    assert info.kind is ArgKind.STATIC, info.evidence
    assert info.evidence[0].text.startswith("the instance of `Layer`, a class the module neither registers"), (
        info.evidence
    )


@pytest.mark.parametrize(
    ("decorators", "bases", "extra"),
    [
        pytest.param("@jax.tree_util.register_pytree_node_class\n", "", "", id="registered by a decorator"),
        pytest.param("", "", "jax.tree_util.register_pytree_node(Layer, flatten, unflatten)\n", id="by a call"),
        pytest.param("", "(eqx.Module)", "", id="a base"),
        pytest.param("", "", "Layer = wrap(Layer)\n", id="bound twice"),
    ],
)
def test_self_of_a_class_that_may_be_a_pytree_is_not_static(decorators: str, bases: str, extra: str) -> None:
    info = classified(_METHOD_SITE.format(decorators=decorators, bases=bases) + extra)
    assert not any(e.text.startswith("the instance of") for e in info.evidence), info.evidence


def test_a_plain_object_is_no_jax_value() -> None:
    class Layer:
        scale = 2.0

    with pytest.raises(TypeError, match="as an abstract array"):
        jax.jit(lambda layer, x: x * layer.scale)(Layer(), jnp.ones(2))
