"""The command line end to end, in a subprocess-free CliRunner and with the real console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT

from vjp_migrate.api import fix_source
from vjp_migrate.cli import main

SEED = (ROOT / "examples" / "clip_gradient.py").read_text(encoding="utf-8")
OK = (ROOT / "examples" / "static_args_ok.py").read_text(encoding="utf-8")


def run(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), input=stdin, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "seed.py").write_text(SEED, encoding="utf-8")
    (tmp_path / "pkg" / "ok.py").write_text(OK, encoding="utf-8")
    return tmp_path


def test_check_reports_and_exits_1(tree: Path) -> None:
    code, out, _ = run("check", str(tree))
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"{tree / 'pkg' / 'seed.py'}:")
    assert ": VJP001 `lo` (position 0) of custom_vjp `clip_gradient`" in lines[0]
    assert lines[-1].startswith("Found 2 findings (2 fixable) in 2 files checked.")


def test_check_clean_exits_0(tree: Path) -> None:
    code, out, _ = run("check", str(tree / "pkg" / "ok.py"))
    assert code == 0
    assert "All checks passed (1 file checked)." in out


def test_json_output_schema(tree: Path) -> None:
    code, out, _ = run("check", "--output-format", "json", str(tree))
    assert code == 1
    findings = json.loads(out)
    assert [f["argument"] for f in findings] == ["lo", "hi"]
    first = findings[0]
    assert set(first) == {
        "code",
        "message",
        "path",
        "line",
        "column",
        "end_line",
        "end_column",
        "function",
        "argument",
        "index",
        "fixable",
        "fix_safety",
        "reasons",
    }
    assert (first["code"], first["function"], first["index"], first["fixable"], first["fix_safety"]) == (
        "VJP001",
        "clip_gradient",
        0,
        True,
        "safe",
    )
    assert first["reasons"][0]["kind"] == "array" and "jnp.clip" in first["reasons"][0]["text"]


def test_select_and_ignore(tree: Path) -> None:
    assert run("check", "--select", "VJP002", str(tree))[0] == 0
    assert run("check", "--ignore", "VJP001", str(tree))[0] == 0
    assert run("check", "--select", "VJP", str(tree))[0] == 1
    code, _, err = run("check", "--select", "XYZ1", str(tree))
    assert code == 2 and "unknown rule selector" in err


def test_fix_rewrites_in_place_then_is_clean(tree: Path) -> None:
    code, out, _ = run("fix", str(tree))
    assert code == 0
    assert "Fixed 2 findings in 1 file." in out
    assert "return x, (lo, hi)" in (tree / "pkg" / "seed.py").read_text(encoding="utf-8")
    assert (tree / "pkg" / "ok.py").read_text(encoding="utf-8") == OK
    assert run("check", str(tree))[0] == 0
    assert run("fix", "--diff", str(tree))[0] == 0


def test_fix_diff_writes_nothing_and_exits_1(tree: Path) -> None:
    code, out, _ = run("fix", "--diff", str(tree))
    assert code == 1
    assert "+@jax.custom_vjp" in out and "-@partial(jax.custom_vjp, nondiff_argnums=(0, 1))" in out
    assert (tree / "pkg" / "seed.py").read_text(encoding="utf-8") == SEED


def test_fix_diff_prints_a_patch_git_applies(tmp_path: Path) -> None:
    """cli28 04: files without a final newline glued the next file's header (and the summary) to
    their last line. The patch alone is on stdout, as with ruff; the summary on stderr."""
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(SEED.rstrip("\n"), encoding="utf-8")
    code, out, err = run("fix", "--diff", str(tmp_path / "a.py"), str(tmp_path / "b.py"))
    assert code == 1 and err.startswith("Would fix 4 findings in 2 files"), err
    assert out.count("\\ No newline at end of file\n") == 2, out  # the last line of each file, unchanged
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "apply", "-p0", "--unsafe-paths", "-"], cwd="/", input=out, text=True, check=True)
    for name in ("a.py", "b.py"):
        assert (tmp_path / name).read_text(encoding="utf-8") == fix_source(SEED.rstrip("\n")).source


def test_fix_diff_is_in_each_files_own_bytes(tmp_path: Path) -> None:
    """cli29 10, 20: `git apply -p0` takes the patch of every kind of file `fix` writes: lines end
    at `\\n` only (a form feed, U+2028 or a lone CR inside a line), the BOM and a latin-1 file's
    bytes as they are, a name with a tab or a quote quoted as git quotes it."""
    seed = SEED.replace("import jax\n", "import jax\n# café\n", 1)
    files = {
        "formfeed.py": seed.replace("\ndef clip_gradient_fwd", "\n\x0cdef clip_gradient_fwd").encode(),
        "u2028.py": seed.replace("# café", "# a\u2028b").encode(),
        "lone_cr.py": seed.replace("\n", "\r").encode(),
        "bom.py": b"\xef\xbb\xbf" + seed.encode(),
        "latin1.py": ("# -*- coding: latin-1 -*-\n" + seed).encode("latin-1"),
        'tab\tand"quote.py': seed.encode(),
    }
    patched, fixed = tmp_path / "patched", tmp_path / "fixed"
    for folder in (patched, fixed):
        folder.mkdir()
        for name, data in files.items():
            (folder / name).write_bytes(data)
    command = [sys.executable, "-m", "vjp_migrate"]
    diff = subprocess.run([*command, "fix", "--diff", "."], cwd=patched, capture_output=True, check=False)
    assert diff.returncode == 1, diff.stderr
    assert diff.stdout.count(b"\n--- ") + diff.stdout.startswith(b"--- ") == len(files)
    assert subprocess.run([*command, "fix", "."], cwd=fixed, capture_output=True, check=False).returncode == 0
    subprocess.run(["git", "init", "-q"], cwd=patched, check=True)
    subprocess.run(["git", "apply", "-p0", "-"], cwd=patched, input=diff.stdout, check=True)
    for name, data in files.items():
        assert (patched / name).read_bytes() == (fixed / name).read_bytes() != data, name


def test_fix_takes_checks_cache_options_and_keeps_no_cache(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One argument list serves check and fix (pre-commit, scripts), as in ruff: fix accepts
    --no-cache and --cache-dir, and as it keeps no cache they change nothing."""
    monkeypatch.chdir(tree)
    monkeypatch.delenv("VJP_MIGRATE_CACHE_DIR", raising=False)
    plain = run("fix", "--diff", str(tree / "pkg"))
    assert plain[0] == 1 and "+@jax.custom_vjp" in plain[1]
    assert run("fix", "--diff", "--no-cache", str(tree / "pkg")) == plain
    assert run("fix", "--diff", "--cache-dir", str(tmp_path / "elsewhere"), str(tree / "pkg")) == plain
    assert run("fix", "--no-cache", "--cache-dir", "here", str(tree / "pkg"))[0] == 0
    assert "return x, (lo, hi)" in (tree / "pkg" / "seed.py").read_text(encoding="utf-8")
    assert list(tmp_path.rglob("CACHEDIR.TAG")) == [] and not (tmp_path / "elsewhere").exists()
    assert not (tree / "here").exists()
    help_text = " ".join(CliRunner().invoke(main, ["fix", "--help"], terminal_width=200).stdout.split())
    assert "--no-cache Does nothing (fix keeps no cache)" in help_text


def test_exit_non_zero_on_fix_and_exit_zero(tree: Path, tmp_path: Path) -> None:
    assert run("fix", "--diff", "--exit-zero", str(tree))[0] == 0  # as in ruff, --exit-zero wins
    assert run("fix", "--exit-non-zero-on-fix", str(tree))[0] == 1
    again = tmp_path / "again.py"
    again.write_text(SEED, encoding="utf-8")
    assert run("fix", "--exit-non-zero-on-fix", "--exit-zero", str(again))[0] == 0
    assert again.read_text(encoding="utf-8") != SEED
    unknown = tmp_path / "unknown.py"
    unknown.write_text(SEED.replace("jnp.clip(g, lo, hi)", "helper(g, lo, hi)"), encoding="utf-8")
    assert run("fix", "--select", "VJP002", str(unknown))[0] == 1  # unsafe fix not applied
    assert run("fix", "--select", "VJP002", "--exit-zero", str(unknown))[0] == 0
    assert run("fix", "--select", "VJP002", "--unsafe-fixes", str(unknown))[0] == 0
    assert "return x, (lo, hi)" in unknown.read_text(encoding="utf-8")


def test_stdin_to_stdout() -> None:
    code, out, _ = run("fix", "-", "--stdin-filename", "seed.py", stdin=SEED.encode())
    assert code == 0
    assert "def clip_gradient_bwd(res, g):" in out
    code, out, _ = run("check", "-", "--stdin-filename", "seed.py", stdin=SEED.encode())
    assert code == 1 and out.startswith("seed.py:")


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        pytest.param(b"def f(:\n    pass\n", "syntax error at line 1", id="syntax error"),
        pytest.param(b"print 'hello'\n", "syntax error", id="python 2"),
        pytest.param(b"\x00\x01\x02nondiff_argnums", "binary file", id="binary"),
        pytest.param(b"x = '\xff\xfe nondiff_argnums'\n", "cannot be decoded as utf-8", id="undecodable"),
        pytest.param(b"# -*- coding: klingon -*-\nx = 1\n", "bad encoding declaration", id="unknown cookie"),
        pytest.param(b"x = (" * 300 + b"1" + b")" * 300 + b"\n", "too many nested parentheses", id="deep nesting"),
    ],
)
def test_bad_files_get_one_line_and_exit_2(tmp_path: Path, content: bytes, reason: str) -> None:
    bad = tmp_path / "bad.py"
    bad.write_bytes(content)
    good = tmp_path / "seed.py"
    good.write_text(SEED, encoding="utf-8")
    for command in (["check"], ["fix"], ["fix", "--diff"]):
        code, out, err = run(*command, str(bad), str(good))
        assert code == 2
        if "--diff" in command:  # the summary goes with the errors, the patch alone on stdout
            err = err.split("\n", 1)[0] + "\n"
        assert err.count("\n") == 1 and err.startswith(f"{bad}: error: ") and reason in err
        assert "Traceback" not in out + err
    assert "return x, (lo, hi)" in good.read_text(encoding="utf-8")  # the good file was still fixed
    assert bad.read_bytes() == content


def test_not_a_regular_file_is_reported_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    code, _, err = run("check", str(fifo), str(tmp_path / "missing.py"))
    assert code == 2
    assert f"{fifo}: error: not a regular file" in err
    assert "missing.py: error: no such file or directory" in err


def test_folder_walk_skips_vcs_venvs_and_gitignored(tmp_path: Path) -> None:
    for folder in (".git", "node_modules", "__pycache__", "build", "myenv", "ignored", "src"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "seed.py").write_text(SEED, encoding="utf-8")
    (tmp_path / "myenv" / "pyvenv.cfg").write_text("home = /usr\n", encoding="utf-8")
    (tmp_path / ".gitignore").write_text("ignored/\n*_generated.py\n", encoding="utf-8")
    (tmp_path / "src" / "x_generated.py").write_text(SEED, encoding="utf-8")
    code, out, _ = run("check", "--output-format", "json", str(tmp_path))
    assert code == 1
    assert {Path(f["path"]).relative_to(tmp_path).as_posix() for f in json.loads(out)} == {"src/seed.py"}


def test_encoding_bom_and_crlf_are_kept(tmp_path: Path) -> None:
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + SEED.encode())
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbf" + SEED.replace("\n", "\r\n").encode())
    assert run("fix", str(latin), str(bom))[0] == 0
    assert latin.read_bytes().startswith(b"# -*- coding: latin-1 -*-\n# caf\xe9\n")
    data = bom.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and b"return x, (lo, hi)" in data
    assert data.count(b"\r\n") == data.count(b"\n")


def test_file_mode_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "seed.py"
    path.write_text(SEED, encoding="utf-8")
    path.chmod(0o754)
    assert run("fix", str(path))[0] == 0
    assert path.stat().st_mode & 0o777 == 0o754
    assert [p.name for p in tmp_path.iterdir()] == ["seed.py"]  # no temporary file left


def test_explain_rules_and_version() -> None:
    code, out, _ = run("explain", "VJP001")
    assert code == 0
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert heading in out
    assert "UnexpectedTracerError" in out
    code, out, _ = run("rules")
    assert code == 0 and [line.split()[0] for line in out.splitlines()] == ["VJP001", "VJP002", "VJP003", "VJP004"]
    assert run("explain", "VJP999")[0] == 2
    assert run("--version")[1].strip().startswith("vjp-migrate, version")


def test_console_script_runs_without_jax_or_rich_imported(tmp_path: Path) -> None:
    path = tmp_path / "seed.py"
    path.write_text(SEED, encoding="utf-8")
    probe = (
        "import sys; from vjp_migrate.cli import main\n"
        "try:\n    main(['check', sys.argv[1]])\nexcept SystemExit as e:\n    code = e.code\n"
        "print('LOADED', 'jax' in sys.modules, 'rich' in sys.modules, code)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "LOADED False False 1"


def test_command_list_reads_whole_sentences() -> None:
    """Click cuts a docstring's first sentence at 45 characters or at `e.g.`; each command says its own."""
    result = CliRunner().invoke(main, ["--help"], terminal_width=80)
    commands = result.stdout.split("Commands:\n", 1)[1].splitlines()
    assert len(commands) == 7
    for line in commands:
        _name, summary = line.split(maxsplit=1)
        assert not summary.endswith(("...", "e.g.", "(e.g.")), line
        assert summary.endswith("."), line


def test_quiet_prints_the_findings_and_nothing_else(tree: Path, tmp_path: Path) -> None:
    """-q/--quiet, as ruff's: the findings (and diffs), no summary line; errors still on stderr."""
    (tree / "broken.py").write_text("def f(:\n", encoding="utf-8")
    code, out, err = run("check", "-q", str(tree), str(tree / "broken.py"))
    assert code == 2
    lines = out.splitlines()
    assert len(lines) == 2 and all(": VJP001 " in line for line in lines)
    assert err == f"{tree / 'broken.py'}: error: syntax error at line 1, column 7: invalid syntax\n"
    assert run("check", "--quiet", str(tree / "pkg" / "ok.py")) == (0, "", "")
    code, out, _ = run("fix", "--diff", "-q", str(tree))
    assert code == 1 and out.startswith("--- ") and "Would fix" not in out
    baseline = tmp_path / "baseline.json"
    code, out, err = run("check", "-q", "--write-baseline", str(baseline), str(tree / "pkg"))
    assert (code, len(out.splitlines()), err) == (0, 2, "")  # no "Recorded 2 findings" line
    assert run("fix", "-q", str(tree / "pkg")) == (0, "", "")
    assert "return x, (lo, hi)" in (tree / "pkg" / "seed.py").read_text(encoding="utf-8")


def test_ctrl_c_exits_130_not_the_findings_code(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """cli28 13: click's "Aborted!" exited 1, which CI reads as findings."""
    from vjp_migrate import runs

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(runs, "record", interrupted)
    result = CliRunner().invoke(main, ["check", str(tree)])
    assert result.exit_code == 130 and "Interrupted." in result.stderr and "Aborted" not in result.output


NUMBERS_OUT_OF_RANGE = [
    pytest.param("verify", ("--timeout", "-5"), "-5.0 is not in the range x>0", id="verify --timeout -5"),
    pytest.param("verify", ("--timeout", "0"), "0.0 is not in the range x>0", id="verify --timeout 0"),
    pytest.param("verify", ("--timeout", "nan"), "nan is not a finite number", id="verify --timeout nan"),
    pytest.param("verify", ("--rtol", "-1"), "-1.0 is not in the range x>=0", id="verify --rtol -1"),
    pytest.param("verify", ("--rtol", "nan"), "nan is not a finite number", id="verify --rtol nan"),
    pytest.param("verify", ("--atol", "nan"), "nan is not a finite number", id="verify --atol nan"),
    pytest.param("verify", ("--atol", "inf"), "inf is not a finite number", id="verify --atol inf"),
    pytest.param("verify", ("--seed", "-1"), "-1 is not in the range x>=0", id="verify --seed -1"),
    pytest.param("record", ("--max-calls", "0"), "0 is not in the range x>=1", id="record --max-calls 0"),
    pytest.param("record", ("--max-calls", "-3"), "-3 is not in the range x>=1", id="record --max-calls -3"),
    pytest.param("record", ("--timeout", "-1"), "-1.0 is not in the range x>0", id="record --timeout -1"),
    pytest.param("check", ("--jobs", "0"), "0 is not in the range x>=1", id="check --jobs 0"),
    pytest.param("fix", ("-j", "-2"), "-2 is not in the range x>=1", id="fix -j -2"),
]


@pytest.mark.parametrize(("command", "option", "why"), NUMBERS_OUT_OF_RANGE)
def test_numbers_out_of_range_are_usage_errors(
    tree: Path, monkeypatch: pytest.MonkeyPatch, command: str, option: tuple[str, ...], why: str
) -> None:
    """cli30 3, 9, 10: a negative timeout ended verify in a traceback (exit 1), a nan or negative
    tolerance blamed the user's code with exit 0, and record ran CMD with --max-calls 0. Each is
    the usual usage error naming the option, before anything runs."""
    monkeypatch.chdir(tree)
    ran = tree / "ran"
    rest = {
        "verify": ["pkg/seed.py", "pkg/ok.py"],
        "record": ["--out", "r.npz", "--", sys.executable, "-c", f"open({str(ran)!r}, 'w')"],
        "check": ["pkg"],
        "fix": ["pkg"],
    }[command]
    result = CliRunner().invoke(main, [command, *option, *rest])
    assert result.exit_code == 2, result.output
    assert "Error: Invalid value for " in result.stderr and f"'{option[0]}'" in result.stderr
    assert why in result.stderr
    assert "Traceback" not in result.output
    assert not ran.exists() and "return x, (lo, hi)" not in (tree / "pkg" / "seed.py").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("fix", ""), id="fix ''"),
        pytest.param(("fix", "pkg/ok.py", ""), id="fix with an empty path among others"),
        pytest.param(("check", "--add-noqa", ""), id="check --add-noqa ''"),
        pytest.param(("check", "--no-cache", ""), id="check ''"),
        pytest.param(("check", "--write-baseline", "", "pkg"), id="--write-baseline ''"),
        pytest.param(("record", "--out", "", "--", "true"), id="record --out ''"),
        pytest.param(("verify", "--emit-tests", "", "pkg/seed.py", "pkg/ok.py"), id="verify --emit-tests ''"),
    ],
)
def test_an_empty_path_is_a_usage_error_not_the_current_folder(
    tree: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    """`vjp-migrate fix "$FILE"` with an empty variable rewrote every file below the current folder (cli29 17)."""
    monkeypatch.chdir(tree)
    code, out, err = run(*args)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1].endswith("an empty path names no file or folder (the current folder is .)")
    assert err.splitlines()[-1].startswith("Error: Invalid value for ")
    assert (tree / "pkg" / "seed.py").read_text(encoding="utf-8") == SEED
    assert sorted(p.name for p in tree.rglob("*")) == ["ok.py", "pkg", "seed.py"]
