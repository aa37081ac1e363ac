"""A read-only file is refused, never replaced, by every write path (as ruff and black do).

The write goes through a temporary renamed over the file, and the folder is writable, so the
rename alone would silently override the user's chmod. Single-file writes (fix, batched or not,
notebooks, --add-noqa, recovery) refuse it with the same words as a multi-file migration
(transaction.write_together), and the other files are still written. The file's mode bits
count even for root, who may write anything: the suite runs as root in CI containers, and the
behaviour must be the same there (checked both as root and with the permission override dropped).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT
from test_notebook import notebook_text
from test_transaction import permission_bound

from vjp_migrate import api, files
from vjp_migrate.cli import main
from vjp_migrate.model import Status
from vjp_migrate.source import SourceError

SEED = (ROOT / "examples" / "clip_gradient.py").read_bytes()


def tree(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    for name in ("locked.py", "open.py"):
        (root / "pkg" / name).write_bytes(SEED)
    (root / "pkg" / "locked.py").chmod(0o444)
    return root / "pkg"


def refusal(path: Path) -> str:
    return f"{path}: error: is read-only; left untouched"


def test_read_only_follows_the_mode_bits_for_root_too(tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_bytes(b"x = 1\n")
    assert not files.read_only(target)
    target.chmod(0o444)
    assert files.read_only(target)
    target.chmod(0o464)  # its group may write it, its owner may not (unless root, who owns it here)
    assert files.read_only(target) is (os.geteuid() != 0)
    assert not files.read_only(tmp_path / "missing.py")  # the read before the rename says so


def test_write_atomically_refuses_and_keeps_the_file(tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_bytes(b"x = 1\n")
    target.chmod(0o444)
    with pytest.raises(SourceError, match=r"^is read-only; left untouched$"):
        files.write_atomically(target, b"x = 2\n", b"x = 1\n")
    assert target.read_bytes() == b"x = 1\n"
    assert target.stat().st_mode & 0o777 == 0o444
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]  # no temporary left


@pytest.mark.parametrize("jobs", [1, 2], ids=["in process", "worker processes"])
def test_fix_paths_fails_the_read_only_file_and_writes_the_others(tmp_path: Path, jobs: int) -> None:
    pkg = tree(tmp_path)
    results = {r.path.name: r for r in api.fix_paths([pkg], how=api.Execution(jobs))}
    assert results["locked.py"].status is Status.FAILED
    assert results["locked.py"].reason == "is read-only; left untouched"
    assert len(results["locked.py"].fixed) == 2 and not results["locked.py"].written  # what it would have fixed
    assert results["open.py"].status is Status.OK and results["open.py"].written
    assert (pkg / "locked.py").read_bytes() == SEED
    assert (pkg / "open.py").read_bytes() != SEED
    assert sorted(p.name for p in pkg.iterdir()) == ["locked.py", "open.py"]


def test_fix_file_keeps_the_findings_of_a_refused_write(tmp_path: Path) -> None:
    pkg = tree(tmp_path)
    result = api.fix_file(pkg / "locked.py")
    assert result.status is Status.FAILED and result.reason == "is read-only; left untouched"
    assert len(result.diagnostics) == 2 and not result.written
    assert (pkg / "locked.py").read_bytes() == SEED
    opened = api.fix_file(pkg / "open.py")
    assert opened.status is Status.OK and opened.written and len(opened.fixed) == 2


def test_write_batch_refuses_only_the_read_only_file(tmp_path: Path) -> None:
    pkg = tree(tmp_path)
    with files.write_batch() as batch:
        for name in ("locked.py", "open.py"):
            files.write_file(pkg / name, b"# migrated\n", SEED)
        failed = batch.finish()
    assert {p.name: str(error) for p, error in failed.items()} == {"locked.py": "is read-only; left untouched"}
    assert (pkg / "locked.py").read_bytes() == SEED
    assert (pkg / "open.py").read_bytes() == b"# migrated\n"


def _cli(*args: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "vjp_migrate", *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    "as_user", [False, True], ids=["as this user (root in CI)", "without the root permission override"]
)
def test_fix_cli_says_one_line_and_exits_2(tmp_path: Path, as_user: bool) -> None:
    prefix = permission_bound() if as_user else ()
    pkg = tree(tmp_path)
    done = _cli("fix", str(pkg), prefix=prefix)
    assert done.returncode == 2, done.stderr
    assert [line for line in done.stderr.splitlines() if "error" in line] == [refusal(pkg / "locked.py")]
    assert done.stdout.splitlines()[-1] == "Fixed 2 findings in 1 file; 2 findings in 1 file not written."
    assert (pkg / "locked.py").read_bytes() == SEED
    assert (pkg / "open.py").read_bytes() != SEED


def test_read_only_notebook_is_refused(tmp_path: Path) -> None:
    notebook = tmp_path / "clip.ipynb"
    notebook.write_text(notebook_text(), encoding="utf-8")
    notebook.chmod(0o444)
    before = notebook.read_bytes()
    result = CliRunner().invoke(main, ["fix", str(notebook)], catch_exceptions=False)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [refusal(notebook)]
    assert notebook.read_bytes() == before


def test_add_noqa_refuses_the_read_only_file_and_writes_the_others(tmp_path: Path) -> None:
    pkg = tree(tmp_path)
    result = CliRunner().invoke(main, ["check", "--add-noqa", str(pkg)], catch_exceptions=False)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [refusal(pkg / "locked.py")]
    assert (
        result.stdout.splitlines()[-1]
        == "Added noqa comments for 2 findings in 1 file; 2 findings in 1 file not written."
    )
    assert (pkg / "locked.py").read_bytes() == SEED
    assert b"# noqa: VJP001" in (pkg / "open.py").read_bytes()


def test_recovery_keeps_the_journal_of_a_file_made_read_only(tmp_path: Path) -> None:
    from test_transaction import OLD, journals, killed_after_first_rename, make_tree

    from vjp_migrate.transaction import recover

    root = make_tree(tmp_path / "tree")
    killed_after_first_rename(root)
    (root / "b.py").chmod(0o444)
    (message,) = recover([root])
    assert message.startswith("could not finish an interrupted migration of 3 files")
    assert message.endswith(f"is read-only; left untouched; the journal {journals(root)[0]} is kept")
    assert (root / "b.py").read_bytes() == OLD["b.py"]
    assert len(journals(root)) == 1


def unwritable(path: Path, reason: str = "Permission denied") -> str:
    return f"{path}: error: cannot be written: {reason}; left untouched"


@pytest.mark.parametrize(
    ("args", "answers"),
    [
        pytest.param(("fix",), "", id="fix"),
        pytest.param(("fix", "--jobs", "1"), "", id="fix in process"),
        pytest.param(("check", "--add-noqa", "--no-cache"), "", id="check --add-noqa"),
        pytest.param(("fix", "--interactive"), "y\n", id="fix --interactive"),
    ],
)
def test_a_file_whose_folder_cannot_be_written_is_not_called_unreadable(
    tmp_path: Path, args: tuple[str, ...], answers: str
) -> None:
    """It was read and analysed; only the write failed (cli29 18: it said `cannot be read`)."""
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "a.py").write_bytes(SEED)
    locked.chmod(0o555)
    try:
        done = subprocess.run(
            [*permission_bound(), sys.executable, "-m", "vjp_migrate", *args, str(locked)],
            capture_output=True,
            text=True,
            timeout=120,
            input=answers,
            cwd=tmp_path,
        )
    finally:
        locked.chmod(0o755)
    assert done.returncode == 2, done.stderr
    assert [line for line in done.stderr.splitlines() if ": error: " in line] == [unwritable(locked / "a.py")]
    assert (locked / "a.py").read_bytes() == SEED
    assert sorted(p.name for p in locked.iterdir()) == ["a.py"]


@pytest.mark.parametrize("failing", ["mkstemp", "replace"])
def test_a_full_disk_is_a_write_error_in_every_single_file_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    target = tmp_path / "a.py"
    target.write_bytes(SEED)

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.tempfile if failing == "mkstemp" else files.os, failing, full)
    assert api.fix_file(target).reason == "cannot be written: No space left on device; left untouched"
    with files.write_batch() as batch:
        files.write_file(target, b"# migrated\n", SEED)
        failed = batch.finish()
    monkeypatch.undo()
    reasons = [api.failed_result(path, error).reason for path, error in failed.items()]
    assert reasons == ["cannot be written: No space left on device; left untouched"]
    assert target.read_bytes() == SEED
