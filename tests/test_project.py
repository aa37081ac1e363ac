"""Project-wide analysis (modules.py, project.py): module names, import resolution, phase 2 edges."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import libcst as cst
import pytest
from click.testing import CliRunner
from conftest import FIXTURES
from helpers import write

from vjp_migrate.api import Execution, check_paths, fix_paths
from vjp_migrate.cli import main
from vjp_migrate.codes import BY_CODE
from vjp_migrate.flake8_plugin import Plugin
from vjp_migrate.model import Settings
from vjp_migrate.modules import ModuleIndex, absolute_module, module_imports, package_name

SIBLING = FIXTURES / "project_sibling_rules"


PRIMAL = """
from functools import partial

import jax

from {spelling} import scale_bwd, scale_fwd


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def scale(x, s):
    return x * s


scale.defvjp(scale_fwd, scale_bwd)
"""
RULES = """
def scale_fwd(x, s):
    return x * s, None


def scale_bwd(s, _, g):
    return (g * s,)
"""


# rules.py with a custom_vjp of its own that uses the rules ops.py imports
LOCAL_USER = (
    """
from functools import partial

import jax


@partial(jax.custom_vjp, nondiff_argnums={nondiff})
def {primal}:
    return x * s
"""
    + RULES
    + "\n\n{name}.defvjp({fwd}, scale_bwd)\n"
)
FIRST_FWD = """

def scale_first_fwd(s, x):
    return x * s, None
"""


# --- module names and import resolution ---------------------------------------------------------


def test_package_name_walks_up_init_files(tmp_path: Path) -> None:
    write(tmp_path, {"a/__init__.py": "", "a/b/__init__.py": "", "a/b/c.py": "", "loose.py": ""})
    assert package_name(tmp_path / "a" / "b" / "c.py") == "a.b.c"
    assert package_name(tmp_path / "a" / "b" / "__init__.py") == "a.b"
    assert package_name(tmp_path / "loose.py") == "loose"


def test_package_name_does_not_depend_on_how_the_path_is_spelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"a/__init__.py": "", "a/b/__init__.py": "", "a/b/c.py": ""})
    monkeypatch.chdir(tmp_path / "a" / "b")
    assert package_name(Path("c.py")) == package_name(Path("../b/c.py")) == "a.b.c"
    assert package_name(Path("__init__.py")) == "a.b"


def test_given_folders_are_import_roots_for_namespace_packages(tmp_path: Path) -> None:
    write(tmp_path, {"src/ns/ops.py": "", "src/ns/rules.py": ""})
    index = ModuleIndex.build(sorted((tmp_path / "src").rglob("*.py")), [tmp_path / "src"])
    assert index.paths["ns.rules"] == tmp_path / "src" / "ns" / "rules.py"
    assert index.split("ns.rules.scale_bwd") == ("ns.rules", "scale_bwd")
    assert index.split("other.rules.scale_bwd") is None


@pytest.mark.parametrize(
    ("relative", "package", "expected"),
    [
        pytest.param(".rules", "pkg", "pkg.rules", id="sibling"),
        pytest.param("..rules", "pkg.sub", "pkg.rules", id="parent"),
        pytest.param(".", "pkg.sub", "pkg.sub", id="the package itself"),
        pytest.param("...rules", "pkg", None, id="climbs above the top"),
        pytest.param(".rules", "", None, id="not in a package"),
        pytest.param("pkg.rules", "x", "pkg.rules", id="absolute"),
    ],
)
def test_absolute_module(relative: str, package: str, expected: str | None) -> None:
    assert absolute_module(relative, package) == expected


def test_module_imports_resolve_every_spelling() -> None:
    module = cst.parse_module(
        "import pkg.rules\nimport pkg.rules as pr\nfrom . import rules\nfrom .rules import bwd as b\n"
        "from ..up import f\n\ndef inner():\n    from .hidden import g\n"
    )
    imports = module_imports(module, "pkg.sub")
    assert imports.target("pkg.rules.bwd") == "pkg.rules.bwd"
    assert imports.target("pr.bwd") == "pkg.rules.bwd"
    assert imports.target("rules.bwd") == "pkg.sub.rules.bwd"
    assert imports.target("b") == "pkg.sub.rules.bwd"
    assert imports.target("f") == "pkg.up.f"
    assert imports.target("g") is None  # a function's own import binds no module name
    assert imports.origin("b") == "pkg.sub.rules"


# --- phase 2 ----------------------------------------------------------------------------------------


def test_src_layout_with_absolute_import(tmp_path: Path) -> None:
    src = write(
        tmp_path / "src",
        {"mypkg/__init__.py": "", "mypkg/ops.py": PRIMAL.format(spelling="mypkg.rules"), "mypkg/rules.py": RULES},
    )
    results = fix_paths([src])
    assert {r.path.name for r in results if r.changed} == {"ops.py", "rules.py"}
    assert "def scale_bwd(s, g):" in (src / "mypkg" / "rules.py").read_text(encoding="utf-8")


def test_namespace_package_resolves_through_the_given_root(tmp_path: Path) -> None:
    src = write(tmp_path / "src", {"ns/ops.py": PRIMAL.format(spelling="ns.rules"), "ns/rules.py": RULES})
    (result,) = [r for r in check_paths([src]) if r.diagnostics]
    assert [d.code for d in result.diagnostics] == ["VJP001"]
    assert result.diagnostics[0].also_touches == (str(src / "ns" / "rules.py"),)


@pytest.mark.parametrize("named", ["folder", "files from the current folder"])
def test_relative_import_in_a_namespace_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, named: str) -> None:
    # No __init__.py: `.rules` means ns/rules.py once the folder above ns is an import root,
    # given on the command line or (pre-commit: files named one by one) the current folder.
    write(tmp_path, {"ns/ops.py": PRIMAL.format(spelling=".rules"), "ns/rules.py": RULES})
    monkeypatch.chdir(tmp_path)
    paths = [Path(".")] if named == "folder" else [Path("ns/ops.py"), Path("ns/rules.py")]
    results = fix_paths(paths)
    assert {r.path.name for r in results if r.changed} == {"ops.py", "rules.py"}
    assert "def scale_bwd(s, g):" in (tmp_path / "ns" / "rules.py").read_text(encoding="utf-8")


def test_one_file_alone_names_the_module_to_include() -> None:
    # pre-commit passes only the changed files: the rule module is not among them.
    (result,) = check_paths([SIBLING / "before" / "mypkg" / "ops.py"])
    messages = {d.message for d in result.diagnostics}
    assert {d.code for d in result.diagnostics} == {"VJP003"}
    assert any(
        "fwd `soft_clip_fwd` is imported from `mypkg._impl_fwd`, which is not among the files checked; "
        "include it to migrate this function" in m
        for m in messages
    ), messages
    assert result.imported_rules == ("mypkg._impl_bwd", "mypkg._impl_fwd")


def test_reasons_seen_in_another_file_name_that_file_and_its_line() -> None:
    before = SIBLING / "before" / "mypkg"
    fwd, bwd = str(before / "_impl_fwd.py"), str(before / "_impl_bwd.py")
    text = CliRunner().invoke(main, ["check", "--show-reasons", "--no-cache", "-q", str(before)]).output
    assert f"lo: array — used as array data by `jnp.clip` in fwd `soft_clip_fwd` ({fwd}, line 7)" in text, text
    assert f"hi: array — compared element-wise in bwd `soft_clip_bwd` ({bwd}, line 8)" in text, text
    assert "lo: array — used as array data by `jnp.clip` in the primal `soft_clip` (line 14)" in text, text
    data = json.loads(CliRunner().invoke(main, ["check", "--output-format", "json", "--no-cache", str(before)]).output)
    places = {(r.get("path"), r["line"]) for d in data for r in d["reasons"]}
    assert places == {(None, 14), (fwd, 7), (bwd, 8)}, places


def test_the_files_of_one_migration_given_one_by_one_are_resolved(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    os.makedirs(tree)
    for name in ("__init__.py", "ops.py", "_impl_fwd.py", "_impl_bwd.py"):
        (tree / name).write_bytes((SIBLING / "before" / "mypkg" / name).read_bytes())
    results = fix_paths([tree / "ops.py", tree / "_impl_fwd.py", tree / "_impl_bwd.py"])
    assert sum(r.changed for r in results) == 3
    for name in ("ops.py", "_impl_fwd.py", "_impl_bwd.py"):
        assert (tree / name).read_bytes() == (SIBLING / "after" / "mypkg" / name).read_bytes()


def test_flake8_plugin_names_the_module_to_include() -> None:
    path = SIBLING / "before" / "mypkg" / "ops.py"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    found = [message for _, _, message, _ in Plugin(None, str(path), lines).run()]  # type: ignore[arg-type]
    assert found and all(m.startswith("VJP003") for m in found)
    assert all("imported from `mypkg._impl_fwd`, which is not among the files checked" in m for m in found)


def test_workers_and_cache_give_the_same_project_results(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    import shutil

    shutil.copytree(SIBLING / "before", tree)
    plain = check_paths([tree])
    how = Execution(jobs=2, cache_dir=tmp_path / "cache")
    first = check_paths([tree], how=how)
    cached = check_paths([tree], how=how)  # phase 1 from the cache still leads to phase 2
    for results in (first, cached):
        assert [r.diagnostics for r in results] == [r.diagnostics for r in plain]
    assert any(d.also_touches for r in cached for d in r.diagnostics)


def test_a_rule_shared_with_a_local_custom_vjp_migrates_consistently(tmp_path: Path) -> None:
    # rules.py migrates its own custom_vjp in phase 1; ops.py imports the same rules.
    local = LOCAL_USER.format(nondiff="(1,)", primal="base_scale(x, s)", name="base_scale", fwd="scale_fwd")
    tree = write(
        tmp_path / "t", {"pkg/__init__.py": "", "pkg/ops.py": PRIMAL.format(spelling=".rules"), "pkg/rules.py": local}
    )
    results = fix_paths([tree])
    assert all(r.status.value == "ok" for r in results), [(r.path, r.reason) for r in results]
    rules_text = (tree / "pkg" / "rules.py").read_text(encoding="utf-8")
    ops_text = (tree / "pkg" / "ops.py").read_text(encoding="utf-8")
    assert "def scale_bwd(s, g):" in rules_text and "@jax.custom_vjp" in rules_text
    assert "@jax.custom_vjp" in ops_text  # both users of the shared bwd migrated
    assert not any(r.changed for r in fix_paths([tree]))


def test_a_rule_shared_with_a_local_custom_vjp_that_differs_changes_nothing(tmp_path: Path) -> None:
    local = (
        LOCAL_USER.format(nondiff="(0,)", primal="scale_first(s, x)", name="scale_first", fwd="scale_first_fwd")
        + FIRST_FWD
    )
    tree = write(
        tmp_path / "t", {"pkg/__init__.py": "", "pkg/ops.py": PRIMAL.format(spelling=".rules"), "pkg/rules.py": local}
    )
    before = {p: p.read_bytes() for p in tree.rglob("*.py")}
    results = fix_paths([tree])
    assert {p: p.read_bytes() for p in tree.rglob("*.py")} == before
    codes = sorted(d.code for r in results for d in r.diagnostics)
    assert codes == ["VJP003", "VJP003"]
    assert all("`scale_bwd` is shared by the custom_vjp functions" in d.message for r in results for d in r.diagnostics)


def test_a_group_is_written_together_or_not_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from vjp_migrate import api

    tree = tmp_path / "tree"
    shutil.copytree(SIBLING / "before", tree)
    edited = tree / "mypkg" / "_impl_bwd.py"
    plan = api.analyze_found

    def plan_then_edit(*args: object, **kwargs: object) -> object:
        outcome = plan(*args, **kwargs)  # type: ignore[arg-type]
        edited.write_text(edited.read_text(encoding="utf-8") + "# edited meanwhile\n", encoding="utf-8")
        return outcome

    monkeypatch.setattr(api, "analyze_found", plan_then_edit)
    results = fix_paths([tree])
    failed = {r.path.name: r.reason for r in results if r.status.value == "failed"}
    assert set(failed) == {"ops.py", "_impl_fwd.py", "_impl_bwd.py"}
    assert all("changed on disk" in (reason or "") for reason in failed.values()), failed
    for path in (tree / "mypkg").glob("*.py"):
        if path != edited:
            assert path.read_bytes() == (SIBLING / "before" / "mypkg" / path.name).read_bytes()


def test_a_rule_module_that_does_not_parse_is_named(tmp_path: Path) -> None:
    tree = write(
        tmp_path / "t",
        {"pkg/__init__.py": "", "pkg/ops.py": PRIMAL.format(spelling=".rules"), "pkg/rules.py": "def scale_fwd(:\n"},
    )
    results = check_paths([tree])
    messages = [d.message for r in results for d in r.diagnostics]
    assert messages and all("imported from `pkg.rules`" in m and "syntax error" in m for m in messages), messages
    assert all(", which has a syntax error at line 1, column " in m for m in messages), messages  # pkgprobe23


def test_a_constant_module_that_does_not_parse_is_named(tmp_path: Path) -> None:
    tree = tmp_path / "t"
    shutil.copytree(FIXTURES / "project_argnums_imported_constant" / "before", tree)
    (tree / "mypkg" / "constants.py").write_text("CLIP_ARGNUMS = (1, 2\n", encoding="utf-8")
    messages = [d.message for r in check_paths([tree], settings=Settings(frozenset(BY_CODE))) for d in r.diagnostics]
    assert messages, messages
    assert all("imported from `mypkg.constants`, which has a syntax error at line 1, column " in m for m in messages)


def test_a_name_the_rule_module_does_not_define(tmp_path: Path) -> None:
    tree = write(
        tmp_path / "t",
        {
            "pkg/__init__.py": "",
            "pkg/ops.py": PRIMAL.format(spelling=".rules"),
            "pkg/rules.py": "scale_fwd = scale_bwd = None\n",
        },
    )
    messages = [d.message for r in check_paths([tree]) for d in r.diagnostics]
    assert messages and all(
        "imported from `pkg.rules`, where no function `scale_fwd` is defined" in m for m in messages
    )


def test_a_rule_reexported_by_a_package_init_is_followed(tmp_path: Path) -> None:
    tree = write(
        tmp_path / "t",
        {
            "pkg/__init__.py": "from ._impl import scale_bwd, scale_fwd\n",
            "pkg/_impl.py": RULES,
            "pkg/ops.py": PRIMAL.format(spelling="pkg"),
        },
    )
    results = fix_paths([tree])
    assert {r.path.name for r in results if r.changed} == {"ops.py", "_impl.py"}


@pytest.mark.parametrize(
    ("init", "changed"),
    [
        pytest.param("from ._impl import *\n", {"ops.py", "_impl.py"}, id="star"),
        pytest.param("from ._impl import *\nfrom ._other import *\n", {"ops.py", "_impl.py"}, id="the one that has it"),
        pytest.param("from ._impl import *\n", set(), id="__all__ leaves it out"),
    ],
)
def test_a_rule_star_reexported_by_a_package_init_is_followed(tmp_path: Path, init: str, changed: set[str]) -> None:
    # probe32 P4: a star import in __init__.py was not followed (VJP003 "where no function ...").
    impl = ('__all__ = ["scale_fwd"]\n' if not changed else "") + RULES
    tree = write(
        tmp_path / "t",
        {
            "pkg/__init__.py": init,
            "pkg/_impl.py": impl,
            "pkg/_other.py": "def unrelated():\n    pass\n",
            "pkg/ops.py": PRIMAL.format(spelling="pkg"),
        },
    )
    results = fix_paths([tree])
    assert {r.path.name for r in results if r.changed} == changed
    if not changed:
        (found,) = [d for r in results for d in r.diagnostics]
        assert "where no function `scale_bwd` is defined" in found.message


def test_fix_verify_proves_a_multi_file_migration_and_writes_it_together(tmp_path: Path) -> None:
    import shutil

    from click.testing import CliRunner

    from vjp_migrate.cli import main

    tree = tmp_path / "tree"
    shutil.copytree(SIBLING / "before", tree)
    result = CliRunner().invoke(main, ["fix", "--verify", str(tree)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    for path in (tree / "mypkg").glob("*.py"):
        assert path.read_bytes() == (SIBLING / "after" / "mypkg" / path.name).read_bytes()


JIT_RULES = """
from functools import partial

import jax


def scale_fwd(x, s, mode):
    return (x * s if mode == "mul" else x + s), None


@partial(jax.jit, static_argnums=(1,))
def scale_bwd(s, mode, _, g):
    return (g * s if mode == "mul" else g,)
"""
MODED = """
from functools import partial

import jax

from .rules import scale_bwd, scale_fwd


@partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def scale(x, s: jax.Array, mode: str):
    return x * s if mode == "mul" else x + s


scale.defvjp(scale_fwd, scale_bwd)
"""


def test_a_jit_on_a_bwd_in_another_module_has_its_static_argnums_shifted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pkgprobe23: the one-file checks of a rule's decorators were skipped across files, and
    # `static_argnums=(1,)` was left pointing at the residuals: the fixed code failed to trace.
    tree = write(tmp_path / "t", {"pkg/__init__.py": "", "pkg/ops.py": MODED, "pkg/rules.py": JIT_RULES})
    results = fix_paths([tree])
    assert {r.path.name for r in results if r.changed} == {"ops.py", "rules.py"}
    rules = (tree / "pkg" / "rules.py").read_text(encoding="utf-8")
    assert "@partial(jax.jit, static_argnums=(0,))\ndef scale_bwd(mode, s, g):" in rules, rules
    monkeypatch.syspath_prepend(str(tree))
    import jax
    import jax.numpy as jnp
    from pkg.ops import scale  # type: ignore[import-not-found]

    x, s = jnp.arange(3.0), jnp.array([2.0, 3.0, 4.0])
    grad = jax.jit(jax.grad(lambda x, s: scale(x, s, "mul").sum()))(x, s)  # s traced: fine now
    assert grad.tolist() == [2.0, 3.0, 4.0]


def test_an_unknown_decorator_on_a_bwd_in_another_module_blocks_the_fix(tmp_path: Path) -> None:
    rules = RULES.replace("def scale_bwd", "@traced('bwd')\ndef scale_bwd")
    tree = write(
        tmp_path / "t",
        {"pkg/__init__.py": "", "pkg/ops.py": PRIMAL.format(spelling=".rules"), "pkg/rules.py": rules},
    )
    before = {p: p.read_bytes() for p in tree.rglob("*.py")}
    results = fix_paths([tree])
    assert {p: p.read_bytes() for p in tree.rglob("*.py")} == before
    (found,) = [d for r in results for d in r.diagnostics]
    assert found.code == "VJP003" and "is decorated with `@traced('bwd')`" in found.message


@pytest.mark.parametrize(
    ("use", "blocked"),
    [
        pytest.param("    return scale_fwd(x, s)[1]\n", True, id="residual indexed"),  # probe31 S1
        pytest.param("    _, res = scale_fwd(x, s)\n    return res\n", True, id="residual unpacked"),
        pytest.param("    return scale_fwd(x, s)[0]\n", False, id="output only"),
        pytest.param("    out, _ = scale_fwd(x, s)\n    return out\n", False, id="residual discarded"),
    ],
)
def test_a_fwd_in_another_module_whose_residual_other_code_reads_is_not_rewritten(
    tmp_path: Path, use: str, blocked: bool
) -> None:
    tree = write(
        tmp_path / "t",
        {
            "pkg/__init__.py": "",
            "pkg/ops.py": PRIMAL.format(spelling=".rules"),
            "pkg/rules.py": RULES,
            "pkg/probe.py": "from .rules import scale_fwd\n\n\ndef peek(x, s):\n" + use,
        },
    )
    before = {p: p.read_bytes() for p in tree.rglob("*.py")}
    results = fix_paths([tree])
    assert ({p: p.read_bytes() for p in tree.rglob("*.py")} == before) == blocked
    if blocked:
        (found,) = [d for r in results for d in r.diagnostics]
        assert found.code == "VJP003"
        assert f"fwd `scale_fwd` is also used in {tree / 'pkg' / 'probe.py'} on line 5, not only" in found.message


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1"])
def test_a_bwd_in_another_module_that_other_code_calls_is_not_rewritten(tmp_path: Path, encoding: str) -> None:
    fused = "from .rules import scale_bwd\n\n\ndef fused_grad(s, g):\n    return scale_bwd(s, None, g)[0]\n"
    if encoding != "utf-8":  # a file Python decodes by its declaration is read the same way
        fused = f"# -*- coding: {encoding} -*-\n# gr\u00fc\u00dfe\n" + fused
    tree = write(
        tmp_path / "t",
        {
            "pkg/__init__.py": "",
            "pkg/ops.py": PRIMAL.format(spelling=".rules"),
            "pkg/rules.py": RULES,
        },
    )
    (tree / "pkg" / "fused.py").write_text(fused, encoding=encoding)
    before = {p: p.read_bytes() for p in tree.rglob("*.py")}
    results = fix_paths([tree])
    assert {p: p.read_bytes() for p in tree.rglob("*.py")} == before
    (found,) = [d for r in results for d in r.diagnostics]
    assert found.code == "VJP003"
    line = 5 if encoding == "utf-8" else 7
    assert f"bwd `scale_bwd` is also used in {tree / 'pkg' / 'fused.py'} on line {line}, not only" in found.message
