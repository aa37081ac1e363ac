"""classify on what probe26 found in real code (G3, jax_ls's `params: NearFieldParams`): a parameter
annotated with a pytree class of the module that holds array fields (a `typing.NamedTuple`, a flax
struct class, an `eqx.Module`, a registered class), used through its fields, is array data; a
field needed concrete keeps it static; a class that is no pytree stays what it was."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from helpers import executed
from test_classify import HEADER, classified, lines, site_module

from vjp_migrate import screen
from vjp_migrate.api import check_source, fix_source
from vjp_migrate.codes import BY_CODE, DEFAULT_SELECT
from vjp_migrate.model import ArgInfo, ArgKind, Settings

NAMED_TUPLE = (
    "from typing import NamedTuple\nclass Params(NamedTuple):\n    G: jnp.ndarray\n    n: int\n    h: float = 1.0\n"
)
FLAX = "import flax\n@flax.struct.dataclass\nclass Params:\n    G: jnp.ndarray\n    n: int\n    h: float = 1.0\n"
EQX = "import equinox as eqx\nclass Params(eqx.Module):\n    G: jax.Array\n    n: int\n    h: float = 1.0\n"
REGISTERED = (
    "import dataclasses\n@jax.tree_util.register_dataclass\n@dataclasses.dataclass\n"
    "class Params:\n    G: jax.Array\n    n: int\n    h: float = 1.0\n"
)
NODE_CLASS = (
    "@jax.tree_util.register_pytree_node_class\nclass Params:\n    G: jax.Array\n    n: int\n    h: float\n"
    "    def tree_flatten(self):\n        return (self.G, self.n, self.h), None\n"
    "    @classmethod\n    def tree_unflatten(cls, aux, children):\n        return cls(*children)\n"
)
PYTREES = [
    pytest.param(NAMED_TUPLE, "a `typing.NamedTuple`", id="NamedTuple"),
    pytest.param(FLAX, "a `flax.struct.dataclass`", id="flax struct"),
    pytest.param(EQX, "an `eqx.Module`", id="eqx.Module"),
    pytest.param(REGISTERED, "a class registered with `jax.tree_util.register_dataclass`", id="register_dataclass"),
    pytest.param(
        NODE_CLASS, "a class registered with `jax.tree_util.register_pytree_node_class`", id="pytree node class"
    ),
]


def params_site(cls: str, primal: str, bwd: str = "return (g,)", signature: str = "p: Params, x") -> ArgInfo:
    """A site whose nondiff argument `p` the primal annotates with ``cls``'s `Params` (bwd does not)."""
    code = HEADER + cls
    code += f"@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef f({signature}):\n    {primal}\n"
    code += "def f_fwd(p, x):\n    return f(p, x), None\n"
    code += f"def f_bwd(p, _, g):\n    {bwd}\n"
    return classified(code + "f.defvjp(f_fwd, f_bwd)\n")


def texts(info: ArgInfo) -> list[str]:
    return [e.text for e in info.evidence]


@pytest.mark.parametrize(("cls", "how"), PYTREES)
@pytest.mark.parametrize(
    ("primal", "use"),
    [
        pytest.param("return p.G @ x", "used in arithmetic in the primal `f`", id="matmul"),
        pytest.param("return jnp.conj(p.G) @ x", "used as array data by `jnp.conj` in the primal `f`", id="jnp"),
        pytest.param("return x @ p.G.T", "used in arithmetic in the primal `f`", id="a view of it"),
        pytest.param(lines("G = p.G", "return jnp.dot(G, x)"), "used as array data by `jnp.dot`", id="a local"),
    ],
)
def test_an_array_field_used_as_array_data_is_array_data(cls: str, how: str, primal: str, use: str) -> None:
    info = params_site(cls, primal)
    assert info.kind is ArgKind.ARRAY and info.strong, info.evidence
    field = f"its field `G` (annotated `{'jnp.ndarray' if 'jnp.ndarray' in cls else 'jax.Array'}` in `Params`, {how})"
    assert any(t.startswith(f"{field}: {use}") for t in texts(info)), texts(info)


@pytest.mark.parametrize(("cls", "how"), PYTREES)
def test_the_annotation_alone_is_array_data(cls: str, how: str) -> None:
    """As `x: jax.Array` is: jit traces the pytree's array leaves (a safe fix)."""
    info = params_site(cls, "return x")
    assert info.kind is ArgKind.ARRAY and info.strong, info.evidence
    assert any(
        t.startswith(f"annotated `Params` in the primal `f`: `Params` is {how} with the array field `G: ")
        for t in texts(info)
    ), texts(info)


def test_the_rule_that_leaves_it_unannotated_reads_its_fields_too() -> None:
    info = params_site(NAMED_TUPLE, "return x", bwd="return (jnp.sum(p.G, axis=0) * g,)")
    assert any(t.endswith("used as array data by `jnp.sum` in bwd `f_bwd`") for t in texts(info)), texts(info)
    static = params_site(NAMED_TUPLE, "return x", bwd="return (jnp.zeros(p.n) * g,)")
    assert static.kind is ArgKind.STATIC, static.evidence


@pytest.mark.parametrize(("cls", "how"), PYTREES)
@pytest.mark.parametrize(
    ("primal", "use"),
    [
        pytest.param(
            "return jnp.zeros(p.n) + p.G @ x", "passed as a static setting (argument 1) to `jnp.zeros`", id="shape"
        ),
        pytest.param("return (p.G @ x)[: p.n]", "used as a slice bound", id="slice bound"),
        pytest.param(
            "return x.reshape(p.n, -1)", "passed as a shape/axis to the array method `.reshape`", id="reshape"
        ),
        pytest.param(lines("n = p.n", "return jnp.tile(x, n)"), "to `jnp.tile`", id="through a local"),
        pytest.param(lines("n = p.n + 1", "return jnp.tile(x, n)"), "through `n` (from `p.n`", id="a value from it"),
        pytest.param(lines("for _ in range(p.n):", "    x = p.G @ x", "return x"), "passed to `range`", id="range"),
        pytest.param(
            lines("h = p.h", "if h > 0:", "    return p.G @ x", "return x"), "decides Python control flow", id="if"
        ),
    ],
)
def test_a_field_needed_concrete_keeps_it_static(cls: str, how: str, primal: str, use: str) -> None:
    """Static evidence wins: a NamedTuple's `n` is a leaf that jit would trace."""
    info = params_site(cls, primal)
    assert info.kind is ArgKind.STATIC, info.evidence
    assert any(use in t for t in texts(info)), texts(info)


def test_another_fields_arithmetic_says_nothing() -> None:
    """`h: float` is a leaf too, but a Python number's arithmetic proves no array."""
    info = params_site(NAMED_TUPLE, "return x * p.h")
    assert not any("its field `h`" in t for t in texts(info)), texts(info)


@pytest.mark.parametrize(
    "cls",
    [
        pytest.param(
            "import dataclasses\n@dataclasses.dataclass\nclass Params:\n    G: jnp.ndarray\n", id="plain dataclass"
        ),
        pytest.param("class Params:\n    G: jnp.ndarray\n", id="plain class"),
        pytest.param(
            "import typing\nclass Params(typing.NamedTuple):\n    G: jnp.ndarray\n    act: Callable\n",
            id="a function leaf",
        ),
        pytest.param(
            "import enum\nfrom typing import NamedTuple\nclass Mode(enum.Enum):\n    A = 1\n"
            "class Params(NamedTuple):\n    G: jnp.ndarray\n    mode: Mode\n",
            id="an enum leaf",
        ),
        pytest.param(NAMED_TUPLE + "Params = dict\n", id="rebound"),
    ],
)
def test_a_class_that_is_no_pytree_of_arrays_stays_unknown(cls: str) -> None:
    info = params_site(cls, "return jnp.conj(p.G) @ x")
    assert info.kind is ArgKind.UNKNOWN, info.evidence


@pytest.mark.parametrize(
    ("cls", "kind"),
    [
        pytest.param(NAMED_TUPLE, ArgKind.ARRAY, id="NamedTuple"),
        pytest.param(NAMED_TUPLE.replace("    n: int\n", "    n: Callable\n"), ArgKind.UNKNOWN, id="a function leaf"),
    ],
)
def test_a_caller_annotating_a_named_tuple_passes_array_data(cls: str, kind: ArgKind) -> None:
    """The call-site rule (caller_annotations.py) knows a NamedTuple as a pytree now; one with a
    function leaf is no JAX value."""
    code = HEADER + cls
    code += "@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef f(p, x):\n    return x\n"
    code += "def f_fwd(p, x):\n    return f(p, x), None\ndef f_bwd(p, _, g):\n    return (g,)\n"
    code += "f.defvjp(f_fwd, f_bwd)\ndef apply(params: Params, x):\n    return f(params, x)\n"
    info = classified(code)
    assert info.kind is kind, info.evidence
    if kind is ArgKind.ARRAY:
        shown = "a `typing.NamedTuple` with the array field `G: jnp.ndarray`"
        assert any(shown in t for t in texts(info)), texts(info)


def test_the_screen_keeps_a_site_whose_only_array_evidence_is_the_class() -> None:
    code = HEADER + NAMED_TUPLE
    code += "@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef f(p: Params, x):\n    return x\n"
    code += "def f_fwd(p, x):\n    return f(p, x), None\ndef f_bwd(p, _, g):\n    return (g,)\n"
    assert screen.may_report(code + "f.defvjp(f_fwd, f_bwd)\n", Settings(DEFAULT_SELECT))


# probe26 syn/g03: files/09's `near_field_l2_loss(params: NearFieldParams, ...)`, cut down.
G03 = """\
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp


class Params(NamedTuple):
    G: jnp.ndarray
    h: float


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def loss(params: Params, x):
    return jnp.sum((params.G @ x) * params.h)


def loss_fwd(params: Params, x):
    return loss(params, x), None


def loss_bwd(params, _, g):
    return (g * params.h * jnp.sum(params.G, axis=0),)


loss.defvjp(loss_fwd, loss_bwd)
"""

G03_REGISTERED = G03.replace(
    "class Params(NamedTuple):", "@jax.tree_util.register_dataclass\n@dataclasses.dataclass\nclass Params:"
).replace("import jax\n", "import dataclasses\n\nimport jax\n", 1)


@pytest.mark.parametrize("source", [pytest.param(G03, id="NamedTuple"), pytest.param(G03_REGISTERED, id="registered")])
def test_the_original_breaks_under_jit_with_params_traced_and_the_safe_fix_runs(source: str) -> None:
    settings = Settings(frozenset(BY_CODE))
    found = check_source(source, settings=settings)
    assert [(d.code, d.argument, d.fixable) for d in found] == [("VJP001", "params", True)]
    fixed = fix_source(source, settings=settings)
    assert "@jax.custom_vjp\ndef loss(params: Params, x):" in fixed.source
    old, new = executed(source, "g03.py"), executed(fixed.source, "g03_fixed.py")

    def grad(namespace: dict[str, Any]) -> Any:
        return lambda G, x: jax.grad(lambda x: namespace["loss"](namespace["Params"](G, 0.5), x))(x)

    G, x = jnp.eye(2) * 3.0, jnp.array([1.0, 2.0])
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.jit(grad(old))(G, x)  # params traced: its leaves are Tracers in nondiff_argnums
    assert jnp.allclose(jax.jit(grad(new))(G, x), grad(old)(G, x))
    assert jax.vmap(grad(new), in_axes=(0, None))(jnp.stack([G, 2 * G]), x).shape == (2, 2)


# probe26 G4 (newton_kkt's `jnp.repeat(..., config.max_iters + 1, axis=0)`, a Pallas op's
# `interpret=config.interpret`): an attribute of an argument of no known class, needed concrete.
POST = (
    "from jax.experimental import pallas as pl\n"
    "def _post(x, cfg):\n    return pl.pallas_call(_kernel, out_shape=x, interpret=cfg.interpret)(x)\n"
)


@pytest.mark.parametrize(
    ("primal", "extra", "kind", "reason"),
    [
        pytest.param("return jnp.repeat(x[None], a.n + 1, axis=0)", "", ArgKind.STATIC, "attribute `n`", id="repeats"),
        pytest.param(
            lines("if a.verbose:", "    print(x)", "return x"), "", ArgKind.STATIC, "attribute `verbose`", id="if"
        ),
        pytest.param("return _post(x, a)", POST, ArgKind.STATIC, "attribute `interpret`", id="in a helper"),
        pytest.param("return x * a.T", "", ArgKind.ARRAY, None, id="a view"),
        pytest.param("return jnp.zeros(a.shape[0]) + a", "", ArgKind.ARRAY, None, id="metadata"),
        pytest.param("return x.at[0].set(a)", "", ArgKind.ARRAY, None, id="set by .at"),
        pytest.param("return a.update(x)", "", ArgKind.UNKNOWN, None, id="a method called"),
    ],
)
def test_an_attribute_needed_concrete_makes_an_argument_of_no_known_class_static(
    primal: str, extra: str, kind: ArgKind, reason: str | None
) -> None:
    info = classified(site_module(primal, "return (g,)", extra=extra))
    shown = tuple(e.text for e in info.evidence)
    assert info.kind is kind, shown
    assert reason is None or any(reason in text for text in shown), shown


TILE = """\
import dataclasses
from functools import partial

import jax
import jax.numpy as jnp


@dataclasses.dataclass(frozen=True)
class Cfg:
    n: int = 3


jax.tree_util.register_dataclass(Cfg)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def tile(cfg, x):
    return jnp.repeat(x[None], cfg.n + 1, axis=0)


def tile_fwd(cfg, x):
    return tile(cfg, x), None


def tile_bwd(cfg, _, g):
    return (jnp.sum(g, axis=0),)


tile.defvjp(tile_fwd, tile_bwd)
"""


def test_a_setting_read_as_an_attribute_is_static_and_moving_it_breaks() -> None:
    """Real JAX on CPU: the module works under jit with the config static; traced (what moving it
    would make of it), `jnp.repeat` cannot take `cfg.n + 1`. So: no finding, not even VJP002."""
    assert check_source(TILE, settings=Settings(frozenset(BY_CODE))) == []
    namespace: dict[str, Any] = {}
    exec(compile(TILE, "tile.py", "exec"), namespace)
    tile, cfg = namespace["tile"], namespace["Cfg"]()
    assert jax.jit(jax.grad(lambda x: (tile(cfg, x) ** 2).sum()))(jnp.ones(2)).tolist() == [8.0, 8.0]
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(lambda c, x: jnp.repeat(x[None], c.n + 1, axis=0))(cfg, jnp.ones(2))


STATIC_N = [
    pytest.param(EQX.replace("    n: int\n", "    n: int = eqx.field(static=True)\n"), id="eqx static field"),
    pytest.param(
        FLAX.replace("    n: int\n", "    n: int = flax.struct.field(pytree_node=False)\n"), id="flax pytree_node=False"
    ),
    pytest.param(
        REGISTERED.replace("    n: int\n", '    n: int = dataclasses.field(metadata={"static": True})\n'),
        id="dataclass metadata static",
    ),
    pytest.param(
        REGISTERED.replace("@jax.tree_util.register_dataclass\n", "")
        + 'jax.tree_util.register_dataclass(Params, data_fields=["G", "h"], meta_fields=["n"])\n',
        id="meta_fields",
    ),
]


@pytest.mark.parametrize("cls", STATIC_N)
def test_a_field_the_class_declares_static_may_be_needed_concrete(cls: str) -> None:
    """A static field is aux data of the pytree: concrete whether the pytree is traced or not, so
    `jnp.zeros(p.n)` says nothing; the array field makes `p` array data."""
    info = params_site(cls, "return jnp.zeros(p.n) + p.G @ x")
    assert info.kind is ArgKind.ARRAY and info.strong, texts(info)
    assert not any("its field `n`" in t for t in texts(info)), texts(info)
    leaf = params_site(cls, "return jnp.zeros(p.h) + p.G @ x")
    assert leaf.kind is ArgKind.STATIC, texts(leaf)  # `h` is a leaf: traced with the pytree


SCAN = """\
import dataclasses
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.tree_util.register_dataclass, data_fields=["G"], meta_fields=["steps"])
@dataclasses.dataclass
class Params:
    G: jax.Array
    steps: int


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def power(params: Params, x):
    for _ in range(params.steps):
        x = params.G @ x
    return x


def power_fwd(params, x):
    return power(params, x), None


def power_bwd(params, _, g):
    for _ in range(params.steps):
        g = params.G.T @ g
    return (g,)


power.defvjp(power_fwd, power_bwd)
"""


def test_a_static_field_in_a_loop_bound_stays_concrete_after_the_safe_fix() -> None:
    """Real JAX on CPU: `range(params.steps)` runs on the traced pytree, as `steps` is aux data; the
    original fails under jit with `params` traced, the migrated module runs and agrees."""
    settings = Settings(frozenset(BY_CODE))
    assert [(d.code, d.argument, d.fixable) for d in check_source(SCAN, settings=settings)] == [
        ("VJP001", "params", True)
    ]
    fixed = fix_source(SCAN, settings=settings).source
    assert "@jax.custom_vjp\ndef power(params: Params, x):" in fixed
    old, new = executed(SCAN, "scan.py"), executed(fixed, "scan_fixed.py")

    def grad(namespace: dict[str, Any]) -> Any:
        return lambda G, x: jax.grad(lambda x: namespace["power"](namespace["Params"](G, 3), x).sum())(x)

    G, x = jnp.array([[1.0, 2.0], [0.5, -1.0]]), jnp.array([1.0, 2.0])
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.jit(grad(old))(G, x)
    assert jnp.allclose(jax.jit(grad(new))(G, x), grad(old)(G, x))
    assert jnp.allclose(grad(old)(G, x), jnp.linalg.matrix_power(G, 3).T @ jnp.ones(2))
