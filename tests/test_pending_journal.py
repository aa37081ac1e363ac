"""A run that writes nothing (check, fix --diff) on a tree where a multi-file fix was killed
mid-way: it must not finish the migration (it writes nothing), but it must not stay silent
either while it reports on half-written files. One warning line names the journal and its
folder and says that `vjp-migrate fix` completes it.

The interrupted run is real: write_together SIGKILLed after its first rename (the set-up of
tests/test_transaction.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_transaction import JOURNAL_PREFIX, NEW, contents, journals, killed_after_first_rename, make_tree

from vjp_migrate.transaction import pending


def vjp_migrate(*args: str | Path) -> subprocess.CompletedProcess[str]:
    cwd = Path(args[-1]).parent  # check's cache goes to the current folder of a tree without configuration
    return subprocess.run(
        [sys.executable, "-m", "vjp_migrate", *map(str, args)], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def warning(root: Path, journal: Path) -> str:
    return (
        f"vjp-migrate: warning: an interrupted `vjp-migrate fix` left the journal {journal}: its migration of "
        f"3 files in {root} (a.py, b.py, sub/c.py) may be half-written, and this run reports on the files as they "
        "are; run `vjp-migrate fix` to complete it (it recovers first)"
    )


@pytest.fixture
def interrupted(tmp_path: Path) -> Path:
    root = make_tree(tmp_path / "tree")
    killed_after_first_rename(root)
    return root


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("check",), id="check"),
        pytest.param(("check", "--output-format", "sarif"), id="check with SARIF fixes"),
        pytest.param(("check", "--no-cache", "--jobs", "2"), id="check in worker processes"),
        pytest.param(("fix", "--diff"), id="fix --diff"),
        pytest.param(("check", "--add-noqa"), id="check --add-noqa (writes no file here)"),
    ],
)
def test_non_writing_run_warns_once_and_finishes_nothing(interrupted: Path, args: tuple[str, ...]) -> None:
    root = interrupted
    before = contents(root)
    (journal,) = journals(root)
    done = vjp_migrate(*args, root)
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith("vjp-migrate:")] == [warning(root, journal)]
    assert contents(root) == before  # the journal is still there, nothing was completed


def test_a_path_below_the_journal_warns_and_an_unrelated_one_does_not(interrupted: Path) -> None:
    root = interrupted
    (journal,) = journals(root)
    assert vjp_migrate("check", root / "sub" / "c.py").stderr.splitlines() == [
        warning(root, journal).replace(
            "and this run reports on the files as they are; run `vjp-migrate fix` to complete it (it recovers first)",
            "and this run does not complete it: a.py, b.py are not below the paths given; "
            f"run `vjp-migrate fix {root}` to complete it",
        )
    ]
    elsewhere = root.parent / "elsewhere"
    elsewhere.mkdir()
    assert vjp_migrate("check", elsewhere).stderr == ""


def test_after_the_next_fix_the_warning_is_gone(interrupted: Path) -> None:
    root = interrupted
    fixed = vjp_migrate("fix", root)
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stderr.splitlines()[0].startswith("vjp-migrate: completed an interrupted migration of 3 files")
    assert {k: v for k, v in contents(root).items() if k in NEW} == NEW and journals(root) == []
    done = vjp_migrate("check", root)
    assert done.returncode == 0 and done.stderr == ""


def test_a_journal_of_a_running_fix_is_not_reported(interrupted: Path) -> None:
    (journal,) = journals(interrupted)
    journal.rename(journal.with_name(f"{JOURNAL_PREFIX}{os.getpid()}.00000000.json"))  # this process is alive
    assert pending([interrupted]) == []


def test_an_unreadable_journal_is_reported_and_left(interrupted: Path) -> None:
    (journal,) = journals(interrupted)
    journal.write_text("{not json", encoding="utf-8")
    (message,) = pending([interrupted])
    assert message.startswith(f"cannot read the migration journal {journal} (") and message.endswith("left it in place")
    assert journal.read_text(encoding="utf-8") == "{not json"


def test_interactive_fix_finishes_the_interrupted_migration_first(interrupted: Path) -> None:
    """`fix --interactive` writes, so like `fix` it completes the journal before anything else."""
    root = interrupted
    done = subprocess.run(
        [sys.executable, "-m", "vjp_migrate", "fix", "--interactive", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        input="",
        cwd=root.parent,
    )
    assert done.returncode == 0, done.stderr
    assert "vjp-migrate: completed an interrupted migration of 3 files" in done.stderr
    assert journals(root) == []
    assert {name: contents(root)[name] for name in NEW} == NEW
