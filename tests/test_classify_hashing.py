"""classify on module-level values that hash what they are given (classify/hashing.py): a function
cached through a call, and a dict the module binds once, looked up with the argument as its key."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import pytest
from test_classify import classify

from vjp_migrate.model import ArgKind

_CACHED = "import functools\nfrom functools import cache, lru_cache\ndef _window(n):\n    return make(n)\n"


@pytest.mark.parametrize(
    ("binding", "shown"),
    [
        pytest.param("functools.lru_cache(maxsize=None)(_window)", "functools.lru_cache", id="lru_cache called"),
        pytest.param("lru_cache(_window)", "lru_cache", id="lru_cache applied"),
        pytest.param("cache(_window)", "cache", id="cache"),
    ],
)
def test_an_argument_passed_to_a_function_cached_through_a_call_is_static(binding: str, shown: str) -> None:
    extra = f"{_CACHED}window = {binding}\n"
    kind, reasons, _ = classify("return x * window(a)", "return (g * a,)", extra=extra)
    assert kind is ArgKind.STATIC, reasons
    assert reasons[0].startswith(f"passed to `window`, which `{shown}` caches by its arguments"), reasons


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param("window = functools.lru_cache(maxsize=4)\n", id="a decorator still"),
        pytest.param("window = cache(_window)\nwindow = _window\n", id="bound twice"),
        pytest.param("window = jax.jit(_window)\n", id="no caching decorator"),
    ],
)
def test_a_name_not_bound_once_to_a_cached_function_hashes_nothing(extra: str) -> None:
    kind, reasons, _ = classify("return x * window(a)", "return (g * a,)", extra=_CACHED + extra)
    assert kind is ArgKind.ARRAY, reasons


def test_a_local_of_the_cached_name_hides_it() -> None:
    extra = f"{_CACHED}window = cache(_window)\n"
    kind, reasons, _ = classify("window = lambda n: n\n    return x * window(a)", "return (g * a,)", extra=extra)
    assert kind is ArgKind.ARRAY, reasons


@pytest.mark.parametrize(
    ("binding", "use"),
    [
        pytest.param("_BUFFERS = {}", "_BUFFERS.setdefault(a, [])", id="setdefault on a literal"),
        pytest.param("_BUFFERS = {0: 1.0}", "_BUFFERS.get(a, 2.0)", id="get"),
        pytest.param("_BUFFERS: dict[int, float] = dict()", "_BUFFERS.pop(a, None)", id="pop on dict()"),
        pytest.param("_BUFFERS = collections.defaultdict(list)", "_BUFFERS[a]", id="subscript of a defaultdict"),
        pytest.param("_BUFFERS = {k: k for k in range(3)}", "a in _BUFFERS", id="in a comprehension"),
        pytest.param("_BUFFERS = {}", "8 + 4 * a not in _BUFFERS", id="a value from it, not in"),
    ],
)
def test_an_argument_used_as_a_key_of_a_module_dict_is_static(binding: str, use: str) -> None:
    # classify20's G7 (maxtext r18): `_BUFFERS.setdefault(key, ...)` hashes the key.
    extra = f"import collections\n{binding}\n"
    kind, reasons, _ = classify(f"found = {use}\n    return x * a", "return (g * a,)", extra=extra)
    assert kind is ArgKind.STATIC, reasons
    assert "of the module-level dict `_BUFFERS`" in reasons[0], reasons


@pytest.mark.parametrize(
    ("binding", "body"),
    [
        pytest.param("_BUFFERS = {}", "_BUFFERS = {}\n    found = _BUFFERS.get(a)", id="a local dict"),
        pytest.param("_BUFFERS = {}\n_BUFFERS = load()", "found = _BUFFERS.get(a)", id="bound twice"),
        pytest.param("_BUFFERS = []", "found = _BUFFERS.pop(a)", id="a list"),
        pytest.param("_BUFFERS = {}", "found = _BUFFERS.get(0, a)", id="the default, not the key"),
    ],
)
def test_no_module_dict_key_no_hashing(binding: str, body: str) -> None:
    kind, reasons, _ = classify(f"{body}\n    return x * a", "return (g * a,)", extra=f"{binding}\n")
    assert kind is ArgKind.ARRAY, reasons


def test_a_tracer_is_no_key_of_a_dict_nor_of_a_cached_function() -> None:
    buffers: dict[object, float] = {0: 1.0}
    window = functools.lru_cache(maxsize=None)(lambda n: 1.0)
    for use in (buffers.get, lambda k: buffers.setdefault(k, 1.0), lambda k: k in buffers, window):
        assert use(0) is not None
        with pytest.raises(TypeError, match="unhashable"):
            jax.jit(use)(jnp.int32(0))
