"""classify on containers reached through an attribute (class_containers.py): a tuple, list or
string a class keeps (`SCALES = (...)` in its body, `self.scales = [...]` in `__init__`), read
through a method's instance, a def inside a method, the class or a module-level instance, takes
only a concrete int as its index, and a dict it keeps hashes its key: the argument is static.
When nothing tells what the attribute holds (`self.table = table`), a Python list stays possible:
a doubt, so never a safe fix; an attribute a JAX array function fills takes a Tracer index."""

from __future__ import annotations

import textwrap

import pytest

from vjp_migrate.api import check_source, fix_source
from vjp_migrate.codes import BY_CODE
from vjp_migrate.model import Settings

ALL = Settings(frozenset(BY_CODE))

# A factory method whose custom_vjp reads `{read}` with `k`, and does arithmetic with `k` too.
FACTORY = """
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
{header}

class Table:
{body}
    def make(self):
        @partial(jax.custom_vjp, nondiff_argnums=(0,))
        def scale(k, x):
            return x * {read} + k

        def scale_fwd(k, x):
            return scale(k, x), None

        def scale_bwd(k, _, g):
            return (g * {read},)

        scale.defvjp(scale_fwd, scale_bwd)
        return scale
{footer}
"""

# A module-level custom_vjp reading `{read}` with `k`, and doing arithmetic with `k` too.
MODULE = """
from functools import partial

import jax
import jax.numpy as jnp

{header}


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def scale(k, x):
    return x * {read} + k


def scale_fwd(k, x):
    return scale(k, x), None


def scale_bwd(k, _, g):
    return (g * {read},)


scale.defvjp(scale_fwd, scale_bwd)
"""


def _factory(body: str, read: str, header: str = "", footer: str = "") -> str:
    return FACTORY.format(body=textwrap.indent(textwrap.dedent(body), "    "), read=read, header=header, footer=footer)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(_factory("SCALES = (1.0, 0.5)\n", "self.SCALES[k]"), id="class body tuple, through self"),
        pytest.param(
            _factory("def __init__(self):\n    self.scales = [1.0, 0.5]\n", "self.scales[k]"),
            id="list assigned in __init__",
        ),
        pytest.param(_factory("AXES = 'xyz'\n", "len(self.AXES[k])"), id="class body string"),
        pytest.param(_factory("TABLE = {1: 1.0}\n", "self.TABLE.get(k, 0.5)"), id="class body dict's get"),
        pytest.param(_factory("SCALES = (1.0, 0.5)\n", "Table.SCALES[k]"), id="through the class"),
        pytest.param(
            MODULE.format(header="class Levels:\n    LEVELS = (1.0, 0.5)", read="Levels.LEVELS[k]"),
            id="module function, through the class",
        ),
        pytest.param(
            MODULE.format(
                header="class Config:\n    def __init__(self):\n        self.scales = [1.0, 0.5]\n\n\nCFG = Config()",
                read="CFG.scales[k]",
            ),
            id="through a module-level instance",
        ),
    ],
)
def test_a_container_a_class_keeps_makes_its_index_static(text: str) -> None:
    # Before, the arithmetic made `k` a VJP001 with a safe fix, after which a jitted call with
    # `k` a Python int failed: the tuple or list got a Tracer as its index.
    assert check_source(text, path="m.py", settings=ALL) == []
    assert fix_source(text, path="m.py", settings=Settings(frozenset(BY_CODE), True)).source == text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        pytest.param(
            _factory("def __init__(self, table):\n    self.table = table\n", "self.table[k]"),
            "used as an index of `self.table`, which nothing shows to be a JAX array rather than a Python list or tuple",
            id="assigned from a parameter",
        ),
        pytest.param(
            _factory("def __init__(self, table):\n    self.table = table\n", "self.table.get(k, 1.0)"),
            "passed as the key to `.get` of `self.table`, a method no array has",
            id="its get, assigned from a parameter",
        ),
        pytest.param(
            _factory("SCALES = (1.0, 0.5)\n", "self.SCALES[k]", footer="\n\nclass Fast(Table):\n    SCALES = load()\n"),
            "of `self.SCALES`",
            id="a subclass binds it again",
        ),
        pytest.param(
            _factory("SCALES = (1.0, 0.5)\n", "self.SCALES[k]", footer="\n\nTable.SCALES = load()\n"),
            "of `self.SCALES`",
            id="assigned elsewhere in the module",
        ),
        pytest.param(
            _factory("scales: tuple = (1.0, 0.5)\n", "self.scales[k]", header="\n\n@dataclass"),
            "of `self.scales`",
            id="a dataclass field's default",
        ),
        pytest.param(MODULE.format(header="CFG = load()", read="CFG.scales[k]"), "of `CFG.scales`", id="module object"),
    ],
)
def test_an_attribute_of_unknown_contents_indexed_by_it_is_no_safe_fix(text: str, shown: str) -> None:
    (found,) = check_source(text, path="m.py", settings=ALL)
    assert (found.code, found.fixable) == ("VJP002", False), found.message
    assert any(shown in e.text for e in found.reasons), found.reasons
    assert fix_source(text, path="m.py").source == text


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(
            _factory("def __init__(self, table):\n    self.table = jnp.asarray(table)\n", "self.table[k]"),
            id="a JAX array the class keeps",
        ),
        pytest.param(
            _factory("table: jax.Array\n", "self.table[k]", header="\n\n@dataclass"),
            id="a field the class annotates as an array",
        ),
        pytest.param(MODULE.format(header="", read="x.at[k].get()"), id="an array's own attribute"),
        pytest.param(MODULE.format(header="", read="jnp.index_exp[k][0]"), id="a module's attribute"),
    ],
)
def test_an_attribute_that_takes_a_tracer_index_leaves_the_safe_fix(text: str) -> None:
    (found,) = check_source(text, path="m.py", settings=ALL)
    assert (found.code, found.fixable) == ("VJP001", True), found.message
