"""Phase 2 over whole runs: what it reads of the other files of a run, and the module index of a
run, stay proportional to what they find (a run over 18,000 files of PyPI packages held every
file's text in phase 2, 330 MB); and a module name that several files of a run have (two
copies of a package) means the one beside the importing file."""

from __future__ import annotations

import ast
import os
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES
from helpers import write

from vjp_migrate.api import Execution, check_paths, fix_paths
from vjp_migrate.cross_uses import OtherFiles, Wanted
from vjp_migrate.modules import ModuleIndex, package_name, package_root


def test_uses_of_rules_read_each_file_once_and_keep_only_the_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(
        tmp_path,
        {
            "rules.py": "def clip_fwd(x):\n    return x, None\n\n\ndef clip_bwd(_, g):\n    return (g,)\n",
            "a.py": "x = 1\n",
            "b.py": "from rules import clip_bwd\n\n\nclip_bwd(1, 2, 3)\n",
            "c.py": 'from rules import clip_bwd, clip_fwd\nclip_bwd(0)\nTABLE = {"fwd": clip_fwd}\n',
            "d.py": "from rules import clip_fwd\ndef f(:\n    clip_fwd\n",  # does not parse: no use read from it
            "e.py": "def clip_bwd(g):\n    return g\n\n\nclip_bwd(1)\n",  # its own clip_bwd: not parsed
        },
    )
    files = [tmp_path / name for name in ("rules.py", "a.py", "b.py", "d.py", "c.py", "e.py")]
    parsed: list[int] = []
    real_parse = ast.parse
    monkeypatch.setattr(ast, "parse", lambda text, *a, **k: parsed.append(1) or real_parse(text, *a, **k))
    others = OtherFiles(files, [tmp_path])
    bwd, fwd = Wanted(files[0], "clip_bwd", "bwd"), Wanted(files[0], "clip_fwd", "fwd")
    absent = Wanted(files[0], "absent", "bwd")
    found = others.uses_of({bwd, fwd, absent})
    assert found == {bwd: (files[2], 4), fwd: (files[4], 3)}
    assert len(parsed) == 3  # b, d and c import from rules; rules (its own uses do not count), a and e are not parsed
    assert others.uses_of({bwd}) == {bwd: (files[2], 4)}
    assert len(parsed) == 3  # answered from what was found, nothing read again
    assert set(vars(others)) == {"files", "roots", "_project", "found", "passed"}  # no text or tree kept


def _walked_up(path: Path) -> tuple[Path, str]:
    """package_root by its definition: the ``__init__.py`` folders above ``path``, one by one."""
    parts = [] if path.stem == "__init__" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file() and folder.name:
        parts.insert(0, folder.name)
        folder = folder.parent
    return folder, ".".join(parts)


def test_module_index_names_each_file_as_package_name_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(
        tmp_path,
        {
            "src/pkg/__init__.py": "",
            "src/pkg/sub/__init__.py": "",
            "src/pkg/sub/ops.py": "",
            "src/pkg/sub/more.py": "",
            "src/pkg/ns/loose.py": "",
            "top.py": "",
        },
    )
    files = sorted(tmp_path.rglob("*.py"))
    checked: list[str] = []
    real_isfile = os.path.isfile
    monkeypatch.setattr(os.path, "isfile", lambda p: checked.append(str(p)) or real_isfile(p))
    index = ModuleIndex.build(files, [tmp_path / "src"])
    assert checked and len(checked) == len(set(checked))  # each folder's __init__.py looked for once
    monkeypatch.undo()
    for path in files:
        assert package_root(path) == _walked_up(path)
        name = package_name(path)
        if name:
            assert index.paths[name] in files and index.names[path] in (name, index.rooted.get(path))
    assert package_root(tmp_path / "src/pkg/sub/ops.py") == (tmp_path / "src", "pkg.sub.ops")
    assert package_root(tmp_path / "src/pkg/__init__.py") == (tmp_path / "src", "pkg")
    assert package_root(tmp_path / "src/pkg/ns/loose.py") == (tmp_path / "src/pkg/ns", "loose")
    assert index.names[tmp_path / "src/pkg/sub/ops.py"] == "pkg.sub.ops"
    assert index.paths["pkg.ns.loose"] == tmp_path / "src/pkg/ns/loose.py"  # below the root given


def _tree_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.py"))}


def test_two_copies_of_a_package_each_import_their_own_rules(tmp_path: Path) -> None:
    # Two projects of a monorepo, each with its own `mypkg`: each ops.py imports the rules beside
    # it. Resolved by name alone, B's site took A's rules: B's rules were left as they were while
    # B's ops.py changed, and B failed at run time.
    case = FIXTURES / "project_sibling_rules"
    for copy in ("A", "B"):
        shutil.copytree(case / "before", tmp_path / copy)
    results = fix_paths([tmp_path], how=Execution(jobs=1))
    assert not [r for r in results if r.status.name != "OK"]
    expected = _tree_files(case / "after")
    assert _tree_files(tmp_path / "A") == expected
    assert _tree_files(tmp_path / "B") == expected


def test_a_module_name_two_copies_have_and_the_importer_has_not_is_not_guessed(tmp_path: Path) -> None:
    case = FIXTURES / "project_sibling_rules"
    for copy in ("A", "B"):
        shutil.copytree(case / "before", tmp_path / copy / "src")
    ops = (case / "before" / "mypkg" / "ops.py").read_text()
    write(tmp_path, {"C/app.py": ops.replace("from ._impl_", "from mypkg._impl_")})
    results = check_paths([tmp_path / "A" / "src", tmp_path / "B" / "src", tmp_path / "C"], how=Execution(jobs=1))
    app = next(r for r in results if r.path.name == "app.py")
    assert {d.code for d in app.diagnostics} == {"VJP003"}
    assert all("2 files of the run are `mypkg._impl_" in d.message for d in app.diagnostics), [
        d.message for d in app.diagnostics
    ]


def test_a_stub_beside_its_module_is_not_a_second_file_of_that_name(tmp_path: Path) -> None:
    # Python imports the module; the stub only types it.
    case = FIXTURES / "project_sibling_rules"
    shutil.copytree(case / "before", tmp_path / "tree")
    (tmp_path / "tree" / "mypkg" / "_impl_bwd.pyi").write_text("def soft_clip_bwd(lo, hi, res, g): ...\n")
    results = fix_paths([tmp_path / "tree"], write=False, how=Execution(jobs=1))
    changed = sorted(r.path.name for r in results if r.changed)
    assert changed == ["_impl_bwd.py", "_impl_fwd.py", "ops.py"]
