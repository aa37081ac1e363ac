"""classify on a table the argument indexes. A host NumPy array (what a `numpy` function makes:
`_TABLE = np.array([...])`, at the module's top level, in a factory around the site, kept by a
class, or a local) converts its index to a NumPy value, and so do its methods `.take(k)`,
`.item(k)`...: a Tracer raises, so the argument is static. A name nothing tells the kind of
(`_S = load()`, an imported name, one bound twice, a factory's parameter) may be a Python list or
a host NumPy array: its index, its `.take(k)` or `.item(k)`, a dict's `.get(k)` are doubts (VJP002,
no safe fix), unless it is surely a JAX array (`jnp.array(...)`, annotated `jax.Array`), which
takes a Tracer. Before, all these were VJP001 with a safe fix, which broke the jitted gradient
of a call with a Python int."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import executed
from test_classify import classified

from vjp_migrate.api import check_source, fix_source
from vjp_migrate.codes import BY_CODE
from vjp_migrate.model import ArgKind, Settings
from vjp_migrate.vocabulary import HOST_ARRAY_METHODS, INDEXING_METHODS

ALL = Settings(frozenset(BY_CODE))

# A module-level custom_vjp reading `{read}` with `k`, and doing arithmetic with `k` too.
MODULE = """from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
{header}


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def scale(x, k):
{local}    return x * {read} * k


def scale_fwd(x, k):
    return scale(x, k), None


def scale_bwd(k, _, g):
{local}    return (g * {read} * k,)


scale.defvjp(scale_fwd, scale_bwd)
"""

# The same site made by a factory, reading `{read}` from around it.
FACTORY = """from functools import partial

import jax
import jax.numpy as jnp
import numpy as np


def make(table):
{bound}
    @partial(jax.custom_vjp, nondiff_argnums=(1,))
    def scale(x, k):
        return x * {read} * k

    def scale_fwd(x, k):
        return scale(x, k), None

    def scale_bwd(k, _, g):
        return (g * {read} * k,)

    scale.defvjp(scale_fwd, scale_bwd)
    return scale
"""


def module(header: str, read: str = "_TABLE[k]", local: str = "") -> str:
    return MODULE.format(header=header, read=read, local=local)


def factory(bound: str, read: str) -> str:
    return FACTORY.format(bound=bound, read=read)


NUMPY_TABLE = "_TABLE = np.array([1.0, 2.0, 3.0])"
LOADED = "\ndef load():\n    return [1.0, 2.0, 3.0]\n\n\n_TABLE = load()"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        pytest.param(module(NUMPY_TABLE), "of the module-level NumPy array `_TABLE`", id="np.array"),
        pytest.param(module("_TABLE = np.asarray((1.0, 2.0, 3.0))"), "NumPy array `_TABLE`", id="np.asarray"),
        pytest.param(module("_TABLE = np.arange(3.0)"), "NumPy array `_TABLE`", id="np.arange"),
        pytest.param(module("_TABLE = np.linspace(0.0, 1.0, 3)"), "NumPy array `_TABLE`", id="np.linspace"),
        pytest.param(module("_TABLE = np.zeros(3)"), "NumPy array `_TABLE`", id="np.zeros"),
        pytest.param(module("from numpy import ones\n\n_TABLE = ones(3)"), "NumPy array `_TABLE`", id="imported ones"),
        pytest.param(
            module("_TABLE = np.arange(6.0).reshape(2, 3).astype(np.float32)", "_TABLE[k, 0]"),
            "NumPy array `_TABLE`, which takes only a concrete index (a Tracer raises)",
            id="a method chain, two indexes",
        ),
        pytest.param(module(NUMPY_TABLE, "_TABLE[k - 1]"), "through `k - 1`", id="a value from it"),
        pytest.param(
            module(NUMPY_TABLE, "_TABLE.take(k)"),
            "passed to `.take` of the module-level NumPy array `_TABLE`, which makes a NumPy value of it",
            id="take",
        ),
        pytest.param(module(NUMPY_TABLE, "_TABLE.item(k)"), "passed to `.item` of the module-level", id="item"),
        pytest.param(module(NUMPY_TABLE, "np.take(_TABLE, k)"), "by host NumPy's `np.take`", id="np.take"),
        pytest.param(module(NUMPY_TABLE, "_TABLE[k : k + 2].sum()"), "used as a slice bound", id="a slice"),
        pytest.param(
            module("", "table[k]", local="    table = np.arange(3.0)\n"),
            "used as an index of the NumPy array `table` that `scale` binds",
            id="a local",
        ),
        pytest.param(
            module(LOADED, "np.asarray(_TABLE)[k]"),
            "used as an index of the NumPy array `np.asarray(_TABLE)`",
            id="in place",
        ),
        pytest.param(module("", "list(range(3))[k]"), "of the list `list(range(3))`", id="a list in place"),
        pytest.param(
            factory("    host = np.asarray(table)\n", "host[k]"),
            "of the NumPy array `host` that `make` binds",
            id="a factory's",
        ),
        pytest.param(
            factory("    scales = (1.0, 2.0, 3.0)\n", "scales[k]"),
            "of the tuple `scales` that `make` binds",
            id="a factory's tuple",
        ),
        pytest.param(
            module(
                "\n\nclass Table:\n    def __init__(self):\n        self.values = np.asarray([1.0, 2.0, 3.0])\n\n\n"
                "TABLE = Table()",
                "TABLE.values[k]",
            ),
            "of the NumPy array `TABLE.values` that `Table` keeps",
            id="a class's attribute",
        ),
    ],
)
def test_a_host_numpy_table_indexed_by_it_is_static(text: str, shown: str) -> None:
    # Before, the arithmetic with `k` made it a VJP001 with a safe fix (probe31's tests listed a
    # module-level NumPy array as taking a Tracer index, as a JAX array does): the moved `k`, a
    # Tracer under jit, then raised TracerArrayConversionError in the table's `__getitem__`.
    info = classified(text)
    assert info.kind is ArgKind.STATIC, info.evidence
    assert any(shown in e.text for e in info.evidence), info.evidence
    assert check_source(text, path="m.py", settings=ALL) == []
    assert fix_source(text, path="m.py", settings=Settings(frozenset(BY_CODE), True)).source == text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        pytest.param(
            module(LOADED),
            "used as an index of `_TABLE`, which nothing shows to be a JAX array rather than a Python list",
            id="a call's result",
        ),
        pytest.param(module("from tables import TABLE as _TABLE"), "of `_TABLE` (imported)", id="imported"),
        pytest.param(module("_TABLE = (1.0,)\n_TABLE = load()"), "of `_TABLE`", id="a module name bound twice"),
        pytest.param(module(LOADED, "_TABLE[k, 0]"), "of `_TABLE`", id="two indexes"),
        pytest.param(module(LOADED, "_TABLE[k - 1]"), "through `k - 1`", id="a value from it"),
        pytest.param(
            module(LOADED, "_TABLE.take(k)"),
            "passed to `.take` of `_TABLE`, which nothing shows to be a JAX array rather than a host NumPy one",
            id="take",
        ),
        pytest.param(module(LOADED, "_TABLE.item(k)"), "passed to `.item` of `_TABLE`", id="item"),
        pytest.param(
            module(LOADED, "_TABLE.get(k, 1.0)"),
            "passed as the key to `.get` of `_TABLE`, a method no array has",
            id="a dict's get",
        ),
        pytest.param(factory("", "table[k]"), "of `table`", id="a factory's parameter"),
        pytest.param(
            module("CFG = load()", "CFG.table.take(k)"), "passed to `.take` of `CFG.table`", id="an attribute"
        ),
        pytest.param(
            factory("    table = list(table)\n    table = table * 2\n", "table[k]"), "of `table`", id="rebound"
        ),
    ],
)
def test_a_table_of_unknown_kind_indexed_by_it_is_no_safe_fix(text: str, shown: str) -> None:
    (found,) = check_source(text, path="m.py", settings=ALL)
    assert (found.code, found.fixable) == ("VJP002", False), found.message
    assert any(shown in r.text for r in found.reasons), found.reasons
    assert fix_source(text, path="m.py").source == text


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(module("_TABLE = jnp.array([1.0, 2.0, 3.0])"), id="jnp.array"),
        pytest.param(module("_TABLE = jnp.arange(3.0)"), id="jnp.arange"),
        pytest.param(module("_TABLE = jnp.asarray(np.arange(3.0))"), id="jnp.asarray of NumPy"),
        pytest.param(module(LOADED.replace("_TABLE = load()", "_TABLE: jax.Array = load()")), id="annotated"),
        pytest.param(module("from jax import Array\n" + LOADED.replace("= load()", ": Array = load()")), id="Array"),
        pytest.param(factory("    arr = jnp.asarray(table)\n", "arr[k]"), id="a factory's JAX array"),
        pytest.param(module(LOADED, "(lambda t: t[k])(x)"), id="a lambda's parameter"),
        pytest.param(module(LOADED, "sum(t[k] for t in [x, x])"), id="a comprehension's target"),
        pytest.param(module(LOADED, "jnp.index_exp[k][0]"), id="JAX's index helper"),
        pytest.param(module(LOADED, "_TABLE[0]"), id="not the index"),
    ],
)
def test_a_table_that_takes_a_tracer_index_keeps_the_safe_fix(text: str) -> None:
    (found,) = check_source(text, path="m.py", settings=ALL)
    assert (found.code, found.fixable) == ("VJP001", True), found.message


def _grad_at(source: str, name: str) -> Any:
    """The jitted gradient in `x` of the module's `scale(x, 1)`, `k` a Python int."""
    scale = executed(source, name)["scale"]
    return jax.jit(jax.grad(lambda x: scale(x, 1)))(2.0)


@pytest.mark.parametrize(
    ("header", "error"),
    [
        pytest.param(NUMPY_TABLE, jax.errors.TracerArrayConversionError, id="a host NumPy table"),
        pytest.param(LOADED, jax.errors.TracerIntegerConversionError, id="a Python list of unknown kind"),
    ],
)
def test_the_original_runs_where_the_moved_argument_breaks(header: str, error: type[Exception]) -> None:
    # The move the old safe fix made (now no safe fix), asked for here through the configuration's
    # array-args.
    text = module(header)
    assert not fix_source(text, path="m.py", settings=ALL).changed
    assert float(_grad_at(text, "before.py")) == 2.0  # bwd: g * _TABLE[1] * k
    moved = fix_source(text, path="m.py", settings=Settings(frozenset(BY_CODE), array_args=frozenset({"scale:k"})))
    assert moved.changed
    with pytest.raises(error):
        _grad_at(moved.source, "after.py")


def test_a_jax_table_moved_gives_the_same_gradient() -> None:
    text = module("_TABLE = jnp.array([1.0, 2.0, 3.0])")
    moved = fix_source(text, path="m.py")
    assert moved.changed
    assert float(_grad_at(moved.source, "after.py")) == float(_grad_at(text, "before.py")) == 2.0


# What each host method needs past the argument, to be called at all.
_METHOD_ARGUMENTS: dict[str, tuple[Any, ...]] = {"put": (0.0,), "choose": (), "clip": ()}


@pytest.mark.parametrize("method", sorted(HOST_ARRAY_METHODS))
def test_each_listed_host_method_takes_no_tracer(method: str) -> None:
    table = np.arange(6.0)
    if method == "choose":
        call = lambda i: np.arange(2).choose([table[:2], i])  # noqa: E731
    elif method == "clip":
        call = lambda i: table.clip(0.0, i)  # noqa: E731
    else:
        call = lambda i: getattr(table.copy(), method)(i, *_METHOD_ARGUMENTS.get(method, ()))  # noqa: E731
    with pytest.raises((jax.errors.TracerArrayConversionError, jax.errors.TracerIntegerConversionError)):
        jax.jit(call)(1)


@pytest.mark.parametrize("method", ["astype", "view"])
def test_a_host_method_reading_only_a_dtype_takes_a_tracer(method: str) -> None:
    # Left out of the list: NumPy reads the Tracer's `.dtype` and runs.
    assert method not in HOST_ARRAY_METHODS
    jax.jit(lambda i: jnp.sum(jnp.asarray(getattr(np.arange(2, dtype=np.int32), method)(i))))(1)


@pytest.mark.parametrize("method", sorted(INDEXING_METHODS - {"item"}))
def test_a_jax_array_takes_a_tracer_where_numpy_does_not(method: str) -> None:
    # Why such a method of a table of unknown kind is a doubt, not a static use.
    assert method in HOST_ARRAY_METHODS
    jax.jit(lambda i: getattr(jnp.arange(6.0), method)(i))(1)
