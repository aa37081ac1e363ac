"""Phase 2 in worker processes (project.py): a file whose only business with the run's other
files is the helpers it imports from them is analysed again on its own, in a worker; files that
share rules are analysed together in the parent. Same results as one process, and a worker
dying on a file costs that file one line."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from helpers import write
from test_project import PRIMAL, RULES
from test_project_helpers import DEEPER, HELPERS, SITE

from vjp_migrate import api, project, workers
from vjp_migrate.cache import _dump, _load
from vjp_migrate.codes import BY_CODE
from vjp_migrate.cross_uses import OtherFiles
from vjp_migrate.model import FileResult, Settings
from vjp_migrate.workers import CRASH_HOOK, CRASHED

ALL = Settings(frozenset(BY_CODE))
ARRAY_HELPER = ("soft_cap", "via_third_module")  # the argument is array data in these helpers
FILES = {
    "pkg/__init__.py": "",
    "pkg/_helpers.py": HELPERS,
    "pkg/deeper.py": DEEPER,
    "pkg/rules.py": RULES,
    "pkg/scaled.py": PRIMAL.format(spelling=".rules"),  # shares rules: phase 2 in the parent
    **{
        f"pkg/ops{i}.py": SITE.format(spelling=f"from ._helpers import {helper}", call=helper)
        for i, helper in enumerate(["soft_cap", "chunked", "via_third_module", "counted", "soft_cap"])
    },
}


def _summary(results: list[FileResult], root: Path) -> list[tuple[str, str, str | None, tuple[object, ...]]]:
    return [
        (
            r.path.relative_to(root).as_posix(),
            r.status.value,
            r.reason,
            tuple(dataclasses.astuple(d) for d in r.diagnostics),
        )
        for r in results
    ]


def _spied(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The files each call of project._alone_in_workers hands to the workers."""
    calls: list[list[str]] = []
    real = project._alone_in_workers

    def spy(p: project.Project, paths: list[Path], *args: object) -> dict[Path, FileResult]:
        calls.append(sorted(path.name for path in paths))
        return real(p, paths, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(project, "_alone_in_workers", spy)
    return calls


def test_workers_give_phase_two_the_in_process_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write(tmp_path / "t", FILES)
    calls = _spied(monkeypatch)
    alone = api.check_paths([root], settings=ALL, how=api.Execution(jobs=1))
    assert calls == []  # one process: phase 2 as it always ran
    pooled = api.check_paths([root], settings=ALL, how=api.Execution(jobs=2))
    assert calls == [[f"ops{i}.py" for i in range(5)]]
    assert _summary(pooled, root) == _summary(alone, root)
    codes = {r.path.name: codes for r in pooled if (codes := [d.code for d in r.diagnostics if d.argument == "cap"])}
    # Phase 2 ran for them: checked alone, each of these is a VJP002 ("passed to ..., not analysed").
    assert codes == {"ops0.py": ["VJP001"], "ops2.py": ["VJP001"], "ops4.py": ["VJP001"]}
    (scaled,) = (r for r in pooled if r.path.name == "scaled.py")
    assert [d.code for d in scaled.diagnostics] == ["VJP001"] and scaled.diagnostics[0].fixable


def test_spawned_workers_index_the_run_themselves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where fork is unsafe (threads, macOS, Windows) the workers are spawned: they start from
    nothing, not from the parent's project, and build the run's module index from the task."""
    root = write(tmp_path / "t", FILES)
    alone = api.check_paths([root], settings=ALL, how=api.Execution(jobs=1))
    monkeypatch.setattr(workers, "_single_threaded_linux", lambda: False)
    calls = _spied(monkeypatch)
    spawned = api.check_paths([root], settings=ALL, how=api.Execution(jobs=2))
    assert calls == [[f"ops{i}.py" for i in range(5)]]
    assert _summary(spawned, root) == _summary(alone, root)


def test_fix_with_phase_two_in_workers_writes_what_one_process_writes(tmp_path: Path) -> None:
    one, two = write(tmp_path / "one", FILES), write(tmp_path / "two", FILES)
    api.fix_paths([one], settings=ALL, how=api.Execution(jobs=1))
    written = {r.path.name for r in api.fix_paths([two], settings=ALL, how=api.Execution(jobs=2)) if r.written}
    assert written == {"ops0.py", "ops2.py", "ops4.py", "scaled.py", "rules.py"}
    for path in sorted(one.rglob("*.py")):
        assert path.read_bytes() == (two / path.relative_to(one)).read_bytes(), path.name
    fixed = (two / "pkg" / "ops0.py").read_text()
    assert "@jax.custom_vjp\ndef capped(x, cap):" in fixed and "def capped_bwd(x, g):\n    return (g, None)" in fixed


def test_a_phase_two_worker_dying_on_a_file_fails_that_file_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write(tmp_path / "t", FILES)
    expected = _summary(api.check_paths([root], settings=ALL, how=api.Execution(jobs=1)), root)
    monkeypatch.setenv(CRASH_HOOK, "segv:ops2.py:2")  # phase 2's workers only
    got = _summary(api.check_paths([root], settings=ALL, how=api.Execution(jobs=2)), root)
    (crashed,) = (g for g in got if g[0] == "pkg/ops2.py")
    assert crashed[1:3] == ("failed", f"{CRASHED} (its worker process was killed by SIGSEGV); skipped")
    assert [g for g in got if g is not crashed] == [e for e in expected if e[0] != "pkg/ops2.py"]


def test_a_file_that_turns_out_to_share_rules_sends_phase_two_back_to_the_parent(tmp_path: Path) -> None:
    """Phase 1 says which files import rules; should a file said to follow only helpers import
    rules from the run after all, the workers' answers are dropped and all are analysed together
    (the fix of scaled.py changes rules.py too: one migration, written together)."""
    root = write(tmp_path / "t", FILES)
    files = sorted(root.rglob("*.py"))
    phase1 = [api.fix_file(path, ALL, write=False, explicit=False) for path in files]
    (scaled,) = (r for r in phase1 if r.path.name == "scaled.py")
    assert scaled.imported_rules == ("pkg.rules",) and scaled.imported_helpers == ()
    hidden = [
        dataclasses.replace(r, imported_rules=(), imported_helpers=r.imported_rules) if r is scaled else r
        for r in phase1
    ]
    together = project.complete(phase1, OtherFiles(files, [root]), set(), ALL, fix=True, jobs=1)
    pooled = project.complete(hidden, OtherFiles(files, [root]), set(), ALL, fix=True, jobs=2)
    groups = [[c.path.name for c in group] for group in pooled.groups]
    assert ["rules.py", "scaled.py"] in groups  # from a worker, scaled.py would be changed alone
    assert groups == [[c.path.name for c in group] for group in together.groups]
    assert _summary(pooled.results, root) == _summary(together.results, root)
    assert [r.new_text for r in pooled.results] == [r.new_text for r in together.results]


def test_phase_one_tells_rules_from_helpers_and_the_cache_keeps_both(tmp_path: Path) -> None:
    root = write(tmp_path / "t", FILES)
    ops = api.check_file(root / "pkg" / "ops0.py", ALL)
    assert (ops.imported_rules, ops.imported_helpers) == ((), ("pkg._helpers",))
    scaled = api.check_file(root / "pkg" / "scaled.py", ALL)
    assert (scaled.imported_rules, scaled.imported_helpers) == (("pkg.rules",), ())
    for result in (ops, scaled):
        assert _load(result.path, json.loads(json.dumps(_dump(result)))) == result
    cold = api.check_paths([root], settings=ALL, how=api.Execution(jobs=2, cache_dir=tmp_path / "cache"))
    warm = api.check_paths([root], settings=ALL, how=api.Execution(jobs=2, cache_dir=tmp_path / "cache"))
    assert _summary(warm, root) == _summary(cold, root)
    assert [d.code for r in warm if r.path.name == "ops0.py" for d in r.diagnostics] == ["VJP001"]
    shutil.rmtree(tmp_path / "cache")
