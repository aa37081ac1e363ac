"""The cheap stages before LibCST (the byte filter and the ast screen) never drop a file with a finding.

Soundness is proved, not sampled: the full pipeline and the screen run over every fixture and
every file of the installed JAX, for several selections; and the word sets the screen uses are
checked to be supersets (or, for the static proofs, subsets) of the tables classify uses.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from functools import cache
from pathlib import Path

import jax
import pytest
from conftest import FIXTURES, read_exact
from test_classify_module_tables import LOADED, NUMPY_TABLE, factory, module

from vjp_migrate import imports, screen, vocabulary
from vjp_migrate.api import analyze, check_paths
from vjp_migrate.codes import BY_CODE, CODES, DEFAULT_SELECT, may_trigger, triggers_for
from vjp_migrate.model import Settings, Status
from vjp_migrate.screen import names as screen_names
from vjp_migrate.screen.array_use import STATIC_KEYWORDS

ALL = frozenset(BY_CODE)
SELECTIONS = [
    pytest.param(DEFAULT_SELECT, id="default codes"),
    pytest.param(ALL, id="all codes"),
    *(pytest.param(frozenset({c.code}), id=f"only {c.code}") for c in CODES),
]


def _fixture_texts() -> list[tuple[str, str]]:
    found = []
    for path in sorted(FIXTURES.glob("*/*.py")):
        found.append((f"{path.parent.name}/{path.name}", read_exact(path)))
    return found


@cache
def _jax_hits() -> tuple[tuple[str, str], ...]:
    """Files of the installed JAX that pass the byte filter of any code (the rest cannot report)."""
    root = Path(jax.__file__).parent
    return tuple(
        (str(p.relative_to(root)), p.read_text(encoding="utf-8"))
        for p in sorted(root.rglob("*.py"))
        if may_trigger(p.read_bytes(), ALL)
    )


def _findings(text: str, name: str, settings: Settings) -> list[str]:
    try:
        return [d.code for d in analyze(text, name, settings).diagnostics]
    except Exception:  # unparsable: nothing to prove
        return []


# --- the byte filter ------------------------------------------------------------------------


def test_filter_words_are_derived_from_the_codes_table() -> None:
    for select in (DEFAULT_SELECT, ALL, *(frozenset({c.code}) for c in CODES)):
        assert set(triggers_for(select)) == {w for code in select for w in BY_CODE[code].triggers}
    for code in CODES:
        assert code.triggers, f"{code.code} needs trigger words, or the byte filter would drop every file"


@pytest.mark.parametrize("select", SELECTIONS)
def test_every_finding_in_the_fixtures_sits_in_a_file_with_its_codes_trigger(select: frozenset[str]) -> None:
    for name, text in _fixture_texts():
        data = text.encode("utf-8")
        for code in _findings(text, name, Settings(select)):
            assert may_trigger(data, frozenset({code})), f"{name}: {code} without its trigger word or pattern"


SPELLINGS = {
    "jax.custom_vjp via partial": "from functools import partial\nimport jax\n@partial(jax.custom_vjp, nondiff_argnums=(0,))",
    "alias J": "import functools\nimport jax as J\n@functools.partial(J.custom_vjp, nondiff_argnums=(0,))",
    "from jax import custom_vjp as cv": "from functools import partial as p\nfrom jax import custom_vjp as cv\n@p(cv, nondiff_argnums=(0,))",
    "custom_derivatives path": "import functools as ft\nimport jax\n@ft.partial(jax.custom_derivatives.custom_vjp, nondiff_argnums=(0,))",
    "nondiff_argnames": "from functools import partial\nimport jax\n@partial(jax.custom_vjp, nondiff_argnames=('scale',))",
    "set literal": "from functools import partial\nimport jax\n@partial(jax.custom_vjp, nondiff_argnums={0})",
    "star import of jax": "from functools import partial\nfrom jax import *\n@partial(custom_vjp, nondiff_argnums=(0,))",
    "module alias of the partial": (
        "from functools import partial\nimport jax\nvjp_s = partial(jax.custom_vjp, nondiff_argnums=(0,))\n@vjp_s"
    ),
}
BODY = """
def f(scale, x):
    return x * scale

def f_fwd(scale, x):
    return x * scale, None

def f_bwd(scale, _, g):
    return (g * scale,)

f.defvjp(f_fwd, f_bwd)
"""


@pytest.mark.parametrize("header", [pytest.param(v, id=k) for k, v in SPELLINGS.items()])
def test_every_supported_spelling_passes_both_cheap_stages(header: str) -> None:
    text = header + "\n" + textwrap.dedent(BODY).lstrip()
    assert _findings(text, "spelling.py", Settings(DEFAULT_SELECT)) == ["VJP001"]
    assert may_trigger(text.encode(), DEFAULT_SELECT)
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


CALL_SPELLINGS = {
    "positional nondiff_argnums": "import jax\n{rules}f = jax.custom_vjp(_f, (0,))",
    "positional nondiff_argnames": "import jax\n{rules}f = jax.custom_vjp(_f, (), ('scale',))",
    "positional, imported under another name": "from jax import (custom_vjp  # JAX's\n    as cv)\n{rules}f = cv(_f, (0,))",
    "positional, parenthesized": "import jax\n{rules}f = (jax.custom_vjp)(_f, (0,))",
    "positional, generic": "import jax\n{rules}f = jax.custom_vjp[object](_f, (0,))",
    "positional, a comment before the arguments": "import jax\n{rules}f = (jax.custom_vjp  # ours\n    (_f, (0,)))",
    "positional, a line continuation": "import jax\n{rules}f = jax.custom_vjp \\\n    (_f, (0,))",
    "module alias of the partial, called": (
        "import functools\nimport jax\nvjp_s = functools.partial(jax.custom_vjp, nondiff_argnums=(0,))\n"
        "{rules}f = vjp_s(_f)"
    ),
}
CALL_RULES = BODY.replace("def f(", "def _f(").replace("f.defvjp(f_fwd, f_bwd)\n", "")


@pytest.mark.parametrize("template", [pytest.param(v, id=k) for k, v in CALL_SPELLINGS.items()])
def test_every_supported_call_spelling_passes_both_cheap_stages(template: str) -> None:
    # probe31 S7, S8: no `nondiff_arg` word in the positional ones; the byte filter's pattern keeps them.
    text = template.format(rules=textwrap.dedent(CALL_RULES).lstrip()) + "\nf.defvjp(f_fwd, f_bwd)\n"
    assert _findings(text, "spelling.py", Settings(DEFAULT_SELECT)) == ["VJP001"]
    assert may_trigger(text.encode(), DEFAULT_SELECT)
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("import jax\n\n@jax.custom_vjp\ndef f(x):\n    return x\n", id="a plain decorator"),
        pytest.param("import jax\n\nf.defvjp(f_fwd, f_bwd)  # see jax.custom_vjp\n", id="a mention"),
        pytest.param("from jax import custom_vjp, custom_jvp\n", id="an import under its own name"),
    ],
)
def test_the_byte_filters_pattern_leaves_custom_vjp_without_nondiff_arguments_alone(text: str) -> None:
    assert not may_trigger(text.encode(), ALL)


# --- the structural screen: soundness ---------------------------------------------------------


@pytest.mark.parametrize("select", SELECTIONS)
def test_screen_keeps_every_fixture_with_a_finding(select: frozenset[str]) -> None:
    for name, text in _fixture_texts():
        settings = Settings(select)
        if _findings(text, name, settings):
            assert screen.may_report(text, settings), f"the screen dropped {name}, which has findings"


@pytest.mark.parametrize(
    "case",
    ["jitted_loop_over_warp_offsets", "jitted_helper_scales_warp_offset", "jitted_partial_leaves_warp_offset_open"],
)
def test_screen_keeps_the_fixtures_whose_argument_a_jit_traces_through_a_loop_a_helper_or_a_partial(case: str) -> None:
    # A default-selection finding that only a traced value at a call site gives (classify17).
    text = read_exact(FIXTURES / case / "before.py")
    for select in (DEFAULT_SELECT, frozenset({"VJP001"})):
        assert _findings(text, case, Settings(select)) == ["VJP001"]
        assert screen.may_report(text, Settings(select)), f"the screen dropped {case} under {sorted(select)}"


def test_screen_keeps_the_fixture_whose_argument_holds_a_prng_key() -> None:
    text = (FIXTURES / "prng_key_holder_moved" / "before.py").read_text(encoding="utf-8")
    assert _findings(text, "before.py", Settings(DEFAULT_SELECT)) == ["VJP001"]
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


_DISAGREEING_CALL_SITES = """\
from functools import partial
import jax
import jax.numpy as jnp

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def f(s, x):
    return x * s

def f_fwd(s, x):
    return f(s, x), None

def f_bwd(s, _, g):
    return (g * s,)

f.defvjp(f_fwd, f_bwd)

@partial(jax.jit, static_argnames=("s",))
def run(x, s):
    return f(s, x)

def by_norm(x):
    return f(jnp.linalg.norm(x), x)
"""


def test_screen_keeps_call_sites_that_disagree() -> None:
    # classify: a static value passed at one call site (a jit-static parameter, a function, a
    # constant) no longer outweighs an array passed at another (`jnp.linalg.norm(x)`): VJP001.
    # The screen must keep a site one of whose call sites passes a `jnp`/`np` call whenever its
    # only static proof comes from call sites.
    assert screen.may_report(_DISAGREEING_CALL_SITES, Settings(DEFAULT_SELECT))
    assert _findings(_DISAGREEING_CALL_SITES, "disagree.py", Settings(DEFAULT_SELECT))


_SCALE_SITE = """\
from functools import partial
import jax

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def f(s, x):
    return x * 2.0

def f_fwd(s, x):
    return f(s, x), None

def f_bwd(s, _, g):
    return (g * s,)

f.defvjp(f_fwd, f_bwd)
"""
_KERNEL_SITE = """\
from functools import partial
import jax
from elsewhere import kernel

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def f(s, x):
    return kernel(x, s)

def f_fwd(s, x):
    return kernel(x, s), x

def f_bwd(s, x, g):
    return (kernel(g, s),)

f.defvjp(f_fwd, f_bwd)
"""


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(
            _KERNEL_SITE + "@jax.jit\ndef run(x, flag: bool = True):\n    return f(flag, x)\n", id="bool parameter"
        ),
        pytest.param(
            _SCALE_SITE
            + '@partial(jax.jit, static_argnames=("s",))\ndef use_static(x, s):\n    return f(s, x)\n'
            + "@jax.jit\ndef use_traced(x, w):\n    return f(w * 2.0, x)\n",
            id="traced and static callers",
        ),
    ],
)
def test_screen_keeps_a_traced_parameter_of_a_jitted_caller(text: str) -> None:
    # classify: a parameter that a caller's `jax.jit` traces (not in its literal static_argnums
    # or static_argnames), passed as it came or in arithmetic (`w`, `w * 2.0`, `-w`), is an
    # array passed at a call site: VJP001 even when the rules only hand the argument to an
    # imported kernel, and VJP001 with no safe fix against a static value passed at another
    # call site. The screen must keep such a site: a bare parameter name (or
    # arithmetic on one) of a `jax.jit`-decorated caller is neither a static proof nor nothing,
    # even when the caller annotates it `bool`.
    assert _findings(text, "traced.py", Settings(DEFAULT_SELECT))
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(
            _KERNEL_SITE + "def run(x, flag: bool = True):\n    return f(flag, x)\nrun_fast = jax.jit(run)\n",
            id="jax.jit(run) call",
        ),
        pytest.param(
            _KERNEL_SITE + "@jax.jit\ndef run(x, w):\n    s = w * 2.0\n    return f(s, x)\n", id="through a local"
        ),
        pytest.param(
            _SCALE_SITE
            + '@partial(jax.jit, static_argnames=("s",))\ndef use_static(x, s):\n    return f(s, x)\n'
            + "def use_traced(x, w):\n    s = w * 2.0\n    return f(s, x)\nuse_traced = jax.jit(use_traced)\n",
            id="static caller and a jax.jit call through a local",
        ),
    ],
)
def test_screen_keeps_a_traced_value_through_a_local_or_a_jit_call(text: str) -> None:
    # classify (classify14): a parameter traced by a `jax.jit(run, ...)` call of a module def
    # (`run = jax.jit(run)`, `jax.jit(run)(x, w)`; literal static_argnums/static_argnames that
    # do not mark it), and such a parameter reaching the call through locals of the calling def
    # each bound once by a plain assignment to it or arithmetic on it (`s = w * 2.0; f(s, x)`), is
    # an array passed at a call site. The screen must keep such a module: the parameters of a
    # module def that some `jax.jit(name, ...)` call wraps may be traced, like a decorated def's,
    # and a once-bound local whose value is arithmetic on a may-be-traced parameter may be too.
    assert _findings(text, "traced.py", Settings(DEFAULT_SELECT))
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(
            _KERNEL_SITE + "@jax.jit\ndef run(x, ws):\n    out = 0.0\n    for w in ws:\n        out = out + f(w, x)\n"
            "    return out\n",
            id="for w in ws",
        ),
        pytest.param(
            _KERNEL_SITE + "@jax.jit\ndef run(x, ws):\n    out = 0.0\n    for i, w in enumerate(ws):\n"
            "        out = out + f(w, x)\n    return out\n",
            id="for i, w in enumerate(ws)",
        ),
        pytest.param(
            _KERNEL_SITE + "@jax.jit\ndef run(x, w1, w2):\n    out = 0.0\n    for w in (w1, w2):\n"
            "        out = out + f(w, x)\n    return out\n",
            id="for w in (w1, w2)",
        ),
        pytest.param(
            _KERNEL_SITE + "@jax.jit\ndef run(x, ws):\n    return sum(f(w, x) for w in ws)\n", id="comprehension"
        ),
        pytest.param(
            _KERNEL_SITE + "@jax.jit\ndef run(x, pair):\n    a, b = pair\n    return f(a, x) + b\n", id="unpacked"
        ),
        pytest.param(
            _KERNEL_SITE
            + "def doubled(w):\n    return w * 2.0\n@jax.jit\ndef run(x, w):\n    return f(doubled(w), x)\n",
            id="helper",
        ),
        pytest.param(
            _KERNEL_SITE + "def scaled(w, flip):\n    if flip:\n        return -w\n    return w * 2.0\n"
            "@jax.jit\ndef run(x, w):\n    return f(scaled(w, True), x)\n",
            id="helper with two returns",
        ),
        pytest.param(
            _KERNEL_SITE
            + "def run(x, w, scale):\n    return f(w * scale, x)\nfast = jax.jit(partial(run, scale=2.0))\n",
            id="jax.jit(partial(run, ...))",
        ),
    ],
)
def test_screen_keeps_a_traced_value_through_a_loop_a_helper_or_a_jitted_partial(text: str) -> None:
    # classify (classify17): the items a loop takes from a traced parameter (`for w in ws`,
    # `enumerate(ws)`, `zip(..., ws)`, a comprehension, a literal holding one: `(w1, w2)`; not
    # `range(n)`, a literal of constants, enumerate's index, a parameter annotated as a mapping
    # or one the item subscripts: `params[k]`), the
    # parts a tuple unpacking takes from one (`a, b = pair`, read since classify14), a module
    # helper's result (an undecorated def whose every return is its parameter or arithmetic on
    # it: `doubled(w)`; several returns since classify19), and the parameters that a
    # `jax.jit(partial(run, ...))` leaves open (not those the partial binds by position or keyword;
    # literal static_argnums count past the bound positions) are traced values.
    assert _findings(text, "traced.py", Settings(DEFAULT_SELECT))
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


_GROWN_LOOP = "@jax.jit\ndef run(x, w1, w2):\n    out = 0.0\n{grow}    for w in ws:\n        out = out + f(w, x)\n    return out\n"


@pytest.mark.parametrize(
    "grow",
    [
        pytest.param("    ws = [1.0]\n    ws += [w2]\n", id="+= a list"),
        pytest.param("    ws = []\n    ws.append(w2)\n", id="append"),
        pytest.param("    ws = [1.0]\n    ws.insert(0, w2)\n", id="insert"),
        pytest.param("    ws = [1.0]\n    ws.extend([2.0, w2])\n", id="extend"),
    ],
)
def test_screen_keeps_a_traced_value_a_local_list_is_grown_with(grow: str) -> None:
    # classify (classify21): the items a local list or tuple bound to a literal is grown with
    # before a loop over it (`+=` of a literal, `.append`, `.insert`, `.extend` of a literal; not
    # once anything else changes it: `.pop()`, `ws[0] = v`) are items the loop target takes.
    text = _KERNEL_SITE + _GROWN_LOOP.format(grow=grow)
    assert _findings(text, "traced.py", Settings(DEFAULT_SELECT))
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("k1, k2 = jax.random.split(key)\n    return f(k1, x)", id="split"),
        pytest.param("k = jnp.ones(3)\n    return f(k, x)", id="jnp.ones"),
        pytest.param("for k in jax.random.split(key, 3):\n        x = f(k, x)\n    return x", id="a loop over keys"),
    ],
)
def test_screen_keeps_an_array_a_caller_makes_in_a_local(body: str) -> None:
    # classify (classify21): a local of the calling def bound once to what a JAX array function
    # makes (not host NumPy's, nor metadata: `jnp.shape(x)`), or a loop over it, passed at the
    # call, is an array passed at a call site, like `f(jnp.ones(3), x)` in place.
    text = _KERNEL_SITE + f"import jax.numpy as jnp\ndef quantize(x, key):\n    {body}\n"
    assert _findings(text, "local.py", Settings(DEFAULT_SELECT))
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


@pytest.mark.parametrize(
    ("module", "reported"),
    [
        pytest.param("S = jnp.ones(3)\ndef run(x):\n    return f(S, x)\n", True, id="in a def"),
        pytest.param("S = jnp.ones(3)\ny = f(S, 1.0)\n", True, id="at module level"),
        pytest.param("S = jnp.ones(3)\ndef run(x, S):\n    return f(S, x)\n", False, id="a parameter of that name"),
        pytest.param("S = jnp.ones(3)\nS = 2\ny = f(S, 1.0)\n", False, id="bound twice"),
        pytest.param("S = np.ones(3)\ny = f(S, 1.0)\n", False, id="host NumPy's"),
    ],
)
def test_screen_keeps_an_array_a_global_holds(module: str, reported: bool) -> None:
    # probe27 G4: a global the module binds once to what a JAX array function makes, passed at a
    # call of the site (where no def around the call binds the name), is an array passed there.
    text = _KERNEL_SITE + "import numpy as np\nimport jax.numpy as jnp\n" + module
    assert bool(_findings(text, "global.py", Settings(DEFAULT_SELECT))) is reported
    assert screen.may_report(text, Settings(DEFAULT_SELECT)) or not reported


@pytest.mark.parametrize(
    ("body", "reported", "kept"),
    [
        pytest.param("return f(mode, jnp.ones(3))", False, False, id="an array at another place"),
        pytest.param("k = jnp.ones(3)\n    return f(mode, k)", False, False, id="an array local at another place"),
        pytest.param("return f(jnp.ones(3), x)", True, True, id="an array at the argument's place"),
        pytest.param("return f(s=jnp.ones(3), x=x)", True, True, id="by keyword"),
        pytest.param("return f(*(jnp.ones(3), x))", False, False, id="inside a tuple unpacked by *"),
        pytest.param("return f(*xs, jnp.ones(3))", False, True, id="after *args: every value counts"),
        pytest.param("return obj.f(jnp.ones(3))", False, True, id="a call through an attribute: kept"),
    ],
)
def test_screen_keeps_an_array_passed_for_the_argument_only(body: str, reported: bool, kept: bool) -> None:
    # pkgprobe23 (ejkernel): an array passed for another argument kept the file, while classify
    # reads each argument's own value; JAX 0.6's cuDNN attention is dropped since.
    text = _KERNEL_SITE + f"import jax.numpy as jnp\ndef run(x, mode, obj, xs):\n    {body}\n"
    assert bool(_findings(text, "call.py", Settings(DEFAULT_SELECT))) is reported
    assert screen.may_report(text, Settings(DEFAULT_SELECT)) is kept


@pytest.mark.parametrize(
    "use",
    [
        pytest.param("jax.pure_callback(host, jax.ShapeDtypeStruct(x.shape, x.dtype), x, s)", id="pure_callback"),
        pytest.param("jax.debug.callback(host, s) or x", id="debug.callback"),
    ],
)
def test_screen_keeps_an_operand_of_a_host_callback(use: str) -> None:
    # classify (classify21): an operand of `jax.pure_callback`, `io_callback`, `jax.debug.callback`
    # (past the host function and the result's shapes) is array data: JAX converts it to an array.
    text = _KERNEL_SITE.replace("return kernel(x, s)", f"return {use}").replace("import kernel", "import host")
    assert _findings(text, "callback.py", Settings(DEFAULT_SELECT))
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


def test_screen_keeps_an_attribute_a_helper_uses_as_a_prng_key() -> None:
    # classify (classify21): an attribute of the argument passed to a module helper that gives
    # that parameter to a `jax.random` function as its key (`noise_fn(x.shape, context.key)`) is
    # weak array data, as `jax.random.uniform(context.key, ...)` in place is.
    text = (
        "from functools import partial\nimport jax\n"
        "def noise_fn(shape, key):\n    return jax.random.uniform(key, shape)\n"
        "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef f(x, context):\n    return x + noise_fn(x.shape, context.key)\n"
        "def f_fwd(x, context):\n    return f(x, context), None\n"
        "def f_bwd(context, _, g):\n    return (g,)\nf.defvjp(f_fwd, f_bwd)\n"
    )
    assert _findings(text, "key.py", Settings(DEFAULT_SELECT)) == ["VJP001"]
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


_RULE_LOOP = """\
from functools import partial
import jax

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, a):
    out = x
    {loop}
        out = out + w * x
    return out

def f_fwd(x, a):
    return f(x, a), None

def f_bwd(a, _, g):
    return (g,)

f.defvjp(f_fwd, f_bwd)
"""


@pytest.mark.parametrize(
    "loop",
    [
        pytest.param("for w in (a, 2.0):", id="a literal tuple"),
        pytest.param("ws = (a, 2.0)\n    for w in ws:", id="a local tuple"),
        pytest.param("ws = []\n    ws.append(a)\n    for w in ws:", id="a local list grown by append"),
    ],
)
def test_screen_keeps_arithmetic_on_a_loop_target_taking_the_argument(loop: str) -> None:
    # classify (classify21): a loop in a rule over a literal holding the argument, or over a local
    # list or tuple built with it before the loop (classify/grown.py), makes the target the
    # argument on one iteration: its arithmetic is the argument's.
    text = _RULE_LOOP.format(loop=loop)
    assert _findings(text, "loop.py", Settings(DEFAULT_SELECT))
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(
            _KERNEL_SITE + "@jax.jit\ndef run(x, n):\n    out = 0.0\n    for w in range(3):\n"
            "        out = out + f(w, x)\n    return out\n",
            id="for w in range(3)",
        ),
        pytest.param(
            _KERNEL_SITE + "@jax.jit\ndef run(x, w1):\n    out = 0.0\n    for w in (1.0, 2.0):\n"
            "        out = out + f(w, x)\n    return out * w1\n",
            id="for w in (1.0, 2.0)",
        ),
        pytest.param(
            _KERNEL_SITE + "@jax.jit\ndef run(x, w1):\n    pair = (1.0, 2.0)\n    out = 0.0\n    for w in pair:\n"
            "        out = out + f(w, x)\n    return out * w1\n",
            id="for w in a local literal of constants",
        ),
        pytest.param(
            _KERNEL_SITE + "def run(x, w):\n    return f(w, x)\nfast = jax.jit(partial(run, w=2.0))\n",
            id="bound by the partial's keyword",
        ),
        pytest.param(
            _KERNEL_SITE + "def run(w, x):\n    return f(w, x)\nfast = jax.jit(partial(run, 2.0))\n",
            id="bound by the partial's position",
        ),
        pytest.param(
            _KERNEL_SITE
            + "def run(x, w):\n    return f(w, x)\nfast = jax.jit(partial(run, 1.0), static_argnums=(0,))\n",
            id="static, counted past the partial's position",
        ),
    ],
)
def test_screen_rules_out_a_value_no_jit_traces(text: str) -> None:
    # The other side of the test above: the screen stays precise where classify finds nothing.
    assert not _findings(text, "untraced.py", Settings(DEFAULT_SELECT))
    assert not screen.may_report(text, Settings(DEFAULT_SELECT))


_KEY_LOOKUP = """\
from functools import partial
import jax

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, params):
    y = x * params["w"]
    if "b" in params:
        y = y + params["b"]
    return y

def f_fwd(x, params):
    return f(x, params), None

def f_bwd(params, _, g):
    return (g * params["w"],)

f.defvjp(f_fwd, f_bwd)
"""


def test_screen_keeps_a_dict_of_arrays_tested_for_a_key() -> None:
    # classify: `"b" in params` (a string literal, then `in` or `not in`) reads keys only and
    # works on a dict of Tracers under jit, so it is no static proof (nor a value derived from
    # the argument); `params["w"]` in arithmetic then makes it VJP001. The screen must not count
    # such a membership test as a static mention.
    assert _findings(_KEY_LOOKUP, "key_lookup.py", Settings(DEFAULT_SELECT))
    assert screen.may_report(_KEY_LOOKUP, Settings(DEFAULT_SELECT))


def test_screen_keeps_a_site_whose_rules_are_attached_through_an_alias() -> None:
    # The array use is in bwd only, which the screen reaches through the defvjp call alone
    # (fixture defvjp_on_alias has one in the primal too, so the screen keeps that file).
    text = textwrap.dedent(
        """\
        import jax
        import jax.numpy as jnp
        from functools import partial

        @partial(jax.custom_vjp, nondiff_argnums=(1,))
        def _clip_gradient(x, bound):
            return x

        clip_gradient = _clip_gradient

        def _clip_gradient_fwd(x, bound):
            return x, None

        def _clip_gradient_bwd(bound, _, g):
            return (jnp.clip(g, -bound, bound),)

        clip_gradient.defvjp(_clip_gradient_fwd, _clip_gradient_bwd)
        """
    )
    assert _findings(text, "case.py", Settings(DEFAULT_SELECT)) == ["VJP001"]
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


def test_screen_keeps_every_installed_jax_file_with_a_finding() -> None:
    # With VJP002 selected the screen keeps every file with a site, so the default codes are the
    # selection where it drops the most, and the one to prove.
    settings = Settings(DEFAULT_SELECT)
    assert len(_jax_hits()) >= 10
    for name, text in _jax_hits():
        if screen.may_report(text, settings):
            continue
        assert _findings(text, name, settings) == [], f"the screen dropped jax/{name}, which has findings"


def test_screen_rules_out_the_legitimate_jax_sites() -> None:
    """The point of the screen: JAX's own custom_vjp sites never reach LibCST."""
    kept = [name for name, text in _jax_hits() if screen.may_report(text, Settings(DEFAULT_SELECT))]
    assert len(kept) <= 1, kept


def test_codes_the_screen_does_not_know_keep_every_file() -> None:
    text = "x = 1  # nondiff_argnums\n"
    assert not screen.may_report(text, Settings(DEFAULT_SELECT))
    assert screen.may_report(text, Settings(frozenset({"VJP999"})))
    assert set(BY_CODE) <= screen.UNDERSTOOD, "teach the screen the new code (or it keeps every file for it)"


def test_screen_word_sets_cover_classify() -> None:
    # Supersets: what may make an argument an array (the attribute and module words are one list,
    # vocabulary.py; annotations are qualified names in classify, last names in the screen).
    names = {a.rsplit(".", 1)[-1] for a in vocabulary.ARRAY_ANNOTATIONS} | vocabulary.ARRAY_ANNOTATION_NAMES
    assert names <= vocabulary.ARRAY_ANNOTATION_NAMES
    assert {"jax.vjp", "jax.jvp", "jax.linearize"} & vocabulary.JAX_TRANSFORMS <= screen_names.ARRAY_TRANSFORMS
    assert all(name.endswith(".custom_vjp") for name in imports.CUSTOM_VJP)
    # Subsets: what the screen takes as proof of a static argument.
    assert STATIC_KEYWORDS <= vocabulary.STATIC_KEYWORDS
    assert screen_names.JIT <= imports.JIT
    assert screen_names.PARTIAL <= imports.PARTIAL
    assert {"str", "bool", "Callable"} <= vocabulary.STATIC_ANNOTATION_NAMES
    assert {"float", "int", "complex"} <= vocabulary.SCALAR_ANNOTATION_NAMES


# --- the structural screen: what it drops -----------------------------------------------------


JIT_STATIC = """
from functools import partial
import jax

@partial(jax.jit, static_argnums=(0,))
@partial(jax.custom_vjp, nondiff_argnums=(0,))
def f(eps, x):
    return x * eps

def f_fwd(eps, x):
    return x * eps, None

def f_bwd(eps, _, g):
    return (g * eps,)

f.defvjp(f_fwd, f_bwd)
"""


BWD_ONLY = """\
from functools import partial
import jax

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, s):
    return x

f.defvjp(lambda x, s: (x, None), lambda s, _, g: (g * s,))
"""


METADATA_TEST = """\
from functools import partial
import jax
from jax.numpy import shape

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, s):
    if s.shape[0] > 1:
        return x * s
    return x

def f_fwd(x, s):
    return f(x, s), None

def f_bwd(s, _, g):
    return (g * s,)

f.defvjp(f_fwd, f_bwd)
"""

KEYWORD_ONLY_HELPER = """\
from functools import partial
import jax

def shift(x, *, offset):
    return x + offset

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, s):
    return shift(x, offset=s)

def f_fwd(x, s):
    return f(x, s), None

def f_bwd(s, _, g):
    return (g,)

f.defvjp(f_fwd, f_bwd)
"""
JIT_WRAPPED_PRIMAL = """\
import jax

def _f(x, s):
    return x * s

def _fwd(x, s):
    return x * s, None

def _bwd(s, _, g):
    return (g,)

f = jax.custom_vjp(jax.jit(_f), nondiff_argnums=(1,))
f.defvjp(_fwd, _bwd)
"""

PRIMITIVE_OPERAND = """\
from functools import partial
import jax
from jax.extend.core import Primitive

scale_p = Primitive("scale")

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, s):
    return x

def f_fwd(x, s):
    return f(x, s), None

def f_bwd(s, _, g):
    return (scale_p.bind(s, factor=2.0),)

f.defvjp(f_fwd, f_bwd)
"""


KEY_HOLDER = """\
from functools import partial
import jax
from jax import random as jr

def draw(x, streams):
    return jr.uniform(streams.keys.rounding, x.shape)

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, streams):
    return x + draw(x, streams)

def f_fwd(x, streams):
    return f(x, streams), None

def f_bwd(streams, _, g):
    return (g,)

f.defvjp(f_fwd, f_bwd)
"""


RULES_ON_AN_ALIAS = """\
from functools import partial
import jax

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def _clip(x, bound):
    return x

clip = _clip

def clip_fwd(x, bound):
    return clip(x, bound), None

def clip_bwd(bound, _, g):
    return (g * bound,)

clip.defvjp(clip_fwd, clip_bwd)
"""


JITTED_RULE = """\
from functools import partial
import jax

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, cfg):
    return x

@jax.jit
def f_fwd(x, cfg):
    return f(x, cfg), None

def f_bwd(cfg, _, g):
    return (g,)

f.defvjp(f_fwd, f_bwd)
"""


TRANSFORMED_FUNCTION = """\
from functools import partial
import jax

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def apply(f, x):
    return x

def apply_fwd(f, x):
    return x, x

def apply_bwd(f, x, g):
    _, pullback = jax.vjp(f, x)
    return pullback(g)

apply.defvjp(apply_fwd, apply_bwd)
"""


UNSEEN_PRIMAL = """\
import jax
import jax.numpy as jnp
from kernels import backend

mm = jax.custom_vjp(backend.mm, nondiff_argnums=(2, 3, 4))

def _mm_fwd(x, w, dtype: jnp.dtype, tiling: tuple[int, int], interpret: bool = False):
    return backend.mm(x, w, dtype, tiling, interpret), (x, w)

def _mm_bwd(dtype, tiling, interpret, res, g):
    x, w = res
    return g @ w.T, x.T @ g

mm.defvjp(_mm_fwd, _mm_bwd)
"""

UNSEEN_ARITHMETIC = UNSEEN_PRIMAL.replace("tiling: tuple[int, int]", "tiling").replace("g @ w.T,", "g @ w.T * tiling,")

PACKED = (
    METADATA_TEST.replace("if s.shape[0] > 1:\n        return x * s\n", "xs = (x, s)\n")
    .replace("    return x\n\ndef f_fwd", "    return jnp.stack(xs)\n\ndef f_fwd")
    .replace("return (g * s,)", "return (g,)")
    .replace("import jax\n", "import jax\nimport jax.numpy as jnp\n", 1)
)

# Pallas' flash_attention.py: bwd annotates the scale `float`, a helper `jax.Array | None`; the two
# disagree, so classify says UNKNOWN (VJP002 under ALL only), and the rules are given by keyword.
NUMBER_VS_HELPER = """\
import functools
import jax

@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def attend(q, scale):
    return _scaled(q, scale)

def _scaled(q, scale: jax.Array | None):
    return q if scale is None else q * scale

def attend_fwd(q, scale):
    return attend(q, scale), None

def attend_bwd(scale: float, _, g):
    return (_scaled(g, scale),)

attend.defvjp(fwd=attend_fwd, bwd=attend_bwd)
"""

NUMBER_VS_CALL_SITE = (
    NUMBER_VS_HELPER.replace("import jax\n", "import jax\nimport jax.numpy as jnp\n")
    + "y = attend(jnp.ones(3), jnp.float32(2.0))\n"
)

# xspex: a positional operand of the function `jax.ffi.ffi_call(...)` returns is array data.
FFI_OPERAND = """\
import jax
from functools import partial

def _impl(x, n):
    call = jax.ffi.ffi_call("scale", jax.ShapeDtypeStruct(x.shape, x.dtype))
    return call(x, n)

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, n):
    return _impl(x, n)

def f_fwd(x, n):
    return _impl(x, n), None

def f_bwd(n, _, g):
    return (g,)

f.defvjp(f_fwd, f_bwd)
"""

FFI_IN_PLACE = FFI_OPERAND.replace(
    '    call = jax.ffi.ffi_call("scale", jax.ShapeDtypeStruct(x.shape, x.dtype))\n    return call(x, n)',
    '    return jax.ffi.ffi_call("scale", jax.ShapeDtypeStruct(x.shape, x.dtype))(x, n)',
)

FFI_ATTRIBUTE = FFI_OPERAND.replace("return call(x, n)", "return call(x, scale=n)")

JIT_CALLER = """\
import jax
import jax.numpy as jnp
from functools import partial

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def f(a, x):
    return x * a

def f_fwd(a, x):
    return f(a, x), None

def f_bwd(a, _, g):
    return (g * a,)

f.defvjp(f_fwd, f_bwd)

@partial(jax.jit, static_argnums=(0,))
def run(tol, y):
    return f(tol, y)
"""

ATTRIBUTE_ONLY = """\
import jax
from functools import partial

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, w):
    wt = w.T
    return x @ wt

def f_fwd(x, w):
    return f(x, w), None

def f_bwd(w, _, g):
    return (g,)

f.defvjp(f_fwd, f_bwd)
"""

# The order keys a dict literal (a Tracer is unhashable): static whatever bwd's arithmetic says.
LITERAL_KEY = """\
import jax
from functools import partial

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def f(order, x):
    return x * {1: 1.0, 2: 0.5}[order]

def f_fwd(order, x):
    return f(order, x), None

def f_bwd(order, _, g):
    return (g / order,)

f.defvjp(f_fwd, f_bwd)
"""

BEYOND_THE_SIGNATURE = JIT_STATIC.replace("nondiff_argnums=(0,)", "nondiff_argnums=(5,)").replace(
    "static_argnums=(0,)", "static_argnums=(1,)"
)


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        pytest.param("x = 'nondiff_argnums'\n", False, id="a mention in a string"),
        pytest.param("def g(nondiff_argnums=()):\n    return nondiff_argnums\n", False, id="a look-alike parameter"),
        pytest.param(JIT_STATIC, False, id="argument static in a stacked jax.jit"),
        pytest.param(
            JIT_STATIC.replace("static_argnums=(0,)", "static_argnums=(1,)"), True, id="jit marks another one"
        ),
        pytest.param(JIT_STATIC.replace("def f_bwd(eps, _, g)", "def f_bwd(_, g)"), True, id="inconsistent bwd"),
        pytest.param(BWD_ONLY, True, id="array use only in a lambda bwd"),
        pytest.param(
            BWD_ONLY.replace("lambda s, _, g: (g * s,)", "partial(bwd_impl, 2.0)")
            + "def bwd_impl(k, s, _, g):\n    return (g * s * k,)\n",
            True,
            id="array use only in a partial bwd",
        ),
        pytest.param(METADATA_TEST, True, id="a test on metadata proves nothing"),
        pytest.param(METADATA_TEST.replace("if s.shape[0] > 1", "if s.sum() > 1"), False, id="a test on values"),
        pytest.param(
            METADATA_TEST.replace("if s.shape[0] > 1", "if shape(s)[0] > 1"),
            True,
            id="a metadata function under an alias",
        ),
        pytest.param(KEYWORD_ONLY_HELPER, True, id="array use in a keyword-only helper parameter"),
        pytest.param(ATTRIBUTE_ONLY, True, id="array use only as an array attribute read"),
        pytest.param(PRIMITIVE_OPERAND, True, id="array use only as an operand of a primitive's bind"),
        pytest.param(JIT_WRAPPED_PRIMAL, True, id="a primal wrapped in jax.jit"),
        pytest.param(JIT_WRAPPED_PRIMAL.replace("jax.jit(_f)", "make(_f)"), True, id="a primal that is no def"),
        pytest.param(UNSEEN_PRIMAL, False, id="unseen primal: fwd's annotations prove the arguments static"),
        pytest.param(
            UNSEEN_PRIMAL.replace("from kernels import backend", "from kernels.backend import mm as _mm").replace(
                "jax.custom_vjp(backend.mm,", "jax.custom_vjp(_mm,"
            ),
            False,
            id="unseen primal: an imported name",
        ),
        pytest.param(UNSEEN_ARITHMETIC, True, id="unseen primal: arithmetic in bwd"),
        pytest.param(PACKED, True, id="array use only inside a tuple a local holds"),
        pytest.param(
            UNSEEN_PRIMAL.replace("nondiff_argnums=(2, 3, 4)", 'nondiff_argnames=("dtype", "tiling", "interpret")'),
            True,
            id="unseen primal: names the pipeline cannot read",
        ),
        pytest.param(
            UNSEEN_PRIMAL.replace("mm.defvjp(_mm_fwd, _mm_bwd)", "mm.defvjp(_mm_fwd, make_bwd())"),
            True,
            id="unseen primal: an unresolved rule",
        ),
        pytest.param(
            UNSEEN_PRIMAL.replace("dtype: jnp.dtype", "dtype: Sequence[jax.Array]"),
            True,
            id="a static-looking container of arrays proves nothing",
        ),
        pytest.param(NUMBER_VS_HELPER, False, id="a Python number in bwd outweighs a helper's array annotation"),
        pytest.param(NUMBER_VS_CALL_SITE, True, id="a Python number, but an array passed at a call site"),
        pytest.param(
            NUMBER_VS_HELPER.replace("attend_bwd(scale: float,", "attend_bwd(scale,"),
            True,
            id="the helper's array annotation alone",
        ),
        pytest.param(
            NUMBER_VS_HELPER.replace("defvjp(fwd=attend_fwd, bwd=attend_bwd)", "defvjp(attend_fwd, **rules)"),
            True,
            id="rules that may come from a mapping",
        ),
        pytest.param(
            JIT_CALLER.replace("    return f(tol, y)", "    tol = tol / jnp.std(y)\n    return f(tol, y)"),
            True,
            id="a jit-static parameter the caller rebinds before passing it on",
        ),
        pytest.param(JIT_CALLER, False, id="a jit-static parameter passed on as it is"),
        pytest.param(FFI_OPERAND, True, id="an operand of a local FFI function"),
        pytest.param(FFI_IN_PLACE, True, id="an operand of an FFI function called in place"),
        pytest.param(FFI_ATTRIBUTE, False, id="an FFI attribute"),
        pytest.param(KEY_HOLDER, True, id="a field passed as the key of a jax.random function"),
        pytest.param(RULES_ON_AN_ALIAS, True, id="rules attached through an alias"),
        pytest.param(JITTED_RULE, True, id="a rule under jax.jit traces the argument"),
        pytest.param(TRANSFORMED_FUNCTION, False, id="the function a JAX transformation takes"),
        pytest.param(JITTED_RULE.replace("@jax.jit\n", ""), False, id="the same rule without jax.jit"),
        pytest.param(
            JITTED_RULE.replace("@jax.jit", "@partial(jit, donate_argnums=0)").replace(
                "import jax\n", "import jax\nfrom jax import jit\n"
            ),
            True,
            id="a rule under an imported jit",
        ),
        pytest.param(KEY_HOLDER.replace("jr.uniform(", "jax.nn.relu("), False, id="a field passed elsewhere"),
        pytest.param(LITERAL_KEY, False, id="the key of a dict literal"),
        pytest.param(LITERAL_KEY.replace("{1: 1.0, 2: 0.5}[order]", "(1.0, 0.5)[order]"), False, id="a tuple's index"),
        pytest.param(LITERAL_KEY.replace("{1: 1.0, 2: 0.5}[order]", "x[order]"), True, id="an array's index"),
        pytest.param(LITERAL_KEY.replace("[order]", "[order, 0]"), True, id="a key with more in it"),
        pytest.param("def broken(:\n    nondiff_argnums\n", True, id="syntax error: the pipeline reports it"),
        pytest.param("x = (" * 300 + ")" * 300 + "  # nondiff_argnums\n", True, id="too deep for ast"),
    ],
)
def test_screen_verdicts(text: str, kept: bool) -> None:
    assert screen.may_report(text, Settings(DEFAULT_SELECT)) is kept


@pytest.mark.parametrize(
    ("text", "codes"),
    [
        pytest.param(METADATA_TEST, ["VJP001"], id="metadata"),
        pytest.param(METADATA_TEST.replace("if s.shape[0] > 1", "if shape(s)[0] > 1"), ["VJP001"], id="alias"),
        pytest.param(METADATA_TEST.replace("if s.shape[0] > 1", "if s.sum() > 1"), [], id="values"),
        pytest.param(KEYWORD_ONLY_HELPER, ["VJP001"], id="keyword-only helper"),
        pytest.param(ATTRIBUTE_ONLY, ["VJP001"], id="attribute read"),
        pytest.param(PRIMITIVE_OPERAND, ["VJP001"], id="primitive operand"),
        pytest.param(PRIMITIVE_OPERAND.replace("bind(s, factor=2.0)", "bind(g, factor=s)"), [], id="primitive param"),
        pytest.param(JIT_WRAPPED_PRIMAL, ["VJP001"], id="jit-wrapped primal"),
        pytest.param(JIT_WRAPPED_PRIMAL.replace("jax.jit(_f)", "make(_f)"), ["VJP001"], id="primal no def"),
        pytest.param(UNSEEN_PRIMAL, [], id="unseen primal"),
        pytest.param(UNSEEN_ARITHMETIC, ["VJP001"], id="unseen primal, arithmetic"),
        pytest.param(PACKED, ["VJP001"], id="packed in a local tuple"),
        pytest.param(FFI_OPERAND, ["VJP001"], id="FFI operand"),
        pytest.param(FFI_IN_PLACE, ["VJP001"], id="FFI operand, in place"),
        pytest.param(FFI_ATTRIBUTE, [], id="FFI attribute"),
        pytest.param(NUMBER_VS_HELPER, [], id="a number against a helper's annotation"),
        pytest.param(NUMBER_VS_CALL_SITE, ["VJP001"], id="a number, but an array at a call site"),
        pytest.param(JITTED_RULE, ["VJP001"], id="a rule under jax.jit"),
        pytest.param(TRANSFORMED_FUNCTION, [], id="the function of jax.vjp"),
        pytest.param(JITTED_RULE.replace("@jax.jit\n", ""), [], id="the rule without jax.jit"),
        pytest.param(KEY_HOLDER, ["VJP001"], id="a field passed as a PRNG key"),
        pytest.param(KEY_HOLDER.replace("jr.uniform(", "jax.nn.relu("), [], id="a field passed elsewhere"),
        pytest.param(LITERAL_KEY, [], id="a dict literal's key"),
        pytest.param(LITERAL_KEY.replace("{1: 1.0, 2: 0.5}[order]", "(1.0, 0.5)[order]"), [], id="a tuple's index"),
        pytest.param(LITERAL_KEY.replace("{1: 1.0, 2: 0.5}[order]", "x[order]"), ["VJP001"], id="an array's index"),
        pytest.param(
            NUMBER_VS_HELPER.replace("attend_bwd(scale: float,", "attend_bwd(scale,"), ["VJP001"], id="helper"
        ),
    ],
)
def test_the_screen_verdicts_on_tests_agree_with_the_pipeline(text: str, codes: list[str]) -> None:
    assert _findings(text, "case.py", Settings(DEFAULT_SELECT)) == codes


def test_a_position_beyond_the_signature_keeps_the_file_for_vjp004() -> None:
    # The screen used to drop it: its arity checks never looked at positions past the last parameter.
    for select in (DEFAULT_SELECT, ALL, frozenset({"VJP004"})):
        assert _findings(BEYOND_THE_SIGNATURE, "case.py", Settings(select)) == ["VJP004"]
        assert screen.may_report(BEYOND_THE_SIGNATURE, Settings(select))


_NAMED_BUT_IGNORED = """\
from functools import partial
import jax

@partial(jax.custom_vjp, nondiff_argnames=("w",))
def f(x, w, /):
    return x * w

def f_fwd(x, w):
    return f(x, w), None

def f_bwd(w, _, g):
    return (g * w,)

f.defvjp(f_fwd, f_bwd)
"""


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(_NAMED_BUT_IGNORED, id="a positional-only name"),
        pytest.param(
            _NAMED_BUT_IGNORED.replace("x, w, /", "x, *w")
            .replace("def f_fwd(x, w)", "def f_fwd(x, *w)")
            .replace("f(x, w), None", "f(x, *w), None")
            .replace("def f_bwd(w, _, g)", "def f_bwd(*args)")
            .replace("(g * w,)", "(args[-1],)")
            .replace("x * w", "x"),
            id="the *args name, bwd taking *args",
        ),
        pytest.param(
            _NAMED_BUT_IGNORED.replace("x, w, /", "x, *w")
            .replace("def f_fwd(x, w)", "def f_fwd(x, *w)")
            .replace("f(x, w), None", "f(x, *w), None")
            .replace("def f_bwd(w, _, g)", "def f_bwd(_, g)")
            .replace("(g * w,)", "(g,)")
            .replace("x * w", "x"),
            id="the *args name, bwd(res, g)",
        ),
    ],
)
def test_screen_keeps_a_name_jax_ignores_in_nondiff_argnames_for_vjp004(text: str) -> None:
    # JAX reads nondiff_argnames among positional-or-keyword parameters only. The screen counted a
    # positional-only name as a position (so bwd's arity looked right) and never looked at a name
    # of `*args`: with VJP004 alone selected it dropped both files.
    for select in (DEFAULT_SELECT, ALL, frozenset({"VJP004"})):
        assert _findings(text, "case.py", Settings(select)) == ["VJP004"]
        assert screen.may_report(text, Settings(select))


_POSITION_IN_STAR_ARGS = """\
from functools import partial
import jax

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, *args):
    return x * args[0]

def f_fwd(x, *args):
    return f(x, *args), x

def f_bwd(w, x, g):
    return (g * w,)

f.defvjp(f_fwd, f_bwd)
"""


@pytest.mark.parametrize(
    ("text", "select", "codes"),
    [
        pytest.param(_POSITION_IN_STAR_ARGS, DEFAULT_SELECT, ["VJP003"], id="bwd uses it as an array"),
        pytest.param(
            _POSITION_IN_STAR_ARGS.replace("def f_bwd(w, x, g):\n", "def f_bwd(*args):\n    w, x, g = args\n"),
            DEFAULT_SELECT,
            ["VJP003"],
            id="bwd takes *args: the primal's args[0] is used as an array",
        ),
        pytest.param(
            _POSITION_IN_STAR_ARGS.replace("x * args[0]", "log(args[0], x)").replace("(g * w,)", "(g,)"),
            ALL,
            ["VJP002"],
            id="the kind cannot be told",
        ),
    ],
)
def test_screen_keeps_a_nondiff_position_in_the_primals_star_args(
    text: str, select: frozenset[str], codes: list[str]
) -> None:
    # sites/classify (sites13): a nondiff position in the primal's `*args` is named `args[0]` and
    # judged like any other (bwd's parameter, call sites); it gets VJP003 or VJP002 with no fix.
    # The screen must keep a site one of whose positions is past the primal's named parameters
    # when the primal takes *args, as it keeps one whose primal has no *args (VJP004).
    assert _findings(text, "case.py", Settings(select)) == codes
    assert screen.may_report(text, Settings(select))


def test_a_lambda_bwd_is_read_by_classify() -> None:  # so the screen must keep such files
    assert _findings(BWD_ONLY, "case.py", Settings(DEFAULT_SELECT)) == ["VJP001"]


def test_explicit_files_are_still_parsed_and_syntax_errors_reported(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def broken(:\n    pass\n")
    (result,) = check_paths([bad])
    assert result.status is Status.FAILED and "syntax error" in (result.reason or "")
    # found by walking a folder and without a trigger word: not parsed, not reported
    (found,) = check_paths([tmp_path])
    assert found.status is Status.OK
    # found by walking, with a trigger word: the screen keeps it, the pipeline reports it
    bad.write_text("def broken(:\n    nondiff_argnums\n")
    (found,) = check_paths([tmp_path])
    assert found.status is Status.FAILED and "syntax error" in (found.reason or "")


ALIASED_ANNOTATION = """\
import jax
from functools import partial
from jax import Array as JaxArray


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def f(a: JaxArray, x):
    return x


def f_fwd(a: JaxArray, x):
    return f(a, x), None


def f_bwd(a, _, g):
    return (g,)


f.defvjp(f_fwd, f_bwd)
"""


def test_screen_keeps_an_array_annotation_imported_under_another_name() -> None:
    assert _findings(ALIASED_ANNOTATION, "case.py", Settings(DEFAULT_SELECT)) == ["VJP001"]
    assert screen.may_report(ALIASED_ANNOTATION, Settings(DEFAULT_SELECT))


@pytest.mark.parametrize("annotation", ['"jax.Array"', '"jnp.ndarray"', 'Optional["Array"]'])
def test_screen_keeps_a_string_array_annotation(annotation: str) -> None:
    # What classify reports (test_classify.test_a_string_annotation_is_read_as_the_annotation_it_holds).
    aliased = ALIASED_ANNOTATION.replace("from jax import Array as JaxArray\n", "from typing import Optional\n")
    text = aliased.replace("a: JaxArray", f"a: {annotation}")
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


def test_screen_keeps_a_traced_value_looped_over_through_a_local_tuple() -> None:
    # classify19: `pair = (w1, w2)` bound once (a tuple is never changed in place), `for w in pair`.
    text = _KERNEL_SITE + (
        "@jax.jit\ndef run(x, w1, w2):\n    pair = (w1, w2)\n    out = 0.0\n    for w in pair:\n"
        "        out = out + f(w, x)\n    return out\n"
    )
    assert _findings(text, "traced.py", Settings(DEFAULT_SELECT))
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


def test_screen_keeps_a_site_whose_jax_a_project_module_re_exports() -> None:
    # probe19 (ejKernel): `from .impl import jax, jnp`, as imports.py reads it.
    text = ALIASED_ANNOTATION.replace("import jax\n", "from .impl import jax\n").replace("a: JaxArray", "a")
    text = text.replace("return x\n", "return x * a\n", 1)
    assert _findings(text, "case.py", Settings(DEFAULT_SELECT)) == ["VJP001"]
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


SCORE_MOD = """
from functools import partial
from typing import Callable, Optional, Sequence, Union

import jax
import jax.numpy as jnp
from jax import Array


def _helper(x, score_mod=None):
    return jnp.where(x > 0, x, 0.0) if score_mod is None else jnp.asarray(score_mod, x)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def apply(score_mod: ANNOTATION, x):
    return _helper(x, score_mod=score_mod)


def apply_fwd(score_mod, x):
    return apply(score_mod, x), x


def apply_bwd(score_mod, x, g):
    return (g,)


apply.defvjp(apply_fwd, apply_bwd)
"""


@pytest.mark.parametrize(
    ("annotation", "codes", "kept"),
    [
        # classify reads an annotation's names outermost first and stops at the first it decides on
        pytest.param("Callable[[jax.Array], jax.Array] | None", [], False, id="Callable of arrays, or None"),
        pytest.param("None | Callable[[Array], Array]", [], False, id="None, or a Callable of arrays"),
        pytest.param("Optional[Callable[[Array], Array]]", [], False, id="Optional Callable of arrays"),
        pytest.param("Union[Callable, Array]", [], False, id="Callable first in a Union"),
        pytest.param("tuple[bool, ...]", [], False, id="tuple of bools"),
        pytest.param('Callable | "Array"', [], False, id="Callable before a string"),
        pytest.param("Sequence[jax.Array]", ["VJP001"], True, id="a container of arrays"),
        pytest.param("jax.Array | Callable", ["VJP001"], True, id="an array first"),
        pytest.param("tuple[float, Callable]", [], True, id="a number first: the screen doubts"),
        pytest.param('"Callable" | Array', [], True, id="a string first: the screen doubts"),
        pytest.param("Callable[(Array, Array)]", [], False, id="Callable before a parenthesized index"),
        pytest.param("Sequence[(Array, int)]", [], True, id="a container of a parenthesized index: doubt"),
    ],
)
def test_screen_reads_an_annotation_in_classifys_order(annotation: str, codes: list[str], kept: bool) -> None:
    """JAX 0.12's cuDNN attention annotates `score_mod: Callable[[Array], Array] | None`: static
    for classify, and the screen proves it instead of keeping the file."""
    text = SCORE_MOD.replace("ANNOTATION", annotation)
    assert _findings(text, "case.py", Settings(DEFAULT_SELECT)) == codes
    assert screen.may_report(text, Settings(DEFAULT_SELECT)) is kept
    if not kept:  # sound under every selection too
        assert _findings(text, "case.py", Settings(ALL)) == []
        assert not screen.may_report(text, Settings(ALL))


@pytest.mark.parametrize(
    "call",
    [
        pytest.param("return make_round()(x, k1)", id="called at once"),
        pytest.param("rounded = make_round()\n    return rounded(x, k1)", id="a local"),
    ],
)
def test_screen_keeps_an_array_passed_to_a_site_a_factory_returns(call: str) -> None:
    # classify (classify22): `make(cfg)(x, key1)`, the site built and returned by a module-level
    # factory, is a call of the site (factory_calls.py): the split key passed is array data.
    text = (
        "import jax\nfrom elsewhere import kernel\n"
        "def make_round():\n    def fwd(x, key):\n        return kernel(x, key)\n"
        "    def vjp_fwd(x, key):\n        return fwd(x, key), None\n"
        "    def vjp_bwd(key, res, g):\n        return (g,)\n"
        "    vjp = jax.custom_vjp(fwd, nondiff_argnums=(1,))\n    vjp.defvjp(vjp_fwd, vjp_bwd)\n    return vjp\n"
        f"def quantize(x, key):\n    k1, k2 = jax.random.split(key)\n    {call}\n"
    )
    assert _findings(text, "factory.py", Settings(DEFAULT_SELECT))
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


@pytest.mark.parametrize(
    ("classes", "caller"),
    [
        pytest.param("", "def apply(x, s: jax.Array):\n    return f(s, x)\n", id="an array parameter"),
        pytest.param(
            "@flax.struct.dataclass\nclass Context:\n    noise: jax.Array\n",
            "def apply(x, context: Context):\n    return f(context.noise, x)\n",
            id="a field",
        ),
        pytest.param(
            "@flax.struct.dataclass\nclass Context:\n    noise: jax.Array\n",
            "def apply(x, context: Context):\n    return f(context, x)\n",
            id="a pytree with an array field",
        ),
    ],
)
def test_screen_keeps_what_a_caller_annotates_as_array_data(classes: str, caller: str) -> None:
    # classify (classify22, caller_annotations.py): a caller's parameter annotated as an array, a
    # field annotated as one in its module class, or a pytree class with such a field, passed at a
    # call of the site, is array data.
    text = "import flax.struct\n" + _KERNEL_SITE + classes + caller
    assert _findings(text, "annotated.py", Settings(DEFAULT_SELECT))
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


@pytest.mark.parametrize(
    "loop",
    [
        pytest.param("for i, w in enumerate(s):", id="enumerate"),
        pytest.param("for w, y in zip(s, x):", id="zip"),
    ],
)
def test_screen_keeps_arithmetic_on_an_item_of_the_argument_looped_over(loop: str) -> None:
    # classify (classify22): a loop over the argument itself gives its items, whose arithmetic is
    # the argument's (`for w in s: out + w * x`, kept already; through enumerate and zip not yet).
    body = f"out = x\n    {loop}\n        out = out + w * x\n    return out"
    text = _KERNEL_SITE.replace("return kernel(x, s)\n", body + "\n", 1)
    assert _findings(text, "loop.py", Settings(DEFAULT_SELECT))
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


def test_screen_keeps_an_operand_jax_vmap_maps_over() -> None:
    # classify (classify22, mapped.py): `jax.vmap(f)(indices, ct)` in bwd maps over the argument,
    # which must then be an array with a leading axis (probe22 G1, brainstate FixedProb).
    text = _KERNEL_SITE.replace("return (kernel(g, s),)", "return (jax.vmap(lambda i, c: c * i)(s, g).sum(0),)")
    assert _findings(text, "mapped.py", Settings(DEFAULT_SELECT))
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


def test_screen_keeps_array_use_in_the_def_a_partial_primal_runs() -> None:
    # classify (classify22): `run = jax.custom_vjp(_run_vjp, ...)` with `_run_vjp = partial(_run_inner,
    # is_vjp=True)` (probe22 G2, PennyLane) reads `_run_inner` as the primal: arithmetic there counts.
    text = (
        "from functools import partial\nimport jax\n"
        "def _run_inner(params, scale, is_vjp=False):\n    return params * scale\n"
        "_run_vjp = partial(_run_inner, is_vjp=True)\n"
        "def _fwd(params, scale):\n    return _run_vjp(params, scale), params\n"
        "def _bwd(scale, params, dy):\n    return (dy,)\n"
        "run = jax.custom_vjp(_run_vjp, nondiff_argnums=(1,))\nrun.defvjp(_fwd, _bwd)\n"
    )
    assert _findings(text, "alias.py", Settings(DEFAULT_SELECT))
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


_RUN_BY_A_NAME = """\
from functools import partial
from typing import Callable
import jax

{helpers}

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, a):
{body}


def f_fwd(x, a):
    return f(x, a), None


def f_bwd(a, _, g):
    return (g,)


f.defvjp(f_fwd, f_bwd)
"""
_G = "def _g(x, a):\n    return x * a\n"
_MAKE_JIT = "def _make():\n    def _h(x, a):\n        return x * a\n    return jax.jit(_h)\n"


@pytest.mark.parametrize(
    ("helpers", "body"),
    [
        pytest.param(_G + "\n_gj = jax.jit(_g)\n", "    return _gj(x, a)", id="a module-level jit (probe29 G2)"),
        pytest.param(_G, "    fn = jax.jit(_g)\n    return fn(x, a)", id="a jit bound in the primal"),
        pytest.param(_G, "    fn = jax.vmap(_g)\n    return fn(x, a)", id="a vmap bound in the primal"),
        pytest.param(_G, "    fn = jax.checkpoint(_g)\n    return fn(x, a)", id="a checkpoint bound in the primal"),
        pytest.param(_G, "    fn: Callable = jax.jit(_g)\n    return fn(x, a)", id="an annotated assignment"),
        pytest.param(_G, "    (fn := jax.jit(_g))\n    return fn(x, a)", id="a named expression"),
        pytest.param(_MAKE_JIT, "    fn = _make()\n    return fn(x, a)", id="a factory's jit of a nested def"),
        pytest.param(
            _MAKE_JIT.replace("return jax.jit(_h)", "return _h"),
            "    fn = _make()\n    return fn(x, a)",
            id="a factory's def",
        ),
        pytest.param(
            "def _g(x, a, s=1.0):\n    return x * a * s\n\n_gp = partial(_g, s=2.0)\n\n"
            "def _make():\n    made = jax.jit(_gp)\n    return made\n",
            "    fn = _make()\n    return fn(x, a)",
            id="a factory's local jit of a partial alias",
        ),
        pytest.param(
            "def _g(x, a, s=1.0):\n    return x * a * s\n\n_gp = partial(_g, s=2.0)\n",
            "    fn = jax.jit(_gp)\n    return fn(x, a)",
            id="a jit of a partial alias",
        ),
    ],
)
def test_screen_keeps_array_use_in_a_def_a_name_bound_to_a_call_runs(helpers: str, body: str) -> None:
    # classify follows the def a jax.jit bound to a name runs (probe29 G2, module_facts), and the one a
    # local bound to a jit or to a module factory's result runs (probe33 H1, jit_bound): bwd never
    # reads `a`, so that def's arithmetic is the only array evidence, and the screen must see it too.
    text = _RUN_BY_A_NAME.format(helpers=helpers, body=body)
    assert _findings(text, "run.py", Settings(DEFAULT_SELECT)) == ["VJP001"]
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


def test_screen_proves_nothing_through_a_helper_the_function_rebinds() -> None:
    # `fn` is a module def that needs `a` concrete, but the primal calls its own `fn`, the jit a
    # factory returns, whose def uses `a` in arithmetic: classify reads that one.
    text = _RUN_BY_A_NAME.format(
        helpers=_MAKE_JIT + "\n\ndef fn(x, a):\n    return x if a else -x\n",
        body="    fn = _make()\n    return fn(x, a)",
    )
    assert _findings(text, "shadow.py", Settings(DEFAULT_SELECT)) == ["VJP001"]
    assert screen.may_report(text, Settings(DEFAULT_SELECT))


_TABLES = {
    "a host NumPy table": module(NUMPY_TABLE),
    "its take": module(NUMPY_TABLE, "_TABLE.take(k)"),
    "a call's result": module(LOADED),
    "its get": module(LOADED, "_TABLE.get(k, 1.0)"),
    "a name bound twice": module("_TABLE = (1.0,)\n_TABLE = load()"),
    "a factory's parameter": factory("", "table[k]"),
    "a JAX table": module("_TABLE = jnp.arange(3.0)"),
}


@pytest.mark.parametrize("select", SELECTIONS)
@pytest.mark.parametrize("text", [pytest.param(v, id=k) for k, v in _TABLES.items()])
def test_screen_keeps_a_table_the_argument_indexes(text: str, select: frozenset[str]) -> None:
    # classify: an index into a host NumPy table is static (no report), one into a name of unknown
    # kind a doubt (VJP002 where VJP001 was): the screen, which reads no table, keeps each file
    # whose selected codes report anything.
    if _findings(text, "tables.py", Settings(select)):
        assert screen.may_report(text, Settings(select))


def test_a_table_of_unknown_kind_is_reported_for_vjp002_alone() -> None:
    only = Settings(frozenset({"VJP002"}))
    for name in ("a call's result", "its get", "a name bound twice", "a factory's parameter"):
        assert _findings(_TABLES[name], "tables.py", only) == ["VJP002"], name
        assert screen.may_report(_TABLES[name], only), name


def test_the_positional_trigger_does_not_backtrack_on_a_comment_banner(tmp_path: Path) -> None:
    # A run of `#` after `custom_vjp` split in exponentially many ways: `check` of this ordinary
    # new-style file never finished. Run apart, so a relapse fails on the timeout, not by hanging.
    path = tmp_path / "banner.py"
    path.write_bytes(b"from jax import custom_vjp\n\n" + b"#" * 79 + b"\n# " * 40 + b"\nx = 1\n")
    done = subprocess.run(
        [sys.executable, "-m", "vjp_migrate", "check", "--no-cache", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (0, "All checks passed (1 file checked).\n")


@pytest.mark.parametrize(
    ("text", "admitted"),
    [
        pytest.param("@staticmethod\ndef f(:\n    pass\nf.defvjp(a, b)\n", False, id="a decorator no import binds"),
        pytest.param("g = make(f)\nf.defvjp(a, b)\n", False, id="a call of a name no import binds"),
        pytest.param("from lib import vjp_w\n@vjp_w\ndef f(x, w): ...\nf.defvjp(a, b)\n", True, id="imported"),
        pytest.param(
            "from lib import (\n    other,\n    vjp_w,\n)\nf = vjp_w(_f)\nf.defvjp(a, b)\n",
            True,
            id="imported in parentheses",
        ),
        pytest.param("from lib import vjp as w\n@w\ndef f(x, w): ...\nf.defvjp(a, b)\n", True, id="imported as"),
        pytest.param(
            "from lib import other, \\\n    vjp_w\n@vjp_w\ndef f(x, w): ...\nf.defvjp(a, b)\n",
            True,
            id="continued line",
        ),
    ],
)
def test_the_imported_alias_trigger_asks_for_an_import_of_the_name(text: str, admitted: bool) -> None:
    # Before, any bare decorator or `x = name(` in a file calling defvjp let it in: a syntax error in a
    # file that only registers rules of its own was then reported, though nothing there can be found.
    assert may_trigger(text.encode(), DEFAULT_SELECT) is admitted
