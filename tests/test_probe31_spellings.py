"""Spellings probe31 found missed or misread (S7, S8, S10): a module alias of the partial, nondiff
arguments by position or as a set, `from jax import *`, a bare int, a list pair from fwd, and a
rebinding of several arguments in fwd. What JAX itself does with them is checked here too."""

from __future__ import annotations

import textwrap

import pytest
from helpers import sites_of

from vjp_migrate import screen
from vjp_migrate.api import check_source, fix_source
from vjp_migrate.codes import BY_CODE, DEFAULT_SELECT, may_trigger
from vjp_migrate.model import Settings

_ALL = Settings(frozenset(BY_CODE))

RULES = """
def f_fwd(x, w):
    return f(x, w), None

def f_bwd(w, _, g):
    return (g * w,)

f.defvjp(f_fwd, f_bwd)
"""

ALIAS = "from functools import partial\nimport jax\n\nvjp_w = partial(jax.custom_vjp, nondiff_argnums=(1,))\n"
DECORATED = "\n\n@vjp_w\ndef f(x, w):\n    return x * w\n"
CALLED = "\n\ndef _f(x, w):\n    return x * w\n\nf = vjp_w(_f)\n"


# --- S7: a module alias of `partial(jax.custom_vjp, ...)` -------------------------------------


@pytest.mark.parametrize("use", [pytest.param(DECORATED, id="@vjp_w"), pytest.param(CALLED, id="f = vjp_w(_f)")])
def test_a_module_alias_of_the_partial_gives_its_uses_their_nondiff_arguments(use: str) -> None:
    (site,) = sites_of(ALIAS + use + RULES)
    assert site.alias is not None and site.alias.name == "vjp_w"
    assert (site.nondiff.positions, site.problem, site.alias.uses, site.alias.exported) == ((1,), None, 1, False)
    assert site.bwd is not None and site.bwd.node is not None and site.bwd.node.name.value == "f_bwd"


@pytest.mark.parametrize(
    "form",
    [
        pytest.param("f = vjp_w(kernels.weighted)", id="through the alias"),
        pytest.param("f = jax.custom_vjp(kernels.weighted, (), ('w',))", id="by position"),
    ],
)
def test_a_primal_that_is_no_def_is_read_through_fwd_with_these_spellings(form: str) -> None:
    # sites.defvjp reads the options again with fwd's parameters, which nondiff_argnames names.
    code = ALIAS.replace("nondiff_argnums=(1,)", "nondiff_argnames=('w',)") + "import kernels\n" + form + "\n" + RULES
    (site,) = sites_of(code)
    assert (site.params, site.nondiff.positions) == (("x", "w"), (1,))
    (found,) = check_source(code, settings=_ALL)
    assert (found.code, found.argument, found.index) == ("VJP003", "w", 1)
    assert found.message.endswith(
        "nondiff_argnames names parameters of the primal `kernels.weighted`, which is not a function defined "
        "in this module, so their positions cannot be read"
    )


@pytest.mark.parametrize(
    "code",
    [
        pytest.param(ALIAS + "vjp_w = jax.custom_vjp\n" + DECORATED, id="bound twice"),
        pytest.param(ALIAS + "def g(vjp_w):\n    return vjp_w\n" + DECORATED, id="a parameter of the name"),
        pytest.param(ALIAS.replace("\nvjp_w", "\nif True:\n    vjp_w") + DECORATED, id="bound in a block"),
        pytest.param(
            ALIAS.replace("\nvjp_w =", "\ndef make():\n    vjp_w =") + "    return vjp_w\n" + DECORATED,
            id="bound in a function",
        ),
        pytest.param(ALIAS.replace("jax.custom_vjp, ", "jax.custom_vjp, print, ") + DECORATED, id="more than keywords"),
        pytest.param(ALIAS + CALLED.replace("vjp_w(_f)", "vjp_w(_f, nondiff_argnums=())"), id="a call given more"),
    ],
)
def test_an_alias_that_may_be_read_with_another_value_is_not_followed(code: str) -> None:
    assert sites_of(code + RULES) == []


def _private(code: str) -> str:
    return code.replace("vjp_w", "_vjp_w")


def test_a_private_alias_nothing_uses_any_more_goes_with_the_imports_only_it_used() -> None:
    before = _private(ALIAS.replace("\nvjp_w", "\n# the weights stay fixed\nvjp_w") + DECORATED + RULES)
    fixed = fix_source(before)
    after = fixed.source
    assert "vjp_w" not in after and "partial" not in after and "the weights stay fixed" not in after
    assert after.startswith("import jax\n\n\n@jax.custom_vjp\ndef f(x, w):")
    assert [d.notes for d in fixed.fixed] == [()]
    # On a line with another statement, only the assignment goes.
    after = fix_source(_private(ALIAS.replace("\nvjp_w", "\nA = 1; vjp_w") + DECORATED + RULES)).source
    assert after.startswith("import jax\n\nA = 1\n\n\n@jax.custom_vjp\ndef f(x, w):")


@pytest.mark.parametrize(
    ("alias", "keyword", "listed"),
    [
        pytest.param(ALIAS, "nondiff_argnums", "position 1", id="nondiff_argnums"),
        pytest.param(
            ALIAS.replace("nondiff_argnums=(1,)", "nondiff_argnames=('w',)"), "nondiff_argnames", "`w`", id="argnames"
        ),
    ],
)
@pytest.mark.parametrize("use", [pytest.param(DECORATED, id="@vjp_w"), pytest.param(CALLED, id="f = vjp_w(_f)")])
def test_a_public_alias_nothing_here_uses_any_more_stays_and_its_findings_say_so(
    alias: str, keyword: str, listed: str, use: str
) -> None:
    # review: another module may `from mod import vjp_w`; removing the alias broke that import
    before = alias + use + RULES
    fixed = fix_source(before)
    assert fixed.source.startswith(alias), "the alias and the import it needs stay as they are"
    assert "@jax.custom_vjp\ndef f(x, w):" in fixed.source or "f = jax.custom_vjp(_f)" in fixed.source
    note = (
        "the fix keeps the alias `vjp_w`, unused here, for the modules that may import it: its "
        f"{keyword} still lists {listed}"
    )
    (found,) = check_source(before)
    assert found.notes == (note,)
    assert [d.notes for d in fixed.fixed] == [(note,)]
    assert fix_source(fixed.source).source == fixed.source  # nothing left to fix, nothing noted


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        pytest.param("__all__ = ['_vjp_w']\n", "a string names it", id="exported"),
        pytest.param("\n\n@_vjp_w  # noqa: VJP001\ndef h(x, w):\n    return x * w\n", "a use left", id="noqa use"),
    ],
)
def test_a_private_alias_still_written_elsewhere_stays_as_it_is(extra: str, why: str) -> None:
    before = _private(ALIAS) + extra + _private(DECORATED) + RULES
    fixed = fix_source(before)
    assert "\n_vjp_w = partial(jax.custom_vjp, nondiff_argnums=(1,))\n" in fixed.source, why
    assert "\n@jax.custom_vjp\ndef f(x, w):" in fixed.source
    # `__all__` lists it: other modules may import it, so the fix notes it stays; a use left is no news
    assert [bool(d.notes) for d in fixed.fixed] == [why == "a string names it"]


def test_an_alias_giving_a_constant_leaves_the_constant_to_its_other_readers() -> None:
    before = textwrap.dedent(
        """\
        from functools import partial
        import jax

        _NONDIFF = (0, 1)
        vjp_w = partial(jax.custom_vjp, nondiff_argnums=_NONDIFF)

        @vjp_w
        def f(n, w, x):
            return jax.numpy.tile(x * w, n)

        def f_fwd(n, w, x):
            return f(n, w, x), None

        def f_bwd(n, w, _, g):
            return (g.reshape(n, -1).sum(0) * w,)

        f.defvjp(f_fwd, f_bwd)
        """
    )
    after = fix_source(_private(before)).source
    assert "_NONDIFF = (0, 1)\n" in after and "vjp_w" not in after
    assert "@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef f(n, w, x):" in after
    assert "def f_bwd(n, w, g):\n    return (None, g.reshape(n, -1).sum(0) * w)" in after


# --- S8: by position, a set, `from jax import *` ---------------------------------------------


def test_a_positional_nondiff_argnums_goes_but_keeps_the_place_of_a_positional_nondiff_argnames() -> None:
    before = textwrap.dedent(
        """\
        import jax

        def _f(x, w, n):
            return x * w * n

        f = jax.custom_vjp(_f, (1,), ("n",))

        def f_fwd(x, w, n):
            return f(x, w, n), None

        def f_bwd(w, n, _, g):
            for _ in range(n):
                g = g * 1.0
            return (g * w,)

        f.defvjp(f_fwd, f_bwd)
        """
    )
    (found,) = check_source(before)
    assert (found.code, found.argument, found.index) == ("VJP001", "w", 1)
    assert '\nf = jax.custom_vjp(_f, (), ("n",))\n' in fix_source(before).source


def test_a_set_of_positions_is_read_and_stays_a_set() -> None:
    before = (
        "from functools import partial\nimport jax\n\n@partial(jax.custom_vjp, nondiff_argnums={ 1, 2 })\n"
        "def f(x, w, n):\n    return x * w * n\n"
        + RULES.replace("x, w", "x, w, n")
        .replace("(w, _, g)", "(w, n, _, g)")
        .replace("    return (g * w,)", "    for _ in range(n):\n        g = g * 1.0\n    return (g * w,)")
    )
    (site,) = sites_of(before)
    assert site.nondiff.positions == (1, 2)
    assert "@partial(jax.custom_vjp, nondiff_argnums={ 2 })\n" in fix_source(before).source  # its layout too


STAR = "from functools import partial\nfrom jax import *\n\n@partial(custom_vjp, nondiff_argnums=(1,))\ndef f(x, w):\n    return x * w\n"


@pytest.mark.parametrize(
    ("code", "found"),
    [
        pytest.param(STAR, 1, id="from jax import *"),
        pytest.param(STAR.replace("from jax import", "from jax.custom_derivatives import"), 1, id="its module"),
        pytest.param(STAR.replace("from jax import *", "from jax import *\nfrom mylib import *"), 0, id="another star"),
        pytest.param(STAR + "custom_vjp = None\n", 0, id="bound by the module"),
        pytest.param(
            STAR.replace("from jax import *", "from jax import *\nfrom lib import custom_vjp"), 0, id="imported"
        ),
    ],
)
def test_a_bare_custom_vjp_is_jaxs_after_a_star_import_of_jax_only(code: str, found: int) -> None:
    assert len(sites_of(code + RULES)) == found


# --- S10: a bare int, a list pair, several arguments rebound ---------------------------------

INT = "from functools import partial\nimport jax\n\n@partial(jax.custom_vjp, nondiff_argnums={n})\ndef f(w, x):\n    return x * w\n"
INT_RULES = RULES.replace("(x, w)", "(w, x)")


def test_a_bare_zero_is_no_position_as_for_jax() -> None:
    (found,) = check_source(INT.format(n="0") + INT_RULES)
    assert found.code == "VJP004"
    assert found.message.endswith(
        "bwd `f_bwd` takes 3 parameters, but JAX calls it with 0 nondiff arguments + residuals + cotangent = 2, "
        "since JAX ignores `nondiff_argnums=0` (a falsy int lists no position; `(0,)` lists position 0)"
    )
    # Rules written for no nondiff argument work with JAX as they are.
    fitting = INT_RULES.replace("def f_bwd(w, _, g):\n    return (g * w,)", "def f_bwd(_, g):\n    return (g, g)")
    assert not check_source(INT.format(n="0") + fitting, settings=_ALL)


@pytest.mark.parametrize("given", ["1", "-1", "_ONE"])
def test_any_other_bare_int_is_a_type_error_for_jax(given: str) -> None:
    code = INT.format(n=given).replace("\n@", "\n_ONE = 1\n\n@") + INT_RULES
    (found,) = check_source(code, settings=_ALL)
    number = given.replace("_ONE", "1")
    assert (found.code, found.fixable) == ("VJP004", False)
    assert found.message == (
        f"in custom_vjp `f`, nondiff_argnums is the int {number}, not a tuple: JAX raises TypeError ('int' object "
        f"is not iterable) as soon as it wraps `f` (`({number},)` would list position {number})"
    )
    assert screen.may_report(code, Settings(DEFAULT_SELECT))


def test_a_list_pair_from_fwd_is_named_as_one_jax_accepts() -> None:
    code = INT.format(n="(0,)") + INT_RULES.replace("f(w, x), None", "[f(w, x), x]").replace("(w, _, g)", "(w, x, g)")
    assert "return [f(w, x), x]" in code
    (found,) = check_source(code)
    assert found.code == "VJP003"
    assert found.message.endswith(
        "fwd `f_fwd` returns the list `[f(w, x), x]`, a pair JAX accepts but that the rewrite does not "
        "extend: write it as a tuple `(output, residuals)`"
    )


def test_each_rebound_argument_is_named_in_position_order() -> None:
    code = textwrap.dedent(
        """\
        from functools import partial
        import jax
        import jax.numpy as jnp

        @partial(jax.custom_vjp, nondiff_argnums=(0, 1))
        def band(lo, hi, x):
            return x

        def band_fwd(lo, hi, x):
            lo, hi = jnp.minimum(lo, hi), jnp.maximum(lo, hi)
            return x, (x > lo) & (x < hi)

        def band_bwd(lo, hi, inside, g):
            return (jnp.where(inside, g, g * jnp.abs(hi - lo)),)

        band.defvjp(band_fwd, band_bwd)
        """
    )
    found = check_source(code)
    assert [(d.code, d.argument) for d in found] == [("VJP003", "lo"), ("VJP003", "hi")]
    assert all(d.message.endswith("fwd `band_fwd` assigns to `lo` and `hi` before saving them") for d in found)


# --- the cheap stages keep the new spellings ---------------------------------------------------


def test_a_file_with_only_a_positional_nondiff_argnums_passes_the_byte_filter() -> None:
    code = "import jax\nscale = jax.custom_vjp(_scale, (1,))\n"
    assert b"nondiff_arg" not in code.encode() and may_trigger(code.encode(), DEFAULT_SELECT)


@pytest.mark.parametrize("given", ["0", "1"])
def test_the_screen_keeps_a_bare_int_whatever_the_argument(given: str) -> None:
    # A callable is surely static, and the rules fit the position the int names: only VJP004 is
    # possible, and for the int itself (0: bwd takes one nondiff argument JAX never passes).
    code = textwrap.dedent(
        f"""\
        from functools import partial
        from typing import Callable
        import jax

        @partial(jax.custom_vjp, nondiff_argnums={given})
        def f(act: Callable, x):
            return act(x)

        def f_fwd(act: Callable, x):
            return f(act, x), x

        def f_bwd(act: Callable, x, g):
            return (jax.vjp(act, x)[1](g)[0],)

        f.defvjp(f_fwd, f_bwd)
        """
    )
    assert [d.code for d in check_source(code)] == ["VJP004"]
    assert screen.may_report(code, Settings(DEFAULT_SELECT))


# --- what JAX does (the messages above say so) -------------------------------------------------


def test_jax_reads_these_spellings_as_the_tool_does() -> None:
    jax = pytest.importorskip("jax")

    def f(x, w):
        return x * w

    assert jax.custom_vjp(f, (1,)).nondiff_argnums == (1,)  # by position
    assert jax.custom_vjp(f, nondiff_argnums={1}).nondiff_argnums == (1,)  # a set
    assert jax.custom_vjp(f, nondiff_argnums=0).nondiff_argnums == ()  # a falsy int: ignored
    for number in (1, -1):
        with pytest.raises(TypeError, match="'int' object is not iterable"):
            jax.custom_vjp(f, nondiff_argnums=number)
    namespace: dict[str, object] = {}
    exec("from jax import *", namespace)
    assert namespace["custom_vjp"] is jax.custom_vjp

    g = jax.custom_vjp(f, nondiff_argnums=(1,))
    g.defvjp(lambda x, w: [x * w, None], lambda w, _, ct: (ct * w,))  # a list pair from fwd
    assert float(jax.grad(g)(2.0, 3.0)) == 3.0
