"""Stage 5b: one cheap pass over a parsed module that later stages reuse: node positions and visitor replays.

A LibCST visitor pass rebuilds every node it walks, and ``PositionProvider`` adds a metadata
pass and a code generation with a position object per node; together they cost several times
the parse. Code generation alone is the cheapest walk LibCST has, and it calls
``before_codegen``/``after_codegen`` for every node in source order. ``Index`` hooks those
once per module to record

- every node (whitespace excepted) in visiting order, with where its subtree ends, so that a
  ``CSTVisitor`` can be *replayed* over any part of the module without LibCST rebuilding the
  nodes (same calls, same order: tests/test_walk.py compares both over fixtures and JAX);
- the token range of every node, with the same syntactic overrides ``PositionProvider`` uses,
  turned into lines and columns only for the nodes asked about.

``visit(node, visitor)`` replays when ``node`` belongs to the module indexed last (``index_of``)
and the visitor only uses plain ``visit_X``/``leave_X`` methods; otherwise it is ``node.visit``.

The steps: ``record`` (the recording code generation), ``fields`` (a node's fields in visiting
order), ``replay``, ``positions``, ``rebuild`` (targeted transforms), ``regenerate`` (the code of
the changed module), ``index`` (the ``Index`` they make up) and ``current`` (the Index of the
module analysed last). The names later stages use are exported here.
"""

from __future__ import annotations

from vjp_migrate.walk.current import aside, cover, forget, index_of, line_in, source_text, visit
from vjp_migrate.walk.fields import comments
from vjp_migrate.walk.index import Index
from vjp_migrate.walk.positions import Span
from vjp_migrate.walk.rebuild import NotLocal
from vjp_migrate.walk.record import plain_parentheses

__all__ = [
    "Index",
    "NotLocal",
    "Span",
    "aside",
    "comments",
    "cover",
    "forget",
    "index_of",
    "line_in",
    "plain_parentheses",
    "source_text",
    "visit",
]
