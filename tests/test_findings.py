"""findings: a VJP002 whose rule cannot be rewritten says why and claims no fix."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import pytest
from click.testing import CliRunner
from helpers import executed

from vjp_migrate import screen
from vjp_migrate.api import check_source, fix_source
from vjp_migrate.cli import main
from vjp_migrate.codes import expand_selection
from vjp_migrate.model import FixSafety, Settings

BLOCKED = """\
from functools import partial

import jax
from forcefields import make_force


def _forward(box, x):
    return make_force(box) * x, (x,)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def evolve(box, x):
    return _forward(box, x)[0]


def evolve_fwd(box, x):
    return _forward(box, x)


def evolve_bwd(box, res, g):
    return (make_force(box) * g,)


evolve.defvjp(evolve_fwd, evolve_bwd)
"""
FIXABLE = BLOCKED.replace("return _forward(box, x)\n", "return _forward(box, x)[0], None\n")
REASON = "fwd `evolve_fwd` returns `_forward(box, x)`, not an `(output, residuals)` pair"
PLAIN = (
    "cannot tell whether `box` (position 0) of custom_vjp `evolve` is an array or a static setting; "
    "if it can be a Tracer it must leave nondiff_argnums"
)


def settings(unsafe: bool) -> Settings:
    return Settings(expand_selection(["ALL"], None), unsafe)


@pytest.mark.parametrize("unsafe", [pytest.param(False, id="safe fixes"), pytest.param(True, id="unsafe fixes")])
def test_blocked_vjp002_gives_the_reason_and_no_fix(unsafe: bool) -> None:
    (found,) = check_source(BLOCKED, settings=settings(unsafe))
    assert found.code == "VJP002"
    assert found.message == f"{PLAIN}, and the rule cannot be rewritten automatically: {REASON}"
    assert (found.fixable, found.fix_safety) == (False, FixSafety.NONE)
    result = fix_source(BLOCKED, settings=settings(unsafe))
    assert not result.changed and result.remaining == (found,)


def test_rewritable_vjp002_keeps_its_message_and_unsafe_fix() -> None:
    (without,) = check_source(FIXABLE, settings=settings(False))
    (with_,) = check_source(FIXABLE, settings=settings(True))
    assert without.message == with_.message == PLAIN
    assert (without.fixable, without.fix_safety) == (False, FixSafety.UNSAFE)
    assert (with_.fixable, with_.fix_safety) == (True, FixSafety.UNSAFE)
    assert fix_source(FIXABLE, settings=settings(True)).changed


@pytest.mark.parametrize("fmt", ["text", "concise", "json", "github", "sarif", "junit"])
def test_every_output_format_carries_the_reason(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "evolve.py"
    path.write_text(BLOCKED, encoding="utf-8")
    args = ["check", "--no-cache", "--select", "ALL", "--output-format", fmt, str(path)]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 1
    assert REASON.replace("`", "") in result.stdout.replace("`", "").replace("&#x27;", "'")
    if fmt == "json":
        (entry,) = json.loads(result.stdout)
        assert (entry["fixable"], entry["fix_safety"]) == (False, "none")
    if fmt == "sarif":
        (found,) = json.loads(result.stdout)["runs"][0]["results"]
        assert found["properties"]["fixSafety"] == "none" and "fixes" not in found


def test_inconsistency_messages_count_in_the_singular() -> None:
    code = (
        "import jax\nfrom functools import partial\n\n"
        "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef f(x, w):\n    return x * w\n\n"
        "def f_fwd(x, w):\n    return f(x, w), None\n\n"
        "def f_bwd(g):\n    return (g,)\n\n"
        "f.defvjp(f_fwd, f_bwd)\n"
    )
    (found,) = check_source(code)
    assert found.code == "VJP004"
    assert "takes 1 parameter, but JAX calls it with 1 nondiff argument + " in found.message, found.message


INCONSISTENT = """\
import jax
from functools import partial
{imports}
@partial(jax.custom_vjp, {nondiff})
def f(x, w{kw}):
    return x * w

def f_fwd(x, w):
    return f(x, w), x

{bwd}
f.defvjp(f_fwd, f_bwd)
"""
BWD = "def f_bwd(w, res, g):\n    return (g * w,)\n"


@pytest.mark.parametrize(
    ("imports", "nondiff", "kw", "bwd", "detail"),
    [
        pytest.param("", "nondiff_argnums=(-1,)", "", BWD, "nondiff_argnums lists position -1, but", id="negative"),
        pytest.param("", "nondiff_argnums=(2,)", "", BWD, "nondiff_argnums lists position 2, but `f`", id="beyond"),
        pytest.param("", "nondiff_argnums=(0, 1)", "", BWD, "bwd `f_bwd` takes 3 parameters, but", id="bwd arity"),
        pytest.param(
            "", 'nondiff_argnames=("v",)', ", *, v=1.0", BWD, "since JAX ignores `v` in", id="ignored argname"
        ),
        pytest.param("", "nondiff_argnums=(1,)", ", v=1.0", BWD, "fwd `f_fwd` takes 2 parameters, but", id="fwd arity"),
        pytest.param(
            "", "nondiff_argnums=(1,)", "", BWD.replace("(g * w,)", "g * w"), "returns a bare value", id="bare value"
        ),
        pytest.param(
            "",
            "nondiff_argnums=(1,)",
            "",
            BWD.replace("return (g * w,)", "ct = g * w\n    return ct"),
            "returns a bare value",
            id="a local bound to a bare value",
        ),
        pytest.param(
            "from consts import ND\n",
            "nondiff_argnums=ND",
            "",
            BWD.replace("(w, res", "(scale, res").replace("g * w", "g * scale"),
            "so which arguments nondiff_argnums lists cannot be told",
            id="imported argnums, bwd names no parameter",
        ),
        pytest.param(
            "from consts import ND\nfrom rules import f_bwd\n",
            "nondiff_argnums=ND",
            "",
            "",
            "and bwd `f_bwd` is imported from `rules`, so",
            id="imported argnums and bwd",
        ),
    ],
)
def test_every_inconsistency_reads_as_one_sentence(imports: str, nondiff: str, kw: str, bwd: str, detail: str) -> None:
    # One fixed opening, then one clause: no `has an inconsistent rule:` before a reason that is
    # no inconsistency (which arguments an imported nondiff_argnums lists), no second `:` or `;`.
    code = INCONSISTENT.format(imports=imports, nondiff=nondiff, kw=kw, bwd=bwd)
    (found,) = check_source(code)
    assert found.code == "VJP004" and found.message.startswith("in custom_vjp `f`, "), found.message
    assert detail in found.message and not {":", ";"} & set(found.message), found.message


def test_old_jax_partial_is_functools_partial() -> None:
    # Pre-#4008 code, the code most likely to be broken, spelled it `jax.partial` (JAX's re-export).
    code = (Path(__file__).parent.parent / "fixtures" / "seed_clip_gradient" / "before.py").read_text()
    old = code.replace("from functools import partial\n", "").replace("@partial(", "@jax.partial(")
    assert "@jax.partial(jax.custom_vjp" in old
    assert [d.code for d in check_source(old)] == [d.code for d in check_source(code)] == ["VJP001", "VJP001"]
    expected = (Path(__file__).parent.parent / "fixtures" / "seed_clip_gradient" / "after.py").read_text()
    assert fix_source(old).source == expected


def test_a_callable_or_array_argument_claims_no_fix_and_even_unsafe_fixes_leave_it() -> None:
    before = (Path(__file__).parent.parent / "fixtures" / "vjp001_callable_or_array_mask" / "before.py").read_text(
        encoding="utf-8"
    )
    settings = Settings(expand_selection(["ALL"], None), unsafe_fixes=True)
    (found,) = check_source(before, settings=settings)
    assert (found.code, found.argument, found.fixable, found.fix_safety) == ("VJP001", "mask", False, FixSafety.NONE)
    result = fix_source(before, settings=settings)
    assert (result.source, result.changed) == (before, False)


@pytest.mark.parametrize("unsafe", [False, True])
def test_what_blocks_an_unknown_argument_does_not_block_the_arrays_beside_it(unsafe: bool) -> None:
    # pkgprobe23 G6 (ejkernel): fwd rebinds the unknown `scale`, which only moving `scale` needs.
    fixture = Path(__file__).parent.parent / "fixtures" / "array_moves_while_a_rebound_scale_stays"
    before = (fixture / "before.py").read_text(encoding="utf-8")
    settings = Settings(expand_selection(["ALL"], None), unsafe_fixes=unsafe)
    found = check_source(before, settings=settings)
    assert [(d.code, d.argument, d.fixable) for d in found] == [("VJP001", "gamma", True), ("VJP002", "scale", False)]
    assert found[1].message.endswith(
        "the rule cannot be rewritten automatically: fwd `decay_fwd` assigns to `scale` before saving it"
    )
    assert fix_source(before, settings=settings).source == (fixture / "after.py").read_text(encoding="utf-8")


def test_an_array_blocked_by_its_own_rebinding_is_named_in_its_vjp003() -> None:
    # ejkernel's ring attention: fwd rebinds an unknown config and an array; the first rebinding
    # met moving everything was the config's, which the arrays' VJP003 named. Moving everything,
    # the unknown one's reason names both rebindings, the array's first (position order).
    fixture = Path(__file__).parent.parent / "fixtures" / "array_moves_while_a_rebound_scale_stays"
    before = (fixture / "before.py").read_text(encoding="utf-8").replace("gamma", "weights")
    signature = "def decay_fwd(x, weights, scale: float | None = None):\n"
    rebinds = before.replace(signature, signature + "    weights = weights * 1.0\n")
    rebinds = rebinds.replace(
        "    return (g * scale,)\n", "    return (g * scale * jnp.exp(weights),)\n"
    )  # fwd saves it
    assert rebinds.count("weights = weights") == 1 and "jnp.exp(weights),)" in rebinds
    found = check_source(rebinds, settings=Settings(expand_selection(["ALL"], None)))
    assert [(d.code, d.argument, d.message.rsplit(": ", 1)[-1]) for d in found] == [
        ("VJP003", "weights", "fwd `decay_fwd` assigns to `weights` before saving it"),
        ("VJP002", "scale", "fwd `decay_fwd` assigns to `weights` and `scale` before saving them"),
    ]


LISTED = """\
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, {keywords})
def f(x, w, b):
    return jnp.dot(x, w) + b


def f_fwd(x, w, b):
    return f(x, w, b), None


def f_bwd(w, b, _, g):
    return (jnp.dot(g, w.T) + 0 * b,)


f.defvjp(f_fwd, f_bwd)
"""


@pytest.mark.parametrize(
    ("keywords", "said"),
    [
        pytest.param("nondiff_argnums=(1, 2)", {"w": "nondiff_argnums", "b": "nondiff_argnums"}, id="argnums"),
        pytest.param('nondiff_argnames=("w", "b")', {"w": "nondiff_argnames", "b": "nondiff_argnames"}, id="argnames"),
        pytest.param(
            'nondiff_argnums=(1,), nondiff_argnames=("b",)',
            {"w": "nondiff_argnums", "b": "nondiff_argnames"},
            id="both",
        ),
    ],
)
def test_a_finding_names_the_keyword_that_lists_the_argument(keywords: str, said: dict[str, str]) -> None:
    found = check_source(LISTED.format(keywords=keywords))
    assert {d.argument: d.message for d in found} == {
        name: f"`{name}` (position {1 + (name == 'b')}) of custom_vjp `f` is array-valued but listed in {keyword}; "
        "it raises UnexpectedTracerError under jit/vmap/grad"
        for name, keyword in said.items()
    }


# probe27 G1a (primus_turbo's `_moe_combine_bwd` returns `recv_grad_x`): a safe fix made that
# `(*recv_grad_x, None)`, unpacking an array along its first axis.
@pytest.mark.parametrize(
    ("body", "broken"),
    [
        pytest.param("ct = g * w\n    return ct", True, id="arithmetic"),
        pytest.param("ct = jnp.multiply(g, w)\n    return ct", True, id="an array function"),
        pytest.param("ct = g\n    return ct", True, id="the cotangent"),
        pytest.param("ct = (g * w,)\n    return ct", False, id="a tuple"),
        pytest.param("ct = g * w\n    ct = (ct,)\n    return ct", False, id="rebound to a tuple"),
        pytest.param("ct = vjp_fn(g)\n    return ct", False, id="a call that may give a tuple"),
    ],
)
def test_bwd_returning_a_local_bound_to_one_array_is_broken(body: str, broken: bool) -> None:
    code = INCONSISTENT.format(imports="import jax.numpy as jnp\n", nondiff="nondiff_argnums=(1,)", kw="", bwd="")
    code = code.replace("f.defvjp", f"def f_bwd(w, res, g):\n    vjp_fn = jnp.negative\n    {body}\n\nf.defvjp")
    found = check_source(code, settings=Settings(expand_selection(["ALL"], None)))
    assert [d.code for d in found] == (["VJP004"] if broken else ["VJP001"]), found
    assert screen.may_report(code, Settings(expand_selection(["VJP004"], None))) or not broken
    if broken:  # JAX agrees: the original fails under grad
        with pytest.raises(TypeError, match="tuple"):
            jax.grad(executed(code, "bare.py")["f"])(1.0, 2.0)


# probe27 G1b (a phylogenetics likelihood's fwd takes `(alignment, ..., distances)` for the primal's
# `(distances, alignment, ...)`) and G7 (a sparse solver's bwd takes `(transpose, coordinates, ...)`
# for nondiff `(coordinates, transpose)`): a safe fix built residuals from the misnamed locals.
PERMUTED = """\
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def gather(x, idx, n):
    return jnp.sum(x[idx]) * n


def gather_fwd(x, idx, n):
    return gather(x, idx, n), x.shape


def gather_bwd(idx, n, shape, g):
    return (jnp.zeros(shape).at[idx].add(g * n),)


gather.defvjp(gather_fwd, gather_bwd)
"""


@pytest.mark.parametrize(
    ("old", "new", "detail"),
    [
        pytest.param(
            "def gather_fwd(x, idx, n):",
            "def gather_fwd(idx, n, x):",
            "fwd `gather_fwd` takes the parameters of `gather` in another order (`idx`, `n`, `x` against `x`, "
            "`idx`, `n`), but JAX passes them in the primal's order",
            id="fwd",
        ),
        pytest.param(
            "def gather_bwd(idx, n, shape, g):",
            "def gather_bwd(n, idx, shape, g):",
            "bwd `gather_bwd` names its nondiff parameters in another order (`n`, `idx` against `idx`, `n` in "
            "`gather`), but JAX passes them in the primal's order",
            id="bwd",
        ),
        pytest.param("def gather_fwd(x, idx, n):", "def gather_fwd(x, i, n):", None, id="other names are no order"),
    ],
)
def test_rule_parameters_named_in_another_order_are_a_broken_rule(old: str, new: str, detail: str | None) -> None:
    code = PERMUTED.replace(old, new)
    everything = Settings(expand_selection(["ALL"], None))
    found = check_source(code, settings=everything)
    if detail is None:
        assert "VJP004" not in [d.code for d in found], found
        return
    assert [(d.code, d.message) for d in found] == [("VJP004", f"in custom_vjp `gather`, {detail}")]
    assert fix_source(code, settings=Settings(everything.select, unsafe_fixes=True)).source == code
    assert screen.may_report(code.replace("x[idx]", "x[0]").replace("* n", ""), Settings(frozenset({"VJP004"})))
    with pytest.raises((TypeError, IndexError)):  # each name holds another argument: the rule is broken
        jax.grad(executed(code, "permuted.py")["gather"])(jax.numpy.arange(3.0), 1, 2.0)


# probe28 G1 (b3d's `interpolate_bwd` returns 2 cotangents for 3 differentiable arguments): no
# VJP004, and with an array in nondiff_argnums a safe fix made `(None, g * y * n)`, still one short.
SHORT = """\
from functools import partial

import jax


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def f(n, x, y):
    return x * y * n


def f_fwd(n, x, y):
    return f(n, x, y), (x, y)


def f_bwd(n, res, g):
    x, y = res
    return (g * y * n,)


f.defvjp(f_fwd, f_bwd)
"""


@pytest.mark.parametrize(
    ("returned", "detail"),
    [
        pytest.param("(g * y * n,)", "returns 1 cotangent, but `f` has 2 differentiable arguments", id="one short"),
        pytest.param(
            "(g * y, g * x, n)", "returns 3 cotangents, but `f` has 2 differentiable arguments", id="one more"
        ),
        pytest.param("[g * y * n]", "returns 1 cotangent, but", id="a list"),
        pytest.param("(g * y * n, g * x * n)", None, id="right"),
        pytest.param("(*grads,)", None, id="starred: unknown length"),
    ],
)
def test_bwd_returning_another_number_of_cotangents_is_a_broken_rule(returned: str, detail: str | None) -> None:
    code = SHORT.replace("(g * y * n,)", returned).replace("    x, y = res\n", "    x, y = res\n    grads = (g, g)\n")
    found = check_source(code, settings=Settings(expand_selection(["ALL"], None)))
    if detail is None:
        assert "VJP004" not in [d.code for d in found], found
        return
    assert [d.code for d in found] == ["VJP004"] and detail in found[0].message, found
    assert fix_source(code, settings=Settings(expand_selection(["ALL"], None), unsafe_fixes=True)).source == code
    static = code.replace("f(n, x, y)", "f(act, x, y)").replace(" * n", "").replace("n, res", "act, res")
    assert screen.may_report(static, Settings(frozenset({"VJP004"})))
    with pytest.raises(TypeError, match="bwd rule"):
        jax.grad(executed(code, "short.py")["f"], argnums=1)(2.0, 3.0, 4.0)
