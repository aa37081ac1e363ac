"""Walk, step 3: positions, the recorded token ranges turned into lines and columns.

A node's range is the one ``PositionProvider`` gives it: the last syntactic position it recorded
(with the nodes that position names), else its whole code. Offsets and lines are measured once,
when a first position is asked for.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate

import libcst as cst

from vjp_migrate.walk.record import Recorded, Syntactic

NEWLINE = re.compile(r"\r\n?|\n")  # as LibCST's PositionProvider counts lines

Span = tuple[int, int, int, int]  # line, column (1-based), end line, end column (as findings use)


class Positions(Recorded):
    """The positions of an Index's nodes."""

    _syntactic: dict[int, Syntactic] | None  # id(node) -> the syntactic position it recorded
    _offsets: list[int] | None  # each token's offset in _text
    _line_starts: list[int]
    _text: str

    def _measure(self) -> list[int]:
        if self._offsets is None:
            self._offsets = list(accumulate(map(len, self._tokens), initial=0))
            self._text = "".join(self._tokens)  # the source, with its last newline even if it had none
            self._line_starts = [0, *(m.end() for m in NEWLINE.finditer(self._text))]
        return self._offsets

    def _range_of(self, node: cst.CSTNode) -> tuple[int, int]:
        """The token range PositionProvider gives ``node``: the last syntactic position it
        recorded (hoisted from the nodes it names), else its whole code."""
        if self._syntactic is None:
            self._syntactic = {id(record[0]): record for record in self._closed}
        record = self._syntactic.get(id(node))
        if record is None:
            index = self._where[id(node)]
            return self._starts[index], self._stops[index]
        _, start_node, end_node, start, end = record
        if start_node is not None:
            start = self._range_of(start_node)[0]
        if end_node is not None:
            end = self._range_of(end_node)[1]
        return start, end

    def _point(self, token: int) -> tuple[int, int]:
        offset = self._measure()[token]
        line = bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1]

    def text(self, node: cst.CSTNode) -> str | None:
        """The source text of ``node`` (its whole code); None for a node not in the module."""
        at = self._where.get(id(node))
        if at is None:
            return None
        offsets = self._measure()
        return self._text[offsets[self._starts[at]] : offsets[self._stops[at]]]

    def line(self, node: cst.CSTNode) -> int | None:
        """The first line of ``node`` as PositionProvider gives it; None for a node not in the module."""
        if id(node) not in self._where:
            return None
        return self._point(self._range_of(node)[0])[0]

    def span(self, node: cst.CSTNode) -> Span:
        """Start and end of ``node``: lines 1-based, columns 1-based (PositionProvider's + 1)."""
        start, end = self._range_of(node)
        line, column = self._point(start)
        end_line, end_column = self._point(end)
        return line, column + 1, end_line, end_column + 1
