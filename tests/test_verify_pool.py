"""The verify worker pool: the jobs of one run share a few worker processes, each job has its own
timeout, and a job that hangs or takes its worker down stops only itself (real worker processes)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from vjp_migrate.cli import main
from vjp_migrate.verify import Verdict, VerifyOptions, VerifyReport, render_report, verify_many

DATA = Path(__file__).parent / "data" / "verify"
SEED = DATA / "seed"
# Appended to a module: each import of it notes the process that imported it.
PID_PROBE = """
import os as _os

with open(_os.environ["VJP_TEST_PID_NOTE"], "a") as _out:
    _out.write(f"{_os.getpid()}\\n")
"""


def _pair(folder: Path, extra: str = "", after: Path = SEED / "after.py") -> tuple[Path, Path]:
    folder.mkdir(parents=True)
    paths = (folder / "before.py", folder / "after.py")
    for path, source in zip(paths, (SEED / "before.py", after), strict=True):
        path.write_text(source.read_text(encoding="utf-8") + extra, encoding="utf-8")
    return paths


def _proven(report: VerifyReport) -> bool:
    return report.exit_code == 0 and [r.verdict for r in report.rows] == [Verdict.EQUAL]


def _pids(note: Path) -> list[int]:
    return [int(line) for line in note.read_text().split()]


def test_jobs_share_the_workers_and_keep_their_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VJP_TEST_PID_NOTE", str(tmp_path / "pids"))
    pairs = [_pair(tmp_path / f"pair{i}", PID_PROBE) for i in range(5)]
    reports = verify_many(pairs, VerifyOptions(), workers=2)
    assert [r.before for r in reports] == [str(before) for before, _ in pairs]
    assert all(_proven(r) for r in reports), [render_report(r) for r in reports]
    pids = _pids(tmp_path / "pids")
    assert len(pids) >= 10  # every module imported (AFTER once more, for the traced checks)
    assert 1 <= len(set(pids)) <= 2 and os.getpid() not in pids


def test_a_worker_that_dies_fails_its_job_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VJP_MIGRATE_TEST_EXIT", "os")
    pairs = [_pair(tmp_path / "first"), _pair(tmp_path / "dies", after=DATA / "broken" / "exits.py")]
    pairs.append(_pair(tmp_path / "last"))
    first, dies, last = verify_many(pairs, VerifyOptions(), workers=1)
    assert _proven(first) and _proven(last), render_report(last)
    (error,) = dies.errors
    assert error.startswith("the worker crashed (exit 7) while running clip_gradient, example #0 on cpu: AFTER (")
    assert dies.exit_code == 2


def test_a_worker_that_exits_quietly_is_not_taken_for_an_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VJP_MIGRATE_TEST_EXIT", "os0")
    (report,) = verify_many([(SEED / "before.py", DATA / "broken" / "exits.py")], VerifyOptions())
    (error,) = report.errors
    assert error.startswith(
        "the worker ended without answering while running clip_gradient, example #0 on cpu: AFTER ("
    )


def test_each_job_has_its_own_timeout(tmp_path: Path) -> None:
    slow = tmp_path / "slow.py"
    slow.write_text("import time\n\ntime.sleep(600)\n", encoding="utf-8")
    hangs, after = verify_many([(slow, slow), _pair(tmp_path / "after")], VerifyOptions(timeout=10), workers=1)
    (error,) = hangs.errors
    assert error.startswith(f"timed out after 10s while running the import of BEFORE ({slow} -> {slow})")
    assert _proven(after), render_report(after)  # in a new worker, with ten seconds of its own


def test_user_code_that_reads_stdin_does_not_take_the_next_job(tmp_path: Path) -> None:
    reads = "\nimport sys as _sys\n\nassert _sys.stdin.read() == ''\n"
    pairs = [_pair(tmp_path / "reads", reads), _pair(tmp_path / "next")]
    reports = verify_many(pairs, VerifyOptions(timeout=60), workers=1)
    assert all(_proven(r) for r in reports), [render_report(r) for r in reports]


def test_fix_verify_proves_the_files_of_a_run_in_a_few_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VJP_TEST_PID_NOTE", str(tmp_path / "pids"))
    before = (FIXTURES / "seed_clip_gradient" / "before.py").read_text(encoding="utf-8")
    after = (FIXTURES / "seed_clip_gradient" / "after.py").read_text(encoding="utf-8")
    paths = [tmp_path / "src" / f"ops{i}.py" for i in range(3)]
    paths[0].parent.mkdir()
    for path in paths:
        path.write_text(before + PID_PROBE, encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", "--verify", "--jobs", "2", str(tmp_path / "src")])
    assert result.exit_code == 0, result.output
    assert all(path.read_text(encoding="utf-8") == after + PID_PROBE for path in paths)
    assert "Verified before writing (JAX " in result.output and "3 custom_vjp functions" in result.output
    pids = _pids(tmp_path / "pids")
    assert len(pids) >= 6 and 1 <= len(set(pids)) <= 2  # one worker per file before


def test_fix_verify_proves_multi_file_migrations_in_the_same_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VJP_TEST_PID_NOTE", str(tmp_path / "pids"))
    trees = [tmp_path / name for name in ("one", "two")]
    for tree in trees:
        shutil.copytree(FIXTURES / "project_sibling_rules" / "before", tree)
        ops = tree / "mypkg" / "ops.py"
        ops.write_text(ops.read_text(encoding="utf-8") + PID_PROBE, encoding="utf-8")
    seed = tmp_path / "seed.py"
    seed.write_text((FIXTURES / "seed_clip_gradient" / "before.py").read_text(encoding="utf-8") + PID_PROBE)
    result = CliRunner().invoke(main, ["fix", "--verify", "--jobs", "1", *map(str, trees), str(seed)])
    assert result.exit_code == 0, result.output
    for tree in trees:
        migrated = (FIXTURES / "project_sibling_rules" / "after" / "mypkg" / "ops.py").read_text(encoding="utf-8")
        assert (tree / "mypkg" / "ops.py").read_text(encoding="utf-8") == migrated + PID_PROBE
    pids = _pids(tmp_path / "pids")
    assert len(pids) >= 2 * 2 + 2 and len(set(pids)) == 1  # two trees and a file, one worker for all
