"""`# noqa` suppressions on the decorator/def lines, and --add-noqa."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT

from vjp_migrate import noqa
from vjp_migrate.api import check_source, fix_source
from vjp_migrate.cli import main
from vjp_migrate.noqa import add_noqa, noqa_lines

SEED = (ROOT / "examples" / "clip_gradient.py").read_text(encoding="utf-8")
DECORATOR = "@partial(jax.custom_vjp, nondiff_argnums=(0, 1))"
DEF = "def clip_gradient(lo, hi, x):"


@pytest.mark.parametrize(
    "line, comment",
    [
        pytest.param(DECORATOR, "  # noqa: VJP001", id="code on the decorator"),
        pytest.param(DEF, "  # noqa: VJP001", id="code on the def"),
        pytest.param(DEF, "  # noqa", id="bare noqa"),
        pytest.param(DEF, "  # NOQA:VJP001,VJP003", id="flake8 spelling with several codes"),
        pytest.param(DEF, "  # noqa: VJP", id="prefix"),
    ],
)
def test_noqa_silences_and_protects_from_fix(line: str, comment: str) -> None:
    code = SEED.replace(line, line + comment)
    assert check_source(code) == []
    assert not fix_source(code).changed


@pytest.mark.parametrize("newline", [pytest.param("\r", id="CR"), pytest.param("\r\n", id="CRLF")])
@pytest.mark.parametrize("line", [pytest.param(DECORATOR, id="decorator"), pytest.param(DEF, id="def")])
def test_noqa_is_seen_whatever_the_line_endings(line: str, newline: str) -> None:
    # cli30 01: tokenize ends lines at \n only, so a CR-only file was one line with no noqa on it
    code = SEED.replace(line, line + "  # noqa: VJP001").replace("\n", newline)
    assert noqa_lines(code) == {SEED.splitlines().index(line) + 1: frozenset({"VJP001"})}
    assert check_source(code) == []
    assert not fix_source(code).changed


def test_noqa_for_another_code_does_not_silence() -> None:
    code = SEED.replace(DEF, DEF + "  # noqa: E501")
    assert [d.code for d in check_source(code)] == ["VJP001", "VJP001"]


def test_noqa_inside_a_string_is_not_a_comment() -> None:
    assert noqa_lines('x = "# noqa"\ny = 1  # noqa: VJP001\n') == {2: frozenset({"VJP001"})}


def test_noqa_on_another_site_does_not_leak() -> None:
    other = SEED.replace("clip_gradient", "other")
    code = SEED.replace(DEF, DEF + "  # noqa") + "\n" + other
    assert [d.function for d in check_source(code)] == ["other", "other"]


def test_add_noqa_writes_one_comment_and_merges() -> None:
    code = SEED.replace(DEF, DEF + "  # noqa: E501")
    new, changed = add_noqa(code, check_source(code))
    assert changed == 1
    assert "def clip_gradient(lo, hi, x):  # noqa: E501, VJP001\n" in new
    assert check_source(new) == []


@pytest.mark.parametrize(
    ("signature", "line"),
    [
        # cli28 01: the comment went into the string (its value changed, the finding stayed)
        pytest.param('def clip_gradient(lo, hi, x, s="""\nmulti"""):', 'multi"""):  # noqa: VJP001', id="a string"),
        pytest.param('def clip_gradient(lo, hi, x, s="a" \\\n  "b"):', '  "b"):  # noqa: VJP001', id="backslash"),
        # cli28 02: after a backslash the file no longer parsed
        pytest.param("def clip_gradient(lo, hi, \\\n        x):", "        x):  # noqa: VJP001", id="backslash alone"),
        pytest.param(
            "def clip_gradient(lo, hi,  # keep \\\n        x):",
            "def clip_gradient(lo, hi,  # keep \\  # noqa",
            id="a comment",
        ),
    ],
)
@pytest.mark.parametrize("newline", [pytest.param("\n", id="LF"), pytest.param("\r", id="CR")])
def test_add_noqa_puts_the_comment_on_a_line_that_can_take_one(signature: str, line: str, newline: str) -> None:
    code = SEED.replace(DEF, signature)
    if "s=" in signature:  # one more differentiable argument in fwd and bwd
        code = code.replace("def clip_gradient_fwd(lo, hi, x):", "def clip_gradient_fwd(lo, hi, x, s=1):")
        code = code.replace("return (jnp.clip(g, lo, hi),)", "return (jnp.clip(g, lo, hi), None)")
    code = code.replace("\n", newline)  # cli30 01: in a CR-only file, the strings were not seen
    found = check_source(code)
    first = code.splitlines().index(signature.split("\n")[0]) + 1
    assert [d.line for d in found] == [first, first], found
    new, changed = add_noqa(code, found)
    assert changed == 1 and line in new, new
    assert ast.dump(ast.parse(new)) == ast.dump(ast.parse(code))  # comments only: the same program
    assert check_source(new) == []


def test_add_noqa_merges_into_the_comment_not_a_string_before_it() -> None:
    # cli29 09: the first `# noqa` of the line was in a default value, which changed
    signature = 'def clip_gradient(lo, hi, x, tag="# noqa: E1"):'
    code = SEED.replace(DEF, signature + "  # noqa: E501")
    code = code.replace("def clip_gradient_fwd(lo, hi, x):", "def clip_gradient_fwd(lo, hi, x, tag):")
    code = code.replace("return (jnp.clip(g, lo, hi),)", "return (jnp.clip(g, lo, hi), None)")
    new, changed = add_noqa(code, check_source(code))
    assert changed == 1 and signature + "  # noqa: E501, VJP001\n" in new, new
    assert check_source(new) == []


@pytest.mark.parametrize(
    "above",
    [
        pytest.param("\x0c\n\x0c\n", id="page breaks"),
        pytest.param(
            'BANNER = """page 1\x0c\x0c\npage 2\u2028 and\x1c3"""\n', id="line breaks of str.splitlines in a string"
        ),
    ],
)
def test_add_noqa_counts_lines_as_python_does(above: str) -> None:
    # cli29 10: str.splitlines also ends a line at a form feed, U+2028 or \x1c: the comment went
    # onto an earlier line, or into the string
    code = SEED.replace(DECORATOR, above + DECORATOR)
    new, changed = add_noqa(code, check_source(code))
    assert changed == 1 and DECORATOR + "\n" + DEF + "  # noqa: VJP001\n" in new, new
    assert check_source(new) == []
    assert ast.dump(ast.parse(new)) == ast.dump(ast.parse(code))


def test_add_noqa_never_writes_what_no_longer_parses(monkeypatch: pytest.MonkeyPatch) -> None:
    """The last guard: were a comment ever placed after a backslash, the text stays as it was."""
    code = SEED.replace(DEF, "def clip_gradient(lo, hi, \\\n        x):")
    monkeypatch.setattr(noqa, "_uncommentable", lambda text: set())
    assert add_noqa(code, check_source(code)) == (code, 0)


def test_words_after_the_codes_are_no_codes() -> None:
    assert noqa_lines("x = 1  # noqa: E501 keep the long line\n") == {1: frozenset({"E501"})}
    assert noqa_lines("x = 1  # noqa:VJP001,E501 - generated\n") == {1: frozenset({"VJP001", "E501"})}


def test_add_noqa_keeps_the_words_after_the_codes() -> None:
    code = SEED.replace(DEF, DEF + "  # noqa: E501 keep the long line")
    new, changed = add_noqa(code, check_source(code))
    assert changed == 1
    assert "def clip_gradient(lo, hi, x):  # noqa: E501, VJP001 keep the long line\n" in new
    assert check_source(new) == []


def test_add_noqa_cli_then_check_is_clean(tmp_path: Path) -> None:
    target = tmp_path / "seed.py"
    target.write_text(SEED, encoding="utf-8")
    result = CliRunner().invoke(main, ["check", "--add-noqa", str(target)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "Added noqa comments for 2 findings in 1 file."
    assert DEF + "  # noqa: VJP001\n" in target.read_text(encoding="utf-8")
    assert CliRunner().invoke(main, ["check", str(target)]).exit_code == 0


def test_add_noqa_in_a_cr_only_file_adds_one_comment_once(tmp_path: Path) -> None:
    # cli30 01: check still reported the silenced findings, and each run added another comment
    target = tmp_path / "seed.py"
    target.write_bytes(SEED.replace("\n", "\r").encode("utf-8"))
    result = CliRunner().invoke(main, ["check", "--no-cache", "--add-noqa", str(target)])
    assert result.stdout.splitlines()[-1] == "Added noqa comments for 2 findings in 1 file."
    written = target.read_bytes()
    assert written == SEED.replace(DEF, DEF + "  # noqa: VJP001").replace("\n", "\r").encode("utf-8")
    again = CliRunner().invoke(main, ["check", "--no-cache", "--add-noqa", str(target)])
    assert (again.exit_code, target.read_bytes()) == (0, written), again.stdout
    assert CliRunner().invoke(main, ["check", "--no-cache", str(target)]).exit_code == 0
    assert add_noqa(written.decode("utf-8"), check_source(SEED.replace("\n", "\r"))) == (written.decode("utf-8"), 0)


def test_add_noqa_lists_what_it_silenced_then_counts_findings_and_files(tmp_path: Path) -> None:
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(SEED, encoding="utf-8")
    (tmp_path / "clean.py").write_text("import jax\n", encoding="utf-8")
    (tmp_path / "broken.py").write_text("nondiff_argnums = (\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["check", "--add-noqa", str(tmp_path)], catch_exceptions=False)
    assert result.exit_code == 2  # a file could not be processed
    assert result.stderr.startswith(f"{tmp_path / 'broken.py'}: error: syntax error")
    lines = result.stdout.splitlines()
    assert [line.split(": ")[0] for line in lines[:-1]] == [
        f"{tmp_path / name}:8:{column}" for name in ("a.py", "b.py") for column in (19, 23)
    ]
    assert lines[-1] == "Added noqa comments for 4 findings in 2 files; 1 file could not be processed."


def test_add_noqa_with_nothing_to_add_says_what_check_says(tmp_path: Path) -> None:
    (tmp_path / "clean.py").write_text("import jax\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["check", "--add-noqa", str(tmp_path)], catch_exceptions=False)
    assert (result.exit_code, result.stdout) == (0, "All checks passed (1 file checked).\n")


def test_add_noqa_quiet_lists_the_findings_only(tmp_path: Path) -> None:
    target = tmp_path / "seed.py"
    target.write_text(SEED, encoding="utf-8")
    result = CliRunner().invoke(main, ["check", "--add-noqa", "-q", str(target)], catch_exceptions=False)
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert [line.split(": ")[0] for line in lines] == [f"{target}:8:19", f"{target}:8:23"]


@pytest.mark.parametrize("other", [["--output-format", "json"], ["--write-baseline", "base.json"]])
def test_add_noqa_with_another_output_is_a_usage_error(tmp_path: Path, other: list[str]) -> None:
    """cli28 06, 07: the JSON asked for was text, the baseline asked for was never written."""
    target = tmp_path / "seed.py"
    target.write_text(SEED, encoding="utf-8")
    result = CliRunner().invoke(main, ["check", "--add-noqa", *other, str(target)])
    assert result.exit_code == 2 and f"does not go with {other[0]}" in result.output, result.output
    assert target.read_text(encoding="utf-8") == SEED
