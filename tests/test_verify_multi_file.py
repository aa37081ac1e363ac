"""fix --verify on multi-file migrations: the files of one migration are proven together with real
JAX (verify_trees over copies of their packages before and after) and written together, or none
is. Also: verify/trees.py and modules.py resolve relative imports the same way (the import
system's)."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from typing import Any

import libcst as cst
import pytest
from click.testing import CliRunner
from conftest import FIXTURES
from helpers import write

from vjp_migrate import api, rewrite, verified_writes
from vjp_migrate.cli import main
from vjp_migrate.model import Status
from vjp_migrate.modules import absolute_module
from vjp_migrate.verify import VerifyOptions
from vjp_migrate.verify.trees import imported, stage_trees


def files_of(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def copy_before(case: str, tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / case / "before", tree)
    return tree


@pytest.mark.parametrize(
    "case",
    [
        pytest.param("project_sibling_rules", id="fwd and bwd in sibling modules"),
        pytest.param("project_shared_bwd", id="one bwd shared by two files"),
        pytest.param("project_absolute_imports", id="rules imported by absolute names"),
    ],
)
def test_fix_verify_proves_and_writes_every_file_of_the_migration(case: str, tmp_path: Path) -> None:
    tree = copy_before(case, tmp_path)
    result = CliRunner().invoke(main, ["fix", "--verify", "-j", "1", str(tree)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert files_of(tree) == files_of(FIXTURES / case / "after")


def _double_the_gradient(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the rewrite of soft_clip's bwd wrong: twice the gradient."""
    right = rewrite.rewrite_module

    def wrong(module: cst.Module, *args: Any, **kwargs: Any) -> tuple[cst.Module, frozenset[str]]:
        new, dropped = right(module, *args, **kwargs)
        code = new.code.replace("jnp.where(inside, g, 0.1 * g)", "jnp.where(inside, 2 * g, 0.2 * g)")
        return cst.parse_module(code), dropped

    monkeypatch.setattr(rewrite, "rewrite_module", wrong)


def test_a_wrong_multi_file_rewrite_fails_verification_and_writes_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bwd's rewrite is made wrong (twice the gradient): the gradients then differ for real."""
    tree = copy_before("project_sibling_rules", tmp_path)
    before = files_of(tree)
    correct = "jnp.where(inside, g, 0.1 * g)"
    _double_the_gradient(monkeypatch)
    planned = api.fix_paths([tree], write=False)
    assert any(correct in (r.old_text or "") and correct not in (r.new_text or "") for r in planned)

    result = CliRunner().invoke(main, ["fix", "--verify", "-j", "1", str(tree)], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert files_of(tree) == before
    for name in ("ops.py", "_impl_fwd.py", "_impl_bwd.py"):
        (line,) = [x for x in result.stderr.splitlines() if x.startswith(str(tree / "mypkg" / name))]
        assert ": error: rewrite not written, verification failed: " in line
        assert "mypkg.ops:soft_clip: cotangent" in line
        assert "none of them was written" in line


def test_a_migration_whose_package_cannot_be_imported_writes_no_file(tmp_path: Path) -> None:
    tree = copy_before("project_sibling_rules", tmp_path)
    init = tree / "mypkg" / "__init__.py"
    init.write_text("import a_dependency_that_is_not_installed\n" + init.read_text(encoding="utf-8"))
    before = files_of(tree)
    results = verified_writes.write_verified(api.fix_paths([tree], write=False), VerifyOptions())
    assert files_of(tree) == before
    failed = [r for r in results if r.status is Status.FAILED]
    assert len(failed) == 3 and not any(r.written for r in results)
    for r in failed:
        assert r.reason is not None and r.reason.startswith("rewrite not written, verification failed: ")
        assert "a_dependency_that_is_not_installed" in r.reason
        # The message names the user's file, not the temporary copy verify imported.
        assert f"({tree.resolve() / 'mypkg' / 'ops.py'})" in r.reason


def test_a_file_edited_after_planning_stops_the_whole_migration(tmp_path: Path) -> None:
    tree = copy_before("project_sibling_rules", tmp_path)
    planned = api.fix_paths([tree], write=False)
    bwd = tree / "mypkg" / "_impl_bwd.py"
    bwd.write_text(bwd.read_text(encoding="utf-8") + "# edited meanwhile\n", encoding="utf-8")
    before = files_of(tree)
    results = verified_writes.write_verified(planned, VerifyOptions())
    assert files_of(tree) == before
    changed = [r for r in results if r.changed]
    assert len(changed) == 3
    for r in changed:
        assert r.status is Status.FAILED and not r.written
        assert "_impl_bwd.py: changed on disk" in (r.reason or "")


def test_single_files_and_groups_in_one_run(tmp_path: Path) -> None:
    tree = copy_before("project_sibling_rules", tmp_path)
    shutil.copyfile(FIXTURES / "seed_clip_gradient" / "before.py", tmp_path / "seed.py")
    result = CliRunner().invoke(main, ["fix", "--verify", "-j", "1", str(tree), str(tmp_path / "seed.py")])
    assert result.exit_code == 0, result.output
    assert files_of(tree) == files_of(FIXTURES / "project_sibling_rules" / "after")
    assert (tmp_path / "seed.py").read_bytes() == (FIXTURES / "seed_clip_gradient" / "after.py").read_bytes()


def test_stage_trees_copies_what_the_changed_files_import(tmp_path: Path) -> None:
    root = write(
        tmp_path / "project",
        {
            "mypkg/__init__.py": "",
            "mypkg/ops.py": "from .rules import f\n",
            "mypkg/rules.py": "from helpers.maths import g\n",
            "mypkg/table.txt": "read at import time\n",
            "mypkg/sub/__init__.py": "",
            "mypkg/build/__init__.py": "",  # a subpackage, though discovery skips folders of that name
            "mypkg/.hidden/notes.py": "",
            "helpers/__init__.py": "",
            "helpers/maths.py": "import deep\nimport os\n",
            "deep.py": "",
            "unrelated/__init__.py": "",
            "script.py": "",
        },
    )
    (root / "mypkg" / "__pycache__").mkdir()
    (root / "mypkg" / "__pycache__" / "ops.cpython-311.pyc").write_bytes(b"stale")
    ops, rules = root / "mypkg" / "ops.py", root / "mypkg" / "rules.py"
    changes = {ops: (ops.read_bytes(), b"# new ops\n"), rules: (rules.read_bytes(), b"# new rules\n")}
    staged = stage_trees(changes, tmp_path / "staged")
    assert staged.roots == (root.resolve(),)
    expected = {
        "deep.py": b"",
        "helpers/__init__.py": b"",
        "helpers/maths.py": b"import deep\nimport os\n",
        "mypkg/__init__.py": b"",
        "mypkg/build/__init__.py": b"",
        "mypkg/ops.py": b"from .rules import f\n",
        "mypkg/rules.py": b"from helpers.maths import g\n",
        "mypkg/sub/__init__.py": b"",
        "mypkg/table.txt": b"read at import time\n",
    }
    assert files_of(staged.before) == expected
    assert files_of(staged.after) == {**expected, "mypkg/ops.py": b"# new ops\n", "mypkg/rules.py": b"# new rules\n"}
    assert files_of(root)["mypkg/ops.py"] == b"from .rules import f\n"


# --- namespace packages (PEP 420) and symlinked folders ------------------------------------------

SIBLING = FIXTURES / "project_sibling_rules"


def as_namespace(text: str) -> str:
    """The sibling fixture's ops, importing its rules by absolute name from the namespace ``ns``."""
    return text.replace("from ._impl_", "from ns.sub._impl_")


def namespace_tree(tmp_path: Path, side: str, sub_is_a_package: bool) -> Path:
    tree = tmp_path / side
    shutil.copytree(SIBLING / side / "mypkg", tree / "ns" / "sub")  # `ns` has no __init__.py
    ops = tree / "ns" / "sub" / "ops.py"
    ops.write_text(as_namespace(ops.read_text(encoding="utf-8")), encoding="utf-8")
    if not sub_is_a_package:
        (tree / "ns" / "sub" / "__init__.py").unlink()
    return tree


@pytest.mark.parametrize(
    "sub_is_a_package",
    [
        pytest.param(True, id="regular package inside a namespace package"),
        pytest.param(False, id="namespace packages all the way down"),
    ],
)
def test_fix_verify_proves_a_migration_inside_a_namespace_package(tmp_path: Path, sub_is_a_package: bool) -> None:
    tree = namespace_tree(tmp_path, "before", sub_is_a_package)
    expected = files_of(namespace_tree(tmp_path, "after", sub_is_a_package))
    assert files_of(tree) != expected
    result = CliRunner().invoke(main, ["fix", "--verify", "-j", "1", str(tree)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert files_of(tree) == expected


def test_a_wrong_rewrite_inside_a_namespace_package_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The proof really imports the namespace package's rules: a wrong bwd is caught by name."""
    tree = namespace_tree(tmp_path, "before", sub_is_a_package=False)
    before = files_of(tree)
    _double_the_gradient(monkeypatch)
    result = CliRunner().invoke(main, ["fix", "--verify", "-j", "1", str(tree)], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert files_of(tree) == before
    lines = [x for x in result.stderr.splitlines() if ": error: " in x]
    assert len(lines) == 3 and all("ns.sub.ops:soft_clip: cotangent" in x for x in lines), result.stderr


VENDOR_MATHS = "def leak(g):\n    return 0.1 * g\n"


def test_fix_verify_proves_a_migration_that_imports_through_a_symlinked_folder(tmp_path: Path) -> None:
    """The bwd imports a helper from ``mypkg/vendor``, a link to a package outside the tree: the
    proof copies the link's contents as real files; the link and its target stay as they were."""
    tree = copy_before("project_sibling_rules", tmp_path)
    write(tmp_path / "shared", {"vendor/__init__.py": "", "vendor/maths.py": VENDOR_MATHS})
    (tree / "mypkg" / "vendor").symlink_to(tmp_path / "shared" / "vendor", target_is_directory=True)
    bwd = tree / "mypkg" / "_impl_bwd.py"
    text = bwd.read_text(encoding="utf-8").replace(
        "import jax.numpy as jnp\n", "import jax.numpy as jnp\n\nfrom .vendor.maths import leak\n"
    )
    bwd.write_text(text.replace("0.1 * g)", "leak(g))"), encoding="utf-8")
    shared = files_of(tmp_path / "shared")
    planned = {r.path: r.new_text for r in api.fix_paths([tree], write=False) if r.changed}
    assert len(planned) == 3 and "leak(g)" in (planned[bwd] or "")

    result = CliRunner().invoke(main, ["fix", "--verify", "-j", "1", str(tree)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert {path: path.read_text(encoding="utf-8") for path in planned} == planned
    assert (tree / "mypkg" / "vendor").is_symlink()
    assert files_of(tmp_path / "shared") == shared


def test_stage_trees_copies_symlinked_folders_as_real_ones_and_never_loops(tmp_path: Path) -> None:
    """A changed file reached through a symlinked folder is staged as a real file: the staging
    writes nothing through the link. A link back up the tree is not followed."""
    write(tmp_path / "elsewhere", {"rules/__init__.py": "", "rules/bwd.py": "old = 1\n"})
    root = write(tmp_path / "project", {"mypkg/__init__.py": "", "mypkg/ops.py": "from .rules.bwd import old\n"})
    (root / "mypkg" / "rules").symlink_to(tmp_path / "elsewhere" / "rules", target_is_directory=True)
    (root / "mypkg" / "loop").symlink_to(root / "mypkg", target_is_directory=True)
    ops, bwd = root / "mypkg" / "ops.py", root / "mypkg" / "rules" / "bwd.py"
    changes = {ops: (ops.read_bytes(), b"# new ops\n"), bwd: (bwd.read_bytes(), b"new = 1\n")}
    staged = stage_trees(changes, tmp_path / "staged")
    assert staged.roots == (root,)
    for side, ops_bytes, bwd_bytes in (
        (staged.before, b"from .rules.bwd import old\n", b"old = 1\n"),
        (staged.after, b"# new ops\n", b"new = 1\n"),
    ):
        assert files_of(side) == {
            "mypkg/__init__.py": b"",
            "mypkg/ops.py": ops_bytes,
            "mypkg/rules/__init__.py": b"",
            "mypkg/rules/bwd.py": bwd_bytes,
        }
        assert not any(p.is_symlink() for p in side.rglob("*"))
    assert (tmp_path / "elsewhere" / "rules" / "bwd.py").read_bytes() == b"old = 1\n"


def test_stage_trees_refuses_two_packages_of_one_name(tmp_path: Path) -> None:
    write(
        tmp_path, {"a/mypkg/__init__.py": "", "a/mypkg/ops.py": "", "b/mypkg/__init__.py": "", "b/mypkg/rules.py": ""}
    )
    changes = {tmp_path / "a/mypkg/ops.py": (b"", b"x = 1\n"), tmp_path / "b/mypkg/rules.py": (b"", b"y = 1\n")}
    with pytest.raises(ValueError, match="two top-level modules named mypkg"):
        stage_trees(changes, tmp_path / "staged")


def _resolved(relative: str, package: str) -> str | None:
    """The import system's answer."""
    try:
        return importlib.util.resolve_name(relative, package)
    except ImportError:
        return None


@pytest.mark.parametrize(
    ("module", "name", "is_package", "relative"),
    [
        pytest.param("from .rules import f", "ops", False, ".rules", id="relative import outside a package"),
        pytest.param("from . import rules", "ops", False, ".", id="from-dot outside a package"),
        pytest.param("from ..rules import f", "pkg.ops", False, "..rules", id="one level above the top package"),
        pytest.param("from .rules import f", "pkg.ops", False, ".rules", id="sibling"),
        pytest.param("from . import rules", "pkg", True, ".", id="in a package's __init__"),
        pytest.param("from ..rules import f", "pkg.sub.ops", False, "..rules", id="parent package"),
    ],
)
def test_trees_and_modules_resolve_relative_imports_as_python_does(
    module: str, name: str, is_package: bool, relative: str
) -> None:
    package = name if is_package else name.rpartition(".")[0]
    expected = _resolved(relative, package)
    assert absolute_module(relative, package) == expected
    targets = imported(module, name, is_package)
    if expected is None:
        assert targets == set()  # the import fails: it loads nothing
    else:
        assert expected in targets
