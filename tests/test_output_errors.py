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


# Exit codes with stderr closed: findings 1, a clean file 0, a file that cannot be parsed 2.
CLOSED_STDERR = [
    pytest.param(("check", "--no-cache", "a.py"), 1, "VJP001", id="check"),
    pytest.param(("check", "--no-cache", "clean.py"), 0, "All checks passed", id="check of a clean file"),
    pytest.param(("check", "--no-cache", "bad.py", "a.py"), 2, "VJP001", id="check with an error"),
    pytest.param(("fix", "--diff", "a.py"), 1, "+def scale_bwd", id="fix --diff"),
]


@pytest.mark.parametrize(("args", "code", "printed"), CLOSED_STDERR)
def test_a_closed_stderr_loses_only_the_messages(tree: Path, args: tuple[str, ...], code: int, printed: str) -> None:
    # Python starts with sys.stderr None there: the run died on its first message, with exit 1.
    (tree / "bad.py").write_text("x = (\n")
    done = run(tree, args, "2>&-", stdout=subprocess.PIPE)
    assert (done.returncode, done.stderr) == (code, "")
    assert printed in done.stdout


UNWRITABLE_STDERR = [
    *CLOSED_STDERR,
    pytest.param(("fix", "--diff", "--exit-zero", "a.py"), 0, "+def scale_bwd", id="fix --diff --exit-zero"),
    pytest.param(("check", "--no-cache", "--exit-zero", "a.py"), 0, "VJP001", id="check --exit-zero"),
]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize(("args", "code", "printed"), UNWRITABLE_STDERR)
@pytest.mark.parametrize("refusal", ["/dev/full", "a reader that left"])
def test_a_stderr_that_refuses_writes_loses_only_the_messages(
    tree: Path, args: tuple[str, ...], code: int, printed: str, refusal: str
) -> None:
    """cli30 7: the OSError of the first message ended the run with exit 1, the findings code."""
    (tree / "bad.py").write_text("x = (\n")
    read, write = os.pipe()
    os.close(read)
    command = [sys.executable, "-m", "vjp_migrate", *args]
    with open("/dev/full", "w") as full:
        stderr = full.fileno() if refusal == "/dev/full" else write
        done = subprocess.run(command, cwd=tree, stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=120)
    os.close(write)
    assert done.returncode == code
    assert printed in done.stdout


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_stdout_and_stderr_on_a_full_disk_exit_2(tree: Path) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "vjp_migrate", "check", "--no-cache", "a.py"], cwd=tree, stdout=full, stderr=full
        )
    assert done.returncode == 2


def test_no_file_the_run_opens_takes_a_closed_standard_descriptor(tree: Path) -> None:
    # A native library's message for fd 2 would otherwise land in the file that took the number.
    probe = (
        "import os, sys\n"
        "from vjp_migrate.output import standard_descriptors\n"
        "taken = os.open(os.devnull, os.O_RDONLY); os.close(taken)\n"
        "standard_descriptors()\n"
        "opened = os.open(sys.argv[1], os.O_RDONLY)\n"
        "print(taken, opened, sys.stderr is not None)\n"
    )
    for redirect, descriptor in (("2>&-", "2"), ("<&-", "0")):
        command = ["sh", "-c", f'exec "$@" {redirect}', "sh", sys.executable, "-c", probe, "a.py"]
        done = subprocess.run(command, cwd=tree, capture_output=True, text=True)
        taken, opened, has_stderr = done.stdout.split()
        assert taken == descriptor  # the closed number is the next one handed out...
        assert int(opened) > 2 and has_stderr == "True"  # ...until it is opened on /dev/null
