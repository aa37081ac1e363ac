"""The check cache: hits for unchanged files, misses for any change, never an error, never pickle."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES

from vjp_migrate import api
from vjp_migrate.cache import Cache, _dump, _load
from vjp_migrate.codes import DEFAULT_SELECT
from vjp_migrate.model import Settings, Status

SEED = FIXTURES / "seed_clip_gradient" / "before.py"


def _no_analysis(*args: object, **kwargs: object) -> object:
    raise AssertionError("analysed although the cache had the answer")


def _entries(cache: Path) -> list[Path]:
    return [p for p in cache.rglob("*") if p.is_file() and p.parent.parent.parent == cache]


def test_second_run_is_answered_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src, cache = tmp_path / "src", tmp_path / "cache"
    src.mkdir()
    shutil.copy(SEED, src / "seed.py")
    how = api.Execution(jobs=1, cache_dir=cache)
    first = api.check_paths([src], how=how)
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (cache / ".gitignore").read_text().splitlines()[-1] == "*"
    monkeypatch.setattr(api, "_analyze", _no_analysis)
    second = api.check_paths([src], how=how)
    assert second == first and len(second[0].diagnostics) == 2


@pytest.mark.parametrize(
    "change",
    [
        pytest.param("content", id="the file changed"),
        pytest.param("settings", id="other codes selected"),
        pytest.param("explicit", id="named on the command line instead of found"),
    ],
)
def test_any_change_of_the_key_is_a_miss(tmp_path: Path, change: str) -> None:
    settings = Settings(DEFAULT_SELECT)
    data = SEED.read_bytes()
    cache = Cache.open(tmp_path, settings)
    path = tmp_path / "seed.py"
    result = api.FileResult(path, Status.OK)
    cache.put(path, data, False, result)
    assert cache.get(path, data, False) == result
    if change == "content":
        assert cache.get(path, data + b"\n", False) is None
    elif change == "settings":
        assert Cache.open(tmp_path, Settings(DEFAULT_SELECT | {"VJP002"})).get(path, data, False) is None
    else:
        assert cache.get(path, data, True) is None


def test_relative_imports_outside_a_package_key_on_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `from .rules import ...` in a folder without __init__.py resolves from the current folder.
    cache = Cache.open(tmp_path / "cache", Settings(DEFAULT_SELECT))
    (tmp_path / "ns").mkdir()
    path = tmp_path / "ns" / "ops.py"
    relative, absolute = b"from .rules import bwd\n", b"from rules import bwd\n"
    result = api.FileResult(path, Status.OK)
    monkeypatch.chdir(tmp_path)
    cache.put(path, relative, True, result)
    cache.put(path, absolute, True, result)
    monkeypatch.chdir(tmp_path / "ns")
    assert cache.get(path, relative, True) is None
    assert cache.get(path, absolute, True) == result
    (tmp_path / "ns" / "__init__.py").write_text("")
    cache.put(path, relative, True, result)
    monkeypatch.chdir(tmp_path)
    assert cache.get(path, relative, True) == result  # a package: its place alone decides


def test_diagnostics_survive_the_round_trip() -> None:
    (result,) = api.check_paths([SEED])
    assert result.diagnostics and all(d.reasons for d in result.diagnostics)
    assert _load(SEED, json.loads(json.dumps(_dump(result)))) == result
    # a finding's notes too (a public alias of the partial the fix keeps unused)
    noted = dataclasses.replace(result, diagnostics=(dataclasses.replace(result.diagnostics[0], notes=("kept",)),))
    assert _load(SEED, json.loads(json.dumps(_dump(noted)))) == noted


def test_a_corrupt_or_unwritable_cache_is_only_a_miss(tmp_path: Path) -> None:
    settings = Settings(DEFAULT_SELECT)
    cache = Cache.open(tmp_path / "cache", settings)
    path, data = tmp_path / "seed.py", SEED.read_bytes()
    (result,) = api.check_paths([SEED])
    cache.put(path, data, True, result)
    key = cache.key(path, data, True)
    for damaged in ("{not json", "[" * 100_000 + "]" * 100_000, "[1, 2]", '{"diagnostics": 3}'):
        (cache.folder / key[:2] / key).write_text(damaged)  # the second: RecursionError (cli28 09)
        assert cache.get(path, data, True) is None, damaged
    (tmp_path / "file").write_text("")
    blocked = Cache.open(tmp_path / "file", settings)  # a file where the folder should be
    blocked.put(path, data, True, result)
    assert blocked.get(path, data, True) is None


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vjp_migrate", "check", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=120,
    )


def test_cli_cache_folder_like_ruff(tmp_path: Path) -> None:
    shutil.copy(SEED, tmp_path / "seed.py")
    assert _cli(tmp_path, "--no-cache", "seed.py").returncode == 1
    assert not (tmp_path / ".vjp_migrate_cache").exists()
    first = _cli(tmp_path, "seed.py")
    assert (tmp_path / ".vjp_migrate_cache" / "CACHEDIR.TAG").is_file()
    again = _cli(tmp_path, "seed.py")
    assert (first.returncode, first.stdout) == (again.returncode, again.stdout) == (1, first.stdout)
    assert _cli(tmp_path, "--cache-dir", "elsewhere", "seed.py").returncode == 1
    assert (tmp_path / "elsewhere" / ".gitignore").is_file()


def test_every_spelling_of_a_file_shares_one_entry_and_keeps_its_own_label(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pkg/ops.py` from the root, `./mypkg/ops.py`, `ops.py` from inside the package: one entry.
    The module name (here in the message: the rules' module, resolved from a relative import)
    does not depend on the spelling, so a hit is what the analysis would say for this run."""
    root, cache = tmp_path / "root", tmp_path / "cache"
    shutil.copytree(FIXTURES / "project_sibling_rules" / "before", root)
    how = api.Execution(jobs=1, cache_dir=cache)
    monkeypatch.chdir(root)
    (first,) = api.check_paths([Path("mypkg/ops.py")], how=how)
    assert len(_entries(cache)) == 1
    assert first.diagnostics and all("`mypkg._impl_fwd`" in d.message for d in first.diagnostics)
    monkeypatch.setattr(api, "_analyze", _no_analysis)
    runs = [(root, Path("./mypkg/ops.py")), (root / "mypkg", Path("ops.py")), (root, root / "mypkg" / "ops.py")]
    for cwd, spelling in runs:
        monkeypatch.chdir(cwd)
        (hit,) = api.check_paths([spelling], how=how)
        assert hit.path == spelling
        assert [d.path for d in hit.diagnostics] == [str(spelling)] * len(first.diagnostics)
        relabelled = [dataclasses.replace(d, path=first.diagnostics[0].path) for d in hit.diagnostics]
        assert relabelled == list(first.diagnostics)
    assert len(_entries(cache)) == 1


def test_cli_output_of_a_hit_names_the_file_as_this_run_spells_it(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    shutil.copy(SEED, tmp_path / "pkg" / "seed.py")
    cache = tmp_path / ".vjp_migrate_cache"
    first = _cli(tmp_path, "pkg/seed.py")
    inside = subprocess.run(
        [sys.executable, "-m", "vjp_migrate", "check", "--cache-dir", str(cache), "seed.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path / "pkg",
        env={**os.environ, "NO_COLOR": "1"},
        timeout=120,
    )
    absolute = _cli(tmp_path, str(tmp_path / "pkg" / "seed.py"))
    assert len(_entries(cache)) == 1
    lines = [run.stdout.splitlines()[:-1] for run in (first, inside, absolute)]
    assert lines[0] and all(line.startswith("pkg/seed.py:") for line in lines[0])
    assert lines[1] == [line.removeprefix("pkg/") for line in lines[0]]
    assert lines[2] == [f"{tmp_path}/{line}" for line in lines[0]]


def test_a_result_that_quotes_its_path_is_not_stored(tmp_path: Path) -> None:
    settings = Settings(DEFAULT_SELECT)
    cache = Cache.open(tmp_path / "cache", settings)
    (result,) = api.check_paths([SEED])
    path = Path("pkg/seed.py")
    quoting = dataclasses.replace(result.diagnostics[0], message=f"imported from `pkg.rules` ({path}), which ...")
    cache.put(path, SEED.read_bytes(), True, dataclasses.replace(result, diagnostics=(quoting,)))
    assert cache.get(path, SEED.read_bytes(), True) is None
    cache.put(path, SEED.read_bytes(), True, result)
    assert cache.get(path, SEED.read_bytes(), True) is not None
