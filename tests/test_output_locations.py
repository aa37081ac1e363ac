"""An output a command writes at its end (`record --out`, `verify --emit-tests`) is checked before
the work: a location that cannot be written is one line and exit 2 up front, where the run
(a whole test suite, for record) used to finish and then end in a traceback (cli29 finding 9).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from test_output_errors import OLD_STYLE
from test_transaction import permission_bound

# The command record would run: it leaves a mark, so a test sees whether it ran.
LEAVES_A_MARK = (sys.executable, "-c", "open('ran', 'w').close()")


def vjp_migrate(cwd: Path, *args: str, prefix: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "vjp_migrate", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "before.py").write_text(OLD_STYLE)
    (tmp_path / "after.py").write_text(OLD_STYLE.replace("alpha * g", "2 * alpha * g"))
    (tmp_path / "a_file").write_text("")
    (tmp_path / "locked").mkdir(mode=0o555)
    return tmp_path


@pytest.mark.parametrize(
    ("out", "why"),
    [
        pytest.param("missing/dir/in.npz", "the folder missing/dir does not exist", id="a folder that does not exist"),
        pytest.param("a_file/in.npz", "a_file is not a folder", id="a file for a folder"),
    ],
)
def test_record_refuses_its_output_before_running_the_command(tree: Path, out: str, why: str) -> None:
    done = vjp_migrate(tree, "record", "--out", out, "--", *LEAVES_A_MARK)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"Error: --out {out}: {why}\n"
    assert not (tree / "ran").exists()


def test_record_refuses_a_folder_it_cannot_write(tree: Path) -> None:
    done = vjp_migrate(tree, "record", "--out", "locked/in.npz", "--", *LEAVES_A_MARK, prefix=permission_bound())
    assert done.stderr == "Error: --out locked/in.npz: the folder locked is not writable\n"
    assert done.returncode == 2 and not (tree / "ran").exists()


@pytest.mark.parametrize(
    ("emit", "why", "bound"),
    [
        pytest.param("locked/tests", "the folder locked is not writable", True, id="a parent it cannot write"),
        pytest.param("locked", "is not writable", True, id="a folder it cannot write"),
        pytest.param("a_file/tests/deep", "a_file is not a folder", False, id="a file for a folder"),
    ],
)
def test_verify_refuses_its_tests_folder_before_proving(tree: Path, emit: str, why: str, bound: bool) -> None:
    prefix = permission_bound() if bound else ()
    done = vjp_migrate(tree, "verify", "--emit-tests", emit, "before.py", "after.py", prefix=prefix)
    assert (done.returncode, done.stdout) == (2, "")  # no report: the proof never ran
    assert done.stderr == f"Error: --emit-tests {emit}: {why}\n"
    assert not (tree / "locked").is_dir() or list((tree / "locked").iterdir()) == []
