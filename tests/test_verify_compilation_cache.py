"""The verify worker's compiled programs: kept in a private folder for the run only (JAX's
persistent compilation cache, so AFTER reads back what BEFORE compiled), or in the user's own
cache folder when they chose one (real worker processes)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from vjp_migrate.verify import Verdict, VerifyOptions, verify_files
from vjp_migrate.verify.runner import CACHE_DIR_VARIABLE, compilation_cache

SEED = Path(__file__).parent / "data" / "verify" / "seed"
# Appended to both versions: at the worker's exit, after every program has been compiled, note
# the cache folder the worker was given, what it holds, and the threshold JAX was told.
PROBE = """
import atexit as _atexit, json as _json, os as _os

def _note_cache():
    folder = _os.environ.get("JAX_COMPILATION_CACHE_DIR")
    entries = sorted(_os.listdir(folder)) if folder and _os.path.isdir(folder) else None
    seconds = _os.environ.get("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS")
    with open(_os.environ["VJP_TEST_CACHE_NOTE"], "a") as out:
        out.write(_json.dumps({"folder": folder, "entries": entries, "seconds": seconds}) + "\\n")

_atexit.register(_note_cache)
"""


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    paths = []
    for side in ("before", "after"):
        path = tmp_path / "pair" / side / "ops.py"
        path.parent.mkdir(parents=True)
        path.write_text((SEED / f"{side}.py").read_text() + PROBE)
        paths.append(path)
    return paths[0], paths[1]


def _notes(note: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in note.read_text().splitlines()]


def test_a_run_compiles_into_a_private_folder_it_removes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before, after = _pair(tmp_path)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.delenv(CACHE_DIR_VARIABLE, raising=False)
    monkeypatch.setenv("VJP_TEST_CACHE_NOTE", str(tmp_path / "note.jsonl"))
    report = verify_files(before, after, VerifyOptions())
    assert report.exit_code == 0 and [r.verdict for r in report.rows] == [Verdict.EQUAL]
    (note,) = set(map(json.dumps, _notes(tmp_path / "note.jsonl")))  # both modules saw the one folder
    seen = json.loads(note)
    folder = Path(str(seen["folder"]))
    assert folder.parent == scratch and folder.name.startswith("vjp-migrate-xla-")
    assert seen["entries"], "the worker compiled programs but none reached the cache"
    assert seen["seconds"] == "0"  # every program, not only those that took a second
    assert not folder.exists() and list(scratch.iterdir()) == []


def test_the_users_own_cache_folder_and_settings_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before, after = _pair(tmp_path)
    mine = tmp_path / "my-cache"
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(mine))
    monkeypatch.delenv("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", raising=False)
    monkeypatch.setenv("VJP_TEST_CACHE_NOTE", str(tmp_path / "note.jsonl"))
    report = verify_files(before, after, VerifyOptions())
    assert report.exit_code == 0
    assert {(n["folder"], n["seconds"]) for n in _notes(tmp_path / "note.jsonl")} == {(str(mine), None)}
    assert mine.is_dir()  # theirs to keep


def test_no_temporary_folder_means_no_cache_and_no_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> str:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    with compilation_cache({"PATH": "/bin"}) as env:
        assert env == {"PATH": "/bin"}
