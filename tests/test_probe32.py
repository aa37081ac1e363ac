"""What probe32 found (P1, P5): a fwd that deletes a moved argument before the residual would
read it, and a module that defines a custom_vjp and its rules again under the same names (a
notebook exported as a script). What JAX itself does with them is checked here too."""

from __future__ import annotations

import textwrap

import pytest
from helpers import executed, sites_of

from vjp_migrate.api import check_source, fix_source
from vjp_migrate.codes import BY_CODE
from vjp_migrate.model import Settings

_ALL = Settings(frozenset(BY_CODE))

# --- P1: fwd deletes the argument the residual would save ------------------------------------

DELETES = """\
from functools import partial
import jax
import jax.numpy as jnp

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, w):
    return x * w

def f_fwd(x, w):
    y = x * w
    tmp = y
{deletes}
    return y, (x,)

def f_bwd(w, res, g):
    (x,) = res
    return (g * w,)

f.defvjp(f_fwd, f_bwd)
"""


@pytest.mark.parametrize(
    "deletes",
    [
        pytest.param("    del w", id="del w"),
        pytest.param("    del tmp, w  # free memory early", id="del of a tuple"),
        pytest.param("    del (tmp, w)", id="del of a parenthesized tuple"),
        pytest.param("    del [tmp, (w,)]", id="del of a nested list"),
        pytest.param("    if y.ndim > 0:\n        del w", id="del under an if"),
        pytest.param("    try:\n        pass\n    finally:\n        del w", id="del in a finally block"),
    ],
)
def test_a_fwd_deleting_a_saved_argument_is_vjp003(deletes: str) -> None:
    # The residual would read `w` after the `del`: UnboundLocalError under plain jax.grad.
    code = DELETES.format(deletes=deletes)
    (found,) = check_source(code, settings=_ALL)
    assert (found.code, found.argument, found.fixable) == ("VJP003", "w", False)
    assert found.message.endswith(
        "the rule cannot be rewritten automatically: fwd `f_fwd` deletes `w` before saving it"
    )
    assert fix_source(code, settings=Settings(frozenset(BY_CODE), unsafe_fixes=True)).source == code


def test_a_fwd_deleting_one_argument_and_rebinding_another_names_both() -> None:
    code = DELETES.replace("nondiff_argnums=(1,)", "nondiff_argnums=(0, 2)").replace("(x, w)", "(a, x, w)")
    code = code.replace("def f_bwd(w, res, g)", "def f_bwd(a, w, res, g)").replace("(g * w,)", "(g * w * a,)")
    code = code.replace("    return x * w\n", "    return x * w * a\n").format(deletes="    a = 2.0\n    del w")
    found = check_source(code, settings=_ALL)
    assert [(d.code, d.argument) for d in found] == [("VJP003", "a"), ("VJP003", "w")]
    assert all(d.message.endswith("fwd `f_fwd` assigns to `a` and deletes `w` before saving them") for d in found)


def test_a_fwd_deleting_an_argument_bwd_never_reads_is_still_fixed() -> None:
    # Nothing is saved for it: the `del` is no obstacle.
    code = DELETES.format(deletes="    del w").replace("(g * w,)", "(g * 2.0,)")
    (found,) = check_source(code, settings=_ALL)
    assert (found.code, found.fixable) == ("VJP001", True)
    assert "    del w\n    return y, (x,)\n" in fix_source(code).source


def test_a_bwd_deleting_a_moved_argument_after_reading_it_deletes_the_unpacked_name() -> None:
    # After the rewrite bwd binds `w` itself (from the residual): its `del w` is as valid as before.
    jax = pytest.importorskip("jax")
    code = DELETES.format(deletes="").replace(
        "    return (g * w,)\n", "    gx = g * w\n    if gx.ndim:\n        del w\n    return (gx,)\n"
    )
    after = fix_source(code).source
    assert "def f_bwd(res, g):\n    (w, x) = res\n    gx = g * w\n    if gx.ndim:\n        del w\n" in after
    before_f, after_f = executed(code, "before.py")["f"], executed(after, "after.py")["f"]
    x, w = jax.numpy.arange(3.0), jax.numpy.array([1.0, 2.0, 3.0])
    expected = jax.grad(lambda x: before_f(x, w).sum())(x)
    assert (jax.jit(jax.grad(lambda x, w: after_f(x, w).sum()))(x, w) == expected).all()


def test_jax_raises_unbound_local_error_for_a_residual_read_after_its_del() -> None:
    # What fix wrote before: `w` saved after fwd's `del w`; plain jax.grad then fails.
    jax = pytest.importorskip("jax")
    wrong = DELETES.format(deletes="    del w").replace("(x,)\n\ndef", "(w, x)\n\ndef")
    wrong = wrong.replace("nondiff_argnums=(1,)", "nondiff_argnums=()")
    wrong = wrong.replace(
        "def f_bwd(w, res, g):\n    (x,) = res\n    return (g * w,)",
        "def f_bwd(res, g):\n    (w, x) = res\n    return (g * w, None)",
    )
    assert "    del w\n    return y, (w, x)\n" in wrong and "    (w, x) = res\n" in wrong  # the old fix
    f = executed(wrong, "after.py")["f"]
    with pytest.raises(UnboundLocalError):
        jax.grad(lambda x: f(x, 2.0))(1.0)


# --- P5: a custom_vjp and its rules defined again under the same names ------------------------

REDEFINED = textwrap.dedent(
    """\
    from functools import partial
    import jax
    import jax.numpy as jnp

    @partial(jax.custom_vjp, nondiff_argnums=(1,))
    def f(x, w):
        return x * w

    def f_fwd(x, w):
        return x * w, None

    def f_bwd(w, res, g):
        return (g * w,)

    f.defvjp(f_fwd, f_bwd)
    linear = f

    @partial(jax.custom_vjp, nondiff_argnums=(1,))
    def f(x, n):
        return jnp.tile(x, n)

    def f_fwd(x, n):
        return jnp.tile(x, n), None

    def f_bwd(n, res, g):
        return (g.reshape(n, -1).sum(0),)

    f.defvjp(f_fwd, f_bwd)
    tile = f
    """
)


def test_each_definition_takes_its_own_defvjp_call_and_the_rules_defined_before_it() -> None:
    first, second = sites_of(REDEFINED)
    assert first.problem is None and second.problem is None
    assert first.defvjp is not None and second.defvjp is not None and first.defvjp is not second.defvjp
    for site, param in ((first, "w"), (second, "n")):
        assert site.primal is not None and site.primal.params.params[1].name.value == param
        for rule in (site.fwd, site.bwd):
            assert rule is not None and rule.node is not None
            assert param in {p.name.value for p in rule.node.params.params}


def test_the_first_definitions_array_argument_is_reported_and_fixed() -> None:
    (found,) = check_source(REDEFINED, settings=_ALL)
    assert (found.code, found.argument, found.line, found.fixable) == ("VJP001", "w", 6, True)
    after = fix_source(REDEFINED).source
    assert "def f_bwd(w, g):\n    return (g * w, None)\n" in after
    assert "def f_bwd(n, res, g):\n    return (g.reshape(n, -1).sum(0),)\n" in after


def test_a_call_form_primal_defined_again_is_read_where_the_site_is() -> None:
    code = REDEFINED.replace(
        "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef f(x, w):\n    return x * w\n",
        "def _impl(x, w):\n    return x * w\n\nf = jax.custom_vjp(_impl, nondiff_argnums=(1,))\n",
    ).replace(
        "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef f(x, n):\n    return jnp.tile(x, n)\n",
        "def _impl(x, n):\n    return jnp.tile(x, n)\n\nf = jax.custom_vjp(_impl, nondiff_argnums=(1,))\n",
    )
    first, second = sites_of(code)
    assert first.primal is not None and first.primal.params.params[1].name.value == "w"
    assert second.primal is not None and second.primal.params.params[1].name.value == "n"
    assert [(d.code, d.argument, d.line) for d in check_source(code, settings=_ALL)] == [("VJP001", "w", 5)]


def test_a_definition_with_no_defvjp_call_before_the_next_one_has_no_rules() -> None:
    code = REDEFINED.replace("f.defvjp(f_fwd, f_bwd)\nlinear = f\n", "linear = f\n", 1)
    first, second = sites_of(code)
    assert first.problem == "no `f.defvjp(fwd, bwd)` call follows it before `f` is bound again (line 18)"
    assert second.problem is None
    (found,) = check_source(code, settings=_ALL)
    assert (found.code, found.argument) == ("VJP003", "w")


def test_a_registration_function_between_the_definitions_still_counts() -> None:
    # Called later, `register()` would reach whichever `f` the module holds then.
    code = REDEFINED.replace("linear = f\n", "linear = f\n\ndef register():\n    f.defvjp(f_fwd, f_bwd)\n", 1)
    first, _ = sites_of(code)
    assert first.problem is not None and first.problem.startswith("`f` is registered twice (lines 15 and 19)")


def test_rules_both_definitions_register_are_shared_and_rewritten_once() -> None:
    second = REDEFINED.index("@partial", REDEFINED.index("linear = f"))
    code = REDEFINED[:second] + (
        "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef f(x, w):\n    return 2.0 * x * w\n\n"
        "f.defvjp(f_fwd, f_bwd)\n"
    )
    first, again = sites_of(code)
    assert first.bwd is not None and again.bwd is not None and first.bwd.node is again.bwd.node
    after = fix_source(code).source
    assert after.count("@jax.custom_vjp\n") == 2 and after.count("def f_bwd(w, g):\n") == 1


def test_two_definitions_in_if_branches_are_still_registered_twice() -> None:
    # A site under an `if` has no stretch of its own: every call of its scope counts, as before.
    code = textwrap.dedent(
        """\
        import jax
        from functools import partial

        if FAST:
            @partial(jax.custom_vjp, nondiff_argnums=(1,))
            def f(x, w):
                return x * w

            def _bwd(w, res, g):
                return (g * w,)

            f.defvjp(lambda x, w: (x * w, None), _bwd)
        else:
            @partial(jax.custom_vjp, nondiff_argnums=(1,))
            def f(x, w):
                return x * w * 2.0

            def _bwd(w, res, g):
                return (2.0 * g * w,)

            f.defvjp(lambda x, w: (2.0 * x * w, None), _bwd)
        """
    )
    first, second = sites_of(code)
    assert first.problem == second.problem
    assert first.problem is not None and first.problem.startswith("`f` is registered twice (lines 12 and 21)")
    assert first.bwd is not None and second.bwd is not None and first.bwd.node is not second.bwd.node


def test_jax_registers_each_definitions_rules_on_its_own_function() -> None:
    jax = pytest.importorskip("jax")
    namespace = executed(REDEFINED, "before.py")
    x = jax.numpy.arange(3.0)
    assert jax.grad(lambda x: namespace["linear"](x, 3.0).sum())(x).tolist() == [3.0, 3.0, 3.0]
    assert jax.grad(lambda x: namespace["tile"](x, 2).sum())(x).tolist() == [2.0, 2.0, 2.0]
