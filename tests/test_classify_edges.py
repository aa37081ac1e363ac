"""classify at the edges of the rules the last sessions added: items of ``*args``, early returns
on a type test, traced call sites and configs registered as pytrees with no leaves. Each test
pins one decision a hand-made mutant of classify.py got through unnoticed (notes/mut17-findings.md)."""

from __future__ import annotations

import pytest
from test_classify import HEADER, classified, lines, site_module

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
