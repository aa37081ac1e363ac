"""classify on probe23's gaps (notes/probe23-findings.md), each with JAX's word on it."""

from __future__ import annotations

import abc

import jax
import jax.numpy as jnp
import pytest
from test_classify import classified, classify, lines

from vjp_migrate.model import ArgKind

_STRATEGY_SITE = (
    "import abc\nfrom functools import partial\nimport jax\nimport jax.numpy as jnp\n{classes}"
    "@partial(jax.custom_vjp, nondiff_argnums=(1,))\n"
    "def contract(x, strategy: {annotation}):\n    return jnp.sum(strategy.apply(x) ** 2)\n"
    "def _fwd(x, strategy):\n    return contract(x, strategy), x\n"
    "def _bwd(strategy, x, g):\n    return (2 * g * strategy.apply(x),)\n"
    "contract.defvjp(_fwd, _bwd)\n"
)
_ABSTRACT = "class Strategy(abc.ABC):\n    @abc.abstractmethod\n    def apply(self, x):\n        ...\n"
_TRUNCATE = "class Truncate(Strategy):\n    def apply(self, x):\n        return x[:2]\n"


@pytest.mark.parametrize(
    ("classes", "annotation"),
    [
        pytest.param(_ABSTRACT + _TRUNCATE, "Strategy", id="an abc.ABC base, a plain subclass"),
        pytest.param(
            "from abc import ABC, abstractmethod\nclass Strategy(ABC):\n    @abstractmethod\n"
            "    def apply(self, x):\n        ...\n",
            "Strategy",
            id="ABC imported by name",
        ),
        pytest.param(
            "class Strategy(metaclass=abc.ABCMeta):\n    @abc.abstractmethod\n    def apply(self, x):\n        ...\n",
            "Strategy",
            id="metaclass=abc.ABCMeta",
        ),
        pytest.param(_ABSTRACT + _TRUNCATE, "Truncate", id="a subclass of a plain class"),
        pytest.param(
            "class Strategy:\n    def apply(self, x):\n        return x\n"
            "import dataclasses\n@dataclasses.dataclass(frozen=True)\nclass Truncate(Strategy):\n    rank: int = 2\n",
            "Truncate",
            id="a plain dataclass deriving from a plain class",
        ),
    ],
)
def test_a_parameter_annotated_with_an_abstract_or_derived_plain_class_is_static(classes: str, annotation: str) -> None:
    # probe23 G1 (r21, VMC PEPS: `strategy: ContractionStrategy`, `class ContractionStrategy(abc.ABC)`).
    info = classified(_STRATEGY_SITE.format(classes=classes, annotation=annotation))
    assert info.kind is ArgKind.STATIC, info.evidence
    assert "is a class the module neither registers as a pytree nor derives from one" in info.evidence[0].text


@pytest.mark.parametrize(
    "classes",
    [
        pytest.param(
            _ABSTRACT + "@jax.tree_util.register_pytree_node_class\n" + _TRUNCATE,
            id="a subclass registered as a pytree",
        ),
        pytest.param(
            _ABSTRACT + _TRUNCATE + "jax.tree_util.register_pytree_node(Truncate, lambda t: ((), None), None)\n",
            id="a subclass registered by a call",
        ),
        pytest.param(
            _ABSTRACT + "import equinox as eqx\nclass Scaled(Strategy, eqx.Module):\n    w: jax.Array\n",
            id="a subclass deriving from a pytree base too",
        ),
        pytest.param(
            _ABSTRACT + _TRUNCATE + "class Deeper(Truncate):\n    w = 1\nif True:\n    Deeper = wrap(Deeper)\n",
            id="a subclass of a subclass bound twice",
        ),
        pytest.param("class Strategy(abc.ABC, metaclass=Registering):\n    pass\n", id="another metaclass"),
        pytest.param("from typing import Protocol\nclass Strategy(Protocol):\n    pass\n", id="a Protocol"),
    ],
)
def test_a_class_some_module_kin_of_which_may_be_a_pytree_is_no_plain_class(classes: str) -> None:
    info = classified(_STRATEGY_SITE.format(classes=classes, annotation="Strategy"))
    assert not any("neither registers" in e.text for e in info.evidence), info.evidence


def test_an_abstract_strategy_is_no_jit_argument_but_works_in_nondiff_argnums() -> None:
    class Strategy(abc.ABC):
        @abc.abstractmethod
        def apply(self, x: jax.Array) -> jax.Array: ...

    class Truncate(Strategy):
        def apply(self, x: jax.Array) -> jax.Array:
            return x[:2]

    def contract(x: jax.Array, strategy: Strategy) -> jax.Array:
        return jnp.sum(strategy.apply(x) ** 2)

    with pytest.raises(TypeError):
        jax.jit(contract)(jnp.ones(3), Truncate())
    rule = jax.custom_vjp(contract, nondiff_argnums=(1,))
    rule.defvjp(lambda x, s: (contract(x, s), x), lambda s, x, g: (2 * g * x.at[2:].set(0.0),))
    grad = jax.jit(jax.grad(lambda x: rule(x, Truncate())))(jnp.arange(1.0, 4.0))
    assert grad.tolist() == [2.0, 4.0, 0.0]


@pytest.mark.parametrize(
    ("primal", "static"),
    [
        pytest.param("b = 4 if a is None else a\n    return jnp.zeros(b) + x", True, id="d if a is None else a"),
        pytest.param(
            "b = a if a is not None else 4\n    return jnp.zeros(b) + x", True, id="a if a is not None else d"
        ),
        pytest.param("return jnp.zeros(4 if a is None else a) + x", True, id="in place"),
        pytest.param("b = 4 if a is None else 2 * a\n    return jnp.zeros(b) + x", True, id="computed from a"),
        pytest.param("b = a if x.ndim > 1 else 4\n    return jnp.zeros(b) + x", False, id="another test"),
        pytest.param("b = 4 if x is None else a\n    return jnp.zeros(b) + x", False, id="another name tested"),
        pytest.param("b = a if a is None else 4\n    return jnp.zeros(b) + x", False, id="the None branch reads it"),
    ],
)
def test_the_none_default_idiom_carries_a_need_for_concrete_values(primal: str, static: bool) -> None:
    # probe23 G2 (r23, Pallas Mamba kernel: `block_len = chunk(seq_len) if K is None else K`, then
    # `if block_len & (block_len - 1): raise`): the other path runs only for None, a static value.
    kind, evidence, _ = classify(primal)
    assert (kind is ArgKind.STATIC) == static, evidence
    if static:
        assert "needed concretely" in evidence[0] and "on some paths" not in evidence[0], evidence


@pytest.mark.parametrize(
    ("primal", "static"),
    [
        pytest.param(
            lines("b = 4", "if a is not None:", "    b = 2 * a", "return jnp.zeros(b) + x"), True, id="default above"
        ),
        pytest.param(
            lines("if a is None:", "    b = 4", "else:", "    b = 2 * a", "return jnp.zeros(b) + x"), True, id="if/else"
        ),
        pytest.param(
            lines("if a is not None:", "    b = a[0]", "else:", "    b = 4", "return jnp.zeros(b) + x"),
            True,
            id="else sets the default",
        ),
        pytest.param(
            lines(
                "match x.ndim:",
                "    case 1:",
                "        b = 4",
                "        if a is not None:",
                "            b = 2 * a",
                "        return jnp.zeros(b) + x",
                "return x",
            ),
            True,
            id="in a match case",
        ),
        pytest.param(
            lines("b = 4", "y = jnp.zeros(b)", "if a is not None:", "    b = 2 * a", "return jnp.zeros(b) + x + y"),
            False,
            id="default read before the if",
        ),
        pytest.param(
            lines("b = 4", "if a is not None:", "    b = 2 * a", "b = 3", "return jnp.zeros(b) + x"),
            False,
            id="set again after",
        ),
        pytest.param(
            lines("b = 4", "if a is not None:", "    y = jnp.zeros(b)", "    b = 2 * a", "return jnp.zeros(b) + x + y"),
            False,
            id="default read in the branch first",
        ),
        pytest.param(
            lines("b = 4", "if x is not None:", "    b = 2 * a", "return jnp.zeros(b) + x"), False, id="another name"
        ),
        pytest.param(
            lines("b = 4", "if a is None:", "    b = 2 * a", "return jnp.zeros(b) + x"), False, id="None branch"
        ),
        pytest.param(
            lines("b = 4", "if a is not None:", "    pass", "elif x.ndim:", "    b = 2 * a", "return jnp.zeros(b) + x"),
            False,
            id="elif",
        ),
    ],
)
def test_the_statement_form_of_the_none_default_idiom(primal: str, static: bool) -> None:
    # probe23: `chunk = 1` then `if plan is not None: chunk = plan[0]` reads `plan` on every path
    # where it is not None, as the conditional expression does.
    kind, evidence, _ = classify(primal)
    assert (kind is ArgKind.STATIC) == static, evidence
    if static:
        assert "needed concretely" in evidence[0] and "on some paths" not in evidence[0], evidence


def test_a_none_default_block_length_must_be_concrete() -> None:
    def padded(x: jax.Array, block: int | None) -> jax.Array:
        size = 4 if block is None else block
        return jnp.pad(x, (0, (-x.shape[0]) % size))

    assert padded(jnp.ones(3), None).shape == (4,)
    assert jax.jit(lambda x: padded(x, 2))(jnp.ones(3)).shape == (4,)
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(padded)(jnp.ones(3), 2)
