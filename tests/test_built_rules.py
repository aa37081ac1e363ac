"""Rules a call builds (probe27 G4): `f, f_fwd, f_bwd = make("cpu")`, `f_bwd = make_bwd(k)`,
`f.defvjp(make_fwd(k), ...)`. The site cannot be rewritten (VJP003 names the calls), and when no
function names the nondiff arguments, each position is judged from the site's calls alone."""

from __future__ import annotations

import pytest
from helpers import sites_of

from vjp_migrate import screen
from vjp_migrate.api import check_source, fix_source
from vjp_migrate.codes import BY_CODE, DEFAULT_SELECT
from vjp_migrate.model import Diagnostic, Settings

ALL = Settings(frozenset(BY_CODE))
DEFAULT = Settings(DEFAULT_SELECT)


def checked(code: str, settings: Settings = DEFAULT) -> list[Diagnostic]:
    """check's findings; the structural screen must keep a file that has some."""
    found = check_source(code, settings=settings)
    assert screen.may_report(code, settings) or not found, "the screen drops a file with findings"
    return found


FACTORY = """\
import jax
import jax.numpy as jnp
from functools import partial

def make(k):
    def f(x, s, n):
        return x * s[0] * n * k
    def f_fwd(x, s, n):
        return f(x, s, n), None
    def f_bwd(s, n, _, g):
        return (g * s[0] * n * k,)
    return f, f_fwd, f_bwd

make_primal = make_fwd = make_bwd = make
"""

UNPACKED = """
f, f_fwd, f_bwd = make(2.0)
f = jax.custom_vjp(f, nondiff_argnums=(1, 2))
f.defvjp(f_fwd, f_bwd)
"""

IN_DEFVJP = """
f = make_primal(2.0)
f = jax.custom_vjp(f, nondiff_argnums=(1, 2))
f.defvjp(make_fwd(2.0), {bwd})
"""

BWD_ONLY = """
@partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def f(x, s, n):
    return x * n

def f_fwd(x, s, n):
    return f(x, s, n), None

f_bwd = make_bwd(2.0)
f.defvjp(f_fwd, f_bwd)
"""

CALLS = """
SIZES = jnp.array([2.0, 3.0])

def loss(x):
    return f(x, SIZES, 3).sum()
"""


@pytest.mark.parametrize(
    ("code", "roles", "detail"),
    [
        pytest.param(
            UNPACKED,
            ("the primal", "fwd", "bwd"),
            "its primal, fwd and bwd are built by a call (`make(...)`)",
            id="one factory, unpacked",
        ),
        pytest.param(
            IN_DEFVJP.format(bwd="make_bwd(2.0)"),
            ("the primal", "fwd", "bwd"),
            "built by calls (`make_primal(...)`, `make_fwd(...)` and `make_bwd(...)`)",
            id="calls given to defvjp",
        ),
        pytest.param(
            IN_DEFVJP.format(bwd="jax.jit(make_bwd(2.0))"),
            ("the primal", "fwd", "bwd"),
            "built by calls (`make_primal(...)`, `make_fwd(...)` and `make_bwd(...)`)",
            id="a factory under jax.jit",
        ),
        pytest.param(BWD_ONLY, ("bwd",), "its bwd is built by a call (`make_bwd(...)`)", id="bwd only"),
    ],
)
def test_a_rule_a_call_builds_is_named_in_the_site_s_problem(code: str, roles: tuple[str, ...], detail: str) -> None:
    (site,) = sites_of(FACTORY + code)
    assert tuple(role for role, _ in site.built_by) == roles
    assert site.problem is not None and detail in site.problem
    assert site.problem.endswith(", which vjp-migrate does not follow")


@pytest.mark.parametrize(
    "code",
    [
        pytest.param(
            UNPACKED.replace("f, f_fwd, f_bwd = make(2.0)", "from rules import f, f_fwd, f_bwd"), id="imported"
        ),
        pytest.param(
            UNPACKED.replace("= make(2.0)", "= make(2.0)\nif DEBUG:\n    f_fwd, f_bwd = print, print"),
            id="bound to a call and to something else",
        ),
        pytest.param(UNPACKED.replace("f.defvjp(f_fwd, f_bwd)", "f.defvjp(other.f_fwd, other.f_bwd)"), id="attributes"),
    ],
)
def test_a_rule_no_call_surely_builds_keeps_the_old_verdict(code: str) -> None:
    (site,) = sites_of(FACTORY + code)
    assert site.built_by == ()
    assert checked(FACTORY + code + CALLS, ALL) == []  # nothing names the positions


def test_a_global_array_passed_at_a_position_is_vjp003_with_no_fix() -> None:
    code = FACTORY + UNPACKED + CALLS
    found = checked(code, ALL)
    assert [(d.code, d.argument, d.index, d.fixable) for d in found] == [
        ("VJP003", "position 1", 1, False),
        ("VJP002", "position 2", 2, False),
    ]
    assert "(`SIZES`), made by `jnp.array([2.0, 3.0])`" in found[0].reasons[0].text
    assert "nor are its fwd and bwd, so its uses were not seen" in found[0].reasons[1].text
    assert not fix_source(code, settings=Settings(frozenset(BY_CODE), unsafe_fixes=True)).changed


def test_a_position_no_function_names_is_named_once_in_the_message() -> None:
    # review: "`position 1` (position 1) of custom_vjp `f`": the number stood for the name too
    built = "its primal, fwd and bwd are built by a call (`make(...)`), which vjp-migrate does not follow"
    assert [d.message for d in checked(FACTORY + UNPACKED + CALLS, ALL)] == [
        "position 1 of custom_vjp `f` is array-valued but listed in nondiff_argnums, and the rule cannot be "
        f"rewritten automatically: {built}",
        "cannot tell whether position 2 of custom_vjp `f` is an array or a static setting; if it can be a "
        f"Tracer it must leave nondiff_argnums, and the rule cannot be rewritten automatically: {built}",
    ]
    # a position a function names keeps its name with its number
    (named, _) = checked(FACTORY + BWD_ONLY + CALLS)
    assert named.message.startswith("`s` (position 1) of custom_vjp `f` is array-valued")


@pytest.mark.parametrize(
    ("calls", "codes"),
    [
        pytest.param(CALLS.replace("def loss(x):", "def loss(x, SIZES):"), ["VJP002", "VJP002"], id="a parameter"),
        pytest.param(CALLS.replace("f(x, SIZES, 3)", 'f(x, "cpu", (2, 3))'), [], id="static values only"),
        pytest.param("", ["VJP002", "VJP002"], id="no call"),
    ],
)
def test_each_position_is_judged_from_the_calls_alone(calls: str, codes: list[str]) -> None:
    assert [d.code for d in checked(FACTORY + UNPACKED + calls, ALL)] == codes
    assert checked(FACTORY + UNPACKED + calls) == []  # VJP002 is opt-in


def test_a_rule_built_by_a_call_beside_a_primal_def_is_judged_through_the_primal() -> None:
    found = checked(FACTORY + BWD_ONLY + CALLS)
    assert [(d.code, d.argument) for d in found] == [("VJP003", "s"), ("VJP003", "n")]  # `n`: the primal's arithmetic
    assert found[0].message.endswith("its bwd is built by a call (`make_bwd(...)`), which vjp-migrate does not follow")


def test_the_sites_own_binding_through_a_partial_alias_is_not_a_building_call() -> None:
    # review: `f = vjp_w(f)` (a module alias of partial(jax.custom_vjp, ...)) was named among the
    # calls that build the rules, as only the spellings built.py had copied were skipped
    code = """\
from functools import partial
import jax
import jax.numpy as jnp

vjp_w = partial(jax.custom_vjp, nondiff_argnums=(1,))


def make(kind):
    def f(x, s):
        return x * s

    def f_fwd(x, s):
        return f(x, s), None

    def f_bwd(s, res, g):
        return (g * s,)

    return f, f_fwd, f_bwd


f, f_fwd, f_bwd = make("cpu")
f = vjp_w(f)
f.defvjp(f_fwd, f_bwd)
SIZES = jnp.array([1.0, 2.0])
y = f(1.0, SIZES)
"""
    (found,) = checked(code)
    assert found.code == "VJP003"
    assert found.message.endswith(
        "its primal, fwd and bwd are built by a call (`make(...)`), which vjp-migrate does not follow"
    )
