"""rewrite: the output keeps the module's own formatting and reads like a person wrote it."""

from __future__ import annotations

import collections
import io
import re
import textwrap
import tokenize
from collections.abc import Iterator
from functools import partial

import jax
import jax.numpy as jnp
import pytest
from conftest import FIXTURES, fixture_cases, read_exact
from helpers import executed

from vjp_migrate.api import check_source, fix_source
from vjp_migrate.codes import DEFAULT_SELECT, expand_selection
from vjp_migrate.model import Settings


def fix(code: str) -> str:
    return fix_source(textwrap.dedent(code)).source


def test_multiline_cotangent_tuple_keeps_its_layout() -> None:
    out = fix(
        """\
        import jax
        import jax.numpy as jnp
        from functools import partial

        @partial(jax.custom_vjp, nondiff_argnums=(1,))
        def f(x, w, y):
            return x * w + y

        def f_fwd(x, w, y):
            return f(x, w, y), None

        def f_bwd(w, _, g):
            return (
                g * w,
                g,
            )

        f.defvjp(f_fwd, f_bwd)
        """
    )
    assert "    return (\n        g * w,\n        None,\n        g,\n    )\n" in out
    assert "def f_bwd(w, g):" in out and "return f(x, w, y), w" in out


def test_partly_kept_argnames_and_trimmed_import() -> None:
    out = fix(
        """\
        import jax
        import jax.numpy as jnp
        from functools import partial, reduce

        @partial(jax.custom_vjp, nondiff_argnames=("act", "scale"))
        def f(x, act, scale):
            return act(x) * scale

        def f_fwd(x, act, scale):
            return f(x, act, scale), x

        def f_bwd(act, scale, x, g):
            return (jax.vjp(act, x)[1](g * scale)[0],)

        f.defvjp(f_fwd, f_bwd)
        total = reduce(lambda a, b: a + b, [1, 2])
        """
    )
    assert '@partial(jax.custom_vjp, nondiff_argnames=("act",))' in out
    assert "from functools import partial, reduce" in out
    assert "return f(x, act, scale), (scale, x)" in out
    assert "def f_bwd(act, res, g):\n    scale, x = res\n" in out
    assert "return (jax.vjp(act, x)[1](g * scale)[0], None)" in out


def test_unpack_goes_after_the_docstring_and_only_used_import_is_dropped() -> None:
    out = fix(
        """\
        import functools
        import jax
        import jax.numpy as jnp

        @functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
        def clip(lo, hi, x):
            return x

        def clip_fwd(lo, hi, x):
            return x, None

        def clip_bwd(lo, hi, _, g):
            \"\"\"Clip the cotangent.\"\"\"
            return (jnp.clip(g, lo, hi),)

        clip.defvjp(clip_fwd, clip_bwd)
        """
    )
    assert "import functools" not in out
    assert '    """Clip the cotangent."""\n    lo, hi = res\n' in out
    assert out.startswith("import jax\n")


_MIDDLE_NONE = """\
import jax
from functools import partial

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, w, y):
    return x * w * y

def f_fwd(x, w, y):
    out, vjp = jax.vjp(lambda a, b: a * w * b, x, y)
    return out, vjp

def f_bwd(w, vjp, g):
    grads = w
    # the cotangents of x and y
    return vjp(g)  # two of them

f.defvjp(f_fwd, f_bwd)
"""


def test_call_return_needing_a_middle_none_is_stored_in_a_fresh_name_first() -> None:
    out = fix_source(_MIDDLE_NONE).source
    assert (
        "def f_bwd(res, g):\n    w, vjp = res\n    grads = w\n    # the cotangents of x and y\n"
        "    cotangents = vjp(g)\n    return (*cotangents[:1], None, *cotangents[1:])  # two of them\n"
    ) in out


@pytest.mark.parametrize(
    "shared",
    ["    if g is None: return vjp(g)\n    return vjp(g)", "    grads = w; return vjp(g)"],
    ids=["one-line-if", "semicolon"],
)
def test_call_return_needing_a_middle_none_on_a_shared_line_is_reported(shared: str) -> None:
    code = _MIDDLE_NONE.replace("    grads = w\n    # the cotangents of x and y\n    return vjp(g)", shared)
    (finding,) = check_source(code)
    assert finding.code == "VJP003"
    assert "returns `vjp(g)` on a line shared with other code, and None is needed between its cotangents" in (
        finding.message
    )
    assert fix_source(code).source == code


@pytest.mark.parametrize("newline", ["\n", "\r"], ids=["LF", "CR"])
def test_form_feeds_are_kept(newline: str) -> None:
    # LibCST's code drops a form feed in a statement line's indentation (PEP 8's page break), and
    # gives a block's first line's to every line of the block: the lines the rewrite keeps get
    # the source's back, and so do lines it changes one for one (the decorator, the returns); a
    # line it adds gets none (bwd's unpack).
    plain = textwrap.dedent(
        """\
        import jax
        from functools import partial

        @partial(jax.custom_vjp, nondiff_argnums=(0, 1))
        def f(lo, hi, x):
            return x

        def f_fwd(lo, hi, x):
            y = x
            return y, None

        \x0c
        def f_bwd(lo, hi, _, g):
            s = hi - lo
            return (g * s,)

        f.defvjp(f_fwd, f_bwd)
        """
    )
    paged = re.sub(r"^(@partial|def f_fwd|f\.defvjp|    y = x|    s = hi)", "\x0c\\1", plain, flags=re.MULTILINE)
    migrated = fix_source(plain).source
    assert migrated.count("\x0c") == 1  # the blank line: LibCST keeps that one
    expected = re.sub(
        r"^(@jax\.custom_vjp|def f_fwd|f\.defvjp|    y = x|    s = hi)",
        "\x0c\\1",
        migrated,
        flags=re.MULTILINE,
    )
    assert expected.count("\x0c") == 6
    assert fix_source(paged.replace("\n", newline)).source == expected.replace("\n", newline)


def test_a_source_libcst_gives_back_otherwise_changed_is_refused() -> None:
    from vjp_migrate.roundtrip import restored

    assert restored("x = 1\n\x0cy = 2\n", "x = 1\ny = 2\n", "x = 1\ny = 3\n") == "x = 1\n\x0cy = 3\n"
    assert restored("x = 1\n\x0cy = 2\n", "x = 1\ny = 20\n", "x = 1\ny = 3\n") is None
    assert restored("x = 1\n\x0cy = 2\n", "x = 1\n", "x = 2\n") is None


@pytest.mark.parametrize("blank_lines_at_end", [0, 1])
@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
def test_line_endings_are_kept(newline: str, blank_lines_at_end: int) -> None:
    code = (
        textwrap.dedent(
            """\
        import jax
        from functools import partial

        @partial(jax.custom_vjp, nondiff_argnums=(0, 1))
        def f(lo, hi, x):  # note
            return x

        def f_fwd(lo, hi, x):
            return x, None

        def f_bwd(lo, hi, _, g):
            return (g * (hi - lo),)

        f.defvjp(f_fwd, f_bwd)
        """
        ).replace("\n", newline)
        + newline * blank_lines_at_end
    )
    out = fix_source(code).source
    assert "lo, hi = res" + newline in out
    assert out.count("\r\n") == (out.count("\n") if newline == "\r\n" else 0)
    assert out.count("\r") == (0 if newline == "\n" else out.count(newline))
    assert out.endswith("f.defvjp(f_fwd, f_bwd)" + newline * (1 + blank_lines_at_end))  # LibCST loses a last CR
    assert "# note" in out


def test_untouched_file_keeps_exact_bytes() -> None:
    code = "import jax\n\n\n@jax.custom_vjp\ndef f(x):\n    return x\n\n\nf.defvjp(lambda x: (x, None), lambda r, g: (g,))\n"
    result = fix_source(code)
    assert result.source == code
    assert not result.changed


def _site(fwd_body: str, bwd_body: str, argnums: str = "(1,)", params: str = "x, w, y") -> str:
    return (
        "import jax\nimport jax.numpy as jnp\nfrom functools import partial\n\n"
        f"@partial(jax.custom_vjp, nondiff_argnums={argnums})\ndef f({params}):\n    return x * w * y\n\n"
        f"def f_fwd({params}):\n{textwrap.indent(textwrap.dedent(fwd_body), '    ')}\n"
        f"def f_bwd(w, res, g):\n{textwrap.indent(textwrap.dedent(bwd_body), '    ')}\n"
        "f.defvjp(f_fwd, f_bwd)\n"
    )


def test_unpack_after_a_use_of_the_saved_argument_is_not_extended() -> None:
    out = fix_source(_site("return f(x, w, y), (x, y)\n", "g = g * w\na, b = res\nreturn (g * b, g * a)\n")).source
    assert "return f(x, w, y), (w, (x, y))" in out
    assert "def f_bwd(residuals, g):\n    w, res = residuals\n    g = g * w\n    a, b = res\n" in out


def test_residual_name_used_besides_the_return_is_not_extended() -> None:
    fwd = "saved = x, y\njax.debug.callback(print, saved)\nreturn f(x, w, y), saved\n"
    out = fix_source(_site(fwd, "a, b = res\nreturn (g * b * w, g * a * w)\n")).source
    assert "saved = x, y\n" in out and "return f(x, w, y), (w, saved)" in out
    assert "    w, (a, b) = res\n" in out


def test_residual_name_returned_by_every_return_is_extended_once() -> None:
    fwd = "saved = (x, y)\nif x.ndim:\n    return f(x, w, y), saved\nreturn x, saved\n"
    out = fix_source(_site(fwd, "a, b = res\nreturn (g * b * w, g * a * w)\n")).source
    assert "saved = (w, x, y)\n" in out and out.count("), saved\n") == 1 and "return x, saved\n" in out
    assert "    w, a, b = res\n" in out


def test_every_returned_call_gets_its_own_temporary_line() -> None:
    bwd = "a, b = res\nif a.ndim:\n    return pull(g)\nreturn pull(-g)\n"
    out = fix_source(_site("return f(x, w, y), (x, y)\n", bwd)).source
    assert "        grads = pull(g)\n        return (*grads[:1], None, *grads[1:])\n" in out
    assert "    grads = pull(-g)\n    return (*grads[:1], None, *grads[1:])\n" in out


def test_known_length_starred_with_a_none_inside_its_span_goes_through_a_temporary() -> None:
    bwd = "a, b = res\ncts = (g * a, g * b)\nreturn (*cts,)\n"
    out = fix_source(_site("return f(x, w, y), (x, y)\n", bwd)).source
    assert "    grads = (*cts,)\n    return (*grads[:1], None, *grads[1:])\n" in out


def test_a_none_after_every_cotangent_is_appended_without_slicing() -> None:
    trailing = {"argnums": "(2,)", "params": "x, y, w"}
    out = fix_source(_site("return f(x, y, w), (x, y)\n", "a, b = res\nreturn pull(g)\n", **trailing)).source
    assert "    return (*pull(g), None)\n" in out and "grads" not in out
    out = fix_source(
        _site("return f(x, y, w), (x, y)\n", "a, b = res\nreturn tuple(g * v for v in (b, a))\n", **trailing)
    ).source
    assert "    return (*tuple(g * v for v in (b, a)), None)\n" in out and "grads" not in out


def test_a_starred_item_of_unknown_length_may_stand_before_trailing_nones() -> None:
    bwd = "a, b = res\ncts = pull(g)\nreturn (g * b, *cts)\n"
    out = fix_source(_site("return f(x, y, w), (x, y)\n", bwd, argnums="(2,)", params="x, y, w")).source
    assert "    return (g * b, *cts, None)\n" in out and "grads" not in out


def test_a_call_returned_on_a_shared_line_takes_trailing_nones() -> None:
    bwd = "a, b = res\nif a.ndim: return pull(g)\nreturn pull(-g)\n"
    code = _site("return f(x, y, w), (x, y)\n", bwd, argnums="(2,)", params="x, y, w")
    assert [f.code for f in check_source(code)] == ["VJP001"]
    out = fix_source(code).source
    assert "    if a.ndim: return (*pull(g), None)\n    return (*pull(-g), None)\n" in out


@pytest.mark.parametrize(
    ("argnums", "params"),
    [
        pytest.param("(1,)", "x, w, y", id="None between the cotangents"),
        pytest.param("(2,)", "x, y, w", id="None after the cotangents"),
    ],
)
def test_bare_return_in_bwd_is_reported(argnums: str, params: str) -> None:
    bwd = "a, b = res\nif a is None:\n    return\nreturn (g * w, g)\n"
    code = _site(f"return f({params}), (x, y)\n", bwd, argnums=argnums, params=params)
    (finding,) = check_source(code)
    assert finding.code == "VJP003" and "bwd `f_bwd` has a bare `return`" in finding.message
    assert fix_source(code).source == code


_R = "return (g * w, g)"


@pytest.mark.parametrize(
    ("bwd", "reason"),
    [
        pytest.param("jax.debug.print('{}', g)\n# TODO: return the cotangents\n", "has no `return`", id="no return"),
        pytest.param("while g.ndim > 1:\n    g = g.sum(0)\n", "has no `return`", id="no return, a loop"),
        pytest.param(f"if g.ndim == 1:\n    {_R}\n", "can reach the end", id="an if with nothing after"),
        pytest.param(f"if g.ndim == 1:\n    {_R}\nelif g.ndim == 2:\n    g = g.T\n", "can reach the end", id="elif"),
        pytest.param(f"if g.ndim:\n    {_R}\nelse:\n    g = g.T\n", "can reach the end", id="an else"),
        pytest.param(f"try:\n    {_R}\nexcept ValueError:\n    pass\n", "can reach the end", id="a handler"),
        pytest.param(f"for v in g:\n    {_R}\n", "can reach the end", id="a for loop, no iteration"),
        pytest.param(f"while True:\n    if g.ndim:\n        break\n    {_R}\n", "can reach the end", id="a break"),
        pytest.param(
            f"match g.ndim:\n    case 1:\n        {_R}\n    case _:\n        pass\n", "can reach the end", id="a case"
        ),
        pytest.param(f"if g.ndim == 1:\n    {_R}\njax.debug.print('{{}}', g)\n", "can reach the end", id="jax call"),
    ],
)
def test_a_bwd_that_can_end_without_a_return_is_reported(bwd: str, reason: str) -> None:
    # As a bare `return`: bwd returns None there, with no cotangent tuple to take the Nones (JAX:
    # "got bwd output structure PyTreeDef(None)"). Before, VJP001 [*] and a rewrite.
    code = _site("return f(x, w, y), (x, y)\n", bwd)
    (finding,) = check_source(code)
    assert finding.code == "VJP003" and f"bwd `f_bwd` {reason}" in finding.message
    assert finding.message.endswith("(it returns None)" if "no `return`" in reason else "(it returns None there)")
    assert fix_source(code, settings=Settings(expand_selection(["ALL"], None), unsafe_fixes=True)).source == code


@pytest.mark.parametrize(
    "bwd",
    [
        pytest.param(f"{_R}\n", id="a return"),
        pytest.param(f"if g.ndim == 1:\n    {_R}\nelse:\n    {_R}\n", id="if and else"),
        pytest.param(f"if g.ndim == 1:\n    {_R}\nraise ValueError('1-D only')\n", id="a raise after"),
        pytest.param(f"if g.ndim == 1:\n    {_R}\nelse:\n    raise ValueError\n", id="a raise in else"),
        pytest.param(f"if g.ndim == 1:\n    {_R}\nassert False, '1-D only'\n", id="assert False"),
        pytest.param(f"if g.ndim == 1:\n    {_R}\nelif g.ndim == 2:\n    {_R}\n", id="elif: may be exhaustive"),
        pytest.param(f"if g.ndim == 1:\n    {_R}\nif g.ndim == 2:\n    {_R}\n", id="two ifs: may be exhaustive"),
        pytest.param(f"match g.ndim:\n    case 1:\n        {_R}\n    case 2:\n        {_R}\n", id="match"),
        pytest.param(f"match g.ndim:\n    case 1:\n        {_R}\n", id="match, one case"),
        pytest.param(f"while True:\n    if g.ndim:\n        {_R}\n    g = g[0]\n", id="while True"),
        pytest.param(f"while 1:\n    try:\n        {_R}\n    except ValueError:\n        continue\n", id="while 1"),
        pytest.param(f"for v in g:\n    if v:\n        {_R}\nelse:\n    raise ValueError\n", id="for-else raise"),
        pytest.param(f"for v in g:\n    if v:\n        continue\n{_R}\n", id="a loop, then a return"),
        pytest.param(f"try:\n    {_R}\nfinally:\n    jax.debug.print('{{}}', g)\n", id="try/finally"),
        pytest.param(f"try:\n    {_R}\nexcept ValueError:\n    {_R}\n", id="try/except"),
        pytest.param(f"with jax.named_scope('bwd'):\n    {_R}\n", id="with"),
        pytest.param(f"if True:\n    {_R}\n", id="if True"),
        pytest.param(f"if g.ndim == 1:\n    {_R}\n_unsupported(g)\n", id="a helper that may raise"),
        pytest.param(f"if g.ndim == 1:\n    {_R}\nsys.exit(1)\n", id="sys.exit"),
        pytest.param(f"def helper():\n    pass\nhelper()\n{_R}\n", id="a nested def"),
        pytest.param(f"h = lambda: None\n{_R}\n", id="a lambda"),
    ],
)
def test_a_bwd_with_no_sure_path_to_its_end_is_migrated(bwd: str) -> None:
    code = _site("return f(x, w, y), (x, y)\n", "a, b = res\n" + bwd)
    assert [f.code for f in check_source(code)] == ["VJP001"]
    assert fix_source(code).changed


def test_a_bwd_that_ends_without_a_return_gives_jax_no_cotangents() -> None:
    @partial(jax.custom_vjp, nondiff_argnums=(1,))
    def scale(x: jax.Array, w: float) -> jax.Array:
        return x * w

    def scale_bwd(w: float, _: None, g: jax.Array) -> tuple[jax.Array] | None:
        if g.ndim == 1:
            return (g * w,)

    scale.defvjp(lambda x, w: (scale(x, w), None), scale_bwd)
    assert jax.grad(lambda x: scale(x, 2.0).sum())(jnp.ones(3)).tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(TypeError, match=r"got bwd output structure PyTreeDef\(None\)"):
        jax.grad(lambda x: scale(x, 2.0))(1.0)


def test_one_line_rules_are_read_like_any_other() -> None:
    code = textwrap.dedent(
        """\
        import jax
        from functools import partial

        @partial(jax.custom_vjp, nondiff_argnums=(0,))
        def f(w, x):
            return x * w

        def f_fwd(w, x): return f(w, x), None
        def f_bwd(w, _, g): return (g * w,)

        f.defvjp(f_fwd, f_bwd)
        """
    )
    out = fix_source(code).source
    assert "def f_fwd(w, x): return f(w, x), w\ndef f_bwd(w, g): return (None, g * w)\n" in out


HEAD = "import jax\nimport jax.numpy as jnp\nfrom functools import partial\n\n"


def test_del_keeps_other_names_and_its_line_neighbours() -> None:
    out = fix(
        HEAD
        + """\
@partial(jax.custom_vjp, nondiff_argnums=(0, 1, 2))
def f(lo, mode, hi, x):
    return jnp.clip(x, lo, hi) if mode == "clip" else x

def f_fwd(lo, mode, hi, x):
    return f(lo, mode, hi, x), None

def f_bwd(lo, mode, hi, _, g):
    del lo, mode
    scale = 1.0; del hi
    return (g * scale,)

f.defvjp(f_fwd, f_bwd)
"""
    )
    assert "def f_bwd(mode, _, g):\n    del mode\n    scale = 1.0\n    return (None, None, g * scale)\n" in out


_STE = """\
@partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def f(x, lo, hi):
    return jnp.clip(x, lo, hi)

def f_fwd(x, lo, hi):
    return f(x, lo, hi), None

def f_bwd(lo, hi, _, g):
    DELS
    return (g,)

f.defvjp(f_fwd, f_bwd)
"""


@pytest.mark.parametrize(
    ("dels", "body"),
    [
        pytest.param(
            "del lo, hi  # straight-through estimator",
            "    # straight-through estimator\n    return (g, None, None)\n",
            id="about the function: stays",
        ),
        pytest.param(
            "del lo  # straight-through\n    del hi  # hi is unused",
            "    # straight-through\n    return (g, None, None)\n",
            id="two dels, one comment about the code",
        ),
        pytest.param(
            "# the bounds\n    del lo, hi  # pass the gradient through",
            "    # pass the gradient through\n    return (g, None, None)\n",
            id="the comment line above goes with the del, its own stays",
        ),
        pytest.param("del lo, hi  # unused", "    return (g, None, None)\n", id="unused: goes"),
        pytest.param("del lo, hi  # lo and hi bound the forward pass", "    return (g, None, None)\n", id="names them"),
        pytest.param("del lo, hi  # static, not differentiated", "    return (g, None, None)\n", id="static"),
        pytest.param("del lo, hi  # pylint: disable=unused-variable", "    return (g, None, None)\n", id="pylint"),
    ],
)
def test_a_del_that_goes_leaves_a_comment_about_the_code_above_the_next_line(dels: str, body: str) -> None:
    # The comment at the end of a `del` that goes describes the names (it goes with them) or the
    # code around it (`# straight-through estimator`: it stays, above the statement after it).
    out = fix(HEAD + _STE.replace("DELS", dels))
    assert "def f_bwd(_, g):\n" + body in out, out


@pytest.mark.parametrize(
    ("statement", "rest"),
    [
        pytest.param("if g.ndim:\n        g = g + 0\n", "", id="if"),
        pytest.param("for _ in range(2):\n        g = g + 0\n", "", id="for"),
        pytest.param("while False:\n        g = g + 0\n", "", id="while"),
        pytest.param("with jax.named_scope('bwd'):\n        g = g + 0\n", "", id="with"),
        pytest.param("try:\n        g = g + 0\n    except TypeError:\n        raise\n", "", id="try"),
        pytest.param("def scaled(v):\n        return v\n", "    g = scaled(g)\n", id="def"),
        pytest.param("\n    if g.ndim:\n        g = g + 0\n", "", id="after a blank line"),
    ],
)
def test_a_del_that_goes_leaves_its_comment_above_a_compound_statement_after_it(statement: str, rest: str) -> None:
    # The comment was dropped when a compound statement followed the `del`.
    dels = f"del lo, hi  # straight-through estimator\n    {statement}{rest}".rstrip("\n")
    out = fix(HEAD + _STE.replace("DELS", dels))
    above = "\n" if statement.startswith("\n") else ""
    kept = f"    # straight-through estimator\n{above}    {statement.lstrip()}{rest}    return (g, None, None)\n"
    assert "def f_bwd(_, g):\n" + kept in out, out


@pytest.mark.parametrize("names", ["lo, hi", "(lo, hi)", "[lo, hi]"])
def test_a_del_of_only_moved_names_goes_whole(names: str) -> None:
    # A bare `del lo, hi` left with no name was rebuilt as an empty tuple without parentheses:
    # an internal error (CSTValidationError), the file not fixed.
    out = fix(
        HEAD
        + f"""\
@partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def f(x, lo, hi):
    return jnp.clip(x, lo, hi)

def f_fwd(x, lo, hi):
    return f(x, lo, hi), None

def f_bwd(lo, hi, _, g):
    del {names}
    return (g,)

f.defvjp(f_fwd, f_bwd)
"""
    )
    assert "def f_bwd(_, g):\n    return (g, None, None)\n" in out, out


@pytest.mark.parametrize(
    ("dels", "migrated"),
    [
        pytest.param("del res  # unused\n", "", id="alone"),
        pytest.param("del res, w\n", "del w\n", id="with a read parameter"),
    ],
)
def test_a_del_of_the_none_residual_goes_with_it(dels: str, migrated: str) -> None:
    # The None residual's parameter is replaced by the saved argument: `del res` was left
    # behind, an UnboundLocalError when bwd ran.
    out = fix(
        HEAD
        + f"""\
@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, w):
    return x * w

def f_fwd(x, w):
    return f(x, w), None

def f_bwd(w, res, g):
    gw = g * w
    {dels}    return (gw,)

f.defvjp(f_fwd, f_bwd)
"""
    )
    assert f"def f_bwd(w, g):\n    gw = g * w\n{migrated and '    ' + migrated}    return (gw, None)\n" in out, out


def test_a_del_after_reading_the_parameter_stays() -> None:
    out = fix(
        HEAD
        + """\
@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, w):
    return x * w

def f_fwd(x, w):
    return f(x, w), None

def f_bwd(w, _, g):
    gw = g * w
    del w
    return (gw,)

f.defvjp(f_fwd, f_bwd)
"""
    )
    assert "def f_bwd(w, g):\n    gw = g * w\n    del w\n" in out and "return f(x, w), w" in out


def test_shared_fwd_and_bwd_are_rewritten_once() -> None:
    code = HEAD
    for name in ("scale_a", "scale_b"):
        code += f"@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef {name}(x, s):\n    return x * s\n\n"
    code += "def fwd(x, s):\n    return x * s, None\n\ndef bwd(s, _, g):\n    return (g * s,)\n\n"
    code += "scale_a.defvjp(fwd, bwd)\nscale_b.defvjp(fwd, bwd)\n"
    result = fix_source(code)
    assert "def fwd(x, s):\n    return x * s, s\n" in result.source
    assert "def bwd(s, g):\n    return (g * s, None)\n" in result.source
    assert result.source.count("@jax.custom_vjp\n") == 2 and len(result.fixed) == 2


def test_shared_bwd_whose_users_put_the_argument_at_different_positions() -> None:
    code = HEAD
    code += "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef f(x, s):\n    return x * s\n\n"
    code += "@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef g(s, x):\n    return x * s\n\n"
    code += "def f_fwd(x, s):\n    return x * s, None\n\ndef g_fwd(s, x):\n    return x * s, None\n\n"
    code += "def bwd(s, _, g):\n    return (g * s,)\n\nf.defvjp(f_fwd, bwd)\ng.defvjp(g_fwd, bwd)\n"
    found = check_source(code)
    assert [d.code for d in found] == ["VJP003", "VJP003"]
    assert "bwd `bwd` is shared by `f`, `g`, which would change it differently" in found[0].message
    assert "`f` moves `s` (None at cotangent position 1" in found[0].message
    assert "`g` moves `s` (None at cotangent position 0" in found[0].message
    assert fix_source(code).source == code


def test_a_user_that_cannot_be_rewritten_blocks_the_shared_rule() -> None:
    code = HEAD + "from consts import ND\n"  # a module not checked: its value is not read
    code += "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef f(x, s):\n    return x * s\n\n"
    code += "@partial(jax.custom_vjp, nondiff_argnums=ND)\ndef g(x, s):\n    return x * s\n\n"
    code += "def fwd(x, s):\n    return x * s, None\n\ndef bwd(s, _, g):\n    return (g * s,)\n\n"
    code += "f.defvjp(fwd, bwd)\ng.defvjp(fwd, bwd)\n"
    found = {d.function: d.message for d in check_source(code)}
    assert "`g` cannot be rewritten (nondiff_argnums is given by `ND`, imported from `consts`" in found["f"]
    assert "nondiff_argnums is given by `ND`, imported from `consts`" in found["g"]
    assert fix_source(code).source == code


def test_a_lambda_bwd_def_gets_a_free_name_and_its_scope_s_blank_lines() -> None:
    out = fix(
        HEAD
        + """\
def f_bwd():
    pass


def make():
    @partial(jax.custom_vjp, nondiff_argnums=(1, 2))
    def f(x, lo, hi):
        return jnp.clip(x, lo, hi)

    # register the rules
    f.defvjp(lambda x, lo, hi: (f(x, lo, hi), x), lambda lo, hi, x, g: (jnp.where((x > lo) & (x < hi), g, 0.0),))
    return f
"""
    )
    expected = """\
    @jax.custom_vjp
    def f(x, lo, hi):
        return jnp.clip(x, lo, hi)

    def f_bwd_2(res, g):
        lo, hi, x = res
        return (jnp.where((x > lo) & (x < hi), g, 0.0), None, None)

    # register the rules
    f.defvjp(lambda x, lo, hi: (f(x, lo, hi), (lo, hi, x)), f_bwd_2)
    return f
"""
    assert out.endswith(expected)


def test_a_lambda_bwd_def_keeps_crlf() -> None:
    code = HEAD + "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef f(x, w):\n    return x * w\n\n\n"
    code += "f.defvjp(lambda x, w: (f(x, w), x), lambda w, x, g: (g * w * x,))\n"
    out = fix_source(code.replace("\n", "\r\n")).source
    assert "\n\n\ndef f_bwd(res, g):\n    w, x = res\n    return (g * w * x, None)\n\n\nf.defvjp(" in out.replace(
        "\r\n", "\n"
    )
    assert out.count("\r\n") == out.count("\n")


def test_half_migrated_residual_at_different_indices_is_saved_again() -> None:
    out = fix(
        HEAD
        + """\
@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, w):
    return x * w

def f_fwd(x, w):
    if x.ndim:
        return f(x, w), (x, w)
    return f(x, w), (w, x)

def f_bwd(w, res, g):
    a, b = res
    return (g * w,)

f.defvjp(f_fwd, f_bwd)
"""
    )
    assert "return f(x, w), (w, x, w)" in out and "w, a, b = res" in out


def test_bwd_jit_options_tied_to_positions_are_reported() -> None:
    code = HEAD + "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef f(x, w):\n    return x * w\n\n"
    code += "def f_fwd(x, w):\n    return f(x, w), None\n\n"
    code += (
        "@partial(jax.jit, donate_argnums=(1,))\ndef f_bwd(w, _, g):\n    return (g * w,)\n\nf.defvjp(f_fwd, f_bwd)\n"
    )
    (finding,) = check_source(code)
    assert finding.code == "VJP003" and "jax.jit has `donate_argnums`, tied to its signature" in finding.message


@pytest.mark.parametrize(
    "jit",
    [
        pytest.param("@partial(jax.jit, static_argnums=(1,))\n", id="by number"),
        pytest.param('@partial(jax.jit, static_argnames=("res",))\n', id="by name"),
    ],
)
def test_a_bwd_jit_that_marks_the_residuals_static_is_not_rewritten(jit: str) -> None:
    # The moved argument would join the residuals, and a jax.jit static argument must be hashable.
    code = _site("return f(x, w, y), None\n", "return (g * w, g)\n").replace("def f_bwd(", jit + "def f_bwd(")
    (finding,) = check_source(code)
    assert finding.code == "VJP003" and finding.message.endswith("bwd `f_bwd`'s jax.jit marks the residuals static")
    assert fix_source(code).source == code


@pytest.mark.parametrize("unsafe", [pytest.param(False, id="safe fixes"), pytest.param(True, id="unsafe fixes")])
def test_array_arguments_stay_when_vjp001_is_not_selected(unsafe: bool) -> None:
    # `--ignore VJP001`: the array argument is not reported, so fix must not move it either.
    before = read_exact(FIXTURES / "mixed_callable_kept" / "before.py")
    assert fix_source(before).changed
    result = fix_source(before, settings=Settings(expand_selection(["ALL"], ["VJP001"]), unsafe))
    assert (result.source, result.changed, result.diagnostics) == (before, False, ())


def test_a_jit_static_argnums_given_as_one_int_stays_one_int() -> None:
    before = read_exact(FIXTURES / "jit_rules_static_shifted" / "before.py").replace(
        "static_argnums=(1,)", "static_argnums=1"
    )
    out = fix(before)
    assert "@partial(jax.jit, static_argnums=1)\ndef _saturate_fwd(limit, mode, x):" in out
    assert "@partial(jax.jit, static_argnums=0)\ndef _saturate_bwd(mode, res, g):" in out


def test_jit_static_argnames_lose_the_moved_names() -> None:
    # The rules' jit marks `w` static, which makes it a static setting: the configuration moves it.
    settings = Settings(DEFAULT_SELECT, array_args=frozenset({"f:w"}))
    code = (
        HEAD
        + """\
@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def f(mode, w, x):
    return x * w if mode == "mul" else x + w

@partial(jax.jit, static_argnames=("mode", "w"))
def f_fwd(mode, w, x):
    return (x * w if mode == "mul" else x + w), None

@partial(jax.jit, static_argnames=["w", "mode"])
def f_bwd(mode, w, _, g):
    return (g * w if mode == "mul" else g,)

f.defvjp(f_fwd, f_bwd)
"""
    )
    out = fix_source(code, settings=settings).source
    assert '@partial(jax.jit, static_argnames=("mode",))\ndef f_fwd(mode, w, x):' in out
    assert '@partial(jax.jit, static_argnames=["mode"])\ndef f_bwd(mode, w, g):' in out


def test_silencing_one_user_of_a_shared_rule_leaves_the_rule_alone() -> None:
    code = HEAD
    for name in ("scale_a", "scale_b"):
        noqa = "  # noqa: VJP001" if name == "scale_b" else ""
        code += f"@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef {name}(x, s):{noqa}\n    return x * s\n\n"
    code += "def fwd(x, s):\n    return x * s, None\n\ndef bwd(s, _, g):\n    return (g * s,)\n\n"
    code += "scale_a.defvjp(fwd, bwd)\nscale_b.defvjp(fwd, bwd)\n"
    result = fix_source(code)
    assert result.source == code and not result.fixed


def test_half_migrated_slot_already_named_like_the_parameter_and_another_argument_added() -> None:
    out = fix(
        HEAD
        + """\
@partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def f(x, w, b):
    return x * w + b

def f_fwd(x, w, b):
    return f(x, w, b), (x, w)

def f_bwd(w, b, res, g):
    x, w = res
    return (g * w * b,)

f.defvjp(f_fwd, f_bwd)
"""
    )
    assert "return f(x, w, b), (b, x, w)" in out
    assert "def f_bwd(res, g):\n    b, x, w = res\n    return (g * w * b, None, None)\n" in out


def test_a_partial_fwd_saves_the_argument_after_its_bound_parameters() -> None:
    out = fix(
        HEAD
        + """\
@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, w):
    return x * w

def fwd_impl(scale, x, w):
    return f(x, w) * scale, None

def f_bwd(w, _, g):
    return (g * w,)

f.defvjp(partial(fwd_impl, 1.0), f_bwd)
"""
    )
    assert "def fwd_impl(scale, x, w):\n    return f(x, w) * scale, w\n" in out
    assert "def f_bwd(w, g):\n    return (g * w, None)\n" in out
    assert "f.defvjp(partial(fwd_impl, 1.0), f_bwd)" in out and "from functools import partial" in out


RULES_BELOW = """

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, w):
    return x * w


def f_fwd(x, w):
    return f(x, w), None


def f_bwd(w, _, g):
    return (g * w,)


f.defvjp(f_fwd, f_bwd)
"""


@pytest.mark.parametrize(
    "head,expected",
    [
        pytest.param(
            '"""Doc."""\n\nfrom functools import partial\nimport jax\n',
            '"""Doc."""\n\nimport jax\n',
            id="the gap after the docstring stays",
        ),
        pytest.param(
            '"""Doc."""\n\nfrom functools import partial\n\nimport jax\n',
            '"""Doc."""\n\nimport jax\n',
            id="no second gap when the next statement has its own",
        ),
        pytest.param(
            "import math\n\n# partial for the decorator\nfrom functools import partial\nimport jax\n",
            "import math\n\nimport jax\n",
            id="a comment above the import naming it goes with it, the gap stays",
        ),
        pytest.param(
            "import math\n\n# Standard library\nfrom functools import partial\nimport os\nimport jax\n",
            "import math\n\n# Standard library\nimport os\nimport jax\n",
            id="a comment heading a group stays with the group",
        ),
        pytest.param(
            "import jax\n\n# helpers\nfrom functools import partial\n\nimport math\n",
            "import jax\n\nimport math\n",
            id="a comment heading only the removed import goes with it",
        ),
        pytest.param(
            "import math\n\nfrom functools import partial\n# jax itself\nimport jax\n",
            "import math\n\n# jax itself\nimport jax\n",
            id="a comment of the next statement stays below the gap",
        ),
        pytest.param(
            "import jax\ntry:\n    import numpy\n\n    from functools import partial\n    import math\nexcept ImportError:\n    pass\n",
            "import jax\ntry:\n    import numpy\n\n    import math\nexcept ImportError:\n    pass\n",
            id="inside a block too",
        ),
        pytest.param(
            "import jax\n\nfrom functools import partial\n",
            "import jax\n",
            id="a last import takes its gap with it",
        ),
        pytest.param(
            "import jax\ntry:\n    from functools import partial\nexcept ImportError:\n    raise\n",
            "import jax\ntry:\n    from functools import partial\nexcept ImportError:\n    raise\n",
            id="an import that is all of a block stays (no try: pass)",
        ),
        pytest.param(
            "import jax\nif jax:\n    from functools import partial\n    from functools import partial\n",
            "import jax\nif jax:\n    from functools import partial\n    from functools import partial\n",
            id="imports that are all of a block stay together",
        ),
        pytest.param(
            "import jax\ntry: from functools import partial\nexcept ImportError: raise\n",
            "import jax\ntry: from functools import partial\nexcept ImportError: raise\n",
            id="one-line block",
        ),
    ],
)
def test_a_removed_import_line_leaves_the_blank_lines_above_it(head: str, expected: str) -> None:
    from vjp_migrate.api import DEFAULT_SETTINGS, analyze
    from vjp_migrate.rewrite import apply_plans

    out = fix_source(head + RULES_BELOW).source
    assert out.startswith(expected + "\n\n@jax.custom_vjp\n"), out
    analysis = analyze(head + RULES_BELOW, "<string>", DEFAULT_SETTINGS)
    plans = [d.plan for d in analysis.decisions if d.plan is not None]
    whole = apply_plans(analysis.module, plans, local=False).code  # type: ignore[arg-type]
    assert whole == out


def test_rule_with_two_parameters_of_one_name_is_reported_not_rewritten() -> None:
    # CPython rejects `def f_bwd(_, _, g)`; dropping "the" `_` would drop the wrong one
    code = _site("return f(x, w, y), None\n", "return (g * w, g)\n").replace(
        "def f_bwd(w, res, g)", "def f_bwd(w, w, g)"
    )
    with pytest.raises(SyntaxError, match="duplicate argument"):
        compile(code, "<test>", "exec")
    (finding,) = check_source(code)
    assert finding.code == "VJP003"
    assert "`f_bwd` has two parameters named `w`, which Python rejects" in finding.message
    assert fix_source(code).source == code


def test_moved_parameter_bwd_only_rebinds_is_not_saved() -> None:
    bwd = "w, total = jnp.sum(g), g * res\nreturn (total, g)\n"
    out = fix_source(_site("return f(x, w, y), x\n", bwd)).source
    assert "return f(x, w, y), x\n" in out  # fwd unchanged: bwd never reads the moved `w`
    assert "def f_bwd(res, g):\n    w, total = jnp.sum(g), g * res\n    return (total, None, g)\n" in out
    read_too = fix_source(_site("return f(x, w, y), x\n", "w = w + 1\nreturn (g * w * res, g)\n")).source
    assert "return f(x, w, y), (w, x)" in read_too  # `w = w + 1` reads it first: saved


ANNOTATED = """\
import jax
from functools import partial
from typing import Any


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, w):
    return x * w


def f_fwd(x, w) -> FWD:
    return x * w, RESIDUAL


def f_bwd(w, RES_PARAM, g) -> BWD:
    BODY
    return (g * w,)


f.defvjp(f_fwd, f_bwd)
"""


def _signatures(code: str) -> list[str]:
    return [line for line in fix(code).splitlines() if line.startswith("def f_")]


def _annotated(residual: str, res_param: str, body: str, fwd: str, bwd: str) -> str:
    return (
        ANNOTATED.replace("RESIDUAL", residual)
        .replace("RES_PARAM", res_param)
        .replace("BODY", body)
        .replace("FWD", fwd)
        .replace("BWD", bwd)
    )


@pytest.mark.parametrize(
    ("residual", "res_param", "body", "fwd", "bwd", "expected"),
    [
        pytest.param(
            "(x, x * w)",
            "res: tuple[jax.Array, jax.Array]",
            "a, b = res",
            "tuple[jax.Array, Any]",
            "tuple[jax.Array]",
            ["def f_fwd(x, w) -> tuple[jax.Array, Any]:", "def f_bwd(res, g) -> tuple[jax.Array, None]:"],
            id="tuple layout, bwd's w unannotated: the residual's annotation goes, fwd's with an Any residual stays",
        ),
        pytest.param(
            "x",
            "res: jax.Array",
            'jax.debug.print("{}", res)',
            "tuple[jax.Array, jax.Array]",
            "Any",
            ["def f_fwd(x, w):", "def f_bwd(residuals, g) -> Any:"],
            id="general layout, renamed residual: no annotation follows it",
        ),
        pytest.param(
            "None",
            "_: None",
            "pass",
            "tuple[jax.Array, None]",
            "tuple",
            ["def f_fwd(x, w):", "def f_bwd(w, g):"],
            id="none layout, one saved: the parameter is the argument, unannotated like it",
        ),
        pytest.param(
            "(x, x * w)",
            "res: object",
            "a, b = res",
            "tuple",
            "object",
            ["def f_fwd(x, w) -> tuple:", "def f_bwd(res: object, g) -> object:"],
            id="annotations that hold any value stay",
        ),
        pytest.param(
            "(x, x * w)",
            'res: "Residuals"',
            "a, b = res",
            '"FwdOut"',
            '"Grads"',
            ["def f_fwd(x, w):", "def f_bwd(res, g):"],
            id="string annotations are not read: they go",
        ),
    ],
)
def test_annotations_the_change_makes_wrong_go(
    residual: str, res_param: str, body: str, fwd: str, bwd: str, expected: list[str]
) -> None:
    assert _signatures(_annotated(residual, res_param, body, fwd, bwd)) == expected


@pytest.mark.parametrize(
    ("residual", "res_param", "body", "fwd", "bwd", "expected"),
    [
        pytest.param(
            "(x, x * w)",
            "res: tuple[jax.Array, jax.Array]",
            "a, b = res",
            "tuple[jax.Array, tuple[jax.Array, jax.Array]]",
            "tuple[jax.Array]",
            [
                "def f_fwd(x, w: jax.Array) -> tuple[jax.Array, tuple[jax.Array, jax.Array, jax.Array]]:",
                "def f_bwd(res: tuple[jax.Array, jax.Array, jax.Array], g) -> tuple[jax.Array, None]:",
            ],
            id="tuple layout: the saved argument's type goes first",
        ),
        pytest.param(
            "(x, x * w)",
            "res: typing.Tuple[jax.Array, jax.Array]",
            "a, b = res",
            "Any",
            "typing.Tuple[jax.Array]",
            [
                "def f_fwd(x, w: jax.Array) -> Any:",
                "def f_bwd(res: typing.Tuple[jax.Array, jax.Array, jax.Array], g) -> typing.Tuple[jax.Array, None]:",
            ],
            id="the tuple keeps its spelling",
        ),
        pytest.param(
            "x",
            "res: jax.Array",
            "y = res",
            "tuple[jax.Array, jax.Array]",
            "Any",
            [
                "def f_fwd(x, w: jax.Array) -> tuple[jax.Array, tuple[jax.Array, jax.Array]]:",
                "def f_bwd(res: tuple[jax.Array, jax.Array], g) -> Any:",
            ],
            id="nested layout: the old type is the last item",
        ),
        pytest.param(
            "x",
            "res: jax.Array",
            'jax.debug.print("{}", res)',
            "Any",
            "Any",
            ["def f_fwd(x, w: jax.Array) -> Any:", "def f_bwd(residuals: tuple[jax.Array, jax.Array], g) -> Any:"],
            id="renamed residual: its annotation follows it, updated",
        ),
        pytest.param(
            "(x, x * w)",
            "res: tuple[jax.Array, ...]",
            "a, b = res",
            "tuple[jax.Array, tuple[jax.Array, ...]]",
            "tuple[jax.Array, jax.Array]",
            [
                "def f_fwd(x, w: jax.Array) -> tuple[jax.Array, tuple[jax.Array, ...]]:",
                "def f_bwd(res: tuple[jax.Array, ...], g):",
            ],
            id="tuple[A, ...] holding the saved type already stays; a cotangent count that differs goes",
        ),
        pytest.param(
            "(x, x * w)",
            "res: Residuals",
            "a, b = res",
            "tuple[jax.Array, Residuals]",
            "Any",
            ["def f_fwd(x, w: jax.Array):", "def f_bwd(res, g) -> Any:"],
            id="a tuple layout behind an alias: it goes",
        ),
    ],
)
def test_annotations_the_change_makes_wrong_are_updated_when_exact(
    residual: str, res_param: str, body: str, fwd: str, bwd: str, expected: list[str]
) -> None:
    code = (
        _annotated(residual, res_param, body, fwd, bwd)
        .replace("def f_fwd(x, w)", "def f_fwd(x, w: jax.Array)")
        .replace("def f_bwd(w, ", "def f_bwd(w: jax.Array, ")
        .replace("import jax\n", "import typing\n\nimport jax\n", 1)
    )
    assert _signatures(code) == expected


@pytest.mark.parametrize(
    ("item", "saved", "joined"),
    [
        pytest.param("jax.Array", "jax.Array | None", "jax.Array | None", id="None joins"),
        pytest.param("jax.Array", "Optional[jax.Array]", "jax.Array | Optional[jax.Array]", id="Optional kept whole"),
        pytest.param(
            "jax.Array | None", "Float[Array, 'n']", "jax.Array | Float[Array, 'n'] | None", id="None stays last"
        ),
        pytest.param(
            "Float[Array, '...']",
            "Int[Array, 'n'] | int",
            "Float[Array, '...'] | Int[Array, 'n'] | int",
            id="jaxtyping",
        ),
        pytest.param("jax.Array | int", "int | jax.Array", "jax.Array | int", id="each type once"),
        pytest.param("Array", "jax.Array", "Array", id="one type spelled two ways"),
        pytest.param("jax.Array | int", "Array | None", "jax.Array | int | None", id="spelled as first met"),
        pytest.param("Any", "jax.Array", "Any", id="Any holds it"),
    ],
)
def test_a_variadic_residual_type_joins_the_saved_argument_s(item: str, saved: str, joined: str) -> None:
    # fwd's `tuple[Out, tuple[A, ...]]` and bwd's `res: tuple[A, ...]`: the saved argument is one
    # more item of the flat tuple (pkgprobe23 G11, ejkernel's recurrent attention).
    code = (
        _annotated("(x,)", f"res: tuple[{item}, ...]", "(a,) = res", f"tuple[jax.Array, tuple[{item}, ...]]", "Any")
        .replace("def f_fwd(x, w)", f"def f_fwd(x, w: {saved})")
        .replace("def f_bwd(w, ", f"def f_bwd(w: {saved}, ")
        .replace(
            "from typing import Any\n",
            "from typing import Any, Optional\n\nfrom jax import Array\nfrom jaxtyping import Float, Int\n",
        )
    )
    out = re.sub(r"\(\s+|,?\s+\)", lambda m: m.group().strip(" \n,"), fix(code))  # a def split to fit, joined
    assert f"def f_fwd(x, w: {saved}) -> tuple[jax.Array, tuple[{joined}, ...]]:" in out, out
    assert f"def f_bwd(res: tuple[{joined}, ...], g) -> Any:" in out, out


@pytest.mark.parametrize("saved", ['"jax.Array"', None])
def test_a_variadic_residual_type_goes_when_the_saved_type_is_not_known(saved: str | None) -> None:
    # A string cannot be joined by `|` at run time; an unannotated argument has no type to join.
    code = _annotated(
        "(x,)", "res: tuple[jax.Array, ...]", "(a,) = res", "tuple[jax.Array, tuple[jax.Array, ...]]", "Any"
    )
    if saved is not None:
        code = code.replace("def f_fwd(x, w)", f"def f_fwd(x, w: {saved})").replace(
            "def f_bwd(w, ", f"def f_bwd(w: {saved}, "
        )
    assert _signatures(code) == [
        f"def f_fwd(x, w{'' if saved is None else ': ' + saved}):",
        "def f_bwd(res, g) -> Any:",
    ]


def test_unchanged_residual_keeps_its_annotation_and_fwd_s() -> None:
    code = """\
        import jax
        from functools import partial


        @partial(jax.custom_vjp, nondiff_argnums=(1,))
        def f(x, w):
            return x * w


        def f_fwd(x, w) -> tuple[jax.Array, tuple[jax.Array]]:
            return x * w, (x,)


        def f_bwd(w, res: tuple[jax.Array], g: jax.Array) -> tuple[jax.Array]:
            return (g,)


        f.defvjp(f_fwd, f_bwd)
        """
    assert _signatures(code) == [
        "def f_fwd(x, w) -> tuple[jax.Array, tuple[jax.Array]]:",
        "def f_bwd(res: tuple[jax.Array], g: jax.Array) -> tuple[jax.Array, None]:",
    ]


def test_lone_saved_residual_takes_the_argument_s_annotation() -> None:
    code = ANNOTATED.replace("RESIDUAL", "None").replace("w, RES_PARAM, g", "w: jax.Array, _: None, g")
    code = code.replace("FWD", "Any").replace("BWD", "Any").replace("BODY", "pass")
    assert _signatures(code) == ["def f_fwd(x, w) -> Any:", "def f_bwd(w: jax.Array, g) -> Any:"]


def test_an_import_only_a_dropped_annotation_used_goes_and_the_file_does_not_start_blank() -> None:
    code = """\
        from typing import Tuple

        import jax
        from functools import partial


        @partial(jax.custom_vjp, nondiff_argnums=(1,))
        def f(x, w):
            return x * w


        def f_fwd(x, w):
            return x * w, (x,)


        def f_bwd(w, res: Tuple[jax.Array], g):
            (x,) = res
            return (g * w,)


        f.defvjp(f_fwd, f_bwd)
        """
    new = fix(code)
    assert new.startswith("import jax\n\n\n@jax.custom_vjp\n")
    assert "def f_bwd(res, g):\n    (w, x) = res\n" in new


SAVES_NOTHING = """\
import jax
import jax.numpy as jnp
from functools import partial

@partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def clip(x, lo, hi):
    return x

def clip_fwd(x, lo, hi):
    {above}return x, {residual}{trailing}

def clip_bwd(lo, hi, _, g):
    return (jnp.clip(g, lo, hi),)

clip.defvjp(clip_fwd, clip_bwd)
"""


@pytest.mark.parametrize(
    ("above", "residual", "trailing", "expected"),
    [
        pytest.param("", "None", "  # no residual values to save", "  # save lo and hi as residuals", id="on the line"),
        pytest.param("", "()", "  # No residuals.", "  # Save lo and hi as residuals.", id="empty tuple, capital"),
        pytest.param(
            "# nothing to save: the bounds are all bwd needs\n    ",
            "None",
            "",
            "# save lo and hi as residuals: the bounds are all bwd needs\n    return x, (lo, hi)\n",
            id="the line above, the rest kept",
        ),
        pytest.param("", "None", "  # identity, see f", "  # identity, see f", id="another comment stays"),
        pytest.param("# no residuals\n\n    ", "None", "", "# no residuals\n\n    return", id="not right above"),
    ],
)
def test_a_comment_saying_fwd_saves_nothing_says_what_it_saves(
    above: str, residual: str, trailing: str, expected: str
) -> None:
    out = fix(SAVES_NOTHING.format(above=above, residual=residual, trailing=trailing))
    assert "return x, (lo, hi" in out
    assert expected in out, out


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        pytest.param(
            SAVES_NOTHING.format(above="", residual="()", trailing=""),
            "return x, (lo, hi)\n\ndef clip_bwd(res, g):\n    lo, hi = res\n",
            id="two moved",
        ),
        pytest.param(
            HEAD + RULES_BELOW.replace("f(x, w), None", "f(x, w), ()"),
            "    return f(x, w), w\n\n\ndef f_bwd(w, g):\n",
            id="one moved",
        ),
        pytest.param(
            SAVES_NOTHING.format(above="", residual="[]", trailing="  # nothing to save"),
            "return x, (lo, hi)  # save lo and hi as residuals\n\ndef clip_bwd(res, g):\n    lo, hi = res\n",
            id="empty list",
        ),
        pytest.param(
            HEAD + RULES_BELOW.replace("f(x, w), None", "f(x, w), []"),
            "    return f(x, w), w\n\n\ndef f_bwd(w, g):\n",
            id="empty list, one moved",
        ),
        pytest.param(
            SAVES_NOTHING.format(above="", residual="{}", trailing="  # nothing to save"),
            "return x, (lo, hi)  # save lo and hi as residuals\n\ndef clip_bwd(res, g):\n    lo, hi = res\n",
            id="empty dict",
        ),
        pytest.param(
            HEAD + RULES_BELOW.replace("f(x, w), None", "f(x, w), {}"),
            "    return f(x, w), w\n\n\ndef f_bwd(w, g):\n",
            id="empty dict, one moved",
        ),
    ],
)
def test_an_empty_residual_is_replaced_like_none(code: str, expected: str) -> None:
    # `return out, ()`, `out, []` or `out, {}` saves nothing, as `None` does (JAX hands bwd that
    # same empty value): the moved arguments take its place, not `(lo, hi, ())` with bwd
    # unpacking `lo, hi, _ = res`.
    assert "()" in code or "[]" in code or "{}" in code
    out = fix(code)
    assert expected in out, out


def test_a_comment_saying_one_argument_is_saved_is_singular() -> None:
    code = SAVES_NOTHING.format(above="", residual="None", trailing="  # nothing to save")
    code = code.replace("(1, 2)", "(2,)").replace("def clip_bwd(lo, hi, _, g)", "def clip_bwd(hi, _, g)")
    out = fix(code.replace("(jnp.clip(g, lo, hi),)", "(jnp.clip(g, -hi, hi), None)"))  # x and lo: two cotangents
    assert "return x, hi  # save hi as a residual\n" in out, out


@pytest.mark.parametrize(
    ("returned", "expected", "residual", "saved"),
    [
        pytest.param("(g * w, )", "(g * w, None)", "(x, )", "(w, x)", id="space before the bracket"),
        pytest.param("[g * w, ]", "[g * w, None]", "(x,)", "(w, x)", id="list"),
        pytest.param("( g * w, )", "( g * w, None )", "( x, )", "( w, x )", id="padded at both ends: kept"),
    ],
)
def test_a_one_item_literal_that_gains_items_loses_its_lone_trailing_space(
    returned: str, expected: str, residual: str, saved: str
) -> None:
    # `(g, )` loses its trailing comma when it gains an item: the space before `)` goes with it.
    code = HEAD + RULES_BELOW.replace("return (g * w,)", f"return {returned}")
    code = code.replace("f(x, w), None", f"f(x, w), {residual}").replace("(w, _, g)", "(w, res, g)")
    out = fix(code.replace("return " + returned, "(x,) = res\n    return " + returned))
    assert f"return {expected}\n" in out and f"return f(x, w), {saved}\n" in out, out


@pytest.mark.parametrize(
    ("params", "argnums", "returned", "expected"),
    [
        pytest.param("x, y, w", "(2,)", "tuple(g for _ in y) + (g,)", "tuple(g for _ in y) + (g, None)", id="last"),
        pytest.param("w, x, y", "(0,)", "(g * w,) + tuple(y)", "(None, g * w) + tuple(y)", id="first"),
        pytest.param("w, x, y", "(0,)", "(g,) + (g,) + tuple(y)", "(None, g) + (g,) + tuple(y)", id="first of three"),
        pytest.param("w, x, y", "(0,)", "tuple(y) + (g,)", "(None, *(tuple(y) + (g,)))", id="first not a literal"),
        pytest.param("x, w, y", "(1,)", "(g,) + (g,)", "(*grads[:1], None, *grads[1:])", id="between: temporary"),
        pytest.param("x, y, w", "(2,)", "(g, g) + ()", "(*((g, g) + ()), None)", id="empty last: not `(None)`"),
    ],
)
def test_a_concatenation_of_tuples_takes_the_nones_in_its_end_literal(
    params: str, argnums: str, returned: str, expected: str
) -> None:
    # `return rest + (b,)` gains its None in the literal, `rest + (b, None)`, not `(*(rest + (b,)), None)`.
    code = HEAD + (
        f"@partial(jax.custom_vjp, nondiff_argnums={argnums})\ndef f({params}):\n    return x * w + y\n\n"
        f"def f_fwd({params}):\n    return f({params}), None\n\n"
        f"def f_bwd(w, _, g):\n    return {returned}\n\nf.defvjp(f_fwd, f_bwd)\n"
    )
    out = fix(code)
    assert f"    return {expected}\n" in out, out


def test_a_comment_on_a_residual_that_was_not_empty_stays() -> None:
    code = SAVES_NOTHING.format(above="", residual="(x,)", trailing="  # no residual but x").replace(
        "def clip_bwd(lo, hi, _, g):\n    return (jnp.clip(g, lo, hi),)",
        "def clip_bwd(lo, hi, res, g):\n    (x,) = res\n    return (jnp.clip(g, lo, hi) * x,)",
    )
    out = fix(code)
    assert "return x, (lo, hi, x)  # no residual but x\n" in out, out


@pytest.mark.parametrize(
    ("header", "argnums", "kept"),
    [
        pytest.param("", "list((0, 1))", "[1]", id="list call"),
        pytest.param("import builtins as bi\n", "bi.list((0, 1))", "[1]", id="list through a builtins alias"),
        pytest.param("", "tuple([0, 1])", "(1,)", id="tuple of a list"),
        pytest.param("", "[0, 1]", "[1]", id="list literal"),
    ],
)
def test_kept_positions_keep_a_list_written_as_one(header: str, argnums: str, kept: str) -> None:
    code = f"""\
import jax
import jax.numpy as jnp
from functools import partial
{header}
@partial(jax.custom_vjp, nondiff_argnums={argnums})
def f(w, n, x):
    return x

def f_fwd(w, n, x):
    return x, None

def f_bwd(w, n, _, g):
    for _ in range(n):
        g = jnp.tanh(w) * g
    return (g,)

f.defvjp(f_fwd, f_bwd)
"""
    assert f"@partial(jax.custom_vjp, nondiff_argnums={kept})" in fix(code)


def test_an_import_only_the_rewritten_argnums_used_goes() -> None:
    code = """\
import builtins
import jax
import jax.numpy as jnp
from functools import partial

@partial(jax.custom_vjp, nondiff_argnums=builtins.list((0,)))
def f(w, x):
    return x

def f_fwd(w, x):
    return x, None

def f_bwd(w, _, g):
    return (jnp.tanh(w) * g,)

f.defvjp(f_fwd, f_bwd)
"""
    out = fix(code)
    assert out.startswith("import jax\n") and "@jax.custom_vjp\ndef f(w, x):" in out


QWIX_LIKE = """\
import jax
from functools import partial


@partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def f(x, act, offset):
    return act(x) + offset


def f_fwd(x, act, offset):
    return f(x, act, offset), (x,)


def f_bwd(
    # Nondiff args passed from fwd pass
    act,
    offset,{own}
    # Residuals from fwd pass
    residuals,
    g,
):
    (x,) = residuals
    return (g * offset * jax.grad(act)(x),)


f.defvjp(f_fwd, f_bwd)
"""


@pytest.mark.parametrize(
    "own,kept",
    [
        pytest.param("", "", id="the comment above the next parameter stays"),
        pytest.param("  # added to the output", "", id="the comment on its own line describes it and goes"),
        pytest.param(
            "\n    # the shift, added to the output",
            "    # the shift, added to the output\n",
            id="a comment line below",
        ),
    ],
)
def test_a_removed_parameter_leaves_the_comments_about_other_code(own: str, kept: str) -> None:
    out = fix(QWIX_LIKE.format(own=own))
    expected = (
        "    # Nondiff args passed from fwd pass\n    act,\n" + kept + "    # Residuals from fwd pass\n    residuals,\n"
    )
    assert expected in out, out


def test_a_removed_first_parameter_leaves_its_comments_after_the_parenthesis() -> None:
    out = fix(
        """\
        import jax

        def f(x, w, act):
            return act(x) * w

        f = jax.custom_vjp(f, nondiff_argnums=(1, 2))

        def f_fwd(x, w, act):
            return f(x, w, act), None

        def f_bwd(
            # Nondiff args
            w,  # w: the weights
            # the activation
            act,
            _,
            g,
        ):
            return (g * w,)

        f.defvjp(f_fwd, f_bwd)
        """
    )
    assert "def f_bwd(\n    # Nondiff args\n    # the activation\n    act,\n    w,\n    g,\n):" in out, out


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        pytest.param(
            "w,   # weights\n          act, # activation\n          res, g",
            "def f_bwd(act, # activation\n          w, g):",
            id="the next parameter takes its place",
        ),
        pytest.param(
            "w,   # weights\n          # the activation\n          act,\n          res, g",
            "def f_bwd(\n          # the activation\n          act,\n          w, g):",
            id="a comment line above the next parameter stays above it",
        ),
        pytest.param(
            "w, act,  # both static\n          res, g",
            "def f_bwd(act,  # both static\n          w, g):",
            id="the comment of a line a kept parameter shares stays",
        ),
    ],
)
def test_a_removed_first_parameter_on_the_def_line_takes_its_comment_along(params: str, expected: str) -> None:
    # probe32 P7: `def f_bwd(   # weights` was left, a comment about a parameter that is gone.
    out = fix(
        "import jax\nfrom functools import partial\n\n"
        "@partial(jax.custom_vjp, nondiff_argnums=(1, 2))\ndef f(x, w, act):\n    return act(x) * w\n\n"
        "def f_fwd(x, w, act):\n    return f(x, w, act), None\n\n"
        f"def f_bwd({params}):\n    return (g * w,)\n\nf.defvjp(f_fwd, f_bwd)\n"
    )
    assert expected in out and "weights" not in out, out


def test_a_removed_first_position_on_the_bracket_line_takes_its_comment_along() -> None:
    out = fix(
        """\
        import jax
        from functools import partial

        @partial(jax.custom_vjp, nondiff_argnums=(1,  # w: the weights
                                                  2))  # act
        def f(x, w, act):
            return act(x) * w

        def f_fwd(x, w, act):
            return f(x, w, act), None

        def f_bwd(w, act, _, g):
            return (g * w,)

        f.defvjp(f_fwd, f_bwd)
        """
    )
    assert "@partial(jax.custom_vjp, nondiff_argnums=(2,))  # act\n" in out, out


def test_comments_in_a_shrinking_argnums_tuple_stay_with_their_elements() -> None:
    out = fix(
        """\
        import jax
        from functools import partial

        @partial(jax.custom_vjp, nondiff_argnums=(
            1,  # w: the weights
            # the activation comes last
            2,
        ))
        def f(x, w, act):
            return act(x) * w

        def f_fwd(x, w, act):
            return f(x, w, act), None

        def f_bwd(w, act, _, g):
            return (g * w,)

        f.defvjp(f_fwd, f_bwd)
        """
    )
    assert "nondiff_argnums=(\n    # the activation comes last\n    2,\n))" in out, out


def test_comments_of_a_decorator_that_collapses_go_above_it() -> None:
    out = fix(
        """\
        import jax
        from functools import partial

        @partial(
            # differentiable in x only
            jax.custom_vjp,
            nondiff_argnums=(1,),  # w
        )
        def f(x, w):
            return x * w

        def f_fwd(x, w):
            return f(x, w), None

        def f_bwd(w, _, g):
            return (g * w,)

        f.defvjp(f_fwd, f_bwd)
        """
    )
    assert "\n# differentiable in x only\n@jax.custom_vjp\ndef f(x, w):" in out, out


def test_a_trimmed_import_keeps_the_comments_of_the_names_left() -> None:
    out = fix(
        """\
        import jax
        from functools import (
            partial,  # partial for the rules
            # reduce is for later
            reduce,
        )

        @partial(jax.custom_vjp, nondiff_argnums=(1,))
        def f(x, w):
            return reduce(max, [x]) * w

        def f_fwd(x, w):
            return f(x, w), None

        def f_bwd(w, _, g):
            return (g * w,)

        f.defvjp(f_fwd, f_bwd)
        """
    )
    assert "from functools import (\n    # reduce is for later\n    reduce,\n)\n" in out, out


def _comments(code: str) -> collections.Counter[str]:
    """The comments of ``code``; of a PEP 484 type comment, which section 3h retypes, the comment
    after its type only (`# type: A  # the input` -> `# the input`)."""
    tokens = tokenize.generate_tokens(io.StringIO(code).readline)
    found = (t.string.rstrip() for t in tokens if t.type == tokenize.COMMENT)
    return collections.Counter(
        c for comment in found if (c := re.sub(r"^#[ \t]*type:(?![ \t]*ignore)[^#]*", "", comment))
    )


# The only comments a rewrite may drop, each by a rule of docs/rewrite-rules.md.
DELIBERATELY_CHANGED = {
    # section 2: a comment saying fwd saves nothing says what it saves now
    ("seed_clip_gradient", "# no residual values to save"),
    ("crlf_comments", "# nothing to save: the bounds are all bwd needs"),
    ("empty_tuple_residual", "# nothing to save: the map is linear"),
    ("empty_list_residual", "# no residuals: the filter is linear"),
    ("empty_dict_residual", "# no residuals: the filter is linear"),
    # section 3: a `del` left with no name goes with the comment lines right above it
    ("shared_bwd_same_positions", "# the bound only matters on the forward pass"),
    # ... and with its own trailing comment (here also stale: the residual is no longer None)
    ("bwd_del_none_residual", "# nothing saved in the forward pass"),
    ("type_comment_under_def", "# nothing saved"),
    # section 3: the comment on a removed parameter's own line describes it and goes with it
    ("multiline_items_keep_comments", "# the gate logits: sigmoid is recomputed"),
    # ... as does the one on a position's own line in a module constant (section 1)
    ("argnums_constant_rewritten", "# bound"),
    # section 1: a module alias of the partial that goes takes the comment lines right above it
    ("partial_alias_decorator", "# The weights come second and are not differentiated."),
}


def _before_after() -> Iterator[tuple[str, str, str]]:
    """(case, before, after) for every file a fixture changes."""
    for case in fixture_cases():
        if case.after is not None:
            yield case.name, case.before, case.after
    for folder in sorted(p for p in FIXTURES.iterdir() if (p / "after").is_dir()):
        for after in sorted((folder / "after").rglob("*.py")):
            before = folder / "before" / after.relative_to(folder / "after")
            yield folder.name, read_exact(before), read_exact(after)


def test_no_comment_is_lost() -> None:
    lost = {
        (name, comment) for name, before, after in _before_after() for comment in _comments(before) - _comments(after)
    }
    assert lost == DELIBERATELY_CHANGED


def test_an_item_added_to_a_multiline_tuple_does_not_copy_a_neighbour_s_comment() -> None:
    code = (FIXTURES / "flat_residual_annotated" / "before.py").read_text()
    code = code.replace(
        "residuals: tuple[jax.Array, jax.Array, jax.Array],",
        "residuals: tuple[\n        jax.Array,  # lhs\n        jax.Array,  # rhs\n        jax.Array,  # ids\n    ],",
    ).replace("return dlhs, drhs, None", "return (\n        dlhs,  # d lhs\n        drhs,\n        None,\n    )")
    out = fix_source(code).source
    assert "tuple[\n        jax.Array,\n        jax.Array,  # lhs\n        jax.Array,  # rhs\n" in out, out
    assert "        drhs,\n        None,\n        None,\n    )" in out and out.count("# d lhs") == 1, out


@pytest.mark.parametrize(
    ("returned", "named"),
    [
        ("impl(\n        x,\n        w,\n        saving=True,\n    )", "impl(...)"),
        ("(\n        impl(x, w),\n        x,\n        w,\n    )", "(impl(x, w), x, w,)"),
    ],
    ids=["call", "tuple"],
)
def test_a_multiline_fwd_return_is_named_on_one_line_in_the_message(returned: str, named: str) -> None:
    code = (
        "import jax\nfrom functools import partial\n\n"
        "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef f(x, w):\n    return impl(x, w)\n\n"
        f"def f_fwd(x, w):\n    return {returned}\n\n"
        "def f_bwd(w, res, g):\n    return (g * w,)\n\nf.defvjp(f_fwd, f_bwd)\n"
    )
    (finding,) = check_source(code)
    assert finding.code == "VJP003"
    assert finding.message.endswith(f"fwd `f_fwd` returns `{named}`, not an `(output, residuals)` pair")


def test_a_one_element_tuple_written_one_item_per_line_gains_items_on_their_own_lines() -> None:
    out = fix(
        """\
        import jax
        from functools import partial

        @partial(jax.custom_vjp, nondiff_argnums=(1,))
        def f(x, w):
            return x * w

        def f_fwd(x, w):
            return f(x, w), (
                x,  # the input
            )

        def f_bwd(w, res, g):
            (x,) = res
            return (
                g * w,  # dx
            )

        f.defvjp(f_fwd, f_bwd)
        """
    )
    assert "    return f(x, w), (\n        w,\n        x,  # the input\n    )\n" in out
    assert "    return (\n        g * w,  # dx\n        None,\n    )\n" in out


def test_a_new_item_goes_above_the_comment_lines_of_the_item_after_it() -> None:
    out = fix(
        """\
        import jax
        from functools import partial

        @partial(jax.custom_vjp, nondiff_argnums=(1,))
        def f(x, w, b):
            return x * w + b

        def f_fwd(x, w, b):
            return f(x, w, b), (
                # the input
                x,
            )

        def f_bwd(w, res, g):
            (x,) = res
            return (
                g * w,  # dx
                # db
                g,
            )  # done

        f.defvjp(f_fwd, f_bwd)
        """
    )
    assert "    return f(x, w, b), (\n        w,\n        # the input\n        x,\n    )\n" in out
    assert "    return (\n        g * w,  # dx\n        None,\n        # db\n        g,\n    )  # done\n" in out


def test_removing_the_first_parameter_leaves_no_blank_line_after_the_bracket() -> None:
    out = fix(
        """\
        import jax
        from functools import partial

        @partial(jax.custom_vjp, nondiff_argnums=(1,))
        def f(x, w):
            return x * w

        def f_fwd(x, w):
            return f(x, w), None

        def f_bwd(
            w,  # the weights

            # residuals
            res,
            g,
        ):
            return (g * w,)

        f.defvjp(f_fwd, f_bwd)
        """
    )
    assert "def f_bwd(\n    # residuals\n    w,\n    g,\n):\n" in out


def test_rules_with_defaults_after_the_arguments_jax_passes_fit_and_are_migrated() -> None:
    # JAX calls bwd(w, res, g) and fwd(x, w, y): a parameter with a default after those is legal.
    code = _site("return f(x, w, y), (x, y)\n", "a, b = res\nreturn (g * b * w, g * a * w)\n")
    code = code.replace("def f_bwd(w, res, g):", "def f_bwd(w, res, g, scale=1.0):")
    code = code.replace("def f_fwd(x, w, y):", "def f_fwd(x, w, y, debug=False):")
    assert [f.code for f in check_source(code)] == ["VJP001"]
    out = fix_source(code).source
    assert "def f_bwd(res, g, scale=1.0):\n    w, a, b = res\n    return (g * b * w, None, g * a * w)\n" in out


def test_rules_needing_more_arguments_than_jax_passes_are_inconsistent() -> None:
    code = _site("return f(x, w, y), (x, y)\n", "return (g, g)\n").replace(
        "def f_bwd(w, res, g):", "def f_bwd(w, res, g, h, k=1):"
    )
    (found,) = check_source(code)
    assert found.code == "VJP004" and "bwd `f_bwd` takes 4 to 5 parameters, but JAX calls it" in found.message


def test_each_tuple_a_conditional_expression_returns_gains_its_nones() -> None:
    bwd = "a, b = res\nreturn (g * b, g * a) if a.ndim else [g, g] if b.ndim else (g * w, g)\n"
    out = fix_source(_site("return f(x, w, y), (x, y)\n", bwd)).source
    assert "    return (g * b, None, g * a) if a.ndim else [g, None, g] if b.ndim else (g * w, None, g)\n" in out
    trailing = {"argnums": "(2,)", "params": "x, y, w"}
    out = fix_source(
        _site("return f(x, y, w), (x, y)\n", "a, b = res\nreturn (g,) * 2 if a.ndim else (g, g)\n", **trailing)
    )
    assert "    return (*((g,) * 2 if a.ndim else (g, g)), None)\n" in out.source  # not every branch a literal


def test_a_conditional_expression_with_a_starred_branch_is_stored_first() -> None:
    bwd = "a, b = res\nreturn (*pull(g),) if a.ndim else (g, g)\n"
    out = fix_source(_site("return f(x, w, y), (x, y)\n", bwd)).source
    assert "    grads = (*pull(g),) if a.ndim else (g, g)\n    return (*grads[:1], None, *grads[1:])\n" in out


@pytest.mark.parametrize(
    ("signature", "migrated"),
    [
        ("w, res, g, /", "res, g, /"),
        ("w, /, res, g", "res, g"),
        ("w, res, /, g", "res, /, g"),
    ],
)
def test_positional_only_bwd_parameters(signature: str, migrated: str) -> None:
    # `(w, res, g, /)` was `(w, res, g, /, res, g, )`; a `/` with nothing before it goes.
    code = _site("return f(x, w, y), (x, y)\n", "a, b = res\nreturn (g * b * w, g * a * w)\n")
    code = code.replace("def f_bwd(w, res, g):", f"def f_bwd({signature}):")
    out = fix_source(code).source
    assert f"def f_bwd({migrated}):\n    w, a, b = res\n    return (g * b * w, None, g * a * w)\n" in out, out


@pytest.mark.parametrize(
    ("fwd", "unpack", "residual", "new_unpack"),
    [
        pytest.param(
            "parts = (x, y)\nreturn f(x, w, y), (*parts, x, y)\n",
            "s, c, a, b = res",
            "(w, *parts, x, y)",
            "w, s, c, a, b = res",
            id="a starred item first",
        ),
        pytest.param(
            "parts = (x, y)\nreturn f(x, w, y), (x, *parts)\n",
            "a, b, c = res",
            "(w, x, *parts)",
            "w, a, b, c = res",
            id="a starred item last",
        ),
        pytest.param(
            "parts = pull(x)\nreturn f(x, w, y), (*parts,)\n",
            "(a, b) = res",
            "(w, *parts)",
            "(w, a, b) = res",
            id="only a starred item",
        ),
    ],
)
def test_a_residual_tuple_with_starred_items_gains_the_saved_arguments_first(
    fwd: str, unpack: str, residual: str, new_unpack: str
) -> None:
    out = fix_source(_site(fwd, f"{unpack}\nreturn (g * a * w, g * b * w)\n")).source
    assert f"return f(x, w, y), {residual}\n" in out
    assert f"def f_bwd(res, g):\n    {new_unpack}\n" in out


def test_a_starred_residual_hides_where_an_already_saved_argument_is() -> None:
    # `(*pre, w, *post)` is three items wide like `a, _, c`, but w may be anywhere: not reused.
    fwd = "pre = ()\npost = (x, y)\nreturn f(x, w, y), (*pre, w, *post)\n"
    out = fix_source(_site(fwd, "a, _, c = res\nreturn (g * a * w, g * c * w)\n")).source
    assert "return f(x, w, y), (w, *pre, w, *post)\n" in out
    assert "def f_bwd(res, g):\n    w, a, _, c = res\n" in out


WRAPPED = """\
import jax
import jax.numpy as jnp
from functools import partial

@partial(jax.custom_vjp, nondiff_argnums=(2,))
def f(x, y, w):
    return x * y * w

def f_fwd(x, y, w):
    return f(x, y, w), {residual}

def f_bwd(w, res, g):
    {unpack} = res
    return {cotangents}

f.defvjp(f_fwd, f_bwd)
"""


@pytest.mark.parametrize(
    ("residual", "unpack", "cotangents", "expected"),
    [
        pytest.param(
            "(jnp.sin(x), jnp.cos(y),\n        x, y)",
            "(s, c,\n        a, b)",
            "(g * b * c * w,\n        g * a * s * w)",
            [
                "(w, jnp.sin(x), jnp.cos(y),\n        x, y)",
                "    (w, s, c,\n        a, b) = res",
                "(g * b * c * w,\n        g * a * s * w, None)",
            ],
            id="items filling their lines",
        ),
        pytest.param(
            "(x,\n        y)",
            "(a,\n        b)",
            "[g * b * w,\n        g * a * w]",
            ["(w, x,\n        y)", "    (w, a,\n        b) = res", "[g * b * w,\n        g * a * w, None]"],
            id="one item a line under a hanging indent",
        ),
        pytest.param(
            "(x,  # the input\n        y)",
            "a, b",
            "(g * b * w,  # dx\n        g * a * w)",
            ["(w, x,  # the input\n        y)", "(g * b * w,  # dx\n        g * a * w, None)"],
            id="comments at the line ends",
        ),
        pytest.param(
            "(x,\n                        y)",
            "(a,\n     b)",
            "(g * b * w,\n            g * a * w)",
            [
                "(w,\n                        x,\n                        y)",
                "    (w,\n     a,\n     b) = res",
                "(g * b * w,\n            g * a * w,\n            None)",
            ],
            id="one item a line under the first one",
        ),
    ],
)
def test_new_items_keep_the_wrapping_of_a_tuple(
    residual: str, unpack: str, cotangents: str, expected: list[str]
) -> None:
    out = fix(WRAPPED.format(residual=residual, unpack=unpack, cotangents=cotangents))
    for text in expected:
        assert text in out


def test_keyword_only_bwd_parameters_with_defaults_stay_after_the_new_ones() -> None:
    # JAX passes bwd's arguments by position: parameters after `*` keep their defaults.
    bwd = "c = res[0]\nreturn (g * c * w * scale, g * w)\n"
    out = fix_source(_site("return f(x, w, y), (x, y)\n", bwd).replace("(w, res, g)", "(w, res, g, *, scale=1.0)"))
    assert "def f_bwd(residuals, g, *, scale=1.0):\n    w, res = residuals\n" in out.source
    taken = _site("return f(x, w, y), (x, y)\n", bwd.replace("scale", "residuals"))
    out = fix_source(taken.replace("(w, res, g)", "(w, res, g, *, residuals=1.0, **res_)"))
    assert "def f_bwd(res2, g, *, residuals=1.0, **res_):\n    w, res = res2\n" in out.source


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        pytest.param(
            "(w, res, g, *, scale)",
            "bwd `f_bwd` has a keyword-only parameter `scale` without a default, which JAX never passes",
            id="keyword-only without a default",
        ),
        pytest.param("(w, *rest)", "bwd `f_bwd` takes *rest", id="star args"),
    ],
)
def test_bwd_parameters_jax_cannot_fill_by_position_are_named(params: str, problem: str) -> None:
    code = _site("return f(x, w, y), (x, y)\n", "return (g * w, g)\n").replace("(w, res, g)", params)
    (found,) = check_source(code)
    assert found.code == "VJP003" and found.message.endswith(problem)


@pytest.mark.parametrize(
    ("bwd_return", "migrated"),
    [
        pytest.param("(g * c * w, g)", "(g * c * w, None, g)", id="a literal"),
        pytest.param("(g * c * w, *drest)", "(g * c * w, None, *drest)", id="a starred cotangent last"),
        pytest.param("grads", "(*grads[:1], None, *grads[1:])", id="a name"),
    ],
)
def test_a_primal_taking_star_args_gets_none_at_the_named_position(bwd_return: str, migrated: str) -> None:
    # The cotangents of `*rest` come after `w`'s: a None appended at the end would hand them
    # out one position late (wrong gradients whenever `*rest` is not empty).
    out = fix(
        f"""\
        import jax
        import jax.numpy as jnp
        from functools import partial

        @partial(jax.custom_vjp, nondiff_argnums=(1,))
        def f(x, w, *rest):
            return jnp.sin(x) * w + sum(rest)

        def f_fwd(x, w, *rest):
            return f(x, w, *rest), (jnp.cos(x), len(rest))

        def f_bwd(w, res, g):
            c, n = res
            drest = [g] * n
            grads = (g * c * w, *drest)
            return {bwd_return}

        f.defvjp(f_fwd, f_bwd)
        """
    )
    assert f"    return {migrated}\n" in out, out


@pytest.mark.parametrize(
    ("defvjp", "declined"),
    [
        pytest.param("f.defvjp(f_fwd, f_bwd, symbolic_zeros=True)", True, id="keyword"),
        pytest.param("f.defvjp(f_fwd, f_bwd, True)", True, id="positional"),
        pytest.param("f.defvjp(f_fwd, f_bwd, symbolic_zeros=SYMBOLIC)", True, id="a name"),
        pytest.param("f.defvjp(f_fwd, f_bwd, symbolic_zeros=False)", False, id="False"),
    ],
)
def test_rules_with_symbolic_zeros_are_not_migrated(defvjp: str, declined: bool) -> None:
    # With symbolic_zeros, fwd gets its differentiable arguments as CustomVJPPrimal: a moved
    # argument would arrive wrapped, and `f(x.value, w)` would fail on it.
    code = (
        HEAD
        + f"""\
SYMBOLIC = True

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, w):
    return jnp.sin(x) * w

def f_fwd(x, w):
    return f(x.value, w), jnp.cos(x.value)

def f_bwd(w, c, g):
    return (g * c * w,)

{defvjp}
"""
    )
    (finding,) = check_source(code)
    if declined:
        assert finding.code == "VJP003" and "symbolic_zeros" in finding.message, finding.message
        assert fix_source(code).source == code
    else:
        assert finding.code == "VJP001"


RULES = """\
@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, w):
    return jnp.sin(x) * w

def f_fwd(x, w):
    return f(x, w), jnp.cos(x)

def f_bwd(w, c, g):
    return (g * c * w,)

f.defvjp(f_fwd, f_bwd)
"""


@pytest.mark.parametrize(
    ("elsewhere", "problem"),
    [
        pytest.param(
            "def manual(x, w):\n    out, _ = f_fwd(x, w)\n    return f_bwd(w, jnp.cos(x), out)\n",
            "bwd `f_bwd` is also used on line 19",
            id="bwd called directly",
        ),
        pytest.param(  # probe31 S1: the rewrite puts `w` first in the residual, so [1] gets `w`
            "def cos_of(x, w):\n    return f_fwd(x, w)[1]\n",
            "fwd `f_fwd` is also used on line 18",
            id="fwd's residual indexed",
        ),
        pytest.param(
            "def cos_of(x, w):\n    _, c = f_fwd(x, w)\n    return c\n",
            "fwd `f_fwd` is also used on line 18",
            id="fwd's residual unpacked",
        ),
        pytest.param(
            "def both(x, w):\n    out = f_fwd(x, w)\n    return out[0]\n",
            "fwd `f_fwd` is also used on line 18",
            id="fwd's result kept whole",
        ),
        pytest.param(
            "def cos_of(x, w):\n    return f_fwd(x, w)[-1]\n",
            "fwd `f_fwd` is also used on line 18",
            id="fwd's result indexed from the end",
        ),
        pytest.param(
            "@jax.custom_vjp\ndef h(x, w):\n    return x * w\n\nh.defvjp(f_fwd, lambda c, g: (g * c, g))\n",
            "fwd `f_fwd` is also used on line 21",
            id="fwd given to a custom_vjp that is no site",
        ),
        pytest.param("BWD = f_bwd\n", "bwd `f_bwd` is also used on line 17", id="bwd bound to another name"),
        pytest.param(  # Python reads identifiers NFKC-normalized: the text never spells `f_bwd` here
            "BWD = \uff46_bwd\n", "bwd `f_bwd` is also used on line 17", id="bwd named in another spelling"
        ),
    ],
)
def test_rules_something_else_uses_are_not_migrated(elsewhere: str, problem: str) -> None:
    # The rewrite changes bwd's signature and fwd's residual: another use of them would break.
    code = HEAD + RULES + "\n" + elsewhere
    (finding,) = check_source(code)
    assert finding.code == "VJP003" and problem in finding.message, finding.message
    assert fix_source(code).source == code


@pytest.mark.parametrize(
    "elsewhere",
    [
        pytest.param("def primal(x, w):\n    return f_fwd(x, w)[0]\n", id="fwd called for its output"),
        pytest.param(
            "def primal(x, w):\n    out, _ = f_fwd(x, w)\n    return out[0] * 2\n", id="fwd's residual discarded"
        ),
        pytest.param("def g(f_bwd):\n    return f_bwd(1, 2, 3)\n", id="a parameter of the same name"),
        pytest.param(
            "def make():\n    @jax.custom_vjp\n    def h(x):\n        return x\n\n"
            "    def f_fwd(x):\n        return x, None\n\n    def f_bwd(_, g):\n        return (g,)\n\n"
            "    h.defvjp(f_fwd, f_bwd)\n    return h\n",
            id="a factory's own rules of the same names",
        ),
        pytest.param("F = f\n", id="the primal used"),
    ],
)
def test_rules_used_only_through_defvjp_are_migrated(elsewhere: str) -> None:
    code = HEAD + RULES + "\n" + elsewhere
    assert [f.code for f in check_source(code)] == ["VJP001"]
    assert "def f_bwd(res, g):" in fix_source(code).source


def test_a_fwd_the_rewrite_leaves_alone_may_be_called_for_its_residual() -> None:
    # bwd never reads `w`: nothing is saved, fwd stays as it is, and `cos_of` gets what it got (probe31 case 38)
    code = (
        HEAD + RULES.replace("(g * c * w,)", "(g * c,)") + "\ndef cos_of(x, w):\n    _, c = f_fwd(x, w)\n    return c\n"
    )
    assert [f.code for f in check_source(code)] == ["VJP001"]
    out = fix_source(code).source
    assert "def f_fwd(x, w):\n    return f(x, w), jnp.cos(x)\n" in out and "def f_bwd(c, g):" in out


def test_a_fwd_whose_jit_options_change_may_not_be_called_for_its_residual() -> None:
    # nothing is saved, but fwd's jax.jit loses `w` from static_argnums: `cos_of` would trace it
    rules = RULES.replace("(g * c * w,)", "(g * c,)")
    rules = rules.replace("def f_fwd", "@partial(jax.jit, static_argnums=(1,))\ndef f_fwd")
    code = HEAD + rules + "\ndef cos_of(x, w):\n    _, c = f_fwd(x, w)\n    return c\n"
    settings = Settings(DEFAULT_SELECT, False, array_args=frozenset({"f:w"}))
    (finding,) = check_source(code, settings=settings)
    assert finding.code == "VJP003" and "fwd `f_fwd` is also used on line 19" in finding.message, finding.message
    assert fix_source(code, settings=settings).source == code


@pytest.mark.parametrize(
    ("body", "migrated", "argnums"),
    [
        pytest.param(
            "grads = (g * c * w, g)\n    return grads",
            "grads = (g * c * w, None, g)\n    return grads",
            "1",
            id="literal edited",
        ),
        pytest.param(
            "grads = g * c * w, g\n    if g.sum() > 0:\n        return grads\n    return grads",
            "grads = g * c * w, None, g\n    if g.sum() > 0:\n        return grads\n    return grads",
            "1",
            id="bare, two returns",
        ),
        pytest.param(
            "grads = (g * c * w, g)\n    print(grads)\n    return grads",
            "print(grads)\n    return (*grads[:1], None, *grads[1:])",
            "1",
            id="read elsewhere",
        ),
        pytest.param(
            "grads = (g * c * w, g)\n    grads = grads\n    return grads",
            "grads = grads\n    return (*grads[:1], None, *grads[1:])",
            "1",
            id="bound twice",
        ),
        pytest.param(
            "def inner():\n        grads = (g * c * w, g)\n    return grads",
            "grads = (g * c * w, g)\n    return (*grads[:1], None, *grads[1:])",
            "1",
            id="bound in a nested function",
        ),
        pytest.param(
            "grads = [g * c * w, g]\n    return grads",
            "grads = [g * c * w, g, None]\n    return grads",
            "2",
            id="list, last slot",
        ),
        pytest.param(
            "grads = (g * c * w, g)\n    print(grads)\n    return grads",
            "print(grads)\n    return (*grads, None)",
            "2",
            id="last slot, read elsewhere",
        ),
        pytest.param(
            "grads = (g * c * w, g)\n    return grads",
            "grads = (None, g * c * w, g)\n    return grads",
            "0",
            id="first slot",
        ),
    ],
)
def test_a_returned_name_bound_once_to_a_literal_gets_its_none_there(body: str, migrated: str, argnums: str) -> None:
    # `grads = (a, b); return grads`: a person puts the None in the literal, wherever it goes.
    out = fix(
        HEAD
        + f"""\
@partial(jax.custom_vjp, nondiff_argnums=({argnums},))
def f(x, w, y):
    return jnp.sin(x) * w + y

def f_fwd(x, w, y):
    return f(x, w, y), jnp.cos(x)

def f_bwd(w, c, g):
    {body}

f.defvjp(f_fwd, f_bwd)
"""
    )
    assert "    w, c = res\n" in out and f"    {migrated}\n" in out, out


@pytest.mark.parametrize(
    ("annotation", "migrated"),
    [
        pytest.param("tuple[Array, ...]", " -> tuple[Array | None, ...]", id="tuple"),
        pytest.param("Tuple[jax.Array, ...]", " -> Tuple[jax.Array | None, ...]", id="Tuple, attribute"),
        pytest.param("tuple[Array | int, ...]", " -> tuple[Array | int | None, ...]", id="union"),
        pytest.param("tuple[Array | None, ...]", " -> tuple[Array | None, ...]", id="holds None already"),
        pytest.param("tuple[Optional[Array], ...]", " -> tuple[Optional[Array], ...]", id="Optional"),
        pytest.param('tuple["Array", ...]', "", id="string: removed"),
    ],
)
def test_a_variadic_cotangent_annotation_admits_none(annotation: str, migrated: str) -> None:
    # bwd's `-> tuple[Array, ...]` stays true once None joins its items when it says so.
    out = fix(
        HEAD
        + f"""\
from typing import Optional, Tuple
from jax import Array

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, w, y):
    return jnp.sin(x) * w + y

def f_fwd(x, w, y):
    return f(x, w, y), jnp.cos(x)

def f_bwd(w, c, g) -> {annotation}:
    return (g * c * w, g)

f.defvjp(f_fwd, f_bwd)
"""
    )
    assert f"def f_bwd(res, g){migrated}:\n" in out, out


@pytest.mark.parametrize(
    ("body", "fwd_residual", "migrated"),
    [
        pytest.param(
            "w, c = res\n    return (g * c * w * w_static,)",
            "(w, jnp.cos(x))",
            "w, c = res\n    return (g * c * w * w, None)",
            id="reads the unpacked name",
        ),
        pytest.param(
            "w, c = res\n    scale = lambda: w_static\n    return (g * c * w * scale(),)",
            "(w, jnp.cos(x))",
            "w, c = res\n    scale = lambda: w\n    return (g * c * w * scale(), None)",
            id="read in a nested scope",
        ),
        pytest.param(
            "s = w_static * 2\n    w, c = res\n    return (g * c * w * s,)",
            "(w, jnp.cos(x))",
            "w_static = res[0]\n    s = w_static * 2",
            id="read before the unpack: read by index",
        ),
        pytest.param(
            "w, c = res\n    w = w + 1\n    return (g * c * w * w_static,)",
            "(w, jnp.cos(x))",
            "w_static = res[0]\n    w, c = res",
            id="target rebound: read by index",
        ),
        pytest.param(
            "return (g * res[1] * w_static,)",
            "(w, jnp.cos(x))",
            "w_static = res[0]\n    return (g * res[1] * w_static, None)",
            id="residual indexed: read by index",
        ),
    ],
)
def test_an_argument_fwd_already_saves_is_read_from_its_residual(body: str, fwd_residual: str, migrated: str) -> None:
    # fwd saves `w` itself and bwd unpacks it as `w`: bwd's `w_static` can read that, no second copy.
    out = fix(
        HEAD
        + f"""\
@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, w):
    return jnp.sin(x) * w

def f_fwd(x, w):
    return f(x, w), (w, jnp.cos(x))

def f_bwd(w_static, res, g):
    {body}

f.defvjp(f_fwd, f_bwd)
"""
    )
    assert f"    return f(x, w), {fwd_residual}\n" in out and f"    {migrated}\n" in out, out


@pytest.mark.parametrize(
    ("fwd_body", "bwd_def", "defvjp", "migrated", "by_index"),
    [
        pytest.param(
            "return f(x, w, v), (x, (v, w))",
            'def f_bwd(w_, v_, res, g):\n    """Doc."""\n    return (g * res[0] * w_ * v_,)',
            "f.defvjp(f_fwd, f_bwd)",
            'def f_bwd(res, g):\n    """Doc."""\n    w_ = res[1][1]\n    v_ = res[1][0]\n',
            True,
            id="both in a nested tuple: read by index after the docstring",
        ),
        pytest.param(
            "return f(x, w, v), (x, w)",
            "def f_bwd(w_, v_, res, g):\n    return (g * res[0] * w_ * v_,)",
            "f.defvjp(f_fwd, f_bwd)",
            "def f_bwd(residuals, g):\n    w_, v_, res = residuals\n",
            False,
            id="one of two not in the residual: both saved",
        ),
        pytest.param(
            "return f(x, w, v), (x, w, v)",
            "def f_bwd(w_, v_, _, g):\n    return (g * w_ * v_,)",
            "f.defvjp(f_fwd, f_bwd)",
            "def f_bwd(res, g):\n    w_, v_, _ = res\n",
            False,
            id="residual parameter `_`: saved",
        ),
        pytest.param(
            "return f(x, w, v), (x, w, v)",
            "",
            "f.defvjp(f_fwd, lambda w_, v_, res, g: (g * res[0] * w_ * v_,))",
            "    w_, v_, res = residuals\n",
            False,
            id="lambda bwd: saved, made a def",
        ),
        pytest.param(
            "return f(x, w, v), (x, w, v)",
            "def f_bwd(w_, v_, res, g): return (g * res[0] * w_ * v_,)",
            "f.defvjp(f_fwd, f_bwd)",
            "bwd `f_bwd` is written on one line",
            False,
            id="bwd on its def's line: saved, so refused",
        ),
    ],
)
def test_arguments_the_residual_holds_are_read_by_index_only_when_all_are(
    fwd_body: str, bwd_def: str, defvjp: str, migrated: str, by_index: bool
) -> None:
    code = (
        HEAD
        + f"""\
@partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def f(x, w, v):
    return jnp.sin(x) * w * v

def f_fwd(x, w, v):
    {fwd_body}

{bwd_def}

{defvjp}
"""
    )
    result = fix_source(code)
    if not result.changed:
        assert {d.message.split("automatically: ")[-1] for d in result.diagnostics} == {migrated}
        return
    out = result.source
    assert migrated in out, out
    assert (f"    {fwd_body}\n" in out) is by_index and ("_ = res[" in out) is by_index, out
    before, after = executed(code, "before.py")["f"], executed(out, "after.py")["f"]
    x, w, v = jnp.array([0.5, -1.0]), jnp.array([2.0, 3.0]), jnp.array([-1.5, 0.25])
    expected = jax.grad(lambda x: jnp.sum(before(x, w, v)))(x)  # w and v concrete: it works
    jitted = jax.jit(jax.grad(lambda x, w, v: jnp.sum(after(x, w, v))))  # w and v traced
    assert jnp.allclose(jitted(x, w, v), expected)


@pytest.mark.parametrize(
    ("head", "kept"),
    [
        pytest.param('from functools import partial\n__all__ = ["f", "partial"]\n', True, id="in __all__"),
        pytest.param(
            'from functools import partial\n__all__: list[str] = []\n__all__ += ("partial",)\n', True, id="__all__ +="
        ),
        pytest.param("from functools import partial  # noqa: F401 (re-exported)\n", True, id="noqa F401"),
        pytest.param("from functools import partial  # noqa\n", True, id="bare noqa"),
        pytest.param("from functools import partial  # noqa: E501\n", False, id="noqa for another code"),
        pytest.param('from functools import partial\n__all__ = ["f"]\n', False, id="not in __all__"),
    ],
)
def test_an_import_the_module_exports_or_marks_stays(head: str, kept: bool) -> None:
    # cli29 19: ruff's F401 fix leaves what `__all__` lists and what a noqa keeps; `from m import *`
    # failed on the name `__all__` still listed once the import went
    out = fix_source("import jax\nimport jax.numpy as jnp\n" + head + RULES_BELOW).source
    assert ("from functools import partial" in out) is kept, out
    assert "@jax.custom_vjp\n" in out


def test_dropped_imports_are_trimmed_without_a_libcst_visit(monkeypatch: pytest.MonkeyPatch) -> None:
    # rewrite.unused_imports.drop_imports rebuilds the import lines through walk.Index.transform,
    # which calls leave methods only: LibCST's visit would call on_visit first
    from vjp_migrate.rewrite import unused_imports

    def no_visit(self: object, node: object) -> bool:
        raise AssertionError(f"LibCST visited a {type(node).__name__}")

    head = "import jax\nfrom functools import partial, reduce\nimport numpy as np, os\n"
    expected = fix_source(head + RULES_BELOW).source
    monkeypatch.setattr(unused_imports.DropImports, "on_visit", no_visit, raising=False)
    assert fix_source(head + RULES_BELOW).source == expected
    assert "from functools import reduce\n" in expected


@pytest.mark.parametrize(
    ("fwd_body", "bwd_body", "migrated"),
    [
        pytest.param(
            "w_ = w\n    return f(x, w), (w_, jnp.cos(x))",
            "w_saved, c = res\n    return (g * c * w_saved * w_static,)",
            "def f_bwd(res, g):\n    w_saved, c = res\n    return (g * c * w_saved * w_saved, None)\n",
            id="alias of the parameter",
        ),
        pytest.param(
            "w_ = w\n    return f(x, w), (w_, jnp.cos(x))",
            "_, c = res\n    return (g * c * w_static,)",
            "def f_bwd(res, g):\n    w_static, c = res\n    return (g * c * w_static, None)\n",
            id="alias unpacked into _",
        ),
        pytest.param(
            "c = jnp.cos(x)\n    return f(x, w), ((c, w), x)",
            "(c, w), x = res\n    return (g * c * w_static,)",
            "def f_bwd(res, g):\n    (c, w_static), x = res\n    return (g * c * w_static, None)\n",
            id="nested tuple, unread target",
        ),
        pytest.param(
            "c = jnp.cos(x)\n    return f(x, w), (x, (c, w))",
            "x, (c, w) = res\n    return (g * c * w * w_static,)",
            "def f_bwd(res, g):\n    x, (c, w) = res\n    return (g * c * w * w, None)\n",
            id="nested tuple, read target",
        ),
        pytest.param(
            "w_ = w\n    res = (jnp.cos(x), (x, w_))\n    return f(x, w), res",
            "c, (x, w) = res\n    return (g * c * w * w_static,)",
            "def f_bwd(res, g):\n    c, (x, w) = res\n    return (g * c * w * w, None)\n",
            id="alias in a nested tuple bound to a name",
        ),
        pytest.param(
            "w_ = w\n    w_ = w_ * 2\n    return f(x, w), (w_, jnp.cos(x))",
            "w2, c = res\n    return (g * c * w2 * w_static,)",
            "def f_bwd(res, g):\n    w_static, w2, c = res\n",
            id="alias rebound: saved",
        ),
        pytest.param(
            "if x.ndim > 1:\n        w_ = w\n    else:\n        w_ = w\n    return f(x, w), (w_, jnp.cos(x))",
            "w_saved, c = res\n    return (g * c * w_saved * w_static,)",
            "def f_bwd(res, g):\n    w_saved, c = res\n    return (g * c * w_saved * w_saved, None)\n",
            id="alias bound in both branches of an if",
        ),
        pytest.param(
            "for _ in range(2):\n        w_ = w\n    return f(x, w), (w_, jnp.cos(x))",
            "w_saved, c = res\n    return (g * c * w_saved * w_static,)",
            "def f_bwd(res, g):\n    w_saved, c = res\n    return (g * c * w_saved * w_saved, None)\n",
            id="alias bound in a loop",
        ),
        pytest.param(
            "a = w\n    b = a\n    return f(x, w), (b, jnp.cos(x))",
            "w_saved, c = res\n    return (g * c * w_saved * w_static,)",
            "def f_bwd(res, g):\n    w_saved, c = res\n    return (g * c * w_saved * w_saved, None)\n",
            id="alias of an alias",
        ),
        pytest.param(
            "if x.ndim > 1:\n        w_ = w\n    else:\n        w_ = w * 2\n    return f(x, w), (w_, jnp.cos(x))",
            "w_saved, c = res\n    return (g * c * w_saved * w_static,)",
            "def f_bwd(res, g):\n    w_static, w_saved, c = res\n",
            id="alias bound to another value in one branch: saved",
        ),
        pytest.param(
            "w_ = x\n    if x.ndim < 2:\n        w_ = w\n    return f(x, w), (w_, jnp.cos(x))",
            "w_saved, c = res\n    return (g * c * w_saved * w_static,)",
            "def f_bwd(res, g):\n    w_static, w_saved, c = res\n",
            id="alias bound only when an if holds: saved",
        ),
        pytest.param(
            "a = x\n    b = a\n    a = w\n    return f(x, w), (b, jnp.cos(x))",
            "w_saved, c = res\n    return (g * c * w_saved * w_static,)",
            "def f_bwd(res, g):\n    w_static, w_saved, c = res\n",
            id="alias of a name bound to another value too: saved",
        ),
        pytest.param(
            "def inner():\n        w_ = x\n        return w_\n    w_ = w\n    return f(x, w), (w_, inner())",
            "w_saved, c = res\n    return (g * c * w_saved * w_static,)",
            "def f_bwd(res, g):\n    w_static, w_saved, c = res\n",
            id="alias name bound in a nested def too: saved",
        ),
        pytest.param(
            "c = jnp.cos(x)\n    return f(x, w), ((c, w), x)",
            "cw, x = res\n    c, w = cw\n    return (g * c * w * w_static,)",
            "def f_bwd(res, g):\n    cw, x = res\n    c, w = cw\n    return (g * c * w * w, None)\n",
            id="nested tuple unpacked in two steps",
        ),
        pytest.param(
            "c = jnp.cos(x)\n    return f(x, w), ((c, w), x)",
            "cw, x = res\n    return (g * cw[0] * w_static,)",
            "def f_bwd(res, g):\n    w_static = res[0][1]\n    cw, x = res\n",
            id="nested tuple unpacked as one name: read by index",
        ),
        pytest.param(
            "c = jnp.cos(x)\n    return f(x, w), ((c, w, x), x)",
            "(c, w), x = res\n    return (g * c * w_static,)",
            "def f_bwd(res, g):\n    w_static = res[0][1]\n    (c, w), x = res\n",
            id="nested widths differ: read by index",
        ),
    ],
)
def test_an_alias_or_nested_residual_fwd_already_saves_is_reused(fwd_body: str, bwd_body: str, migrated: str) -> None:
    # fwd saves `w` under another name, or inside a nested tuple: bwd reads that, no second copy.
    out = fix(
        HEAD
        + f"""\
@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, w):
    return jnp.sin(x) * w

def f_fwd(x, w):
    {fwd_body}

def f_bwd(w_static, res, g):
    {bwd_body}

f.defvjp(f_fwd, f_bwd)
"""
    )
    assert migrated in out, out
    assert f"    {fwd_body}\n" in out or "w_static, " in migrated, out  # fwd saves nothing new when reused


@pytest.mark.parametrize(
    ("annotation", "body", "migrated"),
    [
        pytest.param("Sequence[Array]", "return (g * c * w, g)", " -> Sequence[Array | None]", id="Sequence"),
        pytest.param("Iterable[jax.Array]", "return (g * c * w, g)", " -> Iterable[jax.Array | None]", id="Iterable"),
        pytest.param("list[Array]", "return [g * c * w, g]", " -> list[Array | None]", id="list literal"),
        pytest.param(
            "List[Array]", "grads = [g * c * w, g]\n    return grads", " -> List[Array | None]", id="name of a list"
        ),
        pytest.param("list[Array]", "return (g * c * w, g)", "", id="list type of a tuple: removed"),
        pytest.param(
            "Sequence[Optional[Array]]", "return (g * c * w, g)", " -> Sequence[Optional[Array]]", id="holds None"
        ),
        pytest.param('Sequence["Array"]', "return (g * c * w, g)", "", id="string: removed"),
    ],
)
def test_a_sequence_cotangent_annotation_admits_none(annotation: str, body: str, migrated: str) -> None:
    # bwd's `-> Sequence[Array]` stays true once None joins the items; `list[X]` only of a list.
    out = fix(
        HEAD
        + f"""\
from typing import Iterable, List, Optional, Sequence
from jax import Array

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, w, y):
    return jnp.sin(x) * w + y

def f_fwd(x, w, y):
    return f(x, w, y), jnp.cos(x)

def f_bwd(w, c, g) -> {annotation}:
    {body}

f.defvjp(f_fwd, f_bwd)
"""
    )
    assert f"def f_bwd(res, g){migrated}:\n" in out, out


CONSTANT_SITE = """\

@partial(jax.custom_vjp, nondiff_argnums=ND)
def f(lo, x, mode):
    return x


def f_fwd(lo, x, mode):
    return x, None


def f_bwd(lo, mode, _, g):
    return (jnp.maximum(g, lo) if mode else g,)


f.defvjp(f_fwd, f_bwd)
"""


@pytest.mark.parametrize(
    ("constant", "decorator", "expected"),
    [
        pytest.param("_ND = (0, 2)", "_ND", "_ND = (2,)", id="a tuple loses the position"),
        pytest.param("_ND = [0, 2]", "_ND", "_ND = [2]", id="a list stays a list"),
        pytest.param("_ND = tuple(range(0, 3, 2))", "_ND", "_ND = (2,)", id="a call becomes a tuple literal"),
        pytest.param("ND = (0, 2)", "(2,)", "ND = (0, 2)", id="a public name: the literal at the site"),
        pytest.param("ND = list(range(0, 3, 2))", "[2]", "ND = list(range(0, 3, 2))", id="a public list"),
    ],
)
def test_a_module_constant_only_the_site_reads_takes_the_positions_left(
    constant: str, decorator: str, expected: str
) -> None:
    name = constant.split(" = ")[0]
    code = HEAD + constant + "\n\n" + CONSTANT_SITE.replace("=ND", f"={name}")
    out = fix(code)
    assert out.startswith(HEAD + expected + "\n\n\n")
    assert f"@partial(jax.custom_vjp, nondiff_argnums={decorator})\n" in out
    assert "def f_bwd(mode, lo, g):" in out


def test_a_constant_left_empty_goes_with_its_keyword_and_the_comment_about_it() -> None:
    code = HEAD + "# ---\n# Clipping\n# ---\n\n# The static arguments.\n_ND = (0,)  # lo\n\n"
    out = fix(code + CONSTANT_SITE.replace("=ND", "=_ND").replace(", mode", "").replace(" if mode else g", ""))
    assert out.startswith("import jax\nimport jax.numpy as jnp\n\n# ---\n# Clipping\n# ---\n\n\n@jax.custom_vjp\n")
    assert "_ND" not in out and "static" not in out


def test_a_constant_left_empty_on_a_line_with_another_statement_leaves_that_one() -> None:
    code = HEAD + "LIMIT = 2; _ND = (0,)\n\n"
    out = fix(code + CONSTANT_SITE.replace("=ND", "=_ND").replace(", mode", "").replace(" if mode else g", ""))
    assert out.startswith("import jax\nimport jax.numpy as jnp\n\nLIMIT = 2\n\n\n@jax.custom_vjp\n")


def test_a_shared_constant_left_empty_at_one_site_stays_for_the_other() -> None:
    other = "\n\n@partial(jax.custom_vjp, nondiff_argnums=_ND)\ndef h(n, x):\n    return x\n\n\n"
    other += "def h_fwd(n, x):\n    return x, None\n\n\ndef h_bwd(n, _, g):\n    return (g * len(range(n)),)\n\n\n"
    other += "h.defvjp(h_fwd, h_bwd)\n"
    site = CONSTANT_SITE.replace("=ND", "=_ND").replace(", mode", "").replace(" if mode else g", "")
    out = fix(HEAD + "_ND = (0,)\n\n" + site + other)
    assert out.startswith(HEAD + "_ND = (0,)\n\n\n@jax.custom_vjp\ndef f(lo, x):\n")
    assert other in out
