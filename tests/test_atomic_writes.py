"""Atomic, faithful writes (issue #6, item 1).

A `fix` killed at any moment (SIGKILL, no chance to clean up) leaves every file either
untouched or fully migrated; the temporary files it may leave behind are removed by the next
`fix`. Also: a file changed on disk while it was being fixed is left alone, modes, owners and
symbolic links are kept, and `check` / `fix --diff` write nothing at all.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT
from helpers import durability_log

from vjp_migrate.api import fix_paths, fix_source
from vjp_migrate.files import remove_stray_temporaries, write_atomically
from vjp_migrate.source import SourceError

SEED = (ROOT / "examples" / "clip_gradient.py").read_text(encoding="utf-8")
MIGRATED = fix_source(SEED).source
KILLS = 6


def temporaries(tree: Path) -> list[Path]:
    return sorted(p for p in tree.rglob("*") if p.name.endswith(".vjp-migrate.tmp"))


def snapshot(tree: Path) -> dict[str, bytes]:
    return {p.relative_to(tree).as_posix(): p.read_bytes() for p in sorted(tree.rglob("*")) if p.is_file()}


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    """Every fixture's before.py in a two-level tree, with the bytes fix_source makes of each."""
    tree = tmp_path_factory.mktemp("corpus") / "tree"
    expected = {}
    befores = sorted(FIXTURES.glob("*/before.py"))
    for index, before in enumerate(befores):
        relative = f"{'ab'[index % 2]}/{before.parent.name}.py"
        target = tree / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        data = before.read_bytes()
        target.write_bytes(data)
        expected[relative] = fix_source(data.decode("utf-8")).source.encode("utf-8")
    assert sum(expected[k] != (tree / k).read_bytes() for k in expected) >= 20  # plenty of writes to interrupt
    return tree, expected


def wait_for_first_write(tree: Path, process: subprocess.Popen[bytes]) -> None:
    folders = sorted(p for p in tree.iterdir() if p.is_dir())
    while process.poll() is None and not any(
        entry.name.endswith(".vjp-migrate.tmp") for folder in folders for entry in os.scandir(folder)
    ):
        time.sleep(0.0005)


def start_fix(tree: Path) -> subprocess.Popen[bytes]:
    # A session of its own: the kill takes the whole process group, workers included.
    return subprocess.Popen(
        [sys.executable, "-m", "vjp_migrate", "fix", str(tree)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def test_sigkill_at_random_moments_leaves_files_whole(tmp_path: Path, corpus: tuple[Path, dict[str, bytes]]) -> None:
    source, expected = corpus
    original = snapshot(source)

    timed = tmp_path / "timed"
    shutil.copytree(source, timed)
    started = time.monotonic()
    finished = start_fix(timed)
    _, stderr = finished.communicate(timeout=300)
    duration = time.monotonic() - started
    assert b"Traceback" not in stderr
    assert snapshot(timed) == expected  # an uninterrupted run writes exactly fix_source's output

    rng = random.Random(6)
    moments = sorted(rng.uniform(0.2, 1.0) * duration for _ in range(KILLS))
    # fix decides every file before writing any, so the writes take a short moment at the end.
    # Should no random kill land in it, later attempts watch for the first write and kill then.
    moments += [rng.uniform(0.0, 0.01) for _ in range(KILLS)]
    partial_runs = 0
    for attempt, moment in enumerate(moments):
        if attempt >= KILLS and partial_runs:
            break
        tree = tmp_path / f"killed{attempt}"
        shutil.copytree(source, tree)
        process = start_fix(tree)
        if attempt >= KILLS:
            wait_for_first_write(tree, process)
        time.sleep(moment)
        with contextlib.suppress(ProcessLookupError):  # it may have finished already
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
        after = {k: v for k, v in snapshot(tree).items() if not k.endswith(".vjp-migrate.tmp")}
        assert after.keys() == original.keys()
        for name, data in after.items():
            assert data in (original[name], expected[name]), (
                f"{name} is neither untouched nor migrated (kill at {moment:.2f}s)"
            )
        migrated = sum(after[k] != original[k] for k in after)
        # Interrupted while writing: temporaries left behind, or some files renamed and not others.
        partial_runs += bool(temporaries(tree)) or 0 < migrated < sum(expected[k] != original[k] for k in expected)

        results = fix_paths([tree])  # the next run
        assert not [r for r in results if r.status.value == "failed"]
        assert temporaries(tree) == []
        assert snapshot(tree) == expected
    print(f"full run {duration:.2f}s, kills at {[round(m, 2) for m in moments]}, {partial_runs} in the writes")
    assert partial_runs >= 1, f"no kill landed while files were being written (a full run took {duration:.2f}s)"


def test_next_fix_removes_stray_temporaries_of_dead_runs_only(tmp_path: Path) -> None:
    seed = tmp_path / "seed.py"
    seed.write_text(SEED, encoding="utf-8")
    dead = tmp_path / f".seed.py.{dead_pid()}.k3j5l2m1.vjp-migrate.tmp"
    old_style = tmp_path / ".seed.py.a8d7f6g5.vjp-migrate.tmp"
    alive = tmp_path / f".seed.py.{os.getpid()}.q1w2e3r4.vjp-migrate.tmp"  # a concurrent run's
    unrelated = tmp_path / "notes.vjp-migrate.tmp"
    for path in (dead, old_style, alive, unrelated):
        path.write_bytes(SEED[:50].encode())
    results = fix_paths([tmp_path])
    assert [r.written for r in results] == [True]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([alive.name, unrelated.name, "seed.py"])
    assert remove_stray_temporaries(tmp_path) == []  # the live one is still left alone


def test_check_and_diff_write_nothing(tmp_path: Path) -> None:
    (tmp_path / "seed.py").write_text(SEED, encoding="utf-8")
    stray = tmp_path / f".seed.py.{dead_pid()}.k3j5l2m1.vjp-migrate.tmp"
    stray.write_bytes(b"")
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in tmp_path.iterdir()}
    for command in (["check"], ["fix", "--diff"]):
        done = subprocess.run([sys.executable, "-m", "vjp_migrate", *command, str(tmp_path)], capture_output=True)
        assert done.returncode == 1
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in tmp_path.iterdir()} == before


def test_file_changed_on_disk_while_fixing_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "seed.py"
    path.write_text(SEED + "# edited meanwhile\n", encoding="utf-8")
    with pytest.raises(SourceError, match="changed on disk"):
        write_atomically(path, MIGRATED.encode(), SEED.encode())
    assert path.read_text(encoding="utf-8") == SEED + "# edited meanwhile\n"
    assert [p.name for p in tmp_path.iterdir()] == ["seed.py"]


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names a descriptor's file through /proc")
def test_the_new_bytes_are_durable_before_the_rename_and_the_rename_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "seed.py"
    path.write_text(SEED, encoding="utf-8")
    log = durability_log(monkeypatch)
    write_atomically(path, MIGRATED.encode(), SEED.encode())
    (temporary,) = [name for call, name in log if call == "replace"]
    assert log == [("fsync", temporary), ("replace", temporary), ("fsync", str(tmp_path.resolve()))]
    assert path.read_text(encoding="utf-8") == MIGRATED


def test_named_symlink_is_written_through(tmp_path: Path) -> None:
    target = tmp_path / "real.py"
    target.write_text(SEED, encoding="utf-8")
    link = tmp_path / "link.py"
    link.symlink_to(target.name)
    (result,) = fix_paths([link])
    assert result.written
    assert link.is_symlink() and os.readlink(link) == "real.py"
    assert target.read_text(encoding="utf-8") == MIGRATED


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another owner")
def test_owner_and_mode_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "seed.py"
    path.write_text(SEED, encoding="utf-8")
    os.chown(path, 4321, 4322)
    path.chmod(0o640)
    (result,) = fix_paths([path])
    assert result.written
    status = path.stat()
    assert (status.st_uid, status.st_gid, status.st_mode & 0o7777) == (4321, 4322, 0o640)


def tagged(path: Path, tags: dict[str, bytes]) -> None:
    """Give ``path`` user extended attributes; skip when the platform or file system has none."""
    if not hasattr(os, "setxattr"):
        pytest.skip("no extended attributes on this platform")
    for name, value in tags.items():
        try:
            os.setxattr(path, name, value)
        except OSError as error:
            if error.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
                pytest.skip(f"the file system of {path.parent} has no user extended attributes")
            raise


def attributes(path: Path) -> dict[str, bytes]:
    return {name: os.getxattr(path, name) for name in os.listxattr(path) if name.startswith("user.")}


def test_extended_attributes_are_kept(tmp_path: Path) -> None:
    """cli29 24: the temporary renamed over the file lost its user.* attributes (and ACLs, labels)."""
    path = tmp_path / "seed.py"
    path.write_text(SEED, encoding="utf-8")
    tags = {"user.owner-team": b"ml-infra", "user.empty": b""}
    tagged(path, tags)
    (result,) = fix_paths([path])
    assert result.written and path.read_text(encoding="utf-8") == MIGRATED
    assert attributes(path) == tags


def test_the_files_of_a_multi_file_migration_keep_their_extended_attributes(tmp_path: Path) -> None:
    from vjp_migrate.transaction import FileChange, write_together

    first, second = tmp_path / "a.py", tmp_path / "b.py"
    first.write_bytes(b"a = 1\n")
    second.write_bytes(b"b = 1\n")
    tagged(first, {"user.a": b"1"})
    tagged(second, {"user.b": b"2"})
    write_together([FileChange(first, b"a = 1\n", b"a = 2\n"), FileChange(second, b"b = 1\n", b"b = 2\n")])
    assert (first.read_bytes(), second.read_bytes()) == (b"a = 2\n", b"b = 2\n")
    assert (attributes(first), attributes(second)) == ({"user.a": b"1"}, {"user.b": b"2"})


def test_an_attribute_that_cannot_be_copied_does_not_stop_the_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As security.* without the privilege: that one is left behind, the others and the write are not."""
    path = tmp_path / "seed.py"
    path.write_text(SEED, encoding="utf-8")
    tagged(path, {"user.kept": b"yes", "user.refused": b"no"})
    real = os.setxattr

    def setxattr(target: str, name: str, value: bytes, *args: int, **kwargs: bool) -> None:
        if name == "user.refused":
            raise PermissionError(errno.EPERM, "Operation not permitted", target)
        real(target, name, value, *args, **kwargs)

    monkeypatch.setattr(os, "setxattr", setxattr)
    (result,) = fix_paths([path])
    assert result.written and path.read_text(encoding="utf-8") == MIGRATED
    assert attributes(path) == {"user.kept": b"yes"}
