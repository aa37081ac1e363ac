"""`vjp-migrate verify BEFORE_DIR AFTER_DIR`: a project before and after a multi-file migration,
checked with real JAX. The custom_vjp sits in `pkg/ops.py`, its fwd and bwd in `pkg/rules.py`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from vjp_migrate.cli import main
from vjp_migrate.verify import VerifyOptions, verify_trees
from vjp_migrate.verify.tree_job import _per_module
from vjp_migrate.verify.trees import imported, plan_tree

OPS_BEFORE = """\
from functools import partial

import jax
import jax.numpy as jnp

from .rules import clip_bwd, clip_fwd


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def clip(lo, hi, x):
    return jnp.clip(x, lo, hi)


clip.defvjp(clip_fwd, clip_bwd)
"""

RULES_BEFORE = """\
import jax.numpy as jnp

from pkg.util import mask


def clip_fwd(lo, hi, x):
    return jnp.clip(x, lo, hi), (x,)


def clip_bwd(lo, hi, res, g):
    (x,) = res
    return (mask(x, lo, hi) * g,)
"""

OPS_AFTER = """\
import jax
import jax.numpy as jnp

from .rules import clip_bwd, clip_fwd


@jax.custom_vjp
def clip(lo, hi, x):
    return jnp.clip(x, lo, hi)


clip.defvjp(clip_fwd, clip_bwd)
"""

RULES_AFTER = """\
import jax.numpy as jnp

from pkg.util import mask


def clip_fwd(lo, hi, x):
    return jnp.clip(x, lo, hi), (x, lo, hi)


def clip_bwd(res, g):
    x, lo, hi = res
    return (None, None, mask(x, lo, hi) * g)
"""

UTIL = """\
import jax.numpy as jnp


def mask(x, lo, hi):
    return jnp.where((x >= lo) & (x <= hi), 1.0, 0.0)
"""

EXAMPLES = """\
import numpy as np

EXAMPLES = {"pkg.ops:clip": [(-0.5, 0.5, np.array([0.1, -0.9, 0.3], dtype=np.float32))]}
"""


def project(root: Path, ops: str, rules: str, util: str = UTIL) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "ops.py").write_text(ops)
    (root / "pkg" / "rules.py").write_text(rules)
    (root / "pkg" / "util.py").write_text(util)
    return root


@pytest.fixture
def before(tmp_path: Path) -> Path:
    return project(tmp_path / "before", OPS_BEFORE, RULES_BEFORE)


def verify_cli(*args: Path) -> tuple[int, dict]:  # type: ignore[type-arg]
    done = CliRunner().invoke(main, ["verify", *map(str, args), "--output-format", "json"])
    return done.exit_code, json.loads(done.output)


def verdicts(report: dict) -> dict[str, str]:  # type: ignore[type-arg]
    return {f["name"]: f["verdict"] for f in report["functions"]}


def test_correct_multi_file_migration_verifies(tmp_path: Path, before: Path) -> None:
    after = project(tmp_path / "after", OPS_AFTER, RULES_AFTER)
    (tmp_path / "examples.py").write_text(EXAMPLES.replace('"pkg.ops:clip"', '"clip"'))  # plain: one clip
    code, report = verify_cli(before, after, Path("--examples"), tmp_path / "examples.py")
    assert code == 0, report
    assert verdicts(report) == {"pkg.ops:clip": "equal"}
    (row,) = report["functions"]
    assert row["input_source"] == "examples" and row["jit"] == "ok" and row["moved"] == ["lo", "hi"]


def test_sign_flipped_in_the_sibling_bwd_fails_naming_the_function(tmp_path: Path, before: Path) -> None:
    flipped = RULES_AFTER.replace("(None, None, mask(x, lo, hi) * g)", "(None, None, -mask(x, lo, hi) * g)")
    after = project(tmp_path / "after", OPS_AFTER, flipped)
    (tmp_path / "examples.py").write_text(EXAMPLES)
    code, report = verify_cli(before, after, Path("--examples"), tmp_path / "examples.py")
    assert code == 1, report
    assert verdicts(report) == {"pkg.ops:clip": "mismatch"}
    (row,) = report["functions"]
    assert "argument x (position 2)" in row["message"]


def test_change_two_imports_away_is_verified(tmp_path: Path) -> None:
    """ops.py and rules.py are identical on both sides; only util.py (imported by rules) differs."""
    before = project(tmp_path / "before", OPS_AFTER, RULES_AFTER)
    after = project(tmp_path / "after", OPS_AFTER, RULES_AFTER, UTIL.replace("1.0, 0.0", "2.0, 0.0"))
    (tmp_path / "examples.py").write_text(EXAMPLES)
    report = verify_trees(before, after, VerifyOptions(), examples=tmp_path / "examples.py")
    assert report.exit_code == 1
    assert [(r.name, r.verdict.value) for r in report.rows] == [("pkg.ops:clip", "mismatch")]


def test_folders_that_are_the_package_itself(tmp_path: Path, before: Path) -> None:
    after = project(tmp_path / "after", OPS_AFTER, RULES_AFTER)
    report = verify_trees(before / "pkg", after / "pkg", VerifyOptions())
    assert report.errors == ()
    assert [(r.name, r.verdict.value) for r in report.rows] == [("pkg.ops:clip", "equal")]


def test_identical_folders_have_nothing_to_verify(before: Path) -> None:
    report = verify_trees(before, before, VerifyOptions())
    assert report.exit_code == 0 and report.rows == ()
    assert report.warnings == ("the two folders hold the same .py files",)


def test_a_file_and_a_folder_is_a_usage_error(before: Path) -> None:
    done = CliRunner().invoke(main, ["verify", str(before), str(before / "pkg" / "ops.py")])
    assert done.exit_code == 2
    assert "both be files or both be folders" in done.output


def test_plan_verifies_changed_files_and_their_importers_only(tmp_path: Path, before: Path) -> None:
    after = project(tmp_path / "after", OPS_BEFORE, RULES_BEFORE)
    (before / "pkg" / "other.py").write_text("import jax\nf = jax.custom_vjp(lambda x: x)\n")
    (after / "pkg" / "other.py").write_text("import jax\nf = jax.custom_vjp(lambda x: x)\n")
    (after / "pkg" / "new.py").write_text("import jax\ng = jax.custom_vjp(lambda x: x)\n")
    (after / "pkg" / "rules.py").write_text(RULES_BEFORE + "\n")
    plan = plan_tree(before, after)
    assert plan.changed == ("pkg/new.py", "pkg/rules.py")
    assert [m.name for m in plan.modules] == ["pkg.ops"]  # rules.py has no custom_vjp; other.py is untouched
    assert plan.warnings == ("pkg/new.py: only in AFTER; its custom_vjp functions not verified",)


def test_a_file_using_custom_vjp_that_after_lacks_fails_the_run(tmp_path: Path, before: Path) -> None:
    after = project(tmp_path / "after", OPS_BEFORE, RULES_BEFORE)
    (before / "pkg" / "gone.py").write_text("import jax\nf = jax.custom_vjp(lambda x: x)\n")
    code, report = verify_cli(before, after)  # nothing else differs: no worker runs
    assert code == 1
    assert [(f["name"], f["verdict"]) for f in report["functions"]] == [("pkg/gone.py", "missing in AFTER")]
    assert report["functions"][0]["message"] == (
        f"a file of BEFORE using custom_vjp ({before / 'pkg' / 'gone.py'}) that AFTER ({after}) lacks: "
        "a migration never renames or removes one"
    )


def test_a_file_that_after_lacks_fails_the_run_beside_a_verified_migration(tmp_path: Path, before: Path) -> None:
    after = project(tmp_path / "after", OPS_AFTER, RULES_AFTER)
    (before / "pkg" / "gone.py").write_text("import jax\nf = jax.custom_vjp(lambda x: x)\n")
    code, report = verify_cli(before, after)  # ops.py and rules.py differ: the worker runs too
    assert [(f["name"], f["verdict"]) for f in report["functions"]] == [
        ("pkg/gone.py", "missing in AFTER"),
        ("pkg.ops:clip", "equal"),
    ]
    assert code == 1


@pytest.mark.parametrize(
    ("source", "name", "is_package", "expected"),
    [
        pytest.param("from .rules import bwd", "pkg.ops", False, {"pkg", "pkg.rules", "pkg.rules.bwd"}, id="relative"),
        pytest.param("from . import rules", "pkg", True, {"pkg", "pkg.rules"}, id="relative in __init__"),
        pytest.param("from ..b import c", "p.q.m", False, {"p", "p.b", "p.b.c"}, id="two levels up"),
        pytest.param("import a.b as ab", "m", False, {"a", "a.b"}, id="absolute"),
        pytest.param("from ... import x", "m", False, set(), id="beyond the top"),
        pytest.param("def broken(:", "m", False, set(), id="syntax error"),
    ],
)
def test_imports_read_from_the_source(source: str, name: str, is_package: bool, expected: set[str]) -> None:
    assert imported(source, name, is_package) == expected


def test_examples_by_full_name_or_unambiguous_plain_name() -> None:
    found = {"pkg.a": {"clip", "scale"}, "pkg.b": {"clip"}}
    examples = {"pkg.b:clip": [(1,)], "scale": [(2,)], "clip": [(3,)]}
    per_module, warnings = _per_module(examples, found)  # type: ignore[arg-type]
    assert per_module == {"pkg.a": {"scale": [(2,)]}, "pkg.b": {"clip": [(1,)]}}
    assert warnings == [
        "EXAMPLES key 'clip' is ambiguous (pkg.a:clip, pkg.b:clip); not used: name one of those instead"
    ]
