"""rewrite: PEP 484 type comments of the rules are retyped as annotations are (section 3h), and a
function's comment stays the first line under its def line (probe31 S9)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import FIXTURES

from vjp_migrate.api import check_source, fix_source
from vjp_migrate.codes import expand_selection
from vjp_migrate.model import Settings


def fix(code: str, unsafe: bool = False) -> str:
    return fix_source(textwrap.dedent(code), settings=Settings(expand_selection(None, None), unsafe)).source


def _type_comments(code: str) -> dict[str, str | None]:
    """Each def's function type comment as Python reads it (None: none)."""
    tree = ast.parse(code, type_comments=True)
    return {n.name: n.type_comment for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}


RULES = """\
from functools import partial
from typing import Tuple

import jax
from jax import Array


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, w):
    return x * w


def f_fwd(x, w):
    FWD_COMMENT
    return x * w, RESIDUAL


def f_bwd(w, RES, g):
    BWD_COMMENT
    BODY
    return (g * w,)


f.defvjp(f_fwd, f_bwd)
"""


def _rules(fwd: str, residual: str, bwd: str, res: str = "res", body: str = "pass", head: str = "") -> str:
    code = (
        RULES.replace("FWD_COMMENT", fwd)
        .replace("RESIDUAL", residual)
        .replace("BWD_COMMENT", bwd)
        .replace("RES", res)
        .replace("BODY", body)
    )
    return code.replace("from typing import Tuple\n", f"from typing import Tuple\n{head}")


def test_the_unpack_goes_below_the_function_s_type_comment() -> None:
    out = fix(
        _rules(
            "# type: (Array, Array) -> Tuple[Array, Array]",
            "x",
            "# type: (Array, Array, Array) -> Tuple[Array]",
            res="y",
            body="y = y * 2",
        )
    )
    assert "def f_bwd(res, g):\n    # type: (Tuple[Array, Array], Array) -> Tuple[Array, None]\n    w, y = res\n" in out
    comments = _type_comments(out)
    assert comments["f_bwd"] == "(Tuple[Array, Array], Array) -> Tuple[Array, None]"
    assert comments["f_fwd"] == "(Array, Array) -> Tuple[Array, Tuple[Array, Array]]"


def test_a_del_line_that_goes_leaves_the_type_comment_under_the_def() -> None:
    out = fix(_rules("pass", "None", "# type: (Array, None, Array) -> Tuple[Array]", body="del res"))
    assert "def f_bwd(w, g):\n    # type: (Array, Array) -> Tuple[Array, None]\n    return (g * w, None)\n" in out


def test_blank_and_comment_lines_above_the_type_comment_stay_above_it() -> None:
    out = fix(
        _rules(
            "pass",
            "x",
            "\n    # the gradient\n    # type: (Array, Array, Array) -> Tuple[Array]\n    # unpacked",
            res="y",
            body="y = y * 2",
        )
    )
    assert (
        "def f_bwd(res, g):\n\n    # the gradient\n    # type: (Tuple[Array, Array], Array) -> Tuple[Array, None]\n"
        "    w, y = res\n    # unpacked\n    y = y * 2\n"
    ) in out, out


def test_a_def_split_over_lines_keeps_one_signature() -> None:
    # The function's comment lists every type: no parameter gets a comment of its own too,
    # which mypy would reject as a second signature.
    code = _rules("pass", "None", "# type: (Array, None, Array) -> Tuple[Array]")
    out = fix(code.replace("def f_bwd(w, res, g):", "def f_bwd(\n    w,\n    res,\n    g,\n):"))
    assert "def f_bwd(\n    w,\n    g,\n):\n    # type: (Array, Array) -> Tuple[Array, None]\n" in out, out


def test_the_comment_on_the_def_line_is_retyped_with_what_follows_it() -> None:
    code = _rules("pass", "None", "pass").replace(
        "def f_bwd(w, res, g):\n    pass", "def f_bwd(w, res, g):  # type: (Array, None, Array) -> Tuple[Array]  # noqa"
    )
    out = fix(
        code.replace("def f_fwd(x, w):\n    pass", "def f_fwd(x, w):  # type: (Array, Array) -> Tuple[Array, None]")
    )
    assert "def f_fwd(x, w):  # type: (Array, Array) -> Tuple[Array, Array]\n" in out
    assert "def f_bwd(w, g):  # type: (Array, Array) -> Tuple[Array, None]  # noqa\n" in out


def test_a_method_s_comment_may_leave_out_self() -> None:
    out = fix(
        """\
        import jax
        from typing import Tuple
        from jax import Array

        class Layer:
            def __init__(self):
                self.apply = jax.custom_vjp(self._apply, nondiff_argnums=(1,))
                self.apply.defvjp(self._fwd, self._bwd)

            def _apply(self, x, w):
                return x * w

            def _fwd(self, x, w):
                # type: (Array, Array) -> Tuple[Array, Array]
                return x * w, x

            def _bwd(self, w, x, g):
                # type: (Array, Array, Array) -> Tuple[Array]
                return (g * w * x,)
        """,
        unsafe=True,  # `w` has no array evidence but the comments
    )
    comments = _type_comments(out)
    assert comments["_fwd"] == "(Array, Array) -> Tuple[Array, Tuple[Array, Array]]"
    assert comments["_bwd"] == "(Tuple[Array, Array], Array) -> Tuple[Array, None]"


def test_a_partial_bound_parameter_keeps_its_type() -> None:
    out = fix(
        """\
        import jax
        from functools import partial
        from typing import Tuple
        from jax import Array

        @partial(jax.custom_vjp, nondiff_argnums=(1,))
        def f(x, w):
            return x * w

        def f_fwd(x, w):
            return x * w, None

        def f_bwd(scale, w, res, g):
            # type: (float, Array, None, Array) -> Tuple[Array]
            return (g * w * scale,)

        f.defvjp(f_fwd, partial(f_bwd, 2.0))
        """
    )
    assert _type_comments(out)["f_bwd"] == "(float, Array, Array) -> Tuple[Array, None]"


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        pytest.param("from typing import Any\n", "(Any, Array) -> Tuple[Array, None]", id="Any imported"),
        pytest.param("import typing as t\n", "(t.Any, Array) -> Tuple[Array, None]", id="typing imported"),
        pytest.param("", None, id="no name for Any: the comment goes"),
    ],
)
def test_a_type_no_longer_known_is_any_when_the_module_can_say_so(head: str, expected: str | None) -> None:
    # `Residuals`, an alias, may be no tuple: the new residual's type is not known.
    code = _rules(
        "# type: (Array, Array) -> Tuple[Array, Residuals]",
        "(x, x)",
        "# type: (Array, Residuals, Array) -> Tuple[Array]",
        body="a, b = res",
        head=head + "Residuals = Tuple[Array, Array]\n",
    )
    out = fix(code)
    comments = _type_comments(out)
    assert comments["f_bwd"] == expected
    assert comments["f_fwd"] == (expected and "(Array, Array) -> " + expected[1:].split(",")[0])
    assert "w, a, b = res" in out


def test_an_unchanged_residual_leaves_fwd_s_comment_alone() -> None:
    # bwd never reads `w`: nothing is saved, fwd's result is as it was (its unreadable comment too).
    code = _rules("# type: (Array, Array) ->", "x", "# type: (Array, Array, Array) -> Tuple[Array]")
    out = fix(code.replace("return (g * w,)", "return (g,)"))
    assert "    # type: (Array, Array) ->\n" in out
    assert _type_comments(out)["f_bwd"] == "(Array, Array) -> Tuple[Array, None]"


def test_type_ignore_is_no_signature() -> None:
    code = _rules("pass", "None", "pass").replace("def f_bwd(w, res, g):", "def f_bwd(w, res, g):  # type: ignore")
    out = fix(code)
    assert "def f_bwd(w, g):  # type: ignore\n" in out


def test_a_parameter_s_comment_that_is_no_type_is_left_as_it_is() -> None:
    out = fix(
        """\
        import jax
        from functools import partial
        from typing import Tuple
        from jax import Array

        @partial(jax.custom_vjp, nondiff_argnums=(1,))
        def f(x, w):
            return x * w

        def f_fwd(x, w):
            return x * w, None

        def f_bwd(
            w,  # type: the weight, any shape
            res,  # type: None
            g,  # type: gradient of the output
        ):
            # type: (...) -> Tuple[Array]
            return (g * w,)

        f.defvjp(f_fwd, partial(f_bwd))
        """
    )
    # `w`, the residual now, has no type: `res`'s goes; `g`'s stays as it was.
    assert "    w,\n    g,  # type: gradient of the output\n):\n    # type: (...) -> Tuple[Array, None]" in out


@pytest.mark.parametrize(
    ("comment", "why"),
    [
        pytest.param("# type: (Array, Array -> Tuple[Array]", "which is no signature `(A, B) -> R`", id="syntax"),
        pytest.param("# type: (Array, None) -> Tuple[Array]", "which lists 2 types for its 3 parameters", id="arity"),
        pytest.param("# type: (...) -> int", None, id="fine"),
    ],
)
def test_a_function_comment_that_is_no_signature_of_bwd_is_vjp003(comment: str, why: str | None) -> None:
    (finding,) = check_source(_rules("pass", "None", comment))
    if why is None:
        assert finding.code == "VJP001"
        return
    assert finding.code == "VJP003"
    assert finding.message.endswith(
        f"bwd `f_bwd` has the type comment `{comment}`, {why}: the change to its signature would leave it wrong; "
        "correct it or remove it"
    )


def test_a_function_comment_next_to_annotations_is_vjp003() -> None:
    code = _rules("pass", "None", "# type: (Array, None, Array) -> Tuple[Array]").replace(
        "def f_bwd(w,", "def f_bwd(w: Array,"
    )
    (finding,) = check_source(code)
    assert finding.code == "VJP003"
    assert "and other types, which mypy rejects" in finding.message


def test_fwd_s_unreadable_comment_is_vjp003_when_the_residual_changes() -> None:
    (finding,) = check_source(_rules("# type: (Array, Array) -> ", "None", "pass"))
    assert finding.code == "VJP003"
    assert "fwd `f_fwd` has the type comment `# type: (Array, Array) -> `" in finding.message


FIXED = (
    "type_comment_under_def",
    "type_comment_on_def_line",
    "type_comment_per_argument",
    "type_comment_keeps_import",
)


@pytest.mark.skipif(shutil.which("mypy") is None and not Path(sys.executable).with_name("mypy").exists(), reason="mypy")
def test_mypy_checks_the_fixed_rules_as_it_checked_the_old_ones(tmp_path: Path) -> None:
    names = []
    for case in FIXED:
        before = (FIXTURES / case / "before.py").read_text(encoding="utf-8")
        (tmp_path / f"{case}_before.py").write_text(before, encoding="utf-8")
        (tmp_path / f"{case}_after.py").write_text(fix_source(before).source, encoding="utf-8")
        names += [f"{case}_before.py", f"{case}_after.py"]
    (tmp_path / "mypy.ini").write_text("[mypy]\ncheck_untyped_defs = True\n", encoding="utf-8")
    command = [sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", str(tmp_path / "cache"), *names]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:]


# --- names the module's type comments read keep their imports ------------------------------------

TYPED_ELSEWHERE = """\
from functools import partial
from typing import Optional

import jax


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def f(x, w):
    return x * w


def f_fwd(x, w):
    return x * w, None


def f_bwd(w, res: Optional[jax.Array], g):
    return (g * w,)


f.defvjp(f_fwd, f_bwd)
ELSEWHERE
"""


@pytest.mark.parametrize(
    "elsewhere",
    [
        pytest.param("\n\ndef g(x):\n    # type: (Optional[jax.Array]) -> None\n    pass\n", id="function comment"),
        pytest.param("\n\ndef g(x):  # type: (...) -> Optional[int]\n    pass\n", id="comment on the def line"),
        pytest.param(
            "\n\ndef g(\n    x,  # type: Optional[int]\n):\n    # type: (...) -> None\n    pass\n", id="param"
        ),
        pytest.param("DEFAULT = None  # type: Optional[jax.Array]\n", id="variable comment"),
        pytest.param("for i in []:  # type: Optional[int]\n    pass\n", id="for comment"),
        pytest.param("\n\ndef g():\n    # type: () -> 'Optional[int]'\n    pass\n", id="string forward reference"),
        pytest.param("DEFAULT = None  #type:Optional[int]  # noqa: E261\n", id="unspaced with a comment after"),
    ],
)
def test_an_import_a_kept_type_comment_reads_stays(elsewhere: str) -> None:
    # The inline annotation that read `Optional` goes with the residual; mypy and pyflakes read
    # the type comment: without the import, mypy reports `Name "Optional" is not defined`.
    out = fix(TYPED_ELSEWHERE.replace("ELSEWHERE\n", elsewhere))
    assert "def f_bwd(w, g):\n" in out
    assert "from typing import Optional\n" in out


@pytest.mark.parametrize(
    "elsewhere",
    [
        pytest.param("DEFAULT = None  # type: ignore[Optional]\n", id="type ignore"),
        pytest.param("DEFAULT = None  # type: the Optional default\n", id="no type"),
        pytest.param("DEFAULT = None  # Optional[int]\n", id="plain comment"),
        pytest.param("DEFAULT = None  # type: typing.Optional[int]\n", id="an attribute's own name"),
    ],
)
def test_an_import_no_type_comment_reads_goes(elsewhere: str) -> None:
    out = fix(TYPED_ELSEWHERE.replace("ELSEWHERE\n", elsewhere))
    assert "def f_bwd(w, g):\n" in out and "from typing import" not in out


def test_a_module_with_no_type_comment_reads_no_comments(monkeypatch: pytest.MonkeyPatch) -> None:
    # Benchmarks: only a module whose text has `type:` somewhere is searched for type comments.
    from vjp_migrate.rewrite import unused_imports

    def read(comment: object) -> set[str]:
        raise AssertionError("comments read")

    monkeypatch.setattr(unused_imports, "names_read", read)
    out = fix(TYPED_ELSEWHERE.replace("ELSEWHERE\n", "DEFAULT = None  # Optional[int]\n"))
    assert "from typing import" not in out and "from functools import" not in out
    with pytest.raises(AssertionError, match="comments read"):
        fix(TYPED_ELSEWHERE.replace("ELSEWHERE\n", "DEFAULT = None  # type: int\n"))


def test_an_import_only_a_rewritten_comment_read_goes() -> None:
    # bwd's residual type goes from its comment: `Optional` is read nowhere else any more.
    code = _rules(
        "# type: (Array, Array) -> Tuple[Array, None]",
        "None",
        "# type: (Array, Optional[Array], Array) -> Tuple[Array]",
        head="from typing import Optional\n",
    )
    out = fix(code)
    assert "def f_bwd(w, g):\n    # type: (Array, Array) -> Tuple[Array, None]\n" in out
    assert "from typing import Tuple\n" in out and "Optional" not in out
    kept = fix(code + "\n\ndef g(x):\n    # type: (Optional[Array]) -> None\n    pass\n")
    assert "from typing import Optional\n" in kept
