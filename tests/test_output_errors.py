"""Standard output that cannot be written (cli29 findings 8 and 9): a full disk or a closed
descriptor is one line on stderr and exit 2, as ruff does, never a traceback and never 1 (the
findings code); a reader that went away (`| head`) ends the run quietly, 141 as a shell reports
SIGPIPE.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import IO

import pytest

OLD_STYLE = """\
from functools import partial
import jax

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def scale(alpha, x):
    return alpha * x

def scale_fwd(alpha, x):
    return scale(alpha, x), None

def scale_bwd(alpha, _, g):
    return (alpha * g,)

scale.defvjp(scale_fwd, scale_bwd)
"""

COMMANDS = [
    pytest.param(("check", "--no-cache", "a.py"), id="check"),
    pytest.param(("check", "--no-cache", "clean.py"), id="check of a clean file"),
    *(
        pytest.param(("check", "--no-cache", "--output-format", name, "a.py"), id=f"check --output-format {name}")
        for name in ("concise", "json", "github", "sarif", "junit")
    ),
    pytest.param(("fix", "--diff", "a.py"), id="fix --diff"),
    pytest.param(("fix", "-", "--stdin-filename", "a.py"), id="fix -"),
    pytest.param(("rules",), id="rules"),
    pytest.param(("explain", "VJP001"), id="explain"),
    pytest.param(("--help",), id="--help"),
    pytest.param(("check", "--help"), id="check --help"),
    pytest.param(("--version",), id="--version"),
]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text(OLD_STYLE)
    (tmp_path / "clean.py").write_text("x = 1\n")
    return tmp_path


def run(
    tree: Path, args: tuple[str, ...], shell_redirect: str = "", stdout: IO[str] | int | None = None
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "vjp_migrate", *args]
    if shell_redirect:
        command = ["sh", "-c", f'exec "$@" {shell_redirect}', "sh", *command]
    return subprocess.run(
        command, cwd=tree, stdout=stdout, stderr=subprocess.PIPE, text=True, input=OLD_STYLE, timeout=120
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", COMMANDS)
def test_a_full_disk_is_one_line_and_exit_2(tree: Path, args: tuple[str, ...]) -> None:
    with open("/dev/full", "w") as full:
        done = run(tree, args, stdout=full)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1:] == ["vjp-migrate: cannot write the output: No space left on device"]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("args", COMMANDS)
def test_a_closed_stdout_is_one_line_and_exit_2(tree: Path, args: tuple[str, ...]) -> None:
    done = run(tree, args, ">&-")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1:] == ["vjp-migrate: cannot write the output: standard output is closed"]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("args", COMMANDS)
def test_a_reader_that_left_ends_the_run_quietly(tree: Path, args: tuple[str, ...]) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first write: EPIPE
    try:
        done = run(tree, args, stdout=write)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, "")


def test_fix_writes_the_files_and_then_says_the_summary_was_lost(tree: Path) -> None:
    done = run(tree, ("fix", "a.py"), ">&-")
    assert done.returncode == 2
    assert done.stderr == "vjp-migrate: cannot write the output: standard output is closed\n"
    assert "nondiff_argnums" not in (tree / "a.py").read_text()


def test_a_command_that_prints_nothing_needs_no_stdout(tree: Path) -> None:
    done = run(tree, ("check", "--no-cache", "--quiet", "clean.py"), ">&-")
    assert (done.returncode, done.stderr) == (0, "")
