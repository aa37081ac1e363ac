"""Jupyter notebooks: code cells as one module; magics, outputs, metadata and JSON layout preserved."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from vjp_migrate.cli import main
from vjp_migrate.model import ArgKind, Diagnostic, Evidence, FixSafety
from vjp_migrate.notebook import locate, read, write

CELLS = [
    ("markdown", "# Clipping gradients\nThe old way."),
    (
        "code",
        "%matplotlib inline\n!pip install jax\nfrom functools import partial\nimport jax\nimport jax.numpy as jnp",
    ),
    ("code", "@partial(jax.custom_vjp, nondiff_argnums=(0, 1))\ndef clip_gradient(lo, hi, x):\n  return x"),
    ("code", "%%timeit\nclip_gradient(0., 1., 2.)"),
    (
        "code",
        "def clip_gradient_fwd(lo, hi, x):\n  return x, None\n\ndef clip_gradient_bwd(lo, hi, _, g):\n"
        "  return (jnp.clip(g, lo, hi),)\n\nclip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)\nfiles = !ls\nclip_gradient?",
    ),
]


def notebook_text(cells: list[tuple[str, str]] = CELLS) -> str:
    def cell(number: int, kind: str, source: str) -> dict[str, object]:
        out: dict[str, object] = {"cell_type": kind, "id": f"cell-{number}", "metadata": {"tags": ["ünïcode"]}}
        out["source"] = source.splitlines(keepends=True)
        if kind == "code":
            out.update(execution_count=number, outputs=[{"name": "stdout", "output_type": "stream", "text": ["ok\n"]}])
        return out

    data = {
        "cells": [cell(n, kind, source) for n, (kind, source) in enumerate(cells)],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(data, sort_keys=True, indent=1, ensure_ascii=False) + "\n"  # nbformat's own layout


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout


def test_unchanged_notebook_round_trips_byte_for_byte() -> None:
    raw = notebook_text()
    notebook = read(raw)
    assert write(notebook, notebook.code) == raw


def test_check_reports_cell_and_line_within_the_cell(tmp_path: Path) -> None:
    target = tmp_path / "clip.ipynb"
    target.write_text(notebook_text(), encoding="utf-8")
    code, out = run("check", "--output-format", "concise", str(tmp_path))
    assert code == 1
    assert [line.split(" VJP001")[0] for line in out.splitlines()] == [
        f"{target}:cell 3:2:19:",
        f"{target}:cell 3:2:23:",
    ]
    code, out = run("check", "--output-format", "json", str(target))
    assert [f["cell"] for f in json.loads(out)] == [3, 3]


def test_fix_rewrites_across_cells_and_keeps_everything_else(tmp_path: Path) -> None:
    target = tmp_path / "clip.ipynb"
    target.write_text(notebook_text(), encoding="utf-8")
    code, _ = run("fix", str(target))
    assert code == 0
    new = target.read_text(encoding="utf-8")
    expected = list(CELLS)
    expected[1] = ("code", CELLS[1][1].replace("from functools import partial\n", ""))
    expected[2] = ("code", CELLS[2][1].replace("@partial(jax.custom_vjp, nondiff_argnums=(0, 1))", "@jax.custom_vjp"))
    expected[4] = (
        "code",
        CELLS[4][1]
        .replace("return x, None", "return x, (lo, hi)")
        .replace("def clip_gradient_bwd(lo, hi, _, g):\n", "def clip_gradient_bwd(res, g):\n  lo, hi = res\n")
        .replace("return (jnp.clip(g, lo, hi),)", "return (None, None, jnp.clip(g, lo, hi))"),
    )
    assert new == notebook_text(expected)
    assert run("fix", "--diff", str(target))[0] == 0  # idempotent
    assert run("check", str(target))[0] == 0
    # cli28 14: a notebook saved with CRLF came back with LF on every line
    target.write_bytes(notebook_text().replace("\n", "\r\n").encode("utf-8"))
    assert run("fix", str(target))[0] == 0
    assert target.read_bytes() == notebook_text(expected).replace("\n", "\r\n").encode("utf-8")


def test_add_noqa_writes_in_the_cell_and_keeps_everything_else(tmp_path: Path) -> None:
    target = tmp_path / "clip.ipynb"
    target.write_text(notebook_text(), encoding="utf-8")
    code, out = run("check", "--add-noqa", str(target))
    assert code == 0
    assert [line.split(": VJP")[0] for line in out.splitlines()] == [
        f"{target}:cell 3:2:19",
        f"{target}:cell 3:2:23",
        "Added noqa comments for 2 findings in 1 file.",
    ]
    expected = list(CELLS)
    expected[2] = ("code", CELLS[2][1].replace("hi, x):\n", "hi, x):  # noqa: VJP001\n"))
    assert target.read_text(encoding="utf-8") == notebook_text(expected)
    assert run("check", str(target))[0] == 0


@pytest.mark.parametrize(
    "magic",
    [
        pytest.param("%load_ext autoreload", id="line magic"),
        pytest.param("!pip install jax", id="shell escape"),
        pytest.param("x = %time 1 + 1", id="assigned magic"),
        pytest.param("jax.numpy?", id="help"),
    ],
)
def test_magics_come_back_verbatim(magic: str) -> None:
    raw = notebook_text([("code", f"import jax\n{magic}\nx = 1")])
    notebook = read(raw)
    assert magic not in notebook.code
    assert write(notebook, notebook.code.replace("x = 1", "x = 2")) == raw.replace('"x = 1"', '"x = 2"')


NBFORMAT_3 = {
    "worksheets": [{"cells": [{"cell_type": "code", "input": "import jax\n", "language": "python", "outputs": []}]}],
    "metadata": {"name": ""},
    "nbformat": 3,
    "nbformat_minor": 0,
}


def test_an_nbformat_3_notebook_says_its_format_is_not_supported(tmp_path: Path) -> None:
    (tmp_path / "old.ipynb").write_text(json.dumps(NBFORMAT_3), encoding="utf-8")
    result = CliRunner().invoke(main, ["check", str(tmp_path / "old.ipynb")], catch_exceptions=False)
    assert result.exit_code == 2
    expected = f"{tmp_path / 'old.ipynb'}: error: not a Jupyter notebook of format 4: nbformat 3 is not supported\n"
    assert result.stderr == expected


@pytest.mark.parametrize(
    ("text", "why"),
    [
        pytest.param("{not json", "", id="no JSON"),
        pytest.param("[" * 100_000 + "]" * 100_000, "", id="nested too deeply"),
        # cli28 12: an internal error, and a source of 5 read as no code
        pytest.param('{"cells": 3}', "`cells` is no list of cells", id="cells no list"),
        pytest.param('{"cells": [{"cell_type": "code", "source": 5}]}', "the source of cell 0 is no text", id="source"),
        # cli29 23: a bare KeyError's text, `'cells'`
        pytest.param('{"metadata": {}}', "it has no `cells`", id="no cells"),
        pytest.param("[1, 2]", "its JSON is no object", id="a list"),
    ],
)
def test_a_file_that_is_not_a_notebook_is_an_error(tmp_path: Path, text: str, why: str) -> None:
    (tmp_path / "bad.ipynb").write_text(text, encoding="utf-8")
    result = CliRunner().invoke(main, ["check", str(tmp_path / "bad.ipynb")], catch_exceptions=False)
    assert result.exit_code == 2
    assert f"{tmp_path / 'bad.ipynb'}: error: not a Jupyter notebook: {why}" in result.stderr, result.stderr
    assert "'cells'" not in result.stderr
    assert "Nothing checked: 1 file could not be processed." in result.stdout


BROKEN_CELLS = [
    ("markdown", "# A notebook whose third cell does not parse"),
    ("code", "import jax\nfrom functools import partial"),
    ("code", "x = 1\n\n@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef f(x, y:\n    return x"),
]


@pytest.mark.parametrize("command", ["check", "fix"])
def test_a_syntax_error_is_located_by_cell_as_findings_are(tmp_path: Path, command: str) -> None:
    path = tmp_path / "broken.ipynb"
    path.write_text(notebook_text(BROKEN_CELLS), encoding="utf-8")
    result = CliRunner().invoke(main, [command, str(path)])
    assert result.exit_code == 2
    # line 4 of the second code cell (cell 3 of the notebook, as ruff and Jupyter count them)
    assert f"{path}: error: syntax error at cell 3, line 4, column 6: '(' was never closed" in result.stderr
    assert path.read_text(encoding="utf-8") == notebook_text(BROKEN_CELLS)


def test_machine_formats_give_a_syntax_error_its_cell(tmp_path: Path) -> None:
    path = tmp_path / "broken.ipynb"
    path.write_text(notebook_text(BROKEN_CELLS), encoding="utf-8")
    (entry,) = json.loads(CliRunner().invoke(main, ["check", "--output-format", "json", str(path)]).stdout)
    assert (entry["code"], entry["cell"], entry["line"], entry["column"]) == ("invalid-syntax", 3, 4, 6)
    concise = CliRunner().invoke(main, ["check", "--output-format", "concise", str(path)]).stdout
    assert concise == f"{path}:cell 3:4:6: invalid-syntax: '(' was never closed\n"
    sarif = json.loads(CliRunner().invoke(main, ["check", "--output-format", "sarif", str(path)]).stdout)
    (result,) = sarif["runs"][0]["results"]
    assert result["properties"] == {"cell": 3}
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 4, "startColumn": 6}


def test_reasons_are_located_by_cell_too(tmp_path: Path) -> None:
    # the primal's cell holds the finding; bwd's arithmetic is in a later cell
    path = tmp_path / "nb.ipynb"
    path.write_text(notebook_text(CELLS), encoding="utf-8")
    (finding,) = json.loads(CliRunner().invoke(main, ["check", "--output-format", "json", str(path)]).stdout)[:1]
    bwd = [r for r in finding["reasons"] if "bwd `clip_gradient_bwd`" in r["text"]]
    assert bwd and all((r["cell"], r["line"]) == (5, 5) for r in bwd), finding["reasons"]
    text = CliRunner().invoke(main, ["check", "--show-reasons", str(path)]).stdout
    assert "in bwd `clip_gradient_bwd` (cell 5, line 5)" in text


REGISTERED_AGAIN = [
    ("code", "from functools import partial\nimport jax\nimport jax.numpy as jnp"),
    ("code", "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef f(x, w):\n    return jnp.sin(x) * w"),
    ("markdown", "# Rules"),
    (
        "code",
        "def f_fwd(x, w):\n    return f(x, w), (x,)\n\ndef f_bwd(w, res, g):\n    (x,) = res\n"
        "    return (jnp.cos(x) * w * g,)\n\nf.defvjp(f_fwd, f_bwd)",
    ),
    ("code", "def f_bwd(w, res, g):\n    (x,) = res\n    return (2 * jnp.cos(x) * w * g,)\n\nf.defvjp(f_fwd, f_bwd)"),
]


@pytest.mark.parametrize(
    ("cells", "named"),
    [
        pytest.param(REGISTERED_AGAIN, "(cell 4, line 8 and cell 5, line 5)", id="lines of two cells"),
        pytest.param(
            [*REGISTERED_AGAIN[:3], (REGISTERED_AGAIN[3][0], REGISTERED_AGAIN[3][1] + "\nf.defvjp(f_fwd, f_bwd)")],
            "(cell 4, lines 8 and 9)",
            id="lines of one cell",
        ),
    ],
)
def test_lines_a_message_names_are_located_by_cell_too(
    tmp_path: Path, cells: list[tuple[str, str]], named: str
) -> None:
    # probe32 P6: the text named lines of the joined code ("lines 19 and 28").
    path = tmp_path / "nb.ipynb"
    path.write_text(notebook_text(cells), encoding="utf-8")
    (finding,) = json.loads(run("check", "--output-format", "json", str(path))[1])
    assert (finding["code"], finding["cell"], finding["line"]) == ("VJP003", 2, 2)
    assert f"`f` is registered twice {named}: the rewrite" in finding["message"], finding["message"]


def test_lines_in_a_reasons_text_are_located_and_quoted_code_is_left_alone() -> None:
    notebook = read(notebook_text(REGISTERED_AGAIN))
    said = "`print('line 17')` reads it on line 17"  # joined code: cell 4 starts on line 10
    evidence = Evidence(ArgKind.ARRAY, "through `b` (from `a`, line 17)", 17)
    found = Diagnostic("VJP003", said, "nb.ipynb", 7, 14, 7, 15, "f", "w", 1, False, FixSafety.NONE, (evidence,))
    located = locate(notebook, found)
    assert located.message == "`print('line 17')` reads it on cell 4, line 8"
    assert located.reasons[0].text == "through `b` (from `a`, cell 4, line 8)"
    assert (located.cell, located.line, located.reasons[0].cell, located.reasons[0].line) == (2, 2, 4, 8)


def fixed_cells(path: Path, cells: list[tuple[str, str]]) -> list[list[str]]:
    path.write_text(notebook_text(cells), encoding="utf-8")
    assert run("fix", str(path))[0] == 0
    return [cell["source"] for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]]


@pytest.mark.parametrize("newline", [pytest.param("\r\n", id="CRLF"), pytest.param("\r", id="CR")])
@pytest.mark.parametrize("final_newline", [True, False], ids=["last line ends", "last line open"])
def test_lines_inserted_in_a_crlf_cell_end_in_crlf_too(tmp_path: Path, final_newline: bool, newline: str) -> None:
    """cli29 21: a cell written on Windows (every source line ending in \\r\\n) got a bare \\n on the
    lines the rewrite inserted (`lo, hi = res`), where a .py file keeps CRLF on every line; cli30:
    so did a cell of lone CRs."""
    cells = [CELLS[1], CELLS[2], ("code", CELLS[4][1].rsplit("\nfiles", 1)[0] + ("\n" if final_newline else ""))]
    lf = fixed_cells(tmp_path / "lf.ipynb", cells)
    other = fixed_cells(tmp_path / "other.ipynb", [(kind, source.replace("\n", newline)) for kind, source in cells])
    assert "".join(other[2]) == "".join(lf[2]).replace("\n", newline)
    assert [[line.replace(newline, "\n") for line in source] for source in other] == lf


def test_findings_in_cells_of_lone_crs_are_located_as_in_lf_cells(tmp_path: Path) -> None:
    # cli30: the cells' lines were counted at \n only: a CR-only cell was one line, and the
    # findings of the cells after it were placed lines too far
    cr = tmp_path / "cr.ipynb"
    cr.write_text(notebook_text([(kind, source.replace("\n", "\r")) for kind, source in CELLS]), encoding="utf-8")
    lf = tmp_path / "lf.ipynb"
    lf.write_text(notebook_text(), encoding="utf-8")
    code, out = run("check", "--no-cache", "--output-format", "concise", str(cr), str(lf))
    assert code == 1
    assert [line.split(" `")[0] for line in out.splitlines()] == [
        f"{path}:cell 3:2:{column}: VJP001" for path in (cr, lf) for column in (19, 23)
    ]


@pytest.mark.parametrize("brk", [pytest.param("\u2028", id="U+2028"), pytest.param("\x0c", id="form feed")])
def test_a_line_break_only_str_splitlines_sees_starts_no_magic(tmp_path: Path, brk: str) -> None:
    # the cells were cut with str.splitlines: `% off` after a U+2028 in a string became a magic's
    # placeholder, and the string then had no end (a syntax error)
    target = tmp_path / "offer.ipynb"
    target.write_text(notebook_text([("code", f"label = '50{brk}% off'\n!ls")]), encoding="utf-8")
    assert run("check", "--no-cache", "--select", "ALL", str(target)) == (0, "All checks passed (1 file checked).\n")
    assert read(target.read_text(encoding="utf-8")).magics == {"__vjp_migrate_magic_0__": "!ls"}


def test_a_cell_with_mixed_newlines_keeps_the_modules_newline_on_inserted_lines(tmp_path: Path) -> None:
    """Only a cell whose every line ends in \\r\\n says which newline it wants."""
    code = CELLS[4][1].rsplit("\nfiles", 1)[0].replace("\n", "\r\n", 1)
    (_, _, changed) = fixed_cells(tmp_path / "clip.ipynb", [CELLS[1], CELLS[2], ("code", code)])
    assert "  lo, hi = res\n" in changed and sum(line.endswith("\r\n") for line in changed) == 1


def test_runnable_gives_the_code_cells_with_markers_and_magics_as_pass() -> None:
    from vjp_migrate.notebook import runnable

    cells = [
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": "!pip list\nx = 1\n"},
        {"cell_type": "markdown", "metadata": {}, "source": "text"},
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": "if x:\n    %time y = 2\n    files = !ls\n"},
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": "%%bash\necho hi\n"},
    ]
    raw = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    code = runnable(raw)
    assert code == "pass\npass\nx = 1\npass\nif x:\n    pass\n    pass\n"
    namespace: dict[str, object] = {}
    exec(compile(code, "nb", "exec"), namespace)
    assert namespace["x"] == 1
