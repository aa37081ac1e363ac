"""Phase 2 over many files: what it reads of the other files of a run, and the module index of
a run, stay proportional to what they find (a run over 18,000 files of PyPI packages held every
file's text in phase 2, 330 MB)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest
from helpers import write

from vjp_migrate import project
from vjp_migrate.modules import ModuleIndex, package_name, package_root


def test_uses_of_rules_read_each_file_once_and_keep_only_the_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(
        tmp_path,
        {
            "a.py": "x = 1\n",
            "b.py": "from rules import clip_bwd\n\n\nclip_bwd(1, 2, 3)\n",
            "c.py": 'from rules import clip_bwd, clip_fwd\nclip_bwd(0)\nTABLE = {"fwd": clip_fwd}\n',
            "d.py": "def f(:\n    clip_fwd\n",  # does not parse: no use read from it
        },
    )
    files = [tmp_path / name for name in ("a.py", "b.py", "c.py", "d.py")]
    parsed: list[int] = []
    real_parse = ast.parse
    monkeypatch.setattr(ast, "parse", lambda text, *a, **k: parsed.append(1) or real_parse(text, *a, **k))
    others = project._OtherFiles(project.Project(ModuleIndex.build(files, [tmp_path])), files)
    found = others.uses_of({("clip_bwd", "bwd"), ("clip_fwd", "fwd"), ("absent", "bwd")})
    assert found == {("clip_bwd", "bwd"): (files[1], 4), ("clip_fwd", "fwd"): (files[2], 3)}
    assert len(parsed) == 3  # b, c and d hold a name; a is not parsed
    assert others.uses_of({("clip_bwd", "bwd")}) == {("clip_bwd", "bwd"): (files[1], 4)}
    assert len(parsed) == 3  # answered from what was found, nothing read again
    assert set(vars(others)) == {"project", "files", "found"}  # no text or tree kept


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
