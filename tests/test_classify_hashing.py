"""classify on values that hash what they are given (classify/hashing.py, scoped_hashing.py): a
function cached through a call, and a dict bound once, looked up with the argument as its key, of
the module, of a factory around the site, or kept by the class of a method."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import pytest
from helpers import parse
from test_classify import classified, classify

from vjp_migrate.classify import classify_site
from vjp_migrate.classify.context import Context
from vjp_migrate.model import ArgInfo, ArgKind
from vjp_migrate.sites import find_sites
from vjp_migrate.walk import index_of

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
        pytest.param("_BUFFERS = {}", "_BUFFERS = load()\n    found = _BUFFERS.get(a)", id="a local binding"),
        pytest.param("_BUFFERS = []", "found = _BUFFERS.pop(a)", id="a list"),
        pytest.param("_BUFFERS = {}", "found = _BUFFERS.get(0, a)", id="the default, not the key"),
    ],
)
def test_no_module_dict_key_no_hashing(binding: str, body: str) -> None:
    kind, reasons, _ = classify(f"{body}\n    return x * a", "return (g * a,)", extra=f"{binding}\n")
    assert kind is ArgKind.ARRAY, reasons


def test_a_key_of_a_module_name_bound_twice_is_a_doubt() -> None:
    # Not surely a dict, so nothing proves the key static; yet a dict there hashes it, and nothing
    # proves an array either (none has `.get`): no safe fix (this case was once listed as ARRAY).
    extra = "_BUFFERS = {}\n_BUFFERS = load()\n"
    kind, reasons, _ = classify("found = _BUFFERS.get(a)\n    return x * a", "return (g * a,)", extra=extra)
    assert kind is ArgKind.UNKNOWN, reasons
    assert "passed as the key to `.get` of `_BUFFERS`, a method no array has" in reasons[0], reasons


def test_a_tracer_is_no_key_of_a_dict_nor_of_a_cached_function() -> None:
    buffers: dict[object, float] = {0: 1.0}
    window = functools.lru_cache(maxsize=None)(lambda n: 1.0)
    for use in (buffers.get, lambda k: buffers.setdefault(k, 1.0), lambda k: k in buffers, window):
        assert use(0) is not None
        with pytest.raises(TypeError, match="unhashable"):
            jax.jit(use)(jnp.int32(0))


# --- a factory's dicts and cached functions, a class's dicts (scoped_hashing.py) -----------------

_FACTORY_SITE = (
    "import functools\nfrom functools import partial\nimport jax\nimport numpy as np\n"
    "def make_tagged():\n"
    "{bound}"
    "    @partial(jax.custom_vjp, nondiff_argnums=(1,))\n"
    "    def tagged(x, key):\n        return x * (key + 1)\n"
    "    def tagged_fwd(x, key):\n{use}        return x * (key + 1), None\n"
    "    def tagged_bwd(key, _, g):\n        return (g * (key + 1),)\n"
    "    tagged.defvjp(tagged_fwd, tagged_bwd)\n    return tagged\n"
)


@pytest.mark.parametrize(
    ("bound", "use", "shown"),
    [
        pytest.param(
            "    buffers = {}\n",
            "        buffers.setdefault(key, [])\n",
            "used as a key of the dict `buffers` that `make_tagged` binds (`.setdefault`)",
            id="setdefault",
        ),
        pytest.param(
            "    buffers = dict()\n",
            "        seen = key not in buffers\n",
            "used as a key of the dict `buffers` that `make_tagged` binds (`in`)",
            id="not in",
        ),
        pytest.param(
            "    def _window(n):\n        return np.hanning(n)\n"
            "    window = functools.lru_cache(maxsize=None)(_window)\n",
            "        window(key)\n",
            "passed to `window`, which `functools.lru_cache` caches by its arguments",
            id="lru_cache called",
        ),
    ],
)
def test_a_key_of_a_factory_s_dict_or_an_argument_of_its_cached_function_is_static(
    bound: str, use: str, shown: str
) -> None:
    # classify21 left these: main made `key` (arithmetic) VJP001 with a safe fix, which for the
    # cached function fails under jit (TypeError: unhashable, test below).
    info = classified(_FACTORY_SITE.format(bound=bound, use=use))
    assert info.kind is ArgKind.STATIC, info.evidence
    assert info.evidence[0].text.startswith(shown), info.evidence


@pytest.mark.parametrize(
    ("bound", "use"),
    [
        pytest.param(
            "    buffers = {}\n",
            "        buffers = [1]\n        buffers.index(key)\n",
            id="a local of the rule hides it",
        ),
        pytest.param("    buffers = []\n", "        buffers.index(key)\n", id="no dict"),
        pytest.param(
            "    window = functools.lru_cache(maxsize=4)\n", "        window(key)\n", id="a decorator, not a function"
        ),
    ],
)
def test_no_factory_dict_or_cached_function_seen_hashes_nothing(bound: str, use: str) -> None:
    info = classified(_FACTORY_SITE.format(bound=bound, use=use))
    assert info.kind is ArgKind.ARRAY, info.evidence


def test_a_key_of_a_factory_name_bound_twice_is_a_doubt() -> None:
    # `buffers` may be the dict, which hashes the key: no safe fix (this case was once listed as ARRAY).
    info = classified(
        _FACTORY_SITE.format(
            bound="    buffers = {}\n    buffers = None\n", use="        buffers.setdefault(key, [])\n"
        )
    )
    assert info.kind is ArgKind.UNKNOWN, info.evidence
    assert "passed as the key to `.setdefault` of `buffers`" in info.evidence[0].text, info.evidence


_CLASS_SITE = (
    "from functools import partial\nimport jax\n"
    "class Tagger:\n{bound}"
    "    @partial(jax.custom_vjp, nondiff_argnums=(0, 2))\n"
    "    def tagged(self, x, key):\n        return x * ({use} + 1)\n"
    "    def _fwd(self, x, key):\n        return self.tagged(x, key), None\n"
    "    def _bwd(self, key, _, g):\n        return (g,)\n"
    "    tagged.defvjp(_fwd, _bwd)\n"
)


@pytest.mark.parametrize(
    ("bound", "use", "shown"),
    [
        pytest.param(
            "    _table = {}\n",
            "self._table.get(key, 0)",
            "used as a key of the dict `self._table` that `Tagger` keeps (`.get`)",
            id="in the class body",
        ),
        pytest.param(
            "    def __init__(self):\n        self._table = {}\n",
            "self._table[key]",
            "used as a key of the dict `self._table` that `Tagger` keeps (a subscript)",
            id="in __init__",
        ),
    ],
)
def test_a_key_of_a_dict_the_method_s_class_keeps_is_static(bound: str, use: str, shown: str) -> None:
    (_, info) = _both(_CLASS_SITE.format(bound=bound, use=use))
    assert info.kind is ArgKind.STATIC, info.evidence
    assert info.evidence[0].text.startswith(shown), info.evidence


@pytest.mark.parametrize(
    ("bound", "use"),
    [
        pytest.param(
            "    def __init__(self):\n        self._table = {}\n    def reset(self):\n        self._table = None\n",
            "self._table.get(key, 0)",
            id="bound to something else too",
        ),
        pytest.param("    _table = []\n", "self._table.index(key)", id="no dict"),
        pytest.param("    _table = {}\n", "(self := other)._table.get(key, 0)", id="self rebound"),
    ],
)
def test_no_dict_the_class_keeps_hashes_nothing(bound: str, use: str) -> None:
    (_, info) = _both(_CLASS_SITE.format(bound=bound, use=use))
    assert info.kind is not ArgKind.STATIC, info.evidence


def _both(code: str) -> list[ArgInfo]:
    module, imports = parse(code)
    (site,) = find_sites(module, imports)
    return classify_site(site, module, Context.of(module, imports, index_of(module).line))


def test_a_cached_function_of_a_factory_called_with_a_tracer_is_unhashable() -> None:
    def make() -> object:
        window = functools.lru_cache(maxsize=None)(lambda n: float(n))
        return lambda x, n: x * window(n)

    run = make()
    assert run(2.0, 3) == 6.0  # type: ignore[operator]
    with pytest.raises(TypeError, match="unhashable"):
        jax.jit(run)(2.0, 3)
