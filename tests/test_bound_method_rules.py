"""sites.methods: a custom_vjp of a class body whose rules the instance registers in a method,
`self.apply.defvjp(self.apply_fwd, self.apply_bwd)`. The call is found, the rules are the
class's methods with `self` bound (JAX's arguments come after it), and their arity is judged
after `self`. A screen never drops such a file."""

from __future__ import annotations

import textwrap

import pytest
from conftest import FIXTURES
from helpers import sites_of

from vjp_migrate import screen
from vjp_migrate.api import check_source, fix_source
from vjp_migrate.codes import BY_CODE, DEFAULT_SELECT
from vjp_migrate.model import Settings

LAYER = """
from functools import partial
import jax
import jax.numpy as jnp


class Layer:
    def __init__(self, scale):
        self.scale = scale
        self.apply.defvjp(self.apply_fwd, self.apply_bwd)

    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def apply(w, x):
        return jnp.sin(x) * w

    def apply_fwd(self, w, x):
        return jnp.sin(x) * w, x

    def apply_bwd(self, w, x, g):
        return (self.scale * w * g,)
"""


def _layer(old: str = "", new: str = "") -> str:
    return textwrap.dedent(LAYER).replace(old, new) if old else textwrap.dedent(LAYER)


def test_the_rules_are_the_classs_methods_with_self_bound() -> None:
    (site,) = sites_of(_layer())
    assert site.problem is None and site.defvjp is not None
    assert site.fwd is not None and site.fwd.node is not None and site.fwd.node.name.value == "apply_fwd"
    assert site.bwd is not None and site.bwd.node is not None and site.bwd.node.name.value == "apply_bwd"
    assert (site.fwd.bound_args, site.bwd.bound_args) == (1, 1)


def test_a_consistent_site_is_reported_with_its_safe_fix() -> None:
    (found,) = check_source(_layer())
    assert (found.code, found.function, found.argument, found.fixable) == ("VJP001", "Layer.apply", "w", True)


@pytest.mark.parametrize(
    ("old", "new", "detail"),
    [
        pytest.param(
            "def apply_bwd(self, w, x, g):",
            "def apply_bwd(self, x, g):",
            "bwd `apply_bwd` takes 2 parameters after `self`, but JAX calls it with 1 nondiff argument"
            " + residuals + cotangent = 3",
            id="bwd lacks the nondiff argument",
        ),
        pytest.param(
            "def apply_fwd(self, w, x):",
            "def apply_fwd(self, x):",
            "fwd `apply_fwd` takes 1 parameter after `self`, but the primal `apply` takes 2",
            id="fwd lacks an argument",
        ),
    ],
)
def test_a_bound_rule_of_the_wrong_arity_is_vjp004(old: str, new: str, detail: str) -> None:
    text = _layer(old, new)
    (found,) = check_source(text)
    assert found.code == "VJP004"
    assert detail in found.message
    for select in (DEFAULT_SELECT, frozenset({"VJP004"}), frozenset(BY_CODE)):
        assert screen.may_report(text, Settings(select))


def test_a_bound_rule_whose_arity_looks_right_with_self_counted_keeps_the_file() -> None:
    # fwd (self, w) and bwd (self, x, g) have the primal's counts with `self`: the screen must not
    # judge them so, since JAX fills the parameters after `self`.
    text = _layer("def apply_fwd(self, w, x):", "def apply_fwd(self, w):").replace(
        "def apply_bwd(self, w, x, g):", "def apply_bwd(self, x, g):"
    )
    assert [d.code for d in check_source(text, settings=Settings(frozenset({"VJP004"})))] == ["VJP004"]
    assert screen.may_report(text, Settings(frozenset({"VJP004"})))


def test_a_staticmethod_rule_binds_nothing() -> None:
    text = _layer("    def apply_bwd(self, w, x, g):\n        return (self.scale * w * g,)", "").replace(
        "self.apply.defvjp(self.apply_fwd, self.apply_bwd)", "self.apply.defvjp(self.apply_fwd, self.apply_bwd_)"
    )
    text += "\n    @staticmethod\n    def apply_bwd_(w, x, g):\n        return (w * g,)\n"
    (site,) = sites_of(text)
    assert site.bwd is not None and site.bwd.node is not None and site.bwd.bound_args == 0
    assert [d.code for d in check_source(text)] == ["VJP001"]


def test_different_rules_in_two_methods_are_not_guessed() -> None:
    text = _layer() + "\n    def reset(self):\n        self.apply.defvjp(self.apply_fwd, self.other_bwd)\n"
    (site,) = sites_of(text)
    assert site.problem is not None and "several methods with different rules" in site.problem


def test_a_call_outside_the_class_is_named_not_denied() -> None:
    text = _layer("        self.apply.defvjp(self.apply_fwd, self.apply_bwd)\n", "        pass\n")
    text += "\n\nclass Sub(Layer):\n    def __init__(self, scale):\n        super().__init__(scale)\n"
    text += "        self.apply.defvjp(self.apply_fwd, self.apply_bwd)\n"
    (site,) = sites_of(text)
    assert site.problem is not None
    assert "no `apply.defvjp(fwd, bwd)` call was found" not in site.problem
    assert "`self.apply.defvjp(fwd, bwd)` is called outside the methods of `Layer`" in site.problem


def test_rules_of_a_call_form_bound_to_the_instance_are_its_methods() -> None:
    text = textwrap.dedent(
        """
        import jax


        class Layer:
            def __init__(self, scale):
                self.f = jax.custom_vjp(self.layer, nondiff_argnums=(0,))
                self.f.defvjp(self.layer_fwd, self.layer_bwd)

            def layer(self, w, x):
                return w * x

            def layer_fwd(self, w, x):
                return w * x, x

            def layer_bwd(self, w, x, g):
                return (w * g,)
        """
    )
    (site,) = sites_of(text)
    assert site.bwd is not None and site.bwd.node is not None and site.bwd.bound_args == 1
    assert site.params == ("w", "x")  # read from fwd, after `self`
    assert [(d.code, d.argument) for d in check_source(text)] == [("VJP001", "w")]


def test_a_bound_method_rule_used_elsewhere_in_its_class_is_not_rewritten() -> None:
    # review: only module-level rules were searched for other uses, so `direct` broke after the fix
    code = (FIXTURES / "bound_method_rules_registered_in_init" / "before.py").read_text(encoding="utf-8")
    code = code.replace(
        "\n\nDEFAULT = ", "\n    def direct(self, x, g):\n        return self.apply_bwd(2.0, x, g)\n\n\nDEFAULT = "
    )
    (found,) = check_source(code, path="m.py")
    assert found.code == "VJP003" and not found.fixable
    assert found.message.endswith(
        "bwd `apply_bwd` is also used on line 25, not only by defvjp, and the rewrite would change what that use gets"
    )
    assert fix_source(code, path="m.py").source == code
