"""classify: static evidence wins; arrays need evidence; unknown otherwise; reasons are kept."""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import parse
from jax.extend.core import Primitive
from jax.interpreters import mlir

from vjp_migrate import screen
from vjp_migrate.classify import classify_site
from vjp_migrate.classify.context import Context
from vjp_migrate.codes import DEFAULT_SELECT
from vjp_migrate.model import ArgInfo, ArgKind, Settings
from vjp_migrate.sites import find_sites
from vjp_migrate.walk import index_of

HEADER = "import jax\nimport jax.numpy as jnp\nfrom functools import partial\nfrom typing import Callable\n"


def classified(code: str) -> ArgInfo:
    """The one argument's ArgInfo; and, every time, the screen's soundness on this module: an
    argument classify finds array data in is reported, so the screen must keep the module."""
    module, imports = parse(code)
    (site,) = find_sites(module, imports)
    (info,) = classify_site(site, module, Context.of(module, imports, index_of(module).line))
    if info.kind is ArgKind.ARRAY:
        assert screen.may_report(code, Settings(DEFAULT_SELECT)), f"the screen drops array data:\n{code}"
    return info


def site_module(primal_body: str, bwd_body: str = "return (g,)", signature: str = "a, x", extra: str = "") -> str:
    code = HEADER + extra
    code += f"@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef f({signature}):\n    {primal_body}\n"
    code += f"def f_fwd({signature}):\n    return f(a, x), None\n"
    code += f"def f_bwd(a, _, g):\n    {bwd_body}\n"
    return code + "f.defvjp(f_fwd, f_bwd)\n"


def classify(
    primal_body: str, bwd_body: str = "return (g,)", signature: str = "a, x", extra: str = ""
) -> tuple[ArgKind, tuple[str, ...], bool]:
    info = classified(site_module(primal_body, bwd_body, signature, extra))
    return info.kind, tuple(e.text for e in info.evidence), info.strong


def lines(*statements: str) -> str:
    """A multi-line primal or bwd body for `classify` (its first line is indented already)."""
    return "\n    ".join(statements)


@pytest.mark.parametrize(
    ("primal", "bwd", "reason"),
    [
        pytest.param("return a(x)", "return (g,)", "called as a function", id="called"),
        pytest.param("return x.reshape(a)", "return (g.reshape(a),)", "passed", id="reshape target"),
        pytest.param("return jnp.zeros(a) + x", "return (g,)", "static setting (argument 1)", id="jnp.zeros shape"),
        pytest.param("return jnp.sum(x, axis=a)", "return (g,)", "`axis=`", id="axis keyword"),
        pytest.param(
            "return reduce_all(x, axis=a)",
            "return (g,)",
            "passed as `axis=` to `reduce_all`",
            id="axis keyword of a function not analysed",
        ),
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


def test_an_element_wise_comparison_alone_is_weak_array_evidence() -> None:
    # `x > a` works as well for a Python number as for an array: array data, never a safe fix alone.
    kind, reasons, strong = classify("return x * (x > a)")
    assert (kind, strong) == (ArgKind.ARRAY, False), reasons
    assert "compared element-wise in the primal `f`" in reasons


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


def test_host_numpy_functions_need_concrete_values() -> None:
    kind, reasons, _ = classify("return x", "return (g * np.tanh(a),)", extra="import numpy as np\n")
    assert kind is ArgKind.STATIC, reasons
    assert any("host NumPy's `np.tanh`" in r for r in reasons), reasons
    # and that is why: once migrated, `a` is a Tracer, which host NumPy cannot take
    with pytest.raises(jax.errors.TracerArrayConversionError):
        jax.jit(lambda x, a: x * np.tanh(a))(1.0, 0.5)


def test_if_on_the_value_is_static_but_is_none_check_is_not() -> None:
    body = "if a:\n        return x\n    return -x"
    assert classify(body)[0] is ArgKind.STATIC
    kind, _, _ = classify("return x if a is None else x * a")
    assert kind is ArgKind.ARRAY


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param(lines("if a.shape[0] > 1:", "    return x * a", "return x"), id="if a.shape[0]"),
        pytest.param(lines("while a.ndim < 2:", "    a = a[None]", "return x * a"), id="while a.ndim"),
        pytest.param("return x * a if len(a) == 3 else x", id="ifexp len(a)"),
        pytest.param(
            lines("if jnp.ndim(a) == 1 and a.dtype == x.dtype:", "    return x * a", "return x"), id="jnp.ndim, dtype"
        ),
        pytest.param(lines("if a[0].shape == x.shape:", "    return x * a", "return x"), id="rooted shape"),
    ],
)
def test_a_test_on_its_metadata_is_not_control_flow_on_its_values(primal: str) -> None:
    kind, reasons, _ = classify(primal, "return (g * a,)")
    assert kind is ArgKind.ARRAY, reasons
    assert not any("control flow" in r for r in reasons), reasons


@pytest.mark.parametrize(
    ("primal", "extra"),
    [
        pytest.param(lines("if a.sum() > 1:", "    return x * a", "return x"), "", id="a reduction"),
        pytest.param(lines("if a.shape[0] > a[0]:", "    return x * a", "return x"), "", id="metadata and a value"),
        pytest.param(
            lines("if len(a) > 1:", "    return x * a", "return x"), "def len(v):\n    return v\n", id="len shadowed"
        ),
        pytest.param(lines("if len(a + 1) > 1:", "    return x * a", "return x"), "", id="len of an expression"),
        pytest.param(
            lines("if size(a) > 1:", "    return x * a", "return x"), "from mylib import size\n", id="other size"
        ),
    ],
)
def test_a_test_on_its_values_is_still_control_flow(primal: str, extra: str) -> None:
    kind, reasons, _ = classify(primal, "return (g * a,)", extra=extra)
    assert kind is ArgKind.STATIC, reasons
    assert any("control flow" in r for r in reasons), reasons


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param(lines("if isinstance(a, (list, tuple)):", "    a = a[0]", "return x * a"), id="isinstance"),
        pytest.param(lines("if hasattr(a, 'potentials'):", "    a = a.potentials", "return x * a"), id="hasattr"),
        pytest.param("return x * (a[0] if type(a) == list else a)", id="type =="),
        pytest.param(lines("assert not isinstance(a, str)", "return x * a"), id="assert isinstance"),
    ],
)
def test_a_type_test_is_not_control_flow_on_its_values(primal: str) -> None:
    # driftjax's simulate: its warm start `init` (a Solution or a list of potentials) was STATIC
    # from `if hasattr(init, "potentials")` / `elif isinstance(init, (list, tuple))` alone.
    info = _unscreened(site_module(primal, "return (g * a,)"))
    assert info.kind is ArgKind.ARRAY, info.evidence
    assert not any("control flow" in e.text for e in info.evidence), info.evidence


def test_a_type_test_alone_leaves_the_argument_unknown() -> None:
    primal = lines("if isinstance(a, (list, tuple)):", "    a = a[0]", "return solve(x, a)")
    assert _unscreened(site_module(primal)).kind is ArgKind.UNKNOWN


def test_the_screen_keeps_an_argument_tested_only_by_its_type() -> None:
    primal = lines("if isinstance(a, (list, tuple)):", "    a = a[0]", "return x * a")
    assert classified(site_module(primal, "return (g * a,)")).kind is ArgKind.ARRAY


def test_a_type_test_next_to_a_value_test_is_still_control_flow() -> None:
    kind, reasons, _ = classify(lines("if isinstance(a, float) and a > 0:", "    return x * a", "return x"))
    assert kind is ArgKind.STATIC and any("control flow" in r for r in reasons), reasons


@pytest.mark.parametrize(
    ("primal", "bwd"),
    [
        pytest.param(
            lines("if callable(a):", "    a = a(x)", "return jnp.where(a, x, 0.0)"),
            lines("if callable(a):", "    return (g,)", "return (jnp.where(a, g, 0.0),)"),
            id="mask or mask function",
        ),
        pytest.param("return x * (a(x) if callable(a) else a)", "return (g * a,)", id="conditional expression"),
        pytest.param(
            lines("if isinstance(a, float):", "    return x * a", "else:", "    return a(x)"),
            "return (g * a,)",
            id="called in the else branch",
        ),
    ],
)
def test_a_static_use_on_a_branch_the_arguments_type_picks_does_not_hide_array_data(primal: str, bwd: str) -> None:
    # `mask: Callable | Array`: called when it is a function, array data otherwise; an array
    # mask in nondiff_argnums fails under jit like any other, and no fix suits both kinds.
    info = classified(site_module(primal, bwd))
    assert (info.kind, info.strong, info.fixable) == (ArgKind.ARRAY, False, False), info.evidence
    assert any("called as a function" in e.text and "type" in e.text for e in info.evidence), info.evidence


def test_a_type_test_under_another_name_picks_a_branch_too() -> None:
    primal = lines("if is_function(a):", "    a = a(x)", "return jnp.where(a, x, 0.0)")
    extra = "from builtins import callable as is_function\n"
    info = classified(site_module(primal, "return (g,)", extra=extra))  # the screen keeps it, too
    assert (info.kind, info.fixable) == (ArgKind.ARRAY, False), info.evidence


def test_a_static_use_on_a_type_picked_branch_is_still_static_without_array_data() -> None:
    kind, reasons, _ = classify(lines("if callable(a):", "    a = a(x)", "return solve(x, a)"))
    assert kind is ArgKind.STATIC, reasons


def test_an_array_use_on_the_other_type_picked_branch_may_be_of_a_number() -> None:
    # `lr: float | Schedule`: arithmetic where `isinstance(lr, float)`, called otherwise; a Tracer
    # is neither (it would be called), so nothing here is array data: static, as before.
    primal = lines("if isinstance(a, float):", "    return x * a", "else:", "    return x * a(x)")
    kind, reasons, _ = classify(primal)
    assert kind is ArgKind.STATIC and any("type picks" in r for r in reasons), reasons


def test_a_static_use_outside_the_type_picked_branch_still_wins() -> None:
    primal = lines("if isinstance(a, str):", "    a = table[a]", "return jnp.where(a(x), x, 0.0)")
    kind, reasons, _ = classify(primal, "return (g * a,)")
    assert kind is ArgKind.STATIC, reasons


def test_a_callable_or_array_mask_in_nondiff_argnums_fails_under_jit_when_it_is_an_array() -> None:
    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def masked(x: jax.Array, mask: jax.Array) -> jax.Array:
        if callable(mask):
            mask = mask(x)
        return jnp.where(mask, x, 0.0)

    def fwd(x: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
        return masked(x, mask), mask(x) if callable(mask) else mask

    masked.defvjp(fwd, lambda _, chosen, g: (jnp.where(chosen, g, 0.0),))
    x = jnp.arange(3.0)
    assert jax.grad(lambda x: masked(x, lambda v: v > 0.5).sum())(x).tolist() == [0.0, 1.0, 1.0]
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.jit(jax.grad(lambda x, m: masked(x, m).sum()))(x, x > 0.5)


def test_a_type_test_works_on_a_tracer_and_a_warm_start_in_nondiff_argnums_fails_under_jit() -> None:
    def solve(x: jax.Array | float, init: list[jax.Array] | jax.Array) -> jax.Array:
        if isinstance(init, (list, tuple)) and not hasattr(init, "shape"):
            init = init[0]
        return x * init

    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def before(x: jax.Array, init: list[jax.Array]) -> jax.Array:
        return solve(x, init)

    before.defvjp(lambda x, i: (before(x, i), i), lambda i, res, g: (g * solve(1.0, res),))

    @jax.custom_vjp
    def after(x: jax.Array, init: list[jax.Array]) -> jax.Array:
        return solve(x, init)

    after.defvjp(lambda x, i: (after(x, i), i), lambda res, g: (g * solve(1.0, res), None))

    x, init = jnp.arange(3.0), [jnp.full(3, 2.0)]
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.jit(jax.grad(lambda x, i: before(x, i).sum()))(x, init)
    grad = jax.jit(jax.grad(lambda x, i: after(x, i).sum()))(x, init)
    np.testing.assert_allclose(grad, jax.grad(lambda x: before(x, init).sum())(x))


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param(lines('print("scale " + str(a))', "return x * 2.0"), id="printed"),
        pytest.param(lines("label = str(a)", "return x * a"), id="bound"),
    ],
)
def test_str_of_an_argument_is_no_static_value(primal: str) -> None:
    # `str` of a Tracer works under jit ("Traced<float32[]>..."), so it proves nothing; the
    # scale it names is array data in the bwd.
    info = _unscreened(site_module(primal, "return (g * a,)"))
    assert info.kind is ArgKind.ARRAY, info.evidence
    assert not any("`str`" in e.text for e in info.evidence), info.evidence


def test_str_alone_leaves_the_argument_unknown() -> None:
    assert _unscreened(site_module(lines("log(str(a))", "return x"))).kind is ArgKind.UNKNOWN


def test_the_other_conversions_still_prove_a_static_value() -> None:
    kind, reasons, _ = classify(lines("n = int(a)", "return x * n"), "return (g * a,)")
    assert kind is ArgKind.STATIC and any("`int`" in r for r in reasons), reasons


def test_str_of_a_tracer_works_under_jit_and_a_printed_scale_in_nondiff_argnums_fails() -> None:
    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def before(x: jax.Array, a: jax.Array) -> jax.Array:
        return x * a

    before.defvjp(lambda x, a: (before(x, a), len(str(a))), lambda a, _, g: (g * a,))
    assert jax.jit(lambda a: a * len(str(a)))(2.0) > 0  # `str(a)` of a Tracer: no error
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.jit(jax.grad(lambda a: before(1.0, a) * a))(2.0)


@pytest.mark.parametrize(
    "test",
    [
        pytest.param('if "b" in a:', id="in"),
        pytest.param('if "b" not in a:', id="not in"),
    ],
)
def test_a_string_key_looked_up_in_the_argument_is_no_static_value(test: str) -> None:
    # `"b" in params` reads a dict's keys only: it works on a dict of Tracers under jit.
    primal = lines('y = x * a["w"]', test, "    y = y + 1.0", "return y")
    info = _unscreened(site_module(primal, 'return (g * a["w"],)'))
    assert info.kind is ArgKind.ARRAY, info.evidence
    assert not any("control flow" in e.text or "string" in e.text for e in info.evidence), info.evidence


def test_the_argument_looked_up_in_a_tuple_of_strings_is_still_static() -> None:
    kind, reasons, _ = classify(lines('if a in ("relu", "gelu"):', "    return x", "return -x"), "return (g * a,)")
    assert kind is ArgKind.STATIC and any("control flow" in r for r in reasons), reasons


def test_a_string_key_in_a_dict_of_tracers_works_under_jit_and_the_dict_in_nondiff_argnums_fails() -> None:
    def affine(x: jax.Array, params: dict[str, jax.Array]) -> jax.Array:
        y = x * params["w"]
        if "b" in params:
            y = y + params["b"]
        return y

    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def before(x: jax.Array, params: dict[str, jax.Array]) -> jax.Array:
        return affine(x, params)

    before.defvjp(lambda x, p: (affine(x, p), None), lambda p, _, g: (g * p["w"],))
    assert jax.jit(lambda p: affine(2.0, p))({"w": 3.0, "b": 1.0}) == 7.0
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.jit(jax.grad(lambda w: before(2.0, {"w": w, "b": 1.0})))(3.0)


@pytest.mark.parametrize(
    "caller",
    [
        pytest.param("@jax.jit\ndef run(x, w):\n    return f(w * 2.0, x)\n", id="arithmetic"),
        pytest.param("@jax.jit\ndef run(x, w):\n    return f(-w, x)\n", id="negated"),
        pytest.param("@jax.jit\ndef run(x, w):\n    return f(w, x)\n", id="passed as it came"),
        pytest.param(
            "@jax.jit\ndef run(x, w):\n    return sum(map(lambda v, w=w: f(w, x) * v, (1.0, 2.0)))\n",
            id="captured by a lambda's default",
        ),
        pytest.param("@jax.jit\ndef run(x, w: bool = True):\n    return f(w, x)\n", id="bool parameter"),
        pytest.param(
            '@partial(jax.jit, static_argnames=("n",))\ndef run(x, w, n):\n    return f(w / n, x)\n',
            id="next to static",
        ),
    ],
)
def test_a_traced_parameter_of_a_jitted_caller_is_array_data(caller: str) -> None:
    # jit traces every parameter it does not mark static, a `bool` one too: a Tracer in
    # nondiff_argnums (read by classify alone; test_prefilter holds the screen to keeping these).
    info = _unscreened(_SCALE_SITE.replace("return x * a\n", "return x * 2.0\n", 1) + caller)
    texts = [e.text for e in info.evidence]
    assert info.kind is ArgKind.ARRAY, texts
    assert any("traced" in t and "`run`" in t for t in texts), texts


def test_a_traced_value_at_one_call_site_disagrees_with_a_static_one() -> None:
    static = '@partial(jax.jit, static_argnames=("s",))\ndef use_static(x, s):\n    return f(s, x)\n'
    traced = "@jax.jit\ndef use_traced(x, w):\n    return f(w * 2.0, x)\n"
    info = _unscreened(_SCALE_SITE.replace("return x * a\n", "return x * 2.0\n", 1) + static + traced)
    assert info.kind is ArgKind.ARRAY and not info.strong, info.evidence


@pytest.mark.parametrize(
    "caller",
    [
        pytest.param(
            '@partial(jax.jit, static_argnames=("w",))\ndef run(x, w):\n    return f(w * 2.0, x)\n', id="static"
        ),
        pytest.param("@jax.jit\ndef run(x, w):\n    return f(w.shape[0] * 2, x)\n", id="shape"),
        pytest.param("def run(x, w):\n    return f(w * 2.0, x)\n", id="not jitted"),
        pytest.param("@jax.jit\ndef run(x, w):\n    w = 2\n    return f(w * 2.0, x)\n", id="rebound"),
        pytest.param(
            "@jax.jit\ndef run(x, w):\n    return sum(map(lambda w: f(w, x), (1.0, 2.0))) * w\n",
            id="a lambda's parameter",
        ),
        pytest.param(
            "@jax.jit\ndef run(x, w):\n    return sum(map(lambda w: f(w * 2.0, x), (1.0, 2.0))) * w\n",
            id="arithmetic on a lambda's parameter",
        ),
        pytest.param(
            "@jax.jit\ndef run(x, w):\n    s = w * 2.0\n    return sum(map(lambda s: f(s, x), (1.0, 2.0))) * s\n",
            id="a lambda's parameter named like a traced local",
        ),
    ],
)
def test_a_value_no_jit_traces_is_no_call_site_evidence(caller: str) -> None:
    info = _unscreened(_SCALE_SITE.replace("return x * a\n", "return x * 2.0\n", 1) + caller)
    assert not any("traced" in e.text for e in info.evidence), info.evidence


_STATIC_CONFIG = (
    "import dataclasses\n"
    "@jax.tree_util.register_static\n"
    "@dataclasses.dataclass(frozen=True)\n"
    "class Config:\n"
    "    chunks: int = 2\n"
)


@pytest.mark.parametrize(
    ("annotated", "caller"),
    [
        pytest.param("a: Config, x", "@jax.jit\ndef run(x, cfg):\n    return f(cfg, x)\n", id="in the rules"),
        pytest.param("a, x", "@jax.jit\ndef run(x, cfg: Config):\n    return f(cfg, x)\n", id="in the jitted caller"),
    ],
)
def test_a_class_registered_static_passes_jit_untraced(annotated: str, caller: str) -> None:
    # register_static makes a pytree with no leaves: jit hands the object itself on, no Tracer.
    code = site_module(
        "return helper(x, a)", "return (g,)", annotated, extra=_STATIC_CONFIG + "from lib import helper\n"
    )
    info = _unscreened(code + caller)
    assert info.kind is not ArgKind.ARRAY, info.evidence
    assert not any("a traced value" in e.text for e in info.evidence), info.evidence


def test_a_class_registered_static_is_a_static_annotation() -> None:
    kind, reasons, _ = classify(
        "return helper(x, a)", signature="a: Config, x", extra=_STATIC_CONFIG + "from lib import helper\n"
    )
    assert kind is ArgKind.STATIC and any("register_static" in r for r in reasons), reasons


_DC = "@dataclasses.dataclass(frozen=True)\n"
_TREE_CLASS = (
    "@jax.tree_util.register_pytree_node_class\n"
    "class Config:\n"
    "    def __init__(self, chunks=2):\n"
    "        self.chunks = chunks\n"
    "    def tree_flatten(self):\n"
    "        return {children}, self.chunks\n"
    "    @classmethod\n"
    "    def tree_unflatten(cls, aux, children):\n"
    "        return cls(aux)\n"
)
_PLAIN_CLASS = "class Config:\n    def __init__(self, chunks=2):\n        self.chunks = chunks\n"
_KEYS_CLASS = (
    "@{decorator}\n"
    "class Config{base}:\n"
    "    def __init__(self, chunks=2):\n"
    "        self.chunks = chunks\n"
    "    def tree_flatten_with_keys(self):\n"
    "        return {children}, self.chunks\n"
    "    @classmethod\n"
    "    def tree_unflatten(cls, aux, children):\n"
    "        return cls(aux)\n"
)
# Configs that are pytrees with no leaves, each spelt otherwise than with `register_static`.
_LEAFLESS_CONFIGS = [
    pytest.param(
        "from flax import struct\n@struct.dataclass\nclass Config:\n"
        "    chunks: int = struct.field(pytree_node=False, default=2)\n",
        "flax.struct.dataclass",
        id="flax struct.dataclass",
    ),
    pytest.param(
        "import flax\n@flax.struct.dataclass\nclass Config:\n"
        "    chunks: int = flax.struct.field(pytree_node=False, default=2)\n"
        "    name: str = flax.struct.field(default='c', pytree_node=False)\n",
        "flax.struct.dataclass",
        id="flax.struct.dataclass",
    ),
    pytest.param(
        "from flax.struct import PyTreeNode, field\nclass Config(PyTreeNode):\n"
        "    chunks: int = field(pytree_node=False, default=2)\n",
        "flax.struct.PyTreeNode",
        id="flax PyTreeNode",
    ),
    pytest.param(
        "from flax.struct import PyTreeNode, field\nclass Config(PyTreeNode, kw_only=True, frozen=False):\n"
        "    chunks: int = field(pytree_node=False, default=2)\n",
        "flax.struct.PyTreeNode",
        id="flax PyTreeNode with dataclass keywords",
    ),
    pytest.param(
        "import dataclasses\n@partial(jax.tree_util.register_dataclass, data_fields=[], meta_fields=['chunks'])\n"
        + _DC
        + "class Config:\n    chunks: int = 2\n",
        "register_dataclass",
        id="register_dataclass decorator",
    ),
    pytest.param(
        "import dataclasses\n" + _DC + "class Config:\n    chunks: int = 2\n"
        "jax.tree_util.register_dataclass(Config, data_fields=[], meta_fields=['chunks'])\n",
        "register_dataclass",
        id="register_dataclass call",
    ),
    pytest.param(
        "import dataclasses\nfrom jax.tree_util import register_dataclass\n"
        + _DC
        + "class Config:\n    chunks: int = 2\nregister_dataclass(Config, (), ('chunks',))\n",
        "register_dataclass",
        id="register_dataclass positional",
    ),
    pytest.param(
        "import dataclasses\n" + _DC + "class Config:\n    chunks: int = 2\n"
        "jax.tree_util.register_dataclass(nodetype=Config, data_fields=[], meta_fields=['chunks'])\n",
        "register_dataclass",
        id="register_dataclass class by keyword",
    ),
    pytest.param(
        "class Config:\n    chunks = 2\njax.tree_util.register_static(cls=Config)\n",
        "register_static",
        id="register_static class by keyword",
    ),
    pytest.param(
        "import dataclasses\n@jax.tree_util.register_dataclass\n"
        + _DC
        + "class Config:\n    chunks: int = dataclasses.field(default=2, metadata=dict(static=True))\n"
        + "    name: str = dataclasses.field(default='c', metadata={'static': True})\n",
        "register_dataclass",
        id="register_dataclass with static fields",
    ),
    pytest.param(_TREE_CLASS.format(children="()"), "register_pytree_node_class", id="tree_flatten returns ()"),
    pytest.param(
        _PLAIN_CLASS
        + "jax.tree_util.register_pytree_node(Config, lambda c: ((), c.chunks), lambda aux, _: Config(aux))\n",
        "`jax.tree_util.register_pytree_node`",
        id="register_pytree_node with a lambda",
    ),
    pytest.param(
        _PLAIN_CLASS + "def flatten(c):\n    if c.chunks:\n        return (), c.chunks\n    return [], 0\n"
        "def unflatten(aux, children):\n    return Config(aux)\n"
        "from jax.tree_util import register_pytree_node\nregister_pytree_node(Config, flatten, unflatten)\n",
        "`jax.tree_util.register_pytree_node`",
        id="register_pytree_node with a def",
    ),
    pytest.param(
        _PLAIN_CLASS + "def flatten(c):\n    return (), c.chunks\n"
        "jax.tree_util.register_pytree_node(nodetype=Config, flatten_func=flatten, unflatten_func=Config)\n",
        "`jax.tree_util.register_pytree_node`",
        id="register_pytree_node by keywords",
    ),
    pytest.param(
        _PLAIN_CLASS
        + "jax.tree_util.register_pytree_with_keys(Config, lambda c: ((), c.chunks), lambda a, _: Config(a))\n",
        "`jax.tree_util.register_pytree_with_keys`",
        id="register_pytree_with_keys",
    ),
    pytest.param(
        _PLAIN_CLASS + "jax.tree_util.register_pytree_with_keys(\n"
        "    Config, lambda c: ((), c.chunks), lambda a, _: Config(a), lambda c: ((), c.chunks)\n)\n",
        "`jax.tree_util.register_pytree_with_keys`",
        id="register_pytree_with_keys with a flatten_func",
    ),
    pytest.param(
        _KEYS_CLASS.format(decorator="jax.tree_util.register_pytree_with_keys_class", base="", children="()"),
        "register_pytree_with_keys_class",
        id="register_pytree_with_keys_class",
    ),
    pytest.param(
        _KEYS_CLASS.format(decorator="jax.tree_util.register_pytree_with_keys_class", base="", children="()")
        + "    def tree_flatten(self):\n        return (), self.chunks\n",
        "register_pytree_with_keys_class",
        id="register_pytree_with_keys_class with a tree_flatten",
    ),
]
# The same spellings with a leaf: jit traces it.
_LEAFY_CONFIGS = [
    pytest.param(
        "from flax import struct\n@struct.dataclass\nclass Config:\n"
        "    chunks: int = struct.field(pytree_node=False, default=2)\n    scale: float = 1.0\n",
        id="flax field without pytree_node=False",
    ),
    pytest.param(
        "from flax import struct\nclass Config(struct.PyTreeNode):\n"
        "    chunks: int = struct.field(pytree_node=True, default=2)\n",
        id="flax PyTreeNode with pytree_node=True",
    ),
    pytest.param(
        "from flax import struct\nclass Config(struct.PyTreeNode, metaclass=Meta):\n"
        "    chunks: int = struct.field(pytree_node=False, default=2)\n",
        id="flax PyTreeNode with a metaclass",
    ),
    pytest.param(
        "from flax import struct\nclass Config(struct.PyTreeNode, **options):\n"
        "    chunks: int = struct.field(pytree_node=False, default=2)\n",
        id="flax PyTreeNode with unread class keywords",
    ),
    pytest.param(
        "import dataclasses\n" + _DC + "class Config:\n    chunks: int = 2\n"
        "jax.tree_util.register_dataclass(nodetype=Config, data_fields=['chunks'], meta_fields=[])\n",
        id="register_dataclass class by keyword, a data field",
    ),
    pytest.param(
        "import dataclasses\n" + _DC + "class Config:\n    chunks: int = 2\n"
        "jax.tree_util.register_dataclass([], ['chunks'], nodetype=Config)\n",
        id="register_dataclass class by keyword after positionals",
    ),
    pytest.param(
        "import dataclasses\n@partial(jax.tree_util.register_dataclass, data_fields=['chunks'], meta_fields=[])\n"
        + _DC
        + "class Config:\n    chunks: int = 2\n",
        id="register_dataclass with a data field",
    ),
    pytest.param(
        "import dataclasses\n@jax.tree_util.register_dataclass\n" + _DC + "class Config:\n    chunks: int = 2\n",
        id="register_dataclass without field lists",
    ),
    pytest.param(
        "import dataclasses\n@jax.tree_util.register_dataclass\n"
        + _DC
        + "class Config:\n    chunks: int = dataclasses.field(default=2, metadata=dict(static=False))\n",
        id="register_dataclass with a field static=False",
    ),
    pytest.param(_TREE_CLASS.format(children="(self.chunks,)"), id="tree_flatten returns a child"),
    pytest.param(
        "import dataclasses\n@partial(jax.tree_util.register_dataclass, [], ['chunks'])\n"
        + _DC
        + "class Config:\n    chunks: int = 2\n",
        id="partial binding the class's own place",
    ),
    pytest.param(
        _PLAIN_CLASS
        + "jax.tree_util.register_pytree_node(Config, lambda c: ((c.chunks,), None), lambda _, c: Config(*c))\n",
        id="register_pytree_node with a lambda returning a child",
    ),
    pytest.param(
        _PLAIN_CLASS + "def flatten(c):\n    if c.chunks:\n        return (), c.chunks\n    return [c.chunks], 0\n"
        "jax.tree_util.register_pytree_node(Config, flatten, lambda aux, _: Config(aux))\n",
        id="register_pytree_node with a def returning a child on one path",
    ),
    pytest.param(
        _PLAIN_CLASS + "from lib import cached\n@cached\ndef flatten(c):\n    return (), c.chunks\n"
        "jax.tree_util.register_pytree_node(Config, flatten, lambda aux, _: Config(aux))\n",
        id="register_pytree_node with a decorated def",
    ),
    pytest.param(
        _PLAIN_CLASS + "def flatten(c):\n    return (), c.chunks\nfrom lib import flatten\n"
        "jax.tree_util.register_pytree_node(Config, flatten, lambda aux, _: Config(aux))\n",
        id="register_pytree_node with a def name bound again",
    ),
    pytest.param(
        _PLAIN_CLASS + "from lib import flatten\n"
        "jax.tree_util.register_pytree_node(Config, flatten, lambda aux, _: Config(aux))\n",
        id="register_pytree_node with an imported flatten",
    ),
    pytest.param(
        _PLAIN_CLASS + "jax.tree_util.register_pytree_with_keys(\n"
        "    Config, lambda c: ((), c.chunks), lambda a, c: Config(a), flatten_func=lambda c: ((c.chunks,), None)\n)\n",
        id="register_pytree_with_keys with a flatten_func returning a child",
    ),
    pytest.param(
        _KEYS_CLASS.format(decorator="jax.tree_util.register_pytree_with_keys_class", base="", children="()")
        + "    def tree_flatten(self):\n        return (self.chunks,), None\n",
        id="register_pytree_with_keys_class with a tree_flatten returning a child",
    ),
    pytest.param(
        "from lib import Base\n"
        + _KEYS_CLASS.format(decorator="jax.tree_util.register_pytree_with_keys_class", base="(Base)", children="()"),
        id="register_pytree_with_keys_class with a base that may flatten",
    ),
    pytest.param(
        _KEYS_CLASS.format(decorator="jax.tree_util.register_pytree_with_keys_class", base="", children="()")
        + "    tree_flatten = staticmethod(lambda c: ((c.chunks,), None))\n",
        id="register_pytree_with_keys_class with a tree_flatten assigned",
    ),
]


@pytest.mark.parametrize(("config", "how"), _LEAFLESS_CONFIGS)
@pytest.mark.parametrize(
    ("annotated", "caller"),
    [
        pytest.param("a: Config, x", "@jax.jit\ndef run(x, cfg):\n    return f(cfg, x)\n", id="in the rules"),
        pytest.param("a, x", "@jax.jit\ndef run(x, cfg: Config):\n    return f(cfg, x)\n", id="in the jitted caller"),
    ],
)
def test_a_class_registered_with_no_leaves_passes_jit_untraced(
    config: str, how: str, annotated: str, caller: str
) -> None:
    code = site_module("return helper(x, a)", "return (g,)", annotated, extra=config + "from lib import helper\n")
    info = _unscreened(code + caller)
    assert info.kind is not ArgKind.ARRAY, info.evidence
    assert not any("a traced value" in e.text for e in info.evidence), info.evidence
    if annotated.startswith("a: Config"):
        assert info.kind is ArgKind.STATIC and any(how in e.text for e in info.evidence), info.evidence


@pytest.mark.parametrize("config", _LEAFY_CONFIGS)
def test_a_class_registered_with_a_leaf_is_traced_by_jit(config: str) -> None:
    code = site_module("return helper(x, a)", "return (g,)", "a: Config, x", extra=config + "from lib import helper\n")
    info = _unscreened(code + "@jax.jit\ndef run(x, cfg: Config):\n    return f(cfg, x)\n")
    assert info.kind is ArgKind.ARRAY and any("a traced value" in e.text for e in info.evidence), info.evidence


_OPTIONAL_CONFIG = "import dataclasses\nimport typing\nfrom typing import Optional, Union\n"


@pytest.mark.parametrize(
    "annotation",
    [
        "Optional[Config]",
        "typing.Optional[Config]",
        "Config | None",
        "None | Config",
        "Union[Config, None]",
        '"Config"',
        'Optional["Config"]',
        '"Optional[Config]"',
        "'Config | None'",
    ],
)
@pytest.mark.parametrize(
    ("config", "how"),
    [
        pytest.param(
            "@partial(jax.tree_util.register_dataclass, data_fields=[], meta_fields=['chunks'])\n"
            + _DC
            + "class Config:\n    chunks: int = 2\n",
            "register_dataclass",
            id="register_dataclass",
        ),
        pytest.param(_TREE_CLASS.format(children="()"), "register_pytree_node_class", id="tree_flatten returns ()"),
    ],
)
@pytest.mark.parametrize("where", ["in the rules", "in the jitted caller"])
def test_a_leafless_config_or_none_passes_jit_untraced(annotation: str, config: str, how: str, where: str) -> None:
    # None is a pytree with no leaves too: either value reaches the rules untraced.
    annotated, caller = ("a: ANN, x", "cfg") if where == "in the rules" else ("a, x", "cfg: ANN")
    code = site_module(
        "return helper(x, a)",
        "return (g,)",
        annotated.replace("ANN", annotation),
        extra=_OPTIONAL_CONFIG + config + "from lib import helper\n",
    )
    info = _unscreened(code + f"@jax.jit\ndef run(x, {caller.replace('ANN', annotation)}):\n    return f(cfg, x)\n")
    assert info.kind is not ArgKind.ARRAY, info.evidence
    assert not any("a traced value" in e.text for e in info.evidence), info.evidence
    if where == "in the rules":
        assert info.kind is ArgKind.STATIC and any(how in e.text for e in info.evidence), info.evidence


@pytest.mark.parametrize(
    "annotation",
    [
        "Optional[Leafy]",
        "Config | jax.Array",
        "Union[Config, int]",
        "Optional[Config, int]",
        "list[Config]",
        'Optional["Leafy"]',
        '"Config | jax.Array"',
        '"Config["',
        'b"Config"',
    ],
)
def test_a_union_with_a_type_that_has_leaves_is_traced_by_jit(annotation: str) -> None:
    config = (
        "@partial(jax.tree_util.register_dataclass, data_fields=[], meta_fields=['chunks'])\n"
        + _DC
        + "class Config:\n    chunks: int = 2\n"
        + "@partial(jax.tree_util.register_dataclass, data_fields=['chunks'], meta_fields=[])\n"
        + _DC
        + "class Leafy:\n    chunks: int = 2\n"
    )
    code = site_module(
        "return helper(x, a)", "return (g,)", extra=_OPTIONAL_CONFIG + config + "from lib import helper\n"
    )
    info = _unscreened(code + f"@jax.jit\ndef run(x, cfg: {annotation}):\n    return f(cfg, x)\n")
    assert info.kind is ArgKind.ARRAY and any("a traced value" in e.text for e in info.evidence), info.evidence


def test_a_config_registered_by_keyword_or_with_dataclass_options_has_no_leaves() -> None:
    # `register_dataclass(nodetype=...)`; flax's PyTreeNode hands class keywords to
    # `dataclasses.dataclass(**kwargs)` and splits the fields it makes: kw_only adds none.
    @dataclasses.dataclass(frozen=True)
    class Config:
        chunks: int = 2

    jax.tree_util.register_dataclass(nodetype=Config, data_fields=[], meta_fields=["chunks"])

    class Options:
        chunks: int = dataclasses.field(default=2, metadata={"pytree_node": False})

    made = dataclasses.dataclass(kw_only=True, frozen=True)(Options)
    fields = dataclasses.fields(made)
    data = [field.name for field in fields if field.metadata.get("pytree_node", True)]
    meta = [field.name for field in fields if not field.metadata.get("pytree_node", True)]
    jax.tree_util.register_dataclass(made, data, meta)

    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(cfg: Config, x: jax.Array) -> jax.Array:
        return x * cfg.chunks

    f.defvjp(lambda cfg, x: (f(cfg, x), None), lambda cfg, _, g: (g * cfg.chunks,))
    for cfg in (Config(), made()):
        assert jax.tree_util.tree_leaves(cfg) == []
        assert jax.grad(jax.jit(lambda x, cfg: f(cfg, x)))(1.0, cfg) == 2.0


def test_an_optional_leafless_config_passed_through_jit_is_no_tracer_in_nondiff_argnums() -> None:
    @functools.partial(jax.tree_util.register_dataclass, data_fields=[], meta_fields=["chunks"])
    @dataclasses.dataclass(frozen=True)
    class Config:
        chunks: int = 2

    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(cfg: Config | None, x: jax.Array) -> jax.Array:
        return jnp.sum(x.reshape(1 if cfg is None else cfg.chunks, -1))

    f.defvjp(lambda cfg, x: (f(cfg, x), None), lambda cfg, _, g: (jnp.full((4,), g),))
    run = jax.jit(lambda x, cfg: f(cfg, x))
    for cfg in (Config(), None):
        assert (jax.grad(run)(jnp.arange(4.0), cfg) == 1.0).all()


def test_configs_registered_with_no_leaves_passed_through_jit_are_no_tracers_in_nondiff_argnums() -> None:
    @functools.partial(jax.tree_util.register_dataclass, data_fields=[], meta_fields=["chunks"])
    @dataclasses.dataclass(frozen=True)
    class Meta:
        chunks: int = 2

    @jax.tree_util.register_dataclass
    @dataclasses.dataclass(frozen=True)
    class Marked:
        chunks: int = dataclasses.field(default=2, metadata={"static": True})

    @jax.tree_util.register_pytree_node_class
    class Node:
        def __init__(self, chunks: int = 2) -> None:
            self.chunks = chunks

        def tree_flatten(self) -> tuple[tuple[()], int]:
            return (), self.chunks

        @classmethod
        def tree_unflatten(cls, aux: int, children: tuple[()]) -> Node:
            return cls(aux)

    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(cfg: Meta | Marked | Node, x: jax.Array) -> jax.Array:
        return jnp.sum(x.reshape(cfg.chunks, -1)) * cfg.chunks

    f.defvjp(lambda cfg, x: (f(cfg, x), None), lambda cfg, _, g: (jnp.full((4,), g * cfg.chunks),))
    run = jax.jit(lambda x, cfg: f(cfg, x))
    for cfg in (Meta(), Marked(), Node()):
        assert (jax.grad(run)(jnp.arange(4.0), cfg) == 2.0).all()


def test_configs_registered_with_flatten_functions_returning_no_children_are_no_tracers_under_jit() -> None:
    class Node:
        def __init__(self, chunks: int = 2) -> None:
            self.chunks = chunks

    class Keyed(Node):
        pass

    def flatten(node: Node) -> tuple[tuple[()], int]:
        return (), node.chunks

    jax.tree_util.register_pytree_node(Node, flatten, lambda aux, _: Node(aux))
    jax.tree_util.register_pytree_with_keys(Keyed, lambda k: ((), k.chunks), lambda aux, _: Keyed(aux))

    @jax.tree_util.register_pytree_with_keys_class
    class KeyedClass(Node):
        def tree_flatten_with_keys(self) -> tuple[tuple[()], int]:
            return (), self.chunks

        @classmethod
        def tree_unflatten(cls, aux: int, children: tuple[()]) -> KeyedClass:
            return cls(aux)

    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(cfg: Node, x: jax.Array) -> jax.Array:
        return jnp.sum(x.reshape(cfg.chunks, -1)) * cfg.chunks

    f.defvjp(lambda cfg, x: (f(cfg, x), None), lambda cfg, _, g: (jnp.full((4,), g * cfg.chunks),))
    run = jax.jit(lambda x, cfg: f(cfg, x))
    for cfg in (Node(), Keyed(), KeyedClass()):
        assert jax.tree_util.tree_leaves(cfg) == []
        assert (jax.grad(run)(jnp.arange(4.0), cfg) == 2.0).all()


def test_a_leafless_config_a_jitted_caller_annotates_outweighs_array_attributes() -> None:
    # `cfg.size` reads like an array's `.size`, but the only caller's `cfg: Config` is a pytree
    # with no leaves: jit hands the object on, and the rules read its Python `size`.
    config = _PLAIN_CLASS.replace("chunks", "size") + (
        "jax.tree_util.register_pytree_node(Config, lambda c: ((), c.size), lambda aux, _: Config(aux))\n"
    )
    code = site_module("return x * a.size", "return (g * a.size,)", extra=config)
    info = _unscreened(code + "@jax.jit\ndef run(cfg: Config, x):\n    return f(cfg, x)\n")
    assert info.kind is ArgKind.STATIC, info.evidence
    assert any("annotated `Config` in the caller `run`" in e.text for e in info.evidence), info.evidence


def test_a_config_registered_static_passed_through_jit_is_no_tracer_in_nondiff_argnums() -> None:
    @jax.tree_util.register_static
    @dataclasses.dataclass(frozen=True)
    class Config:
        chunks: int = 2

    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(cfg: Config, x: jax.Array) -> jax.Array:
        return jnp.sum(x.reshape(cfg.chunks, -1))

    f.defvjp(lambda cfg, x: (f(cfg, x), None), lambda cfg, _, g: (jnp.full((4,), g),))
    run = jax.jit(lambda x, cfg: f(cfg, x))
    assert (jax.grad(run)(jnp.arange(4.0), Config()) == 1.0).all()


def test_a_helpers_result_and_a_local_tuples_items_are_tracers_in_nondiff_argnums_under_jit() -> None:
    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(a: jax.Array, x: jax.Array) -> jax.Array:
        return x * 2.0

    f.defvjp(lambda a, x: (f(a, x), None), lambda a, _, g: (g * 2.0,))

    def scaled(w: jax.Array, flip: bool) -> jax.Array:
        if flip:
            return -w
        return w * 2.0

    def through_pair(x: jax.Array, w1: jax.Array, w2: jax.Array) -> jax.Array:
        pair = (w1, w2)
        for w in pair:
            x = f(w, x)
        return x

    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.grad(jax.jit(lambda x, w: f(scaled(w, True), x)))(1.0, 3.0)
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.grad(jax.jit(through_pair))(1.0, 2.0, 3.0)


def test_a_lambdas_parameter_named_like_a_jitted_parameter_is_a_python_value_under_jit() -> None:
    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(a: float, x: jax.Array) -> jax.Array:
        return x * a

    f.defvjp(lambda a, x: (f(a, x), None), lambda a, _, g: (g * a,))

    @jax.jit
    def run(x: jax.Array, w: jax.Array) -> jax.Array:
        return sum(map(lambda w: f(w, x), (1.0, 2.0))) * w

    assert jax.grad(run)(1.0, 3.0) == 9.0


def test_a_value_computed_from_a_jitted_callers_parameter_is_a_tracer_in_nondiff_argnums() -> None:
    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(a: jax.Array, x: jax.Array) -> jax.Array:
        return x * 2.0

    f.defvjp(lambda a, x: (f(a, x), None), lambda a, _, g: (g * a,))
    run = jax.jit(lambda x, w: f(w * 2.0, x))
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.grad(run)(1.0, 3.0)


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
        pytest.param("a=(1, 16), x=None", ArgKind.STATIC, id="a tuple of ints default"),
        pytest.param("a=[2, 3], x=None", ArgKind.STATIC, id="a list of ints default"),
        pytest.param("a=(), x=None", ArgKind.UNKNOWN, id="an empty tuple default"),
        pytest.param("a=(0.5, 2.0), x=None", ArgKind.UNKNOWN, id="a tuple of floats default"),
        pytest.param("a=(-1, 16), x=None", ArgKind.UNKNOWN, id="a tuple with a negative int default"),
        pytest.param("a: float, x", ArgKind.UNKNOWN, id="float, no use"),
        pytest.param("a: Sequence[jax.Array], x", ArgKind.ARRAY, id="a sequence of arrays"),
        pytest.param("a: tuple[jax.Array, int], x", ArgKind.ARRAY, id="a tuple holding an array"),
        pytest.param("a: Sequence[int], x", ArgKind.STATIC, id="a sequence of ints"),
        pytest.param("a: Callable[[jax.Array], jax.Array], x", ArgKind.STATIC, id="a callable on arrays"),
    ],
)
def test_annotations_and_defaults(signature: str, expected: ArgKind) -> None:
    assert classify("return x", signature=signature)[0] is expected


@pytest.mark.parametrize(
    "alias",
    [
        pytest.param("from jax import Array as JaxArray\n", id="jax.Array"),
        pytest.param("from jax.typing import ArrayLike as JaxArray\n", id="jax.typing.ArrayLike"),
    ],
)
def test_an_array_annotation_imported_under_another_name_is_array_evidence(alias: str) -> None:
    # The last name (`JaxArray`) is no array type's: only the qualified name says it is one.
    # Read by classify alone; test_prefilter holds the screen to keeping this module.
    info = _unscreened(site_module("return x", signature="a: JaxArray, x", extra=alias))
    assert info.kind is ArgKind.ARRAY, info.evidence
    assert "annotated `JaxArray` in the primal `f`" in [e.text for e in info.evidence]


@pytest.mark.parametrize(
    ("signature", "expected"),
    [
        pytest.param('a: "jax.Array", x', ArgKind.ARRAY, id="jax.Array"),
        pytest.param('a: "jnp.ndarray", x', ArgKind.ARRAY, id="jnp.ndarray"),
        pytest.param('a: Optional["Array"], x', ArgKind.ARRAY, id="Optional of a string"),
        pytest.param("a: 'jax.Array | None', x", ArgKind.ARRAY, id="a union in a string"),
        pytest.param('a: "Sequence[jax.Array]", x', ArgKind.ARRAY, id="a sequence of arrays"),
        pytest.param('a: "Callable[[jax.Array], jax.Array]", x', ArgKind.STATIC, id="a callable on arrays"),
        pytest.param('a: "str", x', ArgKind.STATIC, id="str"),
        pytest.param('a: "float", x', ArgKind.UNKNOWN, id="float"),
        pytest.param('a: "jax.Array[", x', ArgKind.UNKNOWN, id="no expression"),
        pytest.param('a: b"jax.Array", x', ArgKind.UNKNOWN, id="bytes"),
    ],
)
def test_a_string_annotation_is_read_as_the_annotation_it_holds(signature: str, expected: ArgKind) -> None:
    # A forward reference (`if TYPE_CHECKING: from jax import Array`) means what it says unquoted.
    # Read by classify alone; test_prefilter holds the screen to keeping these modules.
    code = site_module("return x", signature=signature, extra="from typing import Optional, Sequence\n")
    info = _unscreened(code)
    assert info.kind is expected, info.evidence
    if expected is ArgKind.ARRAY:
        assert info.strong and f"annotated `{signature.split(': ')[1].removesuffix(', x')}` in the primal `f`" in [
            e.text for e in info.evidence
        ], info.evidence


def test_a_sequence_of_arrays_in_nondiff_argnums_breaks_under_jit() -> None:
    # Why `Sequence[jax.Array]` is array data, not a static setting like `Sequence[int]`.
    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def f(x: jax.Array, ws: list[jax.Array]) -> jax.Array:
        return x * ws[0]

    f.defvjp(lambda x, ws: (x * ws[0], None), lambda ws, _, g: (g * ws[0],))
    assert float(f(2.0, [jnp.ones(())])) == 2.0
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.jit(f)(2.0, [jnp.ones(())])


def test_a_shape_tuple_default_works_in_nondiff_argnums_and_fails_as_a_traced_argument() -> None:
    # Why `grid=(1, 16)` is static like a tuple of ints passed at a call site: the guide's shape tuple.
    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def total(x: jax.Array, grid: tuple[int, int] = (2, 3)) -> jax.Array:
        return x.reshape(grid).sum()

    total.defvjp(lambda x, grid: (total(x, grid), None), lambda grid, _, g: (jnp.full((6,), g),))
    assert float(jax.jit(jax.grad(total))(jnp.ones(6)).sum()) == 6.0

    @jax.custom_vjp
    def moved(x: jax.Array, grid: tuple[int, int] = (2, 3)) -> jax.Array:
        return x.reshape(grid).sum()

    moved.defvjp(lambda x, grid: (moved(x, grid), None), lambda _, g: (jnp.full((6,), g), None))
    with pytest.raises(TypeError):
        jax.jit(moved)(jnp.ones(6), (2, 3))


def test_a_tuple_of_ints_default_of_a_helper_is_static_like_one_passed_at_a_call_site() -> None:
    helper = "def tile(v, grid=(1, 16)):\n    return Blocks(v, grid)\n"
    kind, reasons, _ = classify("return tile(x, a)", extra="from elsewhere import Blocks\n" + helper)
    assert kind is ArgKind.STATIC and any("defaults to `(1, 16)` in helper `tile`" in r for r in reasons), reasons
    code = HEADER + "@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef f(a, x):\n    return x\n"
    code += "def f_fwd(a, x):\n    return x, None\ndef f_bwd(a, _, g):\n    return (g,)\nf.defvjp(f_fwd, f_bwd)\n"
    code += "def use(x):\n    return f((4, 4), x)\n"
    assert any("a shape is passed" in e.text for e in classified(code).evidence)


def test_a_reason_quotes_a_long_or_multiline_value_on_one_short_line() -> None:
    # probe22 r11: a C++ template passed at a call site was quoted whole, over many lines.
    template = '"""template <typename T>\n__global__ void kernel(T* out, const T* in) {\n  out[0] = in[0];\n}\n"""'
    code = HEADER + "@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef f(src, x):\n    return x\n"
    code += "def f_fwd(src, x):\n    return x, None\ndef f_bwd(src, _, g):\n    return (g,)\nf.defvjp(f_fwd, f_bwd)\n"
    code += f"def use(x):\n    return f({template}, x)\n"
    info = classified(code)
    quoted = [e.text for e in info.evidence if "a constant is passed" in e.text]
    assert quoted == [
        'a constant is passed at a call site (`"""template <typename T> __global__ void kernel(T* out, c...`)'
    ], quoted
    assert all("\n" not in e.text for e in info.evidence)


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
        (  # a keyword-only parameter the caller's jit marks static, passed on positionally
            '\n@partial(jax.jit, static_argnames=("tol",))\ndef run(y, *, tol=2):\n    return f(tol, y)\n',
            ArgKind.STATIC,
            "jit-static parameter of `run`",
        ),
        (array_caller, ArgKind.ARRAY, "an array is passed"),
        ("def use(x):\n    return f(lambda v: v, x)\n", ArgKind.STATIC, "a function is passed"),
    ):
        info = classified(module_code + extra)
        assert info.kind is expected
        assert any(reason in e.text for e in info.evidence)


_SCALE_SITE = HEADER + (
    "@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef f(a, x):\n    return x * a\n"
    "def f_fwd(a, x):\n    return f(a, x), None\ndef f_bwd(a, _, g):\n    return (g * a,)\nf.defvjp(f_fwd, f_bwd)\n"
)


@pytest.mark.parametrize(
    "static_caller",
    [
        pytest.param(
            '@partial(jax.jit, static_argnames=("s",))\ndef run(x, s):\n    return f(s, x)\n', id="jit-static"
        ),
        pytest.param("def run(x):\n    return f(lambda v: v, x)\n", id="function"),
        pytest.param('def run(x, mode="causal"):\n    return f(mode, x)\n', id="string default passed on"),
    ],
)
def test_call_sites_that_disagree_leave_array_data_with_no_safe_fix(static_caller: str) -> None:
    # One caller passes a static value, another an array (`jnp.linalg.norm(x)`, a Tracer under
    # grad): the second call breaks, and what the first passes may be no JAX value.
    code = _SCALE_SITE + static_caller + "def by_norm(x):\n    return f(jnp.linalg.norm(x), x)\n"
    info = _unscreened(code)
    texts = [e.text for e in info.evidence]
    assert info.kind is ArgKind.ARRAY and not info.strong, texts
    assert any("an array is passed" in t for t in texts) and any("at a call site" in t for t in texts[:1]), texts


_STATIC_CONFIG_CLASS = (
    "import dataclasses\n@jax.tree_util.register_static\n@dataclasses.dataclass(frozen=True)\n"
    "class Config:\n    chunks: int = 2\n"
)


@pytest.mark.parametrize(
    "config_caller",
    [
        pytest.param("@jax.jit\ndef run(x, cfg: Config):\n    return f(cfg, x)\n", id="jitted"),
        pytest.param("def run(x, cfg: Config):\n    return f(cfg, x)\n", id="undecorated"),
    ],
)
def test_a_leafless_config_at_one_call_site_and_an_array_at_another_is_safe_to_move(config_caller: str) -> None:
    # A pytree with no leaves is a JAX value: moved out of nondiff_argnums it stays untraced.
    code = _SCALE_SITE + _STATIC_CONFIG_CLASS + config_caller + "def by_norm(x):\n    return f(jnp.linalg.norm(x), x)\n"
    info = _unscreened(code)
    assert (info.kind, info.strong, info.fixable) == (ArgKind.ARRAY, True, True), info.evidence
    assert any("annotated `Config` in the caller `run`" in e.text for e in info.evidence), info.evidence
    with_function = code.replace("def by_norm", "def by_function(x):\n    return f(lambda v: v, x)\ndef by_norm")
    info = _unscreened(with_function)
    assert (info.kind, info.strong, info.fixable) == (ArgKind.ARRAY, False, False), info.evidence


def test_a_leafless_config_moved_out_of_nondiff_argnums_works_beside_an_array() -> None:
    @jax.tree_util.register_static
    @dataclasses.dataclass(frozen=True)
    class Config:
        chunks: int = 2

    def factor(a: Config | jax.Array) -> jax.Array:
        return jnp.asarray(a.chunks if isinstance(a, Config) else a)

    @jax.custom_vjp
    def f(a: Config | jax.Array, x: jax.Array) -> jax.Array:
        return x * factor(a)

    f.defvjp(lambda a, x: (f(a, x), a), lambda a, g: (None, g * factor(a)))
    with_config = jax.jit(lambda x, cfg: f(cfg, x))
    with_array = jax.jit(lambda x, w: f(w, x))
    assert jax.grad(with_config)(1.0, Config()) == 2.0
    assert jax.grad(with_array)(1.0, 3.0) == 3.0


def test_agreeing_static_call_sites_still_decide() -> None:
    code = _SCALE_SITE + '@partial(jax.jit, static_argnames=("s",))\ndef run(x, s):\n    return f(s, x)\n'
    assert _unscreened(code).kind is ArgKind.STATIC


def test_an_array_at_one_call_site_fails_though_another_passes_a_static_value() -> None:
    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(a, x):
        return x * a

    f.defvjp(lambda a, x: (f(a, x), None), lambda a, _, g: (g * a,))
    run = jax.jit(lambda x, s: f(s, x).sum(), static_argnames="s")
    x = jnp.arange(3.0)
    assert jnp.allclose(jax.grad(run)(x, 2.0), 2.0)  # the static caller works
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.grad(lambda x: f(jnp.linalg.norm(x), x).sum())(x)


def _wrapped(wrapper: str, screened: bool = True) -> ArgInfo:
    """The argument of a rule that only passes it on, with ``wrapper`` calling the rule."""
    code = HEADER + "from elsewhere import kernel\n"
    code += "@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef f(a, x):\n    return kernel(x, a)\n"
    code += "def f_fwd(a, x):\n    return kernel(x, a), x\ndef f_bwd(a, x, g):\n    return (kernel(g, a),)\n"
    code += "f.defvjp(f_fwd, f_bwd)\n" + wrapper
    return classified(code) if screened else _unscreened(code)


@pytest.mark.parametrize(
    ("wrapper", "reason"),
    [
        pytest.param(
            "def run(x, use_tf32: bool = True):\n    return f(use_tf32, x)\n",
            "annotated `bool` in the caller `run`, passed on at a call site (`use_tf32`)",
            id="bool annotation",
        ),
        pytest.param(
            "def run(x, *, mode='fast'):\n    return f(mode, x)\n",
            "defaults to `'fast'` in the caller `run`, passed on at a call site (`mode`)",
            id="keyword-only string default",
        ),
        pytest.param(
            "def run(x, grid=(1, 16)):\n    return f(grid, x)\n",
            "defaults to `(1, 16)` in the caller `run`, passed on at a call site (`grid`)",
            id="shape default",
        ),
    ],
)
def test_a_static_parameter_of_the_caller_passed_on_is_static(wrapper: str, reason: str) -> None:
    info = _wrapped(wrapper)
    assert info.kind is ArgKind.STATIC and any(e.text == reason for e in info.evidence), info.evidence


@pytest.mark.parametrize(
    "wrapper",
    [
        pytest.param("@some.decorator\ndef run(x, flag: bool = True):\n    return f(flag, x)\n", id="decorated"),
        pytest.param(
            "def run(x, flag: bool = True):\n    flag = flag & (x > 0)\n    return f(flag, x)\n", id="rebound"
        ),
        pytest.param(
            "def run(xs):\n    def step(c, flag: bool):\n        return c, f(flag, c)\n"
            "    return jax.lax.scan(step, 0.0, xs)\n",
            id="nested scan body",
        ),
        pytest.param(
            "def run(x, flag: bool = True):\n    return f(flag, x)\nbatched = jax.vmap(run, in_axes=(0, 0))\n",
            id="vmapped elsewhere",
        ),
        pytest.param(
            "class Layer:\n    def __call__(self, x, flag: bool = True):\n        return f(flag, x)\n", id="method"
        ),
        pytest.param("def run(x, n: int = 4):\n    return f(n, x)\n", id="int annotation"),
        pytest.param("def run(x, lo: float = 0.5):\n    return f(lo, x)\n", id="float default"),
    ],
)
def test_other_parameters_of_the_caller_passed_on_say_nothing_static(wrapper: str) -> None:
    info = _wrapped(wrapper)
    assert info.kind is not ArgKind.STATIC, info.evidence


def test_a_bool_parameter_of_a_def_a_jit_call_traces_is_array_data() -> None:
    # `run_fast = jax.jit(run)` traces `flag` (a bool too): a Tracer in nondiff_argnums. Not
    # through `classified`: read by classify alone (test_prefilter holds the screen to it).
    info = _wrapped("def run(x, flag: bool = True):\n    return f(flag, x)\nrun_fast = jax.jit(run)\n", screened=False)
    assert info.kind is ArgKind.ARRAY and any("jitted `run`" in e.text for e in info.evidence), info.evidence


@pytest.mark.parametrize("bind", ["a = float(bound)", "a = int(bound * 2)", "a = 0.5"])
def test_a_python_number_bound_before_the_call_is_no_static_evidence(bind: str) -> None:
    # Concrete there, like a number literal, yet the guide's clip_gradient bounds are such numbers:
    # array data whose move is harmless (and needed where another caller passes a Tracer).
    code = HEADER + "@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef f(a, x):\n    return x\n"
    code += "def f_fwd(a, x):\n    return x, None\ndef f_bwd(a, _, g):\n    return (jnp.clip(g, -a, a),)\n"
    code += f"f.defvjp(f_fwd, f_bwd)\ndef run(x, bound):\n    {bind}\n    return f(a, x)\n"
    info = classified(code)
    assert (info.kind, info.strong) == (ArgKind.ARRAY, True), info.evidence


def test_a_bool_passed_on_by_a_wrapper_is_a_setting_unless_a_jit_traces_it() -> None:
    # A plain wrapper passes its Python bool on: fine in nondiff_argnums, and `if flag` fails on a
    # Tracer. A jax.jit on the wrapper (not marking it static) makes it a Tracer: a broken site.
    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
    def gated(flag: bool, x: jax.Array) -> jax.Array:
        return x * 2 if flag else x

    gated.defvjp(lambda flag, x: (gated(flag, x), None), lambda flag, _, g: (g * 2 if flag else g,))

    def run(x: jax.Array, flag: bool = True) -> jax.Array:
        return gated(flag, x)

    assert float(jax.jit(jax.grad(run))(1.0)) == 2.0
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.jit(run)(1.0, True)

    @jax.custom_vjp
    def moved(flag: bool, x: jax.Array) -> jax.Array:
        return x * 2 if flag else x

    moved.defvjp(lambda flag, x: (moved(flag, x), flag), lambda flag, g: (None, g * 2 if flag else g))
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(moved)(True, 1.0)


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


@pytest.mark.parametrize(
    ("primal", "through"),
    [
        pytest.param(
            lines("n = a[1] - a[0]", "return jnp.tile(x, n)"), "through `n` (from `a`", id="tile reps from a difference"
        ),
        pytest.param(
            lines("b = a[0]", "c = b + 1", "return x * len(range(c))"),
            "through `c` (from `b`, line 10; `b` from `a`, line 9)",
            id="transitive chain",
        ),
        pytest.param(lines("lo, hi = a", "return x[0] * sum(range(hi))"), "through `hi`", id="tuple unpack"),
        pytest.param(lines("n = int(a.max())", "return jnp.zeros((n, 3)) + x"), "through `(n, 3)`", id="shape tuple"),
        pytest.param(lines("flag = a > 0", "if flag:", "    return x", "return -x"), "`flag`", id="if on a flag"),
        pytest.param(lines("n: int = a[0]", "n += 1", "return x.reshape(n, -1)"), "through `n`", id="augmented"),
        pytest.param(lines("for n in a:", "    x = jnp.tile(x, n)", "return x"), "through `n`", id="loop over it"),
        pytest.param("return jnp.stack([jnp.tile(x, n) for n in a])", "through `n`", id="comprehension"),
        pytest.param("return jnp.tile(x, a[1] - a[0])", "through `a[1] - a[0]`", id="inline expression"),
        pytest.param(lines("n = a[0]", "return scale(x, n)"), "through `n`", id="to a local helper"),
        pytest.param(lines("start = a[0]", "return x[start : start + 2]"), "through `start`", id="slice bound"),
        pytest.param(
            lines("n = a.item()", "if n > 0:", "    return x", "return -x"), "through `n > 0`", id="a value method"
        ),
    ],
)
def test_a_value_derived_from_it_needed_concretely_is_static(primal: str, through: str) -> None:
    helper = "def scale(v, k):\n    return v * len(range(k))\n"
    kind, reasons, _ = classify(primal, "return (g * a,)", signature="a: jax.Array, x", extra=helper)
    assert kind is ArgKind.STATIC, reasons
    assert any(r.startswith("its values are needed concretely ") and through in r for r in reasons), reasons


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param(lines("n = a.shape[0]", "return x[0] * len(range(n))"), id="shape[0]"),
        pytest.param(lines("n = len(a)", "return jnp.tile(x, n)"), id="len"),
        pytest.param(lines("n = jnp.shape(a)[0] + a.ndim", "return jnp.zeros(n) + x"), id="jnp.shape and ndim"),
        pytest.param(lines("n, m = a.shape", "if n > m:", "    return x", "return -x"), id="unpacked shape"),
        pytest.param(lines("z = jnp.zeros_like(a)", "return jnp.tile(x, z.size)"), id="zeros_like"),
        pytest.param(lines("n, m = a[0], 3", "return jnp.tile(x, m)"), id="the other element of a pair"),
        pytest.param(lines("n = helper(a)", "return jnp.tile(x, n)"), id="through an opaque call"),
        pytest.param(lines("def inner():", "    n = a[0]", "    return n", "return jnp.tile(x, n)"), id="nested"),
    ],
)
def test_metadata_and_unrelated_values_are_not_evidence(primal: str) -> None:
    kind, reasons, _ = classify(primal, "return (g * a,)", extra="from elsewhere import helper\n")
    assert kind is ArgKind.ARRAY, reasons
    assert not any("concretely" in r for r in reasons), reasons


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param(lines("n = a[0]", "if x is None:", "    n = 3", "return jnp.tile(x, n)"), id="rebound"),
        pytest.param(lines("n = a[0] if x is None else 3", "return jnp.tile(x, n)"), id="one branch"),
        pytest.param(lines("n = a[0]", "h = lambda n: range(n)", "return x * h(2)"), id="shadowed in a lambda"),
        pytest.param(lines("n = a[0]", "for n in range(3):", "    x = jnp.tile(x, n)", "return x"), id="loop target"),
    ],
)
def test_a_value_maybe_derived_from_it_makes_an_array_unknown(primal: str) -> None:
    kind, reasons, _ = classify(primal, "return (g * a,)", signature="a: jax.Array, x")
    assert kind is ArgKind.UNKNOWN, reasons
    assert any(r.startswith("its values may be needed concretely through `n` (from `a`") for r in reasons), reasons


def test_a_value_derived_through_a_binding_further_down_a_loop_is_found() -> None:
    # `n = m` stands above `m = a[i]`, but reads it from the loop's second pass on.
    primal = lines("n = 1", "m = 1", "for i in range(2):", "    n = m", "    m = a[i]", "return jnp.tile(x, n)")
    kind, reasons, _ = classify(primal, "return (g * a,)", signature="a: jax.Array, x")
    assert kind is ArgKind.UNKNOWN, reasons
    through = "its values may be needed concretely through `n` (from `m`"
    assert any(r.startswith(through) and "`m` from `a`" in r for r in reasons), reasons


def test_array_use_does_not_flow_through_derived_values() -> None:
    kind, reasons, _ = classify(lines("y = a[0]", "return x * y"))
    assert kind is ArgKind.UNKNOWN and len(reasons) == 1 and reasons[0].startswith("none of its uses"), reasons


@pytest.mark.parametrize(
    ("primal", "expected", "reason"),
    [
        pytest.param("return jnp.stack([x, a])", ArgKind.ARRAY, "`jnp.stack` (inside a tuple or list)", id="list"),
        pytest.param(
            "return jax.lax.scan(lambda c, t: (c, t[1]), x, (x, (a,)))[1]",
            ArgKind.ARRAY,
            "`jax.lax.scan` (inside a tuple or list)",
            id="nested tuple as scan's xs",
        ),
        pytest.param(
            lines("xs = (x, a)", "return jax.lax.scan(lambda c, t: (c, t[1]), x, xs)[1]"),
            ArgKind.ARRAY,
            "`jax.lax.scan` (inside `xs`)",
            id="a local bound once to a tuple",
        ),
        pytest.param(
            "return jnp.zeros((a, 3)) + x", ArgKind.STATIC, "`jnp.zeros` (inside a tuple or list)", id="shape"
        ),
        pytest.param("return x.reshape((a, -1))", ArgKind.STATIC, "`.reshape` (inside a tuple or list)", id="method"),
    ],
)
def test_an_argument_inside_a_tuple_or_list_is_judged_at_its_place(primal: str, expected: ArgKind, reason: str) -> None:
    kind, reasons, _ = classify(primal)
    assert kind is expected
    assert any(reason in r for r in reasons), reasons


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param(lines("xs = (x, a)", "xs = (x,)", "return jnp.stack(xs)"), id="a local bound twice"),
        pytest.param(lines("xs = (x, a)", "return x * len(xs)"), id="only its length"),
        pytest.param("return helper((x, a))", id="a helper's parameter is not the argument"),
    ],
)
def test_a_packed_argument_says_nothing_elsewhere(primal: str) -> None:
    assert classify(primal, extra="def helper(p):\n    return p[0] * 2\n")[0] is ArgKind.UNKNOWN


def test_an_array_packed_into_scans_xs_breaks_under_jit() -> None:
    # Why `scan(f, c, (xs, a))` makes `a` array data: scan slices it, and jit traces it.
    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def f(x: jax.Array, a: jax.Array) -> jax.Array:
        return jax.lax.scan(lambda c, t: (c + t[0] * t[1], None), x, (jnp.ones(3), a))[0]

    f.defvjp(lambda x, a: (f(x, a), None), lambda a, _, g: (g,))
    assert float(f(1.0, jnp.arange(3.0))) == 4.0
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.jit(f)(1.0, jnp.arange(3.0))


def test_a_helper_own_derived_value_continues_the_chain() -> None:
    helper = "def rep(v, k):\n    m = k * 2\n    return jnp.tile(v, m)\n"
    kind, reasons, _ = classify(lines("n = a[0]", "return rep(x, n)"), extra=helper)
    assert kind is ArgKind.STATIC
    assert any("through `n` (from `a`, line 10), then through `m` (from `k`, line 6)" in r for r in reasons), reasons


def test_the_argument_itself_as_a_slice_bound_is_static() -> None:
    kind, reasons, _ = classify("return x[: a] * a")
    assert kind is ArgKind.STATIC and "used as a slice bound in the primal `f`" in reasons, reasons
    assert classify("return x[: a.shape[0]] * a")[0] is ArgKind.ARRAY


# How array-library functions take an argument `a`, checked against JAX itself: at a static place
# a Tracer fails (so migrating `a` would break working code); at a data place it works.
X = jnp.arange(9.0).reshape(3, 3) / 10
LIBRARY_STATIC = [
    ("jnp.round(x, a)", 2),
    ("jnp.diag(x, a)", 1),
    ("jnp.diagonal(x, a)", 1),
    ("jnp.triu(x, a)", 1),
    ("jnp.fft.fft(x, a)", 4),
    ("jnp.fft.fft(x, norm=a)", "ortho"),
    ("jnp.tensordot(x, x, a)", 1),
    ("jax.lax.iota(jnp.float32, a) + x[0]", 3),
    ("jax.lax.dot_general(x, x, a)", (((1,), (0,)), ((), ()))),
    ("jnp.linalg.svd(x, full_matrices=a)[0]", False),
    ("jnp.percentile(x, 50.0, a)", 0),
    ("jnp.repeat(x, 2, a)", 0),
    ("jnp.linspace(0.0, 1.0, a) + x[0, 0]", 5),
    ("jnp.eye(a) + x", 3),
    ("jax.random.normal(jax.random.key(0), a) + x", (3, 3)),
    ("jax.nn.gelu(x, a)", False),
    ("jax.nn.one_hot(x[0].astype(int), a)", 4),
    ("jnp.cumsum(x, a)", 0),
    ("jax.lax.reduce_precision(x, a, 10)", 5),
    ("jnp.sum(jnp.array([0.0] * a)) + x", 2),
]
LIBRARY_DATA = [
    ("jnp.clip(x, a)", 0.2),
    ("jnp.where(x > 0.3, x, a)", 0.0),
    ("jnp.maximum(x, a)", 0.1),
    ("jax.lax.max(x, a)", 0.1),
    ("jnp.dot(x, a)", X),
    ("jnp.roll(x, a)", 1),
    ("jnp.take(x, a)", jnp.array([0, 4])),
    ("jax.scipy.special.logsumexp(x, 0, a)", X),
    ("jnp.linalg.solve(x + 3 * jnp.eye(3), a)", X[0]),
    ("jnp.interp(x, a, a)", jnp.array([0.0, 0.5, 1.0])),
]
LIBRARY_UNSURE = ["jnp.nan_to_num(x, a)", "jnp.insert(x, a, 0.0)", "jnp.fft.fft(x, flavour=a)"]


@pytest.mark.parametrize(("expr", "value"), LIBRARY_STATIC, ids=[e for e, _ in LIBRARY_STATIC])
def test_static_places_of_library_functions(expr: str, value: object) -> None:
    kind, reasons, _ = classify(f"return {expr}")
    assert kind is ArgKind.STATIC, reasons
    function = eval(f"lambda x, a: {expr}", {"jax": jax, "jnp": jnp})
    function(X, value)  # works with a concrete value
    with pytest.raises((TypeError, ValueError)):  # JAX: concretization, hashing, invalid type
        jax.jit(function)(X, value)


@pytest.mark.parametrize(("expr", "value"), LIBRARY_DATA, ids=[e for e, _ in LIBRARY_DATA])
def test_data_places_of_library_functions(expr: str, value: object) -> None:
    kind, reasons, strong = classify(f"return {expr}")
    assert (kind, strong) == (ArgKind.ARRAY, True), reasons
    function = eval(f"lambda x, a: {expr}", {"jax": jax, "jnp": jnp})
    assert jnp.allclose(jax.jit(function)(X, value), function(X, value))


@pytest.mark.parametrize("expr", LIBRARY_UNSURE)
def test_other_places_of_library_functions_say_nothing(expr: str) -> None:
    kind, reasons, _ = classify(f"return {expr}")
    assert kind is ArgKind.UNKNOWN, reasons
    assert any("may need a concrete value there" in r for r in reasons), reasons
    # with other array evidence the argument is still an array
    assert classify(f"return {expr} * a")[0] is ArgKind.ARRAY


def test_library_tables_name_no_position_both_static_and_callable_by_mistake() -> None:
    from vjp_migrate import vocabulary as v

    for name, positions in v.CALLABLE_POSITIONS.items():
        for position in positions:
            assert v.library_use(f"jax.lax.{name}", position, None) == v.CALLABLE, name
    assert v.library_use("jax.numpy.max", 1, None) == v.STATIC  # a reduction's axis
    assert v.library_use("jax.lax.max", 1, None) == v.DATA  # lax.max is element-wise
    assert v.library_use("jax.random.truncated_normal", -1, "lower") == v.DATA
    assert v.library_use("jax.scipy.linalg.cholesky", -1, "lower") == v.STATIC


def test_keyword_only_helper_parameters_are_followed() -> None:
    helper = "def shift(x, *, offset):\n    return x + offset\n"
    kind, reasons, _ = classify("return shift(x, offset=a)", extra=helper)
    assert kind is ArgKind.ARRAY
    assert any("helper `shift`" in r for r in reasons), reasons


@pytest.mark.parametrize(
    "helper",
    [
        pytest.param('@partial(jax.jit, static_argnames=("n",))\ndef helper(v, n):\n    return v * n\n', id="names"),
        pytest.param("@partial(jax.jit, static_argnums=1)\ndef helper(v, n):\n    return v * n\n", id="numbers"),
        pytest.param('@jax.jit(static_argnames=["n"])\ndef helper(v, n):\n    return v * n\n', id="jit(...) form"),
        pytest.param(
            '@partial(jax.jit, static_argnames="gain")\ndef helper(v, *, gain):\n    return v * gain\n',
            id="keyword-only",
        ),
    ],
)
def test_a_helper_parameter_its_own_jit_marks_static_is_static(helper: str) -> None:
    # The helper's arithmetic on `n` used to be array evidence: a wrong safe fix that broke jit.
    keyword = "*, gain" in helper
    call = "return helper(x, gain=a)" if keyword else "return helper(x, a)"
    kind, reasons, _ = classify(call, "return (g * a,)", extra=helper)
    assert kind is ArgKind.STATIC
    reason = f"passed as `{'gain' if keyword else 'n'}` to `helper`, whose jax.jit marks it static"
    assert any(reason in r for r in reasons), reasons


def test_a_tracer_as_a_jit_static_argument_fails() -> None:
    @functools.partial(jax.jit, static_argnames=("n",))
    def helper(v: jax.Array, n: float) -> jax.Array:
        return v * n

    assert float(helper(1.0, 2.0)) == 2.0
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        jax.jit(lambda v, n: helper(v, n))(1.0, 2.0)


def test_match_subject_decides_control_flow() -> None:
    body = lines("match a:", "    case 'relu':", "        return x", "    case _:", "        return -x")
    kind, reasons, _ = classify(body)
    assert kind is ArgKind.STATIC
    assert any("`match`" in r for r in reasons), reasons


def test_jit_static_parameter_of_an_enclosing_function_passed_from_a_nested_one() -> None:
    caller = (
        "@partial(jax.jit, static_argnums=(1,))\n"
        "def total(xs, a):\n"
        "    def step(c, x):\n"
        "        return c + f(a, x), None\n"
        "    return jax.lax.scan(step, 0.0, xs)[0]\n"
    )
    code = HEADER + "@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef f(a, x):\n    return x * a\n"
    code += "def f_fwd(a, x):\n    return f(a, x), None\ndef f_bwd(a, _, g):\n    return (g,)\n"
    code += "f.defvjp(f_fwd, f_bwd)\n"
    rebound = caller.replace("        return c + f", "        a = c\n        return c + f")
    for body, expected in ((caller, ArgKind.STATIC), (rebound, None)):
        info = classified(code + body)
        if expected is None:  # rebound in `step`: no longer the jit-static parameter
            assert info.kind is ArgKind.ARRAY
        else:
            assert info.kind is expected
            assert any("jit-static parameter of `total`" in e.text for e in info.evidence)


def test_array_and_number_annotations_that_disagree_decide_nothing() -> None:
    helper = "def scaled(x, a: jax.Array):\n    return x * a\n"
    assert classify("return scaled(x, a)", extra=helper)[0] is ArgKind.ARRAY
    kind, reasons, _ = classify("return scaled(x, a)", signature="a: float, x", extra=helper)
    assert kind is ArgKind.UNKNOWN
    assert any("annotated `float`" in r for r in reasons) and any("annotated `jax.Array`" in r for r in reasons)


@pytest.mark.parametrize(
    "body",
    [
        lines("tokens, width = x.shape", "return x, tokens // a"),
        lines("n = x.shape[0]", "m = n", "return x, m * a"),
        "return x, len(x) * a",
        "return x, a + x.shape[-1]",
    ],
    ids=["unpacked shape", "chained local", "len", "shape attribute"],
)
def test_arithmetic_with_sizes_says_nothing(body: str) -> None:
    kind, reasons, _ = classify(body)
    assert kind is ArgKind.UNKNOWN, reasons
    assert classify(body.replace("return x,", "return x * a,"))[0] is ArgKind.ARRAY


def test_arithmetic_with_a_local_bound_to_values_too_is_still_array_use() -> None:
    body = lines("n = x.shape[0]", "if x.sum() > 0:", "    n = x[0]", "return x, n * a")
    assert classify(body)[0] is ArgKind.ARRAY


@pytest.mark.parametrize("other", ["jnp.ones_like(x)", "jnp.zeros_like(x) + 1", "x.dtype"])
def test_arithmetic_with_other_metadata_reads_is_still_array_use(other: str) -> None:
    # they read only metadata, but give an array (or a dtype), not a size
    assert classify(f"return x, {other} * a")[0] is ArgKind.ARRAY


@pytest.mark.parametrize(
    ("primal", "extra"),
    [
        pytest.param("return x", "", id="no use"),
        pytest.param("return x[a[0]] * 2.0", "", id="indexes an array"),
        pytest.param("return host_matvec(x, a)", "from backend import host_matvec\n", id="opaque helper"),
    ],
)
def test_a_host_numpy_annotation_is_no_array_evidence(primal: str, extra: str) -> None:
    """`indices: np.ndarray` in nondiff_argnums is a host array (sparsejax's sparsity pattern),
    usually read concretely by host code the tool cannot see: no safe fix (it broke jax.jit)."""
    kind, reasons, strong = classify(primal, signature="a: np.ndarray, x", extra="import numpy as np\n" + extra)
    assert kind is ArgKind.UNKNOWN and not strong
    assert any("host NumPy array" in r for r in reasons), reasons


def test_a_host_numpy_annotation_with_an_array_annotation_elsewhere_decides_nothing() -> None:
    helper = "def scaled(x, a: jax.Array):\n    return x * a\n"
    kind, reasons, _ = classify(
        "return scaled(x, a)", signature="a: onp.ndarray, x", extra="import numpy as onp\n" + helper
    )
    assert kind is ArgKind.UNKNOWN
    assert any("host NumPy array" in r for r in reasons) and any("annotated `jax.Array`" in r for r in reasons)


@pytest.mark.parametrize("module", ["import jax.numpy as np\n", "from jax import numpy as np\n"])
def test_jax_numpy_ndarray_annotation_is_still_an_array(module: str) -> None:
    assert classify("return x", signature="a: np.ndarray, x", extra=module)[0] is ArgKind.ARRAY


def test_a_host_callback_needs_the_index_array_it_closes_over_concrete() -> None:
    """Why a host NumPy argument is no safe fix: host code that reads it works with the concrete
    array a nondiff argument is, and fails once the argument is traced."""

    def gather(x: jax.Array, indices: np.ndarray) -> jax.Array:
        def host(values: np.ndarray) -> np.ndarray:
            return np.asarray(values)[np.asarray(indices)]

        return jax.pure_callback(host, jax.ShapeDtypeStruct(indices.shape, x.dtype), x)

    x, indices = jnp.arange(4.0), np.array([3, 1])
    np.testing.assert_allclose(jax.jit(lambda x: gather(x, indices))(x), [3.0, 1.0])
    with pytest.raises(Exception, match="Tracer"):
        jax.block_until_ready(jax.jit(gather)(x, indices))


PRIMITIVE = "from jax.extend.core import Primitive\nscale_p = Primitive('scale')\n"


def _scale_primitive() -> Primitive:
    """A real primitive with a parameter, `scale_p.bind(x, factor=2.0)` = `x * 2.0`."""
    scale_p = Primitive("scale")
    scale_p.def_impl(lambda x, *, factor: x * factor)
    scale_p.def_abstract_eval(lambda x, *, factor: jax.core.ShapedArray(x.shape, x.dtype))
    mlir.register_lowering(scale_p, mlir.lower_fun(lambda x, *, factor: x * factor, multiple_results=False))
    return scale_p


# How JAX refuses a Tracer as a primitive's parameter: unhashable (JAX 0.7 and later); before,
# the Tracer leaks (UnexpectedTracerError, a TypeError) or a custom primitive's lowering asserts.
TRACER_PARAMETER_REFUSED = (TypeError, AssertionError)
TRACER_PARAMETER_MESSAGES = "hash|unexpected tracer|Unreachable"


def test_keywords_of_a_primitives_bind_are_static() -> None:
    kind, reasons, _ = classify("return scale_p.bind(x, transpose_out=a)", extra=PRIMITIVE)
    assert kind is ArgKind.STATIC, reasons
    assert any("parameter `transpose_out=` to `scale_p.bind`" in r for r in reasons), reasons
    # and that is why: a primitive's parameters must be hashable, which a Tracer is not
    scale_p = _scale_primitive()
    bind = lambda x, a: scale_p.bind(x, factor=a)  # noqa: E731
    np.testing.assert_allclose(jax.jit(lambda x: bind(x, 2.0))(X), X * 2.0)
    with pytest.raises(TRACER_PARAMETER_REFUSED, match=TRACER_PARAMETER_MESSAGES):
        jax.jit(bind)(X, 2.0)


def test_operands_of_a_primitives_bind_are_data() -> None:
    kind, reasons, strong = classify("return scale_p.bind(a, factor=2.0)", extra=PRIMITIVE)
    assert (kind, strong) == (ArgKind.ARRAY, True), reasons
    assert any("operand to `scale_p.bind`" in r for r in reasons), reasons
    scale_p = _scale_primitive()
    np.testing.assert_allclose(jax.jit(lambda a: scale_p.bind(a, factor=2.0))(X), X * 2.0)


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param("return scale_p.bind(x, *a, factor=2.0)", id="a primitive's bind"),
        pytest.param("return add_p.bind(*a)", id="jax's own primitive"),
        pytest.param(
            "call = jax.ffi.ffi_call('add', jax.ShapeDtypeStruct(x.shape, x.dtype))\n    return call(x, *a)",
            id="an FFI function",
        ),
    ],
)
def test_a_sequence_unpacked_as_operands_is_data(primal: str) -> None:
    # piton's exp_mean: `exp_mean_p.bind(a, b, *sparse_c)` (it was VJP002 with no reason)
    extra = PRIMITIVE + "from jax.lax import add_p\n"
    kind, reasons, strong = classify(primal, extra=extra)
    assert (kind, strong) == (ArgKind.ARRAY, True), reasons
    assert any("unpacked by `*` as operands to " in r for r in reasons), reasons
    # and each item is an operand JAX traces
    pair = [jnp.float32(1.0), jnp.float32(2.0)]
    np.testing.assert_allclose(jax.jit(lambda xs: jax.lax.add_p.bind(*xs))(pair), 3.0)


@pytest.mark.parametrize(
    ("expr", "kind"),
    [
        pytest.param("jax.lax.integer_pow_p.bind(x, y=a)", ArgKind.STATIC, id="jax's own primitive"),
        pytest.param("jax.lax.add_p.bind(x, a)", ArgKind.ARRAY, id="jax's own primitive operand"),
    ],
)
def test_jax_own_primitives_bind(expr: str, kind: ArgKind) -> None:
    assert classify(f"return {expr}")[0] is kind
    function = eval(f"lambda x, a: {expr}", {"jax": jax})
    value = 2 if kind is ArgKind.STATIC else 2.0
    function(X, value)
    if kind is ArgKind.STATIC:
        with pytest.raises(TRACER_PARAMETER_REFUSED, match=TRACER_PARAMETER_MESSAGES):
            jax.jit(function)(X, value)
    else:
        np.testing.assert_allclose(jax.jit(function)(X, value), function(X, value))


@pytest.mark.parametrize(
    ("extra", "body"),
    [
        pytest.param("scale_p = make_primitive()\n", "return scale_p.bind(x, flag=a)", id="not made by Primitive"),
        pytest.param(PRIMITIVE + "scale_p = other\n", "return scale_p.bind(x, flag=a)", id="rebound"),
        pytest.param(PRIMITIVE, lines("scale_p = x", "return scale_p.bind(x, flag=a)"), id="a local shadows it"),
        pytest.param(PRIMITIVE, "return ops.scale_p.bind(x, flag=a)", id="attribute of an object"),
        pytest.param(PRIMITIVE, "return scale_p.apply(x, flag=a)", id="not bind"),
    ],
)
def test_other_binds_say_nothing(extra: str, body: str) -> None:
    kind, reasons, _ = classify(body, extra=extra)
    assert kind is ArgKind.UNKNOWN, reasons


@pytest.mark.parametrize(
    ("expr", "x", "value"),
    [
        pytest.param("jax.ShapeDtypeStruct(x.shape, a)", X, jnp.float32, id="dtype"),
        pytest.param("jax.ShapeDtypeStruct((a,), x.dtype)", X[0], 3, id="size in a shape"),
        pytest.param("jax.ShapeDtypeStruct(a, x.dtype)", X, (3, 3), id="shape"),
    ],
)
def test_shape_dtype_struct_takes_static_descriptions(expr: str, x: jax.Array, value: object) -> None:
    kind, reasons, _ = classify(f"return jax.pure_callback(np.sin, {expr}, x)", extra="import numpy as np\n")
    assert kind is ArgKind.STATIC, reasons
    function = eval(f"lambda x, a: jax.pure_callback(np.sin, {expr}, x)", {"jax": jax, "np": np})
    function(x, value)  # works with a concrete value
    with pytest.raises(TypeError):  # a dtype is no JAX type; a traced shape is not concrete
        jax.jit(function)(x, value)


FLIP = "def flip(v, lie):\n    if lie:\n        return -v\n    return v\n"


@pytest.mark.parametrize(
    "expr",
    [
        pytest.param("jax.tree_util.tree_map(lambda v, lie: -v if lie else v, x, a)", id="lambda"),
        pytest.param("jax.tree_util.tree_map(flip, x, a)", id="module helper"),
    ],
)
def test_leaves_a_tree_map_function_needs_concrete_are_static(expr: str) -> None:
    """A pytree of flags mapped alongside the data (crouch-grossmann's `is_lie`) is no array."""
    kind, reasons, _ = classify(f"return {expr}", extra=FLIP)
    assert kind is ArgKind.STATIC, reasons
    assert any("the function mapped by `jax.tree_util.tree_map`" in r for r in reasons), reasons
    namespace: dict[str, object] = {"jax": jax}
    exec(FLIP, namespace)
    function = eval(f"lambda x, a: {expr}", namespace)
    flags = {"p": True, "q": False}
    data = {"p": X, "q": X}
    function(data, flags)  # works with concrete flags
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(function)(data, flags)


def test_leaves_a_tree_map_function_uses_as_data_stay_weak_array_evidence() -> None:
    kind, reasons, strong = classify("return jax.tree_util.tree_map(lambda v, w: v * w, x, a)")
    assert (kind, strong) == (ArgKind.ARRAY, False), reasons


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param(lines("assert x.shape[0] % a == 0", "return x * a"), id="assert on the value"),
        pytest.param(
            lines("n = x.shape[0] // a", "assert n * a == x.shape[0], (n, a)", "return x * a"), id="through a local"
        ),
    ],
)
def test_an_assert_on_its_values_needs_them_concrete(primal: str) -> None:
    """`assert H % head_block_size == 0` (a Pallas GLA kernel): `assert` takes the truth value."""
    kind, reasons, _ = classify(primal)
    assert kind is ArgKind.STATIC, reasons
    assert any("decides Python control flow (`assert`)" in r for r in reasons), reasons

    def function(x: jax.Array, a: int) -> jax.Array:
        assert x.shape[0] % a == 0
        return x * a

    function(X, 3)  # works with a concrete value
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(function)(X, 3)


def test_an_assert_on_its_metadata_or_none_says_nothing() -> None:
    kind, reasons, _ = classify(lines("assert a is not None and a.ndim == x.ndim", "return x * a"))
    assert kind is ArgKind.ARRAY, reasons
    assert not any("assert" in r for r in reasons), reasons


def _pallas_double(block: object, interpret: object, compiler_params: object) -> jax.Array:
    from jax.experimental import pallas as pl

    def kernel(x_ref: object, o_ref: object) -> None:
        o_ref[...] = x_ref[...] * 2  # type: ignore[index]

    x = jnp.ones((8, 4))
    return pl.pallas_call(  # type: ignore[no-any-return]
        kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(2,),
        in_specs=[pl.BlockSpec((block, 4), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((4, 4), lambda i: (i, 0)),
        interpret=interpret,
        compiler_params=compiler_params,
    )(x)


PALLAS = "from jax.experimental import pallas as pl\nfrom jax.experimental.pallas import tpu as pltpu\n"


@pytest.mark.parametrize(
    ("expr", "reason"),
    [
        pytest.param("pl.BlockSpec((a, 4), lambda i: (i, 0))", "`pl.BlockSpec`", id="block shape"),
        pytest.param("pl.pallas_call(k, out_shape=x, interpret=a)", "`interpret=` to `pl.pallas_call`", id="interpret"),
        pytest.param(
            "pl.pallas_call(k, out_shape=x, compiler_params=dict(num_warps=a))",
            "`compiler_params=` to `pl.pallas_call`",
            id="compiler_params dict",
        ),
        pytest.param(
            "pl.pallas_call(k, out_shape=x, compiler_params=pltpu.CompilerParams(vmem_limit_bytes=a))",
            "`pltpu.CompilerParams`",
            id="CompilerParams",
        ),
    ],
)
def test_pallas_kernel_settings_are_static(expr: str, reason: str) -> None:
    kind, reasons, _ = classify(f"return {expr}", extra=PALLAS)
    assert kind is ArgKind.STATIC, reasons
    assert any(reason in r for r in reasons), reasons


@pytest.mark.parametrize(
    ("block", "interpret", "compiler_params"),
    [
        pytest.param(True, True, None, id="block shape"),
        pytest.param(False, True, None, id="interpret"),
        pytest.param(False, False, True, id="compiler_params"),
    ],
)
def test_pallas_kernel_settings_cannot_be_tracers(block: bool, interpret: bool, compiler_params: bool) -> None:
    from jax.experimental.pallas import tpu as pltpu

    def function(value: object) -> jax.Array:
        return _pallas_double(
            value if block else 4,
            value if interpret else True,
            pltpu.CompilerParams(vmem_limit_bytes=value) if compiler_params else None,
        )

    value = 4 if block else True if interpret else 2**20
    assert float(function(value).sum()) == 64.0  # works with a concrete value
    with pytest.raises((ValueError, TypeError)):  # an unsupported block dimension; an unhashable parameter
        jax.jit(function)(value)


def test_a_pallas_grid_says_nothing() -> None:
    """Pallas TPU takes dynamic grid sizes: a traced grid entry is not known to fail."""
    kind, reasons, _ = classify("return pl.pallas_call(k, out_shape=x, grid=(a,))(x)", extra=PALLAS)
    assert kind is not ArgKind.STATIC, reasons


KERNEL = "def kernel(x_ref, o_ref, *, scale):\n    o_ref[...] = x_ref[...] * scale\n"
SHAPE = "jax.ShapeDtypeStruct(x.shape, x.dtype)"


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param(f"return pl.pallas_call(partial(kernel, scale=a), out_shape={SHAPE})(x)", id="in place"),
        pytest.param(
            lines("body = partial(kernel, scale=a)", f"return pl.pallas_call(body, out_shape={SHAPE})(x)"),
            id="through a local",
        ),
        pytest.param(
            f"return pl.pallas_call(kernel=partial(kernel, scale=a * 2), out_shape={SHAPE})(x)", id="derived value"
        ),
    ],
)
def test_a_value_bound_to_a_pallas_kernel_by_partial_is_static(primal: str) -> None:
    # bwd's arithmetic on `a` used to make it array data: a safe fix that broke jax.jit.
    kind, reasons, _ = classify(primal, "return (g * a,)", extra=PALLAS + KERNEL)
    assert kind is ArgKind.STATIC
    assert any("of `kernel`, a Pallas kernel, which cannot capture traced values" in r for r in reasons), reasons


def test_a_partial_given_to_something_else_than_pallas_call_is_no_kernel() -> None:
    primal = lines("body = partial(kernel, scale=a)", f"other = pl.pallas_call(kernel, out_shape={SHAPE})", "return x")
    kind, _, _ = classify(primal, "return (g * a,)", extra=PALLAS + KERNEL)
    assert kind is ArgKind.ARRAY


def test_a_pallas_kernel_cannot_capture_a_traced_value() -> None:
    from jax.experimental import pallas as pl

    def kernel(x_ref: jax.Array, o_ref: jax.Array, *, scale: float) -> None:
        o_ref[...] = x_ref[...] * scale

    def scaled(x: jax.Array, scale: float) -> jax.Array:
        call = pl.pallas_call(
            functools.partial(kernel, scale=scale), out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), interpret=True
        )
        return call(x)  # type: ignore[no-any-return]

    np.testing.assert_allclose(jax.jit(lambda x: scaled(x, 2.0))(jnp.ones(4)), 2.0)
    with pytest.raises(ValueError, match="captures constants"):
        jax.jit(scaled)(jnp.ones(4), 2.0)


@pytest.mark.parametrize(
    ("step", "bound", "expected"),
    [
        pytest.param("def step(c, v, *, times):\n    for _ in range(times):\n        c = c + v\n    return c, c\n",
                     "partial(step, times=a)", ArgKind.STATIC, id="keyword"),
        pytest.param("def step(n, c, v):\n    return c + v[:n], c\n",
                     "partial(step, a)", ArgKind.STATIC, id="positional"),
        pytest.param("def step(c, v, *, times):\n    return c + v * times, c\n",
                     "partial(step, times=a)", ArgKind.UNKNOWN, id="array use waits for the call"),
        pytest.param("def step(c, v, *, times):\n    return c + v, c\n",
                     "partial(other_step, times=a)", ArgKind.UNKNOWN, id="no def of the module"),
    ],
)  # fmt: skip
def test_a_value_bound_by_partial_to_a_module_def_is_judged_there(step: str, bound: str, expected: ArgKind) -> None:
    primal = f"return jax.lax.scan({bound}, x[0], x)[0]"
    kind, reasons, _ = classify(primal, extra="from steps import other_step\n" + step)
    assert kind is expected, reasons
    if expected is ArgKind.STATIC:
        assert any("in `step` (bound by `partial` in the primal `f`)" in r for r in reasons), reasons


SLICER = "def helper(n, x):\n        return x[:n]\n"


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param(f"HAS_JAX = True\nif HAS_JAX:\n    {SLICER}", id="if"),
        pytest.param(f"if not jax:\n    pass\nelif jax:\n    {SLICER}", id="elif"),
        pytest.param(
            f"try:\n    import scipy\nexcept ImportError:\n    scipy = None\nelse:\n    {SLICER}", id="try else"
        ),
        pytest.param(f"try:\n    {SLICER}except ImportError:\n    pass\n", id="try body"),
        pytest.param(f"import warnings\nwith warnings.catch_warnings():\n    {SLICER}", id="with"),
    ],
)
def test_a_helper_defined_in_a_module_level_block_is_followed(extra: str) -> None:
    # `if HAS_JAX: def helper ...` (photonix) used to be "not analysed".
    kind, reasons, _ = classify("return helper(a, x)", extra=extra)
    assert kind is ArgKind.STATIC, reasons
    assert any("used as a slice bound in helper `helper`" in r for r in reasons), reasons


def test_array_use_in_a_helper_defined_in_a_block_counts() -> None:
    kind, reasons, _ = classify("return helper(a, x)", extra="if jax:\n    def helper(n, x):\n        return x * n\n")
    assert kind is ArgKind.ARRAY, reasons
    assert any("used in arithmetic in helper `helper`" in r for r in reasons), reasons


def test_a_def_whose_name_the_module_also_imports_is_not_followed() -> None:
    # Which of the two a call reaches is not known: the def's static use alone proves nothing.
    extra = f"try:\n    from fast import helper\nexcept ImportError:\n    {SLICER}"
    kind, reasons, _ = classify("return helper(a, x)", extra=extra)
    assert kind is ArgKind.UNKNOWN, reasons
    assert any("passed to `helper`, which is not analysed" in r for r in reasons), reasons


@pytest.mark.parametrize(
    ("other", "expected"),
    [
        pytest.param("return x[:n] * 2", ArgKind.STATIC, id="static in both"),
        pytest.param("return x * n", ArgKind.UNKNOWN, id="array use in the other"),
        pytest.param("raise RuntimeError('needs JAX')", ArgKind.UNKNOWN, id="no use in the other"),
    ],
)
def test_a_helper_defined_in_each_branch_is_static_only_if_every_def_says_so(other: str, expected: ArgKind) -> None:
    extra = f"if jax:\n    {SLICER}else:\n    def helper(n, x):\n        {other}\n"
    kind, reasons, strong = classify("return helper(a, x)", "return (g * a,)", extra=extra)
    assert kind is expected, reasons
    if expected is ArgKind.UNKNOWN:
        note = "used as a slice bound in helper `helper` (called from the primal `f`) (not in every one of the 2"
        assert any(note in r for r in reasons), reasons
        assert not strong


HOST = "def host(e):\n        return e * a\n    "


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param(f"{HOST}return jax.pure_callback(host, {SHAPE}, x)", id="local def"),
        pytest.param(f"return jax.pure_callback(lambda e: e * a, {SHAPE}, x)", id="lambda"),
        pytest.param(f"k = a * 2\n    {HOST.replace('* a', '* k')}return jax.pure_callback(host, {SHAPE}, x)",
                     id="derived value"),
        pytest.param(f"{HOST}return io_callback(host, {SHAPE}, x)", id="io_callback"),
        pytest.param(f"{HOST}jax.debug.callback(host, x)\n    return x", id="debug.callback"),
        pytest.param(f"return jax.pure_callback(callback=partial(scaled, scale=a), result_shape_dtypes={SHAPE}, x=x)",
                     id="bound by partial"),
    ],
)  # fmt: skip
def test_a_value_a_callbacks_host_function_captures_is_static(primal: str) -> None:
    # bwd's arithmetic on `a` used to make it array data: a safe fix that broke jax.jit.
    extra = "from jax.experimental import io_callback\ndef scaled(x, *, scale):\n    return x * scale\n"
    kind, reasons, _ = classify(primal, "return (g * a,)", extra=extra)
    assert kind is ArgKind.STATIC, reasons
    assert any("the host function of `" in r and "which cannot capture traced values" in r for r in reasons), reasons


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param(f"return jax.pure_callback(scaled, {SHAPE}, x, a)", id="module def"),
        pytest.param(f"def host(e, a):\n        return e * a\n    return jax.pure_callback(host, {SHAPE}, x, a)",
                     id="local def taking it"),
        pytest.param(f"{HOST}return jax.vmap(host)(x)", id="no callback"),
    ],
)  # fmt: skip
def test_a_callback_operand_is_array_data(primal: str) -> None:
    kind, reasons, _ = classify(primal, "return (g * a,)", extra="def scaled(x, a):\n    return x * a\n")
    assert kind is ArgKind.ARRAY, reasons


def test_a_callbacks_host_function_cannot_capture_a_traced_value() -> None:
    def scaled(x: jax.Array, scale: float) -> jax.Array:
        def host(e: np.ndarray) -> np.ndarray:
            return (e * scale).astype(e.dtype)  # type: ignore[no-any-return]

        return jax.pure_callback(host, jax.ShapeDtypeStruct(x.shape, x.dtype), x)  # type: ignore[no-any-return]

    def operand(x: jax.Array, scale: float) -> jax.Array:
        def host(e: np.ndarray, s: np.ndarray) -> np.ndarray:
            return (e * s).astype(e.dtype)  # type: ignore[no-any-return]

        return jax.pure_callback(host, jax.ShapeDtypeStruct(x.shape, x.dtype), x, scale)  # type: ignore[no-any-return]

    np.testing.assert_allclose(jax.jit(lambda x: scaled(x, 2.0))(jnp.ones(4)), 2.0)
    np.testing.assert_allclose(jax.jit(operand)(jnp.ones(4), 2.0), 2.0)
    with pytest.raises(jax.errors.JaxRuntimeError, match="callback"):
        jax.jit(scaled)(jnp.ones(4), 2.0)


@pytest.mark.parametrize(
    ("primal", "reason"),
    [
        pytest.param(
            lines(f"call = jax.ffi.ffi_call('scale', {SHAPE})", "return call(x, **a)"),
            "unpacked by `**` as the attributes of `call`, the function `jax.ffi.ffi_call` returns",
            id="dict unpacked",
        ),
        pytest.param(
            f"return jax.ffi.ffi_call('scale', {SHAPE})(x, eps=a)",
            "passed as the attribute `eps=` of `jax.ffi.ffi_call(...)`",
            id="keyword in place",
        ),
        pytest.param(
            lines("eps = a * 2", f"call = jax.ffi.ffi_call('scale', {SHAPE})", "return call(x, eps=eps)"),
            "through `eps` (from `a`, line",
            id="derived value",
        ),
    ],
)
def test_the_attributes_of_an_ffi_call_are_static(primal: str, reason: str) -> None:
    # bwd's arithmetic on `a` used to make it array data (it was "not analysed" in the primal).
    kind, reasons, _ = classify(primal, "return (g * a,)")
    assert kind is ArgKind.STATIC, reasons
    assert any(reason in r for r in reasons), reasons


def test_an_ffi_calls_operand_is_array_data() -> None:
    primal = lines(f"call = jax.ffi.ffi_call('scale', {SHAPE})", "return call(x, a, eps=1e-6)")
    assert classify(primal, "return (g * a,)")[0] is ArgKind.ARRAY


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param(lines(f"call = jax.ffi.ffi_call('scale', {SHAPE})", "return call(x, a)"), id="local"),
        pytest.param(f"return jax.ffi.ffi_call('scale', {SHAPE})(x, a[0], eps=1e-6)", id="in place"),
        pytest.param("return scaled(x, a)", id="in a helper"),
    ],
)
def test_an_ffi_operand_alone_is_array_data(primal: str) -> None:
    # xspex's apec: the spectrum number only reaches the FFI call's operands; it was VJP002.
    helper = f"def scaled(x, n):\n    call = jax.ffi.ffi_call('scale', {SHAPE})\n    return call(x, n, mode=1)\n"
    kind, reasons, strong = classify(primal, "return (g,)", extra=helper)
    assert (kind, strong) == (ArgKind.ARRAY, True), reasons
    assert any("passed as an operand to `" in r and "ffi_call" in r for r in reasons), reasons


def test_an_ffi_operand_can_be_a_tracer() -> None:
    def scale(x: jax.Array, n: jax.Array) -> jax.Array:
        call = jax.ffi.ffi_call("no_such_target", jax.ShapeDtypeStruct(x.shape, x.dtype), vmap_method="sequential")
        return call(x, n)  # type: ignore[no-any-return]

    jax.jit(scale).lower(jnp.ones(3), jnp.int32(1))  # lowering needs no registered target
    jax.jit(jax.vmap(scale, in_axes=(None, 0))).lower(jnp.ones(3), jnp.arange(2))


def test_an_ffi_attribute_cannot_be_a_tracer() -> None:
    def scale(x: jax.Array, eps: float) -> jax.Array:
        return jax.ffi.ffi_call("no_such_target", jax.ShapeDtypeStruct(x.shape, x.dtype))(x, eps=eps)  # type: ignore[no-any-return]

    jax.jit(lambda x: scale(x, 1e-6)).lower(jnp.ones(3))  # lowering needs no registered target
    with pytest.raises(TypeError, match="Non-hashable keyword argument to ffi_call"):
        jax.jit(scale).lower(jnp.ones(3), 1e-6)


def _rule_jit_site(fwd_jit: str, bwd_jit: str) -> tuple[ArgKind, tuple[str, ...]]:
    code = HEADER + "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef f(x, a):\n    return x * a\n"
    code += f"{fwd_jit}def f_fwd(x, a):\n    return x * a, None\n"
    code += f"{bwd_jit}def f_bwd(a, _, g):\n    return (g * a,)\n"
    code += "f.defvjp(f_fwd, f_bwd)\n"
    info = classified(code)
    return info.kind, tuple(e.text for e in info.evidence)


@pytest.mark.parametrize(
    ("fwd_jit", "bwd_jit", "role"),
    [
        pytest.param('@partial(jax.jit, static_argnames=("a",))\n', "", "fwd `f_fwd`", id="fwd names"),
        pytest.param("@partial(jax.jit, static_argnums=1)\n", "", "fwd `f_fwd`", id="fwd numbers"),
        pytest.param("", "@partial(jax.jit, static_argnums=(0,))\n", "bwd `f_bwd`", id="bwd numbers"),
        pytest.param("", '@jax.jit(static_argnames="a")\n', "bwd `f_bwd`", id="bwd jit(...) form"),
    ],
)
def test_an_argument_a_rules_jit_marks_static_is_static(fwd_jit: str, bwd_jit: str, role: str) -> None:
    # Arithmetic in every function used to make `a` array data: a needless rewrite of working code.
    kind, reasons = _rule_jit_site(fwd_jit, bwd_jit)
    assert kind is ArgKind.STATIC
    assert f"static in the jax.jit of {role}, which needs it hashable (an array is not)" in reasons


@pytest.mark.parametrize(
    "fwd_jit",
    [
        pytest.param("@partial(jax.jit, static_argnums=0)\n", id="another position"),
        pytest.param("@jax.jit\n", id="no static arguments"),
    ],
)
def test_a_rules_jit_that_does_not_mark_the_argument_leaves_it_array_data(fwd_jit: str) -> None:
    assert _rule_jit_site(fwd_jit, "")[0] is ArgKind.ARRAY


def test_an_array_as_a_rules_jit_static_argument_fails() -> None:
    scaled = jax.custom_vjp(lambda a, x: x * a, nondiff_argnums=(0,))
    fwd = jax.jit(lambda a, x: (x * a, None), static_argnums=0)
    scaled.defvjp(fwd, lambda a, _, g: (g * a,))
    assert float(jax.grad(scaled, argnums=1)(2.0, 1.0)) == 2.0
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        jax.grad(scaled, argnums=1)(jnp.array(2.0), 1.0)


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param(
            lines(
                "def body(x_ref, o_ref):",
                "    o_ref[...] = x_ref[...] * a",
                f"return pl.pallas_call(body, out_shape={SHAPE})(x)",
            ),
            id="local def",
        ),
        pytest.param(
            lines(
                "scale = a * 2",
                "def body(x_ref, o_ref):",
                "    o_ref[...] = x_ref[...] * scale",
                f"return pl.pallas_call(body, out_shape={SHAPE})(x)",
            ),
            id="derived value",
        ),
        pytest.param(
            f"return pl.pallas_call(lambda x_ref, o_ref: o_ref.set(x_ref[...] * a), out_shape={SHAPE})(x)",
            id="lambda",
        ),
    ],
)
def test_a_value_a_pallas_kernel_defined_around_it_reads_is_static(primal: str) -> None:
    # bwd's arithmetic (and the kernel's) used to make `a` array data: a safe fix that broke jax.jit.
    kind, reasons, _ = classify(primal, "return (g * a,)", extra=PALLAS)
    assert kind is ArgKind.STATIC
    assert any("a Pallas kernel, which cannot capture traced values" in r for r in reasons), reasons


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param(
            lines(
                "def body(x_ref, o_ref):",
                "    o_ref[...] = x_ref[...] * a.shape[0]",
                f"return pl.pallas_call(body, out_shape={SHAPE})(x)",
            ),
            id="metadata only",
        ),
        pytest.param(
            lines(
                "def body(x_ref, o_ref, a):",
                "    o_ref[...] = x_ref[...] * a",
                f"return pl.pallas_call(body, out_shape={SHAPE})(x, a)",
            ),
            id="a parameter of the kernel",
        ),
    ],
)
def test_a_kernel_that_does_not_capture_the_values_says_nothing(primal: str) -> None:
    kind, _, _ = classify(primal, "return (g * a,)", extra=PALLAS)
    assert kind is ArgKind.ARRAY


def test_a_call_of_no_dotted_name_is_named_by_its_code() -> None:
    _, reasons, _ = classify("return kernels[0](x, a)", extra="from lib import kernels\n")
    assert any("passed to `kernels[0]`, which is not analysed" in r for r in reasons), reasons


@pytest.mark.parametrize("size", ["int(x.shape[0])", "int(len(x))"])
def test_arithmetic_with_a_size_converted_by_int_is_no_array_use(size: str) -> None:
    # `num_tokens * num_ranks` with `num_tokens = int(x.shape[0])` was a wrong safe VJP001 (uccl moe_dispatch).
    body = lines(f"tokens = {size}", "return dispatch(x, worst=tokens * a)")
    kind, _, _ = classify(body, extra="from kernels import dispatch\n")
    assert kind is ArgKind.UNKNOWN


@pytest.mark.parametrize(
    ("primal", "reason"),
    [
        pytest.param(
            "return odeint(lambda y, t: -y, x, jnp.ones(2), rtol=a)[-1]",
            "passed as `rtol=` to `odeint`, which needs a static value there",
            id="odeint rtol",
        ),
        pytest.param(
            "return ode.odeint(lambda y, t: -y, x, jnp.ones(2), mxstep=a)[-1]",
            "passed as `mxstep=` to `ode.odeint`",
            id="odeint mxstep",
        ),
        pytest.param(
            "return gmres(lambda v: 2 * v, x, restart=a)[0]",
            "passed as a static setting (`restart=`) to `gmres`",
            id="gmres restart",
        ),
    ],
)
def test_a_solver_setting_its_jit_or_python_needs_concrete_is_static(primal: str, reason: str) -> None:
    # bwd's arithmetic on a tolerance made it a safe VJP001; the fix then broke jax.jit.
    extra = "from jax.experimental import ode\nfrom jax.experimental.ode import odeint\n"
    extra += "from jax.scipy.sparse.linalg import gmres\n"
    kind, reasons, _ = classify(primal, "return (g * (10 * a),)", extra=extra)
    assert kind is ArgKind.STATIC, reasons
    assert any(reason in r for r in reasons), reasons


@pytest.mark.parametrize(("keyword", "value"), [("rtol", 1e-6), ("atol", 1e-8), ("mxstep", 100), ("hmax", 1.0)])
def test_odeints_settings_cannot_be_tracers(keyword: str, value: float) -> None:
    from jax.experimental.ode import odeint

    def solve(v: float) -> jax.Array:
        return odeint(lambda y, t: -y, jnp.ones(2), jnp.array([0.0, 1.0]), **{keyword: v})  # type: ignore[no-any-return]

    solve(value)
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        jax.jit(solve)(value)


def test_a_gmres_restart_cannot_be_a_tracer() -> None:
    from jax.scipy.sparse.linalg import gmres

    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(lambda n: gmres(lambda v: 2 * v, jnp.ones(2), restart=n)[0])(2)


def _passed_on_after(rebind: str) -> str:
    """A module whose jitted caller marks `tol` static, runs ``rebind``, then passes `tol` on."""
    code = HEADER + "@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef f(a, x):\n    return x * a\n"
    code += "def f_fwd(a, x):\n    return f(a, x), None\ndef f_bwd(a, _, g):\n    return (g * a,)\n"
    code += "f.defvjp(f_fwd, f_bwd)\n"
    return code + f"@partial(jax.jit, static_argnums=(0,))\ndef run(tol, y):\n    {rebind}\n    return f(tol, y)\n"


@pytest.mark.parametrize(
    "rebind",
    ["tol = tol / jnp.std(y)", "tol, y = jnp.asarray(tol), y * 2", "tol *= jnp.max(y)", "for tol in y:\n        pass"],
)
def test_a_jit_static_parameter_the_caller_rebinds_is_no_longer_static(rebind: str) -> None:
    # `scale = scale / jnp.std(x)` in the jitted caller passed a Tracer on as "a jit-static parameter".
    module, imports = parse(_passed_on_after(rebind))
    (site,) = find_sites(module, imports)
    (info,) = classify_site(site, module, Context.of(module, imports, index_of(module).line))
    assert (info.kind, info.strong) == (ArgKind.ARRAY, True), info.evidence
    assert not any("jit-static" in e.text for e in info.evidence)


def test_the_screen_keeps_a_rebound_jit_static_parameter() -> None:
    assert classified(_passed_on_after("tol = tol / jnp.std(y)")).kind is ArgKind.ARRAY


def test_a_static_argument_rebound_to_an_array_under_jit_is_a_tracer() -> None:
    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
    def scaled(scale: jax.Array, x: jax.Array) -> jax.Array:
        return scale * x

    scaled.defvjp(lambda s, x: (scaled(s, x), None), lambda s, _, g: (s * g,))

    @functools.partial(jax.jit, static_argnums=(0,))
    def run(scale: float, x: jax.Array) -> jax.Array:
        return scaled(scale / jnp.std(x), x)  # type: ignore[arg-type]

    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.grad(lambda x: run(2.0, x).sum())(jnp.arange(3.0))


def _key_holder_module(use: str) -> str:
    """A module whose nondiff `keys` (a pytree holding PRNG keys) reaches ``use`` in a helper."""
    code = HEADER + f"def noisy(x, keys):\n    return x + {use}\n"
    code += "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef f(x, keys):\n    return noisy(x, keys)\n"
    code += "def f_fwd(x, keys):\n    return noisy(x, keys), None\ndef f_bwd(keys, _, g):\n    return (g,)\n"
    return code + "f.defvjp(f_fwd, f_bwd)\n"


def _unscreened(code: str) -> ArgInfo:
    module, imports = parse(code)
    (site,) = find_sites(module, imports)
    (info,) = classify_site(site, module, Context.of(module, imports, index_of(module).line))
    return info


@pytest.mark.parametrize(
    ("use", "attribute"),
    [
        pytest.param("jax.random.uniform(keys.batch_key, x.shape)", ".batch_key", id="sampler"),
        pytest.param("jax.random.normal(key=keys.noise, shape=x.shape)", ".noise", id="key keyword"),
        pytest.param("jax.random.split(keys.chain.root)[0][0] * 0.0", ".chain.root", id="attribute chain"),
    ],
)
def test_an_argument_holding_a_prng_key_is_array_data(use: str, attribute: str) -> None:
    # lalamo's Keychain (an eqx.Module of keys) in nondiff_argnums: VJP002 with no reason at all,
    # though jit or vmap over the keychain raises UnexpectedTracerError.
    info = _unscreened(_key_holder_module(use))
    assert info.kind is ArgKind.ARRAY, info.evidence
    assert not info.strong  # a plain object holding a key is no valid regular argument
    assert any(f"has its attribute `{attribute}` passed as the PRNG key" in e.text for e in info.evidence)


@pytest.mark.parametrize(
    "use",
    [
        pytest.param("jax.random.uniform(jax.random.key(keys.seed), x.shape)", id="seed"),
        pytest.param("jax.random.uniform(jax.random.PRNGKey(0), keys.shape)", id="shape"),
        pytest.param("jax.random.uniform(jax.random.PRNGKey(0), x.shape, maxval=keys.scale)", id="not the key"),
        pytest.param("jax.random.uniform(keys.batch_key.shape, x.shape)", id="metadata"),
    ],
)
def test_other_attributes_in_jax_random_say_nothing(use: str) -> None:
    info = _unscreened(_key_holder_module(use))
    assert not any("PRNG key" in e.text for e in info.evidence), info.evidence


def test_the_screen_keeps_an_argument_holding_a_prng_key() -> None:
    assert classified(_key_holder_module("jax.random.uniform(keys.batch_key, x.shape)")).kind is ArgKind.ARRAY


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class _Keys:
    batch_key: jax.Array


def test_a_key_holder_in_nondiff_argnums_fails_under_jit_and_works_as_a_regular_argument() -> None:
    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def before(x: jax.Array, keys: _Keys) -> jax.Array:
        return x + jax.random.uniform(keys.batch_key, x.shape)

    before.defvjp(lambda x, k: (before(x, k), None), lambda k, _, g: (g,))

    @jax.custom_vjp
    def after(x: jax.Array, keys: _Keys) -> jax.Array:
        return x + jax.random.uniform(keys.batch_key, x.shape)

    after.defvjp(lambda x, k: (after(x, k), None), lambda _, g: (g, None))

    keys, x = _Keys(jax.random.key(0)), jnp.arange(3.0)
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.jit(jax.grad(lambda x, k: before(x, k).sum()))(x, keys)
    grad = jax.jit(jax.grad(lambda x, k: after(x, k).sum()))(x, keys)
    np.testing.assert_allclose(grad, jax.grad(lambda x: before(x, keys).sum())(x))


@pytest.mark.parametrize(
    "primal",
    [
        "return jax.tree_util.tree_unflatten(a, [x])",
        "return jax.tree_util.tree_unflatten(treedef=a, leaves=[x])",
        "return jax.tree.unflatten(a, [x])",
    ],
)
def test_a_tree_structure_is_static(primal: str) -> None:
    # probjax's adaptive odeint: its `drift_treedef` was VJP002 ("not analysed").
    kind, reasons, _ = classify(primal)
    assert kind is ArgKind.STATIC
    assert any("passed as the tree structure to" in r for r in reasons), reasons


def test_the_leaves_given_to_tree_unflatten_say_nothing_static() -> None:
    kind, reasons, _ = classify("return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(x), [a])")
    assert kind is not ArgKind.STATIC, reasons


def test_a_tree_structure_cannot_be_a_tracer() -> None:
    treedef = jax.tree_util.tree_structure((1.0, 2.0))
    with pytest.raises(TypeError, match="PyTreeDef"):
        jax.jit(lambda t: t)(treedef)


# Places that take an int JAX needs concrete (a population or bin count) or an array as data.
SIZE_OR_DATA = [
    ("jax.random.permutation(jax.random.key(0), a) + x[0, 0]", 5, jnp.arange(5.0)),
    ("jax.random.choice(jax.random.key(0), a, (2,)) + x[0, 0]", 5, jnp.arange(5.0)),
    ("jnp.histogram(x, a)[0]", 4, jnp.array([0.0, 0.3, 0.9])),
    ("jnp.histogram(x, bins=a)[0]", 4, jnp.array([0.0, 0.3, 0.9])),
    ("jnp.histogram2d(x[0], x[1], a)[0]", 2, jnp.array([0.0, 0.5, 1.0])),
]


@pytest.mark.parametrize(("expr", "count", "array"), SIZE_OR_DATA, ids=[e for e, _, _ in SIZE_OR_DATA])
def test_a_place_taking_a_concrete_count_or_an_array_is_never_a_safe_fix(
    expr: str, count: int, array: jax.Array
) -> None:
    # `jax.random.choice(key, n_rows, ...)` was array data: a safe VJP001 whose rewrite broke jax.jit.
    for primal in (f"return {expr}", f"return {expr} * a"):
        kind, reasons, _ = classify(primal)
        assert kind is ArgKind.UNKNOWN, reasons
        assert any("which takes a concrete int or an array there" in r for r in reasons), reasons
    function = eval(f"lambda x, a: {expr}", {"jax": jax, "jnp": jnp})
    function(X, count)
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(function)(X, count)
    assert jnp.allclose(jax.jit(function)(X, array), function(X, array))


def test_a_count_computed_from_the_argument_for_such_a_place_is_a_doubt() -> None:
    kind, reasons, _ = classify("return jax.random.permutation(jax.random.key(0), a + 1) + x")
    assert kind is ArgKind.UNKNOWN, reasons
    assert any("may be needed concretely through `a + 1`" in r for r in reasons), reasons


def _jitted_rule_site(fwd_jit: str = "", primal_jit: str = "", bwd_jit: str = "") -> str:
    """`a` reaches only `kernel`, a function of another module: no use of it says anything."""
    code = HEADER + "from kernels import kernel\n"
    code += f"@partial(jax.custom_vjp, nondiff_argnums=(1,))\n{primal_jit}def f(x, a):\n    return kernel(x, a)\n"
    code += f"{fwd_jit}def f_fwd(x, a):\n    return kernel(x, a), x\n"
    code += f"{bwd_jit}def f_bwd(a, x, g):\n    return (kernel(g, a),)\n"
    return code + "f.defvjp(f_fwd, f_bwd)\n"


@pytest.mark.parametrize(
    ("jits", "role"),
    [
        pytest.param({"fwd_jit": "@jax.jit\n"}, "fwd `f_fwd`", id="fwd"),
        pytest.param({"bwd_jit": "@jax.jit\n"}, "bwd `f_bwd`", id="bwd"),
        pytest.param({"primal_jit": "@jax.jit\n"}, "the primal `f`", id="stacked on the primal"),
        pytest.param({"fwd_jit": "@partial(jax.jit, static_argnums=0)\n"}, "fwd `f_fwd`", id="another position"),
        pytest.param({"fwd_jit": '@partial(jax.jit, static_argnames=("x",))\n'}, "fwd `f_fwd`", id="another name"),
    ],
)
def test_an_argument_a_jit_traces_is_a_jax_value(jits: dict[str, str], role: str) -> None:
    # `a` used to be unknown ("passed to `kernel`, which is not analysed"). Through a jit that
    # does not mark it static it is a Tracer in that function: no string, callable or object,
    # and nothing there needs it concrete. None or a tuple of ints pass too: weak, never a safe fix.
    info = _unscreened(_jitted_rule_site(**jits))
    assert (info.kind, info.strong) == (ArgKind.ARRAY, False), info.evidence
    assert f"traced by the jax.jit of {role}, which does not mark it static" in [e.text for e in info.evidence]


@pytest.mark.parametrize(
    "fwd_jit",
    [
        pytest.param("@partial(jax.jit, static_argnums=STATIC)\n", id="not a literal"),
        pytest.param("@partial(jax.jit, static_argnames=NAMES)\n", id="names not a literal"),
    ],
)
def test_a_jit_whose_static_arguments_are_not_literals_is_never_a_safe_fix(fwd_jit: str) -> None:
    # `static_argnums=STATIC` may mark `a`: arithmetic in every function used to make it a safe fix.
    kind, reasons = _rule_jit_site(fwd_jit, "")
    assert kind is ArgKind.UNKNOWN, reasons
    assert "the jax.jit of fwd `f_fwd` names its static arguments by other than literals: it may be one" in reasons
    assert _unscreened(_jitted_rule_site(fwd_jit=fwd_jit)).kind is ArgKind.UNKNOWN


def test_concrete_uses_elsewhere_still_make_a_jit_traced_argument_static() -> None:
    code = _jitted_rule_site(fwd_jit="@jax.jit\n").replace("return (kernel(g, a),)", "return (g * len(range(a)),)")
    info = _unscreened(code)
    assert info.kind is ArgKind.STATIC, info.evidence


def test_the_screen_keeps_an_argument_a_jit_traces() -> None:
    assert classified(_jitted_rule_site(fwd_jit="@jax.jit\n")).kind is ArgKind.ARRAY


@pytest.mark.parametrize(
    ("value", "error"),
    [
        pytest.param("mode", TypeError, id="string"),
        pytest.param(jnp.sin, TypeError, id="callable"),
        pytest.param(3, TypeError, id="int used as a shape"),
    ],
)
def test_a_jitted_fwd_rejects_a_static_setting_in_nondiff_argnums(value: object, error: type[Exception]) -> None:
    f = jax.custom_vjp(lambda x, s: x * 2.0, nondiff_argnums=(1,))
    fwd = jax.jit(lambda x, s: (x * 2.0 + jnp.zeros(s).sum() if isinstance(value, int) else x * 2.0, None))
    f.defvjp(fwd, lambda s, _, g: (g * 2.0,))
    with pytest.raises(error):
        jax.grad(f)(1.0, value)


def test_a_value_a_jitted_fwd_takes_works_as_a_regular_argument() -> None:
    before = jax.custom_vjp(lambda x, s: x * s, nondiff_argnums=(1,))
    before.defvjp(jax.jit(lambda x, s: (x * s, None)), lambda s, _, g: (g * s,))
    after = jax.custom_vjp(lambda x, s: x * s)
    after.defvjp(jax.jit(lambda x, s: (x * s, s)), lambda s, g: (g * s, None))
    assert float(jax.grad(before)(1.0, 3.0)) == float(jax.grad(after)(1.0, 3.0)) == 3.0
    assert float(jax.jit(jax.grad(after))(1.0, 3.0)) == 3.0
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.jit(jax.grad(before))(1.0, 3.0)


@pytest.mark.parametrize(
    ("fwd_jit", "bwd_jit", "role"),
    [
        pytest.param("@partial(jax.jit, static_argnums=-1)\n", "", "fwd `f_fwd`", id="fwd -1"),
        pytest.param("", "@partial(jax.jit, static_argnums=(-3,))\n", "bwd `f_bwd`", id="bwd (-3,)"),
        pytest.param("", "@partial(jax.jit, static_argnums=[2, -3])\n", "bwd `f_bwd`", id="bwd [2, -3]"),
    ],
)
def test_a_negative_static_argnums_of_a_rules_jit_counts_from_the_end(fwd_jit: str, bwd_jit: str, role: str) -> None:
    # `static_argnums=-1` was no literal the site parser read: arithmetic made `a` array data and
    # a safe fix, a needless rewrite of working code, since that jit never takes a Tracer there
    # (the JAX check below); then it was "unknown".
    kind, reasons = _rule_jit_site(fwd_jit, bwd_jit)
    assert kind is ArgKind.STATIC, reasons
    assert f"static in the jax.jit of {role}, which needs it hashable (an array is not)" in reasons


def test_a_negative_static_argnums_that_misses_the_argument_leaves_it_traced() -> None:
    kind, reasons = _rule_jit_site("", "@partial(jax.jit, static_argnums=(-1,))\n")
    assert kind is ArgKind.ARRAY, reasons
    assert any(r.startswith("traced by the jax.jit of bwd `f_bwd`") for r in reasons), reasons


def test_a_negative_static_argnums_marks_the_last_argument_static() -> None:
    moved = jax.custom_vjp(lambda x, a: x * a)
    moved.defvjp(jax.jit(lambda x, a: (x * a, a), static_argnums=-1), lambda a, g: (g * a, None))
    assert float(jax.grad(moved)(1.0, 2.0)) == 2.0
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        jax.jit(jax.grad(moved))(1.0, 2.0)


ENUMS = (
    "import enum\nfrom enum import IntEnum\n"
    "class Mode(enum.Enum):\n    FAST = 'fast'\n    EXACT = 'exact'\n"
    "class Fancy(Mode):\n    pass\n"
    "class Level(IntEnum):\n    LOW = 1\n"
)


@pytest.mark.parametrize(
    ("test", "enum"),
    [
        pytest.param("a is Mode.FAST", "Mode", id="is"),
        pytest.param("a is not Mode.FAST", "Mode", id="is not"),
        pytest.param("a == Mode.EXACT", "Mode", id="=="),
        pytest.param("Fancy.FAST != a", "Fancy", id="a subclass, on the left"),
    ],
)
def test_an_argument_compared_with_a_member_of_a_module_enum_is_static(test: str, enum: str) -> None:
    # TransformerEngine's `if softmax_type is SoftmaxType.SCALED_MASKED:` left `softmax_type`
    # unknown with no reason at all (`is` tests say nothing, for `x is None`).
    kind, reasons, _ = classify(f"return jnp.where({test}, x, 2 * x)", extra=ENUMS)
    assert kind is ArgKind.STATIC
    assert f"compared with a member of the enum `{enum}` in the primal `f`" in reasons


@pytest.mark.parametrize(
    "test",
    [
        pytest.param("a == Level.LOW", id="an IntEnum: its members are ints"),
        pytest.param("a == Other.FAST", id="an imported class"),
        pytest.param("a == mode.FAST", id="a lower-case name"),
    ],
)
def test_other_attribute_comparisons_say_nothing_static(test: str) -> None:
    code = ENUMS + "from elsewhere import Other\n"
    kind, reasons, _ = classify(f"return x * ({test})", extra=code)
    assert kind is ArgKind.ARRAY, reasons
    assert not any("enum" in r for r in reasons)


def test_an_enum_member_is_no_regular_argument_of_a_custom_vjp() -> None:
    import enum

    class Mode(enum.Enum):
        FAST = "fast"

    def scale(mode: Mode, x: jax.Array) -> jax.Array:
        return x * 2.0 if mode is Mode.FAST else x

    kept = jax.custom_vjp(scale, nondiff_argnums=(0,))
    kept.defvjp(lambda mode, x: (scale(mode, x), None), lambda mode, _, g: (g * 2.0 if mode is Mode.FAST else g,))
    assert float(jax.jit(jax.grad(kept, argnums=1), static_argnums=0)(Mode.FAST, 1.0)) == 2.0
    moved = jax.custom_vjp(scale)
    moved.defvjp(lambda mode, x: (scale(mode, x), mode), lambda mode, g: (None, g * 2.0))
    with pytest.raises(TypeError):
        jax.grad(moved, argnums=1)(Mode.FAST, 1.0)
    assert not bool(jnp.ones(2) == Mode.FAST)  # an array is never a member: the branch silently flips


ONE_LINE_RULES = """\
from functools import partial
import jax

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def f(s, x):
    return x

def f_fwd(s, x): return f(s, x), None

def f_bwd(s, _, g): return (BWD,)

f.defvjp(f_fwd, f_bwd)
"""


@pytest.mark.parametrize(
    ("bwd", "kind"),
    [
        pytest.param("g * s", ArgKind.ARRAY, id="arithmetic"),
        pytest.param("sum(g for _ in range(s))", ArgKind.STATIC, id="range"),
        pytest.param("g", ArgKind.UNKNOWN, id="no use"),
    ],
)
def test_a_one_line_rule_is_read(bwd: str, kind: ArgKind) -> None:
    # `def f_bwd(s, _, g): return (g * s,)` has a suite for a body, not a block: it was never read
    info = classified(ONE_LINE_RULES.replace("BWD", bwd))
    assert info.kind is kind, info.evidence
    if kind is not ArgKind.UNKNOWN:
        assert any("bwd `f_bwd`" in e.text for e in info.evidence), info.evidence


def _star_args_site(
    primal: str, fwd: str = "return f(x, *args), x", bwd: str = "w, x, g = args\n    return (g,)"
) -> str:
    """A site whose nondiff position 1 falls in the primal's (and fwd's, and bwd's) ``*args``."""
    return HEADER + (
        f"@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef f(x, *args):\n    {primal}\n"
        f"def f_fwd(x, *args):\n    {fwd}\ndef f_bwd(*args):\n    {bwd}\nf.defvjp(f_fwd, f_bwd)\n"
    )


@pytest.mark.parametrize(
    ("primal", "fwd", "bwd", "reason"),
    [
        pytest.param("return x * args[0]", "return f(x, *args), x", "w, x, g = args\n    return (g,)",
                     "used in arithmetic in the primal `f`", id="primal"),
        pytest.param("return x", "return f(x, *args), x * args[0]", "w, x, g = args\n    return (g,)",
                     "used in arithmetic in fwd `f_fwd`", id="fwd"),
        pytest.param("return x", "w = args[0]\n    return f(x, *args), x * w", "w, x, g = args\n    return (g,)",
                     "used in arithmetic in fwd `f_fwd`", id="fwd alias"),
        pytest.param("return x", "return f(x, *args), x", "w, x, g = args\n    return (g * w,)",
                     "used in arithmetic in bwd `f_bwd`", id="bwd unpacks"),
    ],
)  # fmt: skip
def test_an_item_of_star_args_read_by_its_index_is_the_argument(primal: str, fwd: str, bwd: str, reason: str) -> None:
    # `x * args[0]` is the nondiff argument at position 1 used as array data: it breaks under jit.
    info = classified(_star_args_site(primal, fwd, bwd))
    assert (info.name, info.kind, info.strong) == ("args[0]", ArgKind.ARRAY, True), info.evidence
    assert reason in [e.text for e in info.evidence]


@pytest.mark.parametrize(
    ("primal", "reason"),
    [
        pytest.param("return args[0](x)", "called as a function", id="called"),
        pytest.param("return jnp.sum(x, axis=args[0])", "passed as `axis=`", id="axis"),
        pytest.param("n = args[0] + 1\n    return x[:n] * args[0]", "used as a slice bound", id="derived local"),
    ],
)
def test_an_item_of_star_args_has_the_static_uses_of_a_parameter(primal: str, reason: str) -> None:
    info = classified(_star_args_site(primal))
    assert info.kind is ArgKind.STATIC and any(reason in e.text for e in info.evidence), info.evidence


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param("return x * args[1]", id="another item"),
        pytest.param("return x * len(args)", id="the whole"),
        pytest.param("def inner(*args):\n        return x * args[0]\n    return inner(2.0)", id="shadowed"),
    ],
)
def test_other_reads_of_star_args_are_not_the_argument(primal: str) -> None:
    assert classified(_star_args_site(primal)).kind is ArgKind.UNKNOWN


def test_an_item_of_star_args_in_nondiff_argnums_fails_under_jit() -> None:
    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def f(x: jax.Array, *args: jax.Array) -> jax.Array:
        return x * args[0]

    f.defvjp(lambda x, *args: (f(x, *args), x), lambda w, x, g: (g * w,))
    assert jax.grad(f)(1.0, 3.0) == 3.0
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.jit(jax.grad(f))(1.0, 3.0)


@pytest.mark.parametrize(
    ("primal", "bwd"),
    [
        pytest.param(
            lines("if not callable(a):", "    return jnp.where(a, x, 0.0)", "return jnp.where(a(x), x, 0.0)"),
            "return (g * a,)",
            id="mask or mask function",
        ),
        pytest.param(
            lines("if not callable(a): return jnp.where(a, x, 0.0)", "return jnp.where(a(x), x, 0.0)"),
            "return (jnp.where(a, g, 0.0),)",
            id="one-line if",
        ),
        pytest.param(
            lines("if isinstance(a, float):", "    return x * a", "return x * a(x)"), "return (g * a,)", id="number"
        ),
        pytest.param(
            lines("if not callable(a):", "    return x * a", "else:", "    y = x", "return x * a(x)"),
            "return (g * a,)",
            id="returns, with an else",
        ),
        pytest.param(
            lines("if callable(a):", "    y = x", "else:", "    return jnp.where(a, x, 0.0)", "return x * a(x)"),
            "return (g * a,)",
            id="the else returns",
        ),
        pytest.param(
            lines(
                "if x.ndim == 0:",
                "    return x",
                "elif not callable(a):",
                "    return jnp.where(a, x, 0.0)",
                "return jnp.where(a(x), x, 0.0)",
            ),
            "return (g * a,)",
            id="elif after a returning if",
        ),
    ],
)
def test_a_static_use_after_an_early_return_a_type_test_picks_does_not_hide_array_data(primal: str, bwd: str) -> None:
    # `if not callable(m): return jnp.where(m, ...)` then `m(x)`: the call runs only for a function;
    # an array mask took the early return, and it fails under jit in nondiff_argnums.
    info = classified(site_module(primal, bwd))
    assert (info.kind, info.strong, info.fixable) == (ArgKind.ARRAY, False, False), info.evidence
    assert any("called as a function" in e.text and "early return" in e.text for e in info.evidence), info.evidence


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param(
            lines(
                "out = x",
                "for i in range(2):",
                "    if not callable(a):",
                "        out = jnp.where(a, out, 0.0)",
                "        continue",
                "    out = jnp.where(a(out), out, 0.0)",
                "return out",
            ),
            id="continue",
        ),
        pytest.param(
            lines(
                "out = x",
                "for i in range(2):",
                "    if callable(a):",
                "        out = jnp.where(a(out), out, 0.0)",
                "    else:",
                "        out = jnp.where(a, out, 0.0)",
                "        continue",
                "    out = out * a(out)",
                "return out",
            ),
            id="the else continues",
        ),
        pytest.param(
            lines(
                "out = x",
                "while True:",
                "    if not callable(a):",
                "        out = jnp.where(a, out, 0.0)",
                "        break",
                "    out = jnp.where(a(out), out, 0.0)",
                "    break",
                "return out",
            ),
            id="break",
        ),
        pytest.param(
            lines(
                "out = x",
                "for i in range(2):",
                "    if callable(a):",
                "        out = jnp.where(a(out), out, 0.0)",
                "    else:",
                "        out = jnp.where(a, out, 0.0)",
                "        break",
                "    out = out * a(out)",
                "return out",
            ),
            id="the else breaks",
        ),
    ],
)
def test_a_static_use_after_a_continue_a_type_test_picks_does_not_hide_array_data(primal: str) -> None:
    # `break` leaves the rest of the loop body unrun as `continue` does: it runs for a function only.
    info = classified(site_module(primal, "return (jnp.where(a, g, 0.0),)"))
    how = "a `break`" if "break" in primal else "a `continue`"
    assert (info.kind, info.strong, info.fixable) == (ArgKind.ARRAY, False, False), info.evidence
    assert any("called as a function" in e.text and how in e.text for e in info.evidence), info.evidence


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param(
            lines("if not isinstance(a, int):", "    raise TypeError('a must be an int')", "return x * len(range(a))"),
            id="raise",
        ),
        pytest.param(lines("if not isinstance(a, int):", "    return x", "return x * len(range(a))"), id="ignored"),
        pytest.param(
            lines("if x.ndim == 1:", "    if not callable(a):", "        return x * a", "return x * a(x)"),
            id="returned from an inner block",
        ),
        pytest.param(lines("if not callable(a):", "    y = x * a", "return x * a(x)"), id="no return"),
        pytest.param(
            lines(
                "if callable(a):",
                "    y = a(x)",
                "else:",
                "    raise TypeError('a must be callable')",
                "return x * a(x)",
            ),
            id="else raises",
        ),
        pytest.param(
            lines("if callable(a):", "    y = x", "else:", "    return x", "return x * a(x)"), id="else ignores it"
        ),
        pytest.param(
            lines("for i in range(2):", "    if not callable(a):", "        continue", "    x = a(x)", "return x"),
            id="continue ignoring it",
        ),
        pytest.param(
            lines("for i in range(2):", "    if not callable(a):", "        break", "    x = a(x)", "return x"),
            id="break ignoring it",
        ),
        pytest.param(
            lines(
                "for i in range(2):",
                "    if not callable(a):",
                "        x = x * a",
                "        break",
                "    x = a(x)",
                "return x * a(x)",
            ),
            id="after the loop a break left",
        ),
        pytest.param(
            lines("if callable(a):", "    y = x", "else:", "    return x * a", "return x * a(x)").replace(
                "if callable(a):", "if x.ndim == 1:"
            ),
            id="else exits, no type test",
        ),
        pytest.param(
            lines("if x.ndim == 1:", "    x = x[None]", "elif not callable(a):", "    return x * a", "return x * a(x)"),
            id="elif",
        ),
    ],
)
def test_a_static_use_after_a_validation_or_outside_the_returning_block_still_decides(primal: str) -> None:
    # A type test that raises validates the setting: every call that returns needs it concrete.
    kind, reasons, _ = classify(primal, "return (g * a,)")
    assert kind is ArgKind.STATIC, reasons
    assert not any("early return" in r for r in reasons), reasons


def test_a_mask_that_takes_the_else_a_continue_or_a_break_fails_under_jit_in_nondiff_argnums() -> None:
    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def masked(x: jax.Array, mask: jax.Array) -> jax.Array:
        if callable(mask):
            mask = mask(x)
        else:
            return jnp.where(mask, x, 0.0)
        return jnp.where(mask, x, 0.0)

    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def rows(x: jax.Array, mask: jax.Array) -> jax.Array:
        out = []
        for row in x:
            if not callable(mask):
                out.append(jnp.where(mask, row, 0.0))
                continue
            out.append(jnp.where(mask(row), row, 0.0))
        return jnp.stack(out)

    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def all_rows(x: jax.Array, mask: jax.Array) -> jax.Array:
        out = []
        for row in x:
            if not callable(mask):
                out = [jnp.where(mask, r, 0.0) for r in x]
                break
            out.append(jnp.where(mask(row), row, 0.0))
        return jnp.stack(out)

    _fails_under_jit_for_an_array_mask(masked)
    _fails_under_jit_for_an_array_mask(rows)
    _fails_under_jit_for_an_array_mask(all_rows)


def _fails_under_jit_for_an_array_mask(f: jax.custom_vjp[jax.Array]) -> None:
    def fwd(x: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
        return f(x, mask), x

    f.defvjp(fwd, lambda mask, x, g: (jnp.where(mask(x) if callable(mask) else mask, g, 0.0),))
    x = jnp.arange(3.0)[None]
    assert jax.grad(lambda x: f(x, lambda v: v > 0.5).sum())(x).tolist() == [[0.0, 1.0, 1.0]]
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.jit(jax.grad(lambda x, m: f(x, m).sum()))(x, x > 0.5)


def test_a_mask_that_takes_the_early_return_fails_under_jit_in_nondiff_argnums() -> None:
    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def masked(x: jax.Array, mask: jax.Array) -> jax.Array:
        if not callable(mask):
            return jnp.where(mask, x, 0.0)
        return jnp.where(mask(x), x, 0.0)

    def fwd(x: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
        return masked(x, mask), mask if not callable(mask) else mask(x)

    masked.defvjp(fwd, lambda _, chosen, g: (jnp.where(chosen, g, 0.0),))
    x = jnp.arange(3.0)
    assert jax.grad(lambda x: masked(x, lambda v: v > 0.5).sum())(x).tolist() == [0.0, 1.0, 1.0]
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.jit(jax.grad(lambda x, m: masked(x, m).sum()))(x, x > 0.5)


@pytest.mark.parametrize(
    "caller",
    [
        pytest.param("@jax.jit\ndef run(x, w):\n    s = w * 2.0\n    return f(s, x)\n", id="through a local"),
        pytest.param("@jax.jit\ndef run(x, w):\n    s = w * 2.0\n    t = -s\n    return f(t, x)\n", id="two locals"),
        pytest.param("def run(x, w):\n    return f(w * 2.0, x)\nrun = jax.jit(run)\n", id="run = jax.jit(run)"),
        pytest.param("def run(x, w):\n    return f(w, x)\ny = jax.jit(run)(1.0, 2.0)\n", id="jax.jit(run)(...)"),
        pytest.param(
            "def run(x, w, n):\n    s = w / n\n    return f(s, x)\nrun = jax.jit(run, static_argnums=(2,))\n",
            id="call form next to static, through a local",
        ),
    ],
)
def test_a_traced_parameter_reaches_the_call_through_a_local_or_a_jit_call(caller: str) -> None:
    info = _unscreened(_SCALE_SITE.replace("return x * a\n", "return x * 2.0\n", 1) + caller)
    assert any("a traced value (from the parameter `w` of the jitted `run`" in e.text for e in info.evidence), info


@pytest.mark.parametrize(
    "caller",
    [
        pytest.param(
            '@partial(jax.jit, static_argnames=("w",))\ndef run(x, w):\n    s = w * 2.0\n    return f(s, x)\n',
            id="local of a static parameter",
        ),
        pytest.param("@jax.jit\ndef run(x, w):\n    s = w * 2.0\n    s = 3.0\n    return f(s, x)\n", id="bound twice"),
        pytest.param("@jax.jit\ndef run(x, w):\n    s = float(w)\n    return f(s, x)\n", id="converted"),
        pytest.param("def run(x, w):\n    s = w * 2.0\n    return f(s, x)\n", id="local, not jitted"),
        pytest.param(
            "def run(x, w):\n    return f(w, x)\nrun = jax.jit(run, static_argnums=(1,))\n", id="call, static"
        ),
        pytest.param(
            "def run(x, w):\n    return f(w, x)\nrun = jax.jit(run, static_argnames='w')\n", id="call, by name"
        ),
        pytest.param(
            "def run(x, w):\n    return f(w, x)\nrun = jax.jit(run, static_argnums=S)\n", id="call, not literal"
        ),
        pytest.param("def run(x, w):\n    return f(w, x)\ndef g(run):\n    return jax.jit(run)\n", id="call, shadowed"),
    ],
)
def test_a_local_or_a_jit_call_that_traces_nothing_is_no_call_site_evidence(caller: str) -> None:
    info = _unscreened(_SCALE_SITE.replace("return x * a\n", "return x * 2.0\n", 1) + caller)
    assert not any("traced" in e.text for e in info.evidence), info.evidence


_LOOP = "@jax.jit\ndef run(x, ws):\n    out = 0.0\n    for {target} in {sequence}:\n        out = out + f({value}, x)\n    return out\n"


@pytest.mark.parametrize(
    ("caller", "through"),
    [
        pytest.param(_LOOP.format(target="w", sequence="ws", value="w"), "`w`", id="for w in ws"),
        pytest.param(
            _LOOP.format(target="i, w", sequence="enumerate(ws)", value="w * i"), "`w`", id="for i, w in enumerate(ws)"
        ),
        pytest.param(
            _LOOP.format(target="b, w", sequence="zip(x, ws)", value="w + b"), "`w`", id="for b, w in zip(x, ws)"
        ),
        pytest.param(
            "@jax.jit\ndef run(x, ws):\n    return sum(f(w * 2.0, x) for w in ws)\n", "`w`", id="comprehension"
        ),
        pytest.param("@jax.jit\ndef run(x, ws):\n    w, b = ws\n    return f(w, x) + b\n", "`w`", id="unpacked"),
        pytest.param(
            "def doubled(v):\n    return v * 2.0\n@jax.jit\ndef run(x, ws):\n    return f(doubled(ws), x)\n",
            "`doubled(...)`",
            id="helper",
        ),
        pytest.param(
            "def scaled(v, k=2.0):\n    return k * v\n@jax.jit\ndef run(x, ws):\n    return f(scaled(k=3.0, v=ws), x)\n",
            "`scaled(...)`",
            id="helper by keyword",
        ),
        pytest.param(
            "def doubled(v):\n    return v * 2.0\n@jax.jit\ndef run(x, ws):\n    for w in ws:\n        x = f(doubled(w), x)\n"
            "    return x\n",
            "`doubled(...)`",
            id="helper in a loop",
        ),
        pytest.param(_LOOP.format(target="w", sequence="(ws, 2.0)", value="w"), "`w`", id="literal tuple holding it"),
        pytest.param(
            _LOOP.format(target="w", sequence="[2.0, ws * 3.0]", value="w"), "`w`", id="literal list, arithmetic"
        ),
        pytest.param(_LOOP.format(target="w", sequence="(*ws, 1.0)", value="w"), "`w`", id="literal, starred"),
        pytest.param(
            _LOOP.format(target="i, w", sequence="enumerate((1.0, ws))", value="w"), "`w`", id="enumerate of a literal"
        ),
        pytest.param(
            "def scaled(v, flip):\n    if flip:\n        return -v\n    return v * 2.0\n"
            "@jax.jit\ndef run(x, ws):\n    return f(scaled(ws, True), x)\n",
            "`scaled(...)`",
            id="helper with two returns",
        ),
        pytest.param(
            "def mixed(v, s):\n    if s > 0:\n        return v * s\n    return -s * v\n"
            "@jax.jit\ndef run(x, ws):\n    return f(mixed(ws, 2.0), x)\n",
            "`mixed(...)`",
            id="helper with two returns, two names in each",
        ),
        pytest.param(
            _LOOP.replace("    out = 0.0\n", "    out = 0.0\n    pair = (ws, 2.0)\n").format(
                target="w", sequence="pair", value="w"
            ),
            "`w`",
            id="a local bound to a literal tuple",
        ),
        pytest.param(
            _LOOP.replace("    out = 0.0\n", "    out = 0.0\n    pair: tuple = 1.0, *ws\n").format(
                target="i, w", sequence="enumerate(pair)", value="w"
            ),
            "`w`",
            id="enumerate of a local bound to a literal tuple",
        ),
    ],
)
def test_a_traced_parameter_reaches_the_call_through_a_loop_or_a_helper(caller: str, through: str) -> None:
    # jit traces every leaf of `ws`: its items, its unpacked parts and arithmetic on them are Tracers.
    info = _unscreened(_SCALE_SITE.replace("return x * a\n", "return x * 2.0\n", 1) + caller)
    want = f"a traced value (from the parameter `ws` of the jitted `run`, through {through})"
    assert any(want in e.text for e in info.evidence), info.evidence


@pytest.mark.parametrize(
    "caller",
    [
        pytest.param(_LOOP.format(target="w", sequence="range(3)", value="w"), id="range"),
        pytest.param(_LOOP.format(target="w", sequence="(1.0, 2.0)", value="w"), id="literal tuple"),
        pytest.param(
            _LOOP.format(target="w", sequence="(ws.shape[0], len(ws), ws.ndim)", value="w"), id="literal of shapes"
        ),
        pytest.param(_LOOP.format(target="w", sequence="[(ws, 2.0)]", value="w"), id="literal of a tuple holding it"),
        pytest.param(_LOOP.format(target="w, v", sequence="enumerate(ws)", value="w"), id="enumerate's index"),
        pytest.param(_LOOP.format(target="w", sequence="ws.keys()", value="w"), id="keys"),
        pytest.param(
            _LOOP.replace("out + f(", "out * ws[w] + f(").format(target="w", sequence="ws", value="w"),
            id="keys looked up",
        ),
        pytest.param(
            _LOOP.replace("ws):", "ws: dict[str, float]):").format(target="w", sequence="ws", value="w"), id="dict"
        ),
        pytest.param(
            _LOOP.replace("ws):", 'ws: "dict[str, float]"):').format(target="w", sequence="ws", value="w"),
            id="dict in a string",
        ),
        pytest.param(
            _LOOP.replace("ws):", "ws: 'Mapping[str, jax.Array]'):").format(target="w", sequence="ws", value="w"),
            id="Mapping in a string",
        ),
        pytest.param(
            _LOOP.replace("@jax.jit", "@partial(jax.jit, static_argnums=(1,))").format(
                target="w", sequence="ws", value="w"
            ),
            id="static",
        ),
        pytest.param(
            _LOOP.replace("out = 0.0", "out = w = 0.0").format(target="w", sequence="ws", value="w"), id="bound twice"
        ),
        pytest.param(
            "def one(v):\n    return 1.0\n@jax.jit\ndef run(x, ws):\n    return f(one(ws), x)\n", id="constant"
        ),
        pytest.param(
            "def size(v):\n    return v.shape[0]\n@jax.jit\ndef run(x, ws):\n    return f(size(ws), x)\n", id="shape"
        ),
        pytest.param(
            "def pick(v, flag):\n    if flag:\n        return v\n    return 1.0\n"
            "@jax.jit\ndef run(x, ws):\n    return f(pick(ws, True), x)\n",
            id="two returns",
        ),
        pytest.param(
            "def halved(v):\n    v = 1.0\n    return v / 2\n@jax.jit\ndef run(x, ws):\n    return f(halved(ws), x)\n",
            id="helper rebinds it",
        ),
        pytest.param(
            "def pick(v, s):\n    if s:\n        return v * 2.0\n    return s\n"
            "@jax.jit\ndef run(x, ws):\n    return f(pick(ws, 1.0), x)\n",
            id="two returns, one without it",
        ),
        pytest.param(
            "def pick(v, s):\n    if s:\n        return v * 2.0\n    return\n"
            "@jax.jit\ndef run(x, ws):\n    return f(pick(ws, 1.0), x)\n",
            id="two returns, one bare",
        ),
        pytest.param(
            _LOOP.replace("    out = 0.0\n", "    out = 0.0\n    pair = (ws, 2.0)\n    pair = (1.0, 2.0)\n").format(
                target="w", sequence="pair", value="w"
            ),
            id="a local tuple rebound",
        ),
        pytest.param(
            _LOOP.replace("    out = 0.0\n", "    out = 0.0\n    pair = [ws, 2.0]\n    pair[0] = 1.0\n").format(
                target="w", sequence="pair", value="w"
            ),
            id="a local list changed in place",
        ),
        pytest.param(
            _LOOP.replace("    out = 0.0\n", "    out = 0.0\n    pair = (ws.shape[0], 2.0)\n").format(
                target="w", sequence="pair", value="w"
            ),
            id="a local tuple of shapes",
        ),
        pytest.param(
            "def doubled(v):\n    return v * 2.0\n@partial(jax.jit, static_argnums=(1,))\ndef run(x, ws):\n"
            "    return f(doubled(ws), x)\n",
            id="helper of a static parameter",
        ),
    ],
)
def test_a_loop_or_a_helper_that_carries_no_traced_value_is_no_call_site_evidence(caller: str) -> None:
    info = _unscreened(_SCALE_SITE.replace("return x * a\n", "return x * 2.0\n", 1) + caller)
    assert not any("traced" in e.text for e in info.evidence), info.evidence


def test_items_of_a_traced_sequence_and_a_helpers_result_are_tracers_in_nondiff_argnums() -> None:
    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(a: jax.Array, x: jax.Array) -> jax.Array:
        return x * a

    f.defvjp(lambda a, x: (f(a, x), None), lambda a, _, g: (g * a,))

    def doubled(v: jax.Array) -> jax.Array:
        return v * 2.0

    def loop(x: jax.Array, ws: tuple[jax.Array, ...]) -> jax.Array:
        return sum((f(w, x) for w in ws), start=jnp.zeros(()))

    def helper(x: jax.Array, ws: jax.Array) -> jax.Array:
        return f(doubled(ws), x)

    def counted(x: jax.Array, ws: jax.Array) -> jax.Array:
        return sum((f(float(n), x) for n in range(3)), start=jnp.zeros(()))

    assert jax.grad(jax.jit(counted))(1.0, 0.0) == 3.0  # a Python int loop variable stays a Python value
    for run, ws in ((loop, (2.0, 3.0)), (helper, 2.0)):
        with pytest.raises(jax.errors.UnexpectedTracerError):
            jax.grad(jax.jit(run))(1.0, ws)


def test_items_of_a_literal_holding_a_traced_value_are_tracers_in_nondiff_argnums() -> None:
    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(a: jax.Array, x: jax.Array) -> jax.Array:
        return x * a

    f.defvjp(lambda a, x: (f(a, x), None), lambda a, _, g: (g * a,))

    def literal(x: jax.Array, w: jax.Array) -> jax.Array:
        return sum((f(v, x) for v in (2.0, w)), start=jnp.zeros(()))

    def constants(x: jax.Array, w: jax.Array) -> jax.Array:
        return sum((f(v, x) for v in (2.0, 3.0)), start=jnp.zeros(())) * w

    assert jax.grad(jax.jit(constants))(1.0, 2.0) == 10.0
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.grad(jax.jit(literal))(1.0, 2.0)


@pytest.mark.parametrize(
    "caller",
    [
        pytest.param(
            "def run(x, w, scale):\n    return f(w * scale, x)\nfast = jax.jit(partial(run, scale=2.0))\n",
            id="partial binding another keyword",
        ),
        pytest.param(
            "import functools\ndef run(s, x, w):\n    return f(w, x) * s\n"
            "fast = jax.jit(functools.partial(run, 2.0))\n",
            id="functools.partial binding another position",
        ),
        pytest.param(
            "def run(s, x, w, n):\n    return f(w, x) * s * n\nfast = jax.jit(partial(run, 2.0), static_argnums=(2,))\n",
            id="static_argnums counted past the bound position",
        ),
    ],
)
def test_a_parameter_a_jitted_partial_leaves_open_is_traced(caller: str) -> None:
    info = _unscreened(_SCALE_SITE.replace("return x * a\n", "return x * 2.0\n", 1) + caller)
    assert any("a traced value (from the parameter `w` of the jitted `run`" in e.text for e in info.evidence), info


@pytest.mark.parametrize(
    "caller",
    [
        pytest.param(
            "def run(x, w, mode):\n    return f(mode, x) * w\nfast = jax.jit(partial(run, mode=2.0))\n",
            id="bound by keyword",
        ),
        pytest.param(
            "import functools\ndef run(w, x):\n    return f(w, x)\nfast = jax.jit(functools.partial(run, 2.0))\n",
            id="bound by position",
        ),
        pytest.param(
            "def run(s, x, w):\n    return f(w, x) * s\nfast = jax.jit(partial(run, 2.0), static_argnums=(1,))\n",
            id="static_argnums counted past the bound position",
        ),
        pytest.param(
            "def run(x, s, w):\n    return f(w, x) * s\nfast = jax.jit(partial(run, s=2.0), static_argnums=(1,))\n",
            id="static_argnums after a keyword-bound position",
        ),
        pytest.param("def run(x, w):\n    return f(w, x)\nfast = jax.jit(partial(run, *ARGS))\n", id="star"),
    ],
)
def test_a_parameter_a_jitted_partial_binds_or_marks_static_is_not_traced(caller: str) -> None:
    info = _unscreened(_SCALE_SITE.replace("return x * a\n", "return x * 2.0\n", 1) + caller)
    assert not any("traced" in e.text for e in info.evidence), info.evidence


def test_a_jitted_partial_traces_what_it_leaves_open_and_passes_what_it_binds() -> None:
    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(a: jax.Array, x: jax.Array) -> jax.Array:
        return x * a

    f.defvjp(lambda a, x: (f(a, x), None), lambda a, _, g: (g * a,))

    def run(x: jax.Array, w: jax.Array, mode: float) -> jax.Array:
        return f(mode, x) + f(w, x)

    assert jax.grad(jax.jit(functools.partial(run, w=3.0, mode=2.0)))(1.0) == 5.0
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.grad(jax.jit(functools.partial(run, mode=2.0)))(1.0, 3.0)


def test_a_value_traced_through_a_local_disagrees_with_a_static_call_site() -> None:
    static = '@partial(jax.jit, static_argnames=("s",))\ndef use_static(x, s):\n    return f(s, x)\n'
    traced = "def use_traced(x, w):\n    s = w * 2.0\n    return f(s, x)\nuse_traced = jax.jit(use_traced)\n"
    info = _unscreened(_SCALE_SITE.replace("return x * a\n", "return x * 2.0\n", 1) + static + traced)
    assert (info.kind, info.strong) == (ArgKind.ARRAY, False), info.evidence


def test_a_value_a_jit_call_traces_is_a_tracer_in_nondiff_argnums() -> None:
    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(a: jax.Array, x: jax.Array) -> jax.Array:
        return x * 2.0

    f.defvjp(lambda a, x: (f(a, x), None), lambda a, _, g: (g * a,))

    def run(x: jax.Array, w: jax.Array) -> jax.Array:
        s = w * 2.0
        return f(s, x)

    assert jax.grad(run)(1.0, 3.0) == 6.0  # unjitted: `s` is a Python float, fine
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.grad(jax.jit(run))(1.0, 3.0)


@pytest.mark.parametrize(
    ("primal", "expected"),
    [
        pytest.param("return x * jnp.ones(math.ceil(a / 4)).sum()", ArgKind.STATIC, id="math.ceil of a quotient"),
        pytest.param("n = math.floor(a)\n    return x * n", ArgKind.STATIC, id="math.floor through a local"),
        pytest.param("return x * math.sqrt(a)", ArgKind.STATIC, id="math.sqrt"),
        pytest.param("return x * math.prod(a)", ArgKind.UNKNOWN, id="math.prod only multiplies: not claimed"),
    ],
)
def test_a_math_function_needs_a_python_number(primal: str, expected: ArgKind) -> None:
    # pkgprobe23 G2 (ott-jax's `jnp.ones(math.ceil(max_iterations / inner_iterations))`).
    kind, reasons, _ = classify(primal, extra="import math\n")
    assert kind is expected, reasons
    if expected is ArgKind.STATIC:
        assert any("passed to `math." in r for r in reasons), reasons


def test_math_functions_fail_on_a_tracer_and_math_prod_does_not() -> None:
    for function in (math.ceil, math.floor, math.sqrt, math.log):
        with pytest.raises(jax.errors.ConcretizationTypeError):
            jax.jit(function)(jnp.float32(2.0))
    assert float(jax.jit(lambda a: math.prod([a, a]))(jnp.float32(3.0))) == 9.0


def test_a_dtype_function_reads_no_values_and_a_dtype_passed_at_a_call_site_is_static() -> None:
    # pkgprobe23 G1 (ejkernel): `str(jnp.dtype(bias_dtype))` in a cache key; the call passes `bias.dtype`.
    helper = "def key(n, dt):\n    return (n, str(jnp.dtype(dt)))\n"
    code = HEADER + helper + "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef f(x, dt):\n"
    code += "    key(x.shape[0], dt)\n    return x * 2.0\n"
    code += "def f_fwd(x, dt):\n    return f(x, dt), None\ndef f_bwd(dt, _, g):\n    return (2.0 * g,)\n"
    code += "f.defvjp(f_fwd, f_bwd)\n"
    unknown = classified(code)
    assert unknown.kind is ArgKind.UNKNOWN, unknown.evidence
    assert [e.text.split(",")[0] for e in unknown.evidence] == ["passed to `jnp.dtype`"] * 2, unknown.evidence
    static = classified(code + "def use(x, y):\n    return f(x, y.dtype)\n")
    assert static.kind is ArgKind.STATIC, static.evidence
    assert any(e.text == "a dtype is passed at a call site (`y.dtype`)" for e in static.evidence), static.evidence
    shape = classified(code.replace("jnp.dtype(dt)", "dt") + "def use(x, y):\n    return f(x, y.shape)\n")
    assert shape.kind is ArgKind.STATIC and any("a shape is passed" in e.text for e in shape.evidence)


def test_a_dtype_is_no_jax_value_so_moving_it_out_of_nondiff_argnums_fails() -> None:
    @jax.custom_vjp
    def moved(x: jax.Array, dt: object) -> jax.Array:
        return x * 2.0

    moved.defvjp(lambda x, dt: (moved(x, dt), None), lambda _, g: (2.0 * g, None))
    with pytest.raises(TypeError, match="not a valid JAX type"):
        moved(jnp.ones(2), jnp.ones(2).dtype)


def _noisy_site(rebinding: str) -> str:
    code = HEADER + "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef noisy(x, rng):\n"
    code += "    return x + jax.random.normal(rng, x.shape)\n"
    code += "def noisy_fwd(x, rng):\n    return noisy(x, rng), None\ndef noisy_bwd(rng, _, g):\n    return (g,)\n"
    return code + "noisy.defvjp(noisy_fwd, noisy_bwd)\n" + rebinding


def test_a_site_rebound_to_a_jit_with_static_argnums_is_read_as_a_stacked_jit() -> None:
    # pkgprobe23 G3 (ejkernel rebinds its sites after defvjp): the jit hashes what it marks static.
    rebound = classified(_noisy_site("noisy = jax.jit(noisy, static_argnums=(1,))\n"))
    assert rebound.kind is ArgKind.STATIC, rebound.evidence
    texts = [(e.text, e.line) for e in rebound.evidence]
    assert ("static in the `jax.jit` that `noisy` is rebound to", 13) in texts, texts
    wrapped = classified(_noisy_site("from mylib import ejit\nnoisy = ejit(noisy, static_argnums=(1,))\n"))
    assert wrapped.kind is ArgKind.STATIC, wrapped.evidence  # ejkernel's own jit wrapper, given static_argnums
    assert any(e.text == "static in the `ejit` that `noisy` is rebound to" for e in wrapped.evidence)
    for other in (
        "fast = jax.jit(noisy, static_argnums=(1,))\n",  # `noisy` itself may still be called traced (no safe fix)
        "noisy = jax.jit(noisy, static_argnums=(0,))\n",
        "noisy = jax.jit(noisy)\n",
        "from mylib import trace\nnoisy = trace(noisy, name='noisy')\n",
    ):
        assert classified(_noisy_site(other)).kind is ArgKind.ARRAY, other


def test_a_jit_static_argument_is_hashed_so_a_key_there_is_never_a_tracer() -> None:
    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def noisy(x: jax.Array, rng: jax.Array) -> jax.Array:
        return x + jax.random.normal(rng, x.shape)

    noisy.defvjp(lambda x, rng: (noisy(x, rng), None), lambda rng, _, g: (g,))
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        jax.jit(noisy, static_argnums=(1,))(jnp.ones(2), jax.random.key(0))


@pytest.mark.parametrize(
    ("mapped", "expected"),
    [
        pytest.param("lambda _: False", ArgKind.UNKNOWN, id="reads no leaf"),
        pytest.param("lambda leaf: None", ArgKind.UNKNOWN, id="named but unread"),
        pytest.param("lambda leaf: leaf * 2", ArgKind.ARRAY, id="reads its leaf"),
        pytest.param("jnp.zeros_like", ArgKind.ARRAY, id="a function"),
    ],
)
def test_a_tree_map_whose_function_reads_no_leaf_says_nothing_of_the_leaves(mapped: str, expected: ArgKind) -> None:
    # pkgprobe23 G5 (equinox's filter_custom_vjp maps `lambda _: False` over the non-array half).
    kind, reasons, _ = classify(lines(f"flags = jax.tree_util.tree_map({mapped}, a)", "return x"))
    assert kind is expected, reasons
    if expected is ArgKind.UNKNOWN:
        assert any("with a function that reads no leaf" in r for r in reasons), reasons


@pytest.mark.parametrize(
    ("primal", "expected", "reason"),
    [
        pytest.param("return x.at[0].set(a)", ArgKind.ARRAY, "used as array data by `x.at[0].set`", id="set"),
        pytest.param("return x.at[1:].add(a, mode='drop')", ArgKind.ARRAY, "by `x.at[1:].add`", id="add, a mode"),
        pytest.param("return x.at[0].apply(a)", ArgKind.STATIC, "passed as the function", id="apply"),
    ],
)
def test_the_values_an_indexed_update_writes_are_array_data(primal: str, expected: ArgKind, reason: str) -> None:
    # pkgprobe23 (ejkernel): `dh_all.at[seq_t].set(dh)` was "not analysed".
    kind, reasons, _ = classify(primal)
    assert kind is expected and any(reason in r for r in reasons), reasons


def test_an_indexed_update_takes_a_traced_value_but_applies_only_a_function() -> None:
    assert float(jax.jit(lambda x, a: x.at[0].set(a))(jnp.zeros(2), jnp.float32(3.0))[0]) == 3.0
    with pytest.raises(TypeError):
        jax.jit(lambda x, f: x.at[0].apply(f))(jnp.zeros(2), jnp.float32(3.0))


@pytest.mark.parametrize(
    ("annotation", "extra"),
    [
        pytest.param("jax.random.PRNGKey", "", id="jax.random.PRNGKey"),
        pytest.param("Optional[jax.random.PRNGKey]", "from typing import Optional\n", id="optional"),
        pytest.param("PRNGKeyArray | None", "from jaxtyping import PRNGKeyArray\n", id="jaxtyping"),
        pytest.param("chex.PRNGKey", "import chex\n", id="chex"),
    ],
)
def test_a_prng_key_annotation_is_array_data(annotation: str, extra: str) -> None:
    # pkgprobe23 G6: ejkernel's `dropout_rng: PRNGKeyArray | None`, fjformer's `key: jax.random.PRNGKey`.
    kind, reasons, strong = classify("return x", signature=f"a: {annotation}, x", extra=extra)
    assert kind is ArgKind.ARRAY and strong, reasons
    assert any(f"annotated `{annotation}`" in r for r in reasons), reasons


def test_a_key_in_nondiff_argnums_fails_when_keys_are_mapped_over() -> None:
    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def noisy(x: jax.Array, key: jax.Array) -> jax.Array:
        return x + jax.random.normal(key, x.shape)

    noisy.defvjp(lambda x, key: (noisy(x, key), None), lambda key, _, g: (g,))
    keys = jax.random.split(jax.random.key(0), 3)
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.vmap(lambda k: jax.grad(lambda x: noisy(x, k).sum())(jnp.ones(2)))(keys)


def test_a_helper_parameter_defaulting_to_a_plain_class_instance_is_static() -> None:
    # pkgprobe23 G10 (jaxwell): `def solve_impl(b, params=Params())`, Params a plain dataclass.
    extra = "import dataclasses\n@dataclasses.dataclass\nclass Params:\n    max_iters: int = 100\n"
    helper = "def impl(x, params=Params()):\n    return x * params.max_iters\n"
    kind, reasons, _ = classify("return impl(x, params=a)", extra=extra + helper)
    assert kind is ArgKind.STATIC, reasons
    assert any(
        "defaults to `Params()` in helper `impl` (called from the primal `f`): `Params` is a class" in r
        for r in reasons
    )
    registered = extra.replace("@dataclasses.dataclass", "@jax.tree_util.register_dataclass\n@dataclasses.dataclass")
    assert classify("return impl(x, params=a)", extra=registered + helper)[0] is not ArgKind.STATIC
