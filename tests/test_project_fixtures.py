"""Multi-file golden fixtures: fixtures/<case>/before/ and after/ are package trees checked as a whole.

Each case: the findings of case.json (path, position, fixability, the other files the fix
touches, message text), fix through the CLI and the API equal to after/ byte for byte (before/
when after/ is absent), a fixed point, `check` naming every file the fix will touch, and
before/ vs after/ verified with real JAX (eager, jit with the migrated arguments traced, vmap).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from vjp_migrate.api import Execution, check_paths, fix_paths
from vjp_migrate.cli import main


@dataclass(frozen=True)
class TreeCase:
    name: str
    folder: Path
    spec: dict  # type: ignore[type-arg]

    @property
    def before(self) -> Path:
        return self.folder / "before"

    @property
    def after(self) -> Path:
        return self.folder / "after" if (self.folder / "after").is_dir() else self.before


CASES = [
    TreeCase(p.name, p, json.loads((p / "case.json").read_text(encoding="utf-8")))
    for p in sorted(FIXTURES.iterdir())
    if (p / "before").is_dir()
]
PARAMS = [pytest.param(c, id=c.name) for c in CASES]
REWRITES = [pytest.param(c, id=c.name) for c in CASES if (c.folder / "after").is_dir()]


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def copy(tree: Path, tmp_path: Path) -> Path:
    target = tmp_path / "tree"
    shutil.copytree(tree, target)
    return target


def test_there_are_multi_file_fixtures() -> None:
    assert len(CASES) >= 5
    assert len(REWRITES) >= 3


@pytest.mark.parametrize("case", PARAMS)
def test_findings_match_case_json(case: TreeCase, tmp_path: Path) -> None:
    tree = copy(case.before, tmp_path)
    results = check_paths([tree])
    assert all(r.status.value == "ok" for r in results), [r.reason for r in results]
    found = []
    for d in (d for r in results for d in r.diagnostics):
        row = {
            "path": Path(d.path).relative_to(tree).as_posix(),
            "code": d.code,
            "function": d.function,
            "argument": d.argument,
            "index": d.index,
            "line": d.line,
            "column": d.column,
            "fixable": d.fixable,
            "also_touches": [Path(p).relative_to(tree).as_posix() for p in d.also_touches],
            "message": d.message,
        }
        found.append(row)
    expected = case.spec["findings"]
    assert len(found) == len(expected), found
    for row, want in zip(found, expected, strict=True):
        for key in ("path", "code", "function", "argument", "index", "line", "column", "fixable"):
            assert row[key] == want[key], (key, row)
        assert row["also_touches"] == want.get("also_touches", [])
        wanted = want.get("message_contains", [])
        for text in [wanted] if isinstance(wanted, str) else wanted:
            assert text in row["message"]


@pytest.mark.parametrize("case", PARAMS)
def test_cli_fix_gives_after_byte_for_byte(case: TreeCase, tmp_path: Path) -> None:
    tree = copy(case.before, tmp_path)
    result = CliRunner().invoke(main, ["fix", "--jobs", "1", str(tree)], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    assert files(tree) == files(case.after)  # no journal, no temporaries left either


@pytest.mark.parametrize("case", PARAMS)
def test_api_fix_gives_after_and_is_a_fixed_point(case: TreeCase, tmp_path: Path) -> None:
    tree = copy(case.before, tmp_path)
    results = fix_paths([tree])
    assert all(r.status.value == "ok" for r in results), [r.reason for r in results]
    assert files(tree) == files(case.after)
    changed = {r.path.relative_to(tree).as_posix() for r in results if r.changed}
    assert changed == {k for k, v in files(case.after).items() if files(case.before).get(k) != v}
    assert all(r.written for r in results if r.changed)
    again = fix_paths([tree])
    assert not any(r.changed for r in again)
    assert files(tree) == files(case.after)


@pytest.mark.parametrize("case", REWRITES)
def test_worker_processes_fix_the_tree_alike(case: TreeCase, tmp_path: Path) -> None:
    tree = copy(case.before, tmp_path)
    results = fix_paths([tree], how=Execution(jobs=2))
    assert all(r.status.value == "ok" for r in results), [r.reason for r in results]
    assert files(tree) == files(case.after)  # no journal, no temporaries left either


LOCAL_SITE = """

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def scale(x, w: jax.Array):
    return x * w


def scale_fwd(x, w: jax.Array):
    return x * w, None


def scale_bwd(w: jax.Array, res, g):
    return (g * w,)


scale.defvjp(scale_fwd, scale_bwd)
"""


def test_a_file_phase_1_fixes_and_phase_2_rewrites_again(tmp_path: Path) -> None:
    """ops.py's own site is fixed in phase 1; phase 2 rewrites ops.py again with its imported
    rules, from the same text: both fixes land, in one process or in worker processes."""
    trees = []
    for jobs in (1, 2):
        tree = copy(FIXTURES / "project_sibling_rules" / "before", tmp_path / str(jobs))
        ops = tree / "mypkg" / "ops.py"
        ops.write_text(ops.read_text(encoding="utf-8") + LOCAL_SITE, encoding="utf-8")
        fix_paths([tree], how=Execution(jobs=jobs))
        trees.append(files(tree))
    assert trees[0] == trees[1]
    ops = trees[1]["mypkg/ops.py"].decode("utf-8")
    assert "def scale_bwd(w: jax.Array, g):" in ops and "soft_clip_bwd" in ops
    assert "nondiff_argnums=(1, 2)" not in ops  # phase 2's rewrite of soft_clip is there too
    assert sorted(trees[1]) == sorted(files(FIXTURES / "project_sibling_rules" / "after"))


@pytest.mark.parametrize("case", PARAMS)
def test_dry_run_writes_nothing(case: TreeCase, tmp_path: Path) -> None:
    tree = copy(case.before, tmp_path)
    results = fix_paths([tree], write=False)
    assert files(tree) == files(case.before)
    planned = {r.path.relative_to(tree).as_posix(): r.new_text for r in results if r.changed}
    after = files(case.after)
    assert {k: v.encode("utf-8") for k, v in planned.items() if v is not None} == {
        k: v for k, v in after.items() if files(case.before).get(k) != v
    }


@pytest.mark.parametrize("case", REWRITES)
def test_check_names_every_file_the_fix_touches(case: TreeCase, tmp_path: Path) -> None:
    tree = copy(case.before, tmp_path)
    result = CliRunner().invoke(main, ["check", "--no-cache", str(tree)], catch_exceptions=False)
    assert result.exit_code == 1
    touched = [k for k, v in files(case.after).items() if files(case.before).get(k) != v]
    assert touched
    for name in touched:
        assert str(tree / name) in result.stdout, (name, result.stdout)
    # Another file changed by the same migration is named; a helper's module is read only, and
    # two files may hold migrations of their own (uses of an imported alias).
    assert ("the fix also changes" in result.stdout) == any(f.get("also_touches") for f in case.spec["findings"])
    as_json = CliRunner().invoke(main, ["check", "--no-cache", "--output-format", "json", str(tree)])
    rows = json.loads(as_json.stdout)
    named = {Path(p) for row in rows for p in [row["path"], *row.get("also_touches", [])]}
    assert {tree / name for name in touched} <= named


@pytest.fixture(scope="module")
def verified() -> dict[str, object]:
    from vjp_migrate.verify import VerifyOptions, verify_trees_many

    cases = [case for case in CASES if (case.folder / "after").is_dir()]
    trees = [(case.before, case.after, case.folder / "examples.py") for case in cases]
    return dict(zip([case.name for case in cases], verify_trees_many(trees, VerifyOptions()), strict=True))


@pytest.mark.parametrize("case", REWRITES)
def test_before_and_after_trees_give_the_same_gradients(case: TreeCase, verified: dict[str, object]) -> None:
    from vjp_migrate.verify import VerifyReport, render_report

    report = verified[case.name]
    assert isinstance(report, VerifyReport)
    assert report.exit_code == 0, render_report(report)
    examples: dict[str, object] = {}
    exec((case.folder / "examples.py").read_text(encoding="utf-8"), examples)
    names = set(examples["EXAMPLES"])  # type: ignore[call-overload]
    by_name = {r.name: r for r in report.rows}
    assert names <= set(by_name), (names, sorted(by_name))
    for name in names:
        row = by_name[name]
        assert row.input_source == "examples"
        assert row.verdict.value == "equal", render_report(report)
        assert row.moved, f"{name}: verify saw no migrated argument"
        assert row.jit == "ok", f"{name}: jit with the migrated arguments traced: {row.jit}"
