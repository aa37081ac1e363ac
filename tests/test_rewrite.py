"""rewrite: the output keeps the module's own formatting and reads like a person wrote it."""

from __future__ import annotations

import textwrap

import pytest

from vjp_migrate.api import check_source, fix_source


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


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["LF", "CRLF"])
def test_line_endings_are_kept(newline: str) -> None:
    code = textwrap.dedent(
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
    out = fix_source(code).source
    assert "lo, hi = res" + newline in out
    assert out.count("\r\n") == (out.count("\n") if newline == "\r\n" else 0)
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


def test_bare_return_in_bwd_is_reported() -> None:
    code = _site("return f(x, w, y), (x, y)\n", "a, b = res\nif a is None:\n    return\nreturn (g * w, g)\n")
    (finding,) = check_source(code)
    assert finding.code == "VJP003" and "bwd `f_bwd` has a bare `return`" in finding.message
    assert fix_source(code).source == code


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
