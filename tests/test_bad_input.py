"""The bad-input table (issue #6): every kind of input a source tree can hold.

Each bad file gets one line `path: error: reason` and exit 2 when it cannot be processed,
never a traceback, and the other files are still processed -- whether the file is named on
the command line or found by walking a folder. Inputs that Python accepts (empty files, long
lines, deep indentation, odd nondiff_argnums) are processed: exit 0 or 1 with findings.
Special files (pipes, sockets, devices, symlink loops) run in a subprocess with a timeout, so
a regression that blocks or crashes fails the test instead of hanging the suite.
"""

from __future__ import annotations

import ast
import os
import shutil
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT

from vjp_migrate.api import check_file, fix_source
from vjp_migrate.cli import main
from vjp_migrate.model import Status

SEED = (ROOT / "examples" / "clip_gradient.py").read_text(encoding="utf-8")
MIGRATED = fix_source(SEED).source
COMMANDS = (("check",), ("fix",), ("fix", "--diff"))


def run(*args: str) -> tuple[int, str, str]:
    """The CLI in-process (fast); exceptions propagate, so a traceback fails the test."""
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def run_isolated(*args: str, prefix: tuple[str, ...] = (), timeout: float = 60) -> tuple[int, str, str]:
    """The CLI in a subprocess: a hang is a timeout, a crash is a signal, not a dead suite."""
    done = subprocess.run(
        [*prefix, sys.executable, "-m", "vjp_migrate", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return done.returncode, done.stdout, done.stderr


def assert_clean_output(out: str, err: str) -> None:
    assert "Traceback" not in out + err
    assert "internal error" not in out + err


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if ": error: " in line]


# --- files Python (or this tool) cannot process: exit 2, one line, the rest still processed ---

CPYTHON = "<what CPython's parser says>"
BIG_WITH_FINDING = SEED + "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(160_000))

UNPROCESSABLE = [
    pytest.param(b"def f(:\n    nondiff_argnums = 1\n", "syntax error at line 1", False, id="syntax error"),
    pytest.param(b"print 'nondiff_argnums'\n", "syntax error at line 1", False, id="python 2 print statement"),
    pytest.param(
        b"try:\n    pass\nexcept Exception, e:  # nondiff_argnums\n    pass\n",
        "syntax error at line 3",
        False,
        id="python 2 except clause",
    ),
    pytest.param(b"\x00\x01\x02nondiff_argnums\xff\xfe", "binary file", False, id="binary file named .py"),
    pytest.param(
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR nondiff_argnums", "binary file", False, id="png image named .py"
    ),
    pytest.param(b"x = '\xff\xfe nondiff_argnums'\n", "cannot be decoded as utf-8", False, id="undecodable bytes"),
    pytest.param(
        b"# -*- coding: klingon -*-\nnondiff_argnums = 1\n",
        "bad encoding declaration",
        False,
        id="unknown encoding cookie",
    ),
    pytest.param(
        "# -*- coding: ascii -*-\nx = 'caf\u00e9'  # nondiff_argnums\n".encode(),
        "cannot be decoded as ascii",
        False,
        id="cookie contradicting the bytes",
    ),
    pytest.param(
        b"\xef\xbb\xbf# -*- coding: latin-1 -*-\nnondiff_argnums = 1\n",
        "bad encoding declaration",
        False,
        id="BOM with a different cookie",
    ),
    pytest.param(BIG_WITH_FINDING.encode(), "too large to analyse", False, id="5 MB file with a finding"),
    pytest.param(
        b"nondiff_argnums = " + b"(" * 5000 + b"1" + b")" * 5000 + b"\n",
        "too many nested parentheses",
        True,
        id="5000 nested parentheses",
    ),
    # CPython's own limits: its message (which differs between versions) or, where this version
    # parses the text, no error at all.
    pytest.param(b"nondiff_argnums = " + b"-" * 20000 + b"1\n", CPYTHON, True, id="20000 unary minuses"),
    pytest.param(b"nondiff_argnums = " + b"+".join([b"a"] * 50000) + b"\n", CPYTHON, True, id="50000-term sum"),
]


def cpython_refusal(content: bytes) -> str | None:
    """What this interpreter's parser says about ``content``, None when it parses it."""
    try:
        ast.parse(content)
    except SyntaxError as error:
        return str(error.msg)
    except (RecursionError, MemoryError) as error:
        return str(error) or "nested too deeply for Python's parser"  # the tool's words for an empty MemoryError
    return None


def expected_refusal(content: bytes, reason: str) -> str | None:
    return cpython_refusal(content) if reason == CPYTHON else reason


@pytest.mark.parametrize(("content", "reason", "isolate"), UNPROCESSABLE)
def test_unprocessable_file_named(tmp_path: Path, content: bytes, reason: str, isolate: bool) -> None:
    bad, good = tmp_path / "bad.py", tmp_path / "good.py"
    bad.write_bytes(content)
    good.write_text(SEED, encoding="utf-8")
    refusal = expected_refusal(content, reason)
    for command in COMMANDS if not isolate else (("check",), ("fix",)):
        code, out, err = (run_isolated if isolate else run)(*command, str(bad), str(good))
        assert_clean_output(out, err)
        if refusal is None:  # this Python parses it: an ordinary file with nothing to report
            assert (code, error_lines(err)) == (0 if command == ("fix",) else 1, []), (command, out, err)
            continue
        assert code == 2, (command, out, err)
        assert error_lines(err) == [line for line in err.splitlines() if line.startswith(f"{bad}: error: ")]
        (line,) = error_lines(err)
        assert refusal in line
    assert good.read_text(encoding="utf-8") == MIGRATED  # the other file was still fixed
    assert bad.read_bytes() == content


@pytest.mark.parametrize(("content", "reason", "isolate"), UNPROCESSABLE)
def test_unprocessable_file_found_by_walking(tmp_path: Path, content: bytes, reason: str, isolate: bool) -> None:
    (tmp_path / "pkg").mkdir()
    bad, good = tmp_path / "pkg" / "bad.py", tmp_path / "pkg" / "good.py"
    bad.write_bytes(content)
    good.write_text(SEED, encoding="utf-8")
    refusal = expected_refusal(content, reason)
    for command in (("check",), ("fix",)):
        code, out, err = (run_isolated if isolate else run)(*command, str(tmp_path))
        assert_clean_output(out, err)
        if refusal is None:
            assert (code, error_lines(err)) == (0 if command == ("fix",) else 1, []), (command, out, err)
            continue
        assert code == 2, (command, out, err)
        (line,) = error_lines(err)
        assert line.startswith(f"{bad}: error: ") and refusal in line
    assert good.read_text(encoding="utf-8") == MIGRATED
    assert bad.read_bytes() == content


# --- files that are odd but processable: exit 0 (clean) / 1 (findings), no error line ---

ONE_ARG_DEFVJP = SEED.replace(
    "clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)", "clip_gradient.defvjp(clip_gradient_fwd)"
)
DEEP_INDENT = SEED + "def deep(x):\n" + "".join(" " * (i + 1) + "if x:\n" for i in range(90)) + " " * 91 + "pass\n"
LONG_LINE = SEED + "BLOB = '" + "a" * 1_000_000 + "'\n"
LONG_LIST = SEED + "TABLE = [" + ", ".join(str(i) for i in range(2_000)) + "]\n"

PROCESSABLE = [
    # content, check exit, fix exit, codes reported, whether fix changes the file
    pytest.param("", 0, 0, set(), False, id="empty file"),
    pytest.param("\ufeff", 0, 0, set(), False, id="only a BOM"),
    pytest.param("# nondiff_argnums\n\n\n", 0, 0, set(), False, id="comment only"),
    pytest.param(LONG_LINE, 1, 0, {"VJP001"}, True, id="a 1 MB line"),
    pytest.param(LONG_LIST, 1, 0, {"VJP001"}, True, id="a 2000-element list on one line"),
    pytest.param(DEEP_INDENT, 1, 0, {"VJP001"}, True, id="90 levels of indentation"),
    pytest.param(
        "ARGS = (0, 1)\n" + SEED.replace("nondiff_argnums=(0, 1)", "nondiff_argnums=ARGS"),
        1,
        0,
        {"VJP001"},
        True,
        id="nondiff_argnums a module constant",
    ),
    pytest.param(
        "ARGS = (0, 1)\nif DEBUG:\n    ARGS = (0,)\n" + SEED.replace("nondiff_argnums=(0, 1)", "nondiff_argnums=ARGS"),
        1,
        1,
        {"VJP003"},
        False,
        id="nondiff_argnums a variable bound twice",
    ),
    pytest.param(
        SEED.replace("nondiff_argnums=(0, 1)", "nondiff_argnums=tuple(range(2))"),
        1,
        0,
        {"VJP001"},
        True,
        id="nondiff_argnums tuple(range(...)), read like a literal",
    ),
    pytest.param(
        SEED.replace("nondiff_argnums=(0, 1)", "nondiff_argnums=sorted((1, 0))"),
        1,
        1,
        {"VJP003"},
        False,
        id="nondiff_argnums a call that is not read (positions from bwd's names)",
    ),
    pytest.param(
        SEED.replace("nondiff_argnums=(0, 1)", "nondiff_argnums=(0, 7)"),
        1,
        1,
        {"VJP004"},
        False,
        id="nondiff_argnums out of range",
    ),
    pytest.param(
        SEED.replace("def clip_gradient_bwd(lo, hi, _, g):", "def clip_gradient_bwd(lo, _, g):"),
        1,
        1,
        {"VJP004"},
        False,
        id="bwd with the wrong arity",
    ),
    pytest.param(
        SEED.replace("def clip_gradient_fwd(lo, hi, x):", "def clip_gradient_fwd(lo, x):"),
        1,
        1,
        {"VJP004"},
        False,
        id="fwd with the wrong arity",
    ),
    pytest.param(ONE_ARG_DEFVJP, 0, 0, set(), False, id="defvjp given fwd only"),
]


@pytest.mark.parametrize(("text", "check_exit", "fix_exit", "codes", "changes"), PROCESSABLE)
def test_processable_file(
    tmp_path: Path, text: str, check_exit: int, fix_exit: int, codes: set[str], changes: bool
) -> None:
    path = tmp_path / "odd.py"
    path.write_text(text, encoding="utf-8", newline="")
    original = path.read_bytes()
    code, out, err = run("check", str(path))
    assert_clean_output(out, err)
    assert (code, error_lines(err)) == (check_exit, [])
    assert {line.split()[1] for line in out.splitlines() if line.startswith(f"{path}:")} == codes
    code, out, err = run("fix", str(path))
    assert_clean_output(out, err)
    assert (code, error_lines(err)) == (fix_exit, [])
    if changes:
        assert path.read_text(encoding="utf-8") == fix_source(text).source
        assert run("check", str(path))[0] == 0
    else:
        assert path.read_bytes() == original


def test_folder_named_like_a_python_file(tmp_path: Path) -> None:
    folder = tmp_path / "x.py"
    folder.mkdir()
    (folder / "inner.py").write_text(SEED, encoding="utf-8")
    for target in (folder, tmp_path):
        code, out, err = run("check", str(target))
        assert_clean_output(out, err)
        assert (code, error_lines(err)) == (1, [])
        assert out.startswith(f"{folder / 'inner.py'}:")
    assert run("fix", str(folder))[0] == 0
    assert (folder / "inner.py").read_text(encoding="utf-8") == MIGRATED


# --- special files: never opened for reading (a pipe would block forever), never followed out ---


@pytest.fixture
def special_files(tmp_path: Path) -> Iterator[dict[str, Path]]:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "good.py").write_text(SEED, encoding="utf-8")
    files = {"named pipe": tree / "pipe.py", "socket": tree / "socket.py", "device": tree / "device.py"}
    os.mkfifo(files["named pipe"])
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(files["socket"]))
    try:
        os.mknod(files["device"], stat.S_IFCHR | 0o666, os.makedev(1, 3))  # /dev/null's numbers
    except (PermissionError, AttributeError):
        files["device"].symlink_to("/dev/zero")  # no CAP_MKNOD: a named link to a real device
    yield files
    server.close()


@pytest.mark.parametrize("kind", ["named pipe", "socket", "device"])
def test_special_file_named_is_reported_not_read(special_files: dict[str, Path], kind: str) -> None:
    path = special_files[kind]
    good = path.parent / "good.py"
    for command in (("check",), ("fix",)):
        code, out, err = run_isolated(*command, str(path), str(good), timeout=60)
        assert code == 2
        assert_clean_output(out, err)
        assert error_lines(err) == [f"{path}: error: not a regular file (a pipe, socket or device); skipped"]
    assert good.read_text(encoding="utf-8") == MIGRATED


def test_special_files_found_by_walking_are_skipped(special_files: dict[str, Path]) -> None:
    tree = special_files["named pipe"].parent
    code, out, err = run_isolated("check", str(tree), timeout=60)
    assert_clean_output(out, err)
    assert (code, error_lines(err)) == (1, [])
    assert "in 1 file checked" in out
    code, out, err = run_isolated("fix", str(tree), timeout=60)
    assert (code, error_lines(err)) == (0, [])
    assert (tree / "good.py").read_text(encoding="utf-8") == MIGRATED


def test_pipe_that_replaced_a_file_after_discovery_does_not_block(tmp_path: Path) -> None:
    pipe = tmp_path / "pipe.py"
    os.mkfifo(pipe)
    results = []
    worker = threading.Thread(target=lambda: results.append(check_file(pipe, explicit=False)), daemon=True)
    worker.start()
    worker.join(20)
    if worker.is_alive():  # unblock the thread before failing
        os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("reading a named pipe blocked")
    (result,) = results
    assert result.status is Status.FAILED and "not a regular file" in (result.reason or "")


def test_symlink_loop_found_by_walking_terminates(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "good.py").write_text(SEED, encoding="utf-8")
    (tree / "loop.py").symlink_to("loop.py")
    (tree / "a.py").symlink_to("b.py")
    (tree / "b.py").symlink_to("a.py")
    (tree / "sub" / "up").symlink_to("..", target_is_directory=True)
    (tree / "dangling.py").symlink_to("missing.py")
    code, out, err = run_isolated("check", str(tree), timeout=60)
    assert_clean_output(out, err)
    assert (code, error_lines(err)) == (1, [])
    assert "in 1 file checked" in out
    assert run_isolated("fix", str(tree), timeout=60)[0] == 0
    assert (tree / "good.py").read_text(encoding="utf-8") == MIGRATED


def test_symlink_loop_named_is_one_line(tmp_path: Path) -> None:
    loop = tmp_path / "loop.py"
    loop.symlink_to("loop.py")
    good = tmp_path / "good.py"
    good.write_text(SEED, encoding="utf-8")
    code, out, err = run_isolated("check", str(loop), str(good), timeout=60)
    assert_clean_output(out, err)
    assert code == 2
    (line,) = error_lines(err)
    assert line.startswith(f"{loop}: error: ") and "symbolic links" in line


def test_symlinks_out_of_the_tree_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "theirs.py").write_text(SEED, encoding="utf-8")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "mine.py").write_text(SEED, encoding="utf-8")
    (tree / "linked.py").symlink_to(outside / "theirs.py")
    (tree / "linked_dir").symlink_to(outside, target_is_directory=True)
    code, out, err = run("check", str(tree))
    assert (code, error_lines(err)) == (1, [])
    assert {line.split(":")[0] for line in out.splitlines() if ": VJP" in line} == {str(tree / "mine.py")}
    assert run("fix", str(tree))[0] == 0
    assert (tree / "mine.py").read_text(encoding="utf-8") == MIGRATED
    assert (outside / "theirs.py").read_text(encoding="utf-8") == SEED  # not followed out
    assert (tree / "linked.py").is_symlink()


def _as_permission_bound_user() -> tuple[str, ...]:
    """A command prefix under which mode-000 files really cannot be read."""
    if os.geteuid() != 0:
        return ()
    # Root reads mode-000 files. Without CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH it cannot: run the
    # tool as a root that obeys file permissions, so the test still means something.
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root and setpriv (util-linux) is missing: root reads mode-000 files")
    return (setpriv, "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-all")


@pytest.fixture
def locked_tree(tmp_path: Path) -> Iterator[Path]:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "good.py").write_text(SEED, encoding="utf-8")
    locked = tree / "locked.py"
    locked.write_text(SEED, encoding="utf-8")
    locked.chmod(0)
    yield tree
    locked.chmod(0o644)
    assert locked.read_text(encoding="utf-8") == SEED


@pytest.mark.parametrize("command", ["check", "fix"])
def test_unreadable_file_found_by_walking(locked_tree: Path, command: str) -> None:
    code, out, err = run_isolated(command, str(locked_tree), prefix=_as_permission_bound_user())
    assert code == 2
    assert_clean_output(out, err)
    assert error_lines(err) == [f"{locked_tree / 'locked.py'}: error: cannot be read: Permission denied"]
    assert (locked_tree / "good.py").read_text(encoding="utf-8") == (MIGRATED if command == "fix" else SEED)


def test_unreadable_file_named(locked_tree: Path) -> None:
    locked, good = locked_tree / "locked.py", locked_tree / "good.py"
    code, out, err = run_isolated("fix", str(locked), str(good), prefix=_as_permission_bound_user())
    assert code == 2
    assert_clean_output(out, err)
    assert error_lines(err) == [f"{locked}: error: cannot be read: Permission denied"]
    assert good.read_text(encoding="utf-8") == MIGRATED
