"""`-` as PATH: the source comes from stdin, and `fix` writes the result (or its diff) to stdout.

An editor or a pipe replaces the buffer with what `fix -` prints, so stdout is always the whole
source in its own bytes (encoding cookie, BOM, newlines), unchanged when it cannot be processed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT
from test_notebook import notebook_text

from vjp_migrate.cli import main

SEED = (ROOT / "fixtures" / "seed_clip_gradient" / "before.py").read_text(encoding="utf-8")
MIGRATED = (ROOT / "fixtures" / "seed_clip_gradient" / "after.py").read_text(encoding="utf-8")


def run(*args: str, stdin: bytes) -> tuple[int, bytes, str]:
    result = CliRunner().invoke(main, list(args), input=stdin, catch_exceptions=False)
    return result.exit_code, result.stdout_bytes, result.stderr


def test_fix_diff_prints_a_diff_not_the_source() -> None:
    code, out, _ = run("fix", "--diff", "--stdin-filename", "seed.py", "-", stdin=SEED.encode())
    assert code == 1
    text = out.decode()
    assert text.startswith("--- seed.py\n+++ seed.py\n@@ ")
    assert "-@partial(jax.custom_vjp, nondiff_argnums=(0, 1))\n+@jax.custom_vjp\n" in text
    assert " def clip_gradient(lo, hi, x):\n" in text


def test_fix_diff_of_clean_source_prints_nothing() -> None:
    code, out, _ = run("fix", "--diff", "-", stdin=MIGRATED.encode())
    assert (code, out) == (0, b"")


def test_fix_keeps_the_bom() -> None:
    code, out, _ = run("fix", "-", stdin=b"\xef\xbb\xbf" + SEED.encode())
    assert code == 0
    assert out == b"\xef\xbb\xbf" + MIGRATED.encode()


def test_fix_keeps_the_declared_encoding() -> None:
    source = "# -*- coding: latin-1 -*-\n# café\n" + SEED
    code, out, _ = run("fix", "-", stdin=source.encode("latin-1"))
    assert code == 0
    assert out == ("# -*- coding: latin-1 -*-\n# café\n" + MIGRATED).encode("latin-1")


def test_fix_keeps_crlf() -> None:
    code, out, _ = run("fix", "-", stdin=SEED.replace("\n", "\r\n").encode())
    assert code == 0
    assert out == MIGRATED.replace("\n", "\r\n").encode()


def test_unprocessable_source_is_echoed_unchanged() -> None:
    broken = b"def f(:\n    nondiff_argnums = 1\n"
    code, out, err = run("fix", "--stdin-filename", "broken.py", "-", stdin=broken)
    assert code == 2
    assert out == broken
    assert err == "broken.py: error: syntax error at line 1, column 7: invalid syntax\n"


def test_unprocessable_source_gives_no_diff() -> None:
    code, out, err = run("fix", "--diff", "-", stdin=b"\x00\x01nondiff_argnums")
    assert (code, out) == (2, b"")
    assert err == "-: error: binary file (contains NUL bytes)\n"


def test_notebook_named_by_stdin_filename_is_read_as_a_notebook() -> None:
    raw = notebook_text()
    code, out, _ = run("check", "--output-format", "concise", "--stdin-filename", "clip.ipynb", "-", stdin=raw.encode())
    assert code == 1
    assert out.decode().splitlines()[0].startswith("clip.ipynb:cell 3:2:19: VJP001 `lo`")
    code, out, _ = run("fix", "--stdin-filename", "clip.ipynb", "-", stdin=raw.encode())
    assert code == 0
    cells = json.loads(out)["cells"]
    assert cells[2]["source"][0] == "@jax.custom_vjp\n"
    assert cells[1]["outputs"] == json.loads(raw)["cells"][1]["outputs"]


def test_add_noqa_needs_files() -> None:
    code, out, err = run("check", "--add-noqa", "-", stdin=SEED.encode())
    assert (code, out) == (2, b"")
    assert "Error: --add-noqa needs files (it writes the comments into them), not -" in err


def test_stdin_cannot_be_mixed_with_files() -> None:
    for command in ("check", "fix"):
        code, out, err = run(command, "-", str(ROOT / "examples"), stdin=SEED.encode())
        assert (code, out) == (2, b"")
        assert "Error: - (read stdin) cannot be combined with other paths" in err


def test_force_exclude_applies_to_the_stdin_filename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As in ruff: an excluded --stdin-filename gets no findings, and `fix -` passes the source through."""
    (tmp_path / "pyproject.toml").write_text("[tool.vjp-migrate]\nexclude = ['generated']\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    named = ("--force-exclude", "--stdin-filename", "generated/seed.py", "-")
    code, out, err = run("check", "--output-format", "json", *named, stdin=SEED.encode())
    assert (code, json.loads(out), err) == (0, [], "")
    code, out, err = run("fix", *named, stdin=b"\xef\xbb\xbf" + SEED.encode())
    assert (code, out, err) == (0, b"\xef\xbb\xbf" + SEED.encode(), "")
    code, out, err = run("fix", "--diff", *named, stdin=SEED.encode())
    assert (code, out, err) == (0, b"", "")
    code, out, _ = run(
        "check", "--output-format", "concise", "--stdin-filename", "generated/seed.py", "-", stdin=SEED.encode()
    )
    assert code == 1  # without --force-exclude, the name is checked like a file named on the command line
