"""Stage 7b: the text of a rewritten module: the source text with only the changed nodes' code spliced in.

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

from collections.abc import Sequence

import libcst as cst
from libcst._nodes.internal import CodegenState

Edit = tuple[int, int, str]  # token range of the source, new code
_BODIES = (cst.Module, cst.IndentedBlock)
_INDENTED = {cst.IndentedBlock: frozenset({"body", "footer"}), cst.Match: frozenset({"cases", "footer"})}

_NODE: dict[type, bool] = {}
_EXPRESSION: dict[type, bool] = {}
_PLAIN: dict[type, bool] = {}
_FIELDS: dict[type, tuple[str, ...]] = {}


def _is_node(kind: type) -> bool:
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
        found = _PLAIN[kind] = code.co_argcount == 2 and code.co_kwonlyargcount == 0 and not code.co_flags & 0x0C
    return found


def _fields(kind: type) -> tuple[str, ...]:
    names = _FIELDS.get(kind)
    if names is None:
        names = _FIELDS[kind] = tuple(kind.__dataclass_fields__)  # type: ignore[attr-defined]
    return names


class Splicer:
    """Edits that turn the code of nodes of the indexed module into the code of their new versions."""

    def __init__(
        self, module: cst.Module, where: dict[int, int], starts: Sequence[int], stops: Sequence[int]
    ) -> None:
        self.default_indent = module.default_indent
        self.default_newline = module.default_newline
        self.where = where
        self.starts = starts
        self.stops = stops
        self.origins: dict[int, int] = {}  # id(new node) -> id(the node it replaces), to align bodies
        self.edits: list[Edit] = []

    def generate(self, node: cst.CSTNode, indents: tuple[str, ...]) -> str:
        state = CodegenState(self.default_indent, self.default_newline, indent_tokens=list(indents))
        node._codegen(state)
        return "".join(state.tokens)

    def replace(
        self, parent: cst.CSTNode, name: str, old: cst.CSTNode, new: cst.CSTNode, indents: tuple[str, ...]
    ) -> bool:
        """Edits for ``old``, in ``parent``'s field ``name``, becoming ``new``; False when its parent
        must be replaced instead (nothing is added then)."""
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
        body = name == "body" and type(parent) in _BODIES
        if not (body or (_plain(kind) and (kind is type(old) or (_is_expression(kind) and _is_expression(type(old)))))):
            return False
        if name == "params" and type(parent) is cst.Lambda:
            return False
        self.edits.append((self.starts[index], self.stops[index], self.generate(new, indents)))
        return True

    def _fields(self, old: cst.CSTNode, new: cst.CSTNode, indents: tuple[str, ...]) -> bool:
        kind = type(old)
        changed: list[str] = []
        for name in _fields(kind):  # first the changes no edit inside can make (before generating any code)
            a, b = getattr(old, name), getattr(new, name)
            if a is b:
                continue
            if _is_node(type(a)):
                if not _is_node(type(b)):
                    return False
            elif isinstance(a, (list, tuple)):
                if not isinstance(b, (list, tuple)):
                    return False
            elif type(a) is not type(b) or a != b or _is_node(type(b)):
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
            if not (self.replace(old, name, a, b, inner) if _is_node(type(a)) else self._sequence(old, name, a, b, inner)):
                return False
        return True

    def _sequence(
        self, parent: cst.CSTNode, name: str, a: Sequence[object], b: Sequence[object], indents: tuple[str, ...]
    ) -> bool:
        if len(a) == len(b):
            for x, y in zip(a, b):
                if x is y:
                    continue
                if not (_is_node(type(x)) and _is_node(type(y))):
                    return False
                if not self.replace(parent, name, x, y, indents):  # type: ignore[arg-type]
                    return False
            return True
        if not (a and b and name == "body" and type(parent) in _BODIES):  # an empty body writes `pass`
            return False
        inserted: list[str] = []
        position = self.stops[self.where[id(a[-1])]]
        for k, new in self.align(a, b):
            if k is None:
                inserted.append(self.generate(new, indents))
                continue
            old = a[k]
            start = self.starts[self.where[id(old)]]
            if inserted:
                self.edits.append((start, start, "".join(inserted)))
                inserted = []
            if new is None:
                self.edits.append((start, self.stops[self.where[id(old)]], ""))
            elif not self.replace(parent, name, old, new, indents):
                return False
        if inserted:
            self.edits.append((position, position, "".join(inserted)))
        return True

    def align(
        self, old: Sequence[cst.CSTNode], new: Sequence[cst.CSTNode]
    ) -> list[tuple[int, None | cst.CSTNode] | tuple[None, cst.CSTNode]]:
        """The statements of a new body in order, each with the index of the old one it replaces
        (None: inserted), and the old ones that went, as (index, None).

        Any pairing gives the right text (a pair's edits turn one into the other); pairing a
        statement with the one it was made from keeps the edits small.
        """
        at = {id(node): k for k, node in enumerate(old)}
        steps: list[tuple[int, None | cst.CSTNode] | tuple[None, cst.CSTNode]] = []
        done = 0
        for node in new:
            k = at.get(id(node))
            if k is None:
                k = at.get(self.origins.get(id(node), -1))
            if k is None or k < done:
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
