"""source.parse skips LibCST's per-node validation while it parses, and only then: prove it
changes no tree, that it is really skipped (or the comparison would prove nothing), that it is
back afterwards, and that it is not skipped while another thread could be making nodes."""

from __future__ import annotations

import gc
import threading
from pathlib import Path
from typing import Any

import libcst as cst
import pytest
from test_walk import CORPUS

from vjp_migrate import api, source, walk
from vjp_migrate.model import FixResult, Status


def _invalid_node_raises() -> bool:
    try:
        cst.Name("not a name")
    except cst.CSTValidationError:
        return True
    return False


@pytest.mark.parametrize("name,text", CORPUS, ids=[name for name, _ in CORPUS])
def test_the_tree_is_libcsts_own(name: str, text: str) -> None:
    assert source.parse(text, name).deep_equals(cst.parse_module(text))


def test_validation_is_skipped_inside_and_back_after() -> None:
    assert _invalid_node_raises()
    with source.unvalidated():
        assert not _invalid_node_raises()
    assert _invalid_node_raises()


def test_validation_is_back_after_an_error() -> None:
    with pytest.raises(KeyError), source.unvalidated():
        raise KeyError("x")
    assert _invalid_node_raises()


def test_not_skipped_while_another_thread_runs() -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        with source.unvalidated():
            assert _invalid_node_raises()
    finally:
        stop.set()
        other.join()


def test_a_parse_error_still_reads_as_one() -> None:
    with pytest.raises(source.SourceError, match="syntax error"):
        source.parse("def f(:\n", "bad.py")
    assert _invalid_node_raises()


def test_libcst_classes_stay_as_they_are_around_a_parse() -> None:
    # Assigning a CSTNode attribute per parse would reset the attribute caches of every node class.
    source.parse("x = 1\n", "a.py")
    installed = cst.CSTNode.__dict__["__post_init__"]
    with source.unvalidated():
        assert cst.CSTNode.__dict__["__post_init__"] is installed
        assert not _invalid_node_raises()
    assert cst.CSTNode.__dict__["__post_init__"] is installed
    assert _invalid_node_raises()


FIXABLE = "import jax\nfrom functools import partial\n\n\n@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef f(x, w):\n    return x * w\n\n\ndef f_fwd(x, w):\n    return f(x, w), x\n\n\ndef f_bwd(w, x, g):\n    return (g * w,)\n\n\nf.defvjp(f_fwd, f_bwd)\n"


def test_fix_file_pauses_cycle_collection_and_restores_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "f.py"
    path.write_text(FIXABLE)
    seen: list[bool] = []
    original = api._fix_text

    def spy(*args: Any, **kwargs: Any) -> FixResult:
        seen.append(gc.isenabled())
        if len(seen) == 2:
            raise RuntimeError("boom")
        return original(*args, **kwargs)

    monkeypatch.setattr(api, "_fix_text", spy)
    assert api.fix_file(path, write=False).changed
    assert api.fix_file(path, write=False).status is Status.FAILED  # the error of the second call
    assert seen == [False, False] and gc.isenabled()
    gc.disable()
    try:
        assert api.fix_file(path, write=False).changed
        assert not gc.isenabled()  # the caller's pause is kept
    finally:
        gc.enable()


def test_a_fix_leaves_its_tree_to_reference_counting() -> None:
    """No reference cycle holds a LibCST node once a file is done (walk.Index.transform and
    walk.visit used closures that called themselves), so the tree goes without a collection."""
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        assert api.fix_source(FIXABLE).changed
        walk.forget()
        gc.collect()
        kept = [
            type(o).__name__ for o in gc.garbage if isinstance(o, cst.CSTNode) or type(o).__module__.startswith("vjp")
        ]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert kept == []
