"""plan.needs: a plan correct only with another site's plan applied (it passes a moved argument on
to that site's nondiff position), and the order `fix --interactive` asks the groups of plans in."""

from __future__ import annotations

import libcst as cst
import pytest

from vjp_migrate.api import DEFAULT_SETTINGS, analyze
from vjp_migrate.imports import import_table
from vjp_migrate.model import RewritePlan
from vjp_migrate.plan.needs import Needs, plan_needs, questions
from vjp_migrate.plan.shared import plan_groups

HEAD = "from functools import partial\n\nimport jax\nimport jax.numpy as jnp\n"

SITE = """

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def {name}(x, w):
    return jnp.sin({call})


def {name}_fwd(x, w):
    return jnp.sin({call}), x * w


def {name}_bwd(w, y, g):
    return (g * jnp.cos(y) * w,)


{name}.defvjp({name}_fwd, {name}_bwd)
"""


def chained(*sites: tuple[str, str | None]) -> str:
    """A module of custom_vjp functions (name, the one its primal and fwd pass `w` on to, or None),
    each keeping its array `w` in nondiff_argnums."""
    return HEAD + "".join(SITE.format(name=name, call=f"{to}(x, w)" if to else "x * w") for name, to in sites)


def _planned(code: str) -> tuple[list[RewritePlan], Needs]:
    analysis = analyze(code, "m.py", DEFAULT_SETTINGS)
    assert isinstance(analysis.module, cst.Module)
    plans = [d.plan for d in analysis.decisions if d.plan is not None]
    return plans, plan_needs(analysis.decisions, plans, import_table(analysis.module))


def _asked(code: str) -> list[tuple[list[str], list[tuple[int, str]]]]:
    plans, needs = _planned(code)
    return [([p.site.name for p in q.plans], list(q.needs)) for q in questions(plan_groups(plans), plans, needs)]


def test_a_plan_that_passes_its_moved_argument_on_needs_the_callees_plan() -> None:
    plans, needs = _planned(chained(("inner", None), ("outer", "inner")))
    assert [p.site.name for p in plans] == ["inner", "outer"]
    assert needs == {
        1: {
            0: "the primal `outer` passes `w` to position 1 of `inner`, which stays in nondiff_argnums: "
            "`w` would be a Tracer passed as a static argument"
        }
    }


def test_plans_that_pass_nothing_on_need_nothing() -> None:
    assert _planned(chained(("one", None), ("two", None)))[1] == {}


@pytest.mark.parametrize(
    ("sites", "asked"),
    [
        pytest.param([("inner", None), ("outer", "inner")], [["inner"], ["outer"]], id="callee first in the file"),
        pytest.param([("outer", "inner"), ("inner", None)], [["inner"], ["outer"]], id="callee last in the file"),
        pytest.param(
            [("a", "b"), ("b", "c"), ("c", None), ("free", None)],
            [["c"], ["b"], ["a"], ["free"]],
            id="a chain, then a site that needs nothing",
        ),
        pytest.param([("a", "b"), ("b", "a"), ("c", "a")], [["a", "b"], ["c"]], id="plans that need each other"),
    ],
)
def test_a_group_is_asked_after_the_groups_it_needs(
    sites: list[tuple[str, str | None]], asked: list[list[str]]
) -> None:
    found = _asked(chained(*sites))
    assert [names for names, _ in found] == asked
    for k, (_, needs) in enumerate(found):
        assert all(j < k for j, _ in needs)


def test_a_question_names_the_earlier_questions_it_needs() -> None:
    found = _asked(chained(("a", "b"), ("b", "c"), ("c", None)))
    assert [[j for j, _ in needs] for _, needs in found] == [[], [0], [1]]
    assert found[2][1][0][1].startswith("the primal `a` passes `w` to position 1 of `b`")
