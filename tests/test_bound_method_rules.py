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


def test_a_classmethod_rule_binds_its_class() -> None:
    # It was VJP003 ("decorated with `@classmethod`, which may depend on its signature"): the class
    # fills `cls` as the instance fills `self`, and the rewrite keeps it first.
    text = _layer("    def apply_bwd(self, w, x, g):\n        return (self.scale * w * g,)", "").replace(
        "self.apply.defvjp(self.apply_fwd, self.apply_bwd)", "self.apply.defvjp(self.apply_fwd, self.apply_bwd_)"
    )
    text += "\n    @classmethod\n    def apply_bwd_(cls, w, x, g):\n        return (w * g,)\n"
    (site,) = sites_of(text)
    assert site.bwd is not None and site.bwd.node is not None and site.bwd.bound_args == 1
    assert site.bwd.decorator_problem is None
    assert [(d.code, d.fixable) for d in check_source(text)] == [("VJP001", True)]
    fixed = fix_source(text).source
    assert (
        "    @classmethod\n    def apply_bwd_(cls, res, g):\n        w, _ = res\n        return (None, w * g)\n"
        in fixed
    )


def test_a_classmethod_rule_read_through_the_class_binds_its_class() -> None:
    # `Layer.apply_bwd` is bound to the class too: JAX's arguments come after `cls`. It was VJP004
    # ("bwd `Layer.apply_bwd` takes 4 parameters, but JAX calls it with ... = 3"), `cls` counted.
    text = textwrap.dedent(
        """
        from functools import partial
        import jax


        class Layer:
            @partial(jax.custom_vjp, nondiff_argnums=(0,))
            def apply(w, x):
                return w * x

            @staticmethod
            def apply_fwd(w, x):
                return w * x, x

            @classmethod
            def apply_bwd(cls, w, x, g):
                return (w * g,)


        Layer.apply.defvjp(Layer.apply_fwd, Layer.apply_bwd)
        """
    )
    (site,) = sites_of(text)
    assert site.bwd is not None and site.bwd.bound_args == 1 and site.fwd is not None and site.fwd.bound_args == 0
    assert [(d.code, d.fixable) for d in check_source(text)] == [("VJP001", True)]
    assert "    def apply_bwd(cls, res, g):\n        w, _ = res\n" in fix_source(text).source
    (found,) = check_source(text.replace("def apply_bwd(cls, w, x, g):", "def apply_bwd(cls, x, g):"))
    assert found.code == "VJP004" and "bwd `apply_bwd` takes 2 parameters after `cls`, but JAX" in found.message


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


# --- subclasses: `self.apply_bwd` is the subclass's own for one of its instances -------------------


@pytest.mark.parametrize(
    ("subclasses", "role", "why"),
    [
        pytest.param(
            "class Sub(Layer):\n    def apply_bwd(self, w, x, g):\n        return (2 * w * g,)\n",
            "bwd",
            "`Sub` (line 23) defines its own `apply_bwd`",
            id="bwd defined again",
        ),
        pytest.param(
            "class Sub(Layer):\n    def apply_fwd(self, w, x):\n        return jnp.sin(x) * w, 2 * x\n",
            "fwd",
            "`Sub` (line 23) defines its own `apply_fwd`",
            id="fwd defined again",
        ),
        pytest.param(
            "class Sub(Layer):\n    pass\n\n\nclass Leaf(Sub):\n    apply_bwd = staticmethod(lambda w, x, g: (g,))\n",
            "bwd",
            "`Leaf` (line 27) defines its own `apply_bwd`",
            id="a grandchild binds it by an assignment",
        ),
        pytest.param(
            "class Generic_(Layer[int]):\n    def apply_bwd(self, w, x, g):\n        return (g,)\n",
            "bwd",
            "`Generic_` (line 23) defines its own `apply_bwd`",
            id="a parametrized base",
        ),
        pytest.param(
            "class Fast:\n    def apply_bwd(self, w, x, g):\n        return (g,)\n\n\nclass Sub(Fast, Layer):\n    pass\n",
            "bwd",  # Fast has no apply_fwd
            "`Sub` (line 28) gets `apply_bwd` from `Fast`, a base listed before the one leading to `Layer`",
            id="a mixin of the module listed first",
        ),
        pytest.param(
            "class Sub(nn.Module, Layer):\n    pass\n",
            "fwd",  # named first: it may define either
            "`Sub` (line 23) also derives from `nn.Module`, not a class of this module, which may define `apply_fwd`",
            id="cannot tell: an imported base listed first",
        ),
    ],
)
def test_a_rule_a_subclass_may_replace_is_not_rewritten(subclasses: str, role: str, why: str) -> None:
    # Before, the fix rewrote `Layer`'s rules only: an instance of `Sub` registered its own, still
    # old-style, and every gradient through it failed (bwd: missing `g`; fwd: residuals unpacked wrong).
    text = _layer() + "\n\n" + subclasses
    (found,) = check_source(text, path="m.py")
    assert found.code == "VJP003" and not found.fixable
    method = f"apply_{role}"
    assert found.message.endswith(
        f"{role} `self.{method}` may be another method for an instance of a subclass: {why}, "
        f"and the rewrite would change `Layer.{method}` only"
    )
    assert fix_source(text, path="m.py", settings=Settings(frozenset(BY_CODE), True)).source == text


@pytest.mark.parametrize(
    "subclasses",
    [
        pytest.param("class Sub(Layer):\n    def extra(self):\n        return 1\n", id="a subclass keeping the rules"),
        pytest.param(
            "class Fast:\n    def apply_bwd(self, w, x, g):\n        return (g,)\n\n\nclass Sub(Layer, Fast):\n    pass\n",
            id="a mixin listed after the class",
        ),
        pytest.param("class Other:\n    def apply_bwd(self, w, x, g):\n        return (g,)\n", id="an unrelated class"),
        pytest.param("import abc\n\n\nclass Sub(abc.ABC, Layer):\n    pass\n", id="a plain base listed first"),
    ],
)
def test_subclasses_that_keep_the_rules_leave_the_fix_alone(subclasses: str) -> None:
    text = _layer() + "\n\n" + subclasses
    (found,) = check_source(text, path="m.py")
    assert (found.code, found.fixable) == ("VJP001", True)
    assert "def apply_bwd(self, res, g):" in fix_source(text, path="m.py").source


def test_rules_read_through_the_class_are_not_the_subclasss() -> None:
    # `Layer.apply.defvjp(Layer.apply_fwd, Layer.apply_bwd)`: the class's own functions, whatever
    # a subclass defines.
    text = textwrap.dedent(
        """
        from functools import partial
        import jax
        import jax.numpy as jnp


        class Layer:
            @partial(jax.custom_vjp, nondiff_argnums=(0,))
            def apply(w, x):
                return jnp.sin(x) * w

            def apply_fwd(w, x):
                return jnp.sin(x) * w, x

            def apply_bwd(w, x, g):
                return (w * g,)


        class Sub(Layer):
            def apply_bwd(w, x, g):
                return (2 * w * g,)


        Layer.apply.defvjp(Layer.apply_fwd, Layer.apply_bwd)
        """
    )
    (found,) = check_source(text, path="m.py")
    assert (found.code, found.fixable) == ("VJP001", True)
