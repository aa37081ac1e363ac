"""Walk, step 5: the code of a module made from the indexed one, the source copied with only
the changed nodes' code spliced in (splice.py)."""

from __future__ import annotations

import re

import libcst as cst

from vjp_migrate.splice import Splicer, render
from vjp_migrate.walk.positions import Positions

NEWLINE_AT_END = re.compile(r"(\r\n?|\n)\Z")


class Regenerates(Positions):
    """The code generation of an Index's module after a transform."""

    def code(self, module: cst.Module) -> tuple[str, list[str]]:
        """``module.code`` for a module made from the indexed one, and the new code of every
        statement of its body that changed.

        The source text is copied, with only the changed nodes' code spliced in (splice.py).
        """
        old = self.module
        same_frame = (
            module.header is old.header
            and module.footer is old.footer
            and (module.default_indent, module.default_newline, module.has_trailing_newline)
            == (old.default_indent, old.default_newline, old.has_trailing_newline)
        )
        if not (same_frame and old.body and module.body and len(self._top) == len(old.body)):
            code = module.code
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
            if piece is None:
                piece = splicer.generate(stmt, ())
            pieces.append(piece)
            new.append(piece)
        pieces.append(text[offsets[stops[top[-1]]] :])  # the footer
        code = "".join(pieces)
        last = NEWLINE_AT_END.search(code)
        if not module.has_trailing_newline and last is not None:  # LibCST drops its last token, a newline
            code = code[: last.start()]
        return code, new
