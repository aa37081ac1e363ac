"""classify at the edges of the rules the last sessions added: items of ``*args``, early returns
on a type test, traced call sites and configs registered as pytrees with no leaves. Each test
pins one decision a hand-made mutant of classify.py got through unnoticed (notes/mut17-findings.md)."""

from __future__ import annotations

import pytest
from test_classify import (
    _KEYS_CLASS,
    _PLAIN_CLASS,
    _TREE_CLASS,
    HEADER,
    _unscreened,
    classified,
    lines,
    site_module,
)

from vjp_migrate.model import ArgKind


def _third_item_site(primal: str) -> str:
    """A site whose nondiff position 3 is ``args[2]`` of the primal's ``*args``."""
    return HEADER + (
        f"@partial(jax.custom_vjp, nondiff_argnums=(3,))\ndef f(x, *args):\n    {primal}\n"
        "def f_fwd(x, *args):\n    return f(x, *args), x\n"
        "def f_bwd(*args):\n    return (args[-1],)\nf.defvjp(f_fwd, f_bwd)\n"
    )


@pytest.mark.parametrize(
    "primal",
    [
        pytest.param("first, *middle, last = args\n    return x * last", id="after a starred target"),
        pytest.param("*head, a, b = args\n    return x * b", id="after a leading starred target"),
    ],
)
def test_a_target_after_a_starred_one_is_no_item_of_star_args(primal: str) -> None:
    # `last` and `b` are args[-1], whichever item that is: not args[2], the nondiff argument.
    info = classified(_third_item_site(primal))
    assert info.name == "args[2]"
    assert info.kind is ArgKind.UNKNOWN, info.evidence


def test_a_target_before_a_starred_one_is_the_item_at_its_index() -> None:
    info = classified(_third_item_site("a, b, w, *rest = args\n    return x * w"))
    assert (info.name, info.kind) == ("args[2]", ArgKind.ARRAY), info.evidence


def test_array_use_after_an_early_return_its_type_picks_stays_strong() -> None:
    # `if callable(a): return a(x)`, then `jnp.where(a, x, 0.0)`: the rest of the body runs for
    # whatever is not a function, an array mask among them, and that breaks under jit. The static
    # use is guarded by the test; the array use after the return is not.
    info = classified(
        site_module(lines("if callable(a):", "    return a(x)", "return jnp.where(a, x, 0.0)"), "return (g,)")
    )
    assert (info.kind, info.strong, info.fixable) == (ArgKind.ARRAY, False, False), info.evidence


def test_a_raise_on_a_type_test_guards_nothing_after_it() -> None:
    # `if not isinstance(a, int): raise ...` lets only ints reach `range(a)`: every call that
    # returns needs `a` concrete, so the range use decides even though the raise branch reads `a`.
    primal = lines(
        "if not isinstance(a, int):",
        "    raise TypeError(f'a must be an int, not {float(a)}')",
        "return x * len(range(a))",
    )
    info = classified(site_module(primal, "return (g * a,)"))
    assert info.kind is ArgKind.STATIC, info.evidence
    assert not any("early return" in e.text for e in info.evidence), info.evidence


_SCALE_SITE = HEADER + (
    "@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef f(a, x):\n    return x * 2.0\n"
    "def f_fwd(a, x):\n    return f(a, x), None\ndef f_bwd(a, _, g):\n    return (g * a,)\nf.defvjp(f_fwd, f_bwd)\n"
)


def test_a_method_named_like_a_jit_wrapped_def_is_not_traced_by_that_jit() -> None:
    # `jax.jit(run)` wraps the module's `run`; `Model.run` is another function, never traced.
    caller = (
        "def run(x, w):\n    return x * w\nfast_run = jax.jit(run)\n"
        "class Model:\n    def run(self, x, w):\n        return f(w, x)\n"
    )
    info = _unscreened(_SCALE_SITE + caller)
    assert not any("traced" in e.text for e in info.evidence), info.evidence


def test_a_rule_jit_marks_an_item_of_star_args_static_by_its_position() -> None:
    # jax.jit(static_argnums=(1,)) on `f_fwd(x, *args)` marks args[0] static: jit hashes it.
    code = HEADER + (
        "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef f(x, *args):\n    return x\n"
        "@partial(jax.jit, static_argnums=(1,))\ndef f_fwd(x, *args):\n    return f(x, *args), x\n"
        "def f_bwd(*args):\n    return (args[-1],)\nf.defvjp(f_fwd, f_bwd)\n"
    )
    info = classified(code)
    assert (info.name, info.kind) == ("args[0]", ArgKind.STATIC), info.evidence
    assert any("static in the jax.jit of fwd `f_fwd`" in e.text for e in info.evidence), info.evidence


_DECORATED_FLATTEN = (
    "from lib import with_scale\n"
    "@jax.tree_util.register_pytree_node_class\n"
    "class Config:\n"
    "    def __init__(self, chunks=2):\n"
    "        self.chunks = chunks\n"
    "    @with_scale\n"
    "    def tree_flatten(self):\n"
    "        return (), self.chunks\n"
    "    @classmethod\n"
    "    def tree_unflatten(cls, aux, children):\n"
    "        return cls(aux)\n"
)


def test_a_tree_flatten_behind_a_decorator_is_not_read_as_leafless() -> None:
    # What `with_scale` makes of `((), aux)` is not seen: it may add a leaf, which jit traces.
    code = site_module("return helper(x, a)", "return (g,)", "a: Config, x", extra=_DECORATED_FLATTEN)
    info = _unscreened(code + "from lib import helper\n@jax.jit\ndef run(x, cfg: Config):\n    return f(cfg, x)\n")
    assert not any("register_pytree_node_class" in e.text for e in info.evidence), info.evidence
    assert info.kind is ArgKind.ARRAY and any("a traced value" in e.text for e in info.evidence), info.evidence


def _called_from(caller: str) -> list[str]:
    info = _unscreened(_SCALE_SITE + caller)
    return [e.text for e in info.evidence if "a traced value" in e.text]


@pytest.mark.parametrize(
    "caller",
    [
        pytest.param("@jax.jit\ndef run(x, w):\n    return f(2.0 * w, x)\n", id="right operand"),
        pytest.param(
            'def run(x, w):\n    return f(w, x)\nslow = jax.jit(run, static_argnames="w")\nfast = jax.jit(run)\n',
            id="one of two jax.jit calls traces it",
        ),
        pytest.param(
            "import dataclasses\n@jax.tree_util.register_static\n@dataclasses.dataclass(frozen=True)\n"
            "class Config:\n    chunks: int = 2\nfrom lib import Config\n"
            "@jax.jit\ndef run(x, cfg: Config):\n    return f(cfg, x)\n",
            id="a static class name bound again",
        ),
    ],
)
def test_a_traced_value_reaches_the_call(caller: str) -> None:
    assert _called_from(caller), caller


def test_field_metadata_does_not_outweigh_the_data_fields_given() -> None:
    # With data_fields and meta_fields given, JAX ignores `metadata={"static": True}`: `chunks`
    # is a leaf (jax.tree_util.tree_leaves(Config()) == [2]), traced by jit.
    config = (
        "import dataclasses\n"
        "@partial(jax.tree_util.register_dataclass, data_fields=['chunks'], meta_fields=[])\n"
        "@dataclasses.dataclass(frozen=True)\n"
        "class Config:\n    chunks: int = dataclasses.field(default=2, metadata={'static': True})\n"
    )
    assert any("a traced value" in text for text in _traced_config(config))


def _traced_config(config: str) -> list[str]:
    """The evidence texts for a nondiff `a: Config` that a jitted caller passes its `cfg: Config`."""
    code = site_module("return helper(x, a)", "return (g,)", "a: Config, x", extra=config + "from lib import helper\n")
    info = _unscreened(code + "@jax.jit\ndef run(x, cfg: Config):\n    return f(cfg, x)\n")
    return [e.text for e in info.evidence]


_STATIC_FIELD = "dataclasses.field(default=2, metadata={'static': True})"


@pytest.mark.parametrize(
    "config",
    [
        pytest.param(
            "import dataclasses\n@dataclasses.dataclass(frozen=True)\nclass Base:\n    scale: float = 1.0\n"
            "@jax.tree_util.register_dataclass\n@dataclasses.dataclass(frozen=True)\n"
            f"class Config(Base):\n    chunks: int = {_STATIC_FIELD}\n",
            id="register_dataclass, a data field inherited",
        ),
        pytest.param(
            "from flax import struct\n@struct.dataclass\nclass Base:\n    scale: float = 1.0\n"
            "@struct.dataclass\nclass Config(Base):\n    chunks: int = struct.field(pytree_node=False, default=2)\n",
            id="flax struct.dataclass, a pytree field inherited",
        ),
        pytest.param(
            "@jax.tree_util.register_pytree_node_class\nclass Config:\n"
            "    def __init__(self, chunks=2, scale=None):\n        self.chunks, self.scale = chunks, scale\n"
            "    def tree_flatten(self):\n        if self.scale is None:\n            return (), self.chunks\n"
            "        return (self.scale,), self.chunks\n"
            "    @classmethod\n    def tree_unflatten(cls, aux, children):\n        return cls(aux, *children)\n",
            id="tree_flatten returning children on one path",
        ),
    ],
)
def test_a_config_that_may_have_a_leaf_is_traced_by_jit(config: str) -> None:
    # jax.tree_util.tree_leaves of the register_dataclass one is [1.0]: `scale` is a leaf.
    assert any("a traced value" in text for text in _traced_config(config))


def test_a_class_variable_is_no_field_of_a_leafless_config() -> None:
    # `n: ClassVar[int]` is no dataclass field: jax.tree_util.tree_leaves(Config()) == [].
    config = (
        "import dataclasses\nfrom typing import ClassVar\n@jax.tree_util.register_dataclass\n"
        f"@dataclasses.dataclass(frozen=True)\nclass Config:\n    n: ClassVar[int] = 3\n    chunks: int = {_STATIC_FIELD}\n"
    )
    texts = _traced_config(config)
    assert not any("a traced value" in text for text in texts), texts
    assert any("register_dataclass" in text for text in texts), texts


def test_an_early_return_after_other_statements_on_its_line_guards_what_follows() -> None:
    # `m = jnp.where(a, x, 0.0); return m` ends the branch with a return as surely as `return m`.
    primal = lines("if not callable(a):", "    m = jnp.where(a, x, 0.0); return m", "return jnp.where(a(x), x, 0.0)")
    info = classified(site_module(primal, "return (g * a,)"))
    assert (info.kind, info.strong, info.fixable) == (ArgKind.ARRAY, False, False), info.evidence
    assert any("called as a function" in e.text and "early return" in e.text for e in info.evidence), info.evidence


def test_a_negated_traced_parameter_is_no_traced_value_passed() -> None:
    # `not w` of a Tracer raises before the call: what reaches `f` is a Python bool.
    assert not _called_from("@jax.jit\ndef run(x, w):\n    return f(not w, x)\n")


def test_a_return_of_a_function_nested_in_tree_flatten_is_not_its_own() -> None:
    config = (
        "@jax.tree_util.register_pytree_node_class\nclass Config:\n"
        "    def __init__(self, chunks=2):\n        self.chunks = chunks\n"
        "    def tree_flatten(self):\n        def describe():\n            return (self.chunks,)\n"
        "        return (), self.chunks\n"
        "    @classmethod\n    def tree_unflatten(cls, aux, children):\n        return cls(aux)\n"
    )
    texts = _traced_config(config)
    assert not any("a traced value" in text for text in texts), texts


# The leafless configs classify19 added (notes/mut19-findings.md): each of these may have a leaf,
# which `jax.tree_util.tree_leaves(Config())` gives ([2] for each, checked with JAX).
_ANNOTATED_METHOD = (
    "from typing import Any\n@jax.tree_util.register_pytree_node_class\nclass Config:\n"
    "    def __init__(self, chunks=2):\n        self.chunks = chunks\n"
    "    def tree_flatten(self):\n        return (), self.chunks\n"
    "    tree_flatten: Any = lambda self: ((self.chunks,), None)\n"
    "    @classmethod\n    def tree_unflatten(cls, aux, children):\n        return cls(aux)\n"
)


@pytest.mark.parametrize(
    "config",
    [
        pytest.param(
            _PLAIN_CLASS + "_FNS = (lambda c: ((c.chunks,), None), lambda _, c: Config(*c))\n"
            "jax.tree_util.register_pytree_node(Config, *_FNS)\n",
            id="register_pytree_node with its functions behind a star",
        ),
        pytest.param(
            _KEYS_CLASS.format(
                decorator="jax.tree_util.register_pytree_with_keys_class",
                base="",
                children="((jax.tree_util.GetAttrKey('chunks'), self.chunks),)",
            ),
            id="register_pytree_with_keys_class, no tree_flatten, tree_flatten_with_keys returning a child",
        ),
        pytest.param(_ANNOTATED_METHOD, id="tree_flatten bound again by an annotated assignment"),
        pytest.param(
            _ANNOTATED_METHOD.replace(
                "    tree_flatten: Any = lambda self: ((self.chunks,), None)\n",
                "    tree_flatten, _spare = (lambda self: ((self.chunks,), None)), None\n",
            ),
            id="tree_flatten bound again by a tuple unpacking",
        ),
    ],
)
def test_a_registration_classify19_reads_that_may_give_a_leaf_is_traced_by_jit(config: str) -> None:
    assert any("a traced value" in text for text in _traced_config(config))


def test_a_tree_flatten_defined_again_under_an_if_may_give_a_leaf() -> None:
    # With LEAVES set, jax.tree_util.tree_leaves(Config()) == [2]: the second def is the method.
    config = _TREE_CLASS.format(children="()").replace(
        "    @classmethod\n",
        "    if os.environ.get('LEAVES'):\n        def tree_flatten(self):\n"
        "            return (self.chunks,), None\n    @classmethod\n",
    )
    assert any("a traced value" in text for text in _traced_config("import os\n" + config))


@pytest.mark.parametrize(
    "helper",
    [
        pytest.param("def pick(v, s):\n    if s:\n        return s\n    return v * 2.0\n", id="only the last return"),
        pytest.param(
            "def pick(v, s):\n    if s:\n        return v\n    if s > 1:\n        return -v\n    return s\n",
            id="two returns of three",
        ),
    ],
)
def test_a_helper_returning_its_parameter_on_some_paths_only_carries_no_traced_value(helper: str) -> None:
    # Every return must give the parameter (classify19): `pick(ws, 1.0)` may be the constant.
    caller = helper + "@jax.jit\ndef run(x, ws):\n    return f(pick(ws, 1.0), x)\n"
    info = _unscreened(_SCALE_SITE + caller)
    assert not any("traced" in e.text for e in info.evidence), info.evidence
    both = helper.replace("return s\n", "return v\n")
    info = _unscreened(_SCALE_SITE + caller.replace(helper, both))
    assert any("traced" in e.text for e in info.evidence), info.evidence


def test_a_helper_behind_a_decorator_carries_no_traced_value() -> None:
    # `@memo` may return any function: what `doubled(ws)` gives is not read from its body.
    helper = "from lib import memo\n@memo\ndef doubled(v):\n    return v * 2.0\n"
    caller = "@jax.jit\ndef run(x, ws):\n    return f(doubled(ws), x)\n"
    info = _unscreened(_SCALE_SITE + helper + caller)
    assert not any("traced" in e.text for e in info.evidence), info.evidence
    info = _unscreened(_SCALE_SITE + helper.replace("@memo\n", "") + caller)
    assert any("traced" in e.text for e in info.evidence), info.evidence
