"""source.parse skips LibCST's per-node validation while it parses, and only then: prove it
changes no tree, that it is really skipped (or the comparison would prove nothing), that it is
back afterwards, and that it is not skipped while another thread could be making nodes."""

from __future__ import annotations

import threading

import libcst as cst
import pytest
from test_walk import CORPUS

from vjp_migrate import source


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
