"""A journal on disk is only a file: one planted in a cloned repository, or in a folder above the
paths, must not make `fix` write what it holds (cli29 finding 1). Only a journal vjp-migrate could
have written, for files below the paths given, is completed; any other gets one warning line,
and nothing is written.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_transaction import NEW, OLD, contents, journals, killed_after_first_rename, make_tree

from vjp_migrate.transaction import JOURNAL_PREFIX, pending, recover

PLANTED = b"# written by a planted journal\n"


def dead_pid() -> int:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


def plant(folder: Path, files: dict[str, bytes]) -> Path:
    """A well-formed journal of a dead process in ``folder``: each file's current bytes to ``files``'s."""
    entries = []
    for name, new in files.items():
        old = (folder / name).read_bytes() if (folder / name).exists() else b""
        entries.append(
            {
                "path": name,
                "temporary": f"{name}.tmp",
                "old_sha256": hashlib.sha256(old).hexdigest(),
                "new_sha256": hashlib.sha256(new).hexdigest(),
                "old": base64.b64encode(old).decode(),
                "new": base64.b64encode(new).decode(),
            }
        )
    journal = folder / f"{JOURNAL_PREFIX}{dead_pid()}.deadbeef.json"
    journal.write_text(json.dumps({"version": 1, "pid": 0, "files": entries}))
    return journal


def sources(root: Path) -> dict[str, bytes]:
    return {name: data for name, data in contents(root).items() if name.endswith(".py")}


def refusal(journal: Path, why: str) -> str:
    return f"warning: not completing the migration journal {journal}: {why}; left it in place"


def vjp_migrate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vjp_migrate", *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "victim.py").write_bytes(b"harmless = 1\n")
    root = tmp_path / "repo"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_bytes(b"[core]\n")
    (root / ".git" / "hooks" / "helper.py").write_bytes(b"pass\n")
    (root / "a.py").write_bytes(b"x = 1\n")
    (root / "lnk").symlink_to("../outside")
    (root / "link.py").symlink_to("../outside/victim.py")
    return root


@pytest.mark.parametrize(
    ("planted", "why"),
    [
        pytest.param(".git/config", ".git/config is not a Python file or notebook", id="a file that is no Python"),
        pytest.param(".git/hooks/helper.py", ".git/hooks/helper.py is inside a .git folder", id="inside .git"),
        pytest.param("lnk/victim.py", "lnk/victim.py resolves outside the journal's folder", id="a linked folder"),
        pytest.param("link.py", "link.py resolves outside the journal's folder", id="a link to a file"),
        pytest.param("../outside/victim.py", "../outside/victim.py resolves outside the journal's folder", id=".."),
    ],
)
def test_a_planted_entry_is_refused_and_nothing_is_written(repo: Path, planted: str, why: str) -> None:
    before = {p: p.read_bytes() for p in [*repo.rglob("*"), *(repo.parent / "outside").rglob("*")] if p.is_file()}
    journal = plant(repo, {"a.py": b"x = 2\n", planted: PLANTED})
    assert recover([repo]) == [refusal(journal, why)]
    assert pending([repo]) == [refusal(journal, why)]  # check does not tell to run fix either
    assert {p: p.read_bytes() for p in before} == before
    assert journal.exists()


def test_an_absolute_path_is_refused(repo: Path) -> None:
    victim = repo.parent / "outside" / "victim.py"
    journal = plant(repo, {"a.py": b"x = 2\n"})
    body = json.loads(journal.read_text())
    body["files"].append({**body["files"][0], "path": str(victim)})
    journal.write_text(json.dumps(body))
    (message,) = recover([repo])
    assert message == refusal(journal, f"{os.path.relpath(victim, repo)} resolves outside the journal's folder")
    assert (repo / "a.py").read_bytes() == b"x = 1\n"


def test_a_symlinked_folder_inside_the_journals_folder_is_refused(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    (root / "alias").symlink_to("sub")
    journal = plant(root, {"a.py": NEW["a.py"], "alias/c.py": PLANTED})
    assert recover([root]) == [refusal(journal, "alias/c.py passes through a symbolic link")]
    assert sources(root) == OLD


def test_a_journal_that_is_a_symbolic_link_is_refused(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    elsewhere = plant(root, {"a.py": NEW["a.py"]})
    journal = root / f"{JOURNAL_PREFIX}{dead_pid()}.0000aaaa.json"
    journal.symlink_to(elsewhere.name)
    elsewhere.rename(root / "journal.json")
    assert recover([root]) == [refusal(journal, "it is a symbolic link")]
    assert sources(root) == OLD


def test_a_journal_that_is_a_named_pipe_does_not_block_the_run(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    fifo = root / f"{JOURNAL_PREFIX}{dead_pid()}.0000bbbb.json"
    os.mkfifo(fifo)
    done = vjp_migrate(root, "check", "--no-cache", ".")  # read, a pipe would wait for a writer forever
    assert done.returncode == 0
    assert done.stderr == f"vjp-migrate: {refusal(fifo, 'it is not a regular file')}\n"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file away needs root")
def test_a_journal_of_another_user_is_refused(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    journal = plant(root, {"a.py": NEW["a.py"]})
    os.chown(journal, 12345, 12345)
    assert recover([root]) == [refusal(journal, "it belongs to another user (uid 12345)")]
    assert sources(root) == OLD


def test_a_journal_above_the_paths_naming_other_files_is_reported_not_completed(tmp_path: Path) -> None:
    """The second case of the finding, with nothing else wrong: Python files, no link."""
    (tmp_path / "proj").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "proj" / "a.py").write_bytes(b"x = 1\n")
    (tmp_path / "other" / "victim.py").write_bytes(b"secret = 1\n")
    journal = plant(tmp_path, {"proj/a.py": b"x = 2\n", "other/victim.py": PLANTED})
    done = vjp_migrate(tmp_path / "proj", "fix", "a.py")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"vjp-migrate: warning: an interrupted `vjp-migrate fix` left the journal {journal}: its migration of "
        f"2 files in {tmp_path} (proj/a.py, other/victim.py) may be half-written, and this run does not complete "
        f"it: other/victim.py is not below the paths given; run `vjp-migrate fix {tmp_path}` to complete it"
    ]
    assert (tmp_path / "other" / "victim.py").read_bytes() == b"secret = 1\n"
    assert (tmp_path / "proj" / "a.py").read_bytes() == b"x = 1\n"
    assert journal.exists()


def test_the_planted_repository_of_the_finding_is_left_as_it_is(repo: Path) -> None:
    config = (repo / ".git" / "config").read_bytes()
    journal = plant(repo, {"a.py": b"x = 1\n", "lnk/victim.py": PLANTED, ".git/config": config + PLANTED})
    done = vjp_migrate(repo, "fix", ".")
    assert done.returncode == 0, done.stderr
    why = "lnk/victim.py resolves outside the journal's folder"
    assert done.stderr == f"vjp-migrate: {refusal(journal, why)}\n"
    assert (repo / ".git" / "config").read_bytes() == config
    assert (repo.parent / "outside" / "victim.py").read_bytes() == b"harmless = 1\n"


def test_a_real_interrupted_migration_is_still_completed(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    killed_after_first_rename(root)
    assert recover([root]) == [f"completed an interrupted migration of 3 files in {root}: a.py, b.py, sub/c.py"]
    assert contents(root) == NEW and journals(root) == []
