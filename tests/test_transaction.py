"""The files of one migration are written together (issue #7): all of them or none.

Real failures (a read-only file, a file edited meanwhile, a folder that cannot be written) leave
every file untouched; a real SIGKILL between the renames leaves a journal that the next
`recover` / `vjp-migrate fix` finishes, so every file ends up all-old or all-new.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from helpers import durability_log

from vjp_migrate.api import fix_paths
from vjp_migrate.files import remove_stray_temporaries
from vjp_migrate.source import SourceError
from vjp_migrate.transaction import JOURNAL_PREFIX, KILL_HOOK, FileChange, recover, write_together

NAMES = ("a.py", "b.py", "sub/c.py")
OLD = {name: f"VALUE = {index}  # {name}, before\n".encode() for index, name in enumerate(NAMES)}
NEW = {name: f"VALUE = {index + 10}  # {name}, migrated\n".encode() for index, name in enumerate(NAMES)}

RUNNER = """\
import json, sys
from pathlib import Path
from vjp_migrate.source import SourceError
from vjp_migrate.transaction import FileChange, write_together

items = json.loads(Path(sys.argv[1]).read_text())
try:
    write_together([FileChange(Path(p), old.encode(), new.encode()) for p, old, new in items])
except SourceError as error:
    print(error)
    sys.exit(3)
"""


def make_tree(root: Path) -> Path:
    for name in NAMES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(OLD[name])
    return root


def changes(root: Path) -> list[FileChange]:
    return [FileChange(root / name, OLD[name], NEW[name]) for name in NAMES]


def contents(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def journals(root: Path) -> list[Path]:
    return sorted(root.rglob(f"{JOURNAL_PREFIX}*"))


def permission_bound() -> tuple[str, ...]:
    """A command prefix under which file modes bind (root ignores them otherwise)."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root and setpriv (util-linux) is missing: root writes read-only files")
    return (setpriv, "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-all")


def run_write_together(
    root: Path, items: Sequence[FileChange], env: dict[str, str] | None = None, prefix: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    plan = root.parent / f"{root.name}-plan.json"
    plan.write_text(json.dumps([[str(c.path), c.old.decode(), c.new.decode()] for c in items]))
    script = root.parent / "runner.py"
    script.write_text(RUNNER)
    return subprocess.run(
        [*prefix, sys.executable, str(script), str(plan)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def killed_after_first_rename(root: Path) -> None:
    done = run_write_together(root, changes(root), {KILL_HOOK: "1"})
    assert done.returncode == -9, done.stderr
    state = contents(root)
    assert [state[name] == NEW[name] for name in NAMES] == [True, False, False]
    assert len(journals(root)) == 1


def test_writes_every_file_and_leaves_nothing_behind(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    (root / "a.py").chmod(0o640)
    (root / "b.py").chmod(0o755)
    write_together(changes(root))
    assert contents(root) == NEW
    assert (root / "a.py").stat().st_mode & 0o777 == 0o640
    assert (root / "b.py").stat().st_mode & 0o777 == 0o755


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names a descriptor's file through /proc")
def test_every_write_is_durable_before_the_renames_that_rely_on_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree(tmp_path / "tree").resolve()
    log = durability_log(monkeypatch)
    write_together(changes(root))
    renames = [(at, name) for at, (call, name) in enumerate(log) if call == "replace"]
    (journal_at, journal), *files = renames
    assert Path(journal).name.startswith(JOURNAL_PREFIX) and len(files) == len(NAMES)
    assert log.index(("fsync", journal)) < journal_at  # the journal is whole once it has its name
    assert ("fsync", str(root)) in log[journal_at : files[0][0]]  # and that name survives, before any file moves
    for at, temporary in files:
        assert log.index(("fsync", temporary)) < at
    synced_after = {name for call, name in log[files[-1][0] :] if call == "fsync"}
    assert {str(root), str(root / "sub")} <= synced_after
    assert contents(root) == NEW


def test_symlink_is_written_through(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    (root / "link.py").symlink_to("a.py")
    write_together([FileChange(root / "link.py", OLD["a.py"], NEW["a.py"]), *changes(root)[1:]])
    assert (root / "link.py").is_symlink()
    assert contents(root) == {**NEW, "link.py": NEW["a.py"]}


def test_a_file_changed_on_disk_changes_none(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    (root / "sub/c.py").write_bytes(b"VALUE = 2  # edited meanwhile\n")
    before = contents(root)
    with pytest.raises(SourceError, match=r"sub/c\.py: changed on disk since it was read; no file"):
        write_together(changes(root))
    assert contents(root) == before


def test_the_same_file_twice_is_refused(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    with pytest.raises(SourceError, match="listed twice"):
        write_together([*changes(root), changes(root)[0]])
    assert contents(root) == OLD


def test_a_read_only_file_changes_none(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    (root / "b.py").chmod(0o444)
    done = run_write_together(root, changes(root), prefix=permission_bound())
    assert done.returncode == 3, done.stderr
    assert done.stdout.strip() == f"{root / 'b.py'}: is read-only; no file of this migration was changed"
    assert contents(root) == OLD


def test_a_folder_that_cannot_be_written_changes_none(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    (root / "sub").chmod(0o555)
    try:
        done = run_write_together(root, changes(root), prefix=permission_bound())
    finally:
        (root / "sub").chmod(0o755)
    assert done.returncode == 3, done.stderr
    assert done.stdout.strip() == (
        f"{root / 'sub/c.py'}: cannot be written: Permission denied; no file of this migration was changed"
    )
    assert contents(root) == OLD


def test_a_rename_that_fails_puts_the_others_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_tree(tmp_path / "tree")
    real_replace = os.replace
    calls: list[str] = []

    def second_rename_fails(source: str, target: str) -> None:
        if not os.path.basename(str(source)).startswith(JOURNAL_PREFIX):
            calls.append(str(target))
            if len(calls) == 2:
                raise OSError(28, "No space left on device")
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", second_rename_fails)
    with pytest.raises(SourceError, match=r"b\.py: cannot be written: No space left on device; no file"):
        write_together(changes(root))
    monkeypatch.undo()
    assert contents(root) == OLD


def test_sigkill_between_renames_is_completed_by_recover(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    killed_after_first_rename(root)
    assert recover([root]) == [f"completed an interrupted migration of 3 files in {root}: a.py, b.py, sub/c.py"]
    assert contents(root) == NEW  # no journal, no temporary left either
    assert recover([root]) == []


def test_sigkill_between_renames_is_completed_by_the_next_fix(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    killed_after_first_rename(root)
    done = subprocess.run(
        [sys.executable, "-m", "vjp_migrate", "fix", str(root)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == (
        f"vjp-migrate: completed an interrupted migration of 3 files in {root}: a.py, b.py, sub/c.py"
    )
    assert contents(root) == NEW


def test_sigkill_before_the_first_rename_is_completed(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    done = run_write_together(root, changes(root), {KILL_HOOK: "0"})
    assert done.returncode == -9
    assert {k: v for k, v in contents(root).items() if k in NAMES} == OLD
    assert len(recover([root])) == 1
    assert contents(root) == NEW


def test_file_edited_after_the_kill_rolls_back(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    killed_after_first_rename(root)
    (root / "b.py").write_bytes(b"VALUE = 1  # edited by hand after the crash\n")
    assert recover([root]) == [
        f"rolled back an interrupted migration of 3 files in {root}: a.py, b.py, sub/c.py "
        "(b.py changed since; left as it is)"
    ]
    assert contents(root) == {**OLD, "b.py": b"VALUE = 1  # edited by hand after the crash\n"}


def test_stray_cleanup_keeps_the_journal_and_recovery_needs_no_temporary(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    killed_after_first_rename(root)
    removed = remove_stray_temporaries(root) + remove_stray_temporaries(root / "sub")
    assert len(removed) == 2  # the two temporaries not yet renamed, of a dead process
    assert len(journals(root)) == 1
    assert len(recover([root])) == 1
    assert contents(root) == NEW


def test_journal_of_a_running_process_is_left_alone(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    killed_after_first_rename(root)
    (journal,) = journals(root)
    alive = journal.with_name(f"{JOURNAL_PREFIX}{os.getpid()}.00000000.json")
    journal.rename(alive)
    assert recover([root]) == []
    assert alive.exists()


def test_journal_above_the_given_path_is_found_and_unrelated_paths_leave_it(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    (tmp_path / "elsewhere").mkdir()
    killed_after_first_rename(root)
    assert recover([tmp_path / "elsewhere"]) == []
    assert len(journals(root)) == 1
    before = contents(root)
    # Its other files are not below the path: said, not completed (a planted journal could name any).
    (message,) = recover([root / "sub" / "c.py"])
    assert message.endswith(f"a.py, b.py are not below the paths given; run `vjp-migrate fix {root}` to complete it")
    assert contents(root) == before
    assert len(recover([root / "a.py", root / "b.py", root / "sub"])) == 1
    assert contents(root) == NEW


def test_fix_paths_recovers_first_and_says_so(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "tree")
    killed_after_first_rename(root)
    notices: list[str] = []
    assert fix_paths([root], write=False, notice=notices.append) == fix_paths([root], write=False)
    assert notices == [] and len(journals(root)) == 1  # a run that writes nothing recovers nothing
    results = fix_paths([root], notice=notices.append)
    assert all(r.status.value == "ok" for r in results)
    assert notices == [f"completed an interrupted migration of 3 files in {root}: a.py, b.py, sub/c.py"]
    assert contents(root) == NEW
