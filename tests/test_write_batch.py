"""files.WriteBatch: fix's writes made durable together still replace each file atomically and checked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import durability_log

from vjp_migrate import api, files
from vjp_migrate.model import FileResult, Status


def test_batch_writes_files_and_refuses_one_changed_meanwhile(tmp_path: Path) -> None:
    kept, changed, gone = tmp_path / "kept.py", tmp_path / "changed.py", tmp_path / "gone.py"
    for path in (kept, changed, gone):
        path.write_bytes(b"old\n")
    os.chmod(kept, 0o640)
    batch = files.WriteBatch()
    try:
        for path in (kept, changed, gone):
            batch.write(path, b"new\n", b"old\n")
        assert kept.read_bytes() == b"old\n"  # nothing is written before finish
        changed.write_bytes(b"edited\n")
        gone.unlink()
        failed = batch.finish()
    finally:
        batch.close()
    assert kept.read_bytes() == b"new\n" and (kept.stat().st_mode & 0o777) == 0o640
    assert changed.read_bytes() == b"edited\n"
    assert set(failed) == {changed, gone}
    reasons = {path: api.failed_result(path, error) for path, error in failed.items()}
    assert reasons[changed].status is Status.FAILED
    assert reasons[changed].reason == "changed on disk while it was being fixed; left untouched"
    assert reasons[gone].reason is not None and reasons[gone].reason.startswith("cannot be read")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["changed.py", "kept.py"]  # no temporaries left


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names a descriptor's file through /proc")
def test_each_file_is_durable_before_its_rename_and_its_folder_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = [tmp_path / "a.py", tmp_path / "b.py"]
    for path in paths:
        path.write_bytes(b"old\n")
    log = durability_log(monkeypatch)
    batch = files.WriteBatch()
    try:
        for path in paths:
            batch.write(path, b"new\n", b"old\n")
        assert batch.finish() == {}
    finally:
        batch.close()
    renames = [(at, name) for at, (call, name) in enumerate(log) if call == "replace"]
    assert len(renames) == len(paths)
    for at, temporary in renames:
        assert log.index(("fsync", temporary)) < at
    assert ("fsync", str(tmp_path.resolve())) in log[renames[-1][0] :]
    assert [path.read_bytes() for path in paths] == [b"new\n", b"new\n"]


def test_fix_paths_in_process_writes_through_the_batch(tmp_path: Path) -> None:
    from conftest import FIXTURES, read_exact

    case = FIXTURES / "call_form"
    for i in range(20):  # more than one batch
        (tmp_path / f"m{i}.py").write_text(read_exact(case / "before.py"), encoding="utf-8", newline="")
    results = api.fix_paths([tmp_path], how=api.Execution(jobs=1))
    assert len(results) == 20 and all(r.written and r.status is Status.OK for r in results)
    after = read_exact(case / "after.py")
    assert all(read_exact(p) == after for p in tmp_path.glob("*.py"))
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(files.TEMPORARY_SUFFIX)]


def _temporaries(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.name.endswith(files.TEMPORARY_SUFFIX)]


def test_an_interrupted_fix_renames_nothing_and_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conftest import FIXTURES, read_exact

    before = read_exact(FIXTURES / "call_form" / "before.py")
    for i in range(6):
        (tmp_path / f"m{i}.py").write_text(before, encoding="utf-8", newline="")
    real = api.fix_file
    done: list[Path] = []

    def interrupted(path: Path, *args: object, **kwargs: object) -> FileResult:
        if len(done) == 4:  # four files decided, none written yet
            raise KeyboardInterrupt
        done.append(path)
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(api, "fix_file", interrupted)
    with pytest.raises(KeyboardInterrupt):
        api.fix_paths([tmp_path], how=api.Execution(jobs=1))
    assert len(done) == 4
    assert all(read_exact(p) == before for p in tmp_path.glob("*.py"))
    assert _temporaries(tmp_path) == []


FEW_DESCRIPTORS = """
import resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
from vjp_migrate import api
results = api.fix_paths([Path(sys.argv[1])], how=api.Execution(jobs=1))
print(sum(r.written for r in results), [r.reason for r in results if r.reason])
"""


def test_a_batch_of_more_files_than_descriptors_is_written(tmp_path: Path) -> None:
    """Temporaries are closed once written: a batch never holds a descriptor per file."""
    import subprocess
    import sys

    from conftest import FIXTURES, read_exact

    case = FIXTURES / "call_form"
    for i in range(150):
        (tmp_path / f"m{i}.py").write_text(read_exact(case / "before.py"), encoding="utf-8", newline="")
    out = subprocess.run(
        [sys.executable, "-c", FEW_DESCRIPTORS, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert out.stdout.split(maxsplit=1) == ["150", "[]\n"]
    after = read_exact(case / "after.py")
    assert all(read_exact(p) == after for p in tmp_path.glob("*.py"))
    assert _temporaries(tmp_path) == []
