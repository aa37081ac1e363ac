"""api's pause of the cyclic collector around one file (notes/mut17-findings.md)."""

from __future__ import annotations

import gc
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES
from test_source_parse import FIXABLE

from vjp_migrate import api, walk


def _indexes() -> int:
    gc.collect()
    return sum(type(o) is walk.Index for o in gc.get_objects())


@pytest.mark.parametrize("fix", [False, True], ids=["check", "fix"])
def test_a_file_done_keeps_no_index_of_its_module(tmp_path: Path, fix: bool) -> None:
    # walk keeps the index of the module analysed last for source_text; once the file is done
    # nothing may hold it, or the module's whole tree lives on until the next file.
    path = tmp_path / "f.py"
    path.write_text(FIXABLE)
    result = api.fix_file(path, write=False) if fix else api.check_file(path)
    assert result.diagnostics
    assert _indexes() == 0


def test_check_file_pauses_cycle_collection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "f.py"
    path.write_text(FIXABLE)
    seen: list[bool] = []
    original = api._analyze

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return original(*args, **kwargs)

    monkeypatch.setattr(api, "_analyze", spy)
    assert api.check_file(path).diagnostics
    assert seen == [False] and gc.isenabled()


def test_an_interrupt_inside_a_file_restores_cycle_collection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # guarded turns an Exception into a FAILED result; a KeyboardInterrupt goes through, and a
    # library caller that catches it must get the collector back.
    path = tmp_path / "f.py"
    path.write_text(FIXABLE)

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "_fix_text", interrupted)
    with pytest.raises(KeyboardInterrupt):
        api.fix_file(path, write=False)
    assert gc.isenabled()


@pytest.mark.parametrize("fix", [False, True], ids=["check", "fix"])
def test_phase_two_pauses_cycle_collection_and_keeps_no_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fix: bool
) -> None:
    # Phase 2 holds the trees of every module it reads while it analyses: a collection would walk
    # them all, again and again. Its indexes (walk.cover) must go with it.
    from vjp_migrate import project

    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "project_sibling_rules" / "before", tree)
    seen: list[bool] = []
    original = project.complete

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return original(*args, **kwargs)

    monkeypatch.setattr(project, "complete", spy)
    how = api.Execution(jobs=1)
    results = api.fix_paths([tree], write=False, how=how) if fix else api.check_paths([tree], how=how)
    assert seen == [False] and gc.isenabled()
    assert any(r.diagnostics for r in results)
    assert _indexes() == 0
