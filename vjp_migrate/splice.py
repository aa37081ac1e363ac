"""Stage 9b: the text of a rewritten module: the source text with only the changed nodes' code spliced in.

A rewrite shares every node it did not change with the indexed module, so comparing the two
trees field by field (an identical field costs one ``is``) finds the changed nodes; each one is
replaced in the source text by the code LibCST generates for the new node, and only that code
is generated. A node's code is the same inside the module and on its own when

- the state matches: the module's default indent and newline, and the indents of the blocks
  around the node (``IndentedBlock`` body and footer, ``match`` cases);
- its parent passes it no keyword (``default_comma``, ``default_semicolon``, ``is_elif`` ...):
  true for a type whose ``_codegen_impl`` takes none, and for any statement of a body;
- its parent does not look into it: a type change is only accepted between expressions or
  between statements of a body, and a lambda's parameters are never replaced alone (the lambda
  writes a space after ``lambda`` only when they are not empty).

Where a node cannot be replaced alone (its parent passes keywords, or a list of arguments or
elements changed length, or whitespace changed), its parent is replaced instead, up to the whole
statement of the module's body, which is what ``code`` did before splicing.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import fields
from typing import Any

import libcst as cst
from libcst._nodes.internal import CodegenState

Edit = tuple[int, int, str]  # token range of the source, new code
Step = tuple[int | None, cst.CSTNode | None]
_BODIES = (cst.Module, cst.IndentedBlock)
_INDENTED = {cst.IndentedBlock: frozenset({"body", "footer"}), cst.Match: frozenset({"cases", "footer"})}

_NODE: dict[type, bool] = {}
_EXPRESSION: dict[type, bool] = {}
_PLAIN: dict[type, bool] = {}
_FIELDS: dict[type, tuple[str, ...]] = {}


def is_node(kind: type) -> bool:
    found = _NODE.get(kind)
    if found is None:
        found = _NODE[kind] = issubclass(kind, cst.CSTNode)  # isinstance on the ABC is slow
    return found


def _is_expression(kind: type) -> bool:
    found = _EXPRESSION.get(kind)
    if found is None:
        found = _EXPRESSION[kind] = issubclass(kind, cst.BaseExpression)
    return found


def _plain(kind: type) -> bool:
    """Whether the code of a ``kind`` node can take no keyword from its parent."""
    found = _PLAIN.get(kind)
    if found is None:
        code = kind._codegen_impl.__code__  # type: ignore[attr-defined]
        extra = code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
        found = _PLAIN[kind] = code.co_argcount == 2 and code.co_kwonlyargcount == 0 and not extra
    return found


def field_names(kind: type) -> tuple[str, ...]:
    """The dataclass fields of a node type, in order (cached: ``dataclasses.fields`` is slow)."""
    names = _FIELDS.get(kind)
    if names is None:
        names = _FIELDS[kind] = tuple(f.name for f in fields(kind))
    return names


_NO_POSITION = nullcontext()


class _State(CodegenState):
    """LibCST's code generation state, without the generator-based context manager it makes for
    each syntactic position (nothing here reads positions)."""

    def record_syntactic_position(
        self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None, end_node: cst.CSTNode | None = None
    ) -> Any:
        return _NO_POSITION


class Splicer:
    """Edits that turn the code of nodes of the indexed module into the code of their new versions."""

    def __init__(self, module: cst.Module, where: dict[int, int], starts: Sequence[int], stops: Sequence[int]) -> None:
        self.default_indent = module.default_indent
        self.default_newline = module.default_newline
        self.where = where
        self.starts = starts
        self.stops = stops
        self.origins: dict[int, int] = {}  # id(new node) -> id(the node it replaces), to align bodies
        self.edits: list[Edit] = []

    def generate(self, node: cst.CSTNode, indents: tuple[str, ...]) -> str:
        state = _State(self.default_indent, self.default_newline, indent_tokens=list(indents))
        node._codegen(state)
        return "".join(state.tokens)

    def replace(self, parent: type, name: str, old: cst.CSTNode, new: cst.CSTNode, indents: tuple[str, ...]) -> bool:
        """Edits for ``old``, in the field ``name`` of a ``parent`` node, becoming ``new``; False
        when the parent must be replaced instead (no edit is added then)."""
        if new is old:
            return True
        kind = type(new)
        mark = len(self.edits)
        if kind is type(old) and self._fields(old, new, indents):
            return True
        del self.edits[mark:]
        index = self.where.get(id(old))
        if index is None:  # whitespace: not indexed
            return False
        body = name == "body" and parent in _BODIES
        if not (body or (_plain(kind) and (kind is type(old) or (_is_expression(kind) and _is_expression(type(old)))))):
            return False
        if name == "params" and parent is cst.Lambda:
            return False
        self.edits.append((self.starts[index], self.stops[index], self.generate(new, indents)))
        return True

    def _fields(self, old: cst.CSTNode, new: cst.CSTNode, indents: tuple[str, ...]) -> bool:
        kind = type(old)
        changed: list[str] = []
        for name in field_names(kind):  # first the changes no edit inside can make, before generating code
            a, b = getattr(old, name), getattr(new, name)
            if a is b:
                continue
            if is_node(type(a)):
                if not is_node(type(b)):
                    return False
            elif isinstance(a, (list, tuple)):
                if not isinstance(b, (list, tuple)):
                    return False
            elif type(a) is not type(b) or a != b:
                return False
            else:
                continue
            changed.append(name)
        indented = _INDENTED.get(kind)
        for name in changed:
            a, b = getattr(old, name), getattr(new, name)
            inner = indents
            if indented is not None and name in indented:
                indent: str | None = getattr(old, "indent")  # noqa: B009  (IndentedBlock and Match both have one)
                inner = (*indents, self.default_indent if indent is None else indent)
            if is_node(type(a)):
                if not self.replace(kind, name, a, b, inner):
                    return False
            elif not self._sequence(kind, name, a, b, inner):
                return False
        return True

    def _sequence(self, parent: type, name: str, a: Sequence[Any], b: Sequence[Any], indents: tuple[str, ...]) -> bool:
        if name == "body" and parent in _BODIES:
            return bool(a and b) and self._body(a, b, indents)  # an empty body is written `pass`
        if len(a) != len(b):
            return False
        for x, y in zip(a, b, strict=True):
            if x is y:
                continue
            if not (is_node(type(x)) and is_node(type(y)) and self.replace(parent, name, x, y, indents)):
                return False
        return True

    def _body(self, a: Sequence[cst.CSTNode], b: Sequence[cst.CSTNode], indents: tuple[str, ...]) -> bool:
        """Edits for a body of statements, some of which may have come, gone or changed."""
        inserted: list[str] = []
        for k, new in self.align(a, b):
            if k is None:
                assert new is not None
                inserted.append(self.generate(new, indents))
                continue
            start, stop = self.starts[self.where[id(a[k])]], self.stops[self.where[id(a[k])]]
            if inserted:
                self.edits.append((start, start, "".join(inserted)))
                inserted = []
            if new is None:
                self.edits.append((start, stop, ""))
            else:
                self.replace(cst.IndentedBlock, "body", a[k], new, indents)  # a statement of a body always can be
        if inserted:
            end = self.stops[self.where[id(a[-1])]]
            self.edits.append((end, end, "".join(inserted)))
        return True

    def align(self, old: Sequence[cst.CSTNode], new: Sequence[cst.CSTNode]) -> list[Step]:
        """How a body became another: in order, (old index, new statement) for a statement that
        replaces an old one, (None, new statement) for one inserted, (old index, None) for one gone.

        Any pairing gives the right text (a pair's edits turn one into the other). A statement is
        paired with the one it is or was made from, else with the next old one nothing was made
        from, which keeps the edits small.
        """
        at = {id(node): k for k, node in enumerate(old)}
        made = [at.get(id(node), at.get(self.origins.get(id(node), -1))) for node in new]
        claimed = set(made)
        steps: list[Step] = []
        done = 0
        for node, k in zip(new, made, strict=True):
            if k is None or k < done:
                if done < len(old) and done not in claimed:
                    k = done
                else:
                    steps.append((None, node))
                    continue
            steps.extend((gone, None) for gone in range(done, k))
            steps.append((k, node))
            done = k + 1
        steps.extend((gone, None) for gone in range(done, len(old)))
        return steps


def render(text: str, offsets: Sequence[int], start: int, stop: int, edits: list[Edit]) -> str | None:
    """The text of tokens ``start`` to ``stop`` with ``edits`` made; None when two edits are
    not clearly ordered (both empty at one place, or overlapping)."""
    edits.sort(key=lambda edit: (edit[0], edit[1]))
    pieces: list[str] = []
    at, last, empty_at = start, start, -1
    for first, end, code in edits:
        if first < last or (first == end and first == empty_at):
            return None
        pieces.append(text[offsets[at] : offsets[first]])
        pieces.append(code)
        at = last = end
        if first == end:
            empty_at = first
    pieces.append(text[offsets[at] : offsets[stop]])
    return "".join(pieces)
