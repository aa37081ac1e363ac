"""Walk, step 5: the code of a module made from the indexed one, the source copied with only
the changed nodes' code spliced in (splice.py); and how much longer a node's code became, read
from those edits (rewrite.wrap asks, instead of generating the node's code)."""

from __future__ import annotations

import re

import libcst as cst

from vjp_migrate.splice import Edit, Splicer, render
from vjp_migrate.walk.positions import Positions

NEWLINE_AT_END = re.compile(r"(\r\n?|\n)\Z")
Code = tuple[str, list[str]]


class Spliced:
    """What the last ``code`` made: for which module, its result, the edits spliced in and the
    token ranges of the statements generated whole."""

    def __init__(self, module: cst.Module, result: Code, edits: list[Edit], whole: list[tuple[int, int]]) -> None:
        self.module = module
        self.result = result
        self.edits = edits
        self.whole = whole


class Regenerates(Positions):
    """The code generation of an Index's module after a transform."""

    _spliced: Spliced | None

    def code(self, module: cst.Module) -> Code:
        """``module.code`` for a module made from the indexed one, and the new code of every
        statement of its body that changed.

        The source text is copied, with only the changed nodes' code spliced in (splice.py).
        The result is kept for the module last asked about (rewrite.apply_plans asks first).
        """
        if self._spliced is not None and self._spliced.module is module:
            return self._spliced.result
        edits: list[Edit] = []
        whole: list[tuple[int, int]] = []
        result = self._splice(module, edits, whole)
        self._spliced = Spliced(module, result, edits, whole)
        return result

    def growth(self, node: cst.CSTNode) -> int | None:
        """How many characters longer the code of ``node`` (a node of the indexed module) is in
        the module ``code`` made last, read from the edits spliced into its range; None when
        they do not tell: its statement generated whole, an edit reaching past it or inserting
        at its edge, an edit with a line break, or a node not in the module."""
        spliced = self._spliced
        at = self._where.get(id(node))
        if spliced is None or at is None:
            return None
        start, stop = self._starts[at], self._stops[at]
        if any(first <= start < end for first, end in spliced.whole):
            return None
        offsets = self._measure()
        growth = 0
        for first, end, code in spliced.edits:
            if first == end:  # an insertion: at the node's edge, it may belong to its neighbour
                if first < start or first > stop:
                    continue
                if first in (start, stop):
                    return None
            elif end <= start or first >= stop:
                continue
            elif first < start or end > stop:
                return None
            if "\n" in code or "\r" in code:
                return None
            growth += len(code) - (offsets[end] - offsets[first])
        return growth

    def _splice(self, module: cst.Module, edits: list[Edit], whole: list[tuple[int, int]]) -> Code:
        old = self.module
        same_frame = (
            module.header is old.header
            and module.footer is old.footer
            and (module.default_indent, module.default_newline, module.has_trailing_newline)
            == (old.default_indent, old.default_newline, old.has_trailing_newline)
        )
        if not (same_frame and old.body and module.body and len(self._top) == len(old.body)):
            code = module.code
            whole.append((0, len(self._tokens)))
            return code, [code]
        offsets = self._measure()
        text, top, starts, stops = self._text, self._top, self._starts, self._stops
        splicer = Splicer(old, self._where, starts, stops)
        splicer.origins = {id(new): key for key, new in self._replaced.items()}
        deep = len(self._where) == len(self._order)  # no node object twice in the tree
        pieces = [text[: offsets[starts[top[0]]]]]  # the header
        new: list[str] = []
        for k, stmt in splicer.align(old.body, module.body):
            if stmt is None:  # a statement that went
                continue
            piece = None
            if k is not None and (deep or stmt is old.body[k]):
                first, end = starts[top[k]], stops[top[k]]
                splicer.edits = []
                splicer.replace(cst.Module, "body", old.body[k], stmt, ())  # always can: a statement of a body
                piece = render(text, offsets, first, end, splicer.edits)
                if piece is not None and not splicer.edits:  # unchanged
                    pieces.append(piece)
                    continue
                if piece is not None:
                    edits.extend(splicer.edits)
            if piece is None:
                if k is not None:
                    whole.append((starts[top[k]], stops[top[k]]))
                piece = splicer.generate(stmt, ())
            pieces.append(piece)
            new.append(piece)
        pieces.append(text[offsets[stops[top[-1]]] :])  # the footer
        code = "".join(pieces)
        last = NEWLINE_AT_END.search(code)
        if not module.has_trailing_newline and last is not None:  # LibCST drops its last token, a newline
            code = code[: last.start()]
        return code, new
