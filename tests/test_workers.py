"""Worker processes: the same results in the same order as in-process, and a run that survives a
worker dying on one file (a segfault, a SIGKILL, os._exit, MemoryError) with one clear line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES

from vjp_migrate.api import Execution, check_paths, fix_paths
from vjp_migrate.model import FileResult, Status
from vjp_migrate.workers import CRASH_HOOK, CRASHED

SEED = FIXTURES / "seed_clip_gradient"


def _tree(root: Path, copies: int = 12) -> Path:
    """A tree with migratable files, no-ops and plain files, in several folders."""
    for i in range(copies):
        folder = root / f"pkg{i % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(SEED / "before.py", folder / f"seed_{i:02}.py")
        shutil.copy(FIXTURES / "noop_static_int_range" / "before.py", folder / f"noop_{i:02}.py")
        (folder / f"plain_{i:02}.py").write_text(f"x = {i}\n")
    return root


def _summary(results: list[FileResult], root: Path) -> list[tuple[str, str, tuple[tuple[str, int], ...]]]:
    return [
        (str(r.path.relative_to(root)), r.status.value, tuple((d.code, d.line) for d in r.diagnostics)) for r in results
    ]


def test_workers_give_the_in_process_results_in_the_same_order(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    alone = check_paths([root], how=Execution(jobs=1))
    pooled = check_paths([root], how=Execution(jobs=3))
    assert _summary(pooled, root) == _summary(alone, root)
    assert sum(len(r.diagnostics) for r in pooled) == 12 * 2  # lo and hi in every seed copy


def test_fix_with_workers_writes_what_fix_in_process_writes(tmp_path: Path) -> None:
    one, two = _tree(tmp_path / "one"), _tree(tmp_path / "two")
    fix_paths([one], how=Execution(jobs=1))
    results = fix_paths([two], how=Execution(jobs=2))
    assert sum(r.written for r in results) == 12
    for path in sorted(one.rglob("*.py")):
        assert path.read_bytes() == (two / path.relative_to(one)).read_bytes()
    assert (two / "pkg0" / "seed_00.py").read_text() == (SEED / "after.py").read_text()


@pytest.mark.parametrize(
    ("kind", "why"),
    [
        pytest.param("segv", "killed by SIGSEGV", id="segfault"),
        pytest.param("kill", "killed by SIGKILL", id="killed like by the OOM killer"),
        pytest.param("exit", "exited with status 70", id="os._exit"),
        pytest.param("memory", "ran out of memory", id="MemoryError"),
    ],
)
def test_a_worker_dying_on_one_file_fails_that_file_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, why: str
) -> None:
    root = _tree(tmp_path)
    monkeypatch.setenv(CRASH_HOOK, f"{kind}:seed_04.py")
    results = check_paths([root], how=Execution(jobs=2))
    failed = [r for r in results if r.status is Status.FAILED]
    assert [r.path.name for r in failed] == ["seed_04.py"]
    assert why in (failed[0].reason or "")
    if kind != "memory":
        assert CRASHED in (failed[0].reason or "")
    monkeypatch.delenv(CRASH_HOOK)
    expected = _summary(check_paths([root], how=Execution(jobs=1)), root)
    got = _summary(results, root)
    assert [g for g in got if "seed_04" not in g[0]] == [e for e in expected if "seed_04" not in e[0]]


def test_the_crash_hook_never_fires_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path, copies=1)
    monkeypatch.setenv(CRASH_HOOK, "segv:seed_00.py")
    assert all(r.status is Status.OK for r in check_paths([root], how=Execution(jobs=1)))


def test_cli_reports_the_crashed_file_with_one_line_and_goes_on(tmp_path: Path) -> None:
    root = _tree(tmp_path, copies=4)
    env = {**os.environ, CRASH_HOOK: "segv:seed_01.py"}
    done = subprocess.run(
        [sys.executable, "-m", "vjp_migrate", "check", "--jobs", "2", "--no-cache", str(root)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and errors[0].startswith(str(root / "pkg1" / "seed_01.py") + ": error: " + CRASHED)
    assert "Traceback" not in done.stderr
    assert done.stdout.count("VJP001") >= 6  # the three other seed copies were checked
